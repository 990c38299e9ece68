//! The tantivy index: one record per document (label, type label, every metadata name and value)
//! and one per document metadata value (spec 2.5's DocumentMetadataSearchResult). Values are
//! indexed three ways: as words, as character n-grams (so a partial value matches a substring),
//! and, when they read as a date, time or number, as a typed fast field for range queries.

use std::ops::Bound;
use std::path::Path;

use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use tantivy::query::{
    AllQuery, BitSetDocSet, BooleanQuery, ConstScorer, EmptyQuery, EnableScoring, Explanation,
    Occur, PhraseQuery, Query, RangeQuery, Scorer, TermQuery, Weight,
};
use tantivy::schema::{
    Field as TField, IndexRecordOption, NumericOptions, STRING, Schema, TextFieldIndexing,
    TextOptions,
};
use tantivy::tokenizer::{LowerCaser, NgramTokenizer, SimpleTokenizer, TextAnalyzer};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use super::query::{Expr, Field, Match};
use crate::access::DocumentVisibility;
use crate::error::{Error, Result};

/// Schema version of the index; a different version needs `search_upgrade` (a rebuild).
pub const INDEX_SCHEMA_VERSION: u32 = 2;
const NGRAM: &str = "docmeta_ngram";
const WORDS: &str = "docmeta_words";

fn search_error(operation: &str, e: impl std::fmt::Display) -> Error {
    Error::storage(operation.to_owned(), e.to_string())
}

/// What the index holds of one document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexedDocument {
    /// Document id.
    pub id: i64,
    /// Label.
    pub label: String,
    /// Label of its type.
    pub document_type_label: String,
    /// Its metadata values: (value id, metadata type name, value).
    pub metadata: Vec<(i64, String, String)>,
    /// Id of its type (for permission filtering while collecting hits).
    pub document_type_id: i64,
}

/// Which records a search returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// Documents.
    Document,
    /// Document metadata values (DocumentMetadataSearchResult).
    Metadata,
}

/// One hit: the document, the value (for metadata records) and the score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// The document.
    pub document_id: i64,
    /// The metadata value, for [`RecordKind::Metadata`].
    pub metadata_id: Option<i64>,
    /// Relevance (higher first).
    pub score: f32,
}

#[derive(Clone, Copy)]
struct Fields {
    kind: TField,
    document_id: TField,
    document_type_id: TField,
    metadata_id: TField,
    label: TField,
    type_label: TField,
    type_name: TField,
    value: TField,
    value_ngram: TField,
    value_time: TField,
    value_number: TField,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let words = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(WORDS)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let ngram = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(NGRAM)
            .set_index_option(IndexRecordOption::Basic),
    );
    let id = NumericOptions::default().set_indexed().set_fast();
    let fields = Fields {
        kind: b.add_text_field("kind", STRING),
        document_id: b.add_i64_field("document_id", id.clone()),
        document_type_id: b.add_i64_field("document_type_id", id.clone()),
        metadata_id: b.add_i64_field("metadata_id", id.clone()),
        label: b.add_text_field("label", words.clone()),
        type_label: b.add_text_field("document_type__label", words.clone()),
        type_name: b.add_text_field("metadata_type__name", STRING),
        value: b.add_text_field("value", words),
        value_ngram: b.add_text_field("value_ngram", ngram),
        value_time: b.add_i64_field("value_time", id.clone()),
        value_number: b.add_f64_field("value_number", id),
    };
    (b.build(), fields)
}

fn register_tokenizers(index: &Index) -> Result<()> {
    let ngram = NgramTokenizer::new(2, 3, false)
        .map_err(|e| search_error("configuring the search index", e))?;
    index.tokenizers().register(
        NGRAM,
        TextAnalyzer::builder(ngram).filter(LowerCaser).build(),
    );
    index.tokenizers().register(
        WORDS,
        TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(LowerCaser)
            .build(),
    );
    Ok(())
}

/// Reads a normalised date (`YYYY-MM-DD`), date and time or time as seconds, for ranges.
pub fn time_of(value: &str) -> Option<i64> {
    use crate::metadata::calendar;
    let v = value.trim();
    if let Some(d) = calendar::iso_date(v) {
        return d.and_hms_opt(0, 0, 0).map(|t| t.and_utc().timestamp());
    }
    if let Some(t) = calendar::iso_date_time(v) {
        return Some(t.and_utc().timestamp());
    }
    calendar::time(v, false).map(|t| i64::from(chrono::Timelike::num_seconds_from_midnight(&t)))
}

fn number_of(value: &str) -> Option<f64> {
    value.trim().parse::<f64>().ok().filter(|n| n.is_finite())
}

/// A tantivy index of documents and metadata values.
pub struct SearchIndex {
    index: Index,
    reader: IndexReader,
    writer: Mutex<IndexWriter>,
    fields: Fields,
    visible_sets: std::sync::Arc<VisibleSetCache>,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex").finish_non_exhaustive()
    }
}

impl SearchIndex {
    fn from_index(index: Index, fields: Fields) -> Result<Self> {
        register_tokenizers(&index)?;
        // Indexing threads, each with its own 64 MiB buffer.
        let threads = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(4);
        let writer = index
            .writer_with_num_threads(threads, threads * (64 << 20))
            .map_err(|e| search_error("opening the search index writer", e))?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| search_error("opening the search index reader", e))?;
        Ok(SearchIndex {
            visible_sets: std::sync::Arc::default(),
            index,
            reader,
            writer: Mutex::new(writer),
            fields,
        })
    }

    /// An index in memory.
    pub fn in_memory() -> Result<Self> {
        let (schema, fields) = schema();
        Self::from_index(Index::create_in_ram(schema), fields)
    }

    /// Opens the index in `dir`, creating it when empty.
    pub fn open(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::storage("creating the search directory", e))?;
        let (schema, fields) = schema();
        let index = match Index::open_in_dir(dir) {
            Ok(index) => index,
            Err(_) => Index::create_in_dir(dir, schema)
                .map_err(|e| search_error("creating the search index", e))?,
        };
        Self::from_index(index, fields)
    }

    /// Replaces the records of these documents (deleted documents: pass their ids in `removed`),
    /// then commits and makes them searchable.
    pub fn update(&self, documents: &[IndexedDocument], removed: &[i64]) -> Result<()> {
        {
            let writer = self.writer.lock();
            for id in removed.iter().chain(documents.iter().map(|d| &d.id)) {
                writer.delete_term(Term::from_field_i64(self.fields.document_id, *id));
            }
        }
        self.add(documents)?;
        self.commit()
    }

    /// Adds records for these documents without committing (bulk loading; see
    /// [`commit`](Self::commit)).
    pub fn add(&self, documents: &[IndexedDocument]) -> Result<()> {
        let f = self.fields;
        let writer = self.writer.lock();
        for d in documents {
            let mut doc = TantivyDocument::default();
            doc.add_text(f.kind, "document");
            doc.add_i64(f.document_id, d.id);
            doc.add_i64(f.document_type_id, d.document_type_id);
            doc.add_text(f.label, &d.label);
            doc.add_text(f.type_label, &d.document_type_label);
            for (_, name, value) in &d.metadata {
                doc.add_text(f.type_name, name);
                self.add_value(&mut doc, value);
            }
            writer
                .add_document(doc)
                .map_err(|e| search_error("indexing a document", e))?;
            for (metadata_id, name, value) in &d.metadata {
                let mut m = TantivyDocument::default();
                m.add_text(f.kind, "metadata");
                m.add_i64(f.document_id, d.id);
                m.add_i64(f.document_type_id, d.document_type_id);
                m.add_i64(f.metadata_id, *metadata_id);
                m.add_text(f.type_label, &d.document_type_label);
                m.add_text(f.type_name, name);
                self.add_value(&mut m, value);
                writer
                    .add_document(m)
                    .map_err(|e| search_error("indexing a metadata value", e))?;
            }
        }
        Ok(())
    }

    fn add_value(&self, doc: &mut TantivyDocument, value: &str) {
        let f = self.fields;
        doc.add_text(f.value, value);
        doc.add_text(f.value_ngram, value);
        if let Some(t) = time_of(value) {
            doc.add_i64(f.value_time, t);
        }
        if let Some(n) = number_of(value) {
            doc.add_f64(f.value_number, n);
        }
    }

    /// Removes every record.
    pub fn clear(&self) -> Result<()> {
        self.writer
            .lock()
            .delete_all_documents()
            .map_err(|e| search_error("clearing the search index", e))?;
        self.commit()
    }

    /// Makes everything added so far durable and searchable.
    pub fn commit(&self) -> Result<()> {
        self.writer
            .lock()
            .commit()
            .map_err(|e| search_error("committing the search index", e))?;
        self.reader
            .reload()
            .map_err(|e| search_error("reloading the search index", e))
    }

    /// How many records of `kind` the index holds.
    pub fn count(&self, kind: RecordKind) -> Result<usize> {
        let q = TermQuery::new(self.kind_term(kind), IndexRecordOption::Basic);
        self.reader
            .searcher()
            .search(&q, &tantivy::collector::Count)
            .map_err(|e| search_error("counting search records", e))
    }

    fn kind_term(&self, kind: RecordKind) -> Term {
        Term::from_field_text(
            self.fields.kind,
            if kind == RecordKind::Document {
                "document"
            } else {
                "metadata"
            },
        )
    }

    fn tokens(&self, field: TField, text: &str) -> Result<Vec<Term>> {
        let mut analyzer = self
            .index
            .tokenizer_for_field(field)
            .map_err(|e| search_error("tokenizing a query", e))?;
        let mut stream = analyzer.token_stream(text);
        let mut terms = Vec::new();
        while let Some(token) = stream.next() {
            terms.push(Term::from_field_text(field, &token.text));
        }
        Ok(terms)
    }

    /// Every word of `text` in `field` (AND), or the phrase.
    fn words(&self, field: TField, text: &str, phrase: bool) -> Result<Box<dyn Query>> {
        let terms = self.tokens(field, text)?;
        Ok(match terms.len() {
            0 => Box::new(EmptyQuery),
            1 => Box::new(TermQuery::new(
                terms[0].clone(),
                IndexRecordOption::WithFreqs,
            )),
            _ if phrase => Box::new(PhraseQuery::new(terms)),
            _ => Box::new(BooleanQuery::new(
                terms
                    .into_iter()
                    .map(|t| {
                        (
                            Occur::Must,
                            Box::new(TermQuery::new(t, IndexRecordOption::WithFreqs))
                                as Box<dyn Query>,
                        )
                    })
                    .collect(),
            )),
        })
    }

    /// A value matches as words, or as a substring (all of its n-grams), or as a phrase.
    fn value_query(&self, matching: &Match) -> Result<Box<dyn Query>> {
        let f = self.fields;
        Ok(match matching {
            Match::Phrase(p) => self.words(f.value, p, true)?,
            Match::Words(w) => {
                let grams: Vec<Term> = self
                    .tokens(f.value_ngram, w)?
                    .into_iter()
                    .filter(|t| {
                        t.value()
                            .as_str()
                            .is_some_and(|s| s.chars().count() == w.chars().count().min(3))
                    })
                    .collect();
                if grams.is_empty() {
                    // Too short for n-grams: whole words only.
                    return self.words(f.value, w, false);
                }
                // Every whole-word match is also a substring match: the n-grams alone decide.
                let partial: Box<dyn Query> = {
                    Box::new(BooleanQuery::new(
                        grams
                            .into_iter()
                            .map(|t| {
                                (
                                    Occur::Must,
                                    Box::new(TermQuery::new(t, IndexRecordOption::Basic))
                                        as Box<dyn Query>,
                                )
                            })
                            .collect(),
                    ))
                };
                partial
            }
            Match::Range { lower, upper } => self.range_query(lower, upper)?,
        })
    }

    fn range_query(
        &self,
        lower: &Option<(String, bool)>,
        upper: &Option<(String, bool)>,
    ) -> Result<Box<dyn Query>> {
        let f = self.fields;
        let as_time = |b: &Option<(String, bool)>| b.as_ref().map(|(v, _)| time_of(v));
        let as_number = |b: &Option<(String, bool)>| b.as_ref().map(|(v, _)| number_of(v));
        let bound = |b: &Option<(String, bool)>, term: Option<Term>| match (b, term) {
            (None, _) | (_, None) => Bound::Unbounded,
            (Some((_, true)), Some(t)) => Bound::Included(t),
            (Some((_, false)), Some(t)) => Bound::Excluded(t),
        };
        let (lt, ut) = (as_time(lower), as_time(upper));
        if lt.is_none_or(|t| t.is_some()) && ut.is_none_or(|t| t.is_some()) {
            let term =
                |t: Option<Option<i64>>| t.flatten().map(|v| Term::from_field_i64(f.value_time, v));
            return Ok(Box::new(RangeQuery::new(
                bound(lower, term(lt)),
                bound(upper, term(ut)),
            )));
        }
        let (ln, un) = (as_number(lower), as_number(upper));
        if ln.is_none_or(|n| n.is_some()) && un.is_none_or(|n| n.is_some()) {
            let term = |n: Option<Option<f64>>| {
                n.flatten().map(|v| Term::from_field_f64(f.value_number, v))
            };
            return Ok(Box::new(RangeQuery::new(
                bound(lower, term(ln)),
                bound(upper, term(un)),
            )));
        }
        Err(Error::InvalidInput(
            "query: range bounds must both be dates, times or numbers".into(),
        ))
    }

    fn translate(&self, expr: &Expr) -> Result<Box<dyn Query>> {
        let f = self.fields;
        Ok(match expr {
            Expr::And(parts) => Box::new(BooleanQuery::new(
                parts
                    .iter()
                    .map(|p| Ok((Occur::Must, self.translate(p)?)))
                    .collect::<Result<_>>()?,
            )),
            Expr::Or(parts) => Box::new(BooleanQuery::new(
                parts
                    .iter()
                    .map(|p| Ok((Occur::Should, self.translate(p)?)))
                    .collect::<Result<_>>()?,
            )),
            Expr::Not(inner) => Box::new(BooleanQuery::new(vec![
                (Occur::Must, Box::new(AllQuery) as Box<dyn Query>),
                (Occur::MustNot, self.translate(inner)?),
            ])),
            Expr::Term {
                field: Some(Field::Label),
                matching,
            } => self.text_query(f.label, matching)?,
            Expr::Term {
                field: Some(Field::DocumentTypeLabel),
                matching,
            } => self.text_query(f.type_label, matching)?,
            Expr::Term {
                field: Some(Field::MetadataTypeName),
                matching,
            } => match matching {
                Match::Words(w) | Match::Phrase(w) => Box::new(TermQuery::new(
                    Term::from_field_text(f.type_name, w),
                    IndexRecordOption::Basic,
                )),
                Match::Range { .. } => {
                    return Err(Error::InvalidInput(
                        "query: metadata type names take no range".into(),
                    ));
                }
            },
            Expr::Term {
                field: Some(Field::Value),
                matching,
            } => self.value_query(matching)?,
            Expr::Term {
                field: None,
                matching,
            } => {
                let mut any: Vec<(Occur, Box<dyn Query>)> =
                    vec![(Occur::Should, self.value_query(matching)?)];
                if !matches!(matching, Match::Range { .. }) {
                    any.push((Occur::Should, self.text_query(f.label, matching)?));
                    any.push((Occur::Should, self.text_query(f.type_label, matching)?));
                    if let Match::Words(w) = matching {
                        any.push((
                            Occur::Should,
                            Box::new(TermQuery::new(
                                Term::from_field_text(f.type_name, w),
                                IndexRecordOption::Basic,
                            )),
                        ));
                    }
                }
                Box::new(BooleanQuery::new(any))
            }
        })
    }

    fn text_query(&self, field: TField, matching: &Match) -> Result<Box<dyn Query>> {
        match matching {
            Match::Words(w) => self.words(field, w, false),
            Match::Phrase(p) => self.words(field, p, true),
            Match::Range { .. } => Err(Error::InvalidInput(
                "query: ranges apply to metadata values".into(),
            )),
        }
    }

    /// One page of the records of `kind` matching `expr` that `visible` allows, best first, and
    /// how many it allows in all. Hidden hits are skipped while collecting: only visible ones
    /// are ranked, and only `offset + limit` of them are kept.
    pub fn search_visible(
        &self,
        kind: RecordKind,
        expr: &Expr,
        visible: std::sync::Arc<DocumentVisibility>,
        offset: usize,
        limit: usize,
    ) -> Result<(usize, Vec<Hit>)> {
        let mut clauses = vec![
            (
                Occur::Must,
                Box::new(TermQuery::new(
                    self.kind_term(kind),
                    IndexRecordOption::Basic,
                )) as Box<dyn Query>,
            ),
            (Occur::Must, self.translate(expr)?),
        ];
        if !visible.all {
            if visible.types.is_empty() && visible.documents.is_empty() {
                return Ok((0, Vec::new()));
            }
            // The visible records as a bitset built from the postings of the visible types and
            // documents (cached per segment): the intersection then only scores and counts
            // what the caller may see, instead of scoring every hit and dropping the hidden
            // ones. Unscored.
            let mut types: Vec<i64> = visible.types.iter().copied().collect();
            let mut documents: Vec<i64> = visible.documents.iter().copied().collect();
            types.sort_unstable();
            documents.sort_unstable();
            clauses.push((
                Occur::Must,
                Box::new(VisibleSet {
                    key: std::sync::Arc::new((types, documents)),
                    fields: (self.fields.document_type_id, self.fields.document_id),
                    cache: self.visible_sets.clone(),
                }),
            ));
        }
        let query = BooleanQuery::new(clauses);
        // The collector checks visibility again (cheaply: only visible records reach it).
        let collector = VisibleTop {
            visible,
            keep: offset.saturating_add(limit),
        };
        let (count, mut top) = self
            .reader
            .searcher()
            .search(&query, &collector)
            .map_err(|e| search_error("searching", e))?;
        let page = top
            .drain(..)
            .skip(offset)
            .take(limit)
            .map(|(score, document_id, metadata_id)| Hit {
                document_id,
                metadata_id,
                score: score.0,
            })
            .collect();
        Ok((count, page))
    }

    /// Every record of `kind` matching `expr`, best first.
    pub fn search(&self, kind: RecordKind, expr: &Expr) -> Result<Vec<Hit>> {
        let query = BooleanQuery::new(vec![
            (
                Occur::Must,
                Box::new(TermQuery::new(
                    self.kind_term(kind),
                    IndexRecordOption::Basic,
                )) as Box<dyn Query>,
            ),
            (Occur::Must, self.translate(expr)?),
        ]);
        let searcher = self.reader.searcher();
        let total = searcher
            .search(&query, &tantivy::collector::Count)
            .map_err(|e| search_error("searching", e))?;
        if total == 0 {
            return Ok(Vec::new());
        }
        let top = searcher
            .search(
                &query,
                &tantivy::collector::TopDocs::with_limit(total).order_by_score(),
            )
            .map_err(|e| search_error("ranking search results", e))?;
        // Id columns, opened once per segment.
        let mut columns: FxHashMap<
            u32,
            (
                tantivy::columnar::Column<i64>,
                tantivy::columnar::Column<i64>,
            ),
        > = FxHashMap::default();
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            let (documents, values) = match columns.entry(address.segment_ord) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let fast = searcher.segment_reader(address.segment_ord).fast_fields();
                    let open = |name: &str| {
                        fast.i64(name)
                            .map_err(|e| search_error("reading search results", e))
                    };
                    e.insert((open("document_id")?, open("metadata_id")?))
                }
            };
            if let Some(document_id) = documents.first(address.doc_id) {
                hits.push(Hit {
                    document_id,
                    metadata_id: values.first(address.doc_id),
                    score,
                });
            }
        }
        Ok(hits)
    }
}

/// A score ordered totally (for the heap of the best hits).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Score(f32);

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

type Ranked = (Score, i64, Option<i64>);

/// Counts the visible hits and keeps the best `keep` of them.
struct VisibleTop {
    visible: std::sync::Arc<DocumentVisibility>,
    keep: usize,
}

struct VisibleTopSegment {
    visible: std::sync::Arc<DocumentVisibility>,
    documents: tantivy::columnar::Column<i64>,
    types: tantivy::columnar::Column<i64>,
    values: tantivy::columnar::Column<i64>,
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
            visible: self.visible.clone(),
            documents: fast.i64("document_id")?,
            types: fast.i64("document_type_id")?,
            values: fast.i64("metadata_id")?,
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
        if !self.visible.allows(id, ty) {
            return;
        }
        self.count += 1;
        if self.keep == 0 {
            return;
        }
        let ranked = (Score(score), id, self.values.first(doc));
        if self.best.len() < self.keep {
            self.best.push(std::cmp::Reverse(ranked));
        } else if self.best.peek().is_some_and(|w| ranked > w.0) {
            self.best.pop();
            self.best.push(std::cmp::Reverse(ranked));
        }
    }

    fn harvest(self) -> (usize, Vec<Ranked>) {
        let mut best: Vec<Ranked> = self.best.into_iter().map(|r| r.0).collect();
        best.sort_by(|a, b| b.cmp(a));
        (self.count, best)
    }
}

/// The visible document types and documents, each sorted.
type VisibleKey = (Vec<i64>, Vec<i64>);

/// Matches the records of the visible document types and documents (score 0).
#[derive(Clone, Debug)]
struct VisibleSet {
    key: std::sync::Arc<VisibleKey>,
    /// `document_type_id`, `document_id`.
    fields: (TField, TField),
    cache: std::sync::Arc<VisibleSetCache>,
}

impl VisibleSet {
    fn build(&self, segment: &tantivy::SegmentReader) -> tantivy::Result<tantivy::BitSet> {
        let mut bits = tantivy::BitSet::with_max_value(segment.max_doc());
        for (field, values) in [(self.fields.0, &self.key.0), (self.fields.1, &self.key.1)] {
            let inverted = segment.inverted_index(field)?;
            for &value in values {
                let term = Term::from_field_i64(field, value);
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
        }
        Ok(bits)
    }
}

impl Query for VisibleSet {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for VisibleSet {
    fn scorer(
        &self,
        segment: &tantivy::SegmentReader,
        _: tantivy::Score,
    ) -> tantivy::Result<Box<dyn Scorer>> {
        let bits = self
            .cache
            .get_or_build(segment.segment_id(), &self.key, || self.build(segment))?;
        Ok(Box::new(ConstScorer::new(
            BitSetDocSet::from((*bits).clone()),
            0.0,
        )))
    }

    fn explain(
        &self,
        segment: &tantivy::SegmentReader,
        doc: tantivy::DocId,
    ) -> tantivy::Result<Explanation> {
        let mut scorer = self.scorer(segment, 1.0)?;
        if scorer.seek(doc) == doc {
            Ok(Explanation::new("visible to the caller", 0.0))
        } else {
            Err(tantivy::TantivyError::InvalidArgument(
                "the record is not visible to the caller".to_owned(),
            ))
        }
    }
}

/// Visibility bitsets by segment and visible set, least recently used evicted beyond a byte
/// budget. Segments never change, so an entry is exact until its segment is merged away.
#[derive(Default)]
struct VisibleSetCache {
    entries: Mutex<Vec<CachedSet>>,
}

struct CachedSet {
    segment: tantivy::index::SegmentId,
    key: std::sync::Arc<VisibleKey>,
    bits: std::sync::Arc<tantivy::BitSet>,
    used: u64,
}

impl std::fmt::Debug for VisibleSetCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VisibleSetCache").finish_non_exhaustive()
    }
}

/// What the visibility bitsets of one index may occupy.
const VISIBLE_SET_CACHE_BYTES: usize = 64 << 20;

impl VisibleSetCache {
    fn get_or_build(
        &self,
        segment: tantivy::index::SegmentId,
        key: &std::sync::Arc<VisibleKey>,
        build: impl FnOnce() -> tantivy::Result<tantivy::BitSet>,
    ) -> tantivy::Result<std::sync::Arc<tantivy::BitSet>> {
        {
            let mut entries = self.entries.lock();
            let tick = entries.iter().map(|e| e.used).max().unwrap_or(0) + 1;
            if let Some(e) = (entries.iter_mut()).find(|e| e.segment == segment && *e.key == **key)
            {
                e.used = tick;
                return Ok(e.bits.clone());
            }
        }
        // Built outside the lock: two racing builders only waste work.
        let bits = std::sync::Arc::new(build()?);
        let mut entries = self.entries.lock();
        let tick = entries.iter().map(|e| e.used).max().unwrap_or(0) + 1;
        entries.push(CachedSet {
            segment,
            key: key.clone(),
            bits: bits.clone(),
            used: tick,
        });
        let size =
            |e: &CachedSet| e.bits.max_value() as usize / 8 + 8 * (e.key.0.len() + e.key.1.len());
        while entries.len() > 1 && entries.iter().map(size).sum::<usize>() > VISIBLE_SET_CACHE_BYTES
        {
            if let Some(oldest) = (0..entries.len()).min_by_key(|&i| entries[i].used) {
                entries.swap_remove(oldest);
            }
        }
        Ok(bits)
    }
}
