//! Search operations (spec 4.6) run by whichever process holds the index writer: here when this
//! process holds it or can take it, otherwise handed to the holder (a running server) as a
//! durable task that its worker runs, with its progress recorded for whoever waits.
//!
//! Part of `search` (layer 7 of `scripts/check-structure`): it may import only what `search`
//! may (see `search`'s module documentation).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kernel::Docmeta;
use crate::model::{SEARCH_WORK, SearchTicket, SearchWork, SearchWorkRun, SearchWorkState};

/// The setting where the running search work records its progress (`nonce done total`, the
/// nonce of its [`SearchTicket`]), one per index (`search.progress.<index id>`): on a database
/// several data directories share, their indexes' work runs at the same time.
const PROGRESS: &str = "search.progress";

/// The progress setting of `db`'s index: the one its handed-off work is run on (the work names
/// that index), and whose waiting command reads it.
fn progress_key(db: &Docmeta) -> String {
    format!("{PROGRESS}.{}", db.search_index_id())
}

/// A task's arguments: the work and the nonce its progress is recorded under.
#[derive(Serialize, Deserialize)]
struct Envelope {
    nonce: String,
    work: SearchWork,
}

impl Envelope {
    fn parse(payload: &str) -> Result<Envelope> {
        serde_json::from_str(payload)
            .map_err(|e| Error::InvalidInput(format!("search work: bad arguments {payload}: {e}")))
    }
}

impl SearchWork {
    fn run(&self, db: &Docmeta, progress: &mut dyn FnMut(usize, usize)) -> Result<usize> {
        match self {
            SearchWork::Reindex => db.search_reindex(progress),
            SearchWork::Initialize => db.search_initialize().map(|()| 0),
            SearchWork::Upgrade => {
                let mut indexed = 0;
                db.search_upgrade(|done, total| {
                    indexed = total;
                    progress(done, total);
                })?;
                Ok(indexed)
            }
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
        let mut nonce = [0u8; 8];
        getrandom::fill(&mut nonce)
            .map_err(|e| Error::storage("naming search work", e.to_string()))?;
        let nonce = crate::config::encode_hex(&nonce);
        let payload = serde_json::to_string(&Envelope {
            nonce: nonce.clone(),
            work: work.clone(),
        })
        .map_err(|e| Error::InvalidInput(format!("search work: {e}")))?;
        // Without an event: the work changes no document, and a task row alone wakes no one
        // else; the holder's worker polls for tasks.
        // For this data directory's index: on a database other data directories share, their
        // writers leave it for ours.
        let task = self.write_system(|tx| {
            tx.enqueue_targeted_task(SEARCH_WORK, &payload, self.search_index_id())
        })?;
        Ok(SearchWorkRun::HandedOff(SearchTicket { task, nonce }))
    }

    /// Where the handed-off search work stands.
    pub fn search_work_state(&self, ticket: &SearchTicket) -> Result<SearchWorkState> {
        let key = progress_key(self);
        let (row, progress) = self.read(|tx| Ok((tx.task(ticket.task)?, tx.setting(&key)?)))?;
        // Progress recorded under this work's nonce (the setting is shared by the index's search
        // work, which runs one at a time).
        let progress = progress.as_deref().and_then(|p| {
            let mut parts = p.split(' ');
            (parts.next()? == ticket.nonce).then_some(())?;
            Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
        });
        // Finished tasks are deleted by the worker shortly after: gone means done.
        let Some(row) = row else {
            return Ok(SearchWorkState::Done(progress.map(|(_, total)| total)));
        };
        Ok(match row.state.as_str() {
            "done" => SearchWorkState::Done(progress.map(|(_, total)| total)),
            "failed" => SearchWorkState::Failed(row.error),
            "running" => {
                let (done, total) = progress.unwrap_or((0, 0));
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
        ticket: &SearchTicket,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<Option<usize>> {
        let task = ticket.task;
        if !self.writes_search_index()? {
            return Ok(None);
        }
        let now = chrono::Utc::now();
        let claimed = self.write_system(|tx| {
            match tx.task(task)? {
                // Another index's work (a ticket from another data directory) is not ours to run.
                Some(row)
                    if row.name != SEARCH_WORK
                        || row
                            .target
                            .as_deref()
                            .is_some_and(|t| t != self.search_index_id()) =>
                {
                    return Ok(None);
                }
                Some(row) if row.state == "running" => {
                    tx.set_task_state(task, "pending", &row.error, now)?;
                }
                Some(row) if row.state == "pending" => {}
                _ => return Ok(None),
            }
            tx.claim_task_by_id(task, now)
        })?;
        let Some(row) = claimed else {
            return Ok(None);
        };
        let outcome = Envelope::parse(&row.payload)?.work.run(self, &mut progress);
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
    let Envelope { nonce, work } = Envelope::parse(payload)?;
    let key = progress_key(db);
    let record_progress = |done: usize, total: usize| {
        // Progress is only shown: a failed write of it does not stop the work.
        let _ = db.write_system(|tx| tx.set_setting(&key, &format!("{nonce} {done} {total}")));
    };
    record_progress(0, 0);
    let mut last = std::time::Instant::now();
    let mut record = |done: usize, total: usize| {
        if done == total || last.elapsed() >= std::time::Duration::from_secs(1) {
            last = std::time::Instant::now();
            record_progress(done, total);
        }
    };
    let n = work.run(db, &mut record)?;
    // The count the waiting command reports (work without progress calls records it here).
    record_progress(n, n);
    Ok(())
}
