//! `DATA/.lock`, the lock that keeps a restore from replacing a data directory in use.
//! Imports only `error`.

use std::path::Path;

use crate::error::{Error, NON_FIELD_ERRORS, Result};

/// `DATA/.lock`: every open instance holds it shared; a restore holds it exclusively, so it
/// never replaces a directory a running server uses.
#[derive(Debug)]
pub(crate) struct DataLock(#[allow(dead_code)] std::fs::File);

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

    /// Held while the instance is open.
    pub(crate) fn shared(dir: &Path) -> Result<DataLock> {
        let file = Self::open_file(dir)?;
        file.try_lock_shared().map_err(|_| Error::Conflict {
            field: NON_FIELD_ERRORS.to_owned(),
            message: format!(
                "{} is being restored; try again when the restore has finished",
                dir.display()
            ),
        })?;
        Ok(DataLock(file))
    }

    /// Held by a restore: refused while any instance has the directory open.
    pub(crate) fn exclusive(dir: &Path) -> Result<DataLock> {
        let file = Self::open_file(dir)?;
        file.try_lock().map_err(|_| Error::Conflict {
            field: NON_FIELD_ERRORS.to_owned(),
            message: format!(
                "{} is in use (a docmeta server or command has it open); stop it first",
                dir.display()
            ),
        })?;
        Ok(DataLock(file))
    }
}
