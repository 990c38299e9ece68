//! Search (spec 2.5): a tantivy index of documents and metadata values that follows the event
//! log, and permission-filtered queries.
//!
//! The index is derived data. It keeps, in the `settings` table, the id of the last event it
//! applied; [`Docmeta::wait_for_index`] (also run by the worker thread and before each search)
//! applies every event after it, so a crash or restart loses nothing: the index catches up.
//!
//! Layer 7 (with `workflows`, `tasks`, `backup`, `installation`): imports sessions, the kernel and the
//! layers below. The kernel uses only `search::home` (where the index lives).

pub(crate) mod home;
pub mod index;
pub mod query;
mod visible;
mod work;

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};

pub use index::{
    Hit, IndexedDocument, IndexedValue, RecordKind, SearchIndex, SearchScope, Sort, TypeVisibility,
};
pub use query::{Expr, Lookup, ResolvedType, parse};
pub(crate) use work::run_task;
pub use work::{SearchTicket, SearchWork, SearchWorkRun, SearchWorkState};

use crate::access::{ObjectKind, ObjectRef, Permission};
use crate::error::Result;
use crate::events::{EventQuery, names};
use crate::kernel::Docmeta;
use crate::model::*;
use crate::model::{DocumentView, MetadataValueView, Page, PageRequest};
use crate::session::Session;
use crate::store::Tx;

const CURSOR: &str = "search.cursor";
/// How long a catch-up waits for events committed before it to become readable behind an older
/// transaction still running (PostgreSQL only; see `Tx::follow_horizon`).
const SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

impl Docmeta {
    /// The setting holding the last event applied to this process's index: one per index when
    /// several processes share a PostgreSQL database (each has its own index), the plain key
    /// on SQLite (one process, and what a restore resets).
    fn cursor_key(&self) -> String {
        match self.inner.store.dialect() {
            crate::store::Dialect::Postgres => format!("{CURSOR}.{}", self.inner.search.instance()),
            crate::store::Dialect::Sqlite => CURSOR.to_owned(),
        }
    }
}
const BATCH: u32 = 1000;
/// Deepest result reachable by paging; beyond it a query must be refined.
pub const MAX_RESULT_WINDOW: usize = 10_000;

/// The state of the search index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchStatus {
    /// Document records.
    pub documents: usize,
    /// Metadata value records.
    pub metadata_values: usize,
    /// Events committed but not yet applied to the index (capped at 100,000).
    pub events_behind: usize,
    /// Bytes on disk.
    pub size_bytes: u64,
    /// Schema version the index was built with.
    pub schema_version: u32,
    /// Whether that is this build's version (otherwise run `search_upgrade`).
    pub schema_current: bool,
}

/// What the index stores of the documents `ids` (one statement), and the ids of those that no
/// longer exist.
fn load_documents(tx: &mut Tx<'_>, ids: &[DocumentId]) -> Result<(Vec<IndexedDocument>, Vec<i64>)> {
    let found: Vec<IndexedDocument> = tx
        .documents_for_index(ids)?
        .into_iter()
        .map(|(d, document_type_label, values)| IndexedDocument {
            id: d.id.0,
            label: d.label,
            document_type_label,
            metadata: values
                .into_iter()
                .map(|v| IndexedValue {
                    id: v.id.0,
                    metadata_type_id: v.metadata_type_id.0,
                    metadata_type_name: v.metadata_type_name,
                    value: v.value,
                    value_type: v.value_type,
                })
                .collect(),
            document_type_id: d.document_type_id.0,
        })
        .collect();
    let present: rustc_hash::FxHashSet<i64> = found.iter().map(|d| d.id).collect();
    let removed = ids
        .iter()
        .map(|d| d.0)
        .filter(|id| !present.contains(id))
        .collect();
    Ok((found, removed))
}

impl Docmeta {
    /// Applies every event committed before this call (and any committed meanwhile that the
    /// same reads reach); returns how many events were applied. It returns while writers keep
    /// adding events: what they add after its last read is the next call's.
    pub fn wait_for_index(&self) -> Result<usize> {
        self.index_catch_up(true)
    }

    /// Whether a SQLite store's index has applied the whole log, found in one read and without
    /// the catch-up's lock: what a search finds when nothing was written since the last one.
    /// Always `false` on PostgreSQL, whose followers wait for older transactions (see
    /// `follow_horizon`), and in a process that does not hold the index's writer yet.
    fn index_is_current(&self) -> Result<bool> {
        if self.inner.store.dialect() != crate::store::Dialect::Sqlite
            || !self.inner.search.holds_writer()
        {
            return Ok(false);
        }
        let key = self.cursor_key();
        let (cursor, newest) = self.read(|tx| Ok((tx.setting(&key)?, tx.newest_event_id()?)))?;
        Ok(cursor.and_then(|c| c.parse::<i64>().ok()).unwrap_or(0) >= newest)
    }

    /// Applies pending events. Without `wait`, does nothing while a rebuild runs: searches then
    /// answer from the index in use instead of waiting for the rebuild.
    fn index_catch_up(&self, wait: bool) -> Result<usize> {
        if !wait && self.search_rebuilding() {
            return Ok(0);
        }
        if !wait && self.index_is_current()? {
            return Ok(0);
        }
        let _one_at_a_time = self.inner.search_lock.lock();
        // Another process holds the writer: it applies the events (this one reads its commits).
        let Some(index) = self.inner.search.writable()? else {
            return Ok(0);
        };
        // On PostgreSQL an event committed before this call is read once every older
        // transaction has finished: wait for that (a bounded time), so that a search sees
        // every change committed before it began.
        let mut settle = self
            .read(|tx| tx.follow_horizon())?
            .map(|(_, newest)| (newest, std::time::Instant::now() + SETTLE));
        let mut applied = 0;
        loop {
            let cursor = self
                .read(|tx| tx.setting(&self.cursor_key()))?
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            // Events are read a page at a time until a batch of documents is found (or the
            // log ends), and the index is committed once for them: many edits of a few
            // documents (a busy writer) then cost one commit, not one per page of events.
            let mut documents = BTreeSet::new();
            let mut types = BTreeSet::new();
            let mut metadata_types = BTreeSet::new();
            let (mut last, mut read) = (None, 0);
            // Whether this round read up to the end of the log (rather than stopping at a full
            // batch of documents).
            let mut at_end = true;
            loop {
                let events = self.events(&EventQuery {
                    after: Some(last.unwrap_or(EventId(cursor))),
                    oldest_first: true,
                    limit: Some(BATCH),
                    ..Default::default()
                })?;
                let Some(newest) = events.last().map(|e| e.id) else {
                    break;
                };
                (last, read) = (Some(newest), read + events.len());
                for e in &events {
                    for o in std::iter::once(&e.target).chain(e.action_object.as_ref()) {
                        match o.kind.as_str() {
                            "documents.document" => {
                                documents.insert(DocumentId(o.id));
                            }
                            "documents.documenttype" if e.name == names::DOCUMENT_TYPE_EDITED => {
                                types.insert(DocumentTypeId(o.id));
                            }
                            "metadata.metadatatype" if e.name == names::METADATA_TYPE_EDITED => {
                                metadata_types.insert(MetadataTypeId(o.id));
                            }
                            _ => {}
                        }
                    }
                }
                if events.len() < BATCH as usize {
                    break;
                }
                if documents.len() + types.len() + metadata_types.len() >= BATCH as usize {
                    at_end = false;
                    break;
                }
            }
            if let Some(last) = last {
                let (docs, removed) = self.read(|tx| {
                    // A renamed type changes the records of its documents: reindex those only.
                    for t in &types {
                        documents.extend(tx.document_ids(Some(*t))?);
                    }
                    for t in &metadata_types {
                        documents.extend(tx.documents_with_metadata_type(*t)?);
                    }
                    load_documents(tx, &documents.iter().copied().collect::<Vec<_>>())
                })?;
                index.update(&docs, &removed)?;
                self.write_system(|tx| tx.set_setting(&self.cursor_key(), &last.0.to_string()))?;
                applied += read;
            }
            if !at_end {
                continue;
            }
            // The log's end as it was when this round began is applied: every event committed
            // before this call is, and events committed since are the next call's. (Going on
            // until the log is empty would never end while writers keep adding events, and
            // would commit the index once per round meanwhile.)
            let Some((newest, until)) = settle else {
                return Ok(applied);
            };
            if std::time::Instant::now() >= until {
                return Ok(applied);
            }
            if self
                .read(|tx| tx.follow_horizon())?
                .is_some_and(|(horizon, _)| horizon > newest)
            {
                // Readable now: one more round reads them.
                settle = None;
            } else {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    }

    /// Refuses work that writes the index when another process holds its writer (see
    /// [`search_work`](Self::search_work), which hands such work to that process).
    fn require_index_writer(&self) -> Result<std::sync::Arc<SearchIndex>> {
        self.inner.search.writable()?.ok_or_else(|| {
            let holder = self
                .inner
                .search
                .writer_pid()
                .map_or_else(|| "another process".to_owned(), |p| format!("process {p}"));
            crate::error::Error::Conflict {
                field: crate::error::NON_FIELD_ERRORS.to_owned(),
                message: format!(
                    "the search index is written by {holder}: hand the work to it \
                     (Docmeta::search_work queues it as a task)"
                ),
            }
        })
    }

    /// Whether this process holds the search index's writer, or can take it now (no other
    /// process holds it). Only the holder writes the index; see [`search_work`](Self::search_work).
    pub fn writes_search_index(&self) -> Result<bool> {
        Ok(self.inner.search.writable()?.is_some())
    }

    /// The stable id of this data directory's search index (`DATA/search/INSTANCE`, made once
    /// when the index directory is created; random for an index in memory). Search work handed
    /// to the index's writer names it, so that on a database several data directories share, only
    /// that directory's writer runs it.
    pub(crate) fn search_index_id(&self) -> &str {
        self.inner.search.instance()
    }

    /// The id of the other process holding the search index's writer (a running server),
    /// when one does and recorded it.
    pub fn search_writer_pid(&self) -> Option<u32> {
        self.inner.search.writer_pid()
    }

    /// Whether a rebuild of the search index is running.
    pub fn search_rebuilding(&self) -> bool {
        self.inner
            .search_rebuilding
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The newest event id (what a rebuild started now covers).
    /// The last event in the followers' commit order: a rebuild that reads the documents after
    /// this covers every event up to it, and catching up from it misses none.
    fn newest_event(&self) -> Result<i64> {
        self.read(|tx| tx.newest_event_id())
    }

    /// Rebuilds the whole index from the database (spec 4.6 `search_reindex`) into a fresh
    /// index and swaps it in when complete: searches keep answering meanwhile, and a failed
    /// rebuild leaves the old index. Calls `progress(done, total)` after each batch; returns the
    /// number of documents indexed.
    pub fn search_reindex(&self, mut progress: impl FnMut(usize, usize)) -> Result<usize> {
        // Raised before taking the lock, so searches stop waiting for catch-ups at once.
        self.inner
            .search_rebuilding
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let _done = RebuildFlag(&self.inner.search_rebuilding);
        let _one_at_a_time = self.inner.search_lock.lock();
        self.require_index_writer()?;
        // Events up to here are covered by the rebuild; later ones are applied after it.
        let cursor = self.newest_event()?;
        let ids = self.read(|tx| tx.document_ids(None))?;
        let (generation, fresh) = self.inner.search.fresh()?;
        let total = ids.len();
        let filled = ids
            .chunks(BATCH as usize)
            .enumerate()
            .try_for_each(|(i, chunk)| {
                let (lo, hi) = (
                    chunk.first().map_or(0, |d| d.0),
                    chunk.last().map_or(0, |d| d.0),
                );
                let docs = self.read(|tx| tx.indexed_documents(lo, hi))?;
                fresh.add(&docs)?;
                progress((i * BATCH as usize + chunk.len()).min(total), total);
                Ok(())
            });
        if let Err(e) = filled.and_then(|()| fresh.commit()) {
            self.inner.search.abandon(generation);
            return Err(e);
        }
        self.inner.search.swap(generation, fresh)?;
        self.write_system(|tx| tx.set_setting(&self.cursor_key(), &cursor.to_string()))?;
        Ok(total)
    }

    /// Recreates the index empty with the current schema (spec 4.6 `search_initialize`); run
    /// [`search_reindex`](Self::search_reindex) afterwards to fill it.
    pub fn search_initialize(&self) -> Result<()> {
        let _one_at_a_time = self.inner.search_lock.lock();
        self.require_index_writer()?;
        let cursor = self.newest_event()?;
        let (generation, fresh) = self.inner.search.fresh()?;
        fresh.commit()?;
        self.inner.search.swap(generation, fresh)?;
        self.write_system(|tx| tx.set_setting(&self.cursor_key(), &cursor.to_string()))
    }

    /// Rebuilds the index when it was made by an older schema (spec 4.6 `search_upgrade`, run
    /// after upgrading docmeta); returns whether it rebuilt.
    pub fn search_upgrade(&self, progress: impl FnMut(usize, usize)) -> Result<bool> {
        if self.inner.search.schema().1 {
            return Ok(false);
        }
        self.search_reindex(progress).map(|_| true)
    }

    /// Reindexes the objects of one model (spec 4.6 `search_index_objects`):
    /// `documents.document` or `metadata.documentmetadata`, all of them or only `ids`.
    pub fn search_index_objects(
        &self,
        model: &str,
        ids: Option<&[i64]>,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<usize> {
        let documents: Vec<DocumentId> = match (model, ids) {
            ("documents.document" | "document", Some(ids)) => {
                ids.iter().map(|i| DocumentId(*i)).collect()
            }
            ("documents.document" | "document", None) => self.read(|tx| tx.document_ids(None))?,
            ("metadata.documentmetadata" | "documentmetadata", ids) => {
                let mut docs = BTreeSet::new();
                self.read(|tx| {
                    tx.each_document_metadata(&mut |value, document| {
                        if ids.is_none_or(|ids| ids.contains(&value.0)) {
                            docs.insert(document);
                        }
                    })
                })?;
                docs.into_iter().collect()
            }
            (other, _) => {
                return Err(crate::error::Error::InvalidInput(format!(
                    "unknown model '{other}': use documents.document or metadata.documentmetadata"
                )));
            }
        };
        let _one_at_a_time = self.inner.search_lock.lock();
        let index = self.require_index_writer()?;
        let total = documents.len();
        for (i, chunk) in documents.chunks(BATCH as usize).enumerate() {
            let (docs, removed) = self.read(|tx| load_documents(tx, chunk))?;
            index.update(&docs, &removed)?;
            progress((i * BATCH as usize + chunk.len()).min(total), total);
        }
        Ok(total)
    }

    /// What the index holds and how current it is (spec 4.6 `search_status`).
    pub fn search_status(&self) -> Result<SearchStatus> {
        let cursor = self
            .read(|tx| tx.setting(&self.cursor_key()))?
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let behind = self
            .events(&EventQuery {
                after: Some(EventId(cursor)),
                oldest_first: true,
                limit: Some(100_000),
                ..Default::default()
            })?
            .len();
        let index = self.inner.search.index();
        let (schema_version, schema_current) = self.inner.search.schema();
        Ok(SearchStatus {
            documents: index.count(RecordKind::Document)?,
            metadata_values: index.count(RecordKind::Metadata)?,
            events_behind: behind,
            size_bytes: self.inner.search.size(),
            schema_version,
            schema_current,
        })
    }
}

impl Session {
    /// What this session may see of the index, by the rules `session/documents.rs` and
    /// `session/values.rs` apply to each object: documents with `documents.document_view`; a
    /// value when, in addition, `metadata.document_metadata_view` is held on its document
    /// (directly, through its document type, or globally) and on its metadata type (an ACL, or
    /// globally). Every answer comes from the access policy (`document_visibility`, exact since
    /// a document inherits from its type only; `check_global` and `filter_each` on every
    /// metadata type).
    fn search_scope(&self) -> Result<SearchScope> {
        let Actor::User(user) = self.actor else {
            return Ok(SearchScope::everything());
        };
        let types: Vec<i64> = self
            .read(|tx| tx.metadata_type_ids())?
            .into_iter()
            .map(|t| t.0)
            .collect();
        let snapshot = self.db.inner.access.read();
        let mut metadata_types = TypeVisibility {
            all: snapshot.check_global(user, Permission::DocumentMetadataView),
            ..Default::default()
        };
        if !metadata_types.all {
            snapshot.filter_each(
                user,
                Permission::DocumentMetadataView,
                types
                    .iter()
                    .map(|t| ObjectRef::new(ObjectKind::METADATA_TYPE, *t)),
                |o| {
                    metadata_types.ids.insert(o.id);
                },
            );
        }
        Ok(SearchScope {
            documents: snapshot.document_visibility(user, Permission::DocumentView),
            document_metadata: snapshot.document_visibility(user, Permission::DocumentMetadataView),
            metadata_types,
        })
    }

    /// What this session may know of each metadata type, by name: the types whose values it
    /// may view (in `scope`) are found; those it may view, or whose values it may view
    /// somewhere (how `require_on_metadata_type` decides a caller knows a type), are hidden; the
    /// others are not listed (unknown, as a name that is no type).
    fn known_types(&self, scope: &SearchScope) -> Result<HashMap<String, Lookup>> {
        let types = self.read(|tx| tx.metadata_types())?;
        Ok(types
            .into_iter()
            .filter_map(|t| {
                let id = t.id.0;
                let lookup = if scope.metadata_types.all || scope.metadata_types.ids.contains(&id) {
                    Lookup::Found(ResolvedType {
                        id,
                        value_type: t.value_type,
                    })
                } else if self.can(
                    Permission::MetadataTypeView,
                    ObjectRef::new(ObjectKind::METADATA_TYPE, id),
                ) || self.can(
                    Permission::DocumentMetadataView,
                    ObjectRef::new(ObjectKind::METADATA_TYPE, id),
                ) {
                    Lookup::Hidden
                } else {
                    return None;
                };
                Some((t.name, lookup))
            })
            .collect())
    }

    /// `expr` with its metadata type names resolved, and the order, for this session's scope.
    ///
    /// An order by a name whose values the caller may not read is no order of values: a search
    /// keeps its relevance order (as Django REST framework ignores an unknown `ordering`), and
    /// a list (`listing`) its order by id, the order of documents without values.
    fn prepared(
        &self,
        mut expr: Expr,
        ordering: Option<&OrderBy>,
        listing: bool,
        scope: &SearchScope,
    ) -> Result<(Expr, Option<Sort>)> {
        let mut types = None;
        let mut find = |name: &str| -> Result<Lookup> {
            if types.is_none() {
                types = Some(self.known_types(scope)?);
            }
            Ok(types
                .as_ref()
                .and_then(|t| t.get(name).copied())
                .unwrap_or(Lookup::Unknown))
        };
        let mut failed = None;
        let resolved = query::resolve(&mut expr, &mut |name| match find(name) {
            Ok(found) => found,
            Err(e) => {
                failed.get_or_insert(e);
                Lookup::Hidden
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        resolved?;
        let sort = match ordering {
            None => None,
            Some(o) => match find(&o.metadata_type)? {
                Lookup::Found(t) => Some(Sort {
                    by: Some(t),
                    descending: o.descending,
                }),
                Lookup::Hidden | Lookup::Unknown if listing => Some(Sort {
                    by: None,
                    descending: o.descending,
                }),
                Lookup::Hidden | Lookup::Unknown => None,
            },
        };
        Ok((expr, sort))
    }

    /// A page of the documents matching `query` (spec 2.5 syntax, and field-bound terms: see
    /// below) that this session may view, best first (or in the query's
    /// [`ordering`](SearchQuery::ordering)), each with its type. Metadata terms match only values
    /// this session may view (the search scope): a hidden value never changes the results,
    /// their count or their order. A document deleted since the index answered (its removal
    /// reaches the index right after) is left out of the page rather than failing it.
    ///
    /// Beyond the spec's fields, `<name>:<term>` matches only values of the metadata type
    /// `name`, compared by its [`ValueType`] (`amount:>1000`, `due:[2024-01-01 TO 2024-03-31]`,
    /// `paid:true`; a word that does not read as the type matches the values' text, as
    /// `value:` would), and `has:<name>` the documents with a value of it (`NOT has:<name>`
    /// those without). A type whose values this session may not view matches nothing; a name
    /// that is no metadata type this session may know of (`metadata_type_view` on it, or
    /// `document_metadata_view` on it) is an unknown field, `InvalidInput`, whether or not such
    /// a type exists: no answer tells a hidden type from an absent one.
    ///
    /// ```
    /// use docmeta_core::{MetadataTypeInput, PageRequest};
    ///
    /// let db = docmeta_core::Docmeta::in_memory()?;
    /// let admin = db.system();
    /// let invoice = admin.create_document_type("Invoice")?;
    /// let number = admin.create_metadata_type(MetadataTypeInput::new("number", "Number"))?;
    /// admin.associate(invoice.id, number.id, false)?;
    /// let doc = admin.create_document(invoice.id, "March", &[(number.id, "INV-2024-42")])?;
    /// admin.create_document(invoice.id, "April", &[(number.id, "INV-2024-43")])?;
    ///
    /// // Apply the log to the index (a search also catches up by itself, unless a rebuild runs).
    /// db.wait_for_index()?;
    /// let first = PageRequest::new(1, 20);
    /// let found = admin.search_documents("metadata_type__name:number metadata_value:42", first)?;
    /// assert_eq!(found.count, 1);
    /// assert_eq!(found.items[0].document.id, doc.document.id);
    /// assert_eq!(admin.search_documents("value:2024", first)?.count, 2);
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
    ///
    /// Typed fields and an order:
    ///
    /// ```
    /// use docmeta_core::{MetadataTypeInput, OrderBy, PageRequest, SearchQuery, ValueType};
    ///
    /// let db = docmeta_core::Docmeta::in_memory()?;
    /// let admin = db.system();
    /// let invoice = admin.create_document_type("Invoice")?;
    /// let amount = MetadataTypeInput::new("amount", "Amount").value_type(ValueType::Decimal);
    /// let amount = admin.create_metadata_type(amount)?;
    /// admin.associate(invoice.id, amount.id, false)?;
    /// for (label, value) in [("small", "95.50"), ("large", "1200"), ("none", "")] {
    ///     admin.create_document(invoice.id, label, &[(amount.id, value)])?;
    /// }
    /// let first = PageRequest::new(1, 20);
    /// // 95.50 < 1200 as numbers (as text, "1200" < "95.50").
    /// let found = admin.search_documents("amount:>100", first)?;
    /// assert_eq!(found.items[0].document.label, "large");
    /// assert_eq!(admin.search_documents("NOT has:amount", first)?.count, 1);
    /// assert!(admin.search_documents("amont:>100", first).is_err()); // an unknown field
    /// // Largest first; a document without a value last.
    /// let sorted = SearchQuery::new("document_type__label:invoice")
    ///     .ordered_by(OrderBy::descending("amount"));
    /// let labels: Vec<String> = admin.search_documents(sorted, first)?
    ///     .items.into_iter().map(|d| d.document.label).collect();
    /// assert_eq!(labels, ["large", "small", "none"]);
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
    pub fn search_documents(
        &self,
        query: impl Into<SearchQuery>,
        page: PageRequest,
    ) -> Result<Page<DocumentView>> {
        let query = query.into();
        let expr = parse(&query.text)?;
        let (count, ids) =
            self.document_hits(expr, query.ordering.as_ref(), false, page.number, page.size)?;
        // The page's documents and their types in one read.
        let items = self.document_views(&ids)?;
        Ok(Page { count, items })
    }

    /// The visible documents matching `query` in all, and the ids of page `page`, best first
    /// (what [`search_documents`](Self::search_documents) reads the documents of).
    pub(crate) fn document_hits(
        &self,
        expr: Expr,
        ordering: Option<&OrderBy>,
        listing: bool,
        page: usize,
        page_size: usize,
    ) -> Result<(usize, Vec<DocumentId>)> {
        let offset = page.saturating_sub(1).saturating_mul(page_size);
        if offset.saturating_add(page_size) > MAX_RESULT_WINDOW {
            return Err(crate::error::Error::InvalidInput(format!(
                "query: results beyond the first {MAX_RESULT_WINDOW} cannot be paged to; refine the query"
            )));
        }
        self.db.index_catch_up(false)?;
        let scope = self.search_scope()?;
        let (expr, sort) = self.prepared(expr, ordering, listing, &scope)?;
        let (count, hits) = self.db.inner.search.index().search_visible(
            RecordKind::Document,
            &expr,
            std::sync::Arc::new(scope),
            sort,
            offset,
            page_size,
        )?;
        Ok((
            count,
            hits.iter().map(|h| DocumentId(h.document_id)).collect(),
        ))
    }

    /// A page of the metadata values matching `query` (DocumentMetadataSearchResult) that this
    /// session may view (their document with `documents.document_view`, and
    /// `metadata.document_metadata_view` on the document and on the metadata type), best first,
    /// each with its document and type. A value deleted since the index answered is left out
    /// of the page.
    pub fn search_metadata(
        &self,
        query: &str,
        page: PageRequest,
    ) -> Result<Page<MetadataValueView>> {
        let expr = parse(query)?;
        self.db.index_catch_up(false)?;
        let scope = self.search_scope()?;
        let (expr, _) = self.prepared(expr, None, false, &scope)?;
        let (count, hits) = self.db.inner.search.index().search_visible(
            RecordKind::Metadata,
            &expr,
            std::sync::Arc::new(scope),
            None,
            page.number.saturating_sub(1).saturating_mul(page.size),
            page.size,
        )?;
        // Each document's visible values read once, as `metadata_value` would show them.
        let mut details: HashMap<DocumentId, (Document, Vec<(DocumentMetadata, MetadataType)>)> =
            HashMap::new();
        let mut items = Vec::with_capacity(hits.len());
        for (document, id) in hits
            .iter()
            .filter_map(|h| Some((DocumentId(h.document_id), h.metadata_id?)))
        {
            let details = match details.entry(document) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => match self.document_metadata_details(document) {
                    Ok(d) => e.insert(d),
                    // Deleted, or hidden, since the index answered: left out of the page.
                    Err(
                        crate::error::Error::NotFound(_) | crate::error::Error::PermissionDenied(_),
                    ) => {
                        continue;
                    }
                    Err(e) => return Err(e),
                },
            };
            let (doc, values) = &*details;
            if let Some((value, metadata_type)) = values.iter().find(|(v, _)| v.id.0 == id) {
                items.push(MetadataValueView {
                    value: value.clone(),
                    document: doc.clone(),
                    metadata_type: Some(metadata_type.clone()),
                });
            }
        }
        Ok(Page { count, items })
    }
}

/// The kernel's hook behind `Session::documents` with an order (see `DocumentQuery::ordering`):
/// every document `actor` may view (of type `of_type`), in `ordering`'s order, from the index.
pub(crate) fn sorted_documents(
    db: &Docmeta,
    actor: Actor,
    of_type: Option<DocumentTypeId>,
    ordering: &OrderBy,
    page: PageRequest,
) -> Result<(usize, Vec<DocumentId>)> {
    let session = match actor {
        Actor::User(user) => db.session(user),
        Actor::System => db.system(),
    };
    let expr = match of_type {
        Some(t) => Expr::DocumentType(t.0),
        None => Expr::All,
    };
    session.document_hits(expr, Some(ordering), true, page.number, page.size)
}

/// Clears the "rebuilding" flag when a rebuild ends, however it ends.
struct RebuildFlag<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for RebuildFlag<'_> {
    fn drop(&mut self) {
        self.0.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use crate::Docmeta;
    use crate::error::Result;

    /// Searches `text` as the system on another thread; the answer's document count arrives
    /// on the returned channel.
    fn search_elsewhere(db: &Docmeta, text: &'static str) -> mpsc::Receiver<Result<usize>> {
        let (done, answer) = mpsc::channel();
        let db = db.clone();
        std::thread::spawn(move || {
            let _ = done.send(
                db.system()
                    .search_documents(text, crate::model::PageRequest::new(1, 10))
                    .map(|page| page.count),
            );
        });
        answer
    }

    /// An instance with one memo, indexed by a first search; and the memo's type.
    fn one_memo_searched() -> Result<(Docmeta, crate::model::DocumentTypeId)> {
        let db = Docmeta::builder().worker(false).open()?;
        let s = db.system();
        let t = s.create_document_type("Memo")?;
        s.create_document(t.id, "memo one", &[])?;
        assert_eq!(
            s.search_documents("memo", crate::model::PageRequest::new(1, 10))?
                .count,
            1
        );
        Ok((db, t.id))
    }

    #[test]
    fn a_search_with_the_log_applied_does_not_wait_for_a_running_catch_up() -> Result<()> {
        let (db, _) = one_memo_searched()?;
        // A catch-up holds the lock (as one running for another search would).
        let catching_up = db.inner.search_lock.lock();
        let answer = search_elsewhere(&db, "memo");
        let count = answer
            .recv_timeout(Duration::from_secs(30))
            .expect("answered while the catch-up runs")?;
        drop(catching_up);
        assert_eq!(count, 1);
        Ok(())
    }

    #[test]
    fn a_search_after_a_write_applies_it_before_answering() -> Result<()> {
        let (db, memo) = one_memo_searched()?;
        let catching_up = db.inner.search_lock.lock();
        db.system().create_document(memo, "memo two", &[])?;
        let answer = search_elsewhere(&db, "memo");
        assert!(
            answer.recv_timeout(Duration::from_millis(200)).is_err(),
            "the search waits to apply the new document"
        );
        drop(catching_up);
        let count = answer
            .recv_timeout(Duration::from_secs(30))
            .expect("answered once the catch-up is free")?;
        assert_eq!(count, 2);
        Ok(())
    }
}
