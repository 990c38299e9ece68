//! A transaction on PostgreSQL: its `BEGIN` travels with its first statement, statements
//! whose answer nobody reads wait for the next one or the `COMMIT`, and a failed statement
//! keeps the transaction from committing.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use std::sync::atomic::Ordering;

use tokio_postgres::Statement;
use tokio_postgres::types::Type;

use super::PostgresStore;
use super::conn::{Answer, Op};
use super::dialect::{Bound, rewrite};
use super::errors::pg_error;
use super::pool::Pooled;
use crate::error::{Error, Result};
use crate::store::{Dialect, Param, Row, Transaction, Value};

/// How many statements may wait in a transaction's pipeline before they are sent anyway.
const PIPELINE_MAX: usize = 64;

/// A transaction. Its `BEGIN` is not sent alone: it waits for the first statement and travels
/// with it, and statements whose answer nobody reads now ([`Transaction::execute_later`]) wait
/// for the next one, or the `COMMIT`: each batch is one round trip ([`Conn::pipeline`]). A
/// transaction that ran no statement sends nothing at all.
///
/// [`Conn::pipeline`]: super::conn::Conn::pipeline
struct PgTx<'a> {
    store: &'a PostgresStore,
    client: Option<Pooled>,
    /// `BEGIN` was sent: ending without a `COMMIT` needs a `ROLLBACK`.
    begun: bool,
    /// Statements not sent yet, in order: the `BEGIN` until a first statement goes, then the
    /// statements of `execute_later`.
    pending: Vec<Op<'static>>,
    /// The error of a statement that failed (PostgreSQL then refuses every statement until a
    /// `ROLLBACK TO SAVEPOINT`, and a `COMMIT` would silently roll back): the transaction
    /// refuses to commit with it.
    failed: Option<Error>,
    /// It appended events: other stores' watches are told once it has committed.
    wrote_events: bool,
}

impl PostgresStore {
    /// A transaction started with `begin` (`BEGIN ISOLATION LEVEL ...`), which is sent with
    /// its first statement.
    pub(super) fn begin_with(&self, begin: &'static str) -> Result<Box<dyn Transaction + '_>> {
        let client = self.client()?;
        Ok(Box::new(PgTx {
            store: self,
            client: Some(client),
            begun: false,
            pending: vec![Op::Simple(begin)],
            failed: None,
            wrote_events: false,
        }))
    }

    /// A read of one statement, sent alone: it runs in a transaction of its own (one snapshot),
    /// with no `BEGIN` or `COMMIT` to send.
    pub(super) fn begin_alone(&self) -> Result<Box<dyn Transaction + '_>> {
        let client = self.client()?;
        Ok(Box::new(PgTx {
            store: self,
            client: Some(client),
            begun: false,
            pending: Vec::new(),
            failed: None,
            wrote_events: false,
        }))
    }
}

impl PgTx<'_> {
    fn client(&mut self) -> Result<&mut Pooled> {
        self.client
            .as_mut()
            .ok_or_else(|| Error::storage("using a transaction", "the transaction is finished"))
    }

    /// A statement ready to run: `sql` prepared on this connection (one round trip the first
    /// time the connection sees it) with its parameters.
    fn bind(&mut self, sql: &str, params: &[Param<'_>]) -> Result<(Statement, Vec<Bound>)> {
        let store = self.store;
        let is_data = {
            let first = sql.split_whitespace().next().unwrap_or("");
            ["insert", "update", "delete"]
                .iter()
                .any(|w| first.eq_ignore_ascii_case(w))
        };
        if is_data {
            store.data_statements.fetch_add(1, Ordering::Relaxed);
        }
        let rewritten = rewrite(sql, params);
        let prepared = self
            .client()?
            .prepared(&rewritten, &store.round_trips)
            .map_err(|e| pg_error("preparing a statement", e));
        // A statement that cannot be prepared inside the transaction aborts it as a failed
        // statement does: it must not commit either.
        self.remember(&prepared, "");
        Ok((prepared?, params.iter().copied().map(Bound::from).collect()))
    }

    /// Records the outcome of a statement (see `failed`): a failure is kept, unless a conflict
    /// with concurrent transactions is kept already; a `ROLLBACK TO SAVEPOINT` (`sql`) that
    /// succeeded clears it, except such a conflict, which only a run of the whole unit again
    /// can resolve.
    fn remember<T>(&mut self, result: &Result<T>, sql: &str) {
        let contended = self.failed.as_ref().is_some_and(Error::is_busy);
        match result {
            Err(e) if !contended => self.failed = Some(clone_error(e)),
            Ok(_) if !contended && is_rollback_to_savepoint(sql) => self.failed = None,
            _ => {}
        }
    }

    /// Sends the waiting statements and then `last` (when given), in one round trip; returns
    /// `last`'s answer. The first failure among them is the error (the statements after it
    /// failed only because the transaction was aborted); it is remembered (see `remember`).
    /// `sql` is `last`'s text.
    fn send(&mut self, last: Option<Op<'static>>, sql: &str, operation: &str) -> Result<Answer> {
        let store = self.store;
        let mut ops = std::mem::take(&mut self.pending);
        let has_last = last.is_some();
        ops.extend(last);
        if ops.is_empty() {
            return Ok(Answer::Done);
        }
        store.trip();
        if ops
            .iter()
            .any(|op| matches!(op, Op::Simple(s) if s.starts_with("BEGIN")))
        {
            self.begun = true;
        }
        let result = match self.client()?.client.pipeline(&ops) {
            Err(e) => Err(pg_error(operation, e)),
            Ok(answers) => {
                let mut first_error = None;
                let mut out = Answer::Done;
                // `answers` is shorter than `ops` when a statement could not be sent; it then
                // holds that statement's error.
                let count = ops.len();
                for (i, answer) in answers.into_iter().enumerate() {
                    match answer {
                        Err(e) if first_error.is_none() => {
                            let is_last = has_last && i + 1 == count;
                            first_error = Some(pg_error(
                                if is_last {
                                    operation
                                } else {
                                    "writing to the database"
                                },
                                e,
                            ));
                        }
                        Ok(a) if has_last && i + 1 == count => out = a,
                        _ => {}
                    }
                }
                first_error.map_or(Ok(out), Err)
            }
        };
        self.remember(&result, if has_last { sql } else { "" });
        result
    }
}

fn is_rollback_to_savepoint(sql: &str) -> bool {
    let words: Vec<&str> = sql.split_whitespace().take(3).collect();
    words.len() == 3
        && words[0].eq_ignore_ascii_case("rollback")
        && words[1].eq_ignore_ascii_case("to")
}

/// A copy of a statement's error for `PgTx::failed` (the kind and message are kept; a source
/// becomes its text).
fn clone_error(e: &Error) -> Error {
    if e.is_busy() {
        return Error::contended("running a statement", e.to_string());
    }
    match e {
        Error::Validation { field, message } => Error::validation(field.clone(), message),
        Error::Conflict { field, message } => Error::conflict(field.clone(), message),
        Error::InvalidInput(m) => Error::InvalidInput(m.clone()),
        Error::StorageFull { operation, source } => {
            Error::storage_full(operation.clone(), source.to_string())
        }
        other => Error::storage("running a statement", other.to_string()),
    }
}

impl Transaction for PgTx<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64> {
        let (statement, binds) = self.bind(sql, params)?;
        match self.send(
            Some(Op::Execute(statement, binds)),
            sql,
            "writing to the database",
        )? {
            Answer::Count(n) => Ok(n),
            _ => Ok(0),
        }
    }

    fn execute_later(&mut self, sql: &str, params: &[Param<'_>]) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(clone_error(e));
        }
        let (statement, binds) = self.bind(sql, params)?;
        self.pending.push(Op::Execute(statement, binds));
        if self.pending.len() >= PIPELINE_MAX {
            self.flush()?;
        }
        Ok(())
    }

    /// Once this transaction has committed, the store's notifier tells other stores' watches
    /// (see `postgres/listen.rs`): outside the transaction, which must not wait for it.
    fn notify_events(&mut self) -> Result<()> {
        self.wrote_events = true;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.pending.iter().any(|op| !matches!(op, Op::Simple(_))) {
            self.send(None, "", "writing to the database")?;
        }
        Ok(())
    }

    fn query(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        each: &mut dyn FnMut(&Row) -> Result<()>,
    ) -> Result<()> {
        let (statement, binds) = self.bind(sql, params)?;
        let rows = match self.send(
            Some(Op::Query(statement, binds)),
            sql,
            "querying the database",
        )? {
            Answer::Rows(rows) => rows,
            _ => Vec::new(),
        };
        let mut row = Row::default();
        for r in rows {
            row.0.clear();
            for (i, column) in r.columns().iter().enumerate() {
                let value = match *column.type_() {
                    Type::INT8 => r.get::<_, Option<i64>>(i).map(Value::Int),
                    Type::INT4 => r.get::<_, Option<i32>>(i).map(|v| Value::Int(v.into())),
                    Type::INT2 => r.get::<_, Option<i16>>(i).map(|v| Value::Int(v.into())),
                    Type::BOOL => r.get::<_, Option<bool>>(i).map(|v| Value::Int(v.into())),
                    Type::FLOAT8 => r
                        .get::<_, Option<f64>>(i)
                        .map(|v| Value::Text(v.to_string())),
                    _ => r
                        .try_get::<_, Option<String>>(i)
                        .map_err(|e| pg_error("reading a column", e))?
                        .map(Value::Text),
                };
                row.0.push(value.unwrap_or(Value::Null));
            }
            each(&row)?;
        }
        Ok(())
    }

    fn commit(mut self: Box<Self>) -> Result<()> {
        if let Some(e) = self.failed.take() {
            // Dropping rolls back: PostgreSQL would answer this COMMIT with a ROLLBACK anyway.
            return Err(e);
        }
        if !self.begun && self.pending.iter().all(|op| matches!(op, Op::Simple(_))) {
            // No statement ran: there is nothing to commit, and nothing was sent.
            self.pending.clear();
            return Ok(());
        }
        let result = self
            .send(
                Some(Op::Simple("COMMIT")),
                "COMMIT",
                "committing a transaction",
            )
            .map(drop);
        if result.is_ok() {
            self.begun = false;
            if self.wrote_events {
                self.store.events_committed();
            }
        }
        result
    }
}

impl Drop for PgTx<'_> {
    fn drop(&mut self) {
        if let Some(mut client) = self.client.take() {
            if self.begun {
                self.store.trip();
                if client.client.batch_execute("ROLLBACK").is_err() {
                    // A broken connection is not reused.
                    self.store.discard(client);
                    return;
                }
            }
            self.store.give_back(client);
        }
    }
}
