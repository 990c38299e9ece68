//! `DATA/.lock`, the lock that keeps a restore from replacing a data directory in use.
//! Imports only `error`.

use std::path::Path;

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

/// `DATA/.lock`: every open instance holds it shared; a restore holds it exclusively, so it
/// never replaces a directory a running server uses.
#[derive(Debug)]
pub(crate) struct DataLock(#[allow(dead_code)] std::fs::File, bool);

impl DataLock {
    fn open_file(dir: &Path) -> Result<std::fs::File> {
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::storage(format!("creating the data directory {}", dir.display()), e)
        })?;
        std::fs::OpenOptions::new()
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
        file.try_lock_shared().map_err(|_| Error::Conflict {
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
        file.try_lock().map_err(|_| Error::Conflict {
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
}
