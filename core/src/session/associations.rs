//! Associations of metadata types with document types (spec 2.2, 4.3), each answered with both
//! types ([`AssociationView`]), and the durable tasks that bring the documents of a type in
//! line when one changes (spec 2.4 rules 1-2).
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use super::objects::{doc_event, dt_event, dt_ref, mt_event, mt_ref};
use super::{Session, body_reference};
use crate::access::Permission as P;
use crate::error::{Error, Result};
use crate::events::names;
use crate::kernel::Unit;
use crate::model::*;
use crate::model::{ADD_REQUIRED_METADATA_TYPE, REMOVE_METADATA_TYPE, TypePair};

impl Session {
    /// Associates a metadata type with a document type. When `required`, the durable task of
    /// spec 2.4 rule 1 adds it to every existing document of the type. Needs
    /// `documents.document_type_edit` on the document type and `metadata.metadata_type_view` on
    /// the metadata type. Answers the association with both types: who may create it is
    /// shown it.
    ///
    /// A required type must then have a value on every new document of the type:
    ///
    /// ```
    /// use docmeta_core::{Error, MetadataTypeInput, PageRequest};
    ///
    /// let db = docmeta_core::Docmeta::in_memory()?;
    /// let admin = db.system();
    /// let invoice = admin.create_document_type("Invoice")?;
    /// let number = admin.create_metadata_type(MetadataTypeInput::new("number", "Number"))?;
    /// let view = admin.associate(invoice.id, number.id, true)?;
    /// assert!(view.association.required);
    ///
    /// let listed = admin.associations(invoice.id, PageRequest::ALL)?;
    /// assert_eq!(listed.count, 1);
    /// assert_eq!(listed.items[0].metadata_type.name, "number");
    /// assert!(matches!(
    ///     admin.create_document(invoice.id, "No number", &[]),
    ///     Err(Error::Validation { .. })
    /// ));
    /// admin.create_document(invoice.id, "INV-1", &[(number.id, "INV-1")])?;
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
    pub fn associate(
        &self,
        document_type: DocumentTypeId,
        metadata_type: MetadataTypeId,
        required: bool,
    ) -> Result<AssociationView> {
        self.write(|u| self.associate_in(u, document_type, metadata_type, required))
    }

    pub(crate) fn associate_in(
        &self,
        u: &mut Unit<'_>,
        document_type: DocumentTypeId,
        metadata_type: MetadataTypeId,
        required: bool,
    ) -> Result<AssociationView> {
        let dt = self.load_document_type(&mut u.tx, document_type, P::DocumentTypeEdit)?;
        let mt = body_reference(
            "metadata_type_id",
            metadata_type,
            self.load_metadata_type(&mut u.tx, metadata_type, P::MetadataTypeView),
        )?;
        let a = u.tx.insert_association(dt.id, mt.id, required)?;
        self.after_association_saved(u, &dt, &mt, None, required)?;
        Ok(AssociationView {
            association: a,
            document_type: dt,
            metadata_type: mt,
        })
    }

    /// The event of an association created (`before` is `None`) or saved, and the backfill of
    /// a required one.
    fn after_association_saved(
        &self,
        u: &mut Unit<'_>,
        dt: &DocumentType,
        mt: &MetadataType,
        before: Option<bool>,
        required: bool,
    ) -> Result<()> {
        u.event(
            names::METADATA_TYPE_RELATIONSHIP_UPDATED,
            dt_event(dt),
            Some(mt_event(mt)),
            Changes::new().set("required", before, Some(required)),
        )?;
        if required {
            u.task(
                ADD_REQUIRED_METADATA_TYPE,
                &TypePair::new(dt.id, mt.id, self.actor).json(),
            )?;
        }
        Ok(())
    }

    fn load_association(
        &self,
        tx: &mut crate::store::Tx<'_>,
        document_type: DocumentTypeId,
        id: AssociationId,
        permission: P,
    ) -> Result<(DocumentTypeMetadataType, DocumentType, MetadataType)> {
        let dt = self.load_document_type(tx, document_type, P::DocumentTypeView)?;
        let a = tx
            .association(id)?
            .filter(|a| a.document_type_id == document_type)
            .ok_or_else(|| Error::not_found(format!("association {id}")))?;
        let mt = self.load_metadata_type(tx, a.metadata_type_id, P::MetadataTypeView)?;
        if permission != P::DocumentTypeView {
            self.require(
                permission,
                dt_ref(document_type),
                format!("document type {document_type}"),
            )?;
        }
        Ok((a, dt, mt))
    }

    /// Whether this session may fill in documents of `document_type` (create them, or add
    /// values to them) without viewing the type: it then sees the type's associations, the
    /// type named by id only.
    fn fills_in_only(&self, document_type: DocumentTypeId) -> bool {
        let o = dt_ref(document_type);
        !self.can(P::DocumentTypeView, o)
            && (self.can(P::DocumentCreate, o) || self.can(P::DocumentMetadataAdd, o))
    }

    /// One association of a document type, with both types. Needs view on both types, or view
    /// on the metadata type and the right to fill in documents of the type (see
    /// [`associations`](Self::associations)).
    pub fn association(
        &self,
        document_type: DocumentTypeId,
        id: AssociationId,
    ) -> Result<AssociationView> {
        if self.fills_in_only(document_type) {
            return self.read(|tx| {
                let mut dt = tx
                    .document_type(document_type)?
                    .ok_or_else(|| Error::not_found(format!("document type {document_type}")))?;
                dt.label = String::new();
                let a = tx
                    .association(id)?
                    .filter(|a| a.document_type_id == document_type)
                    .ok_or_else(|| Error::not_found(format!("association {id}")))?;
                let mt = self.load_metadata_type(tx, a.metadata_type_id, P::MetadataTypeView)?;
                Ok(AssociationView {
                    association: a,
                    document_type: dt,
                    metadata_type: mt,
                })
            });
        }
        self.read(|tx| {
            let (association, document_type, metadata_type) =
                self.load_association(tx, document_type, id, P::DocumentTypeView)?;
            Ok(AssociationView {
                association,
                document_type,
                metadata_type,
            })
        })
    }

    /// A page of the associations of a document type whose metadata type this session may
    /// view, each with both types. Needs view on the document type; or, to fill in a document
    /// of the type, `documents.document_create` or `metadata.document_metadata_add` on it: then
    /// the document type is named by id only (its label is not the caller's to read), as a
    /// replica's schema names it.
    pub fn associations(
        &self,
        document_type: DocumentTypeId,
        page: PageRequest,
    ) -> Result<Page<AssociationView>> {
        let writer_only = self.fills_in_only(document_type);
        let visible = if writer_only {
            let all = self.read(|tx| {
                if tx.document_type(document_type)?.is_none() {
                    return Err(Error::not_found(format!("document type {document_type}")));
                }
                tx.associations_of_document_type(document_type)
            })?;
            self.visible(P::MetadataTypeView, all, |a| mt_ref(a.metadata_type_id))
        } else {
            self.visible_associations(document_type)?
        };
        let Page { count, items } = Page::of(visible, page);
        let items = self.read(|tx| {
            let mut dt = tx
                .document_type(document_type)?
                .ok_or_else(|| Error::not_found(format!("document type {document_type}")))?;
            if writer_only {
                dt.label = String::new();
            }
            items
                .into_iter()
                .map(|association| {
                    let metadata_type = tx
                        .metadata_type(association.metadata_type_id)?
                        .ok_or_else(|| {
                            Error::not_found(format!(
                                "metadata type {}",
                                association.metadata_type_id
                            ))
                        })?;
                    Ok(AssociationView {
                        association,
                        document_type: dt.clone(),
                        metadata_type,
                    })
                })
                .collect::<Result<Vec<_>>>()
        })?;
        Ok(Page { count, items })
    }

    /// The associations of a document type whose metadata type this session may view.
    pub(crate) fn visible_associations(
        &self,
        document_type: DocumentTypeId,
    ) -> Result<Vec<DocumentTypeMetadataType>> {
        let all = self.read(|tx| {
            self.load_document_type(tx, document_type, P::DocumentTypeView)?;
            tx.associations_of_document_type(document_type)
        })?;
        Ok(self.visible(P::MetadataTypeView, all, |a| mt_ref(a.metadata_type_id)))
    }

    /// Changes whether an association is required (true runs spec 2.4 rule 1 again). Answers
    /// the association with both types.
    pub fn update_association(
        &self,
        document_type: DocumentTypeId,
        id: AssociationId,
        required: bool,
    ) -> Result<AssociationView> {
        self.write(|u| self.update_association_in(u, document_type, id, required))
    }

    pub(crate) fn update_association_in(
        &self,
        u: &mut Unit<'_>,
        document_type: DocumentTypeId,
        id: AssociationId,
        required: bool,
    ) -> Result<AssociationView> {
        let (mut a, dt, mt) =
            self.load_association(&mut u.tx, document_type, id, P::DocumentTypeEdit)?;
        let before = std::mem::replace(&mut a.required, required);
        u.tx.update_association(&a)?;
        self.after_association_saved(u, &dt, &mt, Some(before), required)?;
        Ok(AssociationView {
            association: a,
            document_type: dt,
            metadata_type: mt,
        })
    }

    /// Deletes an association; the durable task of spec 2.4 rule 2 removes the type's values
    /// from the documents of that type.
    pub fn delete_association(
        &self,
        document_type: DocumentTypeId,
        id: AssociationId,
    ) -> Result<()> {
        self.write(|u| {
            let (a, dt, mt) =
                self.load_association(&mut u.tx, document_type, id, P::DocumentTypeEdit)?;
            u.tx.delete_association(a.id)?;
            u.event(
                names::METADATA_TYPE_RELATIONSHIP_UPDATED,
                dt_event(&dt),
                Some(mt_event(&mt)),
                Changes::new().removed("required", a.required),
            )?;
            u.task(
                REMOVE_METADATA_TYPE,
                &TypePair::new(dt.id, mt.id, self.actor).json(),
            )
        })
    }

    // ----- lifecycle task batches (spec 2.4 rules 1-2) ---------------------------------------

    /// Rule 1, one batch: adds `mt` to up to `limit` documents of `dt` that lack it. Returns
    /// how many were added (0: done, or the association is gone or no longer required).
    pub(crate) fn add_required_metadata_batch(
        &self,
        dt: DocumentTypeId,
        mt: MetadataTypeId,
        limit: u32,
    ) -> Result<usize> {
        self.write(|u| {
            if !u.tx.association_of(dt, mt)?.is_some_and(|a| a.required) {
                return Ok(0);
            }
            let docs = u.tx.documents_missing_metadata(dt, mt, limit)?;
            for d in &docs {
                self.add_default_value(u, d, mt)?;
            }
            Ok(docs.len())
        })
    }

    /// Rule 2, one batch: removes up to `limit` values of `mt` from documents of `dt`. Does
    /// nothing when the association exists again.
    pub(crate) fn remove_metadata_type_batch(
        &self,
        dt: DocumentTypeId,
        mt: MetadataTypeId,
        limit: u32,
    ) -> Result<usize> {
        self.write(|u| {
            if u.tx.association_of(dt, mt)?.is_some() {
                return Ok(0);
            }
            let Some(t) = u.tx.metadata_type(mt)? else {
                return Ok(0);
            };
            let values = u.tx.metadata_of_type(mt, Some(dt), limit)?;
            for m in &values {
                u.tx.delete_document_metadata(m.id)?;
                if let Some(d) = u.tx.document(m.document_id)? {
                    u.event(
                        names::DOCUMENT_METADATA_REMOVED,
                        doc_event(&d),
                        Some(mt_event(&t)),
                        Changes::new().removed("value", &m.value),
                    )?;
                }
            }
            Ok(values.len())
        })
    }
}

/// The refusal of a value whose metadata type the document's type is not associated with.
pub(super) fn not_associated(mt: MetadataTypeId) -> Error {
    Error::validation(
        "metadata_type_id",
        format!("Metadata type {mt} is not associated with the document's type."),
    )
}
