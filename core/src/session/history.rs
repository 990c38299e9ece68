//! A document's metadata values through time, from the event log: every change of a value
//! (who, when, from what to what) and the values a document had at a past moment.
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use chrono::{DateTime, Utc};

use super::objects::{DOC, MT, doc_ref, mt_ref};
use super::{Session, view_permission};
use crate::access::{ObjectKind, Permission as P};
use crate::error::{Error, Result};
use crate::events::{Event, names};
use crate::model::*;
use crate::store::records::to_micros;

/// The most changes one page of [`Session::history`] holds.
pub const MAX_HISTORY_PAGE: usize = 1000;

/// The `value` change of a value's event: (before, after).
fn value_change(e: &Event) -> (Option<String>, Option<String>) {
    e.changes
        .iter()
        .find(|c| c.field == "value")
        .map(|c| (c.before.clone(), c.after.clone()))
        .unwrap_or_default()
}

impl Session {
    /// Whether this session may view metadata type `metadata_type` (the type itself).
    fn may_view_type(&self, metadata_type: MetadataTypeId) -> bool {
        self.can(
            view_permission(ObjectKind::METADATA_TYPE),
            mt_ref(metadata_type),
        )
    }

    /// Whether this session may view the values of `metadata_type` on `document` now, as
    /// [`document_metadata`](Self::document_metadata) lists them.
    fn may_view_values(&self, document: DocumentId, metadata_type: MetadataTypeId) -> bool {
        self.can(P::DocumentMetadataView, doc_ref(document))
            && self.can(P::DocumentMetadataView, mt_ref(metadata_type))
    }

    /// Refuses unless `document` exists and this session may view it (`NotFound` otherwise),
    /// and, when given, `metadata_type` exists as far as it may know (`NotFound` when it may
    /// not view the type).
    fn require_history(
        &self,
        document: DocumentId,
        metadata_type: Option<MetadataTypeId>,
    ) -> Result<()> {
        self.read(|tx| self.load_document(tx, document, P::DocumentView).map(drop))?;
        if let Some(t) = metadata_type
            && !self.may_view_type(t)
        {
            return Err(Error::not_found(format!("metadata type {t}")));
        }
        Ok(())
    }

    /// Every change of `document`'s metadata values (of `metadata_type` only, when given),
    /// newest first, one page of them: who changed what, when, from what to what, from the
    /// event log (so a value's history is as complete as the log: `docmeta audit prune`
    /// removes old changes).
    ///
    /// A change is shown whole only while this session may view that type's values on the
    /// document *now* (`metadata.document_metadata_view` on both, as
    /// [`document_metadata`](Self::document_metadata) lists values); otherwise its `before`
    /// and `after` are `None` and `hidden` is set, and the type's label is `None` unless the
    /// session may view the type. The document must be viewable (`NotFound` otherwise), and so
    /// must `metadata_type` when given. A page holds at most [`MAX_HISTORY_PAGE`] changes.
    ///
    /// ```
    /// use docmeta_core::{Docmeta, MetadataTypeInput, PageRequest, ValueAction};
    ///
    /// let db = Docmeta::in_memory()?;
    /// let admin = db.system();
    /// let invoice = admin.create_document_type("Invoice")?;
    /// let amount = admin.create_metadata_type(MetadataTypeInput::new("amount", "Amount"))?;
    /// admin.associate(invoice.id, amount.id, false)?;
    /// let doc = admin.create_document(invoice.id, "March", &[])?.document;
    /// let value = admin.add_document_metadata(doc.id, amount.id, "100")?;
    /// admin.edit_document_metadata(doc.id, value.value.id, "120", None)?;
    ///
    /// let history = admin.history(doc.id, Some(amount.id), PageRequest::new(1, 20))?;
    /// assert_eq!(history.count, 2);
    /// let newest = &history.items[0];
    /// assert_eq!(newest.action, ValueAction::Edited);
    /// assert_eq!((newest.before.as_deref(), newest.after.as_deref()), (Some("100"), Some("120")));
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
    pub fn history(
        &self,
        document: DocumentId,
        metadata_type: Option<MetadataTypeId>,
        page: PageRequest,
    ) -> Result<Page<ValueChange>> {
        self.require_history(document, metadata_type)?;
        let size = page.size.clamp(1, MAX_HISTORY_PAGE);
        let offset = (page.number.max(1) - 1).saturating_mul(size);
        let (events, count) =
            self.read(|tx| tx.value_events((DOC, MT), document, metadata_type, offset, size))?;
        let views = self.with_actors(events)?;
        let items = views
            .into_iter()
            .filter_map(|v| {
                let e = v.event;
                let t = MetadataTypeId(e.action_object.as_ref()?.id);
                let action = match e.name.as_str() {
                    names::DOCUMENT_METADATA_ADDED => ValueAction::Added,
                    names::DOCUMENT_METADATA_REMOVED => ValueAction::Removed,
                    _ => ValueAction::Edited,
                };
                let shown = self.may_view_values(document, t);
                let (before, after) = if shown {
                    value_change(&e)
                } else {
                    (None, None)
                };
                let label = self
                    .may_view_type(t)
                    .then(|| e.action_object.as_ref().map(|o| o.label.clone()))
                    .flatten();
                Some(ValueChange {
                    event: e.id,
                    timestamp: e.timestamp,
                    actor: v.actor,
                    metadata_type: t,
                    metadata_type_label: label,
                    action,
                    before,
                    after,
                    hidden: !shown,
                })
            })
            .collect();
        Ok(Page { count, items })
    }

    /// The value `document` had for `metadata_type` at time `at`: the value the last change
    /// at or before `at` left (`None` when it had none then, or the change removed it). `None`
    /// too when this session may not view that type's values on the document now; the
    /// document and the type must be viewable (`NotFound` otherwise). Read from the event log,
    /// so a time before the log's start (or before a prune) answers `None`.
    pub fn value_at(
        &self,
        document: DocumentId,
        metadata_type: MetadataTypeId,
        at: DateTime<Utc>,
    ) -> Result<Option<String>> {
        self.require_history(document, Some(metadata_type))?;
        if !self.may_view_values(document, metadata_type) {
            return Ok(None);
        }
        let e =
            self.read(|tx| tx.value_event_at((DOC, MT), document, metadata_type, to_micros(at)))?;
        Ok(e.and_then(|e| value_change(&e).1))
    }

    /// The values `document` had at time `at`, one per metadata type, ordered by type id:
    /// those this session may view now (as [`document_metadata`](Self::document_metadata)
    /// lists values today), of types that still exist. The document must be viewable
    /// (`NotFound` otherwise). Read from the event log, as [`value_at`](Self::value_at).
    pub fn metadata_at(&self, document: DocumentId, at: DateTime<Utc>) -> Result<Vec<PastValue>> {
        self.require_history(document, None)?;
        if !self.can(P::DocumentMetadataView, doc_ref(document)) {
            return Ok(Vec::new());
        }
        let events = self.read(|tx| tx.value_events_at((DOC, MT), document, to_micros(at)))?;
        let mut out = Vec::new();
        for e in events {
            let Some(t) = e.action_object.as_ref().map(|o| MetadataTypeId(o.id)) else {
                continue;
            };
            let Some(value) = value_change(&e).1 else {
                continue;
            };
            if !self.may_view_values(document, t) {
                continue;
            }
            let Some(metadata_type) = self.read(|tx| tx.metadata_type(t))? else {
                continue;
            };
            out.push(PastValue {
                metadata_type,
                value,
                since: e.timestamp,
                event: e.id,
            });
        }
        Ok(out)
    }
}
