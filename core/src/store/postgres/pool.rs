//! The connection pool: at most `postgres_pool_size` connections, each keeping the statements
//! it prepared; a thread that needs one while all are in use waits, up to a bound, for one to
//! come back.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio_postgres::Statement;

use super::PostgresStore;
use super::conn::Conn;
use super::errors::PgResult;
use crate::error::{Error, Result};

/// How long a thread waits for a connection when all `postgres_pool_size` are in use.
const POOL_WAIT: Duration = Duration::from_secs(10);

/// The connections: idle ones, and how many exist (idle or in use).
pub(super) struct PoolState {
    pub(super) idle: Vec<Pooled>,
    pub(super) open: usize,
}

thread_local! {
    /// Connections this thread holds (of any PostgreSQL store): a thread that already holds one
    /// and needs another (a read inside a unit of work) never waits for the pool, which could
    /// otherwise be exhausted by threads all waiting for their second connection.
    static HELD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A connection with the statements it has prepared (a statement is parsed once per
/// connection, not once per use).
pub(super) struct Pooled {
    pub(super) client: Conn,
    pub(super) statements: std::collections::HashMap<String, Statement>,
}

impl Pooled {
    /// `sql` prepared on this connection: from its statements, or prepared now (one round
    /// trip, counted in `round_trips`).
    pub(super) fn prepared(&mut self, sql: &str, round_trips: &AtomicU64) -> PgResult<Statement> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        round_trips.fetch_add(1, Ordering::Relaxed);
        let s = self.client.prepare(sql)?;
        if self.statements.len() < 1024 {
            self.statements.insert(sql.to_owned(), s.clone());
        }
        Ok(s)
    }
}

impl PostgresStore {
    /// A new connection to the store's database.
    pub(super) fn connect(&self) -> Result<Conn> {
        Conn::connect(&self.url)
    }

    /// A connection: an idle one, a new one while fewer than the pool's size exist (or when
    /// this thread already holds one), otherwise the next one given back.
    pub(super) fn client(&self) -> Result<Pooled> {
        let nested = HELD.with(|h| h.get()) > 0;
        let deadline = Instant::now() + POOL_WAIT;
        let mut pool = self.pool.lock();
        loop {
            while let Some(mut c) = pool.idle.pop() {
                drop(pool);
                if !c.client.is_usable() {
                    drop(c);
                    pool = self.pool.lock();
                    pool.open -= 1;
                    continue;
                }
                HELD.with(|h| h.set(h.get() + 1));
                return Ok(c);
            }
            if pool.open < self.size || nested {
                pool.open += 1;
                drop(pool);
                return match self.connect() {
                    Ok(client) => {
                        HELD.with(|h| h.set(h.get() + 1));
                        Ok(Pooled {
                            client,
                            statements: std::collections::HashMap::new(),
                        })
                    }
                    Err(e) => {
                        self.pool.lock().open -= 1;
                        self.returned.notify_one();
                        Err(e)
                    }
                };
            }
            if self.returned.wait_until(&mut pool, deadline).timed_out() {
                return Err(Error::storage(
                    "waiting for a database connection",
                    format!(
                        "all {} connections of the pool stayed in use for {} s \
                         (raise postgres_pool_size in config.yml, within the server's \
                         max_connections)",
                        self.size,
                        POOL_WAIT.as_secs()
                    ),
                ));
            }
        }
    }

    pub(super) fn give_back(&self, pooled: Pooled) {
        HELD.with(|h| h.set(h.get().saturating_sub(1)));
        let mut pool = self.pool.lock();
        if !pooled.client.is_closed() && pool.idle.len() < self.size {
            pool.idle.push(pooled);
        } else {
            pool.open = pool.open.saturating_sub(1);
        }
        drop(pool);
        self.returned.notify_one();
    }

    /// Forgets a connection that is not given back (broken, or in an unknown state).
    pub(super) fn discard(&self, pooled: Pooled) {
        drop(pooled);
        HELD.with(|h| h.set(h.get().saturating_sub(1)));
        let mut pool = self.pool.lock();
        pool.open = pool.open.saturating_sub(1);
        drop(pool);
        self.returned.notify_one();
    }
}
