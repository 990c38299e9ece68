//! What a replica pulls from the server: batches of the documents a user may see, and where the
//! replica stands (see [`Session::sync_changes`](crate::Session::sync_changes)).
//!
//! Part of `model` (layer 1 of `scripts/check-structure`): it imports only `error`.

use super::{
    AssociationView, Cabinet, CabinetId, DocumentFile, DocumentFileId, DocumentId, DocumentType,
    DocumentTypeId, DocumentView, EventId, MetadataType, MetadataTypeId, MetadataValueView,
    Workflow, WorkflowInstance, WorkflowInstanceId, WorkflowLogEntry, WorkflowState,
    WorkflowStateId, WorkflowTransition, WorkflowTransitionId,
};
use crate::error::{Error, Result};

/// Where a replica stands in the server's changes (see
/// [`Session::sync_changes`](crate::Session::sync_changes)). Faces carry it as an opaque text
/// ([`SyncCursor::token`], [`SyncCursor::parse`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncCursor {
    /// The last event of the log whose change the replica has (`None`: none yet).
    pub log: Option<EventId>,
    /// What the next batch does.
    pub phase: SyncPhase,
    /// The device's pass this cursor belongs to (a cursor of an older pass starts a new one).
    pub pass: i64,
}

/// What the next batch of a sync does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPhase {
    /// Sends the documents the log names after the cursor.
    Changes,
    /// A full pass over what the user may see: sends the documents after this one.
    Pass {
        /// The last document sent (`None`: none yet).
        after: Option<DocumentId>,
    },
    /// The end of a pass: removes what an earlier pass sent and this one did not.
    Sweep,
}

impl SyncCursor {
    /// The cursor as text: `s1.<log>.<phase>.<after>.<pass>`.
    pub fn token(&self) -> String {
        let n = |v: Option<i64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
        let (phase, after) = match self.phase {
            SyncPhase::Changes => ("c", None),
            SyncPhase::Pass { after } => ("p", after.map(|d| d.0)),
            SyncPhase::Sweep => ("s", None),
        };
        format!(
            "s1.{}.{phase}.{}.{}",
            n(self.log.map(|e| e.0)),
            n(after),
            self.pass
        )
    }

    /// A cursor from [`token`](Self::token); anything else is [`Error::Validation`] on
    /// `cursor`.
    pub fn parse(token: &str) -> Result<SyncCursor> {
        let invalid = || Error::validation("cursor", "Not a cursor this server gave.");
        let parts: Vec<&str> = token.split('.').collect();
        let [version, log, phase, after, pass] = parts.as_slice() else {
            return Err(invalid());
        };
        let n = |s: &str| -> Result<Option<i64>> {
            match s {
                "-" => Ok(None),
                s => s
                    .parse::<i64>()
                    .ok()
                    .filter(|v| *v >= 0)
                    .map(Some)
                    .ok_or_else(invalid),
            }
        };
        if *version != "s1" {
            return Err(invalid());
        }
        let after = n(after)?.map(DocumentId);
        let phase = match *phase {
            "c" if after.is_none() => SyncPhase::Changes,
            "p" => SyncPhase::Pass { after },
            "s" if after.is_none() => SyncPhase::Sweep,
            _ => return Err(invalid()),
        };
        Ok(SyncCursor {
            log: n(log)?.map(EventId),
            phase,
            pass: n(pass)?.ok_or_else(invalid)?,
        })
    }
}

/// A document as a replica keeps it: the document with its type, the values the user may see,
/// each with its type, and its files' records.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncedDocument {
    /// The document.
    pub document: DocumentView,
    /// Its values the user may see.
    pub values: Vec<MetadataValueView>,
    /// Its files (their records; the bytes are read on demand).
    pub files: Vec<DocumentFile>,
    /// The cabinets it is in that the user may view (see [`SyncSchema::cabinets`]).
    pub cabinets: Vec<CabinetId>,
    /// Its workflow instances of the workflows the user may view (see
    /// [`SyncSchema::workflows`]), each with its log.
    pub workflows: Vec<SyncedInstance>,
}

/// A document's workflow instance as a replica keeps it: its state, and its log as
/// [`Session::workflow_log`](crate::Session::workflow_log) shows it to the user.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncedInstance {
    /// The instance.
    pub instance: WorkflowInstance,
    /// Its log, oldest first.
    pub log: Vec<WorkflowLogEntry>,
}

/// A workflow as a replica keeps it: the workflow with its states and its transitions (their
/// conditions and triggers), as the user may view them online. Its actions are not sent: they
/// run on the server only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncedWorkflow {
    /// The workflow.
    pub workflow: Workflow,
    /// Its states.
    pub states: Vec<WorkflowState>,
    /// Its transitions, with their conditions and triggers.
    pub transitions: Vec<WorkflowTransition>,
}

/// The types a user may see: what a replica needs to show documents and run values through
/// the pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SyncSchema {
    /// The document types the user may view.
    pub document_types: Vec<DocumentType>,
    /// The metadata types the user may view.
    pub metadata_types: Vec<MetadataType>,
    /// The associations of those document types whose metadata type the user may view.
    pub associations: Vec<AssociationView>,
    /// The cabinets the user may view, by id (a cabinet's parent may be one the user may not
    /// view: its id is shown, as online, and nothing else of it).
    pub cabinets: Vec<Cabinet>,
    /// The associations of the document types the user may create documents of or add values
    /// to without viewing them as types, to the metadata types the user may view: what a
    /// replica checks its writes against, as the server does. Each document type is named by
    /// id only (an empty label: the user may not read it); not listed on the replica.
    pub write_associations: Vec<AssociationView>,
    /// The workflows the user may view, with their states and transitions: a replica shows a
    /// document's workflow state, evaluates which transitions are available and takes them
    /// offline.
    pub workflows: Vec<SyncedWorkflow>,
    /// Whether the server keeps its files encrypted: a replica then keeps the bytes it fetches
    /// only in an encrypted storage of its own (see
    /// [`ReplicaBuilder::storage_password`](crate::ReplicaBuilder::storage_password)).
    pub files_encrypted: bool,
}

/// One batch of changes for a replica: store `documents` (each replaces the replica's copy),
/// delete `removed`, keep `cursor`, and ask again at once while `more`. Every document a batch
/// removes was sent to this device before: a removal never names a document its user never saw.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncBatch {
    /// Documents to store, whole.
    pub documents: Vec<SyncedDocument>,
    /// Documents sent before that the user may no longer see, or that are gone.
    pub removed: Vec<DocumentId>,
    /// The types, when they may have changed (and with the first batch of every pass).
    pub schema: Option<SyncSchema>,
    /// Where the replica stands once it applied this batch.
    pub cursor: SyncCursor,
    /// Whether more changes are ready now.
    pub more: bool,
}

/// A write made on a replica, pushed to the server (see
/// [`Session::sync_push`](crate::Session::sync_push)): a change of one document's value, or a
/// document created offline. Values are named by document and metadata type (a document holds
/// at most one value of a type), so a write made offline names the same value on the server
/// whatever ids were given since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushedWrite {
    /// The replica's name for the write (1 to 64 characters): its outcome carries it, and a
    /// create pushed again under the same key (after a lost answer) creates nothing more.
    pub key: String,
    /// The document: for a [`Create`](PushedChange::Create), the replica's own id for the
    /// document it made (the server gives it another, answered in the outcome).
    pub document: DocumentId,
    /// What the write does.
    pub change: PushedChange,
}

impl PushedWrite {
    /// The metadata type of the value a set or a removal writes (`None` for a create or a
    /// transition).
    pub fn metadata_type(&self) -> Option<MetadataTypeId> {
        match &self.change {
            PushedChange::Set { metadata_type, .. }
            | PushedChange::Remove { metadata_type, .. } => Some(*metadata_type),
            PushedChange::Create { .. }
            | PushedChange::Transition { .. }
            | PushedChange::AddFile { .. } => None,
        }
    }

    /// Whether the write creates its document.
    pub fn is_create(&self) -> bool {
        matches!(self.change, PushedChange::Create { .. })
    }
}

/// What a pushed write does, and for a value the value it was based on (what the replica held
/// when it was made: `None` for no value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushedChange {
    /// Sets the value of `metadata_type` (adds it, or edits it), through the pipeline, as
    /// submitted.
    Set {
        /// The value's type.
        metadata_type: MetadataTypeId,
        /// The value as submitted.
        value: String,
        /// The value the replica held.
        base: Option<String>,
    },
    /// Removes the value of `metadata_type`.
    Remove {
        /// The value's type.
        metadata_type: MetadataTypeId,
        /// The value the replica held.
        base: Option<String>,
    },
    /// Creates a document of `document_type` with `values`, as
    /// [`Session::create_document`](crate::Session::create_document) does (the same checks,
    /// pipeline, required defaults and workflow starts). Never a conflict.
    Create {
        /// The document's type.
        document_type: DocumentTypeId,
        /// Its label.
        label: String,
        /// Its values as submitted, by metadata type.
        values: Vec<(MetadataTypeId, String)>,
    },
    /// Takes `transition` on the document's workflow instance `instance`, as
    /// [`Session::transition_workflow`](crate::Session::transition_workflow) does (the same
    /// permission, condition and actions), logged with `comment`. In conflict when the
    /// instance is no longer in the state the replica held (`base`), unless it is already in
    /// the transition's destination (then applied: a push retried after a lost answer applies
    /// once).
    Transition {
        /// The instance.
        instance: WorkflowInstanceId,
        /// The transition.
        transition: WorkflowTransitionId,
        /// The log entry's comment.
        comment: String,
        /// The instance's state the replica held.
        base: Option<WorkflowStateId>,
    },
    /// Adds a file to the document, as
    /// [`Session::add_file`](crate::Session::add_file) does. Its bytes do not travel in a
    /// push: a replica sends them with
    /// [`Session::sync_push_file`](crate::Session::sync_push_file) (over HTTP
    /// `POST /api/v4/sync/push/file/`), where a file pushed again under the same key (after a
    /// lost answer) is added once. Never a conflict.
    AddFile {
        /// The replica's own id for the file it holds until the server's replaces it.
        file: DocumentFileId,
        /// The file's name.
        filename: String,
    },
}

/// What became of a pushed write.
#[derive(Debug, Clone, PartialEq)]
pub struct PushOutcome {
    /// The write's key.
    pub key: String,
    /// What became of it.
    pub result: PushResult,
    /// The document as the user may see it on the server after the write (`None`: no longer
    /// visible, or gone; for a create, the document created, under the server's id, or `None`
    /// when refused or not visible to the user): the replica stores it at once, so what it
    /// shows is the server's truth whatever became of the write.
    pub document: Option<SyncedDocument>,
}

/// What became of a pushed write: applied, in conflict with a change made on the server since
/// the replica read the value, or refused as it would have been online.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushResult {
    /// Applied (or already what the write asked for: a push retried after a lost answer
    /// applies once).
    Applied,
    /// The value changed on the server since the replica read it: the server's value stands.
    Conflict {
        /// The server's value now (`None`: no value, or one the user may not view); for a
        /// transition, the id of the instance's state on the server (`None`: no state).
        server: Option<String>,
    },
    /// Refused, as the same write online would have been.
    Refused {
        /// The kind of error.
        kind: crate::error::ErrorKind,
        /// The field a validation error names.
        field: Option<String>,
        /// The error's message.
        message: String,
    },
}
