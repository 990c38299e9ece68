//! The native module `docmeta._docmeta` behind the Python package `docmeta`.
//!
//! Every call into docmeta-core releases the GIL (`Python::detach`), so a `Docmeta` handle can
//! be shared between Python threads and store, search, backup and crypto work runs in parallel
//! with Python code. Records are frozen classes; times are timezone-aware `datetime`s; core
//! errors become `docmeta.Error` subclasses.

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use docmeta_core as core;
use docmeta_core::workflows::ActionKind;
use docmeta_core::{ErrorKind, ObjectRef, Permission};
use parking_lot::RwLock;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

create_exception!(
    docmeta,
    Error,
    PyException,
    "Base class of docmeta's errors."
);
create_exception!(
    docmeta,
    ValidationError,
    Error,
    "Invalid input for a field: `.field`, `.message`."
);
create_exception!(
    docmeta,
    PermissionDenied,
    Error,
    "The user may see the object but not do this."
);
create_exception!(
    docmeta,
    NotFound,
    Error,
    "No such object, or one the user may not see."
);
create_exception!(
    docmeta,
    Conflict,
    Error,
    "A uniqueness rule or state conflict: `.field`, `.message`."
);
create_exception!(
    docmeta,
    InvalidInput,
    Error,
    "Malformed input (a query, an argument)."
);
create_exception!(
    docmeta,
    DecryptionError,
    Error,
    "Encrypted data could not be decrypted (InvalidTag)."
);
create_exception!(
    docmeta,
    DeadlineExceeded,
    Error,
    "The operation's deadline passed before it committed: nothing was changed."
);
create_exception!(
    docmeta,
    StorageError,
    Error,
    "The database, the file system or another backing service failed."
);
create_exception!(
    docmeta,
    StorageFull,
    StorageError,
    "The disk (or a quota) is full: nothing was stored; the same call may succeed once space is freed."
);

/// Maps a core error to its Python exception, with `.field` and `.message` where it has them.
fn py_err(e: core::Error) -> PyErr {
    let message = e.to_string();
    let (field, detail) = match &e {
        core::Error::Validation { field, message } | core::Error::Conflict { field, message } => {
            (Some(field.clone()), message.clone())
        }
        _ => (None, message.clone()),
    };
    let err = match e.kind() {
        ErrorKind::Validation => ValidationError::new_err(message),
        ErrorKind::PermissionDenied => PermissionDenied::new_err(message),
        ErrorKind::NotFound => NotFound::new_err(message),
        ErrorKind::Conflict => Conflict::new_err(message),
        ErrorKind::InvalidInput => InvalidInput::new_err(message),
        ErrorKind::Decryption => DecryptionError::new_err(message),
        ErrorKind::Storage => StorageError::new_err(message),
        ErrorKind::StorageFull => StorageFull::new_err(message),
        ErrorKind::Timeout => DeadlineExceeded::new_err(message),
        _ => Error::new_err(message),
    };
    Python::attach(|py| {
        let value = err.value(py);
        let _ = value.setattr("field", field);
        let _ = value.setattr("message", detail);
    });
    err
}

/// Runs `f` with the GIL released and maps its error.
fn run<T: Send>(py: Python<'_>, f: impl FnOnce() -> core::Result<T> + Send) -> PyResult<T> {
    py.detach(f).map_err(py_err)
}

fn permission(key: &str) -> PyResult<Permission> {
    Permission::from_key(key).map_err(py_err)
}

macro_rules! record {
    ($(#[$doc:meta])* $name:ident { $($(#[$fdoc:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$doc])*
        #[pyclass(frozen, eq, get_all, module = "docmeta", skip_from_py_object)]
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name { $($(#[$fdoc])* $field: $ty),* }

        #[pymethods]
        impl $name {
            fn __repr__(&self) -> String {
                let mut out = format!("{}(", stringify!($name));
                $( out.push_str(&format!("{}={:?}, ", stringify!($field), self.$field)); )*
                if out.ends_with(", ") { out.truncate(out.len() - 2); }
                out.push(')');
                out
            }
        }
    };
}

record!(
    /// A metadata type (spec 2.1).
    MetadataType { id: i64, name: String, label: String, default: String, lookup: String,
        validation: String, validation_arguments: String, parser: String, parser_arguments: String });
record!(
    /// A document type.
    DocumentType { id: i64, label: String });
record!(
    /// A document.
    Document { id: i64, label: String, document_type_id: i64, created: DateTime<Utc> });
record!(
    /// A metadata value of a document (one per document and type).
    DocumentMetadata { id: i64, document_id: i64, metadata_type_id: i64, value: String });
record!(
    /// A file of a document (the bytes live in the file storage).
    DocumentFile { id: i64, document_id: i64, filename: String, size: u64, checksum: String,
        mimetype: String, created: DateTime<Utc> });
record!(
    /// A user (never with its password hash).
    User { id: i64, username: String, is_superuser: bool, is_active: bool });
record!(
    /// An access-control list: a role's permissions on one object.
    Acl { id: i64, object_kind: String, object_id: i64, role_id: i64, permissions: Vec<String> });
record!(
    /// An entry of the event log (spec 6).
    Event { id: i64, timestamp: DateTime<Utc>, name: String, actor_id: Option<i64>,
        target_kind: String, target_id: i64, target_label: String,
        action_object_kind: Option<String>, action_object_id: Option<i64> });
record!(
    /// A cabinet (a tree of document folders).
    Cabinet { id: i64, label: String, parent_id: Option<i64> });
record!(
    /// A durable background task that is not done.
    Task { id: i64, name: String, state: String, attempts: i64, error: String });
record!(
    /// A workflow template.
    Workflow { id: i64, label: String, document_type_ids: Vec<i64> });
record!(
    /// A state of a workflow.
    WorkflowState { id: i64, workflow_id: i64, label: String, initial: bool });
record!(
    /// A transition of a workflow, with its trigger events.
    WorkflowTransition { id: i64, workflow_id: i64, label: String, origin_state_id: i64,
        destination_state_id: i64, condition: String, triggers: Vec<String> });
record!(
    /// A workflow running on a document.
    WorkflowInstance { id: i64, workflow_id: i64, document_id: i64, state_id: Option<i64> });
record!(
    /// An entry of a workflow instance's log: a transition taken, or an error.
    WorkflowLogEntry { id: i64, instance_id: i64, transition_id: Option<i64>, user_id: Option<i64>,
        comment: String, error: bool, created: DateTime<Utc> });
record!(
    /// A page of search results.
    DocumentPage { count: usize, results: Vec<Document> });
record!(
    /// A page of metadata search results.
    MetadataPage { count: usize, results: Vec<DocumentMetadata> });

impl From<core::MetadataType> for MetadataType {
    fn from(t: core::MetadataType) -> Self {
        MetadataType {
            id: t.id.0,
            name: t.name,
            label: t.label,
            default: t.default,
            lookup: t.lookup,
            validation: t.validation,
            validation_arguments: t.validation_arguments,
            parser: t.parser,
            parser_arguments: t.parser_arguments,
        }
    }
}
impl From<core::DocumentType> for DocumentType {
    fn from(t: core::DocumentType) -> Self {
        DocumentType {
            id: t.id.0,
            label: t.label,
        }
    }
}
impl From<core::Document> for Document {
    fn from(d: core::Document) -> Self {
        Document {
            id: d.id.0,
            label: d.label,
            document_type_id: d.document_type_id.0,
            created: d.created,
        }
    }
}
impl From<core::DocumentMetadata> for DocumentMetadata {
    fn from(m: core::DocumentMetadata) -> Self {
        DocumentMetadata {
            id: m.id.0,
            document_id: m.document_id.0,
            metadata_type_id: m.metadata_type_id.0,
            value: m.value,
        }
    }
}
impl From<core::DocumentFile> for DocumentFile {
    fn from(f: core::DocumentFile) -> Self {
        DocumentFile {
            id: f.id.0,
            document_id: f.document_id.0,
            filename: f.filename,
            size: f.size,
            checksum: f.checksum,
            mimetype: f.mimetype,
            created: f.created,
        }
    }
}
impl From<core::UserRow> for User {
    fn from(u: core::UserRow) -> Self {
        User {
            id: u.id.0,
            username: u.username,
            is_superuser: u.is_superuser,
            is_active: u.is_active,
        }
    }
}
impl From<core::AclRow> for Acl {
    fn from(a: core::AclRow) -> Self {
        Acl {
            id: a.id.0,
            object_kind: a.object_kind,
            object_id: a.object_id,
            role_id: a.role_id.0,
            permissions: a.permissions,
        }
    }
}
impl From<core::Event> for Event {
    fn from(e: core::Event) -> Self {
        Event {
            id: e.id.0,
            timestamp: e.timestamp,
            name: e.name,
            actor_id: e.actor.map(|u| u.0),
            target_kind: e.target.kind,
            target_id: e.target.id,
            target_label: e.target.label,
            action_object_kind: e.action_object.as_ref().map(|o| o.kind.clone()),
            action_object_id: e.action_object.map(|o| o.id),
        }
    }
}
impl From<core::Cabinet> for Cabinet {
    fn from(c: core::Cabinet) -> Self {
        Cabinet {
            id: c.id.0,
            label: c.label,
            parent_id: c.parent_id.map(|p| p.0),
        }
    }
}
impl From<core::TaskRow> for Task {
    fn from(t: core::TaskRow) -> Self {
        Task {
            id: t.id.0,
            name: t.name,
            state: t.state,
            attempts: t.attempts,
            error: t.error,
        }
    }
}
impl From<core::workflows::Workflow> for Workflow {
    fn from(w: core::workflows::Workflow) -> Self {
        Workflow {
            id: w.id.0,
            label: w.label,
            document_type_ids: w.document_type_ids.iter().map(|t| t.0).collect(),
        }
    }
}
impl From<core::workflows::WorkflowState> for WorkflowState {
    fn from(s: core::workflows::WorkflowState) -> Self {
        WorkflowState {
            id: s.id.0,
            workflow_id: s.workflow_id.0,
            label: s.label,
            initial: s.initial,
        }
    }
}
impl From<core::workflows::WorkflowTransition> for WorkflowTransition {
    fn from(t: core::workflows::WorkflowTransition) -> Self {
        WorkflowTransition {
            id: t.id.0,
            workflow_id: t.workflow_id.0,
            label: t.label,
            origin_state_id: t.origin_state_id.0,
            destination_state_id: t.destination_state_id.0,
            condition: t.condition,
            triggers: t.triggers,
        }
    }
}
impl From<core::workflows::WorkflowInstance> for WorkflowInstance {
    fn from(i: core::workflows::WorkflowInstance) -> Self {
        WorkflowInstance {
            id: i.id.0,
            workflow_id: i.workflow_id.0,
            document_id: i.document_id.0,
            state_id: i.state_id.map(|s| s.0),
        }
    }
}
impl From<core::workflows::WorkflowLogEntry> for WorkflowLogEntry {
    fn from(e: core::workflows::WorkflowLogEntry) -> Self {
        WorkflowLogEntry {
            id: e.id.0,
            instance_id: e.instance_id.0,
            transition_id: e.transition_id.map(|t| t.0),
            user_id: e.user_id.map(|u| u.0),
            comment: e.comment,
            error: e.error,
            created: e.created,
        }
    }
}

fn all<T, U: From<T>>(items: Vec<T>) -> Vec<U> {
    items.into_iter().map(U::from).collect()
}

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
        let p = self::permission(permission)?;
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
    /// one); `progress(done, total)` counts document files. Returns the backup's id.
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
        run(py, || db.backup(&out, base.as_deref(), &mut report)).map(|r| r.manifest.info.id)
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
        run(py, || core::schema::export(&db)?.to_yaml())
    }

    /// Makes the database match a YAML schema in one transaction; returns the changes made
    /// (with `dry_run`, the changes it would make, and nothing is changed).
    #[pyo3(signature = (yaml, *, dry_run = false))]
    fn apply_schema(&self, py: Python<'_>, yaml: String, dry_run: bool) -> PyResult<Vec<String>> {
        let db = self.db()?;
        run(py, || {
            let schema = core::schema::Schema::from_yaml(&yaml)?;
            core::schema::apply(&db, &schema, dry_run)
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
        let p = self::permission(permission)?;
        let kind = db.parse_kind(kind).map_err(py_err)?;
        Ok(format!(
            "{:?}",
            db.explain(core::UserId(user_id), p, ObjectRef::new(kind, object_id))
        ))
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

/// Checks an archive (every path, size and SHA-256) without restoring it; returns its id.
#[pyfunction]
fn verify_backup(py: Python<'_>, archive: PathBuf) -> PyResult<String> {
    run(py, || core::backup::verify_backup(&archive)).map(|m| m.info.id)
}

/// Restores `archives` (one full backup, or an incremental one with its bases) into `data`,
/// which no docmeta may have open. Returns the verification report as a dict.
#[pyfunction]
#[pyo3(signature = (archives, data, *, password = None, database_url = None))]
fn restore<'py>(
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

/// Everything one actor does: metadata, documents, files, access, search, workflows.
#[pyclass(frozen, module = "docmeta")]
pub struct Session {
    inner: core::Session,
}

#[pymethods]
impl Session {
    // ----- metadata types, document types, associations ------------------------------------

    /// Creates a metadata type (spec 2.1).
    #[pyo3(signature = (name, label, *, default = String::new(), lookup = String::new(),
        validation = String::new(), validation_arguments = String::new(),
        parser = String::new(), parser_arguments = String::new()))]
    #[allow(clippy::too_many_arguments)]
    fn create_metadata_type(
        &self,
        py: Python<'_>,
        name: String,
        label: String,
        default: String,
        lookup: String,
        validation: String,
        validation_arguments: String,
        parser: String,
        parser_arguments: String,
    ) -> PyResult<MetadataType> {
        let input = core::MetadataTypeInput {
            name,
            label,
            default,
            lookup,
            validation,
            validation_arguments,
            parser,
            parser_arguments,
        };
        run(py, || self.inner.create_metadata_type(input)).map(Into::into)
    }

    /// The metadata types this session may view.
    fn metadata_types(&self, py: Python<'_>) -> PyResult<Vec<MetadataType>> {
        run(py, || self.inner.metadata_types()).map(all)
    }

    /// Deletes a metadata type (its values are removed by a durable task).
    fn delete_metadata_type(&self, py: Python<'_>, id: i64) -> PyResult<()> {
        run(py, || {
            self.inner.delete_metadata_type(core::MetadataTypeId(id))
        })
    }

    /// Creates a document type.
    fn create_document_type(&self, py: Python<'_>, label: String) -> PyResult<DocumentType> {
        run(py, || self.inner.create_document_type(&label)).map(Into::into)
    }

    /// The document types this session may view.
    fn document_types(&self, py: Python<'_>) -> PyResult<Vec<DocumentType>> {
        run(py, || self.inner.document_types()).map(all)
    }

    /// Associates a metadata type with a document type (`required`: spec 2.4 rule 1).
    #[pyo3(signature = (document_type, metadata_type, *, required = false))]
    fn associate(
        &self,
        py: Python<'_>,
        document_type: i64,
        metadata_type: i64,
        required: bool,
    ) -> PyResult<i64> {
        run(py, || {
            self.inner.associate(
                core::DocumentTypeId(document_type),
                core::MetadataTypeId(metadata_type),
                required,
            )
        })
        .map(|a| a.id.0)
    }

    /// One metadata type.
    fn metadata_type(&self, py: Python<'_>, id: i64) -> PyResult<MetadataType> {
        run(py, || self.inner.metadata_type(core::MetadataTypeId(id))).map(Into::into)
    }

    /// One metadata type by name.
    fn metadata_type_by_name(&self, py: Python<'_>, name: String) -> PyResult<MetadataType> {
        run(py, || self.inner.metadata_type_by_name(&name)).map(Into::into)
    }

    /// Replaces a metadata type's definition (every field, as `create_metadata_type`).
    #[pyo3(signature = (id, name, label, *, default = String::new(), lookup = String::new(),
        validation = String::new(), validation_arguments = String::new(),
        parser = String::new(), parser_arguments = String::new()))]
    #[allow(clippy::too_many_arguments)]
    fn update_metadata_type(
        &self,
        py: Python<'_>,
        id: i64,
        name: String,
        label: String,
        default: String,
        lookup: String,
        validation: String,
        validation_arguments: String,
        parser: String,
        parser_arguments: String,
    ) -> PyResult<MetadataType> {
        let input = core::MetadataTypeInput {
            name,
            label,
            default,
            lookup,
            validation,
            validation_arguments,
            parser,
            parser_arguments,
        };
        run(py, || {
            self.inner
                .update_metadata_type(core::MetadataTypeId(id), input)
        })
        .map(Into::into)
    }

    /// The choices of a metadata type's lookup (rendered for `document`), or None.
    #[pyo3(signature = (id, *, document = None))]
    fn lookup_choices(
        &self,
        py: Python<'_>,
        id: i64,
        document: Option<i64>,
    ) -> PyResult<Option<Vec<String>>> {
        run(py, || {
            self.inner
                .lookup_choices(core::MetadataTypeId(id), document.map(core::DocumentId))
        })
    }

    /// One document type.
    fn document_type(&self, py: Python<'_>, id: i64) -> PyResult<DocumentType> {
        run(py, || self.inner.document_type(core::DocumentTypeId(id))).map(Into::into)
    }

    /// Renames a document type.
    fn update_document_type(
        &self,
        py: Python<'_>,
        id: i64,
        label: String,
    ) -> PyResult<DocumentType> {
        run(py, || {
            self.inner
                .update_document_type(core::DocumentTypeId(id), &label)
        })
        .map(Into::into)
    }

    /// Deletes a document type without documents.
    fn delete_document_type(&self, py: Python<'_>, id: i64) -> PyResult<()> {
        run(py, || {
            self.inner.delete_document_type(core::DocumentTypeId(id))
        })
    }

    /// The associations of a document type as `(association_id, metadata_type_id, required)`.
    fn associations(&self, py: Python<'_>, document_type: i64) -> PyResult<Vec<(i64, i64, bool)>> {
        run(py, || {
            self.inner.associations(core::DocumentTypeId(document_type))
        })
        .map(|all| {
            all.into_iter()
                .map(|a| (a.id.0, a.metadata_type_id.0, a.required))
                .collect()
        })
    }

    /// Makes an association required or optional (spec 2.4 rules 1-2).
    fn update_association(
        &self,
        py: Python<'_>,
        document_type: i64,
        association: i64,
        required: bool,
    ) -> PyResult<()> {
        run(py, || {
            self.inner.update_association(
                core::DocumentTypeId(document_type),
                core::AssociationId(association),
                required,
            )
        })
        .map(drop)
    }

    /// Removes an association (its values are removed by a durable task).
    fn delete_association(
        &self,
        py: Python<'_>,
        document_type: i64,
        association: i64,
    ) -> PyResult<()> {
        run(py, || {
            self.inner.delete_association(
                core::DocumentTypeId(document_type),
                core::AssociationId(association),
            )
        })
    }

    // ----- documents and values --------------------------------------------------------------

    /// Creates a document with metadata values `{metadata_type_id: value}` (spec 2.10 each).
    #[pyo3(signature = (document_type, label, *, values = None))]
    fn create_document(
        &self,
        py: Python<'_>,
        document_type: i64,
        label: String,
        values: Option<std::collections::BTreeMap<i64, String>>,
    ) -> PyResult<Document> {
        let values = values.unwrap_or_default();
        run(py, || {
            let pairs: Vec<(core::MetadataTypeId, &str)> = values
                .iter()
                .map(|(t, v)| (core::MetadataTypeId(*t), v.as_str()))
                .collect();
            self.inner
                .create_document(core::DocumentTypeId(document_type), &label, &pairs)
        })
        .map(Into::into)
    }

    /// One document.
    fn document(&self, py: Python<'_>, id: i64) -> PyResult<Document> {
        run(py, || self.inner.document(core::DocumentId(id))).map(Into::into)
    }

    /// The documents this session may view (optionally of one type), fetched lazily in pages.
    #[pyo3(signature = (*, document_type = None))]
    fn documents(&self, document_type: Option<i64>) -> DocumentIterator {
        DocumentIterator {
            session: self.inner.clone(),
            of_type: document_type.map(core::DocumentTypeId),
            state: parking_lot::Mutex::new((core::DocumentId(0), Vec::new(), false)),
        }
    }

    /// Renames a document.
    fn update_document(&self, py: Python<'_>, id: i64, label: String) -> PyResult<Document> {
        run(py, || {
            self.inner.update_document(core::DocumentId(id), &label)
        })
        .map(Into::into)
    }

    /// Changes a document's type (spec 2.4 rule 4).
    fn change_document_type(
        &self,
        py: Python<'_>,
        document: i64,
        document_type: i64,
    ) -> PyResult<Document> {
        run(py, || {
            self.inner.change_document_type(
                core::DocumentId(document),
                core::DocumentTypeId(document_type),
            )
        })
        .map(Into::into)
    }

    /// Deletes a document with its metadata, files and workflow instances.
    fn delete_document(&self, py: Python<'_>, id: i64) -> PyResult<()> {
        run(py, || self.inner.delete_document(core::DocumentId(id)))
    }

    /// Adds a metadata value (spec 2.10).
    fn add_metadata(
        &self,
        py: Python<'_>,
        document: i64,
        metadata_type: i64,
        value: String,
    ) -> PyResult<DocumentMetadata> {
        run(py, || {
            self.inner.add_document_metadata(
                core::DocumentId(document),
                core::MetadataTypeId(metadata_type),
                &value,
            )
        })
        .map(Into::into)
    }

    /// Sets a value; an empty value re-applies the default.
    fn edit_metadata(
        &self,
        py: Python<'_>,
        document: i64,
        metadata_id: i64,
        value: String,
    ) -> PyResult<DocumentMetadata> {
        run(py, || {
            self.inner.edit_document_metadata(
                core::DocumentId(document),
                core::DocumentMetadataId(metadata_id),
                &value,
            )
        })
        .map(Into::into)
    }

    /// Removes a value.
    fn remove_metadata(&self, py: Python<'_>, document: i64, metadata_id: i64) -> PyResult<()> {
        run(py, || {
            self.inner.remove_document_metadata(
                core::DocumentId(document),
                core::DocumentMetadataId(metadata_id),
            )
        })
    }

    /// The values of a document this session may view.
    fn metadata(&self, py: Python<'_>, document: i64) -> PyResult<Vec<DocumentMetadata>> {
        run(py, || {
            self.inner
                .document_metadata_list(core::DocumentId(document))
        })
        .map(all)
    }

    /// `document.metadata_value_of.<name>` (spec 2.3), or None.
    fn metadata_value_of(
        &self,
        py: Python<'_>,
        document: i64,
        name: String,
    ) -> PyResult<Option<String>> {
        run(py, || {
            self.inner
                .metadata_value_of(core::DocumentId(document), &name)
        })
    }

    // ----- files -----------------------------------------------------------------------------

    /// Stores `data` as a new file of `document`.
    fn add_file(
        &self,
        py: Python<'_>,
        document: i64,
        filename: String,
        data: Vec<u8>,
    ) -> PyResult<DocumentFile> {
        run(py, || {
            self.inner
                .add_file(core::DocumentId(document), &filename, &mut data.as_slice())
        })
        .map(Into::into)
    }

    /// Stores the file at `path` (streamed from disk) as a new file of `document`.
    #[pyo3(signature = (document, path, *, filename = None))]
    fn add_file_from_path(
        &self,
        py: Python<'_>,
        document: i64,
        path: PathBuf,
        filename: Option<String>,
    ) -> PyResult<DocumentFile> {
        let name = filename.unwrap_or_else(|| {
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        run(py, || {
            let mut f = std::fs::File::open(&path)
                .map_err(|e| core::Error::storage(format!("opening {}", path.display()), e))?;
            self.inner
                .add_file(core::DocumentId(document), &name, &mut f)
        })
        .map(Into::into)
    }

    /// The files of a document.
    fn files(&self, py: Python<'_>, document: i64) -> PyResult<Vec<DocumentFile>> {
        run(py, || self.inner.files(core::DocumentId(document))).map(all)
    }

    /// A file's whole content, checked against its SHA-256.
    fn read_file<'py>(&self, py: Python<'py>, id: i64) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = run(py, || self.inner.read_file(core::DocumentFileId(id)))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Streams a file's content into the file at `path` (checked against its SHA-256).
    fn save_file(&self, py: Python<'_>, id: i64, path: PathBuf) -> PyResult<u64> {
        run(py, || {
            let (_, mut content) = self.inner.open_file(core::DocumentFileId(id))?;
            let mut out = std::fs::File::create(&path)
                .map_err(|e| core::Error::storage(format!("creating {}", path.display()), e))?;
            std::io::copy(&mut content, &mut out)
                .map_err(|e| core::files::menc::io_error("saving a document file", e))
        })
    }

    /// Deletes a file.
    fn delete_file(&self, py: Python<'_>, id: i64) -> PyResult<()> {
        run(py, || self.inner.delete_file(core::DocumentFileId(id)))
    }

    // ----- users, groups, roles, permissions, ACLs --------------------------------------------

    /// Creates a user.
    #[pyo3(signature = (username, password, *, superuser = false))]
    fn create_user(
        &self,
        py: Python<'_>,
        username: String,
        password: String,
        superuser: bool,
    ) -> PyResult<User> {
        run(py, || {
            self.inner.create_user(&username, &password, superuser)
        })
        .map(Into::into)
    }

    /// The users this session may view.
    fn users(&self, py: Python<'_>) -> PyResult<Vec<User>> {
        run(py, || self.inner.users()).map(all)
    }

    /// Changes a user's username, password, superuser status or activity, all or nothing.
    #[pyo3(signature = (id, *, username = None, password = None, is_superuser = None, is_active = None))]
    fn update_user(
        &self,
        py: Python<'_>,
        id: i64,
        username: Option<String>,
        password: Option<String>,
        is_superuser: Option<bool>,
        is_active: Option<bool>,
    ) -> PyResult<User> {
        let update = core::UserUpdate {
            username,
            password,
            is_superuser,
            is_active,
        };
        run(py, || self.inner.update_user(core::UserId(id), update)).map(Into::into)
    }

    /// Sets a user's password.
    fn set_password(&self, py: Python<'_>, id: i64, password: String) -> PyResult<()> {
        run(py, || self.inner.set_password(core::UserId(id), &password))
    }

    /// Deletes a user.
    fn delete_user(&self, py: Python<'_>, id: i64) -> PyResult<()> {
        run(py, || self.inner.delete_user(core::UserId(id)))
    }

    /// The groups, as `(id, name)`.
    fn groups(&self, py: Python<'_>) -> PyResult<Vec<(i64, String)>> {
        run(py, || self.inner.groups()).map(|all| all.into_iter().map(|(g, n)| (g.0, n)).collect())
    }

    /// The members of a group (user ids).
    fn group_members(&self, py: Python<'_>, group: i64) -> PyResult<Vec<i64>> {
        run(py, || self.inner.group_members(core::GroupId(group)))
            .map(|all| all.into_iter().map(|u| u.0).collect())
    }

    /// Renames a group.
    fn rename_group(&self, py: Python<'_>, id: i64, name: String) -> PyResult<()> {
        run(py, || self.inner.rename_group(core::GroupId(id), &name))
    }

    /// Deletes a group.
    fn delete_group(&self, py: Python<'_>, id: i64) -> PyResult<()> {
        run(py, || self.inner.delete_group(core::GroupId(id)))
    }

    /// The roles, as `(id, label)`.
    fn roles(&self, py: Python<'_>) -> PyResult<Vec<(i64, String)>> {
        run(py, || self.inner.roles()).map(|all| all.into_iter().map(|(r, l)| (r.0, l)).collect())
    }

    /// The groups a role is assigned to.
    fn role_groups(&self, py: Python<'_>, role: i64) -> PyResult<Vec<i64>> {
        run(py, || self.inner.role_groups(core::RoleId(role)))
            .map(|all| all.into_iter().map(|g| g.0).collect())
    }

    /// A role's global permissions (keys).
    fn role_permissions(&self, py: Python<'_>, role: i64) -> PyResult<Vec<String>> {
        run(py, || self.inner.role_permissions(core::RoleId(role)))
            .map(|all| all.into_iter().map(|p| p.key().to_owned()).collect())
    }

    /// Renames a role.
    fn rename_role(&self, py: Python<'_>, id: i64, label: String) -> PyResult<()> {
        run(py, || self.inner.rename_role(core::RoleId(id), &label))
    }

    /// Deletes a role.
    fn delete_role(&self, py: Python<'_>, id: i64) -> PyResult<()> {
        run(py, || self.inner.delete_role(core::RoleId(id)))
    }

    /// Creates a group; returns its id.
    fn create_group(&self, py: Python<'_>, name: String) -> PyResult<i64> {
        run(py, || self.inner.create_group(&name)).map(|g| g.0)
    }

    /// Adds (or removes) a user to a group.
    #[pyo3(signature = (group, user, *, member = true))]
    fn set_group_member(
        &self,
        py: Python<'_>,
        group: i64,
        user: i64,
        member: bool,
    ) -> PyResult<()> {
        run(py, || {
            self.inner
                .set_group_member(core::GroupId(group), core::UserId(user), member)
        })
    }

    /// Creates a role; returns its id.
    fn create_role(&self, py: Python<'_>, label: String) -> PyResult<i64> {
        run(py, || self.inner.create_role(&label)).map(|r| r.0)
    }

    /// Assigns (or unassigns) a role to a group.
    #[pyo3(signature = (role, group, *, assigned = true))]
    fn set_role_group(
        &self,
        py: Python<'_>,
        role: i64,
        group: i64,
        assigned: bool,
    ) -> PyResult<()> {
        run(py, || {
            self.inner
                .set_role_group(core::RoleId(role), core::GroupId(group), assigned)
        })
    }

    /// Grants a permission to a role globally.
    fn grant_global(&self, py: Python<'_>, permission: &str, role: i64) -> PyResult<()> {
        let p = self::permission(permission)?;
        run(py, || self.inner.grant_global(p, core::RoleId(role)))
    }

    /// Revokes a global permission.
    fn revoke_global(&self, py: Python<'_>, permission: &str, role: i64) -> PyResult<()> {
        let p = self::permission(permission)?;
        run(py, || self.inner.revoke_global(p, core::RoleId(role)))
    }

    /// Grants `permission` to `role` on the object `kind` `object_id` (an ACL).
    fn grant(
        &self,
        py: Python<'_>,
        permission: &str,
        role: i64,
        kind: &str,
        object_id: i64,
    ) -> PyResult<Acl> {
        let p = self::permission(permission)?;
        let object = self.object(kind, object_id)?;
        run(py, || self.inner.grant(p, core::RoleId(role), object)).map(Into::into)
    }

    /// Revokes it; returns the ACL, or None when it was left empty and deleted.
    fn revoke(
        &self,
        py: Python<'_>,
        permission: &str,
        role: i64,
        kind: &str,
        object_id: i64,
    ) -> PyResult<Option<Acl>> {
        let p = self::permission(permission)?;
        let object = self.object(kind, object_id)?;
        run(py, || self.inner.revoke(p, core::RoleId(role), object)).map(|a| a.map(Into::into))
    }

    /// The ACLs of an object.
    fn acls(&self, py: Python<'_>, kind: &str, object_id: i64) -> PyResult<Vec<Acl>> {
        let object = self.object(kind, object_id)?;
        run(py, || self.inner.acls(object)).map(all)
    }

    /// Whether this session may do `permission` on the object.
    fn can(&self, permission: &str, kind: &str, object_id: i64) -> PyResult<bool> {
        Ok(self
            .inner
            .can(self::permission(permission)?, self.object(kind, object_id)?))
    }

    // ----- cabinets, events, tasks -------------------------------------------------------------

    /// Creates a cabinet (under `parent`).
    #[pyo3(signature = (label, *, parent = None))]
    fn create_cabinet(
        &self,
        py: Python<'_>,
        label: String,
        parent: Option<i64>,
    ) -> PyResult<Cabinet> {
        run(py, || {
            self.inner
                .create_cabinet(&label, parent.map(core::CabinetId))
        })
        .map(Into::into)
    }

    /// The cabinets this session may view.
    fn cabinets(&self, py: Python<'_>) -> PyResult<Vec<Cabinet>> {
        run(py, || self.inner.cabinets()).map(all)
    }

    /// Puts a document into (or takes it out of) a cabinet.
    #[pyo3(signature = (cabinet, document, *, member = true))]
    fn set_cabinet_document(
        &self,
        py: Python<'_>,
        cabinet: i64,
        document: i64,
        member: bool,
    ) -> PyResult<()> {
        run(py, || {
            self.inner.set_cabinet_document(
                core::CabinetId(cabinet),
                core::DocumentId(document),
                member,
            )
        })
    }

    /// Renames a cabinet.
    fn rename_cabinet(&self, py: Python<'_>, id: i64, label: String) -> PyResult<Cabinet> {
        run(py, || {
            self.inner.rename_cabinet(core::CabinetId(id), &label)
        })
        .map(Into::into)
    }

    /// Deletes a cabinet (and its sub-cabinets).
    fn delete_cabinet(&self, py: Python<'_>, id: i64) -> PyResult<()> {
        run(py, || self.inner.delete_cabinet(core::CabinetId(id)))
    }

    /// The documents in a cabinet (ids).
    fn cabinet_documents(&self, py: Python<'_>, id: i64) -> PyResult<Vec<i64>> {
        run(py, || self.inner.cabinet_documents(core::CabinetId(id)))
            .map(|all| all.into_iter().map(|d| d.0).collect())
    }

    /// Events whose target this session may view, newest first.
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

    // ----- search ----------------------------------------------------------------------------

    /// Documents matching `query` (spec 2.5) that this session may view.
    #[pyo3(signature = (query, *, page = 1, page_size = 20))]
    fn search_documents(
        &self,
        py: Python<'_>,
        query: String,
        page: usize,
        page_size: usize,
    ) -> PyResult<DocumentPage> {
        let p = run(py, || self.inner.search_documents(&query, page, page_size))?;
        Ok(DocumentPage {
            count: p.count,
            results: all(p.results),
        })
    }

    /// Metadata values matching `query` (spec 2.5's DocumentMetadataSearchResult).
    #[pyo3(signature = (query, *, page = 1, page_size = 20))]
    fn search_metadata(
        &self,
        py: Python<'_>,
        query: String,
        page: usize,
        page_size: usize,
    ) -> PyResult<MetadataPage> {
        let p = run(py, || self.inner.search_metadata(&query, page, page_size))?;
        Ok(MetadataPage {
            count: p.count,
            results: all(p.results),
        })
    }

    // ----- workflows -------------------------------------------------------------------------

    /// Creates a workflow template bound to document types.
    #[pyo3(signature = (label, *, document_types = Vec::new()))]
    fn create_workflow(
        &self,
        py: Python<'_>,
        label: String,
        document_types: Vec<i64>,
    ) -> PyResult<Workflow> {
        let types: Vec<core::DocumentTypeId> = document_types
            .into_iter()
            .map(core::DocumentTypeId)
            .collect();
        run(py, || self.inner.create_workflow(&label, &types)).map(Into::into)
    }

    /// The workflows this session may view.
    fn workflows(&self, py: Python<'_>) -> PyResult<Vec<Workflow>> {
        run(py, || self.inner.workflows()).map(all)
    }

    /// Adds a state (`initial`: where instances start).
    #[pyo3(signature = (workflow, label, *, initial = false))]
    fn create_workflow_state(
        &self,
        py: Python<'_>,
        workflow: i64,
        label: String,
        initial: bool,
    ) -> PyResult<WorkflowState> {
        run(py, || {
            self.inner
                .create_workflow_state(core::WorkflowId(workflow), &label, initial)
        })
        .map(Into::into)
    }

    /// Adds a transition with an optional condition template.
    #[pyo3(signature = (workflow, label, origin, destination, *, condition = String::new()))]
    fn create_workflow_transition(
        &self,
        py: Python<'_>,
        workflow: i64,
        label: String,
        origin: i64,
        destination: i64,
        condition: String,
    ) -> PyResult<WorkflowTransition> {
        run(py, || {
            self.inner.create_workflow_transition(
                core::WorkflowId(workflow),
                &label,
                core::WorkflowStateId(origin),
                core::WorkflowStateId(destination),
                &condition,
            )
        })
        .map(Into::into)
    }

    /// Makes an event (`document_metadata_added|edited|removed`) fire a transition.
    fn add_workflow_trigger(
        &self,
        py: Python<'_>,
        workflow: i64,
        transition: i64,
        event: String,
    ) -> PyResult<WorkflowTransition> {
        run(py, || {
            self.inner.add_workflow_trigger(
                core::WorkflowId(workflow),
                core::WorkflowTransitionId(transition),
                &event,
            )
        })
        .map(Into::into)
    }

    /// Adds an action to a state. `action` is a dict such as `{"type": "edit_metadata",
    /// "metadata_type_id": 3, "value": "{{ now.year }}"}`. Returns the action's id.
    #[pyo3(signature = (workflow, state, label, action, *, on_entry = true, critical = false))]
    #[allow(clippy::too_many_arguments)]
    fn create_workflow_action(
        &self,
        py: Python<'_>,
        workflow: i64,
        state: i64,
        label: String,
        action: &Bound<'_, PyAny>,
        on_entry: bool,
        critical: bool,
    ) -> PyResult<i64> {
        let json: String = py
            .import("json")?
            .call_method1("dumps", (action,))?
            .extract()?;
        let action: ActionKind = serde_json::from_str(&json)
            .map_err(|e| ValidationError::new_err(format!("not a valid action: {e}")))?;
        run(py, || {
            self.inner.create_workflow_action(
                core::WorkflowId(workflow),
                core::WorkflowStateId(state),
                &label,
                on_entry,
                critical,
                action,
            )
        })
        .map(|a| a.id.0)
    }

    /// The workflow instances of a document.
    fn workflow_instances(&self, py: Python<'_>, document: i64) -> PyResult<Vec<WorkflowInstance>> {
        run(py, || {
            self.inner.workflow_instances(core::DocumentId(document))
        })
        .map(all)
    }

    /// Takes a transition by hand.
    #[pyo3(signature = (document, instance, transition, *, comment = String::new()))]
    fn transition_workflow(
        &self,
        py: Python<'_>,
        document: i64,
        instance: i64,
        transition: i64,
        comment: String,
    ) -> PyResult<WorkflowLogEntry> {
        run(py, || {
            self.inner.transition_workflow(
                core::DocumentId(document),
                core::WorkflowInstanceId(instance),
                core::WorkflowTransitionId(transition),
                &comment,
            )
        })
        .map(Into::into)
    }

    /// The transitions an instance may take now.
    fn available_transitions(
        &self,
        py: Python<'_>,
        document: i64,
        instance: i64,
    ) -> PyResult<Vec<WorkflowTransition>> {
        run(py, || {
            self.inner.available_transitions(
                core::DocumentId(document),
                core::WorkflowInstanceId(instance),
            )
        })
        .map(all)
    }

    /// The states of a workflow.
    fn workflow_states(&self, py: Python<'_>, workflow: i64) -> PyResult<Vec<WorkflowState>> {
        run(py, || {
            self.inner.workflow_states(core::WorkflowId(workflow))
        })
        .map(all)
    }

    /// The transitions of a workflow.
    fn workflow_transitions(
        &self,
        py: Python<'_>,
        workflow: i64,
    ) -> PyResult<Vec<WorkflowTransition>> {
        run(py, || {
            self.inner.workflow_transitions(core::WorkflowId(workflow))
        })
        .map(all)
    }

    /// Renames a workflow and/or rebinds its document types.
    #[pyo3(signature = (workflow, *, label = None, document_types = None))]
    fn update_workflow(
        &self,
        py: Python<'_>,
        workflow: i64,
        label: Option<String>,
        document_types: Option<Vec<i64>>,
    ) -> PyResult<Workflow> {
        let types: Option<Vec<core::DocumentTypeId>> =
            document_types.map(|t| t.into_iter().map(core::DocumentTypeId).collect());
        run(py, || {
            self.inner.update_workflow(
                core::WorkflowId(workflow),
                label.as_deref(),
                types.as_deref(),
            )
        })
        .map(Into::into)
    }

    /// Removes a trigger from a transition.
    fn remove_workflow_trigger(
        &self,
        py: Python<'_>,
        workflow: i64,
        transition: i64,
        event: String,
    ) -> PyResult<WorkflowTransition> {
        run(py, || {
            self.inner.remove_workflow_trigger(
                core::WorkflowId(workflow),
                core::WorkflowTransitionId(transition),
                &event,
            )
        })
        .map(Into::into)
    }

    /// Deletes an action of a state.
    fn delete_workflow_action(
        &self,
        py: Python<'_>,
        workflow: i64,
        state: i64,
        action: i64,
    ) -> PyResult<()> {
        run(py, || {
            self.inner.delete_workflow_action(
                core::WorkflowId(workflow),
                core::WorkflowStateId(state),
                core::WorkflowActionId(action),
            )
        })
    }

    /// Deletes a workflow with its states, transitions, actions, instances and logs.
    fn delete_workflow(&self, py: Python<'_>, workflow: i64) -> PyResult<()> {
        run(py, || {
            self.inner.delete_workflow(core::WorkflowId(workflow))
        })
    }

    /// An instance's log, oldest first.
    fn workflow_log(
        &self,
        py: Python<'_>,
        document: i64,
        instance: i64,
    ) -> PyResult<Vec<WorkflowLogEntry>> {
        run(py, || {
            self.inner.workflow_log(
                core::DocumentId(document),
                core::WorkflowInstanceId(instance),
            )
        })
        .map(all)
    }
}

impl Session {
    fn object(&self, kind: &str, id: i64) -> PyResult<ObjectRef> {
        let kind = self.inner.docmeta().parse_kind(kind).map_err(py_err)?;
        Ok(ObjectRef::new(kind, id))
    }
}

/// Iterates over documents, fetching them in pages of 500.
#[pyclass(module = "docmeta")]
pub struct DocumentIterator {
    session: core::Session,
    of_type: Option<core::DocumentTypeId>,
    state: parking_lot::Mutex<(core::DocumentId, Vec<core::Document>, bool)>,
}

#[pymethods]
impl DocumentIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Document>> {
        let mut state = self.state.lock();
        if state.1.is_empty() && !state.2 {
            let after = state.0;
            let page = run(py, || self.session.documents(self.of_type, after, 500))?;
            state.2 = page.len() < 500;
            if let Some(last) = page.last() {
                state.0 = last.id;
            }
            state.1 = page.into_iter().rev().collect();
        }
        Ok(state.1.pop().map(Into::into))
    }
}

#[pymodule]
fn _docmeta(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Docmeta>()?;
    m.add_class::<Session>()?;
    m.add_class::<DocumentIterator>()?;
    m.add_class::<MetadataType>()?;
    m.add_class::<DocumentType>()?;
    m.add_class::<Document>()?;
    m.add_class::<DocumentMetadata>()?;
    m.add_class::<DocumentFile>()?;
    m.add_class::<User>()?;
    m.add_class::<Acl>()?;
    m.add_class::<Event>()?;
    m.add_class::<Cabinet>()?;
    m.add_class::<Task>()?;
    m.add_class::<Workflow>()?;
    m.add_class::<WorkflowState>()?;
    m.add_class::<WorkflowTransition>()?;
    m.add_class::<WorkflowInstance>()?;
    m.add_class::<WorkflowLogEntry>()?;
    m.add_class::<DocumentPage>()?;
    m.add_class::<MetadataPage>()?;
    m.add_function(wrap_pyfunction!(verify_backup, m)?)?;
    m.add_function(wrap_pyfunction!(restore, m)?)?;
    m.add("Error", py.get_type::<Error>())?;
    m.add("ValidationError", py.get_type::<ValidationError>())?;
    m.add("PermissionDenied", py.get_type::<PermissionDenied>())?;
    m.add("NotFound", py.get_type::<NotFound>())?;
    m.add("Conflict", py.get_type::<Conflict>())?;
    m.add("InvalidInput", py.get_type::<InvalidInput>())?;
    m.add("DecryptionError", py.get_type::<DecryptionError>())?;
    m.add("StorageError", py.get_type::<StorageError>())?;
    m.add("StorageFull", py.get_type::<StorageFull>())?;
    m.add("DeadlineExceeded", py.get_type::<DeadlineExceeded>())?;
    Ok(())
}
