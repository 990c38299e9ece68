//! The schema: PostgreSQL's numbered migrations (the same versions as SQLite's), applied by one
//! process at a time, and the schema version they leave.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use super::PostgresStore;
use super::conn::{Conn, Op};
use super::dialect::Bound;
use super::errors::pg_error;
use crate::error::{Error, Result};
use crate::store::{SCHEMA_VERSION, USERNAME_KEYS_MIGRATION};

/// Schema migrations, in order: (version, SQL). The same versions as SQLite's list (one
/// [`SCHEMA_VERSION`] for both), each written for PostgreSQL.
const MIGRATIONS: &[(u32, &str)] = &[
    (1, include_str!("../migrations/postgres/0001_initial.sql")),
    (
        2,
        include_str!("../migrations/postgres/0002_document_files.sql"),
    ),
    (3, include_str!("../migrations/postgres/0003_workflows.sql")),
    (
        4,
        include_str!("../migrations/postgres/0004_template_authors.sql"),
    ),
    (
        5,
        include_str!("../migrations/postgres/0005_task_targets.sql"),
    ),
    (
        6,
        include_str!("../migrations/postgres/0006_event_commit_order.sql"),
    ),
    (
        7,
        include_str!("../migrations/postgres/0007_template_shapers.sql"),
    ),
    (
        USERNAME_KEYS_MIGRATION,
        include_str!("../migrations/postgres/0008_username_keys.sql"),
    ),
    (
        9,
        include_str!("../migrations/postgres/0009_followed_events.sql"),
    ),
    (
        10,
        include_str!("../migrations/postgres/0010_event_changes.sql"),
    ),
    (11, include_str!("../migrations/postgres/0011_webhooks.sql")),
    (12, include_str!("../migrations/postgres/0012_devices.sql")),
    (
        13,
        include_str!("../migrations/postgres/0013_device_documents.sql"),
    ),
    (
        14,
        include_str!("../migrations/postgres/0014_device_creates.sql"),
    ),
    (
        15,
        include_str!("../migrations/postgres/0015_event_chain.sql"),
    ),
    (
        16,
        include_str!("../migrations/postgres/0016_value_types.sql"),
    ),
];

/// The session-level advisory lock `migrate` holds, so that one process migrates while the
/// others wait (units of work take no lock of their own).
const MIGRATION_LOCK: i64 = 0x0064_6f63_6d65_7461; // "docmeta"

/// Applies the migrations the database lacks, one process at a time (see
/// [`Store::migrate`](crate::store::Store::migrate)).
pub(super) fn migrate(store: &PostgresStore) -> Result<Vec<u32>> {
    let mut pooled = store.client()?;
    let client = &mut pooled.client;
    let mut applied = Vec::new();
    // One process migrates; the others wait for the lock and find nothing left to do.
    client
        .batch_execute(&format!("SELECT pg_advisory_lock({MIGRATION_LOCK})"))
        .map_err(|e| pg_error("locking for migrations", e))?;
    let result = (|| {
        let current = version(client)?;
        if current > SCHEMA_VERSION {
            return Err(Error::storage(
                "checking the schema version",
                format!(
                    "the database has schema version {current}, newer than this docmeta ({SCHEMA_VERSION}); upgrade docmeta"
                ),
            ));
        }
        for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
            let applied_one = (|| {
                client
                    .batch_execute("BEGIN")
                    .map_err(|e| pg_error("starting a migration", e))?;
                client
                    .batch_execute(sql)
                    .map_err(|e| pg_error(&format!("applying migration {version}"), e))?;
                if *version == USERNAME_KEYS_MIGRATION {
                    fill_username_keys(client)?;
                }
                client
                    .batch_execute(&format!(
                        "INSERT INTO schema_version (version) VALUES ({version})"
                    ))
                    .map_err(|e| pg_error("recording the schema version", e))?;
                client
                    .batch_execute("COMMIT")
                    .map_err(|e| pg_error("committing a migration", e))
            })();
            if let Err(e) = applied_one {
                let _ = client.batch_execute("ROLLBACK");
                return Err(e);
            }
            applied.push(*version);
        }
        // A database restored into another cluster (`pg_dump`, `pg_restore`) keeps the
        // transaction ids of the old one in `events.tx`, possibly ahead of this cluster's:
        // new events would sort before them and followers would never read them. Every
        // visible event's transaction precedes the snapshot's `xmax`, so one at or past it
        // is foreign history, all committed: it goes first (tx 0), in id order.
        client
            .batch_execute(
                "UPDATE events SET tx = 0 \
                 WHERE tx <> 0 \
                 AND (SELECT max(tx) FROM events) \
                     >= (pg_snapshot_xmax(pg_current_snapshot())::text::bigint)",
            )
            .map_err(|e| pg_error("checking the event log's transaction ids", e))?;
        Ok(applied)
    })();
    let _ = client.batch_execute(&format!("SELECT pg_advisory_unlock({MIGRATION_LOCK})"));
    // Statements prepared before a migration may describe the old schema.
    pooled.statements.clear();
    store.give_back(pooled);
    result
}

/// The database's schema version and this build's.
pub(super) fn schema_version(store: &PostgresStore) -> Result<(u32, u32)> {
    let mut pooled = store.client()?;
    let v = version(&mut pooled.client);
    store.give_back(pooled);
    Ok((v?, SCHEMA_VERSION))
}

/// The newest migration recorded in the database (0 for an empty one).
fn version(client: &mut Conn) -> Result<u32> {
    client
        .batch_execute("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)")
        .map_err(|e| pg_error("reading the schema version", e))?;
    let v: Option<i64> = client
        .query("SELECT max(version) FROM schema_version")
        .map_err(|e| pg_error("reading the schema version", e))?
        .first()
        .and_then(|r| r.get(0));
    Ok(u32::try_from(v.unwrap_or(0)).unwrap_or(0))
}

/// The data half of migration 8: each existing user's username key (computed in Rust: SQL
/// cannot), in the migration's transaction, the updates pipelined.
fn fill_username_keys(client: &mut Conn) -> Result<()> {
    let failed = |e| pg_error("filling the username keys (migration 8)", e);
    let users = client
        .query("SELECT id, username FROM users WHERE username_key IS NULL")
        .map_err(failed)?;
    let update = client
        .prepare("UPDATE users SET username_key = $1::text WHERE id = $2::int8")
        .map_err(failed)?;
    if users.is_empty() {
        return Ok(());
    }
    let mut ops = Vec::with_capacity(users.len());
    for row in &users {
        let id: i64 = row.try_get(0).map_err(failed)?;
        let username: String = row.try_get(1).map_err(failed)?;
        ops.push(Op::Execute(
            update.clone(),
            vec![
                Bound::Text(crate::model::username_key(&username)),
                Bound::Int(id),
            ],
        ));
    }
    for answer in client.pipeline(&ops).map_err(failed)? {
        answer.map_err(failed)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_have_the_same_versions_as_sqlite() {
        let versions = |list: &[(u32, &str)]| list.iter().map(|(v, _)| *v).collect::<Vec<_>>();
        assert_eq!(
            versions(MIGRATIONS),
            versions(crate::store::sqlite::MIGRATIONS)
        );
        assert_eq!(MIGRATIONS.last().map(|(v, _)| *v), Some(SCHEMA_VERSION));
    }

    #[test]
    fn migrations_use_no_sqlite_only_words() {
        for (version, sql) in MIGRATIONS {
            for word in ["AUTOINCREMENT", "INTEGER"] {
                assert!(!sql.contains(word), "migration {version} says {word}");
            }
        }
    }
}
