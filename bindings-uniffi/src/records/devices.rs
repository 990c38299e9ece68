//! Devices signed in as users with tokens of their own.

use std::time::SystemTime;

use docmeta_core as core;

/// A device signed in as a user with a token of its own (see `Docmeta.signInDevice`):
/// revocable, expiring.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Device {
    /// Identifier.
    pub id: i64,
    /// The user it acts as.
    pub user_id: i64,
    /// Its name ("Ann's phone").
    pub name: String,
    /// When it was signed in.
    pub created: SystemTime,
    /// When its token stops being accepted.
    pub expires: SystemTime,
    /// When its token was last accepted (to the minute); `None` until then.
    pub last_used: Option<SystemTime>,
    /// When its replica was last brought up to date (to the minute); `None` until then.
    pub last_sync: Option<SystemTime>,
}

impl From<core::Device> for Device {
    fn from(d: core::Device) -> Self {
        Device {
            id: d.id.0,
            user_id: d.user.0,
            name: d.name,
            created: d.created.into(),
            expires: d.expires.into(),
            last_used: d.last_used.map(Into::into),
            last_sync: d.last_sync.map(Into::into),
        }
    }
}

/// A device just signed in, with its token (`dmd_...`): the only answer that holds it.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct NewDevice {
    /// The device.
    pub device: Device,
    /// Its token: keep it instead of the password.
    pub token: String,
}

impl From<core::NewDevice> for NewDevice {
    fn from(n: core::NewDevice) -> Self {
        NewDevice {
            device: n.device.into(),
            token: n.token,
        }
    }
}

/// A document as a replica keeps it (see `Session.syncChanges`): the document, the values the
/// user may see, and its files' records.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct SyncedDocument {
    /// The document.
    pub document: crate::records::Document,
    /// Its values the user may see (their types are in the batch's schema).
    pub values: Vec<crate::records::DocumentMetadata>,
    /// Its files' records (the bytes are read on demand).
    pub files: Vec<crate::records::DocumentFile>,
    /// The cabinets it is in that the user may see.
    pub cabinet_ids: Vec<i64>,
    /// Its instances of the workflows the user may see, each with its log.
    pub workflows: Vec<SyncedInstance>,
}

/// A document's workflow instance as a replica keeps it: the instance and its log.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct SyncedInstance {
    /// The instance.
    pub instance: crate::records::WorkflowInstance,
    /// Its log, oldest first.
    pub log: Vec<crate::records::WorkflowLogEntry>,
}

impl From<core::SyncedInstance> for SyncedInstance {
    fn from(i: core::SyncedInstance) -> Self {
        SyncedInstance {
            instance: i.instance.into(),
            log: i.log.into_iter().map(Into::into).collect(),
        }
    }
}

/// A workflow as a replica keeps it: the workflow, its states and its transitions (with their
/// conditions and triggers; not its actions).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct SyncedWorkflow {
    /// The workflow.
    pub workflow: crate::records::Workflow,
    /// Its states.
    pub states: Vec<crate::records::WorkflowState>,
    /// Its transitions.
    pub transitions: Vec<crate::records::WorkflowTransition>,
}

impl From<core::SyncedWorkflow> for SyncedWorkflow {
    fn from(w: core::SyncedWorkflow) -> Self {
        SyncedWorkflow {
            workflow: w.workflow.into(),
            states: w.states.into_iter().map(Into::into).collect(),
            transitions: w.transitions.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<core::SyncedDocument> for SyncedDocument {
    fn from(d: core::SyncedDocument) -> Self {
        SyncedDocument {
            document: d.document.into(),
            values: d.values.into_iter().map(Into::into).collect(),
            files: d.files.into_iter().map(Into::into).collect(),
            cabinet_ids: d.cabinets.iter().map(|c| c.0).collect(),
            workflows: d.workflows.into_iter().map(Into::into).collect(),
        }
    }
}

/// The types and cabinets a user may see, as a sync sends them.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct SyncSchema {
    /// The document types.
    pub document_types: Vec<crate::records::DocumentType>,
    /// The metadata types.
    pub metadata_types: Vec<crate::records::MetadataType>,
    /// The associations between them.
    pub associations: Vec<crate::records::Association>,
    /// The cabinets the user may see (a parent the user may not see is named by id only).
    pub cabinets: Vec<crate::records::Cabinet>,
    /// The associations of the document types the user may write to without viewing them as
    /// types (what a replica checks its writes against; not types to list).
    pub write_associations: Vec<crate::records::Association>,
    /// The workflows the user may see, with their states and transitions.
    pub workflows: Vec<SyncedWorkflow>,
    /// Whether the server keeps its files encrypted.
    pub files_encrypted: bool,
}

impl From<core::SyncSchema> for SyncSchema {
    fn from(s: core::SyncSchema) -> Self {
        SyncSchema {
            document_types: s.document_types.into_iter().map(Into::into).collect(),
            metadata_types: s.metadata_types.into_iter().map(Into::into).collect(),
            associations: s.associations.into_iter().map(Into::into).collect(),
            cabinets: s.cabinets.into_iter().map(Into::into).collect(),
            write_associations: s.write_associations.into_iter().map(Into::into).collect(),
            workflows: s.workflows.into_iter().map(Into::into).collect(),
            files_encrypted: s.files_encrypted,
        }
    }
}

/// One batch of changes for a replica (see `Session.syncChanges`): store `documents` (each
/// replaces the replica's copy), delete the ids in `removed`, keep `cursor`, and ask again at
/// once while `more`.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct SyncBatch {
    /// Documents to store, whole.
    pub documents: Vec<SyncedDocument>,
    /// Documents sent before that the user may no longer see, or that are gone.
    pub removed: Vec<i64>,
    /// The types, when they may have changed (and with the first batch of every full pass).
    pub schema: Option<SyncSchema>,
    /// Where the replica stands once it applied this batch: the next call's cursor.
    pub cursor: String,
    /// Whether more changes are ready now.
    pub more: bool,
}

impl From<core::SyncBatch> for SyncBatch {
    fn from(b: core::SyncBatch) -> Self {
        SyncBatch {
            documents: b.documents.into_iter().map(Into::into).collect(),
            removed: b.removed.iter().map(|d| d.0).collect(),
            schema: b.schema.map(Into::into),
            cursor: b.cursor.token(),
            more: b.more,
        }
    }
}
