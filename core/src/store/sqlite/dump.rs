//! Backups and restores of the database file: a snapshot copied with SQLite's online backup
//! API while writers go on, the document files it names, and the check of a database file
//! before a restore puts it in place.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::SqliteStore;
use super::migrations::SCHEMA_VERSION;
use crate::error::{Error, Result};
use crate::store::DatabaseDump;

/// A consistent snapshot of the database at `path` ([`SqliteStore::backup_to`]), with its
/// schema version and the storage names of the document files it names.
pub(super) fn dump_for_backup(store: &SqliteStore, path: &Path) -> Result<DatabaseDump> {
    store.backup_to(path)?;
    let (schema_version, storage_names) = snapshot_files(path)?;
    Ok(DatabaseDump {
        entry: "db.sqlite3",
        schema_version,
        storage_names,
    })
}

/// Checks a database file before it replaces anything (the staging copy of a restore): SQLite's
/// `PRAGMA integrity_check` must answer `ok`, and the schema version must not be newer than this
/// build's ([`SCHEMA_VERSION`]). Returns its schema version and the storage names of the
/// document files its records name (a restore writes no other document file). A file that
/// fails is [`Error::InvalidInput`] naming what is wrong.
pub(crate) fn check_database_file(path: &Path) -> Result<DatabaseDump> {
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
    Ok(DatabaseDump {
        entry: "db.sqlite3",
        schema_version: version,
        storage_names: storage_names(&conn).map_err(unusable)?,
    })
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
