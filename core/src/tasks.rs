//! Durable background tasks (spec 2.4 rules 1-2).
//!
//! A task is a row written in the same transaction as the change that causes it, so a crash
//! between the change and the work loses nothing. Tasks are idempotent: they work in batches,
//! each batch its own transaction, and re-running a task after an interruption finishes the job.
//! Failures are retried with exponential back-off and, past `task_max_attempts`, kept as
//! `failed` with their error.

use std::sync::Weak;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use chrono::Utc;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::docmeta::{Docmeta, Inner};
use crate::error::{Error, Result};
use crate::model::{DocumentTypeId, MetadataTypeId};

/// Rule 2.4.1: add a required metadata type to every document of a type.
pub const ADD_REQUIRED_METADATA_TYPE: &str = "task_add_required_metadata_type";
/// Rule 2.4.2: remove a metadata type's values from the documents of a type.
pub const REMOVE_METADATA_TYPE: &str = "task_remove_metadata_type";

/// Rebuilds the search index (queued by a restore, which does not wait for it: spec 8.1).
pub const SEARCH_REINDEX: &str = "task_search_reindex";

/// How often the worker brings the search index up to date.
const INDEX_EVERY: Duration = Duration::from_secs(2);

/// Documents handled per transaction.
pub(crate) const BATCH: u32 = 500;

/// Arguments of both lifecycle tasks.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct TypePair {
    pub document_type_id: i64,
    pub metadata_type_id: i64,
    /// Who caused the task (a user id, or 0 for docmeta itself): the defaults it renders see
    /// what that user may view (`session::TemplateView`). Absent in tasks recorded before it
    /// was: those see no metadata value.
    #[serde(default)]
    pub author_id: Option<i64>,
}

impl TypePair {
    pub(crate) fn new(dt: DocumentTypeId, mt: MetadataTypeId, actor: crate::model::Actor) -> Self {
        TypePair {
            document_type_id: dt.0,
            metadata_type_id: mt.0,
            author_id: Some(crate::session::TemplateView::author_id(actor)),
        }
    }

    pub(crate) fn json(self) -> serde_json::Value {
        serde_json::json!({
            "document_type_id": self.document_type_id,
            "metadata_type_id": self.metadata_type_id,
            "author_id": self.author_id,
        })
    }
}

fn execute(db: &Docmeta, name: &str, payload: &str) -> Result<()> {
    if name == SEARCH_REINDEX {
        return db.search_reindex(|_, _| {}).map(drop);
    }
    if name == crate::workflows::WORKFLOW_TRIGGER {
        return crate::workflows::run_trigger(db, payload);
    }
    let pair: TypePair = serde_json::from_str(payload)
        .map_err(|e| Error::InvalidInput(format!("task {name}: bad arguments {payload}: {e}")))?;
    let (dt, mt) = (
        DocumentTypeId(pair.document_type_id),
        MetadataTypeId(pair.metadata_type_id),
    );
    // docmeta acts for the user who caused the task.
    let system = crate::session::Session::system_for(
        db.clone(),
        crate::session::TemplateView::of_author(pair.author_id),
    );
    match name {
        ADD_REQUIRED_METADATA_TYPE => {
            while system.add_required_metadata_batch(dt, mt, BATCH)? > 0 {}
        }
        REMOVE_METADATA_TYPE => while system.remove_metadata_type_batch(dt, mt, BATCH)? > 0 {},
        other => return Err(Error::InvalidInput(format!("unknown task {other}"))),
    }
    Ok(())
}

/// Runs the task `id` now, in this thread, unless another runner has claimed it.
pub(crate) fn run_now(db: &Docmeta, id: crate::model::TaskId) -> Result<()> {
    let claimed = db.write_system(|tx| {
        let n = tx.execute(
            "UPDATE tasks SET state = 'running', attempts = attempts + 1, updated = ?1 WHERE id = ?2 AND state = 'pending'",
            &[crate::store::records::to_micros(Utc::now()).into(), id.0.into()],
        )?;
        if n == 0 {
            return Ok(None);
        }
        tx.task(id)
    })?;
    match claimed {
        Some(task) => finish(db, task),
        None => Ok(()),
    }
}

/// Runs every runnable task; returns how many ran (successfully or not).
pub(crate) fn run_pending(db: &Docmeta) -> Result<usize> {
    let mut ran = 0;
    loop {
        let Some(task) = db.write_system(|tx| tx.claim_task(Utc::now()))? else {
            return Ok(ran);
        };
        ran += 1;
        finish(db, task)?;
    }
}

/// Executes a claimed task and records the outcome (done, retried later, or failed).
fn finish(db: &Docmeta, task: crate::store::records::TaskRow) -> Result<()> {
    {
        let outcome = execute(db, &task.name, &task.payload);
        db.write_system(|tx| match &outcome {
            Ok(()) => tx.set_task_state(task.id, "done", "", Utc::now()),
            Err(e) if task.attempts < i64::from(db.config().task_max_attempts) => {
                let backoff = chrono::Duration::seconds(1i64 << task.attempts.clamp(0, 10));
                tx.set_task_state(task.id, "pending", &e.to_string(), Utc::now() + backoff)
            }
            Err(e) => tx.set_task_state(task.id, "failed", &e.to_string(), Utc::now()),
        })
    }
}

/// The background thread that runs tasks as they are enqueued.
pub(crate) struct Worker {
    stop: std::sync::Arc<AtomicBool>,
    inner: Weak<Inner>,
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl Worker {
    pub(crate) fn start(db: &Docmeta) -> Worker {
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let weak = std::sync::Arc::downgrade(&db.inner);
        let (thread_stop, thread_weak) = (stop.clone(), weak.clone());
        let handle = std::thread::Builder::new()
            .name("docmeta-tasks".into())
            .spawn(move || {
                let mut last_index: Option<std::time::Instant> = None;
                let mut last_access = std::time::Instant::now();
                while !thread_stop.load(Ordering::SeqCst) {
                    let Some(inner) = thread_weak.upgrade() else {
                        return;
                    };
                    let db = Docmeta::from_inner(inner);
                    // Errors are recorded on the task rows; a store failure is retried next round.
                    let _ = run_pending(&db);
                    // The search index follows the event log (searches also catch up before
                    // answering). Each catch-up commits the index with an fsync, so under write
                    // load it runs at most every 2 s; a failure is retried next round.
                    if last_index.is_none_or(|t| t.elapsed() >= INDEX_EVERY) {
                        let _ = db.wait_for_index();
                        last_index = Some(std::time::Instant::now());
                    }
                    // Other processes on a shared database: their grants within a bounded delay.
                    let refresh = Duration::from_millis(db.config().access_refresh_ms.max(10));
                    if last_access.elapsed() >= refresh {
                        let _ = db.follow_access();
                        last_access = std::time::Instant::now();
                    }
                    let (lock, cv) = &db.inner.task_signal;
                    let mut woken = lock.lock();
                    if !*woken && !thread_stop.load(Ordering::SeqCst) {
                        cv.wait_for(&mut woken, Duration::from_millis(500).min(refresh));
                    }
                    *woken = false;
                }
            })
            .ok();
        Worker {
            stop,
            inner: weak,
            handle: Mutex::new(handle),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(inner) = self.inner.upgrade() {
            let (lock, cv) = &inner.task_signal;
            *lock.lock() = true;
            cv.notify_all();
        }
        if let Some(h) = self.handle.lock().take()
            && h.thread().id() != std::thread::current().id()
        {
            let _ = h.join();
        }
    }
}
