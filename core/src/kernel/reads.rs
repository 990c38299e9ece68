//! The read cache: documents with their metadata values and types, as the store last gave them,
//! so that a document's metadata is answered from memory until something is written.
//!
//! What is cached is the same for every caller; who may see what is checked on each read,
//! against the access snapshot, by the session. The cache is coherent with this process's writes
//! by a generation: every unit of work moves it once it has committed, before it is
//! acknowledged, and an entry is only served under the generation it was read in. An entry is
//! tagged with the generation taken *before* its read transaction began, so a read that raced a
//! commit is tagged with the older generation and never served after that commit's move.
//! Another process's writes (a command beside a server on the SQLite file, or another server
//! on a PostgreSQL database) move it too: every call of a session first catches up (see
//! `follow`), which empties the cache whenever anything was committed since the last look. On
//! PostgreSQL any transaction of the cluster counts, so under load it holds little: off by
//! default there (see `Config::read_cache_documents`).
//!
//! A write anywhere empties the cache (by moving the generation; one atomic increment, no
//! lock): under write load the reads go to the store as they would without it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;
use rustc_hash::FxHashMap;

use super::Docmeta;
use crate::error::Result;
use crate::model::{Document, DocumentId, DocumentMetadata, MetadataType};

/// A document with its metadata values, each with its type, in value order.
#[derive(Debug)]
pub(crate) struct CachedDocument {
    /// The generation this copy was read in.
    generation: u64,
    /// Unique to this copy (two copies of one document read in one generation differ).
    pub(crate) copy: u64,
    pub(crate) document: Document,
    pub(crate) values: Vec<(DocumentMetadata, MetadataType)>,
}

/// See the module documentation.
pub(crate) struct ReadCache {
    /// The most documents held; 0 turns the cache off.
    capacity: usize,
    generation: AtomicU64,
    copies: AtomicU64,
    entries: RwLock<FxHashMap<DocumentId, Arc<CachedDocument>>>,
}

impl ReadCache {
    pub(crate) fn new(capacity: usize) -> ReadCache {
        ReadCache {
            capacity,
            generation: AtomicU64::new(0),
            copies: AtomicU64::new(0),
            entries: RwLock::new(FxHashMap::default()),
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.capacity > 0
    }

    /// The generation to tag a read with: taken before its transaction begins.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Something was committed (here, or followed from another process): nothing cached
    /// before is served again.
    pub(crate) fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// The cached copy of `id`, when it is still current.
    pub(crate) fn get(&self, id: DocumentId) -> Option<Arc<CachedDocument>> {
        if !self.enabled() {
            return None;
        }
        let entry = self.entries.read().get(&id).cloned()?;
        (entry.generation == self.generation()).then_some(entry)
    }

    /// Keeps what a read that began under `generation` found, unless something was committed
    /// since (then it may be older than the store already is).
    pub(crate) fn insert(
        &self,
        generation: u64,
        document: Document,
        values: Vec<(DocumentMetadata, MetadataType)>,
    ) -> Arc<CachedDocument> {
        let entry = Arc::new(CachedDocument {
            generation,
            copy: self.copies.fetch_add(1, Ordering::Relaxed),
            document,
            values,
        });
        if !self.enabled() || generation != self.generation() {
            return entry;
        }
        let mut entries = self.entries.write();
        if entries.len() >= self.capacity {
            // Stale copies go first; when the current ones alone fill it, all go (the hot
            // documents come back with their next read).
            entries.retain(|_, e| e.generation == generation);
            if entries.len() >= self.capacity {
                entries.clear();
            }
        }
        entries.insert(entry.document.id, entry.clone());
        entry
    }

    /// How many documents are held (current or not), for tests.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.read().len()
    }
}

impl Docmeta {
    /// A document with its metadata values and their types (for any caller: the session
    /// decides what its caller is shown), from the read cache or else read and kept there;
    /// `None` when there is no such document.
    pub(crate) fn document_with_metadata(
        &self,
        id: DocumentId,
    ) -> Result<Option<Arc<CachedDocument>>> {
        if let Some(entry) = self.inner.reads.get(id) {
            return Ok(Some(entry));
        }
        // Taken before the read begins (see `reads`).
        let generation = self.inner.reads.generation();
        let read = self.read(|tx| {
            let Some(document) = tx.document(id)? else {
                return Ok(None);
            };
            Ok(Some((document, tx.metadata_with_types_of_document(id)?)))
        })?;
        Ok(read.map(|(document, values)| self.inner.reads.insert(generation, document, values)))
    }

    /// [`document_with_metadata`](Self::document_with_metadata) when it is in the read cache;
    /// never reads the store (so it may run on an async runtime's workers).
    pub(crate) fn cached_document_with_metadata(
        &self,
        id: DocumentId,
    ) -> Option<Arc<CachedDocument>> {
        self.inner.reads.get(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DocumentTypeId;

    fn document(id: i64) -> Document {
        Document {
            id: DocumentId(id),
            label: format!("document {id}"),
            document_type_id: DocumentTypeId(1),
            created: chrono::Utc::now(),
        }
    }

    #[test]
    fn an_entry_read_before_a_commit_is_not_served_after_it() {
        let cache = ReadCache::new(10);
        let before = cache.generation();
        cache.invalidate();
        cache.insert(before, document(1), Vec::new());
        assert!(cache.get(DocumentId(1)).is_none());
    }

    #[test]
    fn an_entry_is_served_until_the_next_commit() {
        let cache = ReadCache::new(10);
        cache.insert(cache.generation(), document(1), Vec::new());
        assert!(cache.get(DocumentId(1)).is_some());
        cache.invalidate();
        assert!(cache.get(DocumentId(1)).is_none());
    }

    #[test]
    fn a_full_cache_drops_its_entries_rather_than_grow() {
        let cache = ReadCache::new(3);
        for id in 1..=10 {
            cache.insert(cache.generation(), document(id), Vec::new());
            assert!(cache.len() <= 3);
        }
        assert!(cache.get(DocumentId(10)).is_some());
    }

    #[test]
    fn a_cache_of_capacity_zero_holds_nothing() {
        let cache = ReadCache::new(0);
        cache.insert(cache.generation(), document(1), Vec::new());
        assert!(cache.get(DocumentId(1)).is_none());
        assert_eq!(cache.len(), 0);
    }
}
