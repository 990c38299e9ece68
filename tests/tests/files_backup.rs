//! Document files, the encrypted storage (MENC), backup and restore (spec 8.1).

#[path = "support/archive.rs"]
mod archive;

use std::io::Read;
use std::path::{Path, PathBuf};

use docmeta_core::StorageBackend;
use docmeta_core::{
    Config, Docmeta, DocumentId, DocumentQuery, Error, MetadataTypeInput, ObjectKind, ObjectRef,
    PageRequest, Permission, Result,
};
use docmeta_core::{prune_backups, restore, verify_backup};

fn config(encrypted: bool) -> Config {
    Config {
        password_hash_memory_kib: 64,
        password_hash_iterations: 1,
        storage_kdf_memory_kib: 64,
        storage_kdf_iterations: 1,
        documents_file_storage_backend: if encrypted {
            StorageBackend::Encrypted
        } else {
            StorageBackend::Plain
        },
        ..Config::default()
    }
}

/// Writes `config` as the directory's config.yml, so every later open (and a restore) uses it.
fn write_config(dir: &Path, encrypted: bool) {
    std::fs::create_dir_all(dir).expect("dir");
    let text = format!(
        "password_hash_memory_kib: 64\npassword_hash_iterations: 1\nstorage_kdf_memory_kib: 64\nstorage_kdf_iterations: 1\ndocuments_file_storage_backend: {}\n",
        if encrypted { "encrypted" } else { "plain" }
    );
    std::fs::write(dir.join("config.yml"), text).expect("config");
}

fn open(dir: &Path, password: Option<&str>) -> Result<Docmeta> {
    let b = Docmeta::builder().data_dir(dir);
    match password {
        Some(p) => b.storage_password(p).open(),
        None => b.open(),
    }
}

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// A small world: two document types, values, a user with an ACL, files.
fn populate(db: &Docmeta) -> Result<Vec<(DocumentId, Vec<u8>)>> {
    let admin = db.system();
    let invoice = admin.create_document_type("Invoice")?;
    let number = admin.create_metadata_type(MetadataTypeInput::new("number", "Number"))?;
    admin.associate(invoice.id, number.id, false)?;
    let user = admin.create_user("ann", "a long password", false)?.id;
    let group = admin.create_group("G")?.id;
    let role = admin.create_role("R")?.id;
    admin.set_group_member(group, user, true)?;
    admin.set_role_group(role, group, true)?;
    let mut out = Vec::new();
    for i in 0..4u8 {
        let d = admin
            .create_document(
                invoice.id,
                &format!("Invoice {i}"),
                &[(number.id, &format!("INV-{i}"))],
            )?
            .document;
        let content = bytes(100_000 * usize::from(i) + 7, i);
        admin.add_file(d.id, &format!("scan-{i}.pdf"), &mut &content[..])?;
        out.push((d.id, content));
    }
    admin.grant(
        Permission::DocumentView,
        role,
        ObjectRef::new(ObjectKind::DOCUMENT, out[0].0.0),
    )?;
    Ok(out)
}

/// Every row of every table but the ones a restore legitimately changes (tasks, settings).
fn dump(dir: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(dir.join("db.sqlite3")).expect("db");
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('tasks', 'settings') ORDER BY name")
        .expect("tables")
        .query_map([], |r| r.get(0))
        .expect("tables")
        .collect::<std::result::Result<_, _>>()
        .expect("tables");
    let mut out = Vec::new();
    for t in tables {
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM \"{t}\" ORDER BY 1"))
            .expect("select");
        let n = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                (0..n)
                    .map(|i| {
                        r.get::<_, rusqlite::types::Value>(i)
                            .map(|v| format!("{v:?}"))
                    })
                    .collect::<std::result::Result<Vec<_>, _>>()
            })
            .expect("rows");
        for row in rows {
            let line = format!("{t}: {}", row.expect("row").join(", "));
            // The restore's queued reindex task advances the tasks sequence; nothing else.
            if !line.starts_with("sqlite_sequence: Text(\"tasks\")") {
                out.push(line);
            }
        }
    }
    out
}

#[test]
fn files_upload_download_permissions_and_deletion() -> Result<()> {
    let db = Docmeta::builder().config(config(false)).open()?;
    let files = populate(&db)?;
    let admin = db.system();
    let (doc, content) = &files[1];
    let listed = admin.files(*doc)?;
    assert_eq!(listed.len(), 1);
    let f = &listed[0];
    assert_eq!(
        (f.filename.as_str(), f.size, f.mimetype.as_str()),
        ("scan-1.pdf", content.len() as u64, "application/pdf")
    );
    assert_eq!(&admin.read_file(f.id)?, content);
    // ann sees document 0 only: its files inherit from it.
    let ann_id = (admin.users()?.into_iter())
        .find(|u| u.username == "ann")
        .expect("ann")
        .id;
    let ann = db.session(ann_id);
    assert_eq!(ann.files(files[0].0)?.len(), 1);
    assert!(matches!(ann.files(*doc), Err(Error::NotFound(_))));
    assert!(matches!(ann.open_file(f.id), Err(Error::NotFound(_))));
    let own = ann.files(files[0].0)?[0].id;
    assert!(matches!(
        ann.add_file(files[0].0, "x.txt", &mut &b"x"[..]),
        Err(Error::PermissionDenied(_))
    ));
    assert!(matches!(
        ann.delete_file(own),
        Err(Error::PermissionDenied(_))
    ));
    // User file names never become paths.
    let evil = admin.add_file(*doc, "../../etc/passwd", &mut &b"root"[..])?;
    assert_eq!(evil.filename, "passwd");
    admin.delete_file(evil.id)?;
    assert!(matches!(admin.file(evil.id), Err(Error::NotFound(_))));
    admin.delete_document(*doc)?;
    assert!(matches!(admin.file(f.id), Err(Error::NotFound(_))));
    let names: Vec<String> = db
        .events(&docmeta_core::EventQuery::default())?
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(names.iter().any(|n| n == "documents.document_file_created"));
    assert!(names.iter().any(|n| n == "documents.document_file_deleted"));
    Ok(())
}

#[test]
fn a_damaged_stored_file_is_never_served_as_whole() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    write_config(dir.path(), false);
    let db = open(dir.path(), None)?;
    let files = populate(&db)?;
    let f = db.system().files(files[2].0)?.remove(0);
    let stored = find_stored(dir.path());
    for path in &stored {
        let mut b = std::fs::read(path).expect("read");
        if b.len() as u64 == f.size {
            b[1000] ^= 1;
            std::fs::write(path, b).expect("write");
        }
    }
    assert!(matches!(
        db.system().read_file(f.id),
        Err(Error::Storage { .. })
    ));
    Ok(())
}

fn find_stored(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let root = dir.join("document_file_storage");
    for fan in std::fs::read_dir(&root).expect("storage").flatten() {
        let name = fan.file_name().to_string_lossy().to_string();
        if name.starts_with('.') {
            continue;
        }
        for f in std::fs::read_dir(fan.path()).expect("fan").flatten() {
            out.push(f.path());
        }
    }
    out
}

#[test]
fn encrypted_storage_writes_menc_and_refuses_a_wrong_password() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    write_config(dir.path(), true);
    assert!(
        matches!(open(dir.path(), None), Err(Error::InvalidInput(_))),
        "no password"
    );
    let db = open(dir.path(), Some("correct horse"))?;
    let files = populate(&db)?;
    for path in find_stored(dir.path()) {
        let head = std::fs::read(&path).expect("read");
        assert!(head.starts_with(b"MENC"), "{}", path.display());
    }
    let f = db.system().files(files[3].0)?.remove(0);
    assert_eq!(db.system().read_file(f.id)?, files[3].1);
    drop(db);
    assert!(matches!(
        open(dir.path(), Some("wrong")),
        Err(Error::Decryption(_))
    ));
    // Plain backend over encrypted files: a clear Decryption error, never ciphertext.
    write_config(dir.path(), false);
    let plain = open(dir.path(), None)?;
    assert!(matches!(
        plain.system().read_file(f.id),
        Err(Error::Decryption(_))
    ));
    Ok(())
}

#[test]
fn storage_converts_both_ways_and_resumes() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    write_config(dir.path(), false);
    let db = open(dir.path(), None)?;
    let files = populate(&db)?;
    drop(db);
    write_config(dir.path(), true);
    let db = open(dir.path(), Some("pw"))?;
    // Plain files stay readable under the encrypted backend until converted.
    let f = db.system().files(files[1].0)?.remove(0);
    assert_eq!(db.system().read_file(f.id)?, files[1].1);
    // Interrupted after two files (the progress callback stops it), then resumed.
    let mut seen = 0;
    let stopped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        db.convert_storage(true, |done, _| {
            seen = done;
            assert!(done < 2, "interrupt");
        })
    }));
    assert!(stopped.is_err() && seen == 2);
    assert_eq!(
        db.convert_storage(true, |_, _| {})?,
        2,
        "the rest, not again"
    );
    assert!(
        find_stored(dir.path())
            .iter()
            .all(|p| std::fs::read(p).expect("read").starts_with(b"MENC"))
    );
    for (doc, content) in &files {
        let f = db.system().files(*doc)?.remove(0);
        assert_eq!(&db.system().read_file(f.id)?, content);
    }
    assert_eq!(db.convert_storage(false, |_, _| {})?, 4);
    assert!(
        find_stored(dir.path())
            .iter()
            .all(|p| !std::fs::read(p).expect("read").starts_with(b"MENC"))
    );
    Ok(())
}

#[test]
fn backup_restore_round_trip_is_identical() -> Result<()> {
    let src = tempfile::tempdir().expect("tempdir");
    write_config(src.path(), false);
    let db = open(src.path(), None)?;
    let files = populate(&db)?;
    let out = tempfile::tempdir().expect("out");
    let archive = out.path().join("full.tar.zst");
    let report = db.backup(&archive, None, |_, _| {})?;
    assert_eq!(report.files_archived, 4);
    let beside: Vec<_> = std::fs::read_dir(out.path())
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(beside, ["full.tar.zst"], "the backup left files behind");
    drop(db);
    let manifest = verify_backup(&archive)?;
    assert_eq!(
        manifest.info.schema_version,
        docmeta_core::store::SCHEMA_VERSION
    );
    assert!(manifest.files.iter().all(|f| !f.path.starts_with("search")));
    let target = out.path().join("restored");
    let r = restore(&[archive], &target, None)?;
    assert_eq!(r.documents, 4);
    assert!(r.file_checked.is_some() && r.search_answers);
    assert_eq!(
        dump(src.path()),
        dump(&target),
        "every record, event and ACL"
    );
    let db = open(&target, None)?;
    for (doc, content) in &files {
        let f = db.system().files(*doc)?.remove(0);
        assert_eq!(&db.system().read_file(f.id)?, content, "file bytes");
    }
    // The queued rebuild makes search find the restored documents.
    db.run_pending_tasks()?;
    assert_eq!(
        db.system()
            .search_documents("invoice", PageRequest::new(1, 10))?
            .count,
        4
    );
    Ok(())
}

#[test]
fn damaged_archives_are_refused_before_the_target_is_touched() -> Result<()> {
    let src = tempfile::tempdir().expect("tempdir");
    write_config(src.path(), false);
    let db = open(src.path(), None)?;
    populate(&db)?;
    let out = tempfile::tempdir().expect("out");
    let archive = out.path().join("full.tar.zst");
    db.backup(&archive, None, |_, _| {})?;
    let bytes = std::fs::read(&archive).expect("read");
    let target = out.path().join("target");
    std::fs::create_dir_all(&target).expect("target");
    std::fs::write(target.join("keep.txt"), b"untouched").expect("marker");
    let truncated = out.path().join("truncated.tar.zst");
    std::fs::write(&truncated, &bytes[..bytes.len() * 2 / 3]).expect("write");
    let flipped = out.path().join("flipped.tar.zst");
    let mut b = bytes.clone();
    let i = b.len() / 2;
    b[i] ^= 0x40;
    std::fs::write(&flipped, b).expect("write");
    for bad in [truncated, flipped] {
        assert!(verify_backup(&bad).is_err(), "{}", bad.display());
        assert!(restore(std::slice::from_ref(&bad), &target, None).is_err());
        assert_eq!(
            std::fs::read(target.join("keep.txt")).expect("marker"),
            b"untouched"
        );
    }
    // A restore is refused while an instance has the directory open.
    let busy = out.path().join("busy");
    let _open = open(&busy, None)?;
    assert!(matches!(
        restore(&[archive], &busy, None),
        Err(Error::Conflict { .. })
    ));
    Ok(())
}

/// An archive with the given entries, shaped like a backup (backup.json first).
fn craft(path: &Path, entries: &[(&str, &[u8])]) {
    let file = std::fs::File::create(path).expect("create");
    let enc = zstd::Encoder::new(file, 3).expect("zstd").auto_finish();
    let mut tar = tar::Builder::new(enc);
    let info =
        br#"{"format":1,"id":"x","schema_version":2,"created":"2026-01-01T00:00:00Z","base":null}"#;
    let mut all = vec![("backup.json", &info[..])];
    all.extend_from_slice(entries);
    for (name, data) in all {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o600);
        h.set_entry_type(tar::EntryType::Regular);
        // Written raw so that `..` reaches the archive as an attacker would put it.
        let bytes = name.as_bytes();
        h.as_old_mut().name[..bytes.len()].copy_from_slice(bytes);
        h.set_cksum();
        tar.append(&h, data).expect("append");
    }
    tar.finish().expect("finish");
}

#[test]
fn path_traversal_in_archives_is_refused() {
    let out = tempfile::tempdir().expect("out");
    let target = out.path().join("target");
    for name in [
        "../escape",
        "/etc/passwd",
        "document_file_storage/../../x",
        "system/../../y",
    ] {
        let archive = out.path().join("evil.tar.zst");
        craft(&archive, &[(name, b"pwned")]);
        let err = verify_backup(&archive).expect_err(name);
        assert!(err.to_string().contains("refusing"), "{name}: {err}");
        assert!(restore(&[archive], &target, None).is_err());
        assert!(!out.path().join("escape").exists());
    }
}

#[test]
fn incremental_plus_full_restores_what_a_full_backup_does() -> Result<()> {
    let src = tempfile::tempdir().expect("tempdir");
    write_config(src.path(), false);
    let db = open(src.path(), None)?;
    let files = populate(&db)?;
    let out = tempfile::tempdir().expect("out");
    let full = out.path().join("full.tar.zst");
    db.backup(&full, None, |_, _| {})?;
    let admin = db.system();
    let extra = bytes(50_000, 9);
    admin.add_file(files[0].0, "later.txt", &mut &extra[..])?;
    let inc = out.path().join("inc.tar.zst");
    let r = db.backup(&inc, Some(&full), |_, _| {})?;
    assert_eq!(r.files_archived, 1, "only the new file");
    let full2 = out.path().join("full2.tar.zst");
    db.backup(&full2, None, |_, _| {})?;
    drop(db);
    assert!(
        restore(std::slice::from_ref(&inc), &out.path().join("alone"), None).is_err(),
        "needs its base"
    );
    let a = out.path().join("a");
    let b = out.path().join("b");
    restore(&[full.clone(), inc.clone()], &a, None)?;
    restore(&[full2], &b, None)?;
    assert_eq!(dump(&a), dump(&b));
    let db = open(&a, None)?;
    let later = db.system().files(files[0].0)?.pop().expect("file");
    assert_eq!(db.system().read_file(later.id)?, extra);
    drop(db);
    // Retention keeps the incremental's base whatever the schedule says: with only the newest
    // backup of one day kept, the incremental is kept and so is the full backup under it.
    let chain = out.path().join("chain");
    std::fs::create_dir_all(&chain).expect("dir");
    for f in [&full, &inc] {
        std::fs::copy(f, chain.join(f.file_name().expect("name"))).expect("copy");
    }
    let kept = prune_backups(&chain, 1, 0, false)?;
    let why = |name: &str| {
        kept.iter()
            .find(|d| d.path.ends_with(name))
            .and_then(|d| d.kept_because.clone())
    };
    assert!(why("inc.tar.zst").is_some_and(|w| w.starts_with("newest of day")));
    assert_eq!(
        why("full.tar.zst").as_deref(),
        Some("base of a kept incremental backup")
    );
    assert!(chain.join("full.tar.zst").exists() && chain.join("inc.tar.zst").exists());
    Ok(())
}

#[test]
fn backup_while_writing_is_consistent() -> Result<()> {
    let src = tempfile::tempdir().expect("tempdir");
    write_config(src.path(), false);
    let db = open(src.path(), None)?;
    let files = populate(&db)?;
    let writer = {
        let db = db.clone();
        let doc = files[0].0;
        std::thread::spawn(move || -> Result<()> {
            for i in 0..40u8 {
                let f = db
                    .system()
                    .add_file(doc, "w.bin", &mut &bytes(20_000, i)[..])?;
                if i % 3 == 0 {
                    db.system().delete_file(f.id)?;
                }
            }
            Ok(())
        })
    };
    let out = tempfile::tempdir().expect("out");
    let archive = out.path().join("live.tar.zst");
    db.backup(&archive, None, |_, _| {})?;
    writer.join().expect("writer")?;
    drop(db);
    // Every file the snapshot references is in the archive and restores with its checksum.
    let target = out.path().join("t");
    restore(&[archive], &target, None)?;
    let db = open(&target, None)?;
    for f in db.system().files(files[0].0)? {
        let mut content = db.system().open_file(f.id)?.1;
        let mut sink = Vec::new();
        content.read_to_end(&mut sink).expect("checksum matches");
    }
    Ok(())
}

#[test]
fn restoring_an_encrypted_store_needs_its_password() -> Result<()> {
    let src = tempfile::tempdir().expect("tempdir");
    write_config(src.path(), true);
    let db = open(src.path(), Some("s3cret"))?;
    let files = populate(&db)?;
    let out = tempfile::tempdir().expect("out");
    let archive = out.path().join("enc.tar.zst");
    db.backup(&archive, None, |_, _| {})?;
    drop(db);
    let target = out.path().join("t");
    assert!(matches!(
        restore(std::slice::from_ref(&archive), &target, Some(b"wrong")),
        Err(Error::Decryption(_))
    ));
    assert!(
        !target.join("db.sqlite3").exists(),
        "refused before anything was restored"
    );
    let r = restore(&[archive], &target, Some(b"s3cret"))?;
    assert!(r.file_checked.is_some());
    let db = open(&target, Some("s3cret"))?;
    let f = db.system().files(files[2].0)?.remove(0);
    assert_eq!(db.system().read_file(f.id)?, files[2].1);
    Ok(())
}

#[test]
fn a_backup_from_an_older_schema_is_migrated_on_restore() -> Result<()> {
    // A schema-1 database (before document files), as an older docmeta wrote it.
    let old = tempfile::tempdir().expect("old");
    write_config(old.path(), false);
    let db = open(old.path(), None)?;
    let admin = db.system();
    let t = admin.create_document_type("Letter")?;
    admin.create_document(t.id, "Dear reader", &[])?;
    drop(admin);
    drop(db);
    assert!(
        !old.path().join("db.sqlite3-wal").exists(),
        "closing the last handle checkpoints the WAL"
    );
    let conn = rusqlite::Connection::open(old.path().join("db.sqlite3")).expect("db");
    conn.execute_batch(
        "DROP TABLE workflow_instance_log; DROP TABLE workflow_instances; \
         DROP TABLE workflow_state_actions; DROP TABLE workflow_transition_triggers; \
         DROP TABLE workflow_transitions; DROP TABLE workflow_states; \
         DROP TABLE workflow_document_types; DROP TABLE workflows; \
         DROP TABLE document_files; ALTER TABLE tasks DROP COLUMN target; \
         ALTER TABLE metadata_types DROP COLUMN default_shapers; \
         ALTER TABLE metadata_types DROP COLUMN lookup_shapers; \
         DROP INDEX events_followed; ALTER TABLE events DROP COLUMN follow; \
         ALTER TABLE events DROP COLUMN changes; \
         DROP INDEX users_by_username_key; ALTER TABLE users DROP COLUMN username_key; \
         ALTER TABLE metadata_types DROP COLUMN value_type; DROP TABLE audit_checkpoints; DROP INDEX events_history; DROP INDEX events_unsealed; ALTER TABLE events DROP COLUMN hash; ALTER TABLE events DROP COLUMN seq; DROP TABLE device_creates; DROP INDEX cabinet_documents_by_document; DROP TABLE device_documents; DROP TABLE devices; DROP TABLE webhook_deliveries; DROP TABLE webhook_events; DROP TABLE webhooks; \
         DELETE FROM schema_version WHERE version > 1;",
    )
    .expect("downgrade");
    drop(conn);
    // Its backup, written entry by entry in the archive format (backup.json first, manifest last).
    let out = tempfile::tempdir().expect("out");
    let archive = out.path().join("old.tar.zst");
    let info =
        r#""format":1,"id":"0ld","schema_version":1,"created":"2025-01-01T00:00:00Z","base":null"#;
    let mut entries: Vec<(String, Vec<u8>)> =
        vec![("backup.json".into(), format!("{{{info}}}").into_bytes())];
    let mut listed = Vec::new();
    for path in ["db.sqlite3", "config.yml", "system/SECRET_KEY"] {
        let bytes = std::fs::read(old.path().join(path)).expect("read");
        let (size, sha) = docmeta_core::sha256(&mut &bytes[..]).expect("hash");
        listed.push(format!(
            r#"{{"path":"{path}","size":{size},"sha256":"{sha}"}}"#
        ));
        entries.push((path.into(), bytes));
    }
    entries.push((
        "manifest.json".into(),
        format!("{{{info},\"files\":[{}]}}", listed.join(",")).into_bytes(),
    ));
    let file = std::fs::File::create(&archive).expect("create");
    let mut tar = tar::Builder::new(zstd::Encoder::new(file, 3).expect("zstd").auto_finish());
    for (path, bytes) in &entries {
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o600);
        tar.append_data(&mut h, path, &bytes[..]).expect("append");
    }
    tar.into_inner().expect("finish");
    let target = out.path().join("new");
    let r = restore(&[archive], &target, None)?;
    // Every migration after the first, in order.
    assert_eq!(r.documents, 1);
    assert_eq!(
        (r.migrations.first(), r.migrations.last()),
        (Some(&2), Some(&docmeta_core::store::SCHEMA_VERSION))
    );
    assert!(r.migrations.windows(2).all(|v| v[0] < v[1]));
    let db = open(&target, None)?;
    let docs = db
        .system()
        .documents(DocumentQuery::default(), PageRequest::new(1, 10))?
        .items;
    assert_eq!(docs[0].document.label, "Dear reader");
    assert!(
        db.system().files(docs[0].document.id)?.is_empty(),
        "the new table exists"
    );
    Ok(())
}

// Restores and archives: restores that cannot succeed leave the target as it was, archives
// are private, decompression is bounded by the declared sizes, stored files are bound to their
// records.

/// A copy of a real backup whose `path` entry is replaced by `edit(bytes)`, with `contents.json`
/// and the manifest updated to match: a consistent archive around a bad database.
fn rewrite_entry(
    src: &Path,
    dst: &Path,
    path: &str,
    edit: impl FnOnce(Vec<u8>) -> Vec<u8>,
    schema_version: Option<u32>,
) {
    let mut entries = archive::read_entries(src);
    let i = entries.iter().position(|(p, _)| p == path).expect("entry");
    let new = edit(std::mem::take(&mut entries[i].1));
    let (size, sha) = docmeta_core::sha256(&mut &new[..]).expect("hash");
    entries[i].1 = new;
    for (p, bytes) in entries.iter_mut() {
        let mut json: serde_json::Value = match p.as_str() {
            "backup.json" | "contents.json" | "manifest.json" => {
                serde_json::from_slice(bytes).expect("json")
            }
            _ => continue,
        };
        if let (Some(v), true) = (schema_version, p != "contents.json") {
            json["schema_version"] = v.into();
        }
        for list in ["files", "entries"] {
            if let Some(items) = json.get_mut(list).and_then(|l| l.as_array_mut()) {
                for item in items.iter_mut().filter(|it| it["path"] == path) {
                    item["size"] = size.into();
                    if list == "files" {
                        item["sha256"] = sha.clone().into();
                    }
                }
            }
        }
        *bytes = serde_json::to_vec(&json).expect("json");
    }
    archive::write_entries(dst, &entries);
}

/// A populated data directory (the target a failed restore must leave alone) and a backup of
/// another installation.
fn target_and_backup(out: &Path) -> Result<(PathBuf, Vec<String>, PathBuf)> {
    let target = out.join("live");
    write_config(&target, false);
    let db = open(&target, None)?;
    populate(&db)?;
    drop(db);
    let before = dump(&target);
    let src = out.join("other");
    write_config(&src, false);
    let db = open(&src, None)?;
    let admin = db.system();
    let t = admin.create_document_type("Letter")?;
    admin.create_document(t.id, "From the backup", &[])?;
    let archive = out.join("other.tar.zst");
    db.backup(&archive, None, |_, _| {})?;
    Ok((target, before, archive))
}

/// The target still holds exactly its data, still opens, and no staging directory is left.
fn assert_untouched(out: &Path, target: &Path, before: &[String]) -> Result<()> {
    assert_eq!(dump(target), before, "the target's database changed");
    let db = open(target, None)?;
    assert_eq!(
        db.system()
            .documents(DocumentQuery::default(), PageRequest::new(1, 10))?
            .items
            .len(),
        4
    );
    let leftovers: Vec<_> = std::fs::read_dir(out)
        .expect("read_dir")
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".docmeta-restore")
        })
        .collect();
    assert!(leftovers.is_empty(), "staging left behind: {leftovers:?}");
    Ok(())
}

#[test]
fn restoring_a_corrupt_database_fails_and_leaves_the_target_intact() -> Result<()> {
    let out = tempfile::tempdir().expect("out");
    let (target, before, archive) = target_and_backup(out.path())?;
    let bad = out.path().join("corrupt.tar.zst");
    // Pages after the first overwritten: the file still starts like a database.
    rewrite_entry(
        &archive,
        &bad,
        "db.sqlite3",
        |mut db| {
            for b in db.iter_mut().skip(4096).take(8192) {
                *b = 0x5a;
            }
            db
        },
        None,
    );
    verify_backup(&bad).expect("the archive itself is consistent");
    let err = restore(&[bad], &target, None).expect_err("a corrupt database");
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    assert!(err.to_string().contains("database"), "{err}");
    assert_untouched(out.path(), &target, &before)
}

#[test]
fn restoring_a_database_from_a_newer_docmeta_fails_and_leaves_the_target_intact() -> Result<()> {
    let out = tempfile::tempdir().expect("out");
    let (target, before, archive) = target_and_backup(out.path())?;
    let newer = out.path().join("newer.tar.zst");
    let scratch = out.path().join("scratch.db");
    rewrite_entry(
        &archive,
        &newer,
        "db.sqlite3",
        |db| {
            std::fs::write(&scratch, db).expect("write");
            let conn = rusqlite::Connection::open(&scratch).expect("db");
            conn.execute("INSERT INTO schema_version (version) VALUES (99)", [])
                .expect("bump");
            drop(conn);
            std::fs::read(&scratch).expect("read")
        },
        Some(99),
    );
    verify_backup(&newer).expect("the archive itself is consistent");
    let err = restore(&[newer], &target, None).expect_err("a newer schema");
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    assert!(err.to_string().contains("schema version 99"), "{err}");
    assert_untouched(out.path(), &target, &before)
}

#[test]
fn a_successful_restore_replaces_the_target_and_removes_the_old_one() -> Result<()> {
    let out = tempfile::tempdir().expect("out");
    let (target, _, archive) = target_and_backup(out.path())?;
    restore(&[archive], &target, None)?;
    let db = open(&target, None)?;
    let docs = db
        .system()
        .documents(DocumentQuery::default(), PageRequest::new(1, 10))?
        .items;
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0].document.label, "From the backup");
    let names: Vec<String> = std::fs::read_dir(out.path())
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(names.is_empty(), "left behind: {names:?}");
    Ok(())
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

#[cfg(unix)]
#[test]
fn backup_archives_full_and_incremental_are_created_0600() -> Result<()> {
    let src = tempfile::tempdir().expect("tempdir");
    write_config(src.path(), false);
    let db = open(src.path(), None)?;
    populate(&db)?;
    let out = tempfile::tempdir().expect("out");
    let full = out.path().join("full.tar.zst");
    db.backup(&full, None, |_, _| {})?;
    let inc = out.path().join("inc.tar.zst");
    db.backup(&inc, Some(&full), |_, _| {})?;
    assert_eq!(mode(&full), 0o600, "full backup");
    assert_eq!(mode(&inc), 0o600, "incremental backup");
    Ok(())
}

#[cfg(unix)]
#[test]
fn restored_files_are_private() -> Result<()> {
    let out = tempfile::tempdir().expect("out");
    let (_, _, archive) = target_and_backup(out.path())?;
    let fresh = out.path().join("fresh");
    restore(&[archive], &fresh, None)?;
    assert_eq!(mode(&fresh.join("system/SECRET_KEY")), 0o600);
    assert_eq!(mode(&fresh.join("db.sqlite3")), 0o600);
    Ok(())
}

#[test]
fn an_entry_larger_than_declared_is_refused_at_its_header() -> Result<()> {
    let out = tempfile::tempdir().expect("out");
    let (target, before, archive) = target_and_backup(out.path())?;
    // The real archive with its database entry swapped for 256 MiB of zeros (a few hundred
    // KB compressed) while contents.json and the manifest still declare the real size.
    let mut entries = archive::read_entries(&archive);
    let i = entries
        .iter()
        .position(|(p, _)| p == "db.sqlite3")
        .expect("db");
    entries[i].1 = vec![0u8; 256 << 20];
    let bomb = out.path().join("bomb.tar.zst");
    archive::write_entries(&bomb, &entries);
    assert!(
        std::fs::metadata(&bomb).expect("meta").len() < 1 << 20,
        "a small archive"
    );
    let err = verify_backup(&bomb).expect_err("verify refuses");
    assert!(err.to_string().contains("declared"), "{err}");
    let err = restore(&[bomb], &target, None).expect_err("restore refuses");
    assert!(err.to_string().contains("declared"), "{err}");
    assert_untouched(out.path(), &target, &before)
}

#[test]
fn an_old_format_archive_that_expands_beyond_its_manifest_writes_nothing_and_is_refused()
-> Result<()> {
    let out = tempfile::tempdir().expect("out");
    let (target, before, archive) = target_and_backup(out.path())?;
    // Format 1 declares sizes only in its manifest, at the end: the restore reads the whole
    // archive once writing nothing, so the bomb never reaches the staging directory.
    let mut entries: Vec<(String, Vec<u8>)> = archive::read_entries(&archive)
        .into_iter()
        .filter(|(p, _)| p != "contents.json")
        .collect();
    for (p, bytes) in entries.iter_mut() {
        if p == "backup.json" || p == "manifest.json" {
            let mut json: serde_json::Value = serde_json::from_slice(bytes).expect("json");
            json["format"] = 1.into();
            *bytes = serde_json::to_vec(&json).expect("json");
        }
        if p == "db.sqlite3" {
            *bytes = vec![0u8; 64 << 20];
        }
    }
    let bomb = out.path().join("old-bomb.tar.zst");
    archive::write_entries(&bomb, &entries);
    let err = restore(&[bomb], &target, None).expect_err("restore refuses");
    assert!(err.to_string().contains("db.sqlite3"), "{err}");
    assert_untouched(out.path(), &target, &before)
}

/// Two documents with files of the same size; returns their file ids and contents.
fn two_same_size_files(
    db: &Docmeta,
    size: usize,
) -> Result<[(docmeta_core::DocumentFileId, Vec<u8>); 2]> {
    let admin = db.system();
    let t = admin.create_document_type("Contract")?;
    let mut out = Vec::new();
    for (label, seed) in [("Mine", 1u8), ("Theirs", 2u8)] {
        let d = admin.create_document(t.id, label, &[])?.document;
        let content = bytes(size, seed);
        let f = admin.add_file(d.id, &format!("{label}.pdf"), &mut &content[..])?;
        out.push((f.id, content));
    }
    let [a, b]: [_; 2] = out.try_into().expect("two");
    Ok([a, b])
}

/// Copies `donor`'s stored bytes over `victim`'s, as someone with write access to the storage
/// would. The storage holds only these two files: a plain one is recognised by its content, a
/// MENC one (unreadable without the key) by its order of creation.
fn swap_on_disk(
    dir: &Path,
    db: &Docmeta,
    victim: docmeta_core::DocumentFileId,
    donor: docmeta_core::DocumentFileId,
) {
    let mut stored: Vec<(std::time::SystemTime, PathBuf)> = find_stored(dir)
        .into_iter()
        .map(|p| {
            (
                std::fs::metadata(&p)
                    .and_then(|m| m.modified())
                    .expect("mtime"),
                p,
            )
        })
        .collect();
    assert_eq!(stored.len(), 2, "only the two files");
    stored.sort();
    let (mut victim_path, mut donor_path) = (stored[0].1.clone(), stored[1].1.clone());
    let victim_bytes = db
        .system()
        .read_file(victim)
        .expect("intact before the swap");
    if std::fs::read(&donor_path).expect("read") == victim_bytes {
        std::mem::swap(&mut victim_path, &mut donor_path);
    }
    let _ = donor;
    std::fs::copy(&donor_path, &victim_path).expect("swap");
}

#[test]
fn a_swapped_plain_file_is_refused_before_any_byte_is_handed_out() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    write_config(dir.path(), false);
    let db = open(dir.path(), None)?;
    let [(mine, _), (theirs, their_bytes)] = two_same_size_files(&db, 300_000)?;
    swap_on_disk(dir.path(), &db, mine, theirs);
    let err = db.system().open_file(mine).expect_err("refused at open");
    assert!(matches!(err, Error::Storage { .. }), "{err}");
    assert!(err.to_string().contains("checksum"), "{err}");
    assert_eq!(
        db.system().read_file(theirs)?,
        their_bytes,
        "the donor is intact"
    );
    Ok(())
}

#[test]
fn a_swapped_large_plain_file_breaks_off_before_its_last_bytes() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    write_config(dir.path(), false);
    // Everything counts as large: checked while it streams.
    let mut text = std::fs::read_to_string(dir.path().join("config.yml")).expect("config");
    text.push_str("download_verify_max_bytes: 0\n");
    std::fs::write(dir.path().join("config.yml"), text).expect("config");
    let db = open(dir.path(), None)?;
    let [(mine, _), (theirs, their_bytes)] = two_same_size_files(&db, 300_000)?;
    swap_on_disk(dir.path(), &db, mine, theirs);
    let (record, mut content) = db.system().open_file(mine)?;
    let mut delivered = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let err = loop {
        match content.read(&mut buf) {
            Ok(0) => panic!("the swapped file was read to its end"),
            Ok(n) => delivered.extend_from_slice(&buf[..n]),
            Err(e) => break e,
        }
    };
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData, "{err}");
    assert!(
        (delivered.len() as u64) < record.size,
        "{} of {} bytes were handed out",
        delivered.len(),
        record.size
    );
    assert_ne!(delivered, their_bytes);
    Ok(())
}

#[test]
fn a_swapped_encrypted_file_fails_to_decrypt() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    write_config(dir.path(), true);
    let db = open(dir.path(), Some("pw"))?;
    let [(mine, _), (theirs, their_bytes)] = two_same_size_files(&db, 300_000)?;
    swap_on_disk(dir.path(), &db, mine, theirs);
    let err = db.system().open_file(mine).expect_err("refused");
    assert!(matches!(err, Error::Decryption(_)), "{err}");
    assert_eq!(
        db.system().read_file(theirs)?,
        their_bytes,
        "the donor is intact"
    );
    // The same for a file read as it streams.
    drop(db);
    let mut text = std::fs::read_to_string(dir.path().join("config.yml")).expect("config");
    text.push_str("download_verify_max_bytes: 0\n");
    std::fs::write(dir.path().join("config.yml"), text).expect("config");
    let db = open(dir.path(), Some("pw"))?;
    let err = db.system().open_file(mine).expect_err("refused");
    assert!(matches!(err, Error::Decryption(_)), "{err}");
    Ok(())
}

#[test]
fn search_work_queued_in_a_backup_runs_on_the_restored_index() -> Result<()> {
    use docmeta_core::{SearchWork, SearchWorkRun};
    let src = tempfile::tempdir().expect("tempdir");
    write_config(src.path(), false);
    // A server (holding the index writer) and a command that handed it work it never ran.
    let holder = open(src.path(), None)?;
    assert!(holder.writes_search_index()?);
    let command = open(src.path(), None)?;
    let SearchWorkRun::HandedOff(ticket) = command.search_work(&SearchWork::Reindex, |_, _| {})?
    else {
        panic!("handed off to the holder");
    };
    let out = tempfile::tempdir().expect("out");
    let archive = out.path().join("full.tar.zst");
    command.backup(&archive, None, |_, _| {})?;
    drop((holder, command));
    let target = out.path().join("restored");
    let r = restore(&[archive], &target, None)?;
    let db = open(&target, None)?;
    assert!(db.writes_search_index()?);
    // The source's index is not the restored one, yet the work runs here, then the rebuild.
    assert_eq!(db.run_pending_tasks()?, 2);
    let open_tasks = db.open_tasks()?;
    assert!(
        open_tasks
            .iter()
            .all(|t| t.id != ticket.task && t.id != r.reindex_task),
        "both ran: {open_tasks:?}"
    );
    Ok(())
}

/// A copy of the real backup `src` with one more entry, `path`, holding `size` zero bytes
/// (streamed, never in memory), declared in `contents.json` and listed in the manifest with its
/// true size and SHA-256: a consistent archive, as an attacker who can write one makes it. With
/// `truncate`, the archive ends right after the new entry's tar header (its bytes are never
/// there: a restore that reads any of them fails as a truncated archive instead).
fn with_extra_entry(src: &Path, dst: &Path, path: &str, size: u64, truncate: bool) {
    use std::io::Write;
    let zeros = || std::io::Read::take(std::io::repeat(0), size);
    let (_, sha) = docmeta_core::sha256(&mut zeros()).expect("hash");
    let mut entries = archive::read_entries(src);
    for (p, bytes) in entries.iter_mut() {
        let list = match p.as_str() {
            "contents.json" => "entries",
            "manifest.json" => "files",
            _ => continue,
        };
        let mut json: serde_json::Value = serde_json::from_slice(bytes).expect("json");
        let item = if list == "files" {
            serde_json::json!({"path": path, "size": size, "sha256": sha, "in_base": false})
        } else {
            serde_json::json!({"path": path, "size": size})
        };
        json[list].as_array_mut().expect("list").push(item);
        *bytes = serde_json::to_vec(&json).expect("json");
    }
    let file = std::fs::File::create(dst).expect("create");
    let mut tar = tar::Builder::new(zstd::Encoder::new(file, 1).expect("zstd").auto_finish());
    let append = |tar: &mut tar::Builder<_>, p: &str, size: u64, data: &mut dyn Read| {
        let mut h = tar::Header::new_gnu();
        h.set_size(size);
        h.set_mode(0o600);
        tar.append_data(&mut h, p, data).expect("append");
    };
    for (p, bytes) in &entries {
        if p == "manifest.json" {
            if truncate {
                let mut h = tar::Header::new_gnu();
                h.set_size(size);
                h.set_mode(0o600);
                h.set_path(path).expect("path");
                h.set_cksum();
                tar.get_mut().write_all(h.as_bytes()).expect("header");
                // Dropping the builder ends the tar (two zero blocks) and the zstd frame: the
                // entry's 1 GiB is simply not there.
                return;
            }
            append(&mut tar, path, size, &mut zeros());
        }
        append(&mut tar, p, bytes.len() as u64, &mut &bytes[..]);
    }
    tar.into_inner().expect("finish");
}

/// Restores take only what a backup holds: a restore took an archive entry of 1 GiB (33 KB
/// compressed) that no record references. It is refused by its declaration, before a byte of it is
/// read or written, and the target stays as it was.
#[test]
fn a_document_file_no_record_names_is_refused_before_it_is_written() -> Result<()> {
    let out = tempfile::tempdir().expect("out");
    let (target, before, archive) = target_and_backup(out.path())?;
    let orphan = "document_file_storage/ab/0123456789abcdef0123456789abcd";
    let bomb = out.path().join("orphan.tar.zst");
    with_extra_entry(&archive, &bomb, orphan, 1 << 30, false);
    assert!(
        std::fs::metadata(&bomb).expect("meta").len() < 1 << 20,
        "1 GiB in a small archive"
    );
    verify_backup(&bomb).expect("the archive itself is consistent");
    let err = restore(&[bomb], &target, None).expect_err("an unreferenced entry");
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    assert!(
        err.to_string().contains(orphan) && err.to_string().contains("no record"),
        "{err}"
    );
    assert_untouched(out.path(), &target, &before)?;
    // Refused before its bytes are read: the same entry with none of its bytes in the archive
    // gets the same answer, not a truncated-archive error.
    let cut = out.path().join("orphan-cut.tar.zst");
    with_extra_entry(&archive, &cut, orphan, 1 << 30, true);
    let err = restore(&[cut], &target, None).expect_err("an unreferenced entry");
    assert!(err.to_string().contains("no record"), "{err}");
    assert_untouched(out.path(), &target, &before)
}

/// Restores take only what a backup holds: anything else outside it, a system file larger than
/// docmeta writes, is refused at its declaration.
#[test]
fn an_oversized_system_file_is_refused() -> Result<()> {
    let out = tempfile::tempdir().expect("out");
    let (target, before, archive) = target_and_backup(out.path())?;
    let entries: Vec<(String, Vec<u8>)> = archive::read_entries(&archive)
        .into_iter()
        .filter(|(p, _)| p != "config.yml")
        .collect();
    let stripped = out.path().join("stripped.tar.zst");
    // The real archive without its config.yml, then the bomb as its config.yml.
    archive::write_entries(&stripped, &entries);
    let mut fixed = Vec::new();
    for (p, mut bytes) in archive::read_entries(&stripped) {
        if p == "contents.json" || p == "manifest.json" {
            let mut json: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
            for list in ["entries", "files"] {
                if let Some(items) = json.get_mut(list).and_then(|l| l.as_array_mut()) {
                    items.retain(|it| it["path"] != "config.yml");
                }
            }
            bytes = serde_json::to_vec(&json).expect("json");
        }
        fixed.push((p, bytes));
    }
    archive::write_entries(&stripped, &fixed);
    let bomb = out.path().join("config-bomb.tar.zst");
    with_extra_entry(&stripped, &bomb, "config.yml", 64 << 20, false);
    let err = verify_backup(&bomb).expect_err("refused");
    assert!(err.to_string().contains("config.yml holds"), "{err}");
    let err = restore(&[bomb], &target, None).expect_err("refused");
    assert!(err.to_string().contains("config.yml holds"), "{err}");
    assert_untouched(out.path(), &target, &before)
}

/// A tmpfs of `size` mounted on a fresh directory, unmounted on drop; `None` (saying why) where
/// this process may not mount (root or CAP_SYS_ADMIN; `DOCMETA_REQUIRE_FAULTS=1` makes that a
/// failure).
struct Tmpfs(PathBuf, #[allow(dead_code)] tempfile::TempDir);

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("mnt");
        std::fs::create_dir(&path).expect("mount point");
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
                eprintln!("skipped: cannot mount a tmpfs ({why}); needs root or CAP_SYS_ADMIN");
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

/// A restore is bounded by the free space beside its target. One that needs
/// more than a 48 MiB disk holds is refused before it writes (`StorageFull`, saying how much it
/// needs), the target as it was; a small one restores onto the same disk.
#[test]
fn a_restore_needing_more_space_than_is_free_is_refused_before_it_writes() -> Result<()> {
    let Some(disk) = Tmpfs::mount("48m") else {
        return Ok(());
    };
    let out = tempfile::tempdir().expect("out");
    let target = disk.0.join("live");
    write_config(&target, false);
    populate(&open(&target, None)?)?;
    let before = dump(&target);
    // Another installation with a 60 MiB document file (a small archive: it compresses).
    let src = out.path().join("big");
    write_config(&src, false);
    let db = open(&src, None)?;
    let admin = db.system();
    let t = admin.create_document_type("Scan")?;
    let d = admin.create_document(t.id, "Large scan", &[])?.document;
    admin.add_file(d.id, "scan.tiff", &mut &bytes(60 << 20, 3)[..])?;
    let archive = out.path().join("big.tar.zst");
    db.backup(&archive, None, |_, _| {})?;
    drop((admin, db));
    let err = restore(&[archive], &target, None).expect_err("too large for the disk");
    assert_eq!(err.kind(), docmeta_core::ErrorKind::StorageFull, "{err}");
    assert!(
        err.to_string().contains("needs") && err.to_string().contains("free"),
        "{err}"
    );
    assert_untouched(&disk.0, &target, &before)?;
    // The bound refuses only what does not fit.
    let (_, _, small) = target_and_backup(out.path())?;
    restore(&[small], &disk.0.join("fresh"), None)?;
    Ok(())
}

/// Restores take only what a backup holds, across a chain: an incremental backup whose manifest
/// leaves to its base a document file its database does not name (the base crafted to hold it) is
/// refused too.
#[test]
fn a_chain_cannot_bring_in_a_document_file_no_record_names() -> Result<()> {
    let out = tempfile::tempdir().expect("out");
    let (target, before, _) = target_and_backup(out.path())?;
    let src = out.path().join("chain-source");
    write_config(&src, false);
    let db = open(&src, None)?;
    populate(&db)?;
    let full = out.path().join("full.tar.zst");
    db.backup(&full, None, |_, _| {})?;
    let inc = out.path().join("inc.tar.zst");
    db.backup(&inc, Some(&full), |_, _| {})?;
    drop(db);
    let orphan = "document_file_storage/cd/0123456789abcdef0123456789abcd";
    let size = 1u64 << 20;
    let full_bomb = out.path().join("full-orphan.tar.zst");
    with_extra_entry(&full, &full_bomb, orphan, size, false);
    let (_, sha) =
        docmeta_core::sha256(&mut std::io::Read::take(std::io::repeat(0), size)).expect("hash");
    let mut entries = archive::read_entries(&inc);
    for (p, bytes) in entries.iter_mut().filter(|(p, _)| p == "manifest.json") {
        let mut json: serde_json::Value = serde_json::from_slice(bytes).expect("json");
        json["files"].as_array_mut().expect("files").push(
            serde_json::json!({"path": orphan, "size": size, "sha256": sha, "in_base": true}),
        );
        *bytes = serde_json::to_vec(&json).expect("json");
        let _ = p;
    }
    let inc_bomb = out.path().join("inc-orphan.tar.zst");
    archive::write_entries(&inc_bomb, &entries);
    let err = restore(&[full_bomb, inc_bomb], &target, None).expect_err("refused");
    assert!(
        err.to_string().contains(orphan) && err.to_string().contains("no record"),
        "{err}"
    );
    assert_untouched(out.path(), &target, &before)
}
