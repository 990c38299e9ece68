//! What searches answer and the records of the index's upkeep: the kinds of records a search
//! returns and its hits, the state of the index, and the index work handed to the process that
//! writes the index. The index and its queries are `search/`.
//!
//! Part of `model` (layer 1 of `scripts/check-structure`): it may import only what `model`
//! may (see `model`'s module documentation).

use serde::{Deserialize, Serialize};

use super::TaskId;

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

/// An operation on the search index (spec 4.6) that writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "operation", rename_all = "snake_case")]
pub enum SearchWork {
    /// `search_reindex`.
    Reindex,
    /// `search_initialize`.
    Initialize,
    /// `search_upgrade`.
    Upgrade,
    /// `search_index_objects`.
    IndexObjects {
        /// `documents.document` or `metadata.documentmetadata`.
        model: String,
        /// Only these ids.
        ids: Option<Vec<i64>>,
    },
}

/// Search work handed to the process holding the index writer: its task, and what tells its
/// progress from another's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchTicket {
    /// The durable task.
    pub task: TaskId,
    /// What tells its progress from another work's.
    pub(crate) nonce: String,
}

/// Where a [`SearchWork`] ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchWorkRun {
    /// In this process: the documents it indexed (0 for `Initialize`, and for `Upgrade` when
    /// the index was current).
    Done(usize),
    /// Handed to the process holding the index writer: follow it with
    /// [`Docmeta::search_work_state`](crate::Docmeta::search_work_state).
    HandedOff(SearchTicket),
}

/// Where a handed-off [`SearchWork`] stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchWorkState {
    /// Waiting for the writer's worker (`attempts` so far; `error` of the last failed one).
    Pending {
        /// Attempts so far.
        attempts: i64,
        /// The last attempt's error, if any.
        error: String,
    },
    /// Running: `done` of `total` documents.
    Running {
        /// Documents done.
        done: usize,
        /// Documents in all.
        total: usize,
    },
    /// Finished; how many documents it indexed, when its progress was still recorded.
    Done(Option<usize>),
    /// Given up after its attempts; the last error.
    Failed(String),
}
