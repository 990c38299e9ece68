//! The writes made offline: values set and removed, documents created, files added and
//! workflow transitions taken on the replica, each through the replica's own rules (a refusal is
//! the error the server would give), stored at once and queued for the next sync; and the
//! writes the server did not apply, to discard or to make again.
//!
//! Part of `replica` (layer 9 of `scripts/check-structure`): it may import only what `replica`
//! may (see `replica`'s module documentation).

use super::queue::{
    HeldFile, corrupt, held_files, held_files_text, rejected_text, rejected_writes, writes,
    writes_text,
};
use super::{FILES, LOCAL_IDS, PENDING, REJECTED, Replica};
use crate::error::{Error, Result};
use crate::kernel::Unit;
use crate::model::*;

/// The tables whose ids things made offline take (see [`LOCAL_IDS`]).
const LOCAL_TABLES: [&str; 5] = [
    "documents",
    "document_metadata",
    "document_files",
    "workflow_instances",
    "workflow_instance_log",
];

impl Replica {
    /// Adds a file to `document` offline, as [`Session::add_file`](crate::Session::add_file)
    /// does on the server: its bytes stored in the replica's file storage (encrypted when it
    /// is), its record (name, size, SHA-256, MIME type) under a local id at or above
    /// [`LOCAL_IDS`], readable at once; pushed at the next [`sync`](Self::sync), bytes
    /// included, where the server adds it through the user's session (who may add files is
    /// decided there) once per write, however often the push is retried. The replica then
    /// holds the server's record, with these bytes. A file added to a document made offline
    /// waits for the document's creation. A document the replica does not hold is `NotFound`.
    pub fn add_file(
        &self,
        document: DocumentId,
        filename: &str,
        content: &mut dyn std::io::Read,
    ) -> Result<DocumentFile> {
        let _one = self.syncing.lock();
        self.session().document(document)?;
        let key = random_key()?;
        let storage = self.local.file_storage();
        let mut hashing = crate::files::Hashing::new(content);
        let name = storage.put(&mut hashing)?;
        let (size, checksum) = hashing.finish();
        let held = HeldFile {
            name: name.clone(),
            checksum: checksum.clone(),
            size,
            encrypted: storage.encrypts(),
        };
        let filename = crate::files::clean_filename(filename);
        let result = self.local.write(Actor::System, |u| {
            reserve_local_ids(u)?;
            let file = u.tx.insert_document_file(
                &DocumentFile {
                    id: DocumentFileId(0),
                    document_id: document,
                    filename: filename.clone(),
                    size,
                    checksum: checksum.clone(),
                    mimetype: crate::files::guess_mime(&filename),
                    created: crate::model::now(),
                },
                &held.name,
                held.encrypted,
            )?;
            let mut pending = writes(u.tx.setting(PENDING)?)?;
            pending.push(PushedWrite {
                key: key.clone(),
                document,
                change: PushedChange::AddFile {
                    file: file.id,
                    filename: filename.clone(),
                },
            });
            u.tx.set_setting(PENDING, &writes_text(&pending))?;
            let mut files = held_files(u.tx.setting(FILES)?)?;
            files.insert(key.clone(), held.clone());
            u.tx.set_setting(FILES, &held_files_text(&files))?;
            Ok(file)
        });
        if result.is_err() {
            let _ = storage.delete(&name);
        }
        result
    }

    /// Sets the value of `metadata_type` on `document` offline: through the replica's pipeline
    /// (the same validators, parsers, lookups and defaults as the server: a refusal is the
    /// error the server would give, `Validation` on `value`), stored at once, and pushed at the
    /// next [`sync`](Self::sync), based on the value the replica held. The server decides
    /// again when the write arrives: it may refuse it (a permission) or find it in conflict
    /// (the value changed there since); see [`rejected`](Self::rejected).
    pub fn set_value(
        &self,
        document: DocumentId,
        metadata_type: MetadataTypeId,
        value: &str,
    ) -> Result<MetadataValueView> {
        let _one = self.syncing.lock();
        let id = self.write_value(document, metadata_type, Some(value))?;
        let id = id.ok_or_else(|| Error::not_found(format!("document {document}")))?;
        self.session().metadata_value(document, id)
    }

    /// Creates a document offline, as
    /// [`Session::create_document`](crate::Session::create_document) does on the server: through
    /// the replica's pipeline (the same validators, parsers, lookups, required types and their
    /// defaults: a refusal is the error the server would give), stored at once under a local id
    /// (at or above [`LOCAL_IDS`]), and pushed at the next [`sync`](Self::sync), where the
    /// server creates it again through the user's session (who may create documents of the
    /// type is decided there). Values set or removed on it before then go with its creation.
    /// Once pushed, the replica holds the server's document, under the server's id, in its
    /// place; a refused one leaves the replica and is kept among the
    /// [`rejected`](Self::rejected) writes.
    pub fn create_document(
        &self,
        document_type: DocumentTypeId,
        label: &str,
        values: &[(MetadataTypeId, &str)],
    ) -> Result<DocumentView> {
        let _one = self.syncing.lock();
        let id = self.create_local(document_type, label, values)?;
        self.session().document(id)
    }

    /// A document made offline, stored with its pending create in one transaction.
    fn create_local(
        &self,
        document_type: DocumentTypeId,
        label: &str,
        values: &[(MetadataTypeId, &str)],
    ) -> Result<DocumentId> {
        let label = crate::model::check_text("label", label, crate::session::MAX_LABEL_LEN)?;
        let key = random_key()?;
        let admin = self.local.system();
        self.local.write(Actor::System, |u| {
            reserve_local_ids(u)?;
            let doc = admin.create_document_in(u, document_type, label, values)?;
            let mut pending = writes(u.tx.setting(PENDING)?)?;
            pending.push(PushedWrite {
                key: key.clone(),
                document: doc.id,
                change: PushedChange::Create {
                    document_type,
                    label: label.to_owned(),
                    values: values
                        .iter()
                        .map(|(mt, v)| (*mt, (*v).to_owned()))
                        .collect(),
                },
            });
            u.tx.set_setting(PENDING, &writes_text(&pending))?;
            Ok(doc.id)
        })
    }

    /// Removes the value of `metadata_type` from `document` offline (a type the document's
    /// type requires cannot be removed, as online), pushed at the next sync.
    pub fn remove_value(&self, document: DocumentId, metadata_type: MetadataTypeId) -> Result<()> {
        let _one = self.syncing.lock();
        self.write_value(document, metadata_type, None).map(drop)
    }

    /// Takes a workflow transition offline, as
    /// [`Session::transition_workflow`](crate::Session::transition_workflow) does on the
    /// server: the instance must be in the transition's origin and the transition's condition
    /// must allow it, evaluated on the replica (a refusal is the error the server would give);
    /// the instance moves at once, with a log entry, and the transition is pushed at the next
    /// [`sync`](Self::sync), based on the state the instance was in. There the server takes
    /// it through the user's session (who may take it is decided there; its actions run
    /// there) or finds it in conflict (the instance moved since); see
    /// [`rejected`](Self::rejected). A document made offline takes transitions once a sync
    /// has created it on the server (`Validation` on `document` before).
    pub fn transition_workflow(
        &self,
        document: DocumentId,
        instance: WorkflowInstanceId,
        transition: WorkflowTransitionId,
        comment: &str,
    ) -> Result<WorkflowLogEntry> {
        let _one = self.syncing.lock();
        self.transition_local(document, instance, transition, comment)
    }

    fn transition_local(
        &self,
        document: DocumentId,
        instance: WorkflowInstanceId,
        transition: WorkflowTransitionId,
        comment: &str,
    ) -> Result<WorkflowLogEntry> {
        // What the replica's user may not see is not found, as online.
        self.session().workflow_instance(document, instance)?;
        if document.0 >= LOCAL_IDS {
            return Err(Error::validation(
                "document",
                "A document made offline takes workflow transitions once a sync has created it \
                 on the server.",
            ));
        }
        let key = random_key()?;
        let admin = self.local.system();
        self.local.write(Actor::System, |u| {
            reserve_local_ids(u)?;
            let base = u.tx.workflow_instance(instance)?.and_then(|i| i.state_id);
            let entry = admin.transition_in(u, document, instance, transition, comment)?;
            let mut pending = writes(u.tx.setting(PENDING)?)?;
            pending.push(PushedWrite {
                key: key.clone(),
                document,
                change: PushedChange::Transition {
                    instance,
                    transition,
                    comment: comment.to_owned(),
                    base,
                },
            });
            u.tx.set_setting(PENDING, &writes_text(&pending))?;
            Ok(entry)
        })
    }

    /// The writes made offline and not pushed yet, in the order made (one per value: a later
    /// write of the same value replaces the earlier, keeping the value it was based on).
    pub fn pending(&self) -> Result<Vec<PushedWrite>> {
        writes(self.local.read(|tx| tx.setting(PENDING))?)
    }

    /// The writes the server did not apply (see [`RejectedWrite`]), oldest first.
    pub fn rejected(&self) -> Result<Vec<RejectedWrite>> {
        rejected_writes(self.local.read(|tx| tx.setting(REJECTED))?)
    }

    /// Forgets a rejected write (the replica already shows the server's value).
    pub fn discard(&self, key: &str) -> Result<()> {
        let _one = self.syncing.lock();
        self.local.write(Actor::System, |u| {
            let mut rejected = rejected_writes(u.tx.setting(REJECTED)?)?;
            let before = rejected.len();
            rejected.retain(|r| r.write.key != key);
            if rejected.len() == before {
                return Err(Error::not_found(format!("rejected write {key}")));
            }
            u.tx.set_setting(REJECTED, &rejected_text(&rejected))?;
            // A file's bytes go with it.
            let mut files = held_files(u.tx.setting(FILES)?)?;
            if let Some(h) = files.remove(key) {
                u.tx.set_setting(FILES, &held_files_text(&files))?;
                u.unlink.push(h.name);
            }
            Ok(())
        })?;
        self.local.file_storage().purge_deleted()
    }

    /// Makes a rejected write again, now based on the value the replica holds (the server's,
    /// after a conflict): "mine over theirs". It runs through the pipeline again and is pushed
    /// at the next sync.
    pub fn retry(&self, key: &str) -> Result<()> {
        let _one = self.syncing.lock();
        let rejected = rejected_writes(self.local.read(|tx| tx.setting(REJECTED))?)?;
        let found = rejected
            .into_iter()
            .find(|r| r.write.key == key)
            .ok_or_else(|| Error::not_found(format!("rejected write {key}")))?;
        let w = found.write;
        match &w.change {
            PushedChange::Set {
                metadata_type,
                value,
                ..
            } => {
                self.write_value(w.document, *metadata_type, Some(value))?;
            }
            PushedChange::Remove { metadata_type, .. } => {
                self.write_value(w.document, *metadata_type, None)?;
            }
            // The document was refused: made again, under a new local id.
            PushedChange::Create {
                document_type,
                label,
                values,
            } => {
                let values: Vec<(MetadataTypeId, &str)> =
                    values.iter().map(|(mt, v)| (*mt, v.as_str())).collect();
                self.create_local(*document_type, label, &values)?;
            }
            // Added again, with the bytes kept, under a new key and a new local id.
            PushedChange::AddFile { filename, .. } => {
                self.add_again(key, w.document, filename)?;
            }
            // Taken again from the state the instance is in now (the server's, after a
            // conflict): refused here when the transition no longer leaves it.
            PushedChange::Transition {
                instance,
                transition,
                comment,
                ..
            } => {
                self.transition_local(w.document, *instance, *transition, comment)?;
            }
        }
        self.local.write_system(|tx| {
            let mut rejected = rejected_writes(tx.setting(REJECTED)?)?;
            rejected.retain(|r| r.write.key != key);
            tx.set_setting(REJECTED, &rejected_text(&rejected))
        })
    }

    /// A refused file added again from the bytes its write `key` kept: a new local record on
    /// `document`, queued under a new key.
    fn add_again(&self, key: &str, document: DocumentId, filename: &str) -> Result<()> {
        self.session().document(document)?;
        let again = random_key()?;
        self.local.write(Actor::System, |u| {
            reserve_local_ids(u)?;
            let mut files = held_files(u.tx.setting(FILES)?)?;
            let h = files
                .remove(key)
                .ok_or_else(|| corrupt("files added offline"))?;
            let file = u.tx.insert_document_file(
                &DocumentFile {
                    id: DocumentFileId(0),
                    document_id: document,
                    filename: filename.to_owned(),
                    size: h.size,
                    checksum: h.checksum.clone(),
                    mimetype: crate::files::guess_mime(filename),
                    created: crate::model::now(),
                },
                &h.name,
                h.encrypted,
            )?;
            files.insert(again.clone(), h);
            u.tx.set_setting(FILES, &held_files_text(&files))?;
            let mut pending = writes(u.tx.setting(PENDING)?)?;
            pending.push(PushedWrite {
                key: again.clone(),
                document,
                change: PushedChange::AddFile {
                    file: file.id,
                    filename: filename.to_owned(),
                },
            });
            u.tx.set_setting(PENDING, &writes_text(&pending))
        })
    }

    /// A write of one value (`None`: its removal) stored in the replica and queued, in one
    /// transaction; answers the id of the value set.
    fn write_value(
        &self,
        document: DocumentId,
        metadata_type: MetadataTypeId,
        value: Option<&str>,
    ) -> Result<Option<DocumentMetadataId>> {
        let key = random_key()?;
        let admin = self.local.system();
        self.local.write(Actor::System, |u| {
            reserve_local_ids(u)?;
            let mut pending = writes(u.tx.setting(PENDING)?)?;
            let current =
                u.tx.metadata_of_document(document)?
                    .into_iter()
                    .find(|m| m.metadata_type_id == metadata_type);
            if let Some(at) = pending
                .iter()
                .position(|p| p.document == document && p.is_create())
            {
                // A document made offline: its create carries its values, as submitted.
                let id = match (value, &current) {
                    (Some(value), Some(m)) => {
                        admin.edit_document_metadata_in(u, document, m.id, value)?;
                        Some(m.id)
                    }
                    (Some(value), None) => Some(
                        admin
                            .add_document_metadata_in(u, document, metadata_type, value)?
                            .id,
                    ),
                    (None, Some(m)) => {
                        admin.remove_document_metadata_in(u, document, m.id)?;
                        None
                    }
                    (None, None) => return Err(no_value(document, metadata_type)),
                };
                if let PushedChange::Create { values, .. } = &mut pending[at].change {
                    values.retain(|(mt, _)| *mt != metadata_type);
                    if let Some(value) = value {
                        values.push((metadata_type, value.to_owned()));
                    }
                }
                u.tx.set_setting(PENDING, &writes_text(&pending))?;
                return Ok(id);
            }
            let same = |p: &PushedWrite| {
                p.document == document && p.metadata_type() == Some(metadata_type)
            };
            // Based on what the server held: an earlier write of the same value keeps its base.
            let base = match pending.iter().find(|p| same(p)).map(|p| &p.change) {
                Some(PushedChange::Set { base, .. } | PushedChange::Remove { base, .. }) => {
                    base.clone()
                }
                Some(
                    PushedChange::Create { .. }
                    | PushedChange::Transition { .. }
                    | PushedChange::AddFile { .. },
                )
                | None => current.as_ref().map(|m| m.value.clone()),
            };
            let (id, change) = match (value, &current) {
                (Some(value), Some(m)) => {
                    admin.edit_document_metadata_in(u, document, m.id, value)?;
                    (
                        Some(m.id),
                        PushedChange::Set {
                            metadata_type,
                            value: value.to_owned(),
                            base,
                        },
                    )
                }
                (Some(value), None) => {
                    let added =
                        admin.add_document_metadata_in(u, document, metadata_type, value)?;
                    (
                        Some(added.id),
                        PushedChange::Set {
                            metadata_type,
                            value: value.to_owned(),
                            base,
                        },
                    )
                }
                (None, Some(m)) => {
                    admin.remove_document_metadata_in(u, document, m.id)?;
                    (
                        None,
                        PushedChange::Remove {
                            metadata_type,
                            base,
                        },
                    )
                }
                (None, None) => return Err(no_value(document, metadata_type)),
            };
            pending.retain(|p| !same(p));
            pending.push(PushedWrite {
                key: key.clone(),
                document,
                change,
            });
            u.tx.set_setting(PENDING, &writes_text(&pending))?;
            Ok(id)
        })
    }
}

fn no_value(document: DocumentId, metadata_type: MetadataTypeId) -> Error {
    Error::not_found(format!(
        "a value of metadata type {metadata_type} on document {document}"
    ))
}

/// Makes the records made offline in `u` (documents, values, and the workflow instances and
/// log entries workflows make with them) take ids at or above [`LOCAL_IDS`].
fn reserve_local_ids(u: &mut Unit<'_>) -> Result<()> {
    for table in LOCAL_TABLES {
        u.tx.reserve_local_ids(table, LOCAL_IDS)?;
    }
    Ok(())
}

/// A random key for a write.
fn random_key() -> Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| Error::Storage {
        operation: "drawing a random key".into(),
        source: e.to_string().into(),
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
