//! The data directory's `config.yml` (read with serde-saphyr) and `system/SECRET_KEY`.
//!
//! Layer 1 (with `model`): imports only `error`.

use std::fs;
use std::io::Write;
use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Result};

/// Settings read from `config.yml`. Every field has a default; unknown keys are refused so a
/// typo is reported instead of silently ignored.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// How many times a failing background task is tried before it is marked failed.
    pub task_max_attempts: u32,
    /// Argon2id memory cost in KiB for password hashes.
    pub password_hash_memory_kib: u32,
    /// Argon2id iterations for password hashes.
    pub password_hash_iterations: u32,
    /// Where document files are stored: `plain` or `encrypted` (MENC, spec 8.1 item 7). The
    /// spec's name `DOCUMENTS_FILE_STORAGE_BACKEND` is accepted too.
    #[serde(alias = "DOCUMENTS_FILE_STORAGE_BACKEND")]
    pub documents_file_storage_backend: StorageBackend,
    /// Where document files are stored when not in the data directory's
    /// `document_file_storage/`: `s3://bucket/prefix`, an S3-compatible bucket (credentials,
    /// endpoint and region from the `AWS_*` environment variables; needs docmeta-core's cargo
    /// feature `s3`). Encryption (`documents_file_storage_backend: encrypted`) applies there too.
    pub documents_file_storage_location: Option<String>,
    /// A file holding the encrypted storage's password (its first line), outside the data
    /// directory. `DOCMETA_STORAGE_PASSWORD` in the environment takes precedence.
    pub storage_password_file: Option<std::path::PathBuf>,
    /// Argon2id memory cost in KiB of the encrypted storage's master key (derived once per
    /// process).
    pub storage_kdf_memory_kib: u32,
    /// Argon2id iterations of the encrypted storage's master key.
    pub storage_kdf_iterations: u32,
    /// The largest document file the server accepts, in bytes.
    pub upload_max_bytes: u64,
    /// Document files up to this size (bytes) are read and checked against their recorded
    /// SHA-256 before the first byte is handed out, so a damaged or swapped file is refused
    /// with an error instead of a download that breaks off. Larger files are checked as they
    /// stream; their last bytes are held back until the checksum matches.
    pub download_verify_max_bytes: u64,
    /// With several processes on one PostgreSQL database: how often (milliseconds) each picks
    /// up the access changes (grants, memberships) the others committed.
    pub access_refresh_ms: u64,
    /// The HTTP server's failed logins allowed per minute, per username and per client address;
    /// beyond it the server answers `429` until the minute is over.
    pub login_failures_per_minute: u32,
    /// The HTTP server's time limit for one request, in milliseconds (uploads and downloads
    /// have their own limits below). A request over it answers `408` and changes nothing.
    pub request_timeout_ms: u64,
    /// A download or upload that moves no bytes for this long (milliseconds) is cut: a client
    /// that stops reading or sending never holds the server's resources longer than this.
    pub stream_idle_timeout_ms: u64,
    /// The longest a download or upload may take as a whole, in milliseconds.
    pub stream_total_timeout_ms: u64,
    /// Downloads and uploads one user may have in progress at once; beyond it the server
    /// answers `429`.
    pub streams_per_user: u32,
    /// On PostgreSQL: the most connections one process holds open at once. Each concurrent
    /// unit of work (an HTTP request that reads or writes) uses one; beyond it they wait for one
    /// to come back (up to 10 seconds, then fail). Keep the sum over all processes below the
    /// server's `max_connections`.
    pub postgres_pool_size: usize,
    /// How many documents' metadata (the document, its values and their types) are kept in
    /// memory after a read, so that reading them again touches neither the store nor, over
    /// HTTP, a blocking thread. Every write of this process empties it before it is
    /// acknowledged; another process's writes reach it when the worker follows the log, within
    /// `access_refresh_ms`. So the default is 10,000 on SQLite with the worker running (where
    /// another process is a command beside a server) or in memory, and 0, off, without the
    /// worker (nothing would follow the log; set it and call `Docmeta::follow_access` to have
    /// it anyway) and on PostgreSQL (where a client may write through one server and read
    /// through another at once). `0` turns it off.
    pub read_cache_documents: Option<usize>,
}

/// The read cache's size on SQLite when `read_cache_documents` is not set.
pub const DEFAULT_READ_CACHE_DOCUMENTS: usize = 10_000;

/// Where document files are stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StorageBackend {
    /// Files as they are.
    #[default]
    Plain,
    /// MENC files (AES-256-GCM), keyed by a password given at start.
    Encrypted,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            task_max_attempts: 5,
            password_hash_memory_kib: 19_456,
            password_hash_iterations: 2,
            documents_file_storage_backend: StorageBackend::Plain,
            documents_file_storage_location: None,
            storage_password_file: None,
            storage_kdf_memory_kib: 64 * 1024,
            storage_kdf_iterations: 3,
            upload_max_bytes: 512 << 20,
            download_verify_max_bytes: 8 << 20,
            access_refresh_ms: 1000,
            login_failures_per_minute: 10,
            request_timeout_ms: 30_000,
            stream_idle_timeout_ms: 60_000,
            stream_total_timeout_ms: 3_600_000,
            streams_per_user: 8,
            postgres_pool_size: 32,
            read_cache_documents: None,
        }
    }
}

/// The `config.yml` written on first start.
pub const DEFAULT_CONFIG: &str = "\
# docmeta settings. Every key is optional; the values shown are the defaults.
# How many times a failing background task is tried before it is marked failed.
task_max_attempts: 5
# Argon2id cost of password hashes (OWASP recommendation: 19 MiB, 2 iterations).
password_hash_memory_kib: 19456
password_hash_iterations: 2
# Document file storage: plain, or encrypted (MENC, AES-256-GCM). The encrypted storage needs
# its password at every start: DOCMETA_STORAGE_PASSWORD in the environment, or the first line
# of storage_password_file (outside this directory; never in the database or a backup).
documents_file_storage_backend: plain
# Document files in an S3-compatible bucket instead of document_file_storage/ (credentials,
# endpoint and region from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL, ...).
# documents_file_storage_location: s3://bucket/prefix
# storage_password_file: /etc/docmeta/storage-password
# Argon2id cost of the storage's master key, derived once per process (64 MiB, 3 iterations).
storage_kdf_memory_kib: 65536
storage_kdf_iterations: 3
# The largest document file the server accepts (512 MiB).
upload_max_bytes: 536870912
# Document files up to this size are checked against their SHA-256 before a download starts
# (8 MiB); larger ones are checked as they stream, their last bytes held back until it matches.
download_verify_max_bytes: 8388608
# Several processes on one PostgreSQL database: how often each picks up the others' grants (ms).
access_refresh_ms: 1000
# The HTTP server's failed logins allowed per minute, per username and per client address.
login_failures_per_minute: 10
# The HTTP server's time limit for one request (ms); a request over it answers 408 and changes
# nothing. Uploads and downloads have their own limits:
request_timeout_ms: 30000
# a download or upload that moves no bytes for this long is cut (ms),
stream_idle_timeout_ms: 60000
# one may take this long as a whole (ms; one hour),
stream_total_timeout_ms: 3600000
# and one user may have this many in progress at once (beyond it: 429).
streams_per_user: 8
# On PostgreSQL: the most database connections this process holds open at once (beyond it,
# units of work wait for one). Keep the sum over all processes below max_connections.
postgres_pool_size: 32
# Documents whose metadata stay in memory after a read. Every write here empties it; another
# process's writes reach it within access_refresh_ms. Default: 10000 on SQLite, 0 (off) on
# PostgreSQL, where a client may write through one server and read through another, and in a
# process without the background worker (which is what follows the others' writes).
# read_cache_documents: 10000
";

impl Config {
    /// Parses configuration text.
    pub fn parse(text: &str) -> Result<Config> {
        if text.trim().is_empty() {
            return Ok(Config::default());
        }
        serde_saphyr::from_str(text).map_err(|e| Error::InvalidInput(format!("config.yml: {e}")))
    }

    /// Reads `config.yml` in `dir`, writing the default file (owner-only, `0600`) first if it is
    /// missing.
    pub fn load_or_create(dir: &Path) -> Result<Config> {
        let path = dir.join("config.yml");
        if !path.exists() {
            crate::owner_only::write(&path, DEFAULT_CONFIG.as_bytes())
                .map_err(|e| Error::storage("writing config.yml", e))?;
        }
        let text =
            fs::read_to_string(&path).map_err(|e| Error::storage("reading config.yml", e))?;
        Config::parse(&text)
    }
}

/// Reads `system/SECRET_KEY`, creating it (32 random bytes, hex, mode 0600, in a 0700
/// `system/`) on first start.
pub fn load_or_create_secret_key(dir: &Path) -> Result<Vec<u8>> {
    let system = dir.join("system");
    crate::owner_only::create_dir_all(&system)
        .map_err(|e| Error::storage("creating the system directory", e))?;
    let path = system.join("SECRET_KEY");
    if let Ok(text) = fs::read_to_string(&path) {
        let key = decode_hex(text.trim())
            .ok_or_else(|| Error::InvalidInput(format!("{} is not hex", path.display())))?;
        if key.len() < 32 {
            return Err(Error::InvalidInput(format!(
                "{} is shorter than 32 bytes",
                path.display()
            )));
        }
        return Ok(key);
    }
    let mut key = vec![0u8; 32];
    getrandom::fill(&mut key)
        .map_err(|e| Error::storage("generating the secret key", e.to_string()))?;
    let mut file = crate::owner_only::create_new(&path)
        .map_err(|e| Error::storage("creating SECRET_KEY", e))?;
    file.write_all(encode_hex(&key).as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| Error::storage("writing SECRET_KEY", e))?;
    Ok(key)
}

/// Lower-case hex of `bytes`.
pub fn encode_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_defaults_and_typos() {
        assert_eq!(Config::parse("").ok(), Some(Config::default()));
        assert_eq!(Config::parse(DEFAULT_CONFIG).ok(), Some(Config::default()));
        assert_eq!(
            Config::parse("task_max_attempts: 2")
                .map(|c| c.task_max_attempts)
                .ok(),
            Some(2)
        );
        assert!(Config::parse("task_max_atempts: 2").is_err());
    }

    #[test]
    fn secret_key_is_created_once_with_0600() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = load_or_create_secret_key(dir.path()).expect("create");
        let b = load_or_create_secret_key(dir.path()).expect("read");
        assert_eq!(a, b);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(dir.path().join("system/SECRET_KEY"))
                .expect("meta")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
