//! The PostgreSQL store (cargo feature `postgres`), for deployments that outgrow one machine.
//!
//! The same statements as SQLite ([`super::records`]): `?N` placeholders become `$N` with a cast
//! from the bound value (`$1::int8`, `$2::text`), so PostgreSQL never guesses a parameter's
//! type. The schema has its own numbered migrations (`migrations/postgres/`), the same versions
//! as SQLite's, written with `BIGINT` integers and identity keys. Events record the
//! transaction that wrote them, so that followers read the log gap-free in commit order
//! ([`super::events`]).
//!
//! Writers of every process and thread run at once: a write transaction is `SERIALIZABLE`, so
//! every rule a unit of work checks by reading (the last permission of an ACL, required
//! metadata, a workflow's current state, ...) holds as if the units had run one after the other.
//! When PostgreSQL cannot guarantee that it aborts one of them (SQLSTATE 40001, or 40P01 for a
//! deadlock); that error is [`Error::contended`], and the kernel runs the whole unit again (see
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
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tokio_postgres::types::{IsNull, ToSql, Type};
use tokio_postgres::{NoTls, Statement};

use super::sqlite::SCHEMA_VERSION;
use super::{Dialect, Mode, Param, Row, Store, Transaction, Value};
use crate::error::{Error, NON_FIELD_ERRORS, Result};

/// Schema migrations, in order: (version, SQL). The same versions as SQLite's list (one
/// [`SCHEMA_VERSION`] for both), each written for PostgreSQL.
pub(crate) const MIGRATIONS: &[(u32, &str)] = &[
    (1, include_str!("migrations/postgres/0001_initial.sql")),
    (
        2,
        include_str!("migrations/postgres/0002_document_files.sql"),
    ),
    (3, include_str!("migrations/postgres/0003_workflows.sql")),
    (
        4,
        include_str!("migrations/postgres/0004_template_authors.sql"),
    ),
    (5, include_str!("migrations/postgres/0005_task_targets.sql")),
    (
        6,
        include_str!("migrations/postgres/0006_event_commit_order.sql"),
    ),
    (
        7,
        include_str!("migrations/postgres/0007_template_shapers.sql"),
    ),
    (
        super::USERNAME_KEYS_MIGRATION,
        include_str!("migrations/postgres/0008_username_keys.sql"),
    ),
    (
        9,
        include_str!("migrations/postgres/0009_followed_events.sql"),
    ),
];

/// The session-level advisory lock `migrate` holds, so that one process migrates while the
/// others wait (units of work take no lock of their own).
const MIGRATION_LOCK: i64 = 0x0064_6f63_6d65_7461; // "docmeta"
/// How long a thread waits for a connection when all `postgres_pool_size` are in use.
const POOL_WAIT: Duration = Duration::from_secs(10);

/// A docmeta database on PostgreSQL.
pub struct PostgresStore {
    url: String,
    pool: Mutex<PoolState>,
    returned: Condvar,
    size: usize,
    round_trips: AtomicU64,
    data_statements: AtomicU64,
}

/// The connections: idle ones, and how many exist (idle or in use).
struct PoolState {
    idle: Vec<Pooled>,
    open: usize,
}

thread_local! {
    /// Connections this thread holds (of any PostgreSQL store): a thread that already holds one
    /// and needs another (a read inside a unit of work) never waits for the pool, which could
    /// otherwise be exhausted by threads all waiting for their second connection.
    static HELD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

type PgError = tokio_postgres::Error;
type PgResult<T> = std::result::Result<T, PgError>;
/// A connection's own work: writing the requests, reading the answers.
type ConnectionWork = Pin<Box<dyn Future<Output = PgResult<()>> + Send>>;

/// One connection to PostgreSQL: `tokio-postgres`'s client and connection, driven by the thread
/// that uses it on a small runtime of its own (what the synchronous `postgres` crate does
/// inside). Driving it here lets a thread send several statements before it reads their
/// answers ([`Conn::pipeline`]): one round trip for all of them.
struct Conn {
    /// `None` only while the connection is dropped (see `Drop for Conn`).
    runtime: Option<tokio::runtime::Runtime>,
    client: tokio_postgres::Client,
    /// The connection's own work (writing requests, reading answers); `None` once it ended.
    connection: Option<ConnectionWork>,
}

/// A statement of a [`Conn::pipeline`].
enum Op<'s> {
    /// Statements without parameters, sent as text (`BEGIN ...`, `COMMIT`, a migration).
    Simple(&'s str),
    /// A prepared statement whose changed-row count is the answer.
    Execute(Statement, Vec<Bound>),
    /// A prepared statement whose rows are the answer.
    Query(Statement, Vec<Bound>),
}

/// The answer to an [`Op`].
enum Answer {
    Done,
    Count(u64),
    Rows(Vec<tokio_postgres::Row>),
}

impl Conn {
    fn connect(url: &str) -> Result<Conn> {
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

    fn is_closed(&self) -> bool {
        self.connection.is_none() || self.client.is_closed()
    }

    /// Whether the connection still works, as far as can be told without a round trip: what
    /// the server sent while the connection sat idle in the pool is read (without waiting), so
    /// a server that closed it (a restart, `pg_terminate_backend`, an idle timeout) is noticed
    /// here rather than by a failed transaction.
    fn is_usable(&mut self) -> bool {
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
    fn pipeline(&mut self, ops: &[Op<'_>]) -> PgResult<Vec<PgResult<Answer>>> {
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
    fn batch_execute(&mut self, sql: &str) -> PgResult<()> {
        self.pipeline(&[Op::Simple(sql)])?.remove(0).map(drop)
    }

    /// Prepares `sql` (one round trip).
    fn prepare(&mut self, sql: &str) -> PgResult<Statement> {
        let (runtime, client, connection) = self.parts();
        drive(runtime, connection, client.prepare(sql))
    }

    /// The rows of `sql` (prepared, then run: two round trips), for the few statements run
    /// outside transactions.
    fn query(&mut self, sql: &str) -> PgResult<Vec<tokio_postgres::Row>> {
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

/// The parameters of a statement as `tokio-postgres` takes them.
fn refs(binds: &[Bound]) -> Vec<&(dyn ToSql + Sync)> {
    binds.iter().map(|b| b as &(dyn ToSql + Sync)).collect()
}

/// A connection with the statements it has prepared (a statement is parsed once per
/// connection, not once per use).
struct Pooled {
    client: Conn,
    statements: std::collections::HashMap<String, Statement>,
}

impl Pooled {
    fn prepared(&mut self, sql: &str, round_trips: &AtomicU64) -> PgResult<Statement> {
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

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("url", &redact(&self.url))
            .finish_non_exhaustive()
    }
}

/// The URL without its password, and the password (handed to `pg_dump`/`pg_restore` in
/// `PGPASSWORD`, never on their command line).
pub(crate) fn split_password(url: &str) -> (String, Option<String>) {
    let password = match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => url[scheme + 3..at]
            .split_once(':')
            .map(|(_, p)| p.to_owned()),
        _ => None,
    };
    (redact(url), password)
}

/// Runs `pg_dump` or `pg_restore` against `url` with `args`.
pub(crate) fn run_tool(tool: &str, url: &str, args: &[&str]) -> Result<()> {
    let (url, password) = split_password(url);
    let mut command = std::process::Command::new(tool);
    command.args(args).arg("--dbname").arg(&url);
    if let Some(p) = password {
        command.env("PGPASSWORD", p);
    }
    let output = command
        .output()
        .map_err(|e| Error::storage(format!("running {tool} (is it installed?)"), e))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(Error::storage(
            format!("running {tool}"),
            String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        ))
    }
}

/// Checks a `pg_dump -Fc` file before a restore loads it, without touching any database:
/// `pg_restore` converts the whole dump to SQL text (discarded), which reads back and
/// decompresses every entry (a damaged dump fails here), and the rows of `schema_version` are
/// read from that text: a version newer than this build's ([`SCHEMA_VERSION`]) is refused.
/// Returns the dump's schema version and the storage names of the document files its rows of
/// `document_files` name (a restore writes no other document file). Problems are
/// [`Error::InvalidInput`].
pub(crate) fn check_dump(path: &std::path::Path) -> Result<super::DatabaseDump> {
    use std::io::BufRead;
    let mut child = std::process::Command::new("pg_restore")
        // The SQL text on stdout, read below (recent versions insist on naming it).
        .arg("--file=-")
        .arg(path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| Error::storage("running pg_restore (is it installed?)", e))?;
    // Drained on its own thread: a full stderr pipe would stall pg_restore.
    let stderr = child.stderr.take().map(|mut err| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut err, &mut text);
            text
        })
    });
    let mut version: Option<i64> = None;
    let mut storage_names = Vec::new();
    // The table whose `COPY` rows are being read: the versions, or the document files with the
    // position of their `storage_name` column.
    enum Copying {
        Nothing,
        Versions,
        Files(usize),
    }
    let mut copying = Copying::Nothing;
    if let Some(out) = child.stdout.take() {
        let mut out = std::io::BufReader::new(out);
        let mut line = Vec::new();
        loop {
            line.clear();
            match out.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end();
            match copying {
                _ if text == "\\." => copying = Copying::Nothing,
                Copying::Versions => {
                    if let Ok(v) = text.trim().parse::<i64>() {
                        version = Some(version.map_or(v, |m| m.max(v)));
                    }
                }
                Copying::Files(column) => {
                    if let Some(name) = text.split('\t').nth(column) {
                        storage_names.push(name.to_owned());
                    }
                }
                Copying::Nothing => {
                    // `COPY public.document_files (id, …, storage_name, …) FROM stdin;`
                    let Some((table, columns)) = text
                        .strip_prefix("COPY ")
                        .and_then(|rest| rest.split_once(" ("))
                        .and_then(|(t, rest)| Some((t, rest.split_once(')')?.0)))
                    else {
                        continue;
                    };
                    let table = table.rsplit('.').next().unwrap_or(table).trim_matches('"');
                    let mut columns = columns.split(',').map(|c| c.trim().trim_matches('"'));
                    copying = match table {
                        "schema_version" => Copying::Versions,
                        "document_files" => columns
                            .position(|c| c == "storage_name")
                            .map_or(Copying::Nothing, Copying::Files),
                        _ => Copying::Nothing,
                    };
                }
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| Error::storage("running pg_restore", e))?;
    let errors = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    if !status.success() {
        return Err(Error::InvalidInput(format!(
            "the backup's PostgreSQL dump cannot be read: {}",
            errors.trim()
        )));
    }
    let version = version.ok_or_else(|| {
        Error::InvalidInput("the backup's PostgreSQL dump holds no schema version".to_owned())
    })?;
    let version = u32::try_from(version).unwrap_or(u32::MAX);
    if version > SCHEMA_VERSION {
        return Err(Error::InvalidInput(format!(
            "the backup's database has schema version {version}, newer than this docmeta \
             ({SCHEMA_VERSION}); restore it with the docmeta that made it, or a newer one"
        )));
    }
    Ok(super::DatabaseDump {
        entry: "db.pgdump",
        schema_version: version,
        storage_names,
    })
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

/// SQLSTATEs after which running the whole transaction again may succeed:
/// `serialization_failure` and `deadlock_detected`.
fn is_contention(code: &str) -> bool {
    code == "40001" || code == "40P01"
}

fn pg_error(operation: &str, e: PgError) -> Error {
    if let Some(db) = e.as_db_error() {
        return db_error(
            operation,
            db.code().code(),
            db.severity(),
            db.message(),
            db.detail(),
        );
    }
    Error::storage(operation.to_owned(), e)
}

/// Maps an error the server reported, by its SQLSTATE `code`.
fn db_error(
    operation: &str,
    code: &str,
    severity: &str,
    message: &str,
    detail: Option<&str>,
) -> Error {
    if is_contention(code) {
        return Error::contended(
            operation.to_owned(),
            format!("{severity} ({code}): {message}"),
        );
    }
    if code == "23505" {
        // "Key (name)=(x) already exists."
        let field = detail
            .and_then(|d| d.strip_prefix("Key ("))
            .and_then(|d| d.split(')').next())
            .map(|f| f.rsplit(", ").next().unwrap_or(f).to_owned())
            .unwrap_or_else(|| NON_FIELD_ERRORS.to_owned());
        return Error::conflict(field, "This value is already taken.");
    }
    if code == "23503" {
        return Error::InvalidInput(
            "the change refers to a record that does not exist, or removes one still in use".into(),
        );
    }
    if code.starts_with("23") {
        return Error::InvalidInput(format!(
            "a database constraint refused the change: {message}"
        ));
    }
    let source = format!("{severity} ({code}): {message}");
    // disk_full: the server could not extend a table, an index, a temporary file or the WAL.
    if code == "53100" {
        return Error::storage_full(operation.to_owned(), source);
    }
    Error::storage(operation.to_owned(), source)
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
    /// (before issue #19 each cost two more round trips: a
    /// `SAVEPOINT` and a `RELEASE`). For measurements, like [`round_trips`](Self::round_trips).
    #[doc(hidden)]
    pub fn data_statements(&self) -> u64 {
        self.data_statements.load(Ordering::Relaxed)
    }

    /// A transaction started with `begin` (`BEGIN ISOLATION LEVEL ...`), which is sent with
    /// its first statement.
    fn begin_with(&self, begin: &'static str) -> Result<Box<dyn Transaction + '_>> {
        let client = self.client()?;
        Ok(Box::new(PgTx {
            store: self,
            client: Some(client),
            begun: false,
            pending: vec![Op::Simple(begin)],
            failed: None,
        }))
    }

    /// A read of one statement, sent alone: it runs in a transaction of its own (one snapshot),
    /// with no `BEGIN` or `COMMIT` to send.
    fn begin_alone(&self) -> Result<Box<dyn Transaction + '_>> {
        let client = self.client()?;
        Ok(Box::new(PgTx {
            store: self,
            client: Some(client),
            begun: false,
            pending: Vec::new(),
            failed: None,
        }))
    }

    fn trip(&self) {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
    }

    fn connect(&self) -> Result<Conn> {
        Conn::connect(&self.url)
    }

    /// A connection: an idle one, a new one while fewer than the pool's size exist (or when
    /// this thread already holds one), otherwise the next one given back.
    fn client(&self) -> Result<Pooled> {
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

    fn give_back(&self, pooled: Pooled) {
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
    fn discard(&self, pooled: Pooled) {
        drop(pooled);
        HELD.with(|h| h.set(h.get().saturating_sub(1)));
        let mut pool = self.pool.lock();
        pool.open = pool.open.saturating_sub(1);
        drop(pool);
        self.returned.notify_one();
    }

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

/// `?N` placeholders to `$N` with the bound value's type, outside string literals.
fn rewrite(sql: &str, params: &[Param<'_>]) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut chars = sql.char_indices().peekable();
    let mut in_string = false;
    while let Some((_, c)) = chars.next() {
        if c == '\'' {
            in_string = !in_string;
            out.push(c);
            continue;
        }
        if c != '?' || in_string {
            out.push(c);
            continue;
        }
        let mut digits = String::new();
        while let Some((_, d)) = chars.peek().copied().filter(|(_, d)| d.is_ascii_digit()) {
            digits.push(d);
            chars.next();
        }
        let n: usize = digits.parse().unwrap_or(0);
        out.push('$');
        out.push_str(&digits);
        match params.get(n.wrapping_sub(1)) {
            Some(Param::Int(_)) => out.push_str("::int8"),
            Some(Param::Text(_)) => out.push_str("::text"),
            _ => {}
        }
    }
    out
}

/// A bound value (owned: a statement may wait in the transaction's pipeline) that takes the
/// type PostgreSQL expects for its placeholder.
#[derive(Debug)]
enum Bound {
    Null,
    Int(i64),
    Text(String),
}

impl From<Param<'_>> for Bound {
    fn from(p: Param<'_>) -> Bound {
        match p {
            Param::Null => Bound::Null,
            Param::Int(v) => Bound::Int(v),
            Param::Text(t) => Bound::Text(t.to_owned()),
        }
    }
}

impl ToSql for Bound {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut tokio_postgres::types::private::BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Bound::Null => Ok(IsNull::Yes),
            Bound::Int(v) => match *ty {
                Type::INT2 => i16::try_from(*v)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(*v)?.to_sql(ty, out),
                Type::BOOL => (*v != 0).to_sql(ty, out),
                _ => v.to_sql(ty, out),
            },
            Bound::Text(s) => s.as_str().to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

/// How many statements may wait in a transaction's pipeline before they are sent anyway.
const PIPELINE_MAX: usize = 64;

/// A transaction. Its `BEGIN` is not sent alone: it waits for the first statement and travels
/// with it, and statements whose answer nobody reads now ([`Transaction::execute_later`]) wait
/// for the next one, or the `COMMIT`: each batch is one round trip ([`Conn::pipeline`]). A
/// transaction that ran no statement sends nothing at all.
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

    fn migrate(&self) -> Result<Vec<u32>> {
        let mut pooled = self.client()?;
        let client = &mut pooled.client;
        let mut applied = Vec::new();
        // One process migrates; the others wait for the lock and find nothing left to do.
        client
            .batch_execute(&format!("SELECT pg_advisory_lock({MIGRATION_LOCK})"))
            .map_err(|e| pg_error("locking for migrations", e))?;
        let result = (|| {
            let current = Self::version(client)?;
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
                    if *version == super::USERNAME_KEYS_MIGRATION {
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
                    "UPDATE events SET tx = 0 WHERE tx <> 0 AND (SELECT max(tx) FROM events) >= (pg_snapshot_xmax(pg_current_snapshot())::text::bigint)",
                )
                .map_err(|e| pg_error("checking the event log's transaction ids", e))?;
            Ok(applied)
        })();
        let _ = client.batch_execute(&format!("SELECT pg_advisory_unlock({MIGRATION_LOCK})"));
        // Statements prepared before a migration may describe the old schema.
        pooled.statements.clear();
        self.give_back(pooled);
        result
    }

    fn schema_version(&self) -> Result<(u32, u32)> {
        let mut pooled = self.client()?;
        let v = Self::version(&mut pooled.client);
        self.give_back(pooled);
        Ok((v?, SCHEMA_VERSION))
    }

    fn describe(&self) -> String {
        format!("postgres:{}", redact(&self.url))
    }

    /// `pg_dump -Fc` of the database in the exact state from which the file list is read: a
    /// repeatable-read transaction exports its snapshot and `pg_dump --snapshot` uses it.
    fn dump_for_backup(&self, path: &std::path::Path) -> Result<super::DatabaseDump> {
        let mut pooled = self.client()?;
        let result = (|| {
            let c = &mut pooled.client;
            c.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                .map_err(|e| pg_error("starting the backup snapshot", e))?;
            let snapshot: String = c
                .query("SELECT pg_export_snapshot()")
                .map_err(|e| pg_error("exporting the backup snapshot", e))?
                .first()
                .and_then(|r| r.get(0))
                .ok_or_else(|| Error::storage("exporting the backup snapshot", "no snapshot"))?;
            let version: Option<i64> = c
                .query("SELECT max(version) FROM schema_version")
                .map_err(|e| pg_error("reading the schema version", e))?
                .first()
                .and_then(|r| r.get(0));
            let names: Vec<String> = c
                .query("SELECT storage_name FROM document_files ORDER BY storage_name")
                .map_err(|e| pg_error("listing the document files", e))?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let path = path.to_string_lossy();
            run_tool(
                "pg_dump",
                &self.url,
                &[
                    "--format=custom",
                    "--no-owner",
                    "--no-privileges",
                    "--snapshot",
                    &snapshot,
                    "--file",
                    &path,
                ],
            )?;
            Ok(super::DatabaseDump {
                entry: "db.pgdump",
                schema_version: u32::try_from(version.unwrap_or(0)).unwrap_or(0),
                storage_names: names,
            })
        })();
        let _ = pooled.client.batch_execute("COMMIT");
        self.give_back(pooled);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn disk_full_is_storage_full() {
        let e = db_error(
            "inserting a row",
            "53100",
            "ERROR",
            "could not extend file \"base/16384/16385\": No space left on device",
            None,
        );
        assert_eq!(e.kind(), ErrorKind::StorageFull, "{e}");
    }

    #[test]
    fn other_resource_errors_are_storage() {
        // 53200 out_of_memory: same class, but freeing disk space does not help.
        let e = db_error("inserting a row", "53200", "ERROR", "out of memory", None);
        assert_eq!(e.kind(), ErrorKind::Storage, "{e}");
    }

    #[test]
    fn unique_violation_names_the_field() {
        let e = db_error(
            "inserting a row",
            "23505",
            "ERROR",
            "duplicate key value violates unique constraint",
            Some("Key (name)=(x) already exists."),
        );
        assert!(
            matches!(&e, Error::Conflict { field, .. } if field == "name"),
            "{e}"
        );
    }

    #[test]
    fn migrations_have_the_same_versions_as_sqlite() {
        let versions = |list: &[(u32, &str)]| list.iter().map(|(v, _)| *v).collect::<Vec<_>>();
        assert_eq!(
            versions(MIGRATIONS),
            versions(super::super::sqlite::MIGRATIONS)
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

    #[test]
    fn placeholders_are_typed_by_their_values() {
        assert_eq!(
            rewrite(
                "SELECT ?1, '?2', ?2 WHERE x = ?3",
                &[Param::Int(1), Param::Text("a"), Param::Null]
            ),
            "SELECT $1::int8, '?2', $2::text WHERE x = $3"
        );
        assert_eq!(
            redact("postgres://docmeta:secret@db:5432/docmeta"),
            "postgres://docmeta@db:5432/docmeta"
        );
    }
}
