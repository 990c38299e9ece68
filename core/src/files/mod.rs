//! Document file storage: the bytes of document files live under
//! `DATA/document_file_storage/`, behind a [`FileStorage`], with generated names (never the
//! user's file name), written to a temporary file, fsynced and renamed into place, so a crash
//! never leaves a half file under a real name. [`EncryptedStorage`] wraps the plain storage and
//! writes the MENC format ([`menc`], `docs/menc.md`). With the cargo feature `s3`, the files
//! may instead be objects of an S3-compatible bucket (`S3Storage`, chosen with
//! `documents_file_storage_location: s3://bucket/prefix`), encrypted the same way.
//!
//! Everything streams: memory use does not grow with the file size.
//!
//! Layer 4 (with `access` and `metadata`): imports only `error`, `owner_only` and `config`.

pub mod menc;
#[cfg(feature = "s3")]
pub mod s3;

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::error::{Error, Result};
use menc::Keyring;

/// The stored bytes of document files, addressed by generated names.
pub trait FileStorage: Send + Sync + std::fmt::Debug {
    /// Stores everything `content` yields under a new name, which it returns. The name only
    /// becomes visible once the bytes are complete and durable.
    fn put(&self, content: &mut dyn Read) -> Result<String>;

    /// Stores everything `content` yields under `name`, a name from [`generate_name`] that is
    /// not in use (an encrypting storage chooses the name first, to bind the bytes to it). A
    /// storage that cannot store under a given name refuses with [`Error::InvalidInput`].
    fn put_as(&self, name: &str, content: &mut dyn Read) -> Result<()> {
        let _ = (name, content);
        Err(Error::InvalidInput(
            "this file storage cannot store under a given name".to_owned(),
        ))
    }

    /// The content stored under `name`.
    fn open(&self, name: &str) -> Result<Box<dyn Read + Send>>;

    /// Removes `name`; a missing name is not an error.
    fn delete(&self, name: &str) -> Result<()>;

    /// The length of the bytes stored under `name` as stored (MENC bytes for an encrypted
    /// file), or `None` when nothing is stored under it. The default reads them all.
    fn stored_len(&self, name: &str) -> Result<Option<u64>> {
        let mut content = self.open_plain(name)?;
        io::copy(&mut content, &mut io::sink())
            .map(Some)
            .map_err(|e| content_error("reading a document file", e))
    }

    /// Whether this storage encrypts what it stores (MENC).
    fn encrypts(&self) -> bool {
        false
    }

    /// Stores `content` without encryption, for a storage that encrypts (to convert an
    /// encrypted store back to a plain one); the same as [`FileStorage::put`] otherwise.
    fn put_plain(&self, content: &mut dyn Read) -> Result<String> {
        self.put(content)
    }

    /// Reads a file stored without encryption, for a storage that encrypts (files stored before
    /// encryption was turned on); the same as [`FileStorage::open`] otherwise.
    fn open_plain(&self, name: &str) -> Result<Box<dyn Read + Send>> {
        self.open(name)
    }

    /// Removes at once the bytes of files deleted before, which a storage may keep for a while
    /// (a day, for a backup taken meanwhile): for a replica, which must keep nothing of what
    /// its user may no longer see. Nothing to do by default.
    fn purge_deleted(&self) -> Result<()> {
        Ok(())
    }

    /// For a backup: the length of the bytes stored under `name` as stored, or of the bytes
    /// kept aside after a recent delete (a backup's database snapshot may still reference
    /// them); `None` when neither exists. The default is [`FileStorage::stored_len`].
    fn kept_len(&self, name: &str) -> Result<Option<u64>> {
        self.stored_len(name)
    }

    /// For a backup: the bytes stored under `name` as stored (MENC stays MENC), or those kept
    /// aside after a recent delete. The default is [`FileStorage::open_plain`].
    fn open_kept(&self, name: &str) -> Result<Box<dyn Read + Send>> {
        self.open_plain(name)
    }

    /// Where the files are when that is not the data directory (`s3://bucket/prefix`), so a
    /// restore writes the archived files there; `None` for the data directory or memory.
    fn location(&self) -> Option<String> {
        None
    }
}

/// The storage at `location`, the value of `documents_file_storage_location`: `s3://bucket/
/// prefix` (with the cargo feature `s3`; credentials and endpoint from the environment).
pub fn open_location(location: &str) -> Result<Arc<dyn FileStorage>> {
    if !location.starts_with("s3://") {
        return Err(Error::InvalidInput(format!(
            "documents_file_storage_location {location:?}: only s3://bucket/prefix is supported \
             (leave it out for the data directory's document_file_storage/)"
        )));
    }
    #[cfg(feature = "s3")]
    {
        Ok(Arc::new(s3::S3Storage::open(location)?))
    }
    #[cfg(not(feature = "s3"))]
    Err(Error::InvalidInput(format!(
        "documents_file_storage_location {location:?}: this docmeta was built without S3 \
         support (cargo feature `s3` of docmeta-core)"
    )))
}

/// A new storage name: two hex digits of fan-out, a slash, 30 hex digits (128 random bits).
pub fn generate_name() -> Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::storage("generating a file name", e.to_string()))?;
    let hex = crate::config::encode_hex(&bytes);
    Ok(format!("{}/{}", &hex[..2], &hex[2..]))
}

/// Refuses anything but a generated name, so a damaged database row can never address a path
/// outside the storage.
pub fn check_name(name: &str) -> Result<()> {
    let ok = name.len() == 33
        && name.as_bytes()[2] == b'/'
        && name
            .bytes()
            .enumerate()
            .all(|(i, b)| i == 2 || matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidInput(format!(
            "{name:?} is not a document file storage name"
        )))
    }
}

/// Files in a directory (`DATA/document_file_storage/`).
#[derive(Debug, Clone)]
pub struct PlainStorage {
    root: PathBuf,
}

/// The directory, inside the storage root, where files are written before they are renamed
/// into place. Leftovers of a crash are removed when the storage is opened.
pub const INCOMING: &str = ".incoming";
/// Where deleted files wait a day before they are removed, so that a backup whose database
/// snapshot still references them finds them.
pub const DELETED: &str = ".deleted";
const DELETED_KEPT: std::time::Duration = std::time::Duration::from_secs(24 * 3600);
/// How long a temporary file of `.incoming/` must lie untouched before an opening instance
/// takes it for a crash's leftover (an upload in progress writes to it continuously).
const INCOMING_STALE: std::time::Duration = std::time::Duration::from_secs(3600);

fn remove_older_than(dir: &Path, age: std::time::Duration) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let old = (entry.metadata().and_then(|m| m.modified()).ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|elapsed| elapsed > age);
        if old {
            let _ = fs::remove_file(entry.path());
        }
    }
}

impl PlainStorage {
    /// Opens (creating, owner-only) the storage at `root` and removes incomplete files a crash
    /// left. Every directory it creates is `0700` and every file `0600`.
    pub fn open(root: impl Into<PathBuf>) -> Result<PlainStorage> {
        let root = root.into();
        let incoming = root.join(INCOMING);
        crate::owner_only::create_dir_all(&incoming)
            .map_err(|e| Error::storage(format!("creating {}", incoming.display()), e))?;
        // Temporary files a crash left behind, but not the uploads another process (a server
        // while `docmeta backup` opens the same directory) is writing right now.
        remove_older_than(&incoming, INCOMING_STALE);
        let deleted = root.join(DELETED);
        crate::owner_only::create_dir_all(&deleted)
            .map_err(|e| Error::storage(format!("creating {}", deleted.display()), e))?;
        remove_older_than(&deleted, DELETED_KEPT);
        Ok(PlainStorage { root })
    }

    /// The storage at `root` for reading only (a backup): nothing is created or cleaned up.
    pub fn for_reading(root: impl Into<PathBuf>) -> PlainStorage {
        PlainStorage { root: root.into() }
    }

    /// The storage directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path of a stored name.
    pub fn path(&self, name: &str) -> Result<PathBuf> {
        check_name(name)?;
        Ok(self.root.join(name))
    }

    /// Where a deleted name waits before it is removed.
    pub fn deleted_path(&self, name: &str) -> Result<PathBuf> {
        check_name(name)?;
        Ok(self.root.join(DELETED).join(name.replace('/', "-")))
    }
}

fn copy_into(content: &mut dyn Read, file: &mut File) -> io::Result<u64> {
    // Larger than io::copy's 8 KiB: fewer system calls for large files.
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0u64;
    loop {
        let n = match content.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        file.write_all(&buf[..n])?;
        total += n as u64;
    }
}

/// Writes `content` to a temporary file in `dir`, fsyncs it and renames it to `target`, then
/// fsyncs the target's directory. Removes the temporary file on failure. The file is `0600`
/// from its first byte, and a missing directory of `target` is created `0700`.
pub(crate) fn write_atomically(
    dir: &Path,
    target: &Path,
    content: &mut dyn Read,
) -> std::result::Result<u64, io::Error> {
    let mut suffix = [0u8; 8];
    getrandom::fill(&mut suffix).map_err(|e| io::Error::other(e.to_string()))?;
    let temp = dir.join(format!("tmp-{}", crate::config::encode_hex(&suffix)));
    let result = (|| {
        let mut file = crate::owner_only::create_new(&temp)?;
        let n = copy_into(content, &mut file)?;
        file.sync_all()?;
        if let Some(parent) = target.parent() {
            crate::owner_only::create_dir_all(parent)?;
        }
        fs::rename(&temp, target)?;
        if let Some(parent) = target.parent() {
            File::open(parent)?.sync_all()?;
        }
        Ok(n)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// Maps an I/O error of reading document content: a MENC authentication failure is
/// [`Error::Decryption`], a full disk says so, anything else is [`Error::Storage`].
pub(crate) fn content_error(operation: &str, e: io::Error) -> Error {
    if matches!(
        e.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
    ) {
        return Error::storage_full(
            operation.to_owned(),
            "no space left on the device; nothing was stored",
        );
    }
    menc::io_error(operation, e)
}

impl FileStorage for PlainStorage {
    fn purge_deleted(&self) -> Result<()> {
        remove_older_than(&self.root.join(DELETED), std::time::Duration::ZERO);
        Ok(())
    }

    fn put(&self, content: &mut dyn Read) -> Result<String> {
        let name = generate_name()?;
        self.put_as(&name, content)?;
        Ok(name)
    }

    fn put_as(&self, name: &str, content: &mut dyn Read) -> Result<()> {
        let target = self.path(name)?;
        write_atomically(&self.root.join(INCOMING), &target, content)
            .map_err(|e| content_error("storing a document file", e))?;
        Ok(())
    }

    fn open(&self, name: &str) -> Result<Box<dyn Read + Send>> {
        let path = self.path(name)?;
        let file = File::open(&path).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                Error::storage(
                    format!("opening document file {name}"),
                    "the file is missing from document_file_storage",
                )
            } else {
                Error::storage(format!("opening document file {name}"), e)
            }
        })?;
        Ok(Box::new(io::BufReader::with_capacity(256 * 1024, file)))
    }

    fn stored_len(&self, name: &str) -> Result<Option<u64>> {
        match fs::metadata(self.path(name)?) {
            Ok(meta) => Ok(Some(meta.len())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::storage(format!("reading document file {name}"), e)),
        }
    }

    fn kept_len(&self, name: &str) -> Result<Option<u64>> {
        for path in [self.path(name)?, self.deleted_path(name)?] {
            match fs::metadata(&path) {
                Ok(meta) => return Ok(Some(meta.len())),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::storage(format!("reading document file {name}"), e)),
            }
        }
        Ok(None)
    }

    fn open_kept(&self, name: &str) -> Result<Box<dyn Read + Send>> {
        let file = match File::open(self.path(name)?) {
            Ok(file) => file,
            Err(_) => File::open(self.deleted_path(name)?)
                .map_err(|e| Error::storage(format!("archiving document file {name}"), e))?,
        };
        Ok(Box::new(file))
    }

    fn delete(&self, name: &str) -> Result<()> {
        let aside = self.deleted_path(name)?;
        match fs::rename(self.path(name)?, &aside) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                Err(Error::storage(format!("deleting document file {name}"), e))
            }
            Err(_) => Ok(()),
            Ok(()) => {
                // The day of grace counts from now, not from when the file was written.
                if let Ok(f) = File::options().append(true).open(&aside) {
                    let _ = f.set_modified(std::time::SystemTime::now());
                }
                Ok(())
            }
        }
    }
}

/// A storage that encrypts into the MENC format over a [`PlainStorage`] (spec 8.1 item 7).
#[derive(Debug, Clone)]
pub struct EncryptedStorage {
    plain: Arc<dyn FileStorage>,
    keyring: Arc<Keyring>,
    chunk: u32,
}

impl EncryptedStorage {
    /// Wraps `plain` with `keyring`'s key.
    pub fn new(plain: Arc<dyn FileStorage>, keyring: Arc<Keyring>) -> EncryptedStorage {
        EncryptedStorage {
            plain,
            keyring,
            chunk: menc::DEFAULT_CHUNK,
        }
    }
}

impl FileStorage for EncryptedStorage {
    fn purge_deleted(&self) -> Result<()> {
        self.plain.purge_deleted()
    }

    fn put(&self, content: &mut dyn Read) -> Result<String> {
        // The name is chosen first and authenticated with every chunk (MENC version 2), so
        // these bytes decrypt under this name only: a stored file copied over another's fails
        // with a decryption error instead of being served as the other document.
        let name = generate_name()?;
        let mut sealed = self
            .keyring
            .encryptor_bound(content, self.chunk, name.as_bytes())?;
        self.plain.put_as(&name, &mut sealed)?;
        Ok(name)
    }

    fn put_as(&self, name: &str, content: &mut dyn Read) -> Result<()> {
        check_name(name)?;
        let mut sealed = self
            .keyring
            .encryptor_bound(content, self.chunk, name.as_bytes())?;
        self.plain.put_as(name, &mut sealed)
    }

    fn open(&self, name: &str) -> Result<Box<dyn Read + Send>> {
        Ok(Box::new(self.keyring.decryptor_bound(
            self.plain.open(name)?,
            name.as_bytes(),
        )?))
    }

    fn delete(&self, name: &str) -> Result<()> {
        self.plain.delete(name)
    }

    fn stored_len(&self, name: &str) -> Result<Option<u64>> {
        self.plain.stored_len(name)
    }

    fn encrypts(&self) -> bool {
        true
    }

    fn put_plain(&self, content: &mut dyn Read) -> Result<String> {
        self.plain.put(content)
    }

    fn open_plain(&self, name: &str) -> Result<Box<dyn Read + Send>> {
        self.plain.open(name)
    }

    fn kept_len(&self, name: &str) -> Result<Option<u64>> {
        self.plain.kept_len(name)
    }

    fn open_kept(&self, name: &str) -> Result<Box<dyn Read + Send>> {
        self.plain.open_kept(name)
    }

    fn location(&self) -> Option<String> {
        self.plain.location()
    }
}

/// Files in memory, for [`crate::Docmeta::in_memory`] instances (tests, examples).
#[derive(Debug, Default, Clone)]
pub struct MemoryStorage {
    files: Arc<RwLock<HashMap<String, Arc<Vec<u8>>>>>,
}

impl FileStorage for MemoryStorage {
    fn put(&self, content: &mut dyn Read) -> Result<String> {
        let name = generate_name()?;
        self.put_as(&name, content)?;
        Ok(name)
    }

    fn put_as(&self, name: &str, content: &mut dyn Read) -> Result<()> {
        check_name(name)?;
        let mut bytes = Vec::new();
        content
            .read_to_end(&mut bytes)
            .map_err(|e| content_error("storing a document file", e))?;
        self.files.write().insert(name.to_owned(), Arc::new(bytes));
        Ok(())
    }

    fn open(&self, name: &str) -> Result<Box<dyn Read + Send>> {
        let bytes = self.files.read().get(name).cloned().ok_or_else(|| {
            Error::storage(format!("opening document file {name}"), "no such file")
        })?;
        Ok(Box::new(io::Cursor::new(ArcBytes(bytes))))
    }

    fn delete(&self, name: &str) -> Result<()> {
        self.files.write().remove(name);
        Ok(())
    }

    fn stored_len(&self, name: &str) -> Result<Option<u64>> {
        Ok(self.files.read().get(name).map(|b| b.len() as u64))
    }
}

struct ArcBytes(Arc<Vec<u8>>);

impl AsRef<[u8]> for ArcBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Passes bytes through while counting them and computing their SHA-256.
pub struct Hashing<R> {
    inner: R,
    digest: ring::digest::Context,
    size: u64,
}

impl<R: Read> Hashing<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        Hashing {
            inner,
            digest: ring::digest::Context::new(&ring::digest::SHA256),
            size: 0,
        }
    }

    /// The size and lower-case hex SHA-256 of everything read so far.
    pub fn finish(self) -> (u64, String) {
        (
            self.size,
            crate::config::encode_hex(self.digest.finish().as_ref()),
        )
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.digest.update(&buf[..n]);
        self.size += n as u64;
        Ok(n)
    }
}

/// The SHA-256 (hex) and size of everything `r` yields.
pub fn sha256(r: &mut dyn Read) -> io::Result<(u64, String)> {
    let mut h = Hashing::new(r);
    io::copy(&mut h, &mut io::sink())?;
    Ok(h.finish())
}

/// A file name as shown to users: the last path component, without control characters, at
/// most 255 bytes; `"file"` when nothing is left.
pub fn clean_filename(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or("");
    let mut out: String = last.chars().filter(|c| !c.is_control()).collect();
    let trimmed = out.trim();
    if trimmed.is_empty() || trimmed == "." || trimmed == ".." {
        return "file".to_owned();
    }
    out = trimmed.to_owned();
    while out.len() > 255 {
        out.pop();
    }
    out
}

/// The MIME type guessed from a file name's extension.
pub fn guess_mime(filename: &str) -> String {
    mime_guess::from_path(filename)
        .first_raw()
        .unwrap_or("application/octet-stream")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn a_full_disk_while_storing_content_is_storage_full() {
        let e = content_error(
            "storing a document file",
            io::Error::from(io::ErrorKind::StorageFull),
        );
        assert_eq!(e.kind(), ErrorKind::StorageFull, "{e}");
        assert!(e.to_string().contains("no space left"), "{e}");
    }

    #[test]
    fn an_exceeded_quota_while_storing_content_is_storage_full() {
        let e = content_error(
            "storing a document file",
            io::Error::from(io::ErrorKind::QuotaExceeded),
        );
        assert_eq!(e.kind(), ErrorKind::StorageFull, "{e}");
    }

    #[test]
    fn other_content_errors_stay_storage() {
        let e = content_error(
            "storing a document file",
            io::Error::from(io::ErrorKind::PermissionDenied),
        );
        assert_eq!(e.kind(), ErrorKind::Storage, "{e}");
    }

    #[test]
    fn names_are_generated_and_checked() {
        let name = generate_name().expect("name");
        check_name(&name).expect("a generated name passes");
        for bad in ["../../etc/passwd", "ab/../../x", "", "AB/cdef", "ab/cd"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn user_file_names_lose_their_paths() {
        assert_eq!(clean_filename("../../etc/passwd"), "passwd");
        assert_eq!(clean_filename("C:\\Users\\x\\inv.pdf"), "inv.pdf");
        assert_eq!(clean_filename("a\u{0}b\n.txt"), "ab.txt");
        assert_eq!(clean_filename(".."), "file");
        assert_eq!(clean_filename(""), "file");
        assert_eq!(guess_mime("scan.PDF"), "application/pdf");
        assert_eq!(guess_mime("noext"), "application/octet-stream");
    }

    #[test]
    fn an_encrypted_file_in_the_old_unbound_form_is_still_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let plain = Arc::new(PlainStorage::open(dir.path()).expect("open"));
        let params = menc::KdfParams {
            memory_kib: 64,
            iterations: 1,
            parallelism: 1,
        };
        let (keyring, _) = Keyring::create(menc::Password::new("pw"), params).expect("keyring");
        let keyring = Arc::new(keyring);
        // A file as docmeta wrote them before MENC version 2, not migrated: they stay version 1
        // (readable under any name) until `docmeta storage decrypt` and `encrypt` rewrite them.
        let name = generate_name().expect("name");
        let mut old = keyring
            .encryptor_version(&b"written long ago"[..], menc::DEFAULT_CHUNK, 1, b"")
            .expect("encryptor");
        plain.put_as(&name, &mut old).expect("store");
        let storage = EncryptedStorage::new(plain.clone(), keyring);
        let mut out = Vec::new();
        storage
            .open(&name)
            .expect("open")
            .read_to_end(&mut out)
            .expect("read");
        assert_eq!(out, b"written long ago");
        // New files are bound to their name.
        let new = storage.put(&mut &b"fresh"[..]).expect("put");
        let raw = std::fs::read(plain.path(&new).expect("path")).expect("raw");
        assert_eq!(raw[4], menc::VERSION);
        std::fs::copy(
            plain.path(&new).expect("path"),
            plain.path(&name).expect("path"),
        )
        .expect("swap");
        assert!(matches!(storage.open(&name), Err(Error::Decryption(_))));
    }

    #[test]
    fn plain_storage_round_trip_and_leftovers() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::create_dir_all(dir.path().join(INCOMING)).expect("incoming");
        let leftover = dir.path().join(INCOMING).join("tmp-x");
        fs::write(&leftover, b"half").expect("leftover");
        let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        fs::File::options()
            .write(true)
            .open(&leftover)
            .and_then(|f| f.set_modified(two_hours_ago))
            .expect("age the leftover");
        // Another process's upload in progress.
        let writing = dir.path().join(INCOMING).join("tmp-y");
        fs::write(&writing, b"still coming").expect("in progress");
        let s = PlainStorage::open(dir.path()).expect("open");
        assert!(!leftover.exists(), "a crash's half file is removed");
        assert!(writing.exists(), "an upload in progress is left alone");
        let name = s.put(&mut &b"hello"[..]).expect("put");
        let mut out = String::new();
        s.open(&name)
            .expect("open")
            .read_to_string(&mut out)
            .expect("read");
        assert_eq!(out, "hello");
        s.delete(&name).expect("delete");
        s.delete(&name).expect("deleting twice is fine");
        assert!(s.open(&name).is_err());
        assert!(
            s.deleted_path(&name).expect("path").exists(),
            "kept aside for a day"
        );
        assert!(s.open("../x").is_err());
    }
}
