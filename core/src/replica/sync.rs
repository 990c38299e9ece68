//! A sync: the writes made offline pushed first (each document a write touched stored as the
//! server answered it), then the changes since the replica's cursor pulled, each batch stored
//! with the cursor in one unit of work; and everything synced forgotten when the server no
//! longer accepts the device.
//!
//! Part of `replica` (layer 9 of `scripts/check-structure`): it may import only what `replica`
//! may (see `replica`'s module documentation).

use super::queue::{
    held_files, held_files_text, rejected_text, rejected_writes, writes, writes_text,
};
use super::{
    CURSOR, DEVICE, FILES, LOCAL_IDS, PENDING, REJECTED, Replica, SERVER_ENCRYPTED, TOKEN,
    signed_out,
};
use crate::access::{ObjectKind, ObjectRef, Permission};
use crate::error::{Error, Result};
use crate::events::{EventObject, names};
use crate::kernel::Unit;
use crate::model::*;
use crate::session::{MAX_PUSH_WRITES, MAX_SYNC_BATCH};

const DOCUMENT: &str = "documents.document";
const DOCUMENT_TYPE: &str = "documents.documenttype";
const CABINET: &str = "cabinets.cabinet";
const WORKFLOW: &str = "document_states.workflow";
const METADATA_TYPE: &str = "metadata.metadatatype";

impl Replica {
    /// Waits until the server has a change this replica's user may see (at most `wait`, and
    /// at most a minute), then syncs: the loop that keeps a replica current while online is
    /// `loop { replica.sync_when_changed(Duration::from_secs(25))?; }`. A change the user sees
    /// arrives as soon as it is committed (the server's live feed wakes the wait); a change
    /// that only alters what the user may see (a grant, say) arrives by the end of the wait.
    /// The first call, before any sync, syncs at once.
    pub fn sync_when_changed(&self, wait: std::time::Duration) -> Result<SyncProgress> {
        let (signed, cursor) = self.signed_in()?;
        if let Some(cursor) = cursor {
            self.server.wait_for_change(&signed, cursor.log, wait)?;
        }
        self.sync()
    }

    /// [`sync_with_progress`](Self::sync_with_progress) without a callback.
    pub fn sync(&self) -> Result<SyncProgress> {
        self.sync_with_progress(|_| {})
    }

    /// Pulls every change since the replica's cursor, in batches of up to 100 documents,
    /// calling `progress` after each batch is stored. A sync cut off (a dropped connection, a
    /// crash) goes on from the last batch stored. When the server refuses the device (its
    /// token revoked or expired, its user deactivated), everything synced is removed from the
    /// replica and the answer is `PermissionDenied`: open it again with the password.
    pub fn sync_with_progress(
        &self,
        mut progress: impl FnMut(&SyncProgress),
    ) -> Result<SyncProgress> {
        let _one = self.syncing.lock();
        let (signed, mut cursor) = self.signed_in()?;
        let mut done = SyncProgress::default();
        // Writes made offline first: the pull then brings the server's truth after them.
        if !self.push(&signed, &mut done)? {
            self.forget_everything()?;
            return Err(signed_out());
        }
        if done.pushed + done.rejected > 0 {
            progress(&done);
        }
        loop {
            let batch = match self
                .server
                .pull(&signed, cursor.as_ref(), 100.min(MAX_SYNC_BATCH))?
            {
                Pulled::Batch(batch) => batch,
                Pulled::Refused => {
                    self.forget_everything()?;
                    return Err(signed_out());
                }
            };
            self.store(&batch)?;
            done.batches += 1;
            done.received += batch.documents.len();
            done.removed += batch.removed.len();
            done.more = batch.more;
            progress(&done);
            cursor = Some(batch.cursor);
            if !batch.more {
                return Ok(done);
            }
        }
    }

    /// Pushes the pending writes, in order, in pushes of up to [`MAX_PUSH_WRITES`]; a write
    /// the server did not apply moves to the rejected ones, and each document a write touched
    /// is stored as the server answered it. `false` when the server refused the device.
    fn push(&self, device: &SignedIn, done: &mut SyncProgress) -> Result<bool> {
        loop {
            let pending = writes(self.local.read(|tx| tx.setting(PENDING))?)?;
            let Some(first) = pending.first() else {
                return Ok(true);
            };
            if matches!(first.change, PushedChange::AddFile { .. }) {
                if !self.push_file(device, first, done)? {
                    return Ok(false);
                }
                continue;
            }
            // The writes up to the next file (whose bytes go on their own).
            let end = (pending.iter())
                .position(|w| matches!(w.change, PushedChange::AddFile { .. }))
                .unwrap_or(pending.len())
                .min(MAX_PUSH_WRITES);
            let chunk = &pending[..end];
            let Some(outcomes) = self.server.push(device, chunk)? else {
                return Ok(false);
            };
            let shaper = self.user.0.to_string();
            let (applied, rejected) = self.local.write(Actor::System, |u| {
                let mut pending = writes(u.tx.setting(PENDING)?)?;
                let mut refused = rejected_writes(u.tx.setting(REJECTED)?)?;
                let (mut applied, mut rejected) = (0, 0);
                for o in &outcomes {
                    let Some(at) = pending.iter().position(|p| p.key == o.key) else {
                        continue;
                    };
                    let write = pending.remove(at);
                    if write.is_create() {
                        // A create: the server's document (if any) takes the local one's place,
                        // also in the writes still queued for it (its files).
                        remove_document(u, write.document)?;
                        if let Some(d) = &o.document {
                            let id = d.document.document.id;
                            for p in pending.iter_mut().filter(|p| p.document == write.document) {
                                p.document = id;
                            }
                        }
                    }
                    if o.result == PushResult::Applied {
                        applied += 1;
                    } else {
                        rejected += 1;
                        refused.push(RejectedWrite {
                            write,
                            result: o.result.clone(),
                        });
                    }
                    if let Some(d) = &o.document {
                        store_document(u, d, &shaper)?;
                    }
                }
                u.tx.set_setting(PENDING, &writes_text(&pending))?;
                u.tx.set_setting(REJECTED, &rejected_text(&refused))?;
                keep_held_files(u)?;
                Ok((applied, rejected))
            })?;
            self.local.file_storage().purge_deleted()?;
            done.pushed += applied;
            done.rejected += rejected;
            if applied + rejected == 0 {
                // The server answered none of the writes sent: never loop on them.
                return Err(Error::InvalidInput(
                    "the server answered a push without the writes' keys".into(),
                ));
            }
        }
    }

    /// Pushes the first pending write, a file, with its bytes; `false` when the server refused
    /// the device.
    fn push_file(
        &self,
        device: &SignedIn,
        write: &PushedWrite,
        done: &mut SyncProgress,
    ) -> Result<bool> {
        let held = held_files(self.local.read(|tx| tx.setting(FILES))?)?;
        let outcome = match held.get(&write.key) {
            Some(h) => {
                let storage = self.local.file_storage();
                let mut content = match (h.encrypted, storage.encrypts()) {
                    (true, true) | (false, false) => storage.open(&h.name)?,
                    (false, true) => storage.open_plain(&h.name)?,
                    (true, false) => {
                        return Err(Error::Decryption(
                            "a file added offline is encrypted: open the replica with its \
                             storage password"
                                .into(),
                        ));
                    }
                };
                match self.server.push_file(device, write, &mut content)? {
                    Some(outcome) => outcome,
                    None => return Ok(false),
                }
            }
            // Its bytes are gone (the replica's settings were altered outside docmeta).
            None => PushOutcome {
                key: write.key.clone(),
                result: PushResult::Refused {
                    kind: crate::error::ErrorKind::NotFound,
                    field: None,
                    message: "the bytes of this file are no longer on the replica".into(),
                },
                document: None,
            },
        };
        let shaper = self.user.0.to_string();
        self.local.write(Actor::System, |u| {
            let mut pending = writes(u.tx.setting(PENDING)?)?;
            let mut refused = rejected_writes(u.tx.setting(REJECTED)?)?;
            let mut files = held_files(u.tx.setting(FILES)?)?;
            pending.retain(|p| p.key != write.key);
            if let Some(d) = &outcome.document {
                store_document(u, d, &shaper)?;
            }
            if outcome.result == PushResult::Applied {
                // The bytes sent are the server's file's now: kept as fetched.
                if let (Some(h), Some(d)) = (files.remove(&write.key), &outcome.document) {
                    let mut reused = false;
                    for f in d.files.iter().filter(|f| f.checksum == h.checksum) {
                        if u.tx
                            .mirror_file_fetched(f.id, &h.checksum, &h.name, h.encrypted)?
                        {
                            reused = true;
                            break;
                        }
                    }
                    if reused {
                        u.unlink.retain(|n| *n != h.name);
                    } else {
                        u.unlink.push(h.name);
                    }
                }
            } else {
                refused.push(RejectedWrite {
                    write: write.clone(),
                    result: outcome.result.clone(),
                });
            }
            u.tx.set_setting(PENDING, &writes_text(&pending))?;
            u.tx.set_setting(REJECTED, &rejected_text(&refused))?;
            u.tx.set_setting(FILES, &held_files_text(&files))?;
            keep_held_files(u)
        })?;
        self.local.file_storage().purge_deleted()?;
        if outcome.result == PushResult::Applied {
            done.pushed += 1;
        } else {
            done.rejected += 1;
        }
        Ok(true)
    }

    /// Stores a batch and its cursor in one transaction.
    fn store(&self, batch: &SyncBatch) -> Result<()> {
        self.store_batch(batch)?;
        // The bytes of files gone from the replica go at once, not after the storage's day of
        // grace: nothing of what the user may no longer see stays.
        self.local.file_storage().purge_deleted()
    }

    fn store_batch(&self, batch: &SyncBatch) -> Result<()> {
        let shaper = self.user.0.to_string();
        let (received, removed) = (&batch.documents, &batch.removed);
        self.local.write(Actor::System, |u| {
            if let Some(schema) = &batch.schema {
                let before = (u.tx.document_types()?, u.tx.metadata_types()?);
                u.tx.mirror_document_types(&schema.document_types)?;
                u.tx.mirror_metadata_types(&schema.metadata_types, &shaper)?;
                // The types written to without being viewed as types: held, not listed.
                let (write_document_types, write_metadata_types) = write_types(schema);
                let ids: Vec<DocumentTypeId> = write_document_types.iter().map(|t| t.id).collect();
                u.tx.mirror_document_type_ids(&ids)?;
                u.tx.mirror_metadata_types(&write_metadata_types, &shaper)?;
                u.invalidated
                    .extend(write_metadata_types.iter().map(|t| t.id));
                let associations: Vec<_> = (schema.associations.iter())
                    .chain(&schema.write_associations)
                    .map(|a| a.association)
                    .collect();
                u.tx.mirror_associations(&associations)?;
                self.mirror_cabinets(u, &schema.cabinets)?;
                self.mirror_workflows(u, &schema.workflows, &shaper)?;
                let encrypted = if schema.files_encrypted { "1" } else { "0" };
                u.tx.set_setting(SERVER_ENCRYPTED, encrypted)?;
                // The search records of documents carry their types' labels: those whose
                // type changed are indexed again (the index follows these events).
                for t in &schema.document_types {
                    if !before.0.contains(t) {
                        u.event(
                            names::DOCUMENT_TYPE_EDITED,
                            object(DOCUMENT_TYPE, t.id.0, &t.label),
                            None,
                            Default::default(),
                        )?;
                    }
                }
                for t in &schema.metadata_types {
                    u.invalidated.push(t.id);
                    if !before.1.contains(t) {
                        u.event(
                            names::METADATA_TYPE_EDITED,
                            object(METADATA_TYPE, t.id.0, &t.label),
                            None,
                            Default::default(),
                        )?;
                    }
                }
            }
            for d in received {
                store_document(u, d, &shaper)?;
            }
            for id in removed {
                remove_document(u, *id)?;
            }
            if let Some(schema) = &batch.schema {
                let keep_document_types: Vec<_> =
                    schema.document_types.iter().map(|t| t.id).collect();
                let keep_metadata_types: Vec<_> =
                    schema.metadata_types.iter().map(|t| t.id).collect();
                let (write_document_types, write_metadata_types) = write_types(schema);
                let held_document_types: Vec<_> = (keep_document_types.iter().copied())
                    .chain(write_document_types.iter().map(|t| t.id))
                    .collect();
                let held_metadata_types: Vec<_> = (keep_metadata_types.iter().copied())
                    .chain(write_metadata_types.iter().map(|t| t.id))
                    .collect();
                let dropped =
                    u.tx.mirror_drop_unused_types(&held_document_types, &held_metadata_types)?;
                self.forget_types(u, &dropped)?;
                // The types the user may view as types on the server are those the replica's
                // user may view (a type held only for a document or a value it has is not).
                let admin = self.local.system();
                for t in u.tx.document_types()? {
                    let o = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, t.id.0);
                    if keep_document_types.contains(&t.id) {
                        admin.grant_in(u, Permission::DocumentTypeView, self.role, o)?;
                    } else {
                        admin.revoke_in(u, Permission::DocumentTypeView, self.role, o)?;
                    }
                }
                for t in u.tx.metadata_types()? {
                    let o = ObjectRef::new(ObjectKind::METADATA_TYPE, t.id.0);
                    if keep_metadata_types.contains(&t.id) {
                        admin.grant_in(u, Permission::MetadataTypeView, self.role, o)?;
                    } else {
                        admin.revoke_in(u, Permission::MetadataTypeView, self.role, o)?;
                    }
                }
            }
            keep_held_files(u)?;
            u.tx.set_setting(CURSOR, &batch.cursor.token())
        })
    }

    /// Removes everything synced, and the device's token and cursor: the server no longer
    /// accepts the device.
    fn forget_everything(&self) -> Result<()> {
        self.forget_all()?;
        self.local.file_storage().purge_deleted()
    }

    fn forget_all(&self) -> Result<()> {
        self.local.write(Actor::System, |u| {
            // The documents made offline and not pushed yet are the user's own work: kept
            // (with their pending creates) for the next sign-in.
            for id in u.tx.document_ids(None)? {
                if id.0 < LOCAL_IDS {
                    remove_document(u, id)?;
                }
            }
            u.tx.mirror_associations(&[])?;
            self.mirror_cabinets(u, &[])?;
            self.mirror_workflows(u, &[], "")?;
            let dropped = u.tx.mirror_drop_unused_types(&[], &[])?;
            self.forget_types(u, &dropped)?;
            for key in [DEVICE, TOKEN, CURSOR] {
                u.tx.delete_setting(key)?;
            }
            keep_held_files(u)
        })
    }
}

impl Replica {
    /// Holds `visible` as the replica's cabinets: its user views exactly those (an ACL on
    /// each; a parent the user may not view is held without a label and without one).
    fn mirror_cabinets(&self, u: &mut Unit<'_>, visible: &[Cabinet]) -> Result<()> {
        let (gone, hidden) = u.tx.mirror_cabinets(visible)?;
        for id in gone {
            u.forget_object(CABINET, ObjectRef::new(ObjectKind::CABINET, id.0))?;
        }
        let admin = self.local.system();
        for c in visible {
            let o = ObjectRef::new(ObjectKind::CABINET, c.id.0);
            admin.grant_in(u, Permission::CabinetView, self.role, o)?;
        }
        for id in hidden {
            let o = ObjectRef::new(ObjectKind::CABINET, id.0);
            admin.revoke_in(u, Permission::CabinetView, self.role, o)?;
        }
        Ok(())
    }

    /// Holds `workflows` as the replica's: its user views exactly those (an ACL on each).
    fn mirror_workflows(
        &self,
        u: &mut Unit<'_>,
        workflows: &[SyncedWorkflow],
        shaper: &str,
    ) -> Result<()> {
        for id in u.tx.mirror_workflows(workflows, shaper)? {
            u.forget_object(WORKFLOW, ObjectRef::new(ObjectKind::WORKFLOW, id.0))?;
        }
        let admin = self.local.system();
        for w in workflows {
            let o = ObjectRef::new(ObjectKind::WORKFLOW, w.workflow.id.0);
            admin.grant_in(u, Permission::WorkflowTemplateView, self.role, o)?;
        }
        Ok(())
    }

    /// Removes what protects types the replica no longer holds (their ACLs).
    fn forget_types(
        &self,
        u: &mut crate::kernel::Unit<'_>,
        (document_types, metadata_types): &(Vec<DocumentTypeId>, Vec<MetadataTypeId>),
    ) -> Result<()> {
        for t in document_types {
            u.forget_object(
                DOCUMENT_TYPE,
                ObjectRef::new(ObjectKind::DOCUMENT_TYPE, t.0),
            )?;
        }
        for t in metadata_types {
            u.forget_object(
                METADATA_TYPE,
                ObjectRef::new(ObjectKind::METADATA_TYPE, t.0),
            )?;
        }
        Ok(())
    }
}

/// The document types and metadata types of a schema's write associations (see
/// [`SyncSchema::write_associations`]), each once.
fn write_types(schema: &SyncSchema) -> (Vec<DocumentType>, Vec<MetadataType>) {
    let mut document_types: Vec<DocumentType> = Vec::new();
    let mut metadata_types: Vec<MetadataType> = Vec::new();
    for a in &schema.write_associations {
        if !document_types.iter().any(|t| t.id == a.document_type.id) {
            document_types.push(a.document_type.clone());
        }
        if !metadata_types.iter().any(|t| t.id == a.metadata_type.id) {
            metadata_types.push(a.metadata_type.clone());
        }
    }
    (document_types, metadata_types)
}

/// Removes a document, its values, files and index entries, in `u`.
fn remove_document(u: &mut Unit<'_>, id: DocumentId) -> Result<()> {
    let fetched = u.tx.mirror_remove_document(id)?;
    u.unlink.extend(fetched);
    u.forget_object(DOCUMENT, ObjectRef::new(ObjectKind::DOCUMENT, id.0))?;
    u.event(
        names::REPLICA_DOCUMENT_REMOVED,
        object(DOCUMENT, id.0, ""),
        None,
        Default::default(),
    )
}

/// Stores a document as the server sent it, in `u`.
fn store_document(u: &mut Unit<'_>, d: &SyncedDocument, shaper: &str) -> Result<()> {
    // The types a document and its values need, also those the user may not view as types (a
    // document's type, a value's type, as the server shows them).
    let view = &d.document;
    u.tx.mirror_document_types(std::slice::from_ref(&view.document_type))?;
    let types: Vec<MetadataType> = d
        .values
        .iter()
        .filter_map(|v| v.metadata_type.clone())
        .collect();
    u.tx.mirror_metadata_types(&types, shaper)?;
    u.invalidated.extend(types.iter().map(|t| t.id));
    let values: Vec<DocumentMetadata> = d.values.iter().map(|v| v.value.clone()).collect();
    let unneeded =
        u.tx.mirror_document(&view.document, &values, &d.files, &d.cabinets, &d.workflows)?;
    u.unlink.extend(unneeded);
    // The access snapshot counts documents by type and knows each one's type.
    u.access.push(crate::session::parents_change(
        ObjectRef::new(ObjectKind::DOCUMENT, view.document.id.0),
        vec![ObjectRef::new(
            ObjectKind::DOCUMENT_TYPE,
            view.document_type.id.0,
        )],
    ));
    u.event(
        names::REPLICA_DOCUMENT_SYNCED,
        object(DOCUMENT, view.document.id.0, &view.document.label),
        None,
        Default::default(),
    )
}

/// Keeps the bytes of the files added offline that writes still need out of what `u` unlinks
/// (a document stored or removed drops its local file records, not those bytes).
fn keep_held_files(u: &mut Unit<'_>) -> Result<()> {
    let files = held_files(u.tx.setting(FILES)?)?;
    u.unlink.retain(|n| !files.values().any(|h| h.name == *n));
    Ok(())
}

fn object(kind: &str, id: i64, label: &str) -> EventObject {
    EventObject {
        kind: kind.to_owned(),
        id,
        label: label.to_owned(),
    }
}
