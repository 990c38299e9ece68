//! Creating a backup (full or incremental) from a running instance.
//!
//! Part of `backup` (layer 7 of `scripts/check-structure`): it may import only what `backup`
//! may (see `backup`'s module documentation).

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::{BufReader, BufWriter};
use std::path::Path;

use chrono::Utc;

use crate::error::{Error, Result};
use crate::kernel::Docmeta;
use crate::model::{DocumentFileId, FileDamage};
use crate::store::records::StoredFile;

use super::archive::{append, append_json};
use super::*;

impl Docmeta {
    /// Backs the instance up into `out` (spec 8.1 item 3): a database snapshot taken online,
    /// `config.yml`, the system files and the document files the snapshot references. With
    /// `base` (an earlier backup of this instance), only document files the base lacks are
    /// archived (an incremental backup; restore it together with its base). `progress(done,
    /// total)` counts document files. Writers may go on meanwhile.
    ///
    /// Every document file is checked as it is archived (a plain file's archived bytes against
    /// its recorded size and SHA-256 at no extra cost; an encrypted file by reading it again
    /// through the storage, every chunk authenticated). A damaged or missing file does not fail
    /// the backup: it is listed in the manifest's `damaged` (a missing one is not archived, a
    /// damaged one is archived as found), so the backup of every other file is still made and
    /// the operator is told ([`Manifest::is_intact`]); the restore reports them and never uses
    /// them for its verification.
    ///
    /// ```
    /// use docmeta_core::{Docmeta, restore};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let data = dir.path().join("data");
    /// let archive = dir.path().join("backups/full.tar.zst");
    /// {
    ///     let db = Docmeta::open(&data)?;
    ///     db.system().create_document_type("Invoice")?;
    ///     let report = db.backup(&archive, None, |_done, _total| {})?;
    ///     assert!(report.manifest.is_intact());
    /// } // the handle is closed: a restore replaces a data directory nobody has open
    ///
    /// // Verified entry by entry and staged beside `data`, then swapped in.
    /// let restored = restore(&[archive], &data, None)?;
    /// assert_eq!(restored.documents, 0);
    /// assert!(restored.audit.is_some_and(|a| a.is_intact()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
        create_private_dir(dir).map_err(io_err("creating the backup directory"))?;
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
            // Before the snapshot, which then holds every event the checkpoint covers.
            let checkpoint = self.audit_checkpoint()?;
            let dump = self.store().dump_for_backup(&snapshot)?;
            let report = self.write_archive(
                &data,
                (&snapshot, &dump, checkpoint),
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
        // The database snapshot, what it holds, and the event log's checkpoint made before it.
        (snapshot, dump, checkpoint): (
            &Path,
            &crate::store::DatabaseDump,
            crate::model::Checkpoint,
        ),
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
        // The files as stored (MENC stays MENC), wherever the storage keeps them: the data
        // directory or a bucket.
        let storage = self.inner.files.clone();
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
        // The records the files are checked against: the live ones (a file deleted since the
        // snapshot is archived from `.deleted/` unchecked; it is gone from the database anyway).
        let records = self.stored_files_by_name()?;
        let mut damaged = Vec::new();
        let mut document_sizes = Vec::with_capacity(stored.len());
        for name in stored {
            let path = format!("{STORAGE}/{name}");
            if in_base.contains_key(path.as_str()) {
                document_sizes.push(Planned::InBase);
                continue;
            }
            let Some(size) = storage.kept_len(name)? else {
                // Recorded as missing instead of failing the backup of every other file.
                damaged.push(DamagedEntry {
                    document_file_id: records.get(name.as_str()).map(|r| r.file.id.0),
                    path,
                    damage: FileDamage::Missing,
                });
                document_sizes.push(Planned::Missing);
                continue;
            };
            declared.push(DeclaredEntry { path, size });
            document_sizes.push(Planned::Archive(size));
        }
        // What the base found damaged stays damaged in the chain.
        if let Some(base) = base {
            let referenced: std::collections::BTreeSet<String> =
                stored.iter().map(|n| format!("{STORAGE}/{n}")).collect();
            damaged.extend(
                (base.damaged.iter())
                    .filter(|d| {
                        referenced.contains(&d.path) && in_base.contains_key(d.path.as_str())
                    })
                    .cloned(),
            );
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
                Planned::Archive(size) => {
                    let f = storage.open_kept(name)?;
                    let (size, sha256) = append(&mut tar, &path, size, f)?;
                    if let Some(record) = records.get(name.as_str())
                        && let Some(damage) = self.damage_of(record, (size, &sha256))?
                    {
                        damaged.push(DamagedEntry {
                            path: path.clone(),
                            document_file_id: Some(record.file.id.0),
                            damage,
                        });
                    }
                    files.push(ManifestEntry {
                        path,
                        size,
                        sha256,
                        in_base: false,
                    });
                    archived += 1;
                }
                // No size was taken: the base holds it.
                Planned::InBase => {
                    files.extend(in_base.get(path.as_str()).map(|entry| ManifestEntry {
                        in_base: true,
                        ..(*entry).clone()
                    }))
                }
                Planned::Missing => {}
            }
            progress(n as u64 + 1, total);
        }
        let manifest = Manifest {
            info,
            files,
            damaged,
            checkpoint: Some(checkpoint),
        };
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

/// What the backup does with one document file the snapshot references.
enum Planned {
    /// Archive it; its size when the backup started.
    Archive(u64),
    /// The base backup holds it.
    InBase,
    /// Nothing is stored under its name: recorded as damaged.
    Missing,
}

impl Docmeta {
    /// The live records of the stored files, by storage name.
    fn stored_files_by_name(&self) -> Result<HashMap<String, StoredFile>> {
        let mut out = HashMap::new();
        let mut after = DocumentFileId(0);
        loop {
            let batch = self.read(|tx| tx.all_document_files(after, 1000, None))?;
            let Some(last) = batch.last() else {
                return Ok(out);
            };
            after = last.file.id;
            out.extend(batch.into_iter().map(|f| (f.storage_name.clone(), f)));
        }
    }

    /// How the archived bytes of `record` (their size and SHA-256) differ from the record. A
    /// plain file's archived bytes are its content, so they are compared as they are; an
    /// encrypted file's are read again through the storage, every chunk authenticated (and
    /// left unchecked by an instance without the storage password).
    fn damage_of(&self, record: &StoredFile, archived: (u64, &str)) -> Result<Option<FileDamage>> {
        if record.encrypted {
            if !self.inner.files.encrypts() {
                return Ok(None);
            }
            return Ok(match self.check_stored_file(record)?.1 {
                // Archived a moment ago: deleted since (its bytes were archived from
                // `.deleted/` or before they moved), not damaged.
                Some(FileDamage::Missing) => None,
                damage => damage,
            });
        }
        let (size, sha256) = archived;
        Ok(if size != record.file.size {
            Some(FileDamage::WrongSize {
                expected: record.file.size,
                found: size,
            })
        } else if sha256 != record.file.checksum {
            Some(FileDamage::WrongChecksum {
                expected: record.file.checksum.clone(),
                found: sha256.to_owned(),
            })
        } else {
            None
        })
    }
}
