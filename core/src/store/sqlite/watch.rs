//! Hearing of what other processes commit to a SQLite database, while someone waits for new
//! events ([`Store::watch_commits`](crate::store::Store::watch_commits)).
//!
//! SQLite tells no one of a commit. The WAL index's commit counter (`wal_index.rs`) changes with
//! every commit of any connection of any process and costs one `pread` to read, without a lock:
//! a thread reads it every [`POLL`] while the watch is wanted, and tells the sink when it moved.
//! Where the WAL index cannot be read so, `PRAGMA data_version` on a connection of the thread's
//! own answers the same question. This process's own commits move the counter too: its waiters,
//! already woken by the commit itself, then read once more and find nothing new.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rusqlite::Connection;

use super::conn::open_connection;
use super::wal_index::WalIndex;
use crate::error::{Error, Result};
use crate::store::{CommitSink, CommitWatch};

/// How often the counter is read while someone waits.
const POLL: Duration = Duration::from_millis(50);

/// Starts the watching thread of the database at `path`.
pub(super) fn watch(path: &Path, sink: Arc<dyn CommitSink>) -> Result<CommitWatch> {
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let path = path.to_path_buf();
    std::thread::Builder::new()
        .name("docmeta-wal-watch".into())
        .spawn(move || run(&path, &*sink, &stopped))
        .map_err(|e| Error::storage("starting the thread that watches for commits", e))?;
    Ok(CommitWatch::new(move || stop.store(true, Ordering::SeqCst)))
}

/// The counter, read as the WAL index or a connection of its own can.
enum Counter {
    Index(WalIndex),
    Pragma(Connection),
    /// Neither could be opened yet: tried again at the next look.
    Unknown(PathBuf),
}

impl Counter {
    fn open(path: &Path) -> Counter {
        if let Some(index) = WalIndex::open(path) {
            return Counter::Index(index);
        }
        match open_connection(Some(path)) {
            Ok(conn) => Counter::Pragma(conn),
            Err(_) => Counter::Unknown(path.to_path_buf()),
        }
    }

    /// The current value; `None` when it cannot be told now (a commit is rewriting the
    /// header, or nothing could be opened).
    fn read(&mut self) -> Option<u64> {
        match self {
            Counter::Index(index) => index.change_counter(),
            Counter::Pragma(conn) => conn
                .prepare_cached("PRAGMA data_version")
                .and_then(|mut s| s.query_row([], |r| r.get::<_, i64>(0)))
                .ok()
                .map(|v| v as u64),
            Counter::Unknown(path) => {
                let path = path.clone();
                *self = Counter::open(&path);
                match self {
                    Counter::Unknown(_) => None,
                    _ => self.read(),
                }
            }
        }
    }
}

fn run(path: &Path, sink: &dyn CommitSink, stop: &AtomicBool) {
    let mut counter = Counter::open(path);
    let mut last = counter.read();
    while !stop.load(Ordering::SeqCst) && sink.wanted() {
        std::thread::sleep(POLL);
        let Some(now) = counter.read() else {
            continue;
        };
        if last != Some(now) {
            last = Some(now);
            sink.committed();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Instant;

    struct Counting {
        heard: AtomicUsize,
        wanted: AtomicBool,
    }

    impl CommitSink for Counting {
        fn committed(&self) {
            self.heard.fetch_add(1, Ordering::SeqCst);
        }
        fn wanted(&self) -> bool {
            self.wanted.load(Ordering::SeqCst)
        }
    }

    fn eventually(what: impl Fn() -> bool) -> bool {
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if what() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    #[test]
    fn a_commit_of_another_connection_is_heard_and_an_unwanted_watch_ends() {
        let dir = tempfile::tempdir().expect("SQLite on a temporary file");
        let path = dir.path().join("db.sqlite3");
        let theirs = open_connection(Some(&path)).expect("open");
        theirs
            .execute_batch("CREATE TABLE t (x INTEGER)")
            .expect("SQLite on a temporary file");
        let sink = Arc::new(Counting {
            heard: AtomicUsize::new(0),
            wanted: AtomicBool::new(true),
        });
        let _watch = watch(&path, sink.clone()).expect("watch");
        std::thread::sleep(POLL * 3);
        assert_eq!(sink.heard.load(Ordering::SeqCst), 0, "nothing committed");
        theirs
            .execute("INSERT INTO t VALUES (1)", [])
            .expect("SQLite on a temporary file");
        assert!(eventually(|| sink.heard.load(Ordering::SeqCst) >= 1));
        sink.wanted.store(false, Ordering::SeqCst);
        std::thread::sleep(POLL * 3);
        let heard = sink.heard.load(Ordering::SeqCst);
        theirs
            .execute("INSERT INTO t VALUES (2)", [])
            .expect("SQLite on a temporary file");
        std::thread::sleep(POLL * 4);
        assert_eq!(sink.heard.load(Ordering::SeqCst), heard, "the watch ended");
    }
}
