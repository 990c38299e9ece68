//! Search operations (spec 4.6) run by whichever process holds the index writer: here when this
//! process holds it or can take it, otherwise handed to the holder (a running server) as a
//! durable task that its worker runs, with its progress recorded for whoever waits.
//!
//! Part of `search` (layer 7 of `scripts/check-structure`): it may import only what `search`
//! may (see `search`'s module documentation).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kernel::Docmeta;
use crate::model::{SEARCH_WORK, TaskId};

/// The setting where the running search work records its progress (`done total`).
const PROGRESS: &str = "search.progress";

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

/// Where a [`SearchWork`] ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchWorkRun {
    /// In this process; the number it returned (documents indexed; for `Upgrade`, 1 when it
    /// rebuilt and 0 when the index was current).
    Done(usize),
    /// Handed to the process holding the index writer, as this task: follow it with
    /// [`Docmeta::search_work_state`].
    HandedOff(TaskId),
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
    /// Finished.
    Done,
    /// Given up after its attempts; the last error.
    Failed(String),
}

impl SearchWork {
    fn run(&self, db: &Docmeta, progress: &mut dyn FnMut(usize, usize)) -> Result<usize> {
        match self {
            SearchWork::Reindex => db.search_reindex(progress),
            SearchWork::Initialize => db.search_initialize().map(|()| 0),
            SearchWork::Upgrade => db.search_upgrade(progress).map(usize::from),
            SearchWork::IndexObjects { model, ids } => {
                db.search_index_objects(model, ids.as_deref(), progress)
            }
        }
    }
}

impl Docmeta {
    /// Runs `work` here when this process holds the index writer or can take it (no other
    /// process holds it), calling `progress(done, total)`; otherwise queues it as a durable
    /// task for the process that holds the writer (a running `docmeta serve`), whose worker
    /// runs it, and returns at once.
    pub fn search_work(
        &self,
        work: &SearchWork,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<SearchWorkRun> {
        if self.writes_search_index()? {
            return work.run(self, &mut progress).map(SearchWorkRun::Done);
        }
        let payload = serde_json::to_string(work)
            .map_err(|e| Error::InvalidInput(format!("search work: {e}")))?;
        // Without an event: the work changes no document, and a task row alone wakes no one
        // else; the holder's worker polls for tasks.
        self.write_system(|tx| tx.enqueue_task(SEARCH_WORK, &payload))
            .map(SearchWorkRun::HandedOff)
    }

    /// Where the handed-off search work `task` stands.
    pub fn search_work_state(&self, task: TaskId) -> Result<SearchWorkState> {
        let (row, progress) = self.read(|tx| Ok((tx.task(task)?, tx.setting(PROGRESS)?)))?;
        // Finished tasks are deleted by the worker shortly after: gone means done.
        let Some(row) = row else {
            return Ok(SearchWorkState::Done);
        };
        Ok(match row.state.as_str() {
            "done" => SearchWorkState::Done,
            "failed" => SearchWorkState::Failed(row.error),
            "running" => {
                let (done, total) = progress
                    .as_deref()
                    .and_then(|p| p.split_once(' '))
                    .and_then(|(d, t)| Some((d.parse().ok()?, t.parse().ok()?)))
                    .unwrap_or((0, 0));
                SearchWorkState::Running { done, total }
            }
            _ => SearchWorkState::Pending {
                attempts: row.attempts,
                error: row.error,
            },
        })
    }
}

impl Docmeta {
    /// Runs the handed-off search work `task` here if the process it was handed to has gone
    /// (stopped or crashed: this process could take the index writer), calling
    /// `progress(done, total)`. Only the writer's holder runs search tasks, so one left
    /// `running` was its, interrupted. `None` while another process holds the writer, or when
    /// the task is no longer waiting; `Some(n)` when it ran here.
    pub fn adopt_search_work(
        &self,
        task: TaskId,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<Option<usize>> {
        if !self.writes_search_index()? {
            return Ok(None);
        }
        let now = chrono::Utc::now();
        let claimed = self.write_system(|tx| {
            match tx.task(task)? {
                Some(row) if row.name == SEARCH_WORK && row.state == "running" => {
                    tx.set_task_state(task, "pending", &row.error, now)?;
                }
                Some(row) if row.name == SEARCH_WORK && row.state == "pending" => {}
                _ => return Ok(None),
            }
            tx.claim_task_by_id(task, now)
        })?;
        let Some(row) = claimed else {
            return Ok(None);
        };
        let work: SearchWork = serde_json::from_str(&row.payload).map_err(|e| {
            Error::InvalidInput(format!("search work: bad arguments {}: {e}", row.payload))
        })?;
        let outcome = work.run(self, &mut progress);
        self.write_system(|tx| match &outcome {
            Ok(_) => tx.set_task_state(task, "done", "", chrono::Utc::now()),
            // Left for the next holder of the writer (a server's worker retries it).
            Err(e) => tx.set_task_state(task, "pending", &e.to_string(), chrono::Utc::now()),
        })?;
        outcome.map(Some)
    }
}

/// The handler of [`SEARCH_WORK`]: runs the work, recording its progress at most every second.
pub(crate) fn run_task(db: &Docmeta, payload: &str) -> Result<()> {
    let work: SearchWork = serde_json::from_str(payload)
        .map_err(|e| Error::InvalidInput(format!("search work: bad arguments {payload}: {e}")))?;
    let _ = db.write_system(|tx| tx.set_setting(PROGRESS, "0 0"));
    let mut last = std::time::Instant::now();
    let mut record = |done: usize, total: usize| {
        if done == total || last.elapsed() >= std::time::Duration::from_secs(1) {
            last = std::time::Instant::now();
            // Progress is only shown: a failed write of it does not stop the work.
            let _ = db.write_system(|tx| tx.set_setting(PROGRESS, &format!("{done} {total}")));
        }
    };
    work.run(db, &mut record).map(drop)
}
