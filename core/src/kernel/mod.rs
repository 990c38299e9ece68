//! The kernel: the [`Docmeta`] handle's shared state (store, templates, classes, the access
//! snapshot, subscribers, file storage, search home) and the unit of work every change runs in
//! (one transaction + its events + access changes + deferred effects), with the hooks through
//! which workflows and tasks take part in it.
//!
//! Layer 5: may import `model`, `error`, `config`, `store`, `access`, `metadata`, `events`,
//! `files` and `search::home`; never `session`, `workflows`, `tasks`, `backup` or the facade
//! (`docmeta.rs`), which plug in through `Hooks` filled when an instance opens.

mod follow;
mod lock;
mod reads;
mod render;
mod snapshot;
mod verify;

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
use crate::config::Config;
use crate::error::{Error, Result};
use crate::events::{Event, EventObject, EventQuery};
use crate::files::FileStorage;
use crate::metadata::{ClassRegistry, CompiledMetadataType, TemplateEngine};
use crate::model::*;
use crate::store::{Mode, PendingCommit, Store, Tx};

pub(crate) use follow::{Follow, InTransaction};
pub(crate) use lock::DataLock;
pub(crate) use reads::{CachedDocument, ReadCache};
pub(crate) use render::{RenderGate, RenderInput, Renders, TemplateView};
pub(crate) use snapshot::load_access;

/// A handler of a durable task, by name: runs the task with its JSON payload.
pub(crate) type TaskHandler = fn(&Docmeta, &str) -> Result<()>;

/// How the layers above the kernel take part in a unit of work, filled when an instance opens
/// (see `docmeta.rs`): workflow triggers, workflow launches, and the task handlers.
pub(crate) struct Hooks {
    /// Sees every event appended in a unit of work, before it commits.
    pub(crate) event: fn(&mut Unit<'_>, &Event),
    /// Runs last in a unit of work, in its transaction (workflow triggers).
    pub(crate) before_commit: fn(&Docmeta, &mut Unit<'_>) -> Result<()>,
    /// Runs in the unit of work that created a document.
    pub(crate) document_created: fn(&Docmeta, &mut Unit<'_>, &Document) -> Result<()>,
    /// Task handlers by task name.
    pub(crate) tasks: FxHashMap<&'static str, TaskHandler>,
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
    /// Template renders in progress, per user and in all (see [`RenderGate`]).
    pub(crate) render_gate: Arc<RenderGate>,
    pub(crate) classes: ClassRegistry,
    pub(crate) kinds: RwLock<KindRegistry>,
    pub(crate) access: RwLock<AccessSnapshot>,
    pub(crate) compiled: RwLock<FxHashMap<MetadataTypeId, Arc<CompiledMetadataType>>>,
    pub(crate) compiled_generation: AtomicU64,
    pub(crate) subscribers: RwLock<Vec<(SubscriptionId, Subscriber)>>,
    pub(crate) next_subscription: AtomicU64,
    pub(crate) task_signal: (Mutex<bool>, Condvar),
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

/// Attempts in a row of one unit of work that need renders without getting further than the
/// attempt before (the values its templates read keep changing under it) before it gives up
/// (see [`Docmeta::write`]).
const STALLED_RENDER_ATTEMPTS: usize = 4;

/// How far the attempts of one unit of work got (see [`Docmeta::write`]): a unit whose last
/// attempt was rolled back to render may try again while each attempt gets further than the
/// one before (answers more renders from those made), or has not stalled
/// [`STALLED_RENDER_ATTEMPTS`] times in a row.
#[derive(Debug, Default)]
struct RenderProgress {
    attempts: usize,
    best: usize,
    stalled: usize,
}

impl RenderProgress {
    /// Notes an attempt rolled back to render; fails once the unit has stalled too long.
    fn rolled_back(&mut self, renders: &Renders) -> Result<()> {
        self.attempts += 1;
        if self.attempts == 1 || renders.hits() > self.best {
            self.best = self.best.max(renders.hits());
            self.stalled = 0;
            return Ok(());
        }
        self.stalled += 1;
        if self.stalled >= STALLED_RENDER_ATTEMPTS {
            return Err(Error::contended_finally(
                "rendering the templates of a change",
                "the values its templates read kept changing while it was written; nothing \
                 was changed",
            ));
        }
        Ok(())
    }
}

/// One attempt of a unit of work on the store's writer (see `Docmeta::attempt_unit`).
enum Attempt<T> {
    /// Rolled back: it needs template renders made with no transaction open.
    Render,
    /// Committed, or joined to a commit group: `commit` waits for the outcome.
    Ran {
        commit: PendingCommit,
        events: Vec<Event>,
        tasks_enqueued: bool,
        invalidated: Vec<MetadataTypeId>,
        unlink: Vec<String>,
        out: T,
    },
}

/// Attempts of a unit of work whose transaction conflicts with concurrent ones (see
/// [`Docmeta::retrying`]).
const CONTENDED_ATTEMPTS: u32 = 12;

/// The pause before attempt `tries + 1` of a unit that conflicted: random, up to 2 ms doubled
/// per attempt, at most 100 ms (about 0.5 s in all over every attempt).
fn contention_pause(tries: u32) -> std::time::Duration {
    let ceiling_us = (2_000u64 << tries.min(6)).min(100_000);
    let mut bytes = [0u8; 8];
    let random = getrandom::fill(&mut bytes).map_or(ceiling_us / 2, |()| u64::from_le_bytes(bytes));
    std::time::Duration::from_micros(ceiling_us / 4 + random % (ceiling_us * 3 / 4))
}

/// What a unit of work collects while it runs, applied after it commits.
pub(crate) struct Unit<'a> {
    pub(crate) tx: Tx<'a>,
    /// The template renders of this unit, kept across its attempts.
    pub(crate) renders: &'a Renders,
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
    hooks: &'a Hooks,
}

impl<'a> Unit<'a> {
    fn new(tx: Tx<'a>, actor: Actor, renders: &'a Renders, hooks: &'a Hooks) -> Self {
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
            hooks,
        }
    }

    /// Runs `f` behind the savepoint `name`: when it fails, its statements are rolled back and
    /// the events, access changes, file removals and workflow events it added are forgotten,
    /// and its error is returned; the unit can go on.
    pub(crate) fn undoable<T>(
        &mut self,
        name: &'static str,
        f: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        let marks = (
            self.events.len(),
            self.access.len(),
            self.unlink.len(),
            self.workflow_events.len(),
        );
        self.tx.savepoint(name)?;
        // What `f` held back is sent before the savepoint ends, whether `f` failed or not, so
        // that its failure is `f`'s (undone by the rollback to the savepoint) and never the
        // savepoint's end's.
        let out = f(self);
        let flushed = self.tx.flush();
        let out = out.and_then(|v| flushed.map(|()| v));
        self.tx.end_savepoint(name, out.is_ok())?;
        if out.is_err() {
            self.events.truncate(marks.0);
            self.access.truncate(marks.1);
            self.unlink.truncate(marks.2);
            self.workflow_events.truncate(marks.3);
        }
        out
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
        (self.hooks.event)(self, &e);
        self.events.push(e);
        Ok(())
    }

    /// Removes what protects an object that is being deleted: its ACLs (in this transaction)
    /// and, after the commit, whatever the access snapshot holds of it. `kind` is the object's
    /// `app_label.model_name`.
    pub(crate) fn forget_object(&mut self, kind: &str, object: ObjectRef) -> Result<()> {
        self.tx.delete_acls_of(kind, object.id)?;
        self.access.push(AccessChange::ObjectRemoved(object));
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

    /// Events of the log, unfiltered (see [`Session::events`](crate::Session::events) for the permission-filtered view).
    pub fn events(&self, query: &EventQuery) -> Result<Vec<Event>> {
        self.read(|tx| tx.events(query))
    }

    // ----- access ----------------------------------------------------------------------------

    /// Whether `user` may do `permission` on `object` (the evaluator of `access::policy`),
    /// with every change committed before the call applied (see [`catch_up`](Self::catch_up));
    /// a catch-up that fails refuses.
    pub fn check(&self, user: UserId, permission: Permission, object: ObjectRef) -> bool {
        self.catch_up().is_ok() && self.check_now(user, permission, object)
    }

    /// [`check`](Self::check) on the state this process holds now, for an operation that
    /// caught up when it began.
    pub(crate) fn check_now(
        &self,
        user: UserId,
        permission: Permission,
        object: ObjectRef,
    ) -> bool {
        let mut stored = self.stored_ancestors(&[object]);
        self.inner
            .access
            .read()
            .check_with(&mut stored, user, permission, object)
    }

    /// The subset of `objects` on which `user` may do `permission` (after a
    /// [`catch_up`](Self::catch_up); none when it fails).
    pub fn filter(
        &self,
        user: UserId,
        permission: Permission,
        objects: &[ObjectRef],
    ) -> Vec<ObjectRef> {
        if self.catch_up().is_err() {
            return Vec::new();
        }
        let mut stored = self.stored_ancestors(objects);
        self.inner
            .access
            .read()
            .filter_with(&mut stored, user, permission, objects)
    }

    /// Why `user` may or may not do `permission` on `object`, with every change committed
    /// before the call applied (a catch-up that fails is ignored: the explanation is then of
    /// the state this process holds).
    pub fn explain(&self, user: UserId, permission: Permission, object: ObjectRef) -> Explanation {
        let _ = self.catch_up();
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

    /// A document with its metadata values and their types (for any caller: the session
    /// decides what its caller is shown), from the read cache or else read and kept there;
    /// `None` when there is no such document.
    pub(crate) fn document_with_metadata(
        &self,
        id: DocumentId,
    ) -> Result<Option<Arc<CachedDocument>>> {
        if let Some(entry) = self.inner.reads.get(id) {
            return Ok(Some(entry));
        }
        // Taken before the read begins (see `reads`).
        let generation = self.inner.reads.generation();
        let read = self.read(|tx| {
            let Some(document) = tx.document(id)? else {
                return Ok(None);
            };
            Ok(Some((document, tx.metadata_with_types_of_document(id)?)))
        })?;
        Ok(read.map(|(document, values)| self.inner.reads.insert(generation, document, values)))
    }

    /// [`document_with_metadata`](Self::document_with_metadata) when it is in the read cache;
    /// never reads the store (so it may run on an async runtime's workers).
    pub(crate) fn cached_document_with_metadata(
        &self,
        id: DocumentId,
    ) -> Option<Arc<CachedDocument>> {
        self.inner.reads.get(id)
    }

    // ----- units of work ---------------------------------------------------------------------

    /// Runs `f` in a read transaction.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        let _inside = InTransaction::enter();
        let mut tx = Tx::new(self.inner.store.begin(Mode::Read)?);
        let out = f(&mut tx)?;
        // Ending a read with COMMIT rather than ROLLBACK keeps SQLite's prepared statements valid.
        tx.commit()?;
        Ok(out)
    }

    /// Runs `f`, which runs one statement, as a read (see [`Store::begin_statement`]).
    pub(crate) fn read_statement<T>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        let _inside = InTransaction::enter();
        let mut tx = Tx::new(self.inner.store.begin_statement()?);
        let out = f(&mut tx)?;
        tx.commit()?;
        Ok(out)
    }

    /// Runs `f` in a write transaction with no events (internal bookkeeping: task claims and
    /// states, settings by key), at the store's bookkeeping isolation (see
    /// `Store::begin_bookkeeping`: each statement of `f` must be safe on its own); `f` runs
    /// again when the transaction conflicted with concurrent ones (see [`Docmeta::retrying`]).
    pub(crate) fn write_system<T>(&self, mut f: impl FnMut(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        self.retrying(|| {
            let mut tx = Tx::new(self.inner.store.begin_bookkeeping()?);
            let out = f(&mut tx)?;
            tx.commit()?;
            Ok(out)
        })
    }

    /// Runs `attempt` (one whole unit of work: begin, work, commit) again while it fails
    /// because its transaction conflicted with concurrent ones ([`Error::is_busy`]: on
    /// PostgreSQL, a serialization failure or a deadlock, after which nothing of the attempt
    /// is stored), up to [`CONTENDED_ATTEMPTS`] times, after a short random pause that grows
    /// with each attempt (so that the same units do not collide again). It gives up early when
    /// the deadline of this handle has passed. The last conflict is returned as is.
    ///
    /// Attempts after the first run one at a time in this process (waiting up to a second for
    /// the previous one to finish): on a record many units write at once (one document edited
    /// by every client), the units that lost would otherwise collide with each other again on
    /// each attempt; one at a time, each competes only with first attempts.
    fn retrying<T>(&self, mut attempt: impl FnMut() -> Result<T>) -> Result<T> {
        let mut tries = 0;
        let mut gate = None;
        loop {
            tries += 1;
            let result = attempt();
            drop(gate.take());
            match result {
                Err(e) if e.retries_unit() && tries < CONTENDED_ATTEMPTS => {
                    self.check_deadline()?;
                    std::thread::sleep(contention_pause(tries));
                    gate = self
                        .inner
                        .retry_gate
                        .try_lock_for(std::time::Duration::from_secs(1));
                }
                other => return other,
            }
        }
    }

    /// Whether units of work render their templates before taking the write lock. Not on
    /// PostgreSQL: its sequences are not rolled back with an attempt, so a document created in
    /// the unit gets a new id each time, its templates' inputs never match, and every attempt
    /// would only burn ids. There writers run at once (there is no write lock: see
    /// [`Docmeta::retrying`]) and templates render inside the unit's transaction, within the
    /// unit's budget and the [`RenderGate`].
    fn defers_renders(&self) -> bool {
        self.inner.store.dialect() != crate::store::Dialect::Postgres
    }

    /// The renders of a new unit of work of `actor` (see [`Renders`]).
    pub(crate) fn renders(&self, actor: Actor) -> Renders {
        Renders::new(
            self.now(),
            actor,
            self.inner.render_gate.clone(),
            self.inner.templates.budget(),
        )
    }

    /// Runs `f` in read transactions for `actor`, rendering the templates it needs between
    /// them, with no transaction open (on every store): an attempt that needs a render not made
    /// yet ends, the render is made, and `f` runs again in a new transaction (see
    /// [`Docmeta::write`] for the budget and the attempts).
    pub(crate) fn read_rendering<T>(
        &self,
        actor: Actor,
        mut f: impl FnMut(&mut Tx<'_>, &Renders) -> Result<T>,
    ) -> Result<T> {
        let renders = self.renders(actor);
        let mut progress = RenderProgress::default();
        loop {
            renders.begin_attempt(true);
            let out = self.read(|tx| f(tx, &renders));
            if renders.has_pending() {
                progress.rolled_back(&renders)?;
                renders.render_pending(self.templates())?;
                continue;
            }
            return out.map_err(|e| renders.take_refusal().unwrap_or(e));
        }
    }

    /// Runs `f` as one transaction for `actor`, then commits it when `commit` is true and rolls
    /// it back otherwise (dry runs).
    pub(crate) fn write_with<T: Send>(
        &self,
        actor: Actor,
        commit: bool,
        mut f: impl FnMut(&mut Unit<'_>) -> Result<T> + Send,
    ) -> Result<T> {
        if commit {
            return self.write(actor, f);
        }
        let renders = self.renders(actor);
        self.retrying(|| {
            let mut progress = RenderProgress::default();
            loop {
                renders.begin_attempt(self.defers_renders());
                let _inside = InTransaction::enter();
                let started = std::time::Instant::now();
                let tx = Tx::new(self.inner.store.begin(Mode::Write)?);
                let mut unit = Unit::new(tx, actor, &renders, &self.inner.hooks);
                let out = f(&mut unit);
                self.forget_compiled(&unit.invalidated);
                drop(unit);
                if renders.has_pending() {
                    renders.charge(started.elapsed());
                    progress.rolled_back(&renders)?;
                    renders.render_pending(self.templates())?;
                    continue;
                }
                return out.map_err(|e| renders.take_refusal().unwrap_or(e));
            }
        })
    }

    /// Runs `f` as one transaction for `actor`; after commit, applies access changes, drops
    /// stale compiled types, wakes the worker and notifies subscribers.
    ///
    /// Each attempt runs where the store runs its units of work ([`Store::run_unit`]: on
    /// SQLite, one writer thread for all of them), so `f` and its result must be `Send`.
    ///
    /// No template renders under the write lock (issue #32): an attempt of `f` that needs a
    /// template output not known yet is rolled back, the template is rendered on the calling
    /// thread with no transaction open (from inputs read in that attempt), and `f` runs again;
    /// the output is used when the template's inputs, read again under the lock, are equal (see
    /// [`Renders`]). A chain of templates (a default reading the value another default gives)
    /// takes one attempt per link. The unit goes on while each attempt gets further than the
    /// one before (answers more renders from those made); after [`STALLED_RENDER_ATTEMPTS`] in
    /// a row that do not (the values its templates read keep changing under it) it fails as a
    /// change that conflicted with concurrent ones ([`Error::is_busy`]), and every render and
    /// every attempt rolled back to render count against the unit's one render budget (2 s),
    /// past which its templates fail as too slow: so a unit holds the write lock only for its
    /// attempts, never for a render, and for no more than its budget in all. Each render takes
    /// a place of the [`RenderGate`] ([`Error::Throttled`] when there is none). On PostgreSQL
    /// templates render inside the transaction (see `defers_renders`), and a unit whose
    /// transaction conflicted with a concurrent one (a serialization failure or a deadlock:
    /// nothing of it was stored) runs again as a whole (see [`Docmeta::retrying`]). `f` may
    /// therefore run more than once: it must have no effect outside its unit.
    ///
    /// [`Store::run_unit`]: crate::store::Store::run_unit
    pub(crate) fn write<T: Send>(
        &self,
        actor: Actor,
        mut f: impl FnMut(&mut Unit<'_>) -> Result<T> + Send,
    ) -> Result<T> {
        let mut renders = self.renders(actor);
        let (events, tasks_enqueued, unlink, out) =
            self.retrying(|| self.commit_unit(actor, &mut renders, &mut f))?;
        self.after_commit(events, tasks_enqueued, unlink);
        Ok(out)
    }

    /// One run of a unit of work, committed, its access changes applied: the part of
    /// [`Docmeta::write`] that runs again when its transaction conflicts with concurrent ones.
    #[allow(clippy::type_complexity)]
    fn commit_unit<T: Send>(
        &self,
        actor: Actor,
        renders: &mut Renders,
        f: &mut (impl FnMut(&mut Unit<'_>) -> Result<T> + Send),
    ) -> Result<(Vec<Event>, bool, Vec<String>, T)> {
        let mut progress = RenderProgress::default();
        loop {
            renders.begin_attempt(self.defers_renders());
            let unit_renders = &mut *renders;
            let unit_f = &mut *f;
            // The attempt's own time on the writer (what it held the write lock for), not the
            // wait for its turn.
            let (ran, took) = self.on_writer(move || {
                let started = std::time::Instant::now();
                let ran = self.attempt_unit(actor, unit_renders, unit_f);
                (ran, started.elapsed())
            })?;
            let ran = match ran {
                Ok(ran) => ran,
                Err(e) => return Err(renders.take_refusal().unwrap_or(e)),
            };
            let Attempt::Ran {
                commit,
                events,
                tasks_enqueued,
                invalidated,
                unlink,
                out,
            } = ran
            else {
                // Rolled back: the renders it needs are made here, with no transaction open.
                renders.charge(took);
                progress.rolled_back(renders)?;
                renders.render_pending(self.templates())?;
                continue;
            };
            let committed = commit.wait();
            // Again now that the commit is decided: a type compiled meanwhile, from the
            // state before it (or from a commit that failed), must go too.
            self.forget_compiled(&invalidated);
            committed?;
            // Before the unit is acknowledged: a read after it never gets an older cached copy.
            self.inner.reads.invalidate();
            return Ok((events, tasks_enqueued, unlink, out));
        }
    }

    /// Runs `work` where the store runs its units of work (see [`Store::run_unit`]).
    ///
    /// [`Store::run_unit`]: crate::store::Store::run_unit
    fn on_writer<R: Send>(&self, work: impl FnOnce() -> R + Send) -> Result<R> {
        let mut work = Some(work);
        let mut out = None;
        self.inner.store.run_unit(&mut || {
            if let Some(work) = work.take() {
                out = Some(work());
            }
        });
        out.ok_or_else(|| {
            Error::storage(
                "running a unit of work",
                format!("{} did not run it", self.inner.store.describe()),
            )
        })
    }

    /// One attempt of a unit of work, on the store's writer: runs `f`, then commits (or joins
    /// the open commit group, whose outcome the caller waits for off the writer). A unit that
    /// changes access commits at once and applies its changes to the snapshot here, in commit
    /// order.
    fn attempt_unit<T>(
        &self,
        actor: Actor,
        renders: &Renders,
        f: &mut impl FnMut(&mut Unit<'_>) -> Result<T>,
    ) -> Result<Attempt<T>> {
        let _inside = InTransaction::enter();
        // A unit's transaction: concurrent units may share one commit (see `begin_unit`).
        let tx = Tx::new(self.inner.store.begin_unit()?);
        // Waiting for the write lock may have used up the time: no work for nothing.
        self.check_deadline()?;
        let mut unit = Unit::new(tx, actor, renders, &self.inner.hooks);
        let result = f(&mut unit).and_then(|out| {
            (self.inner.hooks.before_commit)(self, &mut unit)?;
            Ok(out)
        });
        if renders.has_pending() {
            // Rolled back: the caller renders what it needs and runs it again.
            self.forget_compiled(&unit.invalidated);
            return Ok(Attempt::Render);
        }
        let out = match result {
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
        // The last moment to give up: past the deadline the caller may already have been told
        // the change failed, so it must not happen (dropping `tx` rolls it back).
        if let Err(e) = self.check_deadline() {
            self.forget_compiled(&invalidated);
            return Err(e);
        }
        // Access changes reach the snapshot in the order their transactions committed: two
        // units of this process editing one ACL at once must not leave the older permissions.
        // Such a unit commits now (`commit_now`: a SQLite commit group ends with it rather than
        // waiting for the units behind it).
        let local_events: Vec<i64> = events
            .iter()
            .filter(|e| crate::events::changes_shared_state(&e.name))
            .map(|e| e.id.0)
            .collect();
        let commit = if access.is_empty() && local_events.is_empty() {
            let joined = tx.commit_pending();
            // The units after this one in its commit group must not use a type compiled
            // before its change.
            self.forget_compiled(&invalidated);
            joined?
        } else {
            let order = self.inner.access_order.lock();
            let committed = tx.commit_now();
            self.forget_compiled(&invalidated);
            committed?;
            self.inner.reads.invalidate();
            // Applied and remembered as local together, so a reload of the snapshot from the
            // store (`reload_access_at`) sees either both or neither.
            let mut snapshot = self.inner.access.write();
            for change in access {
                apply(&mut snapshot, change);
            }
            self.inner.local_access_events.lock().extend(local_events);
            drop(snapshot);
            drop(order);
            PendingCommit::done()
        };
        Ok(Attempt::Ran {
            commit,
            events,
            tasks_enqueued,
            invalidated,
            unlink,
            out,
        })
    }

    /// What follows the commit of a unit of work: deletes the files it unlinked, wakes the
    /// worker and notifies subscribers.
    fn after_commit(&self, events: Vec<Event>, tasks_enqueued: bool, unlink: Vec<String>) {
        for name in unlink {
            // Moved aside, kept a day for backups that started before the commit. One that
            // cannot be moved is unreferenced, which is harmless: never served, never backed up.
            let _ = self.inner.files.delete(&name);
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
        let shapers = tx.metadata_type_shapers(id)?.unwrap_or_default();
        let c = Arc::new(CompiledMetadataType::new(t, &self.inner.classes)?.shaped_by(shapers));
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

    /// Gives an application kind its existence check (see [`KindRegistry::set_existence`]):
    /// an ACL on an object the check denies is refused as not found. Without one, an object of
    /// an application kind exists once declared with [`Docmeta::set_object_parents`].
    pub fn set_kind_existence(
        &self,
        kind: ObjectKind,
        exists: impl Fn(i64) -> bool + Send + Sync + 'static,
    ) -> Result<()> {
        self.inner.kinds.write().set_existence(kind, exists)
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
            // Followed by every other process on the database (see `follow`).
            u.event(
                crate::events::names::OBJECT_PARENTS_SET,
                EventObject {
                    kind: kinds.name(object.kind),
                    id: object.id,
                    label: String::new(),
                },
                None,
            )?;
            u.access.push(AccessChange::Parents {
                object,
                parents: parents.to_vec(),
            });
            Ok(())
        })
    }

    /// Runs the hook of a document created in `u` (workflows start on it).
    pub(crate) fn document_created(&self, u: &mut Unit<'_>, doc: &Document) -> Result<()> {
        (self.inner.hooks.document_created)(self, u, doc)
    }

    /// The current time as docmeta sees it.
    pub(crate) fn now(&self) -> chrono::DateTime<Utc> {
        Utc::now()
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
            roles.iter().all(|r| r.label != "late"),
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
        assert_eq!(
            roles,
            vec![crate::Role {
                id,
                label: "in time".to_owned()
            }]
        );
    }
}

#[cfg(test)]
mod writer_thread_tests {
    use super::*;

    #[test]
    fn a_unit_that_panics_on_the_writer_thread_changes_nothing_and_the_next_unit_commits() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Docmeta::builder()
            .data_dir(dir.path())
            .worker(false)
            .open()
            .expect("open");
        let session = db.system();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            session.write(|u| {
                session.create_role_in(u, "doomed")?;
                panic!("a unit of work panicking on the writer thread");
                #[allow(unreachable_code)]
                Ok(())
            })
        }));
        assert!(panicked.is_err(), "the panic reaches the caller");
        session.create_role("kept").expect("the next unit commits");
        let labels: Vec<String> = session
            .roles()
            .expect("roles")
            .into_iter()
            .map(|r| r.label)
            .collect();
        assert_eq!(labels, ["kept"]);
    }
}
