//! The schema: SQLite's numbered migrations (the same versions as PostgreSQL's), applied on the
//! writer connection, and the schema version they leave.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use rusqlite::Connection;

use super::SqliteStore;
use super::errors::sqlite_error;
use crate::error::{Error, Result};
use crate::store::USERNAME_KEYS_MIGRATION;

/// Schema migrations, in order: (version, SQL).
pub(crate) const MIGRATIONS: &[(u32, &str)] = &[
    (1, include_str!("../migrations/sqlite/0001_initial.sql")),
    (
        2,
        include_str!("../migrations/sqlite/0002_document_files.sql"),
    ),
    (3, include_str!("../migrations/sqlite/0003_workflows.sql")),
    (
        4,
        include_str!("../migrations/sqlite/0004_template_authors.sql"),
    ),
    (
        5,
        include_str!("../migrations/sqlite/0005_task_targets.sql"),
    ),
    (
        6,
        include_str!("../migrations/sqlite/0006_event_commit_order.sql"),
    ),
    (
        7,
        include_str!("../migrations/sqlite/0007_template_shapers.sql"),
    ),
    (
        USERNAME_KEYS_MIGRATION,
        include_str!("../migrations/sqlite/0008_username_keys.sql"),
    ),
    (
        9,
        include_str!("../migrations/sqlite/0009_followed_events.sql"),
    ),
    (
        10,
        include_str!("../migrations/sqlite/0010_event_changes.sql"),
    ),
    (11, include_str!("../migrations/sqlite/0011_webhooks.sql")),
    (12, include_str!("../migrations/sqlite/0012_devices.sql")),
    (
        13,
        include_str!("../migrations/sqlite/0013_device_documents.sql"),
    ),
    (
        14,
        include_str!("../migrations/sqlite/0014_device_creates.sql"),
    ),
    (
        15,
        include_str!("../migrations/sqlite/0015_event_chain.sql"),
    ),
    (
        16,
        include_str!("../migrations/sqlite/0016_value_types.sql"),
    ),
];

/// Newest schema version this build knows.
pub const SCHEMA_VERSION: u32 = 16;

/// Applies the migrations newer than the database's schema version, each in a transaction of
/// its own; returns the versions applied.
pub(super) fn migrate(store: &SqliteStore) -> Result<Vec<u32>> {
    let mut w = store.writer.lock_writer();
    let conn = &mut w.conn;
    let current = version(conn)?;
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
        if *version == USERNAME_KEYS_MIGRATION {
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

/// The database's schema version, and the newest this build knows.
pub(super) fn schema_version(store: &SqliteStore) -> Result<(u32, u32)> {
    Ok((version(&store.writer.lock_writer().conn)?, SCHEMA_VERSION))
}

fn version(conn: &Connection) -> Result<u32> {
    conn.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        .map_err(|e| sqlite_error("reading the schema version", e))?;
    let v: Option<i64> = conn
        .query_row("SELECT max(version) FROM schema_version", [], |r| r.get(0))
        .map_err(|e| sqlite_error("reading the schema version", e))?;
    Ok(u32::try_from(v.unwrap_or(0)).unwrap_or(0))
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
