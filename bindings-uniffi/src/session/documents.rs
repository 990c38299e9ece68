//! Documents and their metadata values (the pipeline of spec 2.10).

use docmeta_core as core;

use super::Session;
use crate::errors::Result;
use crate::records::{
    Document, DocumentDetails, DocumentMetadata, DocumentWithFile, HistoryPage, MetadataValue,
    NewDocument, NewDocumentValue, NewValue, PastValue,
};

fn pairs(values: &[NewValue]) -> Vec<(core::MetadataTypeId, &str)> {
    values
        .iter()
        .map(|v| (core::MetadataTypeId(v.metadata_type_id), v.value.as_str()))
        .collect()
}

#[uniffi::export]
impl Session {
    /// Creates a document with metadata values (each through the pipeline), all or nothing.
    pub fn create_document(
        &self,
        document_type: i64,
        label: String,
        values: Vec<NewValue>,
    ) -> Result<Document> {
        Ok(self
            .inner
            .create_document(core::DocumentTypeId(document_type), &label, &pairs(&values))?
            .into())
    }

    /// Creates many documents in one transaction, all or nothing, each as `createDocument`
    /// creates one. At most 1000; a refused entry names itself in the error's field
    /// (`documents[1].metadata[0].value`). Answers the documents in the order given.
    pub fn create_documents(&self, documents: Vec<NewDocument>) -> Result<Vec<Document>> {
        let values: Vec<Vec<(core::MetadataTypeId, &str)>> =
            documents.iter().map(|d| pairs(&d.values)).collect();
        let new: Vec<core::NewDocument<'_>> = documents
            .iter()
            .zip(&values)
            .map(|(d, values)| core::NewDocument {
                document_type: core::DocumentTypeId(d.document_type_id),
                label: &d.label,
                values,
            })
            .collect();
        Ok(self
            .inner
            .create_documents(&new)?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// Creates a document with its values and its first file, all or nothing.
    pub fn create_document_with_file(
        &self,
        document_type: i64,
        label: String,
        values: Vec<NewValue>,
        filename: String,
        data: Vec<u8>,
    ) -> Result<DocumentWithFile> {
        let (d, f) = self.inner.create_document_with_file(
            core::DocumentTypeId(document_type),
            &label,
            &pairs(&values),
            &filename,
            &mut data.as_slice(),
        )?;
        Ok(DocumentWithFile {
            document: d.into(),
            file: f.into(),
        })
    }

    /// One document.
    pub fn document(&self, id: i64) -> Result<Document> {
        Ok(self.inner.document(core::DocumentId(id))?.into())
    }

    /// Up to `limit` documents after id `after` (0: from the start), optionally of one type,
    /// by id. A walk over a whole list passes the last id of the page before.
    ///
    /// With `ordering` (`amount`, or `-amount` largest first), the documents come in the order
    /// of a metadata type's values instead (documents without a value last), `page` (from 1)
    /// of `limit` of them; `after` does not apply, and a list in that order reaches 10,000
    /// documents deep.
    #[uniffi::method(default(ordering = None, page = 1))]
    pub fn documents(
        &self,
        document_type: Option<i64>,
        after: i64,
        limit: u32,
        ordering: Option<String>,
        page: u32,
    ) -> Result<Vec<Document>> {
        let ordering = ordering.as_deref().and_then(core::OrderBy::parse);
        let (after, page) = match ordering {
            Some(_) => (None, page.max(1) as usize),
            None => (Some(core::DocumentId(after)), 1),
        };
        let query = core::DocumentQuery {
            document_type: document_type.map(core::DocumentTypeId),
            after,
            ordering,
            ..Default::default()
        };
        Ok(self
            .inner
            .documents(query, core::PageRequest::new(page, limit as usize))?
            .items
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// The ids of every document this session may view, optionally of one type.
    #[uniffi::method(default(document_type = None))]
    pub fn document_ids(&self, document_type: Option<i64>) -> Result<Vec<i64>> {
        Ok(self
            .inner
            .document_ids(document_type.map(core::DocumentTypeId))?
            .into_iter()
            .map(|d| d.0)
            .collect())
    }

    /// Renames a document.
    pub fn update_document(&self, id: i64, label: String) -> Result<Document> {
        Ok(self
            .inner
            .update_document(core::DocumentId(id), &label)?
            .into())
    }

    /// Gives a document another type: values the new type does not have are removed (each with
    /// its event), its required ones added. Needs viewing the document, `document_change_type`
    /// on it, and viewing and `document_create` on the new type.
    pub fn change_document_type(&self, id: i64, document_type: i64) -> Result<Document> {
        Ok(self
            .inner
            .change_document_type(core::DocumentId(id), core::DocumentTypeId(document_type))?
            .into())
    }

    /// Deletes a document.
    pub fn delete_document(&self, id: i64) -> Result<()> {
        Ok(self.inner.delete_document(core::DocumentId(id))?)
    }

    /// Adds a metadata value through the pipeline (spec 2.10): default, required, lookup,
    /// validator, parser.
    pub fn add_document_metadata(
        &self,
        document: i64,
        metadata_type: i64,
        value: String,
    ) -> Result<DocumentMetadata> {
        Ok(self
            .inner
            .add_document_metadata(
                core::DocumentId(document),
                core::MetadataTypeId(metadata_type),
                &value,
            )?
            .into())
    }

    /// Adds several values, to one or several documents, in one transaction: all or nothing.
    pub fn add_document_metadata_batch(
        &self,
        values: Vec<NewDocumentValue>,
    ) -> Result<Vec<DocumentMetadata>> {
        let values: Vec<(core::DocumentId, core::MetadataTypeId, &str)> = values
            .iter()
            .map(|v| {
                (
                    core::DocumentId(v.document_id),
                    core::MetadataTypeId(v.metadata_type_id),
                    v.value.as_str(),
                )
            })
            .collect();
        Ok(self
            .inner
            .add_document_metadata_batch(&values)?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// One value of a document.
    pub fn metadata_value(&self, document: i64, id: i64) -> Result<DocumentMetadata> {
        Ok(self
            .inner
            .metadata_value(core::DocumentId(document), core::DocumentMetadataId(id))?
            .into())
    }

    /// The values of a document this session may view.
    pub fn document_metadata(&self, document: i64) -> Result<Vec<DocumentMetadata>> {
        Ok(self
            .inner
            .document_metadata(core::DocumentId(document), core::PageRequest::ALL)?
            .items
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// Every change of a document's metadata values (of `metadata_type` only, when given),
    /// newest first, one page of them (at most 1000 per page). A change of a type whose
    /// values this session may not view now has `before` and `after` `null` and `hidden` set.
    #[uniffi::method(default(metadata_type = None, page = 1, page_size = 100))]
    pub fn history(
        &self,
        document: i64,
        metadata_type: Option<i64>,
        page: u32,
        page_size: u32,
    ) -> Result<HistoryPage> {
        Ok(self
            .inner
            .history(
                core::DocumentId(document),
                metadata_type.map(core::MetadataTypeId),
                core::PageRequest::new(page as usize, page_size as usize),
            )?
            .into())
    }

    /// The value a document had for a metadata type at time `at`, or `null` (no value then,
    /// or one this session may not view now).
    pub fn value_at(
        &self,
        document: i64,
        metadata_type: i64,
        at: std::time::SystemTime,
    ) -> Result<Option<String>> {
        Ok(self.inner.value_at(
            core::DocumentId(document),
            core::MetadataTypeId(metadata_type),
            at.into(),
        )?)
    }

    /// The values a document had at time `at`, one per metadata type this session may view
    /// the values of now.
    pub fn metadata_at(&self, document: i64, at: std::time::SystemTime) -> Result<Vec<PastValue>> {
        Ok(self
            .inner
            .metadata_at(core::DocumentId(document), at.into())?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// A document with its values and their types, read at once.
    pub fn document_metadata_details(&self, document: i64) -> Result<DocumentDetails> {
        let (d, values) = self
            .inner
            .document_metadata_details(core::DocumentId(document))?;
        Ok(DocumentDetails {
            document: d.into(),
            values: values
                .into_iter()
                .map(|(value, metadata_type)| MetadataValue {
                    value: value.into(),
                    metadata_type: metadata_type.into(),
                })
                .collect(),
        })
    }

    /// `metadata_value_of.<name>` of a document (what templates see).
    pub fn metadata_value_of(&self, document: i64, name: String) -> Result<Option<String>> {
        Ok(self
            .inner
            .metadata_value_of(core::DocumentId(document), &name)?)
    }

    /// Sets a value through the pipeline; empty re-applies the default. `metadataType`, when
    /// given, is the type the caller means the value to have: another type than the value's
    /// is refused (a validation error on `metadata_type_id`; remove the value and add another).
    #[uniffi::method(default(metadata_type = None))]
    pub fn edit_document_metadata(
        &self,
        document: i64,
        id: i64,
        value: String,
        metadata_type: Option<i64>,
    ) -> Result<DocumentMetadata> {
        Ok(self
            .inner
            .edit_document_metadata(
                core::DocumentId(document),
                core::DocumentMetadataId(id),
                &value,
                metadata_type.map(core::MetadataTypeId),
            )?
            .into())
    }

    /// Removes a value (refused for a required one).
    pub fn remove_document_metadata(&self, document: i64, id: i64) -> Result<()> {
        Ok(self
            .inner
            .remove_document_metadata(core::DocumentId(document), core::DocumentMetadataId(id))?)
    }
}
