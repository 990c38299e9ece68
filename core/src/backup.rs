//! Backup and restore (spec 8.1 items 2-4, 8).
//!
//! A backup is one tar archive compressed with zstd, written to a temporary name and renamed
//! when complete. Its entries, in order:
//!
//! 1. `backup.json`: what the backup is (format, schema version, creation time, id, the base
//!    of an incremental backup), first so that listing and pruning read only the start;
//! 2. `db.sqlite3`: a consistent online snapshot of the database (SQLite backup API);
//! 3. `config.yml`, `system/SECRET_KEY`, `system/storage_key` (the encrypted storage's salt and
//!    password check, never its password);
//! 4. `document_file_storage/..`: every file the snapshot references, as stored (MENC stays
//!    MENC); an incremental backup holds only those not in its base;
//! 5. `manifest.json`, last: `backup.json`'s fields plus every file (path, size, SHA-256, and
//!    whether it is in the base), so checksums cost no second pass over the data.
//!
//! The search index and caches are not backed up: a restore queues a rebuild.
//! Restoring verifies everything into a staging directory before it touches the target.

use std::collections::{BTreeMap, HashSet};
use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::docmeta::{DataLock, Docmeta};
use crate::error::{Error, Result};
use crate::files::{Hashing, check_name};

/// The archive format this build writes.
pub const FORMAT: u32 = 1;
const HEAD: &str = "backup.json";
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
        let file = File::create_new(temp).map_err(io_err("creating the backup archive"))?;
        let mut encoder = zstd::Encoder::new(BufWriter::with_capacity(1 << 20, file), 3)
            .map_err(io_err("starting compression"))?;
        // Compression on its own thread while this one reads and hashes (like `tar | zstd`).
        encoder
            .multithread(1)
            .map_err(io_err("starting compression"))?;
        let mut tar = tar::Builder::new(encoder);
        append_json(&mut tar, HEAD, &info)?;
        let mut files = Vec::new();
        let size = fs::metadata(snapshot)
            .map_err(io_err("reading the database snapshot"))?
            .len();
        let db_file = File::open(snapshot).map_err(io_err("reading the database snapshot"))?;
        let (size, sha256) = append(&mut tar, dump.entry, size, BufReader::new(db_file))?;
        files.push(ManifestEntry {
            path: dump.entry.to_owned(),
            size,
            sha256,
            in_base: false,
        });
        for path in SYSTEM_FILES {
            let Ok(f) = File::open(data.join(path)) else {
                continue;
            };
            let size = f.metadata().map_err(io_err("reading system files"))?.len();
            let (size, sha256) = append(&mut tar, path, size, f)?;
            files.push(ManifestEntry {
                path: path.to_owned(),
                size,
                sha256,
                in_base: false,
            });
        }
        // For reading: opening the storage would clean up its temporary files, and a writer's
        // upload in progress is one of them.
        let storage = crate::files::PlainStorage::for_reading(data.join(STORAGE));
        let total = stored.len() as u64;
        let mut archived = 0;
        for (n, name) in stored.iter().enumerate() {
            let path = format!("{STORAGE}/{name}");
            if let Some(entry) = in_base.get(path.as_str()) {
                files.push(ManifestEntry {
                    in_base: true,
                    ..(*entry).clone()
                });
            } else {
                // Deleted after the snapshot was taken: kept aside for a day for this case.
                let f = File::open(storage.path(name)?)
                    .or_else(|_| {
                        File::open(storage.deleted_path(name)?)
                            .map_err(io_err("archiving a document file"))
                    })
                    .map_err(|e| {
                        Error::storage(format!("archiving document file {name}"), e.to_string())
                    })?;
                let size = f
                    .metadata()
                    .map_err(io_err("reading a document file"))?
                    .len();
                let (size, sha256) = append(&mut tar, &path, size, f)?;
                files.push(ManifestEntry {
                    path,
                    size,
                    sha256,
                    in_base: false,
                });
                archived += 1;
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

/// The schema version and referenced storage names of a SQLite database snapshot.
pub(crate) fn sqlite_snapshot_files(snapshot: &Path) -> Result<(u32, Vec<String>)> {
    let conn = rusqlite::Connection::open_with_flags(
        snapshot,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| Error::storage("reading the database snapshot", e))?;
    let version: i64 = conn
        .query_row("SELECT max(version) FROM schema_version", [], |r| r.get(0))
        .map_err(|e| Error::storage("reading the snapshot's schema version", e))?;
    let has_files: bool = conn
        .query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE name = 'document_files'",
            [],
            |r| r.get(0),
        )
        .map_err(|e| Error::storage("reading the database snapshot", e))?;
    let mut names = Vec::new();
    if has_files {
        let mut stmt = conn
            .prepare("SELECT storage_name FROM document_files ORDER BY storage_name")
            .map_err(|e| Error::storage("reading the database snapshot", e))?;
        let rows = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| Error::storage("reading the database snapshot", e))?;
        for name in rows {
            names.push(name.map_err(|e| Error::storage("reading the database snapshot", e))?);
        }
    }
    Ok((u32::try_from(version).unwrap_or(0), names))
}

/// Reads a whole archive, checking every entry's path and every checksum against the manifest
/// (`backup verify`). With `extract_to`, also writes the entries there (and keeps only
/// `wanted` paths when given). Returns the manifest.
fn scan(
    archive: &Path,
    extract_to: Option<&Path>,
    wanted: Option<&BTreeMap<String, ManifestEntry>>,
) -> Result<Manifest> {
    let file = File::open(archive).map_err(io_err("opening the backup archive"))?;
    scan_reader(file, extract_to, wanted)
}

fn scan_reader(
    archive: impl Read + Send + 'static,
    extract_to: Option<&Path>,
    wanted: Option<&BTreeMap<String, ManifestEntry>>,
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
    let scanned = scan_entries(tar::Archive::new(reader), extract_to, wanted);
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
) -> Result<Manifest> {
    let mut seen: BTreeMap<String, (u64, String)> = BTreeMap::new();
    let mut info: Option<BackupInfo> = None;
    let mut manifest: Option<Manifest> = None;
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
        if path == HEAD || path == MANIFEST {
            let mut text = String::new();
            (&mut entry)
                .take(256 << 20)
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
            } else {
                manifest = Some(
                    serde_json::from_str(&text)
                        .map_err(|e| invalid(format!("manifest.json: {e}")))?,
                );
            }
            continue;
        }
        if info.is_none() {
            return Err(invalid("it does not start with backup.json"));
        }
        if !allowed_path(&path) {
            return Err(invalid(format!(
                "refusing the entry {path:?}: not a path a backup holds"
            )));
        }
        if seen.contains_key(&path) {
            return Err(invalid(format!("{path:?} appears twice")));
        }
        let keep = extract_to.filter(|_| wanted.is_none_or(|w| w.contains_key(&path)));
        let got = match keep {
            Some(root) => {
                let target = root.join(&path);
                if let Some(parent) = target.parent() {
                    fs::create_dir_all(parent).map_err(io_err("restoring"))?;
                }
                let mut out = File::create_new(&target).map_err(io_err("restoring"))?;
                let mut hashing = Hashing::new(&mut entry);
                io::copy(&mut hashing, &mut out).map_err(corrupt)?;
                hashing.finish()
            }
            None => crate::files::sha256(&mut entry).map_err(corrupt)?,
        };
        seen.insert(path, got);
    }
    let manifest =
        manifest.ok_or_else(|| invalid("the manifest is missing (the archive is truncated)"))?;
    if Some(&manifest.info) != info.as_ref() {
        return Err(invalid("backup.json and the manifest disagree"));
    }
    if manifest.info.format != FORMAT {
        return Err(invalid(format!(
            "format {} is not supported by this docmeta (format {FORMAT})",
            manifest.info.format
        )));
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
    scan(archive, None, None)
}

/// [`verify_backup`] of an archive read from `archive` (a stream instead of a file).
pub fn verify_backup_from(archive: impl Read + Send + 'static) -> Result<Manifest> {
    scan_reader(archive, None, None)
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
/// into a staging directory beside `data` (a damaged archive stops here, `data` untouched); if
/// the backup uses the encrypted storage, check `builder`'s password against it; empty `data`
/// and move the staged files in; open it, running migrations when the backup is older; queue a
/// search rebuild without waiting for it; verify: a document opens, a file downloads and
/// matches its checksum, search answers. `builder` configures how the restored instance is
/// opened (storage password, config); its data directory is set to `data`.
pub fn restore(
    archives: &[PathBuf],
    data: &Path,
    password: Option<&[u8]>,
) -> Result<RestoreReport> {
    restore_to(archives, data, password, None)
}

/// [`restore`], with the database of a PostgreSQL-backed installation restored (`pg_restore`,
/// replacing what the dump holds) into the database at `database_url`; a backup of a
/// PostgreSQL-backed installation needs it, a SQLite one refuses it. Checked before anything is
/// touched.
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
    let _lock = DataLock::exclusive(data)?;
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
    let parent = data
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let staging = parent.join(format!(".docmeta-restore-{}", random_id()?));
    let result = (|| {
        fs::create_dir_all(&staging).map_err(io_err("creating the staging directory"))?;
        let manifest = scan(&tip.0, Some(&staging), None)?;
        let mut needed: BTreeMap<String, ManifestEntry> = manifest
            .files
            .iter()
            .filter(|f| f.in_base)
            .map(|f| (f.path.clone(), f.clone()))
            .collect();
        let mut next_base = manifest.info.base.clone();
        while let Some(base_id) = next_base.take() {
            let (path, _) = infos
                .iter()
                .find(|(_, i)| i.id == base_id)
                .ok_or_else(|| invalid(format!("the base backup {base_id} was not given")))?;
            let wanted = needed.clone();
            let base = scan(path, Some(&staging), Some(&wanted))?;
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
        match (staging.join(PG_DUMP).exists(), database_url) {
            (true, None) => {
                return Err(Error::InvalidInput(
                    "this backup holds a PostgreSQL database: restore it with the URL of the \
                     database to load it into (--database-url)"
                        .into(),
                ));
            }
            (false, Some(_)) => {
                return Err(Error::InvalidInput(
                    "this backup holds a SQLite database: restore it without a database URL".into(),
                ));
            }
            _ => {}
        }
        // Everything staged reaches the disk before the target is touched: one file-system
        // sync instead of an fsync per file.
        sync_tree(&staging)?;
        // A password that cannot open the restored storage is refused before anything changes.
        builder().check_storage(&staging)?;
        // Only now is the target touched.
        empty_dir(data)?;
        for entry in fs::read_dir(&staging).map_err(io_err("reading the staging directory"))? {
            let entry = entry.map_err(io_err("reading the staging directory"))?;
            if entry.file_name() == PG_DUMP {
                continue;
            }
            fs::rename(entry.path(), data.join(entry.file_name()))
                .map_err(io_err("moving the restored files into place"))?;
        }
        #[cfg(feature = "postgres")]
        if let Some(url) = database_url {
            let dump = staging.join(PG_DUMP).to_string_lossy().into_owned();
            crate::store::postgres::run_tool(
                "pg_restore",
                url,
                &[
                    "--clean",
                    "--if-exists",
                    "--no-owner",
                    "--no-privileges",
                    "--single-transaction",
                    &dump,
                ],
            )?;
        }
        File::open(data)
            .and_then(|d| d.sync_all())
            .map_err(io_err("syncing the data directory"))?;
        Ok(manifest)
    })();
    let _ = fs::remove_dir_all(&staging);
    let manifest = result?;
    drop(_lock);
    let files_restored = manifest.files.len();
    let db = builder().data_dir(data).open()?;
    let (now, _) = db.store().schema_version()?;
    let migrations = (manifest.info.schema_version + 1..=now).collect();
    let reindex_task = db.write_system(|tx| {
        tx.set_setting("search.cursor", "0")?;
        tx.enqueue_task(crate::tasks::SEARCH_REINDEX, "{}")
    })?;
    let system = db.system();
    let documents = db.read(|tx| {
        tx.optional("SELECT COUNT(*) FROM documents", &[], |r| r.int(0))
            .map(|n| u64::try_from(n.unwrap_or(0)).unwrap_or(0))
    })?;
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

/// Removes everything in `dir` but its lock file.
fn empty_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).map_err(io_err("creating the data directory"))?;
    for entry in fs::read_dir(dir).map_err(io_err("emptying the data directory"))? {
        let entry = entry.map_err(io_err("emptying the data directory"))?;
        if entry.file_name() == ".lock" {
            continue;
        }
        let path = entry.path();
        let removed = if entry.file_type().is_ok_and(|t| t.is_dir()) {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        removed.map_err(io_err("emptying the data directory"))?;
    }
    Ok(())
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
