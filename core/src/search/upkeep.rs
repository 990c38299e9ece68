//! Keeping the index up with the event log: the catch-up that applies the events committed
//! since the index's cursor ([`Docmeta::wait_for_index`], and before each search), and the
//! index operations of spec 4.6 (rebuild, initialize, upgrade, reindex some objects, status),
//! run by the process holding the index writer.
//!
//! Part of `search` (layer 7 of `scripts/check-structure`): it may import only what `search`
//! may (see `search`'s module documentation).

use std::collections::BTreeSet;

use super::index::SearchIndex;
use crate::error::Result;
use crate::events::{EventQuery, names};
use crate::kernel::Docmeta;
use crate::model::*;
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
    pub(super) fn index_catch_up(&self, wait: bool) -> Result<usize> {
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
