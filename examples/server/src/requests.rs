//! The request bodies. Each is read by [`JsonBody`](crate::body::JsonBody) and described in the
//! OpenAPI document by the same struct, so what the document allows is what the server reads:
//! fields are read in the order declared here (the first refused one answers), an `Option`
//! field may be absent or `null`, other fields are required. The text rules the core enforces
//! on labels and names are stated in the schemas too (lengths, not blank, patterns); what a
//! schema cannot say (that an id exists, that a name is unique, that a template compiles) is
//! refused by the core with a `400` naming the field, a `403` or a `404`.

use std::fmt;

use docmeta_core::ActionKind;
use docmeta_core::{
    DocumentId, DocumentTypeId, MetadataTypeId, PushedChange, PushedWrite, RoleId,
    WorkflowInstanceId, WorkflowStateId, WorkflowTransitionId,
};
use serde::de::{self, Deserializer, Error as _, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use utoipa::openapi::schema::{
    AllOfBuilder, ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, Type,
};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use crate::body::fields::{
    Flag, Id, IdList, PermissionKey, integer, integers, label, optional_integer, optional_label,
    optional_text,
};

/// Longest metadata type name or label, and document type label.
const NAME: usize = 48;
/// Longest document label, and workflow, state, transition or action label.
const LABEL: usize = 255;
/// Longest cabinet label.
const CABINET: usize = 128;
/// Longest group name or role label.
const GROUP: usize = 150;
/// Longest template (a default, a lookup, a condition).
const TEMPLATE: usize = 10_000;
/// Longest metadata value.
const VALUE: usize = 10_000;

// ----- metadata types ---------------------------------------------------------------------

/// Body of POST and PUT on metadata types (PUT replaces every field: an absent one is empty).
#[derive(Debug, Deserialize, ToSchema)]
pub struct MetadataTypeIn {
    /// Used in templates as `document.metadata_value_of.<name>`.
    #[schema(schema_with = metadata_type_name)]
    pub name: String,
    #[schema(schema_with = label::<NAME>)]
    pub label: String,
    /// A template for the value of a new document's value.
    #[schema(schema_with = optional_text::<TEMPLATE>)]
    pub default: Option<String>,
    /// A template rendering the allowed values, one per line or comma-separated.
    #[schema(schema_with = optional_text::<TEMPLATE>)]
    pub lookup: Option<String>,
    /// A validator's class path (empty: none).
    #[schema(schema_with = optional_text::<TEMPLATE>)]
    pub validation: Option<String>,
    /// The validator's arguments, as YAML.
    #[schema(schema_with = optional_text::<TEMPLATE>)]
    pub validation_arguments: Option<String>,
    /// A parser's class path (empty: none).
    #[schema(schema_with = optional_text::<TEMPLATE>)]
    pub parser: Option<String>,
    /// The parser's arguments, as YAML.
    #[schema(schema_with = optional_text::<TEMPLATE>)]
    pub parser_arguments: Option<String>,
    /// What its values are (absent: `text` when created, unchanged by a PUT).
    pub value_type: Option<ValueTypeIn>,
}

/// What a metadata type's values are: after the value pipeline, a value must be of its type
/// (`integer` `42`, `decimal` `1234.50`, `date` `2024-03-31`, `datetime`
/// `2024-03-31T14:05:00`, `time` `14:05[:30]`, `boolean` `true`/`false`); search compares
/// and sorts values by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum ValueTypeIn {
    Text,
    Integer,
    Decimal,
    Date,
    Datetime,
    Time,
    Boolean,
}

impl ValueTypeIn {
    pub fn core(self) -> docmeta_core::ValueType {
        use docmeta_core::ValueType as V;
        match self {
            ValueTypeIn::Text => V::Text,
            ValueTypeIn::Integer => V::Integer,
            ValueTypeIn::Decimal => V::Decimal,
            ValueTypeIn::Date => V::Date,
            ValueTypeIn::Datetime => V::DateTime,
            ValueTypeIn::Time => V::Time,
            ValueTypeIn::Boolean => V::Boolean,
        }
    }
}

impl<'de> Deserialize<'de> for ValueTypeIn {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use docmeta_core::ValueType as V;
        let name = String::deserialize(deserializer)?;
        Ok(match name.parse::<V>().map_err(D::Error::custom)? {
            V::Text => ValueTypeIn::Text,
            V::Integer => ValueTypeIn::Integer,
            V::Decimal => ValueTypeIn::Decimal,
            V::Date => ValueTypeIn::Date,
            V::DateTime => ValueTypeIn::Datetime,
            V::Time => ValueTypeIn::Time,
            V::Boolean => ValueTypeIn::Boolean,
        })
    }
}

/// Body of PATCH on metadata types: absent fields keep their value.
#[derive(Debug, Deserialize, ToSchema)]
pub struct MetadataTypePatchIn {
    #[schema(schema_with = optional_metadata_type_name)]
    pub name: Option<String>,
    #[schema(schema_with = optional_label::<NAME>)]
    pub label: Option<String>,
    #[schema(schema_with = optional_text::<TEMPLATE>)]
    pub default: Option<String>,
    #[schema(schema_with = optional_text::<TEMPLATE>)]
    pub lookup: Option<String>,
    #[schema(schema_with = optional_text::<TEMPLATE>)]
    pub validation: Option<String>,
    #[schema(schema_with = optional_text::<TEMPLATE>)]
    pub validation_arguments: Option<String>,
    #[schema(schema_with = optional_text::<TEMPLATE>)]
    pub parser: Option<String>,
    #[schema(schema_with = optional_text::<TEMPLATE>)]
    pub parser_arguments: Option<String>,
    /// Checked against every stored value first: refused (`400` on `value_type`, naming the
    /// values that do not fit) while any does not.
    pub value_type: Option<ValueTypeIn>,
}

/// Words a metadata type name may not be (templates read names as identifiers): Python's
/// keywords and constants and Jinja's keywords, as the core refuses them.
pub const RESERVED_NAMES: &[&str] = &[
    "False",
    "None",
    "True",
    "and",
    "as",
    "assert",
    "async",
    "await",
    "break",
    "class",
    "continue",
    "def",
    "del",
    "elif",
    "else",
    "except",
    "finally",
    "for",
    "from",
    "global",
    "if",
    "import",
    "in",
    "is",
    "lambda",
    "nonlocal",
    "not",
    "or",
    "pass",
    "raise",
    "return",
    "try",
    "while",
    "with",
    "yield",
    "match",
    "case",
    "type",
    "print",
    "exec",
    "true",
    "false",
    "none",
    "block",
    "endblock",
    "extends",
    "include",
    "macro",
    "endmacro",
    "call",
    "endcall",
    "filter",
    "endfilter",
    "set",
    "endset",
    "endfor",
    "endif",
    "endwith",
    "autoescape",
    "endautoescape",
    "raw",
    "endraw",
    "recursive",
    "loop",
    "super",
    "self",
    "varargs",
    "kwargs",
    "caller",
    "do",
    "ignore",
    "missing",
    "context",
    "scoped",
];

/// A metadata type name: an identifier of at most 48 characters (letters, digits and
/// underscores, not starting with a digit) that is not a reserved word.
fn name_schema(optional: bool) -> ObjectBuilder {
    let kind = if optional {
        utoipa::openapi::schema::SchemaType::from_iter([Type::String, Type::Null])
    } else {
        Type::String.into()
    };
    ObjectBuilder::new()
        .schema_type(kind)
        .max_length(Some(NAME))
        .pattern(Some(format!(
            "^(?!(?:{})$)[A-Za-z_][A-Za-z0-9_]*$",
            RESERVED_NAMES.join("|")
        )))
}

fn metadata_type_name() -> Schema {
    name_schema(false).into()
}

fn optional_metadata_type_name() -> Schema {
    name_schema(true).into()
}

// ----- documents and their types -----------------------------------------------------------

/// Body of POST and PUT on document types.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DocumentTypeIn {
    #[schema(schema_with = label::<NAME>)]
    pub label: String,
}

/// Body of PATCH on document types.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DocumentTypePatchIn {
    #[schema(schema_with = optional_label::<NAME>)]
    pub label: Option<String>,
}

/// Body of POST on documents (the JSON form; see the operation for the multipart one).
#[derive(Debug, Deserialize, ToSchema)]
pub struct DocumentIn {
    /// A document type the caller may create documents of.
    pub document_type_id: Id,
    #[schema(schema_with = label::<LABEL>)]
    pub label: String,
    /// Initial metadata values, each run through the value pipeline.
    pub metadata: Option<InitialValues>,
}

/// Body of PATCH on documents.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DocumentPatchIn {
    #[schema(schema_with = optional_label::<LABEL>)]
    pub label: Option<String>,
}

/// One initial metadata value of a new document (also the entries of a form's `metadata`).
#[derive(Debug, Deserialize, ToSchema)]
pub struct InitialValueIn {
    #[schema(minimum = 1)]
    #[serde(deserialize_with = "integer")]
    pub metadata_type_id: i64,
    #[schema(schema_with = optional_text::<VALUE>)]
    pub value: Option<String>,
}

/// The initial values of a new document: `(metadata type, value)`, a value absent or `null`
/// read as empty.
#[derive(Debug, Default)]
pub struct InitialValues(pub Vec<(MetadataTypeId, String)>);

/// The message for `metadata` when any of its entries is refused.
pub const INITIAL_VALUES: &str =
    "Expected a list of {\"metadata_type_id\": <id>, \"value\": <text>} items.";

impl InitialValues {
    /// The values of entries read from JSON; an entry whose type id is not positive refuses
    /// them all.
    pub fn of(entries: Vec<InitialValueIn>) -> Option<Self> {
        entries
            .into_iter()
            .map(|e| {
                (e.metadata_type_id > 0).then(|| {
                    (
                        MetadataTypeId(e.metadata_type_id),
                        e.value.unwrap_or_default(),
                    )
                })
            })
            .collect::<Option<Vec<_>>>()
            .map(InitialValues)
    }
}

impl<'de> Deserialize<'de> for InitialValues {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Read;
        impl<'de> Visitor<'de> for Read {
            type Value = InitialValues;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(INITIAL_VALUES)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<InitialValues, A::Error> {
                let mut entries = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                // Any refused entry refuses the list, with the list's message.
                while let Some(entry) = seq
                    .next_element::<InitialValueIn>()
                    .map_err(|_| A::Error::custom(INITIAL_VALUES))?
                {
                    entries.push(entry);
                }
                InitialValues::of(entries).ok_or_else(|| A::Error::custom(INITIAL_VALUES))
            }
        }
        deserializer.deserialize_any(Read)
    }
}

impl PartialSchema for InitialValues {
    fn schema() -> RefOr<Schema> {
        ArrayBuilder::new()
            .items(Ref::from_schema_name(InitialValueIn::name()))
            .into()
    }
}

impl ToSchema for InitialValues {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((InitialValueIn::name().into(), InitialValueIn::schema()));
        InitialValueIn::schemas(schemas);
    }
}

/// Body of POST on `/api/v4/documents/batch/`: at most 1000 documents, created in one
/// transaction.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DocumentBatchIn {
    pub documents: DocumentList,
}

/// The documents of a batch.
#[derive(Debug)]
pub struct DocumentList(pub Vec<DocumentIn>);

impl<'de> Deserialize<'de> for DocumentList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        const LIST: &str =
            "Expected a list of {\"document_type_id\", \"label\", \"metadata\"} items.";
        struct Present;
        impl<'de> Visitor<'de> for Present {
            type Value = DocumentList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(LIST)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<DocumentList, A::Error> {
                let max = docmeta_core::MAX_DOCUMENT_BATCH;
                if seq.size_hint().unwrap_or(0) > max {
                    return Err(A::Error::custom(format!(
                        "Ensure this field has no more than {max} elements."
                    )));
                }
                let mut documents = Vec::new();
                while let Some(document) = seq.next_element()? {
                    documents.push(document);
                }
                Ok(DocumentList(documents))
            }
        }
        /// Absent reads as `None` here, to be refused with the list's message.
        struct MaybePresent;
        impl<'de> Visitor<'de> for MaybePresent {
            type Value = DocumentList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(LIST)
            }
            fn visit_none<E: de::Error>(self) -> Result<DocumentList, E> {
                Err(E::custom(LIST))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<DocumentList, D::Error> {
                d.deserialize_any(Present)
            }
        }
        deserializer.deserialize_option(MaybePresent)
    }
}

impl PartialSchema for DocumentList {
    fn schema() -> RefOr<Schema> {
        ArrayBuilder::new()
            .items(Ref::from_schema_name(DocumentIn::name()))
            .max_items(Some(docmeta_core::MAX_DOCUMENT_BATCH))
            .into()
    }
}

impl ToSchema for DocumentList {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((DocumentIn::name().into(), DocumentIn::schema()));
        DocumentIn::schemas(schemas);
    }
}

/// Body of POST `/type/change/`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DocumentTypeChangeIn {
    pub document_type_id: Id,
}

/// Body of POST on a document's metadata.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DocumentMetadataIn {
    pub metadata_type_id: Id,
    /// The value (absent: empty), run through the type's parser and validator.
    #[schema(schema_with = optional_text::<VALUE>)]
    pub value: Option<String>,
}

/// Body of PUT on a document's metadata value: `metadata_type_id` must be the value's own.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DocumentMetadataPutIn {
    #[schema(schema_with = value_text)]
    pub value: String,
    pub metadata_type_id: Id,
}

/// Body of PATCH on a document's metadata value (absent: empty).
#[derive(Debug, Deserialize, ToSchema)]
pub struct DocumentMetadataPatchIn {
    #[schema(schema_with = optional_text::<VALUE>)]
    pub value: Option<String>,
}

/// A metadata value: at most 10,000 characters, without the NUL character.
fn value_text() -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .max_length(Some(VALUE))
        .pattern(Some(r"^[^\u0000]*$"))
        .into()
}

// ----- associations ---------------------------------------------------------------------------

/// Body of POST on a document type's metadata types.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AssociationIn {
    pub metadata_type_id: Id,
    /// Whether documents of the type must have a value (absent: `false`).
    pub required: Option<Flag>,
}

/// Body of PUT on an association: `metadata_type_id` must be the association's own.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AssociationPutIn {
    /// Absent: `false`.
    pub required: Option<Flag>,
    pub metadata_type_id: Id,
}

/// Body of PATCH on an association: `metadata_type_id`, when given, must be its own.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AssociationPatchIn {
    pub required: Option<Flag>,
    pub metadata_type_id: Option<Id>,
}

// ----- access control -------------------------------------------------------------------------

/// Body of the permission add/remove endpoints.
#[derive(Debug, Deserialize, ToSchema)]
pub struct PermissionIn {
    pub permission: PermissionKey,
}

/// Body of POST on an object's ACLs.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AclIn {
    pub role_id: Id,
}

/// Body of POST on users.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UserIn {
    #[schema(schema_with = username)]
    pub username: String,
    #[schema(schema_with = password)]
    pub password: String,
    /// Absent: `false`.
    pub is_superuser: Option<Flag>,
}

/// Body of PATCH on users (`password` is write-only).
#[derive(Debug, Deserialize, ToSchema)]
pub struct UserPatchIn {
    #[schema(schema_with = optional_username)]
    pub username: Option<String>,
    #[schema(schema_with = optional_password)]
    pub password: Option<String>,
    pub is_superuser: Option<Flag>,
    pub is_active: Option<Flag>,
}

/// A username: 1 to 150 letters, digits and `@.+-_` (letters and digits of any script are
/// accepted; the pattern names the ASCII ones).
fn username_schema(optional: bool) -> ObjectBuilder {
    let kind = if optional {
        utoipa::openapi::schema::SchemaType::from_iter([Type::String, Type::Null])
    } else {
        Type::String.into()
    };
    ObjectBuilder::new()
        .schema_type(kind)
        .pattern(Some("^[A-Za-z0-9@.+_-]{1,150}$"))
        .description(Some(
            "1 to 150 letters, digits and @.+-_ (letters and digits of any script).",
        ))
}

fn username() -> Schema {
    username_schema(false).into()
}

fn optional_username() -> Schema {
    username_schema(true).into()
}

/// A password: at least 8 characters, at most 4096 bytes (1024 characters always fit).
fn password_schema(optional: bool) -> ObjectBuilder {
    let kind = if optional {
        utoipa::openapi::schema::SchemaType::from_iter([Type::String, Type::Null])
    } else {
        Type::String.into()
    };
    ObjectBuilder::new()
        .schema_type(kind)
        .min_length(Some(8))
        .max_length(Some(1024))
        .description(Some("At least 8 characters and at most 4096 bytes."))
}

fn password() -> Schema {
    password_schema(false).into()
}

fn optional_password() -> Schema {
    password_schema(true).into()
}

/// Body of POST on groups.
#[derive(Debug, Deserialize, ToSchema)]
pub struct GroupIn {
    #[schema(schema_with = label::<GROUP>)]
    pub name: String,
}

/// Body of PATCH on groups.
#[derive(Debug, Deserialize, ToSchema)]
pub struct GroupPatchIn {
    #[schema(schema_with = optional_label::<GROUP>)]
    pub name: Option<String>,
}

/// Body of POST on roles.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RoleIn {
    #[schema(schema_with = label::<GROUP>)]
    pub label: String,
}

/// Body of PATCH on roles.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RolePatchIn {
    #[schema(schema_with = optional_label::<GROUP>)]
    pub label: Option<String>,
}

/// Body of the group membership endpoints.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UserIdIn {
    pub user_id: Id,
}

/// Body of the role/group endpoints.
#[derive(Debug, Deserialize, ToSchema)]
pub struct GroupIdIn {
    pub group_id: Id,
}

// ----- cabinets -------------------------------------------------------------------------------

/// Body of POST on cabinets.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CabinetIn {
    #[schema(schema_with = label::<CABINET>)]
    pub label: String,
    /// The parent cabinet (absent: a top-level cabinet).
    pub parent_id: Option<Id>,
}

/// Body of POST on metadata-types/preview/: templates to render before they are saved.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TemplatePreviewIn {
    /// A default template (absent or blank: not rendered).
    #[schema(schema_with = optional_text::<TEMPLATE>)]
    pub default: Option<String>,
    /// A lookup template (absent or blank: not rendered).
    #[schema(schema_with = optional_text::<TEMPLATE>)]
    pub lookup: Option<String>,
    /// The document to render them for (`documents.document_view` on it).
    pub document_id: Option<Id>,
    /// The metadata type being edited (`metadata_type_edit` on it); absent: a new one
    /// (global `metadata_type_create`).
    pub metadata_type_id: Option<Id>,
}

/// Body of PATCH on cabinets.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CabinetPatchIn {
    #[schema(schema_with = optional_label::<CABINET>)]
    pub label: Option<String>,
}

/// Body of the cabinet/document endpoints.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DocumentIdIn {
    pub document_id: Id,
}

// ----- workflows ------------------------------------------------------------------------------

/// Body of POST on workflow templates.
#[derive(Debug, Deserialize, ToSchema)]
pub struct WorkflowIn {
    #[schema(schema_with = label::<LABEL>)]
    pub label: String,
    /// The document types it runs on (absent: none).
    pub document_type_ids: Option<IdList>,
}

/// Body of PATCH on workflow templates.
#[derive(Debug, Deserialize, ToSchema)]
pub struct WorkflowPatchIn {
    #[schema(schema_with = optional_label::<LABEL>)]
    pub label: Option<String>,
    pub document_type_ids: Option<IdList>,
}

/// Body of POST on states.
#[derive(Debug, Deserialize, ToSchema)]
pub struct StateIn {
    #[schema(schema_with = label::<LABEL>)]
    pub label: String,
    /// Absent: `false`.
    pub initial: Option<Flag>,
}

/// Body of PATCH on a state.
#[derive(Debug, Deserialize, ToSchema)]
pub struct StatePatchIn {
    #[schema(schema_with = optional_label::<LABEL>)]
    pub label: Option<String>,
    /// `true` makes it the initial state (replacing the previous one).
    pub initial: Option<Flag>,
}

/// Body of POST on transitions.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TransitionIn {
    #[schema(schema_with = label::<LABEL>)]
    pub label: String,
    pub origin_state_id: Id,
    pub destination_state_id: Id,
    /// A template that allows the transition when it renders to `True` (absent: always).
    #[schema(schema_with = optional_text::<TEMPLATE>)]
    pub condition: Option<String>,
}

/// Body of PATCH on a transition.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TransitionPatchIn {
    #[schema(schema_with = optional_label::<LABEL>)]
    pub label: Option<String>,
    pub origin_state_id: Option<Id>,
    pub destination_state_id: Option<Id>,
    #[schema(schema_with = optional_text::<TEMPLATE>)]
    pub condition: Option<String>,
}

/// When a state action runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum When {
    Entry,
    Exit,
}

impl<'de> Deserialize<'de> for When {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match String::deserialize(deserializer)?.as_str() {
            "entry" => Ok(When::Entry),
            "exit" => Ok(When::Exit),
            _ => Err(D::Error::custom("Use \"entry\" or \"exit\".")),
        }
    }
}

/// Body of POST on state actions.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ActionIn {
    #[schema(schema_with = label::<LABEL>)]
    pub label: String,
    /// Absent: `entry`.
    pub when: Option<When>,
    /// Whether a failure aborts the transition (absent: `false`).
    pub critical: Option<Flag>,
    pub action: Action,
}

/// What a state action does, read as [`ActionBody`].
#[derive(Debug)]
pub struct Action(pub ActionKind);

impl<'de> Deserialize<'de> for Action {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        serde_json::from_value::<ActionBody>(value)
            .map(|a| Action(a.into()))
            .map_err(|e| D::Error::custom(format!("Not a valid action: {e}.")))
    }
}

impl PartialSchema for Action {
    fn schema() -> RefOr<Schema> {
        Ref::from_schema_name(ActionBody::name()).into()
    }
}

impl ToSchema for Action {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((ActionBody::name().into(), ActionBody::schema()));
        ActionBody::schemas(schemas);
    }
}

/// A state action's action, as requests and answers write it (the core's `ActionKind`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ActionBody {
    /// Adds metadata types to the document with no initial value (their default applies).
    AddMetadata {
        #[schema(schema_with = id_array)]
        #[serde(deserialize_with = "integers")]
        metadata_type_ids: Vec<i64>,
    },
    /// Sets or updates a value; `value` is a template whose output goes through the pipeline.
    EditMetadata {
        #[schema(minimum = 1)]
        #[serde(deserialize_with = "integer")]
        metadata_type_id: i64,
        #[schema(max_length = 10000)]
        value: String,
    },
    /// Removes metadata types from the document.
    RemoveMetadata {
        #[schema(schema_with = id_array)]
        #[serde(deserialize_with = "integers")]
        metadata_type_ids: Vec<i64>,
    },
    /// Grants `permission` to `role_id` on the workflow's document.
    GrantDocumentAccess {
        #[schema(minimum = 1)]
        #[serde(deserialize_with = "integer")]
        role_id: i64,
        #[schema(schema_with = permission_key)]
        permission: String,
    },
    /// Revokes `permission` from `role_id` on the workflow's document.
    RevokeDocumentAccess {
        #[schema(minimum = 1)]
        #[serde(deserialize_with = "integer")]
        role_id: i64,
        #[schema(schema_with = permission_key)]
        permission: String,
    },
}

fn permission_key() -> RefOr<Schema> {
    PermissionKey::schema()
}

/// The metadata types of an action that adds or removes them: at least one.
fn id_array() -> RefOr<Schema> {
    IdList::non_empty_schema()
}

impl From<ActionBody> for ActionKind {
    fn from(a: ActionBody) -> Self {
        let types = |ids: Vec<i64>| ids.into_iter().map(MetadataTypeId).collect();
        match a {
            ActionBody::AddMetadata { metadata_type_ids } => ActionKind::AddMetadata {
                metadata_type_ids: types(metadata_type_ids),
            },
            ActionBody::EditMetadata {
                metadata_type_id,
                value,
            } => ActionKind::EditMetadata {
                metadata_type_id: MetadataTypeId(metadata_type_id),
                value,
            },
            ActionBody::RemoveMetadata { metadata_type_ids } => ActionKind::RemoveMetadata {
                metadata_type_ids: types(metadata_type_ids),
            },
            ActionBody::GrantDocumentAccess {
                role_id,
                permission,
            } => ActionKind::GrantDocumentAccess {
                role_id: RoleId(role_id),
                permission,
            },
            ActionBody::RevokeDocumentAccess {
                role_id,
                permission,
            } => ActionKind::RevokeDocumentAccess {
                role_id: RoleId(role_id),
                permission,
            },
        }
    }
}

impl From<&ActionKind> for ActionBody {
    fn from(a: &ActionKind) -> Self {
        let ids = |types: &[MetadataTypeId]| types.iter().map(|t| t.0).collect();
        match a {
            ActionKind::AddMetadata { metadata_type_ids } => ActionBody::AddMetadata {
                metadata_type_ids: ids(metadata_type_ids),
            },
            ActionKind::EditMetadata {
                metadata_type_id,
                value,
            } => ActionBody::EditMetadata {
                metadata_type_id: metadata_type_id.0,
                value: value.clone(),
            },
            ActionKind::RemoveMetadata { metadata_type_ids } => ActionBody::RemoveMetadata {
                metadata_type_ids: ids(metadata_type_ids),
            },
            ActionKind::GrantDocumentAccess {
                role_id,
                permission,
            } => ActionBody::GrantDocumentAccess {
                role_id: role_id.0,
                permission: permission.clone(),
            },
            ActionKind::RevokeDocumentAccess {
                role_id,
                permission,
            } => ActionBody::RevokeDocumentAccess {
                role_id: role_id.0,
                permission: permission.clone(),
            },
        }
    }
}

/// Body of POST on triggers.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TriggerIn {
    #[schema(schema_with = trigger_event)]
    pub event_type: String,
}

/// The events a transition can be triggered by, by their short or full names.
pub fn trigger_event() -> Schema {
    let full = docmeta_core::TRIGGER_EVENTS;
    let short = full
        .iter()
        .filter_map(|name| name.strip_prefix("metadata."));
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(short.chain(full.iter().copied())))
        .into()
}

/// Body of POST on an instance's transitions.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TakeTransitionIn {
    pub transition_id: Id,
    #[schema(schema_with = optional_text::<VALUE>)]
    pub comment: Option<String>,
}

// ----- webhooks -------------------------------------------------------------------------------

/// Longest webhook URL.
const URL: usize = docmeta_core::MAX_WEBHOOK_URL_LEN;

/// Body of POST on webhooks.
#[derive(Debug, Deserialize, ToSchema)]
pub struct WebhookIn {
    /// Where events are POSTed: `http` or `https`, a host that resolves only to public
    /// addresses (unless `webhooks_allow_private_networks`), no credentials.
    #[schema(schema_with = webhook_url::<false>)]
    pub url: String,
    /// The event names it is for (absent or empty: every event).
    #[schema(schema_with = event_names)]
    pub events: Option<Vec<String>>,
    /// The signing secret (absent: 32 random bytes); answered only by this request.
    #[schema(schema_with = webhook_secret::<false>)]
    pub secret: Option<String>,
}

/// Body of PATCH on webhooks: each field given replaces the stored one.
#[derive(Debug, Deserialize, ToSchema)]
pub struct WebhookPatchIn {
    #[schema(schema_with = webhook_url::<true>)]
    pub url: Option<String>,
    #[schema(schema_with = event_names)]
    pub events: Option<Vec<String>>,
    /// A new signing secret (write-only).
    #[schema(schema_with = webhook_secret::<true>)]
    pub secret: Option<String>,
    pub active: Option<Flag>,
}

/// A string schema, or `null` too when `OPTIONAL`.
fn string_or_null<const OPTIONAL: bool>() -> ObjectBuilder {
    let kind = if OPTIONAL {
        utoipa::openapi::schema::SchemaType::from_iter([Type::String, Type::Null])
    } else {
        Type::String.into()
    };
    ObjectBuilder::new().schema_type(kind)
}

/// A webhook URL: `http://` or `https://` and at most 2,048 characters.
fn webhook_url<const OPTIONAL: bool>() -> Schema {
    string_or_null::<OPTIONAL>()
        .max_length(Some(URL))
        .pattern(Some("^https?://[^\\u0000]+$"))
        .into()
}

/// What a webhook secret is: `whsec_` and the standard base64 (padded, no stray bits) of 24 to
/// 64 bytes. Groups of four characters hold three bytes: 8 to 20 of them may end with a group
/// of one or two bytes, 21 of them with a group of one.
const WEBHOOK_SECRET_PATTERN: &str = concat!(
    "^whsec_(?:",
    "(?:[A-Za-z0-9+/]{4}){8,20}(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?",
    "|(?:[A-Za-z0-9+/]{4}){21}(?:[A-Za-z0-9+/][AQgw]==)?",
    ")$"
);

/// A webhook secret: `whsec_` and base64 (of 24 to 64 bytes).
fn webhook_secret<const OPTIONAL: bool>() -> Schema {
    string_or_null::<OPTIONAL>()
        .pattern(Some(WEBHOOK_SECRET_PATTERN))
        .description(Some("`whsec_` and the base64 of 24 to 64 bytes."))
        .into()
}

/// A list of event names, or `null` (absent).
fn event_names() -> Schema {
    ArrayBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter([
            Type::Array,
            Type::Null,
        ]))
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(docmeta_core::Event::NAMES.iter().copied())),
        )
        .into()
}

// ----- devices --------------------------------------------------------------------------------

/// Body of POST on devices: a sign-in, the credentials exchanged for a token.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DeviceSignInIn {
    /// The user's username.
    #[schema(schema_with = username)]
    pub username: String,
    /// The user's password (never kept by the device).
    #[schema(max_length = 1024)]
    pub password: String,
    /// The device's name, shown in lists of devices ("Ann's phone"): not blank, no NUL
    /// character.
    #[schema(schema_with = label::<100>)]
    pub name: String,
    /// Days the token is accepted (absent: 90; at most 365).
    #[schema(minimum = 1, maximum = 365)]
    #[serde(deserialize_with = "optional_integer")]
    pub lifetime_days: Option<i64>,
}

// ----- sync -----------------------------------------------------------------------------------

/// Body of POST on sync/push: the writes a replica made offline, in the order made.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SyncPushIn {
    /// The device whose replica made them (one of the caller's).
    #[schema(minimum = 1)]
    #[serde(deserialize_with = "integer")]
    pub device: i64,
    /// The writes (at most 500).
    #[schema(max_items = 500)]
    pub writes: Vec<PushedWriteIn>,
}

/// One write a replica made offline: a value set or removed (based on the value the replica
/// held, `base`, `null` for none), a document created, or a workflow transition taken (based
/// on the state the replica held, `base_state_id`). What fields a write needs depends on its
/// `action` ([`PUSHED_WRITE_FIELDS`]); the OpenAPI document states it as one object per action.
#[derive(Debug)]
pub struct PushedWriteIn(pub PushedWrite);

/// Every field a pushed write may have, read in this order (types and text rules); which of
/// them its action needs is checked after.
#[derive(Deserialize)]
struct PushedWriteFields {
    key: String,
    action: PushAction,
    #[serde(deserialize_with = "integer")]
    document_id: i64,
    metadata_type_id: Option<Id>,
    value: Option<String>,
    base: Option<String>,
    document_type_id: Option<Id>,
    label: Option<String>,
    metadata: Option<InitialValues>,
    workflow_instance_id: Option<Id>,
    transition_id: Option<Id>,
    comment: Option<String>,
    base_state_id: Option<Id>,
}

/// The fields of a pushed write beside `key`, `action` and `document_id`, by action: those it
/// needs, and those it may have. The OpenAPI document is made from this table, and a test
/// reads a write of every action against it.
pub const PUSHED_WRITE_FIELDS: [(PushAction, &[&str], &[&str]); 4] = [
    (PushAction::Set, &["metadata_type_id", "value"], &["base"]),
    (PushAction::Remove, &["metadata_type_id"], &["base"]),
    (
        PushAction::Create,
        &["document_type_id", "label"],
        &["metadata"],
    ),
    (
        PushAction::Transition,
        &["workflow_instance_id", "transition_id"],
        &["comment", "base_state_id"],
    ),
];

impl<'de> Deserialize<'de> for PushedWriteIn {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let w = PushedWriteFields::deserialize(deserializer)?;
        fn needs<T, E: de::Error>(value: Option<T>, field: &'static str) -> Result<T, E> {
            value.ok_or_else(|| E::missing_field(field))
        }
        let change = match w.action {
            PushAction::Set => PushedChange::Set {
                metadata_type: MetadataTypeId(needs(w.metadata_type_id, "metadata_type_id")?.0),
                value: needs(w.value, "value")?,
                base: w.base,
            },
            PushAction::Remove => PushedChange::Remove {
                metadata_type: MetadataTypeId(needs(w.metadata_type_id, "metadata_type_id")?.0),
                base: w.base,
            },
            PushAction::Create => PushedChange::Create {
                document_type: DocumentTypeId(needs(w.document_type_id, "document_type_id")?.0),
                label: needs(w.label, "label")?,
                values: w.metadata.unwrap_or_default().0,
            },
            PushAction::Transition => PushedChange::Transition {
                instance: WorkflowInstanceId(
                    needs(w.workflow_instance_id, "workflow_instance_id")?.0,
                ),
                transition: WorkflowTransitionId(needs(w.transition_id, "transition_id")?.0),
                comment: w.comment.unwrap_or_default(),
                base: w.base_state_id.map(|s| WorkflowStateId(s.0)),
            },
        };
        Ok(PushedWriteIn(PushedWrite {
            key: w.key,
            document: DocumentId(w.document_id),
            change,
        }))
    }
}

/// The schema of one field of a pushed write, with what it says; required fields are never
/// `null`.
fn pushed_write_field(name: &str, required: bool) -> (RefOr<Schema>, &'static str) {
    let id = |description| (Id::schema(), description);
    match name {
        "key" => (
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(64))
                .into(),
            "The replica's name for the write; its result carries it (a create pushed again under the same key creates nothing more).",
        ),
        "document_id" => (
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(1))
                .maximum(Some(i64::MAX))
                .into(),
            "The document; for `create`, the replica's own id for the document it made.",
        ),
        "metadata_type_id" => id("The value's type."),
        "value" => (value_text().into(), "The value as submitted."),
        "base" => (
            optional_text::<VALUE>().into(),
            "The value the replica held when the write was made (`null`: none).",
        ),
        "document_type_id" => id("The new document's type."),
        "label" => (label::<LABEL>().into(), "The new document's label."),
        "metadata" => (
            InitialValues::schema(),
            "The new document's values, each run through the pipeline.",
        ),
        "workflow_instance_id" => id("The document's workflow instance."),
        "transition_id" => id("The transition to take."),
        "comment" => (
            optional_text::<VALUE>().into(),
            "The log entry's comment (default empty).",
        ),
        "base_state_id" => (
            OneOfBuilder::new()
                .item(Id::schema())
                .item(ObjectBuilder::new().schema_type(Type::Null))
                .into(),
            "The instance's state the replica held when it took the transition (`null`: none).",
        ),
        _ => {
            debug_assert!(!required, "{name} is not a field of a pushed write");
            (ObjectBuilder::new().into(), "")
        }
    }
}

impl PartialSchema for PushedWriteIn {
    fn schema() -> RefOr<Schema> {
        let mut one_of = OneOfBuilder::new().description(Some(
            "One write a replica made offline; the fields it needs depend on its `action`: `set` (add or edit a value, through the pipeline), `remove` (a value), `create` (a document) or `transition` (a workflow transition).",
        ));
        for (action, needed, optional) in PUSHED_WRITE_FIELDS {
            let mut object = ObjectBuilder::new()
                .schema_type(Type::Object)
                .title(Some(action.name()))
                .property(
                    "action",
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .enum_values(Some([action.name()])),
                )
                .required("action");
            let fields = ["key", "document_id"].iter().chain(needed);
            for name in fields {
                let (schema, description) = pushed_write_field(name, true);
                object = object
                    .property(*name, described(schema, description))
                    .required(*name);
            }
            for name in optional {
                let (schema, description) = pushed_write_field(name, false);
                object = object.property(*name, described(schema, description));
            }
            one_of = one_of.item(object);
        }
        one_of.into()
    }
}

impl ToSchema for PushedWriteIn {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((InitialValueIn::name().into(), InitialValueIn::schema()));
        InitialValueIn::schemas(schemas);
    }
}

/// `schema` with `description` (an object schema's own; a reference or a combination as the
/// `description` of an `allOf` around it).
fn described(schema: RefOr<Schema>, description: &str) -> RefOr<Schema> {
    let description = Some(description.to_owned());
    match schema {
        RefOr::T(Schema::Object(mut object)) => {
            object.description = description;
            RefOr::T(Schema::Object(object))
        }
        RefOr::T(Schema::OneOf(mut one_of)) => {
            one_of.description = description;
            RefOr::T(Schema::OneOf(one_of))
        }
        RefOr::T(Schema::Array(mut array)) => {
            array.description = description;
            RefOr::T(Schema::Array(array))
        }
        other => AllOfBuilder::new()
            .item(other)
            .description(description)
            .into(),
    }
}

/// What a pushed write does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PushAction {
    Set,
    Remove,
    Create,
    Transition,
}

impl PushAction {
    /// The action's name in a request.
    pub fn name(self) -> &'static str {
        match self {
            PushAction::Set => "set",
            PushAction::Remove => "remove",
            PushAction::Create => "create",
            PushAction::Transition => "transition",
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::de::DeserializeOwned;
    use serde_json::{Value, json};

    use super::*;

    /// The `400` body reading `body` into `T` answers (`Value::Null` when it is read).
    fn refusal<T: DeserializeOwned>(body: Value) -> Value {
        let Value::Object(object) = body else {
            panic!("a body is an object");
        };
        match crate::body::read_fields::<T>(&object) {
            Ok(_) => Value::Null,
            Err(e) => {
                assert_eq!(e.status, axum::http::StatusCode::BAD_REQUEST);
                e.body
            }
        }
    }

    fn read<T: DeserializeOwned>(body: Value) -> T {
        let Value::Object(object) = body else {
            panic!("a body is an object");
        };
        crate::body::read_fields::<T>(&object).expect("read")
    }

    #[test]
    fn fields_are_read_in_their_order_and_the_first_refused_one_answers() {
        let required = json!(["This field is required."]);
        assert_eq!(
            refusal::<UserIn>(json!({})),
            json!({ "username": required })
        );
        // `password` is wrong too, but `username` comes first.
        assert_eq!(
            refusal::<UserIn>(json!({"password": 5})),
            json!({ "username": required })
        );
        assert_eq!(
            refusal::<UserIn>(json!({"username": 5, "password": "a long password"})),
            json!({"username": ["Not a valid string."]})
        );
        // PUT names the value before the type.
        assert_eq!(
            refusal::<DocumentMetadataPutIn>(json!({"metadata_type_id": "x"})),
            json!({ "value": required })
        );
        // `null` is absent; unknown fields are ignored.
        assert_eq!(
            refusal::<GroupIn>(json!({"name": null, "other": 1})),
            json!({ "name": required })
        );
        let patch: UserPatchIn = read(json!({"username": null, "x": [1]}));
        assert_eq!(patch.username, None);
    }

    #[test]
    fn ids_are_positive_integers_or_strings_of_digits() {
        let read_id = |v: Value| read::<DocumentIdIn>(json!({"document_id": v})).document_id;
        assert_eq!(read_id(json!(7)), Id(7));
        assert_eq!(read_id(json!("12")), Id(12));
        assert_eq!(read_id(json!(" 0012\n")), Id(12));
        // JSON Schema's `integer` includes integers written as floats.
        assert_eq!(read_id(json!(8.0)), Id(8));
        // Read exactly: the default float parser would read this one as `…238.5`.
        let exact: Value = serde_json::from_str("4293852396740238.0").expect("JSON");
        assert_eq!(read_id(exact), Id(4_293_852_396_740_238));
        for bad in [
            json!(0),
            json!(-3),
            json!(1.5),
            json!(true),
            json!("abc"),
            json!("0"),
            json!([1]),
            json!({}),
            json!(u64::MAX),
        ] {
            assert_eq!(
                refusal::<DocumentIdIn>(json!({ "document_id": bad })),
                json!({"document_id": ["A valid integer is required."]}),
                "{bad}"
            );
        }
    }

    #[test]
    fn flags_lists_permissions_and_choices_have_their_messages() {
        let state: StateIn = read(json!({"label": "x", "initial": "true"}));
        assert_eq!(state.initial, Some(Flag(true)));
        for bad in [json!("yes"), json!(1), json!([])] {
            assert_eq!(
                refusal::<StateIn>(json!({"label": "x", "initial": bad})),
                json!({"initial": ["Must be a valid boolean."]})
            );
        }
        let workflow: WorkflowIn = read(json!({"label": "x", "document_type_ids": [2, 3.0]}));
        assert_eq!(workflow.document_type_ids, Some(IdList(vec![2, 3])));
        for bad in [
            json!([1, "2"]),
            json!([0]),
            json!("1"),
            json!([null]),
            json!([1.5]),
        ] {
            assert_eq!(
                refusal::<WorkflowIn>(json!({"label": "x", "document_type_ids": bad})),
                json!({"document_type_ids": ["A list of valid integers is required."]})
            );
        }
        assert_eq!(
            refusal::<PermissionIn>(json!({"permission": "no.such"})),
            json!({"permission": ["Unknown permission \"no.such\"."]})
        );
        assert_eq!(
            refusal::<PermissionIn>(json!({"permission": 3})),
            json!({"permission": ["Not a valid string."]})
        );
        let key = docmeta_core::Permission::ALL[0];
        let p: PermissionIn = read(json!({ "permission": key.key() }));
        assert_eq!(p.permission, PermissionKey(key));
        let action = json!({"type": "add_metadata", "metadata_type_ids": [1]});
        assert_eq!(
            refusal::<ActionIn>(json!({"label": "x", "when": "later", "action": action})),
            json!({"when": ["Use \"entry\" or \"exit\"."]})
        );
        let refused = refusal::<ActionIn>(json!({"label": "x", "action": {"type": "fly"}}));
        assert!(
            refused["action"][0]
                .as_str()
                .is_some_and(|m| m.starts_with("Not a valid action: unknown variant `fly`")),
            "{refused}"
        );
        let edit = json!({"type": "edit_metadata", "metadata_type_id": 8.0, "value": "v"});
        let e: ActionIn = read(json!({"label": "x", "action": edit}));
        assert_eq!(
            e.action.0,
            ActionKind::EditMetadata {
                metadata_type_id: MetadataTypeId(8),
                value: "v".to_owned()
            }
        );
        let a: ActionIn = read(json!({"label": "x", "when": "exit", "action": action}));
        assert_eq!(a.when, Some(When::Exit));
        assert_eq!(
            a.action.0,
            ActionKind::AddMetadata {
                metadata_type_ids: vec![MetadataTypeId(1)]
            }
        );
    }

    #[test]
    fn a_refusal_in_a_list_names_its_entry() {
        let good = json!({"document_type_id": 1, "label": "a"});
        assert_eq!(
            refusal::<DocumentBatchIn>(json!({"documents": [good, {"document_type_id": 1}]})),
            json!({"documents": [{}, {"label": ["This field is required."]}]})
        );
        assert_eq!(
            refusal::<DocumentBatchIn>(json!({"documents": [good, good, 3]})),
            json!({"documents": [{}, {}, {"non_field_errors": ["Invalid data. Expected a dictionary."]}]})
        );
        let list = json!({"documents": [
            "Expected a list of {\"document_type_id\", \"label\", \"metadata\"} items."
        ]});
        assert_eq!(refusal::<DocumentBatchIn>(json!({})), list);
        assert_eq!(refusal::<DocumentBatchIn>(json!({"documents": {}})), list);
        let over = vec![good.clone(); docmeta_core::MAX_DOCUMENT_BATCH + 1];
        assert_eq!(
            refusal::<DocumentBatchIn>(json!({ "documents": over })),
            json!({"documents": ["Ensure this field has no more than 1000 elements."]})
        );
        // `metadata` is refused as a whole.
        for bad in [
            json!([{"metadata_type_id": "1"}]),
            json!([{"metadata_type_id": 0}]),
            json!([{"metadata_type_id": 1, "value": 5}]),
            json!([7]),
            json!("x"),
        ] {
            assert_eq!(
                refusal::<DocumentIn>(
                    json!({"document_type_id": 1, "label": "a", "metadata": bad})
                ),
                json!({ "metadata": [INITIAL_VALUES] })
            );
        }
        let d: DocumentIn = read(json!({"document_type_id": "4", "label": "a",
            "metadata": [{"metadata_type_id": 2}, {"metadata_type_id": 3, "value": "v"}]}));
        assert_eq!(
            d.metadata.map(|m| m.0),
            Some(vec![
                (MetadataTypeId(2), String::new()),
                (MetadataTypeId(3), "v".to_owned())
            ])
        );
    }

    #[test]
    fn the_reserved_names_are_refused_by_the_core() {
        let db = docmeta_core::Docmeta::in_memory().expect("in memory");
        let s = db.system();
        for name in RESERVED_NAMES {
            let input = docmeta_core::MetadataTypeInput {
                name: (*name).to_owned(),
                label: "x".to_owned(),
                ..Default::default()
            };
            assert!(s.create_metadata_type(input).is_err(), "{name}");
        }
    }

    #[test]
    fn a_device_lifetime_is_an_integer_however_written() {
        let body = |days: Value| {
            json!({"username": "ann", "password": "a long password", "name": "phone",
                   "lifetime_days": days})
        };
        assert_eq!(
            read::<DeviceSignInIn>(body(json!(148.0))).lifetime_days,
            Some(148)
        );
        assert_eq!(
            read::<DeviceSignInIn>(body(json!(null))).lifetime_days,
            None
        );
        // Out of range is the core's refusal (one to 365 days), not the body's.
        assert_eq!(
            read::<DeviceSignInIn>(body(json!(-4))).lifetime_days,
            Some(-4)
        );
        for bad in [json!(1.5), json!("x"), json!(true)] {
            assert_eq!(
                refusal::<DeviceSignInIn>(body(bad.clone())),
                json!({"lifetime_days": ["A valid integer is required."]}),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_webhook_secret_pattern_is_the_rule_it_states() {
        use base64::Engine as _;
        use base64::engine::general_purpose::STANDARD;
        let pattern = regex::Regex::new(WEBHOOK_SECRET_PATTERN).expect("pattern");
        // The rule: `whsec_` and the standard base64 of 24 to 64 bytes.
        let rule = |secret: &str| {
            secret
                .strip_prefix("whsec_")
                .and_then(|b64| STANDARD.decode(b64).ok())
                .is_some_and(|key| (24..=64).contains(&key.len()))
        };
        let mut secrets = Vec::new();
        for len in 0..=70usize {
            for seed in [0u8, 0x5a, 0xff] {
                let key: Vec<u8> = (0..len)
                    .map(|i| (i as u8).wrapping_mul(31) ^ seed)
                    .collect();
                let encoded = STANDARD.encode(&key);
                secrets.push(format!("whsec_{encoded}"));
                // Unpadded, stray bits in the last character, a character too many or few.
                secrets.push(format!("whsec_{}", encoded.trim_end_matches('=')));
                if let Some(stray) = encoded.strip_suffix("==").or(encoded.strip_suffix('=')) {
                    let mut chars: Vec<char> = stray.chars().collect();
                    if let Some(last) = chars.last_mut() {
                        *last = if *last == '/' { '+' } else { '/' };
                    }
                    let padding = "=".repeat(encoded.len() - stray.len());
                    secrets.push(format!(
                        "whsec_{}{padding}",
                        chars.iter().collect::<String>()
                    ));
                }
                secrets.push(format!("whsec_{encoded}A"));
                secrets.push(format!(
                    "whsec_{}",
                    &encoded[..encoded.len().saturating_sub(1)]
                ));
                secrets.push(encoded);
            }
        }
        let accepted = secrets.iter().filter(|s| rule(s)).count();
        assert!(
            accepted > 100,
            "the samples hold accepted secrets ({accepted})"
        );
        for secret in &secrets {
            assert_eq!(pattern.is_match(secret), rule(secret), "{secret}");
        }
    }

    /// A value for each field of a pushed write that the body accepts.
    fn pushed_field_value(name: &str) -> Value {
        match name {
            "key" => json!("k1"),
            "document_id"
            | "metadata_type_id"
            | "document_type_id"
            | "workflow_instance_id"
            | "transition_id"
            | "base_state_id" => json!(3),
            "metadata" => json!([{"metadata_type_id": 2, "value": "x"}]),
            _ => json!("text"),
        }
    }

    #[test]
    fn a_pushed_write_needs_what_the_schema_says_its_action_needs() {
        let push = |write: Value| json!({"device": 1, "writes": [{"key": "k0", "action": "remove", "document_id": 1, "metadata_type_id": 1}, write]});
        for (action, needed, optional) in PUSHED_WRITE_FIELDS {
            let mut write = json!({"action": action.name()});
            for name in ["key", "document_id"].iter().chain(needed) {
                write[*name] = pushed_field_value(name);
            }
            // What it needs is enough, and what it may have is optional...
            assert_eq!(
                refusal::<SyncPushIn>(push(write.clone())),
                Value::Null,
                "{write}"
            );
            let mut full = write.clone();
            for name in optional {
                full[*name] = pushed_field_value(name);
            }
            let read: SyncPushIn = read(push(full.clone()));
            assert_eq!(read.writes.len(), 2, "{full}");
            // ... and each field it needs is refused as required when absent or null, where it
            // is.
            for name in ["key", "document_id"].iter().chain(needed) {
                for absent in [None, Some(Value::Null)] {
                    let mut without = write.clone();
                    match &absent {
                        None => {
                            without.as_object_mut().expect("object").remove(*name);
                        }
                        Some(null) => without[*name] = null.clone(),
                    }
                    assert_eq!(
                        refusal::<SyncPushIn>(push(without.clone())),
                        json!({"writes": [{}, {*name: ["This field is required."]}]}),
                        "{without}"
                    );
                }
            }
        }
        // The schema states the same: one object per action, its needs required.
        let RefOr::T(Schema::OneOf(one_of)) = PushedWriteIn::schema() else {
            panic!("a pushed write's schema is a oneOf");
        };
        assert_eq!(one_of.items.len(), PUSHED_WRITE_FIELDS.len());
        for (item, (action, needed, optional)) in one_of.items.iter().zip(PUSHED_WRITE_FIELDS) {
            let RefOr::T(Schema::Object(object)) = item else {
                panic!("an action's schema is an object");
            };
            let mut required: Vec<&str> = object.required.iter().map(String::as_str).collect();
            required.sort_unstable();
            let mut expected: Vec<&str> = ["action", "key", "document_id"]
                .into_iter()
                .chain(needed.iter().copied())
                .collect();
            expected.sort_unstable();
            assert_eq!(required, expected, "{}", action.name());
            assert_eq!(
                object.properties.len(),
                expected.len() + optional.len(),
                "{}",
                action.name()
            );
        }
        // A type error names its field too.
        assert_eq!(
            refusal::<SyncPushIn>(push(
                json!({"key": "k", "action": "set", "document_id": 1, "metadata_type_id": "x", "value": "v"})
            )),
            json!({"writes": [{}, {"metadata_type_id": ["A valid integer is required."]}]})
        );
    }
}
