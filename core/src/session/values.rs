//! The metadata values of documents (spec 2.3, 4.2): adding them through the pipeline of spec
//! 2.10 (one, a batch, or a required type's default), reading what a session may see of them,
//! editing and removing them. Each answers with the value, its document and its type
//! ([`MetadataValueView`]).
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use std::sync::Arc;

use super::associations::not_associated;
use super::objects::{doc_event, doc_ref, mt_event, mt_ref};
use super::{Inputs, Session, body_reference};
use crate::access::Permission as P;
use crate::error::{Error, NON_FIELD_ERRORS, Result};
use crate::events::names;
use crate::kernel::{CachedDocument, Unit};
use crate::metadata::CompiledMetadataType;
use crate::model::*;

/// A document with its metadata values, each with its type.
type DocumentWithMetadata = (Document, Vec<(DocumentMetadata, MetadataType)>);

/// One value to add in a batch: the document, the metadata type, the submitted value.
pub type NewValue<'a> = (DocumentId, MetadataTypeId, &'a str);

impl Session {
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

    /// Runs the pipeline and inserts the value, with its event.
    pub(super) fn add_value(
        &self,
        u: &mut Unit<'_>,
        doc: &Document,
        mt: MetadataTypeId,
        value: &str,
        required: bool,
    ) -> Result<DocumentMetadata> {
        self.add_value_typed(u, doc, mt, value, required)
            .map(|(m, _)| m)
    }

    /// [`add_value`](Self::add_value), answered with the value's type too.
    fn add_value_typed(
        &self,
        u: &mut Unit<'_>,
        doc: &Document,
        mt: MetadataTypeId,
        value: &str,
        required: bool,
    ) -> Result<(DocumentMetadata, MetadataType)> {
        let compiled = self.db.compiled(&mut u.tx, mt)?;
        let value = self.process(u, &compiled, doc, value, required)?;
        let m = u.tx.insert_document_metadata(doc.id, mt, &value)?;
        u.event(
            names::DOCUMENT_METADATA_ADDED,
            doc_event(doc),
            Some(mt_event(&compiled.metadata_type)),
            Changes::new().created("value", &m.value),
        )?;
        Ok((m, compiled.metadata_type.clone()))
    }

    /// Adds a required type with its rendered default, or empty when the default does not
    /// pass the pipeline; does nothing when the document already has the type.
    pub(super) fn add_default_value(
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
        if let Some(m) = &added {
            u.event(
                names::DOCUMENT_METADATA_ADDED,
                doc_event(doc),
                Some(mt_event(&compiled.metadata_type)),
                Changes::new().created("value", &m.value),
            )?;
        }
        Ok(added)
    }

    pub(super) fn process(
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
        let value = compiled.process(value, required, self.db.templates(), &mut inputs)?;
        // The value type as this transaction reads it: the compiled form is cached, and another
        // process may have changed the type since (its check of the stored values then
        // conflicts with this write on PostgreSQL, and follows or precedes it on SQLite).
        // Read once per type in a unit (a batch of a thousand values reads each type once).
        let t = compiled.metadata_type.id;
        let current = match u.value_types.get(&t) {
            Some(known) => *known,
            None => {
                let read = u.tx.value_type_of(t)?;
                u.value_types.insert(t, read);
                read
            }
        };
        if let Some(current) = current
            && current != compiled.metadata_type.value_type
        {
            current
                .check(&value)
                .map_err(|e| Error::validation(crate::metadata::pipeline::VALUE_FIELD, e))?;
        }
        Ok(value)
    }

    /// Adds a metadata value to a document (spec 2.10). The type must be associated with the
    /// document's type; a second value of the same type is a conflict. Needs
    /// `metadata.document_metadata_add` on the document and on the metadata type.
    ///
    /// Answers the value as this call stored it, with its document and type: who may add a
    /// value is shown it, even without `metadata.document_metadata_view`. Nothing is read back
    /// after the commit (a workflow the addition triggers may change the value before the
    /// commit; [`metadata_value`](Self::metadata_value) reads it as stored).
    ///
    /// A value goes through the type's parser when added and when edited:
    ///
    /// ```
    /// use docmeta_core::{Error, MetadataTypeInput, PageRequest};
    ///
    /// let db = docmeta_core::Docmeta::in_memory()?;
    /// let admin = db.system();
    /// let invoice = admin.create_document_type("Invoice")?;
    /// let due = admin.create_metadata_type(
    ///     MetadataTypeInput::new("due", "Due date")
    ///         .parser("svc.apps.metadata.metadata_parsers.DateParser", ""),
    /// )?;
    /// admin.associate(invoice.id, due.id, false)?;
    /// let doc = admin.create_document(invoice.id, "March invoice", &[])?.document;
    ///
    /// let added = admin.add_document_metadata(doc.id, due.id, "31/03/2024")?;
    /// assert_eq!(added.value.value, "2024-03-31");
    /// let second = admin.add_document_metadata(doc.id, due.id, "01/04/2024");
    /// assert!(matches!(second, Err(Error::Conflict { .. })));
    ///
    /// admin.edit_document_metadata(doc.id, added.value.id, "15/04/2024", None)?;
    /// let values = admin.document_metadata(doc.id, PageRequest::ALL)?;
    /// assert_eq!(values.count, 1);
    /// assert_eq!(values.items[0].metadata_type.as_ref().map(|t| t.name.as_str()), Some("due"));
    /// assert_eq!(values.items[0].value.value, "2024-04-15");
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
    pub fn add_document_metadata(
        &self,
        document: DocumentId,
        metadata_type: MetadataTypeId,
        value: &str,
    ) -> Result<MetadataValueView> {
        self.write(|u| self.add_value_view(u, document, metadata_type, value))
    }

    pub(crate) fn add_document_metadata_in(
        &self,
        u: &mut Unit<'_>,
        document: DocumentId,
        metadata_type: MetadataTypeId,
        value: &str,
    ) -> Result<DocumentMetadata> {
        self.add_value_view(u, document, metadata_type, value)
            .map(|v| v.value)
    }

    /// The addition of a value in `u`, answered with its document and type.
    fn add_value_view(
        &self,
        u: &mut Unit<'_>,
        document: DocumentId,
        metadata_type: MetadataTypeId,
        value: &str,
    ) -> Result<MetadataValueView> {
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
        let (value, metadata_type) =
            self.add_value_typed(u, &doc, metadata_type, value, a.required)?;
        // The holder of `document_metadata_add` alone may add a value it may not read back:
        // the answer shows the type only to a writer who may view it, as a read would.
        let shown = self.can(P::MetadataTypeView, mt_ref(metadata_type.id))
            || (self.can(P::DocumentMetadataView, doc_ref(doc.id))
                && self.can(P::DocumentMetadataView, mt_ref(metadata_type.id)));
        Ok(MetadataValueView {
            value,
            document: doc,
            metadata_type: shown.then_some(metadata_type),
        })
    }

    /// Adds many values in one transaction (all or nothing): the batch form of
    /// [`add_document_metadata`](Self::add_document_metadata), for imports, answered as it
    /// answers, in the order given.
    pub fn add_document_metadata_batch(
        &self,
        values: &[NewValue<'_>],
    ) -> Result<Vec<MetadataValueView>> {
        self.write(|u| {
            values
                .iter()
                .map(|(d, t, v)| self.add_value_view(u, *d, *t, v))
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

    /// One metadata value of a document, with its document and type. Needs
    /// `documents.document_view` on the document and `metadata.document_metadata_view` on the
    /// document and on the metadata type.
    pub fn metadata_value(
        &self,
        document: DocumentId,
        id: DocumentMetadataId,
    ) -> Result<MetadataValueView> {
        let (document, values) = self.document_metadata_details(document)?;
        let (value, metadata_type) = values
            .into_iter()
            .find(|(m, _)| m.id == id)
            .ok_or_else(|| Error::not_found(format!("document metadata {id}")))?;
        Ok(MetadataValueView {
            value,
            document,
            metadata_type: Some(metadata_type),
        })
    }

    /// A page of the metadata values of a document this session may view (spec 2.3
    /// `metadata.all`), each with its document and type. A document the session may not view
    /// is `NotFound`; without `metadata.document_metadata_view` on the document the page is
    /// empty, and only the values whose type the session may view are listed. Answered from
    /// the read cache when the document is in it (see `Config::read_cache_documents`).
    pub fn document_metadata(
        &self,
        document: DocumentId,
        page: PageRequest,
    ) -> Result<Page<MetadataValueView>> {
        let details = self.document_metadata_details(document)?;
        Ok(Self::metadata_page_of(details, page))
    }

    /// [`document_metadata`](Self::document_metadata) when the document is in the
    /// read cache (see `Config::read_cache_documents`), with the page's
    /// [version](Self::document_metadata_version_if_cached); `None` when it is not there. It
    /// never reads the store, so an async server may call it on its own workers and move to a
    /// blocking thread only when it is `None`. What the session may see is checked as in the
    /// blocking call.
    pub fn document_metadata_if_cached(
        &self,
        document: DocumentId,
        page: PageRequest,
    ) -> Option<Result<(MetadataPageVersion, Page<MetadataValueView>)>> {
        // Only when what other processes committed is known to be applied without a read:
        // otherwise the blocking call catches up first.
        if !self.caught_up_without_reading() {
            return None;
        }
        let cached = self.db.cached_document_with_metadata(document)?;
        Some(
            self.metadata_shown(document, Some(&cached))
                .map(|(read, shown)| {
                    let version = MetadataPageVersion::of(read, &shown);
                    let values = shown.into_iter().cloned().collect();
                    (
                        version,
                        Self::metadata_page_of((read.document.clone(), values), page),
                    )
                }),
        )
    }

    /// Identifies what [`document_metadata`](Self::document_metadata) shows this
    /// session of a document in the read cache, `None` when it is not there (as
    /// [`document_metadata_if_cached`](Self::document_metadata_if_cached), it never
    /// reads the store). Two versions are equal exactly when they name the same copy of the
    /// document and the same values of it, so a face may keep what it made of a page (an
    /// HTTP answer's bytes) with the version that page came with, and give it again, for the
    /// same page, to any caller whose version is equal: the copy changes with every write,
    /// and the values shown with the caller's permissions, checked here on every call. A
    /// caller who may not view the document gets the error the page would give.
    pub fn document_metadata_version_if_cached(
        &self,
        document: DocumentId,
    ) -> Option<Result<MetadataPageVersion>> {
        if !self.caught_up_without_reading() {
            return None;
        }
        let cached = self.db.cached_document_with_metadata(document)?;
        Some(
            self.metadata_shown(document, Some(&cached))
                .map(|(read, shown)| MetadataPageVersion::of(read, &shown)),
        )
    }

    fn metadata_page_of(
        (doc, values): (Document, Vec<(DocumentMetadata, MetadataType)>),
        page: PageRequest,
    ) -> Page<MetadataValueView> {
        Page::of(values, page).map(|(value, metadata_type)| MetadataValueView {
            value,
            document: doc.clone(),
            metadata_type: Some(metadata_type),
        })
    }

    /// The document with every value [`document_metadata`](Self::document_metadata) lists,
    /// each with its metadata type, read at once: the document's detail, which holds the
    /// document even when no value of it is visible. Answered from the read cache when the
    /// document is in it (see `Config::read_cache_documents`); what this session may see is
    /// checked either way.
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
            .document_metadata_details(document)?
            .1
            .into_iter()
            .find(|(m, _)| m.metadata_type_id == t.id)
            .map(|(m, _)| m.value))
    }

    /// Sets a metadata value (spec 2.10); an empty value re-applies the default. Needs
    /// `metadata.document_metadata_edit` on the document and on the metadata type.
    ///
    /// A value's metadata type never changes: `metadata_type`, when given, is the type the
    /// caller means the value to have (a request that names it, as HTTP `PUT` does), and
    /// another type than the value's is refused (`Error::Validation` on `metadata_type_id`:
    /// remove the value and add another), before the edit permission is checked, as soon as
    /// the caller may see the value.
    ///
    /// Answers the value as stored, with its document and type, taken from the edit's own
    /// transaction (nothing is read back).
    pub fn edit_document_metadata(
        &self,
        document: DocumentId,
        id: DocumentMetadataId,
        value: &str,
        metadata_type: Option<MetadataTypeId>,
    ) -> Result<MetadataValueView> {
        self.write(|u| self.edit_value(u, document, id, value, metadata_type))
            .map(|(document, value, metadata_type)| MetadataValueView {
                value,
                document,
                metadata_type: Some(metadata_type),
            })
    }

    pub(crate) fn edit_document_metadata_in(
        &self,
        u: &mut Unit<'_>,
        document: DocumentId,
        id: DocumentMetadataId,
        value: &str,
    ) -> Result<DocumentMetadata> {
        self.edit_value(u, document, id, value, None)
            .map(|(_, m, _)| m)
    }

    /// The edit of a value in `u`: the document, the value as stored and its type.
    fn edit_value(
        &self,
        u: &mut Unit<'_>,
        document: DocumentId,
        id: DocumentMetadataId,
        value: &str,
        metadata_type: Option<MetadataTypeId>,
    ) -> Result<(Document, DocumentMetadata, MetadataType)> {
        let (doc, mut m, required) =
            self.load_value(&mut u.tx, document, id, P::DocumentMetadataView)?;
        if metadata_type.is_some_and(|t| t != m.metadata_type_id) {
            return Err(Error::validation(
                "metadata_type_id",
                "The metadata type of a value cannot be changed; remove it and add another.",
            ));
        }
        self.require_metadata_permission(P::DocumentMetadataEdit, &doc, m.metadata_type_id)?;
        let compiled = self.db.compiled(&mut u.tx, m.metadata_type_id)?;
        let value = self.process(u, &compiled, &doc, value, required)?;
        if value != m.value {
            u.tx.update_document_metadata(m.id, &value)?;
            let before = std::mem::replace(&mut m.value, value);
            u.event(
                names::DOCUMENT_METADATA_EDITED,
                doc_event(&doc),
                Some(mt_event(&compiled.metadata_type)),
                Changes::new().edited("value", before, &m.value),
            )?;
        }
        Ok((doc, m, compiled.metadata_type.clone()))
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
                Changes::new().removed("value", &m.value),
            )
        }
    }
}
