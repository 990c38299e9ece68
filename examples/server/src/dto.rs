//! The JSON records of api.md, and how core records become them (the request bodies are in
//! `requests`).

use docmeta_core::{
    AclView, AssociationView, Cabinet, CreatedWebhook, Device, Document, DocumentType,
    DocumentView, EventObject, EventView, Group, MetadataType, MetadataValueView, PastValue,
    Permission, Role, Task, User, ValueChange, Webhook, WebhookDelivery,
};
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, Serialize, ToSchema)]
pub struct MetadataTypeOut {
    pub id: i64,
    pub name: String,
    pub label: String,
    pub default: String,
    pub lookup: String,
    pub validation: String,
    pub validation_arguments: String,
    pub parser: String,
    pub parser_arguments: String,
    /// What its values are.
    #[schema(value_type = crate::requests::ValueTypeIn)]
    pub value_type: String,
    pub url: String,
}

impl From<MetadataType> for MetadataTypeOut {
    fn from(t: MetadataType) -> Self {
        MetadataTypeOut {
            id: t.id.0,
            url: format!("/api/v4/metadata/metadata-types/{}/", t.id),
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

impl From<&MetadataType> for MetadataTypeOut {
    fn from(t: &MetadataType) -> Self {
        t.clone().into()
    }
}

/// A stored value that does not fit a value type.
#[derive(Debug, Serialize, ToSchema)]
pub struct ValueMisfitOut {
    pub document_id: i64,
    pub metadata_id: i64,
    pub value: String,
}

/// What templates render to before they are saved.
#[derive(Debug, Serialize, ToSchema)]
pub struct TemplatePreviewOut {
    /// The default rendered (`null`: none given, or it failed: see `default_error`).
    pub default: Option<String>,
    pub default_error: Option<String>,
    /// The lookup's choices (`null`: none given, or it failed: see `lookup_error`).
    pub lookup_choices: Option<Vec<String>>,
    pub lookup_error: Option<String>,
}

impl From<docmeta_core::TemplatePreview> for TemplatePreviewOut {
    fn from(p: docmeta_core::TemplatePreview) -> Self {
        TemplatePreviewOut {
            default: p.default,
            default_error: p.default_error,
            lookup_choices: p.lookup_choices,
            lookup_error: p.lookup_error,
        }
    }
}

/// What a change of value type would meet.
#[derive(Debug, Serialize, ToSchema)]
pub struct ValueTypeCheckOut {
    #[schema(value_type = crate::requests::ValueTypeIn)]
    pub value_type: String,
    pub checked: u64,
    pub count: u64,
    pub misfits: Vec<ValueMisfitOut>,
    pub hidden_misfits: bool,
}

impl From<docmeta_core::ValueTypeCheck> for ValueTypeCheckOut {
    fn from(c: docmeta_core::ValueTypeCheck) -> Self {
        ValueTypeCheckOut {
            value_type: c.value_type.as_str().to_owned(),
            checked: c.checked as u64,
            count: c.count as u64,
            misfits: c
                .misfits
                .into_iter()
                .map(|m| ValueMisfitOut {
                    document_id: m.document.0,
                    metadata_id: m.metadata.0,
                    value: m.value,
                })
                .collect(),
            hidden_misfits: c.hidden_misfits,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DocumentTypeOut {
    pub id: i64,
    pub label: String,
    pub url: String,
}

impl From<&DocumentType> for DocumentTypeOut {
    fn from(t: &DocumentType) -> Self {
        DocumentTypeOut {
            id: t.id.0,
            label: t.label.clone(),
            url: format!("/api/v4/documents/types/{}/", t.id),
        }
    }
}

/// A document file (api.md "Files").
#[derive(Debug, Serialize, ToSchema)]
pub struct DocumentFileOut {
    pub id: i64,
    pub document_id: i64,
    pub filename: String,
    pub size: u64,
    /// SHA-256 of the content, hex.
    pub checksum: String,
    pub mimetype: String,
    pub timestamp: String,
    pub download_url: String,
    pub url: String,
}

impl From<&docmeta_core::DocumentFile> for DocumentFileOut {
    fn from(f: &docmeta_core::DocumentFile) -> Self {
        let url = format!("/api/v4/documents/{}/files/{}/", f.document_id, f.id);
        DocumentFileOut {
            id: f.id.0,
            document_id: f.document_id.0,
            filename: f.filename.clone(),
            size: f.size,
            checksum: f.checksum.clone(),
            mimetype: f.mimetype.clone(),
            timestamp: f
                .created
                .to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            download_url: format!("{url}download/"),
            url,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DocumentOut {
    pub id: i64,
    pub label: String,
    pub document_type: DocumentTypeOut,
    pub datetime_created: String,
    pub url: String,
}

impl From<&DocumentView> for DocumentOut {
    fn from(v: &DocumentView) -> Self {
        let (d, t) = (&v.document, &v.document_type);
        DocumentOut {
            id: d.id.0,
            label: d.label.clone(),
            document_type: t.into(),
            datetime_created: d
                .created
                .to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            url: format!("/api/v4/documents/{}/", d.id),
        }
    }
}

/// The documents a batch created, in the order given.
#[derive(Debug, Serialize, ToSchema)]
pub struct DocumentBatchOut {
    pub count: usize,
    pub results: Vec<DocumentOut>,
}

/// A refused batch (`400`): the list as a whole (`documents` missing, not a list, or too long),
/// or one entry, reported as `POST /api/v4/documents/` reports a refused document, one object
/// per entry up to the refused one (`{}` for each accepted entry).
#[derive(Debug, Serialize, ToSchema)]
pub struct DocumentBatchErrorOut {
    pub documents: Option<DocumentBatchErrorsOut>,
    pub non_field_errors: Option<Vec<String>>,
}

/// What was refused in `documents`: the list, or its entries.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code)] // The schema of what `error::field_error` builds; never constructed.
pub enum DocumentBatchErrorsOut {
    List(Vec<String>),
    Entries(Vec<DocumentErrorOut>),
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DocumentRef {
    pub id: i64,
    pub label: String,
    pub url: String,
}

impl From<Document> for DocumentRef {
    fn from(d: Document) -> Self {
        DocumentRef {
            id: d.id.0,
            url: format!("/api/v4/documents/{}/", d.id),
            label: d.label,
        }
    }
}

impl From<&Document> for DocumentRef {
    fn from(d: &Document) -> Self {
        d.clone().into()
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DocumentMetadataOut {
    pub id: i64,
    pub document: DocumentRef,
    /// `null` only in the answer to an addition by a writer who may not view the metadata
    /// type (its id is `metadata_type_id`); every read shows it.
    pub metadata_type: Option<MetadataTypeOut>,
    /// The metadata type's id, also when `metadata_type` is `null`.
    pub metadata_type_id: i64,
    pub value: String,
    pub url: String,
}

impl From<MetadataValueView> for DocumentMetadataOut {
    /// Moves the strings of a view the caller no longer needs (a page's items) instead of
    /// copying them.
    fn from(v: MetadataValueView) -> Self {
        let (m, d, t) = (v.value, v.document, v.metadata_type);
        DocumentMetadataOut {
            id: m.id.0,
            url: format!("/api/v4/documents/{}/metadata/{}/", d.id, m.id),
            document: d.into(),
            metadata_type: t.map(Into::into),
            metadata_type_id: m.metadata_type_id.0,
            value: m.value,
        }
    }
}

impl From<&MetadataValueView> for DocumentMetadataOut {
    fn from(v: &MetadataValueView) -> Self {
        v.clone().into()
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AssociationOut {
    pub id: i64,
    pub document_type: DocumentTypeOut,
    pub metadata_type: MetadataTypeOut,
    pub required: bool,
    pub url: String,
}

impl From<&AssociationView> for AssociationOut {
    fn from(v: &AssociationView) -> Self {
        let (a, d, t) = (&v.association, &v.document_type, &v.metadata_type);
        AssociationOut {
            id: a.id.0,
            document_type: d.into(),
            metadata_type: t.into(),
            required: a.required,
            url: format!("/api/v4/documents/types/{}/metadata-types/{}/", d.id, a.id),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PermissionOut {
    pub pk: String,
    pub label: String,
    pub namespace: String,
}

impl From<Permission> for PermissionOut {
    fn from(p: Permission) -> Self {
        PermissionOut {
            pk: p.key().to_owned(),
            label: p.label().to_owned(),
            namespace: p.namespace().to_owned(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RoleRef {
    pub id: i64,
    pub label: String,
    pub url: String,
}

impl RoleRef {
    pub fn new(id: i64, label: &str) -> Self {
        RoleRef {
            id,
            label: label.to_owned(),
            url: format!("/api/v4/roles/{id}/"),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ObjectOut {
    pub app_label: String,
    pub model_name: String,
    pub id: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AclOut {
    pub id: i64,
    pub role: RoleRef,
    pub object: ObjectOut,
    pub permissions: Vec<PermissionOut>,
    pub url: String,
}

impl AclOut {
    /// An ACL on an object of the kind `app_label.model_name`.
    pub fn new(v: &AclView, app_label: &str, model_name: &str) -> Self {
        let a = &v.acl;
        AclOut {
            id: a.id.0,
            role: RoleRef::new(v.role.id.0, &v.role.label),
            object: ObjectOut {
                app_label: app_label.to_owned(),
                model_name: model_name.to_owned(),
                id: a.object.id,
            },
            permissions: a.permissions.iter().map(PermissionOut::from).collect(),
            url: format!(
                "/api/v5/objects/{app_label}/{model_name}/{}/acls/{}/",
                a.object.id, a.id
            ),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UserOut {
    pub id: i64,
    pub username: String,
    pub is_superuser: bool,
    pub is_active: bool,
    pub url: String,
}

impl From<&User> for UserOut {
    fn from(u: &User) -> Self {
        UserOut {
            id: u.id.0,
            username: u.username.clone(),
            is_superuser: u.is_superuser,
            is_active: u.is_active,
            url: format!("/api/v4/users/{}/", u.id),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct GroupOut {
    pub id: i64,
    pub name: String,
    pub url: String,
}

impl From<&Group> for GroupOut {
    fn from(g: &Group) -> Self {
        GroupOut {
            id: g.id.0,
            name: g.name.clone(),
            url: format!("/api/v4/groups/{}/", g.id),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RoleOut {
    pub id: i64,
    pub label: String,
    pub url: String,
}

impl From<&Role> for RoleOut {
    fn from(r: &Role) -> Self {
        RoleOut {
            id: r.id.0,
            label: r.label.clone(),
            url: format!("/api/v4/roles/{}/", r.id),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CabinetOut {
    pub id: i64,
    pub label: String,
    pub parent_id: Option<i64>,
    pub url: String,
}

impl From<&Cabinet> for CabinetOut {
    fn from(c: &Cabinet) -> Self {
        CabinetOut {
            id: c.id.0,
            label: c.label.clone(),
            parent_id: c.parent_id.map(|p| p.0),
            url: format!("/api/v4/cabinets/{}/", c.id),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ActorOut {
    pub id: i64,
    pub username: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EventObjectOut {
    pub app_label: String,
    pub model_name: String,
    pub id: i64,
    pub label: String,
}

impl From<&EventObject> for EventObjectOut {
    fn from(o: &EventObject) -> Self {
        let (app_label, model_name) = o.kind.split_once('.').unwrap_or((&o.kind, ""));
        EventObjectOut {
            app_label: app_label.to_owned(),
            model_name: model_name.to_owned(),
            id: o.id,
            label: o.label.clone(),
        }
    }
}

/// One field an event changed, from what to what, in text form; `before` is `null` when the
/// field had no value (the event created the object or link) or the reader may not view it,
/// `after` when it has none (the event deleted it) or the reader may not view it.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventChangeOut {
    pub field: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EventOut {
    pub id: i64,
    pub timestamp: String,
    pub name: String,
    pub actor: Option<ActorOut>,
    pub target: EventObjectOut,
    pub action_object: Option<EventObjectOut>,
    /// What the event changed, field by field (empty for events that change no field, and for
    /// events written before changes were recorded).
    pub changes: Vec<EventChangeOut>,
}

impl From<&EventView> for EventOut {
    fn from(v: &EventView) -> Self {
        let e = &v.event;
        let actor = v.actor.as_ref().map(|a| ActorOut {
            id: a.id.0,
            username: a.username.clone(),
        });
        EventOut {
            id: e.id.0,
            timestamp: e
                .timestamp
                .to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            name: e.name.clone(),
            actor,
            target: (&e.target).into(),
            action_object: e.action_object.as_ref().map(Into::into),
            changes: e
                .changes
                .iter()
                .map(|c| EventChangeOut {
                    field: c.field.clone(),
                    before: c.before.clone(),
                    after: c.after.clone(),
                })
                .collect(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TaskOut {
    pub id: i64,
    pub name: String,
    pub state: String,
    pub attempts: i64,
    pub error: String,
    /// The id of the search index (a data directory's `search/INSTANCE`) the task must run on;
    /// `null` when any server's worker may run it.
    pub target: Option<String>,
}

impl From<&Task> for TaskOut {
    fn from(t: &Task) -> Self {
        TaskOut {
            id: t.id.0,
            name: t.name.clone(),
            state: t.state.key().to_owned(),
            attempts: t.attempts,
            error: t.error.clone(),
            target: t.target.clone(),
        }
    }
}

/// A device signed in as a user (its token is shown only by the sign-in).
#[derive(Debug, Serialize, ToSchema)]
pub struct DeviceOut {
    pub id: i64,
    /// The user it acts as.
    pub user_id: i64,
    pub name: String,
    pub created: String,
    /// When its token stops being accepted.
    pub expires: String,
    /// When its token was last accepted (to the minute); `null` until then.
    pub last_used: Option<String>,
    /// When its replica was last brought up to date (to the minute); `null` until then.
    pub last_sync: Option<String>,
}

impl From<&Device> for DeviceOut {
    fn from(d: &Device) -> Self {
        let time = |t: &chrono::DateTime<chrono::Utc>| {
            t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
        };
        DeviceOut {
            id: d.id.0,
            user_id: d.user.0,
            name: d.name.clone(),
            created: time(&d.created),
            expires: time(&d.expires),
            last_used: d.last_used.as_ref().map(time),
            last_sync: d.last_sync.as_ref().map(time),
        }
    }
}

/// A device just signed in, with its token: shown this once; send it as `Authorization: Bearer
/// <token>`.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeviceSignedInOut {
    #[serde(flatten)]
    pub device: DeviceOut,
    /// `dmd_` and 43 characters.
    pub token: String,
}

/// A webhook (its secret is write-only: only the answer that creates it holds it).
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookOut {
    pub id: i64,
    /// The user it belongs to: it sends what they may see.
    pub owner_id: i64,
    /// Where events are POSTed.
    pub url: String,
    /// The event names it is for; empty: every event.
    pub events: Vec<String>,
    pub active: bool,
    pub created: String,
}

impl From<&Webhook> for WebhookOut {
    fn from(w: &Webhook) -> Self {
        WebhookOut {
            id: w.id.0,
            owner_id: w.owner.0,
            url: w.url.clone(),
            events: w.events.clone(),
            active: w.active,
            created: w
                .created
                .to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        }
    }
}

/// A webhook just created, with its signing secret (`whsec_` and base64): shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookCreatedOut {
    pub id: i64,
    pub owner_id: i64,
    pub url: String,
    pub events: Vec<String>,
    pub active: bool,
    pub created: String,
    pub secret: String,
}

impl From<&CreatedWebhook> for WebhookCreatedOut {
    fn from(c: &CreatedWebhook) -> Self {
        let w = WebhookOut::from(&c.webhook);
        WebhookCreatedOut {
            id: w.id,
            owner_id: w.owner_id,
            url: w.url,
            events: w.events,
            active: w.active,
            created: w.created,
            secret: c.secret.clone(),
        }
    }
}

/// One event to send to one webhook.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookDeliveryOut {
    pub id: i64,
    /// The `webhook-id` header of every attempt (receivers drop repeats by it).
    pub message_id: String,
    pub webhook_id: i64,
    pub event_id: i64,
    /// `pending`, `delivered` or `failed`.
    pub status: String,
    pub attempts: i64,
    pub last_status_code: Option<u16>,
    pub last_attempt: Option<String>,
    pub next_attempt: String,
    pub last_error: String,
    pub created: String,
}

impl From<&WebhookDelivery> for WebhookDeliveryOut {
    fn from(d: &WebhookDelivery) -> Self {
        let time = |t: &chrono::DateTime<chrono::Utc>| {
            t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
        };
        WebhookDeliveryOut {
            id: d.id.0,
            message_id: d.message_id.clone(),
            webhook_id: d.webhook.0,
            event_id: d.event.0,
            status: d.status.key().to_owned(),
            attempts: d.attempts,
            last_status_code: d.last_status_code,
            last_attempt: d.last_attempt.as_ref().map(time),
            next_attempt: time(&d.next_attempt),
            last_error: d.last_error.clone(),
            created: time(&d.created),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct HealthOut {
    pub status: String,
    pub database: String,
    pub search: String,
}

/// The event log's answer: a page of the list (newest first), or, for a follower (`after` or
/// `wait`), the next events in commit order with the cursor to go on from.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventsOut {
    /// Events in `results`, for a follower; the whole list's length otherwise.
    pub count: usize,
    /// The next page; for a follower, the request that goes on from `cursor`.
    pub next: Option<String>,
    pub previous: Option<String>,
    pub results: Vec<EventOut>,
    /// Only in a follower's answer: pass it as `after` next. Past every event read, those the
    /// caller may not see included; `null` only while the log is empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<i64>, nullable)]
    pub cursor: Option<Option<i64>>,
}

/// A page of a list (`results` holds records of the endpoint's kind).
#[derive(Debug, Serialize, ToSchema)]
pub struct PageOut {
    pub count: usize,
    pub next: Option<String>,
    pub previous: Option<String>,
    pub results: Vec<serde_json::Value>,
}

/// A page of events: [`PageOut`] with its records described, so that the OpenAPI document
/// holds the schema of an event (with its changes) from the struct that writes it.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventPageOut {
    pub count: usize,
    pub next: Option<String>,
    pub previous: Option<String>,
    pub results: Vec<EventOut>,
}

/// A refused document create (`400`): messages per field of the request.
#[derive(Debug, Serialize, ToSchema)]
pub struct DocumentErrorOut {
    pub document_type_id: Option<Vec<String>>,
    pub label: Option<Vec<String>>,
    pub file: Option<Vec<String>>,
    pub metadata: Option<MetadataErrorsOut>,
    pub non_field_errors: Option<Vec<String>>,
}

/// What was refused in `metadata`: the list as a whole (a required metadata type left without a
/// value, or `metadata` that is not a list), or one of its entries, as Django REST framework
/// reports a nested list: one object per entry up to the refused one, `{}` for each accepted
/// entry (entries after the refused one are not checked).
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code)] // The schema of what `error::field_error` builds; never constructed.
pub enum MetadataErrorsOut {
    List(Vec<String>),
    Entries(Vec<MetadataEntryErrorOut>),
}

/// The messages of one entry of `metadata`, per field (empty for an accepted entry).
#[derive(Debug, Serialize, ToSchema)]
pub struct MetadataEntryErrorOut {
    pub metadata_type_id: Option<Vec<String>>,
    pub value: Option<Vec<String>>,
}

/// `{"field": ["message"]}` or `{"detail": "message"}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorOut {
    pub detail: Option<String>,
}

/// One change of a document's metadata value (`GET /api/v4/documents/{id}/metadata/history/`).
#[derive(Debug, Serialize, ToSchema)]
pub struct ValueChangeOut {
    /// The event that recorded it.
    pub event_id: i64,
    pub timestamp: String,
    /// Who did it; `null` for docmeta itself or a user the caller may not view.
    pub actor: Option<ActorOut>,
    pub metadata_type_id: i64,
    /// The type's label then, as the log recorded it (history lists only the types the caller
    /// may know of).
    pub metadata_type_label: Option<String>,
    /// `added`, `edited` or `removed`.
    #[schema(pattern = "^(added|edited|removed)$")]
    pub action: String,
    /// The value before; `null` when it was added, or is hidden from the caller.
    pub before: Option<String>,
    /// The value after; `null` when it was removed, or is hidden from the caller.
    pub after: Option<String>,
    /// Whether `before` and `after` are withheld: the caller may not view this type's values
    /// on this document now.
    pub hidden: bool,
}

impl From<ValueChange> for ValueChangeOut {
    fn from(c: ValueChange) -> Self {
        ValueChangeOut {
            event_id: c.event.0,
            timestamp: c
                .timestamp
                .to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            actor: c.actor.map(|a| ActorOut {
                id: a.id.0,
                username: a.username,
            }),
            metadata_type_id: c.metadata_type.0,
            metadata_type_label: c.metadata_type_label,
            action: c.action.as_str().to_owned(),
            before: c.before,
            after: c.after,
            hidden: c.hidden,
        }
    }
}

/// A page of a value history: [`PageOut`] with its records described.
#[derive(Debug, Serialize, ToSchema)]
pub struct ValueChangePageOut {
    pub count: usize,
    pub next: Option<String>,
    pub previous: Option<String>,
    pub results: Vec<ValueChangeOut>,
}

/// A document's value of one metadata type at a past time (the items of
/// `GET /api/v4/documents/{id}/metadata/?at=<time>`).
#[derive(Debug, Serialize, ToSchema)]
pub struct PastValueOut {
    pub metadata_type: MetadataTypeOut,
    pub metadata_type_id: i64,
    pub value: String,
    /// When it took that value.
    pub since: String,
    /// The event that set it.
    pub event_id: i64,
}

impl From<PastValue> for PastValueOut {
    fn from(v: PastValue) -> Self {
        PastValueOut {
            metadata_type_id: v.metadata_type.id.0,
            metadata_type: v.metadata_type.into(),
            value: v.value,
            since: v.since.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            event_id: v.event.0,
        }
    }
}

impl ObjectOut {
    /// An object, its kind named as its routes name it.
    pub fn of(o: &docmeta_core::ObjectRef, kinds: &docmeta_core::KindRegistry) -> ObjectOut {
        let name = kinds.name(o.kind);
        let (app_label, model_name) = name.split_once('.').unwrap_or(("", &name));
        ObjectOut {
            app_label: app_label.to_owned(),
            model_name: model_name.to_owned(),
            id: o.id,
        }
    }
}

/// Why a user may or may not do a permission on an object.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExplanationOut {
    /// Whether the user may.
    pub granted: bool,
    /// The same in a sentence: which grant decides, or what was checked.
    pub description: String,
    /// How many other grants also apply (access stays while any of them remains).
    pub other_grants: usize,
    /// The objects whose ACLs were consulted, in order.
    pub checked: Vec<ObjectOut>,
}

impl ExplanationOut {
    pub fn new(
        e: &docmeta_core::Explanation,
        kinds: &docmeta_core::KindRegistry,
    ) -> ExplanationOut {
        ExplanationOut {
            granted: e.grant.is_some(),
            description: e.describe(kinds),
            other_grants: e.also.len(),
            checked: e.checked.iter().map(|o| ObjectOut::of(o, kinds)).collect(),
        }
    }
}
