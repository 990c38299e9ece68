//! The records the store reads and writes, and how each is read from a row; the statements
//! themselves are in one file per table group beside this one.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use chrono::{DateTime, Utc};

use super::{Dialect, Row};
use crate::error::{Error, Result};
use crate::events::{Event, EventObject};
use crate::model::*;

/// Microseconds since the Unix epoch: how times are stored.
pub fn to_micros(t: DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

/// The inverse of [`to_micros`].
pub fn from_micros(us: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(us).unwrap_or_default()
}

pub(super) const METADATA_TYPE_COLUMNS: &str = "id, name, label, default_value, lookup, \
    validation, validation_arguments, parser, parser_arguments, value_type";

/// A stored value type; a name this build does not know (written by a newer one) reads as text.
pub(super) fn value_type(name: &str) -> ValueType {
    ValueType::parse(name).unwrap_or_default()
}

pub(super) fn metadata_type(r: &Row) -> Result<MetadataType> {
    Ok(MetadataType {
        id: MetadataTypeId(r.int(0)?),
        name: r.text(1)?,
        label: r.text(2)?,
        default: r.text(3)?,
        lookup: r.text(4)?,
        validation: r.text(5)?,
        validation_arguments: r.text(6)?,
        parser: r.text(7)?,
        parser_arguments: r.text(8)?,
        value_type: value_type(&r.text(9)?),
    })
}

pub(super) fn document_type(r: &Row) -> Result<DocumentType> {
    Ok(DocumentType {
        id: DocumentTypeId(r.int(0)?),
        label: r.text(1)?,
    })
}

pub(super) fn document(r: &Row) -> Result<Document> {
    Ok(Document {
        id: DocumentId(r.int(0)?),
        label: r.text(1)?,
        document_type_id: DocumentTypeId(r.int(2)?),
        created: from_micros(r.int(3)?),
    })
}

pub(super) const FILE_COLUMNS: &str =
    "id, document_id, filename, size, checksum, mimetype, created, storage_name, encrypted";

/// A document file with where its bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFile {
    /// The record.
    pub file: DocumentFile,
    /// The generated name in the file storage.
    pub storage_name: String,
    /// Whether the stored bytes are MENC.
    pub encrypted: bool,
}

pub(super) fn stored_file(r: &Row) -> Result<StoredFile> {
    Ok(StoredFile {
        file: DocumentFile {
            id: DocumentFileId(r.int(0)?),
            document_id: DocumentId(r.int(1)?),
            filename: r.text(2)?,
            size: u64::try_from(r.int(3)?).unwrap_or(0),
            checksum: r.text(4)?,
            mimetype: r.text(5)?,
            created: from_micros(r.int(6)?),
        },
        storage_name: r.text(7)?,
        encrypted: r.int(8)? != 0,
    })
}

pub(super) fn association(r: &Row) -> Result<DocumentTypeMetadataType> {
    Ok(DocumentTypeMetadataType {
        id: AssociationId(r.int(0)?),
        document_type_id: DocumentTypeId(r.int(1)?),
        metadata_type_id: MetadataTypeId(r.int(2)?),
        required: r.bool(3)?,
    })
}

pub(super) fn document_metadata(r: &Row) -> Result<DocumentMetadata> {
    Ok(DocumentMetadata {
        id: DocumentMetadataId(r.int(0)?),
        document_id: DocumentId(r.int(1)?),
        metadata_type_id: MetadataTypeId(r.int(2)?),
        value: r.text(3)?,
    })
}

pub(super) fn event(r: &Row) -> Result<Event> {
    let action_object = match (r.opt_text(7)?, r.opt_int(8)?) {
        (Some(kind), Some(id)) => Some(EventObject {
            kind,
            id,
            label: r.opt_text(9)?.unwrap_or_default(),
        }),
        _ => None,
    };
    Ok(Event {
        id: EventId(r.int(0)?),
        timestamp: from_micros(r.int(1)?),
        name: r.text(2)?,
        actor: r.opt_int(3)?.map(UserId),
        target: EventObject {
            kind: r.text(4)?,
            id: r.int(5)?,
            label: r.text(6)?,
        },
        action_object,
        changes: changes_of_json(&r.text(10)?)?,
    })
}

/// The JSON text an event's changes are stored as: an array of
/// `{"field": ..., "before": ..., "after": ...}`, each value a string or `null`.
pub(super) fn changes_json(changes: &[EventChange]) -> String {
    serde_json::Value::Array(
        changes
            .iter()
            .map(|c| {
                serde_json::json!({
                    "field": c.field,
                    "before": c.before,
                    "after": c.after,
                })
            })
            .collect(),
    )
    .to_string()
}

/// An event's changes read back from [`changes_json`]'s text (events written before changes
/// were recorded hold `[]`).
pub(super) fn changes_of_json(text: &str) -> Result<Vec<EventChange>> {
    let bad = |why: &str| Error::storage("reading an event's changes", why.to_owned());
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(&e.to_string()))?;
    let text_of = |v: &serde_json::Value| -> Result<Option<String>> {
        match v {
            serde_json::Value::Null => Ok(None),
            serde_json::Value::String(s) => Ok(Some(s.clone())),
            _ => Err(bad("a value is neither text nor null")),
        }
    };
    value
        .as_array()
        .ok_or_else(|| bad("not an array"))?
        .iter()
        .map(|c| {
            Ok(EventChange {
                field: c["field"]
                    .as_str()
                    .ok_or_else(|| bad("a change names no field"))?
                    .to_owned(),
                before: text_of(&c["before"])?,
                after: text_of(&c["after"])?,
            })
        })
        .collect()
}

/// A user as stored (the password only as its Argon2id hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRow {
    /// Identifier.
    pub id: UserId,
    /// Unique login name.
    pub username: String,
    /// PHC string of the Argon2id hash.
    pub password_hash: String,
    /// Bypasses every permission check.
    pub is_superuser: bool,
    /// Inactive users are refused everything.
    pub is_active: bool,
}

pub(super) fn user(r: &Row) -> Result<UserRow> {
    Ok(UserRow {
        id: UserId(r.int(0)?),
        username: r.text(1)?,
        password_hash: r.text(2)?,
        is_superuser: r.bool(3)?,
        is_active: r.bool(4)?,
    })
}

/// A durable task row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRow {
    /// Identifier.
    pub id: TaskId,
    /// Task name, e.g. `task_add_required_metadata_type`.
    pub name: String,
    /// JSON arguments.
    pub payload: String,
    /// `pending`, `running`, `done` or `failed`.
    pub state: String,
    /// How many times it was tried.
    pub attempts: i64,
    /// The last error.
    pub error: String,
    /// The search index it must run on (the id of a data directory's index), or `None` when
    /// any runner may run it.
    pub target: Option<String>,
}

pub(super) fn task(r: &Row) -> Result<TaskRow> {
    Ok(TaskRow {
        id: TaskId(r.int(0)?),
        name: r.text(1)?,
        payload: r.text(2)?,
        state: r.text(3)?,
        attempts: r.int(4)?,
        error: r.text(5)?,
        target: r.opt_text(6)?,
    })
}

pub(super) fn cabinet(r: &Row) -> Result<Cabinet> {
    Ok(Cabinet {
        id: CabinetId(r.int(0)?),
        label: r.text(1)?,
        parent_id: r.opt_int(2)?.map(CabinetId),
    })
}

/// A stored ACL row with its permission keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclRow {
    /// Identifier.
    pub id: AclId,
    /// `app_label.model_name` of the object.
    pub object_kind: String,
    /// The object's id.
    pub object_id: i64,
    /// The role.
    pub role_id: RoleId,
    /// Granted permission keys, sorted.
    pub permissions: Vec<String>,
}

pub(super) fn id_list<T: From<i64>>(rows: Vec<i64>) -> Vec<T> {
    rows.into_iter().map(T::from).collect()
}

/// A metadata value as the search index stores it: with its type's id and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedValueRow {
    /// The value's id.
    pub id: DocumentMetadataId,
    /// Its metadata type.
    pub metadata_type_id: MetadataTypeId,
    /// The metadata type's name.
    pub metadata_type_name: String,
    /// The value.
    pub value: String,
    /// The metadata type's value type.
    pub value_type: ValueType,
}

/// A filter: `column` is one of the ids that parameter `?n` lists, a text made by
/// [`ids_param`]. The statement is the same whatever the ids, so PostgreSQL prepares it once
/// (a list written into the statement would be a new statement, prepared again, every time).
pub(super) fn among_ids(dialect: Dialect, column: &str, n: usize) -> String {
    match dialect {
        Dialect::Postgres => format!("{column} = ANY (string_to_array(?{n}, ',')::int8[])"),
        _ => format!("{column} IN (SELECT value FROM json_each('[' || ?{n} || ']'))"),
    }
}

/// The parameter of [`among_ids`]: the ids, comma-separated.
pub(super) fn ids_param(ids: impl IntoIterator<Item = i64>) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for (i, id) in ids.into_iter().enumerate() {
        let _ = write!(out, "{}{id}", if i == 0 { "" } else { "," });
    }
    out
}

impl From<UserRow> for User {
    fn from(u: UserRow) -> Self {
        User {
            id: u.id,
            username: u.username,
            is_superuser: u.is_superuser,
            is_active: u.is_active,
        }
    }
}

impl TryFrom<TaskRow> for Task {
    type Error = Error;

    fn try_from(t: TaskRow) -> Result<Task> {
        let state = TaskState::from_key(&t.state).ok_or_else(|| {
            Error::storage(
                format!("reading task {}", t.id),
                format!("unknown task state '{}'", t.state),
            )
        })?;
        Ok(Task {
            id: t.id,
            name: t.name,
            payload: t.payload,
            state,
            attempts: t.attempts,
            error: t.error,
            target: t.target,
        })
    }
}
