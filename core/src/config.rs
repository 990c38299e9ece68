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
    /// With several processes on one database: how often (milliseconds) the background worker
    /// applies what the others committed (grants, memberships, documents, metadata types), so
    /// that an idle process does not fall behind. Correctness does not depend on it: every call
    /// of a session catches up first (see `Docmeta::catch_up`).
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
    /// The HTTP server's limit, in milliseconds, on receiving a request's head (its request
    /// line and headers) from its first byte: a client that sends its headers slower, or stops
    /// half-way, is disconnected.
    pub header_read_timeout_ms: u64,
    /// How long (milliseconds) the HTTP server keeps a connection open with no request in
    /// progress and no byte of the next one received: a new connection, or one whose last answer
    /// was sent. Then it is closed.
    pub keep_alive_timeout_ms: u64,
    /// The most connections the HTTP server keeps open at once (further ones are closed as
    /// soon as they are accepted). Never more than the process's open-file limit allows (the
    /// server raises its soft limit to the hard one at start and keeps 512 files for itself).
    pub max_connections: usize,
    /// The most connections the HTTP server keeps open at once from one client address (an
    /// IPv6 client's /64 network counts as one address); further ones are closed as soon as
    /// they are accepted. Behind a reverse proxy every connection comes from the proxy: raise it.
    pub max_connections_per_address: usize,
    /// Template renders (defaults, lookups, workflow conditions and values) one user's requests
    /// may have in progress at once in this process; beyond it a call that must render is
    /// refused with [`Error::Throttled`] (HTTP `429`). docmeta itself
    /// (the application through `Docmeta::system`, the lifecycle tasks) is not counted.
    pub renders_per_user: usize,
    /// Template renders all users together may have in progress at once in this process;
    /// beyond it, [`Error::Throttled`] too. The HTTP server has this
    /// many blocking threads more than its reads need, so renders never take a read's thread.
    pub renders_at_once: usize,
    /// On PostgreSQL: the most connections one process holds open at once. Each concurrent
    /// unit of work (an HTTP request that reads or writes) uses one; beyond it they wait for one
    /// to come back (up to 10 seconds, then fail). Keep the sum over all processes below the
    /// server's `max_connections`.
    pub postgres_pool_size: usize,
    /// How many documents' metadata (the document, its values and their types) are kept in
    /// memory after a read, so that reading them again touches neither the store nor, over
    /// HTTP, a blocking thread. Every write of this process empties it before it is
    /// acknowledged, and every call first empties it when any process has committed anything
    /// since the last look, so it never serves a copy older than a committed change. The
    /// default is 10,000 on SQLite and 0, off, on PostgreSQL, where any transaction of the
    /// cluster empties it, so under load it would hold little. `0` turns it off.
    pub read_cache_documents: Option<usize>,
    /// Whether webhooks may send to addresses that are not public: loopback, link-local,
    /// private (RFC 1918, `fc00::/7`), multicast, unspecified, shared, reserved and
    /// documentation ranges. Off by default, so that a user who may create a webhook cannot
    /// make the server send requests into its own network (server-side request forgery); on
    /// for a receiver on the same machine or network.
    pub webhooks_allow_private_networks: bool,
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
            header_read_timeout_ms: 10_000,
            keep_alive_timeout_ms: 5_000,
            max_connections: 4096,
            max_connections_per_address: 256,
            renders_per_user: 2,
            renders_at_once: 4,
            postgres_pool_size: 32,
            read_cache_documents: None,
            webhooks_allow_private_networks: false,
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
# Several processes on one database: how often the worker applies what the others committed
# (ms). Every request applies it first anyway; this keeps an idle process current.
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
# A request's head (request line and headers) must arrive within this long of its first byte (ms),
header_read_timeout_ms: 10000
# and a connection with no request in progress is closed after this long without a byte (ms).
keep_alive_timeout_ms: 5000
# The most connections open at once, in all and from one client address (an IPv6 /64 counts as
# one address); further ones are closed at once. Behind a reverse proxy, raise the second.
max_connections: 4096
max_connections_per_address: 256
# Template renders (defaults, lookups, workflow conditions) in progress at once per user and in
# all; beyond either, a call that must render is refused (HTTP 429). Each change (or lookup) may
# render for 2 seconds in all.
renders_per_user: 2
renders_at_once: 4
# On PostgreSQL: the most database connections this process holds open at once (beyond it,
# units of work wait for one). Keep the sum over all processes below max_connections.
postgres_pool_size: 32
# Documents whose metadata stay in memory after a read. Any write, by any process, empties it
# before the next read. Default: 10000 on SQLite, 0 (off) on PostgreSQL, where any transaction
# of the cluster empties it.
# read_cache_documents: 10000
# Whether webhooks may send to loopback, link-local, private (10/8, 172.16/12, 192.168/16,
# fc00::/7) and other addresses that are not public. Off, a webhook whose host resolves to one
# is refused when it is saved and when each delivery is sent.
webhooks_allow_private_networks: false
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
