//! Statements of metadata types, document types, their associations and documents' metadata values.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use super::Tx;
use super::records::*;
use crate::error::{Error, Result};
use crate::model::*;

impl Tx<'_> {
    // ----- metadata types ---------------------------------------------------------------

    /// Inserts a metadata type.
    pub fn insert_metadata_type(&mut self, t: &MetadataTypeInput) -> Result<MetadataType> {
        let id = self.insert(
            "INSERT INTO metadata_types (name, label, default_value, lookup, validation, \
                 validation_arguments, parser, parser_arguments, value_type) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) \
             RETURNING id",
            &[
                (&t.name).into(),
                (&t.label).into(),
                (&t.default).into(),
                (&t.lookup).into(),
                (&t.validation).into(),
                (&t.validation_arguments).into(),
                (&t.parser).into(),
                (&t.parser_arguments).into(),
                t.value_type.as_str().into(),
            ],
        )?;
        self.metadata_type(MetadataTypeId(id))?
            .ok_or_else(|| Error::not_found("metadata type"))
    }

    /// Updates every field of a metadata type.
    pub fn update_metadata_type(&mut self, t: &MetadataType) -> Result<()> {
        self.execute(
            "UPDATE metadata_types SET name = ?1, label = ?2, default_value = ?3, lookup = ?4, \
                 validation = ?5, validation_arguments = ?6, parser = ?7, parser_arguments = ?8, \
                 value_type = ?10 \
             WHERE id = ?9",
            &[
                (&t.name).into(),
                (&t.label).into(),
                (&t.default).into(),
                (&t.lookup).into(),
                (&t.validation).into(),
                (&t.validation_arguments).into(),
                (&t.parser).into(),
                (&t.parser_arguments).into(),
                t.id.0.into(),
                t.value_type.as_str().into(),
            ],
        )
        .map(drop)
    }

    /// The value type of metadata type `id` (`None`: no such type).
    pub(crate) fn value_type_of(&mut self, id: MetadataTypeId) -> Result<Option<ValueType>> {
        self.optional(
            "SELECT value_type FROM metadata_types WHERE id = ?1",
            &[id.0.into()],
            |r| Ok(value_type(&r.text(0)?)),
        )
    }

    /// Who shaped a metadata type's default and lookup (`None`: no such type).
    pub(crate) fn metadata_type_shapers(
        &mut self,
        id: MetadataTypeId,
    ) -> Result<Option<MetadataTypeShapers>> {
        let Some((default, lookup)) = self.optional(
            "SELECT default_shapers, lookup_shapers FROM metadata_types WHERE id = ?1",
            &[id.0.into()],
            |r| Ok((r.text(0)?, r.text(1)?)),
        )?
        else {
            return Ok(None);
        };
        Ok(Some(MetadataTypeShapers {
            default: Shapers::parse(&default)?,
            lookup: Shapers::parse(&lookup)?,
        }))
    }

    /// Records who shaped a metadata type's default and lookup.
    pub(crate) fn set_metadata_type_shapers(
        &mut self,
        id: MetadataTypeId,
        shapers: &MetadataTypeShapers,
    ) -> Result<()> {
        self.execute(
            "UPDATE metadata_types SET default_shapers = ?1, lookup_shapers = ?2 WHERE id = ?3",
            &[
                shapers.default.to_text().as_str().into(),
                shapers.lookup.to_text().as_str().into(),
                id.0.into(),
            ],
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

    // ----- document types ---------------------------------------------------------------

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

    // ----- associations -----------------------------------------------------------------

    /// Inserts an association.
    pub fn insert_association(
        &mut self,
        dt: DocumentTypeId,
        mt: MetadataTypeId,
        required: bool,
    ) -> Result<DocumentTypeMetadataType> {
        let id = self
            .insert(
                "INSERT INTO document_type_metadata_types \
                     (document_type_id, metadata_type_id, required) \
                 VALUES (?1, ?2, ?3) \
                 RETURNING id",
                &[dt.0.into(), mt.0.into(), required.into()],
            )
            .map_err(|e| match e {
                Error::Conflict { .. } => Error::conflict(
                    "metadata_type_id",
                    "This metadata type is already associated with the document type.",
                ),
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
            "SELECT id, document_type_id, metadata_type_id, required \
             FROM document_type_metadata_types \
             WHERE id = ?1",
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
            "SELECT id, document_type_id, metadata_type_id, required \
             FROM document_type_metadata_types \
             WHERE document_type_id = ?1 AND metadata_type_id = ?2",
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
            "SELECT id, document_type_id, metadata_type_id, required \
             FROM document_type_metadata_types \
             WHERE document_type_id = ?1 \
             ORDER BY id",
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
            "SELECT id, document_type_id, metadata_type_id, required \
             FROM document_type_metadata_types \
             WHERE metadata_type_id = ?1 \
             ORDER BY id",
            &[mt.0.into()],
            association,
        )
    }

    // ----- document metadata ------------------------------------------------------------

    /// Inserts a value; a second value of the same type on the document is a conflict.
    pub fn insert_document_metadata(
        &mut self,
        doc: DocumentId,
        mt: MetadataTypeId,
        value: &str,
    ) -> Result<DocumentMetadata> {
        let id = self
            .insert(
                "INSERT INTO document_metadata (document_id, metadata_type_id, value) \
                 VALUES (?1, ?2, ?3) \
                 RETURNING id",
                &[doc.0.into(), mt.0.into(), value.into()],
            )
            .map_err(|e| match e {
                Error::Conflict { .. } => Error::conflict(
                    "metadata_type_id",
                    "The document already has a value of this metadata type.",
                ),
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
            "INSERT INTO document_metadata (document_id, metadata_type_id, value) \
             VALUES (?1, ?2, ?3) \
             ON CONFLICT (document_id, metadata_type_id) DO NOTHING \
             RETURNING id",
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
        // Sent with the next statement (the edit's event): its failure fails the unit anyway.
        self.execute_later(
            "UPDATE document_metadata SET value = ?1 WHERE id = ?2",
            &[value.into(), id.0.into()],
        )
    }

    /// Deletes a value.
    pub fn delete_document_metadata(&mut self, id: DocumentMetadataId) -> Result<()> {
        self.execute_later(
            "DELETE FROM document_metadata WHERE id = ?1",
            &[id.0.into()],
        )
    }

    /// A document, with the value `id` when it is one of the document's (and whether the
    /// document's type requires that value's type), in one statement: what an edit or a removal
    /// of a value reads first. `None`: no such document.
    #[allow(clippy::type_complexity)]
    pub fn document_and_value(
        &mut self,
        document: DocumentId,
        id: DocumentMetadataId,
    ) -> Result<Option<(Document, Option<(DocumentMetadata, bool)>)>> {
        self.optional(
            "SELECT d.id, d.label, d.document_type_id, d.created, m.id, m.document_id, \
                 m.metadata_type_id, m.value, a.required \
             FROM documents d \
             LEFT JOIN document_metadata m ON m.id = ?2 AND m.document_id = d.id \
             LEFT JOIN document_type_metadata_types a ON a.document_type_id = d.document_type_id \
                 AND a.metadata_type_id = m.metadata_type_id \
             WHERE d.id = ?1",
            &[document.0.into(), id.0.into()],
            |r| {
                let value = match r.opt_int(4)? {
                    Some(value) => Some((
                        DocumentMetadata {
                            id: DocumentMetadataId(value),
                            document_id: DocumentId(r.int(5)?),
                            metadata_type_id: MetadataTypeId(r.int(6)?),
                            value: r.text(7)?,
                        },
                        r.opt_int(8)?.is_some_and(|required| required != 0),
                    )),
                    None => None,
                };
                Ok((super::records::document(r)?, value))
            },
        )
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
            "SELECT id, document_id, metadata_type_id, value \
             FROM document_metadata \
             WHERE document_id = ?1 \
             ORDER BY id",
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
            "SELECT m.id, m.document_id, m.metadata_type_id, m.value, t.id, t.name, t.label, \
                 t.default_value, t.lookup, t.validation, t.validation_arguments, t.parser, \
                 t.parser_arguments, t.value_type \
             FROM document_metadata m \
             JOIN metadata_types t ON t.id = m.metadata_type_id \
             WHERE m.document_id = ?1 \
             ORDER BY m.id",
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
                    value_type: value_type(&r.text(13)?),
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
                "SELECT m.id, m.document_id, m.metadata_type_id, m.value \
                 FROM document_metadata m \
                 JOIN documents d ON d.id = m.document_id \
                 WHERE m.metadata_type_id = ?1 AND d.document_type_id = ?2 \
                 ORDER BY m.id LIMIT ?3",
                &[mt.0.into(), dt.0.into(), i64::from(limit).into()],
                document_metadata,
            ),
            None => self.rows(
                "SELECT id, document_id, metadata_type_id, value \
                 FROM document_metadata \
                 WHERE metadata_type_id = ?1 \
                 ORDER BY id LIMIT ?2",
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
            "SELECT d.id, d.label, d.document_type_id, d.created \
             FROM documents d \
             WHERE d.document_type_id = ?1 AND NOT EXISTS (SELECT 1 FROM document_metadata m \
                 WHERE m.document_id = d.id AND m.metadata_type_id = ?2) \
             ORDER BY d.id LIMIT ?3",
            &[dt.0.into(), mt.0.into(), i64::from(limit).into()],
            document,
        )
    }
}
