//! Documents: creating them (one, a batch, or with their first file) with their initial
//! metadata values, reading and listing them, renaming them, changing their type and deleting
//! them. Each answers with the document and its type ([`DocumentView`]).
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use std::collections::HashMap;

use super::associations::not_associated;
use super::objects::{DOC, doc_event, doc_ref, dt_event, dt_ref, mt_event, mt_ref};
use super::{Session, body_reference, event_object, invalid_reference, parents_change};
use crate::access::{DocumentVisibility, ObjectKind, ObjectRef, Permission as P};
use crate::error::{Error, Result};
use crate::events::names;
use crate::kernel::Unit;
use crate::model::*;
use crate::store::Tx;

/// Longest document label.
pub(crate) const MAX_LABEL_LEN: usize = 255;

/// Most documents one [`Session::create_documents`] call may create: a batch is one
/// transaction, and a bound keeps its memory and the time it holds the writer's lock bounded.
pub const MAX_DOCUMENT_BATCH: usize = 1000;

pub(super) fn document_type_of(tx: &mut Tx<'_>, d: &Document) -> Result<DocumentType> {
    tx.document_type(d.document_type_id)?
        .ok_or_else(|| Error::not_found(format!("document type {}", d.document_type_id)))
}

/// The most single documents (visible through ACLs of their own, not through their type) a
/// documents page names in its statement; beyond, it walks the documents in order instead.
pub(crate) const MAX_LISTED_DOCUMENTS: usize = 1000;

/// Each document with its type, each type read once.
pub(super) fn with_types(tx: &mut Tx<'_>, documents: Vec<Document>) -> Result<Vec<DocumentView>> {
    let mut types: HashMap<DocumentTypeId, DocumentType> = HashMap::new();
    let mut out = Vec::with_capacity(documents.len());
    for document in documents {
        let document_type = match types.get(&document.document_type_id) {
            Some(t) => t.clone(),
            None => {
                let t = document_type_of(tx, &document)?;
                types.insert(t.id, t.clone());
                t
            }
        };
        out.push(DocumentView {
            document,
            document_type,
        });
    }
    Ok(out)
}

/// A document with its type, read in `tx`.
fn view_of(tx: &mut Tx<'_>, document: Document) -> Result<DocumentView> {
    let document_type = document_type_of(tx, &document)?;
    Ok(DocumentView {
        document,
        document_type,
    })
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
    /// `metadata[i].metadata_type_id`, ... (see [`Error::field_path`]). Answers the new
    /// document with its type. To create it with its first file, see
    /// [`create_document_with_file`](Self::create_document_with_file).
    ///
    /// ```
    /// use docmeta_core::{DocumentQuery, MetadataTypeInput, PageRequest};
    ///
    /// let db = docmeta_core::Docmeta::in_memory()?;
    /// let admin = db.system();
    /// let invoice = admin.create_document_type("Invoice")?;
    /// let number = admin.create_metadata_type(MetadataTypeInput::new("number", "Number"))?;
    /// admin.associate(invoice.id, number.id, false)?;
    ///
    /// let values = [(number.id, "INV-42")];
    /// let created = admin.create_document(invoice.id, "March invoice", &values)?;
    /// assert_eq!(created.document_type.label, "Invoice");
    /// let doc = created.document;
    /// assert_eq!(admin.metadata_value_of(doc.id, "number")?.as_deref(), Some("INV-42"));
    /// admin.create_document(invoice.id, "April invoice", &[])?;
    ///
    /// let page = admin.documents(DocumentQuery::default(), PageRequest::new(1, 20))?;
    /// assert_eq!(page.count, 2);
    /// assert_eq!(page.items[0].document.id, doc.id); // oldest first
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
    pub fn create_document(
        &self,
        document_type: DocumentTypeId,
        label: &str,
        values: &[(MetadataTypeId, &str)],
    ) -> Result<DocumentView> {
        let label = crate::model::check_text("label", label, MAX_LABEL_LEN)?;
        self.write(|u| {
            let document = self.create_document_in(u, document_type, label, values)?;
            view_of(&mut u.tx, document)
        })
    }

    /// Creates many documents, each with its initial values, in one transaction (all or
    /// nothing): the batch form of [`create_document`](Self::create_document), for imports.
    /// Each document gets exactly what `create_document` gives it (the same permission checks,
    /// the pipeline of spec 2.10, required defaults, events, workflow starts and index work),
    /// and the documents are returned in the order given. At most [`MAX_DOCUMENT_BATCH`]
    /// documents: more is `Error::Validation` on `documents`. A refused entry names itself
    /// (counted from 0): `documents[i].label`, `documents[i].metadata[j].value`, ... (see
    /// [`Error::field_path`]); errors without a field (a permission refused) are returned as
    /// they are and undo the whole batch too. Answers each document with its type.
    pub fn create_documents(&self, documents: &[NewDocument<'_>]) -> Result<Vec<DocumentView>> {
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
                None => with_types(&mut u.tx, created),
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
            u.event(
                names::DOCUMENT_CREATED,
                doc_event(&doc),
                None,
                Changes::new()
                    .created("label", &doc.label)
                    .created("document_type", doc.document_type_id),
            )?;
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
    /// inherit). Answers the document with its type, and the file.
    pub fn create_document_with_file(
        &self,
        document_type: DocumentTypeId,
        label: &str,
        values: &[(MetadataTypeId, &str)],
        filename: &str,
        content: &mut dyn std::io::Read,
    ) -> Result<(DocumentView, DocumentFile)> {
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
                    created: crate::model::now(),
                },
                &name,
                storage.encrypts(),
            )?;
            u.event(
                names::DOCUMENT_FILE_CREATED,
                event_object("documents.documentfile", file.id.0, &file.filename),
                Some(doc_event(&doc)),
                Changes::new(),
            )?;
            Ok((view_of(&mut u.tx, doc)?, file))
        });
        if result.is_err() {
            let _ = storage.delete(&name);
        }
        result
    }

    /// One document with its type (seeing the document is enough to see its type). Needs
    /// `documents.document_view`.
    pub fn document(&self, id: DocumentId) -> Result<DocumentView> {
        self.read(|tx| {
            let document = self.load_document(tx, id, P::DocumentView)?;
            view_of(tx, document)
        })
    }

    /// A page of the documents this session may view (optionally of one type), by id, or newest
    /// first, each with its type (see [`DocumentQuery`]). `count` counts every visible document
    /// of the list, exactly, whatever the query's cursor.
    ///
    /// Neither the count nor the page visits every document: who may view a document is
    /// decided by its type's ACLs or its own (a document inherits from its type only), so the
    /// count is the sum of the visible types' document counts (kept in the access snapshot)
    /// plus the documents visible through ACLs of their own, and the page is one query filtered
    /// by those types and documents (beyond 1,000 such documents, a walk of the documents in
    /// order that keeps the visible ones).
    ///
    /// With [`DocumentQuery::ordering`], the documents come in the order of their values of a
    /// metadata type, read from the search index (caught up first, as a search is).
    pub fn documents(&self, query: DocumentQuery, page: PageRequest) -> Result<Page<DocumentView>> {
        let DocumentQuery {
            document_type: of_type,
            newest_first,
            after,
            ordering,
        } = query;
        // `id` is the list's own order (`-id` newest first), not a metadata type's.
        let (newest_first, ordering) = match ordering {
            Some(o) if o.metadata_type == "id" => (o.descending, None),
            ordering => (newest_first, ordering),
        };
        if let Some(ordering) = &ordering {
            let sorted = self.db.inner.hooks.sorted_documents;
            let (count, ids) = sorted(&self.db, self.actor, of_type, ordering, page)?;
            let items = self.document_views(&ids)?;
            return Ok(Page { count, items });
        }
        // The count comes from the access snapshot: it must know of documents other processes
        // committed before this call.
        self.catch_up()?;
        let (visible, count, types, documents, scan) = {
            let snapshot = self.snapshot();
            let visible = match self.actor {
                Actor::User(user) => snapshot.document_visibility(user, P::DocumentView),
                Actor::System => DocumentVisibility {
                    all: true,
                    ..Default::default()
                },
            };
            let count = snapshot.count_documents(&visible, of_type.map(|t| t.0));
            // The visible set as types (every document of them) plus single documents of
            // other types; `None` for every document.
            let (types, documents): (Option<Vec<i64>>, Vec<i64>) = match of_type {
                None if visible.all => (None, Vec::new()),
                Some(t) if visible.all || visible.types.contains(&t.0) => {
                    (Some(vec![t.0]), Vec::new())
                }
                _ => {
                    let wanted = |t: i64| of_type.is_none_or(|o| o.0 == t);
                    let mut types: Vec<i64> = match of_type {
                        Some(_) => Vec::new(),
                        None => visible.types.iter().copied().collect(),
                    };
                    types.sort_unstable();
                    let mut documents: Vec<i64> = visible
                        .documents
                        .iter()
                        .copied()
                        .filter(|d| {
                            snapshot
                                .document_type_of(*d)
                                .is_some_and(|t| wanted(t) && !visible.types.contains(&t))
                        })
                        .collect();
                    documents.sort_unstable();
                    (Some(types), documents)
                }
            };
            // Walking the documents by id costs about (offset + size) * total / count rows;
            // reading the visible ones through the type index and sorting them costs count.
            // One type alone is read through its index already in id order.
            let total = snapshot.count_documents(
                &DocumentVisibility {
                    all: true,
                    ..Default::default()
                },
                None,
            );
            let wanted_rows = page.range(count).end.max(1);
            let single_type = matches!(&types, Some(t) if t.len() == 1) && documents.is_empty();
            let scan = !single_type
                && (wanted_rows as u128) * (total as u128) <= (count as u128) * (count as u128);
            (visible, count, types, documents, scan)
        };
        let range = page.range(count);
        if range.is_empty() {
            return Ok(Page {
                count,
                items: Vec::new(),
            });
        }
        let items = self.read(|tx| {
            let found = if documents.len() > MAX_LISTED_DOCUMENTS {
                // Too many single documents to name in a statement: walk the documents in
                // order and keep the visible ones (what the statement would have done).
                let wanted = |d: &Document| {
                    of_type.is_none_or(|t| t == d.document_type_id)
                        && visible.allows(d.id.0, d.document_type_id.0)
                };
                let mut skip = range.start;
                let mut found = Vec::with_capacity(range.len());
                let mut cursor =
                    after.unwrap_or(DocumentId(if newest_first { i64::MAX } else { 0 }));
                'walk: loop {
                    let rows = tx.documents_from(cursor, newest_first, 1000)?;
                    let Some(last) = rows.last().map(|d| d.id) else {
                        break;
                    };
                    let exhausted = rows.len() < 1000;
                    for d in rows.into_iter().filter(|d| wanted(d)) {
                        if skip > 0 {
                            skip -= 1;
                        } else {
                            found.push(d);
                            if found.len() == range.len() {
                                break 'walk;
                            }
                        }
                    }
                    if exhausted {
                        break;
                    }
                    cursor = last;
                }
                found
            } else {
                tx.documents_page_of(
                    types.as_deref(),
                    &documents,
                    scan,
                    newest_first,
                    after,
                    range.start,
                    range.len(),
                )?
            };
            let found = found
                .into_iter()
                .filter(|d| visible.allows(d.id.0, d.document_type_id.0))
                .collect();
            with_types(tx, found)
        })?;
        Ok(Page { count, items })
    }

    /// Loads the documents `ids` this session may view with their types, in one transaction
    /// and one query per 1,000, in the order given; a document deleted (or hidden) since the ids were
    /// read is left out.
    pub(crate) fn document_views(&self, ids: &[DocumentId]) -> Result<Vec<DocumentView>> {
        let raw: Vec<i64> = ids.iter().map(|d| d.0).collect();
        self.read(|tx| {
            let mut found: HashMap<DocumentId, Document> = HashMap::with_capacity(raw.len());
            // A long list (a whole cabinet) in statements of a bounded size.
            for chunk in raw.chunks(MAX_LISTED_DOCUMENTS) {
                found.extend(tx.documents_by_id(chunk)?.into_iter().map(|d| (d.id, d)));
            }
            let documents: Vec<Document> = ids
                .iter()
                .filter_map(|id| found.remove(id))
                .filter(|d| {
                    self.can(
                        P::DocumentView,
                        ObjectRef::new(ObjectKind::DOCUMENT, d.id.0),
                    )
                })
                .collect();
            with_types(tx, documents)
        })
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

    /// Renames a document, answered with it and its type. Needs `documents.document_edit`.
    pub fn update_document(&self, id: DocumentId, label: &str) -> Result<DocumentView> {
        let label = crate::model::check_text("label", label, MAX_LABEL_LEN)?;
        self.write(|u| {
            let mut d = self.load_document(&mut u.tx, id, P::DocumentEdit)?;
            let before = std::mem::replace(&mut d.label, label.to_owned());
            u.tx.update_document(&d)?;
            u.event(
                names::DOCUMENT_EDITED,
                doc_event(&d),
                None,
                Changes::new().edited("label", before, &d.label),
            )?;
            view_of(&mut u.tx, d)
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
    ///
    /// Answers the document with its new type.
    pub fn change_document_type(
        &self,
        id: DocumentId,
        new_type: DocumentTypeId,
    ) -> Result<DocumentView> {
        self.write(|u| {
            // Viewing first: `document_change_type` alone used to move a document its holder
            // could not see into a type whose ACLs they enjoy.
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
                return Ok(DocumentView {
                    document: d,
                    document_type: dt,
                });
            }
            let old_type = std::mem::replace(&mut d.document_type_id, dt.id);
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
                        Changes::new().removed("value", &m.value),
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
                Changes::new().edited("document_type", old_type, dt.id),
            )?;
            self.db.document_created(u, &d)?;
            Ok(DocumentView {
                document: d,
                document_type: dt,
            })
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
            u.event(
                names::DOCUMENT_DELETED,
                doc_event(&d),
                None,
                Changes::new()
                    .removed("label", &d.label)
                    .removed("document_type", d.document_type_id),
            )
        })
    }
}
