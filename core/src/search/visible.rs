//! What a caller may see of the index, as tantivy queries: sets of records built from the
//! postings of id terms (the visible documents, document types and metadata types) into one
//! bitset per segment, cached; and the join from metadata value records to the document record
//! of their block, through which a document search matches metadata only by values the caller may
//! view.
//!
//! Which records those are for one caller is a [`SearchScope`], decided by the access policy.
//!
//! Each document is indexed as one block in one segment: its value records, then its document
//! record (see `SearchIndex::add`). Segments never change and merges keep the order of records,
//! so the document record of a value record is the first document record at or after it.
//!
//! Part of `search` (layer 7 of `scripts/check-structure`): it may import only what `search`
//! may (see `search`'s module documentation).

use std::sync::Arc;

use parking_lot::Mutex;
use rustc_hash::FxHashSet;
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED, Term};

use crate::access::DocumentVisibility;

/// Which metadata types' values a caller may view.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TypeVisibility {
    /// Every metadata type.
    pub all: bool,
    /// These metadata types.
    pub ids: FxHashSet<i64>,
}

/// What one caller may see of the index, decided by the access policy (see
/// `Session::search_scope`): the records a search may match, count and rank, nothing else.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchScope {
    /// Documents the caller may view (`documents.document_view`).
    pub documents: DocumentVisibility,
    /// Documents whose metadata the caller may view (`metadata.document_metadata_view` on the
    /// document).
    pub document_metadata: DocumentVisibility,
    /// Metadata types whose values the caller may view (`metadata.document_metadata_view` on the
    /// metadata type).
    pub metadata_types: TypeVisibility,
}

impl SearchScope {
    /// Everything (the system, a superuser).
    pub fn everything() -> Self {
        let all = DocumentVisibility {
            all: true,
            ..Default::default()
        };
        SearchScope {
            documents: all.clone(),
            document_metadata: all,
            metadata_types: TypeVisibility {
                all: true,
                ..Default::default()
            },
        }
    }

    /// Whether the value of metadata type `metadata_type` on document `id` of type
    /// `document_type` is visible (its document included).
    pub fn allows_value(&self, id: i64, document_type: i64, metadata_type: i64) -> bool {
        self.documents.allows(id, document_type)
            && self.document_metadata.allows(id, document_type)
            && (self.metadata_types.all || self.metadata_types.ids.contains(&metadata_type))
    }
}

/// The records whose `field` holds one of `ids` (sorted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IdTerms {
    pub(crate) field: Field,
    pub(crate) ids: Vec<i64>,
}

/// A set of records of a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RecordsKey {
    /// The records holding `field: text` (the document records: `kind: document`).
    Text(Field, String),
    /// The records in every clause; a clause is the union of its id terms.
    All(Vec<Vec<IdTerms>>),
}

/// A fixed-size set of record ids with the searches a block join needs.
#[derive(Debug)]
pub(crate) struct Bits {
    words: Vec<u64>,
    /// One past the largest id it may hold.
    max: u32,
    count: u32,
}

impl Bits {
    fn new(max: u32) -> Bits {
        Bits {
            words: vec![0; (max as usize).div_ceil(64)],
            max,
            count: 0,
        }
    }

    fn insert(&mut self, doc: DocId) {
        if let Some(w) = self.words.get_mut((doc / 64) as usize) {
            let bit = 1u64 << (doc % 64);
            if *w & bit == 0 {
                *w |= bit;
                self.count += 1;
            }
        }
    }

    fn intersect(&mut self, other: &Bits) {
        let mut count = 0;
        for (w, o) in self.words.iter_mut().zip(&other.words) {
            *w &= o;
            count += w.count_ones();
        }
        self.count = count;
    }

    /// The first id `>= doc`, or [`TERMINATED`].
    fn next(&self, doc: DocId) -> DocId {
        if doc >= self.max {
            return TERMINATED;
        }
        let mut at = (doc / 64) as usize;
        let mut word = self.words[at] & (u64::MAX << (doc % 64));
        loop {
            if word != 0 {
                return at as u32 * 64 + word.trailing_zeros();
            }
            at += 1;
            match self.words.get(at) {
                Some(w) => word = *w,
                None => return TERMINATED,
            }
        }
    }

    /// The last id `< doc`, if any.
    fn previous(&self, doc: DocId) -> Option<DocId> {
        let doc = doc.min(self.max);
        let mut at = (doc / 64) as usize;
        let mut word = match self.words.get(at) {
            Some(w) => w & ((1u64 << (doc % 64)) - 1),
            None => 0,
        };
        loop {
            if word != 0 {
                return Some(at as u32 * 64 + 63 - word.leading_zeros());
            }
            at = at.checked_sub(1)?;
            word = self.words[at];
        }
    }

    fn bytes(&self) -> usize {
        self.words.len() * 8
    }
}

/// Iterates a shared [`Bits`] (no copy per query).
struct BitsDocSet {
    bits: Arc<Bits>,
    doc: DocId,
}

impl BitsDocSet {
    fn new(bits: Arc<Bits>) -> Self {
        let doc = bits.next(0);
        BitsDocSet { bits, doc }
    }
}

impl DocSet for BitsDocSet {
    fn advance(&mut self) -> DocId {
        if self.doc != TERMINATED {
            self.doc = self.bits.next(self.doc + 1);
        }
        self.doc
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc < target {
            self.doc = self.bits.next(target);
        }
        self.doc
    }

    fn doc(&self) -> DocId {
        self.doc
    }

    fn size_hint(&self) -> u32 {
        self.bits.count
    }
}

impl Scorer for BitsDocSet {
    fn score(&mut self) -> Score {
        0.0
    }
}

fn build(key: &RecordsKey, segment: &SegmentReader) -> tantivy::Result<Bits> {
    let union = |terms: &mut dyn Iterator<Item = Term>, field: Field| -> tantivy::Result<Bits> {
        let mut bits = Bits::new(segment.max_doc());
        let inverted = segment.inverted_index(field)?;
        for term in terms {
            let Some(info) = inverted.get_term_info(&term)? else {
                continue;
            };
            let mut postings =
                inverted.read_block_postings_from_terminfo(&info, IndexRecordOption::Basic)?;
            while !postings.docs().is_empty() {
                for &doc in postings.docs() {
                    bits.insert(doc);
                }
                postings.advance();
            }
        }
        Ok(bits)
    };
    match key {
        RecordsKey::Text(field, text) => union(
            &mut std::iter::once(Term::from_field_text(*field, text)),
            *field,
        ),
        RecordsKey::All(clauses) => {
            let mut all: Option<Bits> = None;
            for clause in clauses {
                let mut either = Bits::new(segment.max_doc());
                for terms in clause {
                    let mut ids = terms
                        .ids
                        .iter()
                        .map(|id| Term::from_field_i64(terms.field, *id));
                    let part = union(&mut ids, terms.field)?;
                    for (w, p) in either.words.iter_mut().zip(&part.words) {
                        *w |= p;
                    }
                }
                either.count = either.words.iter().map(|w| w.count_ones()).sum();
                match &mut all {
                    Some(all) => all.intersect(&either),
                    None => all = Some(either),
                }
            }
            Ok(all.unwrap_or_else(|| {
                // No clause: every record.
                let mut every = Bits::new(segment.max_doc());
                for doc in 0..segment.max_doc() {
                    every.insert(doc);
                }
                every
            }))
        }
    }
}

/// Record sets by segment and key, least recently used evicted beyond a byte budget. Segments
/// never change, so an entry is exact until its segment is merged away.
#[derive(Default)]
pub(crate) struct RecordsCache {
    entries: Mutex<Vec<Cached>>,
}

struct Cached {
    segment: tantivy::index::SegmentId,
    key: Arc<RecordsKey>,
    bits: Arc<Bits>,
    used: u64,
}

impl std::fmt::Debug for RecordsCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordsCache").finish_non_exhaustive()
    }
}

/// What the record sets of one index may occupy.
const CACHE_BYTES: usize = 64 << 20;

impl RecordsCache {
    fn get(&self, segment: &SegmentReader, key: &Arc<RecordsKey>) -> tantivy::Result<Arc<Bits>> {
        let id = segment.segment_id();
        {
            let mut entries = self.entries.lock();
            let tick = entries.iter().map(|e| e.used).max().unwrap_or(0) + 1;
            if let Some(e) = (entries.iter_mut()).find(|e| e.segment == id && *e.key == **key) {
                e.used = tick;
                return Ok(e.bits.clone());
            }
        }
        // Built outside the lock: two racing builders only waste work.
        let bits = Arc::new(build(key, segment)?);
        let mut entries = self.entries.lock();
        let tick = entries.iter().map(|e| e.used).max().unwrap_or(0) + 1;
        entries.push(Cached {
            segment: id,
            key: key.clone(),
            bits: bits.clone(),
            used: tick,
        });
        let size = |e: &Cached| {
            e.bits.bytes()
                + match &*e.key {
                    RecordsKey::Text(_, t) => t.len(),
                    RecordsKey::All(c) => c.iter().flatten().map(|t| 8 * t.ids.len()).sum(),
                }
        };
        while entries.len() > 1 && entries.iter().map(size).sum::<usize>() > CACHE_BYTES {
            if let Some(oldest) = (0..entries.len()).min_by_key(|&i| entries[i].used) {
                entries.swap_remove(oldest);
            }
        }
        Ok(bits)
    }
}

/// Matches a set of records (score 0).
#[derive(Clone, Debug)]
pub(crate) struct Records {
    pub(crate) key: Arc<RecordsKey>,
    pub(crate) cache: Arc<RecordsCache>,
}

impl Query for Records {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for Records {
    fn scorer(&self, segment: &SegmentReader, _: Score) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(Box::new(BitsDocSet::new(
            self.cache.get(segment, &self.key)?,
        )))
    }

    fn explain(&self, segment: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        if self.scorer(segment, 1.0)?.seek(doc) == doc {
            Ok(Explanation::new("visible to the caller", 0.0))
        } else {
            Err(tantivy::TantivyError::InvalidArgument(
                "the record is not visible to the caller".to_owned(),
            ))
        }
    }
}

/// Score of a document matched through its values: a constant, so that neither the values'
/// words nor how many records hold them (hidden ones included) orders the results.
pub(crate) const JOINED_SCORE: Score = 1.0;

/// The document records of the blocks holding a value record that `child` matches.
#[derive(Debug)]
pub(crate) struct ToDocument {
    pub(crate) child: Box<dyn Query>,
    /// The document records.
    pub(crate) documents: Arc<RecordsKey>,
    pub(crate) cache: Arc<RecordsCache>,
}

impl Clone for ToDocument {
    fn clone(&self) -> Self {
        ToDocument {
            child: self.child.box_clone(),
            documents: self.documents.clone(),
            cache: self.cache.clone(),
        }
    }
}

impl Query for ToDocument {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        // The values only decide which documents match, never their score.
        let unscored = match scoring.searcher() {
            Some(searcher) => EnableScoring::disabled_from_searcher(searcher),
            None => EnableScoring::disabled_from_schema(scoring.schema()),
        };
        Ok(Box::new(ToDocumentWeight {
            child: self.child.weight(unscored)?,
            documents: self.documents.clone(),
            cache: self.cache.clone(),
        }))
    }
}

struct ToDocumentWeight {
    child: Box<dyn Weight>,
    documents: Arc<RecordsKey>,
    cache: Arc<RecordsCache>,
}

impl Weight for ToDocumentWeight {
    fn scorer(&self, segment: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let documents = self.cache.get(segment, &self.documents)?;
        let child = self.child.scorer(segment, 1.0)?;
        let mut scorer = ToDocumentScorer {
            child,
            documents,
            doc: 0,
            score: JOINED_SCORE * boost,
        };
        scorer.doc = scorer.document_of_child();
        Ok(Box::new(scorer))
    }

    fn explain(&self, segment: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut scorer = self.scorer(segment, 1.0)?;
        if scorer.seek(doc) == doc {
            Ok(Explanation::new(
                "a value the caller may view matches",
                scorer.score(),
            ))
        } else {
            Err(tantivy::TantivyError::InvalidArgument(
                "no value of the document the caller may view matches".to_owned(),
            ))
        }
    }
}

struct ToDocumentScorer {
    child: Box<dyn Scorer>,
    documents: Arc<Bits>,
    doc: DocId,
    score: Score,
}

impl ToDocumentScorer {
    /// The document record of the block of the child's current record.
    fn document_of_child(&self) -> DocId {
        match self.child.doc() {
            TERMINATED => TERMINATED,
            child => self.documents.next(child),
        }
    }
}

impl DocSet for ToDocumentScorer {
    fn advance(&mut self) -> DocId {
        match self.doc {
            TERMINATED => TERMINATED,
            doc => self.seek(doc + 1),
        }
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc >= target {
            return self.doc;
        }
        // The block of the first document record >= target starts right after the document
        // record before target.
        let start = self.documents.previous(target).map_or(0, |d| d + 1);
        if self.child.doc() < start {
            self.child.seek(start);
        }
        self.doc = self.document_of_child();
        self.doc
    }

    fn doc(&self) -> DocId {
        self.doc
    }

    fn size_hint(&self) -> u32 {
        self.child.size_hint()
    }
}

impl Scorer for ToDocumentScorer {
    fn score(&mut self) -> Score {
        self.score
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_find_their_neighbours() {
        let mut b = Bits::new(200);
        for d in [0, 5, 63, 64, 130, 199] {
            b.insert(d);
        }
        assert_eq!(b.count, 6);
        let next: Vec<DocId> = [0, 1, 6, 63, 64, 65, 131, 199, 200, 500]
            .iter()
            .map(|d| b.next(*d))
            .collect();
        assert_eq!(
            next,
            [0, 5, 63, 63, 64, 130, 199, 199, TERMINATED, TERMINATED]
        );
        let previous: Vec<Option<DocId>> = [0, 1, 5, 6, 64, 65, 130, 199, 200, 500]
            .iter()
            .map(|d| b.previous(*d))
            .collect();
        assert_eq!(
            previous,
            [
                None,
                Some(0),
                Some(0),
                Some(5),
                Some(63),
                Some(64),
                Some(64),
                Some(130),
                Some(199),
                Some(199)
            ]
        );
        let empty = Bits::new(0);
        assert_eq!((empty.next(0), empty.previous(5)), (TERMINATED, None));
    }
}
