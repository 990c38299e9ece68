//! Durable background tasks (spec 2.4 rules 1-2).
//!
//! A task is a row written in the same transaction as the change that causes it, so a crash
//! between the change and the work loses nothing. Tasks are idempotent: they work in batches,
//! each batch its own transaction, and re-running a task after an interruption finishes the job.
//! Failures are retried with exponential back-off and, past `task_max_attempts`, kept as
//! `failed` with their error.
//!
//! Layer 7 (with `workflows`, `search`, `backup`, `installation`): imports sessions, the kernel and
//! the layers below; it finds the handler of each task by name in the kernel's hooks, filled by
//! the facade, so it never imports the modules whose tasks it runs.

use std::sync::Weak;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use chrono::Utc;
use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::kernel::{Docmeta, Inner, TemplateView};
use crate::model::{DocumentTypeId, MetadataTypeId, TypePair};
use crate::session::Session;

/// How often the worker brings the search index up to date.
const INDEX_EVERY: Duration = Duration::from_secs(2);

/// Documents handled per transaction.
pub(crate) const BATCH: u32 = 500;

/// Runs a task through the handler registered for its name (see `Hooks::tasks`).
fn execute(db: &Docmeta, name: &str, payload: &str) -> Result<()> {
    match db.inner.hooks.tasks.get(name) {
        Some(handler) => handler(db, payload),
        None => Err(Error::InvalidInput(format!("unknown task {name}"))),
    }
}

/// The arguments of a lifecycle task, and a session acting for the user who caused it (the
/// defaults it renders see what that user may view).
fn lifecycle(db: &Docmeta, payload: &str) -> Result<(DocumentTypeId, MetadataTypeId, Session)> {
    let pair: TypePair = serde_json::from_str(payload).map_err(|e| {
        Error::InvalidInput(format!("lifecycle task: bad arguments {payload}: {e}"))
    })?;
    let system = Session::system_for(db.clone(), TemplateView::of_author(pair.author_id));
    Ok((
        DocumentTypeId(pair.document_type_id),
        MetadataTypeId(pair.metadata_type_id),
        system,
    ))
}

/// Rule 2.4.1, in batches (each its own transaction): adds a required metadata type to the
/// documents of a type that lack it.
pub(crate) fn add_required_metadata_type(db: &Docmeta, payload: &str) -> Result<()> {
    let (dt, mt, system) = lifecycle(db, payload)?;
    while system.add_required_metadata_batch(dt, mt, BATCH)? > 0 {}
    Ok(())
}

/// Rule 2.4.2, in batches: removes a metadata type's values from the documents of a type.
pub(crate) fn remove_metadata_type(db: &Docmeta, payload: &str) -> Result<()> {
    let (dt, mt, system) = lifecycle(db, payload)?;
    while system.remove_metadata_type_batch(dt, mt, BATCH)? > 0 {}
    Ok(())
}

/// Runs every runnable task; returns how many ran (successfully or not).
pub(crate) fn run_pending(db: &Docmeta) -> Result<usize> {
    let mut ran = 0;
    // Search tasks need the index writer: without it they stay for the process holding it.
    // With it, a search task naming another index (another data directory on a shared
    // PostgreSQL database) stays for that index's writer.
    let (skip, target): (&[&str], _) = if db.writes_search_index()? {
        (&[], Some(db.search_index_id()))
    } else {
        (&crate::model::SEARCH_TASKS, None)
    };
    loop {
        let Some(task) = db.write_system(|tx| tx.claim_task_skipping(Utc::now(), skip, target))?
        else {
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
                        // Finished tasks are only history (never read again): they go, so
                        // that the table holds what is left to do.
                        let _ = db.write_system(|tx| tx.delete_done_tasks());
                        // The event log's hash chain: PostgreSQL's new events sealed, and a
                        // signed checkpoint when one is due.
                        let _ = db.audit_round();
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

impl Docmeta {
    /// Runs every runnable durable task now, in this thread; returns how many ran.
    pub fn run_pending_tasks(&self) -> Result<usize> {
        crate::tasks::run_pending(self)
    }

    /// Tasks not yet done (pending, running or failed).
    pub fn open_tasks(&self) -> Result<Vec<crate::model::Task>> {
        Session::new(self.clone(), crate::model::Actor::System).tasks()
    }

    /// Waits until no task is runnable (tests, tools). Gives up after `timeout`.
    pub fn wait_for_tasks(&self, timeout: std::time::Duration) -> Result<bool> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let pending = self
                .read(|tx| tx.open_tasks(1000))?
                .iter()
                .any(|t| t.state == "pending" || t.state == "running");
            if !pending {
                return Ok(true);
            }
            if std::time::Instant::now() > deadline {
                return Ok(false);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}
