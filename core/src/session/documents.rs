//! Documents: creating them (one, a batch, or with their first file) with their initial
//! metadata values, reading and listing them, renaming them, changing their type and deleting
//! them.
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use super::associations::not_associated;
use super::objects::{DOC, doc_event, doc_ref, dt_event, dt_ref, mt_event, mt_ref};
use super::{Session, body_reference, event_object, invalid_reference, parents_change};
use crate::access::{ObjectKind, Permission as P};
use crate::error::{Error, Result};
use crate::events::names;
use crate::kernel::Unit;
use crate::model::*;

/// Longest document label.
const MAX_LABEL_LEN: usize = 255;

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
    /// The document `id`, read in `tx`, when this session has `permission` on it (see
    /// [`checked`](Self::checked) for the refusals).
    pub(super) fn load_document(
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
}
