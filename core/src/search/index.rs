//! The tantivy index: one record per document (label, type label) and one per document metadata
//! value (spec 2.5's DocumentMetadataSearchResult: the value, its type and the document type's
//! label). Values are indexed three ways: as words, as character n-grams (so a partial value
//! matches a substring), and, when they read as a date, time or number, as a typed fast field for
//! range queries.
//!
//! A document's records form one block (its value records, then its document record) so that a
//! document search reaches metadata only through value records, joined to their document
//! (`visible.rs`): a caller's metadata terms then match only values they may view, and a value
//! they may not view cannot change their results, counts or order.
//!
//! The collectors that count, rank and sort a search's visible hits are `collectors.rs`; what a
//! caller may see of the index is `visible.rs`; the translation of a parsed query into tantivy
//! queries is `translate.rs`; the answers of recent searches are `answers.rs`.
//!
//! Part of `search` (layer 7 of `scripts/check-structure`): it may import only what `search`
//! may (see `search`'s module documentation).

use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use rustc_hash::FxHashSet;
use tantivy::indexer::UserOperation;
use tantivy::query::{Bm25StatisticsProvider, BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field as TField, IndexRecordOption, NumericOptions, STRING, Schema, TextFieldIndexing,
    TextOptions,
};
use tantivy::tokenizer::{LowerCaser, NgramTokenizer, SimpleTokenizer, TextAnalyzer};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use super::answers::{ANSWER_STEP, Answer, Answers};
use super::collectors::{Compared, Ranked, Sort, SortedTop, VisibleTop};
use super::query::Expr;
use super::visible::{IdTerms, Records, RecordsCache, RecordsKey, SearchScope, TypeVisibility};
use crate::access::DocumentVisibility;
use crate::error::{Error, Result};
pub use crate::model::IndexedDocument;
use crate::model::{Hit, RecordKind, TypedKey};

/// Schema version of the index; a different version needs `search_upgrade` (a rebuild).
/// 3: values only in value records (with their metadata type id), each document one block.
/// 4: typed keys of values by their type's value type, text values as a column for sorting,
/// and the type of each non-empty value (for `has:`).
pub const INDEX_SCHEMA_VERSION: u32 = 4;
const NGRAM: &str = "docmeta_ngram";
const WORDS: &str = "docmeta_words";
const DOCUMENT: &str = "document";
const METADATA: &str = "metadata";

pub(super) fn search_error<E: std::fmt::Display + 'static>(operation: &str, e: E) -> Error {
    // tantivy keeps the I/O error in a field that is not its `source()`: look for it by type.
    let full = (&e as &dyn std::any::Any)
        .downcast_ref::<tantivy::TantivyError>()
        .is_some_and(tantivy_says_full);
    if full {
        return Error::storage_full(operation.to_owned(), e.to_string());
    }
    Error::storage(operation.to_owned(), e.to_string())
}

/// Whether tantivy failed because the disk or a quota is full.
fn tantivy_says_full(e: &tantivy::TantivyError) -> bool {
    use tantivy::TantivyError as T;
    use tantivy::directory::error::{OpenDirectoryError, OpenReadError, OpenWriteError};
    let io = match e {
        T::IoError(io)
        | T::OpenWriteError(OpenWriteError::IoError { io_error: io, .. })
        | T::OpenReadError(OpenReadError::IoError { io_error: io, .. })
        | T::OpenDirectoryError(OpenDirectoryError::IoError { io_error: io, .. }) => io,
        _ => return false,
    };
    matches!(
        io.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    )
}

#[derive(Clone, Copy)]
pub(super) struct Fields {
    kind: TField,
    document_id: TField,
    pub(super) document_type_id: TField,
    metadata_id: TField,
    pub(super) metadata_type_id: TField,
    pub(super) label: TField,
    pub(super) type_label: TField,
    pub(super) value_type_label: TField,
    pub(super) type_name: TField,
    pub(super) value: TField,
    pub(super) value_ngram: TField,
    pub(super) value_time: TField,
    pub(super) value_number: TField,
    value_text: TField,
    pub(super) filled_type: TField,
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
    // Document records hold `label` and `document_type__label`; value records everything else
    // (their own copy of the document type's label), so that the statistics of the fields a
    // document search scores are those of document records alone.
    let fields = Fields {
        kind: b.add_text_field("kind", STRING),
        document_id: b.add_i64_field("document_id", id.clone()),
        document_type_id: b.add_i64_field("document_type_id", id.clone()),
        metadata_id: b.add_i64_field("metadata_id", id.clone()),
        metadata_type_id: b.add_i64_field("metadata_type_id", id.clone()),
        label: b.add_text_field("label", words.clone()),
        type_label: b.add_text_field("document_type__label", words.clone()),
        value_type_label: b.add_text_field("value_document_type__label", words.clone()),
        type_name: b.add_text_field("metadata_type__name", STRING),
        value: b.add_text_field("value", words),
        value_ngram: b.add_text_field("value_ngram", ngram),
        value_time: b.add_i64_field("value_time", id.clone()),
        value_number: b.add_f64_field("value_number", id),
        // A text (or boolean) type's values as a column, for sorting (numbers, dates and times
        // sort by `value_number` and `value_time`).
        value_text: b.add_text_field("value_text", TextOptions::default().set_fast("raw")),
        filled_type: b.add_i64_field("filled_type", NumericOptions::default().set_indexed()),
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

pub(super) fn number_of(value: &str) -> Option<f64> {
    // `-0` is `0`: one key for one number.
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite())
        .map(|n| n + 0.0)
}

/// The records of a search and what the caller may see of them.
pub(super) enum Target {
    /// Document records; metadata terms reach the value records `values` allows (`None`: none,
    /// `Some(None)`: all), joined to their document.
    Documents { values: Option<Option<Records>> },
    /// Value records (all visible ones pass the search's own filter).
    Values,
}

/// The BM25 statistics of every search: fixed, so that a record's score comes from the record
/// alone (its words, their frequency and its length). Index-wide statistics would let what the
/// caller may not see move their scores: how many values (hidden ones included) hold a word, how
/// many records there are, and even which documents were reindexed lately (tantivy counts a
/// replaced record until its segment is merged), which an edit of a hidden value causes.
struct RecordStatistics {
    ngram: TField,
}

impl Bm25StatisticsProvider for RecordStatistics {
    fn total_num_tokens(&self, field: TField) -> tantivy::Result<u64> {
        // A typical length, for length normalisation: a few words, or the n-grams of a value.
        Ok(if field == self.ngram { 24 } else { 3 })
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(1)
    }

    fn doc_freq(&self, _: &Term) -> tantivy::Result<u64> {
        Ok(1)
    }
}

/// A tantivy index of documents and metadata values.
pub struct SearchIndex {
    pub(super) index: Index,
    reader: IndexReader,
    /// `None` in a read-only view (another process holds the writer; see `home.rs`).
    writer: Option<Mutex<IndexWriter>>,
    pub(super) fields: Fields,
    pub(super) records: Arc<RecordsCache>,
    /// The document records (the end of each block).
    pub(super) documents: Arc<RecordsKey>,
    /// The answers of recent searches, for the index contents they were computed on.
    answers: Answers,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex").finish_non_exhaustive()
    }
}

impl SearchIndex {
    fn from_index(index: Index, fields: Fields, writable: bool) -> Result<Self> {
        register_tokenizers(&index)?;
        let writer = if writable {
            // Indexing threads, each with its own 64 MiB buffer.
            let threads = std::thread::available_parallelism()
                .map_or(1, usize::from)
                .min(4);
            let writer = index
                .writer_with_num_threads(threads, threads * (64 << 20))
                .map_err(|e| search_error("opening the search index writer", e))?;
            Some(Mutex::new(writer))
        } else {
            None
        };
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| search_error("opening the search index reader", e))?;
        Ok(SearchIndex {
            records: Arc::default(),
            answers: Answers::default(),
            documents: Arc::new(RecordsKey::Text(fields.kind, DOCUMENT.to_owned())),
            index,
            reader,
            writer,
            fields,
        })
    }

    /// An index in memory.
    pub fn in_memory() -> Result<Self> {
        let (schema, fields) = schema();
        Self::from_index(Index::create_in_ram(schema), fields, true)
    }

    /// Opens the index in `dir` to read it only: no writer, so no lock (the process holding the
    /// writer may write meanwhile; [`refresh`](Self::refresh) sees its commits).
    pub fn open_read_only(dir: &Path) -> Result<Self> {
        let (schema, fields) = schema();
        match Index::open_in_dir(dir) {
            Ok(index) => Self::from_index(index, fields, false),
            // Not created yet by its writer: an empty view.
            Err(_) => Self::from_index(Index::create_in_ram(schema), fields, false),
        }
    }

    /// An empty index to read only (no writer): what a reader sees of an index another
    /// build's schema made.
    pub fn empty_read_only() -> Result<Self> {
        let (schema, fields) = schema();
        Self::from_index(Index::create_in_ram(schema), fields, false)
    }

    /// Whether this handle may write (it holds the index writer).
    pub fn writable(&self) -> bool {
        self.writer.is_some()
    }

    /// Sees the commits made since the last one seen (by this process or the writer's).
    pub fn refresh(&self) -> Result<()> {
        self.reader
            .reload()
            .map_err(|e| search_error("reloading the search index", e))
    }

    fn writer(&self) -> Result<parking_lot::MutexGuard<'_, IndexWriter>> {
        self.writer.as_ref().map(Mutex::lock).ok_or_else(|| {
            Error::InvalidInput(
                "this search index view is read-only: another process holds its writer".into(),
            )
        })
    }

    /// Opens the index in `dir`, creating it when empty (a missing `dir` is created `0700`:
    /// tantivy creates its files with the process's umask, and this directory keeps everyone
    /// but its owner from reaching them).
    pub fn open(dir: &Path) -> Result<Self> {
        crate::owner_only::create_dir_all(dir)
            .map_err(|e| Error::storage("creating the search directory", e))?;
        let (schema, fields) = schema();
        let index = match Index::open_in_dir(dir) {
            Ok(index) => index,
            Err(_) => Index::create_in_dir(dir, schema)
                .map_err(|e| search_error("creating the search index", e))?,
        };
        Self::from_index(index, fields, true)
    }

    /// Replaces the records of these documents (deleted documents: pass their ids in `removed`),
    /// then commits and makes them searchable.
    pub fn update(&self, documents: &[IndexedDocument], removed: &[i64]) -> Result<()> {
        {
            let writer = self.writer()?;
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
        let writer = self.writer()?;
        for d in documents {
            let mut block = Vec::with_capacity(d.metadata.len() + 1);
            for v in &d.metadata {
                let mut m = TantivyDocument::default();
                m.add_text(f.kind, METADATA);
                m.add_i64(f.document_id, d.id);
                m.add_i64(f.document_type_id, d.document_type_id);
                m.add_i64(f.metadata_id, v.id);
                m.add_i64(f.metadata_type_id, v.metadata_type_id);
                m.add_text(f.value_type_label, &d.document_type_label);
                m.add_text(f.type_name, &v.metadata_type_name);
                m.add_text(f.value, &v.value);
                m.add_text(f.value_ngram, &v.value);
                // A typed value's key is what its text reads as anyway (the forms of value
                // types are forms `time_of` and `number_of` read): its type only saves the
                // guessing. Text (and booleans) are also a column, for sorting.
                match (Compared::of(v.value_type), v.value_type.key(&v.value)) {
                    (Compared::AsNumber, Some(TypedKey::Number(n))) => m.add_f64(f.value_number, n),
                    (Compared::InTime, Some(TypedKey::Time(t))) => m.add_i64(f.value_time, t),
                    _ => {
                        if let Some(t) = time_of(&v.value) {
                            m.add_i64(f.value_time, t);
                        }
                        if let Some(n) = number_of(&v.value) {
                            m.add_f64(f.value_number, n);
                        }
                        if Compared::of(v.value_type) == Compared::AsText && !v.value.is_empty() {
                            m.add_text(f.value_text, &v.value);
                        }
                    }
                }
                if !v.value.is_empty() {
                    m.add_i64(f.filled_type, v.metadata_type_id);
                }
                block.push(UserOperation::Add(m));
            }
            let mut doc = TantivyDocument::default();
            doc.add_text(f.kind, DOCUMENT);
            doc.add_i64(f.document_id, d.id);
            doc.add_i64(f.document_type_id, d.document_type_id);
            doc.add_text(f.label, &d.label);
            doc.add_text(f.type_label, &d.document_type_label);
            block.push(UserOperation::Add(doc));
            // One operation group: one segment, contiguous, in this order (the join relies on
            // it; see visible.rs).
            writer
                .run(block)
                .map_err(|e| search_error("indexing a document", e))?;
        }
        Ok(())
    }

    /// Removes every record.
    pub fn clear(&self) -> Result<()> {
        self.writer()?
            .delete_all_documents()
            .map_err(|e| search_error("clearing the search index", e))?;
        self.commit()
    }

    /// Makes everything added so far durable and searchable.
    pub fn commit(&self) -> Result<()> {
        self.writer()?
            .commit()
            .map_err(|e| search_error("committing the search index", e))?;
        self.refresh()
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
                DOCUMENT
            } else {
                METADATA
            },
        )
    }

    /// One page of the records of `kind` matching `expr` that `scope` lets the caller see, best
    /// first, and how many it lets them see in all. The visible records are per-segment bitsets
    /// intersected with the query, so only they are matched, scored and counted, and only
    /// `offset + limit` of them are kept.
    ///
    /// A document search matches metadata terms only through the values `scope` lets the caller
    /// view, and scores them with a constant; every score comes from the record alone (see
    /// `RecordStatistics`). So a value the caller may not view changes neither which results
    /// they get, nor how many, nor their order.
    ///
    /// With `order`, documents come in the order of their values of one metadata type instead
    /// (see [`Sort`]); only document searches sort.
    pub fn search_visible(
        &self,
        kind: RecordKind,
        expr: &Expr,
        scope: Arc<SearchScope>,
        order: Option<Sort>,
        offset: usize,
        limit: usize,
    ) -> Result<(usize, Vec<Hit>)> {
        if order.is_some() && kind != RecordKind::Document {
            return Err(Error::InvalidInput(
                "only document searches sort by a metadata type".into(),
            ));
        }
        let searcher = self.reader.searcher();
        let contents = searcher.generation().segments().clone();
        let wanted = offset.saturating_add(limit);
        let page = |top: &[Ranked]| -> Vec<Hit> {
            top.iter()
                .skip(offset)
                .take(limit)
                .map(|(score, document_id, metadata_id)| Hit {
                    document_id: *document_id,
                    metadata_id: *metadata_id,
                    score: score.0,
                })
                .collect()
        };
        if let Some((count, top)) = self
            .answers
            .get(&contents, kind, expr, &scope, order, wanted)
        {
            return Ok((count, page(&top)));
        }
        // Kept a little beyond the page, so that the next pages are answered from memory too.
        let keep = wanted.div_ceil(ANSWER_STEP).saturating_mul(ANSWER_STEP);
        let documents = self.document_clause(&scope.documents);
        let (visible, query) = match kind {
            RecordKind::Document => {
                let Some(visible) = self.records(vec![documents]) else {
                    return Ok((0, Vec::new()));
                };
                let values = self.records(vec![
                    self.document_clause(&scope.document_metadata),
                    self.type_clause(&scope.metadata_types),
                ]);
                let target = Target::Documents { values };
                (visible, self.translate(expr, &target)?)
            }
            RecordKind::Metadata => {
                let Some(visible) = self.records(vec![
                    documents,
                    self.document_clause(&scope.document_metadata),
                    self.type_clause(&scope.metadata_types),
                ]) else {
                    return Ok((0, Vec::new()));
                };
                (visible, self.translate(expr, &Target::Values)?)
            }
        };
        let mut clauses = vec![
            (
                Occur::Must,
                Box::new(TermQuery::new(
                    self.kind_term(kind),
                    IndexRecordOption::Basic,
                )) as Box<dyn Query>,
            ),
            (Occur::Must, query),
        ];
        if let Some(visible) = visible {
            clauses.push((Occur::Must, Box::new(visible)));
        }
        let query = BooleanQuery::new(clauses);
        let statistics = RecordStatistics {
            ngram: self.fields.value_ngram,
        };
        let (count, top) = match order {
            None => searcher.search_with_statistics_provider(
                &query,
                &VisibleTop {
                    scope: scope.clone(),
                    kind,
                    keep,
                },
                &statistics,
            ),
            Some(sort) => searcher.search_with_statistics_provider(
                &query,
                &SortedTop {
                    scope: scope.clone(),
                    sort,
                    keep,
                },
                &statistics,
            ),
        }
        .map_err(|e| search_error("searching", e))?;
        let hits = page(&top);
        self.answers.put(Answer {
            contents,
            kind,
            expr: expr.clone(),
            scope,
            order,
            keep,
            count,
            top: Arc::new(top),
            used: 0,
        });
        Ok((count, hits))
    }

    /// The records of the documents `visible` allows (every record of theirs).
    fn document_clause(&self, visible: &DocumentVisibility) -> Clause {
        if visible.all {
            return Clause::Everything;
        }
        let mut terms = Vec::new();
        for (field, ids) in [
            (self.fields.document_type_id, &visible.types),
            (self.fields.document_id, &visible.documents),
        ] {
            if !ids.is_empty() {
                terms.push(IdTerms {
                    field,
                    ids: sorted(ids),
                });
            }
        }
        if terms.is_empty() {
            Clause::Nothing
        } else {
            Clause::Only(terms)
        }
    }

    /// The value records of the metadata types `visible` allows.
    fn type_clause(&self, visible: &TypeVisibility) -> Clause {
        if visible.all {
            Clause::Everything
        } else if visible.ids.is_empty() {
            Clause::Nothing
        } else {
            Clause::Only(vec![IdTerms {
                field: self.fields.metadata_type_id,
                ids: sorted(&visible.ids),
            }])
        }
    }

    /// The records in every clause: `None` when none can be, `Some(None)` for every record.
    fn records(&self, clauses: Vec<Clause>) -> Option<Option<Records>> {
        let mut all = Vec::new();
        for clause in clauses {
            match clause {
                Clause::Nothing => return None,
                Clause::Everything => {}
                Clause::Only(terms) => all.push(terms),
            }
        }
        Some((!all.is_empty()).then(|| Records {
            key: Arc::new(RecordsKey::All(all)),
            cache: self.records.clone(),
        }))
    }
}

/// A condition on records: a union of id terms, or a trivial one.
enum Clause {
    Everything,
    Nothing,
    Only(Vec<IdTerms>),
}

fn sorted(ids: &FxHashSet<i64>) -> Vec<i64> {
    let mut ids: Vec<i64> = ids.iter().copied().collect();
    ids.sort_unstable();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{IndexedValue, ValueType};

    #[test]
    fn a_full_disk_under_the_index_is_storage_full() {
        let e = tantivy::TantivyError::IoError(Arc::new(std::io::Error::from(
            std::io::ErrorKind::StorageFull,
        )));
        let e = search_error("committing the search index", e);
        assert_eq!(e.kind(), crate::error::ErrorKind::StorageFull, "{e}");
    }

    #[test]
    fn other_index_failures_are_storage() {
        let e = tantivy::TantivyError::IoError(Arc::new(std::io::Error::from(
            std::io::ErrorKind::PermissionDenied,
        )));
        let e = search_error("committing the search index", e);
        assert_eq!(e.kind(), crate::error::ErrorKind::Storage, "{e}");
    }
    use crate::search::query::parse;

    fn document(id: i64, values: usize) -> IndexedDocument {
        IndexedDocument {
            id,
            label: format!("label{id}"),
            document_type_label: "Type".to_owned(),
            document_type_id: 1,
            metadata: (0..values as i64)
                .map(|v| IndexedValue {
                    id: id * 10 + v,
                    metadata_type_id: v + 1,
                    metadata_type_name: format!("type{v}"),
                    value: (1000 * id + v).to_string(),
                    value_type: ValueType::Text,
                })
                .collect(),
        }
    }

    fn hits(index: &SearchIndex, q: &str) -> Result<Vec<i64>> {
        let (_, hits) = index.search_visible(
            RecordKind::Document,
            &parse(q)?,
            Arc::new(SearchScope::everything()),
            None,
            0,
            1000,
        )?;
        let mut ids: Vec<i64> = hits.iter().map(|h| h.document_id).collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// Every value is joined to its own document (the first document record at or after it),
    /// across commits, replaced blocks and a merge of every segment.
    #[test]
    fn values_reach_their_own_document_across_commits_and_merges() -> Result<()> {
        let index = SearchIndex::in_memory()?;
        // Segments merge only when the test says so (a background merge under load would
        // leave nothing to merge below).
        index
            .writer()?
            .set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        let values = |id: i64| (id % 4) as usize;
        for batch in 0..12 {
            let documents: Vec<IndexedDocument> = (1..=10)
                .map(|i| document(batch * 10 + i, values(batch * 10 + i)))
                .collect();
            index.update(&documents, &[])?;
        }
        // Replaced blocks (their old records deleted) and removed documents.
        let replaced: Vec<IndexedDocument> = (1..=120)
            .step_by(7)
            .map(|id| document(id, values(id)))
            .collect();
        index.update(&replaced, &[5, 51])?;
        let check = |index: &SearchIndex| -> Result<()> {
            for id in 1..=120 {
                let expected = if values(id) == 0 || id == 5 || id == 51 {
                    vec![]
                } else {
                    vec![id]
                };
                let word = format!("value:\"{}\"", 1000 * id);
                assert_eq!(hits(index, &word)?, expected, "{word}");
                let range = format!("value:[{} TO {}]", 1000 * id, 1000 * id + 3);
                assert_eq!(hits(index, &range)?, expected, "{range}");
            }
            assert_eq!(
                hits(index, "metadata_type__name:type2")?,
                (1..=120)
                    .filter(|id| values(*id) == 3 && *id != 5 && *id != 51)
                    .collect::<Vec<_>>()
            );
            Ok(())
        };
        check(&index)?;
        let segments = index
            .index
            .searchable_segment_ids()
            .map_err(|e| search_error("listing segments", e))?;
        assert!(segments.len() > 1, "several segments to merge");
        index
            .writer()?
            .merge(&segments)
            .wait()
            .map_err(|e| search_error("merging", e))?;
        index.commit()?;
        assert_eq!(
            index
                .index
                .searchable_segment_ids()
                .map_err(|e| search_error("listing segments", e))?
                .len(),
            1
        );
        check(&index)
    }
}
