//! Module functions that work on backup archives without an open instance.

use std::path::PathBuf;

use docmeta_core as core;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::run;
use crate::records::{PruneDecision, all};

/// Checks an archive (every path, size and SHA-256) without restoring it; returns its id.
#[pyfunction]
pub(crate) fn verify_backup(py: Python<'_>, archive: PathBuf) -> PyResult<String> {
    run(py, || core::verify_backup(&archive)).map(|m| m.info.id)
}

/// The document files an archive's backup could not read intact, one dict each (`path`,
/// `document_file_id` or None, `damage`: its kind, `detail`); the archive is verified first.
#[pyfunction]
pub(crate) fn backup_damaged_files<'py>(
    py: Python<'py>,
    archive: PathBuf,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let m = run(py, || core::verify_backup(&archive))?;
    damaged(py, &m.damaged)
}

fn damaged<'py>(
    py: Python<'py>,
    entries: &[core::DamagedEntry],
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    entries
        .iter()
        .map(|e| {
            let d = PyDict::new(py);
            d.set_item("path", &e.path)?;
            d.set_item("document_file_id", e.document_file_id)?;
            d.set_item("damage", e.damage.kind())?;
            d.set_item("detail", e.damage.to_string())?;
            Ok(d)
        })
        .collect()
}

/// Restores `archives` (one full backup, or an incremental one with its bases) into `data`,
/// which no docmeta may have open. Returns the verification report as a dict (`damaged`: the
/// files the backup could not read intact, as `backup_damaged_files` lists them).
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
        core::restore_to(
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
    d.set_item("damaged", damaged(py, &r.manifest.damaged)?)?;
    Ok(d)
}

/// Applies a retention schedule to the backup archives (`*.tar.zst`) in `directory`: keeps the
/// newest backup of each of the last `keep_daily` days and of the last `keep_weekly` ISO weeks,
/// plus every backup a kept incremental one builds on; deletes the others unless `dry_run`.
/// Returns one decision per archive. Files that are not docmeta backups are left alone.
#[pyfunction]
#[pyo3(signature = (directory, *, keep_daily, keep_weekly, dry_run = false))]
pub(crate) fn prune_backups(
    py: Python<'_>,
    directory: PathBuf,
    keep_daily: usize,
    keep_weekly: usize,
    dry_run: bool,
) -> PyResult<Vec<PruneDecision>> {
    run(py, || {
        core::prune_backups(&directory, keep_daily, keep_weekly, dry_run)
    })
    .map(all)
}
