//! Document types: creating, reading, renaming and deleting them.
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use super::Session;
use super::objects::{DT, dt_event, dt_ref, mt_event};
use super::rename_conflict;
use crate::access::Permission as P;
use crate::error::{Error, NON_FIELD_ERRORS, Result};
use crate::events::names;
use crate::kernel::Unit;
use crate::metadata::names::check_label;
use crate::model::*;

impl Session {
    /// The document type `id`, read in `tx`, when this session has `permission` on it (see
    /// [`checked`](Self::checked) for the refusals).
    pub(super) fn load_document_type(
        &self,
        tx: &mut crate::store::Tx<'_>,
        id: DocumentTypeId,
        permission: P,
    ) -> Result<DocumentType> {
        self.checked(
            tx.document_type(id)?,
            permission,
            dt_ref(id),
            format!("document type {id}"),
        )
    }

    /// Creates a document type. Needs `documents.document_type_create`. Labels are unique:
    /// another type with the same label is a conflict on `label`.
    ///
    /// ```
    /// use docmeta_core::Error;
    ///
    /// let db = docmeta_core::Docmeta::in_memory()?;
    /// let admin = db.system();
    /// let invoice = admin.create_document_type("Invoice")?;
    /// assert_eq!(admin.document_type(invoice.id)?.label, "Invoice");
    /// assert!(matches!(
    ///     admin.create_document_type("Invoice"),
    ///     Err(Error::Conflict { field, .. }) if field == "label"
    /// ));
    /// let labels: Vec<String> = admin.document_types()?.into_iter().map(|t| t.label).collect();
    /// assert_eq!(labels, ["Invoice"]);
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
    pub fn create_document_type(&self, label: &str) -> Result<DocumentType> {
        self.require_global(P::DocumentTypeCreate)?;
        self.write(|u| self.create_document_type_in(u, label))
    }

    pub(crate) fn create_document_type_in(
        &self,
        u: &mut Unit<'_>,
        label: &str,
    ) -> Result<DocumentType> {
        let label = label.trim();
        check_label("label", label)?;
        let t = u.tx.insert_document_type(label).map_err(|e| {
            rename_conflict(
                e,
                "label",
                "A document type with this label already exists.",
            )
        })?;
        u.event(
            names::DOCUMENT_TYPE_CREATED,
            dt_event(&t),
            None,
            Changes::new().created("label", &t.label),
        )?;
        Ok(t)
    }

    /// One document type. Needs `documents.document_type_view`.
    pub fn document_type(&self, id: DocumentTypeId) -> Result<DocumentType> {
        self.read(|tx| self.load_document_type(tx, id, P::DocumentTypeView))
    }

    /// The document types this session may view.
    pub fn document_types(&self) -> Result<Vec<DocumentType>> {
        let all = self.read(|tx| tx.document_types())?;
        Ok(self.visible(P::DocumentTypeView, all, |t| dt_ref(t.id)))
    }

    /// Renames a document type. Needs `documents.document_type_edit`.
    pub fn update_document_type(&self, id: DocumentTypeId, label: &str) -> Result<DocumentType> {
        let label = label.trim();
        check_label("label", label)?;
        self.write(|u| {
            let mut t = self.load_document_type(&mut u.tx, id, P::DocumentTypeEdit)?;
            let before = std::mem::replace(&mut t.label, label.to_owned());
            u.tx.update_document_type(&t).map_err(|e| {
                rename_conflict(
                    e,
                    "label",
                    "A document type with this label already exists.",
                )
            })?;
            u.event(
                names::DOCUMENT_TYPE_EDITED,
                dt_event(&t),
                None,
                Changes::new().edited("label", before, &t.label),
            )?;
            Ok(t)
        })
    }

    /// Deletes a document type that has no documents (deleting documents is explicit, never a
    /// side effect). Needs `documents.document_type_delete`.
    pub fn delete_document_type(&self, id: DocumentTypeId) -> Result<()> {
        self.write(|u| {
            let t = self.load_document_type(&mut u.tx, id, P::DocumentTypeDelete)?;
            let n = u.tx.count_documents_of_type(id)?;
            if n > 0 {
                return Err(Error::validation(NON_FIELD_ERRORS, format!("The document type still has {n} documents; delete them or change their type first.")));
            }
            for a in u.tx.associations_of_document_type(id)? {
                u.tx.delete_association(a.id)?;
                if let Some(mt) = u.tx.metadata_type(a.metadata_type_id)? {
                    u.event(
                        names::METADATA_TYPE_RELATIONSHIP_UPDATED,
                        dt_event(&t),
                        Some(mt_event(&mt)),
                        Changes::new().removed("required", a.required),
                    )?;
                }
            }
            u.forget_object(DT, dt_ref(id))?;
            // Workflows bound to it stay, bound to the types left (found by the access matrix:
            // the binding made the deletion fail with a foreign-key error).
            u.tx.unbind_workflows_from(id)?;
            u.tx.delete_document_type(id)?;
            u.event(
                names::DOCUMENT_TYPE_DELETED,
                dt_event(&t),
                None,
                Changes::new().removed("label", &t.label),
            )
        })
    }
}
