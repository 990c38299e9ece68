//! The `Replica` object: a data directory holding what one user may see on a docmeta server,
//! read and searched offline through an ordinary `Session`.

use std::path::PathBuf;
use std::sync::Arc;

use docmeta_core as core;

use crate::docmeta::Docmeta;
use crate::errors::Result;
use crate::session::Session;

/// How far a replica's sync has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Record)]
pub struct SyncProgress {
    /// Batches stored.
    pub batches: u64,
    /// Documents stored (a document sent twice counts twice).
    pub received: u64,
    /// Documents removed.
    pub removed: u64,
    /// Writes made offline that the server applied.
    pub pushed: u64,
    /// Writes made offline that the server did not apply (see `Replica.rejected`).
    pub rejected: u64,
    /// Whether the server has more ready now (`false` at the end).
    pub more: bool,
}

/// What a write made on a replica does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum PushAction {
    /// Sets the value (adds or edits it), through the pipeline.
    Set,
    /// Removes the value.
    Remove,
    /// Creates a document.
    Create,
    /// Takes a workflow transition.
    Transition,
    /// Adds a file (its bytes go with `Session.syncPushFile`).
    File,
}

/// A write made on a replica: a value set or removed (of `metadataTypeId`, based on the value
/// the replica held, `base`; `null`: none), a document created (`documentId` is the
/// replica's own id for it; `documentTypeId`, `label` and `values` as submitted), or a
/// workflow transition taken (`transitionId` on `workflowInstanceId` with `comment`, from the
/// state `baseStateId`).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct PendingWrite {
    /// The replica's name for the write.
    pub key: String,
    /// The document.
    pub document_id: i64,
    /// The metadata type of the value (a set or a removal).
    pub metadata_type_id: Option<i64>,
    /// Set, remove or create.
    pub action: PushAction,
    /// The value as submitted (a set).
    pub value: Option<String>,
    /// The value the replica held when the write was made (a set or a removal).
    pub base: Option<String>,
    /// The new document's type (a create).
    pub document_type_id: Option<i64>,
    /// The new document's label (a create).
    pub label: Option<String>,
    /// The new document's values as submitted (a create).
    pub values: Vec<crate::records::NewValue>,
    /// The workflow instance (a transition).
    pub workflow_instance_id: Option<i64>,
    /// The transition taken (a transition).
    pub transition_id: Option<i64>,
    /// The log entry's comment (a transition).
    pub comment: Option<String>,
    /// The instance's state the replica held (a transition).
    pub base_state_id: Option<i64>,
    /// The replica's own id for the file (a file).
    pub file_id: Option<i64>,
    /// The file's name (a file).
    pub filename: Option<String>,
}

impl From<core::PushedWrite> for PendingWrite {
    fn from(w: core::PushedWrite) -> Self {
        let mut p = PendingWrite {
            key: w.key,
            document_id: w.document.0,
            metadata_type_id: None,
            action: PushAction::Set,
            value: None,
            base: None,
            document_type_id: None,
            label: None,
            values: Vec::new(),
            workflow_instance_id: None,
            transition_id: None,
            comment: None,
            base_state_id: None,
            file_id: None,
            filename: None,
        };
        match w.change {
            core::PushedChange::Set {
                metadata_type,
                value,
                base,
            } => {
                p.metadata_type_id = Some(metadata_type.0);
                p.value = Some(value);
                p.base = base;
            }
            core::PushedChange::Remove {
                metadata_type,
                base,
            } => {
                p.action = PushAction::Remove;
                p.metadata_type_id = Some(metadata_type.0);
                p.base = base;
            }
            core::PushedChange::Create {
                document_type,
                label,
                values,
            } => {
                p.action = PushAction::Create;
                p.document_type_id = Some(document_type.0);
                p.label = Some(label);
                p.values = values
                    .into_iter()
                    .map(|(t, value)| crate::records::NewValue {
                        metadata_type_id: t.0,
                        value,
                    })
                    .collect();
            }
            core::PushedChange::Transition {
                instance,
                transition,
                comment,
                base,
            } => {
                p.action = PushAction::Transition;
                p.workflow_instance_id = Some(instance.0);
                p.transition_id = Some(transition.0);
                p.comment = Some(comment);
                p.base_state_id = base.map(|s| s.0);
            }
            core::PushedChange::AddFile { file, filename } => {
                p.action = PushAction::File;
                p.file_id = Some(file.0);
                p.filename = Some(filename);
            }
        }
        p
    }
}

impl TryFrom<PendingWrite> for core::PushedWrite {
    type Error = core::Error;

    /// Refuses a write without what its action needs (a set without a value, ...), as the
    /// other faces do (`Validation` on `writes`).
    fn try_from(w: PendingWrite) -> core::Result<Self> {
        let needs = |what: &str| {
            core::Error::validation("writes", format!("Write {} needs {what}.", w.key))
        };
        let metadata_type = w.metadata_type_id.map(core::MetadataTypeId);
        let change = match w.action {
            PushAction::Set => core::PushedChange::Set {
                metadata_type: metadata_type.ok_or_else(|| needs("a metadata type"))?,
                value: w.value.clone().ok_or_else(|| needs("a value"))?,
                base: w.base.clone(),
            },
            PushAction::Remove => core::PushedChange::Remove {
                metadata_type: metadata_type.ok_or_else(|| needs("a metadata type"))?,
                base: w.base.clone(),
            },
            PushAction::Create => core::PushedChange::Create {
                document_type: core::DocumentTypeId(
                    w.document_type_id.ok_or_else(|| needs("a document type"))?,
                ),
                label: w.label.clone().ok_or_else(|| needs("a label"))?,
                values: w
                    .values
                    .iter()
                    .map(|v| (core::MetadataTypeId(v.metadata_type_id), v.value.clone()))
                    .collect(),
            },
            PushAction::Transition => core::PushedChange::Transition {
                instance: core::WorkflowInstanceId(
                    w.workflow_instance_id
                        .ok_or_else(|| needs("a workflow instance"))?,
                ),
                transition: core::WorkflowTransitionId(
                    w.transition_id.ok_or_else(|| needs("a transition"))?,
                ),
                comment: w.comment.clone().unwrap_or_default(),
                base: w.base_state_id.map(core::WorkflowStateId),
            },
            PushAction::File => core::PushedChange::AddFile {
                file: core::DocumentFileId(w.file_id.ok_or_else(|| needs("a file"))?),
                filename: w.filename.clone().ok_or_else(|| needs("a filename"))?,
            },
        };
        Ok(core::PushedWrite {
            key: w.key,
            document: core::DocumentId(w.document_id),
            change,
        })
    }
}

/// What became of a pushed write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum PushStatus {
    /// Applied (or already what the write asked for).
    Applied,
    /// The value changed on the server since the replica read it: the server's value stands.
    Conflict,
    /// Refused, as the same write online would have been.
    Refused,
}

/// What became of a pushed write: its status, the server's value in a conflict, the error
/// when refused (kind `validation`, `permission_denied`, `not_found`, ...; the field a
/// validation error names; the message), and the document as the user may see it now.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct PushOutcome {
    /// The write's key.
    pub key: String,
    /// What became of it.
    pub status: PushStatus,
    /// In a conflict: the server's value (`null`: none, or one the user may not view).
    pub server_value: Option<String>,
    /// When refused: the error's kind.
    pub error_kind: Option<String>,
    /// When refused by a validation: the field.
    pub error_field: Option<String>,
    /// When refused: the message.
    pub error_message: Option<String>,
    /// The document as the user may see it on the server now (`null`: not visible).
    pub document: Option<crate::records::SyncedDocument>,
}

/// A write made offline that the server did not apply: kept until `Replica.discard` or
/// `Replica.retry`.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct RejectedWrite {
    /// The write.
    pub write: PendingWrite,
    /// `Conflict` or `Refused`.
    pub status: PushStatus,
    /// In a conflict: the server's value.
    pub server_value: Option<String>,
    /// When refused: the error's kind.
    pub error_kind: Option<String>,
    /// When refused by a validation: the field.
    pub error_field: Option<String>,
    /// When refused: the message.
    pub error_message: Option<String>,
}

type ResultParts = (
    PushStatus,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

fn result_parts(r: core::PushResult) -> ResultParts {
    match r {
        core::PushResult::Applied => (PushStatus::Applied, None, None, None, None),
        core::PushResult::Conflict { server } => (PushStatus::Conflict, server, None, None, None),
        core::PushResult::Refused {
            kind,
            field,
            message,
        } => (
            PushStatus::Refused,
            None,
            Some(kind.name().to_owned()),
            field,
            Some(message),
        ),
    }
}

impl From<core::PushOutcome> for PushOutcome {
    fn from(o: core::PushOutcome) -> Self {
        let (status, server_value, error_kind, error_field, error_message) = result_parts(o.result);
        PushOutcome {
            key: o.key,
            status,
            server_value,
            error_kind,
            error_field,
            error_message,
            document: o.document.map(Into::into),
        }
    }
}

impl From<core::RejectedWrite> for RejectedWrite {
    fn from(r: core::RejectedWrite) -> Self {
        let (status, server_value, error_kind, error_field, error_message) = result_parts(r.result);
        RejectedWrite {
            write: r.write.into(),
            status,
            server_value,
            error_kind,
            error_field,
            error_message,
        }
    }
}

impl From<core::SyncProgress> for SyncProgress {
    fn from(p: core::SyncProgress) -> Self {
        let n = |v: usize| u64::try_from(v).unwrap_or(u64::MAX);
        SyncProgress {
            batches: n(p.batches),
            received: n(p.received),
            removed: n(p.removed),
            pushed: n(p.pushed),
            rejected: n(p.rejected),
            more: p.more,
        }
    }
}

/// Follows a replica's sync; implemented in Kotlin or Swift. Called in the syncing thread
/// after each batch is stored: return quickly. An exception it throws is dropped: the sync
/// goes on.
#[uniffi::export(with_foreign)]
pub trait SyncListener: Send + Sync {
    /// One more batch is stored.
    fn on_batch(&self, progress: SyncProgress) -> Result<()>;
}

/// A replica of what one user may see on a docmeta server (see `Replica.open`).
#[derive(uniffi::Object)]
pub struct Replica {
    inner: core::Replica,
}

#[uniffi::export]
impl Replica {
    /// Opens (or creates) the replica in `path` of the server at `url` for `username`. The
    /// first time (and after the server refused the device) it signs the device in with
    /// `password`; otherwise it uses the device token it keeps, and `password` may be empty.
    /// The password is never stored. A directory that is the replica of another server or
    /// user is a `Validation` error (`url`, `username`); wrong credentials `PermissionDenied`.
    #[uniffi::constructor]
    pub fn open(
        path: String,
        url: String,
        username: String,
        password: String,
    ) -> Result<Arc<Self>> {
        let remote = core::Remote {
            url,
            username,
            password,
        };
        Ok(Arc::new(Replica {
            inner: core::Replica::open(PathBuf::from(path), &remote)?,
        }))
    }

    /// `open`, with the file bytes the replica fetches kept encrypted (MENC) under a key
    /// derived from `storagePassword`. Once a replica's storage is encrypted, every later open
    /// needs it: `open` without it is a `Validation` error on `storage_password`, another
    /// password a `Decryption` error.
    #[uniffi::constructor]
    pub fn open_encrypted(
        path: String,
        url: String,
        username: String,
        password: String,
        storage_password: String,
    ) -> Result<Arc<Self>> {
        let remote = core::Remote {
            url,
            username,
            password,
        };
        Ok(Arc::new(Replica {
            inner: core::Replica::builder(PathBuf::from(path))
                .storage_password(storage_password)
                .open(&remote)?,
        }))
    }

    /// Pulls every change since the last sync, in batches, telling `listener` after each batch
    /// is stored. A sync cut off goes on from the last batch stored. When the server refuses
    /// the device (its token revoked or expired, its user deactivated), everything synced is
    /// removed and the answer is `PermissionDenied`: open the replica again with the password.
    #[uniffi::method(default(listener = None))]
    pub fn sync(&self, listener: Option<Arc<dyn SyncListener>>) -> Result<SyncProgress> {
        let done = self.inner.sync_with_progress(|p| {
            if let Some(l) = &listener {
                // The listener's failure is its own: the sync goes on.
                let _ = l.on_batch((*p).into());
            }
        })?;
        Ok(done.into())
    }

    /// Waits until the server has a change this replica's user may see (at most
    /// `waitSeconds`, and at most a minute), then syncs. Keeps a replica current while online:
    /// call it in a loop on a background thread. A change that only alters what the user may
    /// see (a grant) arrives by the end of the wait.
    pub fn sync_when_changed(&self, wait_seconds: u32) -> Result<SyncProgress> {
        let wait = std::time::Duration::from_secs(u64::from(wait_seconds));
        Ok(self.inner.sync_when_changed(wait)?.into())
    }

    /// Sets the value of `metadataTypeId` on `documentId` offline: through the replica's
    /// pipeline (a refusal is the error the server would give), stored at once and pushed at
    /// the next sync, based on the value the replica held.
    pub fn set_value(
        &self,
        document_id: i64,
        metadata_type_id: i64,
        value: String,
    ) -> Result<crate::records::DocumentMetadata> {
        Ok(self
            .inner
            .set_value(
                core::DocumentId(document_id),
                core::MetadataTypeId(metadata_type_id),
                &value,
            )?
            .into())
    }

    /// Creates a document offline: through the replica's pipeline (a refusal is the error the
    /// server would give), stored at once under a local id (at least 2^50) and pushed at the
    /// next sync, where the server creates it through the user's session; the replica then
    /// holds the server's document in its place.
    pub fn create_document(
        &self,
        document_type: i64,
        label: String,
        values: Vec<crate::records::NewValue>,
    ) -> Result<crate::records::Document> {
        let pairs: Vec<(core::MetadataTypeId, &str)> = values
            .iter()
            .map(|v| (core::MetadataTypeId(v.metadata_type_id), v.value.as_str()))
            .collect();
        Ok(self
            .inner
            .create_document(core::DocumentTypeId(document_type), &label, &pairs)?
            .into())
    }

    /// Takes a workflow transition offline: the instance must be in the transition's origin
    /// and its condition must allow it, evaluated on the replica (a refusal is the error the
    /// server would give); the instance moves at once and the transition is pushed at the next
    /// sync, where the server takes it through the user's session (or finds it in conflict
    /// when the instance moved there since). A document made offline takes transitions once
    /// synced (`Validation` on `document` before).
    pub fn transition_workflow(
        &self,
        document: i64,
        instance: i64,
        transition: i64,
        comment: String,
    ) -> Result<crate::records::WorkflowLogEntry> {
        Ok(self
            .inner
            .transition_workflow(
                core::DocumentId(document),
                core::WorkflowInstanceId(instance),
                core::WorkflowTransitionId(transition),
                &comment,
            )?
            .into())
    }

    /// Adds a file to `document` offline: its bytes kept in the replica (encrypted when its
    /// storage is), readable at once under a local id (at least 2^50), and pushed with the next
    /// sync, where the server adds it through the user's session, once per write. A file on a
    /// document made offline waits for the document's creation.
    pub fn add_file(
        &self,
        document: i64,
        filename: String,
        data: Vec<u8>,
    ) -> Result<crate::records::DocumentFile> {
        Ok(self
            .inner
            .add_file(core::DocumentId(document), &filename, &mut data.as_slice())?
            .into())
    }

    /// Removes the value of `metadataTypeId` from `documentId` offline, pushed at the next sync.
    pub fn remove_value(&self, document_id: i64, metadata_type_id: i64) -> Result<()> {
        Ok(self.inner.remove_value(
            core::DocumentId(document_id),
            core::MetadataTypeId(metadata_type_id),
        )?)
    }

    /// The writes made offline and not pushed yet, in the order made.
    pub fn pending(&self) -> Result<Vec<PendingWrite>> {
        Ok(self.inner.pending()?.into_iter().map(Into::into).collect())
    }

    /// The writes the server did not apply (conflicts and refusals), oldest first.
    pub fn rejected(&self) -> Result<Vec<RejectedWrite>> {
        Ok(self.inner.rejected()?.into_iter().map(Into::into).collect())
    }

    /// Forgets a rejected write (the replica shows the server's value).
    pub fn discard(&self, key: String) -> Result<()> {
        Ok(self.inner.discard(&key)?)
    }

    /// Makes a rejected write again, based on the value the replica holds now (mine over
    /// theirs); pushed at the next sync.
    pub fn retry(&self, key: String) -> Result<()> {
        Ok(self.inner.retry(&key)?)
    }

    /// The content of a file the replica holds: fetched from the server the first time (its
    /// SHA-256 checked), then read from the replica.
    pub fn read_file(&self, id: i64) -> Result<Vec<u8>> {
        Ok(self.inner.read_file(core::DocumentFileId(id))?)
    }

    /// Fetches the bytes of every file the replica holds and has not fetched yet, so that every
    /// file reads offline. Returns how many were fetched. Call it after `sync` to keep every
    /// file on the device.
    pub fn fetch_files(&self) -> Result<u64> {
        Ok(self.inner.fetch_files(|_, _| {})? as u64)
    }

    /// A session on the replica: the same calls and records as a session on the server,
    /// answered from what the replica holds. Writes are refused (`PermissionDenied`): the
    /// replica is read-only for now.
    pub fn session(&self) -> Arc<Session> {
        Session::of(self.inner.session(), self.inner.local())
    }

    /// The device the replica is signed in as (`null` after the server refused it).
    pub fn device(&self) -> Result<Option<i64>> {
        Ok(self.inner.device()?.map(|d| d.0))
    }

    /// The replica's own database (its event log says which documents each sync stored and
    /// removed: `replica.document_synced`, `replica.document_removed`).
    pub fn local(&self) -> Arc<Docmeta> {
        Docmeta::of(self.inner.local().clone())
    }
}
