//! Persistence behind the [`Store`] trait.
//!
//! The trait is deliberately narrow: a store opens transactions, and a transaction runs SQL
//! statements with typed parameters and returns rows. Every statement docmeta runs is written
//! once, in this module (one file per table group: `records.rs`, `workflows.rs`, and `reads.rs`
//! for readers that span groups), in the SQL that SQLite and PostgreSQL share, with `?N`
//! placeholders that a PostgreSQL store rewrites to `$N`. The typed record methods are written
//! on a crate-private transaction wrapper, so an embedder cannot write past sessions' checks,
//! events and tasks through them; [`Store`] and [`Transaction`] stay public for implementing a
//! store (and for tools that need raw access, which bypasses every rule). Uniqueness rules are schema constraints, so they
//! hold under concurrent writers; a violated constraint surfaces as [`Error::Conflict`]. The
//! one exception, usernames that look alike (`users.username_key`, not unique because users
//! from before it may collide), is checked by a query in the inserting transaction, which
//! both stores serialise (one SQLite writer; PostgreSQL `SERIALIZABLE`).
//!
//! A statement too long for one line is written one clause a line, each line ending in a space
//! and a `\` line continuation, so the text the database receives is the one-line statement.
//!
//! Layer 3: imports only `error`, `model`, `config` and `events`; the only module with SQL
//! (`scripts/check-structure` checks both).

use std::sync::Arc;

use crate::error::{Error, Result};

mod access;
mod audit;
mod cabinets;
#[cfg(feature = "conformance")]
pub mod conformance;
mod devices;
mod documents;
mod events;
mod metadata;
#[cfg(feature = "postgres")]
pub mod postgres;
mod reads;
pub(crate) mod records;
mod replica;
pub(crate) use replica::REMOTE as REMOTE_FILE;
mod settings;
pub mod sqlite;
mod tasks;
mod webhooks;
mod workflows;

#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
pub(crate) use reads::FollowedEvent;
pub use sqlite::{SCHEMA_VERSION, SqliteStore};
pub(crate) use webhooks::{ClaimedDelivery, DeliveryOutcome, WebhookRow};

/// The migration that adds `users.username_key`; each store fills it for existing users in
/// Rust, in the migration's transaction (the key is not something SQL can compute).
pub(crate) const USERNAME_KEYS_MIGRATION: u32 = 8;

/// A statement parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Param<'a> {
    /// SQL NULL.
    Null,
    /// An integer (ids, booleans as 0/1, times as microseconds since the Unix epoch).
    Int(i64),
    /// Text.
    Text(&'a str),
}

impl From<i64> for Param<'_> {
    fn from(v: i64) -> Self {
        Param::Int(v)
    }
}

impl From<bool> for Param<'_> {
    fn from(v: bool) -> Self {
        Param::Int(i64::from(v))
    }
}

impl<'a> From<&'a str> for Param<'a> {
    fn from(v: &'a str) -> Self {
        Param::Text(v)
    }
}

impl<'a> From<&'a String> for Param<'a> {
    fn from(v: &'a String) -> Self {
        Param::Text(v)
    }
}

impl<'a, T: Into<Param<'a>>> From<Option<T>> for Param<'a> {
    fn from(v: Option<T>) -> Self {
        v.map_or(Param::Null, Into::into)
    }
}

/// A value read from a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// An integer.
    Int(i64),
    /// Text.
    Text(String),
}

/// One result row.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Row(pub Vec<Value>);

impl Row {
    fn value(&self, i: usize) -> Result<&Value> {
        self.0
            .get(i)
            .ok_or_else(|| Error::storage("reading a row", format!("no column {i}")))
    }

    /// Column `i` as an integer.
    pub fn int(&self, i: usize) -> Result<i64> {
        match self.value(i)? {
            Value::Int(v) => Ok(*v),
            other => Err(Error::storage(
                "reading a row",
                format!("column {i} is {other:?}, not an integer"),
            )),
        }
    }

    /// Column `i` as an integer or NULL.
    pub fn opt_int(&self, i: usize) -> Result<Option<i64>> {
        match self.value(i)? {
            Value::Null => Ok(None),
            _ => self.int(i).map(Some),
        }
    }

    /// Column `i` as a boolean stored as 0/1.
    pub fn bool(&self, i: usize) -> Result<bool> {
        self.int(i).map(|v| v != 0)
    }

    /// Column `i` as text.
    pub fn text(&self, i: usize) -> Result<String> {
        match self.value(i)? {
            Value::Text(v) => Ok(v.clone()),
            other => Err(Error::storage(
                "reading a row",
                format!("column {i} is {other:?}, not text"),
            )),
        }
    }

    /// Column `i` as text or NULL.
    pub fn opt_text(&self, i: usize) -> Result<Option<String>> {
        match self.value(i)? {
            Value::Null => Ok(None),
            _ => self.text(i).map(Some),
        }
    }
}

/// Whether a transaction writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Reads only; sees one consistent snapshot.
    Read,
    /// Reads and writes. SQLite serializes writers; PostgreSQL runs them at once as
    /// `SERIALIZABLE` transactions (a conflict aborts one, and its unit of work runs again).
    Write,
}

/// SQL dialect of a store, for the few statements (DDL) that differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Dialect {
    /// SQLite 3.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// A database holding docmeta's records.
pub trait Store: Send + Sync + 'static {
    /// Starts a transaction. Dropping it without [`Transaction::commit`] rolls back.
    fn begin(&self, mode: Mode) -> Result<Box<dyn Transaction + '_>>;

    /// Starts a read that runs a single statement (one snapshot either way): a store may
    /// send it outside an explicit transaction, saving the `BEGIN` and `COMMIT` (PostgreSQL:
    /// one round trip instead of two). By default, [`Store::begin`] with [`Mode::Read`].
    fn begin_statement(&self) -> Result<Box<dyn Transaction + '_>> {
        self.begin(Mode::Read)
    }

    /// Starts a write transaction for bookkeeping whose every statement is safe on its own
    /// whatever runs beside it (claiming a task by a conditional `UPDATE`, setting a task's
    /// state or a setting by key): a store that isolates writers more strictly than that needs
    /// may run it at a weaker level (PostgreSQL: `READ COMMITTED`, so that the task queue,
    /// which every unit of work touches, causes no serialization failures). By default, a
    /// [`Mode::Write`] transaction.
    #[doc(hidden)]
    fn begin_bookkeeping(&self) -> Result<Box<dyn Transaction + '_>> {
        self.begin(Mode::Write)
    }

    /// Starts the write transaction of one unit of work (a change made through a session).
    /// A store may let concurrent units share one commit (group commit: see
    /// `store::sqlite::group`); whatever it does, [`Transaction::commit`] returns only once
    /// the unit's changes are durable as a commit of their own would have made them, a unit
    /// dropped without commit leaves no trace, and one unit's failure never undoes another's.
    /// The default is a write transaction of its own ([`Store::begin`] with [`Mode::Write`]).
    fn begin_unit(&self) -> Result<Box<dyn Transaction + '_>> {
        self.begin(Mode::Write)
    }

    /// Runs `work`, one attempt of a unit of work (from [`Store::begin_unit`] to
    /// [`Transaction::commit_pending`]), where this store runs its units. The SQLite store on a
    /// file runs them all, one after another, on one writer thread, so that its writer
    /// connection never waits for a thread to wake up between two units. `work` must not
    /// wait for anything a later unit does (it commits with `commit_pending`, and whoever
    /// called this waits for the outcome). The default runs `work` here, on the calling thread.
    fn run_unit(&self, work: &mut (dyn FnMut() + Send)) {
        work()
    }

    /// The SQL dialect.
    fn dialect(&self) -> Dialect;

    /// A number that changes whenever a transaction has committed on this database, from any
    /// connection of any process, if the store can tell that without a round trip to a server
    /// (SQLite can); `None` otherwise (the default). A process that finds it unchanged knows
    /// nothing was written since it last asked, and skips reading the event log before it
    /// answers (see `Docmeta::catch_up`).
    fn data_version(&self) -> Result<Option<u64>> {
        Ok(None)
    }

    /// Starts watching for transactions that write events and that are committed through
    /// other connections (another process, or another handle on the same database), telling
    /// `sink` of each as soon as the store can; the watch ends once `sink` says it is no longer
    /// wanted, or when the returned [`CommitWatch`] is dropped. Waiters for new events
    /// (`Session::events_after`) hear of this process's own commits without it. SQLite looks at
    /// its WAL index's commit counter every 50 ms; PostgreSQL listens for the notification
    /// [`Transaction::notify_events`] sends. `None` when the store cannot tell (the default):
    /// a waiter then hears of other processes' commits only at its deadline.
    fn watch_commits(&self, sink: Arc<dyn CommitSink>) -> Result<Option<CommitWatch>> {
        let _ = sink;
        Ok(None)
    }

    /// Applies pending schema migrations; returns the versions applied.
    fn migrate(&self) -> Result<Vec<u32>>;

    /// The schema version of the database, and the newest version this build knows.
    fn schema_version(&self) -> Result<(u32, u32)>;

    /// A human-readable description (`sqlite:/data/db.sqlite3`), without secrets.
    fn describe(&self) -> String;

    /// Writes a consistent snapshot of the whole database to `path` while writers go on (for
    /// backups). Stores that cannot do so say why.
    fn snapshot_to(&self, path: &std::path::Path) -> Result<()> {
        let _ = path;
        Err(Error::InvalidInput(format!(
            "{} cannot write a snapshot file",
            self.describe()
        )))
    }

    /// Dumps the database into `path` for a backup while writers go on, and reads, from the
    /// same consistent state, the schema version and the storage names of the document files it
    /// references. Each store writes its own dump (SQLite: a database file; PostgreSQL: a
    /// `pg_dump` archive); stores that cannot say why.
    fn dump_for_backup(&self, path: &std::path::Path) -> Result<DatabaseDump> {
        let _ = path;
        Err(Error::InvalidInput(format!(
            "{} cannot dump itself for a backup",
            self.describe()
        )))
    }
}

/// What a store's watch ([`Store::watch_commits`]) tells of other connections' commits.
pub trait CommitSink: Send + Sync {
    /// Events may have been committed through another connection since the last call: whoever
    /// waits for events reads again. Called on the watch's own thread; returns at once.
    fn committed(&self);

    /// Whether anyone still wants to hear of commits. Once it answers `false` the watch ends
    /// without calling the sink again (a new watch is started when someone waits again). A
    /// watch asks at least every second.
    fn wanted(&self) -> bool;
}

/// A watch started by [`Store::watch_commits`]. Dropping it tells the watch to end; it does
/// not wait for it (the watch may be dropped on its own thread).
pub struct CommitWatch {
    stop: Option<Box<dyn FnOnce() + Send>>,
}

impl CommitWatch {
    /// A watch that `stop` ends: called once, when the watch is dropped.
    pub fn new(stop: impl FnOnce() + Send + 'static) -> CommitWatch {
        CommitWatch {
            stop: Some(Box::new(stop)),
        }
    }
}

impl Drop for CommitWatch {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop();
        }
    }
}

impl std::fmt::Debug for CommitWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CommitWatch")
    }
}

/// What [`Store::dump_for_backup`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseDump {
    /// The dump's name in a backup archive: `db.sqlite3` or `db.pgdump`.
    pub entry: &'static str,
    /// The dumped database's schema version.
    pub schema_version: u32,
    /// The storage names of the document files the dump references.
    pub storage_names: Vec<String>,
}

/// One transaction of a [`Store`].
pub trait Transaction {
    /// Runs a statement; returns the number of rows changed. After a statement fails, a store
    /// may refuse the transaction's further statements and its commit (PostgreSQL does, until
    /// a `ROLLBACK TO SAVEPOINT`): a caller that means to go on after a failure sets a
    /// savepoint first.
    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64>;

    /// Runs a statement whose changed-row count nobody reads. A store may hold it back and send
    /// it with the transaction's next statement (PostgreSQL: one round trip for both), so its
    /// error may come from that statement, from [`flush`](Self::flush) or from the commit
    /// instead: use it only where any error fails the unit of work anyway.
    fn execute_later(&mut self, sql: &str, params: &[Param<'_>]) -> Result<()> {
        self.execute(sql, params).map(drop)
    }

    /// Sends the statements [`execute_later`](Self::execute_later) held back, and returns the
    /// first one's error: where the outcome of what came before must be known now (the end of
    /// a savepoint's work).
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    /// The SQL dialect of the store (for the rare statement that differs).
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    /// Runs a query and calls `each` for every row.
    fn query(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        each: &mut dyn FnMut(&Row) -> Result<()>,
    ) -> Result<()>;

    /// Marks this transaction as one that wrote events: once it has committed (never if it
    /// rolls back), the store tells the watches of other processes and handles
    /// ([`Store::watch_commits`]). Called once, before the commit, by a unit of work that
    /// appended events; it must not make the commit wait. PostgreSQL's store sends a
    /// notification on the channel `docmeta_events` after the commit, from a connection of its
    /// own. By default nothing: the store's watch, if any, finds commits by itself (SQLite's WAL
    /// index).
    fn notify_events(&mut self) -> Result<()> {
        Ok(())
    }

    /// Commits the transaction.
    fn commit(self: Box<Self>) -> Result<()>;

    /// Commits the transaction now, without waiting for later units of work to share its
    /// commit (a store that groups commits, [`Store::begin_unit`], ends the group with this
    /// one): for a change whose after-commit work must run in commit order, so that the next
    /// change can only commit after this one returned. Stores that do not group commit as
    /// [`commit`](Self::commit) does.
    fn commit_now(self: Box<Self>) -> Result<()> {
        self.commit()
    }

    /// Commits the transaction, or (a store that groups commits) joins it to the open group and
    /// returns at once: [`PendingCommit::wait`] then returns once the changes are durable, or
    /// with the error that undid them. A store whose commit is decided here commits, as
    /// [`commit`](Self::commit) does.
    fn commit_pending(self: Box<Self>) -> Result<PendingCommit> {
        self.commit().map(|()| PendingCommit::done())
    }
}

/// The outcome of a commit that a store decides later (see [`Transaction::commit_pending`]).
#[must_use = "the changes are only known to be stored once `wait` returned Ok"]
pub struct PendingCommit(Option<Box<dyn FnOnce() -> Result<()> + Send>>);

impl PendingCommit {
    /// A commit that has succeeded.
    pub fn done() -> PendingCommit {
        PendingCommit(None)
    }

    /// A commit whose outcome `wait` waits for.
    pub fn later(wait: impl FnOnce() -> Result<()> + Send + 'static) -> PendingCommit {
        PendingCommit(Some(Box::new(wait)))
    }

    /// Waits for the commit: `Ok` once the changes are durable.
    pub fn wait(self) -> Result<()> {
        self.0.map_or(Ok(()), |wait| wait())
    }
}

impl std::fmt::Debug for PendingCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "PendingCommit(waiting)"
        } else {
            "PendingCommit(done)"
        })
    }
}

/// The last line of defence against NUL characters: PostgreSQL cannot store them (an error
/// there, a stored value on SQLite), so text holding one is refused before either store sees
/// it. The checks of each input field come first and name the field; this one cannot.
fn refuse_nul(params: &[Param<'_>]) -> Result<()> {
    if params
        .iter()
        .any(|p| matches!(p, Param::Text(t) if t.contains('\0')))
    {
        return Err(Error::validation(
            "non_field_errors",
            "Text may not contain the NUL character.",
        ));
    }
    Ok(())
}

/// Typed helpers over a transaction; the record methods of `records.rs` and the other table
/// group files are written on it. Crate-private: every write outside the store goes through a
/// session's checks, its events and its tasks.
pub(crate) struct Tx<'a> {
    inner: Box<dyn Transaction + 'a>,
}

impl<'a> Tx<'a> {
    /// Wraps a transaction.
    pub fn new(inner: Box<dyn Transaction + 'a>) -> Self {
        Tx { inner }
    }

    /// Sets the savepoint `name` (a fixed identifier, never input).
    pub(crate) fn savepoint(&mut self, name: &'static str) -> Result<()> {
        self.inner
            .execute(&format!("SAVEPOINT {name}"), &[])
            .map(drop)
    }

    /// Ends the savepoint `name`, keeping what was done since it (`keep`) or undoing it.
    pub(crate) fn end_savepoint(&mut self, name: &'static str, keep: bool) -> Result<()> {
        if !keep {
            self.inner
                .execute(&format!("ROLLBACK TO SAVEPOINT {name}"), &[])?;
        }
        self.inner
            .execute(&format!("RELEASE SAVEPOINT {name}"), &[])
            .map(drop)
    }

    /// Commits.
    pub fn commit(self) -> Result<()> {
        self.inner.commit()
    }

    /// Commits now, ending a commit group with this unit (see [`Transaction::commit_now`]).
    pub fn commit_now(self) -> Result<()> {
        self.inner.commit_now()
    }

    /// Commits, or joins the open commit group (see [`Transaction::commit_pending`]).
    pub fn commit_pending(self) -> Result<PendingCommit> {
        self.inner.commit_pending()
    }

    /// Runs a statement.
    pub fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64> {
        refuse_nul(params)?;
        self.inner.execute(sql, params)
    }

    /// Runs a statement whose changed-row count nobody reads, perhaps with the next one (see
    /// [`Transaction::execute_later`]): only where any error fails the unit of work.
    pub fn execute_later(&mut self, sql: &str, params: &[Param<'_>]) -> Result<()> {
        refuse_nul(params)?;
        self.inner.execute_later(sql, params)
    }

    /// Sends what [`execute_later`](Self::execute_later) held back (see
    /// [`Transaction::flush`]).
    pub fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }

    /// Runs a query, mapping every row.
    pub fn rows<T>(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        map: impl Fn(&Row) -> Result<T>,
    ) -> Result<Vec<T>> {
        refuse_nul(params)?;
        let mut out = Vec::new();
        self.inner.query(sql, params, &mut |row| {
            out.push(map(row)?);
            Ok(())
        })?;
        Ok(out)
    }

    /// Runs a query, calling `each` for every row without collecting them.
    pub fn each(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        each: &mut dyn FnMut(&Row) -> Result<()>,
    ) -> Result<()> {
        refuse_nul(params)?;
        self.inner.query(sql, params, each)
    }

    /// Runs a query expected to return at most one row.
    pub fn optional<T>(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        map: impl Fn(&Row) -> Result<T>,
    ) -> Result<Option<T>> {
        refuse_nul(params)?;
        let mut out = None;
        self.inner.query(sql, params, &mut |row| {
            if out.is_none() {
                out = Some(map(row)?);
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// The SQL dialect of the store.
    pub fn dialect(&self) -> Dialect {
        self.inner.dialect()
    }

    /// Runs an `INSERT ... RETURNING id`.
    pub fn insert(&mut self, sql: &str, params: &[Param<'_>]) -> Result<i64> {
        self.optional(sql, params, |r| r.int(0))?
            .ok_or_else(|| Error::storage("inserting a row", "no id returned"))
    }
}
