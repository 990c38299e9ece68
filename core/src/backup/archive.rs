//! The archive format: writing entries (`append`), reading the head (`read_info`), and reading
//! a whole archive with every path, size and checksum checked (`scan`, `verify_backup`).
//!
//! Part of `backup` (layer 7 of `scripts/check-structure`): it may import only what `backup`
//! may (see `backup`'s module documentation).

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::files::Hashing;

use super::*;

pub(super) fn append(
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

pub(super) fn append_json(
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

/// Sizes entries may not exceed, by path.
pub(super) type Bounds = BTreeMap<String, u64>;

/// The storage names the restored database's records name, each as the 128-bit number its 32
/// hex digits spell: the only document files a restore writes (a million take 16 MB).
pub(super) type Referenced = HashSet<u128>;

/// The number a document file's archive path (`document_file_storage/ab/cdef…`) spells, or
/// `None` for any other path.
pub(super) fn document_key(path: &str) -> Option<u128> {
    let name = path.strip_prefix("document_file_storage/")?;
    check_name(name).ok()?;
    u128::from_str_radix(&name.replace('/', ""), 16).ok()
}

/// The most a system file (`config.yml`, `system/SECRET_KEY`, `system/storage_key`) may hold:
/// docmeta writes a few kilobytes at most, so anything larger is not a backup's.
pub(super) const SYSTEM_FILE_MAX: u64 = 1 << 20;

/// How [`scan`] writes what it reads, and what a restore checks before any byte is written.
pub(super) struct Extract<'a> {
    /// Where the entries are written.
    pub root: &'a Path,
    /// Only these paths are written (the files an incremental backup leaves to this base).
    pub wanted: Option<&'a BTreeMap<String, ManifestEntry>>,
    /// The document files the restored database names: known before a base is read (from the
    /// newest backup's database), filled in when this archive's database has been written and
    /// checked. A document file no record names is refused, never written.
    pub referenced: Option<Referenced>,
    /// Checks the database entry once it is written (intact, not newer than this build, the
    /// right kind) and returns what it holds.
    pub check_database: &'a dyn Fn(&Path) -> Result<crate::store::DatabaseDump>,
    /// Refuses, before they are written, entries that need more bytes than are free beside the
    /// target.
    pub room: &'a dyn Fn(u64) -> Result<()>,
}

impl Extract<'_> {
    /// Whether `path` is written (all of them, or the ones `wanted`).
    fn keeps(&self, path: &str) -> bool {
        self.wanted.is_none_or(|w| w.contains_key(path))
    }

    /// Once the database's records are known: every document file `declared` for writing must
    /// be one of them (refused by its declaration, before a byte of it is read), and together
    /// they must fit in the free space.
    fn check_documents(&self, declared: &Bounds) -> Result<()> {
        let Some(names) = &self.referenced else {
            return Ok(());
        };
        let mut bytes = 0u64;
        for (path, size) in declared.iter().filter(|(p, _)| self.keeps(p)) {
            if let Some(key) = document_key(path) {
                if !names.contains(&key) {
                    return Err(unreferenced(path));
                }
                bytes = bytes.saturating_add(*size);
            }
        }
        (self.room)(bytes)
    }
}

/// The refusal of a document file no record of the backup's database names.
fn unreferenced(path: &str) -> Error {
    invalid(format!(
        "refusing {path}: no record of the backup's database names this document file (a \
         backup holds only the files its database references)"
    ))
}

/// Refuses a system file (`config.yml`, `system/…`) larger than [`SYSTEM_FILE_MAX`].
fn check_system_file(path: &str, size: u64) -> Result<()> {
    if SYSTEM_FILES.contains(&path) && size > SYSTEM_FILE_MAX {
        return Err(invalid(format!(
            "{path} holds {size} bytes; a backup's {path} is at most {SYSTEM_FILE_MAX}"
        )));
    }
    Ok(())
}

/// Reads a whole archive, checking every entry's path and every checksum against the manifest
/// (`backup verify`). With `extract`, also writes the entries (see [`Extract`]). Every entry is
/// bounded by its declared size: format 2 declares them in `contents.json`; for a format-1
/// archive `bounds` gives them (from its manifest, verified by an earlier pass). Returns the
/// manifest.
pub(super) fn scan(
    archive: &Path,
    extract: Option<&mut Extract<'_>>,
    bounds: Option<&Bounds>,
) -> Result<Manifest> {
    let file = File::open(archive).map_err(io_err("opening the backup archive"))?;
    scan_reader(file, extract, bounds)
}

fn scan_reader(
    archive: impl Read + Send + 'static,
    extract: Option<&mut Extract<'_>>,
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
    let scanned = scan_entries(tar::Archive::new(reader), extract, bounds);
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
    mut extract: Option<&mut Extract<'_>>,
    bounds: Option<&Bounds>,
) -> Result<Manifest> {
    let mut seen: BTreeMap<String, (u64, String)> = BTreeMap::new();
    let mut info: Option<BackupInfo> = None;
    let mut contents: Option<Bounds> = None;
    let mut manifest: Option<Manifest> = None;
    // Bytes written so far, and the most the declared sizes allow.
    let mut written = 0u64;
    let sum = |d: &Bounds| d.values().fold(0u64, |a, b| a.saturating_add(*b));
    let mut declared_total = bounds.map_or(u64::MAX, sum);
    // Whether the free space was checked for the entries other than document files, and
    // whether a database entry was written.
    let mut room_checked = false;
    let mut database_written = false;
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
                    check_system_file(&e.path, e.size)?;
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
        let declared = contents.as_ref().or(bounds);
        let limit = match declared {
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
        check_system_file(&path, claimed)?;
        // Whatever the header says, never more than the declared size (one byte over is
        // enough to refuse).
        let mut bounded = (&mut entry).take(limit.saturating_add(1));
        let keep = extract
            .as_deref_mut()
            .filter(|x| x.wanted.is_none_or(|w| w.contains_key(&path)));
        let got = match keep {
            Some(x) => {
                // Extraction always has declared sizes: format 2's contents.json, or the
                // bounds a first pass over a format-1 archive read from its manifest.
                let declared = declared.ok_or_else(|| invalid("its sizes are not declared"))?;
                if !room_checked {
                    room_checked = true;
                    let others = declared
                        .iter()
                        .filter(|(p, _)| document_key(p).is_none() && x.keeps(p))
                        .fold(0u64, |a, (_, size)| a.saturating_add(*size));
                    (x.room)(others)?;
                    if x.referenced.is_some() {
                        x.check_documents(declared)?;
                    }
                }
                if let Some(key) = document_key(&path) {
                    match &x.referenced {
                        None => {
                            return Err(invalid(format!(
                                "{path} comes before the database, whose records say which \
                                 document files a backup holds"
                            )));
                        }
                        Some(names) if !names.contains(&key) => return Err(unreferenced(&path)),
                        Some(_) => {}
                    }
                }
                let target = x.root.join(&path);
                if let Some(parent) = target.parent() {
                    create_private_dir(parent).map_err(io_err("restoring"))?;
                }
                let mut out = create_private(&target).map_err(io_err("restoring"))?;
                let mut hashing = Hashing::new(&mut bounded);
                io::copy(&mut hashing, &mut out).map_err(|e| {
                    // A full disk is the disk's, not the archive's.
                    if matches!(
                        e.kind(),
                        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
                    ) {
                        crate::files::content_error("restoring", e)
                    } else {
                        corrupt(e)
                    }
                })?;
                drop(out);
                let got = hashing.finish();
                written = written.saturating_add(got.0);
                // Each path appears once, so the per-entry bounds already cap the total; this
                // states the invariant where the bytes are written.
                if written > declared_total {
                    return Err(invalid("the archive expands beyond its declared size"));
                }
                if got.0 <= limit && (path == DB || path == PG_DUMP) {
                    if std::mem::replace(&mut database_written, true) {
                        return Err(invalid("it holds two databases"));
                    }
                    // Checked as soon as it is written: its records say which document files
                    // the rest of the archive may hold.
                    let dump = (x.check_database)(&target)?;
                    let mut names = Referenced::with_capacity(dump.storage_names.len());
                    for name in &dump.storage_names {
                        let key = document_key(&format!("{STORAGE}/{name}")).ok_or_else(|| {
                            invalid(format!(
                                "its database names the document file {name:?}, which is not \
                                 a storage name"
                            ))
                        })?;
                        names.insert(key);
                    }
                    x.referenced = Some(names);
                    x.check_documents(declared)?;
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
    scan(archive, None, None)
}

/// [`verify_backup`] of an archive read from `archive` (a stream instead of a file).
pub fn verify_backup_from(archive: impl Read + Send + 'static) -> Result<Manifest> {
    scan_reader(archive, None, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

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

    /// Extracts `archive` into `staging` with every restore check passing (a database is never
    /// reached here), as a restore of these bombs would.
    fn extract_into(archive: &Path, staging: &Path, bounds: Option<&Bounds>) -> Result<Manifest> {
        let check = |_: &Path| -> Result<crate::store::DatabaseDump> {
            Err(invalid("the bomb's database is never checked"))
        };
        let room = |_: u64| Ok(());
        let mut x = Extract {
            root: staging,
            wanted: None,
            referenced: None,
            check_database: &check,
            room: &room,
        };
        scan(archive, Some(&mut x), bounds)
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
        let err = extract_into(&archive, &staging, None).expect_err("refused");
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
        let err = extract_into(&archive, &staging, Some(&bounds)).expect_err("refused");
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
