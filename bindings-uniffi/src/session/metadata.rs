//! Metadata types, document types and their associations.

use docmeta_core as core;

use super::Session;
use crate::errors::Result;
use crate::records::{
    Association, DocumentType, MetadataType, MetadataTypeSpec, TemplatePreview, ValueType,
    ValueTypeCheck,
};

#[uniffi::export]
impl Session {
    /// Creates a metadata type (its definition is checked: errors name the field).
    pub fn create_metadata_type(&self, spec: MetadataTypeSpec) -> Result<MetadataType> {
        Ok(self.inner.create_metadata_type(spec.into())?.into())
    }

    /// One metadata type.
    pub fn metadata_type(&self, id: i64) -> Result<MetadataType> {
        Ok(self.inner.metadata_type(core::MetadataTypeId(id))?.into())
    }

    /// The metadata type called `name`.
    pub fn metadata_type_by_name(&self, name: String) -> Result<MetadataType> {
        Ok(self.inner.metadata_type_by_name(&name)?.into())
    }

    /// The metadata types this session may view.
    pub fn metadata_types(&self) -> Result<Vec<MetadataType>> {
        Ok(self
            .inner
            .metadata_types()?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// Replaces a metadata type's definition (a `valueType` of `null` keeps the type's own).
    pub fn update_metadata_type(&self, id: i64, spec: MetadataTypeSpec) -> Result<MetadataType> {
        let id = core::MetadataTypeId(id);
        let given = spec.value_type;
        let mut input: core::MetadataTypeInput = spec.into();
        input.value_type = match given {
            Some(t) => t.into(),
            None => self.inner.metadata_type(id)?.value_type,
        };
        Ok(self.inner.update_metadata_type(id, input)?.into())
    }

    /// Which stored values of a metadata type are not of `valueType`: what changing its value
    /// type would be refused for, without trying. Needs `metadata_type_edit` on it.
    pub fn check_value_type(
        &self,
        metadata_type: i64,
        value_type: ValueType,
    ) -> Result<ValueTypeCheck> {
        Ok(self
            .inner
            .check_value_type(core::MetadataTypeId(metadata_type), value_type.into())?
            .into())
    }

    /// What a default and a lookup template would render to before they are saved, for
    /// `document` when given, with only what the caller may view; errors are in the answer.
    /// Needs global `metadata_type_create`, or `metadata_type_edit` on `metadata_type`.
    /// (`default_template`: `default` is a keyword of C, whose header Swift reads.)
    #[uniffi::method(default(document = None, metadata_type = None))]
    pub fn preview_templates(
        &self,
        default_template: String,
        lookup_template: String,
        document: Option<i64>,
        metadata_type: Option<i64>,
    ) -> Result<TemplatePreview> {
        Ok(self
            .inner
            .preview_templates(
                &default_template,
                &lookup_template,
                document.map(core::DocumentId),
                metadata_type.map(core::MetadataTypeId),
            )?
            .into())
    }

    /// Deletes a metadata type (and its values).
    pub fn delete_metadata_type(&self, id: i64) -> Result<()> {
        Ok(self.inner.delete_metadata_type(core::MetadataTypeId(id))?)
    }

    /// The choices a metadata type's lookup offers (spec 2.7), rendered for `document` when
    /// given; `None` when any value is accepted.
    #[uniffi::method(default(document = None))]
    pub fn lookup_choices(
        &self,
        metadata_type: i64,
        document: Option<i64>,
    ) -> Result<Option<Vec<String>>> {
        Ok(self.inner.lookup_choices(
            core::MetadataTypeId(metadata_type),
            document.map(core::DocumentId),
        )?)
    }

    /// The choices a metadata type's lookup offers for a document (spec 2.7); `None` when any
    /// value is accepted.
    pub fn document_lookup_choices(
        &self,
        document: i64,
        metadata_type: i64,
    ) -> Result<Option<Vec<String>>> {
        Ok(self.inner.document_lookup_choices(
            core::DocumentId(document),
            core::MetadataTypeId(metadata_type),
        )?)
    }

    /// Creates a document type.
    pub fn create_document_type(&self, label: String) -> Result<DocumentType> {
        Ok(self.inner.create_document_type(&label)?.into())
    }

    /// One document type.
    pub fn document_type(&self, id: i64) -> Result<DocumentType> {
        Ok(self.inner.document_type(core::DocumentTypeId(id))?.into())
    }

    /// The document types this session may view.
    pub fn document_types(&self) -> Result<Vec<DocumentType>> {
        Ok(self
            .inner
            .document_types()?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// Renames a document type.
    pub fn update_document_type(&self, id: i64, label: String) -> Result<DocumentType> {
        Ok(self
            .inner
            .update_document_type(core::DocumentTypeId(id), &label)?
            .into())
    }

    /// Deletes a document type no document has.
    pub fn delete_document_type(&self, id: i64) -> Result<()> {
        Ok(self.inner.delete_document_type(core::DocumentTypeId(id))?)
    }

    /// Associates a metadata type with a document type (`required`: its documents must have a
    /// value, added by a background task to those that exist).
    pub fn associate(
        &self,
        document_type: i64,
        metadata_type: i64,
        required: bool,
    ) -> Result<Association> {
        Ok(self
            .inner
            .associate(
                core::DocumentTypeId(document_type),
                core::MetadataTypeId(metadata_type),
                required,
            )?
            .into())
    }

    /// One association of a document type.
    pub fn association(&self, document_type: i64, id: i64) -> Result<Association> {
        Ok(self
            .inner
            .association(core::DocumentTypeId(document_type), core::AssociationId(id))?
            .into())
    }

    /// The associations of a document type.
    pub fn associations(&self, document_type: i64) -> Result<Vec<Association>> {
        let page = self
            .inner
            .associations(core::DocumentTypeId(document_type), core::PageRequest::ALL)?;
        Ok(page.items.into_iter().map(Into::into).collect())
    }

    /// Makes an association required or optional.
    pub fn update_association(
        &self,
        document_type: i64,
        id: i64,
        required: bool,
    ) -> Result<Association> {
        Ok(self
            .inner
            .update_association(
                core::DocumentTypeId(document_type),
                core::AssociationId(id),
                required,
            )?
            .into())
    }

    /// Removes an association.
    pub fn delete_association(&self, document_type: i64, id: i64) -> Result<()> {
        Ok(self
            .inner
            .delete_association(core::DocumentTypeId(document_type), core::AssociationId(id))?)
    }
}
