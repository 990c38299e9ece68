//! `Session` methods: metadata types, document types and their associations (spec 2.1-2.3).

use docmeta_core as core;
use pyo3::prelude::*;

use super::Session;
use crate::errors::run;
use crate::records::{
    Association, DocumentType, MetadataType, TemplatePreview, ValueTypeCheck, all,
};

#[pymethods]
impl Session {
    /// Creates a metadata type (spec 2.1).
    #[pyo3(signature = (name, label, *, default = String::new(), lookup = String::new(),
        validation = String::new(), validation_arguments = String::new(),
        parser = String::new(), parser_arguments = String::new(),
        value_type = "text".to_owned()))]
    #[allow(clippy::too_many_arguments)]
    fn create_metadata_type(
        &self,
        py: Python<'_>,
        name: String,
        label: String,
        default: String,
        lookup: String,
        validation: String,
        validation_arguments: String,
        parser: String,
        parser_arguments: String,
        value_type: String,
    ) -> PyResult<MetadataType> {
        let input = core::MetadataTypeInput {
            name,
            label,
            default,
            lookup,
            validation,
            validation_arguments,
            parser,
            parser_arguments,
            value_type: crate::errors::value_type(&value_type)?,
        };
        run(py, || self.inner.create_metadata_type(input)).map(Into::into)
    }

    /// The metadata types this session may view.
    fn metadata_types(&self, py: Python<'_>) -> PyResult<Vec<MetadataType>> {
        run(py, || self.inner.metadata_types()).map(all)
    }

    /// Deletes a metadata type (its values are removed by a durable task).
    fn delete_metadata_type(&self, py: Python<'_>, id: i64) -> PyResult<()> {
        run(py, || {
            self.inner.delete_metadata_type(core::MetadataTypeId(id))
        })
    }

    /// Creates a document type.
    fn create_document_type(&self, py: Python<'_>, label: String) -> PyResult<DocumentType> {
        run(py, || self.inner.create_document_type(&label)).map(Into::into)
    }

    /// The document types this session may view.
    fn document_types(&self, py: Python<'_>) -> PyResult<Vec<DocumentType>> {
        run(py, || self.inner.document_types()).map(all)
    }

    /// Associates a metadata type with a document type (`required`: spec 2.4 rule 1).
    #[pyo3(signature = (document_type, metadata_type, *, required = false))]
    fn associate(
        &self,
        py: Python<'_>,
        document_type: i64,
        metadata_type: i64,
        required: bool,
    ) -> PyResult<Association> {
        run(py, || {
            self.inner.associate(
                core::DocumentTypeId(document_type),
                core::MetadataTypeId(metadata_type),
                required,
            )
        })
        .map(Into::into)
    }

    /// One association of a document type.
    fn association(
        &self,
        py: Python<'_>,
        document_type: i64,
        association: i64,
    ) -> PyResult<Association> {
        run(py, || {
            self.inner.association(
                core::DocumentTypeId(document_type),
                core::AssociationId(association),
            )
        })
        .map(Into::into)
    }

    /// One metadata type.
    fn metadata_type(&self, py: Python<'_>, id: i64) -> PyResult<MetadataType> {
        run(py, || self.inner.metadata_type(core::MetadataTypeId(id))).map(Into::into)
    }

    /// One metadata type by name.
    fn metadata_type_by_name(&self, py: Python<'_>, name: String) -> PyResult<MetadataType> {
        run(py, || self.inner.metadata_type_by_name(&name)).map(Into::into)
    }

    /// Replaces a metadata type's definition (every field, as `create_metadata_type`; a
    /// `value_type` not given keeps the type's own).
    #[pyo3(signature = (id, name, label, *, default = String::new(), lookup = String::new(),
        validation = String::new(), validation_arguments = String::new(),
        parser = String::new(), parser_arguments = String::new(),
        value_type = None))]
    #[allow(clippy::too_many_arguments)]
    fn update_metadata_type(
        &self,
        py: Python<'_>,
        id: i64,
        name: String,
        label: String,
        default: String,
        lookup: String,
        validation: String,
        validation_arguments: String,
        parser: String,
        parser_arguments: String,
        value_type: Option<String>,
    ) -> PyResult<MetadataType> {
        let input = core::MetadataTypeInput {
            name,
            label,
            default,
            lookup,
            validation,
            validation_arguments,
            parser,
            parser_arguments,
            value_type: core::ValueType::Text,
        };
        let value_type = value_type
            .as_deref()
            .map(crate::errors::value_type)
            .transpose()?;
        run(py, || {
            let id = core::MetadataTypeId(id);
            // Not given: the type's own (a full update that does not mention it keeps it).
            let value_type = match value_type {
                Some(t) => t,
                None => self.inner.metadata_type(id)?.value_type,
            };
            self.inner.update_metadata_type(
                id,
                core::MetadataTypeInput {
                    value_type,
                    ..input
                },
            )
        })
        .map(Into::into)
    }

    /// Which stored values of metadata type `id` are not of `value_type`: what changing its
    /// value type would be refused for, without trying. Needs `metadata_type_edit` on it.
    fn check_value_type(
        &self,
        py: Python<'_>,
        id: i64,
        value_type: &str,
    ) -> PyResult<ValueTypeCheck> {
        let value_type = crate::errors::value_type(value_type)?;
        run(py, || {
            self.inner
                .check_value_type(core::MetadataTypeId(id), value_type)
        })
        .map(Into::into)
    }

    /// What a default and a lookup template would render to before they are saved, for
    /// `document` when given, with only what the caller may view; errors are in the answer.
    /// Needs global `metadata_type_create`, or `metadata_type_edit` on `metadata_type`.
    #[pyo3(signature = (*, default = "", lookup = "", document = None, metadata_type = None))]
    fn preview_templates(
        &self,
        py: Python<'_>,
        default: &str,
        lookup: &str,
        document: Option<i64>,
        metadata_type: Option<i64>,
    ) -> PyResult<TemplatePreview> {
        run(py, || {
            self.inner.preview_templates(
                default,
                lookup,
                document.map(core::DocumentId),
                metadata_type.map(core::MetadataTypeId),
            )
        })
        .map(Into::into)
    }

    /// The choices of a metadata type's lookup (rendered for `document`), or None.
    #[pyo3(signature = (id, *, document = None))]
    fn lookup_choices(
        &self,
        py: Python<'_>,
        id: i64,
        document: Option<i64>,
    ) -> PyResult<Option<Vec<String>>> {
        run(py, || {
            self.inner
                .lookup_choices(core::MetadataTypeId(id), document.map(core::DocumentId))
        })
    }

    /// One document type.
    fn document_type(&self, py: Python<'_>, id: i64) -> PyResult<DocumentType> {
        run(py, || self.inner.document_type(core::DocumentTypeId(id))).map(Into::into)
    }

    /// Renames a document type.
    fn update_document_type(
        &self,
        py: Python<'_>,
        id: i64,
        label: String,
    ) -> PyResult<DocumentType> {
        run(py, || {
            self.inner
                .update_document_type(core::DocumentTypeId(id), &label)
        })
        .map(Into::into)
    }

    /// Deletes a document type without documents.
    fn delete_document_type(&self, py: Python<'_>, id: i64) -> PyResult<()> {
        run(py, || {
            self.inner.delete_document_type(core::DocumentTypeId(id))
        })
    }

    /// The associations of a document type, each with both types.
    fn associations(&self, py: Python<'_>, document_type: i64) -> PyResult<Vec<Association>> {
        run(py, || {
            self.inner
                .associations(core::DocumentTypeId(document_type), core::PageRequest::ALL)
        })
        .map(|page| all(page.items))
    }

    /// Makes an association required or optional (spec 2.4 rules 1-2).
    fn update_association(
        &self,
        py: Python<'_>,
        document_type: i64,
        association: i64,
        required: bool,
    ) -> PyResult<Association> {
        run(py, || {
            self.inner.update_association(
                core::DocumentTypeId(document_type),
                core::AssociationId(association),
                required,
            )
        })
        .map(Into::into)
    }

    /// Removes an association (its values are removed by a durable task).
    fn delete_association(
        &self,
        py: Python<'_>,
        document_type: i64,
        association: i64,
    ) -> PyResult<()> {
        run(py, || {
            self.inner.delete_association(
                core::DocumentTypeId(document_type),
                core::AssociationId(association),
            )
        })
    }
}
