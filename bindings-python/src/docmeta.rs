//! The `Docmeta` class: opening an instance, sessions, events, tasks, search maintenance,
//! backup and schema administration.

use std::path::PathBuf;
use std::sync::Arc;

use docmeta_core as core;
use docmeta_core::ObjectRef;
use parking_lot::RwLock;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::classes::Classes;
use crate::errors::{Error, InvalidInput, deadline, permission, py_err, reads_the_store, run};
use crate::records::{AuditReport, Event, Explanation, NewDevice, Task, User, all};
use crate::session::Session;

/// Calls a Python progress callback `(done, total)`; its exceptions are printed, not raised.
pub(crate) fn progress(callback: &Option<Py<PyAny>>) -> impl FnMut(u64, u64) + Send + '_ {
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
    pub(crate) fn db(&self) -> PyResult<core::Docmeta> {
        self.inner
            .read()
            .clone()
            .ok_or_else(|| Error::new_err("this Docmeta is closed"))
    }

    pub(crate) fn of(db: core::Docmeta) -> Docmeta {
        Docmeta {
            inner: RwLock::new(Some(db)),
        }
    }
}

/// An object `kind` `id`, the kind parsed by `db`'s registry.
fn object(db: &core::Docmeta, kind: &str, id: i64) -> PyResult<ObjectRef> {
    Ok(ObjectRef::new(db.parse_kind(kind).map_err(py_err)?, id))
}

/// An existence check written in Python: `exists(id) -> bool`, run with the GIL taken; an
/// exception counts as "does not exist" (and is printed), so a failing check never grants.
fn existence(exists: Py<PyAny>) -> impl Fn(i64) -> bool + Send + Sync + 'static {
    move |id| {
        Python::attach(|py| match exists.call1(py, (id,)) {
            Ok(answer) => answer.is_truthy(py).unwrap_or(false),
            Err(e) => {
                e.print(py);
                false
            }
        })
    }
}

#[pymethods]
impl Docmeta {
    /// Opens (or creates) the data directory `path`. `password` is the encrypted storage's
    /// password (otherwise `DOCMETA_STORAGE_PASSWORD`); `worker` runs durable tasks and keeps
    /// the search index current in a background thread; `database_url` puts the records in a
    /// PostgreSQL database instead of the directory's SQLite file.
    /// `classes`: the validator and parser classes metadata types may name (the built-ins plus
    /// the application's own, see `Classes`); a copy is taken.
    #[staticmethod]
    #[pyo3(signature = (path, *, password = None, worker = true, database_url = None, classes = None))]
    fn open(
        py: Python<'_>,
        path: PathBuf,
        password: Option<String>,
        worker: bool,
        database_url: Option<String>,
        classes: Option<PyRef<'_, Classes>>,
    ) -> PyResult<Docmeta> {
        let registry = classes.map(|c| c.registry()).unwrap_or_default();
        let db = run(py, || {
            let b = core::Docmeta::builder()
                .data_dir(&path)
                .worker(worker)
                .classes(registry);
            let b = match &database_url {
                Some(url) => b.postgres(url),
                None => b,
            };
            match password {
                Some(p) => b.storage_password(p).open(),
                None => b.open(),
            }
        })?;
        Ok(Docmeta::of(db))
    }

    /// A private in-memory instance (tests, examples), with `classes` as `open` takes them.
    #[staticmethod]
    #[pyo3(signature = (*, classes = None))]
    fn in_memory(py: Python<'_>, classes: Option<PyRef<'_, Classes>>) -> PyResult<Docmeta> {
        let registry = classes.map(|c| c.registry());
        let db = run(py, || match registry {
            Some(r) => core::Docmeta::builder().classes(r).open(),
            None => core::Docmeta::in_memory(),
        })?;
        Ok(Docmeta::of(db))
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
        let db = self.db()?;
        Ok(Session::new(db.session(core::UserId(user_id)), db))
    }

    /// A session acting as docmeta itself (no permission checks).
    fn system(&self) -> PyResult<Session> {
        let db = self.db()?;
        Ok(Session::new(db.system(), db))
    }

    /// Whether `user_id` may do `permission` (e.g. `"documents.document_view"`) on the object
    /// `kind` (e.g. `"documents.document"`) `object_id`.
    fn check(
        &self,
        py: Python<'_>,
        user_id: i64,
        permission: &str,
        kind: &str,
        object_id: i64,
    ) -> PyResult<bool> {
        let guard = self.inner.read();
        let db = guard
            .as_ref()
            .ok_or_else(|| Error::new_err("this Docmeta is closed"))?;
        let p = crate::errors::permission(permission)?;
        let object = ObjectRef::new(db.parse_kind(kind).map_err(py_err)?, object_id);
        if reads_the_store(object) {
            // The links of files, values and instances come from a read transaction, which may
            // wait for a writer that is itself waiting for the GIL (a validator written in
            // Python): release it.
            return Ok(py.detach(|| db.check(core::UserId(user_id), p, object)));
        }
        // In memory and far shorter than releasing and taking back the GIL: no detach.
        Ok(db.check(core::UserId(user_id), p, object))
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

    /// Signs a device in: the username and password exchanged for a token accepted in their
    /// place for `lifetime_seconds` (None: 90 days; at most a year), so the device never keeps
    /// the password. None when the credentials are not an active user's. The answer is the
    /// only one that holds the token.
    #[pyo3(signature = (username, password, name, *, lifetime_seconds = None))]
    fn sign_in_device(
        &self,
        py: Python<'_>,
        username: String,
        password: String,
        name: String,
        lifetime_seconds: Option<u64>,
    ) -> PyResult<Option<NewDevice>> {
        let db = self.db()?;
        let lifetime = lifetime_seconds.map(std::time::Duration::from_secs);
        run(py, || {
            db.sign_in_device(&username, &password, &name, lifetime)
        })
        .map(|d| d.map(Into::into))
    }

    /// The active user a device's token signs in as, or None (unknown, revoked, expired, or
    /// its user deactivated).
    fn authenticate_device(&self, py: Python<'_>, token: String) -> PyResult<Option<User>> {
        let db = self.db()?;
        run(py, || db.authenticate_device(&token)).map(|u| u.map(Into::into))
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
        run(py, || core::export_schema(&db)?.to_yaml())
    }

    /// Makes the database match a YAML schema in one transaction; returns the changes made
    /// (with `dry_run`, the changes it would make, and nothing is changed).
    #[pyo3(signature = (yaml, *, dry_run = false))]
    fn apply_schema(&self, py: Python<'_>, yaml: String, dry_run: bool) -> PyResult<Vec<String>> {
        let db = self.db()?;
        run(py, || {
            let schema = core::Schema::from_yaml(&yaml)?;
            core::apply_schema(&db, &schema, dry_run)
        })
        .map(|changes| changes.into_iter().map(|c| c.to_string()).collect())
    }

    /// Why `user_id` may or may not do `permission` on the object: the deciding grant, every
    /// other grant that applies, what was checked, and a sentence.
    fn explain(
        &self,
        py: Python<'_>,
        user_id: i64,
        permission: &str,
        kind: &str,
        object_id: i64,
    ) -> PyResult<Explanation> {
        let db = self.db()?;
        let p = self::permission(permission)?;
        let object = object(&db, kind, object_id)?;
        let e = py.detach(|| db.explain(core::UserId(user_id), p, object));
        Ok(Explanation::of(e, &db.kinds()))
    }

    /// The ids among `ids` of objects of `kind` on which `user_id` may do `permission`, in
    /// their order (a shared parent, such as a document type, is evaluated once).
    fn filter(
        &self,
        py: Python<'_>,
        user_id: i64,
        permission: &str,
        kind: &str,
        ids: Vec<i64>,
    ) -> PyResult<Vec<i64>> {
        let db = self.db()?;
        let p = self::permission(permission)?;
        let kind = db.parse_kind(kind).map_err(py_err)?;
        let objects: Vec<ObjectRef> = ids.iter().map(|id| ObjectRef::new(kind, *id)).collect();
        let allowed = py.detach(|| db.filter(core::UserId(user_id), p, &objects));
        Ok(allowed.into_iter().map(|o| o.id).collect())
    }

    /// Adds an application's own object kind `app_label.model_name` to the access engine: it
    /// inherits ACLs from `parents` (kind names) and ACLs on it may hold `permissions` (keys).
    /// `exists(id) -> bool`, when given, says whether an object exists (an ACL on one that
    /// does not is refused as not found). Returns the kind's name.
    #[pyo3(signature = (app_label, model_name, *, parents = Vec::new(), permissions = Vec::new(), exists = None))]
    fn register_kind(
        &self,
        py: Python<'_>,
        app_label: &str,
        model_name: &str,
        parents: Vec<String>,
        permissions: Vec<String>,
        exists: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        let db = self.db()?;
        let parents = parents
            .iter()
            .map(|p| db.parse_kind(p))
            .collect::<core::Result<Vec<_>>>()
            .map_err(py_err)?;
        let own = permissions
            .iter()
            .map(|p| self::permission(p))
            .collect::<PyResult<Vec<_>>>()?;
        let check = exists.map(existence);
        run(py, || {
            let kind = db.register_kind(app_label, model_name, &parents, &own)?;
            if let Some(check) = check {
                db.set_kind_existence(kind, check)?;
            }
            Ok(db.kinds().name(kind))
        })
    }

    /// Gives an application kind its existence check `exists(id) -> bool` (see
    /// `register_kind`); an exception in it counts as "does not exist".
    fn set_kind_existence(&self, py: Python<'_>, kind: &str, exists: Py<PyAny>) -> PyResult<()> {
        let db = self.db()?;
        let kind = db.parse_kind(kind).map_err(py_err)?;
        let check = existence(exists);
        run(py, || db.set_kind_existence(kind, check))
    }

    /// Records the objects `(kind, id)` an application object inherits ACLs from (spec 5.3),
    /// replacing the ones recorded before.
    fn set_object_parents(
        &self,
        py: Python<'_>,
        kind: &str,
        object_id: i64,
        parents: Vec<(String, i64)>,
    ) -> PyResult<()> {
        let db = self.db()?;
        let target = object(&db, kind, object_id)?;
        let parents = parents
            .iter()
            .map(|(k, id)| object(&db, k, *id))
            .collect::<PyResult<Vec<_>>>()?;
        run(py, || db.set_object_parents(target, &parents))
    }

    /// Every object kind (`app_label.model_name`): the built-ins and the registered ones.
    fn kinds(&self) -> PyResult<Vec<String>> {
        let kinds = self.db()?.kinds();
        Ok(kinds.kinds().map(|(k, _)| kinds.name(k)).collect())
    }

    /// The registered kind `text` (`app_label.model_name`), checked; `NotFound` otherwise.
    fn parse_kind(&self, text: &str) -> PyResult<String> {
        let db = self.db()?;
        let kind = db.parse_kind(text).map_err(py_err)?;
        Ok(db.kinds().name(kind))
    }

    /// Whether a rebuild of the search index is running.
    fn search_rebuilding(&self) -> PyResult<bool> {
        Ok(self.db()?.search_rebuilding())
    }

    /// Whether this process writes the search index (otherwise another one does, and this
    /// one reads it).
    fn writes_search_index(&self, py: Python<'_>) -> PyResult<bool> {
        let db = self.db()?;
        run(py, || db.writes_search_index())
    }

    /// The process id of another process writing the search index, when one does.
    fn search_writer_pid(&self) -> PyResult<Option<u32>> {
        Ok(self.db()?.search_writer_pid())
    }

    /// Waits until no durable task is runnable, at most `timeout` seconds; returns whether
    /// none is left.
    #[pyo3(signature = (timeout = 30.0))]
    fn wait_for_tasks(&self, py: Python<'_>, timeout: f64) -> PyResult<bool> {
        let db = self.db()?;
        let timeout = std::time::Duration::try_from_secs_f64(timeout)
            .map_err(|e| InvalidInput::new_err(format!("timeout: {e}")))?;
        run(py, || db.wait_for_tasks(timeout))
    }

    /// The durable tasks that are not done (every one: use a session for what a user sees).
    fn open_tasks(&self, py: Python<'_>) -> PyResult<Vec<Task>> {
        let db = self.db()?;
        run(py, || db.open_tasks()).map(all)
    }

    /// Applies pending schema migrations; returns the versions applied.
    fn migrate(&self, py: Python<'_>) -> PyResult<Vec<u32>> {
        let db = self.db()?;
        run(py, || db.migrate())
    }

    /// Reloads the access snapshot from the database (after changes made outside docmeta).
    fn reload_access(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.db()?;
        run(py, || db.reload_access())
    }

    /// Applies every change any process committed to the database before this call (sessions
    /// do it before each call; for a cache of your own of docmeta's answers).
    fn catch_up(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.db()?;
        run(py, || db.catch_up())
    }

    /// Picks up access changes other processes committed to the same database; returns
    /// whether there were any.
    fn follow_access(&self, py: Python<'_>) -> PyResult<bool> {
        let db = self.db()?;
        run(py, || db.follow_access())
    }

    /// A counter that changes whenever a password, a user's activity or superuser status
    /// changes (a cache of authenticated users is stale once it moved).
    fn credentials_epoch(&self) -> PyResult<u64> {
        Ok(self.db()?.credentials_epoch())
    }

    /// The data directory, or None for an in-memory instance.
    fn data_dir(&self) -> PyResult<Option<PathBuf>> {
        Ok(self.db()?.data_dir().map(PathBuf::from))
    }

    /// The username of user `user_id`, or None.
    fn username(&self, py: Python<'_>, user_id: i64) -> PyResult<Option<String>> {
        let db = self.db()?;
        run(py, || db.username(core::UserId(user_id)))
    }

    /// An HMAC-SHA256 token over `fields` with the data directory's secret key.
    fn sign_token<'py>(
        &self,
        py: Python<'py>,
        fields: Vec<Vec<u8>>,
    ) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let db = self.db()?;
        let fields: Vec<&[u8]> = fields.iter().map(Vec::as_slice).collect();
        Ok(pyo3::types::PyBytes::new(py, &db.sign_token(&fields)))
    }

    /// Whether `token` is `sign_token(fields)` (compared in constant time).
    fn verify_token(&self, fields: Vec<Vec<u8>>, token: Vec<u8>) -> PyResult<bool> {
        let db = self.db()?;
        let fields: Vec<&[u8]> = fields.iter().map(Vec::as_slice).collect();
        Ok(db.verify_token(&fields, &token))
    }

    /// A handle on the same instance whose changes must commit within `seconds` from now;
    /// later they fail with `DeadlineExceeded` and change nothing.
    fn with_deadline(&self, seconds: f64) -> PyResult<Docmeta> {
        let db = self.db()?;
        Ok(Docmeta::of(db.with_deadline(deadline(seconds)?)))
    }

    /// A copy of the validator and parser classes this instance uses.
    fn classes(&self) -> PyResult<Classes> {
        Ok(Classes::of(self.db()?.classes().clone()))
    }

    /// The settings in force, as a dict.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let db = self.db()?;
        let c = db.config();
        let d = PyDict::new(py);
        d.set_item("task_max_attempts", c.task_max_attempts)?;
        d.set_item("password_hash_memory_kib", c.password_hash_memory_kib)?;
        d.set_item("password_hash_iterations", c.password_hash_iterations)?;
        let backend = match c.documents_file_storage_backend {
            core::StorageBackend::Plain => "plain",
            core::StorageBackend::Encrypted => "encrypted",
        };
        d.set_item("documents_file_storage_backend", backend)?;
        d.set_item("storage_password_file", c.storage_password_file.clone())?;
        d.set_item("storage_kdf_memory_kib", c.storage_kdf_memory_kib)?;
        d.set_item("storage_kdf_iterations", c.storage_kdf_iterations)?;
        d.set_item("upload_max_bytes", c.upload_max_bytes)?;
        d.set_item("download_verify_max_bytes", c.download_verify_max_bytes)?;
        d.set_item("access_refresh_ms", c.access_refresh_ms)?;
        d.set_item("login_failures_per_minute", c.login_failures_per_minute)?;
        d.set_item("request_timeout_ms", c.request_timeout_ms)?;
        d.set_item("stream_idle_timeout_ms", c.stream_idle_timeout_ms)?;
        d.set_item("stream_total_timeout_ms", c.stream_total_timeout_ms)?;
        d.set_item("streams_per_user", c.streams_per_user)?;
        d.set_item("header_read_timeout_ms", c.header_read_timeout_ms)?;
        d.set_item("keep_alive_timeout_ms", c.keep_alive_timeout_ms)?;
        d.set_item("max_connections", c.max_connections)?;
        d.set_item("max_connections_per_address", c.max_connections_per_address)?;
        d.set_item("renders_per_user", c.renders_per_user)?;
        d.set_item("renders_at_once", c.renders_at_once)?;
        d.set_item("postgres_pool_size", c.postgres_pool_size)?;
        d.set_item("read_cache_documents", c.read_cache_documents)?;
        d.set_item(
            "webhooks_allow_private_networks",
            c.webhooks_allow_private_networks,
        )?;
        Ok(d)
    }

    /// Reads every stored document file and checks it against its record (present, size,
    /// SHA-256, every MENC chunk's tag). Returns a dict: `files_checked`, `bytes_checked`,
    /// Walks the whole event log and checks that nothing in it was altered: every event's hash,
    /// positions without a gap, every stored checkpoint, and `checkpoint` (the JSON of one kept
    /// outside, from `audit_checkpoint`) when given. The report names the first failure.
    /// `progress(done, total)` is called as events are checked.
    #[pyo3(signature = (checkpoint = None, *, progress = None))]
    fn verify_events(
        &self,
        py: Python<'_>,
        checkpoint: Option<String>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<AuditReport> {
        let db = self.db()?;
        let given = checkpoint.map(|text| parse_checkpoint(&text)).transpose()?;
        let mut report = self::progress(&progress);
        run(py, || db.verify_events(given.as_ref(), &mut report)).map(Into::into)
    }

    /// A signed checkpoint of the event log's end, as JSON: keep it outside the installation
    /// and pass it to `verify_events` later.
    fn audit_checkpoint(&self, py: Python<'_>) -> PyResult<String> {
        let db = self.db()?;
        let c = run(py, || db.audit_checkpoint())?;
        serde_json::to_string(&c).map_err(|e| py_err(core::Error::InvalidInput(e.to_string())))
    }

    /// The installation's Ed25519 public key (hex), which checkpoints are signed with.
    fn audit_public_key(&self, py: Python<'_>) -> PyResult<String> {
        let db = self.db()?;
        run(py, || db.audit_public_key())
    }

    /// Removes the events written before `before` (a timezone-aware `datetime`), keeping a
    /// signed checkpoint so that the rest still verifies; the log is verified first, and one
    /// that fails is not pruned (`Conflict`). Returns how many events were removed.
    fn prune_events(&self, py: Python<'_>, before: chrono::DateTime<chrono::Utc>) -> PyResult<u64> {
        let db = self.db()?;
        run(py, || db.prune_events(before)).map(|r| r.removed)
    }

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

/// Whether `checkpoint` (the JSON `Docmeta.audit_checkpoint` answers) is signed by
/// `public_key` (hex, from `Docmeta.audit_public_key`): how a third party holding the
/// installation's public key checks a checkpoint without the installation. `InvalidInput` when
/// `checkpoint` is not a checkpoint's JSON.
#[pyfunction]
pub fn checkpoint_signed_by(checkpoint: &str, public_key: &str) -> PyResult<bool> {
    let checkpoint = parse_checkpoint(checkpoint)?;
    Ok(core::checkpoint_signed_by(&checkpoint, public_key))
}

/// A checkpoint from its JSON (what `audit_checkpoint` answers), or `InvalidInput`.
fn parse_checkpoint(text: &str) -> PyResult<core::Checkpoint> {
    serde_json::from_str(text)
        .map_err(|e| py_err(core::Error::InvalidInput(format!("not a checkpoint: {e}"))))
}
