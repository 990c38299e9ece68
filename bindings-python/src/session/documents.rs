//! `Session` methods: documents and their metadata values, and the iterator over documents.

use docmeta_core as core;
use pyo3::prelude::*;

use super::Session;
use crate::errors::run;
use crate::records::{
    Document, DocumentDetails, DocumentMetadata, DocumentWithFile, HistoryPage,
    MetadataValueDetail, PastValue, all,
};

/// One entry of `create_documents`: (document type, label, `{metadata_type_id: value}`).
type NewDocumentEntry = (i64, String, Option<std::collections::BTreeMap<i64, String>>);

#[pymethods]
impl Session {
    /// Creates a document with metadata values `{metadata_type_id: value}` (spec 2.10 each).
    #[pyo3(signature = (document_type, label, *, values = None))]
    fn create_document(
        &self,
        py: Python<'_>,
        document_type: i64,
        label: String,
        values: Option<std::collections::BTreeMap<i64, String>>,
    ) -> PyResult<Document> {
        let values = values.unwrap_or_default();
        run(py, || {
            let pairs: Vec<(core::MetadataTypeId, &str)> = values
                .iter()
                .map(|(t, v)| (core::MetadataTypeId(*t), v.as_str()))
                .collect();
            self.inner
                .create_document(core::DocumentTypeId(document_type), &label, &pairs)
        })
        .map(Into::into)
    }

    /// Creates many documents in one transaction, all or nothing: each entry is
    /// `(document_type, label, values)` as `create_document` takes them (`values` a
    /// `{metadata_type_id: value}` dict, or None). At most 1000 entries; a refused entry names
    /// itself in the error's field (`documents[1].metadata[0].value`). Answers the documents in
    /// the order given.
    fn create_documents(
        &self,
        py: Python<'_>,
        documents: Vec<NewDocumentEntry>,
    ) -> PyResult<Vec<Document>> {
        run(py, || {
            let values: Vec<Vec<(core::MetadataTypeId, &str)>> = documents
                .iter()
                .map(|(_, _, values)| {
                    values
                        .iter()
                        .flatten()
                        .map(|(t, v)| (core::MetadataTypeId(*t), v.as_str()))
                        .collect()
                })
                .collect();
            let new: Vec<core::NewDocument<'_>> = documents
                .iter()
                .zip(&values)
                .map(|((document_type, label, _), values)| core::NewDocument {
                    document_type: core::DocumentTypeId(*document_type),
                    label,
                    values,
                })
                .collect();
            self.inner.create_documents(&new)
        })
        .map(all)
    }

    /// Creates a document with its values and its first file, all or nothing (the bytes are
    /// stored first; if anything is refused they are removed and nothing is created).
    #[pyo3(signature = (document_type, label, filename, data, *, values = None))]
    fn create_document_with_file(
        &self,
        py: Python<'_>,
        document_type: i64,
        label: String,
        filename: String,
        data: Vec<u8>,
        values: Option<std::collections::BTreeMap<i64, String>>,
    ) -> PyResult<DocumentWithFile> {
        let values = values.unwrap_or_default();
        run(py, || {
            let pairs: Vec<(core::MetadataTypeId, &str)> = values
                .iter()
                .map(|(t, v)| (core::MetadataTypeId(*t), v.as_str()))
                .collect();
            self.inner.create_document_with_file(
                core::DocumentTypeId(document_type),
                &label,
                &pairs,
                &filename,
                &mut data.as_slice(),
            )
        })
        .map(|(d, f)| DocumentWithFile {
            document: d.into(),
            file: f.into(),
        })
    }

    /// The choices a metadata type's lookup offers for a document (spec 2.7), or `None` when
    /// the type has no lookup (any value is accepted).
    fn document_lookup_choices(
        &self,
        py: Python<'_>,
        document: i64,
        metadata_type: i64,
    ) -> PyResult<Option<Vec<String>>> {
        run(py, || {
            self.inner.document_lookup_choices(
                core::DocumentId(document),
                core::MetadataTypeId(metadata_type),
            )
        })
    }

    /// One document.
    fn document(&self, py: Python<'_>, id: i64) -> PyResult<Document> {
        run(py, || self.inner.document(core::DocumentId(id))).map(Into::into)
    }

    /// The documents this session may view (optionally of one type), each with its type, by
    /// id, fetched lazily in pages. With `ordering` (`"amount"`, or `"-amount"` largest first),
    /// in the order of a metadata type's values instead (documents without a value last; such
    /// a list reaches 10,000 documents deep, then raises `InvalidInput`).
    #[pyo3(signature = (*, document_type = None, ordering = None))]
    fn documents(&self, document_type: Option<i64>, ordering: Option<String>) -> DocumentIterator {
        DocumentIterator {
            session: self.inner.clone(),
            of_type: document_type.map(core::DocumentTypeId),
            newest_first: ordering.as_deref() == Some("-id"),
            // `id` and `-id` are the list's own orders (walked by a cursor, not paged).
            ordering: ordering
                .filter(|o| o != "id" && o != "-id")
                .as_deref()
                .and_then(core::OrderBy::parse),
            state: parking_lot::Mutex::new((None, Vec::new(), false, 0)),
        }
    }

    /// Renames a document.
    fn update_document(&self, py: Python<'_>, id: i64, label: String) -> PyResult<Document> {
        run(py, || {
            self.inner.update_document(core::DocumentId(id), &label)
        })
        .map(Into::into)
    }

    /// Changes a document's type (spec 2.4 rule 4): values the new type lacks are removed (each
    /// with its event), its required ones added. Needs viewing the document,
    /// `document_change_type` on it, and viewing and `document_create` on the new type.
    fn change_document_type(
        &self,
        py: Python<'_>,
        document: i64,
        document_type: i64,
    ) -> PyResult<Document> {
        run(py, || {
            self.inner.change_document_type(
                core::DocumentId(document),
                core::DocumentTypeId(document_type),
            )
        })
        .map(Into::into)
    }

    /// Deletes a document with its metadata, files and workflow instances.
    fn delete_document(&self, py: Python<'_>, id: i64) -> PyResult<()> {
        run(py, || self.inner.delete_document(core::DocumentId(id)))
    }

    /// Adds a metadata value (spec 2.10); returns it with its type.
    fn add_document_metadata(
        &self,
        py: Python<'_>,
        document: i64,
        metadata_type: i64,
        value: String,
    ) -> PyResult<DocumentMetadata> {
        run(py, || {
            self.inner.add_document_metadata(
                core::DocumentId(document),
                core::MetadataTypeId(metadata_type),
                &value,
            )
        })
        .map(Into::into)
    }

    /// Sets a value; an empty value re-applies the default. `metadata_type`, when given, is
    /// the type the caller means the value to have: another type than the value's is refused
    /// (`ValidationError` on `metadata_type_id`; remove the value and add another). Returns the
    /// value with its type.
    #[pyo3(signature = (document, metadata_id, value, *, metadata_type = None))]
    fn edit_document_metadata(
        &self,
        py: Python<'_>,
        document: i64,
        metadata_id: i64,
        value: String,
        metadata_type: Option<i64>,
    ) -> PyResult<DocumentMetadata> {
        run(py, || {
            self.inner.edit_document_metadata(
                core::DocumentId(document),
                core::DocumentMetadataId(metadata_id),
                &value,
                metadata_type.map(core::MetadataTypeId),
            )
        })
        .map(Into::into)
    }

    /// Removes a value.
    fn remove_document_metadata(
        &self,
        py: Python<'_>,
        document: i64,
        metadata_id: i64,
    ) -> PyResult<()> {
        run(py, || {
            self.inner.remove_document_metadata(
                core::DocumentId(document),
                core::DocumentMetadataId(metadata_id),
            )
        })
    }

    /// Adds many values, each through the pipeline, in one transaction: all or nothing.
    /// `values` holds `(document, metadata_type, value)` triples.
    fn add_document_metadata_batch(
        &self,
        py: Python<'_>,
        values: Vec<(i64, i64, String)>,
    ) -> PyResult<Vec<DocumentMetadata>> {
        run(py, || {
            let triples: Vec<(core::DocumentId, core::MetadataTypeId, &str)> = values
                .iter()
                .map(|(d, t, v)| (core::DocumentId(*d), core::MetadataTypeId(*t), v.as_str()))
                .collect();
            self.inner.add_document_metadata_batch(&triples)
        })
        .map(all)
    }

    /// One value of a document, with its type.
    fn metadata_value(
        &self,
        py: Python<'_>,
        document: i64,
        metadata_id: i64,
    ) -> PyResult<DocumentMetadata> {
        run(py, || {
            self.inner.metadata_value(
                core::DocumentId(document),
                core::DocumentMetadataId(metadata_id),
            )
        })
        .map(Into::into)
    }

    /// A document with the values this session may view, each with its type, read at once.
    fn document_metadata_details(
        &self,
        py: Python<'_>,
        document: i64,
    ) -> PyResult<DocumentDetails> {
        let (document, values) = run(py, || {
            self.inner
                .document_metadata_details(core::DocumentId(document))
        })?;
        Ok(DocumentDetails {
            document: document.into(),
            values: values
                .into_iter()
                .map(|(value, metadata_type)| MetadataValueDetail {
                    value: value.into(),
                    metadata_type: metadata_type.into(),
                })
                .collect(),
        })
    }

    /// The ids of the documents this session may view (optionally of one type), in id order.
    #[pyo3(signature = (*, document_type = None))]
    fn document_ids(&self, py: Python<'_>, document_type: Option<i64>) -> PyResult<Vec<i64>> {
        run(py, || {
            self.inner
                .document_ids(document_type.map(core::DocumentTypeId))
        })
        .map(|ids| ids.into_iter().map(|d| d.0).collect())
    }

    /// The values of a document this session may view, each with its type.
    fn document_metadata(&self, py: Python<'_>, document: i64) -> PyResult<Vec<DocumentMetadata>> {
        run(py, || {
            self.inner
                .document_metadata(core::DocumentId(document), core::PageRequest::ALL)
        })
        .map(|page| all(page.items))
    }

    /// Every change of a document's metadata values (of `metadata_type` only, when given),
    /// newest first, one page of them (at most 1000 per page). A change of a type whose values
    /// this session may not view now has `before` and `after` None and `hidden` True.
    #[pyo3(signature = (document, metadata_type = None, *, page = 1, page_size = 100))]
    fn history(
        &self,
        py: Python<'_>,
        document: i64,
        metadata_type: Option<i64>,
        page: usize,
        page_size: usize,
    ) -> PyResult<HistoryPage> {
        run(py, || {
            self.inner.history(
                core::DocumentId(document),
                metadata_type.map(core::MetadataTypeId),
                core::PageRequest::new(page, page_size),
            )
        })
        .map(Into::into)
    }

    /// The value a document had for a metadata type at time `at` (a timezone-aware
    /// `datetime`), or None (no value then, or one this session may not view now).
    fn value_at(
        &self,
        py: Python<'_>,
        document: i64,
        metadata_type: i64,
        at: chrono::DateTime<chrono::Utc>,
    ) -> PyResult<Option<String>> {
        run(py, || {
            self.inner.value_at(
                core::DocumentId(document),
                core::MetadataTypeId(metadata_type),
                at,
            )
        })
    }

    /// The values a document had at time `at` (a timezone-aware `datetime`), one per metadata
    /// type this session may view the values of now.
    fn metadata_at(
        &self,
        py: Python<'_>,
        document: i64,
        at: chrono::DateTime<chrono::Utc>,
    ) -> PyResult<Vec<PastValue>> {
        run(py, || {
            self.inner.metadata_at(core::DocumentId(document), at)
        })
        .map(all)
    }

    /// `document.metadata_value_of.<name>` (spec 2.3), or None.
    fn metadata_value_of(
        &self,
        py: Python<'_>,
        document: i64,
        name: String,
    ) -> PyResult<Option<String>> {
        run(py, || {
            self.inner
                .metadata_value_of(core::DocumentId(document), &name)
        })
    }
}

/// Iterates over documents, fetching them in pages of 500, each page after the last document
/// of the one before (so the walk costs the same per page however far it goes).
#[pyclass(module = "docmeta")]
pub struct DocumentIterator {
    session: core::Session,
    of_type: Option<core::DocumentTypeId>,
    ordering: Option<core::OrderBy>,
    newest_first: bool,
    /// The last document fetched, the documents fetched and not yet returned (in reverse),
    /// whether the list is exhausted, and how many pages were fetched (a list in a metadata
    /// type's order is paged by number).
    #[allow(clippy::type_complexity)]
    state: parking_lot::Mutex<(
        Option<core::DocumentId>,
        Vec<core::DocumentView>,
        bool,
        usize,
    )>,
}

#[pymethods]
impl DocumentIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Document>> {
        let mut state = self.state.lock();
        if state.1.is_empty() && !state.2 {
            let sorted = self.ordering.is_some();
            let query = core::DocumentQuery {
                document_type: self.of_type,
                after: if sorted { None } else { state.0 },
                ordering: self.ordering.clone(),
                newest_first: self.newest_first,
            };
            let number = if sorted { state.3 + 1 } else { 1 };
            let page = run(py, || {
                self.session
                    .documents(query, core::PageRequest::new(number, 500))
            })?;
            state.3 += 1;
            // A list in a metadata type's order ends where its pages reach no further.
            let reached = number * 500 >= page.count.min(core::MAX_RESULT_WINDOW);
            let page = page.items;
            state.2 = page.len() < 500 || (sorted && reached);
            if let Some(last) = page.last() {
                state.0 = Some(last.document.id);
            }
            state.1 = page.into_iter().rev().collect();
        }
        Ok(state.1.pop().map(Into::into))
    }
}
