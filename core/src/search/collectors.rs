//! The collectors of a search: they count the visible hits and keep the first of them, best
//! first (`VisibleTop`) or in the order of one metadata type's values (`SortedTop`, see
//! [`Sort`]), checking each hit's visibility again from its fast fields; and how the index
//! compares the values of each value type (`Compared`), which also decides the column a value
//! is indexed in.
//!
//! Part of `search` (layer 7 of `scripts/check-structure`): it may import only what `search`
//! may (see `search`'s module documentation).

use std::sync::Arc;

use super::query::ResolvedType;
use super::visible::SearchScope;
use crate::model::{RecordKind, ValueType};

/// A score ordered totally (for the heap of the best hits).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Score(pub(super) f32);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

pub(super) type Ranked = (Score, i64, Option<i64>);

/// Counts the visible hits and keeps the best `keep` of them (visibility checked again, cheaply:
/// only visible records reach it). Ties go to the higher document id, then value id.
pub(super) struct VisibleTop {
    pub(super) scope: Arc<SearchScope>,
    pub(super) kind: RecordKind,
    pub(super) keep: usize,
}

pub(super) struct VisibleTopSegment {
    scope: Arc<SearchScope>,
    kind: RecordKind,
    documents: tantivy::columnar::Column<i64>,
    types: tantivy::columnar::Column<i64>,
    values: tantivy::columnar::Column<i64>,
    metadata_types: tantivy::columnar::Column<i64>,
    count: usize,
    keep: usize,
    best: std::collections::BinaryHeap<std::cmp::Reverse<Ranked>>,
}

impl tantivy::collector::Collector for VisibleTop {
    type Fruit = (usize, Vec<Ranked>);
    type Child = VisibleTopSegment;

    fn for_segment(
        &self,
        _: tantivy::SegmentOrdinal,
        segment: &tantivy::SegmentReader,
    ) -> tantivy::Result<VisibleTopSegment> {
        let fast = segment.fast_fields();
        Ok(VisibleTopSegment {
            scope: self.scope.clone(),
            kind: self.kind,
            documents: fast.i64("document_id")?,
            types: fast.i64("document_type_id")?,
            values: fast.i64("metadata_id")?,
            metadata_types: fast.i64("metadata_type_id")?,
            count: 0,
            keep: self.keep,
            best: std::collections::BinaryHeap::with_capacity(self.keep.min(1024) + 1),
        })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(
        &self,
        fruits: Vec<(usize, Vec<Ranked>)>,
    ) -> tantivy::Result<(usize, Vec<Ranked>)> {
        let count = fruits.iter().map(|(c, _)| c).sum();
        let mut all: Vec<Ranked> = fruits.into_iter().flat_map(|(_, best)| best).collect();
        all.sort_by(|a, b| b.cmp(a));
        all.truncate(self.keep);
        Ok((count, all))
    }
}

impl tantivy::collector::SegmentCollector for VisibleTopSegment {
    type Fruit = (usize, Vec<Ranked>);

    fn collect(&mut self, doc: tantivy::DocId, score: tantivy::Score) {
        let (Some(id), Some(ty)) = (self.documents.first(doc), self.types.first(doc)) else {
            return;
        };
        let visible = match self.kind {
            RecordKind::Document => self.scope.documents.allows(id, ty),
            RecordKind::Metadata => self
                .metadata_types
                .first(doc)
                .is_some_and(|t| self.scope.allows_value(id, ty, t)),
        };
        if !visible {
            return;
        }
        self.count += 1;
        if self.keep == 0 {
            return;
        }
        let ranked = (Score(score), id, self.values.first(doc));
        if self.best.len() < self.keep {
            self.best.push(std::cmp::Reverse(ranked));
        } else if let Some(mut worst) = self.best.peek_mut()
            && ranked > worst.0
        {
            // Replaced in place: one sift instead of a pop and a push (ties on the score make
            // most hits of a large result replace the worst kept one).
            *worst = std::cmp::Reverse(ranked);
        }
    }

    fn harvest(self) -> (usize, Vec<Ranked>) {
        let mut best: Vec<Ranked> = self.best.into_iter().map(|r| r.0).collect();
        best.sort_by(|a, b| b.cmp(a));
        (self.count, best)
    }
}

/// How the index compares the values of a value type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Compared {
    /// By `value_number`: integers and decimals.
    AsNumber,
    /// By `value_time`: dates, dates and times, times.
    InTime,
    /// By `value_text`: text, and booleans (`false` before `true`).
    AsText,
}

impl Compared {
    pub(super) fn of(value_type: ValueType) -> Compared {
        match value_type {
            ValueType::Integer | ValueType::Decimal => Compared::AsNumber,
            ValueType::Date | ValueType::DateTime | ValueType::Time => Compared::InTime,
            ValueType::Text | ValueType::Boolean => Compared::AsText,
        }
    }
}

/// The order of a sorted document search: by the values of one metadata type, compared by its
/// value type (text by its characters' code points), documents without a value (or whose value
/// the caller may not view) last in either direction, ties by document id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort {
    /// The metadata type, when the caller may view its values; `None` sorts as if no document
    /// had a value (so by document id).
    pub by: Option<ResolvedType>,
    /// Largest first.
    pub descending: bool,
}

/// A value's place in a sorted order, as an unsigned number that compares as the value does.
fn number_key(n: f64) -> u64 {
    let bits = n.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

fn time_key(t: i64) -> u64 {
    (t as u64) ^ (1 << 63)
}

/// A kept hit of a sorted search within one segment: without a value, its key (the direction
/// applied; for text, a term ordinal of the segment), the document.
type SegmentSorted = (bool, u64, i64);

/// A sort key across segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum SortValue {
    Key(u64),
    Text(String),
}

/// Counts the visible documents and keeps the first `keep` of them in `sort`'s order.
pub(super) struct SortedTop {
    pub(super) scope: Arc<SearchScope>,
    pub(super) sort: Sort,
    pub(super) keep: usize,
}

pub(super) struct SortedTopSegment {
    scope: Arc<SearchScope>,
    sort: Sort,
    documents: tantivy::columnar::Column<i64>,
    types: tantivy::columnar::Column<i64>,
    values: tantivy::columnar::Column<i64>,
    metadata_types: tantivy::columnar::Column<i64>,
    numbers: tantivy::columnar::Column<f64>,
    times: tantivy::columnar::Column<i64>,
    texts: Option<tantivy::columnar::StrColumn>,
    count: usize,
    keep: usize,
    best: std::collections::BinaryHeap<SegmentSorted>,
}

/// One segment's first hits in order: without a value, the key, the document.
pub(super) type SortedFruit = (usize, Vec<(bool, SortValue, i64)>);

impl SortedTop {
    fn ordering(
        &self,
        a: &(bool, SortValue, i64),
        b: &(bool, SortValue, i64),
    ) -> std::cmp::Ordering {
        let values = match (&a.1, &b.1) {
            (SortValue::Text(x), SortValue::Text(y)) if self.sort.descending => y.cmp(x),
            (x, y) => x.cmp(y),
        };
        a.0.cmp(&b.0).then(values).then(a.2.cmp(&b.2))
    }
}

impl Ord for SortValue {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        match (self, other) {
            (SortValue::Key(a), SortValue::Key(b)) => a.cmp(b),
            (SortValue::Text(a), SortValue::Text(b)) => a.cmp(b),
            (SortValue::Key(_), SortValue::Text(_)) => std::cmp::Ordering::Less,
            (SortValue::Text(_), SortValue::Key(_)) => std::cmp::Ordering::Greater,
        }
    }
}

impl PartialOrd for SortValue {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl tantivy::collector::Collector for SortedTop {
    type Fruit = (usize, Vec<Ranked>);
    type Child = SortedTopSegment;

    fn for_segment(
        &self,
        _: tantivy::SegmentOrdinal,
        segment: &tantivy::SegmentReader,
    ) -> tantivy::Result<SortedTopSegment> {
        let fast = segment.fast_fields();
        Ok(SortedTopSegment {
            scope: self.scope.clone(),
            sort: self.sort,
            documents: fast.i64("document_id")?,
            types: fast.i64("document_type_id")?,
            values: fast.i64("metadata_id")?,
            metadata_types: fast.i64("metadata_type_id")?,
            numbers: fast.f64("value_number")?,
            times: fast.i64("value_time")?,
            texts: fast.str("value_text")?,
            count: 0,
            keep: self.keep,
            best: std::collections::BinaryHeap::with_capacity(self.keep.min(1024) + 1),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<SortedFruit>) -> tantivy::Result<(usize, Vec<Ranked>)> {
        let count = fruits.iter().map(|(c, _)| c).sum();
        let mut all: Vec<(bool, SortValue, i64)> =
            fruits.into_iter().flat_map(|(_, best)| best).collect();
        all.sort_by(|a, b| self.ordering(a, b));
        all.truncate(self.keep);
        Ok((
            count,
            all.into_iter()
                .map(|(_, _, document)| (Score(0.0), document, None))
                .collect(),
        ))
    }
}

impl SortedTopSegment {
    /// The sort key of document record `doc` (document `id` of type `ty`): its visible value of
    /// the sorted type, found among the value records just before it (its block).
    fn key(&self, doc: tantivy::DocId, id: i64, ty: i64) -> Option<u64> {
        let by = self.sort.by?;
        if !self.scope.document_metadata.allows(id, ty) {
            return None;
        }
        let mut at = doc;
        while at > 0 {
            at -= 1;
            // The block's value records end at the previous document record.
            self.values.first(at)?;
            if self.metadata_types.first(at) != Some(by.id) {
                continue;
            }
            let key = match Compared::of(by.value_type) {
                Compared::AsNumber => number_key(self.numbers.first(at)?),
                Compared::InTime => time_key(self.times.first(at)?),
                Compared::AsText => self.texts.as_ref()?.ords().first(at)?,
            };
            return Some(if self.sort.descending { !key } else { key });
        }
        None
    }
}

impl tantivy::collector::SegmentCollector for SortedTopSegment {
    type Fruit = SortedFruit;

    fn collect(&mut self, doc: tantivy::DocId, _: tantivy::Score) {
        let (Some(id), Some(ty)) = (self.documents.first(doc), self.types.first(doc)) else {
            return;
        };
        if !self.scope.documents.allows(id, ty) {
            return;
        }
        self.count += 1;
        if self.keep == 0 {
            return;
        }
        let key = self.key(doc, id, ty);
        let ranked = (key.is_none(), key.unwrap_or(0), id);
        if self.best.len() < self.keep {
            self.best.push(ranked);
        } else if let Some(mut worst) = self.best.peek_mut()
            && ranked < *worst
        {
            *worst = ranked;
        }
    }

    fn harvest(self) -> SortedFruit {
        let text = self
            .sort
            .by
            .is_some_and(|t| Compared::of(t.value_type) == Compared::AsText);
        let mut buffer = String::new();
        let best = self
            .best
            .into_iter()
            .map(|(missing, key, id)| {
                let value = match (&self.texts, text && !missing) {
                    (Some(texts), true) => {
                        let ord = if self.sort.descending { !key } else { key };
                        buffer.clear();
                        // An ordinal of this segment's dictionary always has its text.
                        let _ = texts.ord_to_str(ord, &mut buffer);
                        SortValue::Text(buffer.clone())
                    }
                    _ => SortValue::Key(key),
                };
                (missing, value, id)
            })
            .collect();
        (self.count, best)
    }
}
