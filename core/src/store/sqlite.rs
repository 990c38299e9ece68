//! The embedded default store: SQLite in WAL mode (rusqlite, bundled SQLite).
//!
//! One writer connection serialises write transactions (`BEGIN IMMEDIATE`); read transactions
//! run on a small pool of reader connections and see a consistent snapshot while writes go on.
//!
//! This file holds the store itself; its parts live in `sqlite/`, one job a file: `conn`
//! (opening and setting up a connection), `pool` (the reader connections), `transaction`,
//! `dialect` (values in SQLite's terms), `errors`, `migrations`, `dump` (backups and
//! restores), `group` (group commit on one writer thread), `wal_index` (whether anything was
//! committed, from the WAL index) and `watch` (hearing of other processes' commits while
//! someone waits for events).
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

mod conn;
mod dialect;
mod dump;
mod errors;
mod group;
mod migrations;
mod pool;
mod transaction;
mod wal_index;
mod watch;

use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use rusqlite::Connection;

use super::{Dialect, Mode, Store, Transaction};
use crate::error::{Error, Result};
use conn::{WAL_AUTOCHECKPOINT_PAGES, open_connection};
pub(crate) use dump::check_database_file;
use errors::sqlite_error;
pub(crate) use migrations::MIGRATIONS;
pub use migrations::SCHEMA_VERSION;
use pool::ReaderPool;

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
}

impl Store for SqliteStore {
    fn begin(&self, mode: Mode) -> Result<Box<dyn Transaction + '_>> {
        self.begin_with(mode)
    }

    fn begin_unit(&self) -> Result<Box<dyn Transaction + '_>> {
        if self.path.is_none() {
            // In memory, reads share the writer connection: no transaction may stay open.
            return self.begin(Mode::Write);
        }
        self.begin_in_group()
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
        migrations::migrate(self)
    }

    fn schema_version(&self) -> Result<(u32, u32)> {
        migrations::schema_version(self)
    }

    fn snapshot_to(&self, path: &Path) -> Result<()> {
        self.backup_to(path)
    }

    fn dump_for_backup(&self, path: &Path) -> Result<super::DatabaseDump> {
        dump::dump_for_backup(self, path)
    }

    fn describe(&self) -> String {
        match &self.path {
            Some(p) => format!("sqlite:{}", p.display()),
            None => "sqlite::memory:".to_owned(),
        }
    }
}
