//! Metadata types, document types, documents, associations and values (spec 2, 4.1-4.3).
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use std::sync::Arc;

use super::views::MetadataValueView;
use super::{
    Inputs, Session, body_reference, event_object, invalid_reference, obj, parents_change,
    rename_conflict,
};
use crate::access::{ObjectKind, Permission as P};
use crate::error::{Error, NON_FIELD_ERRORS, Result};
use crate::events::names;
use crate::kernel::CachedDocument;
use crate::kernel::Unit;
use crate::metadata::names::check_label;
use crate::metadata::{CompiledMetadataType, check_definition};
use crate::model::*;
use crate::model::{ADD_REQUIRED_METADATA_TYPE, REMOVE_METADATA_TYPE, TypePair};

/// A document with its metadata values, each with its type.
type DocumentWithMetadata = (Document, Vec<(DocumentMetadata, MetadataType)>);

/// Longest document label.
const MAX_LABEL_LEN: usize = 255;

const MT: &str = "metadata.metadatatype";
const DT: &str = "documents.documenttype";
const DOC: &str = "documents.document";

fn mt_ref(id: MetadataTypeId) -> crate::access::ObjectRef {
    obj(ObjectKind::METADATA_TYPE, id.0)
}
fn dt_ref(id: DocumentTypeId) -> crate::access::ObjectRef {
    obj(ObjectKind::DOCUMENT_TYPE, id.0)
}
fn doc_ref(id: DocumentId) -> crate::access::ObjectRef {
    obj(ObjectKind::DOCUMENT, id.0)
}

fn mt_event(t: &MetadataType) -> crate::events::EventObject {
    event_object(MT, t.id.0, &t.label)
}
fn dt_event(t: &DocumentType) -> crate::events::EventObject {
    event_object(DT, t.id.0, &t.label)
}
fn doc_event(d: &Document) -> crate::events::EventObject {
    event_object(DOC, d.id.0, &d.label)
}

/// One value to add in a batch: the document, the metadata type, the submitted value.
pub type NewValue<'a> = (DocumentId, MetadataTypeId, &'a str);

/// Most documents one [`Session::create_documents`] call may create: a batch is one
/// transaction, and a bound keeps its memory and the time it holds the writer's lock bounded.
pub const MAX_DOCUMENT_BATCH: usize = 1000;

/// One document of a batch ([`Session::create_documents`]): its type, its label and its
/// initial metadata values, as [`Session::create_document`] takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewDocument<'a> {
    /// The document's type.
    pub document_type: DocumentTypeId,
    /// Its label.
    pub label: &'a str,
    /// Its initial values: (metadata type, submitted value).
    pub values: &'a [(MetadataTypeId, &'a str)],
}

impl Session {
    // ----- loading with checks ---------------------------------------------------------------

    fn load_metadata_type(
        &self,
        tx: &mut crate::store::Tx<'_>,
        id: MetadataTypeId,
        permission: P,
    ) -> Result<MetadataType> {
        self.checked(
            tx.metadata_type(id)?,
            permission,
            mt_ref(id),
            format!("metadata type {id}"),
        )
    }

    fn load_document_type(
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

    fn load_document(
        &self,
        tx: &mut crate::store::Tx<'_>,
        id: DocumentId,
        permission: P,
    ) -> Result<Document> {
        self.checked(
            tx.document(id)?,
            permission,
            doc_ref(id),
            format!("document {id}"),
        )
    }

    /// Checks a document-metadata permission on both the document and the metadata type.
    fn require_metadata_permission(
        &self,
        permission: P,
        doc: &Document,
        mt: MetadataTypeId,
    ) -> Result<()> {
        self.require(permission, doc_ref(doc.id), format!("document {}", doc.id))?;
        self.require_on_metadata_type(permission, mt)
    }

    /// `permission` on a metadata type: `403` when the caller knows the type (may view it or
    /// its values), not found otherwise.
    fn require_on_metadata_type(&self, permission: P, mt: MetadataTypeId) -> Result<()> {
        if self.can(permission, mt_ref(mt)) {
            return Ok(());
        }
        if self.can(P::MetadataTypeView, mt_ref(mt))
            || self.can(P::DocumentMetadataView, mt_ref(mt))
        {
            Err(Error::PermissionDenied(format!(
                "'{}' is needed on metadata type {mt}",
                permission.key()
            )))
        } else {
            Err(Error::not_found(format!("metadata type {mt}")))
        }
    }

    // ----- metadata types (spec 4.1) ---------------------------------------------------------

    /// Creates a metadata type. Needs `metadata.metadata_type_create`. The session's user is
    /// recorded as the shaper of its default and lookup (issue #32): whoever those templates
    /// render for later, they see no more than this user may view.
    pub fn create_metadata_type(&self, input: MetadataTypeInput) -> Result<MetadataType> {
        self.require_global(P::MetadataTypeCreate)?;
        let input = MetadataTypeInput {
            name: input.name.trim().to_owned(),
            ..input
        };
        self.write(|u| self.create_metadata_type_in(u, input.clone()))
    }

    pub(crate) fn create_metadata_type_in(
        &self,
        u: &mut Unit<'_>,
        input: MetadataTypeInput,
    ) -> Result<MetadataType> {
        let input = MetadataTypeInput {
            name: input.name.trim().to_owned(),
            ..input
        };
        check_definition(&input, self.db.classes(), self.db.templates())?;
        let t = u.tx.insert_metadata_type(&input).map_err(|e| {
            rename_conflict(e, "name", "A metadata type with this name already exists.")
        })?;
        // Its templates will render for others: they see no more than their author (#32).
        let shapers = MetadataTypeShapers {
            default: Shapers::of(self.actor, &t.default),
            lookup: Shapers::of(self.actor, &t.lookup),
        };
        u.tx.set_metadata_type_shapers(t.id, &shapers)?;
        u.event(names::METADATA_TYPE_CREATED, mt_event(&t), None)?;
        Ok(t)
    }

    /// One metadata type. Needs `metadata.metadata_type_view`.
    pub fn metadata_type(&self, id: MetadataTypeId) -> Result<MetadataType> {
        self.read(|tx| self.load_metadata_type(tx, id, P::MetadataTypeView))
    }

    /// A metadata type by name. Needs `metadata.metadata_type_view`.
    pub fn metadata_type_by_name(&self, name: &str) -> Result<MetadataType> {
        let t = self
            .read(|tx| tx.metadata_type_by_name(name))?
            .ok_or_else(|| Error::not_found(format!("metadata type '{name}'")))?;
        self.require(
            P::MetadataTypeView,
            mt_ref(t.id),
            format!("metadata type '{name}'"),
        )?;
        Ok(t)
    }

    /// The metadata types this session may view.
    pub fn metadata_types(&self) -> Result<Vec<MetadataType>> {
        let all = self.read(|tx| tx.metadata_types())?;
        Ok(self.visible(P::MetadataTypeView, all, |t| mt_ref(t.id)))
    }

    /// Replaces every writable field of a metadata type. Needs `metadata.metadata_type_edit`.
    /// Changing the default or the lookup adds the session's user to that template's shapers
    /// (issue #32): it then renders with no more than what every one of them may view, whoever
    /// runs it. Emptying a template clears its shapers; a template saved unchanged keeps them.
    pub fn update_metadata_type(
        &self,
        id: MetadataTypeId,
        input: MetadataTypeInput,
    ) -> Result<MetadataType> {
        self.write(|u| self.update_metadata_type_in(u, id, input.clone()))
    }

    pub(crate) fn update_metadata_type_in(
        &self,
        u: &mut Unit<'_>,
        id: MetadataTypeId,
        input: MetadataTypeInput,
    ) -> Result<MetadataType> {
        let input = MetadataTypeInput {
            name: input.name.trim().to_owned(),
            ..input
        };
        check_definition(&input, self.db.classes(), self.db.templates())?;
        {
            let old = self.load_metadata_type(&mut u.tx, id, P::MetadataTypeEdit)?;
            let t = input.into_record(old.id);
            u.tx.update_metadata_type(&t).map_err(|e| {
                rename_conflict(e, "name", "A metadata type with this name already exists.")
            })?;
            // Whoever changes a template becomes one of its shapers: it keeps seeing no more
            // than each of them may (#32). Saving other fields shapes nothing.
            let before = u.tx.metadata_type_shapers(id)?.unwrap_or_default();
            let shapers = MetadataTypeShapers {
                default: before.default.after(self.actor, &old.default, &t.default),
                lookup: before.lookup.after(self.actor, &old.lookup, &t.lookup),
            };
            if shapers != before {
                u.tx.set_metadata_type_shapers(id, &shapers)?;
            }
            u.invalidated.push(id);
            u.event(names::METADATA_TYPE_EDITED, mt_event(&t), None)?;
            Ok(t)
        }
    }

    /// Deletes a metadata type (spec 2.4 rule 3): its associations and every value of it are
    /// deleted in the same transaction, with their events. Needs `metadata.metadata_type_delete`.
    pub fn delete_metadata_type(&self, id: MetadataTypeId) -> Result<()> {
        self.write(|u| {
            let t = self.load_metadata_type(&mut u.tx, id, P::MetadataTypeDelete)?;
            for a in u.tx.associations_of_metadata_type(id)? {
                u.tx.delete_association(a.id)?;
                if let Some(dt) = u.tx.document_type(a.document_type_id)? {
                    u.event(
                        names::METADATA_TYPE_RELATIONSHIP_UPDATED,
                        dt_event(&dt),
                        Some(mt_event(&t)),
                    )?;
                }
            }
            let values = u.tx.values_of_metadata_type(id)?;
            for (dm, doc, label) in values {
                u.tx.delete_document_metadata(dm)?;
                u.event(
                    names::DOCUMENT_METADATA_REMOVED,
                    event_object(DOC, doc, &label),
                    Some(mt_event(&t)),
                )?;
            }
            u.forget_object(MT, mt_ref(id))?;
            u.tx.delete_metadata_type(id)?;
            u.invalidated.push(id);
            u.event(names::METADATA_TYPE_DELETED, mt_event(&t), None)
        })
    }

    /// The allowed values of a metadata type's lookup (for drop-downs), rendered for `document`
    /// when given, with what both this session and the lookup's shapers may view; `None` when
    /// the type has no lookup. Needs `metadata.metadata_type_view`.
    pub fn lookup_choices(
        &self,
        id: MetadataTypeId,
        document: Option<DocumentId>,
    ) -> Result<Option<Vec<String>>> {
        self.catch_up()?;
        let db = self.db.clone();
        db.read_rendering(self.actor, |tx, renders| {
            self.load_metadata_type(tx, id, P::MetadataTypeView)?;
            let doc = match document {
                Some(d) => Some(self.load_document(tx, d, P::DocumentView)?),
                None => None,
            };
            let compiled = db.compiled(tx, id)?;
            let mut inputs = Inputs {
                db: &db,
                tx,
                document: doc.as_ref(),
                view: &self.view,
                shapers: &compiled.shapers,
                renders,
            };
            compiled.lookup_choices(db.templates(), &mut inputs)
        })
    }

    /// The choices of a metadata type's lookup rendered for one document (spec 2.7), so that
    /// a client can offer a drop-down while adding or editing its value; `None` when the type
    /// has no lookup (any value is accepted). Needs `documents.document_view` on the document;
    /// the type must be associated with the document's type and known to the caller
    /// (`metadata.metadata_type_view` or `metadata.document_metadata_view` on it), else it is
    /// not found.
    pub fn document_lookup_choices(
        &self,
        document: DocumentId,
        metadata_type: MetadataTypeId,
    ) -> Result<Option<Vec<String>>> {
        self.catch_up()?;
        let db = self.db.clone();
        db.read_rendering(self.actor, |tx, renders| {
            let doc = self.load_document(tx, document, P::DocumentView)?;
            let missing = || Error::not_found(format!("metadata type {metadata_type}"));
            tx.association_of(doc.document_type_id, metadata_type)?
                .ok_or_else(missing)?;
            if !self.can(P::MetadataTypeView, mt_ref(metadata_type))
                && !self.can(P::DocumentMetadataView, mt_ref(metadata_type))
            {
                return Err(missing());
            }
            let compiled = db.compiled(tx, metadata_type)?;
            let mut inputs = Inputs {
                db: &db,
                tx,
                document: Some(&doc),
                view: &self.view,
                shapers: &compiled.shapers,
                renders,
            };
            compiled.lookup_choices(db.templates(), &mut inputs)
        })
    }

    // ----- document types --------------------------------------------------------------------

    /// Creates a document type. Needs `documents.document_type_create`.
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
        u.event(names::DOCUMENT_TYPE_CREATED, dt_event(&t), None)?;
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
            t.label = label.to_owned();
            u.tx.update_document_type(&t).map_err(|e| {
                rename_conflict(
                    e,
                    "label",
                    "A document type with this label already exists.",
                )
            })?;
            u.event(names::DOCUMENT_TYPE_EDITED, dt_event(&t), None)?;
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
                    u.event(names::METADATA_TYPE_RELATIONSHIP_UPDATED, dt_event(&t), Some(mt_event(&mt)))?;
                }
            }
            u.forget_object(DT, dt_ref(id))?;
            // Workflows bound to it stay, bound to the types left (found by the access matrix:
            // the binding made the deletion fail with a foreign-key error).
            u.tx.unbind_workflows_from(id)?;
            u.tx.delete_document_type(id)?;
            u.event(names::DOCUMENT_TYPE_DELETED, dt_event(&t), None)
        })
    }

    // ----- associations (spec 2.2, 4.3) ------------------------------------------------------

    /// Associates a metadata type with a document type. When `required`, the durable task of
    /// spec 2.4 rule 1 adds it to every existing document of the type. Needs
    /// `documents.document_type_edit` on the document type and `metadata.metadata_type_view` on
    /// the metadata type.
    pub fn associate(
        &self,
        document_type: DocumentTypeId,
        metadata_type: MetadataTypeId,
        required: bool,
    ) -> Result<DocumentTypeMetadataType> {
        self.write(|u| self.associate_in(u, document_type, metadata_type, required))
    }

    pub(crate) fn associate_in(
        &self,
        u: &mut Unit<'_>,
        document_type: DocumentTypeId,
        metadata_type: MetadataTypeId,
        required: bool,
    ) -> Result<DocumentTypeMetadataType> {
        let dt = self.load_document_type(&mut u.tx, document_type, P::DocumentTypeEdit)?;
        let mt = body_reference(
            "metadata_type_id",
            metadata_type,
            self.load_metadata_type(&mut u.tx, metadata_type, P::MetadataTypeView),
        )?;
        let a = u.tx.insert_association(dt.id, mt.id, required)?;
        self.after_association_saved(u, &dt, &mt, required)?;
        Ok(a)
    }

    fn after_association_saved(
        &self,
        u: &mut Unit<'_>,
        dt: &DocumentType,
        mt: &MetadataType,
        required: bool,
    ) -> Result<()> {
        u.event(
            names::METADATA_TYPE_RELATIONSHIP_UPDATED,
            dt_event(dt),
            Some(mt_event(mt)),
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

    /// One association of a document type. Needs view on both types.
    pub fn association(
        &self,
        document_type: DocumentTypeId,
        id: AssociationId,
    ) -> Result<DocumentTypeMetadataType> {
        self.read(|tx| {
            self.load_association(tx, document_type, id, P::DocumentTypeView)
                .map(|(a, _, _)| a)
        })
    }

    /// The associations of a document type whose metadata type this session may view.
    pub fn associations(
        &self,
        document_type: DocumentTypeId,
    ) -> Result<Vec<DocumentTypeMetadataType>> {
        let all = self.read(|tx| {
            self.load_document_type(tx, document_type, P::DocumentTypeView)?;
            tx.associations_of_document_type(document_type)
        })?;
        Ok(self.visible(P::MetadataTypeView, all, |a| mt_ref(a.metadata_type_id)))
    }

    /// Changes whether an association is required (true runs spec 2.4 rule 1 again).
    pub fn update_association(
        &self,
        document_type: DocumentTypeId,
        id: AssociationId,
        required: bool,
    ) -> Result<DocumentTypeMetadataType> {
        self.write(|u| self.update_association_in(u, document_type, id, required))
    }

    pub(crate) fn update_association_in(
        &self,
        u: &mut Unit<'_>,
        document_type: DocumentTypeId,
        id: AssociationId,
        required: bool,
    ) -> Result<DocumentTypeMetadataType> {
        let (mut a, dt, mt) =
            self.load_association(&mut u.tx, document_type, id, P::DocumentTypeEdit)?;
        a.required = required;
        u.tx.update_association(&a)?;
        self.after_association_saved(u, &dt, &mt, required)?;
        Ok(a)
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
            )?;
            u.task(
                REMOVE_METADATA_TYPE,
                &TypePair::new(dt.id, mt.id, self.actor).json(),
            )
        })
    }

    // ----- documents -------------------------------------------------------------------------

    /// Creates a document of `document_type` with initial metadata `values`, in one
    /// transaction. Every value runs through the pipeline of spec 2.10; required types not given
    /// are added with their rendered default. A required type left without a value (not given,
    /// and no default) refuses the document: spec 2.2, "a required metadata cannot be left
    /// without a value" (`Error::Validation` on `metadata`, naming the type). Needs
    /// `documents.document_create` on the document type, and for each given value
    /// `metadata.document_metadata_add` on the document type and the metadata type; a type that
    /// does not exist or that the caller cannot see is invalid `metadata_type_id`. A refused
    /// value names its entry (counted from 0): the error's field is `metadata[i].value`,
    /// `metadata[i].metadata_type_id`, ... (see [`Error::field_path`]).
    pub fn create_document(
        &self,
        document_type: DocumentTypeId,
        label: &str,
        values: &[(MetadataTypeId, &str)],
    ) -> Result<Document> {
        let label = crate::model::check_text("label", label, MAX_LABEL_LEN)?;
        self.write(|u| self.create_document_in(u, document_type, label, values))
    }

    /// Creates many documents, each with its initial values, in one transaction (all or
    /// nothing): the batch form of [`create_document`](Self::create_document), for imports.
    /// Each document gets exactly what `create_document` gives it (the same permission checks,
    /// the pipeline of spec 2.10, required defaults, events, workflow starts and index work),
    /// and the documents are returned in the order given. At most [`MAX_DOCUMENT_BATCH`]
    /// documents: more is `Error::Validation` on `documents`. A refused entry names itself
    /// (counted from 0): `documents[i].label`, `documents[i].metadata[j].value`, ... (see
    /// [`Error::field_path`]); errors without a field (a permission refused) are returned as
    /// they are and undo the whole batch too.
    pub fn create_documents(&self, documents: &[NewDocument<'_>]) -> Result<Vec<Document>> {
        if documents.len() > MAX_DOCUMENT_BATCH {
            return Err(Error::validation(
                "documents",
                format!(
                    "Ensure this field has no more than {MAX_DOCUMENT_BATCH} elements (got {}).",
                    documents.len()
                ),
            ));
        }
        let labels = documents
            .iter()
            .enumerate()
            .map(|(i, d)| {
                crate::model::check_text("label", d.label, MAX_LABEL_LEN)
                    .map_err(|e| e.in_entry("documents", i))
            })
            .collect::<Result<Vec<&str>>>()?;
        self.write(|u| {
            let mut created = Vec::with_capacity(documents.len());
            let mut refused = None;
            for (i, (d, label)) in documents.iter().zip(&labels).enumerate() {
                match self.create_document_in(u, d.document_type, label, d.values) {
                    Ok(doc) => created.push(doc),
                    // An entry that needs a template rendered first: the attempt will be rolled
                    // back to render it, so the later entries go on to ask for theirs in the same
                    // attempt (one attempt per link of a chain of defaults, not one per entry).
                    Err(e) if u.renders.has_pending() => {
                        refused.get_or_insert(e.in_entry("documents", i));
                    }
                    Err(e) => return Err(refused.unwrap_or(e.in_entry("documents", i))),
                }
            }
            match refused {
                Some(e) => Err(e),
                None => Ok(created),
            }
        })
    }

    pub(crate) fn create_document_in(
        &self,
        u: &mut Unit<'_>,
        document_type: DocumentTypeId,
        label: &str,
        values: &[(MetadataTypeId, &str)],
    ) -> Result<Document> {
        {
            let dt = body_reference(
                "document_type_id",
                document_type,
                self.load_document_type(&mut u.tx, document_type, P::DocumentCreate),
            )?;
            let doc = u.tx.insert_document(label, dt.id, u.now())?;
            u.access
                .push(parents_change(doc_ref(doc.id), vec![dt_ref(dt.id)]));
            u.event(names::DOCUMENT_CREATED, doc_event(&doc), None)?;
            let associations = u.tx.associations_of_document_type(dt.id)?;
            for (index, (mt, value)) in values.iter().enumerate() {
                // A refused value names its entry: `metadata[index].field`.
                self.add_initial_value(u, &doc, &associations, *mt, value)
                    .map_err(|e| e.in_entry("metadata", index))?;
            }
            for a in associations
                .iter()
                .filter(|a| a.required && !values.iter().any(|(mt, _)| *mt == a.metadata_type_id))
            {
                let added = self.add_default_value(u, &doc, a.metadata_type_id)?;
                if u.renders.has_pending() {
                    // Its default must be rendered first (the attempt is rolled back to render
                    // it): the next defaults may read its value, so they wait for the next
                    // attempt rather than render from a document without it.
                    return Err(Error::validation(
                        "metadata",
                        "a default is rendered before the change is written",
                    ));
                }
                if added.is_some_and(|m| m.value.is_empty()) {
                    let t = self.db.compiled(&mut u.tx, a.metadata_type_id)?;
                    // A default that failed to render (too slow, past the change's render
                    // budget, ...) says so, rather than that there is no default. (Its render
                    // was made or refused already: this asks the unit's renders again.)
                    if !t.metadata_type.default.is_empty()
                        && let Err(Error::Validation { message, .. }) =
                            self.process(u, &t, &doc, "", false)
                    {
                        return Err(Error::validation(
                            "metadata",
                            format!(
                                "'{}' is required for documents of this type and its default \
                                 failed: {message}",
                                t.metadata_type.name
                            ),
                        ));
                    }
                    return Err(Error::validation(
                        "metadata",
                        format!(
                            "'{}' is required for documents of this type and has no default: give it a value.",
                            t.metadata_type.name
                        ),
                    ));
                }
            }
            self.db.document_created(u, &doc)?;
            Ok(doc)
        }
    }

    /// One of the initial `values` of the new document `doc`, whose type has `associations`.
    fn add_initial_value(
        &self,
        u: &mut Unit<'_>,
        doc: &Document,
        associations: &[DocumentTypeMetadataType],
        mt: MetadataTypeId,
        value: &str,
    ) -> Result<()> {
        let Some(a) = associations.iter().find(|a| a.metadata_type_id == mt) else {
            // A type that does not exist, or that the caller may not see, is an invalid
            // reference; one the caller sees that the document's type lacks is not associated.
            let seen = u.tx.metadata_type(mt)?.is_some()
                && (self.can(P::MetadataTypeView, mt_ref(mt))
                    || self.can(P::DocumentMetadataView, mt_ref(mt)));
            return Err(if seen {
                not_associated(mt)
            } else {
                invalid_reference("metadata_type_id", mt)
            });
        };
        // The document is new: its type's ACLs are what it will inherit.
        self.require(
            P::DocumentMetadataAdd,
            dt_ref(doc.document_type_id),
            format!("document type {}", doc.document_type_id),
        )?;
        body_reference(
            "metadata_type_id",
            mt,
            self.require_on_metadata_type(P::DocumentMetadataAdd, mt),
        )?;
        self.add_value(u, doc, mt, value, a.required).map(drop)
    }

    /// Refuses, as [`create_document`](Self::create_document) would (and, `with_file`,
    /// [`create_document_with_file`](Self::create_document_with_file)), a caller who may not
    /// create a document of `document_type`, without creating anything: a type that does not
    /// exist or that the caller may not see is `Error::Validation` on `document_type_id`;
    /// without `documents.document_create` on it (or, `with_file`,
    /// `documents.document_file_new`), `Error::PermissionDenied`. The label and values are not
    /// checked. For a face that receives a document's content as a stream: it checks this
    /// before reading the content, so a caller who may not create the document never makes it
    /// receive (or store) a byte of it.
    pub fn check_create_document(
        &self,
        document_type: DocumentTypeId,
        with_file: bool,
    ) -> Result<()> {
        self.read(|tx| {
            let dt = body_reference(
                "document_type_id",
                document_type,
                self.load_document_type(tx, document_type, P::DocumentCreate),
            )?;
            if with_file {
                self.require(
                    P::DocumentFileNew,
                    dt_ref(dt.id),
                    format!("document type {}", dt.id),
                )?;
            }
            Ok(())
        })
    }

    /// Creates a document as [`create_document`](Self::create_document) does, with its first
    /// file, all or nothing: the bytes are stored first (streaming), then the document, its
    /// values and the file's record commit in one transaction; if anything is refused the
    /// stored bytes are removed and nothing is created. Needs, besides what `create_document`
    /// needs, `documents.document_file_new` on the document type (what the new document will
    /// inherit).
    pub fn create_document_with_file(
        &self,
        document_type: DocumentTypeId,
        label: &str,
        values: &[(MetadataTypeId, &str)],
        filename: &str,
        content: &mut dyn std::io::Read,
    ) -> Result<(Document, DocumentFile)> {
        let label = crate::model::check_text("label", label, MAX_LABEL_LEN)?;
        // Refused before the content is stored, as the transaction would refuse after.
        self.check_create_document(document_type, true)?;
        let filename = crate::files::clean_filename(filename);
        let storage = &self.db.inner.files;
        let mut hashing = crate::files::Hashing::new(content);
        let name = storage.put(&mut hashing)?;
        let (size, checksum) = hashing.finish();
        let result = self.write(|u| {
            let doc = self.create_document_in(u, document_type, label, values)?;
            self.require(
                P::DocumentFileNew,
                dt_ref(doc.document_type_id),
                format!("document type {}", doc.document_type_id),
            )?;
            let file = u.tx.insert_document_file(
                &DocumentFile {
                    id: DocumentFileId(0),
                    document_id: doc.id,
                    filename: filename.clone(),
                    size,
                    checksum: checksum.clone(),
                    mimetype: crate::files::guess_mime(&filename),
                    created: chrono::Utc::now(),
                },
                &name,
                storage.encrypts(),
            )?;
            u.event(
                names::DOCUMENT_FILE_CREATED,
                event_object("documents.documentfile", file.id.0, &file.filename),
                Some(doc_event(&doc)),
            )?;
            Ok((doc, file))
        });
        if result.is_err() {
            let _ = storage.delete(&name);
        }
        result
    }

    /// One document. Needs `documents.document_view`.
    pub fn document(&self, id: DocumentId) -> Result<Document> {
        self.read(|tx| self.load_document(tx, id, P::DocumentView))
    }

    /// Up to `limit` documents this session may view with an id above `after`, optionally of
    /// one type, by id.
    pub fn documents(
        &self,
        of_type: Option<DocumentTypeId>,
        after: DocumentId,
        limit: u32,
    ) -> Result<Vec<Document>> {
        let mut out = Vec::new();
        let mut cursor = after;
        while out.len() < limit as usize {
            let page = self.read(|tx| tx.documents(of_type, cursor, 1000))?;
            let Some(last) = page.last().map(|d| d.id) else {
                break;
            };
            let exhausted = page.len() < 1000;
            out.extend(self.visible(P::DocumentView, page, |d| doc_ref(d.id)));
            if exhausted {
                break;
            }
            cursor = last;
        }
        out.truncate(limit as usize);
        Ok(out)
    }

    /// The ids of every document this session may view, optionally of one type, by id (for
    /// counting and paging).
    pub fn document_ids(&self, of_type: Option<DocumentTypeId>) -> Result<Vec<DocumentId>> {
        let ids = self.read(|tx| tx.document_ids(of_type))?;
        let Actor::User(user) = self.actor else {
            return Ok(ids);
        };
        let snapshot = self.snapshot();
        let mut visible = Vec::new();
        snapshot.filter_each(user, P::DocumentView, ids.into_iter().map(doc_ref), |o| {
            visible.push(DocumentId(o.id))
        });
        Ok(visible)
    }

    /// Renames a document. Needs `documents.document_edit`.
    pub fn update_document(&self, id: DocumentId, label: &str) -> Result<Document> {
        let label = crate::model::check_text("label", label, MAX_LABEL_LEN)?;
        self.write(|u| {
            let mut d = self.load_document(&mut u.tx, id, P::DocumentEdit)?;
            d.label = label.to_owned();
            u.tx.update_document(&d)?;
            u.event(names::DOCUMENT_EDITED, doc_event(&d), None)?;
            Ok(d)
        })
    }

    /// Changes a document's type (spec 2.4 rule 4, which the specification leaves "not shown";
    /// `api.md` fixes it): every value whose metadata type is not associated with the new type
    /// is removed, each with its `metadata.document_metadata_removed` event (which fires the
    /// workflow triggers of the document's instances as any removal does); each required type
    /// of the new type that the document lacks is added with its default (or empty), with its
    /// `metadata.document_metadata_added` event; then `documents.document_type_changed`, and the
    /// workflows bound to the new type start.
    ///
    /// Moving a document puts it under the new type's ACLs, so it needs what creating a
    /// document of that type and holding this one need: viewing the document (`NotFound`
    /// otherwise), `documents.document_change_type` on it (`PermissionDenied`), viewing the new
    /// type (`documents.document_type_view`; a `Validation` error on `document_type_id`
    /// otherwise, as for any reference in a body) and `documents.document_create` on it
    /// (`PermissionDenied`). Values removed need no permission of their own (the move is
    /// what removes them, and spec 2.4 rule 4 removes them for everyone); their events name the
    /// metadata type only to readers who may view it, like every event.
    pub fn change_document_type(
        &self,
        id: DocumentId,
        new_type: DocumentTypeId,
    ) -> Result<Document> {
        self.write(|u| {
            // Viewing first: `document_change_type` alone used to move a document its holder
            // could not see into a type whose ACLs they enjoy (issue #32).
            let mut d = self.load_document(&mut u.tx, id, P::DocumentView)?;
            self.require_with(
                &mut u.tx,
                P::DocumentChangeType,
                doc_ref(id),
                format!("document {id}"),
            )?;
            let dt = body_reference(
                "document_type_id",
                new_type,
                self.load_document_type(&mut u.tx, new_type, P::DocumentTypeView),
            )?;
            self.require_with(
                &mut u.tx,
                P::DocumentCreate,
                dt_ref(dt.id),
                format!("document type {}", dt.id),
            )?;
            if d.document_type_id == dt.id {
                return Ok(d);
            }
            d.document_type_id = dt.id;
            u.tx.update_document(&d)?;
            u.access
                .push(parents_change(doc_ref(d.id), vec![dt_ref(dt.id)]));
            let associations = u.tx.associations_of_document_type(dt.id)?;
            for m in u.tx.metadata_of_document(d.id)? {
                if !associations
                    .iter()
                    .any(|a| a.metadata_type_id == m.metadata_type_id)
                {
                    u.tx.delete_document_metadata(m.id)?;
                    let t =
                        u.tx.metadata_type(m.metadata_type_id)?
                            .ok_or_else(|| Error::not_found("metadata type"))?;
                    u.event(
                        names::DOCUMENT_METADATA_REMOVED,
                        doc_event(&d),
                        Some(mt_event(&t)),
                    )?;
                }
            }
            for a in associations.iter().filter(|a| a.required) {
                self.add_default_value(u, &d, a.metadata_type_id)?;
            }
            u.event(
                names::DOCUMENT_TYPE_CHANGED,
                doc_event(&d),
                Some(dt_event(&dt)),
            )?;
            self.db.document_created(u, &d)?;
            Ok(d)
        })
    }

    /// Deletes a document with its metadata and ACLs. Needs `documents.document_delete`.
    pub fn delete_document(&self, id: DocumentId) -> Result<()> {
        self.write(|u| {
            let d = self.load_document(&mut u.tx, id, P::DocumentDelete)?;
            for f in u.tx.document_files(id)? {
                u.forget_object(
                    "documents.documentfile",
                    super::obj(ObjectKind::DOCUMENT_FILE, f.file.id.0),
                )?;
                u.tx.delete_document_file(f.file.id)?;
                u.unlink.push(f.storage_name);
            }
            u.forget_object(DOC, doc_ref(id))?;
            u.tx.delete_workflow_instances_of(id)?;
            u.tx.delete_document(id)?;
            u.event(names::DOCUMENT_DELETED, doc_event(&d), None)
        })
    }

    // ----- document metadata (spec 2.3, 4.2) -------------------------------------------------

    /// Runs the pipeline and inserts the value, with its event.
    fn add_value(
        &self,
        u: &mut Unit<'_>,
        doc: &Document,
        mt: MetadataTypeId,
        value: &str,
        required: bool,
    ) -> Result<DocumentMetadata> {
        let compiled = self.db.compiled(&mut u.tx, mt)?;
        let value = self.process(u, &compiled, doc, value, required)?;
        let m = u.tx.insert_document_metadata(doc.id, mt, &value)?;
        u.event(
            names::DOCUMENT_METADATA_ADDED,
            doc_event(doc),
            Some(mt_event(&compiled.metadata_type)),
        )?;
        Ok(m)
    }

    /// Adds a required type with its rendered default, or empty when the default does not
    /// pass the pipeline; does nothing when the document already has the type.
    fn add_default_value(
        &self,
        u: &mut Unit<'_>,
        doc: &Document,
        mt: MetadataTypeId,
    ) -> Result<Option<DocumentMetadata>> {
        let compiled = self.db.compiled(&mut u.tx, mt)?;
        let value = self
            .process(u, &compiled, doc, "", false)
            .unwrap_or_default();
        let added =
            u.tx.insert_document_metadata_if_absent(doc.id, mt, &value)?;
        if added.is_some() {
            u.event(
                names::DOCUMENT_METADATA_ADDED,
                doc_event(doc),
                Some(mt_event(&compiled.metadata_type)),
            )?;
        }
        Ok(added)
    }

    fn process(
        &self,
        u: &mut Unit<'_>,
        compiled: &Arc<CompiledMetadataType>,
        doc: &Document,
        value: &str,
        required: bool,
    ) -> Result<String> {
        let mut inputs = Inputs {
            db: &self.db,
            tx: &mut u.tx,
            document: Some(doc),
            view: &self.view,
            shapers: &compiled.shapers,
            renders: u.renders,
        };
        compiled.process(value, required, self.db.templates(), &mut inputs)
    }

    /// Adds a metadata value to a document (spec 2.10). The type must be associated with the
    /// document's type; a second value of the same type is a conflict. Needs
    /// `metadata.document_metadata_add` on the document and on the metadata type.
    pub fn add_document_metadata(
        &self,
        document: DocumentId,
        metadata_type: MetadataTypeId,
        value: &str,
    ) -> Result<DocumentMetadata> {
        self.write(|u| self.add_document_metadata_in(u, document, metadata_type, value))
    }

    pub(crate) fn add_document_metadata_in(
        &self,
        u: &mut Unit<'_>,
        document: DocumentId,
        metadata_type: MetadataTypeId,
        value: &str,
    ) -> Result<DocumentMetadata> {
        let doc = self.load_document(&mut u.tx, document, P::DocumentView)?;
        self.require(
            P::DocumentMetadataAdd,
            doc_ref(doc.id),
            format!("document {}", doc.id),
        )?;
        body_reference(
            "metadata_type_id",
            metadata_type,
            self.require_on_metadata_type(P::DocumentMetadataAdd, metadata_type),
        )?;
        let a =
            u.tx.association_of(doc.document_type_id, metadata_type)?
                .ok_or_else(|| not_associated(metadata_type))?;
        self.add_value(u, &doc, metadata_type, value, a.required)
    }

    /// Adds many values in one transaction (all or nothing): the batch form of
    /// [`add_document_metadata`](Self::add_document_metadata), for imports.
    pub fn add_document_metadata_batch(
        &self,
        values: &[NewValue<'_>],
    ) -> Result<Vec<DocumentMetadata>> {
        self.write(|u| {
            values
                .iter()
                .map(|(d, t, v)| self.add_document_metadata_in(u, *d, *t, v))
                .collect()
        })
    }

    /// The document (which the session must be able to view), its value `id` (likewise) and
    /// whether the document's type requires that value's type, read in one statement; then
    /// `permission` on both the document and the value's type.
    fn load_value(
        &self,
        tx: &mut crate::store::Tx<'_>,
        document: DocumentId,
        id: DocumentMetadataId,
        permission: P,
    ) -> Result<(Document, DocumentMetadata, bool)> {
        let (doc, value) = match tx.document_and_value(document, id)? {
            Some((doc, value)) => (Some(doc), value),
            None => (None, None),
        };
        let doc = self.checked(
            doc,
            P::DocumentView,
            doc_ref(document),
            format!("document {document}"),
        )?;
        let (m, required) = value.ok_or_else(|| Error::not_found(format!("metadata {id}")))?;
        if !self.can(P::DocumentMetadataView, doc_ref(doc.id))
            || !self.can(P::DocumentMetadataView, mt_ref(m.metadata_type_id))
        {
            return Err(Error::not_found(format!("metadata {id}")));
        }
        self.require_metadata_permission(permission, &doc, m.metadata_type_id)?;
        Ok((doc, m, required))
    }

    /// One metadata value of a document. Needs `metadata.document_metadata_view` on the
    /// document and on the metadata type.
    pub fn document_metadata(
        &self,
        document: DocumentId,
        id: DocumentMetadataId,
    ) -> Result<DocumentMetadata> {
        self.read(|tx| {
            self.load_value(tx, document, id, P::DocumentMetadataView)
                .map(|(_, m, _)| m)
        })
    }

    /// The metadata values of a document this session may view (spec 2.3 `metadata.all`).
    /// A document the session may not view is `NotFound`; without
    /// `metadata.document_metadata_view` on the document the list is empty.
    pub fn document_metadata_list(&self, document: DocumentId) -> Result<Vec<DocumentMetadata>> {
        Ok(self
            .document_metadata_details(document)?
            .1
            .into_iter()
            .map(|(m, _)| m)
            .collect())
    }

    /// The document and its visible metadata values, each with its metadata type, read in one
    /// transaction (what a face shows). Answered from the read cache when the document is in
    /// it (see `Config::read_cache_documents`); what this session may see is checked either way.
    pub fn document_metadata_details(
        &self,
        document: DocumentId,
    ) -> Result<(Document, Vec<(DocumentMetadata, MetadataType)>)> {
        // Before the cache is read: catching up drops copies another process's change made old.
        self.catch_up()?;
        let read = self.db.document_with_metadata(document)?;
        self.metadata_details_shown(document, read.as_deref())
    }

    /// What this session is shown of a document read with its metadata: `NotFound` (or
    /// `PermissionDenied`) without view on the document, no values without
    /// `metadata.document_metadata_view` on it, and only the values whose type it may view.
    fn metadata_details_shown(
        &self,
        document: DocumentId,
        read: Option<&CachedDocument>,
    ) -> Result<DocumentWithMetadata> {
        let (read, shown) = self.metadata_shown(document, read)?;
        Ok((read.document.clone(), shown.into_iter().cloned().collect()))
    }

    /// [`metadata_details_shown`](Self::metadata_details_shown) without copying anything: the
    /// read and the values of it this session is shown.
    pub(crate) fn metadata_shown<'r>(
        &self,
        document: DocumentId,
        read: Option<&'r CachedDocument>,
    ) -> Result<(
        &'r CachedDocument,
        Vec<&'r (DocumentMetadata, MetadataType)>,
    )> {
        let read = read.ok_or_else(|| Error::not_found(format!("document {document}")))?;
        self.require(
            P::DocumentView,
            doc_ref(document),
            format_args!("document {document}"),
        )?;
        let values = if self.can(P::DocumentMetadataView, doc_ref(document)) {
            self.visible(
                P::DocumentMetadataView,
                read.values.iter().collect(),
                |(m, _)| mt_ref(m.metadata_type_id),
            )
        } else {
            Vec::new()
        };
        Ok((read, values))
    }

    /// `document.metadata_value_of.<name>` (spec 2.3): the stored value, or `None` when the
    /// document has no metadata of that name (or this session may not view it).
    pub fn metadata_value_of(&self, document: DocumentId, name: &str) -> Result<Option<String>> {
        let Some(t) = self.read(|tx| tx.metadata_type_by_name(name))? else {
            return Ok(None);
        };
        Ok(self
            .document_metadata_list(document)?
            .into_iter()
            .find(|m| m.metadata_type_id == t.id)
            .map(|m| m.value))
    }

    /// Sets a metadata value (spec 2.10); an empty value re-applies the default. Needs
    /// `metadata.document_metadata_edit` on the document and on the metadata type.
    pub fn edit_document_metadata(
        &self,
        document: DocumentId,
        id: DocumentMetadataId,
        value: &str,
    ) -> Result<DocumentMetadata> {
        self.write(|u| self.edit_document_metadata_in(u, document, id, value))
    }

    /// [`edit_document_metadata`](Self::edit_document_metadata) answered with the stored value,
    /// its document and its type, as [`metadata_value_view`](Self::metadata_value_view) shows
    /// them: taken from the edit's own transaction (which checked the same view permissions),
    /// so nothing is read back.
    pub fn edit_document_metadata_view(
        &self,
        document: DocumentId,
        id: DocumentMetadataId,
        value: &str,
    ) -> Result<MetadataValueView> {
        self.write(|u| self.edit_value(u, document, id, value)).map(
            |(document, value, metadata_type)| MetadataValueView {
                value,
                document,
                metadata_type,
            },
        )
    }

    pub(crate) fn edit_document_metadata_in(
        &self,
        u: &mut Unit<'_>,
        document: DocumentId,
        id: DocumentMetadataId,
        value: &str,
    ) -> Result<DocumentMetadata> {
        self.edit_value(u, document, id, value).map(|(_, m, _)| m)
    }

    /// The edit of a value in `u`: the document, the value as stored and its type.
    fn edit_value(
        &self,
        u: &mut Unit<'_>,
        document: DocumentId,
        id: DocumentMetadataId,
        value: &str,
    ) -> Result<(Document, DocumentMetadata, MetadataType)> {
        {
            let (doc, mut m, required) =
                self.load_value(&mut u.tx, document, id, P::DocumentMetadataEdit)?;
            let compiled = self.db.compiled(&mut u.tx, m.metadata_type_id)?;
            let value = self.process(u, &compiled, &doc, value, required)?;
            if value != m.value {
                u.tx.update_document_metadata(m.id, &value)?;
                m.value = value;
                u.event(
                    names::DOCUMENT_METADATA_EDITED,
                    doc_event(&doc),
                    Some(mt_event(&compiled.metadata_type)),
                )?;
            }
            Ok((doc, m, compiled.metadata_type.clone()))
        }
    }

    /// Removes a metadata value from a document; a type required by the document's type cannot
    /// be removed. Needs `metadata.document_metadata_remove` on the document and the type.
    pub fn remove_document_metadata(
        &self,
        document: DocumentId,
        id: DocumentMetadataId,
    ) -> Result<()> {
        self.write(|u| self.remove_document_metadata_in(u, document, id))
    }

    pub(crate) fn remove_document_metadata_in(
        &self,
        u: &mut Unit<'_>,
        document: DocumentId,
        id: DocumentMetadataId,
    ) -> Result<()> {
        {
            let (doc, m, required) =
                self.load_value(&mut u.tx, document, id, P::DocumentMetadataRemove)?;
            if required {
                return Err(Error::validation(
                    NON_FIELD_ERRORS,
                    "This metadata is required for the document type and cannot be removed.",
                ));
            }
            u.tx.delete_document_metadata(m.id)?;
            let t =
                u.tx.metadata_type(m.metadata_type_id)?
                    .ok_or_else(|| Error::not_found("metadata type"))?;
            u.event(
                names::DOCUMENT_METADATA_REMOVED,
                doc_event(&doc),
                Some(mt_event(&t)),
            )
        }
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
                    )?;
                }
            }
            Ok(values.len())
        })
    }
}

fn not_associated(mt: MetadataTypeId) -> Error {
    Error::validation(
        "metadata_type_id",
        format!("Metadata type {mt} is not associated with the document's type."),
    )
}
