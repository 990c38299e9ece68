//! The event log of spec 6: every change is appended in the same transaction that makes it, and
//! handed to subscribers after commit.
//!
//! Layer 2: imports only `model`; the store writes these records.

use chrono::{DateTime, Utc};

use crate::model::{EventId, UserId};

/// Event names (spec 6, and the access and document events docmeta adds).
pub mod names {
    /// A metadata type was created.
    pub const METADATA_TYPE_CREATED: &str = "metadata.metadata_type_created";
    /// A metadata type was edited.
    pub const METADATA_TYPE_EDITED: &str = "metadata.metadata_type_edited";
    /// A metadata type was deleted.
    pub const METADATA_TYPE_DELETED: &str = "metadata.metadata_type_deleted";
    /// A metadata was added to a document.
    pub const DOCUMENT_METADATA_ADDED: &str = "metadata.document_metadata_added";
    /// A metadata value was modified.
    pub const DOCUMENT_METADATA_EDITED: &str = "metadata.document_metadata_edited";
    /// A metadata was removed from a document.
    pub const DOCUMENT_METADATA_REMOVED: &str = "metadata.document_metadata_removed";
    /// An association was created, modified or deleted.
    pub const METADATA_TYPE_RELATIONSHIP_UPDATED: &str =
        "metadata.metadata_type_relationship_updated";
    /// A document type was created.
    pub const DOCUMENT_TYPE_CREATED: &str = "documents.document_type_created";
    /// A document type was edited.
    pub const DOCUMENT_TYPE_EDITED: &str = "documents.document_type_edited";
    /// A document type was deleted.
    pub const DOCUMENT_TYPE_DELETED: &str = "documents.document_type_deleted";
    /// A document was created.
    pub const DOCUMENT_CREATED: &str = "documents.document_created";
    /// A document's label was edited.
    pub const DOCUMENT_EDITED: &str = "documents.document_edited";
    /// A document changed type.
    pub const DOCUMENT_TYPE_CHANGED: &str = "documents.document_type_changed";
    /// A document was deleted.
    pub const DOCUMENT_DELETED: &str = "documents.document_deleted";
    /// A workflow instance took a transition (target: the document; action object: the
    /// instance).
    pub const WORKFLOW_INSTANCE_TRANSITIONED: &str =
        "document_states.workflow_instance_transitioned";
    /// A file was added to a document (target: the file; action object: the document).
    pub const DOCUMENT_FILE_CREATED: &str = "documents.document_file_created";
    /// A document file was deleted.
    pub const DOCUMENT_FILE_DELETED: &str = "documents.document_file_deleted";
    /// An ACL was created.
    pub const ACL_CREATED: &str = "acls.acl_created";
    /// An ACL's permissions changed.
    pub const ACL_EDITED: &str = "acls.acl_edited";
    /// An ACL was deleted.
    pub const ACL_DELETED: &str = "acls.acl_deleted";
    /// A role was created or edited (label, groups, global permissions).
    pub const ROLE_EDITED: &str = "permissions.role_edited";
    /// A user was created or edited.
    pub const USER_EDITED: &str = "user_management.user_edited";
    /// A group was created or edited (name, members).
    pub const GROUP_EDITED: &str = "user_management.group_edited";
    /// A cabinet was created, edited or its documents changed.
    pub const CABINET_EDITED: &str = "cabinets.cabinet_edited";
    /// The objects an application object inherits ACLs from were set
    /// (`Docmeta::set_object_parents`; target: the object).
    pub const OBJECT_PARENTS_SET: &str = "acls.object_parents_set";
}

/// Whether an event (by name) changes what every process keeps in memory, so that each process
/// must apply it before it answers a request that started after its commit: principals, roles,
/// ACLs, the parent links of documents and cabinets (the access snapshot and the login cache),
/// and metadata types (their compiled form). These events are marked when they are written
/// (`follow`), and followed by every process before it decides anything (see
/// `Docmeta::catch_up`).
pub(crate) fn changes_shared_state(name: &str) -> bool {
    use names::*;
    [
        ACL_CREATED,
        ACL_EDITED,
        ACL_DELETED,
        ROLE_EDITED,
        USER_EDITED,
        GROUP_EDITED,
        CABINET_EDITED,
        DOCUMENT_CREATED,
        DOCUMENT_TYPE_CHANGED,
        DOCUMENT_DELETED,
        DOCUMENT_TYPE_DELETED,
        METADATA_TYPE_EDITED,
        METADATA_TYPE_DELETED,
        OBJECT_PARENTS_SET,
    ]
    .contains(&name)
}

/// An object an event refers to, with its label at the time of the event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventObject {
    /// `app_label.model_name` of the object.
    pub kind: String,
    /// The object's id.
    pub id: i64,
    /// The object's label when the event happened.
    pub label: String,
}

/// One entry of the event log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Identifier; increases with time.
    pub id: EventId,
    /// When it happened.
    pub timestamp: DateTime<Utc>,
    /// The event name, e.g. `metadata.document_metadata_added`.
    pub name: String,
    /// The user who caused it; `None` for docmeta itself (tasks, workflows, tools), and in
    /// [`Session::events`](crate::Session::events) for a user the reader may not view.
    pub actor: Option<UserId>,
    /// The object the event is about.
    pub target: EventObject,
    /// The second object involved (the metadata type of a document metadata event, ...).
    pub action_object: Option<EventObject>,
}

/// Which events to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventQuery {
    /// Only events whose target or action object is this `(kind, id)`.
    pub object: Option<(String, i64)>,
    /// Only events older than this id (for paging backwards).
    pub before: Option<EventId>,
    /// Only events after this one (for following the log: pass the last event read, with
    /// `oldest_first`).
    pub after: Option<EventId>,
    /// At most this many (default 100).
    pub limit: Option<u32>,
    /// Oldest first instead of newest first. Oldest first, events come in commit order and a
    /// follower never misses one: with concurrent writers on PostgreSQL an event is listed once
    /// every transaction older than its own has finished (events of one transaction come
    /// together, in id order; ids of different transactions may then come out of order), so
    /// nothing can later appear before the last event read. On SQLite commit order is id order.
    pub oldest_first: bool,
}
