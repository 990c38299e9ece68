//! `Session` methods: the event log and durable tasks, as this session may see them.

use docmeta_core as core;
use pyo3::prelude::*;

use super::Session;
use crate::errors::run;
use crate::records::{Event, Task, all};

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

    /// Durable tasks not yet done (superusers).
    fn tasks(&self, py: Python<'_>) -> PyResult<Vec<Task>> {
        run(py, || self.inner.tasks()).map(all)
    }
}
