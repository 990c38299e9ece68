//! The records of backups: what an archive is ([`BackupInfo`], its [`Manifest`]), and what a
//! backup, a restore and a prune report. `backup` writes and reads them.

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{AuditReport, Checkpoint, DocumentFileId, DocumentId, FileDamage, TaskId};

/// What a backup is; the first entry of its archive, repeated in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupInfo {
    /// Archive format version.
    pub format: u32,
    /// Random identifier.
    pub id: String,
    /// Database schema version of the snapshot.
    pub schema_version: u32,
    /// When the backup was made.
    pub created: DateTime<Utc>,
    /// The backup an incremental backup builds on (its id), if any.
    pub base: Option<String>,
}

/// One file of a backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// Path inside the data directory (and the archive).
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256, lower-case hex.
    pub sha256: String,
    /// Whether the bytes are in the base backup rather than this archive.
    #[serde(default)]
    pub in_base: bool,
}

/// A document file the backup found damaged (or an earlier backup of a chain did, for the
/// files an incremental backup leaves to its base): listed in the manifest so that nobody
/// takes its bytes for good. A missing file has no entry in [`Manifest::files`]; any other is
/// archived as it was found (its manifest checksum is of those bytes, not of the document).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DamagedEntry {
    /// Path inside the data directory (`document_file_storage/..`).
    pub path: String,
    /// The document file whose bytes these are, when the backup knew its record.
    pub document_file_id: Option<i64>,
    /// What is wrong.
    pub damage: FileDamage,
}

/// The last entry of an archive: the backup and every file it restores.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// See [`BackupInfo`].
    #[serde(flatten)]
    pub info: BackupInfo,
    /// Every file, the database first.
    pub files: Vec<ManifestEntry>,
    /// The document files that could not be read intact when the backup was made (empty in
    /// archives of earlier versions, which did not check).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub damaged: Vec<DamagedEntry>,
    /// A signed checkpoint of the event log made just before the database snapshot (which
    /// therefore holds every event it covers): a restore verifies the restored log against it.
    /// `None` in archives of versions before the tamper-evident log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Checkpoint>,
}

impl Manifest {
    /// Whether every document file was archived intact.
    pub fn is_intact(&self) -> bool {
        self.damaged.is_empty()
    }
}

/// What a backup wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupReport {
    /// The archive.
    pub path: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    /// Document files in the archive (not counting those left to the base).
    pub files_archived: usize,
    /// Size of the archive in bytes.
    pub archive_bytes: u64,
}

/// What a restore did and the spec's verification (8.1 item 4), for a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreReport {
    /// The restored backup (the newest of a chain).
    pub manifest: Manifest,
    /// Files written.
    pub files_restored: usize,
    /// Schema migrations run (a backup from an older docmeta).
    pub migrations: Vec<u32>,
    /// Documents in the restored database.
    pub documents: u64,
    /// The document opened for verification and its label.
    pub document_opened: Option<(DocumentId, String)>,
    /// The file downloaded for verification, whose bytes matched its SHA-256 (never one the
    /// backup found damaged: those are in `manifest.damaged`, restored as they were archived).
    pub file_checked: Option<(DocumentFileId, u64)>,
    /// Whether a search answered.
    pub search_answers: bool,
    /// The durable task that rebuilds the search index (run by the first docmeta with a worker).
    pub reindex_task: TaskId,
    /// The restored event log verified against the backup's checkpoint (`None` for an archive
    /// of a version without one). A restored log that fails fails the restore.
    pub audit: Option<AuditReport>,
}

/// One backup considered by `prune_backups`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PruneDecision {
    /// The archive.
    pub path: PathBuf,
    /// What it is.
    pub info: BackupInfo,
    /// Why it is kept (`None`: it is deleted).
    pub kept_because: Option<String>,
}
