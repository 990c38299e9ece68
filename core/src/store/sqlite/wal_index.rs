//! Whether anything was committed to a SQLite database, told by one `pread` of its WAL index.
//!
//! Every request asks it (see `kernel::follow`), so it must cost less than the request's own
//! work. `PRAGMA data_version` answers the same question but begins a read transaction: two
//! `fcntl` locks on the `-shm` file and the statement machinery, on a connection that requests
//! take in turn; under load that was a tenth of a cached read's time.
//!
//! SQLite's WAL index (the `-shm` file, <https://www.sqlite.org/walformat.html>, "The
//! WAL-Index Header") starts with two copies of a 48-byte header that every commit rewrites:
//! the second copy first, then the first. Its `iChange` field (bytes 8..12) counts the
//! transactions committed; `mxFrame` (bytes 16..20) is the last valid frame of the WAL. Every
//! connection of every process maps that file shared, so a `pread` of it sees what a commit
//! that has returned wrote. The format is shared by every SQLite since 3.7.0 (they must
//! interoperate on one database), so it does not change under us.
//!
//! A read that races a commit may see the two copies differ: it answers "unknown" and the
//! caller reads the event log, as it would after a change. A commit that *completed* before
//! the read started changed both copies before it, and `iChange` never returns to an earlier
//! value (it would take 2³² commits between two reads), so an unchanged number means nothing
//! was committed. A change of the number without a commit (a checkpoint that restarts the WAL
//! moves `mxFrame`) only costs one needless read of the log.

use std::fs::File;
use std::path::Path;

/// The bytes of the two header copies.
const HEADER: usize = 48;

/// The `-shm` file of an open database, read without locks.
pub(super) struct WalIndex {
    file: File,
}

impl WalIndex {
    /// The WAL index of the database at `path`, which a connection of this process has open
    /// in WAL mode (so the file exists and stays while it is open); `None` where it cannot be
    /// read this way (callers fall back to `PRAGMA data_version`).
    pub(super) fn open(path: &Path) -> Option<WalIndex> {
        if !cfg!(unix) {
            return None;
        }
        let mut shm = path.as_os_str().to_owned();
        shm.push("-shm");
        let file = File::open(shm).ok()?;
        let index = WalIndex { file };
        // A header this code cannot read (not yet written, another layout) means "fall back".
        index.change_counter().map(|_| index)
    }

    /// A number that changes whenever a transaction commits, from any connection of any
    /// process; `None` when the header is being rewritten right now or cannot be read.
    pub(super) fn change_counter(&self) -> Option<u64> {
        let mut bytes = [0u8; 2 * HEADER];
        read_at(&self.file, &mut bytes)?;
        let (first, second) = bytes.split_at(HEADER);
        // isInit (byte 12): the header has been written by a connection.
        if first != second || first[12] == 0 {
            return None;
        }
        let field = |at: usize| {
            u32::from_ne_bytes([first[at], first[at + 1], first[at + 2], first[at + 3]])
        };
        let changes = u64::from(field(8));
        let last_frame = u64::from(field(16));
        let counter = changes | (last_frame << 32);
        // u64::MAX means "unknown" to the caller (kernel::follow).
        (counter != u64::MAX).then_some(counter)
    }
}

#[cfg(unix)]
fn read_at(file: &File, bytes: &mut [u8]) -> Option<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(bytes, 0).ok()
}

#[cfg(not(unix))]
fn read_at(_file: &File, _bytes: &mut [u8]) -> Option<()> {
    None
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use rusqlite::Connection;

    fn wal(path: &Path) -> Connection {
        let conn = Connection::open(path).expect("SQLite on a temporary file");
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .expect("SQLite on a temporary file");
        assert_eq!(mode, "wal");
        conn
    }

    #[test]
    fn the_counter_moves_with_every_commit_of_any_connection_and_only_then() {
        let dir = tempfile::tempdir().expect("SQLite on a temporary file");
        let path = dir.path().join("db.sqlite3");
        let ours = wal(&path);
        ours.execute_batch("CREATE TABLE t (x INTEGER)")
            .expect("SQLite on a temporary file");
        let index = WalIndex::open(&path).expect("the WAL index of an open database");
        let before = index.change_counter().expect("SQLite on a temporary file");
        // Reads and idle time change nothing.
        let _: i64 = ours
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .expect("SQLite on a temporary file");
        assert_eq!(index.change_counter(), Some(before));
        // A commit through another connection (as another process's would) moves it.
        let theirs = wal(&path);
        theirs
            .execute("INSERT INTO t VALUES (1)", [])
            .expect("SQLite on a temporary file");
        let after_theirs = index.change_counter().expect("SQLite on a temporary file");
        assert_ne!(after_theirs, before);
        ours.execute("INSERT INTO t VALUES (2)", [])
            .expect("SQLite on a temporary file");
        let after_ours = index.change_counter().expect("SQLite on a temporary file");
        assert_ne!(after_ours, after_theirs);
        // A rolled-back transaction commits nothing.
        theirs
            .execute_batch("BEGIN; INSERT INTO t VALUES (3); ROLLBACK;")
            .expect("SQLite on a temporary file");
        assert_eq!(index.change_counter(), Some(after_ours));
        // A checkpoint that empties the WAL, then a commit: still a new number.
        ours.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .expect("SQLite on a temporary file");
        let checkpointed = index.change_counter().expect("SQLite on a temporary file");
        theirs
            .execute("INSERT INTO t VALUES (4)", [])
            .expect("SQLite on a temporary file");
        let last = index.change_counter().expect("SQLite on a temporary file");
        assert!(last != checkpointed && last != after_ours && last != before);
    }

    #[test]
    fn a_database_without_a_wal_index_falls_back() {
        let dir = tempfile::tempdir().expect("SQLite on a temporary file");
        let path = dir.path().join("db.sqlite3");
        let conn = Connection::open(&path).expect("SQLite on a temporary file");
        conn.execute_batch("CREATE TABLE t (x INTEGER)")
            .expect("SQLite on a temporary file");
        assert!(WalIndex::open(&path).is_none());
    }
}
