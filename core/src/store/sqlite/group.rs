//! Group commit of the SQLite store: concurrent units of work share one transaction and one
//! commit, run one after another on one writer thread.
//!
//! SQLite has one writer at a time, and each commit appends every page it changed to the WAL
//! (and every few hundred pages a checkpoint copies them back, with two `fsync`s). Under
//! concurrent writes most of the pages are the same ones (the event log's last page, the
//! indexes), so units that wait for the writer anyway share one transaction:
//!
//! - the kernel hands each attempt of a unit of work to the store ([`Group::run_unit`]); a
//!   store in a file runs it on its writer thread (a one-thread pool), the caller's thread
//!   sleeping meanwhile, and counts it as arriving while it is queued there;
//! - the first unit to take the writer connection begins the transaction (`BEGIN IMMEDIATE`);
//! - each unit runs its own work inside its own `SAVEPOINT`: a unit that fails (or is
//!   dropped) rolls back to it, which undoes its work and nothing else;
//! - a unit that finished releases its savepoint and joins the group ([`Membership::join`]).
//!   If other units are queued, it leaves the transaction open for the next one; the last
//!   unit (nobody else queued), or the one that finds the group full ([`MAX_MEMBERS`]) or old
//!   ([`MAX_AGE`]), commits for everyone;
//! - joining returns a [`PendingCommit`]: the writer thread goes on to the next unit at once,
//!   and the unit's own thread waits on it for the outcome of that one `COMMIT`. The kernel
//!   applies a unit's after-commit work (events to followers, caches) only once it returned
//!   `Ok`, and a failed commit fails every member. A unit that changes access commits at once
//!   (`Transaction::commit_now`), so the access snapshot is changed in commit order.
//!
//! The writer thread is there for speed, not correctness: units queued behind one another run
//! back to back on one thread with the connection and its statement cache warm, instead of
//! each caller's thread being woken in turn to take the connection (measured in docs/storage.md,
//! "Group commit on SQLite": PATCH throughput up 15%). Its work must be `Send`; a store in
//! memory has no writer thread and runs each unit on its caller's thread, taking the connection
//! in turn.
//!
//! Anything else that takes the writer connection (system writes, migrations, backups, the
//! health check) first commits an open group ([`Group::lock_writer`]), so no group waits on
//! a connection nobody will hand back. Durability is that of a commit of its own: a member is
//! acknowledged after SQLite's `COMMIT` returned, which in WAL mode with `synchronous =
//! NORMAL` survives the process being killed (not a power loss, as before).
//!
//! A unit's deadline (`Docmeta::with_deadline`) is checked before it joins its group; the
//! group's commit may come later by the work of the members after it, which [`MAX_AGE`] and
//! [`MAX_MEMBERS`] bound (a member finishing past them commits at once). A group only forms
//! while units queue for the writer: alone, a unit commits at once, exactly as without
//! grouping.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};
use rusqlite::Connection;
use rustc_hash::FxHashMap;

use super::conn::run_cached;
use super::errors::sqlite_error;
use crate::error::{Error, Result};
use crate::store::PendingCommit;

/// Most units in one group: past it the next member commits even with others waiting.
pub(super) const MAX_MEMBERS: usize = 64;
/// Oldest a group gets: a member finishing later than this after the group began commits even
/// with others waiting, so the first member's wait is bounded by this plus one unit's work.
pub(super) const MAX_AGE: Duration = Duration::from_millis(5);

/// The name of a unit's savepoint (one unit at a time holds the connection).
const SAVEPOINT: &str = "SAVEPOINT docmeta_unit";
const RELEASE: &str = "RELEASE docmeta_unit";
const ROLLBACK_TO: &str = "ROLLBACK TO docmeta_unit";

/// The writer connection and the group open on it.
pub(super) struct Writer {
    pub(super) conn: Connection,
    open: Option<OpenGroup>,
}

impl Writer {
    pub(super) fn new(conn: Connection) -> Writer {
        Writer { conn, open: None }
    }
}

/// The transaction open on the writer connection for a group.
#[derive(Debug)]
struct OpenGroup {
    id: u64,
    began: Instant,
    /// Units whose work is in the transaction and that wait for its commit.
    members: usize,
}

/// The outcomes of finished groups, for their waiting members.
#[derive(Default)]
struct Outcomes {
    /// Groups finish in order (one is open at a time): every id up to this one is finished.
    finished: u64,
    /// Failed groups: the commit's error, and how many members have yet to read it.
    failed: FxHashMap<u64, (Failure, usize)>,
}

/// Why a group's commit failed, for each of its members.
#[derive(Debug, Clone)]
struct Failure {
    /// SQLite said the database or its journal could not grow (`SQLITE_FULL`).
    full: bool,
    message: String,
}

impl Failure {
    fn error(&self) -> Error {
        const OPERATION: &str = "committing a transaction";
        if self.full {
            Error::storage_full(OPERATION, self.message.clone())
        } else {
            Error::storage(OPERATION, self.message.clone())
        }
    }
}

/// The finished groups, shared with the members waiting for their outcome.
#[derive(Default)]
struct Finished {
    outcomes: Mutex<Outcomes>,
    changed: Condvar,
}

impl Finished {
    /// Waits until group `id` has finished; its outcome for one member.
    fn outcome(&self, id: u64) -> Result<()> {
        let mut outcomes = self.outcomes.lock();
        while outcomes.finished < id {
            self.changed.wait(&mut outcomes);
        }
        let Some((failure, unread)) = outcomes.failed.get_mut(&id) else {
            return Ok(());
        };
        let error = failure.error();
        *unread -= 1;
        if *unread == 0 {
            outcomes.failed.remove(&id);
        }
        Err(error)
    }
}

/// Group commit state of one store.
pub(super) struct Group {
    writer: Mutex<Writer>,
    /// Units waiting to take the writer connection, or queued for the writer thread.
    arriving: AtomicUsize,
    next_id: AtomicU64,
    finished: Arc<Finished>,
    /// The thread that runs the units of work (see [`Group::run_unit`]); none in memory.
    thread: Option<rayon_core::ThreadPool>,
    /// [`MAX_AGE`] (tests change it).
    max_age: Duration,
    /// Groups that ended (tests check that units shared one).
    #[cfg(test)]
    ended: AtomicU64,
}

/// A unit of work's hold on the group: which group it is in.
pub(super) struct Membership<'a> {
    group: &'a Group,
    id: u64,
}

impl Group {
    /// The group commit state of the writer connection `conn`, with a writer thread for the
    /// units of work when `thread`.
    pub(super) fn new(conn: Connection, thread: bool) -> Result<Group> {
        let thread = match thread {
            true => Some(
                rayon_core::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .thread_name(|_| "docmeta-writer".to_owned())
                    .build()
                    .map_err(|e| Error::storage("starting the writer thread", e.to_string()))?,
            ),
            false => None,
        };
        Ok(Group {
            writer: Mutex::new(Writer::new(conn)),
            arriving: AtomicUsize::new(0),
            next_id: AtomicU64::new(1),
            finished: Arc::default(),
            thread,
            max_age: MAX_AGE,
            #[cfg(test)]
            ended: AtomicU64::new(0),
        })
    }

    /// Runs one attempt of a unit of work on the writer thread (here without one), counted
    /// as arriving while it is queued: the unit before it leaves the group open for it
    /// instead of committing alone. The units queued behind one another run back to back on
    /// one thread, which keeps the connection and its caches warm and never waits for a
    /// sleeping thread to take the connection; each caller sleeps until its unit has run and
    /// then (`PendingCommit::wait`) until its group has committed.
    pub(super) fn run_unit(&self, work: &mut (dyn FnMut() + Send)) {
        let Some(thread) = &self.thread else {
            return work();
        };
        self.arriving.fetch_add(1, Ordering::SeqCst);
        thread.install(|| {
            self.arriving.fetch_sub(1, Ordering::SeqCst);
            work()
        })
    }

    /// The writer connection with no group open on it (an open one is committed first), for
    /// anything but a unit of work.
    pub(super) fn lock_writer(&self) -> MutexGuard<'_, Writer> {
        let mut w = self.writer.lock();
        if w.open.is_some() {
            self.commit_group(&mut w);
        }
        w
    }

    /// Takes the writer connection for a unit of work: joins the open group or begins one,
    /// then opens the unit's savepoint.
    pub(super) fn begin_unit(&self) -> Result<(MutexGuard<'_, Writer>, Membership<'_>)> {
        self.arriving.fetch_add(1, Ordering::SeqCst);
        let mut w = self.writer.lock();
        self.arriving.fetch_sub(1, Ordering::SeqCst);
        if Self::lost(&w) {
            self.commit_group(&mut w);
        }
        let id = match &w.open {
            Some(open) => open.id,
            None => {
                run_cached(&w.conn, "BEGIN IMMEDIATE")
                    .map_err(|e| sqlite_error("starting a transaction", e))?;
                let id = self.next_id.fetch_add(1, Ordering::SeqCst);
                w.open = Some(OpenGroup {
                    id,
                    began: Instant::now(),
                    members: 0,
                });
                id
            }
        };
        if let Err(e) = run_cached(&w.conn, SAVEPOINT) {
            self.settle(&mut w, false);
            return Err(sqlite_error("starting a transaction", e));
        }
        Ok((w, Membership { group: self, id }))
    }

    /// Whether the group's transaction is still open on the connection. SQLite rolls a whole
    /// transaction back by itself on a few errors (a full disk, an I/O error): then the group
    /// is lost and must fail, and no later unit may run outside a transaction.
    fn lost(w: &Writer) -> bool {
        w.open.is_some() && w.conn.is_autocommit()
    }

    /// Ends the group's transaction: commits it, or rolls it back when it could not commit,
    /// and tells its members.
    fn commit_group(&self, w: &mut Writer) {
        let Some(open) = w.open.take() else {
            return;
        };
        #[cfg(test)]
        self.ended.fetch_add(1, Ordering::SeqCst);
        let outcome = if w.conn.is_autocommit() {
            Err(Failure {
                full: false,
                message: "the transaction was rolled back by SQLite after an error".to_owned(),
            })
        } else {
            run_cached(&w.conn, "COMMIT").map_err(|e| {
                let _ = run_cached(&w.conn, "ROLLBACK");
                Failure {
                    full: matches!(
                        &e,
                        rusqlite::Error::SqliteFailure(code, _)
                            if code.code == rusqlite::ErrorCode::DiskFull
                    ),
                    message: e.to_string(),
                }
            })
        };
        let mut outcomes = self.finished.outcomes.lock();
        outcomes.finished = open.id;
        if let Err(failure) = outcome
            && open.members > 0
        {
            outcomes.failed.insert(open.id, (failure, open.members));
        }
        drop(outcomes);
        self.finished.changed.notify_all();
    }

    /// Decides, as a unit hands the connection back, whether the group commits now: when no
    /// unit waits to join it, or it is full or old, or its transaction was lost, or the unit
    /// asked for it (`now`).
    fn settle(&self, w: &mut Writer, now: bool) {
        let Some(open) = &w.open else {
            return;
        };
        let alone = self.arriving.load(Ordering::SeqCst) == 0;
        if now
            || alone
            || open.members >= MAX_MEMBERS
            || open.began.elapsed() >= self.max_age
            || Self::lost(w)
        {
            self.commit_group(w);
        }
    }
}

impl Membership<'_> {
    /// The unit's work is done: keeps it in the group's transaction and commits the group when
    /// this unit is the last (or at once with `now`: see `Transaction::commit_now`). `w` is
    /// the writer connection the unit holds; it is handed back before this returns. The
    /// returned commit's `wait` returns once the group's commit has succeeded or failed.
    pub(super) fn join(self, mut w: MutexGuard<'_, Writer>, now: bool) -> Result<PendingCommit> {
        if let Err(e) = run_cached(&w.conn, RELEASE) {
            let error = sqlite_error("committing a transaction", e);
            Self::undo(&w.conn);
            self.group.settle(&mut w, false);
            return Err(error);
        }
        let lost = w.conn.is_autocommit();
        match &mut w.open {
            Some(open) if open.id == self.id && !lost => open.members += 1,
            // The group's transaction was lost (see `lost`) while this unit ran.
            _ => {
                self.group.settle(&mut w, false);
                return Err(Error::storage(
                    "committing a transaction",
                    "the transaction was rolled back by SQLite after an error",
                ));
            }
        }
        self.group.settle(&mut w, now);
        drop(w);
        let (finished, id) = (self.group.finished.clone(), self.id);
        Ok(PendingCommit::later(move || finished.outcome(id)))
    }

    /// The unit is dropped without commit: undoes its work (only its own), then hands the
    /// connection on or commits the group for the members already in it.
    pub(super) fn roll_back(self, w: &mut Writer) {
        Self::undo(&w.conn);
        self.group.settle(w, false);
    }

    fn undo(conn: &Connection) {
        if !conn.is_autocommit() {
            let _ = run_cached(conn, ROLLBACK_TO);
            let _ = run_cached(conn, RELEASE);
        }
    }
}

#[cfg(test)]
impl Group {
    /// Units waiting for the writer connection (tests line units up with it).
    pub(super) fn arriving(&self) -> usize {
        self.arriving.load(Ordering::SeqCst)
    }

    /// Groups that ended so far.
    pub(super) fn ended(&self) -> u64 {
        self.ended.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    use crate::error::{Error, Result};
    use crate::store::sqlite::SqliteStore;
    use crate::store::{Mode, Param, PendingCommit, Store, Transaction};

    /// The work of one unit: `Ok` commits it, `Err` drops it (a refused change).
    type Work = Box<dyn FnOnce(&mut dyn Transaction) -> Result<()> + Send>;

    /// A store whose groups never get too old while a test lines its units up.
    fn store(schema: &str) -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().expect("temporary directory");
        let mut store = SqliteStore::open(dir.path().join("db.sqlite3")).expect("store");
        store.writer.max_age = Duration::from_secs(600);
        let mut tx = store.begin(Mode::Write).expect("begin");
        for statement in schema.split(';').filter(|s| !s.trim().is_empty()) {
            tx.execute(statement, &[]).expect("schema");
        }
        tx.commit().expect("commit");
        (dir, store)
    }

    fn insert(tx: &mut dyn Transaction, value: &str) -> Result<()> {
        tx.execute("INSERT INTO t (v) VALUES (?1)", &[Param::Text(value)])
            .map(drop)
    }

    fn count(tx: &mut dyn Transaction, value: &str) -> Result<i64> {
        let mut n = 0;
        tx.query(
            "SELECT count(*) FROM t WHERE v = ?1",
            &[Param::Text(value)],
            &mut |r| {
                n = r.int(0)?;
                Ok(())
            },
        )?;
        Ok(n)
    }

    fn values(store: &SqliteStore) -> Vec<String> {
        let mut tx = store.begin(Mode::Read).expect("begin");
        let mut out = Vec::new();
        tx.query("SELECT v FROM t ORDER BY v", &[], &mut |r| {
            out.push(r.text(0)?);
            Ok(())
        })
        .expect("query");
        out
    }

    /// How the units of a test reach the writer connection.
    #[derive(Clone, Copy, PartialEq)]
    enum Via {
        /// Each on its own thread, taking the connection in turn.
        OwnThreads,
        /// Queued for the store's writer thread (`Store::run_unit`), as the kernel runs them.
        WriterThread,
    }

    /// Runs `first` and `others` as units of work that share one group: `first` holds the
    /// writer until every other unit waits for it. Returns each unit's outcome, `first`'s
    /// first (a dropped unit's outcome is its work's error).
    fn group(store: &SqliteStore, first: Work, others: Vec<Work>) -> Vec<Result<()>> {
        group_with(store, first, others, false, Via::OwnThreads)
    }

    /// [`group`], the first unit committing with `commit_now` when `first_now`, the units
    /// reaching the writer `via` their threads or the writer thread.
    fn group_with(
        store: &SqliteStore,
        first: Work,
        others: Vec<Work>,
        first_now: bool,
        via: Via,
    ) -> Vec<Result<()>> {
        let n = others.len();
        let unit = |work: Work,
                    begun: Option<mpsc::Sender<()>>,
                    go: Option<mpsc::Receiver<()>>|
         -> Result<PendingCommit> {
            let first = begun.is_some();
            let mut tx = store.begin_unit()?;
            let done = work(tx.as_mut());
            if let Some(begun) = begun {
                let _ = begun.send(());
            }
            if let Some(go) = go {
                let _ = go.recv();
            }
            match done {
                Ok(()) if first && first_now => tx.commit_now().map(|()| PendingCommit::done()),
                Ok(()) => tx.commit_pending(),
                Err(e) => Err(e),
            }
        };
        let run = |work: Work, begun: Option<mpsc::Sender<()>>, go: Option<mpsc::Receiver<()>>| {
            if via == Via::OwnThreads {
                return unit(work, begun, go)?.wait();
            }
            let mut args = Some((work, begun, go));
            let mut pending = None;
            store.run_unit(&mut || {
                if let Some((work, begun, go)) = args.take() {
                    pending = Some(unit(work, begun, go));
                }
            });
            pending.expect("the writer thread ran the unit")?.wait()
        };
        std::thread::scope(|scope| {
            let (begun_tx, begun) = mpsc::channel();
            let (go, go_rx) = mpsc::channel();
            let first = scope.spawn(move || run(first, Some(begun_tx), Some(go_rx)));
            begun.recv().expect("the first unit began");
            let others: Vec<_> = others
                .into_iter()
                .map(|w| scope.spawn(move || run(w, None, None)))
                .collect();
            let since = Instant::now();
            while store.writer.arriving() < n {
                assert!(since.elapsed() < Duration::from_secs(10), "units line up");
                std::thread::sleep(Duration::from_millis(1));
            }
            go.send(()).expect("go");
            std::iter::once(first)
                .chain(others)
                .map(|h| h.join().expect("no panic"))
                .collect()
        })
    }

    fn refused() -> Error {
        Error::InvalidInput("refused".to_owned())
    }

    /// Units `via` their threads or the writer thread, one refusing its change.
    fn a_refused_unit_leaves_the_others_of_its_group_committed(via: Via) {
        let (_dir, store) = store("CREATE TABLE t (v TEXT)");
        let before = store.writer.ended();
        let outcomes = group_with(
            &store,
            Box::new(|tx| insert(tx, "a")),
            vec![
                Box::new(|tx| {
                    insert(tx, "b")?;
                    Err(refused())
                }),
                Box::new(|tx| insert(tx, "c")),
            ],
            false,
            via,
        );
        assert!(outcomes[0].is_ok(), "{:?}", outcomes[0]);
        assert!(outcomes[1].is_err());
        assert!(outcomes[2].is_ok(), "{:?}", outcomes[2]);
        assert_eq!(values(&store), ["a", "c"]);
        assert_eq!(
            store.writer.ended() - before,
            1,
            "the units shared one commit"
        );
    }

    #[test]
    fn a_refused_unit_in_a_group_leaves_the_others_committed() {
        a_refused_unit_leaves_the_others_of_its_group_committed(Via::OwnThreads);
    }

    #[test]
    fn a_refused_unit_on_the_writer_thread_leaves_the_others_of_its_group_committed() {
        a_refused_unit_leaves_the_others_of_its_group_committed(Via::WriterThread);
    }

    fn each_member_sees_its_own_writes_and_the_group_commits_once(via: Via) {
        let (_dir, store) = store("CREATE TABLE t (v TEXT)");
        let sees_own = |value: &'static str| -> Work {
            Box::new(move |tx| {
                insert(tx, value)?;
                match count(tx, value)? {
                    1 => Ok(()),
                    n => Err(Error::InvalidInput(format!("{value} seen {n} times"))),
                }
            })
        };
        let before = store.writer.ended();
        let outcomes = group_with(
            &store,
            sees_own("a"),
            vec![sees_own("b"), sees_own("c")],
            false,
            via,
        );
        for outcome in &outcomes {
            assert!(outcome.is_ok(), "{outcome:?}");
        }
        assert_eq!(values(&store), ["a", "b", "c"]);
        assert_eq!(
            store.writer.ended() - before,
            1,
            "the units shared one commit"
        );
    }

    #[test]
    fn each_member_of_a_group_sees_its_own_writes() {
        each_member_sees_its_own_writes_and_the_group_commits_once(Via::OwnThreads);
    }

    #[test]
    fn units_queued_for_the_writer_thread_share_one_commit() {
        each_member_sees_its_own_writes_and_the_group_commits_once(Via::WriterThread);
    }

    fn a_failed_group_commit_fails_every_member_and_the_writer_recovers(via: Via) {
        // A deferred foreign key is checked at COMMIT only: one member's dangling reference
        // makes the group's commit fail.
        let (_dir, store) = store(
            "CREATE TABLE t (v TEXT);
             CREATE TABLE p (id INTEGER PRIMARY KEY);
             CREATE TABLE c (p INTEGER REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED)",
        );
        let outcomes = group_with(
            &store,
            Box::new(|tx| insert(tx, "a")),
            vec![
                Box::new(|tx| tx.execute("INSERT INTO c (p) VALUES (42)", &[]).map(drop)),
                Box::new(|tx| insert(tx, "c")),
            ],
            false,
            via,
        );
        for outcome in &outcomes {
            assert!(
                matches!(outcome, Err(Error::Storage { .. })),
                "every member fails: {outcome:?}"
            );
        }
        assert!(values(&store).is_empty(), "nothing was committed");
        // The writer is usable again.
        let mut tx = store.begin_unit().expect("begin");
        insert(tx.as_mut(), "d").expect("insert");
        tx.commit().expect("commit");
        assert_eq!(values(&store), ["d"]);
    }

    #[test]
    fn a_failed_group_commit_fails_every_member() {
        a_failed_group_commit_fails_every_member_and_the_writer_recovers(Via::OwnThreads);
    }

    #[test]
    fn a_failed_group_commit_on_the_writer_thread_fails_every_member() {
        a_failed_group_commit_fails_every_member_and_the_writer_recovers(Via::WriterThread);
    }

    #[test]
    fn a_group_older_than_its_bound_commits_without_the_units_queued_behind_it() {
        let (_dir, mut store) = store("CREATE TABLE t (v TEXT)");
        store.writer.max_age = Duration::ZERO;
        let before = store.writer.ended();
        let outcomes = group(
            &store,
            Box::new(|tx| insert(tx, "a")),
            vec![Box::new(|tx| insert(tx, "b"))],
        );
        for outcome in &outcomes {
            assert!(outcome.is_ok(), "{outcome:?}");
        }
        assert_eq!(values(&store), ["a", "b"]);
        assert_eq!(
            store.writer.ended() - before,
            2,
            "each unit committed on its own"
        );
    }

    fn a_unit_committing_now_ends_its_group(via: Via) {
        let (_dir, store) = store("CREATE TABLE t (v TEXT)");
        let before = store.writer.ended();
        let outcomes = group_with(
            &store,
            Box::new(|tx| insert(tx, "a")),
            vec![Box::new(|tx| insert(tx, "b"))],
            true,
            via,
        );
        for outcome in &outcomes {
            assert!(outcome.is_ok(), "{outcome:?}");
        }
        assert_eq!(values(&store), ["a", "b"]);
        assert_eq!(
            store.writer.ended() - before,
            2,
            "the first committed without the unit queued behind it"
        );
    }

    #[test]
    fn a_unit_committing_now_ends_its_group_with_units_queued_behind_it() {
        a_unit_committing_now_ends_its_group(Via::OwnThreads);
    }

    #[test]
    fn a_unit_committing_now_on_the_writer_thread_ends_its_group() {
        a_unit_committing_now_ends_its_group(Via::WriterThread);
    }

    #[test]
    fn a_unit_alone_commits_at_once() {
        let (_dir, store) = store("CREATE TABLE t (v TEXT)");
        let mut tx = store.begin_unit().expect("begin");
        insert(tx.as_mut(), "a").expect("insert");
        tx.commit().expect("commit");
        // Another connection sees it: the commit did not wait for a group.
        let mut read = store.begin(Mode::Read).expect("begin");
        assert_eq!(count(read.as_mut(), "a").expect("count"), 1);
    }
}
