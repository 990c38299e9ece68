//! Restoring backups into a data directory: staged, verified, then swapped in by renames.
//!
//! Part of `backup` (layer 7 of `scripts/check-structure`): it may import only what `backup`
//! may (see `backup`'s module documentation).

use std::collections::{BTreeMap, HashSet};
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::kernel::{DataLock, Docmeta};
use crate::model::{DocumentFileId, DocumentId};

use super::archive::{Bounds, Extract, document_key, scan};
use super::*;

/// Restores `archives` into the data directory `data` (spec 8.1 item 4). `archives` is one full
/// backup, or an incremental backup with the backups it builds on, in any order.
///
/// Order: refuse if any docmeta has `data` open (its lock file); read and verify every archive
/// into a staging directory beside `data` (same file system; `0700`, files `0600`), each entry
/// bounded by its declared size; the database first, checked as soon as it is written
/// (SQLite: `PRAGMA integrity_check` and a schema version not newer than this build's), then
/// only the document files its records name (an entry no record names, or outside the layout
/// of a backup, is refused before a byte of it is written), and nothing before the free space
/// beside `data` was found to hold it with 16 MiB to spare (else [`Error::StorageFull`]); if
/// the backup uses the encrypted
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
    restore_to_storage(archives, data, password, database_url, None)
}

/// [`restore_to`], with the document files written to the storage at `file_storage`
/// (`s3://bucket/prefix`) instead of where the backup's `config.yml` says
/// (`documents_file_storage_location`; the server's `--file-storage`).
///
/// When the files' storage is not the data directory (a bucket), the archived files are
/// written to it as they were archived (MENC stays MENC) after the staged database and the
/// storage password have been checked, and before the restored instance is opened and
/// verified (the file it downloads comes from the bucket). Their names are unique, so this
/// never replaces another file's bytes; a restore that fails after that step leaves them in
/// the bucket, unreferenced.
pub fn restore_to_storage(
    archives: &[PathBuf],
    data: &Path,
    password: Option<&[u8]>,
    database_url: Option<&str>,
    file_storage: Option<&str>,
) -> Result<RestoreReport> {
    let target = Target {
        data,
        password,
        database_url,
        file_storage,
    };
    restore_with(archives, &target, &|dir| fs4::available_space(dir))
}

/// Where and how a restore writes (the arguments of [`restore_to_storage`]).
struct Target<'a> {
    data: &'a Path,
    password: Option<&'a [u8]>,
    database_url: Option<&'a str>,
    file_storage: Option<&'a str>,
}

/// Room a restore keeps free beyond what the archives declare, for what opening and verifying
/// the restored directory writes (the database's write-ahead log, the first search segments).
pub(super) const HEADROOM: u64 = 16 << 20;

/// [`restore_to_storage`], with the free space beside the target measured by `free_space` (the
/// file system's, `statvfs`, outside tests).
fn restore_with(
    archives: &[PathBuf],
    target: &Target<'_>,
    free_space: &dyn Fn(&Path) -> io::Result<u64>,
) -> Result<RestoreReport> {
    let Target {
        data,
        password,
        database_url,
        file_storage,
    } = *target;
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
        let b = match file_storage {
            Some(location) => b.file_storage_location(location),
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
        let check_database = |path: &Path| check_database_entry(path, database_url);
        let room = |bytes: u64| room_for(bytes, &staging, free_space);
        let manifest = stage(archives, &staging, &check_database, &room)?;
        // Everything staged reaches the disk before the target is touched: one file-system
        // sync instead of an fsync per file.
        sync_tree(&staging)?;
        // A password that cannot open the restored storage is refused before anything changes.
        builder().check_storage(&staging)?;
        // Document files kept outside the data directory (a bucket) go back there.
        builder().restore_document_files(&staging)?;
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
        replace_dir(&staging, data, &previous)?;
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
/// its bases, into `staging`: the database first, checked by `check_database` as soon as it is
/// written; then only the document files its records name (any other is refused before a
/// byte of it is written), each archive's entries only after `room` found space for them.
/// Returns the newest backup's manifest.
fn stage(
    archives: &[PathBuf],
    staging: &Path,
    check_database: &dyn Fn(&Path) -> Result<crate::store::DatabaseDump>,
    room: &dyn Fn(u64) -> Result<()>,
) -> Result<Manifest> {
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
    let mut newest = Extract {
        root: staging,
        wanted: None,
        referenced: None,
        check_database,
        room,
    };
    let manifest = extract(&tip.0, &tip.1, &mut newest)?;
    let referenced = newest
        .referenced
        .ok_or_else(|| invalid("it holds no database (db.sqlite3, or db.pgdump for PostgreSQL)"))?;
    let mut needed: BTreeMap<String, ManifestEntry> = manifest
        .files
        .iter()
        .filter(|f| f.in_base)
        .map(|f| (f.path.clone(), f.clone()))
        .collect();
    // What the bases provide is the newest database's too: only files its records name.
    for path in needed.keys() {
        if document_key(path).is_none_or(|key| !referenced.contains(&key)) {
            return Err(unreferenced_in_base(path));
        }
    }
    let referenced = Some(referenced);
    let mut next_base = manifest.info.base.clone();
    while let Some(base_id) = next_base.take() {
        let (path, info) = infos
            .iter()
            .find(|(_, i)| i.id == base_id)
            .ok_or_else(|| invalid(format!("the base backup {base_id} was not given")))?;
        let wanted = needed.clone();
        let mut from_base = Extract {
            root: staging,
            wanted: Some(&wanted),
            referenced: referenced.clone(),
            check_database,
            room,
        };
        let base = extract(path, info, &mut from_base)?;
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

/// Extracts one archive as `extract` says, never writing more than the archive declares for an
/// entry.
fn extract(archive: &Path, info: &BackupInfo, extract: &mut Extract<'_>) -> Result<Manifest> {
    if info.format >= 2 {
        return scan(archive, Some(extract), None);
    }
    // A format-1 archive declares its sizes only in its manifest, at the end: a first pass
    // verifies the whole archive writing nothing, then its sizes bound the extraction.
    let verified = scan(archive, None, None)?;
    let bounds: Bounds = verified
        .files
        .iter()
        .filter(|f| !f.in_base)
        .map(|f| (f.path.clone(), f.size))
        .collect();
    scan(archive, Some(extract), Some(&bounds))
}

/// A file an incremental backup leaves to its base that the newest database does not name.
fn unreferenced_in_base(path: &str) -> Error {
    invalid(format!(
        "its manifest leaves {path} to a base backup, but no record of its database names it"
    ))
}

/// Checks the database entry as soon as it is written to the staging directory, before any
/// document file is: the right kind for `database_url`, readable, intact, and not from a newer
/// docmeta. Returns its schema version and the document files its records name.
fn check_database_entry(
    path: &Path,
    database_url: Option<&str>,
) -> Result<crate::store::DatabaseDump> {
    let dump = path.file_name().is_some_and(|n| n == PG_DUMP);
    match (dump, database_url) {
        (true, None) => Err(Error::InvalidInput(
            "this backup holds a PostgreSQL database: restore it with the URL of the database \
             to load it into (--database-url)"
                .into(),
        )),
        (false, Some(_)) => Err(Error::InvalidInput(
            "this backup holds a SQLite database: restore it without a database URL".into(),
        )),
        (false, None) => crate::store::sqlite::check_database_file(path),
        #[cfg(feature = "postgres")]
        (true, Some(_)) => crate::store::postgres::check_dump(path),
        #[cfg(not(feature = "postgres"))]
        (true, Some(_)) => Err(Error::InvalidInput(
            "this docmeta was built without PostgreSQL support (cargo feature `postgres`)".into(),
        )),
    }
}

/// Refuses to write `bytes` more into `staging` unless they fit, with [`HEADROOM`] to spare,
/// in the space `free_space` finds there: a restore that would fill the disk stops before it
/// writes, with a [`Error::StorageFull`] and the target untouched.
fn room_for(
    bytes: u64,
    staging: &Path,
    free_space: &dyn Fn(&Path) -> io::Result<u64>,
) -> Result<()> {
    let free = free_space(staging)
        .map_err(|e| Error::storage("measuring the free space for the restore", e))?;
    let needed = bytes.saturating_add(HEADROOM);
    if needed > free {
        return Err(Error::storage_full(
            "restoring the backup",
            format!(
                "it needs {} more in {} ({} of files and {} to open them) but {} are free; \
                 nothing was replaced",
                size(needed),
                staging
                    .parent()
                    .map_or_else(|| staging.display(), |p| p.display()),
                size(bytes),
                size(HEADROOM),
                size(free)
            ),
        ));
    }
    Ok(())
}

/// `bytes` for people: `1.5 GiB`, `12.0 MiB`, `800 bytes`.
fn size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, scale) in UNITS {
        if bytes >= scale {
            return format!("{:.1} {unit}", bytes as f64 / scale as f64);
        }
    }
    format!("{bytes} bytes")
}

/// Opens the staged directory as the restored instance (running migrations), queues the search
/// rebuild and runs the spec's verification (8.1 item 4); closes it again before returning.
fn open_and_verify(builder: crate::Builder, manifest: Manifest) -> Result<RestoreReport> {
    let files_restored = manifest.files.len();
    let db = builder.open()?;
    // The restored event log against the checkpoint made with the backup: nothing in it was
    // altered since, up to that checkpoint.
    let audit = match &manifest.checkpoint {
        Some(checkpoint) => {
            let report = db.verify_events(Some(checkpoint), |_, _| {})?;
            if let Some(f) = &report.failure {
                return Err(invalid(format!(
                    "the restored event log does not match the backup's checkpoint: {}",
                    f.reason
                )));
            }
            Some(report)
        }
        None => None,
    };
    let (now, _) = db.store().schema_version()?;
    // The versions both stores number their migrations with (not every number is one).
    let migrations = crate::store::sqlite::MIGRATIONS
        .iter()
        .map(|(version, _)| *version)
        .filter(|v| *v > manifest.info.schema_version && *v <= now)
        .collect();
    // The rebuild is for the restored directory's index (a fresh `search/INSTANCE`, renamed
    // into place with the directory). Search work the backup's database still had queued was
    // for indexes of the database it replaces: it goes to this index too, before the rebuild.
    let reindex_task = db.write_system(|tx| {
        tx.set_setting("search.cursor", "0")?;
        tx.retarget_open_tasks(db.search_index_id())?;
        tx.enqueue_targeted_task(crate::model::SEARCH_REINDEX, "{}", db.search_index_id())
    })?;
    let system = db.system();
    let documents = db.read(|tx| tx.count_documents())?;
    let first = db.read(|tx| tx.documents(None, DocumentId(0), 1))?;
    let document_opened = first
        .first()
        .map(|d| {
            system
                .document(d.id)
                .map(|v| (v.document.id, v.document.label))
        })
        .transpose()?;
    // The verification downloads a file the backup found intact: a damaged one is reported
    // (the manifest's `damaged`), never taken for good nor allowed to fail the restore.
    let damaged: HashSet<&str> = manifest.damaged.iter().map(|d| d.path.as_str()).collect();
    let mut some_file = None;
    let mut after = DocumentFileId(0);
    while some_file.is_none() {
        let batch = db.read(|tx| tx.all_document_files(after, 100, None))?;
        let Some(last) = batch.last() else {
            break;
        };
        after = last.file.id;
        some_file = batch
            .into_iter()
            .find(|f| !damaged.contains(format!("{STORAGE}/{}", f.storage_name).as_str()));
    }
    let file_checked = some_file
        .as_ref()
        .map(|f| {
            system
                .read_file(f.file.id)
                .map(|bytes| (f.file.id, bytes.len() as u64))
        })
        .transpose()?;
    let search_answers = system
        .search_documents("*", crate::model::PageRequest::new(1, 1))
        .is_ok();
    Ok(RestoreReport {
        manifest,
        files_restored,
        migrations,
        documents,
        document_opened,
        file_checked,
        search_answers,
        reindex_task,
        audit,
    })
}

/// Puts the staged directory in the place of `data`: `data` is renamed aside to `previous`,
/// `staged` renamed to `data`, and `previous` removed only once the new directory is in place
/// (if the second rename fails, `previous` is renamed back). Both are in one parent directory,
/// so each step is one atomic rename.
///
/// The restored directory stays owner-only (`0700`, as the staging directory was made): the
/// old directory's mode is not carried over, since every open makes a data directory
/// owner-only again anyway (see `owner_only`).
fn replace_dir(staged: &Path, data: &Path, previous: &Path) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use std::io::Read;

    fn open(dir: &Path) -> Docmeta {
        let config = crate::Config {
            password_hash_memory_kib: 64,
            password_hash_iterations: 1,
            ..crate::Config::default()
        };
        Docmeta::builder()
            .data_dir(dir)
            .config(config)
            .open()
            .expect("open")
    }

    /// A backup (into `dir`) of an installation whose one document holds a `size`-byte file.
    fn backup_with_file(dir: &Path, size: u64) -> PathBuf {
        let db = open(&dir.join("source"));
        let s = db.system();
        let t = s.create_document_type("Letter").expect("type");
        let d = s
            .create_document(t.id, "A letter", &[])
            .expect("document")
            .document;
        s.add_file(d.id, "big.bin", &mut io::repeat(7).take(size))
            .expect("file");
        let archive = dir.join("backup.tar.zst");
        db.backup(&archive, None, |_, _| {}).expect("backup");
        archive
    }

    fn target(data: &Path) -> Target<'_> {
        Target {
            data,
            password: None,
            database_url: None,
            file_storage: None,
        }
    }

    /// Bytes of the document files under `dir` (the staging directory's).
    fn document_bytes(dir: &Path) -> u64 {
        let Ok(entries) = fs::read_dir(dir) else {
            return 0;
        };
        entries
            .flatten()
            .map(|e| match e.metadata() {
                Ok(m) if m.is_dir() => document_bytes(&e.path()),
                Ok(m) => m.len(),
                Err(_) => 0,
            })
            .sum()
    }

    #[test]
    fn the_free_space_is_measured_before_the_files_that_need_it_are_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let archive = backup_with_file(dir.path(), 4 << 20);
        let data = dir.path().join("restored");
        // What was staged each time the space was measured.
        let calls = std::sync::Mutex::new(Vec::new());
        // Room for the database and system files, not for the 4 MiB document file.
        let free = |staging: &Path| {
            let staged = document_bytes(&staging.join(STORAGE));
            calls.lock().expect("calls").push(staged);
            Ok(HEADROOM + (2 << 20))
        };
        let err = restore_with(&[archive], &target(&data), &free).expect_err("no room");
        assert_eq!(err.kind(), ErrorKind::StorageFull, "{err}");
        assert!(err.to_string().contains("4.0 MiB of files"), "{err}");
        assert_eq!(
            *calls.lock().expect("calls"),
            vec![0, 0],
            "measured before the database and before the document files, none of them written"
        );
        assert!(!data.exists(), "nothing left where nothing was");
    }

    /// A tmpfs of `size` on a fresh directory, unmounted on drop; `None` (saying why) where
    /// this process may not mount.
    struct Tmpfs(PathBuf, #[allow(dead_code)] tempfile::TempDir);

    impl Tmpfs {
        fn mount(size: &str) -> Option<Tmpfs> {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("mnt");
            fs::create_dir(&path).expect("mount point");
            let out = std::process::Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
                .arg(&path)
                .output();
            match out {
                Ok(o) if o.status.success() => Some(Tmpfs(path, dir)),
                other => {
                    let why = match other {
                        Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_owned(),
                        Err(e) => e.to_string(),
                    };
                    assert!(
                        std::env::var("DOCMETA_REQUIRE_FAULTS").map_or(true, |v| v != "1"),
                        "DOCMETA_REQUIRE_FAULTS=1 but a tmpfs cannot be mounted: {why}"
                    );
                    eprintln!(
                        "skipped: cannot mount a tmpfs to fill a disk ({why}); needs root or \
                         CAP_SYS_ADMIN"
                    );
                    None
                }
            }
        }
    }

    impl Drop for Tmpfs {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(&self.0)
                .status();
        }
    }

    #[test]
    fn a_disk_that_fills_while_restoring_fails_cleanly() {
        let Some(disk) = Tmpfs::mount("24m") else {
            return;
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let archive = backup_with_file(dir.path(), 32 << 20);
        let data = disk.0.join("live");
        {
            let s = open(&data).system();
            let t = s.create_document_type("Memo").expect("type");
            s.create_document(t.id, "Still here", &[])
                .expect("document");
        }
        // The space is measured as plentiful (as when another writer fills the disk after the
        // check): the write runs out instead, and the restore fails as cleanly.
        let plenty = |_: &Path| Ok(u64::MAX / 2);
        let err = restore_with(&[archive], &target(&data), &plenty).expect_err("disk full");
        assert_eq!(err.kind(), ErrorKind::StorageFull, "{err}");
        let db = open(&data);
        let docs = db
            .read(|tx| tx.documents(None, DocumentId(0), 10))
            .expect("documents");
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].label, "Still here");
        drop(db);
        let left: Vec<_> = fs::read_dir(&disk.0)
            .expect("read_dir")
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| n != "live")
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}
