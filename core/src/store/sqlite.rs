//! The embedded default store: SQLite in WAL mode (rusqlite, bundled SQLite).
//!
//! One writer connection serialises write transactions (`BEGIN IMMEDIATE`); read transactions
//! run on a small pool of reader connections and see a consistent snapshot while writes go on.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use std::path::{Path, PathBuf};

use parking_lot::{Condvar, Mutex, MutexGuard};

mod group;
mod wal_index;
mod watch;
use rusqlite::{Connection, ErrorCode, OpenFlags, ToSql, types::ToSqlOutput, types::ValueRef};

use super::{Dialect, Mode, Param, PendingCommit, Row, Store, Transaction, Value};
use crate::error::{Error, NON_FIELD_ERRORS, Result};

/// Schema migrations, in order: (version, SQL).
pub(crate) const MIGRATIONS: &[(u32, &str)] = &[
    (1, include_str!("migrations/sqlite/0001_initial.sql")),
    (2, include_str!("migrations/sqlite/0002_document_files.sql")),
    (3, include_str!("migrations/sqlite/0003_workflows.sql")),
    (
        4,
        include_str!("migrations/sqlite/0004_template_authors.sql"),
    ),
    (5, include_str!("migrations/sqlite/0005_task_targets.sql")),
    (
        6,
        include_str!("migrations/sqlite/0006_event_commit_order.sql"),
    ),
    (
        7,
        include_str!("migrations/sqlite/0007_template_shapers.sql"),
    ),
    (
        super::USERNAME_KEYS_MIGRATION,
        include_str!("migrations/sqlite/0008_username_keys.sql"),
    ),
    (
        9,
        include_str!("migrations/sqlite/0009_followed_events.sql"),
    ),
    (10, include_str!("migrations/sqlite/0010_event_changes.sql")),
    (11, include_str!("migrations/sqlite/0011_webhooks.sql")),
    (12, include_str!("migrations/sqlite/0012_devices.sql")),
    (
        13,
        include_str!("migrations/sqlite/0013_device_documents.sql"),
    ),
    (
        14,
        include_str!("migrations/sqlite/0014_device_creates.sql"),
    ),
    (15, include_str!("migrations/sqlite/0015_event_chain.sql")),
    (16, include_str!("migrations/sqlite/0016_value_types.sql")),
];

/// Newest schema version this build knows.
pub const SCHEMA_VERSION: u32 = 16;

/// Reader connections kept open; more concurrent readers wait for one (opening a connection per
/// read would cost more than the read).
const READER_POOL: usize = 8;

/// WAL pages after which a commit checkpoints. Smaller than SQLite's default (1,000): the
/// checkpoint runs while the writer waits, and many small ones keep the slowest writes faster
/// than a few big ones (measured with benches/http/load.sh).
const WAL_AUTOCHECKPOINT_PAGES: i64 = 200;

#[derive(Default)]
struct PoolState {
    idle: Vec<Connection>,
    opened: usize,
}

/// A bounded pool of reader connections.
#[derive(Default)]
struct ReaderPool {
    state: Mutex<PoolState>,
    returned: Condvar,
}

impl ReaderPool {
    fn take(&self, path: &Path) -> Result<Connection> {
        let mut state = self.state.lock();
        loop {
            if let Some(c) = state.idle.pop() {
                return Ok(c);
            }
            if state.opened < READER_POOL {
                state.opened += 1;
                drop(state);
                return open_connection(Some(path)).inspect_err(|_| self.state.lock().opened -= 1);
            }
            self.returned.wait(&mut state);
        }
    }

    fn give_back(&self, c: Connection) {
        self.state.lock().idle.push(c);
        self.returned.notify_one();
    }
}

/// A SQLite database file (or an in-memory database for tests).
pub struct SqliteStore {
    /// The writer connection, shared by concurrent units of work (see [`group`]).
    writer: group::Group,
    readers: ReaderPool,
    path: Option<PathBuf>,
    /// What answers [`Store::data_version`] where it can: the database's WAL index.
    wal_index: Option<wal_index::WalIndex>,
    /// What answers it elsewhere: a connection of its own (opened on first use).
    probe: Mutex<Option<Connection>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn sqlite_error(operation: &str, e: rusqlite::Error) -> Error {
    if let rusqlite::Error::SqliteFailure(code, _) = &e
        && code.code == ErrorCode::DiskFull
    {
        // SQLITE_FULL: the database file (or its journal) could not grow.
        return Error::storage_full(operation.to_owned(), e);
    }
    if let rusqlite::Error::SqliteFailure(code, message) = &e
        && code.code == ErrorCode::ConstraintViolation
    {
        let message = message.clone().unwrap_or_default();
        return match code.extended_code {
            // SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_PRIMARYKEY: "UNIQUE constraint failed: t.col"
            2067 | 1555 => {
                let field = message
                    .rsplit('.')
                    .next()
                    .unwrap_or(NON_FIELD_ERRORS)
                    .trim()
                    .to_owned();
                Error::conflict(field, "This value is already taken.")
            }
            // SQLITE_CONSTRAINT_FOREIGNKEY
            787 => Error::InvalidInput(
                "the change refers to a record that does not exist, or removes one still in use"
                    .into(),
            ),
            _ => Error::InvalidInput(format!(
                "a database constraint refused the change: {message}"
            )),
        };
    }
    Error::storage(operation.to_owned(), e)
}

fn open_connection(path: Option<&Path>) -> Result<Connection> {
    let conn = match path {
        Some(p) => Connection::open_with_flags(
            p,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        ),
        None => Connection::open_in_memory(),
    }
    .map_err(|e| sqlite_error("opening the SQLite database", e))?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(|e| sqlite_error("configuring SQLite", e))?;
    conn.execute_batch(
        "PRAGMA foreign_keys = ON; \
         PRAGMA synchronous = NORMAL; \
         PRAGMA temp_store = MEMORY; \
         PRAGMA cache_size = -65536;",
    )
    .map_err(|e| sqlite_error("configuring SQLite", e))?;
    if path.is_some() {
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(|e| sqlite_error("enabling WAL mode", e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::storage(
                "enabling WAL mode",
                format!("journal mode is {mode}"),
            ));
        }
    }
    conn.set_prepared_statement_cache_capacity(256);
    // Without the query planner stability guarantee SQLite recompiles a cached statement
    // whenever a bound value might change its plan (every JOIN or ORDER BY on an indexed
    // column): that was a third of a read request's time.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )
    .map_err(|e| sqlite_error("configuring SQLite", e))?;
    Ok(conn)
}

impl SqliteStore {
    /// Opens (or creates) the database file at `path` and applies pending migrations. A new
    /// database file is created owner-only (`0600`) before SQLite opens it, and SQLite gives its
    /// `-wal` and `-shm` files the database file's mode: it holds password hashes and every value.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        match crate::owner_only::create_new(&path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(Error::storage("creating the SQLite database", e)),
        }
        let writer = open_connection(Some(&path))?;
        writer
            .pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES)
            .map_err(|e| sqlite_error("configuring SQLite", e))?;
        let mut store = SqliteStore {
            writer: group::Group::new(writer, true)?,
            readers: ReaderPool::default(),
            path: Some(path),
            wal_index: None,
            probe: Mutex::new(None),
        };
        store.migrate()?;
        // After the writer has committed: the WAL index exists and its header is written.
        store.wal_index = store.path.as_deref().and_then(wal_index::WalIndex::open);
        Ok(store)
    }

    /// A private in-memory database, migrated; for tests and throw-away use.
    pub fn in_memory() -> Result<Self> {
        let store = SqliteStore {
            writer: group::Group::new(open_connection(None)?, false)?,
            readers: ReaderPool::default(),
            path: None,
            wal_index: None,
            probe: Mutex::new(None),
        };
        store.migrate()?;
        Ok(store)
    }

    /// The database file, when not in memory.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Copies a consistent snapshot of the database to `dest` while writers go on (SQLite
    /// online backup API).
    pub fn backup_to(&self, dest: &Path) -> Result<()> {
        let w = self.writer.lock_writer();
        let conn = &w.conn;
        let mut target =
            Connection::open(dest).map_err(|e| sqlite_error("creating the backup database", e))?;
        let backup = rusqlite::backup::Backup::new(conn, &mut target)
            .map_err(|e| sqlite_error("starting the database backup", e))?;
        backup
            .run_to_completion(1024, std::time::Duration::ZERO, None)
            .map_err(|e| sqlite_error("copying the database", e))
    }

    fn version(conn: &Connection) -> Result<u32> {
        conn.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            .map_err(|e| sqlite_error("reading the schema version", e))?;
        let v: Option<i64> = conn
            .query_row("SELECT max(version) FROM schema_version", [], |r| r.get(0))
            .map_err(|e| sqlite_error("reading the schema version", e))?;
        Ok(u32::try_from(v.unwrap_or(0)).unwrap_or(0))
    }
}

/// The data half of migration 8: each existing user's username key (computed in Rust: SQL
/// cannot), in the migration's transaction.
fn fill_username_keys(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    let failed = |e| sqlite_error("filling the username keys (migration 8)", e);
    let users: Vec<(i64, String)> = tx
        .prepare("SELECT id, username FROM users WHERE username_key IS NULL")
        .and_then(|mut stmt| {
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()
        })
        .map_err(failed)?;
    let mut update = tx
        .prepare("UPDATE users SET username_key = ?1 WHERE id = ?2")
        .map_err(failed)?;
    for (id, username) in users {
        update
            .execute(rusqlite::params![crate::model::username_key(&username), id])
            .map_err(failed)?;
    }
    Ok(())
}

/// Checks a database file before it replaces anything (the staging copy of a restore): SQLite's
/// `PRAGMA integrity_check` must answer `ok`, and the schema version must not be newer than this
/// build's ([`SCHEMA_VERSION`]). Returns its schema version and the storage names of the
/// document files its records name (a restore writes no other document file). A file that
/// fails is [`Error::InvalidInput`] naming what is wrong.
pub(crate) fn check_database_file(path: &Path) -> Result<super::DatabaseDump> {
    let unusable = |e: rusqlite::Error| {
        Error::InvalidInput(format!("the backup's database cannot be read: {e}"))
    };
    // Read-write without create: a missing file is an error, never an empty database, and a
    // WAL-mode file opens without its -shm (this copy is private to the restore).
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(unusable)?;
    let problems: Vec<String> = conn
        .prepare("PRAGMA integrity_check(10)")
        .and_then(|mut stmt| {
            stmt.query_map([], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(unusable)?;
    if problems != ["ok"] {
        return Err(Error::InvalidInput(format!(
            "the backup's database is damaged (SQLite integrity check: {})",
            problems.join("; ")
        )));
    }
    let version: Option<i64> = conn
        .query_row("SELECT max(version) FROM schema_version", [], |r| r.get(0))
        .map_err(unusable)?;
    let version = u32::try_from(version.unwrap_or(0)).unwrap_or(u32::MAX);
    if version > SCHEMA_VERSION {
        return Err(Error::InvalidInput(format!(
            "the backup's database has schema version {version}, newer than this docmeta \
             ({SCHEMA_VERSION}); restore it with the docmeta that made it, or a newer one"
        )));
    }
    Ok(super::DatabaseDump {
        entry: "db.sqlite3",
        schema_version: version,
        storage_names: storage_names(&conn).map_err(unusable)?,
    })
}

enum Conn<'a> {
    /// The writer connection; `None` once handed back (a unit of work that joined its group).
    Writer(Option<MutexGuard<'a, group::Writer>>),
    Reader(Option<Connection>, &'a ReaderPool),
}

impl Conn<'_> {
    fn get(&self) -> &Connection {
        match self {
            // The Options are only None during drop and after a unit's commit.
            Conn::Writer(w) => {
                &w.as_ref()
                    .unwrap_or_else(|| unreachable!("writer handed back"))
                    .conn
            }
            Conn::Reader(c, _) => c.as_ref().unwrap_or_else(|| unreachable!("reader taken")),
        }
    }
}

impl Drop for Conn<'_> {
    fn drop(&mut self) {
        if let Conn::Reader(c, pool) = self
            && let Some(c) = c.take()
        {
            pool.give_back(c);
        }
    }
}

/// Runs a parameterless statement from the connection's statement cache (transaction control
/// runs on every request; parsing it each time showed up in profiles).
fn run_cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

struct SqliteTx<'a> {
    conn: Conn<'a>,
    open: bool,
    /// The group of a unit of work (see [`group`]); none for other transactions.
    unit: Option<group::Membership<'a>>,
}

struct Bind<'a>(&'a Param<'a>);

impl ToSql for Bind<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self.0 {
            Param::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Param::Int(v) => ToSqlOutput::Borrowed(ValueRef::Integer(*v)),
            Param::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
        })
    }
}

impl Transaction for SqliteTx<'_> {
    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64> {
        let conn = self.conn.get();
        let mut stmt = conn
            .prepare_cached(sql)
            .map_err(|e| sqlite_error("preparing a statement", e))?;
        let n = stmt
            .execute(rusqlite::params_from_iter(params.iter().map(Bind)))
            .map_err(|e| sqlite_error("writing to the database", e))?;
        Ok(n as u64)
    }

    fn query(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        each: &mut dyn FnMut(&Row) -> Result<()>,
    ) -> Result<()> {
        let conn = self.conn.get();
        let mut stmt = conn
            .prepare_cached(sql)
            .map_err(|e| sqlite_error("preparing a query", e))?;
        let columns = stmt.column_count();
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params.iter().map(Bind)))
            .map_err(|e| sqlite_error("querying the database", e))?;
        let mut row = Row(Vec::with_capacity(columns));
        while let Some(r) = rows
            .next()
            .map_err(|e| sqlite_error("reading query results", e))?
        {
            row.0.clear();
            for i in 0..columns {
                row.0.push(
                    match r
                        .get_ref(i)
                        .map_err(|e| sqlite_error("reading a column", e))?
                    {
                        ValueRef::Null => Value::Null,
                        ValueRef::Integer(v) => Value::Int(v),
                        ValueRef::Real(v) => Value::Text(v.to_string()),
                        ValueRef::Text(t) | ValueRef::Blob(t) => {
                            Value::Text(String::from_utf8_lossy(t).into_owned())
                        }
                    },
                );
            }
            each(&row)?;
        }
        Ok(())
    }

    fn commit(self: Box<Self>) -> Result<()> {
        (*self).finish(false)?.wait()
    }

    fn commit_now(self: Box<Self>) -> Result<()> {
        (*self).finish(true)?.wait()
    }

    fn commit_pending(self: Box<Self>) -> Result<PendingCommit> {
        (*self).finish(false)
    }
}

impl SqliteTx<'_> {
    /// Commits; a unit of work joins its group, and with `now` the group commits at once
    /// (this unit last) instead of waiting for the units queued behind it.
    fn finish(mut self, now: bool) -> Result<PendingCommit> {
        self.open = false;
        if let Some(unit) = self.unit.take() {
            let Some(w) = (match &mut self.conn {
                Conn::Writer(w) => w.take(),
                Conn::Reader(..) => None,
            }) else {
                return Err(Error::storage(
                    "committing a transaction",
                    "a unit of work without the writer connection",
                ));
            };
            return unit.join(w, now);
        }
        run_cached(self.conn.get(), "COMMIT")
            .map(|()| PendingCommit::done())
            .map_err(|e| {
                let _ = run_cached(self.conn.get(), "ROLLBACK");
                sqlite_error("committing a transaction", e)
            })
    }
}

impl Drop for SqliteTx<'_> {
    fn drop(&mut self) {
        if let Some(unit) = self.unit.take() {
            if let Conn::Writer(Some(w)) = &mut self.conn {
                unit.roll_back(w);
            }
            return;
        }
        if self.open {
            let _ = run_cached(self.conn.get(), "ROLLBACK");
        }
    }
}

impl Store for SqliteStore {
    fn begin(&self, mode: Mode) -> Result<Box<dyn Transaction + '_>> {
        let conn = match (mode, &self.path) {
            (Mode::Read, Some(path)) => Conn::Reader(Some(self.readers.take(path)?), &self.readers),
            _ => Conn::Writer(Some(self.writer.lock_writer())),
        };
        let begin = if mode == Mode::Write {
            "BEGIN IMMEDIATE"
        } else {
            "BEGIN"
        };
        conn.get()
            .prepare_cached(begin)
            .and_then(|mut s| s.execute([]))
            .map_err(|e| sqlite_error("starting a transaction", e))?;
        Ok(Box::new(SqliteTx {
            conn,
            open: true,
            unit: None,
        }))
    }

    fn begin_unit(&self) -> Result<Box<dyn Transaction + '_>> {
        if self.path.is_none() {
            // In memory, reads share the writer connection: no transaction may stay open.
            return self.begin(Mode::Write);
        }
        let (w, unit) = self.writer.begin_unit()?;
        Ok(Box::new(SqliteTx {
            conn: Conn::Writer(Some(w)),
            open: true,
            unit: Some(unit),
        }))
    }

    fn run_unit(&self, work: &mut (dyn FnMut() + Send)) {
        self.writer.run_unit(work)
    }

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    /// The commit counter of the WAL index's header (see `store/sqlite/wal_index.rs`): one `pread`, no
    /// lock, no transaction. Where that file cannot be read so, SQLite's `PRAGMA data_version`
    /// on a connection of its own, which changes whenever another connection (this process's
    /// writer, or any connection of another process) has committed since it was last asked.
    /// In memory, no other process can write: always the same.
    fn data_version(&self) -> Result<Option<u64>> {
        let Some(path) = &self.path else {
            return Ok(Some(0));
        };
        if let Some(index) = &self.wal_index {
            return Ok(index.change_counter());
        }
        let mut probe = self.probe.lock();
        if probe.is_none() {
            *probe = Some(open_connection(Some(path))?);
        }
        let Some(conn) = probe.as_ref() else {
            return Ok(None);
        };
        let version: i64 = conn
            .prepare_cached("PRAGMA data_version")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .map_err(|e| sqlite_error("asking whether the database changed", e))?;
        Ok(Some(version as u64))
    }

    /// While someone waits for new events, a thread reads the WAL index's commit counter every
    /// 50 ms (see `store/sqlite/watch.rs`). In memory, no other connection can commit: `None`.
    fn watch_commits(
        &self,
        sink: std::sync::Arc<dyn super::CommitSink>,
    ) -> Result<Option<super::CommitWatch>> {
        match &self.path {
            Some(path) => watch::watch(path, sink).map(Some),
            None => Ok(None),
        }
    }

    fn migrate(&self) -> Result<Vec<u32>> {
        let mut w = self.writer.lock_writer();
        let conn = &mut w.conn;
        let current = Self::version(conn)?;
        if current > SCHEMA_VERSION {
            return Err(Error::storage(
                "checking the schema version",
                format!(
                    "the database has schema version {current}, newer than this docmeta ({SCHEMA_VERSION}); upgrade docmeta"
                ),
            ));
        }
        let mut applied = Vec::new();
        for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
            let tx = conn
                .transaction()
                .map_err(|e| sqlite_error("starting a migration", e))?;
            tx.execute_batch(sql)
                .map_err(|e| sqlite_error(&format!("applying migration {version}"), e))?;
            if *version == super::USERNAME_KEYS_MIGRATION {
                fill_username_keys(&tx)?;
            }
            tx.execute(
                "INSERT INTO schema_version (version) VALUES (?1)",
                [i64::from(*version)],
            )
            .map_err(|e| sqlite_error("recording the schema version", e))?;
            tx.commit()
                .map_err(|e| sqlite_error("committing a migration", e))?;
            applied.push(*version);
        }
        Ok(applied)
    }

    fn schema_version(&self) -> Result<(u32, u32)> {
        Ok((
            Self::version(&self.writer.lock_writer().conn)?,
            SCHEMA_VERSION,
        ))
    }

    fn snapshot_to(&self, path: &Path) -> Result<()> {
        self.backup_to(path)
    }

    fn dump_for_backup(&self, path: &Path) -> Result<super::DatabaseDump> {
        self.backup_to(path)?;
        let (schema_version, storage_names) = snapshot_files(path)?;
        Ok(super::DatabaseDump {
            entry: "db.sqlite3",
            schema_version,
            storage_names,
        })
    }

    fn describe(&self) -> String {
        match &self.path {
            Some(p) => format!("sqlite:{}", p.display()),
            None => "sqlite::memory:".to_owned(),
        }
    }
}

/// The schema version and referenced storage names of a SQLite database snapshot.
fn snapshot_files(snapshot: &Path) -> Result<(u32, Vec<String>)> {
    let conn = rusqlite::Connection::open_with_flags(
        snapshot,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| Error::storage("reading the database snapshot", e))?;
    let version: i64 = conn
        .query_row("SELECT max(version) FROM schema_version", [], |r| r.get(0))
        .map_err(|e| Error::storage("reading the snapshot's schema version", e))?;
    let names =
        storage_names(&conn).map_err(|e| Error::storage("reading the database snapshot", e))?;
    Ok((u32::try_from(version).unwrap_or(0), names))
}

/// The storage names of every document file the database's records name (none in a database
/// from before document files).
fn storage_names(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let has_files: bool = conn.query_row(
        "SELECT count(*) > 0 FROM sqlite_master WHERE name = 'document_files'",
        [],
        |r| r.get(0),
    )?;
    if !has_files {
        return Ok(Vec::new());
    }
    let mut stmt = conn.prepare("SELECT storage_name FROM document_files ORDER BY storage_name")?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SQLite says SQLITE_FULL when the database cannot grow; `max_page_count` makes that
    /// happen without filling a disk.
    #[test]
    fn a_full_database_is_storage_full() -> Result<()> {
        let conn = open_connection(None)?;
        conn.execute_batch("CREATE TABLE t (b BLOB); PRAGMA max_page_count = 8;")
            .map_err(|e| sqlite_error("setting up", e))?;
        let e = conn
            .execute("INSERT INTO t (b) VALUES (zeroblob(1000000))", [])
            .map_err(|e| sqlite_error("inserting a row", e))
            .expect_err("the database is full");
        assert_eq!(e.kind(), crate::error::ErrorKind::StorageFull, "{e}");
        Ok(())
    }

    #[test]
    fn a_unique_violation_is_a_conflict_not_storage_full() -> Result<()> {
        let conn = open_connection(None)?;
        conn.execute_batch("CREATE TABLE t (name TEXT UNIQUE); INSERT INTO t VALUES ('a');")
            .map_err(|e| sqlite_error("setting up", e))?;
        let e = conn
            .execute("INSERT INTO t VALUES ('a')", [])
            .map_err(|e| sqlite_error("inserting a row", e))
            .expect_err("duplicate");
        assert!(
            matches!(&e, Error::Conflict { field, .. } if field == "name"),
            "{e}"
        );
        Ok(())
    }

    /// A cached statement must not be recompiled on each execution (see `open_connection`).
    #[test]
    fn cached_statements_are_not_recompiled() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::storage("tempdir", e))?;
        let path = dir.path().join("db.sqlite3");
        drop(SqliteStore::open(&path)?);
        let conn = open_connection(Some(&path))?;
        let sql = "SELECT m.id \
                   FROM document_metadata m \
                   JOIN metadata_types t ON t.id = m.metadata_type_id \
                   WHERE m.document_id = ?1 \
                   ORDER BY m.id";
        for i in 0..20 {
            run_cached(&conn, "BEGIN").map_err(|e| sqlite_error("begin", e))?;
            let mut stmt = conn
                .prepare_cached(sql)
                .map_err(|e| sqlite_error("prepare", e))?;
            let mut rows = stmt.query([i]).map_err(|e| sqlite_error("query", e))?;
            while rows.next().map_err(|e| sqlite_error("next", e))?.is_some() {}
            drop(rows);
            drop(stmt);
            run_cached(&conn, "COMMIT").map_err(|e| sqlite_error("commit", e))?;
        }
        let stmt = conn
            .prepare_cached(sql)
            .map_err(|e| sqlite_error("prepare", e))?;
        assert_eq!(stmt.get_status(rusqlite::StatementStatus::RePrepare), 0);
        Ok(())
    }
}
