//! A document's metadata values through time, from the event log: every change of a value
//! (who, when, from what to what) and the values a document had at a past moment.
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use std::collections::{BTreeSet, HashMap};

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
    /// Whether this session may know of metadata type `metadata_type`: view the type itself,
    /// or view its values while it exists (`document_metadata_view` on the type, with which
    /// [`document_metadata`](Self::document_metadata) lists its values with the type), the rule
    /// by which a search knows a field. A deleted type has no values to view: its label, kept
    /// by the log, is shown only to whoever may view the type itself.
    fn may_know_type(&self, metadata_type: MetadataTypeId) -> bool {
        let object = mt_ref(metadata_type);
        self.can(view_permission(ObjectKind::METADATA_TYPE), object)
            || (self.can(P::DocumentMetadataView, object)
                && self
                    .read(|tx| tx.metadata_type(metadata_type))
                    .is_ok_and(|t| t.is_some()))
    }

    /// Whether this session may view the values of `metadata_type` on `document` now, as
    /// [`document_metadata`](Self::document_metadata) lists them.
    fn may_view_values(&self, document: DocumentId, metadata_type: MetadataTypeId) -> bool {
        self.can(P::DocumentMetadataView, doc_ref(document))
            && self.can(P::DocumentMetadataView, mt_ref(metadata_type))
    }

    /// The document, when it exists and this session may view it (`NotFound` otherwise), and
    /// refuses a `metadata_type` this session may not know of (`NotFound`, as if absent).
    fn require_history(
        &self,
        document: DocumentId,
        metadata_type: Option<MetadataTypeId>,
    ) -> Result<Document> {
        let doc = self.read(|tx| self.load_document(tx, document, P::DocumentView))?;
        if let Some(t) = metadata_type
            && !self.may_know_type(t)
        {
            return Err(Error::not_found(format!("metadata type {t}")));
        }
        Ok(doc)
    }

    /// Every change of `document`'s metadata values (of `metadata_type` only, when given),
    /// newest first, one page of them: who changed what, when, from what to what, from the
    /// event log (so a value's history is as complete as the log: `docmeta audit prune`
    /// removes old changes).
    ///
    /// Only the changes of metadata types this session may know of are listed (view the type,
    /// or its values: `metadata_type_view` or `document_metadata_view` on it; the others are
    /// left out, as if absent, and are not counted). A change is shown whole only while this
    /// session may also view that type's values on the document *now*
    /// (`metadata.document_metadata_view` on both, as
    /// [`document_metadata`](Self::document_metadata) lists values); otherwise its `before`
    /// and `after` are `None` and `hidden` is set. Its actor is named only to whoever may view
    /// that user. The document must be viewable (`NotFound` otherwise), and so must
    /// `metadata_type` when given. A page holds at most [`MAX_HISTORY_PAGE`] changes.
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
        let types: Vec<MetadataTypeId> = match metadata_type {
            Some(t) => vec![t],
            None => self
                .read(|tx| tx.value_event_types((DOC, MT), document))?
                .into_iter()
                .filter(|t| self.may_know_type(*t))
                .collect(),
        };
        let (events, count) =
            self.read(|tx| tx.value_events((DOC, MT), document, &types, offset, size))?;
        // Who did it is a user like any other: named only to whoever may view that user (as
        // `events` shows the log).
        let events = events
            .into_iter()
            .map(|mut e| {
                if e.actor.is_some_and(|a| !self.may_view_user(a)) {
                    e.actor = None;
                }
                e
            })
            .collect();
        let views = self.with_actors(events)?;
        let mut shown: HashMap<MetadataTypeId, bool> = HashMap::new();
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
                let visible = *shown
                    .entry(t)
                    .or_insert_with(|| self.may_view_values(document, t));
                let (before, after) = if visible {
                    value_change(&e)
                } else {
                    (None, None)
                };
                Some(ValueChange {
                    event: e.id,
                    timestamp: e.timestamp,
                    actor: v.actor,
                    metadata_type: t,
                    metadata_type_label: e.action_object.map(|o| o.label),
                    action,
                    before,
                    after,
                    hidden: !visible,
                })
            })
            .collect();
        Ok(Page { count, items })
    }

    /// The value `doc` had for `metadata_type` at `at`, read from the log, for a session that
    /// may view it: what the last change at or before `at` left; with no such change (the
    /// log's start, or a prune, is later), what the first change after `at` found; with no
    /// change at all, the value it has now, if the document existed then.
    fn past_value(
        &self,
        doc: &Document,
        metadata_type: MetadataTypeId,
        at: DateTime<Utc>,
        now: Option<&str>,
    ) -> Result<Option<(String, Option<Event>)>> {
        // Before the document existed it had no value, whatever a later change found (a value
        // restored or pruned history may otherwise suggest).
        if at < doc.created {
            return Ok(None);
        }
        let micros = to_micros(at);
        let kinds = (DOC, MT);
        if let Some(e) =
            self.read(|tx| tx.value_event_at(kinds, doc.id, metadata_type, micros, false))?
        {
            return Ok(value_change(&e).1.map(|v| (v, Some(e))));
        }
        if let Some(e) =
            self.read(|tx| tx.value_event_at(kinds, doc.id, metadata_type, micros, true))?
        {
            return Ok(value_change(&e).0.map(|v| (v, None)));
        }
        Ok(now.map(|v| (v.to_owned(), None)))
    }

    /// The value `document` had for `metadata_type` at time `at` (`None` when it had none),
    /// read from the event log. `None` too when this session may not view that type's values
    /// on the document now; the document and the type must be viewable (`NotFound` otherwise).
    /// For a time before the log's first change of the value (before it recorded changes, or
    /// before a prune), the value the first later change found, or the value now.
    pub fn value_at(
        &self,
        document: DocumentId,
        metadata_type: MetadataTypeId,
        at: DateTime<Utc>,
    ) -> Result<Option<String>> {
        let doc = self.require_history(document, Some(metadata_type))?;
        if !self.may_view_values(document, metadata_type) {
            return Ok(None);
        }
        let now = self.current_values(document)?;
        Ok(self
            .past_value(
                &doc,
                metadata_type,
                at,
                now.get(&metadata_type).map(|(v, _)| v.as_str()),
            )?
            .map(|(v, _)| v))
    }

    /// The values `document` has now, by type, with their types (as docmeta itself reads
    /// them: the callers decide what is shown).
    fn current_values(
        &self,
        document: DocumentId,
    ) -> Result<HashMap<MetadataTypeId, (String, MetadataType)>> {
        let read = self.db.document_with_metadata(document)?;
        Ok(read
            .map(|r| {
                r.values
                    .iter()
                    .map(|(m, t)| (m.metadata_type_id, (m.value.clone(), t.clone())))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// The values `document` had at time `at`, one per metadata type, ordered by type id:
    /// those this session may view now (as [`document_metadata`](Self::document_metadata)
    /// lists values today), of types that still exist. The document must be viewable
    /// (`NotFound` otherwise). Read from the event log, as [`value_at`](Self::value_at); a
    /// value no change of the log says when it took has `since` set to the document's
    /// creation and `event` to `EventId(0)`.
    pub fn metadata_at(&self, document: DocumentId, at: DateTime<Utc>) -> Result<Vec<PastValue>> {
        let doc = self.require_history(document, None)?;
        if !self.can(P::DocumentMetadataView, doc_ref(document)) {
            return Ok(Vec::new());
        }
        let now = self.current_values(document)?;
        let mut types: BTreeSet<MetadataTypeId> = now.keys().copied().collect();
        types.extend(self.read(|tx| tx.value_event_types((DOC, MT), document))?);
        let mut out = Vec::new();
        for t in types {
            if !self.may_view_values(document, t) {
                continue;
            }
            let current = now.get(&t);
            let Some((value, event)) =
                self.past_value(&doc, t, at, current.map(|(v, _)| v.as_str()))?
            else {
                continue;
            };
            let metadata_type = match current {
                Some((_, mt)) => mt.clone(),
                None => match self.read(|tx| tx.metadata_type(t))? {
                    Some(mt) => mt,
                    None => continue,
                },
            };
            out.push(PastValue {
                metadata_type,
                value,
                since: event.as_ref().map_or(doc.created, |e| e.timestamp),
                event: event.map_or(EventId(0), |e| e.id),
            });
        }
        Ok(out)
    }
}
