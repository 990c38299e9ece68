//! The event log's records (spec 6): an event, the objects it names, which events to list, and
//! the name of every event docmeta writes.
//!
//! Part of `model` (layer 1 of `scripts/check-structure`): it imports only `error`.

use chrono::{DateTime, Utc};

use super::{EventId, UserId};

/// Declares each event name twice from one list: as a constant of `names` (how docmeta's own
/// code names them) and as an associated constant of [`Event`] (how a user does:
/// `Event::DOCUMENT_METADATA_ADDED`).
macro_rules! event_names {
    ($($(#[doc = $doc:literal])* $name:ident = $value:literal;)*) => {
        /// Event names (spec 6, and the access and document events docmeta adds).
        pub(crate) mod names {
            $($(#[doc = $doc])* pub const $name: &str = $value;)*
        }

        /// The names of the events docmeta writes (spec 6, and the access and document events
        /// docmeta adds), to compare with [`Event::name`].
        impl Event {
            $($(#[doc = $doc])* pub const $name: &'static str = $value;)*

            /// Every event name docmeta writes.
            pub const NAMES: &'static [&'static str] = &[$($value),*];
        }
    };
}

event_names! {
    /// A metadata type was created.
    METADATA_TYPE_CREATED = "metadata.metadata_type_created";
    /// A metadata type was edited.
    METADATA_TYPE_EDITED = "metadata.metadata_type_edited";
    /// A metadata type was deleted.
    METADATA_TYPE_DELETED = "metadata.metadata_type_deleted";
    /// A metadata was added to a document.
    DOCUMENT_METADATA_ADDED = "metadata.document_metadata_added";
    /// A metadata value was modified.
    DOCUMENT_METADATA_EDITED = "metadata.document_metadata_edited";
    /// A metadata was removed from a document.
    DOCUMENT_METADATA_REMOVED = "metadata.document_metadata_removed";
    /// An association was created, modified or deleted.
    METADATA_TYPE_RELATIONSHIP_UPDATED = "metadata.metadata_type_relationship_updated";
    /// A document type was created.
    DOCUMENT_TYPE_CREATED = "documents.document_type_created";
    /// A document type was edited.
    DOCUMENT_TYPE_EDITED = "documents.document_type_edited";
    /// A document type was deleted.
    DOCUMENT_TYPE_DELETED = "documents.document_type_deleted";
    /// A document was created.
    DOCUMENT_CREATED = "documents.document_created";
    /// A document's label was edited.
    DOCUMENT_EDITED = "documents.document_edited";
    /// A document changed type.
    DOCUMENT_TYPE_CHANGED = "documents.document_type_changed";
    /// A document was deleted.
    DOCUMENT_DELETED = "documents.document_deleted";
    /// A workflow instance took a transition (target: the document; action object: the
    /// instance).
    WORKFLOW_INSTANCE_TRANSITIONED = "document_states.workflow_instance_transitioned";
    /// A workflow's definition changed: created, renamed, rebound, deleted, or one of its
    /// states, transitions, triggers or actions added, changed or deleted (target: the
    /// workflow).
    WORKFLOW_EDITED = "document_states.workflow_edited";
    /// A file was added to a document (target: the file; action object: the document).
    DOCUMENT_FILE_CREATED = "documents.document_file_created";
    /// A document file was deleted.
    DOCUMENT_FILE_DELETED = "documents.document_file_deleted";
    /// An ACL was created.
    ACL_CREATED = "acls.acl_created";
    /// An ACL's permissions changed.
    ACL_EDITED = "acls.acl_edited";
    /// An ACL was deleted.
    ACL_DELETED = "acls.acl_deleted";
    /// A role was created or edited (label, groups, global permissions).
    ROLE_EDITED = "permissions.role_edited";
    /// A user was created or edited.
    USER_EDITED = "user_management.user_edited";
    /// A group was created or edited (name, members).
    GROUP_EDITED = "user_management.group_edited";
    /// A cabinet was created, edited or its documents changed.
    CABINET_EDITED = "cabinets.cabinet_edited";
    /// A device signed in as a user with a token (target: the user; the change `device` names
    /// it).
    DEVICE_CREATED = "user_management.device_created";
    /// A device's token was revoked (target: the user; the change `device` names it).
    DEVICE_REVOKED = "user_management.device_revoked";
    /// The objects an application object inherits ACLs from were set
    /// (`Docmeta::set_object_parents`; target: the object).
    OBJECT_PARENTS_SET = "acls.object_parents_set";
    /// A replica stored a document as its server sent it, with its values and file records
    /// (target: the document; written only in a replica's own data directory).
    REPLICA_DOCUMENT_SYNCED = "replica.document_synced";
    /// A replica removed a document its user may no longer see on the server, or that is gone
    /// there (target: the document; written only in a replica's own data directory).
    REPLICA_DOCUMENT_REMOVED = "replica.document_removed";
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
    /// What the event changed, field by field, from what to what (empty for events written
    /// before changes were recorded, and for events that change no field: a file added, the
    /// parents of an application object set). In
    /// [`Session::events`](crate::Session::events), a change the reader may not view now has
    /// its `before` and `after` set to `None` (its `field` stays).
    pub changes: Vec<EventChange>,
}

/// One field an event changed, with its value before and after, in text form: a metadata
/// value as stored, a label or name as given, a boolean as `true` or `false`, an id in
/// decimal, a set of permission keys sorted and joined with commas. A password, or anything
/// derived from one, is never recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventChange {
    /// The field, e.g. `value`, `label`, `is_active`, `permissions`.
    pub field: String,
    /// Its value before the event; `None` when it had none (the object or link was created by
    /// the event) or the reader may not view it.
    pub before: Option<String>,
    /// Its value after the event; `None` when it has none (the object or link was deleted by
    /// the event) or the reader may not view it.
    pub after: Option<String>,
}

impl EventChange {
    /// A field that changed from `before` to `after`.
    pub fn new(
        field: impl Into<String>,
        before: Option<String>,
        after: Option<String>,
    ) -> EventChange {
        EventChange {
            field: field.into(),
            before,
            after,
        }
    }

    /// This change with its values hidden (`before` and `after` set to `None`).
    pub(crate) fn hidden(self) -> EventChange {
        EventChange {
            before: None,
            after: None,
            ..self
        }
    }
}

/// The changes of one event, collected field by field (see [`EventChange`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Changes(Vec<EventChange>);

impl Changes {
    /// No change yet.
    pub(crate) fn new() -> Changes {
        Changes(Vec::new())
    }

    /// `field` set by a creation: nothing before, `after` now.
    pub(crate) fn created(mut self, field: &str, after: impl ToString) -> Changes {
        self.0
            .push(EventChange::new(field, None, Some(after.to_string())));
        self
    }

    /// `field` gone with a deletion: `before` then, nothing now.
    pub(crate) fn removed(mut self, field: &str, before: impl ToString) -> Changes {
        self.0
            .push(EventChange::new(field, Some(before.to_string()), None));
        self
    }

    /// `field` edited from `before` to `after`; nothing is recorded when they are equal.
    pub(crate) fn edited(
        mut self,
        field: &str,
        before: impl ToString,
        after: impl ToString,
    ) -> Changes {
        let (before, after) = (before.to_string(), after.to_string());
        if before != after {
            self.0
                .push(EventChange::new(field, Some(before), Some(after)));
        }
        self
    }

    /// `field` from `before` to `after`, either absent (a link made or undone); nothing is
    /// recorded when they are equal.
    pub(crate) fn set(
        mut self,
        field: &str,
        before: Option<impl ToString>,
        after: Option<impl ToString>,
    ) -> Changes {
        let (before, after) = (before.map(|b| b.to_string()), after.map(|a| a.to_string()));
        if before != after {
            self.0.push(EventChange::new(field, before, after));
        }
        self
    }
}

impl From<Changes> for Vec<EventChange> {
    fn from(c: Changes) -> Self {
        c.0
    }
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
