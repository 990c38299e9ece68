//! `Session` methods: the event log (listed, or followed as it grows) and durable tasks, as this
//! session may see them.

use std::time::{Duration, Instant};

use docmeta_core as core;
use pyo3::prelude::*;

use super::Session;
use crate::errors::{py_err, run};
use crate::records::{Event, EventFeed, Task, all};

/// The longest a follower waits with the GIL released before it looks at Python's signals
/// (Ctrl-C), then goes on waiting.
const SIGNAL_CHECK: Duration = Duration::from_secs(1);

#[pymethods]
impl Session {
    /// Events whose target this session may view, newest first, with their actors' names.
    #[pyo3(signature = (*, limit = 100))]
    fn events(&self, py: Python<'_>, limit: u32) -> PyResult<Vec<Event>> {
        run(py, || {
            self.inner.events(&core::EventQuery {
                limit: Some(limit),
                ..Default::default()
            })
        })
        .map(all)
    }

    /// Follows the event log: the events committed after `cursor` (None: from the start), in
    /// commit order, that this session may see, at most `limit`, with the cursor to pass next.
    /// Answers as soon as one such event is committed (here or by another process), or after
    /// `wait` seconds (at most 60) with none. The GIL is released while it waits; Ctrl-C is
    /// noticed within a second.
    #[pyo3(signature = (cursor = None, wait = 0.0, limit = 100))]
    fn events_after(
        &self,
        py: Python<'_>,
        cursor: Option<i64>,
        wait: f64,
        limit: u32,
    ) -> PyResult<EventFeed> {
        let wait = Duration::try_from_secs_f64(wait).map_err(|_| {
            py_err(core::Error::validation(
                "wait",
                "A number of seconds, at least 0, is required.",
            ))
        })?;
        let mut cursor = cursor.map(core::EventId);
        if wait > core::MAX_EVENT_WAIT {
            // The core refuses it, naming `wait`.
            return run(py, || self.inner.events_after(cursor, wait, limit)).map(Into::into);
        }
        let deadline = Instant::now() + wait;
        loop {
            let slice = deadline
                .saturating_duration_since(Instant::now())
                .min(SIGNAL_CHECK);
            let feed = run(py, || self.inner.events_after(cursor, slice, limit))?;
            if !feed.events.is_empty() || Instant::now() >= deadline {
                return Ok(feed.into());
            }
            cursor = feed.cursor;
            py.check_signals()?;
        }
    }

    /// Durable tasks not yet done (superusers).
    fn tasks(&self, py: Python<'_>) -> PyResult<Vec<Task>> {
        run(py, || self.inner.tasks()).map(all)
    }
}
