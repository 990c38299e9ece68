//! The unit of work, the write path: every change runs as one transaction with its events,
//! access changes and deferred effects (file removals, tasks, notifications), on the store's
//! writer, again when it conflicted with concurrent ones or needs template renders made with no
//! transaction open; and the read transactions beside it. The layers above the kernel take
//! part in a unit through its [`Hooks`].
//!
//! Part of `kernel` (layer 5 of `scripts/check-structure`): it may import only what `kernel`
//! may (see `kernel`'s module documentation).

use std::sync::atomic::Ordering;

use chrono::Utc;
use rustc_hash::FxHashMap;

use super::{AccessChange, Docmeta, InTransaction, Renders, apply};
use crate::access::ObjectRef;
use crate::error::{Error, Result};
use crate::events::{Event, EventObject};
use crate::model::*;
use crate::store::{Mode, PendingCommit, Tx};

/// A handler of a durable task, by name: runs the task with its JSON payload.
pub(crate) type TaskHandler = fn(&Docmeta, &str) -> Result<()>;

/// See [`Hooks::push_transition`].
pub(crate) type PushTransition = fn(
    &Docmeta,
    &mut Unit<'_>,
    Actor,
    DocumentId,
    &PushedChange,
) -> Result<Option<Option<WorkflowStateId>>>;

/// A page of the documents an actor may view, optionally of one type, in the order of their
/// values of a metadata type (the search index's; see `DocumentQuery::ordering`): how many
/// in all, and the ids of the page.
pub(crate) type SortedDocuments = fn(
    &Docmeta,
    Actor,
    Option<DocumentTypeId>,
    &OrderBy,
    PageRequest,
) -> Result<(usize, Vec<DocumentId>)>;

/// How the layers above the kernel take part in a unit of work, filled when an instance opens
/// (see `builder.rs`): workflow triggers, workflow launches, and the task handlers.
pub(crate) struct Hooks {
    /// Sees every event appended in a unit of work, before it commits.
    pub(crate) event: fn(&mut Unit<'_>, &Event),
    /// Runs last in a unit of work, in its transaction (workflow triggers).
    pub(crate) before_commit: fn(&Docmeta, &mut Unit<'_>) -> Result<()>,
    /// Runs in the unit of work that created a document.
    pub(crate) document_created: fn(&Docmeta, &mut Unit<'_>, &Document) -> Result<()>,
    /// Takes a workflow transition a replica pushed ([`PushedChange::Transition`] on a
    /// document) for an actor, in its unit of work: `Ok(None)` when taken (or already taken),
    /// `Ok(Some(state))` when in conflict (the instance's state now).
    pub(crate) push_transition: PushTransition,
    /// Lists documents in the order of a metadata type's values (search).
    pub(crate) sorted_documents: SortedDocuments,
    /// Task handlers by task name.
    pub(crate) tasks: FxHashMap<&'static str, TaskHandler>,
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
    /// The value types this unit read of metadata types it wrote values of (once per type).
    pub(crate) value_types: FxHashMap<MetadataTypeId, Option<ValueType>>,
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
            value_types: FxHashMap::default(),
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

    /// Appends an event to the log (in this transaction), with what it changed (see
    /// [`EventChange`]).
    pub(crate) fn event(
        &mut self,
        name: &str,
        target: EventObject,
        action: Option<EventObject>,
        changes: Changes,
    ) -> Result<()> {
        let e = self.tx.append_event(
            name,
            self.actor.user(),
            &target,
            action.as_ref(),
            changes.into(),
        )?;
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
    ///
    /// [`Store::begin_statement`]: crate::store::Store::begin_statement
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
    ///
    /// [`RenderGate`]: super::RenderGate
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
    /// No template renders under the write lock: an attempt of `f` that needs a
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
    /// [`RenderGate`]: super::RenderGate
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
            mut tx,
            events,
            access,
            tasks_enqueued,
            invalidated,
            unlink,
            ..
        } = unit;
        // Other processes waiting for events hear of them once it has committed (a rollback
        // tells nobody).
        if !events.is_empty()
            && let Err(e) = tx.notify_events()
        {
            self.forget_compiled(&invalidated);
            return Err(e);
        }
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
    /// task worker and the webhook deliverer, and notifies subscribers.
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
        if !events.is_empty() {
            // Before the subscribers, which may take their time: a follower reads at once.
            self.events_committed();
            // Each event may have queued webhook deliveries in its transaction.
            self.notify_deliveries();
        }
        self.publish(&events);
    }

    /// Runs the hook of a document created in `u` (workflows start on it).
    pub(crate) fn document_created(&self, u: &mut Unit<'_>, doc: &Document) -> Result<()> {
        (self.inner.hooks.document_created)(self, u, doc)
    }

    /// Takes a transition a replica pushed, for `actor`, in `u` (see
    /// [`Hooks::push_transition`]).
    pub(crate) fn push_transition(
        &self,
        u: &mut Unit<'_>,
        actor: Actor,
        document: DocumentId,
        change: &PushedChange,
    ) -> Result<Option<Option<WorkflowStateId>>> {
        (self.inner.hooks.push_transition)(self, u, actor, document, change)
    }
}

#[cfg(test)]
mod deadline_tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::events::EventQuery;

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
        let id = session.create_role("in time").expect("create").id;
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
