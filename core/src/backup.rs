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
//!    whether it is in the base), so checksums cost no second pass over the data.
//!
//! The search index and caches are not backed up: a restore queues a rebuild.
//!
//! Archives, database snapshots and staging files are created `0600` (directories `0700`)
//! from the start: they hold the secret key and the users' password hashes.
//!
//! Restoring builds the new data directory in a staging directory beside the target: every
//! entry verified, the database checked (integrity, schema version) and opened there, and only
//! then is the target replaced, by renames: a restore that fails leaves the target as it was.

use std::collections::{BTreeMap, HashSet};
use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::files::{Hashing, check_name};
use crate::kernel::{DataLock, Docmeta};

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
const SYSTEM_FILES: [&str; 3] = ["config.yml", "system/SECRET_KEY", "system/storage_key"];

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

/// The last entry of an archive: the backup and every file it restores.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// See [`BackupInfo`].
    #[serde(flatten)]
    pub info: BackupInfo,
    /// Every file, the database first.
    pub files: Vec<ManifestEntry>,
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
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// Creates `path` and its missing parents, `0700` (a restore's staging directory).
fn create_private_dir(path: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(path)
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

fn append(
    tar: &mut tar::Builder<impl Write>,
    path: &str,
    size: u64,
    content: impl Read,
) -> Result<(u64, String)> {
    let mut header = tar::Header::new_gnu();
    header.set_size(size);
    header.set_mode(0o600);
    header.set_mtime(0);
    header.set_entry_type(tar::EntryType::Regular);
    // A file that changes size while it is read would corrupt the archive: take exactly `size`.
    let mut hashing = Hashing::new(content.take(size));
    tar.append_data(&mut header, path, &mut hashing)
        .map_err(io_err("writing the backup archive"))?;
    let got = hashing.finish();
    if got.0 != size {
        return Err(Error::storage(
            format!("archiving {path}"),
            "the file shrank while it was being archived",
        ));
    }
    Ok(got)
}

fn append_json(
    tar: &mut tar::Builder<impl Write>,
    path: &str,
    value: &impl Serialize,
) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::storage("writing the backup manifest", e))?;
    append(tar, path, bytes.len() as u64, &bytes[..]).map(drop)
}

/// Reads `backup.json`, the first entry, of an archive (cheap: nothing else is read).
pub fn read_info(archive: &Path) -> Result<BackupInfo> {
    let file = File::open(archive).map_err(io_err("opening the backup archive"))?;
    let decoder = zstd::Decoder::new(file).map_err(io_err("reading the backup archive"))?;
    let mut tar = tar::Archive::new(decoder);
    let mut entries = tar
        .entries()
        .map_err(io_err("reading the backup archive"))?;
    let mut first = entries
        .next()
        .ok_or_else(|| invalid("the archive is empty"))?
        .map_err(io_err("reading the backup archive"))?;
    let path = first.path().map_err(io_err("reading the backup archive"))?;
    if path.to_str() != Some(HEAD) {
        return Err(invalid("it does not start with backup.json"));
    }
    let mut text = String::new();
    (&mut first)
        .take(1 << 20)
        .read_to_string(&mut text)
        .map_err(io_err("reading backup.json"))?;
    serde_json::from_str(&text).map_err(|e| invalid(format!("backup.json: {e}")))
}

impl Docmeta {
    /// Backs the instance up into `out` (spec 8.1 item 3): a database snapshot taken online,
    /// `config.yml`, the system files and the document files the snapshot references. With
    /// `base` (an earlier backup of this instance), only document files the base lacks are
    /// archived (an incremental backup; restore it together with its base). `progress(done,
    /// total)` counts document files. Writers may go on meanwhile.
    pub fn backup(
        &self,
        out: &Path,
        base: Option<&Path>,
        mut progress: impl FnMut(u64, u64),
    ) -> Result<BackupReport> {
        let Some(data) = self.data_dir().map(Path::to_path_buf) else {
            return Err(Error::InvalidInput(
                "an in-memory instance has nothing on disk to back up".to_owned(),
            ));
        };
        let base_manifest = match base {
            Some(b) => Some(verify_backup(b)?),
            None => None,
        };
        let dir = out
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(io_err("creating the backup directory"))?;
        let id = random_id()?;
        let temp = dir.join(format!(
            ".{}.{id}.partial",
            out.file_name().and_then(|n| n.to_str()).unwrap_or("backup")
        ));
        let snapshot = dir.join(format!(".docmeta-backup-{id}.db"));
        let result = (|| {
            // Created empty and private first: SQLite (and pg_dump) then write into this file
            // and keep its mode; SQLite gives the snapshot's -wal and -shm the same mode.
            drop(create_private(&snapshot).map_err(io_err("creating the database snapshot"))?);
            let dump = self.store().dump_for_backup(&snapshot)?;
            let report = self.write_archive(
                &data,
                (&snapshot, &dump),
                &temp,
                id.clone(),
                base_manifest.as_ref(),
                &mut progress,
            )?;
            fs::rename(&temp, out).map_err(io_err("naming the backup archive"))?;
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(io_err("syncing the backup directory"))?;
            Ok(BackupReport {
                path: out.to_path_buf(),
                ..report
            })
        })();
        // The snapshot, and the WAL index and log SQLite leaves beside it once it was read.
        for suffix in ["", "-wal", "-shm"] {
            let mut path = snapshot.clone().into_os_string();
            path.push(suffix);
            let _ = fs::remove_file(path);
        }
        if result.is_err() {
            let _ = fs::remove_file(&temp);
        }
        result
    }

    fn write_archive(
        &self,
        data: &Path,
        (snapshot, dump): (&Path, &crate::store::DatabaseDump),
        temp: &Path,
        id: String,
        base: Option<&Manifest>,
        progress: &mut impl FnMut(u64, u64),
    ) -> Result<BackupReport> {
        // The files the snapshot references: the archive matches the database exactly.
        let (schema_version, stored) = (dump.schema_version, &dump.storage_names);
        let info = BackupInfo {
            format: FORMAT,
            id,
            schema_version,
            created: Utc::now(),
            base: base.map(|b| b.info.id.clone()),
        };
        let in_base: BTreeMap<&str, &ManifestEntry> = base
            .map(|b| b.files.iter().map(|f| (f.path.as_str(), f)).collect())
            .unwrap_or_default();
        // Every entry's size, known before the first byte is archived: the database snapshot,
        // the system files and document files are not rewritten in place (a document file that
        // changes size while it is archived fails the backup, see `append`).
        let storage = crate::files::PlainStorage::for_reading(data.join(STORAGE));
        let db_size = fs::metadata(snapshot)
            .map_err(io_err("reading the database snapshot"))?
            .len();
        let mut declared = vec![DeclaredEntry {
            path: dump.entry.to_owned(),
            size: db_size,
        }];
        let mut system_files = Vec::new();
        for path in SYSTEM_FILES {
            if let Ok(meta) = fs::metadata(data.join(path)) {
                declared.push(DeclaredEntry {
                    path: path.to_owned(),
                    size: meta.len(),
                });
                system_files.push((path, meta.len()));
            }
        }
        let mut document_sizes = Vec::with_capacity(stored.len());
        for name in stored {
            let path = format!("{STORAGE}/{name}");
            if in_base.contains_key(path.as_str()) {
                document_sizes.push(None);
                continue;
            }
            let size = open_document_file(&storage, name)?
                .metadata()
                .map_err(io_err("reading a document file"))?
                .len();
            declared.push(DeclaredEntry { path, size });
            document_sizes.push(Some(size));
        }
        let file = create_private(temp).map_err(io_err("creating the backup archive"))?;
        let mut encoder = zstd::Encoder::new(BufWriter::with_capacity(1 << 20, file), 3)
            .map_err(io_err("starting compression"))?;
        // Compression on its own thread while this one reads and hashes (like `tar | zstd`).
        encoder
            .multithread(1)
            .map_err(io_err("starting compression"))?;
        let mut tar = tar::Builder::new(encoder);
        append_json(&mut tar, HEAD, &info)?;
        append_json(&mut tar, CONTENTS, &Contents { entries: declared })?;
        let mut files = Vec::new();
        let db_file = File::open(snapshot).map_err(io_err("reading the database snapshot"))?;
        let (size, sha256) = append(&mut tar, dump.entry, db_size, BufReader::new(db_file))?;
        files.push(ManifestEntry {
            path: dump.entry.to_owned(),
            size,
            sha256,
            in_base: false,
        });
        for (path, size) in system_files {
            let f = File::open(data.join(path)).map_err(io_err("reading system files"))?;
            let (size, sha256) = append(&mut tar, path, size, f)?;
            files.push(ManifestEntry {
                path: path.to_owned(),
                size,
                sha256,
                in_base: false,
            });
        }
        let total = stored.len() as u64;
        let mut archived = 0;
        for (n, (name, size)) in stored.iter().zip(document_sizes).enumerate() {
            let path = format!("{STORAGE}/{name}");
            match size {
                Some(size) => {
                    let f = open_document_file(&storage, name)?;
                    let (size, sha256) = append(&mut tar, &path, size, f)?;
                    files.push(ManifestEntry {
                        path,
                        size,
                        sha256,
                        in_base: false,
                    });
                    archived += 1;
                }
                // No size was taken: the base holds it.
                None => files.extend(in_base.get(path.as_str()).map(|entry| ManifestEntry {
                    in_base: true,
                    ..(*entry).clone()
                })),
            }
            progress(n as u64 + 1, total);
        }
        let manifest = Manifest { info, files };
        append_json(&mut tar, MANIFEST, &manifest)?;
        let encoder = tar
            .into_inner()
            .map_err(io_err("finishing the backup archive"))?;
        let writer = encoder.finish().map_err(io_err("finishing compression"))?;
        let file = writer.into_inner().map_err(|e| {
            crate::files::content_error("writing the backup archive", e.into_error())
        })?;
        file.sync_all()
            .map_err(io_err("syncing the backup archive"))?;
        let archive_bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(BackupReport {
            path: temp.to_path_buf(),
            manifest,
            files_archived: archived,
            archive_bytes,
        })
    }
}

/// A document file for archiving; one deleted after the snapshot was taken is still in
/// `.deleted/` (kept aside for a day for this case).
fn open_document_file(storage: &crate::files::PlainStorage, name: &str) -> Result<File> {
    File::open(storage.path(name)?)
        .or_else(|_| {
            File::open(storage.deleted_path(name)?).map_err(io_err("archiving a document file"))
        })
        .map_err(|e| Error::storage(format!("archiving document file {name}"), e.to_string()))
}

/// Sizes entries may not exceed, by path.
type Bounds = BTreeMap<String, u64>;

/// Reads a whole archive, checking every entry's path and every checksum against the manifest
/// (`backup verify`). With `extract_to`, also writes the entries there (and keeps only
/// `wanted` paths when given). Every entry is bounded by its declared size: format 2 declares
/// them in `contents.json`; for a format-1 archive `bounds` gives them (from its manifest,
/// verified by an earlier pass). Returns the manifest.
fn scan(
    archive: &Path,
    extract_to: Option<&Path>,
    wanted: Option<&BTreeMap<String, ManifestEntry>>,
    bounds: Option<&Bounds>,
) -> Result<Manifest> {
    let file = File::open(archive).map_err(io_err("opening the backup archive"))?;
    scan_reader(file, extract_to, wanted, bounds)
}

fn scan_reader(
    archive: impl Read + Send + 'static,
    extract_to: Option<&Path>,
    wanted: Option<&BTreeMap<String, ManifestEntry>>,
    bounds: Option<&Bounds>,
) -> Result<Manifest> {
    let mut decoder = zstd::Decoder::new(archive).map_err(io_err("reading the backup archive"))?;
    // Decompression on its own thread, feeding this one (like `zstd -d | tar`) through a
    // bounded channel rather than an OS pipe: when the reader stops early (a damaged archive),
    // the decompressor's next send fails instead of raising SIGPIPE, which kills any host
    // process that does not ignore it (an app, a fuzzer).
    let (sender, receiver) = std::sync::mpsc::sync_channel::<Vec<u8>>(8);
    let decompress = std::thread::spawn(move || -> io::Result<()> {
        loop {
            let mut chunk = vec![0; 256 << 10];
            let n = decoder.read(&mut chunk)?;
            if n == 0 {
                return Ok(());
            }
            chunk.truncate(n);
            if sender.send(chunk).is_err() {
                return Ok(()); // the reader is done (it reports why)
            }
        }
    });
    let reader = ChunkReader {
        receiver,
        chunk: Vec::new(),
        at: 0,
    };
    let scanned = scan_entries(tar::Archive::new(reader), extract_to, wanted, bounds);
    let decompressed = decompress
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the decompression thread panicked")));
    match (scanned, decompressed) {
        (Err(e), _) => Err(e),
        (Ok(_), Err(e)) => Err(invalid(format!("the archive is damaged or truncated: {e}"))),
        (Ok(m), Ok(())) => Ok(m),
    }
}

/// The receiving end of the decompression channel of [`scan_reader`].
struct ChunkReader {
    receiver: std::sync::mpsc::Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    at: usize,
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.chunk.len() {
            match self.receiver.recv() {
                Ok(chunk) => (self.chunk, self.at) = (chunk, 0),
                // The decompressor finished (or failed: it says so when joined).
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len() - self.at);
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

fn scan_entries(
    mut tar: tar::Archive<impl Read>,
    extract_to: Option<&Path>,
    wanted: Option<&BTreeMap<String, ManifestEntry>>,
    bounds: Option<&Bounds>,
) -> Result<Manifest> {
    let mut seen: BTreeMap<String, (u64, String)> = BTreeMap::new();
    let mut info: Option<BackupInfo> = None;
    let mut contents: Option<Bounds> = None;
    let mut manifest: Option<Manifest> = None;
    // Bytes written to `extract_to` so far, and the most the declared sizes allow.
    let mut written = 0u64;
    let sum = |d: &Bounds| d.values().fold(0u64, |a, b| a.saturating_add(*b));
    let mut declared_total = bounds.map_or(u64::MAX, sum);
    let corrupt = |e: io::Error| invalid(format!("the archive is damaged or truncated: {e}"));
    for entry in tar.entries().map_err(corrupt)? {
        let mut entry = entry.map_err(corrupt)?;
        if manifest.is_some() {
            return Err(invalid("entries follow the manifest"));
        }
        let path = entry.path().map_err(corrupt)?;
        let path = path
            .to_str()
            .ok_or_else(|| invalid("a path is not UTF-8"))?
            .to_owned();
        if entry.header().entry_type() != tar::EntryType::Regular {
            return Err(invalid(format!("{path:?} is not a regular file")));
        }
        if path == HEAD || path == MANIFEST || path == CONTENTS {
            // Read into memory, never into the staging directory; bounded all the same.
            let limit = if path == HEAD { 1 << 20 } else { 256 << 20 };
            let mut text = String::new();
            (&mut entry)
                .take(limit)
                .read_to_string(&mut text)
                .map_err(corrupt)?;
            if path == HEAD {
                if info.is_some() || !seen.is_empty() {
                    return Err(invalid("backup.json is not the first entry"));
                }
                info = Some(
                    serde_json::from_str(&text)
                        .map_err(|e| invalid(format!("backup.json: {e}")))?,
                );
            } else if path == CONTENTS {
                if info.as_ref().is_none_or(|i| i.format < 2) || contents.is_some() {
                    return Err(invalid(
                        "contents.json is not the second entry of a format-2 archive",
                    ));
                }
                let declared: Contents = serde_json::from_str(&text)
                    .map_err(|e| invalid(format!("contents.json: {e}")))?;
                let mut map = Bounds::new();
                for e in declared.entries {
                    if !allowed_path(&e.path) {
                        return Err(invalid(format!("contents.json lists {:?}", e.path)));
                    }
                    if map.insert(e.path.clone(), e.size).is_some() {
                        return Err(invalid(format!("contents.json lists {:?} twice", e.path)));
                    }
                }
                if bounds.is_none() {
                    declared_total = sum(&map);
                }
                contents = Some(map);
            } else {
                manifest = Some(
                    serde_json::from_str(&text)
                        .map_err(|e| invalid(format!("manifest.json: {e}")))?,
                );
            }
            continue;
        }
        let Some(head) = &info else {
            return Err(invalid("it does not start with backup.json"));
        };
        if !allowed_path(&path) {
            return Err(invalid(format!(
                "refusing the entry {path:?}: not a path a backup holds"
            )));
        }
        if seen.contains_key(&path) {
            return Err(invalid(format!("{path:?} appears twice")));
        }
        if head.format >= 2 && contents.is_none() {
            return Err(invalid("contents.json does not follow backup.json"));
        }
        // What this entry may hold: refused at its header, before any byte is read, if it
        // claims more (a small archive that would expand to gigabytes).
        let limit = match contents.as_ref().or(bounds) {
            Some(declared) => *declared.get(&path).ok_or_else(|| {
                invalid(format!(
                    "{path:?} is not declared at the start of the archive"
                ))
            })?,
            None => u64::MAX,
        };
        let claimed = entry.header().size().map_err(corrupt)?;
        if claimed > limit {
            return Err(invalid(format!(
                "{path} holds {claimed} bytes but {limit} are declared"
            )));
        }
        // Whatever the header says, never more than the declared size (one byte over is
        // enough to refuse).
        let mut bounded = (&mut entry).take(limit.saturating_add(1));
        let keep = extract_to.filter(|_| wanted.is_none_or(|w| w.contains_key(&path)));
        let got = match keep {
            Some(root) => {
                let target = root.join(&path);
                if let Some(parent) = target.parent() {
                    create_private_dir(parent).map_err(io_err("restoring"))?;
                }
                let mut out = create_private(&target).map_err(io_err("restoring"))?;
                let mut hashing = Hashing::new(&mut bounded);
                io::copy(&mut hashing, &mut out).map_err(corrupt)?;
                let got = hashing.finish();
                written = written.saturating_add(got.0);
                // Each path appears once, so the per-entry bounds already cap the total; this
                // states the invariant where the bytes are written.
                if written > declared_total {
                    return Err(invalid("the archive expands beyond its declared size"));
                }
                got
            }
            None => crate::files::sha256(&mut bounded).map_err(corrupt)?,
        };
        if got.0 > limit {
            return Err(invalid(format!(
                "{path} expands beyond its declared {limit} bytes"
            )));
        }
        seen.insert(path, got);
    }
    let manifest =
        manifest.ok_or_else(|| invalid("the manifest is missing (the archive is truncated)"))?;
    if Some(&manifest.info) != info.as_ref() {
        return Err(invalid("backup.json and the manifest disagree"));
    }
    if manifest.info.format == 0 || manifest.info.format > FORMAT {
        return Err(invalid(format!(
            "format {} is not supported by this docmeta (formats 1 to {FORMAT})",
            manifest.info.format
        )));
    }
    if manifest.info.format >= 2 {
        let listed: Bounds = manifest
            .files
            .iter()
            .filter(|f| !f.in_base)
            .map(|f| (f.path.clone(), f.size))
            .collect();
        if contents.as_ref() != Some(&listed) {
            return Err(invalid("contents.json and the manifest disagree"));
        }
    }
    for f in &manifest.files {
        if !allowed_path(&f.path) {
            return Err(invalid(format!("the manifest lists {:?}", f.path)));
        }
        if f.in_base {
            continue;
        }
        match seen.remove(&f.path) {
            Some((size, sha)) if size == f.size && sha == f.sha256 => {}
            Some(_) => return Err(invalid(format!("{} does not match its checksum", f.path))),
            None => return Err(invalid(format!("{} is missing", f.path))),
        }
    }
    if let Some(extra) = seen.keys().next() {
        return Err(invalid(format!("{extra} is not in the manifest")));
    }
    Ok(manifest)
}

/// Checks an archive without restoring it: every entry's path, every size and SHA-256 against
/// the manifest (`docmeta backup verify`). Returns the manifest.
pub fn verify_backup(archive: &Path) -> Result<Manifest> {
    scan(archive, None, None, None)
}

/// [`verify_backup`] of an archive read from `archive` (a stream instead of a file).
pub fn verify_backup_from(archive: impl Read + Send + 'static) -> Result<Manifest> {
    scan_reader(archive, None, None, None)
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
    /// The file downloaded for verification, whose bytes matched its SHA-256.
    pub file_checked: Option<(DocumentFileId, u64)>,
    /// Whether a search answered.
    pub search_answers: bool,
    /// The durable task that rebuilds the search index (run by the first docmeta with a worker).
    pub reindex_task: TaskId,
}

use crate::model::{DocumentFileId, DocumentId, TaskId};

/// Restores `archives` into the data directory `data` (spec 8.1 item 4). `archives` is one full
/// backup, or an incremental backup with the backups it builds on, in any order.
///
/// Order: refuse if any docmeta has `data` open (its lock file); read and verify every archive
/// into a staging directory beside `data` (same file system; `0700`, files `0600`), each entry
/// bounded by its declared size; check the staged database (SQLite: `PRAGMA integrity_check`
/// and a schema version not newer than this build's); if the backup uses the encrypted
/// storage, check `password` against it; open the staged directory as a docmeta, running
/// migrations when the backup is older, queue a search rebuild without waiting for it, and
/// verify: a document opens, a file downloads and matches its checksum, search answers. Only
/// then is `data` replaced: renamed aside, the staged directory renamed into its place, and
/// the old one removed. Any failure before that leaves `data` exactly as it was.
pub fn restore(
    archives: &[PathBuf],
    data: &Path,
    password: Option<&[u8]>,
) -> Result<RestoreReport> {
    restore_to(archives, data, password, None)
}

/// [`restore`], with the database of a PostgreSQL-backed installation restored (`pg_restore`,
/// replacing what the dump holds) into the database at `database_url`; a backup of a
/// PostgreSQL-backed installation needs it, a SQLite one refuses it.
///
/// For PostgreSQL, before the database or `data` is touched: the dump's SHA-256 matches the
/// manifest, `pg_restore` reads the whole dump back (every entry decompresses and parses) and
/// the schema version recorded in it is not newer than this build's, and the storage password
/// is checked. Then `pg_restore --single-transaction` loads it into `database_url` (a failure
/// rolls back and leaves the database as it was), the staged directory is opened on it and
/// verified, and only then is `data` replaced. (A staging database would need the right to
/// create databases, which the service's user does not normally have.)
pub fn restore_to(
    archives: &[PathBuf],
    data: &Path,
    password: Option<&[u8]>,
    database_url: Option<&str>,
) -> Result<RestoreReport> {
    #[cfg(not(feature = "postgres"))]
    if database_url.is_some() {
        return Err(Error::InvalidInput(
            "this docmeta was built without PostgreSQL support (cargo feature `postgres`)".into(),
        ));
    }
    let builder = || {
        let b = Docmeta::builder().worker(false);
        #[cfg(feature = "postgres")]
        let b = match database_url {
            Some(url) => b.postgres(url),
            None => b,
        };
        match password {
            Some(p) => b.storage_password(p),
            None => b,
        }
    };
    let existed = data.exists();
    let lock = DataLock::exclusive(data)?;
    let parent = data
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let id = random_id()?;
    let staging = parent.join(format!(".docmeta-restore-{id}"));
    let previous = parent.join(format!(".docmeta-restore-{id}-previous"));
    let result = (|| {
        create_private_dir(&staging).map_err(io_err("creating the staging directory"))?;
        let manifest = stage(archives, &staging)?;
        check_staged_database(&staging, database_url)?;
        // Everything staged reaches the disk before the target is touched: one file-system
        // sync instead of an fsync per file.
        sync_tree(&staging)?;
        // A password that cannot open the restored storage is refused before anything changes.
        builder().check_storage(&staging)?;
        #[cfg(feature = "postgres")]
        if let Some(url) = database_url {
            let dump = staging.join(PG_DUMP);
            let dump_arg = dump.to_string_lossy().into_owned();
            crate::store::postgres::run_tool(
                "pg_restore",
                url,
                &[
                    "--clean",
                    "--if-exists",
                    "--no-owner",
                    "--no-privileges",
                    "--single-transaction",
                    &dump_arg,
                ],
            )?;
            fs::remove_file(&dump).map_err(io_err("removing the loaded database dump"))?;
        }
        let report = open_and_verify(builder().data_dir(&staging), manifest)?;
        // Held across the swap: once renamed, this is `data/.lock`, so nothing opens the new
        // directory before the restore has finished.
        let _staged_lock = DataLock::exclusive(&staging)?;
        replace_dir(&staging, data, &previous, existed)?;
        Ok(report)
    })();
    let _ = fs::remove_dir_all(&staging);
    let _ = fs::remove_dir_all(&previous);
    drop(lock);
    if result.is_err() && !existed {
        // The lock created `data`; leave nothing behind where nothing was.
        let _ = fs::remove_file(data.join(".lock"));
        let _ = fs::remove_dir(data);
    }
    result
}

/// Extracts the newest of `archives` and, for an incremental backup, the files it leaves to
/// its bases, into `staging`. Returns the newest backup's manifest.
fn stage(archives: &[PathBuf], staging: &Path) -> Result<Manifest> {
    // The newest archive decides; its bases provide the files marked `in_base`.
    let mut infos = Vec::new();
    for a in archives {
        infos.push((a.clone(), read_info(a)?));
    }
    let bases: HashSet<&str> = infos
        .iter()
        .filter_map(|(_, i)| i.base.as_deref())
        .collect();
    let tips: Vec<&(PathBuf, BackupInfo)> = infos
        .iter()
        .filter(|(_, i)| !bases.contains(i.id.as_str()))
        .collect();
    let [tip] = tips[..] else {
        return Err(invalid(
            "give one full backup, or an incremental backup with every backup it builds on",
        ));
    };
    let manifest = extract(&tip.0, &tip.1, staging, None)?;
    let mut needed: BTreeMap<String, ManifestEntry> = manifest
        .files
        .iter()
        .filter(|f| f.in_base)
        .map(|f| (f.path.clone(), f.clone()))
        .collect();
    let mut next_base = manifest.info.base.clone();
    while let Some(base_id) = next_base.take() {
        let (path, info) = infos
            .iter()
            .find(|(_, i)| i.id == base_id)
            .ok_or_else(|| invalid(format!("the base backup {base_id} was not given")))?;
        let wanted = needed.clone();
        let base = extract(path, info, staging, Some(&wanted))?;
        for f in base.files.iter().filter(|f| !f.in_base) {
            if let Some(want) = needed.get(&f.path) {
                if want.sha256 != f.sha256 || want.size != f.size {
                    return Err(invalid(format!("{} differs between the backups", f.path)));
                }
                needed.remove(&f.path);
            }
        }
        next_base = base.info.base.clone();
    }
    if let Some(missing) = needed.keys().next() {
        return Err(invalid(format!(
            "{missing} is in none of the given backups"
        )));
    }
    Ok(manifest)
}

/// Extracts one archive into `staging` (only `wanted` paths when given), never writing more
/// than the archive declares for an entry.
fn extract(
    archive: &Path,
    info: &BackupInfo,
    staging: &Path,
    wanted: Option<&BTreeMap<String, ManifestEntry>>,
) -> Result<Manifest> {
    if info.format >= 2 {
        return scan(archive, Some(staging), wanted, None);
    }
    // A format-1 archive declares its sizes only in its manifest, at the end: a first pass
    // verifies the whole archive writing nothing, then its sizes bound the extraction.
    let verified = scan(archive, None, None, None)?;
    let bounds: Bounds = verified
        .files
        .iter()
        .filter(|f| !f.in_base)
        .map(|f| (f.path.clone(), f.size))
        .collect();
    scan(archive, Some(staging), wanted, Some(&bounds))
}

/// Checks the staged database before anything else happens with it: the right kind for
/// `database_url`, readable, intact, and not from a newer docmeta.
fn check_staged_database(staging: &Path, database_url: Option<&str>) -> Result<()> {
    match (staging.join(PG_DUMP).exists(), database_url) {
        (true, None) => Err(Error::InvalidInput(
            "this backup holds a PostgreSQL database: restore it with the URL of the database \
             to load it into (--database-url)"
                .into(),
        )),
        (false, Some(_)) => Err(Error::InvalidInput(
            "this backup holds a SQLite database: restore it without a database URL".into(),
        )),
        (false, None) => crate::store::sqlite::check_database_file(&staging.join(DB)).map(drop),
        #[cfg(feature = "postgres")]
        (true, Some(_)) => crate::store::postgres::check_dump(&staging.join(PG_DUMP)).map(drop),
        #[cfg(not(feature = "postgres"))]
        (true, Some(_)) => Err(Error::InvalidInput(
            "this docmeta was built without PostgreSQL support (cargo feature `postgres`)".into(),
        )),
    }
}

/// Opens the staged directory as the restored instance (running migrations), queues the search
/// rebuild and runs the spec's verification (8.1 item 4); closes it again before returning.
fn open_and_verify(builder: crate::Builder, manifest: Manifest) -> Result<RestoreReport> {
    let files_restored = manifest.files.len();
    let db = builder.open()?;
    let (now, _) = db.store().schema_version()?;
    let migrations = (manifest.info.schema_version + 1..=now).collect();
    let reindex_task = db.write_system(|tx| {
        tx.set_setting("search.cursor", "0")?;
        tx.enqueue_task(crate::model::SEARCH_REINDEX, "{}")
    })?;
    let system = db.system();
    let documents = db.read(|tx| tx.count_documents())?;
    let first = db.read(|tx| tx.documents(None, DocumentId(0), 1))?;
    let document_opened = first
        .first()
        .map(|d| system.document(d.id).map(|d| (d.id, d.label)))
        .transpose()?;
    let some_file = db.read(|tx| tx.all_document_files(DocumentFileId(0), 1, None))?;
    let file_checked = some_file
        .first()
        .map(|f| {
            system
                .read_file(f.file.id)
                .map(|bytes| (f.file.id, bytes.len() as u64))
        })
        .transpose()?;
    let search_answers = system.search_documents("*", 1, 1).is_ok();
    Ok(RestoreReport {
        manifest,
        files_restored,
        migrations,
        documents,
        document_opened,
        file_checked,
        search_answers,
        reindex_task,
    })
}

/// Puts the staged directory in the place of `data`: `data` is renamed aside to `previous`,
/// `staged` renamed to `data`, and `previous` removed only once the new directory is in place
/// (if the second rename fails, `previous` is renamed back). Both are in one parent directory,
/// so each step is one atomic rename.
fn replace_dir(staged: &Path, data: &Path, previous: &Path, existed: bool) -> Result<()> {
    if existed {
        // The operator's choice of access to the data directory carries over.
        if let Ok(meta) = fs::metadata(data) {
            let _ = fs::set_permissions(staged, meta.permissions());
        }
    }
    let in_use = |e: io::Error| {
        Error::storage(
            format!(
                "replacing {} (it must be a directory that can be renamed, not a mount point; \
                 restore into a directory inside the mount instead)",
                data.display()
            ),
            e,
        )
    };
    fs::rename(data, previous).map_err(in_use)?;
    if let Err(e) = fs::rename(staged, data) {
        let _ = fs::rename(previous, data);
        return Err(Error::storage(
            "moving the restored directory into place",
            e,
        ));
    }
    // The restore has succeeded from here on: making the renames durable and removing the
    // old directory (the caller does) are best effort.
    if let Some(parent) = data.parent().filter(|p| !p.as_os_str().is_empty()) {
        let _ = File::open(parent).and_then(|d| d.sync_all());
    }
    Ok(())
}

/// Makes everything written under `dir` durable: `sync -f` (one syncfs of the file system),
/// or, where that command is missing, an fsync of every file.
fn sync_tree(dir: &Path) -> Result<()> {
    let synced = std::process::Command::new("sync")
        .arg("-f")
        .arg(dir)
        .status()
        .is_ok_and(|s| s.success());
    if synced {
        return Ok(());
    }
    fn walk(dir: &Path) -> io::Result<()> {
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                walk(&entry.path())?;
            } else {
                File::open(entry.path())?.sync_all()?;
            }
        }
        File::open(dir)?.sync_all()
    }
    walk(dir).map_err(io_err("syncing the restored files"))
}

/// Marks the newest backup of each of the `limit` most recent periods (newest first in `all`).
fn keep_newest_per_period(
    all: &mut [PruneDecision],
    limit: usize,
    what: &str,
    period: impl Fn(&DateTime<Utc>) -> String,
) {
    let mut periods = HashSet::new();
    for d in all.iter_mut() {
        let p = period(&d.info.created);
        if periods.contains(&p) {
            continue;
        }
        if periods.len() == limit {
            break;
        }
        if d.kept_because.is_none() {
            d.kept_because = Some(format!("{what} {p}"));
        }
        periods.insert(p);
    }
}

/// One backup considered by [`prune_backups`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PruneDecision {
    /// The archive.
    pub path: PathBuf,
    /// What it is.
    pub info: BackupInfo,
    /// Why it is kept (`None`: it is deleted).
    pub kept_because: Option<String>,
}

/// Applies a retention schedule (spec 8.1 item 8) to the archives (`*.tar.zst`) in `dir`: keeps
/// the newest backup of each of the last `keep_daily` days that have backups and the newest of
/// each of the last `keep_weekly` ISO weeks, plus every backup a kept incremental backup builds
/// on; deletes the rest unless `dry_run`. Files that are not docmeta backups are left alone.
pub fn prune_backups(
    dir: &Path,
    keep_daily: usize,
    keep_weekly: usize,
    dry_run: bool,
) -> Result<Vec<PruneDecision>> {
    let mut all = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_err("listing the backup directory"))? {
        let path = entry
            .map_err(io_err("listing the backup directory"))?
            .path();
        if !path.to_string_lossy().ends_with(".tar.zst") {
            continue;
        }
        if let Ok(info) = read_info(&path) {
            all.push(PruneDecision {
                path,
                info,
                kept_because: None,
            });
        }
    }
    all.sort_by_key(|d| std::cmp::Reverse(d.info.created));
    keep_newest_per_period(&mut all, keep_daily, "newest of day", |t| {
        t.format("%Y-%m-%d").to_string()
    });
    keep_newest_per_period(&mut all, keep_weekly, "newest of week", |t| {
        t.format("%G-W%V").to_string()
    });
    // Bases of kept incremental backups stay, transitively.
    loop {
        let needed: HashSet<String> = all
            .iter()
            .filter(|d| d.kept_because.is_some())
            .filter_map(|d| d.info.base.clone())
            .collect();
        let mut changed = false;
        for d in all.iter_mut() {
            if d.kept_because.is_none() && needed.contains(&d.info.id) {
                d.kept_because = Some("base of a kept incremental backup".to_owned());
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    if !dry_run {
        for d in all.iter().filter(|d| d.kept_because.is_none()) {
            fs::remove_file(&d.path).map_err(io_err("deleting an old backup"))?;
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A format-2 archive whose `db.sqlite3` entry holds `actual` zero bytes while
    /// `contents.json` declares 100.
    fn bomb(path: &Path, format: u32, actual: u64) {
        let file = File::create(path).expect("create");
        let mut tar = tar::Builder::new(zstd::Encoder::new(file, 3).expect("zstd").auto_finish());
        let info = format!(
            r#"{{"format":{format},"id":"x","schema_version":3,"created":"2026-01-01T00:00:00Z","base":null}}"#
        );
        let mut entries: Vec<(&str, Box<dyn Read>, u64)> = vec![(
            HEAD,
            Box::new(io::Cursor::new(info.clone().into_bytes())),
            info.len() as u64,
        )];
        let contents = r#"{"entries":[{"path":"db.sqlite3","size":100}]}"#;
        if format >= 2 {
            entries.push((
                CONTENTS,
                Box::new(contents.as_bytes()),
                contents.len() as u64,
            ));
        }
        entries.push((DB, Box::new(io::repeat(0).take(actual)), actual));
        for (name, data, size) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(size);
            h.set_mode(0o600);
            tar.append_data(&mut h, name, data).expect("append");
        }
        tar.into_inner().expect("finish");
    }

    fn bytes_under(dir: &Path) -> u64 {
        let mut total = 0;
        for entry in fs::read_dir(dir).expect("read_dir").flatten() {
            let meta = entry.metadata().expect("metadata");
            total += if meta.is_dir() {
                bytes_under(&entry.path())
            } else {
                meta.len()
            };
        }
        total
    }

    #[test]
    fn nothing_of_an_entry_larger_than_declared_reaches_the_staging_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let archive = dir.path().join("bomb.tar.zst");
        bomb(&archive, 2, 64 << 20);
        let staging = dir.path().join("staging");
        fs::create_dir(&staging).expect("staging");
        let err = scan(&archive, Some(&staging), None, None).expect_err("refused");
        assert!(err.to_string().contains("declared"), "{err}");
        assert_eq!(bytes_under(&staging), 0);
    }

    #[test]
    fn a_format_1_extraction_is_bounded_by_its_verified_manifest_sizes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let archive = dir.path().join("bomb.tar.zst");
        bomb(&archive, 1, 64 << 20);
        let staging = dir.path().join("staging");
        fs::create_dir(&staging).expect("staging");
        let bounds = Bounds::from([(DB.to_owned(), 100)]);
        let err = scan(&archive, Some(&staging), None, Some(&bounds)).expect_err("refused");
        assert!(err.to_string().contains("declared"), "{err}");
        assert_eq!(bytes_under(&staging), 0);
    }

    #[test]
    fn an_entry_not_declared_in_contents_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let archive = dir.path().join("a.tar.zst");
        let file = File::create(&archive).expect("create");
        let mut tar = tar::Builder::new(zstd::Encoder::new(file, 3).expect("zstd").auto_finish());
        let info = r#"{"format":2,"id":"x","schema_version":3,"created":"2026-01-01T00:00:00Z","base":null}"#;
        for (name, data) in [
            (HEAD, info.as_bytes()),
            (CONTENTS, br#"{"entries":[]}"#.as_slice()),
            ("config.yml", b"x".as_slice()),
        ] {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o600);
            tar.append_data(&mut h, name, data).expect("append");
        }
        tar.into_inner().expect("finish");
        let err = verify_backup(&archive).expect_err("refused");
        assert!(err.to_string().contains("not declared"), "{err}");
    }
}
