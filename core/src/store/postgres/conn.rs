//! One connection to PostgreSQL, driven by the thread that uses it on a small runtime of its
//! own, and pipelining: several statements sent before their answers are read, in one round
//! trip.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use tokio_postgres::{NoTls, Statement};

use super::dialect::{Bound, refs};
use super::errors::{PgResult, pg_error};
use super::redact;
use crate::error::{Error, Result};

/// A connection's own work: writing the requests, reading the answers.
type ConnectionWork = Pin<Box<dyn Future<Output = PgResult<()>> + Send>>;

/// One connection to PostgreSQL: `tokio-postgres`'s client and connection, driven by the thread
/// that uses it on a small runtime of its own (what the synchronous `postgres` crate does
/// inside). Driving it here lets a thread send several statements before it reads their
/// answers ([`Conn::pipeline`]): one round trip for all of them.
pub(super) struct Conn {
    /// `None` only while the connection is dropped (see `Drop for Conn`).
    runtime: Option<tokio::runtime::Runtime>,
    client: tokio_postgres::Client,
    /// The connection's own work (writing requests, reading answers); `None` once it ended.
    connection: Option<ConnectionWork>,
}

/// A statement of a [`Conn::pipeline`].
pub(super) enum Op<'s> {
    /// Statements without parameters, sent as text (`BEGIN ...`, `COMMIT`, a migration).
    Simple(&'s str),
    /// A prepared statement whose changed-row count is the answer.
    Execute(Statement, Vec<Bound>),
    /// A prepared statement whose rows are the answer.
    Query(Statement, Vec<Bound>),
}

/// The answer to an [`Op`].
pub(super) enum Answer {
    Done,
    Count(u64),
    Rows(Vec<tokio_postgres::Row>),
}

impl Conn {
    pub(super) fn connect(url: &str) -> Result<Conn> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::storage("starting the PostgreSQL connection's runtime", e))?;
        let (client, connection) =
            blocking(|| runtime.block_on(tokio_postgres::connect(url, NoTls)))
                .map_err(|e| pg_error(&format!("connecting to {}", redact(url)), e))?;
        Ok(Conn {
            runtime: Some(runtime),
            client,
            connection: Some(Box::pin(connection)),
        })
    }

    /// The runtime, the client and the connection's own work, borrowed apart.
    fn parts(
        &mut self,
    ) -> (
        &tokio::runtime::Runtime,
        &tokio_postgres::Client,
        &mut Option<ConnectionWork>,
    ) {
        let runtime = self
            .runtime
            .as_ref()
            .expect("a connection's runtime is only taken when it is dropped");
        (runtime, &self.client, &mut self.connection)
    }

    pub(super) fn is_closed(&self) -> bool {
        self.connection.is_none() || self.client.is_closed()
    }

    /// Whether the connection still works, as far as can be told without a round trip: what
    /// the server sent while the connection sat idle in the pool is read (without waiting), so
    /// a server that closed it (a restart, `pg_terminate_backend`, an idle timeout) is noticed
    /// here rather than by a failed transaction.
    pub(super) fn is_usable(&mut self) -> bool {
        if self.is_closed() {
            return false;
        }
        let (runtime, _, connection) = self.parts();
        // One turn of the runtime's reactor (a poll of the socket that does not wait) before
        // the connection is polled again: without it, what arrived while no one was polling
        // would go unseen.
        let turn = async {
            tokio::task::yield_now().await;
            Ok(())
        };
        let _ = drive(runtime, connection, turn);
        !self.is_closed()
    }

    /// Runs `ops` in one round trip: every request is written before any answer is read, and
    /// PostgreSQL runs them in order. Returns each one's outcome, in order (after a failure in
    /// a transaction, the later statements fail too: the transaction is aborted), or the
    /// connection's error when it failed. The list is shorter than `ops` when a statement
    /// could not be sent: it ends with that statement's error, and none after it was sent.
    pub(super) fn pipeline(&mut self, ops: &[Op<'_>]) -> PgResult<Vec<PgResult<Answer>>> {
        let (runtime, client, connection) = self.parts();
        let mut running: Vec<Pin<Box<dyn Future<Output = PgResult<Answer>> + '_>>> = ops
            .iter()
            .map(
                |op| -> Pin<Box<dyn Future<Output = PgResult<Answer>> + '_>> {
                    match op {
                        Op::Simple(sql) => Box::pin(async move {
                            client.batch_execute(sql).await.map(|()| Answer::Done)
                        }),
                        Op::Execute(statement, binds) => Box::pin(async move {
                            client
                                .execute(statement, &refs(binds))
                                .await
                                .map(Answer::Count)
                        }),
                        Op::Query(statement, binds) => Box::pin(async move {
                            client
                                .query(statement, &refs(binds))
                                .await
                                .map(Answer::Rows)
                        }),
                    }
                },
            )
            .collect();
        let mut answers: Vec<Option<PgResult<Answer>>> = ops.iter().map(|_| None).collect();
        // The statements polled at least once (a prefix: they are polled in order), and where
        // the batch ends: a statement that fails on its first poll (its parameters could not
        // be encoded, or the connection is gone) was never sent, and nothing after it is sent
        // either, so that a COMMIT never goes without the statements before it.
        let mut polled = 0;
        let mut end = ops.len();
        let all = std::future::poll_fn(|cx| {
            // In order: each request is queued on its first poll, so they leave in order.
            for (i, (future, answer)) in running.iter_mut().zip(answers.iter_mut()).enumerate() {
                if i >= end {
                    break;
                }
                if answer.is_some() {
                    continue;
                }
                let first = i >= polled;
                polled = polled.max(i + 1);
                if let Poll::Ready(a) = future.as_mut().poll(cx) {
                    if first && a.is_err() {
                        end = i + 1;
                    }
                    *answer = Some(a);
                }
            }
            if answers[..end].iter().all(Option::is_some) {
                Poll::Ready(Ok(()))
            } else {
                Poll::Pending
            }
        });
        drive(runtime, connection, all)?;
        drop(running);
        answers.truncate(end);
        Ok(answers.into_iter().flatten().collect())
    }

    /// Runs one statement given as text, with no parameters.
    pub(super) fn batch_execute(&mut self, sql: &str) -> PgResult<()> {
        self.pipeline(&[Op::Simple(sql)])?.remove(0).map(drop)
    }

    /// Prepares `sql` (one round trip).
    pub(super) fn prepare(&mut self, sql: &str) -> PgResult<Statement> {
        let (runtime, client, connection) = self.parts();
        drive(runtime, connection, client.prepare(sql))
    }

    /// The rows of `sql` (prepared, then run: two round trips), for the few statements run
    /// outside transactions.
    pub(super) fn query(&mut self, sql: &str) -> PgResult<Vec<tokio_postgres::Row>> {
        let statement = self.prepare(sql)?;
        match self
            .pipeline(&[Op::Query(statement, Vec::new())])?
            .remove(0)?
        {
            Answer::Rows(rows) => Ok(rows),
            _ => Ok(Vec::new()),
        }
    }
}

/// Runs `future` to its end on `runtime` while driving `connection` (which sends its requests
/// and reads its answers); the connection's failure ends it early.
fn drive<T>(
    runtime: &tokio::runtime::Runtime,
    connection: &mut Option<ConnectionWork>,
    future: impl Future<Output = PgResult<T>>,
) -> PgResult<T> {
    let mut future = std::pin::pin!(future);
    let run = || {
        runtime.block_on(std::future::poll_fn(|cx| {
            if let Some(c) = connection.as_mut() {
                match c.as_mut().poll(cx) {
                    Poll::Pending => {}
                    Poll::Ready(Ok(())) => *connection = None,
                    Poll::Ready(Err(e)) => {
                        *connection = None;
                        return Poll::Ready(Err(e));
                    }
                }
            }
            future.as_mut().poll(cx)
        }))
    };
    blocking(run)
}

/// Runs `f`, which blocks its thread, from any thread. On a worker of an application's
/// multi-thread tokio runtime (a blocking call made from async code), the `block_on` of a
/// connection's runtime, or its drop, would panic; `block_in_place` lets it block there
/// (costly for that runtime, but not a panic). Elsewhere, a blocking-pool thread included, `f`
/// simply runs.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // The socket closes first; then the runtime stops without waiting (a runtime's plain
        // drop waits for its blocking threads, which panics on an async worker: this one has
        // none to wait for).
        self.connection = None;
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
