//! One truth across processes: before a process decides anything for a request, it applies
//! every change that any process committed before the request started.
//!
//! A process keeps some state in memory: the access snapshot (who may do what), the number that
//! tells the server's login cache when credentials changed, compiled metadata types, and the
//! read cache. Its own changes reach that state before they are acknowledged. Another process's
//! changes (a second server on one PostgreSQL database, a command beside a server on a SQLite
//! file) reach it here: [`Docmeta::catch_up`] reads, in one indexed statement, the events that
//! change such state (`events::changes_shared_state`, marked `follow` when written) that this
//! process has not applied, and applies them: a created, deleted or retyped document by reading
//! its type again, anything else by reloading the snapshot. What it applies is read from the
//! state the store holds now, never replayed from the event, so applying one twice or out of
//! order leaves the same result.
//!
//! It costs nothing when nothing changed: on SQLite one read of the WAL index's commit counter
//! (no lock, no transaction: `store::sqlite::wal_index`) tells that no connection committed
//! since the last look; on PostgreSQL the statement reads no row. Many
//! callers at once share one read: a catch-up that *started* after a caller's request covers
//! that caller, so a caller waits for the one running only if it started too early.
//!
//! Where the events are read from: SQLite commits one transaction at a time, so event ids are
//! committed in id order and "every followed event after the newest id seen" is complete. On
//! PostgreSQL writers commit concurrently; each read starts at the oldest transaction that was
//! still running at the previous read (`pg_snapshot_xmin`), whose events may not have been
//! visible then, and remembers the ids it applied so the events it reads again are skipped.
//!
//! Imports only the layers below the kernel.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::Mutex;
use rustc_hash::FxHashSet;

use super::{Docmeta, load_access};
use crate::access::{ObjectKind, ObjectRef};
use crate::error::Result;
use crate::events::names;
use crate::model::DocumentId;
use crate::store::FollowedEvent;

/// How far a process has followed the events other processes commit (see the module
/// documentation).
pub(crate) struct Follow {
    /// Where the next read starts; held by the one catch-up that runs at a time.
    state: Mutex<FollowState>,
    /// When the newest completed catch-up started, in nanoseconds after `epoch` (0: none yet).
    covered: AtomicU64,
    epoch: Instant,
    /// `FollowState::data_version` (`UNKNOWN` for none), readable without the state's lock:
    /// a request on an async worker compares the store's data version with it and, when they
    /// are equal, knows without waiting that nothing was committed since the last read.
    /// Each request compares on its own: the store's answer takes no lock (one `pread` on
    /// SQLite), and requests waiting for each other's comparison cost more than their own.
    applied_version: AtomicU64,
}

const UNKNOWN: u64 = u64::MAX;

#[derive(Default)]
struct FollowState {
    /// The `mark` of the last read (see `store::reads::FollowedSince`).
    mark: i64,
    /// The followed events at or after `mark` that this process has applied (PostgreSQL reads
    /// a transaction at the mark again).
    applied: FxHashSet<i64>,
    /// The `version` of the last read.
    version: String,
    /// The store's data version before the last read ([`crate::store::Store::data_version`]).
    data_version: Option<u64>,
}

impl Follow {
    pub(crate) fn new() -> Follow {
        Follow {
            state: Mutex::new(FollowState::default()),
            covered: AtomicU64::new(0),
            epoch: Instant::now(),
            applied_version: AtomicU64::new(UNKNOWN),
        }
    }

    fn nanos(&self, at: Instant) -> u64 {
        // +1: an instant at the epoch itself is still after "no catch-up yet" (0).
        u64::try_from(at.saturating_duration_since(self.epoch).as_nanos())
            .unwrap_or(u64::MAX)
            .saturating_add(1)
    }

    /// Whether a catch-up that started at or after `at` has completed.
    fn covers(&self, at: Instant) -> bool {
        self.covered.load(Ordering::SeqCst) >= self.nanos(at)
    }

    /// Records the store's data version before the read just applied (held state lock).
    fn applied(&self, state: &mut FollowState, data_version: Option<u64>) {
        state.data_version = data_version;
        self.applied_version
            .store(data_version.unwrap_or(UNKNOWN), Ordering::SeqCst);
    }
}

thread_local! {
    /// How many transactions of docmeta this thread is inside: a decision made inside one
    /// belongs to an operation that caught up before it began.
    static IN_TRANSACTION: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Marks the current thread as inside a transaction of docmeta while it lives.
pub(crate) struct InTransaction(());

impl InTransaction {
    pub(crate) fn enter() -> InTransaction {
        IN_TRANSACTION.with(|n| n.set(n.get() + 1));
        InTransaction(())
    }
}

impl Drop for InTransaction {
    fn drop(&mut self) {
        IN_TRANSACTION.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

fn in_transaction() -> bool {
    IN_TRANSACTION.with(|n| n.get() > 0)
}

/// What a batch of other processes' events asks of this process.
#[derive(Default)]
struct Effects {
    /// Reload the whole access snapshot.
    reload: bool,
    /// Read these documents' types again (created, retyped or deleted).
    documents: Vec<DocumentId>,
    credentials: bool,
    metadata_types: bool,
}

impl Effects {
    fn of(events: &[&FollowedEvent]) -> Effects {
        let mut out = Effects::default();
        for e in events {
            match e.name.as_str() {
                names::DOCUMENT_CREATED
                | names::DOCUMENT_TYPE_CHANGED
                | names::DOCUMENT_DELETED
                    if e.target_kind == "documents.document" =>
                {
                    out.documents.push(DocumentId(e.target_id));
                }
                names::METADATA_TYPE_EDITED => out.metadata_types = true,
                names::METADATA_TYPE_DELETED => {
                    out.metadata_types = true;
                    out.reload = true;
                }
                names::USER_EDITED => {
                    out.credentials = true;
                    out.reload = true;
                }
                _ => out.reload = true,
            }
        }
        out
    }
}

impl Docmeta {
    /// Applies every change that any process committed to this database before this call
    /// started: grants and revocations, memberships, users (their passwords too, for a login
    /// cache keyed by [`credentials_epoch`](Self::credentials_epoch)), created, moved and
    /// deleted documents, edited metadata types. Sessions call it before they decide anything
    /// (see [`Session::consistent_from`](crate::Session::consistent_from)), so an application
    /// rarely needs it; a process that keeps its own cache of docmeta's answers calls it
    /// before it trusts that cache. One cheap read when nothing changed (none at all on SQLite).
    pub fn catch_up(&self) -> Result<()> {
        self.catch_up_since(Instant::now())
    }

    /// [`catch_up`](Self::catch_up) for a request that started at `since`: nothing to do when
    /// a catch-up that started at or after it has completed (many concurrent requests share
    /// one). Inside a transaction of docmeta it does nothing: the operation caught up before
    /// it began.
    pub fn catch_up_since(&self, since: Instant) -> Result<()> {
        let follow = &self.inner.follow;
        if in_transaction() || follow.covers(since) {
            return Ok(());
        }
        let mut state = follow.state.lock();
        // One that started after `since` may have completed while this call waited.
        if follow.covers(since) {
            return Ok(());
        }
        let started = Instant::now();
        self.catch_up_locked(&mut state)?;
        follow
            .covered
            .fetch_max(follow.nanos(started), Ordering::SeqCst);
        Ok(())
    }

    /// Whether every change committed before `since` is applied already, found without a
    /// round trip to a database server and without waiting (for callers on an async runtime,
    /// which call [`catch_up_since`](Self::catch_up_since) on a blocking thread only when this
    /// says no): a catch-up that started after `since` has completed, or the store tells
    /// cheaply that nothing was committed since the last one (SQLite).
    pub fn caught_up_since(&self, since: Instant) -> bool {
        let follow = &self.inner.follow;
        if follow.covers(since) {
            return true;
        }
        // Not the state's lock, which a catch-up holds while it reads: the applied version is
        // stored once everything committed before it was applied, so equal versions mean
        // nothing is missing.
        let applied = follow.applied_version.load(Ordering::SeqCst);
        if applied == UNKNOWN {
            return false;
        }
        let started = Instant::now();
        match self.inner.store.data_version() {
            Ok(Some(version)) if version == applied => {
                follow
                    .covered
                    .fetch_max(follow.nanos(started), Ordering::SeqCst);
                true
            }
            _ => false,
        }
    }

    /// A number that changes whenever a user is created, edited (password, name, activity,
    /// superuser status) or deleted: at once for this process's changes, and at the next
    /// [`catch_up`](Self::catch_up) for another process's on the same database. A cache of
    /// verified credentials that remembers it, and catches up before it trusts an entry, can
    /// tell when its entries may be stale (the HTTP server's login cache does).
    pub fn credentials_epoch(&self) -> u64 {
        self.inner.credentials_epoch.load(Ordering::SeqCst)
    }

    /// Picks up the changes other processes committed to the same database (see
    /// [`catch_up`](Self::catch_up)); returns whether it reloaded the whole access snapshot.
    /// The worker calls it every `access_refresh_ms`, so that a process with no requests does
    /// not fall behind by much.
    pub fn follow_access(&self) -> Result<bool> {
        let mut state = self.inner.follow.state.lock();
        let started = Instant::now();
        let reloaded = self.catch_up_locked(&mut state)?;
        let follow = &self.inner.follow;
        follow
            .covered
            .fetch_max(follow.nanos(started), Ordering::SeqCst);
        Ok(reloaded)
    }

    /// Rebuilds the access snapshot from the store (done at open; also useful after another
    /// process changed grants outside docmeta).
    pub fn reload_access(&self) -> Result<()> {
        let mut state = self.inner.follow.state.lock();
        let _order = self.inner.access_order.lock();
        self.reload_locked(&mut state)
    }

    /// The catch-up itself, with the follow state held; returns whether it reloaded the
    /// principals and ACLs.
    fn catch_up_locked(&self, state: &mut FollowState) -> Result<bool> {
        // Read before the log: whatever commits after it changes it again.
        let data_version = self.inner.store.data_version()?;
        if data_version.is_some() && data_version == state.data_version {
            return Ok(false);
        }
        let read = self.read_statement(|tx| tx.followed_since(state.mark))?;
        if read.version != state.version {
            // Something committed since the last look, perhaps another process's document
            // edit: no cached read from before may be served.
            self.inner.reads.invalidate();
        }
        if self.fresh(state, &read.events).is_empty() {
            self.forget_local(&read.events);
            state.mark = read.mark;
            state.applied = read.events.iter().map(|e| e.id).collect();
            state.version = read.version;
            self.inner.follow.applied(state, data_version);
            return Ok(false);
        }
        // Something to apply. Read again, together with what it changed, in one transaction
        // and with `access_order` held: no change of this process commits meanwhile, so none
        // is overwritten by a state read before it.
        let _order = self.inner.access_order.lock();
        let kinds = self.inner.kinds.read().clone();
        let (read, effects, principals, types) = self.read(|tx| {
            let read = tx.followed_since(state.mark)?;
            let effects = Effects::of(&self.fresh(state, &read.events));
            let principals = if effects.reload {
                Some(load_access(tx, &kinds, false)?)
            } else {
                None
            };
            let types = if effects.documents.is_empty() {
                Vec::new()
            } else {
                tx.types_of_documents(&effects.documents)?
            };
            Ok((read, effects, principals, types))
        })?;
        {
            let mut snapshot = self.inner.access.write();
            if let Some(principals) = principals {
                snapshot.replace_all_but_documents(principals);
            }
            for d in &effects.documents {
                let object = ObjectRef::new(ObjectKind::DOCUMENT, d.0);
                match types.iter().find(|(id, _)| id == d) {
                    Some((_, t)) => snapshot
                        .set_parents(object, vec![ObjectRef::new(ObjectKind::DOCUMENT_TYPE, t.0)]),
                    None => snapshot.remove_object(object),
                }
            }
        }
        if effects.credentials {
            self.inner.credentials_epoch.fetch_add(1, Ordering::SeqCst);
        }
        if effects.metadata_types {
            self.inner
                .compiled_generation
                .fetch_add(1, Ordering::SeqCst);
            self.inner.compiled.write().clear();
        }
        self.inner.reads.invalidate();
        self.forget_local(&read.events);
        state.mark = read.mark;
        state.applied = read.events.iter().map(|e| e.id).collect();
        state.version = read.version;
        self.inner.follow.applied(state, data_version);
        Ok(effects.reload)
    }

    /// The events of `events` that this process has not applied: neither read before nor its
    /// own.
    fn fresh<'e>(
        &self,
        state: &FollowState,
        events: &'e [FollowedEvent],
    ) -> Vec<&'e FollowedEvent> {
        let local = self.inner.local_access_events.lock();
        events
            .iter()
            .filter(|e| !state.applied.contains(&e.id) && !local.contains(&e.id))
            .collect()
    }

    /// This process's own events among `events` need no longer be told apart: from now on they
    /// are among the applied ones. (An event whose id was recorded after a read saw it is
    /// never read again and would stay: the list is cut when it grows long, which at worst
    /// applies such an event once more.)
    fn forget_local(&self, events: &[FollowedEvent]) {
        let mut local = self.inner.local_access_events.lock();
        local.retain(|id| !events.iter().any(|e| e.id == *id));
        if local.len() > 4096 {
            local.clear();
        }
    }

    /// Replaces the snapshot with one read whole from the store, and the follow state with the
    /// position of that read (one transaction: the snapshot holds exactly the events read
    /// with it). Called with `access_order` held, so no change of this process commits
    /// meanwhile.
    fn reload_locked(&self, state: &mut FollowState) -> Result<()> {
        let kinds = self.inner.kinds.read().clone();
        let (snapshot, read) = self.read(|tx| {
            let read = tx.followed_horizon()?;
            Ok((load_access(tx, &kinds, true)?, read))
        })?;
        *self.inner.access.write() = snapshot;
        // Everything this process applied is in the state just read.
        self.inner.local_access_events.lock().clear();
        self.inner.reads.invalidate();
        state.mark = read.mark;
        state.applied = read.events.iter().map(|e| e.id).collect();
        state.version = read.version;
        self.inner.follow.applied(state, None);
        Ok(())
    }
}
