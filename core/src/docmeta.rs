//! The [`Docmeta`] handle: the store, the shared template environment, the class registry, the
//! access snapshot, subscribers and the task worker, and the unit of work every change runs in.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::Utc;
use parking_lot::{Condvar, Mutex, RwLock};
use rustc_hash::FxHashMap;

use crate::access::{
    AccessSnapshot, Explanation, KindRegistry, KnownParents, ObjectKind, ObjectRef, ParentSource,
    Permission, PermissionSet,
};
use crate::config::StorageBackend;
use crate::config::{Config, load_or_create_secret_key};
use crate::error::{Error, NON_FIELD_ERRORS, Result};
use crate::events::{Event, EventObject, EventQuery};
use crate::files::menc::{KdfParams, KeyCheck, Keyring, Password};
use crate::files::{EncryptedStorage, FileStorage, MemoryStorage, PlainStorage};
use crate::metadata::{ClassRegistry, CompiledMetadataType, TemplateEngine};
use crate::model::*;
use crate::session::Session;
use crate::store::{Mode, SqliteStore, Store, Tx};
use crate::tasks::Worker;

/// Whether an event (by name) changes what the access snapshot holds: principals, roles,
/// ACLs, or the parent links of documents and cabinets.
fn changes_access(name: &str) -> bool {
    use crate::events::names::*;
    [
        ACL_CREATED,
        ACL_EDITED,
        ACL_DELETED,
        ROLE_EDITED,
        USER_EDITED,
        GROUP_EDITED,
        CABINET_EDITED,
        DOCUMENT_CREATED,
        DOCUMENT_TYPE_CHANGED,
        DOCUMENT_DELETED,
        DOCUMENT_TYPE_DELETED,
        METADATA_TYPE_DELETED,
    ]
    .contains(&name)
}

/// The environment variable that gives the encrypted storage's password.
pub const PASSWORD_VARIABLE: &str = "DOCMETA_STORAGE_PASSWORD";

/// `DATA/.lock`: every open instance holds it shared; a restore holds it exclusively, so it
/// never replaces a directory a running server uses.
#[derive(Debug)]
pub(crate) struct DataLock(#[allow(dead_code)] std::fs::File);

impl DataLock {
    fn open_file(dir: &Path) -> Result<std::fs::File> {
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::storage(format!("creating the data directory {}", dir.display()), e)
        })?;
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(".lock"))
            .map_err(|e| match e.kind() {
                // Said at start, in words, rather than as the first failed write of a request.
                std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied => {
                    Error::InvalidInput(format!(
                        "the data directory {} is not writable ({}): docmeta writes its \
                         database, document files and search index there",
                        dir.display(),
                        if e.kind() == std::io::ErrorKind::ReadOnlyFilesystem {
                            "read-only file system"
                        } else {
                            "permission denied"
                        }
                    ))
                }
                _ => Error::storage("opening the data directory's lock file", e),
            })
    }

    /// Held while the instance is open.
    pub(crate) fn shared(dir: &Path) -> Result<DataLock> {
        let file = Self::open_file(dir)?;
        file.try_lock_shared().map_err(|_| Error::Conflict {
            field: NON_FIELD_ERRORS.to_owned(),
            message: format!(
                "{} is being restored; try again when the restore has finished",
                dir.display()
            ),
        })?;
        Ok(DataLock(file))
    }

    /// Held by a restore: refused while any instance has the directory open.
    pub(crate) fn exclusive(dir: &Path) -> Result<DataLock> {
        let file = Self::open_file(dir)?;
        file.try_lock().map_err(|_| Error::Conflict {
            field: NON_FIELD_ERRORS.to_owned(),
            message: format!(
                "{} is in use (a docmeta server or command has it open); stop it first",
                dir.display()
            ),
        })?;
        Ok(DataLock(file))
    }
}

/// A change to the access snapshot, applied right after the transaction that made it commits.
#[derive(Debug, Clone)]
pub(crate) enum AccessChange {
    User {
        id: UserId,
        superuser: bool,
        active: bool,
    },
    UserRemoved(UserId),
    Membership {
        group: GroupId,
        user: UserId,
        member: bool,
    },
    RoleGroup {
        role: RoleId,
        group: GroupId,
        assigned: bool,
    },
    RolePermissions {
        role: RoleId,
        permissions: PermissionSet,
    },
    RoleRemoved(RoleId),
    GroupRemoved(GroupId),
    Acl {
        object: ObjectRef,
        acl: AclId,
        role: RoleId,
        permissions: PermissionSet,
    },
    Parents {
        object: ObjectRef,
        parents: Vec<ObjectRef>,
    },
    ObjectRemoved(ObjectRef),
}

/// A subscriber to committed events.
pub type Subscriber = Arc<dyn Fn(&Event) + Send + Sync + 'static>;

/// Identifies a subscription, to cancel it with [`Docmeta::unsubscribe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubscriptionId(u64);

pub(crate) struct Inner {
    pub(crate) store: Box<dyn Store>,
    pub(crate) data_dir: Option<PathBuf>,
    pub(crate) config: Config,
    pub(crate) secret_key: Vec<u8>,
    pub(crate) templates: TemplateEngine,
    pub(crate) classes: ClassRegistry,
    pub(crate) kinds: RwLock<KindRegistry>,
    pub(crate) access: RwLock<AccessSnapshot>,
    compiled: RwLock<FxHashMap<MetadataTypeId, Arc<CompiledMetadataType>>>,
    compiled_generation: AtomicU64,
    subscribers: RwLock<Vec<(SubscriptionId, Subscriber)>>,
    next_subscription: AtomicU64,
    pub(crate) task_signal: (Mutex<bool>, Condvar),
    pub(crate) search: crate::search::home::SearchHome,
    pub(crate) files: Arc<dyn FileStorage>,
    _lock: Option<DataLock>,
    /// The newest event the access snapshot reflects (another process's later changes are
    /// picked up by `follow_access`).
    access_cursor: std::sync::atomic::AtomicI64,
    /// Access-changing events this process committed (already applied) after the cursor.
    local_access_events: Mutex<Vec<i64>>,
    /// Bumped whenever a user is created, edited or deleted, here or (followed) in another
    /// process: see [`Docmeta::credentials_epoch`].
    credentials_epoch: AtomicU64,
    pub(crate) search_lock: Mutex<()>,
    pub(crate) search_rebuilding: std::sync::atomic::AtomicBool,
    pub(crate) shutdown: std::sync::atomic::AtomicBool,
}

/// A docmeta instance: open it once per process and share it (it is cheap to clone).
///
/// ```
/// use docmeta_core::{Docmeta, MetadataTypeInput};
///
/// let db = Docmeta::in_memory()?;
/// let admin = db.system();
/// let invoices = admin.create_document_type("Invoice")?;
/// let due = admin.create_metadata_type(
///     MetadataTypeInput::new("due", "Due date")
///         .parser("svc.apps.metadata.metadata_parsers.DateParser", ""),
/// )?;
/// admin.associate(invoices.id, due.id, true)?;
/// let doc = admin.create_document(invoices.id, "INV-1", &[(due.id, "31/12/2024")])?;
/// assert_eq!(admin.metadata_value_of(doc.id, "due")?.as_deref(), Some("2024-12-31"));
/// # Ok::<(), docmeta_core::Error>(())
/// ```
#[derive(Clone)]
pub struct Docmeta {
    pub(crate) inner: Arc<Inner>,
    _worker: Option<Arc<Worker>>,
    /// Units of work of this handle (and of its sessions) roll back instead of committing
    /// once this instant has passed (see [`Docmeta::with_deadline`]).
    deadline: Option<std::time::Instant>,
}

impl std::fmt::Debug for Docmeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Docmeta")
            .field("store", &self.inner.store.describe())
            .finish_non_exhaustive()
    }
}

/// Builds a [`Docmeta`] with non-default parts.
pub struct Builder {
    data_dir: Option<PathBuf>,
    store: Option<Box<dyn Store>>,
    classes: ClassRegistry,
    kinds: KindRegistry,
    worker: bool,
    config: Option<Config>,
    files: Option<Arc<dyn FileStorage>>,
    storage_password: Option<Password>,
    #[cfg(feature = "postgres")]
    postgres_url: Option<String>,
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("data_dir", &self.data_dir)
            .field("worker", &self.worker)
            .finish_non_exhaustive()
    }
}

impl Builder {
    /// Uses `dir` as the data directory (MEDIA_ROOT), created if missing.
    pub fn data_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.data_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Uses `store` instead of the data directory's SQLite database.
    pub fn store(mut self, store: impl Store) -> Self {
        self.store = Some(Box::new(store));
        self
    }

    /// Uses these validator and parser classes (the built-ins plus an application's own).
    pub fn classes(mut self, classes: ClassRegistry) -> Self {
        self.classes = classes;
        self
    }

    /// Uses these object kinds (the built-ins plus an application's own, see
    /// [`KindRegistry::register`]).
    pub fn kinds(mut self, kinds: KindRegistry) -> Self {
        self.kinds = kinds;
        self
    }

    /// Whether a background thread runs durable tasks (default: on for a data directory, off
    /// in memory). Without it, call [`Docmeta::run_pending_tasks`].
    pub fn worker(mut self, on: bool) -> Self {
        self.worker = on;
        self
    }

    /// Overrides `config.yml`.
    pub fn config(mut self, config: Config) -> Self {
        self.config = Some(config);
        self
    }

    /// The encrypted storage's password (otherwise `DOCMETA_STORAGE_PASSWORD`, then the
    /// configured `storage_password_file`).
    pub fn storage_password(mut self, password: impl Into<Vec<u8>>) -> Self {
        self.storage_password = Some(Password::new(password));
        self
    }

    /// Uses the PostgreSQL database at `url` (connected when the instance opens) instead of
    /// the data directory's SQLite file. Several processes may share it: each follows the
    /// others' changes through the event log (see `Config::access_refresh_ms`).
    #[cfg(feature = "postgres")]
    pub fn postgres(mut self, url: &str) -> Self {
        self.postgres_url = Some(url.to_owned());
        self
    }

    /// Stores document files in `storage` instead of the configured one.
    pub fn file_storage(mut self, storage: impl FileStorage + 'static) -> Self {
        self.files = Some(Arc::new(storage));
        self
    }

    fn password(&self, config: &Config, dir: Option<&Path>) -> Result<Password> {
        if let Some(p) = &self.storage_password {
            return Ok(p.clone());
        }
        if let Ok(p) = std::env::var(PASSWORD_VARIABLE) {
            return Ok(Password::new(p));
        }
        let Some(path) = &config.storage_password_file else {
            return Err(Error::InvalidInput(format!(
                "the encrypted storage needs its password: set {PASSWORD_VARIABLE} or \
                 storage_password_file in config.yml"
            )));
        };
        if let (Some(dir), Ok(file)) = (dir, path.canonicalize())
            && let Ok(dir) = dir.canonicalize()
            && file.starts_with(&dir)
        {
            return Err(Error::InvalidInput(format!(
                "storage_password_file {} is inside the data directory: keep the key apart from \
                 the files it protects (and out of their backups)",
                path.display()
            )));
        }
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::storage(
                format!("reading storage_password_file {}", path.display()),
                e,
            )
        })?;
        let line = text.lines().next().unwrap_or("").trim_end();
        if line.is_empty() {
            return Err(Error::InvalidInput(format!(
                "storage_password_file {} is empty",
                path.display()
            )));
        }
        Ok(Password::new(line))
    }

    /// Opens the file storage of the data directory `dir` as configured there, which checks the
    /// storage password against `system/storage_key` (restore does this before it replaces
    /// anything).
    pub(crate) fn check_storage(&self, dir: &Path) -> Result<()> {
        let config = match &self.config {
            Some(c) => c.clone(),
            None => Config::load_or_create(dir)?,
        };
        self.file_storage_for(&config, Some(dir)).map(drop)
    }

    /// The configured file storage: plain, or MENC over plain with the master key derived (or
    /// checked against `system/storage_key`) now, once.
    fn file_storage_for(
        &self,
        config: &Config,
        dir: Option<&Path>,
    ) -> Result<Arc<dyn FileStorage>> {
        if let Some(f) = &self.files {
            return Ok(f.clone());
        }
        let plain: Arc<dyn FileStorage> = match dir {
            Some(dir) => Arc::new(PlainStorage::open(dir.join("document_file_storage"))?),
            None => Arc::new(MemoryStorage::default()),
        };
        if config.documents_file_storage_backend == StorageBackend::Plain {
            return Ok(plain);
        }
        let password = self.password(config, dir)?;
        let params = KdfParams {
            memory_kib: config.storage_kdf_memory_kib,
            iterations: config.storage_kdf_iterations,
            parallelism: 1,
        };
        let keyring = match dir.map(|d| d.join("system").join("storage_key")) {
            Some(path) if path.exists() => {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| Error::storage("reading system/storage_key", e))?;
                let check: KeyCheck = serde_json::from_str(&text).map_err(|e| {
                    Error::InvalidInput(format!("system/storage_key is damaged: {e}"))
                })?;
                Keyring::open(password, &check)?
            }
            path => {
                let (keyring, check) = Keyring::create(password, params)?;
                if let Some(path) = path {
                    let text = serde_json::to_string_pretty(&check)
                        .map_err(|e| Error::storage("writing system/storage_key", e))?;
                    let system = path.parent().unwrap_or(Path::new("."));
                    crate::files::write_atomically(system, &path, &mut text.as_bytes())
                        .map_err(|e| Error::storage("writing system/storage_key", e))?;
                }
                keyring
            }
        };
        Ok(Arc::new(EncryptedStorage::new(plain, Arc::new(keyring))))
    }

    /// Opens the instance.
    pub fn open(mut self) -> Result<Docmeta> {
        #[cfg(feature = "postgres")]
        if let Some(url) = self.postgres_url.take() {
            self.store = Some(Box::new(crate::store::PostgresStore::open(&url)?));
        }
        let lock = match &self.data_dir {
            Some(dir) => Some(DataLock::shared(dir)?),
            None => None,
        };
        let (store, secret_key, config) = match &self.data_dir {
            Some(dir) => {
                for sub in ["", "document_file_storage"] {
                    std::fs::create_dir_all(dir.join(sub)).map_err(|e| {
                        Error::storage(format!("creating the data directory {}", dir.display()), e)
                    })?;
                }
                let key = load_or_create_secret_key(dir)?;
                let config = match self.config.clone() {
                    Some(c) => c,
                    None => Config::load_or_create(dir)?,
                };
                let store: Box<dyn Store> = match self.store.take() {
                    Some(s) => s,
                    None => Box::new(SqliteStore::open(dir.join("db.sqlite3"))?),
                };
                (store, key, config)
            }
            None => {
                let store: Box<dyn Store> = match self.store.take() {
                    Some(s) => s,
                    None => Box::new(SqliteStore::in_memory()?),
                };
                let mut key = vec![0u8; 32];
                getrandom::fill(&mut key)
                    .map_err(|e| Error::storage("generating a key", e.to_string()))?;
                (store, key, self.config.clone().unwrap_or_default())
            }
        };
        store.migrate()?;
        let files = self.file_storage_for(&config, self.data_dir.as_deref())?;
        let search = crate::search::home::SearchHome::open(
            self.data_dir.as_ref().map(|d| d.join("search")).as_deref(),
        )?;
        let inner = Arc::new(Inner {
            store,
            data_dir: self.data_dir,
            config,
            secret_key,
            templates: TemplateEngine::new(),
            classes: self.classes,
            kinds: RwLock::new(self.kinds),
            access: RwLock::new(AccessSnapshot::default()),
            compiled: RwLock::new(FxHashMap::default()),
            compiled_generation: AtomicU64::new(0),
            subscribers: RwLock::new(Vec::new()),
            next_subscription: AtomicU64::new(1),
            task_signal: (Mutex::new(false), Condvar::new()),
            search,
            files,
            _lock: lock,
            access_cursor: std::sync::atomic::AtomicI64::new(0),
            local_access_events: Mutex::new(Vec::new()),
            credentials_epoch: AtomicU64::new(0),
            search_lock: Mutex::new(()),
            search_rebuilding: std::sync::atomic::AtomicBool::new(false),
            shutdown: std::sync::atomic::AtomicBool::new(false),
        });
        let mut db = Docmeta {
            inner,
            _worker: None,
            deadline: None,
        };
        db.reload_access()?;
        db.write_system(|tx| tx.requeue_running_tasks().map(drop))?;
        if self.worker {
            db._worker = Some(Arc::new(Worker::start(&db)));
        }
        Ok(db)
    }
}

/// Attempts of one unit of work that render templates before the write lock is taken (see
/// [`Docmeta::write`]); after that many, the rest render under the lock.
const RENDER_ATTEMPTS: usize = 4;

/// What a unit of work collects while it runs, applied after it commits.
pub(crate) struct Unit<'a> {
    pub(crate) tx: Tx<'a>,
    /// The template renders of this unit, kept across its attempts.
    pub(crate) renders: &'a crate::session::Renders,
    pub(crate) actor: Actor,
    pub(crate) events: Vec<Event>,
    pub(crate) access: Vec<AccessChange>,
    pub(crate) tasks_enqueued: bool,
    pub(crate) invalidated: Vec<MetadataTypeId>,
    /// Stored files to delete once the transaction commits (never before: a rollback keeps
    /// them; a crash in between leaves an unreferenced file, never a missing one).
    pub(crate) unlink: Vec<String>,
    /// Metadata events of documents, for workflow triggers: (event, document, name).
    pub(crate) workflow_events: Vec<(EventId, DocumentId, String)>,
}

impl<'a> Unit<'a> {
    fn new(tx: Tx<'a>, actor: Actor, renders: &'a crate::session::Renders) -> Self {
        Unit {
            tx,
            renders,
            actor,
            events: Vec::new(),
            access: Vec::new(),
            tasks_enqueued: false,
            invalidated: Vec::new(),
            unlink: Vec::new(),
            workflow_events: Vec::new(),
        }
    }

    /// The time of this unit of work (the same in every attempt, so that templates reading
    /// `now` render the same).
    pub(crate) fn now(&self) -> chrono::DateTime<Utc> {
        self.renders.now
    }

    /// Appends an event to the log (in this transaction).
    pub(crate) fn event(
        &mut self,
        name: &str,
        target: EventObject,
        action: Option<EventObject>,
    ) -> Result<()> {
        let e = self
            .tx
            .append_event(name, self.actor.user(), &target, action.as_ref())?;
        crate::workflows::note_event(self, &e);
        self.events.push(e);
        Ok(())
    }

    /// Enqueues a durable task (in this transaction).
    pub(crate) fn task(&mut self, name: &str, payload: &serde_json::Value) -> Result<()> {
        self.tx.enqueue_task(name, &payload.to_string())?;
        self.tasks_enqueued = true;
        Ok(())
    }
}

impl Docmeta {
    /// Opens (or creates) the data directory `dir` on the embedded SQLite store, with the task
    /// worker running.
    pub fn open(dir: impl AsRef<Path>) -> Result<Docmeta> {
        Docmeta::builder().data_dir(dir).worker(true).open()
    }

    /// A private in-memory instance without a worker (tests, examples).
    pub fn in_memory() -> Result<Docmeta> {
        Docmeta::builder().open()
    }

    /// A builder for other set-ups.
    pub fn builder() -> Builder {
        Builder {
            data_dir: None,
            store: None,
            classes: ClassRegistry::default(),
            kinds: KindRegistry::default(),
            worker: false,
            config: None,
            files: None,
            storage_password: None,
            #[cfg(feature = "postgres")]
            postgres_url: None,
        }
    }

    pub(crate) fn from_inner(inner: Arc<Inner>) -> Docmeta {
        Docmeta {
            inner,
            _worker: None,
            deadline: None,
        }
    }

    /// This instance with a deadline: a change made through the returned handle (or a session
    /// it creates) that would commit after `deadline` rolls back instead and fails with
    /// [`Error::Timeout`], so a caller that gave up waiting (a server that answered "timed
    /// out") can retry without the change being applied twice. Reads are not cut short.
    pub fn with_deadline(&self, deadline: std::time::Instant) -> Docmeta {
        Docmeta {
            deadline: Some(deadline),
            ..self.clone()
        }
    }

    /// Refuses when the deadline of this handle has passed (see [`Docmeta::with_deadline`]).
    fn check_deadline(&self) -> Result<()> {
        match self.deadline {
            Some(deadline) if std::time::Instant::now() >= deadline => Err(Error::Timeout(
                "the change did not finish in time and was rolled back; nothing was changed"
                    .to_owned(),
            )),
            _ => Ok(()),
        }
    }

    /// A session acting as `user`: every operation is permission-checked.
    pub fn session(&self, user: UserId) -> Session {
        Session::new(self.clone(), Actor::User(user))
    }

    /// A session acting as docmeta itself: nothing is checked (tools, tasks, administration).
    pub fn system(&self) -> Session {
        Session::new(self.clone(), Actor::System)
    }

    /// The data directory, when not in memory.
    pub fn data_dir(&self) -> Option<&Path> {
        self.inner.data_dir.as_deref()
    }

    /// The settings in force.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The secret key of the data directory (`system/SECRET_KEY`).
    pub fn secret_key(&self) -> &[u8] {
        &self.inner.secret_key
    }

    /// The store.
    pub fn store(&self) -> &dyn Store {
        self.inner.store.as_ref()
    }

    /// The template environment.
    pub fn templates(&self) -> &TemplateEngine {
        &self.inner.templates
    }

    /// The validator and parser classes.
    pub fn classes(&self) -> &ClassRegistry {
        &self.inner.classes
    }

    /// A copy of the object kinds.
    pub fn kinds(&self) -> KindRegistry {
        self.inner.kinds.read().clone()
    }

    /// Parses `app_label.model_name` into a registered object kind (without copying the
    /// registry, unlike `kinds().parse(..)`).
    pub fn parse_kind(&self, text: &str) -> Result<ObjectKind> {
        self.inner.kinds.read().parse(text)
    }

    /// Applies pending schema migrations (spec 4.6 `migrate`); returns the versions applied.
    pub fn migrate(&self) -> Result<Vec<u32>> {
        self.inner.store.migrate()
    }

    // ----- events ----------------------------------------------------------------------------

    /// Calls `f` with every event after the transaction that appended it commits, in the
    /// committing thread. Keep it fast; a panicking subscriber is isolated from the others.
    pub fn subscribe(&self, f: impl Fn(&Event) + Send + Sync + 'static) -> SubscriptionId {
        let id = SubscriptionId(self.inner.next_subscription.fetch_add(1, Ordering::Relaxed));
        self.inner.subscribers.write().push((id, Arc::new(f)));
        id
    }

    /// Cancels a subscription.
    pub fn unsubscribe(&self, id: SubscriptionId) {
        self.inner.subscribers.write().retain(|(s, _)| *s != id);
    }

    /// Events of the log, unfiltered (see [`Session::events`] for the permission-filtered view).
    pub fn events(&self, query: &EventQuery) -> Result<Vec<Event>> {
        self.read(|tx| tx.events(query))
    }

    // ----- access ----------------------------------------------------------------------------

    /// Whether `user` may do `permission` on `object` (the evaluator of `access::policy`).
    pub fn check(&self, user: UserId, permission: Permission, object: ObjectRef) -> bool {
        let mut stored = self.stored_ancestors(&[object]);
        self.inner
            .access
            .read()
            .check_with(&mut stored, user, permission, object)
    }

    /// The subset of `objects` on which `user` may do `permission`.
    pub fn filter(
        &self,
        user: UserId,
        permission: Permission,
        objects: &[ObjectRef],
    ) -> Vec<ObjectRef> {
        let mut stored = self.stored_ancestors(objects);
        self.inner
            .access
            .read()
            .filter_with(&mut stored, user, permission, objects)
    }

    /// Why `user` may or may not do `permission` on `object`.
    pub fn explain(&self, user: UserId, permission: Permission, object: ObjectRef) -> Explanation {
        let mut stored = self.stored_ancestors(&[object]);
        self.inner
            .access
            .read()
            .explain_with(&mut stored, user, permission, object)
    }

    /// The stored links of spec 5.3 (see [`crate::access::STORED_PARENT_KINDS`]) of `objects` and of their
    /// ancestors, read in one transaction before the snapshot is locked, so that no store read
    /// happens under the snapshot's lock. Reads nothing when no object needs them.
    fn stored_ancestors(&self, objects: &[ObjectRef]) -> KnownParents {
        let mut known = KnownParents::default();
        if !objects
            .iter()
            .any(|o| crate::access::STORED_PARENT_KINDS.contains(&o.kind))
        {
            return known;
        }
        let needed: Vec<ObjectRef> = {
            let snapshot = self.inner.access.read();
            objects
                .iter()
                .copied()
                .filter(|o| snapshot.needs_stored_parents(*o))
                .collect()
        };
        if needed.is_empty() {
            return known;
        }
        let read = self.read(|tx| {
            let mut next = needed;
            while let Some(object) = next.pop() {
                if known.contains(object) {
                    continue;
                }
                let parents = tx.stored_parents(object);
                next.extend(
                    parents
                        .iter()
                        .copied()
                        .filter(|p| self.inner.access.read().needs_stored_parents(*p)),
                );
                known.insert(object, parents);
            }
            Ok(())
        });
        // An unreadable link inherits nothing (refuse unless granted), as the evaluator does.
        drop(read);
        known
    }

    /// The document file storage in use.
    pub fn file_storage(&self) -> &dyn FileStorage {
        &*self.inner.files
    }

    /// The content of a stored file, through the storage its record says it is in.
    pub(crate) fn open_stored(
        &self,
        f: &crate::store::records::StoredFile,
    ) -> Result<Box<dyn std::io::Read + Send>> {
        let storage = &self.inner.files;
        match (f.encrypted, storage.encrypts()) {
            (false, false) | (true, true) => storage.open(&f.storage_name),
            (false, true) => storage.open_plain(&f.storage_name),
            (true, false) => Err(Error::Decryption(format!(
                "document file {} is encrypted (MENC): open docmeta with \
                 documents_file_storage_backend: encrypted and the storage password",
                f.file.id
            ))),
        }
    }

    /// Converts every stored file to the encrypted format (`encrypt`) or back to plain, one
    /// file at a time: each is rewritten under a new name, its record updated in its own
    /// transaction, and the old bytes deleted after that commits. Interrupted, it resumes
    /// where it stopped when run again. Needs the encrypted storage (both ways: its key reads
    /// and writes MENC). `progress(done, total)` is called after each file. Returns how many
    /// files were converted.
    pub fn convert_storage(
        &self,
        encrypt: bool,
        mut progress: impl FnMut(u64, u64),
    ) -> Result<u64> {
        if !self.inner.files.encrypts() {
            return Err(Error::InvalidInput(
                "converting needs the encrypted storage: set documents_file_storage_backend: \
                 encrypted and give the storage password"
                    .to_owned(),
            ));
        }
        let total = self.read(|tx| {
            tx.optional(
                "SELECT COUNT(*) FROM document_files WHERE encrypted = ?1",
                &[i64::from(!encrypt).into()],
                |r| r.int(0),
            )
            .map(Option::unwrap_or_default)
        })?;
        let total = u64::try_from(total).unwrap_or(0);
        let mut done = 0u64;
        loop {
            let batch =
                self.read(|tx| tx.all_document_files(DocumentFileId(0), 100, Some(!encrypt)))?;
            if batch.is_empty() {
                break;
            }
            for f in batch {
                let mut content = crate::files::Hashing::new(self.open_stored(&f)?);
                let storage = &self.inner.files;
                let name = if encrypt {
                    storage.put(&mut content)
                } else {
                    storage.put_plain(&mut content)
                }?;
                if content.finish() != (f.file.size, f.file.checksum.clone()) {
                    let _ = storage.delete(&name);
                    return Err(Error::storage(
                        format!("converting document file {}", f.file.id),
                        "the stored bytes do not match the file's checksum; nothing was changed",
                    ));
                }
                let updated = self.write(Actor::System, |u| {
                    u.tx.set_file_storage(f.file.id, &name, encrypt)?;
                    u.unlink.push(f.storage_name.clone());
                    Ok(())
                });
                if let Err(e) = updated {
                    let _ = storage.delete(&name);
                    return Err(e);
                }
                done += 1;
                progress(done, total.max(done));
            }
        }
        Ok(done)
    }

    /// Rebuilds the access snapshot from the store (done at open; also useful after another
    /// process changed grants).
    pub fn reload_access(&self) -> Result<()> {
        let kinds = self.inner.kinds.read().clone();
        let (snapshot, newest) = self.read(|tx| {
            let newest = tx
                .optional("SELECT max(id) FROM events", &[], |r| r.opt_int(0))?
                .flatten()
                .unwrap_or(0);
            Ok((crate::session::load_access(tx, &kinds)?, newest))
        })?;
        *self.inner.access.write() = snapshot;
        self.inner.access_cursor.store(newest, Ordering::SeqCst);
        Ok(())
    }

    /// A number that changes whenever a user is created, edited (password, name, activity,
    /// superuser status) or deleted: at once for this process's changes, and within
    /// `access_refresh_ms` for another process's on a shared PostgreSQL database. A cache of
    /// verified credentials that remembers it can tell when its entries may be stale (the HTTP
    /// server's login cache does).
    pub fn credentials_epoch(&self) -> u64 {
        self.inner.credentials_epoch.load(Ordering::SeqCst)
    }

    /// Picks up access changes other processes committed to a shared (PostgreSQL) database:
    /// when the event log holds an access-changing event this process did not write, the
    /// snapshot is reloaded. The worker runs it every `access_refresh_ms`; returns whether it
    /// reloaded. On SQLite (one process) there is nothing to follow.
    pub fn follow_access(&self) -> Result<bool> {
        if self.inner.store.dialect() != crate::store::Dialect::Postgres {
            return Ok(false);
        }
        let cursor = self.inner.access_cursor.load(Ordering::SeqCst);
        let events = self.read(|tx| {
            tx.rows(
                "SELECT id, name FROM events WHERE id > ?1 ORDER BY id LIMIT 10000",
                &[cursor.into()],
                |r| Ok((r.int(0)?, r.text(1)?)),
            )
        })?;
        let Some(newest) = events.last().map(|(id, _)| *id) else {
            return Ok(false);
        };
        let (foreign, foreign_user_edit) = {
            let mut local = self.inner.local_access_events.lock();
            let foreign: Vec<&str> = events
                .iter()
                .filter(|(id, name)| changes_access(name) && !local.contains(id))
                .map(|(_, name)| name.as_str())
                .collect();
            local.retain(|id| *id > newest);
            let user_edit = foreign.contains(&crate::events::names::USER_EDITED);
            (!foreign.is_empty(), user_edit)
        };
        if foreign_user_edit {
            self.inner.credentials_epoch.fetch_add(1, Ordering::SeqCst);
        }
        if foreign {
            self.reload_access()?;
        } else {
            self.inner.access_cursor.fetch_max(newest, Ordering::SeqCst);
        }
        Ok(foreign)
    }

    // ----- units of work ---------------------------------------------------------------------

    /// Runs `f` in a read transaction.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        let mut tx = Tx::new(self.inner.store.begin(Mode::Read)?);
        let out = f(&mut tx)?;
        // Ending a read with COMMIT rather than ROLLBACK keeps SQLite's prepared statements valid.
        tx.commit()?;
        Ok(out)
    }

    /// Runs `f` in a write transaction with no events (internal bookkeeping).
    pub(crate) fn write_system<T>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        let mut tx = Tx::new(self.inner.store.begin(Mode::Write)?);
        let out = f(&mut tx)?;
        tx.commit()?;
        Ok(out)
    }

    /// Whether units of work render their templates before taking the write lock. Not on
    /// PostgreSQL: its sequences are not rolled back with an attempt, so a document created in
    /// the unit gets a new id each time, its templates' inputs never match, and every attempt
    /// would only burn ids; there templates render under the lock, within their time budget.
    fn defers_renders(&self) -> bool {
        self.inner.store.dialect() != crate::store::Dialect::Postgres
    }

    /// Runs `f` as one transaction for `actor`, then commits it when `commit` is true and rolls
    /// it back otherwise (dry runs).
    pub(crate) fn write_with<T>(
        &self,
        actor: Actor,
        commit: bool,
        mut f: impl FnMut(&mut Unit<'_>) -> Result<T>,
    ) -> Result<T> {
        if commit {
            return self.write(actor, f);
        }
        let renders = crate::session::Renders::inline(self.now());
        for attempt in 1.. {
            renders.set_defer(self.defers_renders() && attempt < RENDER_ATTEMPTS);
            let tx = Tx::new(self.inner.store.begin(Mode::Write)?);
            let mut unit = Unit::new(tx, actor, &renders);
            let out = f(&mut unit);
            self.forget_compiled(&unit.invalidated);
            drop(unit);
            if renders.has_pending() {
                renders.render_pending(self.templates());
                continue;
            }
            return out;
        }
        unreachable!("the attempts loop only ends by returning")
    }

    /// Runs `f` as one transaction for `actor`; after commit, applies access changes, drops
    /// stale compiled types, wakes the worker and notifies subscribers.
    ///
    /// Templates render before the write lock is taken, so that a slow template (bounded by the
    /// render budget) never stalls other writers: an attempt of `f` that needs a template
    /// output not known yet is rolled back, the template is rendered with no transaction open
    /// (from inputs read in that attempt), and `f` runs again; the output is used when the
    /// template's inputs, read again under the lock, are equal (see `session::Renders`). `f`
    /// may therefore run more than once: it must have no effect outside its unit.
    pub(crate) fn write<T>(
        &self,
        actor: Actor,
        mut f: impl FnMut(&mut Unit<'_>) -> Result<T>,
    ) -> Result<T> {
        let renders = crate::session::Renders::inline(self.now());
        let mut attempt = 0;
        let (tx, events, access, tasks_enqueued, invalidated, unlink, out, triggers) = loop {
            attempt += 1;
            renders.set_defer(self.defers_renders() && attempt < RENDER_ATTEMPTS);
            let tx = Tx::new(self.inner.store.begin(Mode::Write)?);
            // Waiting for the write lock may have used up the time: no work for nothing.
            self.check_deadline()?;
            let mut unit = Unit::new(tx, actor, &renders);
            let result = f(&mut unit).and_then(|out| {
                let triggers = crate::workflows::enqueue_triggers(&mut unit)?;
                Ok((out, triggers))
            });
            if renders.has_pending() {
                // Rolled back: the renders it needs are made with no lock held.
                self.forget_compiled(&unit.invalidated);
                drop(unit);
                renders.render_pending(self.templates());
                continue;
            }
            let (out, triggers) = match result {
                Ok(out) => out,
                Err(e) => {
                    // A compiled type cached from this (now rolled back) transaction must go.
                    self.forget_compiled(&unit.invalidated);
                    return Err(e);
                }
            };
            let Unit {
                tx,
                events,
                access,
                tasks_enqueued,
                invalidated,
                unlink,
                ..
            } = unit;
            break (
                tx,
                events,
                access,
                tasks_enqueued,
                invalidated,
                unlink,
                out,
                triggers,
            );
        };
        // The last moment to give up: past the deadline the caller may already have been told
        // the change failed, so it must not happen (dropping `tx` rolls it back).
        if let Err(e) = self.check_deadline() {
            self.forget_compiled(&invalidated);
            return Err(e);
        }
        tx.commit()?;
        self.forget_compiled(&invalidated);
        for name in unlink {
            // Moved aside, kept a day for backups that started before the commit. One that
            // cannot be moved is unreferenced, which is harmless: never served, never backed up.
            let _ = self.inner.files.delete(&name);
        }
        if !access.is_empty() {
            let mut snapshot = self.inner.access.write();
            for change in access {
                apply(&mut snapshot, change);
            }
        }
        {
            let mut local = self.inner.local_access_events.lock();
            local.extend(
                events
                    .iter()
                    .filter(|e| changes_access(&e.name))
                    .map(|e| e.id.0),
            );
        }
        if events
            .iter()
            .any(|e| e.name == crate::events::names::USER_EDITED)
        {
            self.inner.credentials_epoch.fetch_add(1, Ordering::SeqCst);
        }
        if tasks_enqueued {
            self.notify_worker();
        }
        self.publish(&events);
        // Workflow triggers of this change run now, in order; a failure to run one leaves its
        // durable task for the worker.
        // They belong to the committed change, not to the caller's deadline.
        let runner = Docmeta {
            deadline: None,
            ..self.clone()
        };
        for task in triggers {
            let _ = crate::tasks::run_now(&runner, task);
        }
        Ok(out)
    }

    fn forget_compiled(&self, ids: &[MetadataTypeId]) {
        if ids.is_empty() {
            return;
        }
        self.inner
            .compiled_generation
            .fetch_add(1, Ordering::SeqCst);
        let mut compiled = self.inner.compiled.write();
        for id in ids {
            compiled.remove(id);
        }
    }

    fn publish(&self, events: &[Event]) {
        if events.is_empty() {
            return;
        }
        let subscribers: Vec<Subscriber> = self
            .inner
            .subscribers
            .read()
            .iter()
            .map(|(_, s)| s.clone())
            .collect();
        for e in events {
            for s in &subscribers {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s(e)));
            }
        }
    }

    pub(crate) fn notify_worker(&self) {
        let (lock, cv) = &self.inner.task_signal;
        *lock.lock() = true;
        cv.notify_all();
    }

    /// The compiled form of a metadata type, cached until the type changes.
    pub(crate) fn compiled(
        &self,
        tx: &mut Tx<'_>,
        id: MetadataTypeId,
    ) -> Result<Arc<CompiledMetadataType>> {
        if let Some(c) = self.inner.compiled.read().get(&id) {
            return Ok(c.clone());
        }
        let generation = self.inner.compiled_generation.load(Ordering::SeqCst);
        let t = tx
            .metadata_type(id)?
            .ok_or_else(|| Error::not_found(format!("metadata type {id}")))?;
        let c = Arc::new(CompiledMetadataType::new(t, &self.inner.classes)?);
        let mut cache = self.inner.compiled.write();
        if self.inner.compiled_generation.load(Ordering::SeqCst) == generation {
            cache.insert(id, c.clone());
        }
        Ok(c)
    }

    /// Registers an application object kind after opening (see [`KindRegistry::register`]).
    pub fn register_kind(
        &self,
        app_label: &str,
        model_name: &str,
        parents: &[ObjectKind],
        own: &[Permission],
    ) -> Result<ObjectKind> {
        self.inner
            .kinds
            .write()
            .register(app_label, model_name, parents, own)
    }

    /// Records the objects an application object inherits ACLs from (spec 5.3 for kinds that
    /// docmeta does not store: versions, comments, sources, tags, index nodes...).
    pub fn set_object_parents(&self, object: ObjectRef, parents: &[ObjectRef]) -> Result<()> {
        if [
            ObjectKind::DOCUMENT,
            ObjectKind::DOCUMENT_TYPE,
            ObjectKind::METADATA_TYPE,
            ObjectKind::CABINET,
            ObjectKind::ROLE,
        ]
        .contains(&object.kind)
        {
            return Err(Error::InvalidInput(format!(
                "docmeta keeps the links of {} itself",
                self.kinds().name(object.kind)
            )));
        }
        let kinds = self.inner.kinds.read().clone();
        let names: Vec<(String, i64)> =
            parents.iter().map(|p| (kinds.name(p.kind), p.id)).collect();
        self.write(Actor::System, |u| {
            u.tx.set_object_parents(&kinds.name(object.kind), object.id, &names)?;
            u.access.push(AccessChange::Parents {
                object,
                parents: parents.to_vec(),
            });
            Ok(())
        })
    }

    /// Runs every runnable durable task now, in this thread; returns how many ran.
    pub fn run_pending_tasks(&self) -> Result<usize> {
        crate::tasks::run_pending(self)
    }

    /// Tasks not yet done (pending, running or failed).
    pub fn open_tasks(&self) -> Result<Vec<crate::store::records::TaskRow>> {
        self.read(|tx| tx.open_tasks(1000))
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

    /// The current time as docmeta sees it.
    pub(crate) fn now(&self) -> chrono::DateTime<Utc> {
        Utc::now()
    }
}

/// The store answers the evaluator's questions about stored parent links (spec 5.3), in the
/// caller's transaction: a document file inherits from its document, a metadata value from its
/// metadata type, a workflow instance from its workflow, a log entry from its instance.
impl ParentSource for Tx<'_> {
    fn stored_parents(&mut self, object: ObjectRef) -> Vec<ObjectRef> {
        let found = match object.kind {
            ObjectKind::DOCUMENT_FILE => self
                .document_file(DocumentFileId(object.id))
                .map(|f| f.map(|f| ObjectRef::new(ObjectKind::DOCUMENT, f.file.document_id.0))),
            ObjectKind::DOCUMENT_METADATA => self
                .document_metadata(DocumentMetadataId(object.id))
                .map(|v| {
                    v.map(|v| ObjectRef::new(ObjectKind::METADATA_TYPE, v.metadata_type_id.0))
                }),
            ObjectKind::WORKFLOW_INSTANCE => self
                .workflow_instance(WorkflowInstanceId(object.id))
                .map(|i| i.map(|i| ObjectRef::new(ObjectKind::WORKFLOW, i.workflow_id.0))),
            ObjectKind::WORKFLOW_INSTANCE_LOG_ENTRY => self
                .workflow_log_entry(WorkflowLogEntryId(object.id))
                .map(|e| e.map(|e| ObjectRef::new(ObjectKind::WORKFLOW_INSTANCE, e.instance_id.0))),
            _ => Ok(None),
        };
        found.ok().flatten().into_iter().collect()
    }
}

fn apply(s: &mut AccessSnapshot, change: AccessChange) {
    match change {
        AccessChange::User {
            id,
            superuser,
            active,
        } => s.set_user(id, superuser, active),
        AccessChange::UserRemoved(id) => s.remove_user(id),
        AccessChange::Membership {
            group,
            user,
            member,
        } => s.set_membership(group, user, member),
        AccessChange::RoleGroup {
            role,
            group,
            assigned,
        } => s.set_role_group(role, group, assigned),
        AccessChange::RolePermissions { role, permissions } => {
            s.set_role_permissions(role, permissions)
        }
        AccessChange::RoleRemoved(role) => s.remove_role(role),
        AccessChange::GroupRemoved(group) => s.remove_group(group),
        AccessChange::Acl {
            object,
            acl,
            role,
            permissions,
        } => s.set_acl(object, acl, role, permissions),
        AccessChange::Parents { object, parents } => s.set_parents(object, parents),
        AccessChange::ObjectRemoved(object) => s.remove_object(object),
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown.store(true, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod deadline_tests {
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn a_change_whose_deadline_passes_before_commit_changes_nothing() {
        let db = Docmeta::in_memory().expect("open");
        let session = db
            .system()
            .with_deadline(Instant::now() + Duration::from_millis(50));
        let events_before = db.events(&EventQuery::default()).expect("events").len();
        // The work itself succeeds, but only finishes after the deadline.
        let result = session.write(|u| {
            session.create_role_in(u, "late")?;
            std::thread::sleep(Duration::from_millis(120));
            Ok(())
        });
        assert!(
            matches!(result, Err(Error::Timeout(_))),
            "a late change fails as timed out: {result:?}"
        );
        let roles = db.system().roles().expect("roles");
        assert!(
            roles.iter().all(|(_, label)| label != "late"),
            "the role was rolled back: {roles:?}"
        );
        let events_after = db.events(&EventQuery::default()).expect("events").len();
        assert_eq!(events_before, events_after, "no event was logged");
    }

    #[test]
    fn a_change_with_a_passed_deadline_is_refused_before_any_work() {
        let db = Docmeta::in_memory().expect("open");
        let session = db.system().with_deadline(Instant::now());
        let result = session.create_role("too late");
        assert!(matches!(result, Err(Error::Timeout(_))), "{result:?}");
        assert!(db.system().roles().expect("roles").is_empty());
    }

    #[test]
    fn a_change_that_commits_before_its_deadline_is_kept() {
        let db = Docmeta::in_memory().expect("open");
        let session = db
            .system()
            .with_deadline(Instant::now() + Duration::from_secs(60));
        let id = session.create_role("in time").expect("create");
        let roles = db.system().roles().expect("roles");
        assert_eq!(roles, vec![(id, "in time".to_owned())]);
    }
}
