//! The PostgreSQL store (cargo feature `postgres`), for deployments that outgrow one machine.
//!
//! The same statements as SQLite (`store/records.rs`): `?N` placeholders become `$N` with a cast
//! from the bound value (`$1::int8`, `$2::text`), so PostgreSQL never guesses a parameter's
//! type. The schema has its own numbered migrations (`migrations/postgres/`), the same versions
//! as SQLite's, written with `BIGINT` integers and identity keys. Events record the
//! transaction that wrote them, so that followers read the log gap-free in commit order
//! (`store/events.rs`).
//!
//! Writers of every process and thread run at once: a write transaction is `SERIALIZABLE`, so
//! every rule a unit of work checks by reading (the last permission of an ACL, required
//! metadata, a workflow's current state, ...) holds as if the units had run one after the other.
//! When PostgreSQL cannot guarantee that it aborts one of them (SQLSTATE 40001, or 40P01 for a
//! deadlock); that error is contended (`Error::contended`), and the kernel runs the whole unit again (see
//! `Docmeta::write`). Uniqueness rules are constraints. Read transactions are
//! `REPEATABLE READ READ ONLY`: one snapshot, and they never wait or abort writers.
//!
//! A failed statement aborts its transaction (no savepoint per statement): the transaction
//! remembers it and refuses to commit, so a caller that went on after an error can never
//! commit half a unit. Callers that want to go on after a failure set their own savepoint.
//! The connection pool holds at most `postgres_pool_size` connections (see [`Config`]);
//! a thread that needs one when all are in use waits, up to a bound, for one to come back.
//!
//! Statements are pipelined: the driver is `tokio-postgres`, run by the calling thread on a
//! small runtime per connection, so a transaction's `BEGIN` is sent with its first statement,
//! and writes whose answer nobody reads at once ([`Transaction::execute_later`]: the edit or
//! removal of a value, a setting) with the statement after them or the `COMMIT`. Each batch is one round
//! trip; PostgreSQL still runs every statement in order, and the first failure among them is
//! the batch's error.
//!
//! [`Config`]: crate::Config
//!
//! This file holds the store itself; its parts live in `postgres/`, one job a file: `conn`
//! (a connection and its pipeline), `pool`, `transaction`, `dialect` (statements and values in
//! PostgreSQL's terms), `errors`, `migrations`, `dump` (backups and restores) and `listen`
//! (hearing of other processes' commits while someone waits for events).
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

mod conn;
mod dialect;
mod dump;
mod errors;
mod listen;
mod migrations;
mod pool;
mod transaction;

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Condvar, Mutex};

use super::{Dialect, Mode, Store, Transaction};
use crate::error::Result;
pub(crate) use dump::{check_dump, run_tool};
use pool::{PoolState, Pooled};

/// A docmeta database on PostgreSQL.
pub struct PostgresStore {
    url: String,
    pool: Mutex<PoolState>,
    returned: Condvar,
    size: usize,
    round_trips: AtomicU64,
    data_statements: AtomicU64,
    /// Names this store's notifications of commits (see `postgres/listen.rs`), so that its own
    /// watch tells of other stores' commits only.
    origin: String,
    /// Tells other processes of this store's commits that appended events.
    notifier: listen::Notifier,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("url", &redact(&self.url))
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user:password@host:port/database`, or key=value form),
    /// with the default pool size (`Config::default().postgres_pool_size`).
    pub fn open(url: &str) -> Result<PostgresStore> {
        Self::open_with_pool(url, crate::config::Config::default().postgres_pool_size)
    }

    /// Connects to `url` with a pool of at most `size` connections (at least 1): a thread
    /// that needs a connection while all are in use waits up to 10 seconds for one, then fails
    /// with a storage error that names the setting.
    pub fn open_with_pool(url: &str, size: usize) -> Result<PostgresStore> {
        let store = PostgresStore {
            url: url.to_owned(),
            pool: Mutex::new(PoolState {
                idle: Vec::new(),
                open: 0,
            }),
            returned: Condvar::new(),
            size: size.max(1),
            round_trips: AtomicU64::new(0),
            data_statements: AtomicU64::new(0),
            origin: listen::new_origin(),
            notifier: listen::Notifier::new(),
        };
        let client = store.connect()?;
        let mut pool = store.pool.lock();
        pool.open = 1;
        pool.idle.push(Pooled {
            client,
            statements: std::collections::HashMap::new(),
        });
        drop(pool);
        Ok(store)
    }

    /// How many times this store has sent PostgreSQL something and waited for the answer since
    /// it opened: each batch of pipelined statements (with its `BEGIN` or `COMMIT`) counts
    /// once, each prepare once. For measuring the round trips of an operation, not for
    /// applications.
    #[doc(hidden)]
    pub fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::Relaxed)
    }

    /// How many `INSERT`, `UPDATE` and `DELETE` statements this store has run since it opened
    /// (before writers ran concurrently each cost two more round trips: a `SAVEPOINT` and a
    /// `RELEASE`). For measurements, like [`round_trips`](Self::round_trips).
    #[doc(hidden)]
    pub fn data_statements(&self) -> u64 {
        self.data_statements.load(Ordering::Relaxed)
    }

    /// Tells other processes, soon, that a transaction of this store committed events.
    fn events_committed(&self) {
        self.notifier.committed(&self.url, &self.origin);
    }

    /// Counts one round trip (see [`round_trips`](Self::round_trips)).
    fn trip(&self) {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
    }
}

impl Store for PostgresStore {
    fn begin(&self, mode: Mode) -> Result<Box<dyn Transaction + '_>> {
        self.begin_with(match mode {
            Mode::Write => "BEGIN ISOLATION LEVEL SERIALIZABLE",
            Mode::Read => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
        })
    }

    fn begin_statement(&self) -> Result<Box<dyn Transaction + '_>> {
        self.begin_alone()
    }

    fn begin_bookkeeping(&self) -> Result<Box<dyn Transaction + '_>> {
        // Its statements are claims by a conditional UPDATE (re-checked on the newest row
        // version after a wait), FOR UPDATE SKIP LOCKED, and writes by key.
        self.begin_with("BEGIN ISOLATION LEVEL READ COMMITTED")
    }

    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    /// One connection listens for the notifications other stores' units of work send with
    /// their commits (see `postgres/listen.rs`), on a thread of its own, connecting again after
    /// a failure.
    fn watch_commits(
        &self,
        sink: std::sync::Arc<dyn super::CommitSink>,
    ) -> Result<Option<super::CommitWatch>> {
        listen::watch(&self.url, &self.origin, sink).map(Some)
    }

    fn migrate(&self) -> Result<Vec<u32>> {
        migrations::migrate(self)
    }

    fn schema_version(&self) -> Result<(u32, u32)> {
        migrations::schema_version(self)
    }

    fn describe(&self) -> String {
        format!("postgres:{}", redact(&self.url))
    }

    /// `pg_dump -Fc` of the database in the exact state from which the file list is read: a
    /// repeatable-read transaction exports its snapshot and `pg_dump --snapshot` uses it.
    fn dump_for_backup(&self, path: &std::path::Path) -> Result<super::DatabaseDump> {
        dump::dump_for_backup(self, path)
    }
}

/// The URL without its password.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            let user = credentials.split(':').next().unwrap_or("");
            format!("{}{user}@{}", &url[..scheme + 3], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

/// For the crate's tests: the URL of a new, empty database `name` beside the one `base` names
/// (dropped first if a run before left it).
#[cfg(test)]
pub(crate) fn fresh_test_database(base: &str, name: &str) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(base, tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(connection);
        for sql in [
            format!("DROP DATABASE IF EXISTS {name}"),
            format!("CREATE DATABASE {name}"),
        ] {
            client.batch_execute(&sql).await.expect("a new database");
        }
    });
    format!(
        "{}/{name}",
        &base[..base.rfind('/').expect("a URL naming a database")]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_is_left_out_of_the_url() {
        assert_eq!(
            redact("postgres://docmeta:secret@db:5432/docmeta"),
            "postgres://docmeta@db:5432/docmeta"
        );
    }
}
