//! Damaged stored files are reported, never taken for good:
//! `Docmeta::verify_storage` reads every stored file and lists the damaged ones, and a backup
//! lists the files it could not read intact in its manifest, which the restore reports.

use std::path::{Path, PathBuf};

use docmeta_core::menc;
use docmeta_core::{Docmeta, DocumentFile, Error, FileDamage, Result};
use docmeta_core::{restore, verify_backup};

const PASSWORD: &str = "correct horse";
/// Large enough for five MENC chunks of 64 KiB.
const SIZE: usize = 300_000;

fn write_config(dir: &Path, encrypted: bool) {
    std::fs::create_dir_all(dir).expect("dir");
    let text = format!(
        "password_hash_memory_kib: 64\npassword_hash_iterations: 1\nstorage_kdf_memory_kib: 64\n\
         storage_kdf_iterations: 1\ndocuments_file_storage_backend: {}\n",
        if encrypted { "encrypted" } else { "plain" }
    );
    std::fs::write(dir.join("config.yml"), text).expect("config");
}

fn open(dir: &Path, encrypted: bool) -> Result<Docmeta> {
    let b = Docmeta::builder().data_dir(dir);
    if encrypted {
        b.storage_password(PASSWORD).open()
    } else {
        b.open()
    }
}

/// A data directory with `n` documents of one file each; the files in upload order.
fn store_with_files(dir: &Path, encrypted: bool, n: u8) -> Result<(Docmeta, Vec<DocumentFile>)> {
    write_config(dir, encrypted);
    let db = open(dir, encrypted)?;
    let admin = db.system();
    let t = admin.create_document_type("Scan")?;
    let mut files = Vec::new();
    for i in 0..n {
        let d = admin
            .create_document(t.id, &format!("Scan {i}"), &[])?
            .document;
        let content: Vec<u8> = (0..SIZE)
            .map(|k| (k as u8).wrapping_mul(7).wrapping_add(i))
            .collect();
        files.push(admin.add_file(d.id, &format!("scan-{i}.pdf"), &mut &content[..])?);
        // File times come from the kernel's coarse clock (a few milliseconds): apart, so that
        // `stored_path` tells the files apart by them.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Ok((db, files))
}

/// Where `file` is stored on disk (its storage name is not public: found by its upload order,
/// the stored files' modification times).
fn stored_path(dir: &Path, files: &[DocumentFile], file: &DocumentFile) -> PathBuf {
    let root = dir.join("document_file_storage");
    let mut stored = Vec::new();
    for fan in std::fs::read_dir(&root).expect("storage").flatten() {
        if fan.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        for f in std::fs::read_dir(fan.path()).expect("fan-out").flatten() {
            let modified = f.metadata().and_then(|m| m.modified()).expect("mtime");
            stored.push((modified, f.path()));
        }
    }
    assert_eq!(stored.len(), files.len(), "one stored file per record");
    stored.sort();
    let index = files.iter().position(|f| f.id == file.id).expect("known");
    stored.swap_remove(index).1
}

fn flip_byte(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).expect("read");
    bytes[at] ^= 0x20;
    std::fs::write(path, bytes).expect("write");
}

/// The offset of a byte inside the `chunk`-th (0-based) sealed chunk of a MENC file.
fn inside_chunk(chunk: usize) -> usize {
    menc::HEADER_LEN + chunk * (menc::DEFAULT_CHUNK as usize + 16) + 100
}

#[test]
fn an_intact_storage_verifies_with_every_file_checked() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, files) = store_with_files(dir.path(), false, 3)?;
    let report = db.verify_storage(|_, _| {})?;
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.files_checked, files.len() as u64);
    assert_eq!(report.bytes_checked, (SIZE * files.len()) as u64);
    Ok(())
}

#[test]
fn verify_storage_reports_progress_after_each_file() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, _) = store_with_files(dir.path(), false, 3)?;
    let mut calls = Vec::new();
    db.verify_storage(|done, total| calls.push((done, total)))?;
    assert_eq!(calls, vec![(1, 3), (2, 3), (3, 3)]);
    Ok(())
}

#[test]
fn a_missing_file_is_listed_as_missing() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, files) = store_with_files(dir.path(), false, 3)?;
    std::fs::remove_file(stored_path(dir.path(), &files, &files[1])).expect("remove");
    let report = db.verify_storage(|_, _| {})?;
    assert_eq!(report.files_checked, 3);
    assert_eq!(report.damaged.len(), 1, "{report:?}");
    let damaged = &report.damaged[0];
    assert_eq!(
        (damaged.file_id, damaged.document_id, damaged.damage.clone()),
        (files[1].id, files[1].document_id, FileDamage::Missing)
    );
    Ok(())
}

#[test]
fn a_truncated_plain_file_is_listed_with_its_wrong_size() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, files) = store_with_files(dir.path(), false, 2)?;
    let path = stored_path(dir.path(), &files, &files[0]);
    let bytes = std::fs::read(&path).expect("read");
    std::fs::write(&path, &bytes[..1000]).expect("truncate");
    let report = db.verify_storage(|_, _| {})?;
    assert_eq!(report.damaged.len(), 1, "{report:?}");
    assert_eq!(report.damaged[0].file_id, files[0].id);
    assert_eq!(
        report.damaged[0].damage,
        FileDamage::WrongSize {
            expected: SIZE as u64,
            found: 1000
        }
    );
    Ok(())
}

#[test]
fn a_plain_file_with_a_flipped_bit_is_listed_with_its_wrong_checksum() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, files) = store_with_files(dir.path(), false, 2)?;
    flip_byte(&stored_path(dir.path(), &files, &files[1]), 123_456);
    let report = db.verify_storage(|_, _| {})?;
    assert_eq!(report.damaged.len(), 1, "{report:?}");
    assert_eq!(report.damaged[0].file_id, files[1].id);
    match &report.damaged[0].damage {
        FileDamage::WrongChecksum { expected, found } => {
            assert_eq!(expected, &files[1].checksum);
            assert_ne!(found, expected);
        }
        other => panic!("expected a wrong checksum, got {other}"),
    }
    Ok(())
}

#[test]
fn an_encrypted_file_whose_later_chunk_fails_authentication_is_listed() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, files) = store_with_files(dir.path(), true, 2)?;
    flip_byte(&stored_path(dir.path(), &files, &files[0]), inside_chunk(3));
    let report = db.verify_storage(|_, _| {})?;
    assert_eq!(report.files_checked, 2);
    assert_eq!(report.damaged.len(), 1, "{report:?}");
    let damaged = &report.damaged[0];
    assert_eq!(damaged.file_id, files[0].id);
    assert!(damaged.encrypted);
    assert!(
        matches!(damaged.damage, FileDamage::FailedAuthentication { .. }),
        "{}",
        damaged.damage
    );
    Ok(())
}

#[test]
fn an_encrypted_file_whose_first_chunk_fails_authentication_is_listed() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, files) = store_with_files(dir.path(), true, 2)?;
    flip_byte(&stored_path(dir.path(), &files, &files[1]), inside_chunk(0));
    let report = db.verify_storage(|_, _| {})?;
    assert_eq!(report.damaged.len(), 1, "{report:?}");
    assert_eq!(report.damaged[0].file_id, files[1].id);
    assert!(matches!(
        report.damaged[0].damage,
        FileDamage::FailedAuthentication { .. }
    ));
    Ok(())
}

#[test]
fn verifying_encrypted_files_without_the_password_is_refused() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, _) = store_with_files(dir.path(), true, 1)?;
    drop(db);
    write_config(dir.path(), false);
    let plain = open(dir.path(), false)?;
    let err = plain
        .verify_storage(|_, _| {})
        .expect_err("cannot check MENC without the key");
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    Ok(())
}

#[test]
fn a_download_of_an_encrypted_file_failing_authentication_names_the_file() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, files) = store_with_files(dir.path(), true, 1)?;
    flip_byte(&stored_path(dir.path(), &files, &files[0]), inside_chunk(0));
    let err = db.system().open_file(files[0].id).expect_err("refused");
    assert!(matches!(err, Error::Decryption(_)), "{err}");
    assert!(
        err.to_string()
            .contains(&format!("document file {}", files[0].id)),
        "{err}"
    );
    Ok(())
}

#[test]
fn a_backup_lists_a_damaged_plain_file_in_its_manifest() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, files) = store_with_files(&dir.path().join("data"), false, 3)?;
    flip_byte(
        &stored_path(&dir.path().join("data"), &files, &files[2]),
        5000,
    );
    let out = dir.path().join("full.tar.zst");
    let report = db.backup(&out, None, |_, _| {})?;
    assert!(!report.manifest.is_intact());
    assert_eq!(report.manifest.damaged.len(), 1, "{:?}", report.manifest);
    let damaged = &report.manifest.damaged[0];
    assert_eq!(damaged.document_file_id, Some(files[2].id.0));
    assert!(matches!(damaged.damage, FileDamage::WrongChecksum { .. }));
    assert_eq!(
        report.files_archived, 3,
        "the damaged bytes are archived as found"
    );
    // The archive's own manifest says so too.
    assert_eq!(verify_backup(&out)?.damaged, report.manifest.damaged);
    Ok(())
}

#[test]
fn a_backup_lists_a_missing_file_and_archives_every_other() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let (db, files) = store_with_files(&data, false, 3)?;
    std::fs::remove_file(stored_path(&data, &files, &files[0])).expect("remove");
    let report = db.backup(&dir.path().join("full.tar.zst"), None, |_, _| {})?;
    assert_eq!(report.files_archived, 2);
    assert_eq!(report.manifest.damaged.len(), 1, "{:?}", report.manifest);
    assert_eq!(
        (
            report.manifest.damaged[0].document_file_id,
            report.manifest.damaged[0].damage.clone()
        ),
        (Some(files[0].id.0), FileDamage::Missing)
    );
    Ok(())
}

#[test]
fn a_backup_lists_an_encrypted_file_failing_authentication() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let (db, files) = store_with_files(&data, true, 2)?;
    flip_byte(&stored_path(&data, &files, &files[1]), inside_chunk(2));
    let report = db.backup(&dir.path().join("full.tar.zst"), None, |_, _| {})?;
    assert_eq!(report.manifest.damaged.len(), 1, "{:?}", report.manifest);
    assert_eq!(
        report.manifest.damaged[0].document_file_id,
        Some(files[1].id.0)
    );
    assert!(matches!(
        report.manifest.damaged[0].damage,
        FileDamage::FailedAuthentication { .. }
    ));
    Ok(())
}

#[test]
fn an_intact_backup_lists_nothing_damaged() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, _) = store_with_files(&dir.path().join("data"), true, 2)?;
    let report = db.backup(&dir.path().join("full.tar.zst"), None, |_, _| {})?;
    assert!(report.manifest.is_intact(), "{:?}", report.manifest.damaged);
    Ok(())
}

#[test]
fn an_incremental_backup_keeps_listing_what_its_base_found_damaged() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let (db, files) = store_with_files(&data, false, 2)?;
    flip_byte(&stored_path(&data, &files, &files[0]), 10);
    let full = dir.path().join("full.tar.zst");
    db.backup(&full, None, |_, _| {})?;
    let inc = db.backup(&dir.path().join("inc.tar.zst"), Some(&full), |_, _| {})?;
    assert_eq!(inc.files_archived, 0);
    assert_eq!(inc.manifest.damaged.len(), 1, "{:?}", inc.manifest);
    assert_eq!(
        inc.manifest.damaged[0].document_file_id,
        Some(files[0].id.0)
    );
    Ok(())
}

#[test]
fn a_restore_reports_the_damaged_files_and_verifies_with_an_intact_one() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let (db, files) = store_with_files(&data, false, 2)?;
    // The first file is the one a restore used to download for its verification.
    flip_byte(&stored_path(&data, &files, &files[0]), 10);
    let full = dir.path().join("full.tar.zst");
    db.backup(&full, None, |_, _| {})?;
    drop(db);
    let target = dir.path().join("restored");
    let report = restore(&[full], &target, None)?;
    assert_eq!(report.manifest.damaged.len(), 1);
    assert_eq!(
        report.file_checked.map(|(id, _)| id),
        Some(files[1].id),
        "verified with the intact file, not the damaged one"
    );
    // The restored damaged file is still refused, never served as good.
    let restored = Docmeta::builder().data_dir(&target).open()?;
    assert!(restored.system().read_file(files[0].id).is_err());
    Ok(())
}
