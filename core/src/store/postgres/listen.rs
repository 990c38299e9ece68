//! Hearing of what other processes commit to a PostgreSQL database, while someone waits for new
//! events ([`Store::watch_commits`](crate::store::Store::watch_commits)).
//!
//! A unit of work that appends events sends a notification on the channel `docmeta_events` in
//! its transaction ([`NOTIFY`]; PostgreSQL delivers it at the commit, and never for a rollback),
//! its payload naming the store that sent it, so that a process does not wake its waiters twice
//! for its own commits (they heard of those at once). One connection per store listens, on a
//! thread of its own, and tells the sink of every notification another store sent; after a
//! failure it connects again (pausing 0.1 s, then longer, up to 5 s) and, once it listens again,
//! tells the sink anyway: a commit made while nobody listened would otherwise go unheard.
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

use tokio::sync::Notify;
use tokio_postgres::{AsyncMessage, NoTls, SimpleQueryMessage};

use crate::error::{Error, Result};
use crate::store::{CommitSink, CommitWatch};

/// Sent by a unit of work that appended events, before its commit; `?1` is the sending store's
/// origin (see `PostgresStore::origin`).
pub(super) const NOTIFY: &str = "SELECT pg_notify('docmeta_events', ?1)";

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
