//! The data directory at rest: nothing in it is readable or traversable by
//! the group or others, whether docmeta has just made it, has stored, indexed, deleted, backed up
//! and restored in it, or opens one an older docmeta left with 0644 files in 0755 directories.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use docmeta_core::{Docmeta, DocumentQuery, MetadataTypeInput, PageRequest, Result};

/// Opens `data` as a server would (with the worker), after writing its `config.yml` the way an
/// operator does (with the shell's umask: `0644`) when `operator_config`.
fn open(data: &Path, operator_config: bool) -> Result<Docmeta> {
    if operator_config {
        std::fs::create_dir_all(data).expect("data directory");
        std::fs::write(
            data.join("config.yml"),
            "password_hash_memory_kib: 64\npassword_hash_iterations: 1\n",
        )
        .expect("config");
    }
    Docmeta::builder().data_dir(data).worker(true).open()
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o7777
}

/// Every path below `dir` (itself included), without following links.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        let p = out[i].clone();
        if std::fs::symlink_metadata(&p).expect("metadata").is_dir() {
            for e in std::fs::read_dir(&p).expect("read_dir") {
                out.push(e.expect("entry").path());
            }
        }
        i += 1;
    }
    out
}

/// Whether `path` lies in a search index generation (`search/<n>/`), where tantivy writes its
/// files with the process's umask.
fn tantivy_file(data: &Path, path: &Path) -> bool {
    let rel = path.strip_prefix(data).expect("inside");
    let mut parts = rel.components().map(|c| c.as_os_str().to_string_lossy());
    parts.next().as_deref() == Some("search")
        && parts.next().is_some_and(|g| g.parse::<u64>().is_ok())
        && parts.next().is_some()
        && !path.is_dir()
}

/// What the group or others could reach in `data`: every directory with a group or other bit,
/// and every file with one, except tantivy's files inside the index generations (created with
/// the test process's umask, and reachable only through the `0700` directories above them,
/// which the first list covers). With `strict`, those are listed too.
fn exposed(data: &Path, strict: bool) -> Vec<String> {
    tree(data)
        .into_iter()
        .filter(|p| mode(p) & 0o077 != 0)
        .filter(|p| strict || !tantivy_file(data, p))
        .map(|p| format!("{} {:o}", p.display(), mode(&p)))
        .collect()
}

/// A data directory with documents, values, files (one deleted, so `.deleted/` holds it), a
/// user, and a search index with segments.
fn populate(db: &Docmeta) -> Result<()> {
    let admin = db.system();
    let t = admin.create_document_type("Invoice")?;
    let number = admin.create_metadata_type(MetadataTypeInput::new("number", "Number"))?;
    admin.associate(t.id, number.id, false)?;
    admin.create_user("ann", "a long password", false)?;
    for i in 0..3 {
        let d = admin
            .create_document(t.id, &format!("Invoice {i}"), &[(number.id, "INV-1")])?
            .document;
        let f = admin.add_file(d.id, "scan.pdf", &mut &vec![7u8; 300_000][..])?;
        if i == 0 {
            admin.delete_file(f.id)?;
        }
    }
    db.search_reindex(|_, _| {})?;
    assert!(
        admin
            .search_documents("Invoice", PageRequest::new(1, 10))?
            .count
            > 0
    );
    Ok(())
}

#[test]
fn a_fresh_data_directory_is_owner_only() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let db = open(&data, false)?;
    // Open: the SQLite -wal and -shm files exist now.
    assert!(data.join("db.sqlite3-wal").exists());
    assert_eq!(exposed(&data, false), Vec::<String>::new());
    for (path, want) in [
        ("", 0o700),
        ("system", 0o700),
        ("system/SECRET_KEY", 0o600),
        ("config.yml", 0o600),
        ("db.sqlite3", 0o600),
        ("db.sqlite3-wal", 0o600),
        ("db.sqlite3-shm", 0o600),
        ("document_file_storage", 0o700),
        ("search", 0o700),
        (".lock", 0o600),
    ] {
        assert_eq!(mode(&data.join(path)), want, "{path}");
    }
    drop(db);
    Ok(())
}

#[test]
fn after_uploads_search_deletes_backup_and_restore_nothing_is_open_to_others() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let db = open(&data, true)?;
    populate(&db)?;
    let backups = dir.path().join("backups");
    let full = backups.join("full.tar.zst");
    db.backup(&full, None, |_, _| {})?;
    assert_eq!(exposed(&data, false), Vec::<String>::new());
    assert!(
        tree(&data.join("document_file_storage"))
            .iter()
            .filter(|p| p.is_file())
            .count()
            >= 3,
        "stored and deleted files were checked"
    );
    assert_eq!(exposed(&backups, true), Vec::<String>::new());
    drop(db);
    let restored = dir.path().join("restored");
    docmeta_core::restore(&[full], &restored, None)?;
    assert_eq!(exposed(&restored, false), Vec::<String>::new());
    let db = Docmeta::builder().data_dir(&restored).open()?;
    db.run_pending_tasks()?;
    assert_eq!(
        db.system()
            .documents(DocumentQuery::default(), PageRequest::new(1, 10))?
            .items
            .len(),
        3,
        "restored"
    );
    assert_eq!(exposed(&restored, false), Vec::<String>::new());
    Ok(())
}

#[test]
fn an_installation_left_world_readable_is_made_owner_only_when_opened() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let db = open(&data, true)?;
    populate(&db)?;
    drop(db);
    // As an older docmeta left it under umask 022: 0644 files in 0755 directories, and no
    // record that the tree was ever made owner-only.
    let _ = std::fs::remove_file(data.join(".owner-only"));
    for p in tree(&data) {
        let loose = if p.is_dir() { 0o755 } else { 0o644 };
        // Best effort: a file may be gone since the listing (tantivy's garbage collection).
        let _ = std::fs::set_permissions(&p, std::fs::Permissions::from_mode(loose));
    }
    assert!(!exposed(&data, true).is_empty());
    let db = open(&data, false)?;
    // Everything, tantivy's files and every stored or deleted document file included.
    assert_eq!(exposed(&data, true), Vec::<String>::new());
    assert_eq!(
        db.system()
            .documents(DocumentQuery::default(), PageRequest::new(1, 10))?
            .items
            .len(),
        3
    );
    drop(db);
    // An operator (or `cp -r`) loosening the directory again: the next open closes it.
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::set_permissions(
        data.join("config.yml"),
        std::fs::Permissions::from_mode(0o644),
    )
    .expect("chmod");
    drop(Docmeta::builder().data_dir(&data).open()?);
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&data.join("config.yml")), 0o600);
    Ok(())
}
