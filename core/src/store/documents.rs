//! Statements of documents and their files.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use chrono::{DateTime, Utc};

use super::Tx;
use super::records::*;
use crate::error::Result;
use crate::model::*;

impl Tx<'_> {
    // ----- documents --------------------------------------------------------------------

    /// Inserts a document.
    pub fn insert_document(
        &mut self,
        label: &str,
        document_type: DocumentTypeId,
        created: DateTime<Utc>,
    ) -> Result<Document> {
        let id = self.insert(
            "INSERT INTO documents (label, document_type_id, created) \
             VALUES (?1, ?2, ?3) \
             RETURNING id",
            &[
                label.into(),
                document_type.0.into(),
                to_micros(created).into(),
            ],
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
            "INSERT INTO document_files (document_id, filename, size, checksum, mimetype, created, \
                 storage_name, encrypted) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
             RETURNING id",
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
                &format!(
                    "SELECT {FILE_COLUMNS} \
                     FROM document_files \
                     WHERE id > ?1 AND encrypted = ?2 \
                     ORDER BY id LIMIT ?3"
                ),
                &[after.0.into(), i64::from(e).into(), i64::from(limit).into()],
                stored_file,
            ),
            None => self.rows(
                &format!(
                    "SELECT {FILE_COLUMNS} \
                     FROM document_files \
                     WHERE id > ?1 \
                     ORDER BY id LIMIT ?2"
                ),
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
                "SELECT id, label, document_type_id, created \
                 FROM documents \
                 WHERE document_type_id = ?1 AND id > ?2 \
                 ORDER BY id LIMIT ?3",
                &[t.0.into(), after.0.into(), i64::from(limit).into()],
                document,
            ),
            None => self.rows(
                "SELECT id, label, document_type_id, created \
                 FROM documents \
                 WHERE id > ?1 \
                 ORDER BY id LIMIT ?2",
                &[after.0.into(), i64::from(limit).into()],
                document,
            ),
        }
    }

    /// The documents among `ids` that exist, in no particular order, in one query.
    pub fn documents_by_id(&mut self, ids: &[i64]) -> Result<Vec<Document>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let list = ids_param(ids.iter().copied());
        self.rows(
            &format!(
                "SELECT id, label, document_type_id, created FROM documents WHERE {}",
                among_ids(self.dialect(), "id", 1)
            ),
            &[list.as_str().into()],
            document,
        )
    }

    /// Up to `limit` documents by id from `from` (excluded): ascending, or descending when
    /// `newest_first` (from `i64::MAX` for the newest). For walking every document in order.
    pub fn documents_from(
        &mut self,
        from: DocumentId,
        newest_first: bool,
        limit: u32,
    ) -> Result<Vec<Document>> {
        let sql = if newest_first {
            "SELECT id, label, document_type_id, created \
             FROM documents \
             WHERE id < ?1 \
             ORDER BY id DESC LIMIT ?2"
        } else {
            "SELECT id, label, document_type_id, created \
             FROM documents \
             WHERE id > ?1 \
             ORDER BY id LIMIT ?2"
        };
        self.rows(sql, &[from.0.into(), i64::from(limit).into()], document)
    }

    /// A page of the documents of the types `types` (every type when `None`) and of the
    /// documents `documents`, by id (newest first when `newest_first`), past `after` in that
    /// order when given: `limit` of them after skipping `offset`. `scan` picks the plan: walk
    /// the documents in id order and stop once the page is full (cheap when most documents
    /// qualify), or read the qualifying ones through the type index and sort them (cheap when
    /// few do); the caller knows which from its count. The ids are integers written into the
    /// statement, never text.
    #[allow(clippy::too_many_arguments)]
    pub fn documents_page_of(
        &mut self,
        types: Option<&[i64]>,
        documents: &[i64],
        scan: bool,
        newest_first: bool,
        after: Option<DocumentId>,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<Document>> {
        use std::fmt::Write as _;
        let list = |ids: &[i64]| {
            let mut out = String::new();
            for (i, id) in ids.iter().enumerate() {
                let _ = write!(out, "{}{id}", if i == 0 { "" } else { ", " });
            }
            out
        };
        // A unary plus keeps SQLite off the type index, so that it walks the rows by id.
        let column = if scan {
            "+document_type_id"
        } else {
            "document_type_id"
        };
        let mut terms = Vec::new();
        match types {
            None => {}
            Some([]) => {}
            Some(t) => terms.push(format!("{column} IN ({})", list(t))),
        }
        if !documents.is_empty() {
            terms.push(format!("id IN ({})", list(documents)));
        }
        let mut conditions = match (types, terms.is_empty()) {
            (None, _) => Vec::new(),
            (Some(_), true) => return Ok(Vec::new()),
            (Some(_), false) => vec![format!("({})", terms.join(" OR "))],
        };
        let mut params: Vec<super::Param<'_>> = vec![
            i64::try_from(limit).unwrap_or(i64::MAX).into(),
            i64::try_from(offset).unwrap_or(i64::MAX).into(),
        ];
        if let Some(after) = after {
            conditions.push(if newest_first { "id < ?3" } else { "id > ?3" }.to_owned());
            params.push(after.0.into());
        }
        let filter = if conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", conditions.join(" AND "))
        };
        let order = if newest_first { "DESC" } else { "ASC" };
        self.rows(
            &format!(
                "SELECT id, label, document_type_id, created \
                 FROM documents {filter} \
                 ORDER BY id {order} LIMIT ?1 OFFSET ?2"
            ),
            &params,
            document,
        )
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
}
