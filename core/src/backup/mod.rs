//! Backup and restore (spec 8.1 items 2-4, 8).
//!
//! A backup is one tar archive compressed with zstd, written to a temporary name and renamed
//! when complete. Its entries, in order:
//!
//! 1. `backup.json`: what the backup is (format, schema version, creation time, id, the base
//!    of an incremental backup), first so that listing and pruning read only the start;
//! 2. `contents.json` (format 2): the path and size of every entry that follows, so a restore
//!    knows how much each entry may write before it reads it (an entry that expands beyond its
//!    declared size is refused at its tar header, nothing of it written);
//! 3. `db.sqlite3`: a consistent online snapshot of the database (SQLite backup API);
//! 4. `config.yml`, `system/SECRET_KEY`, `system/storage_key` (the encrypted storage's salt and
//!    password check, never its password);
//! 5. `document_file_storage/..`: every file the snapshot references, as stored (MENC stays
//!    MENC); an incremental backup holds only those not in its base;
//! 6. `manifest.json`, last: `backup.json`'s fields plus every file (path, size, SHA-256, and
//!    whether it is in the base), so checksums cost no second pass over the data, and the
//!    document files found damaged (missing, wrong size or checksum, failed authentication):
//!    a backup completes with them listed rather than failing or archiving them as good.
//!
//! The search index and caches are not backed up: a restore queues a rebuild.
//!
//! Archives, database snapshots and staging files are created `0600` (directories `0700`)
//! from the start: they hold the secret key and the users' password hashes.
//!
//! Restoring builds the new data directory in a staging directory beside the target: every
//! entry verified, the database checked (integrity, schema version) as soon as it is written,
//! then only the document files its records name (anything else is refused before it is
//! written), nothing written before the free space was found to hold it, and the staged
//! directory opened; only then is the target replaced, by renames: a restore that fails leaves
//! the target as it was.
//!
//! Layer 7 (with `workflows`, `tasks`, `search`, `installation`): imports the kernel and the layers
//! below; each store writes its own database dump ([`crate::store::Store::dump_for_backup`]).

use std::fs::File;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::files::check_name;
pub(crate) use crate::model::{
    BackupInfo, BackupReport, DamagedEntry, Manifest, ManifestEntry, PruneDecision, RestoreReport,
};

/// The archive format this build writes. Format 1 (no `contents.json`) is still read.
pub const FORMAT: u32 = 2;
const HEAD: &str = "backup.json";
/// Format 2's second entry: the size of every entry that follows.
const CONTENTS: &str = "contents.json";
const MANIFEST: &str = "manifest.json";
const DB: &str = "db.sqlite3";
/// A PostgreSQL-backed installation's database, as `pg_dump -Fc` wrote it.
const PG_DUMP: &str = "db.pgdump";
const STORAGE: &str = "document_file_storage";
/// Files of the data directory a backup carries besides the database and document files.
const SYSTEM_FILES: [&str; 4] = [
    "config.yml",
    "system/SECRET_KEY",
    "system/storage_key",
    "system/audit_key",
];

/// Format 2's `contents.json`: what the archive's entries are declared to be, before any of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Contents {
    /// Path and size of every entry between `contents.json` and `manifest.json`.
    entries: Vec<DeclaredEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct DeclaredEntry {
    path: String,
    size: u64,
}

/// Creates a new file only its owner may read or write: `0600` from the first byte, since a
/// backup holds the secret key and password hashes (a `chmod` after writing leaves a window).
pub(crate) fn create_private(path: &Path) -> io::Result<File> {
    crate::owner_only::create_new(path)
}

/// Creates `path` and its missing parents, `0700` (a restore's staging directory, a backup
/// directory).
fn create_private_dir(path: &Path) -> io::Result<()> {
    crate::owner_only::create_dir_all(path)
}

fn invalid(why: impl std::fmt::Display) -> Error {
    Error::InvalidInput(format!("backup archive: {why}"))
}

fn io_err(what: &str) -> impl Fn(io::Error) -> Error + '_ {
    move |e| crate::files::content_error(what, e)
}

/// Whether `path` is something a backup may contain; everything else is refused, so an archive
/// can never write outside the data directory (`../`, absolute paths, links).
fn allowed_path(path: &str) -> bool {
    path == DB
        || path == PG_DUMP
        || SYSTEM_FILES.contains(&path)
        || path
            .strip_prefix("document_file_storage/")
            .is_some_and(|name| check_name(name).is_ok())
}

fn random_id() -> Result<String> {
    let mut b = [0u8; 12];
    getrandom::fill(&mut b).map_err(|e| Error::storage("generating a backup id", e.to_string()))?;
    Ok(crate::config::encode_hex(&b))
}

mod archive;
mod create;
mod prune;
mod restore;

pub use archive::{read_info, verify_backup, verify_backup_from};
pub use prune::prune_backups;
pub use restore::{restore, restore_to, restore_to_storage};
