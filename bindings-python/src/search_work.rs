//! `Docmeta` methods: search index work handed between processes. When another
//! process (a running server) holds the search index's writer, `search_work` queues the work
//! for it and answers with a ticket to follow; `adopt_search_work` runs it here if that process
//! has gone.

use docmeta_core as core;
use docmeta_core::{SearchWork, SearchWorkRun};
use pyo3::prelude::*;

use crate::docmeta::{Docmeta, progress};
use crate::errors::{InvalidInput, run};
use crate::records::SearchWorkState;

/// Search work queued for the process that writes the index; follow it with
/// `Docmeta.search_work_state(ticket)`.
#[pyclass(frozen, module = "docmeta")]
pub struct SearchTicket {
    inner: core::SearchTicket,
}

#[pymethods]
impl SearchTicket {
    /// The durable task carrying the work.
    #[getter]
    fn task_id(&self) -> i64 {
        self.inner.task.0
    }

    fn __repr__(&self) -> String {
        format!("SearchTicket(task_id={})", self.inner.task.0)
    }
}

/// What `search_work` did: `done` (how many objects it indexed) when this process writes the
/// index, otherwise the `ticket` of the work handed to the process that does.
#[pyclass(frozen, get_all, module = "docmeta")]
pub struct SearchWorkResult {
    done: Option<usize>,
    ticket: Option<Py<SearchTicket>>,
}

/// The work named `operation`: `reindex`, `initialize`, `upgrade` or `index_objects` (with
/// `model` and optionally `ids`).
fn work(operation: &str, model: Option<String>, ids: Option<Vec<i64>>) -> PyResult<SearchWork> {
    Ok(match (operation, model) {
        ("reindex", None) => SearchWork::Reindex,
        ("initialize", None) => SearchWork::Initialize,
        ("upgrade", None) => SearchWork::Upgrade,
        ("index_objects", Some(model)) => SearchWork::IndexObjects { model, ids },
        ("index_objects", None) => {
            return Err(InvalidInput::new_err("index_objects needs a model"));
        }
        (other, _) => {
            return Err(InvalidInput::new_err(format!(
                "search work '{other}': expected reindex, initialize, upgrade or index_objects \
                 (only index_objects takes a model)"
            )));
        }
    })
}

#[pymethods]
impl Docmeta {
    /// Runs search work here when this process writes the index, or hands it to the process
    /// that does (a running server) and returns a ticket.
    #[pyo3(signature = (operation, *, model = None, ids = None, progress = None))]
    fn search_work(
        &self,
        py: Python<'_>,
        operation: &str,
        model: Option<String>,
        ids: Option<Vec<i64>>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<SearchWorkResult> {
        let db = self.db()?;
        let work = work(operation, model, ids)?;
        let mut report = self::progress(&progress);
        let ran = run(py, || {
            db.search_work(&work, |d, t| report(d as u64, t as u64))
        })?;
        Ok(match ran {
            SearchWorkRun::Done(n) => SearchWorkResult {
                done: Some(n),
                ticket: None,
            },
            SearchWorkRun::HandedOff(ticket) => SearchWorkResult {
                done: None,
                ticket: Some(Py::new(py, SearchTicket { inner: ticket })?),
            },
        })
    }

    /// Where handed-off search work stands.
    fn search_work_state(
        &self,
        py: Python<'_>,
        ticket: PyRef<'_, SearchTicket>,
    ) -> PyResult<SearchWorkState> {
        let db = self.db()?;
        let ticket = ticket.inner.clone();
        run(py, || db.search_work_state(&ticket)).map(Into::into)
    }

    /// Runs handed-off search work here if the process it was handed to has gone; returns how
    /// many objects it indexed, or None (another process still writes the index, or the work
    /// no longer waits).
    #[pyo3(signature = (ticket, *, progress = None))]
    fn adopt_search_work(
        &self,
        py: Python<'_>,
        ticket: PyRef<'_, SearchTicket>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Option<usize>> {
        let db = self.db()?;
        let ticket = ticket.inner.clone();
        let mut report = self::progress(&progress);
        run(py, || {
            db.adopt_search_work(&ticket, |d, t| report(d as u64, t as u64))
        })
    }
}
