//! A transaction on SQLite: a write (`BEGIN IMMEDIATE`) on the writer connection, a unit of
//! work's savepoint in the group open on it, or a read (`BEGIN`, one snapshot) on a reader
//! connection, given back to the pool when the transaction ends.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use parking_lot::MutexGuard;
use rusqlite::Connection;
use rusqlite::types::ValueRef;

use super::SqliteStore;
use super::conn::run_cached;
use super::dialect::Bind;
use super::errors::sqlite_error;
use super::group;
use super::pool::ReaderPool;
use crate::error::{Error, Result};
use crate::store::{Mode, Param, PendingCommit, Row, Transaction, Value};

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

struct SqliteTx<'a> {
    conn: Conn<'a>,
    open: bool,
    /// The group of a unit of work (see [`group`]); none for other transactions.
    unit: Option<group::Membership<'a>>,
}

impl SqliteStore {
    /// A transaction on the writer connection for a write (`BEGIN IMMEDIATE`), on a reader
    /// connection for a read (`BEGIN`); in memory, on the writer connection for both.
    pub(super) fn begin_with(&self, mode: Mode) -> Result<Box<dyn Transaction + '_>> {
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

    /// A unit of work's transaction: its savepoint in the group open on the writer connection
    /// (see [`group`]).
    pub(super) fn begin_in_group(&self) -> Result<Box<dyn Transaction + '_>> {
        let (w, unit) = self.writer.begin_unit()?;
        Ok(Box::new(SqliteTx {
            conn: Conn::Writer(Some(w)),
            open: true,
            unit: Some(unit),
        }))
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
