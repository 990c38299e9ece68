//! The server's half of offline sync: what changed, for one user's device, since its replica's
//! cursor.
//!
//! A replica first receives every document its user may see, in pages (a pass), then only the
//! documents that events name since its cursor. A change that may change what the user sees at
//! large (a grant, an ACL, a membership, a role, a type's definition) starts a new pass, at the
//! end of which (the sweep) whatever an earlier pass sent and this one did not is removed:
//! visibility always follows the server, whatever changed it. The server records what it sent
//! to each device (`device_documents`), so a removal names only a document the device was sent,
//! never one its user never saw. Everything sent is read through this session, so each
//! document, value and file is shown by the rules that show it to the user online.
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use std::collections::BTreeSet;

use super::Session;
use crate::access::Permission as P;
use crate::error::{Error, Result};
use crate::events::{EventQuery, changes_shared_state, names};
use crate::model::*;

/// The most documents one batch sends.
pub const MAX_SYNC_BATCH: u32 = 500;

const DOCUMENT: &str = "documents.document";

fn workflow_ref(id: WorkflowId) -> crate::access::ObjectRef {
    crate::access::ObjectRef::new(crate::access::ObjectKind::WORKFLOW, id.0)
}

/// What one event of the log asks of a replica.
enum Effect {
    /// Nothing.
    None,
    /// Send these documents again (or their removal).
    Documents(Vec<DocumentId>),
    /// The types may have changed: send them.
    Schema,
    /// What the user sees may have changed anywhere: a new pass.
    Pass,
}

fn effect(e: &Event) -> Effect {
    use names::*;
    let documents: Vec<DocumentId> = [Some(&e.target), e.action_object.as_ref()]
        .into_iter()
        .flatten()
        .filter(|o| o.kind == DOCUMENT)
        .map(|o| DocumentId(o.id))
        .collect();
    match e.name.as_str() {
        // A document's own life: sent again, or removed if the user no longer sees it.
        DOCUMENT_CREATED
        | DOCUMENT_EDITED
        | DOCUMENT_TYPE_CHANGED
        | DOCUMENT_DELETED
        | DOCUMENT_METADATA_ADDED
        | DOCUMENT_METADATA_EDITED
        | DOCUMENT_METADATA_REMOVED
        | DOCUMENT_FILE_CREATED
        | DOCUMENT_FILE_DELETED
        | WORKFLOW_INSTANCE_TRANSITIONED => Effect::Documents(documents),
        DOCUMENT_TYPE_CREATED
        | DOCUMENT_TYPE_EDITED
        | METADATA_TYPE_CREATED
        | METADATA_TYPE_RELATIONSHIP_UPDATED => Effect::Schema,
        // A document filed or taken out: that document; a cabinet created, renamed, moved or
        // deleted: the cabinets (documents never inherit access from cabinets, and a
        // cabinet's ACLs are ACL events).
        CABINET_EDITED if !documents.is_empty() => Effect::Documents(documents),
        CABINET_EDITED => Effect::Schema,
        DEVICE_CREATED | DEVICE_REVOKED => Effect::None,
        // A workflow's definition (its states, transitions, conditions, bindings) may change
        // which transitions are available on any of its documents.
        WORKFLOW_EDITED => Effect::Pass,
        // Grants, ACLs, memberships, roles, users, cabinets, parents, deleted or edited types:
        // anything that may change what the user sees beyond the documents it names.
        name if changes_shared_state(name) => Effect::Pass,
        _ if documents.is_empty() => Effect::None,
        _ => Effect::Documents(documents),
    }
}

impl Session {
    /// The next batch of changes for the replica of device `device` (one of this session's
    /// user's: see [`Docmeta::sign_in_device`](crate::Docmeta::sign_in_device)), after `cursor`
    /// (`None`: a replica that holds nothing), at most `limit` documents (1 to
    /// [`MAX_SYNC_BATCH`]). Apply it as [`SyncBatch`] says, keep its cursor, and ask again while
    /// [`more`](SyncBatch::more). Applying a batch twice, or asking again from the same cursor
    /// after a lost answer, leaves the same replica.
    ///
    /// Sent: the documents this session may view, each with its type, the values it may view
    /// with their types, and its files' records, read through this session as
    /// [`document`](Self::document), [`document_metadata`](Self::document_metadata) and
    /// [`files`](Self::files) show them; and the document types, metadata types and
    /// associations it may view. Removed: a document sent to this device before that the user
    /// may no longer see (or that is gone). With the types, the cabinets and the workflows it
    /// may view (states and transitions, not actions), and with each document the ids of the
    /// cabinets it is in and its instances of those workflows with their logs.
    ///
    /// A device that is not this session's user's is `NotFound`.
    ///
    /// ```
    /// use docmeta_core::{Docmeta, SyncCursor};
    /// use std::collections::BTreeMap;
    ///
    /// let db = Docmeta::in_memory()?;
    /// let admin = db.system();
    /// let ann = admin.create_user("ann", "a long password", true)?;
    /// let memo = admin.create_document_type("Memo")?;
    /// admin.create_document(memo.id, "Note", &[])?;
    /// let phone = db.sign_in_device("ann", "a long password", "phone", None)?.expect("ann");
    ///
    /// // A replica: documents by id, and a cursor.
    /// let session = db.session(ann.id);
    /// let mut replica = BTreeMap::new();
    /// let mut cursor: Option<SyncCursor> = None;
    /// loop {
    ///     let batch = session.sync_changes(phone.device.id, cursor.as_ref(), 100)?;
    ///     for d in batch.documents { replica.insert(d.document.document.id, d); }
    ///     for id in batch.removed { replica.remove(&id); }
    ///     cursor = Some(batch.cursor);
    ///     if !batch.more { break; }
    /// }
    /// assert_eq!(replica.len(), 1);
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
    pub fn sync_changes(
        &self,
        device: DeviceId,
        cursor: Option<&SyncCursor>,
        limit: u32,
    ) -> Result<SyncBatch> {
        if !(1..=MAX_SYNC_BATCH).contains(&limit) {
            return Err(Error::validation(
                "limit",
                format!("Ensure this value is between 1 and {MAX_SYNC_BATCH}."),
            ));
        }
        let limit = limit as usize;
        let not_found = || Error::not_found(format!("device {device}"));
        let Actor::User(me) = self.actor else {
            return Err(not_found());
        };
        let current = self.read(|tx| {
            match tx.device(device)? {
                Some(d) if d.user == me => {}
                _ => return Err(not_found()),
            }
            tx.sync_pass(device)
        })?;
        let batch = self.next_batch(device, cursor, current, limit)?;
        if !batch.more {
            // Up to date: recorded at most once a minute (a watching replica asks often).
            let now = crate::model::now();
            self.db.write_system(|tx| {
                tx.record_device_synced(device, now, now - chrono::TimeDelta::minutes(1))
            })?;
        }
        Ok(batch)
    }

    /// The batch after `cursor` (see [`sync_changes`](Self::sync_changes)); `current` is the
    /// device's pass.
    fn next_batch(
        &self,
        device: DeviceId,
        cursor: Option<&SyncCursor>,
        current: i64,
        limit: usize,
    ) -> Result<SyncBatch> {
        match cursor {
            None => {
                // Where the log stands before anything is read: every change after it is read
                // again from the log, so none made during the pass is lost.
                let log = self.read(|tx| tx.follow_position())?;
                let pass = self.db.write_system(|tx| {
                    tx.forget_all_sent(device)?;
                    tx.next_sync_pass(device)
                })?;
                self.pass(device, log, None, pass, limit)
            }
            // A cursor of an earlier pass (another copy of the replica went on since): a new
            // pass from where it stood.
            Some(c) if c.pass != current => {
                let pass = self.db.write_system(|tx| tx.next_sync_pass(device))?;
                self.pass(device, c.log, None, pass, limit)
            }
            Some(c) => match c.phase {
                SyncPhase::Pass { after } => self.pass(device, c.log, after, c.pass, limit),
                SyncPhase::Sweep => self.sweep(device, c.log, c.pass, limit),
                SyncPhase::Changes => self.changes_since(device, c.log, c.pass, limit),
            },
        }
    }

    /// One page of a pass: the documents after `after` this session may view.
    fn pass(
        &self,
        device: DeviceId,
        log: Option<EventId>,
        after: Option<DocumentId>,
        pass: i64,
        limit: usize,
    ) -> Result<SyncBatch> {
        let page = self.documents(
            DocumentQuery {
                after,
                ..DocumentQuery::default()
            },
            PageRequest::new(1, limit),
        )?;
        let finished = page.items.len() < limit;
        let last = page.items.last().map(|d| d.document.id).or(after);
        let mut documents = Vec::with_capacity(page.items.len());
        for view in page.items {
            if let Some(d) = self.synced(view)? {
                documents.push(d);
            }
        }
        let sent: Vec<DocumentId> = documents.iter().map(|d| d.document.document.id).collect();
        self.db
            .write_system(|tx| tx.record_sent(device, &sent, pass))?;
        Ok(SyncBatch {
            documents,
            removed: Vec::new(),
            schema: if after.is_none() {
                Some(self.sync_schema()?)
            } else {
                None
            },
            cursor: SyncCursor {
                log,
                phase: if finished {
                    SyncPhase::Sweep
                } else {
                    SyncPhase::Pass { after: last }
                },
                pass,
            },
            more: true,
        })
    }

    /// The end of a pass: what an earlier pass sent and this one did not, removed (in pages of
    /// ten times `limit`).
    fn sweep(
        &self,
        device: DeviceId,
        log: Option<EventId>,
        pass: i64,
        limit: usize,
    ) -> Result<SyncBatch> {
        let cap = limit * 10;
        let removed = self.db.write_system(|tx| {
            let stale = tx.sent_before_pass(device, pass, cap)?;
            tx.forget_sent(device, &stale)?;
            Ok(stale)
        })?;
        let done = removed.len() < cap;
        Ok(SyncBatch {
            documents: Vec::new(),
            removed,
            schema: None,
            cursor: SyncCursor {
                log,
                phase: if done {
                    SyncPhase::Changes
                } else {
                    SyncPhase::Sweep
                },
                pass,
            },
            // After a pass, what changed during it.
            more: true,
        })
    }

    /// The documents events after `log` name, read again, up to `limit` events; a document
    /// sent before that the user may no longer see is removed. A new pass when an event may
    /// have changed more than the documents it names.
    fn changes_since(
        &self,
        device: DeviceId,
        log: Option<EventId>,
        pass: i64,
        limit: usize,
    ) -> Result<SyncBatch> {
        // A prune removed events this device had not read (its cursor event is gone): what
        // they changed is unknown, so a new pass sends the state after the log's end.
        if let Some(l) = log
            && self
                .db
                .read(|tx| Ok(tx.event(l)?.is_none() && tx.base_checkpoint()?.is_some()))?
        {
            let end = self.db.read(|tx| tx.follow_position())?;
            let pass = self.db.write_system(|tx| tx.next_sync_pass(device))?;
            return self.pass(device, end, None, pass, limit);
        }
        let events = self.db.events(&EventQuery {
            after: log,
            limit: Some(u32::try_from(limit).unwrap_or(MAX_SYNC_BATCH)),
            oldest_first: true,
            ..EventQuery::default()
        })?;
        let more = events.len() == limit;
        let mut cursor = log;
        let mut changed = BTreeSet::new();
        let mut schema = false;
        for e in &events {
            match effect(e) {
                Effect::None => {}
                Effect::Documents(ids) => changed.extend(ids),
                Effect::Schema => schema = true,
                Effect::Pass => {
                    // Everything up to this event is covered by the pass, which reads the
                    // state after it.
                    let pass = self.db.write_system(|tx| tx.next_sync_pass(device))?;
                    return self.pass(device, Some(e.id), None, pass, limit);
                }
            }
            cursor = Some(e.id);
        }
        let mut documents = Vec::new();
        let mut gone = Vec::new();
        for id in changed {
            match self.document(id) {
                Ok(view) => match self.synced(view)? {
                    Some(d) => documents.push(d),
                    None => gone.push(id),
                },
                Err(Error::NotFound(_) | Error::PermissionDenied(_)) => gone.push(id),
                Err(e) => return Err(e),
            }
        }
        let sent: Vec<DocumentId> = documents.iter().map(|d| d.document.document.id).collect();
        // Only what this device was sent is removed: never a document its user never saw.
        let removed = self.db.write_system(|tx| {
            tx.record_sent(device, &sent, pass)?;
            let removed = tx.sent_among(device, &gone)?;
            tx.forget_sent(device, &removed)?;
            Ok(removed)
        })?;
        Ok(SyncBatch {
            documents,
            removed,
            schema: if schema {
                Some(self.sync_schema()?)
            } else {
                None
            },
            cursor: SyncCursor {
                log: cursor,
                phase: SyncPhase::Changes,
                pass,
            },
            more,
        })
    }

    /// A document as a replica keeps it; `None` when it went (or became hidden) since it was
    /// listed.
    fn synced(&self, view: DocumentView) -> Result<Option<SyncedDocument>> {
        let id = view.document.id;
        let hidden = |e: &Error| matches!(e, Error::NotFound(_) | Error::PermissionDenied(_));
        let values = match self.document_metadata(id, PageRequest::ALL) {
            Ok(page) => page.items,
            Err(e) if hidden(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        let files = match self.files(id) {
            Ok(files) => files,
            Err(e) if hidden(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        let cabinets = self.read(|tx| tx.cabinets_of_document(id))?;
        let cabinets = self.visible(P::CabinetView, cabinets, |c| {
            crate::access::ObjectRef::new(crate::access::ObjectKind::CABINET, c.0)
        });
        Ok(Some(SyncedDocument {
            document: view,
            values,
            files,
            cabinets,
            workflows: self.synced_instances(id)?,
        }))
    }

    /// A document's instances of the workflows this session may view, with their logs (an
    /// entry's user named only to a reader who may view that user, as online).
    fn synced_instances(&self, document: DocumentId) -> Result<Vec<SyncedInstance>> {
        let found = self.read(|tx| {
            let mut found = Vec::new();
            for instance in tx.workflow_instances_of(document)? {
                if self.can(P::WorkflowTemplateView, workflow_ref(instance.workflow_id)) {
                    let log = tx.workflow_log(instance.id)?;
                    found.push(SyncedInstance { instance, log });
                }
            }
            Ok(found)
        })?;
        Ok(found
            .into_iter()
            .map(|mut i| {
                for entry in &mut i.log {
                    if entry.user_id.is_some_and(|u| !self.may_view_user(u)) {
                        entry.user_id = None;
                    }
                }
                i
            })
            .collect())
    }

    /// The workflows this session may view, with their states and transitions.
    fn synced_workflows(&self) -> Result<Vec<SyncedWorkflow>> {
        self.read(|tx| {
            let mut found = Vec::new();
            for id in tx.workflow_ids()? {
                if !self.can(P::WorkflowTemplateView, workflow_ref(id)) {
                    continue;
                }
                let Some(workflow) = tx.workflow(id)? else {
                    continue;
                };
                found.push(SyncedWorkflow {
                    workflow,
                    states: tx.workflow_states(id)?,
                    transitions: tx.workflow_transitions(id, None)?,
                });
            }
            Ok(found)
        })
    }

    /// The types this session may view.
    fn sync_schema(&self) -> Result<SyncSchema> {
        let document_types = self.document_types()?;
        let metadata_types = self.metadata_types()?;
        let mut associations = Vec::new();
        for t in &document_types {
            associations.extend(self.associations(t.id, PageRequest::ALL)?.items);
        }
        // The types a user may write to without viewing them as types: a replica runs its
        // writes against their associations (to the metadata types the user may view, as
        // `associations` shows them), as the server runs them. The type is named by id only:
        // its label is not the user's to read.
        let dt_ref = |t: DocumentTypeId| {
            crate::access::ObjectRef::new(crate::access::ObjectKind::DOCUMENT_TYPE, t.0)
        };
        let mt_ref = |t: MetadataTypeId| {
            crate::access::ObjectRef::new(crate::access::ObjectKind::METADATA_TYPE, t.0)
        };
        let mut write_associations = Vec::new();
        let shown: BTreeSet<DocumentTypeId> = document_types.iter().map(|t| t.id).collect();
        for t in self.read(|tx| tx.document_types())? {
            if shown.contains(&t.id)
                || !(self.can(P::DocumentCreate, dt_ref(t.id))
                    || self.can(P::DocumentMetadataAdd, dt_ref(t.id)))
            {
                continue;
            }
            let found = self.read(|tx| {
                let mut found = Vec::new();
                for a in tx.associations_of_document_type(t.id)? {
                    if let Some(m) = tx.metadata_type(a.metadata_type_id)? {
                        found.push((a, m));
                    }
                }
                Ok(found)
            })?;
            for (association, metadata_type) in found {
                if self.can(P::MetadataTypeView, mt_ref(metadata_type.id)) {
                    write_associations.push(AssociationView {
                        association,
                        document_type: DocumentType {
                            id: t.id,
                            label: String::new(),
                        },
                        metadata_type,
                    });
                }
            }
        }
        Ok(SyncSchema {
            document_types,
            metadata_types,
            associations,
            cabinets: self.cabinets()?,
            write_associations,
            workflows: self.synced_workflows()?,
            files_encrypted: self.db.file_storage().encrypts(),
        })
    }
}

/// A write refused with `e`, as its outcome says it.
fn refusal(e: &Error) -> PushResult {
    PushResult::Refused {
        kind: e.kind(),
        field: match e {
            Error::Validation { field, .. } => Some(field.clone()),
            _ => None,
        },
        message: e.to_string(),
    }
}

/// The most writes one push carries.
pub const MAX_PUSH_WRITES: usize = 500;

/// What one write found, in its unit of work.
enum Pushed {
    Applied,
    Conflict,
    /// A transition in conflict: the instance's state now.
    Moved(Option<WorkflowStateId>),
}

impl Session {
    /// Applies the writes a replica of device `device` (one of this session's user's) made
    /// offline, in order, each in its own unit of work through this session: the same
    /// pipeline, permission checks and workflow triggers as online. Each write is based on the
    /// value the replica held (`base`); when the server's value is no longer that value, the
    /// write is a conflict and the server's value stands, unless the server already holds what
    /// the write asks for (then it is applied: a push retried after a lost answer applies
    /// once). A removal of a value that is gone is applied. The rules are per value: writes to
    /// other values of the same document never conflict. A write this session may not make is
    /// refused with the error it would get online, and never reveals a value the user may not
    /// view (a hidden document is refused as not found before anything is compared).
    ///
    /// A [`Create`](PushedChange::Create) creates its document as
    /// [`create_document`](Self::create_document) does (never a conflict); pushed again under
    /// the same key by the same device, it creates nothing and answers the document it made.
    /// A [`Transition`](PushedChange::Transition) is taken as
    /// [`transition_workflow`](Self::transition_workflow) takes it, when the instance is still
    /// in the state the replica held; one already in the transition's destination is applied
    /// without taking it again; any other state is a conflict (per instance).
    ///
    /// At most [`MAX_PUSH_WRITES`] writes; each key 1 to 64 characters.
    pub fn sync_push(&self, device: DeviceId, writes: &[PushedWrite]) -> Result<Vec<PushOutcome>> {
        if writes.len() > MAX_PUSH_WRITES {
            return Err(Error::validation(
                "writes",
                format!("Ensure this field has no more than {MAX_PUSH_WRITES} elements."),
            ));
        }
        if let Some(bad) = writes
            .iter()
            .position(|w| w.key.is_empty() || w.key.chars().count() > 64)
        {
            return Err(Error::validation(
                "key",
                format!("Write {bad}: a key is 1 to 64 characters."),
            ));
        }
        let not_found = || Error::not_found(format!("device {device}"));
        let Actor::User(me) = self.actor else {
            return Err(not_found());
        };
        self.read(|tx| match tx.device(device)? {
            Some(d) if d.user == me => Ok(()),
            _ => Err(not_found()),
        })?;
        let outcomes: Vec<PushOutcome> = writes
            .iter()
            .map(|w| {
                let (result, shown) = self.push_result(device, w);
                PushOutcome {
                    key: w.key.clone(),
                    result,
                    document: shown
                        .and_then(|id| self.document(id).ok())
                        .and_then(|view| self.synced(view).ok().flatten()),
                }
            })
            .collect();
        // The replica stores each document answered: sent to the device (a document created
        // here is removed from the replica later like any other it was sent).
        let sent: Vec<DocumentId> = outcomes
            .iter()
            .filter_map(|o| o.document.as_ref().map(|d| d.document.document.id))
            .collect();
        if !sent.is_empty() {
            self.db.write_system(|tx| {
                let pass = tx.sync_pass(device)?;
                tx.record_sent(device, &sent, pass)
            })?;
        }
        Ok(outcomes)
    }

    /// What became of one write, and the document its outcome shows (`None`: none, for a
    /// create that was refused).
    fn push_result(&self, device: DeviceId, w: &PushedWrite) -> (PushResult, Option<DocumentId>) {
        let outcome = match &w.change {
            PushedChange::Create {
                document_type,
                label,
                values,
            } => self
                .push_create(device, &w.key, *document_type, label, values)
                .map(|id| (Pushed::Applied, Some(id))),
            PushedChange::Set { metadata_type, .. }
            | PushedChange::Remove { metadata_type, .. } => self
                .push_one(w.document, *metadata_type, &w.change)
                .map(|p| (p, Some(w.document))),
            PushedChange::AddFile { .. } => Err(Error::validation(
                "writes",
                "A file's bytes are pushed with sync_push_file (POST /api/v4/sync/push/file/).",
            )),
            PushedChange::Transition { .. } => self
                .write(|u| {
                    self.db
                        .push_transition(u, self.actor, w.document, &w.change)
                })
                .map(|moved| {
                    let p = moved.map_or(Pushed::Applied, Pushed::Moved);
                    (p, Some(w.document))
                }),
        };
        match outcome {
            Ok((Pushed::Applied, shown)) => (PushResult::Applied, shown),
            Ok((Pushed::Conflict, shown)) => (
                PushResult::Conflict {
                    server: w
                        .metadata_type()
                        .and_then(|mt| self.visible_value(w.document, mt)),
                },
                shown,
            ),
            Ok((Pushed::Moved(state), shown)) => (
                PushResult::Conflict {
                    server: state.map(|s| s.0.to_string()),
                },
                shown,
            ),
            Err(e) => (
                refusal(&e),
                // A refused write of a document's (not a create) still shows the document as
                // the server holds it.
                (!w.is_create()).then_some(w.document),
            ),
        }
    }

    /// Adds a file a replica of device `device` (one of this session's user's) added offline
    /// to `document` (see [`PushedChange::AddFile`]): as [`add_file`](Self::add_file) adds
    /// it, through this session (`documents.document_file_new` on the document, checked before
    /// a byte is read). The write's `key` (1 to 64 characters) is recorded with the file: a
    /// file pushed again under the same key is added once, its content not read again. A
    /// refusal is the outcome's (as [`sync_push`](Self::sync_push) answers it); a device that
    /// is not this user's is `NotFound`, a bad key `Validation` on `key`.
    pub fn sync_push_file(
        &self,
        device: DeviceId,
        key: &str,
        document: DocumentId,
        filename: &str,
        content: &mut dyn std::io::Read,
    ) -> Result<PushOutcome> {
        if let Some(answered) = self.sync_push_file_ready(device, key, document)? {
            return Ok(answered);
        }
        let result = match self.add_file_once(document, filename, content, Some((device, key))) {
            Ok(_) => PushResult::Applied,
            Err(e) => refusal(&e),
        };
        Ok(self.file_outcome(device, key, document, result))
    }

    /// What [`sync_push_file`](Self::sync_push_file) answers before it reads a byte: `Some`
    /// when the file was pushed under `key` before (applied) or is refused (the document
    /// hidden, the permission missing), `None` when its content is needed. For a face that
    /// receives the content after (an HTTP server), so that nothing is received that would be
    /// refused.
    pub fn sync_push_file_ready(
        &self,
        device: DeviceId,
        key: &str,
        document: DocumentId,
    ) -> Result<Option<PushOutcome>> {
        if key.is_empty() || key.chars().count() > 64 {
            return Err(Error::validation("key", "A key is 1 to 64 characters."));
        }
        let not_found = || Error::not_found(format!("device {device}"));
        let Actor::User(me) = self.actor else {
            return Err(not_found());
        };
        let done = self.read(|tx| match tx.device(device)? {
            Some(d) if d.user == me => tx.device_created(device, key),
            _ => Err(not_found()),
        })?;
        let result = if done.is_some() {
            PushResult::Applied
        } else {
            match self.check_add_file(document) {
                Ok(()) => return Ok(None),
                Err(e) => refusal(&e),
            }
        };
        Ok(Some(self.file_outcome(device, key, document, result)))
    }

    /// A pushed file's outcome, with the document as this session sees it (recorded as sent).
    fn file_outcome(
        &self,
        device: DeviceId,
        key: &str,
        document: DocumentId,
        result: PushResult,
    ) -> PushOutcome {
        let shown = self
            .document(document)
            .ok()
            .and_then(|view| self.synced(view).ok().flatten());
        if shown.is_some() {
            let _ = self.db.write_system(|tx| {
                let pass = tx.sync_pass(device)?;
                tx.record_sent(device, &[document], pass)
            });
        }
        PushOutcome {
            key: key.to_owned(),
            result,
            document: shown,
        }
    }

    /// A document created offline, created here as [`create_document`](Self::create_document)
    /// creates it; a create this device pushed before under the same key answers the document
    /// it created then, and creates nothing.
    fn push_create(
        &self,
        device: DeviceId,
        key: &str,
        document_type: DocumentTypeId,
        label: &str,
        values: &[(MetadataTypeId, String)],
    ) -> Result<DocumentId> {
        let label = crate::model::check_text("label", label, super::MAX_LABEL_LEN)?;
        let values: Vec<(MetadataTypeId, &str)> =
            values.iter().map(|(mt, v)| (*mt, v.as_str())).collect();
        self.write(|u| {
            if let Some(done) = u.tx.device_created(device, key)? {
                return Ok(done);
            }
            let doc = self.create_document_in(u, document_type, label, &values)?;
            u.tx.record_device_created(device, key, doc.id)?;
            Ok(doc.id)
        })
    }

    /// The value of `metadata_type` on `document` as this session may view it.
    fn visible_value(&self, document: DocumentId, metadata_type: MetadataTypeId) -> Option<String> {
        let values = self.document_metadata(document, PageRequest::ALL).ok()?;
        values
            .items
            .into_iter()
            .find(|v| v.value.metadata_type_id == metadata_type)
            .map(|v| v.value.value)
    }

    fn push_one(
        &self,
        document: DocumentId,
        mt: MetadataTypeId,
        change: &PushedChange,
    ) -> Result<Pushed> {
        self.write(|u| {
            // Nothing is compared before the caller is known to see the value's place: a
            // conflict must not tell anything about a document or a type it may not see.
            let doc = self.load_document(&mut u.tx, document, P::DocumentView)?;
            self.require(
                P::DocumentMetadataView,
                crate::access::ObjectRef::new(crate::access::ObjectKind::DOCUMENT, doc.id.0),
                format!("document {}", doc.id),
            )?;
            self.require_on_metadata_type(P::DocumentMetadataView, mt)?;
            let current =
                u.tx.metadata_of_document(document)?
                    .into_iter()
                    .find(|m| m.metadata_type_id == mt);
            let held = current.as_ref().map(|m| m.value.as_str());
            match change {
                PushedChange::Set { value, base, .. } => {
                    if held != base.as_deref() {
                        return Ok(if held == Some(value.as_str()) {
                            Pushed::Applied
                        } else {
                            Pushed::Conflict
                        });
                    }
                    match &current {
                        Some(m) => {
                            self.edit_document_metadata_in(u, document, m.id, value)?;
                        }
                        None => {
                            self.add_document_metadata_in(u, document, mt, value)?;
                        }
                    }
                    Ok(Pushed::Applied)
                }
                PushedChange::Remove { base, .. } => match &current {
                    None => Ok(Pushed::Applied),
                    Some(m) if held == base.as_deref() => {
                        self.remove_document_metadata_in(u, document, m.id)?;
                        Ok(Pushed::Applied)
                    }
                    Some(_) => Ok(Pushed::Conflict),
                },
                PushedChange::Create { .. }
                | PushedChange::Transition { .. }
                | PushedChange::AddFile { .. } => {
                    Err(Error::InvalidInput("not a value's write".into()))
                }
            }
        })
    }
}
