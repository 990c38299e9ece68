//! The frozen record classes (`Document`, `Acl`, `Workflow`, ...) and their conversions from
//! docmeta-core's types.

use chrono::{DateTime, Timelike, Utc};
use docmeta_core as core;
use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;

/// A frozen record class. Fields after `related` hold records a call read along with this one
/// (a document's type, an ACL's role): they are shown, but equality compares the record's own
/// fields, so a document read with its type equals the same document returned by a write.
macro_rules! record {
    ($(#[$doc:meta])* $name:ident { $($field:ident : $ty:ty),* $(,)? }
        $(related { $($rfield:ident : $rty:ty),* $(,)? })?) => {
        $(#[$doc])*
        #[pyclass(frozen, eq, get_all, module = "docmeta", skip_from_py_object)]
        #[derive(Debug, Clone)]
        pub struct $name { $(pub(crate) $field: $ty,)* $($(pub(crate) $rfield: $rty,)*)? }

        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                true $(&& self.$field == other.$field)*
            }
        }

        #[pymethods]
        impl $name {
            /// `Name(field=repr(value), ...)`, each value as Python writes it.
            fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
                let mut parts: Vec<String> = Vec::new();
                $( parts.push(format!("{}={}", stringify!($field),
                    self.$field.clone().into_bound_py_any(py)?.repr()?)); )*
                $($( parts.push(format!("{}={}", stringify!($rfield),
                    self.$rfield.clone().into_bound_py_any(py)?.repr()?)); )*)?
                Ok(format!("{}({})", stringify!($name), parts.join(", ")))
            }
        }
    };
}

record!(
    /// A metadata type (spec 2.1).
    MetadataType { id: i64, name: String, label: String, default: String, lookup: String,
        validation: String, validation_arguments: String, parser: String, parser_arguments: String,
        value_type: String });
record!(
    /// A stored value that is not of a value type: its document, its id and the value.
    ValueMisfit { document_id: i64, metadata_id: i64, value: String });
record!(
    /// What changing a metadata type's value type would meet (`Session.check_value_type`):
    /// `checked` values the caller may view, `count` of them not of `value_type`, `misfits`
    /// (at most 1,000), and `hidden_misfits`: whether a value the caller may not view does not
    /// fit either. The change is refused while any value does not fit.
    ValueTypeCheck { value_type: String, checked: u64, count: u64, misfits: Vec<ValueMisfit>,
        hidden_misfits: bool });
record!(
    /// What a default and a lookup template render to before they are saved
    /// (`Session.preview_templates`): the default (None when none was given or it failed, then
    /// `default_error` says why), the lookup's choices (likewise, `lookup_error`).
    TemplatePreview { default: Option<String>, default_error: Option<String>,
        lookup_choices: Option<Vec<String>>, lookup_error: Option<String> });
record!(
    /// A document type.
    DocumentType { id: i64, label: String });
record!(
    /// A document. `document_type` is its type's record (a document's viewer sees its type's
    /// label), from every call that returns documents; None only in a `DocumentDetails`.
    Document { id: i64, label: String, document_type_id: i64, created: DateTime<Utc> }
        related { document_type: Option<DocumentType> });
record!(
    /// A document created with its first file.
    DocumentWithFile { document: Document, file: DocumentFile });
record!(
    /// A metadata value of a document (one per document and type). `metadata_type` is its
    /// type's record, from every call that returns values (the writes included: they take it
    /// from their own transaction); None only in a `MetadataValueDetail`, which holds the type
    /// beside the value.
    DocumentMetadata { id: i64, document_id: i64, metadata_type_id: i64, value: String }
        related { metadata_type: Option<MetadataType> });
record!(
    /// A file of a document (the bytes live in the file storage).
    DocumentFile { id: i64, document_id: i64, filename: String, size: u64, checksum: String,
        mimetype: String, created: DateTime<Utc> });
record!(
    /// A user (never with its password hash).
    User { id: i64, username: String, is_superuser: bool, is_active: bool });
record!(
    /// An access-control list: a role's permissions on one object, with the role's record
    /// (shown to whoever may view the ACL).
    Acl { id: i64, object_kind: String, object_id: i64, role_id: i64, permissions: Vec<String> }
        related { role: Role });
record!(
    /// A group of users.
    Group { id: i64, name: String });
record!(
    /// A role: what groups are given, and what ACLs and global permissions name.
    Role { id: i64, label: String });
record!(
    /// A metadata type associated with a document type (spec 2.2), with both types.
    Association { id: i64, document_type_id: i64, metadata_type_id: i64, required: bool,
        document_type: DocumentType, metadata_type: MetadataType });
record!(
    /// A metadata value with its type, as `document_metadata_details` returns it.
    MetadataValueDetail { value: DocumentMetadata, metadata_type: MetadataType });
record!(
    /// A document with every value the caller may see and their types.
    DocumentDetails { document: Document, values: Vec<MetadataValueDetail> });
record!(
    /// An object: its kind (`app_label.model_name`) and its id.
    ObjectRef { kind: String, id: i64 });
record!(
    /// One reason a permission is granted: `kind` is `"system"`, `"superuser"`, `"global"`
    /// (`role_id` holds it globally, the user has it through `group_id`) or `"acl"` (`acl_id` of
    /// `role_id` on `object`, reached from the checked object along `path`, both included).
    Grant { kind: String, role_id: Option<i64>, group_id: Option<i64>, acl_id: Option<i64>,
        object: Option<ObjectRef>, path: Vec<ObjectRef> });
record!(
    /// Why a user may or may not do something: the deciding `grant`, every other grant that
    /// `also` applies, the objects whose ACLs were `checked`, a `note` when the user was refused
    /// outright, and the whole as one `sentence`.
    Explanation { granted: bool, grant: Option<Grant>, also: Vec<Grant>,
        checked: Vec<ObjectRef>, note: Option<String>, sentence: String });
record!(
    /// One backup archive considered by `prune_backups`: kept (and why) or deleted.
    PruneDecision { path: String, backup_id: String, created: DateTime<Utc>,
        base: Option<String>, kept: bool, kept_because: Option<String> });
record!(
    /// One field an event changed, from `before` to `after`, in text form. `before` is None when
    /// the field had no value (the event created the object or link), `after` when it has none
    /// (the event deleted it); both are None when the reader may not view the value.
    EventChange { field: String, before: Option<String>, after: Option<String> });
record!(
    /// An entry of the event log (spec 6).
    /// `actor_username` is set when a session listed the event and may view its actor; a
    /// session that may not view the actor sees `actor_id` and `actor_username` as `None`.
    /// `changes` says what the event changed, field by field.
    Event { id: i64, timestamp: DateTime<Utc>, name: String, actor_id: Option<i64>,
        target_kind: String, target_id: i64, target_label: String,
        action_object_kind: Option<String>, action_object_id: Option<i64>,
        changes: Vec<EventChange> }
        related { actor_username: Option<String> });
record!(
    /// What `Session.events_after` answers: the next events of the log the session may see, in
    /// commit order, and the `cursor` to pass to the next call (past the events it may not see
    /// too; None only while the log is empty after a None cursor).
    EventFeed { events: Vec<Event>, cursor: Option<i64> });
record!(
    /// Where search work handed to another process stands: `state` is `"pending"` (with
    /// `attempts` and the last `error`), `"running"` (`done` of `total`), `"done"` (`total`
    /// indexed, when known) or `"failed"` (`error`).
    SearchWorkState { state: String, attempts: Option<i64>, error: Option<String>,
        done: Option<usize>, total: Option<usize> });
record!(
    /// A cabinet (a tree of document folders).
    Cabinet { id: i64, label: String, parent_id: Option<i64> });
record!(
    /// A durable background task that is not done.
    /// `target` is the id of the search index it must run on (search work handed to an index's
    /// writer, a restore's rebuild), None when any worker may run it.
    Task { id: i64, name: String, state: String, attempts: i64, error: String,
        target: Option<String> });
record!(
    /// A webhook: the events of the log its owner may see, POSTed signed to `url`; `events`
    /// names the events it is for (empty: every event).
    Webhook { id: i64, owner_id: i64, url: String, events: Vec<String>, active: bool,
        created: DateTime<Utc> });
record!(
    /// A webhook just created, with its signing secret (`whsec_` and base64): the only answer
    /// that holds it.
    CreatedWebhook { webhook: Webhook, secret: String });
record!(
    /// One event to send to one webhook: `status` is `"pending"`, `"delivered"` or
    /// `"failed"`; `message_id` is the `webhook-id` header of every attempt.
    WebhookDelivery { id: i64, message_id: String, webhook_id: i64, event_id: i64,
        status: String, attempts: i64, last_status_code: Option<u16>,
        last_attempt: Option<DateTime<Utc>>, next_attempt: DateTime<Utc>, last_error: String,
        created: DateTime<Utc> });
record!(
    /// A device signed in as a user with a token of its own (see `Docmeta.sign_in_device`):
    /// revocable, expiring at `expires`; `last_used` (its token last accepted) and
    /// `last_sync` (its replica last brought up to date) are to the minute.
    Device { id: i64, user_id: i64, name: String, created: DateTime<Utc>,
        expires: DateTime<Utc>, last_used: Option<DateTime<Utc>>,
        last_sync: Option<DateTime<Utc>> });
record!(
    /// A device just signed in, with its token (`dmd_...`): the only answer that holds it.
    NewDevice { device: Device, token: String });
record!(
    /// A document as a replica keeps it (see `Session.sync_changes`): the document with its
    /// type, the values the user may see with their types, its files' records, and the ids of
    /// the cabinets it is in that the user may see.
    SyncedDocument { document: Document, values: Vec<DocumentMetadata>,
        files: Vec<DocumentFile>, cabinet_ids: Vec<i64>, workflows: Vec<SyncedInstance> });
record!(
    /// A document's workflow instance as a replica keeps it: the instance and its log.
    SyncedInstance { instance: WorkflowInstance, log: Vec<WorkflowLogEntry> });
record!(
    /// A workflow as a replica keeps it: the workflow, its states and its transitions (with
    /// their conditions and triggers; not its actions).
    SyncedWorkflow { workflow: Workflow, states: Vec<WorkflowState>,
        transitions: Vec<WorkflowTransition> });
record!(
    /// The types and cabinets a user may see, as a sync sends them.
    SyncSchema { document_types: Vec<DocumentType>, metadata_types: Vec<MetadataType>,
        associations: Vec<Association>, cabinets: Vec<Cabinet>,
        write_associations: Vec<Association>, workflows: Vec<SyncedWorkflow>,
        files_encrypted: bool });
record!(
    /// One batch of changes for a replica (see `Session.sync_changes`): store `documents`
    /// (each replaces the replica's copy), delete the ids in `removed`, keep `cursor`, and ask
    /// again at once while `more`. `schema` is set when the types may have changed.
    SyncBatch { documents: Vec<SyncedDocument>, removed: Vec<i64>,
        schema: Option<SyncSchema>, cursor: String, more: bool });
record!(
    /// How far a replica's sync has come: `batches` stored, documents `received` and
    /// `removed`, writes made offline the server applied (`pushed`) and did not (`rejected`),
    /// and whether the server has `more` ready now (False at the end).
    SyncProgress { batches: usize, received: usize, removed: usize, pushed: usize,
        rejected: usize, more: bool });
record!(
    /// A write made on a replica: `action` is `"set"` (of `metadata_type_id`, with `value`,
    /// as submitted), `"remove"` (of `metadata_type_id`), `"create"` (the document
    /// `document_id`, the replica's own id for it, of `document_type_id` with `label` and
    /// `values` as submitted) or `"transition"` (`transition_id` taken on the instance
    /// `workflow_instance_id` with `comment`, from the state `base_state_id`) or `"file"` (the
    /// file `file_id`, the replica's own id for it, named `filename`, added to the document);
    /// `base` is the value the replica held when a set or removal was made (None: none).
    PendingWrite { key: String, document_id: i64, metadata_type_id: Option<i64>,
        action: String, value: Option<String>, base: Option<String>,
        document_type_id: Option<i64>, label: Option<String>,
        values: std::collections::BTreeMap<i64, String>, workflow_instance_id: Option<i64>,
        transition_id: Option<i64>, comment: Option<String>, base_state_id: Option<i64>,
        file_id: Option<i64>, filename: Option<String> });
record!(
    /// What became of a pushed write: `status` is `"applied"`, `"conflict"` (the server's
    /// value stands: `server_value`) or `"refused"` (`error_kind`, `error_field`,
    /// `error_message`, as online); `document` is the document as the user may see it on the
    /// server now (None: not visible).
    PushOutcome { key: String, status: String, server_value: Option<String>,
        error_kind: Option<String>, error_field: Option<String>, error_message: Option<String>,
        document: Option<SyncedDocument> });
record!(
    /// A write made offline that the server did not apply (`status` `"conflict"` or
    /// `"refused"`, as in `PushOutcome`): kept until `Replica.discard` or `Replica.retry`.
    RejectedWrite { write: PendingWrite, status: String, server_value: Option<String>,
        error_kind: Option<String>, error_field: Option<String>, error_message: Option<String> });
record!(
    /// A workflow template.
    Workflow { id: i64, label: String, document_type_ids: Vec<i64> });
record!(
    /// A state of a workflow.
    WorkflowState { id: i64, workflow_id: i64, label: String, initial: bool });
record!(
    /// A transition of a workflow, with its trigger events.
    WorkflowTransition { id: i64, workflow_id: i64, label: String, origin_state_id: i64,
        destination_state_id: i64, condition: String, triggers: Vec<String> });
record!(
    /// A workflow running on a document.
    WorkflowInstance { id: i64, workflow_id: i64, document_id: i64, state_id: Option<i64> });
record!(
    /// An action run when a workflow enters or leaves a state; `action` is its definition as
    /// JSON text (the dict `create_workflow_action` took, as `json.dumps` writes it).
    WorkflowAction { id: i64, state_id: i64, label: String, on_entry: bool, critical: bool,
        action: String });
record!(
    /// An entry of a workflow instance's log: a transition taken, or an error.
    WorkflowLogEntry { id: i64, instance_id: i64, transition_id: Option<i64>, user_id: Option<i64>,
        comment: String, error: bool, created: DateTime<Utc> });
record!(
    /// A page of search results.
    DocumentPage { count: usize, results: Vec<Document> });
record!(
    /// A page of metadata search results.
    MetadataPage { count: usize, results: Vec<DocumentMetadata> });
record!(
    /// One change of a document's metadata value (see `Session.history`): `action` is
    /// `"added"`, `"edited"` or `"removed"`; `before` and `after` are None when there was no
    /// value, or when `hidden` (the session may not view that type's values on the document
    /// now); `metadata_type_label` is the type's label as the log recorded it (history lists
    /// only the types the session may know of).
    ValueChange { event_id: i64, timestamp: DateTime<Utc>, actor_id: Option<i64>,
        actor_username: Option<String>, metadata_type_id: i64,
        metadata_type_label: Option<String>, action: String, before: Option<String>,
        after: Option<String>, hidden: bool });
record!(
    /// A page of a value history: `count` changes in all, `results` on this page.
    HistoryPage { count: usize, results: Vec<ValueChange> });
record!(
    /// A document's value of one metadata type at a past time (see `Session.metadata_at`):
    /// the type as it is now, the value then, since when and which event set it.
    PastValue { metadata_type: MetadataType, value: String, since: DateTime<Utc>,
        event_id: i64 });
record!(
    /// What `Docmeta.verify_events` found: `verified` events from position `start` to `head`,
    /// `checkpoints` checked, `unsealed` events just committed (PostgreSQL seals them shortly);
    /// `intact`, or else the first failure: `failed_seq`, `failed_event_id` (either may be
    /// None) and `reason`.
    AuditReport { intact: bool, verified: u64, start: i64, head: i64, checkpoints: u64,
        unsealed: u64, failed_seq: Option<i64>, failed_event_id: Option<i64>,
        reason: Option<String> });

impl From<core::MetadataType> for MetadataType {
    fn from(t: core::MetadataType) -> Self {
        MetadataType {
            id: t.id.0,
            name: t.name,
            label: t.label,
            default: t.default,
            lookup: t.lookup,
            validation: t.validation,
            validation_arguments: t.validation_arguments,
            parser: t.parser,
            parser_arguments: t.parser_arguments,
            value_type: t.value_type.as_str().to_owned(),
        }
    }
}
impl From<core::TemplatePreview> for TemplatePreview {
    fn from(p: core::TemplatePreview) -> Self {
        TemplatePreview {
            default: p.default,
            default_error: p.default_error,
            lookup_choices: p.lookup_choices,
            lookup_error: p.lookup_error,
        }
    }
}

impl From<core::ValueTypeCheck> for ValueTypeCheck {
    fn from(c: core::ValueTypeCheck) -> Self {
        ValueTypeCheck {
            value_type: c.value_type.as_str().to_owned(),
            checked: c.checked as u64,
            count: c.count as u64,
            misfits: c
                .misfits
                .into_iter()
                .map(|m| ValueMisfit {
                    document_id: m.document.0,
                    metadata_id: m.metadata.0,
                    value: m.value,
                })
                .collect(),
            hidden_misfits: c.hidden_misfits,
        }
    }
}
impl From<core::DocumentType> for DocumentType {
    fn from(t: core::DocumentType) -> Self {
        DocumentType {
            id: t.id.0,
            label: t.label,
        }
    }
}
impl From<core::Document> for Document {
    fn from(d: core::Document) -> Self {
        Document {
            id: d.id.0,
            label: d.label,
            document_type_id: d.document_type_id.0,
            created: micros(d.created),
            document_type: None,
        }
    }
}
impl From<core::DocumentView> for Document {
    fn from(v: core::DocumentView) -> Self {
        Document {
            document_type: Some(v.document_type.into()),
            ..Document::from(v.document)
        }
    }
}
impl From<core::DocumentMetadata> for DocumentMetadata {
    fn from(m: core::DocumentMetadata) -> Self {
        DocumentMetadata {
            id: m.id.0,
            document_id: m.document_id.0,
            metadata_type_id: m.metadata_type_id.0,
            value: m.value,
            metadata_type: None,
        }
    }
}
impl From<core::MetadataValueView> for DocumentMetadata {
    fn from(v: core::MetadataValueView) -> Self {
        DocumentMetadata {
            metadata_type: v.metadata_type.map(Into::into),
            ..DocumentMetadata::from(v.value)
        }
    }
}
impl From<core::SyncedDocument> for SyncedDocument {
    fn from(d: core::SyncedDocument) -> Self {
        SyncedDocument {
            document: d.document.into(),
            values: all(d.values),
            files: all(d.files),
            cabinet_ids: d.cabinets.iter().map(|c| c.0).collect(),
            workflows: all(d.workflows),
        }
    }
}
impl From<core::SyncedInstance> for SyncedInstance {
    fn from(i: core::SyncedInstance) -> Self {
        SyncedInstance {
            instance: i.instance.into(),
            log: all(i.log),
        }
    }
}
impl From<core::SyncedWorkflow> for SyncedWorkflow {
    fn from(w: core::SyncedWorkflow) -> Self {
        SyncedWorkflow {
            workflow: w.workflow.into(),
            states: all(w.states),
            transitions: all(w.transitions),
        }
    }
}
impl From<core::SyncSchema> for SyncSchema {
    fn from(s: core::SyncSchema) -> Self {
        SyncSchema {
            document_types: all(s.document_types),
            metadata_types: all(s.metadata_types),
            associations: all(s.associations),
            cabinets: all(s.cabinets),
            write_associations: all(s.write_associations),
            workflows: all(s.workflows),
            files_encrypted: s.files_encrypted,
        }
    }
}
impl From<core::SyncBatch> for SyncBatch {
    fn from(b: core::SyncBatch) -> Self {
        SyncBatch {
            documents: all(b.documents),
            removed: b.removed.iter().map(|d| d.0).collect(),
            schema: b.schema.map(Into::into),
            cursor: b.cursor.token(),
            more: b.more,
        }
    }
}
impl From<core::SyncProgress> for SyncProgress {
    fn from(p: core::SyncProgress) -> Self {
        SyncProgress {
            batches: p.batches,
            received: p.received,
            removed: p.removed,
            pushed: p.pushed,
            rejected: p.rejected,
            more: p.more,
        }
    }
}
impl From<core::PushedWrite> for PendingWrite {
    fn from(w: core::PushedWrite) -> Self {
        let mut p = PendingWrite {
            key: w.key,
            document_id: w.document.0,
            metadata_type_id: None,
            action: String::new(),
            value: None,
            base: None,
            document_type_id: None,
            label: None,
            values: Default::default(),
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
                p.action = "set".into();
                p.metadata_type_id = Some(metadata_type.0);
                p.value = Some(value);
                p.base = base;
            }
            core::PushedChange::Remove {
                metadata_type,
                base,
            } => {
                p.action = "remove".into();
                p.metadata_type_id = Some(metadata_type.0);
                p.base = base;
            }
            core::PushedChange::Create {
                document_type,
                label,
                values,
            } => {
                p.action = "create".into();
                p.document_type_id = Some(document_type.0);
                p.label = Some(label);
                p.values = values.into_iter().map(|(t, v)| (t.0, v)).collect();
            }
            core::PushedChange::Transition {
                instance,
                transition,
                comment,
                base,
            } => {
                p.action = "transition".into();
                p.workflow_instance_id = Some(instance.0);
                p.transition_id = Some(transition.0);
                p.comment = Some(comment);
                p.base_state_id = base.map(|s| s.0);
            }
            core::PushedChange::AddFile { file, filename } => {
                p.action = "file".into();
                p.file_id = Some(file.0);
                p.filename = Some(filename);
            }
        }
        p
    }
}
/// A push result's status, server value and error (kind, field, message).
type ResultParts = (
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);
fn result_parts(r: core::PushResult) -> ResultParts {
    match r {
        core::PushResult::Applied => ("applied".into(), None, None, None, None),
        core::PushResult::Conflict { server } => ("conflict".into(), server, None, None, None),
        core::PushResult::Refused {
            kind,
            field,
            message,
        } => (
            "refused".into(),
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
impl From<core::DocumentFile> for DocumentFile {
    fn from(f: core::DocumentFile) -> Self {
        DocumentFile {
            id: f.id.0,
            document_id: f.document_id.0,
            filename: f.filename,
            size: f.size,
            checksum: f.checksum,
            mimetype: f.mimetype,
            created: micros(f.created),
        }
    }
}
impl From<core::User> for User {
    fn from(u: core::User) -> Self {
        User {
            id: u.id.0,
            username: u.username,
            is_superuser: u.is_superuser,
            is_active: u.is_active,
        }
    }
}
impl Acl {
    /// The ACL of a view on an object of `kind` (`app_label.model_name`, as the caller named it
    /// and the kind registry parsed it), with its role; permission keys sorted, as stored.
    pub(crate) fn of_view(v: core::AclView, kind: &str) -> Self {
        let mut permissions: Vec<String> = v
            .acl
            .permissions
            .iter()
            .map(|p| p.key().to_owned())
            .collect();
        permissions.sort();
        Acl {
            id: v.acl.id.0,
            object_kind: kind.to_owned(),
            object_id: v.acl.object.id,
            role_id: v.acl.role_id.0,
            permissions,
            role: v.role.into(),
        }
    }
}
impl From<core::Group> for Group {
    fn from(g: core::Group) -> Self {
        Group {
            id: g.id.0,
            name: g.name,
        }
    }
}
impl From<core::Role> for Role {
    fn from(r: core::Role) -> Self {
        Role {
            id: r.id.0,
            label: r.label,
        }
    }
}
impl From<core::AssociationView> for Association {
    fn from(v: core::AssociationView) -> Self {
        Association {
            id: v.association.id.0,
            document_type_id: v.association.document_type_id.0,
            metadata_type_id: v.association.metadata_type_id.0,
            required: v.association.required,
            document_type: v.document_type.into(),
            metadata_type: v.metadata_type.into(),
        }
    }
}
impl From<core::EventView> for Event {
    fn from(v: core::EventView) -> Self {
        Event {
            actor_username: v.actor.map(|a| a.username),
            ..Event::from(v.event)
        }
    }
}
impl From<core::ValueChange> for ValueChange {
    fn from(c: core::ValueChange) -> Self {
        ValueChange {
            event_id: c.event.0,
            timestamp: micros(c.timestamp),
            actor_id: c.actor.as_ref().map(|a| a.id.0),
            actor_username: c.actor.map(|a| a.username),
            metadata_type_id: c.metadata_type.0,
            metadata_type_label: c.metadata_type_label,
            action: c.action.as_str().to_owned(),
            before: c.before,
            after: c.after,
            hidden: c.hidden,
        }
    }
}
impl From<core::Page<core::ValueChange>> for HistoryPage {
    fn from(p: core::Page<core::ValueChange>) -> Self {
        HistoryPage {
            count: p.count,
            results: all(p.items),
        }
    }
}
impl From<core::PastValue> for PastValue {
    fn from(v: core::PastValue) -> Self {
        PastValue {
            metadata_type: v.metadata_type.into(),
            value: v.value,
            since: micros(v.since),
            event_id: v.event.0,
        }
    }
}
impl From<core::AuditReport> for AuditReport {
    fn from(r: core::AuditReport) -> Self {
        AuditReport {
            intact: r.is_intact(),
            verified: r.verified,
            start: r.start,
            head: r.head,
            checkpoints: r.checkpoints,
            unsealed: r.unsealed,
            failed_seq: r.failure.as_ref().and_then(|f| f.seq),
            failed_event_id: r.failure.as_ref().and_then(|f| f.event_id),
            reason: r.failure.map(|f| f.reason),
        }
    }
}
impl From<core::EventFeed> for EventFeed {
    fn from(f: core::EventFeed) -> Self {
        EventFeed {
            events: f.events.into_iter().map(Event::from).collect(),
            cursor: f.cursor.map(|c| c.0),
        }
    }
}
impl From<core::WorkflowAction> for WorkflowAction {
    fn from(a: core::WorkflowAction) -> Self {
        WorkflowAction {
            id: a.id.0,
            state_id: a.state_id.0,
            label: a.label,
            on_entry: a.on_entry,
            critical: a.critical,
            // Serializing an enum of strings, numbers and maps does not fail.
            action: serde_json::to_string(&a.action).unwrap_or_default(),
        }
    }
}
impl From<core::PruneDecision> for PruneDecision {
    fn from(d: core::PruneDecision) -> Self {
        PruneDecision {
            path: d.path.to_string_lossy().into_owned(),
            backup_id: d.info.id,
            created: micros(d.info.created),
            base: d.info.base,
            kept: d.kept_because.is_some(),
            kept_because: d.kept_because,
        }
    }
}
impl ObjectRef {
    /// `o`, its kind named as `kinds` names it.
    pub(crate) fn of(o: core::ObjectRef, kinds: &core::KindRegistry) -> Self {
        ObjectRef {
            kind: kinds.name(o.kind),
            id: o.id,
        }
    }
}
impl Grant {
    fn of(g: core::Grant, kinds: &core::KindRegistry) -> Self {
        let mut grant = Grant {
            kind: String::new(),
            role_id: None,
            group_id: None,
            acl_id: None,
            object: None,
            path: Vec::new(),
        };
        match g {
            core::Grant::System => grant.kind = "system".into(),
            core::Grant::Superuser => grant.kind = "superuser".into(),
            core::Grant::Global { role, group } => {
                grant.kind = "global".into();
                grant.role_id = Some(role.0);
                grant.group_id = Some(group.0);
            }
            core::Grant::Acl {
                acl,
                role,
                object,
                path,
            } => {
                grant.kind = "acl".into();
                grant.acl_id = Some(acl.0);
                grant.role_id = Some(role.0);
                grant.object = Some(ObjectRef::of(object, kinds));
                grant.path = path.into_iter().map(|o| ObjectRef::of(o, kinds)).collect();
            }
        }
        grant
    }
}
impl Explanation {
    /// `e` as a record, its kinds named and its sentence written with `kinds`.
    pub(crate) fn of(e: core::Explanation, kinds: &core::KindRegistry) -> Self {
        Explanation {
            granted: e.grant.is_some(),
            sentence: e.describe(kinds),
            grant: e.grant.map(|g| Grant::of(g, kinds)),
            also: e.also.into_iter().map(|g| Grant::of(g, kinds)).collect(),
            checked: e
                .checked
                .into_iter()
                .map(|o| ObjectRef::of(o, kinds))
                .collect(),
            note: e.note,
        }
    }
}
impl From<core::Event> for Event {
    fn from(e: core::Event) -> Self {
        Event {
            id: e.id.0,
            timestamp: micros(e.timestamp),
            name: e.name,
            actor_id: e.actor.map(|u| u.0),
            actor_username: None,
            target_kind: e.target.kind,
            target_id: e.target.id,
            target_label: e.target.label,
            action_object_kind: e.action_object.as_ref().map(|o| o.kind.clone()),
            action_object_id: e.action_object.map(|o| o.id),
            changes: e.changes.into_iter().map(EventChange::from).collect(),
        }
    }
}
impl From<core::EventChange> for EventChange {
    fn from(c: core::EventChange) -> Self {
        EventChange {
            field: c.field,
            before: c.before,
            after: c.after,
        }
    }
}
impl From<core::Cabinet> for Cabinet {
    fn from(c: core::Cabinet) -> Self {
        Cabinet {
            id: c.id.0,
            label: c.label,
            parent_id: c.parent_id.map(|p| p.0),
        }
    }
}
impl From<core::Webhook> for Webhook {
    fn from(w: core::Webhook) -> Self {
        Webhook {
            id: w.id.0,
            owner_id: w.owner.0,
            url: w.url,
            events: w.events,
            active: w.active,
            created: micros(w.created),
        }
    }
}
impl From<core::CreatedWebhook> for CreatedWebhook {
    fn from(c: core::CreatedWebhook) -> Self {
        CreatedWebhook {
            webhook: c.webhook.into(),
            secret: c.secret,
        }
    }
}
impl From<core::Device> for Device {
    fn from(d: core::Device) -> Self {
        Device {
            id: d.id.0,
            user_id: d.user.0,
            name: d.name,
            created: micros(d.created),
            expires: micros(d.expires),
            last_used: d.last_used.map(micros),
            last_sync: d.last_sync.map(micros),
        }
    }
}
impl From<core::NewDevice> for NewDevice {
    fn from(n: core::NewDevice) -> Self {
        NewDevice {
            device: n.device.into(),
            token: n.token,
        }
    }
}
impl From<core::WebhookDelivery> for WebhookDelivery {
    fn from(d: core::WebhookDelivery) -> Self {
        WebhookDelivery {
            id: d.id.0,
            message_id: d.message_id,
            webhook_id: d.webhook.0,
            event_id: d.event.0,
            status: d.status.key().to_owned(),
            attempts: d.attempts,
            last_status_code: d.last_status_code,
            last_attempt: d.last_attempt.map(micros),
            next_attempt: micros(d.next_attempt),
            last_error: d.last_error,
            created: micros(d.created),
        }
    }
}
impl From<core::Task> for Task {
    fn from(t: core::Task) -> Self {
        Task {
            id: t.id.0,
            name: t.name,
            state: t.state.key().to_owned(),
            attempts: t.attempts,
            error: t.error,
            target: t.target,
        }
    }
}
impl From<core::Workflow> for Workflow {
    fn from(w: core::Workflow) -> Self {
        Workflow {
            id: w.id.0,
            label: w.label,
            document_type_ids: w.document_type_ids.iter().map(|t| t.0).collect(),
        }
    }
}
impl From<core::WorkflowState> for WorkflowState {
    fn from(s: core::WorkflowState) -> Self {
        WorkflowState {
            id: s.id.0,
            workflow_id: s.workflow_id.0,
            label: s.label,
            initial: s.initial,
        }
    }
}
impl From<core::WorkflowTransition> for WorkflowTransition {
    fn from(t: core::WorkflowTransition) -> Self {
        WorkflowTransition {
            id: t.id.0,
            workflow_id: t.workflow_id.0,
            label: t.label,
            origin_state_id: t.origin_state_id.0,
            destination_state_id: t.destination_state_id.0,
            condition: t.condition,
            triggers: t.triggers,
        }
    }
}
impl From<core::WorkflowInstance> for WorkflowInstance {
    fn from(i: core::WorkflowInstance) -> Self {
        WorkflowInstance {
            id: i.id.0,
            workflow_id: i.workflow_id.0,
            document_id: i.document_id.0,
            state_id: i.state_id.map(|s| s.0),
        }
    }
}
impl From<core::WorkflowLogEntry> for WorkflowLogEntry {
    fn from(e: core::WorkflowLogEntry) -> Self {
        WorkflowLogEntry {
            id: e.id.0,
            instance_id: e.instance_id.0,
            transition_id: e.transition_id.map(|t| t.0),
            user_id: e.user_id.map(|u| u.0),
            comment: e.comment,
            error: e.error,
            created: micros(e.created),
        }
    }
}

impl From<core::SearchWorkState> for SearchWorkState {
    fn from(s: core::SearchWorkState) -> Self {
        let mut out = SearchWorkState {
            state: String::new(),
            attempts: None,
            error: None,
            done: None,
            total: None,
        };
        match s {
            core::SearchWorkState::Pending { attempts, error } => {
                out.state = "pending".into();
                out.attempts = Some(attempts);
                out.error = Some(error);
            }
            core::SearchWorkState::Running { done, total } => {
                out.state = "running".into();
                out.done = Some(done);
                out.total = Some(total);
            }
            core::SearchWorkState::Done(total) => {
                out.state = "done".into();
                out.total = total;
            }
            core::SearchWorkState::Failed(error) => {
                out.state = "failed".into();
                out.error = Some(error);
            }
        }
        out
    }
}

/// `t` to the microsecond: what a Python `datetime` holds, so a record equals itself read back
/// whatever precision the store keeps.
fn micros(t: DateTime<Utc>) -> DateTime<Utc> {
    t.with_nanosecond(t.nanosecond() / 1000 * 1000).unwrap_or(t)
}

pub(crate) fn all<T, U: From<T>>(items: Vec<T>) -> Vec<U> {
    items.into_iter().map(U::from).collect()
}
