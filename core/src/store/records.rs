//! Every statement docmeta runs, written once, as typed record methods on [`Tx`].

use chrono::{DateTime, Utc};

use super::{Row, Tx};
use crate::error::{Error, Result};
use crate::events::{Event, EventObject, EventQuery};
use crate::model::*;

/// Microseconds since the Unix epoch: how times are stored.
pub fn to_micros(t: DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

/// The inverse of [`to_micros`].
pub fn from_micros(us: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(us).unwrap_or_default()
}

const METADATA_TYPE_COLUMNS: &str = "id, name, label, default_value, lookup, validation, validation_arguments, parser, parser_arguments";

fn metadata_type(r: &Row) -> Result<MetadataType> {
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
    })
}

fn document_type(r: &Row) -> Result<DocumentType> {
    Ok(DocumentType {
        id: DocumentTypeId(r.int(0)?),
        label: r.text(1)?,
    })
}

fn document(r: &Row) -> Result<Document> {
    Ok(Document {
        id: DocumentId(r.int(0)?),
        label: r.text(1)?,
        document_type_id: DocumentTypeId(r.int(2)?),
        created: from_micros(r.int(3)?),
    })
}

const FILE_COLUMNS: &str =
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

fn stored_file(r: &Row) -> Result<StoredFile> {
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

fn association(r: &Row) -> Result<DocumentTypeMetadataType> {
    Ok(DocumentTypeMetadataType {
        id: AssociationId(r.int(0)?),
        document_type_id: DocumentTypeId(r.int(1)?),
        metadata_type_id: MetadataTypeId(r.int(2)?),
        required: r.bool(3)?,
    })
}

fn document_metadata(r: &Row) -> Result<DocumentMetadata> {
    Ok(DocumentMetadata {
        id: DocumentMetadataId(r.int(0)?),
        document_id: DocumentId(r.int(1)?),
        metadata_type_id: MetadataTypeId(r.int(2)?),
        value: r.text(3)?,
    })
}

fn event(r: &Row) -> Result<Event> {
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
    })
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

fn user(r: &Row) -> Result<UserRow> {
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
}

fn task(r: &Row) -> Result<TaskRow> {
    Ok(TaskRow {
        id: TaskId(r.int(0)?),
        name: r.text(1)?,
        payload: r.text(2)?,
        state: r.text(3)?,
        attempts: r.int(4)?,
        error: r.text(5)?,
    })
}

/// A cabinet (a node of a tree of document folders).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cabinet {
    /// Identifier.
    pub id: CabinetId,
    /// Label.
    pub label: String,
    /// Parent cabinet, `None` for a root (level 0).
    pub parent_id: Option<CabinetId>,
}

fn cabinet(r: &Row) -> Result<Cabinet> {
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

fn id_list<T: From<i64>>(rows: Vec<i64>) -> Vec<T> {
    rows.into_iter().map(T::from).collect()
}

impl Tx<'_> {
    // ----- metadata types --------------------------------------------------------------------

    /// Inserts a metadata type.
    pub fn insert_metadata_type(&mut self, t: &MetadataTypeInput) -> Result<MetadataType> {
        let id = self.insert(
            "INSERT INTO metadata_types (name, label, default_value, lookup, validation, validation_arguments, parser, parser_arguments) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING id",
            &[(&t.name).into(), (&t.label).into(), (&t.default).into(), (&t.lookup).into(), (&t.validation).into(), (&t.validation_arguments).into(), (&t.parser).into(), (&t.parser_arguments).into()],
        )?;
        self.metadata_type(MetadataTypeId(id))?
            .ok_or_else(|| Error::not_found("metadata type"))
    }

    /// Updates every field of a metadata type.
    pub fn update_metadata_type(&mut self, t: &MetadataType) -> Result<()> {
        self.execute(
            "UPDATE metadata_types SET name = ?1, label = ?2, default_value = ?3, lookup = ?4, validation = ?5, validation_arguments = ?6, parser = ?7, parser_arguments = ?8 WHERE id = ?9",
            &[(&t.name).into(), (&t.label).into(), (&t.default).into(), (&t.lookup).into(), (&t.validation).into(), (&t.validation_arguments).into(), (&t.parser).into(), (&t.parser_arguments).into(), t.id.0.into()],
        )
        .map(drop)
    }

    /// Deletes a metadata type row (its values and associations must be gone).
    pub fn delete_metadata_type(&mut self, id: MetadataTypeId) -> Result<()> {
        self.execute("DELETE FROM metadata_types WHERE id = ?1", &[id.0.into()])
            .map(drop)
    }

    /// One metadata type.
    pub fn metadata_type(&mut self, id: MetadataTypeId) -> Result<Option<MetadataType>> {
        self.optional(
            &format!("SELECT {METADATA_TYPE_COLUMNS} FROM metadata_types WHERE id = ?1"),
            &[id.0.into()],
            metadata_type,
        )
    }

    /// One metadata type by name.
    pub fn metadata_type_by_name(&mut self, name: &str) -> Result<Option<MetadataType>> {
        self.optional(
            &format!("SELECT {METADATA_TYPE_COLUMNS} FROM metadata_types WHERE name = ?1"),
            &[name.into()],
            metadata_type,
        )
    }

    /// Every metadata type, by id.
    pub fn metadata_types(&mut self) -> Result<Vec<MetadataType>> {
        self.rows(
            &format!("SELECT {METADATA_TYPE_COLUMNS} FROM metadata_types ORDER BY id"),
            &[],
            metadata_type,
        )
    }

    // ----- document types --------------------------------------------------------------------

    /// Inserts a document type.
    pub fn insert_document_type(&mut self, label: &str) -> Result<DocumentType> {
        let id = self.insert(
            "INSERT INTO document_types (label) VALUES (?1) RETURNING id",
            &[label.into()],
        )?;
        Ok(DocumentType {
            id: DocumentTypeId(id),
            label: label.to_owned(),
        })
    }

    /// Renames a document type.
    pub fn update_document_type(&mut self, t: &DocumentType) -> Result<()> {
        self.execute(
            "UPDATE document_types SET label = ?1 WHERE id = ?2",
            &[(&t.label).into(), t.id.0.into()],
        )
        .map(drop)
    }

    /// Deletes a document type row.
    pub fn delete_document_type(&mut self, id: DocumentTypeId) -> Result<()> {
        self.execute("DELETE FROM document_types WHERE id = ?1", &[id.0.into()])
            .map(drop)
    }

    /// One document type.
    pub fn document_type(&mut self, id: DocumentTypeId) -> Result<Option<DocumentType>> {
        self.optional(
            "SELECT id, label FROM document_types WHERE id = ?1",
            &[id.0.into()],
            document_type,
        )
    }

    /// Every document type, by id.
    pub fn document_types(&mut self) -> Result<Vec<DocumentType>> {
        self.rows(
            "SELECT id, label FROM document_types ORDER BY id",
            &[],
            document_type,
        )
    }

    // ----- documents -------------------------------------------------------------------------

    /// Inserts a document.
    pub fn insert_document(
        &mut self,
        label: &str,
        document_type: DocumentTypeId,
        created: DateTime<Utc>,
    ) -> Result<Document> {
        let id = self.insert(
            "INSERT INTO documents (label, document_type_id, created) VALUES (?1, ?2, ?3) RETURNING id",
            &[label.into(), document_type.0.into(), to_micros(created).into()],
        )?;
        Ok(Document {
            id: DocumentId(id),
            label: label.to_owned(),
            document_type_id: document_type,
            created,
        })
    }

    /// Updates a document's label and type.
    pub fn update_document(&mut self, d: &Document) -> Result<()> {
        self.execute(
            "UPDATE documents SET label = ?1, document_type_id = ?2 WHERE id = ?3",
            &[
                (&d.label).into(),
                d.document_type_id.0.into(),
                d.id.0.into(),
            ],
        )
        .map(drop)
    }

    /// Records a stored document file (`file.id` is ignored: the new id is returned in the
    /// record).
    pub fn insert_document_file(
        &mut self,
        file: &DocumentFile,
        storage_name: &str,
        encrypted: bool,
    ) -> Result<DocumentFile> {
        let id = self.insert(
            "INSERT INTO document_files (document_id, filename, size, checksum, mimetype, created, storage_name, encrypted) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING id",
            &[
                file.document_id.0.into(),
                file.filename.as_str().into(),
                i64::try_from(file.size).unwrap_or(i64::MAX).into(),
                file.checksum.as_str().into(),
                file.mimetype.as_str().into(),
                to_micros(file.created).into(),
                storage_name.into(),
                i64::from(encrypted).into(),
            ],
        )?;
        Ok(DocumentFile {
            id: DocumentFileId(id),
            ..file.clone()
        })
    }

    /// One document file with its storage name.
    pub fn document_file(&mut self, id: DocumentFileId) -> Result<Option<StoredFile>> {
        self.optional(
            &format!("SELECT {FILE_COLUMNS} FROM document_files WHERE id = ?1"),
            &[id.0.into()],
            stored_file,
        )
    }

    /// The files of a document, oldest first.
    pub fn document_files(&mut self, document: DocumentId) -> Result<Vec<StoredFile>> {
        self.rows(
            &format!(
                "SELECT {FILE_COLUMNS} FROM document_files WHERE document_id = ?1 ORDER BY id"
            ),
            &[document.0.into()],
            stored_file,
        )
    }

    /// Files after `after` by id, at most `limit`; only those whose storage is (or is not)
    /// encrypted when `encrypted` is given.
    pub fn all_document_files(
        &mut self,
        after: DocumentFileId,
        limit: u32,
        encrypted: Option<bool>,
    ) -> Result<Vec<StoredFile>> {
        match encrypted {
            Some(e) => self.rows(
                &format!("SELECT {FILE_COLUMNS} FROM document_files WHERE id > ?1 AND encrypted = ?2 ORDER BY id LIMIT ?3"),
                &[after.0.into(), i64::from(e).into(), i64::from(limit).into()],
                stored_file,
            ),
            None => self.rows(
                &format!("SELECT {FILE_COLUMNS} FROM document_files WHERE id > ?1 ORDER BY id LIMIT ?2"),
                &[after.0.into(), i64::from(limit).into()],
                stored_file,
            ),
        }
    }

    /// Points a file record at new stored bytes (a storage conversion).
    pub fn set_file_storage(
        &mut self,
        id: DocumentFileId,
        storage_name: &str,
        encrypted: bool,
    ) -> Result<()> {
        self.execute(
            "UPDATE document_files SET storage_name = ?2, encrypted = ?3 WHERE id = ?1",
            &[
                id.0.into(),
                storage_name.into(),
                i64::from(encrypted).into(),
            ],
        )
        .map(drop)
    }

    /// Deletes a file record.
    pub fn delete_document_file(&mut self, id: DocumentFileId) -> Result<()> {
        self.execute("DELETE FROM document_files WHERE id = ?1", &[id.0.into()])
            .map(drop)
    }

    /// Deletes a document with its metadata and cabinet memberships (its files must be gone).
    pub fn delete_document(&mut self, id: DocumentId) -> Result<()> {
        self.execute(
            "DELETE FROM document_metadata WHERE document_id = ?1",
            &[id.0.into()],
        )?;
        self.execute(
            "DELETE FROM cabinet_documents WHERE document_id = ?1",
            &[id.0.into()],
        )?;
        self.execute("DELETE FROM documents WHERE id = ?1", &[id.0.into()])
            .map(drop)
    }

    /// One document.
    pub fn document(&mut self, id: DocumentId) -> Result<Option<Document>> {
        self.optional(
            "SELECT id, label, document_type_id, created FROM documents WHERE id = ?1",
            &[id.0.into()],
            document,
        )
    }

    /// Documents by id, optionally of one type, after `after`, at most `limit`.
    pub fn documents(
        &mut self,
        of_type: Option<DocumentTypeId>,
        after: DocumentId,
        limit: u32,
    ) -> Result<Vec<Document>> {
        match of_type {
            Some(t) => self.rows(
                "SELECT id, label, document_type_id, created FROM documents WHERE document_type_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3",
                &[t.0.into(), after.0.into(), i64::from(limit).into()],
                document,
            ),
            None => self.rows(
                "SELECT id, label, document_type_id, created FROM documents WHERE id > ?1 ORDER BY id LIMIT ?2",
                &[after.0.into(), i64::from(limit).into()],
                document,
            ),
        }
    }

    /// The ids of every document, optionally of one type, by id.
    pub fn document_ids(&mut self, of_type: Option<DocumentTypeId>) -> Result<Vec<DocumentId>> {
        match of_type {
            Some(t) => self.rows(
                "SELECT id FROM documents WHERE document_type_id = ?1 ORDER BY id",
                &[t.0.into()],
                |r| r.int(0).map(DocumentId),
            ),
            None => self.rows("SELECT id FROM documents ORDER BY id", &[], |r| {
                r.int(0).map(DocumentId)
            }),
        }
    }

    /// How many documents a type has.
    pub fn count_documents_of_type(&mut self, t: DocumentTypeId) -> Result<i64> {
        self.optional(
            "SELECT count(*) FROM documents WHERE document_type_id = ?1",
            &[t.0.into()],
            |r| r.int(0),
        )
        .map(Option::unwrap_or_default)
    }

    // ----- associations ----------------------------------------------------------------------

    /// Inserts an association.
    pub fn insert_association(
        &mut self,
        dt: DocumentTypeId,
        mt: MetadataTypeId,
        required: bool,
    ) -> Result<DocumentTypeMetadataType> {
        let id = self
            .insert(
                "INSERT INTO document_type_metadata_types (document_type_id, metadata_type_id, required) VALUES (?1, ?2, ?3) RETURNING id",
                &[dt.0.into(), mt.0.into(), required.into()],
            )
            .map_err(|e| match e {
                Error::Conflict { .. } => Error::conflict("metadata_type_id", "This metadata type is already associated with the document type."),
                e => e,
            })?;
        Ok(DocumentTypeMetadataType {
            id: AssociationId(id),
            document_type_id: dt,
            metadata_type_id: mt,
            required,
        })
    }

    /// Updates an association's `required` flag.
    pub fn update_association(&mut self, a: &DocumentTypeMetadataType) -> Result<()> {
        self.execute(
            "UPDATE document_type_metadata_types SET required = ?1 WHERE id = ?2",
            &[a.required.into(), a.id.0.into()],
        )
        .map(drop)
    }

    /// Deletes an association.
    pub fn delete_association(&mut self, id: AssociationId) -> Result<()> {
        self.execute(
            "DELETE FROM document_type_metadata_types WHERE id = ?1",
            &[id.0.into()],
        )
        .map(drop)
    }

    /// One association.
    pub fn association(&mut self, id: AssociationId) -> Result<Option<DocumentTypeMetadataType>> {
        self.optional(
            "SELECT id, document_type_id, metadata_type_id, required FROM document_type_metadata_types WHERE id = ?1",
            &[id.0.into()],
            association,
        )
    }

    /// The association of a (document type, metadata type) pair.
    pub fn association_of(
        &mut self,
        dt: DocumentTypeId,
        mt: MetadataTypeId,
    ) -> Result<Option<DocumentTypeMetadataType>> {
        self.optional(
            "SELECT id, document_type_id, metadata_type_id, required FROM document_type_metadata_types WHERE document_type_id = ?1 AND metadata_type_id = ?2",
            &[dt.0.into(), mt.0.into()],
            association,
        )
    }

    /// The associations of a document type.
    pub fn associations_of_document_type(
        &mut self,
        dt: DocumentTypeId,
    ) -> Result<Vec<DocumentTypeMetadataType>> {
        self.rows(
            "SELECT id, document_type_id, metadata_type_id, required FROM document_type_metadata_types WHERE document_type_id = ?1 ORDER BY id",
            &[dt.0.into()],
            association,
        )
    }

    /// The associations of a metadata type.
    pub fn associations_of_metadata_type(
        &mut self,
        mt: MetadataTypeId,
    ) -> Result<Vec<DocumentTypeMetadataType>> {
        self.rows(
            "SELECT id, document_type_id, metadata_type_id, required FROM document_type_metadata_types WHERE metadata_type_id = ?1 ORDER BY id",
            &[mt.0.into()],
            association,
        )
    }

    // ----- document metadata -----------------------------------------------------------------

    /// Inserts a value; a second value of the same type on the document is a conflict.
    pub fn insert_document_metadata(
        &mut self,
        doc: DocumentId,
        mt: MetadataTypeId,
        value: &str,
    ) -> Result<DocumentMetadata> {
        let id = self
            .insert(
                "INSERT INTO document_metadata (document_id, metadata_type_id, value) VALUES (?1, ?2, ?3) RETURNING id",
                &[doc.0.into(), mt.0.into(), value.into()],
            )
            .map_err(|e| match e {
                Error::Conflict { .. } => Error::conflict("metadata_type_id", "The document already has a value of this metadata type."),
                e => e,
            })?;
        Ok(DocumentMetadata {
            id: DocumentMetadataId(id),
            document_id: doc,
            metadata_type_id: mt,
            value: value.to_owned(),
        })
    }

    /// Inserts a value unless the document already has one of the type; returns the new record.
    pub fn insert_document_metadata_if_absent(
        &mut self,
        doc: DocumentId,
        mt: MetadataTypeId,
        value: &str,
    ) -> Result<Option<DocumentMetadata>> {
        let id = self.optional(
            "INSERT INTO document_metadata (document_id, metadata_type_id, value) VALUES (?1, ?2, ?3) ON CONFLICT (document_id, metadata_type_id) DO NOTHING RETURNING id",
            &[doc.0.into(), mt.0.into(), value.into()],
            |r| r.int(0),
        )?;
        Ok(id.map(|id| DocumentMetadata {
            id: DocumentMetadataId(id),
            document_id: doc,
            metadata_type_id: mt,
            value: value.to_owned(),
        }))
    }

    /// Sets a stored value.
    pub fn update_document_metadata(&mut self, id: DocumentMetadataId, value: &str) -> Result<()> {
        self.execute(
            "UPDATE document_metadata SET value = ?1 WHERE id = ?2",
            &[value.into(), id.0.into()],
        )
        .map(drop)
    }

    /// Deletes a value.
    pub fn delete_document_metadata(&mut self, id: DocumentMetadataId) -> Result<()> {
        self.execute(
            "DELETE FROM document_metadata WHERE id = ?1",
            &[id.0.into()],
        )
        .map(drop)
    }

    /// One value.
    pub fn document_metadata(
        &mut self,
        id: DocumentMetadataId,
    ) -> Result<Option<DocumentMetadata>> {
        self.optional(
            "SELECT id, document_id, metadata_type_id, value FROM document_metadata WHERE id = ?1",
            &[id.0.into()],
            document_metadata,
        )
    }

    /// The values of a document, by id.
    pub fn metadata_of_document(&mut self, doc: DocumentId) -> Result<Vec<DocumentMetadata>> {
        self.rows(
            "SELECT id, document_id, metadata_type_id, value FROM document_metadata WHERE document_id = ?1 ORDER BY id",
            &[doc.0.into()],
            document_metadata,
        )
    }

    /// The values of a document with their metadata types, by value id.
    pub fn metadata_with_types_of_document(
        &mut self,
        doc: DocumentId,
    ) -> Result<Vec<(DocumentMetadata, MetadataType)>> {
        self.rows(
            "SELECT m.id, m.document_id, m.metadata_type_id, m.value, t.id, t.name, t.label, t.default_value, t.lookup, t.validation, t.validation_arguments, t.parser, t.parser_arguments FROM document_metadata m JOIN metadata_types t ON t.id = m.metadata_type_id WHERE m.document_id = ?1 ORDER BY m.id",
            &[doc.0.into()],
            |r| {
                let t = MetadataType {
                    id: MetadataTypeId(r.int(4)?),
                    name: r.text(5)?,
                    label: r.text(6)?,
                    default: r.text(7)?,
                    lookup: r.text(8)?,
                    validation: r.text(9)?,
                    validation_arguments: r.text(10)?,
                    parser: r.text(11)?,
                    parser_arguments: r.text(12)?,
                };
                Ok((document_metadata(r)?, t))
            },
        )
    }

    /// Up to `limit` values of type `mt`, optionally only on documents of type `dt`.
    pub fn metadata_of_type(
        &mut self,
        mt: MetadataTypeId,
        dt: Option<DocumentTypeId>,
        limit: u32,
    ) -> Result<Vec<DocumentMetadata>> {
        match dt {
            Some(dt) => self.rows(
                "SELECT m.id, m.document_id, m.metadata_type_id, m.value FROM document_metadata m JOIN documents d ON d.id = m.document_id WHERE m.metadata_type_id = ?1 AND d.document_type_id = ?2 ORDER BY m.id LIMIT ?3",
                &[mt.0.into(), dt.0.into(), i64::from(limit).into()],
                document_metadata,
            ),
            None => self.rows(
                "SELECT id, document_id, metadata_type_id, value FROM document_metadata WHERE metadata_type_id = ?1 ORDER BY id LIMIT ?2",
                &[mt.0.into(), i64::from(limit).into()],
                document_metadata,
            ),
        }
    }

    /// Up to `limit` documents of type `dt` lacking a value of type `mt`.
    pub fn documents_missing_metadata(
        &mut self,
        dt: DocumentTypeId,
        mt: MetadataTypeId,
        limit: u32,
    ) -> Result<Vec<Document>> {
        self.rows(
            "SELECT d.id, d.label, d.document_type_id, d.created FROM documents d WHERE d.document_type_id = ?1 AND NOT EXISTS (SELECT 1 FROM document_metadata m WHERE m.document_id = d.id AND m.metadata_type_id = ?2) ORDER BY d.id LIMIT ?3",
            &[dt.0.into(), mt.0.into(), i64::from(limit).into()],
            document,
        )
    }

    // ----- events ----------------------------------------------------------------------------

    /// Appends an event; its id and time are assigned here.
    pub fn append_event(
        &mut self,
        name: &str,
        actor: Option<UserId>,
        target: &EventObject,
        action: Option<&EventObject>,
    ) -> Result<Event> {
        let timestamp = Utc::now();
        let id = self.insert(
            "INSERT INTO events (timestamp, name, actor_id, target_kind, target_id, target_label, action_kind, action_id, action_label) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING id",
            &[
                to_micros(timestamp).into(),
                name.into(),
                actor.map(|a| a.0).into(),
                (&target.kind).into(),
                target.id.into(),
                (&target.label).into(),
                action.map(|a| a.kind.as_str()).into(),
                action.map(|a| a.id).into(),
                action.map(|a| a.label.as_str()).into(),
            ],
        )?;
        Ok(Event {
            id: EventId(id),
            timestamp: from_micros(to_micros(timestamp)),
            name: name.to_owned(),
            actor,
            target: target.clone(),
            action_object: action.cloned(),
        })
    }

    /// Events matching `q`.
    pub fn events(&mut self, q: &EventQuery) -> Result<Vec<Event>> {
        let mut sql = String::from(
            "SELECT id, timestamp, name, actor_id, target_kind, target_id, target_label, action_kind, action_id, action_label FROM events WHERE id > ?1 AND id < ?2",
        );
        let before = q.before.map_or(i64::MAX, |b| b.0);
        let after = q.after.map_or(0, |a| a.0);
        let limit = i64::from(q.limit.unwrap_or(100));
        let (kind, id) = q.object.clone().unwrap_or_default();
        if q.object.is_some() {
            sql.push_str(" AND ((target_kind = ?3 AND target_id = ?4) OR (action_kind = ?3 AND action_id = ?4))");
        } else {
            sql.push_str(" AND ?3 = ?3 AND ?4 = ?4");
        }
        sql.push_str(if q.oldest_first {
            " ORDER BY id ASC"
        } else {
            " ORDER BY id DESC"
        });
        sql.push_str(" LIMIT ?5");
        self.rows(
            &sql,
            &[
                after.into(),
                before.into(),
                kind.as_str().into(),
                id.into(),
                limit.into(),
            ],
            event,
        )
    }

    // ----- tasks -----------------------------------------------------------------------------

    /// Enqueues a task, to run now.
    pub fn enqueue_task(&mut self, name: &str, payload: &str) -> Result<TaskId> {
        self.enqueue_task_after(name, payload, chrono::Duration::zero())
    }

    /// Enqueues a task that workers leave alone for `delay` (its enqueuer runs it at once;
    /// workers take it only if that did not happen, e.g. after a crash).
    pub fn enqueue_task_after(
        &mut self,
        name: &str,
        payload: &str,
        delay: chrono::Duration,
    ) -> Result<TaskId> {
        let now = Utc::now();
        self.insert(
            "INSERT INTO tasks (name, payload, state, attempts, error, run_after, created, updated) VALUES (?1, ?2, 'pending', 0, '', ?3, ?4, ?4) RETURNING id",
            &[
                name.into(),
                payload.into(),
                to_micros(now + delay).into(),
                to_micros(now).into(),
            ],
        )
        .map(TaskId)
    }

    /// Claims the oldest runnable task: marks it running and counts the attempt.
    pub fn claim_task(&mut self, now: DateTime<Utc>) -> Result<Option<TaskRow>> {
        let now = to_micros(now);
        // On PostgreSQL, a task another worker is claiming is skipped, never waited for or
        // taken twice.
        let sql = match self.dialect() {
            super::Dialect::Postgres => {
                "SELECT id, name, payload, state, attempts, error FROM tasks WHERE state = 'pending' AND run_after <= ?1 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED"
            }
            super::Dialect::Sqlite => {
                "SELECT id, name, payload, state, attempts, error FROM tasks WHERE state = 'pending' AND run_after <= ?1 ORDER BY id LIMIT 1"
            }
        };
        let Some(t) = self.optional(sql, &[now.into()], task)? else {
            return Ok(None);
        };
        self.execute("UPDATE tasks SET state = 'running', attempts = attempts + 1, updated = ?1 WHERE id = ?2", &[now.into(), t.id.0.into()])?;
        Ok(Some(TaskRow {
            state: "running".into(),
            attempts: t.attempts + 1,
            ..t
        }))
    }

    /// Claims the task `id` if it is pending (a runner that runs it right after the commit that
    /// enqueued it); `None` when another runner has it.
    pub fn claim_task_by_id(&mut self, id: TaskId, now: DateTime<Utc>) -> Result<Option<TaskRow>> {
        let n = self.execute(
            "UPDATE tasks SET state = 'running', attempts = attempts + 1, updated = ?1 WHERE id = ?2 AND state = 'pending'",
            &[to_micros(now).into(), id.0.into()],
        )?;
        if n == 0 {
            return Ok(None);
        }
        self.task(id)
    }

    /// One task.
    pub fn task(&mut self, id: TaskId) -> Result<Option<TaskRow>> {
        self.optional(
            "SELECT id, name, payload, state, attempts, error FROM tasks WHERE id = ?1",
            &[id.0.into()],
            task,
        )
    }

    /// Sets a task's state, error and next run time.
    pub fn set_task_state(
        &mut self,
        id: TaskId,
        state: &str,
        error: &str,
        run_after: DateTime<Utc>,
    ) -> Result<()> {
        self.execute(
            "UPDATE tasks SET state = ?1, error = ?2, run_after = ?3, updated = ?4 WHERE id = ?5",
            &[
                state.into(),
                error.into(),
                to_micros(run_after).into(),
                to_micros(Utc::now()).into(),
                id.0.into(),
            ],
        )
        .map(drop)
    }

    /// Puts tasks left `running` by a crashed process back to `pending`.
    pub fn requeue_running_tasks(&mut self) -> Result<u64> {
        self.execute(
            "UPDATE tasks SET state = 'pending' WHERE state = 'running'",
            &[],
        )
    }

    /// Tasks not done (pending, running, failed), oldest first.
    pub fn open_tasks(&mut self, limit: u32) -> Result<Vec<TaskRow>> {
        self.rows(
            "SELECT id, name, payload, state, attempts, error FROM tasks WHERE state <> 'done' ORDER BY id LIMIT ?1",
            &[i64::from(limit).into()],
            task,
        )
    }

    /// Removes finished tasks.
    pub fn delete_done_tasks(&mut self) -> Result<u64> {
        self.execute("DELETE FROM tasks WHERE state = 'done'", &[])
    }

    // ----- users, groups, roles --------------------------------------------------------------

    /// Inserts a user.
    pub fn insert_user(
        &mut self,
        username: &str,
        password_hash: &str,
        superuser: bool,
    ) -> Result<UserRow> {
        let id = self.insert(
            "INSERT INTO users (username, password_hash, is_superuser, is_active, created) VALUES (?1, ?2, ?3, 1, ?4) RETURNING id",
            &[username.into(), password_hash.into(), superuser.into(), to_micros(Utc::now()).into()],
        )?;
        Ok(UserRow {
            id: UserId(id),
            username: username.to_owned(),
            password_hash: password_hash.to_owned(),
            is_superuser: superuser,
            is_active: true,
        })
    }

    /// Updates a user.
    pub fn update_user(&mut self, u: &UserRow) -> Result<()> {
        self.execute(
            "UPDATE users SET username = ?1, password_hash = ?2, is_superuser = ?3, is_active = ?4 WHERE id = ?5",
            &[(&u.username).into(), (&u.password_hash).into(), u.is_superuser.into(), u.is_active.into(), u.id.0.into()],
        )
        .map(drop)
    }

    /// Deletes a user and their memberships.
    pub fn delete_user(&mut self, id: UserId) -> Result<()> {
        self.execute("DELETE FROM group_users WHERE user_id = ?1", &[id.0.into()])?;
        self.execute("DELETE FROM users WHERE id = ?1", &[id.0.into()])
            .map(drop)
    }

    /// One user.
    pub fn user(&mut self, id: UserId) -> Result<Option<UserRow>> {
        self.optional(
            "SELECT id, username, password_hash, is_superuser, is_active FROM users WHERE id = ?1",
            &[id.0.into()],
            user,
        )
    }

    /// One user by username.
    pub fn user_by_username(&mut self, username: &str) -> Result<Option<UserRow>> {
        self.optional("SELECT id, username, password_hash, is_superuser, is_active FROM users WHERE username = ?1", &[username.into()], user)
    }

    /// Every user, by id.
    pub fn users(&mut self) -> Result<Vec<UserRow>> {
        self.rows(
            "SELECT id, username, password_hash, is_superuser, is_active FROM users ORDER BY id",
            &[],
            user,
        )
    }

    /// Inserts a group.
    pub fn insert_group(&mut self, name: &str) -> Result<GroupId> {
        self.insert(
            "INSERT INTO groups (name) VALUES (?1) RETURNING id",
            &[name.into()],
        )
        .map(GroupId)
    }

    /// Renames a group.
    pub fn update_group(&mut self, id: GroupId, name: &str) -> Result<()> {
        self.execute(
            "UPDATE groups SET name = ?1 WHERE id = ?2",
            &[name.into(), id.0.into()],
        )
        .map(drop)
    }

    /// Deletes a group, its memberships and role assignments.
    pub fn delete_group(&mut self, id: GroupId) -> Result<()> {
        self.execute(
            "DELETE FROM group_users WHERE group_id = ?1",
            &[id.0.into()],
        )?;
        self.execute(
            "DELETE FROM role_groups WHERE group_id = ?1",
            &[id.0.into()],
        )?;
        self.execute("DELETE FROM groups WHERE id = ?1", &[id.0.into()])
            .map(drop)
    }

    /// Every group `(id, name)`, by id.
    pub fn groups(&mut self) -> Result<Vec<(GroupId, String)>> {
        self.rows("SELECT id, name FROM groups ORDER BY id", &[], |r| {
            Ok((GroupId(r.int(0)?), r.text(1)?))
        })
    }

    /// Adds (`true`) or removes a user from a group; returns whether anything changed.
    pub fn set_group_member(&mut self, group: GroupId, user: UserId, member: bool) -> Result<bool> {
        let n = if member {
            self.execute("INSERT INTO group_users (group_id, user_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING", &[group.0.into(), user.0.into()])?
        } else {
            self.execute(
                "DELETE FROM group_users WHERE group_id = ?1 AND user_id = ?2",
                &[group.0.into(), user.0.into()],
            )?
        };
        Ok(n > 0)
    }

    /// The members of a group.
    pub fn group_members(&mut self, group: GroupId) -> Result<Vec<UserId>> {
        self.rows(
            "SELECT user_id FROM group_users WHERE group_id = ?1 ORDER BY user_id",
            &[group.0.into()],
            |r| r.int(0),
        )
        .map(id_list)
    }

    /// Inserts a role.
    pub fn insert_role(&mut self, label: &str) -> Result<RoleId> {
        self.insert(
            "INSERT INTO roles (label) VALUES (?1) RETURNING id",
            &[label.into()],
        )
        .map(RoleId)
    }

    /// Renames a role.
    pub fn update_role(&mut self, id: RoleId, label: &str) -> Result<()> {
        self.execute(
            "UPDATE roles SET label = ?1 WHERE id = ?2",
            &[label.into(), id.0.into()],
        )
        .map(drop)
    }

    /// Deletes a role with its assignments, global permissions and ACLs.
    pub fn delete_role(&mut self, id: RoleId) -> Result<()> {
        self.execute("DELETE FROM role_groups WHERE role_id = ?1", &[id.0.into()])?;
        self.execute(
            "DELETE FROM role_permissions WHERE role_id = ?1",
            &[id.0.into()],
        )?;
        self.execute(
            "DELETE FROM acl_permissions WHERE acl_id IN (SELECT id FROM acls WHERE role_id = ?1)",
            &[id.0.into()],
        )?;
        self.execute("DELETE FROM acls WHERE role_id = ?1", &[id.0.into()])?;
        self.execute("DELETE FROM roles WHERE id = ?1", &[id.0.into()])
            .map(drop)
    }

    /// Every role `(id, label)`, by id.
    pub fn roles(&mut self) -> Result<Vec<(RoleId, String)>> {
        self.rows("SELECT id, label FROM roles ORDER BY id", &[], |r| {
            Ok((RoleId(r.int(0)?), r.text(1)?))
        })
    }

    /// Assigns (`true`) or removes a role from a group; returns whether anything changed.
    pub fn set_role_group(&mut self, role: RoleId, group: GroupId, assigned: bool) -> Result<bool> {
        let n = if assigned {
            self.execute("INSERT INTO role_groups (role_id, group_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING", &[role.0.into(), group.0.into()])?
        } else {
            self.execute(
                "DELETE FROM role_groups WHERE role_id = ?1 AND group_id = ?2",
                &[role.0.into(), group.0.into()],
            )?
        };
        Ok(n > 0)
    }

    /// The groups a role is assigned to.
    pub fn groups_of_role(&mut self, role: RoleId) -> Result<Vec<GroupId>> {
        self.rows(
            "SELECT group_id FROM role_groups WHERE role_id = ?1 ORDER BY group_id",
            &[role.0.into()],
            |r| r.int(0),
        )
        .map(id_list)
    }

    /// The roles assigned to a group.
    pub fn roles_of_group(&mut self, group: GroupId) -> Result<Vec<RoleId>> {
        self.rows(
            "SELECT role_id FROM role_groups WHERE group_id = ?1 ORDER BY role_id",
            &[group.0.into()],
            |r| r.int(0),
        )
        .map(id_list)
    }

    /// Grants (`true`) or revokes a global permission of a role; returns whether anything changed.
    pub fn set_role_permission(
        &mut self,
        role: RoleId,
        permission: &str,
        granted: bool,
    ) -> Result<bool> {
        let n = if granted {
            self.execute("INSERT INTO role_permissions (role_id, permission) VALUES (?1, ?2) ON CONFLICT DO NOTHING", &[role.0.into(), permission.into()])?
        } else {
            self.execute(
                "DELETE FROM role_permissions WHERE role_id = ?1 AND permission = ?2",
                &[role.0.into(), permission.into()],
            )?
        };
        Ok(n > 0)
    }

    /// The global permission keys of a role.
    pub fn role_permissions(&mut self, role: RoleId) -> Result<Vec<String>> {
        self.rows(
            "SELECT permission FROM role_permissions WHERE role_id = ?1 ORDER BY permission",
            &[role.0.into()],
            |r| r.text(0),
        )
    }

    // ----- ACLs ------------------------------------------------------------------------------

    /// The ACL of `role` on an object, if any.
    pub fn acl_for(&mut self, kind: &str, object_id: i64, role: RoleId) -> Result<Option<AclRow>> {
        let id = self.optional(
            "SELECT id FROM acls WHERE object_kind = ?1 AND object_id = ?2 AND role_id = ?3",
            &[kind.into(), object_id.into(), role.0.into()],
            |r| r.int(0),
        )?;
        match id {
            Some(id) => self.acl(AclId(id)),
            None => Ok(None),
        }
    }

    /// One ACL with its permissions.
    pub fn acl(&mut self, id: AclId) -> Result<Option<AclRow>> {
        let Some(mut acl) = self.optional(
            "SELECT id, object_kind, object_id, role_id FROM acls WHERE id = ?1",
            &[id.0.into()],
            |r| {
                Ok(AclRow {
                    id: AclId(r.int(0)?),
                    object_kind: r.text(1)?,
                    object_id: r.int(2)?,
                    role_id: RoleId(r.int(3)?),
                    permissions: Vec::new(),
                })
            },
        )?
        else {
            return Ok(None);
        };
        acl.permissions = self.rows(
            "SELECT permission FROM acl_permissions WHERE acl_id = ?1 ORDER BY permission",
            &[id.0.into()],
            |r| r.text(0),
        )?;
        Ok(Some(acl))
    }

    /// The ACLs of an object.
    pub fn acls_of(&mut self, kind: &str, object_id: i64) -> Result<Vec<AclRow>> {
        let ids = self.rows(
            "SELECT id FROM acls WHERE object_kind = ?1 AND object_id = ?2 ORDER BY id",
            &[kind.into(), object_id.into()],
            |r| r.int(0),
        )?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            out.extend(self.acl(AclId(id))?);
        }
        Ok(out)
    }

    /// The ACLs held by a role, on every object.
    pub fn acls_of_role(&mut self, role: RoleId) -> Result<Vec<AclRow>> {
        let ids = self.rows(
            "SELECT id FROM acls WHERE role_id = ?1 ORDER BY id",
            &[role.0.into()],
            |r| r.int(0),
        )?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            out.extend(self.acl(AclId(id))?);
        }
        Ok(out)
    }

    /// Creates an empty ACL.
    pub fn insert_acl(&mut self, kind: &str, object_id: i64, role: RoleId) -> Result<AclId> {
        self.insert(
            "INSERT INTO acls (object_kind, object_id, role_id) VALUES (?1, ?2, ?3) RETURNING id",
            &[kind.into(), object_id.into(), role.0.into()],
        )
        .map(AclId)
        .map_err(|e| match e {
            Error::Conflict { .. } => {
                Error::conflict("role_id", "This role already has an ACL on the object.")
            }
            e => e,
        })
    }

    /// Adds or removes a permission of an ACL; returns whether anything changed.
    pub fn set_acl_permission(
        &mut self,
        acl: AclId,
        permission: &str,
        granted: bool,
    ) -> Result<bool> {
        let n = if granted {
            self.execute("INSERT INTO acl_permissions (acl_id, permission) VALUES (?1, ?2) ON CONFLICT DO NOTHING", &[acl.0.into(), permission.into()])?
        } else {
            self.execute(
                "DELETE FROM acl_permissions WHERE acl_id = ?1 AND permission = ?2",
                &[acl.0.into(), permission.into()],
            )?
        };
        Ok(n > 0)
    }

    /// Deletes an ACL.
    pub fn delete_acl(&mut self, acl: AclId) -> Result<()> {
        self.execute(
            "DELETE FROM acl_permissions WHERE acl_id = ?1",
            &[acl.0.into()],
        )?;
        self.execute("DELETE FROM acls WHERE id = ?1", &[acl.0.into()])
            .map(drop)
    }

    /// Deletes every ACL of an object (the object is being deleted); returns their ids.
    pub fn delete_acls_of(&mut self, kind: &str, object_id: i64) -> Result<Vec<AclId>> {
        let ids = self.rows(
            "SELECT id FROM acls WHERE object_kind = ?1 AND object_id = ?2",
            &[kind.into(), object_id.into()],
            |r| r.int(0),
        )?;
        for id in &ids {
            self.delete_acl(AclId(*id))?;
        }
        Ok(id_list(ids))
    }

    // ----- cabinets --------------------------------------------------------------------------

    /// Inserts a cabinet.
    pub fn insert_cabinet(&mut self, label: &str, parent: Option<CabinetId>) -> Result<Cabinet> {
        let id = self.insert(
            "INSERT INTO cabinets (label, parent_id) VALUES (?1, ?2) RETURNING id",
            &[label.into(), parent.map(|p| p.0).into()],
        )?;
        Ok(Cabinet {
            id: CabinetId(id),
            label: label.to_owned(),
            parent_id: parent,
        })
    }

    /// Updates a cabinet.
    pub fn update_cabinet(&mut self, c: &Cabinet) -> Result<()> {
        self.execute(
            "UPDATE cabinets SET label = ?1, parent_id = ?2 WHERE id = ?3",
            &[
                (&c.label).into(),
                c.parent_id.map(|p| p.0).into(),
                c.id.0.into(),
            ],
        )
        .map(drop)
    }

    /// Deletes a cabinet row and its document links (not the documents).
    pub fn delete_cabinet(&mut self, id: CabinetId) -> Result<()> {
        self.execute(
            "DELETE FROM cabinet_documents WHERE cabinet_id = ?1",
            &[id.0.into()],
        )?;
        self.execute("DELETE FROM cabinets WHERE id = ?1", &[id.0.into()])
            .map(drop)
    }

    /// One cabinet.
    pub fn cabinet(&mut self, id: CabinetId) -> Result<Option<Cabinet>> {
        self.optional(
            "SELECT id, label, parent_id FROM cabinets WHERE id = ?1",
            &[id.0.into()],
            cabinet,
        )
    }

    /// Every cabinet, by id.
    pub fn cabinets(&mut self) -> Result<Vec<Cabinet>> {
        self.rows(
            "SELECT id, label, parent_id FROM cabinets ORDER BY id",
            &[],
            cabinet,
        )
    }

    /// The direct children of a cabinet.
    pub fn child_cabinets(&mut self, parent: CabinetId) -> Result<Vec<Cabinet>> {
        self.rows(
            "SELECT id, label, parent_id FROM cabinets WHERE parent_id = ?1 ORDER BY id",
            &[parent.0.into()],
            cabinet,
        )
    }

    /// Adds or removes a document from a cabinet; returns whether anything changed.
    pub fn set_cabinet_document(
        &mut self,
        c: CabinetId,
        d: DocumentId,
        member: bool,
    ) -> Result<bool> {
        let n = if member {
            self.execute("INSERT INTO cabinet_documents (cabinet_id, document_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING", &[c.0.into(), d.0.into()])?
        } else {
            self.execute(
                "DELETE FROM cabinet_documents WHERE cabinet_id = ?1 AND document_id = ?2",
                &[c.0.into(), d.0.into()],
            )?
        };
        Ok(n > 0)
    }

    /// The documents of a cabinet.
    pub fn cabinet_documents(&mut self, c: CabinetId) -> Result<Vec<DocumentId>> {
        self.rows(
            "SELECT document_id FROM cabinet_documents WHERE cabinet_id = ?1 ORDER BY document_id",
            &[c.0.into()],
            |r| r.int(0),
        )
        .map(id_list)
    }

    // ----- application object links ----------------------------------------------------------

    /// Replaces the parents an application object inherits ACLs from.
    pub fn set_object_parents(
        &mut self,
        kind: &str,
        id: i64,
        parents: &[(String, i64)],
    ) -> Result<()> {
        self.execute(
            "DELETE FROM object_parents WHERE object_kind = ?1 AND object_id = ?2",
            &[kind.into(), id.into()],
        )?;
        for (pk, pid) in parents {
            self.execute(
                "INSERT INTO object_parents (object_kind, object_id, parent_kind, parent_id) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
                &[kind.into(), id.into(), pk.as_str().into(), (*pid).into()],
            )?;
        }
        Ok(())
    }

    // ----- settings --------------------------------------------------------------------------

    /// A stored setting.
    pub fn setting(&mut self, key: &str) -> Result<Option<String>> {
        self.optional(
            "SELECT value FROM settings WHERE key = ?1",
            &[key.into()],
            |r| r.text(0),
        )
    }

    /// Stores a setting.
    pub fn set_setting(&mut self, key: &str, value: &str) -> Result<()> {
        self.execute(
            "INSERT INTO settings (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[key.into(), value.into()],
        )
        .map(drop)
    }
}
