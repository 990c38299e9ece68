//! What a check of the stored document files found (`Docmeta::verify_storage`, and the damaged
//! files a backup records).

use super::{DocumentFileId, DocumentId};

/// How a stored document file differs from its record.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum FileDamage {
    /// No bytes are stored under the file's storage name.
    Missing,
    /// The content is not as long as recorded.
    WrongSize {
        /// The recorded size in bytes.
        expected: u64,
        /// The size found.
        found: u64,
    },
    /// The content has the recorded size but not the recorded SHA-256.
    WrongChecksum {
        /// The recorded SHA-256, lower-case hex.
        expected: String,
        /// The SHA-256 found.
        found: String,
    },
    /// A chunk of an encrypted (MENC) file failed authentication (InvalidTag): altered,
    /// truncated, or another file's bytes.
    FailedAuthentication {
        /// What the decryption said.
        reason: String,
    },
    /// The bytes could not be read (an I/O error).
    Unreadable {
        /// What the file system said.
        reason: String,
    },
}

impl FileDamage {
    /// The damage's stable name, as the manifest spells it: `missing`, `wrong_size`,
    /// `wrong_checksum`, `failed_authentication`, `unreadable` (faces hand it on as it is).
    pub fn kind(&self) -> &'static str {
        match self {
            FileDamage::Missing => "missing",
            FileDamage::WrongSize { .. } => "wrong_size",
            FileDamage::WrongChecksum { .. } => "wrong_checksum",
            FileDamage::FailedAuthentication { .. } => "failed_authentication",
            FileDamage::Unreadable { .. } => "unreadable",
        }
    }
}

impl std::fmt::Display for FileDamage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileDamage::Missing => f.write_str("missing"),
            FileDamage::WrongSize { expected, found } => {
                write!(f, "wrong size: {found} bytes, {expected} recorded")
            }
            FileDamage::WrongChecksum { expected, found } => {
                write!(f, "wrong checksum: sha256 {found}, {expected} recorded")
            }
            FileDamage::FailedAuthentication { reason } => {
                write!(f, "failed authentication: {reason}")
            }
            FileDamage::Unreadable { reason } => write!(f, "unreadable: {reason}"),
        }
    }
}

/// A stored document file that is not what its record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DamagedFile {
    /// The file's record.
    pub file_id: DocumentFileId,
    /// Its document.
    pub document_id: DocumentId,
    /// The uploaded file's name.
    pub filename: String,
    /// The generated name under `document_file_storage/`.
    pub storage_name: String,
    /// Whether the stored bytes are MENC.
    pub encrypted: bool,
    /// What is wrong.
    pub damage: FileDamage,
}

/// The result of checking every stored document file against its record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StorageReport {
    /// Files checked.
    pub files_checked: u64,
    /// Content bytes read (decrypted bytes for MENC files).
    pub bytes_checked: u64,
    /// The files that are not what their record says, by file id.
    pub damaged: Vec<DamagedFile>,
}

impl StorageReport {
    /// Whether every file is intact.
    pub fn is_intact(&self) -> bool {
        self.damaged.is_empty()
    }
}
