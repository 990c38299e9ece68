//! Telling other processes of this store's commits, and hearing of theirs, while someone waits
//! for new events ([`Store::watch_commits`](crate::store::Store::watch_commits)).
//!
//! **Telling.** A unit of work that appends events marks its transaction
//! ([`Transaction::notify_events`](crate::store::Transaction::notify_events)); once it has
//! committed, the store's notifier, a thread with a connection of its own, sends
//! `NOTIFY docmeta_events` with the store's origin as payload, in a transaction of its own
//! committed asynchronously (`synchronous_commit = off`: a notification needs no durability, the
//! events it announces have theirs). Commits that come while one is being sent, or within
//! [`NOTIFY_GAP`] of it, share the next one. Not in the writing transaction: PostgreSQL
//! serialises the commits of notifying transactions under one lock held through their WAL flush,
//! which took `benches/http/pg-patch.sh` from 1,704 to 631 writes/s on one process. The
//! notifier starts with the first commit and ends after [`NOTIFIER_IDLE`] without one.
//!
//! **Hearing.** One connection per store listens on the channel, on a thread of its own, and
//! tells the sink of every notification another store sent (its own store's waiters heard of
//! its commits at once); after a failure it connects again (pausing 0.1 s, then longer, up to
//! 5 s) and, once it listens again, tells the sink anyway: a commit made while nobody listened
//! would otherwise go unheard.
//!
//! Followers read an event only once every transaction older than its own has finished (see
//! `store/events.rs`), so an event may be committed and notified while followers cannot read it
//! yet: an older transaction, which may write no event and send no notification (a task's
//! bookkeeping, another application's transaction), still runs. After each notification the
//! listener therefore asks whether such committed events exist ([`HELD_BACK`]); while they do,
//! it asks again after 20 ms, then longer (up to 250 ms), and tells the sink once they are free.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use std::time::Instant;

use parking_lot::{Condvar, Mutex};
use tokio::sync::Notify;
use tokio_postgres::{AsyncMessage, NoTls, SimpleQueryMessage};

use super::conn::Conn;
use crate::error::{Error, Result};
use crate::store::{CommitSink, CommitWatch};

/// The notifier's connection commits its notifications without waiting for the WAL flush.
const ASYNCHRONOUS: &str = "SET synchronous_commit = off";

/// The shortest time between two notifications of one store: commits within it share one.
const NOTIFY_GAP: Duration = Duration::from_millis(5);
/// The notifier ends after this long without a commit to tell of.
const NOTIFIER_IDLE: Duration = Duration::from_secs(30);

const LISTEN: &str = "LISTEN docmeta_events";

/// Whether some committed event cannot be followed yet: its transaction is newer than the
/// oldest one still running (followers read only older ones, see `store/events.rs`).
const HELD_BACK: &str = "SELECT EXISTS ( \
        SELECT 1 \
        FROM events \
        WHERE tx >= pg_snapshot_xmin(pg_current_snapshot())::text::bigint \
    )";

/// How long the listener waits without news before it asks whether it is still wanted.
const TICK: Duration = Duration::from_secs(1);
/// The first pause before asking again about events held back, and the longest.
const HELD_FIRST: Duration = Duration::from_millis(20);
const HELD_MAX: Duration = Duration::from_millis(250);
/// The first pause before connecting again after a failure, and the longest.
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(5);

/// The notification of a store whose origin is `origin` (hex digits only: see [`new_origin`]).
fn notify_statement(origin: &str) -> String {
    format!("NOTIFY docmeta_events, '{origin}'")
}

/// A store's notifier: the thread that tells other processes of its commits (see the module
/// documentation). Dropped with the store, which ends the thread.
pub(super) struct Notifier {
    shared: Arc<NotifierShared>,
}

struct NotifierShared {
    state: Mutex<NotifierState>,
    poked: Condvar,
}

#[derive(Default)]
struct NotifierState {
    /// A commit not told of yet.
    pending: bool,
    /// The thread runs.
    running: bool,
    /// The store is gone.
    stopped: bool,
}

impl Notifier {
    pub(super) fn new() -> Notifier {
        Notifier {
            shared: Arc::new(NotifierShared {
                state: Mutex::new(NotifierState::default()),
                poked: Condvar::new(),
            }),
        }
    }

    /// Tells other processes, soon, that the store committed events: starts the thread when
    /// none runs. A thread that cannot start leaves their waiters to their deadline.
    pub(super) fn committed(&self, url: &str, origin: &str) {
        let mut state = self.shared.state.lock();
        state.pending = true;
        if state.running {
            drop(state);
            self.shared.poked.notify_one();
            return;
        }
        state.running = true;
        drop(state);
        let shared = self.shared.clone();
        let (url, statement) = (url.to_owned(), notify_statement(origin));
        let started = std::thread::Builder::new()
            .name("docmeta-notify".into())
            .spawn(move || notify_loop(&url, &statement, &shared));
        if started.is_err() {
            self.shared.state.lock().running = false;
        }
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        self.shared.state.lock().stopped = true;
        self.shared.poked.notify_all();
    }
}

/// The notifier's thread: waits for a commit, tells of it (and of every commit meanwhile) in one
/// notification, pauses [`NOTIFY_GAP`]; ends when idle or when the store is gone.
fn notify_loop(url: &str, statement: &str, shared: &NotifierShared) {
    let mut conn: Option<Conn> = None;
    let mut failures = 0u32;
    loop {
        {
            let mut state = shared.state.lock();
            let idle_until = Instant::now() + NOTIFIER_IDLE;
            while !state.pending && !state.stopped {
                if shared.poked.wait_until(&mut state, idle_until).timed_out() {
                    break;
                }
            }
            if state.stopped || !state.pending {
                state.running = false;
                return;
            }
            state.pending = false;
        }
        let sent = match conn.as_mut() {
            Some(c) => c.batch_execute(statement).is_ok(),
            None => match Conn::connect(url) {
                Ok(mut c) => {
                    let sent =
                        c.batch_execute(ASYNCHRONOUS).is_ok() && c.batch_execute(statement).is_ok();
                    conn = Some(c);
                    sent
                }
                Err(_) => false,
            },
        };
        if sent {
            failures = 0;
            std::thread::sleep(NOTIFY_GAP);
        } else {
            // Told again once a connection works; the waiters meanwhile have their deadline.
            conn = None;
            shared.state.lock().pending = true;
            failures += 1;
            std::thread::sleep(RETRY_FIRST.saturating_mul(failures.min(50)));
        }
    }
}

/// A random name for a store's notifications (hex of 16 random bytes).
pub(super) fn new_origin() -> String {
    let mut bytes = [0u8; 16];
    // Without randomness, the time and the process: still unlike any other live store's.
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes[..8].copy_from_slice(&(nanos as u64).to_le_bytes());
        bytes[8..12].copy_from_slice(&std::process::id().to_le_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Starts the listening thread on the database at `url`, ignoring notifications whose payload
/// is `origin` (this store's own).
pub(super) fn watch(url: &str, origin: &str, sink: Arc<dyn CommitSink>) -> Result<CommitWatch> {
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let (url, origin) = (url.to_owned(), origin.to_owned());
    std::thread::Builder::new()
        .name("docmeta-listen".into())
        .spawn(move || run(&url, &origin, &*sink, &stopped))
        .map_err(|e| Error::storage("starting the thread that listens for commits", e))?;
    Ok(CommitWatch::new(move || stop.store(true, Ordering::SeqCst)))
}

fn run(url: &str, origin: &str, sink: &dyn CommitSink, stop: &AtomicBool) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let going = || !stop.load(Ordering::SeqCst) && sink.wanted();
    let mut pause = RETRY_FIRST;
    while going() {
        match runtime.block_on(listen(url, origin, sink, stop)) {
            Ended::Stopped => return,
            Ended::Failed { listened } => {
                if listened {
                    pause = RETRY_FIRST;
                }
            }
        }
        // Paused in short steps, so that a watch no longer wanted ends soon.
        let mut left = pause;
        while !left.is_zero() && going() {
            let step = left.min(Duration::from_millis(250));
            std::thread::sleep(step);
            left -= step;
        }
        pause = (pause * 2).min(RETRY_MAX);
    }
}

/// How one connection's listening ended.
enum Ended {
    /// The watch was told to stop, or is no longer wanted.
    Stopped,
    /// The connection failed; `listened` when it had been listening.
    Failed { listened: bool },
}

/// What the connection's reader tells the listening loop.
#[derive(Default)]
struct Heard {
    /// A notification arrived (of any store).
    any: AtomicBool,
    /// A notification of another store arrived.
    foreign: AtomicBool,
    /// The connection ended.
    closed: AtomicBool,
    news: Notify,
}

/// Listens on one connection until it fails or the watch ends.
async fn listen(url: &str, origin: &str, sink: &dyn CommitSink, stop: &AtomicBool) -> Ended {
    let failed = |listened| Ended::Failed { listened };
    let Ok((client, mut connection)) = tokio_postgres::connect(url, NoTls).await else {
        return failed(false);
    };
    let heard = Arc::new(Heard::default());
    let reader = {
        let heard = heard.clone();
        let origin = origin.to_owned();
        tokio::spawn(async move {
            while let Some(Ok(message)) =
                std::future::poll_fn(|cx| connection.poll_message(cx)).await
            {
                if let AsyncMessage::Notification(n) = message {
                    heard.any.store(true, Ordering::SeqCst);
                    if n.payload() != origin {
                        heard.foreign.store(true, Ordering::SeqCst);
                    }
                    heard.news.notify_one();
                }
            }
            heard.closed.store(true, Ordering::SeqCst);
            heard.news.notify_one();
        })
    };
    let ended = async {
        if client.batch_execute(LISTEN).await.is_err() {
            return failed(false);
        }
        // Listening from now on: what was committed before it may have gone unheard.
        sink.committed();
        let mut held = false;
        let mut pause = HELD_FIRST;
        loop {
            let wait = if held { pause } else { TICK };
            let _ = tokio::time::timeout(wait, heard.news.notified()).await;
            if stop.load(Ordering::SeqCst) || !sink.wanted() {
                return Ended::Stopped;
            }
            if heard.closed.load(Ordering::SeqCst) {
                return failed(true);
            }
            let any = heard.any.swap(false, Ordering::SeqCst);
            if heard.foreign.swap(false, Ordering::SeqCst) {
                sink.committed();
            }
            if !(any || held) {
                continue;
            }
            let Ok(now_held) = held_back(&client).await else {
                return failed(true);
            };
            if held && !now_held {
                // What an older transaction held back can be read now.
                sink.committed();
            }
            pause = if held && now_held {
                (pause * 2).min(HELD_MAX)
            } else {
                HELD_FIRST
            };
            held = now_held;
        }
    };
    let ended = ended.await;
    reader.abort();
    ended
}

/// Whether committed events are held back from followers (see [`HELD_BACK`]).
async fn held_back(client: &tokio_postgres::Client) -> std::result::Result<bool, ()> {
    let messages = client.simple_query(HELD_BACK).await.map_err(drop)?;
    for m in messages {
        if let SimpleQueryMessage::Row(row) = m {
            return Ok(row.get(0) == Some("t"));
        }
    }
    Err(())
}
