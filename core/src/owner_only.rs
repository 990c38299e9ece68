//! Owner-only files and directories. A data directory holds the users' password hashes, the
//! secret and storage keys, every value and every document, and a backup holds the same: what
//! docmeta writes there is created readable by its owner alone (directories `0700`, files
//! `0600`) whatever the process's umask, and a data directory made before that is tightened
//! when it is opened ([`restrict_data_dir`]).
//!
//! A library leaves the process's umask alone: it is the host application's, and changing it
//! would change every file the host writes. So docmeta sets the mode of what it creates itself
//! and relies on its directories for the files other code creates inside them: SQLite gives a
//! database's `-wal` and `-shm` the mode of the database file (created `0600` here first), and
//! tantivy creates its segment and lock files with the process's umask inside `search/`, a
//! `0700` directory in a `0700` data directory, which nobody else can enter. (`docmeta serve`
//! and the other commands of the `docmeta` binary set umask `077` for their whole process, so
//! there those files are `0600` too.)
//!
//! Layer 0 (with `error`): imports nothing of the crate.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;

/// The file in the data directory that records that its whole tree has been made owner-only,
/// so the walk over every document file runs once per installation, not at every open.
pub(crate) const MARKER: &str = ".owner-only";

/// The group and other permission bits: none of them is ever set on what docmeta creates.
const GROUP_OTHER: u32 = 0o077;

/// Creates `path` and its missing parents, `0700` (existing directories are left as they are).
pub(crate) fn create_dir_all(path: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(path)
}

/// Options that create a missing file `0600` (an existing file keeps its mode): set
/// `write`/`create`/`truncate` as needed.
pub(crate) fn options() -> OpenOptions {
    #[allow(unused_mut)]
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

/// Creates a new file `0600` from its first byte (a `chmod` after writing would leave a
/// window); fails if `path` exists.
pub(crate) fn create_new(path: &Path) -> io::Result<File> {
    options().write(true).create_new(true).open(path)
}

/// Writes `bytes` to `path` (created or truncated), leaving it `0600` even if it existed with a
/// looser mode (a temporary file a crashed older docmeta left).
pub(crate) fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let mut file = options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    restrict_open(&file)?;
    file.write_all(bytes)
}

/// Removes the group and other bits of an open file, if it has any.
fn restrict_open(file: &File) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = file.metadata()?.permissions().mode();
        if mode & GROUP_OTHER != 0 {
            file.set_permissions(fs::Permissions::from_mode(mode & !GROUP_OTHER & 0o7777))?;
        }
    }
    #[cfg(not(unix))]
    let _ = file;
    Ok(())
}

/// Removes the group and other bits of `path` (following a symbolic link), if it has any: the
/// owner's bits stay as they are. Returns whether it changed anything.
pub(crate) fn restrict(path: &Path) -> io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(path)?.permissions().mode();
        if mode & GROUP_OTHER != 0 {
            fs::set_permissions(
                path,
                fs::Permissions::from_mode(mode & !GROUP_OTHER & 0o7777),
            )?;
            return Ok(true);
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(false)
}

/// Makes the data directory `dir` owner-only, cheaply at every open and thoroughly once:
///
/// - at every open, `dir` itself and each entry directly in it (`config.yml`, `system/`,
///   `db.sqlite3` with its `-wal` and `-shm`, `document_file_storage/`, `search/`, `.lock`, a
///   server's `.spool/`, …): a dozen `stat` calls. `dir` being `0700` is what protects
///   everything below it, so it is enforced every time: an operator who loosened it, or a copy
///   restored with `cp -r`, is tightened again.
/// - once per installation (until [`MARKER`] exists), the whole tree below it, every document
///   file included; symbolic links below the first level are not followed.
///
/// Failing to tighten `dir` itself is an error (its contents would stay open to others);
/// entries below it that cannot be changed (owned by another user) are left as they are, since
/// `dir` already keeps everyone else out.
pub(crate) fn restrict_data_dir(dir: &Path) -> io::Result<()> {
    restrict(dir)?;
    let marked = dir.join(MARKER).exists();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        // The first level follows links: `document_file_storage` may be a link to another
        // volume, whose files are this directory's all the same.
        let _ = restrict(&path);
        if !marked && fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
            restrict_tree(&path);
        }
    }
    if !marked {
        let note = "docmeta made everything in this data directory owner-only (directories \
                    0700, files 0600) once; at every open it checks the directory and its \
                    first level again.\n";
        write(&dir.join(MARKER), note.as_bytes())?;
    }
    Ok(())
}

/// Removes the group and other bits of everything below `dir`, best effort, without following
/// symbolic links.
fn restrict_tree(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            continue;
        }
        let path = entry.path();
        let _ = restrict(&path);
        if kind.is_dir() {
            restrict_tree(&path);
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path)
            .expect("metadata")
            .permissions()
            .mode()
            & 0o777
    }

    fn chmod(path: &Path, mode: u32) {
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
    }

    #[test]
    fn what_is_created_is_owner_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let deep = dir.path().join("a/b");
        create_dir_all(&deep).expect("dirs");
        assert_eq!(mode(&dir.path().join("a")), 0o700);
        assert_eq!(mode(&deep), 0o700);
        drop(create_new(&deep.join("new")).expect("new"));
        assert_eq!(mode(&deep.join("new")), 0o600);
        let loose = deep.join("loose");
        fs::write(&loose, b"old").expect("write");
        chmod(&loose, 0o644);
        write(&loose, b"new").expect("rewrite");
        assert_eq!(mode(&loose), 0o600, "a rewritten file is tightened");
        assert_eq!(fs::read(&loose).expect("read"), b"new");
    }

    #[test]
    fn the_tree_is_walked_once_and_the_top_level_at_every_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        let fan = data.join("document_file_storage/ab");
        fs::create_dir_all(&fan).expect("dirs");
        fs::write(fan.join("file"), b"x").expect("file");
        fs::write(data.join("config.yml"), b"x").expect("config");
        for p in [&data, &data.join("document_file_storage"), &fan] {
            chmod(p, 0o755);
        }
        chmod(&fan.join("file"), 0o644);
        chmod(&data.join("config.yml"), 0o644);
        restrict_data_dir(&data).expect("restrict");
        for p in [&data, &data.join("document_file_storage"), &fan] {
            assert_eq!(mode(p), 0o700, "{}", p.display());
        }
        assert_eq!(mode(&fan.join("file")), 0o600);
        assert_eq!(mode(&data.join("config.yml")), 0o600);
        assert!(data.join(MARKER).exists());
        // Marked: a file deep below is no longer visited (the directories keep others out), the
        // top level still is.
        chmod(&fan.join("file"), 0o644);
        chmod(&data, 0o755);
        chmod(&data.join("config.yml"), 0o644);
        restrict_data_dir(&data).expect("again");
        assert_eq!(mode(&data), 0o700);
        assert_eq!(mode(&data.join("config.yml")), 0o600);
        assert_eq!(mode(&fan.join("file")), 0o644, "not walked again");
    }
}
