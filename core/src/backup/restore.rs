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
use crate::model::{DocumentFileId, DocumentId, TaskId};

use super::archive::{Bounds, scan};
use super::*;

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
}

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
        let manifest = stage(archives, &staging)?;
        check_staged_database(&staging, database_url)?;
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
        .map(|d| system.document(d.id).map(|d| (d.id, d.label)))
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
