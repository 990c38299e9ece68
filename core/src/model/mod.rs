//! Identifiers and records of the specification's resources (spec 2.1-2.3, 2.11).
//!
//! Records are plain data: every rule about them lives in [`crate::Session`].
//!
//! Layer 1 (with `config`): imports only `error`; everything else may import it.

mod audit;
mod backup;
mod device;
pub(crate) mod event;
mod explanation;
mod indexed;
mod inputs;
mod object;
mod permission;
mod principals;
mod replica;
mod schema;
mod search;
mod shapers;
mod storage;
mod sync;
mod task;
mod username;
mod value_type;
mod views;
mod webhook;
mod workflow;

pub use audit::{
    AuditFailure, AuditReport, Checkpoint, PastValue, PruneReport, ValueAction, ValueChange,
};
pub use backup::{
    BackupInfo, BackupReport, DamagedEntry, Manifest, ManifestEntry, PruneDecision, RestoreReport,
};
pub use device::{Device, NewDevice};
pub(crate) use event::Changes;
pub use event::{Event, EventChange, EventObject, EventQuery};
pub use explanation::{Explanation, Grant};
pub use indexed::{IndexedDocument, IndexedValue};
pub use inputs::{DocumentQuery, NewDocument, OrderBy, SearchQuery, TransitionUpdate, UserUpdate};
pub use object::{ObjectKind, ObjectRef};
pub use permission::{Permission, PermissionSet};
pub use principals::{Acl, Cabinet, Group, Role, Task, TaskState, User};
pub use replica::{Pulled, RejectedWrite, Remote, SignedIn, SyncProgress};
pub use schema::{AssociationSpec, Change, DocumentTypeSpec, MetadataTypeSpec, RoleSpec, Schema};
pub use search::{
    Hit, RecordKind, SearchStatus, SearchTicket, SearchWork, SearchWorkRun, SearchWorkState,
};
pub(crate) use shapers::{MetadataTypeShapers, Shapers};
pub use storage::{DamagedFile, FileDamage, StorageReport};
pub use sync::{
    PushOutcome, PushResult, PushedChange, PushedWrite, SyncBatch, SyncCursor, SyncPhase,
    SyncSchema, SyncedDocument, SyncedInstance, SyncedWorkflow,
};
pub use task::{
    ADD_REQUIRED_METADATA_TYPE, REMOVE_METADATA_TYPE, SEARCH_REINDEX, SEARCH_TASKS, SEARCH_WORK,
};
pub(crate) use task::{SYSTEM_AUTHOR, TypePair, author_id};
pub(crate) use username::username_key;
pub use value_type::{TypedKey, ValueMisfit, ValueType, ValueTypeCheck};
pub use views::{
    AclView, AssociationView, DocumentView, EventActor, EventFeed, EventView, MetadataPageVersion,
    MetadataValueView, Page, PageRequest, TemplatePreview,
};
pub(crate) use webhook::message_id;
pub use webhook::{CreatedWebhook, DeliveryStatus, Webhook, WebhookDelivery, WebhookUpdate};
pub use workflow::*;

use chrono::{DateTime, Utc};

macro_rules! ids {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub i64);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }

        impl From<i64> for $name {
            fn from(id: i64) -> Self {
                $name(id)
            }
        }
    )*};
}

ids! {
    /// Identifies a [`MetadataType`].
    MetadataTypeId;
    /// Identifies a [`DocumentType`].
    DocumentTypeId;
    /// Identifies a [`Document`].
    DocumentId;
    /// Identifies a [`DocumentTypeMetadataType`] association.
    AssociationId;
    /// Identifies a [`DocumentMetadata`] value.
    DocumentMetadataId;
    /// Identifies a user.
    UserId;
    /// Identifies a group of users.
    GroupId;
    /// Identifies a role.
    RoleId;
    /// Identifies an access-control list.
    AclId;
    /// Identifies a cabinet.
    CabinetId;
    /// Identifies an event of the event log.
    EventId;
    /// Identifies a durable background task.
    TaskId;
    /// Identifies a [`DocumentFile`].
    DocumentFileId;
    /// Identifies a workflow template.
    WorkflowId;
    /// Identifies a state of a workflow.
    WorkflowStateId;
    /// Identifies a transition of a workflow.
    WorkflowTransitionId;
    /// Identifies an action of a workflow state.
    WorkflowActionId;
    /// Identifies a workflow instance (a workflow running on a document).
    WorkflowInstanceId;
    /// Identifies an entry of a workflow instance's log.
    WorkflowLogEntryId;
    /// Identifies a [`Webhook`].
    WebhookId;
    /// Identifies a [`WebhookDelivery`].
    WebhookDeliveryId;
    /// Identifies a [`Device`].
    DeviceId;
}

/// Who performs an operation: every operation of docmeta runs as an actor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Actor {
    /// A user; permissions are checked.
    User(UserId),
    /// docmeta itself, tools, tasks and workflows; never checked.
    System,
}

impl Actor {
    /// The user id, when the actor is a user.
    pub fn user(self) -> Option<UserId> {
        match self {
            Actor::User(id) => Some(id),
            Actor::System => None,
        }
    }
}

/// A global metadata definition (spec 2.1). Optional text fields are empty strings when unset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataType {
    /// Identifier.
    pub id: MetadataTypeId,
    /// Unique technical name, usable in templates as `document.metadata_value_of.<name>`.
    pub name: String,
    /// Human-readable label.
    pub label: String,
    /// Default value template (spec 2.6).
    pub default: String,
    /// Lookup template producing the CSV list of allowed values (spec 2.7).
    pub lookup: String,
    /// Class path of the validator (spec 2.8).
    pub validation: String,
    /// YAML arguments of the validator.
    pub validation_arguments: String,
    /// Class path of the parser (spec 2.9).
    pub parser: String,
    /// YAML arguments of the parser.
    pub parser_arguments: String,
    /// What its values are (text unless set): after the pipeline, a value must be of this type.
    pub value_type: ValueType,
}

/// The writable fields of a [`MetadataType`], for creation and full updates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetadataTypeInput {
    /// See [`MetadataType::name`].
    pub name: String,
    /// See [`MetadataType::label`].
    pub label: String,
    /// See [`MetadataType::default`].
    pub default: String,
    /// See [`MetadataType::lookup`].
    pub lookup: String,
    /// See [`MetadataType::validation`].
    pub validation: String,
    /// See [`MetadataType::validation_arguments`].
    pub validation_arguments: String,
    /// See [`MetadataType::parser`].
    pub parser: String,
    /// See [`MetadataType::parser_arguments`].
    pub parser_arguments: String,
    /// See [`MetadataType::value_type`].
    pub value_type: ValueType,
}

impl MetadataTypeInput {
    /// A type with only a name and a label.
    pub fn new(name: impl Into<String>, label: impl Into<String>) -> Self {
        MetadataTypeInput {
            name: name.into(),
            label: label.into(),
            ..Default::default()
        }
    }

    /// The record these fields make for the type `id`.
    pub fn into_record(self, id: MetadataTypeId) -> MetadataType {
        let MetadataTypeInput {
            name,
            label,
            default,
            lookup,
            validation,
            validation_arguments,
            parser,
            parser_arguments,
            value_type,
        } = self;
        MetadataType {
            id,
            name,
            label,
            default,
            lookup,
            validation,
            validation_arguments,
            parser,
            parser_arguments,
            value_type,
        }
    }

    /// Sets the type of the values.
    pub fn value_type(mut self, value_type: ValueType) -> Self {
        self.value_type = value_type;
        self
    }

    /// Sets the default template.
    pub fn default_value(mut self, template: impl Into<String>) -> Self {
        self.default = template.into();
        self
    }

    /// Sets the lookup template.
    pub fn lookup(mut self, template: impl Into<String>) -> Self {
        self.lookup = template.into();
        self
    }

    /// Sets the validator class path and its YAML arguments.
    pub fn validation(mut self, path: impl Into<String>, arguments: impl Into<String>) -> Self {
        self.validation = path.into();
        self.validation_arguments = arguments.into();
        self
    }

    /// Sets the parser class path and its YAML arguments.
    pub fn parser(mut self, path: impl Into<String>, arguments: impl Into<String>) -> Self {
        self.parser = path.into();
        self.parser_arguments = arguments.into();
        self
    }
}

impl From<&MetadataType> for MetadataTypeInput {
    fn from(t: &MetadataType) -> Self {
        MetadataTypeInput {
            name: t.name.clone(),
            label: t.label.clone(),
            default: t.default.clone(),
            lookup: t.lookup.clone(),
            validation: t.validation.clone(),
            validation_arguments: t.validation_arguments.clone(),
            parser: t.parser.clone(),
            parser_arguments: t.parser_arguments.clone(),
            value_type: t.value_type,
        }
    }
}

/// A document type (the spec names it without showing its fields; docmeta gives it a label).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentType {
    /// Identifier.
    pub id: DocumentTypeId,
    /// Unique human-readable label.
    pub label: String,
}

/// A document: a label, a type and its creation time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// Identifier.
    pub id: DocumentId,
    /// Human-readable label.
    pub label: String,
    /// The document's type.
    pub document_type_id: DocumentTypeId,
    /// When the document was created.
    pub created: DateTime<Utc>,
}

/// A file of a document: what was uploaded, with its size and SHA-256 (the bytes live in the
/// file storage under a generated name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentFile {
    /// Identifier.
    pub id: DocumentFileId,
    /// The document it belongs to.
    pub document_id: DocumentId,
    /// The uploaded file's name, without any path.
    pub filename: String,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256 of the content, lower-case hex.
    pub checksum: String,
    /// MIME type guessed from the file name.
    pub mimetype: String,
    /// When it was uploaded.
    pub created: DateTime<Utc>,
}

/// The link between a document type and a metadata type (spec 2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocumentTypeMetadataType {
    /// Identifier.
    pub id: AssociationId,
    /// The document type.
    pub document_type_id: DocumentTypeId,
    /// The metadata type.
    pub metadata_type_id: MetadataTypeId,
    /// Whether documents of the type must carry a value.
    pub required: bool,
}

/// The value of one metadata type on one document (spec 2.3). At most one per pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentMetadata {
    /// Identifier.
    pub id: DocumentMetadataId,
    /// The document.
    pub document_id: DocumentId,
    /// The metadata type.
    pub metadata_type_id: MetadataTypeId,
    /// The stored value: always a string, the value after parsing.
    pub value: String,
}

/// Checks a label or a name as every form of docmeta does: no NUL character, not blank, at
/// most `max` characters once trimmed. Returns the text trimmed.
pub(crate) fn check_text<'a>(
    field: &str,
    text: &'a str,
    max: usize,
) -> crate::error::Result<&'a str> {
    check_no_nul(field, text)?;
    let text = text.trim();
    if text.is_empty() {
        return Err(crate::error::Error::validation(
            field,
            "This field may not be blank.",
        ));
    }
    if text.chars().count() > max {
        return Err(crate::error::Error::validation(
            field,
            format!("Ensure this field has no more than {max} characters."),
        ));
    }
    Ok(text)
}

/// Longest stored metadata value, in characters (`metadata::pipeline::MAX_VALUE_LEN`; here so
/// that the parsers can bound what they build without importing the pipeline that uses them).
pub(crate) const MAX_VALUE_CHARS: usize = 10_000;

/// Refuses text holding the NUL character. SQLite would store it but PostgreSQL cannot, so
/// both stores refuse it alike, as a validation error naming `field`.
pub(crate) fn check_no_nul(field: &str, text: &str) -> crate::error::Result<()> {
    if text.contains('\0') {
        return Err(crate::error::Error::validation(
            field,
            "Text may not contain the NUL character.",
        ));
    }
    Ok(())
}

/// The current time at the precision both stores keep (microseconds), so that a record a create
/// returns equals the same record read back later.
pub(crate) fn now() -> chrono::DateTime<chrono::Utc> {
    use chrono::SubsecRound;
    chrono::Utc::now().trunc_subsecs(6)
}
