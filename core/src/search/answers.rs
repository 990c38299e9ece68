//! The answers of recent searches ([`Answers`]): the count and best hits of a query, for one
//! caller's scope and the index contents they were computed on, so that a search repeated on
//! unchanged contents (the next page, say) costs only its page.
//!
//! Part of `search` (layer 7 of `scripts/check-structure`): it may import only what `search`
//! may (see `search`'s module documentation).

use std::sync::Arc;

use parking_lot::Mutex;

use super::collectors::{Ranked, Sort};
use super::query::Expr;
use super::visible::SearchScope;
use crate::model::RecordKind;

/// How many ranked hits a search keeps at least, beyond its page (rounded up to a multiple).
pub(super) const ANSWER_STEP: usize = 100;
/// How many answers an index remembers.
const ANSWERS: usize = 64;

/// The answers of recent searches (as Solr's query result cache): the count and the best hits
/// of a query, for one caller's [`SearchScope`] and the index contents they were computed on
/// (its segments and their deletions, so any change to the index is a miss). Counting and
/// ranking visit every visible hit, which grows with the index; an answer repeated on unchanged
/// contents costs its page. The scope is part of the key, so an answer is reused only for a
/// caller who may see exactly the same records.
#[derive(Default)]
pub(super) struct Answers {
    entries: Mutex<Vec<Answer>>,
}

pub(super) struct Answer {
    pub(super) contents:
        std::collections::BTreeMap<tantivy::index::SegmentId, Option<tantivy::Opstamp>>,
    pub(super) kind: RecordKind,
    pub(super) expr: Expr,
    pub(super) scope: Arc<SearchScope>,
    pub(super) order: Option<Sort>,
    pub(super) keep: usize,
    pub(super) count: usize,
    pub(super) top: Arc<Vec<Ranked>>,
    pub(super) used: u64,
}

impl Answers {
    /// The count and best hits of a search answered before on the same contents, when it kept
    /// at least `wanted` hits (or found fewer).
    pub(super) fn get(
        &self,
        contents: &std::collections::BTreeMap<tantivy::index::SegmentId, Option<tantivy::Opstamp>>,
        kind: RecordKind,
        expr: &Expr,
        scope: &SearchScope,
        order: Option<Sort>,
        wanted: usize,
    ) -> Option<(usize, Arc<Vec<Ranked>>)> {
        let mut entries = self.entries.lock();
        let tick = entries.iter().map(|e| e.used).max().unwrap_or(0) + 1;
        let e = entries.iter_mut().find(|e| {
            e.kind == kind
                && (e.keep >= wanted || e.top.len() == e.count)
                && e.expr == *expr
                && e.order == order
                && e.contents == *contents
                && *e.scope == *scope
        })?;
        e.used = tick;
        Some((e.count, e.top.clone()))
    }

    /// Remembers an answer; answers on other contents are forgotten (they can never be asked
    /// for again), then the least recently used one beyond [`ANSWERS`].
    pub(super) fn put(&self, mut answer: Answer) {
        let mut entries = self.entries.lock();
        entries.retain(|e| e.contents == answer.contents);
        answer.used = entries.iter().map(|e| e.used).max().unwrap_or(0) + 1;
        entries.push(answer);
        if entries.len() > ANSWERS
            && let Some(oldest) = (0..entries.len()).min_by_key(|i| entries[*i].used)
        {
            entries.swap_remove(oldest);
        }
    }
}
