//! The [`Docmeta`] facade: opening an instance ([`Builder`]) and filling the kernel's hooks
//! with the layers above it (workflows, tasks, search), the entry points to sessions, and the
//! operations that span layers (converting and verifying the file storage).
//!
//! Layer 8 of `scripts/check-structure`: it may import every module but `backup` and
//! `installation`, which open data directories with it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use parking_lot::{Condvar, Mutex, RwLock};
use rustc_hash::FxHashMap;

use crate::access::{AccessSnapshot, KindRegistry};
use crate::config::StorageBackend;
use crate::config::{Config, DEFAULT_READ_CACHE_DOCUMENTS, load_or_create_secret_key};
use crate::error::{Error, Result};
use crate::files::menc::{KdfParams, KeyCheck, Keyring, Password};
use crate::files::{EncryptedStorage, FileStorage, MemoryStorage, PlainStorage};
use crate::kernel::{DataLock, Docmeta, Hooks, Inner, ReadCache};
use crate::metadata::{ClassRegistry, TemplateEngine};
use crate::model::*;
use crate::session::Session;
use crate::store::{SqliteStore, Store};
use crate::tasks::Worker;

/// The environment variable that gives the encrypted storage's password.
pub const PASSWORD_VARIABLE: &str = "DOCMETA_STORAGE_PASSWORD";

/// Builds a [`Docmeta`] with non-default parts.
pub struct Builder {
    data_dir: Option<PathBuf>,
    store: Option<Box<dyn Store>>,
    classes: ClassRegistry,
    kinds: KindRegistry,
    worker: bool,
    exclusive: bool,
    config: Option<Config>,
    files: Option<Arc<dyn FileStorage>>,
    file_storage_location: Option<String>,
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
    /// Uses `dir` as the data directory (MEDIA_ROOT), created if missing. Everything docmeta
    /// creates there is owner-only (directories `0700`, files `0600`); opening an existing
    /// directory removes group and other access from it and from its first level every time,
    /// and from its whole tree once (recorded in `DATA/.owner-only`). The process's umask is
    /// left to the application.
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

    /// Opens the data directory for exclusive use (work that must not run beside another
    /// process, such as converting the storage): refused with an [`Error::Conflict`] on
    /// [`DATA_DIRECTORY_IN_USE`](crate::DATA_DIRECTORY_IN_USE), naming the process, while any
    /// other docmeta has it open.
    pub fn exclusive(mut self, on: bool) -> Self {
        self.exclusive = on;
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

    /// Stores document files at `location` (`s3://bucket/prefix`) instead of where
    /// `config.yml`'s `documents_file_storage_location` says (the server's `--file-storage`).
    pub fn file_storage_location(mut self, location: impl Into<String>) -> Self {
        self.file_storage_location = Some(location.into());
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

    /// Writes the document files staged in `dir/document_file_storage/` (a restore's) to the
    /// configured storage when that is not the data directory (a bucket), as they are (MENC
    /// stays MENC), and removes the staged copies. Returns how many it wrote.
    pub(crate) fn restore_document_files(&self, dir: &Path) -> Result<usize> {
        let config = match &self.config {
            Some(c) => c.clone(),
            None => Config::load_or_create(dir)?,
        };
        let storage = self.plain_storage_for(&config, Some(dir))?;
        let Some(location) = storage.location() else {
            return Ok(0);
        };
        let staged = dir.join("document_file_storage");
        let failed = |e: std::io::Error| {
            Error::storage(format!("restoring the document files to {location}"), e)
        };
        let mut written = 0;
        for fan in std::fs::read_dir(&staged).map_err(failed)? {
            let fan = fan.map_err(failed)?;
            let Some(fan_name) = fan.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if fan_name.starts_with('.') || !fan.file_type().map_err(failed)?.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(fan.path()).map_err(failed)? {
                let file = file.map_err(failed)?;
                let name = format!("{fan_name}/{}", file.file_name().to_string_lossy());
                crate::files::check_name(&name)?;
                let mut content = std::fs::File::open(file.path()).map_err(failed)?;
                storage.put_as(&name, &mut content)?;
                written += 1;
            }
        }
        std::fs::remove_dir_all(&staged).map_err(failed)?;
        crate::owner_only::create_dir_all(&staged).map_err(failed)?;
        Ok(written)
    }

    /// The configured storage of the files as stored (MENC files stay MENC): the data
    /// directory's `document_file_storage/`, the configured location, or memory.
    pub(crate) fn plain_storage_for(
        &self,
        config: &Config,
        dir: Option<&Path>,
    ) -> Result<Arc<dyn FileStorage>> {
        let location = (self.file_storage_location.as_deref())
            .or(config.documents_file_storage_location.as_deref());
        Ok(match (location, dir) {
            (Some(location), _) => crate::files::open_location(location)?,
            (None, Some(dir)) => Arc::new(PlainStorage::open(dir.join("document_file_storage"))?),
            (None, None) => Arc::new(MemoryStorage::default()),
        })
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
        let plain = self.plain_storage_for(config, dir)?;
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

    /// The store given to the builder, or the PostgreSQL database it names (connected with
    /// the pool size of `config`); `None` for the default SQLite file.
    fn take_store(&mut self, config: &Config) -> Result<Option<Box<dyn Store>>> {
        #[cfg(feature = "postgres")]
        if let Some(url) = self.postgres_url.take() {
            return Ok(Some(Box::new(crate::store::PostgresStore::open_with_pool(
                &url,
                config.postgres_pool_size,
            )?)));
        }
        let _ = config;
        Ok(self.store.take())
    }

    /// The database's schema version and the newest this build knows, read without migrating
    /// or opening anything else (`docmeta migrate --check`; fine beside a running server).
    pub fn schema_version(mut self) -> Result<(u32, u32)> {
        #[cfg(feature = "postgres")]
        if let Some(url) = self.postgres_url.take() {
            self.store = Some(Box::new(crate::store::PostgresStore::open(&url)?));
        }
        let _lock = match &self.data_dir {
            Some(dir) => Some(DataLock::shared(dir)?),
            None => None,
        };
        let store: Box<dyn Store> = match (self.store.take(), &self.data_dir) {
            (Some(s), _) => s,
            (None, Some(dir)) => Box::new(SqliteStore::open(dir.join("db.sqlite3"))?),
            (None, None) => Box::new(SqliteStore::in_memory()?),
        };
        store.schema_version()
    }

    /// Opens the instance.
    pub fn open(mut self) -> Result<Docmeta> {
        let lock = match &self.data_dir {
            Some(dir) if self.exclusive => Some(DataLock::exclusive(dir)?),
            Some(dir) => Some(DataLock::shared(dir)?),
            None => None,
        };
        let data_dir = self.data_dir.clone();
        let (store, secret_key, config) = match &data_dir {
            Some(dir) => {
                for sub in ["", "document_file_storage"] {
                    crate::owner_only::create_dir_all(&dir.join(sub)).map_err(|e| {
                        Error::storage(format!("creating the data directory {}", dir.display()), e)
                    })?;
                }
                // Before anything is read or created in it: an installation made before docmeta
                // created everything owner-only is tightened here (see `owner_only`).
                crate::owner_only::restrict_data_dir(dir).map_err(|e| {
                    Error::storage(
                        format!(
                            "making the data directory {} owner-only (run docmeta as its owner, \
                             or chmod 700 it)",
                            dir.display()
                        ),
                        e,
                    )
                })?;
                let key = load_or_create_secret_key(dir)?;
                let config = match self.config.clone() {
                    Some(c) => c,
                    None => Config::load_or_create(dir)?,
                };
                let store: Box<dyn Store> = match self.take_store(&config)? {
                    Some(s) => s,
                    None => Box::new(SqliteStore::open(dir.join("db.sqlite3"))?),
                };
                (store, key, config)
            }
            None => {
                let config = self.config.clone().unwrap_or_default();
                let store: Box<dyn Store> = match self.take_store(&config)? {
                    Some(s) => s,
                    None => Box::new(SqliteStore::in_memory()?),
                };
                let mut key = vec![0u8; 32];
                getrandom::fill(&mut key)
                    .map_err(|e| Error::storage("generating a key", e.to_string()))?;
                (store, key, config)
            }
        };
        store.migrate()?;
        // Every call first drops the read cache when anything committed since the last one
        // (see `kernel::follow`), so it is exact everywhere; on PostgreSQL any transaction of
        // the cluster counts, so under load it would hold nothing: off by default there.
        let sqlite = store.dialect() == crate::store::Dialect::Sqlite;
        let read_cache = config.read_cache_documents.unwrap_or(if sqlite {
            DEFAULT_READ_CACHE_DOCUMENTS
        } else {
            0
        });
        let files = self.file_storage_for(&config, self.data_dir.as_deref())?;
        // A process with a worker takes the index writer at once if it is free; others take it
        // only when they first write the index (see `SearchHome::writable`).
        let search = crate::search::home::SearchHome::open(
            self.data_dir.as_ref().map(|d| d.join("search")).as_deref(),
            self.worker,
        )?;
        let render_gate =
            crate::kernel::RenderGate::new(config.renders_per_user, config.renders_at_once);
        let inner = Arc::new(Inner {
            store,
            data_dir: self.data_dir,
            config,
            secret_key,
            templates: TemplateEngine::new(),
            render_gate,
            classes: self.classes,
            kinds: RwLock::new(self.kinds),
            access: RwLock::new(AccessSnapshot::default()),
            compiled: RwLock::new(FxHashMap::default()),
            compiled_generation: AtomicU64::new(0),
            subscribers: RwLock::new(Vec::new()),
            next_subscription: AtomicU64::new(1),
            event_signal: crate::kernel::EventSignal::new(),
            task_signal: (Mutex::new(false), Condvar::new()),
            delivery_signal: (Mutex::new(false), Condvar::new()),
            search,
            files,
            _lock: lock,
            hooks: hooks(),
            follow: crate::kernel::Follow::new(),
            local_access_events: Mutex::new(Vec::new()),
            credentials_epoch: AtomicU64::new(0),
            search_lock: Mutex::new(()),
            access_order: Mutex::new(()),
            retry_gate: Mutex::new(()),
            search_rebuilding: std::sync::atomic::AtomicBool::new(false),
            reads: ReadCache::new(read_cache),
            shutdown: std::sync::atomic::AtomicBool::new(false),
            audit_key: std::sync::OnceLock::new(),
        });
        let mut db = Docmeta::from_inner(inner);
        db.reload_access()?;
        // Events written before the hash chain existed (or, on PostgreSQL, committed since the
        // last seal) join it now.
        db.seal_events()?;
        // Tasks left `running` by a crashed process run again; while another process has the
        // data directory open (a server beside this command), they may be its, running now. So
        // may another index's search tasks (another data directory on a shared database).
        if db.inner._lock.as_ref().is_none_or(DataLock::alone) {
            let index = db.search_index_id().to_owned();
            // A SQLite database belongs to this one data directory: every search task in it is
            // for this directory's index, even one queued before its `search/` was deleted (a
            // new index gets a new id), so it names this index's id again.
            let sqlite = db.store().dialect() == crate::store::Dialect::Sqlite;
            db.write_system(|tx| {
                tx.requeue_running_tasks(&index)?;
                if sqlite {
                    tx.retarget_open_tasks(&index)?;
                }
                Ok(())
            })?;
        }
        if self.worker {
            // Claims on webhook deliveries left by a process that stopped while sending end
            // (another live process's would end by themselves, after their lease).
            if db.inner._lock.as_ref().is_none_or(DataLock::alone) {
                db.write_system(|tx| tx.release_webhook_deliveries())?;
            }
            let tasks = Worker::start(&db);
            let deliveries = crate::webhooks::Deliverer::start(&db);
            db.worker = Some(Arc::new((tasks, deliveries)));
        }
        Ok(db)
    }
}

/// The kernel's hooks: how workflows, tasks and search take part in units of work.
fn hooks() -> Hooks {
    let mut tasks: FxHashMap<&'static str, crate::kernel::TaskHandler> = FxHashMap::default();
    tasks.insert(SEARCH_REINDEX, |db, _| {
        db.search_reindex(|_, _| {}).map(drop)
    });
    tasks.insert(SEARCH_WORK, crate::search::run_task);
    tasks.insert(
        crate::workflows::WORKFLOW_TRIGGER,
        crate::workflows::run_trigger,
    );
    tasks.insert(
        ADD_REQUIRED_METADATA_TYPE,
        crate::tasks::add_required_metadata_type,
    );
    tasks.insert(REMOVE_METADATA_TYPE, crate::tasks::remove_metadata_type);
    Hooks {
        event: crate::workflows::note_event,
        before_commit: crate::workflows::run_triggers,
        document_created: crate::workflows::launch,
        push_transition: crate::workflows::push_transition,
        sorted_documents: crate::search::sorted_documents,
        tasks,
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
            exclusive: false,
            config: None,
            files: None,
            file_storage_location: None,
            storage_password: None,
            #[cfg(feature = "postgres")]
            postgres_url: None,
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
        let total = self.read(|tx| tx.count_document_files(!encrypt))?;
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

    /// Checks every stored document file against its record, as `docmeta storage verify`
    /// does: present, of the recorded size, with the recorded SHA-256, and for a MENC file
    /// every chunk's tag authenticated (each file read in full, decrypting it). Damaged files
    /// are listed in the report, never an error; it fails only when the files cannot be
    /// checked (the database fails, or encrypted files while the instance has no storage
    /// password). Files added meanwhile are checked too; one deleted or converted while it was
    /// being checked is judged by its new record. `progress(done, total)` is called after each
    /// file. Reads only: safe beside a running server.
    pub fn verify_storage(&self, mut progress: impl FnMut(u64, u64)) -> Result<StorageReport> {
        let encrypted = self.read(|tx| tx.count_document_files(true))?;
        if encrypted > 0 && !self.inner.files.encrypts() {
            return Err(Error::InvalidInput(format!(
                "{encrypted} document files are encrypted (MENC): checking them needs \
                 documents_file_storage_backend: encrypted and the storage password"
            )));
        }
        let total = encrypted + self.read(|tx| tx.count_document_files(false))?;
        let mut report = StorageReport::default();
        let mut after = DocumentFileId(0);
        loop {
            let batch = self.read(|tx| tx.all_document_files(after, 100, None))?;
            let Some(last) = batch.last() else {
                break;
            };
            after = last.file.id;
            for f in batch {
                let (bytes, mut damage) = self.check_stored_file(&f)?;
                let mut record = f;
                if damage.is_some() {
                    // Deleted or converted while it was read: its new record decides.
                    match self.read(|tx| tx.document_file(record.file.id))? {
                        None => continue,
                        Some(now) if now.storage_name != record.storage_name => {
                            damage = self.check_stored_file(&now)?.1;
                            record = now;
                        }
                        Some(_) => {}
                    }
                }
                report.files_checked += 1;
                report.bytes_checked += bytes;
                if let Some(damage) = damage {
                    report.damaged.push(DamagedFile {
                        file_id: record.file.id,
                        document_id: record.file.document_id,
                        filename: record.file.filename,
                        storage_name: record.storage_name,
                        encrypted: record.encrypted,
                        damage,
                    });
                }
                progress(report.files_checked, total.max(report.files_checked));
            }
        }
        Ok(report)
    }
}
