//! `DATA/.lock`, the lock that keeps a restore from replacing a data directory in use.
//! Imports only `error` and `owner_only` (the directory and the lock file are created owner-only).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{DATA_DIRECTORY_IN_USE, Error, NON_FIELD_ERRORS, Result};

/// The id of the process holding the search index writer of the data directory `dir`
/// (`search/WRITER`, written by `search::home`), if one holds it: the running server, usually.
fn writer_pid(dir: &Path) -> Option<u32> {
    let path = dir.join("search").join("WRITER");
    let file = std::fs::File::open(&path).ok()?;
    match file.try_lock_shared() {
        // Nobody holds it (released at once when `file` closes).
        Ok(()) => None,
        Err(_) => std::fs::read_to_string(&path).ok()?.trim().parse().ok(),
    }
}

/// How long taking the lock waits for a holder to let go before it reports the directory in
/// use.
const PATIENCE: Duration = Duration::from_millis(500);

/// `lock()`, retried for [`PATIENCE`] while it finds the lock taken. A holder may be gone in
/// an instant: a child process that another thread of this process forks holds copies of every
/// open descriptor, a directory's lock among them, until it executes its program (seen as a
/// restore refused because its own, already closed, staging instance still held the lock).
fn patiently<E>(lock: impl Fn() -> std::result::Result<(), E>) -> std::result::Result<(), E> {
    let started = Instant::now();
    loop {
        match lock() {
            Err(_) if started.elapsed() < PATIENCE => {
                std::thread::sleep(Duration::from_millis(5));
            }
            done => return done,
        }
    }
}

/// `DATA/.lock`: every open instance holds it shared; a restore holds it exclusively, so it
/// never replaces a directory a running server uses.
#[derive(Debug)]
pub(crate) struct DataLock(#[allow(dead_code)] std::fs::File, bool);

impl DataLock {
    fn open_file(dir: &Path) -> Result<std::fs::File> {
        crate::owner_only::create_dir_all(dir).map_err(|e| {
            Error::storage(format!("creating the data directory {}", dir.display()), e)
        })?;
        crate::owner_only::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(".lock"))
            .map_err(|e| match e.kind() {
                // Said at start, in words, rather than as the first failed write of a request.
                std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied => {
                    Error::InvalidInput(format!(
                        "the data directory {} is not writable ({}): docmeta writes its \
                         database, document files and search index there",
                        dir.display(),
                        if e.kind() == std::io::ErrorKind::ReadOnlyFilesystem {
                            "read-only file system"
                        } else {
                            "permission denied"
                        }
                    ))
                }
                _ => Error::storage("opening the data directory's lock file", e),
            })
    }

    /// Whether no other process had the directory open when this lock was taken (a process
    /// that finds itself alone may treat work left `running` as a crashed process's).
    pub(crate) fn alone(&self) -> bool {
        self.1
    }

    /// Held while the instance is open.
    pub(crate) fn shared(dir: &Path) -> Result<DataLock> {
        let file = Self::open_file(dir)?;
        // Alone if the exclusive lock is free; then shared like every other opener.
        let alone = file.try_lock().is_ok();
        if alone {
            file.unlock()
                .map_err(|e| Error::storage("locking the data directory", e))?;
        }
        patiently(|| file.try_lock_shared()).map_err(|_| Error::Conflict {
            field: NON_FIELD_ERRORS.to_owned(),
            message: format!(
                "{} is being restored; try again when the restore has finished",
                dir.display()
            ),
        })?;
        Ok(DataLock(file, alone))
    }

    /// Held by a restore or a storage conversion: refused while any instance has the directory
    /// open.
    pub(crate) fn exclusive(dir: &Path) -> Result<DataLock> {
        let file = Self::open_file(dir)?;
        patiently(|| file.try_lock()).map_err(|_| Error::Conflict {
            field: DATA_DIRECTORY_IN_USE.to_owned(),
            message: match writer_pid(dir) {
                Some(pid) => {
                    format!("the data directory is in use by process {pid}; stop it first")
                }
                None => format!(
                    "the data directory {} is in use by another docmeta process; stop it first",
                    dir.display()
                ),
            },
        })?;
        Ok(DataLock(file, true))
    }
}

#[cfg(test)]
mod tests {
    use super::DataLock;

    #[test]
    fn the_first_opener_is_alone_and_the_next_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = DataLock::shared(dir.path()).expect("first");
        assert!(first.alone());
        let second = DataLock::shared(dir.path()).expect("second");
        assert!(!second.alone(), "the first still has it open");
    }

    #[test]
    fn an_opener_after_the_others_closed_is_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(DataLock::shared(dir.path()).expect("first"));
        assert!(DataLock::shared(dir.path()).expect("again").alone());
    }

    #[test]
    fn a_lock_released_within_the_patience_is_waited_for() {
        let dir = tempfile::tempdir().expect("tempdir");
        let restore = DataLock::exclusive(dir.path()).expect("exclusive");
        let released = std::thread::spawn(move || {
            std::thread::sleep(super::PATIENCE / 5);
            drop(restore);
        });
        DataLock::shared(dir.path()).expect("taken once the holder let go");
        released.join().expect("join");
    }

    #[test]
    fn a_lock_held_beyond_the_patience_is_reported_in_use() {
        let dir = tempfile::tempdir().expect("tempdir");
        let _server = DataLock::shared(dir.path()).expect("shared");
        let err = DataLock::exclusive(dir.path()).expect_err("in use");
        assert!(err.to_string().contains("in use"), "{err}");
    }
}
