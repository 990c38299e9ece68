//! Functions on backup archives, without an open instance: verify, list damage, restore,
//! prune.

use std::path::PathBuf;

use docmeta_core as core;

use crate::errors::Result;
use crate::records::{BackupInfo, DamagedBackupFile, PruneDecision, RestoreReport};

/// The document files an archive's backup could not read intact (the archive is verified
/// first).
#[uniffi::export]
pub fn backup_damaged_files(archive: String) -> Result<Vec<DamagedBackupFile>> {
    Ok(core::verify_backup(&PathBuf::from(archive))?
        .damaged
        .into_iter()
        .map(Into::into)
        .collect())
}

/// Checks a backup archive (every path, size and SHA-256) without restoring it; returns its
/// id.
#[uniffi::export]
pub fn verify_backup(archive: String) -> Result<String> {
    Ok(core::verify_backup(&PathBuf::from(archive))?.info.id)
}

/// What a backup archive is (verified first).
#[uniffi::export]
pub fn backup_info(archive: String) -> Result<BackupInfo> {
    Ok(core::verify_backup(&PathBuf::from(archive))?.info.into())
}

/// Restores backups (one full backup, or an incremental one with its bases) into a data
/// directory no docmeta has open; returns the document count.
#[uniffi::export(default(password = None, database_url = None))]
pub fn restore(
    archives: Vec<String>,
    data: String,
    password: Option<String>,
    database_url: Option<String>,
) -> Result<u64> {
    Ok(restore_report(archives, data, password, database_url)?.documents)
}

/// Restores backups as `restore` does; returns what it did.
#[uniffi::export(default(password = None, database_url = None))]
pub fn restore_report(
    archives: Vec<String>,
    data: String,
    password: Option<String>,
    database_url: Option<String>,
) -> Result<RestoreReport> {
    let archives: Vec<PathBuf> = archives.into_iter().map(PathBuf::from).collect();
    Ok(core::restore_to(
        &archives,
        &PathBuf::from(data),
        password.as_deref().map(str::as_bytes),
        database_url.as_deref(),
    )?
    .into())
}

/// Applies a retention schedule to the archives in `dir`: keeps the newest backup of each of
/// the last `keepDaily` days that have backups and the newest of each of the last `keepWeekly`
/// ISO weeks, plus every backup a kept incremental one builds on; deletes the rest unless
/// `dryRun`. Returns the decision for every archive.
#[uniffi::export(default(dry_run = false))]
pub fn prune_backups(
    dir: String,
    keep_daily: u32,
    keep_weekly: u32,
    dry_run: bool,
) -> Result<Vec<PruneDecision>> {
    Ok(core::prune_backups(
        &PathBuf::from(dir),
        keep_daily as usize,
        keep_weekly as usize,
        dry_run,
    )?
    .into_iter()
    .map(Into::into)
    .collect())
}
