//! Module functions that work on backup archives without an open instance.

use std::path::PathBuf;

use docmeta_core as core;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::run;

/// Checks an archive (every path, size and SHA-256) without restoring it; returns its id.
#[pyfunction]
pub(crate) fn verify_backup(py: Python<'_>, archive: PathBuf) -> PyResult<String> {
    run(py, || core::backup::verify_backup(&archive)).map(|m| m.info.id)
}

/// Restores `archives` (one full backup, or an incremental one with its bases) into `data`,
/// which no docmeta may have open. Returns the verification report as a dict.
#[pyfunction]
#[pyo3(signature = (archives, data, *, password = None, database_url = None))]
pub(crate) fn restore<'py>(
    py: Python<'py>,
    archives: Vec<PathBuf>,
    data: PathBuf,
    password: Option<String>,
    database_url: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let r = run(py, || {
        core::backup::restore_to(
            &archives,
            &data,
            password.as_deref().map(str::as_bytes),
            database_url.as_deref(),
        )
    })?;
    let d = PyDict::new(py);
    d.set_item("backup_id", r.manifest.info.id)?;
    d.set_item("files_restored", r.files_restored)?;
    d.set_item("migrations", r.migrations)?;
    d.set_item("documents", r.documents)?;
    d.set_item(
        "document_opened",
        r.document_opened.map(|(id, label)| (id.0, label)),
    )?;
    d.set_item(
        "file_checked",
        r.file_checked.map(|(id, size)| (id.0, size)),
    )?;
    d.set_item("search_answers", r.search_answers)?;
    d.set_item("reindex_task", r.reindex_task.0)?;
    Ok(d)
}
