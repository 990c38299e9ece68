//! The `Docmeta` class: opening an instance, sessions, events, tasks, search maintenance,
//! backup and schema administration.

use std::path::PathBuf;
use std::sync::Arc;

use docmeta_core as core;
use docmeta_core::ObjectRef;
use parking_lot::RwLock;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{Error, py_err, run};
use crate::records::{Event, User, all};
use crate::session::Session;

/// Calls a Python progress callback `(done, total)`; its exceptions are printed, not raised.
fn progress(callback: &Option<Py<PyAny>>) -> impl FnMut(u64, u64) + Send + '_ {
    move |done, total| {
        if let Some(cb) = callback {
            Python::attach(|py| {
                if let Err(e) = cb.call1(py, (done, total)) {
                    e.print(py);
                }
            });
        }
    }
}

/// A docmeta instance: open it once and share it between threads.
///
/// Use it as a context manager (`with docmeta.Docmeta.open(path) as db:`) or call `close()`:
/// afterwards every call raises `docmeta.Error`.
#[pyclass(frozen, module = "docmeta")]
pub struct Docmeta {
    inner: RwLock<Option<core::Docmeta>>,
}

impl Docmeta {
    fn db(&self) -> PyResult<core::Docmeta> {
        self.inner
            .read()
            .clone()
            .ok_or_else(|| Error::new_err("this Docmeta is closed"))
    }
}

#[pymethods]
impl Docmeta {
    /// Opens (or creates) the data directory `path`. `password` is the encrypted storage's
    /// password (otherwise `DOCMETA_STORAGE_PASSWORD`); `worker` runs durable tasks and keeps
    /// the search index current in a background thread; `database_url` puts the records in a
    /// PostgreSQL database instead of the directory's SQLite file.
    #[staticmethod]
    #[pyo3(signature = (path, *, password = None, worker = true, database_url = None))]
    fn open(
        py: Python<'_>,
        path: PathBuf,
        password: Option<String>,
        worker: bool,
        database_url: Option<String>,
    ) -> PyResult<Docmeta> {
        let db = run(py, || {
            let b = core::Docmeta::builder().data_dir(&path).worker(worker);
            let b = match &database_url {
                Some(url) => b.postgres(url),
                None => b,
            };
            match password {
                Some(p) => b.storage_password(p).open(),
                None => b.open(),
            }
        })?;
        Ok(Docmeta {
            inner: RwLock::new(Some(db)),
        })
    }

    /// A private in-memory instance (tests, examples).
    #[staticmethod]
    fn in_memory(py: Python<'_>) -> PyResult<Docmeta> {
        let db = run(py, core::Docmeta::in_memory)?;
        Ok(Docmeta {
            inner: RwLock::new(Some(db)),
        })
    }

    /// Closes the handle (other handles of the same instance stay open).
    fn close(&self, py: Python<'_>) {
        let db = self.inner.write().take();
        py.detach(move || drop(db));
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }

    /// A session acting as user `user_id` (permissions are checked).
    fn session(&self, user_id: i64) -> PyResult<Session> {
        Ok(Session {
            inner: self.db()?.session(core::UserId(user_id)),
        })
    }

    /// A session acting as docmeta itself (no permission checks).
    fn system(&self) -> PyResult<Session> {
        Ok(Session {
            inner: self.db()?.system(),
        })
    }

    /// Whether `user_id` may do `permission` (e.g. `"documents.document_view"`) on the object
    /// `kind` (e.g. `"documents.document"`) `object_id`.
    fn check(&self, user_id: i64, permission: &str, kind: &str, object_id: i64) -> PyResult<bool> {
        // In memory and far shorter than releasing and taking back the GIL: no detach.
        let guard = self.inner.read();
        let db = guard
            .as_ref()
            .ok_or_else(|| Error::new_err("this Docmeta is closed"))?;
        let p = crate::errors::permission(permission)?;
        let kind = db.parse_kind(kind).map_err(py_err)?;
        Ok(db.check(core::UserId(user_id), p, ObjectRef::new(kind, object_id)))
    }

    /// Calls `callback(event)` for every committed event; returns an id for `unsubscribe`.
    /// The callback runs in the committing thread; its exceptions are printed, not raised.
    fn subscribe(&self, callback: Py<PyAny>) -> PyResult<u64> {
        let callback = Arc::new(callback);
        let id = self.db()?.subscribe(move |e| {
            let event = Event::from(e.clone());
            Python::attach(|py| {
                if let Err(err) = callback.call1(py, (event,)) {
                    err.print(py);
                }
            });
        });
        Ok(subscription_id(id))
    }

    /// Stops a subscription.
    fn unsubscribe(&self, id: u64) -> PyResult<()> {
        let db = self.db()?;
        if let Some(s) = SUBSCRIPTIONS.write().remove(&id) {
            db.unsubscribe(s);
        }
        Ok(())
    }

    /// Events of the log, newest first (all of them: use a session for what a user may see).
    #[pyo3(signature = (*, limit = 100))]
    fn events(&self, py: Python<'_>, limit: u32) -> PyResult<Vec<Event>> {
        let db = self.db()?;
        run(py, || {
            db.events(&core::EventQuery {
                limit: Some(limit),
                ..Default::default()
            })
        })
        .map(all)
    }

    /// Runs every runnable durable task now (without a worker); returns how many ran.
    fn run_pending_tasks(&self, py: Python<'_>) -> PyResult<usize> {
        let db = self.db()?;
        run(py, || db.run_pending_tasks())
    }

    /// Brings the search index up to date with the event log.
    fn wait_for_index(&self, py: Python<'_>) -> PyResult<usize> {
        let db = self.db()?;
        run(py, || db.wait_for_index())
    }

    /// Rebuilds the search index (fresh index, swapped in when done); `progress(done, total)`.
    #[pyo3(signature = (*, progress = None))]
    fn search_reindex(&self, py: Python<'_>, progress: Option<Py<PyAny>>) -> PyResult<usize> {
        let db = self.db()?;
        let mut report = self::progress(&progress);
        run(py, || db.search_reindex(|d, t| report(d as u64, t as u64)))
    }

    /// Counts per model, size, lag and schema of the search index, as a dict.
    fn search_status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let db = self.db()?;
        let s = run(py, || db.search_status())?;
        let d = PyDict::new(py);
        d.set_item("documents", s.documents)?;
        d.set_item("metadata_values", s.metadata_values)?;
        d.set_item("events_behind", s.events_behind)?;
        d.set_item("size_bytes", s.size_bytes)?;
        d.set_item("schema_version", s.schema_version)?;
        d.set_item("schema_current", s.schema_current)?;
        Ok(d)
    }

    /// Backs the data directory up into `out` (`base`: an earlier backup, for an incremental
    /// one); `progress(done, total)` counts document files. Returns the backup's id. Document
    /// files that could not be read intact are listed in the archive's manifest (see
    /// `backup_damaged_files`) and reported with a `UserWarning`.
    #[pyo3(signature = (out, *, base = None, progress = None))]
    fn backup(
        &self,
        py: Python<'_>,
        out: PathBuf,
        base: Option<PathBuf>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        let db = self.db()?;
        let mut report = self::progress(&progress);
        let r = run(py, || db.backup(&out, base.as_deref(), &mut report))?;
        if !r.manifest.is_intact() {
            let message = format!(
                "the backup was written, but {} document files could not be read intact; \
                 docmeta.backup_damaged_files(archive) lists them",
                r.manifest.damaged.len()
            );
            let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
            PyErr::warn(py, &category, &std::ffi::CString::new(message)?, 1)?;
        }
        Ok(r.manifest.info.id)
    }

    /// The user with these credentials, or None (as long whether or not the user exists).
    fn authenticate(
        &self,
        py: Python<'_>,
        username: String,
        password: String,
    ) -> PyResult<Option<User>> {
        let db = self.db()?;
        run(py, || db.authenticate(&username, &password)).map(|u| u.map(Into::into))
    }

    /// Recreates the search index empty with the current schema.
    fn search_initialize(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.db()?;
        run(py, || db.search_initialize())
    }

    /// Rebuilds the search index if an older docmeta built it; returns whether it did.
    #[pyo3(signature = (*, progress = None))]
    fn search_upgrade(&self, py: Python<'_>, progress: Option<Py<PyAny>>) -> PyResult<bool> {
        let db = self.db()?;
        let mut report = self::progress(&progress);
        run(py, || db.search_upgrade(|d, t| report(d as u64, t as u64)))
    }

    /// Indexes the objects of one model (`documents.document`, `metadata.documentmetadata`),
    /// optionally only these ids.
    #[pyo3(signature = (model, *, ids = None, progress = None))]
    fn search_index_objects(
        &self,
        py: Python<'_>,
        model: String,
        ids: Option<Vec<i64>>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<usize> {
        let db = self.db()?;
        let mut report = self::progress(&progress);
        run(py, || {
            db.search_index_objects(&model, ids.as_deref(), |d, t| report(d as u64, t as u64))
        })
    }

    /// The schema (metadata types, document types, roles) as YAML.
    fn export_schema(&self, py: Python<'_>) -> PyResult<String> {
        let db = self.db()?;
        run(py, || core::installation::export(&db)?.to_yaml())
    }

    /// Makes the database match a YAML schema in one transaction; returns the changes made
    /// (with `dry_run`, the changes it would make, and nothing is changed).
    #[pyo3(signature = (yaml, *, dry_run = false))]
    fn apply_schema(&self, py: Python<'_>, yaml: String, dry_run: bool) -> PyResult<Vec<String>> {
        let db = self.db()?;
        run(py, || {
            let schema = core::installation::Schema::from_yaml(&yaml)?;
            core::installation::apply(&db, &schema, dry_run)
        })
        .map(|changes| changes.into_iter().map(|c| c.to_string()).collect())
    }

    /// Why `user_id` may or may not do `permission` on the object, as text.
    fn explain(
        &self,
        user_id: i64,
        permission: &str,
        kind: &str,
        object_id: i64,
    ) -> PyResult<String> {
        let db = self.db()?;
        let p = crate::errors::permission(permission)?;
        let kind = db.parse_kind(kind).map_err(py_err)?;
        Ok(format!(
            "{:?}",
            db.explain(core::UserId(user_id), p, ObjectRef::new(kind, object_id))
        ))
    }

    /// Reads every stored document file and checks it against its record (present, size,
    /// SHA-256, every MENC chunk's tag). Returns a dict: `files_checked`, `bytes_checked`,
    /// `intact`, and `damaged`, one dict per damaged file (`file_id`, `document_id`,
    /// `filename`, `storage_name`, `encrypted`, `damage`: its kind, `detail`).
    #[pyo3(signature = (*, progress = None))]
    fn verify_storage<'py>(
        &self,
        py: Python<'py>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let db = self.db()?;
        let mut report = self::progress(&progress);
        let r = run(py, || db.verify_storage(&mut report))?;
        let damaged = r
            .damaged
            .iter()
            .map(|d| {
                let item = PyDict::new(py);
                item.set_item("file_id", d.file_id.0)?;
                item.set_item("document_id", d.document_id.0)?;
                item.set_item("filename", &d.filename)?;
                item.set_item("storage_name", &d.storage_name)?;
                item.set_item("encrypted", d.encrypted)?;
                item.set_item("damage", d.damage.kind())?;
                item.set_item("detail", d.damage.to_string())?;
                Ok(item)
            })
            .collect::<PyResult<Vec<_>>>()?;
        let d = PyDict::new(py);
        d.set_item("files_checked", r.files_checked)?;
        d.set_item("bytes_checked", r.bytes_checked)?;
        d.set_item("intact", r.is_intact())?;
        d.set_item("damaged", damaged)?;
        Ok(d)
    }

    /// Converts every stored file to the encrypted format (`encrypt=True`) or back; resumable.
    #[pyo3(signature = (*, encrypt, progress = None))]
    fn convert_storage(
        &self,
        py: Python<'_>,
        encrypt: bool,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<u64> {
        let db = self.db()?;
        let mut report = self::progress(&progress);
        run(py, || db.convert_storage(encrypt, &mut report))
    }
}

static SUBSCRIPTIONS: RwLock<std::collections::BTreeMap<u64, core::SubscriptionId>> =
    RwLock::new(std::collections::BTreeMap::new());
static NEXT_SUBSCRIPTION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn subscription_id(id: core::SubscriptionId) -> u64 {
    let n = NEXT_SUBSCRIPTION.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    SUBSCRIPTIONS.write().insert(n, id);
    n
}
