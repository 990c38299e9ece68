//! The handle: [`Docmeta`], the state its clones share ([`Inner`]), and what it answers from
//! that state alone (its settings, store, templates, classes, object kinds, file storage and
//! event log). What it does with that state lives beside it in the kernel, a job a file.
//!
//! Part of `kernel` (layer 5 of `scripts/check-structure`): it may import only what `kernel`
//! may (see `kernel`'s module documentation).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::Utc;
use parking_lot::{Condvar, Mutex, RwLock};
use rustc_hash::FxHashMap;

use super::{DataLock, Follow, Hooks, ReadCache, RenderGate, Subscriber, SubscriptionId};
use crate::access::{AccessSnapshot, KindRegistry, ObjectKind};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::events::{Event, EventQuery};
use crate::files::FileStorage;
use crate::metadata::{ClassRegistry, CompiledMetadataType, TemplateEngine};
use crate::model::MetadataTypeId;
use crate::store::Store;

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
/// let doc = admin.create_document(invoices.id, "INV-1", &[(due.id, "31/12/2024")])?.document;
/// assert_eq!(admin.metadata_value_of(doc.id, "due")?.as_deref(), Some("2024-12-31"));
/// # Ok::<(), docmeta_core::Error>(())
/// ```
#[derive(Clone)]
pub struct Docmeta {
    pub(crate) inner: Arc<Inner>,
    /// Keeps the task worker running while any clone of this handle lives.
    pub(crate) worker: Option<Arc<dyn std::any::Any + Send + Sync>>,
    /// Units of work of this handle (and of its sessions) roll back instead of committing
    /// once this instant has passed (see [`Docmeta::with_deadline`]).
    pub(crate) deadline: Option<std::time::Instant>,
    /// How many automatic workflow transitions led to the changes of this handle: the durable
    /// trigger task that runs the next ones sets it (see `workflows::run_trigger`).
    pub(crate) trigger_depth: u32,
}

impl std::fmt::Debug for Docmeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Docmeta")
            .field("store", &self.inner.store.describe())
            .finish_non_exhaustive()
    }
}

/// The state every clone of a [`Docmeta`] shares.
pub(crate) struct Inner {
    pub(crate) store: Box<dyn Store>,
    pub(crate) data_dir: Option<PathBuf>,
    pub(crate) config: Config,
    pub(crate) secret_key: Vec<u8>,
    pub(crate) templates: TemplateEngine,
    /// Template renders in progress, per user and in all (see [`RenderGate`]).
    pub(crate) render_gate: Arc<RenderGate>,
    pub(crate) classes: ClassRegistry,
    pub(crate) kinds: RwLock<KindRegistry>,
    pub(crate) access: RwLock<AccessSnapshot>,
    pub(crate) compiled: RwLock<FxHashMap<MetadataTypeId, Arc<CompiledMetadataType>>>,
    pub(crate) compiled_generation: AtomicU64,
    pub(crate) subscribers: RwLock<Vec<(SubscriptionId, Subscriber)>>,
    pub(crate) next_subscription: AtomicU64,
    /// Moved by every commit that appends events, for those waiting for new ones (see `feed`).
    pub(crate) event_signal: Arc<super::EventSignal>,
    pub(crate) task_signal: (Mutex<bool>, Condvar),
    /// Wakes the webhook deliverer: events were committed (each may have queued deliveries),
    /// or a delivery was made due.
    pub(crate) delivery_signal: (Mutex<bool>, Condvar),
    pub(crate) search: crate::search::home::SearchHome,
    pub(crate) files: Arc<dyn FileStorage>,
    pub(crate) _lock: Option<DataLock>,
    pub(crate) hooks: Hooks,
    /// How far this process has followed what other processes commit (see `follow`).
    pub(crate) follow: Follow,
    /// Followed events this process committed (already applied to `access` and the other
    /// state) that no catch-up has read yet: it skips them. Changed only with `access_order`
    /// held, so a reload that replaces the snapshot and the list together never drops a local
    /// change.
    pub(crate) local_access_events: Mutex<Vec<i64>>,
    /// Bumped whenever a user is created, edited or deleted, here or (followed) in another
    /// process: see [`Docmeta::credentials_epoch`].
    pub(crate) credentials_epoch: AtomicU64,
    pub(crate) search_lock: Mutex<()>,
    /// Held from the commit of a unit of work that changes access until its changes are in
    /// the snapshot, so that they are applied in commit order.
    pub(crate) access_order: Mutex<()>,
    /// Held by a unit of work's attempt after its first (see [`Docmeta::retrying`]).
    pub(crate) retry_gate: Mutex<()>,
    pub(crate) search_rebuilding: std::sync::atomic::AtomicBool,
    /// Documents with their metadata, as last read (see `reads`).
    pub(crate) reads: ReadCache,
    pub(crate) shutdown: std::sync::atomic::AtomicBool,
    /// The installation's checkpoint signing key, once read (see `audit`).
    pub(crate) audit_key: std::sync::OnceLock<Arc<ring::signature::Ed25519KeyPair>>,
}

impl Docmeta {
    pub(crate) fn from_inner(inner: Arc<Inner>) -> Docmeta {
        Docmeta {
            inner,
            worker: None,
            deadline: None,
            trigger_depth: 0,
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

    /// The data directory, when not in memory.
    pub fn data_dir(&self) -> Option<&Path> {
        self.inner.data_dir.as_deref()
    }

    /// The settings in force.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The secret key of the data directory (`system/SECRET_KEY`).
    pub(crate) fn secret_key(&self) -> &[u8] {
        &self.inner.secret_key
    }

    /// The raw database. Writing through it bypasses every rule of docmeta (permissions,
    /// events, tasks, the access snapshot): it is there for tools, benchmarks and stores'
    /// own operations, like opening the database file with another program.
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

    /// Events of the log, unfiltered (see [`Session::events`](crate::Session::events) for the permission-filtered view).
    pub fn events(&self, query: &EventQuery) -> Result<Vec<Event>> {
        self.read(|tx| tx.events(query))
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

    /// Wakes the task worker (a task was enqueued).
    pub(crate) fn notify_worker(&self) {
        let (lock, cv) = &self.inner.task_signal;
        *lock.lock() = true;
        cv.notify_all();
    }

    /// Wakes the webhook deliverer (deliveries may have been queued or made due).
    pub(crate) fn notify_deliveries(&self) {
        let (lock, cv) = &self.inner.delivery_signal;
        *lock.lock() = true;
        cv.notify_all();
    }

    /// The current time as docmeta sees it.
    pub(crate) fn now(&self) -> chrono::DateTime<Utc> {
        crate::model::now()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown.store(true, Ordering::SeqCst);
    }
}
