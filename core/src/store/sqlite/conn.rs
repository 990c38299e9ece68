//! Opening a connection to the database file (or to a private in-memory database) and setting
//! it up: the busy timeout, the pragmas (foreign keys, synchronous, WAL mode, ...), the
//! statement cache and the query planner's stability guarantee; and running statements from
//! that cache.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::errors::sqlite_error;
use crate::error::{Error, Result};

/// WAL pages after which a commit checkpoints. Smaller than SQLite's default (1,000): the
/// checkpoint runs while the writer waits, and many small ones keep the slowest writes faster
/// than a few big ones (measured with benches/http/load.sh).
pub(super) const WAL_AUTOCHECKPOINT_PAGES: i64 = 200;

/// A connection to the database file at `path` (created if missing), or to a private in-memory
/// database without one, set up as this module's documentation says.
pub(super) fn open_connection(path: Option<&Path>) -> Result<Connection> {
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

/// Runs a parameterless statement from the connection's statement cache (transaction control
/// runs on every request; parsing it each time showed up in profiles).
pub(super) fn run_cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::SqliteStore;

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
