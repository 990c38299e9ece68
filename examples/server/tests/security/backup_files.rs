//! Backups and stored files over HTTP and the command line: backup archives are private, and a
//! stored file copied over another document's file is never downloaded as that document's.
//! (The restore attacks, corrupt or too-new databases and archives that expand beyond their
//! declared sizes, are in `tests/tests/files_backup.rs`.)

use std::path::{Path, PathBuf};

use serde_json::json;

use super::support::*;

/// Stored document files, oldest first (the storage's `.incoming/` and `.deleted/` skipped).
fn stored_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let root = dir.join("document_file_storage");
    for fan in std::fs::read_dir(&root).expect("storage").flatten() {
        if fan.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        for f in std::fs::read_dir(fan.path()).expect("fan-out").flatten() {
            out.push(f.path());
        }
    }
    out.sort_by_key(|p| {
        std::fs::metadata(p)
            .and_then(|m| m.modified())
            .expect("mtime")
    });
    out
}

/// One document with one uploaded file: (document id, file id, content).
struct Uploaded {
    document: i64,
    file: i64,
    content: Vec<u8>,
}

impl Uploaded {
    fn download_path(&self) -> String {
        format!(
            "/api/v4/documents/{}/files/{}/download/",
            self.document, self.file
        )
    }
}

/// A server over a fresh directory (`extra` added to its config) with two documents whose
/// files have the same size and different bytes, uploaded in this order.
fn two_documents_with_same_size_files(
    dir: &Path,
    extra: &str,
    size: usize,
) -> (Server, [Uploaded; 2]) {
    prepare(dir, false, extra);
    let server = Server::start(dir);
    let (status, t) = server.call(
        "POST",
        "/api/v4/documents/types/",
        Some(ADMIN),
        Some(&json!({"label": "Contract"})),
    );
    assert_eq!(status, 201, "{t}");
    let mut uploaded = Vec::new();
    for (label, seed) in [("Mine", 7u64), ("Theirs", 11u64)] {
        let (status, d) = server.call(
            "POST",
            "/api/v4/documents/",
            Some(ADMIN),
            Some(&json!({"document_type_id": t["id"], "label": label})),
        );
        assert_eq!(status, 201, "{d}");
        let document = d["id"].as_i64().expect("document id");
        let mut rng = Rng(seed);
        let content: Vec<u8> = (0..size).map(|_| rng.next() as u8).collect();
        let (status, f) = upload(
            &agent(),
            &server.base,
            &format!("/api/v4/documents/{document}/files/"),
            ADMIN,
            &format!("{label}.pdf"),
            &content,
        )
        .expect("upload");
        assert_eq!(status, 201, "{f}");
        let file = f["id"].as_i64().expect("file id");
        uploaded.push(Uploaded {
            document,
            file,
            content,
        });
    }
    let [mine, theirs]: [Uploaded; 2] = uploaded.try_into().ok().expect("two uploads");
    (server, [mine, theirs])
}

/// Copies the second stored file's bytes over the first's (same size), as someone with write
/// access to the storage directory would.
fn copy_theirs_over_mine(dir: &Path) {
    let stored = stored_files(dir);
    assert_eq!(stored.len(), 2, "only the two uploads are stored");
    std::fs::copy(&stored[1], &stored[0]).expect("copy over");
}

/// What a client got for `mine`: never a complete `200` carrying `theirs`' bytes.
fn assert_not_served_as_theirs(
    got: Result<(u16, Vec<u8>), ureq::Error>,
    mine: &Uploaded,
    theirs: &Uploaded,
) {
    match got {
        // The transfer broke off: the client knows it has no valid file.
        Err(_) => {}
        Ok((status, body)) => {
            assert_ne!(
                body, theirs.content,
                "the other document's bytes were served"
            );
            if status == 200 {
                assert!(
                    body.len() < mine.content.len(),
                    "a 200 with a complete body of {} bytes",
                    body.len()
                );
            }
        }
    }
}

#[test]
fn a_swapped_plain_file_is_refused_with_an_error_not_served_as_the_other_document() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, [mine, theirs]) = two_documents_with_same_size_files(dir.path(), "", 200_000);
    copy_theirs_over_mine(dir.path());
    let (status, body) = download(&agent(), &server.base, &mine.download_path(), ADMIN)
        .expect("an answer, not a broken transfer: the file is checked before sending");
    assert_eq!(status, 500, "a checksum mismatch is a server-side error");
    assert_ne!(body, theirs.content);
    // The other document's own download is unaffected.
    let (status, body) =
        download(&agent(), &server.base, &theirs.download_path(), ADMIN).expect("download");
    assert_eq!(
        (status, sha256_hex(&body)),
        (200, sha256_hex(&theirs.content))
    );
}

#[test]
fn a_swapped_large_plain_file_download_breaks_off_before_it_completes() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Every file counts as large here: checked while it streams, not before.
    let (server, [mine, theirs]) =
        two_documents_with_same_size_files(dir.path(), "download_verify_max_bytes: 0\n", 700_000);
    copy_theirs_over_mine(dir.path());
    let got = download(&agent(), &server.base, &mine.download_path(), ADMIN);
    assert_not_served_as_theirs(got, &mine, &theirs);
}

#[test]
fn a_swapped_encrypted_file_fails_to_decrypt_instead_of_serving_the_other_document() {
    let dir = tempfile::tempdir().expect("tempdir");
    let secrets = tempfile::tempdir().expect("password directory");
    let password = secrets.path().join("storage-password");
    std::fs::write(&password, "correct horse battery staple\n").expect("password");
    let extra = format!(
        "documents_file_storage_backend: encrypted\nstorage_kdf_memory_kib: 64\n\
         storage_kdf_iterations: 1\nstorage_password_file: {}\n",
        password.display()
    );
    for (large, size) in [(false, 200_000), (true, 700_000)] {
        let data = dir.path().join(format!("large-{large}"));
        let extra = if large {
            format!("{extra}download_verify_max_bytes: 0\n")
        } else {
            extra.clone()
        };
        let (server, [mine, theirs]) = two_documents_with_same_size_files(&data, &extra, size);
        assert!(
            stored_files(&data)
                .iter()
                .all(|p| std::fs::read(p).expect("read").starts_with(b"MENC")),
            "the storage encrypts"
        );
        copy_theirs_over_mine(&data);
        let got = download(&agent(), &server.base, &mine.download_path(), ADMIN);
        // The first chunk fails authentication when the file is opened: an error answer.
        let (status, body) = got.expect("an answer: the file is refused when it is opened");
        assert_eq!(status, 500, "large: {large}");
        assert_ne!(body, theirs.content);
    }
}

/// The config of an encrypted storage whose password lies in `secrets`.
fn encrypted_config(secrets: &Path) -> String {
    let password = secrets.join("storage-password");
    std::fs::write(&password, "correct horse battery staple\n").expect("password");
    format!(
        "documents_file_storage_backend: encrypted\nstorage_kdf_memory_kib: 64\n\
         storage_kdf_iterations: 1\nstorage_password_file: {}\n",
        password.display()
    )
}

/// The offset of a byte inside the `chunk`-th (0-based) sealed chunk of a MENC file.
fn inside_menc_chunk(chunk: usize) -> usize {
    let menc = docmeta_core::menc::HEADER_LEN;
    menc + chunk * (docmeta_core::menc::DEFAULT_CHUNK as usize + 16) + 100
}

/// Flips one byte of the first uploaded file's stored bytes, as a failing disk would.
fn damage_first_stored_file(dir: &Path, at: usize) {
    let path = stored_files(dir).remove(0);
    let mut bytes = std::fs::read(&path).expect("read");
    bytes[at] ^= 0x20;
    std::fs::write(&path, bytes).expect("write");
}

/// Waits (up to 10 s, the log is written by a background thread) for a line of `log` that
/// contains every one of `words`; the log's text.
fn wait_for_log_line(log: &Path, words: &[&str]) -> String {
    let started = std::time::Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.lines().any(|l| words.iter().all(|w| l.contains(w))) {
            return text;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "no log line with {words:?}:\n{text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn a_streamed_encrypted_download_whose_first_chunk_fails_authentication_is_a_logged_json_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let secrets = tempfile::tempdir().expect("password directory");
    let data = dir.path().join("data");
    let log = dir.path().join("server.log");
    // Streamed: only the first chunk is checked before the answer starts.
    let extra = format!(
        "{}download_verify_max_bytes: 0\n",
        encrypted_config(secrets.path())
    );
    let (server, [mine, _]) = two_documents_with_same_size_files(&data, &extra, 700_000);
    drop(server);
    let server = Server::start_logging_to(&data, &log);
    damage_first_stored_file(&data, inside_menc_chunk(0));
    let (status, body) = server.get(&mine.download_path(), ADMIN);
    assert_eq!(status, 500, "{body}");
    assert!(body["detail"].is_string(), "a JSON error: {body}");
    wait_for_log_line(
        &log,
        &["decryption failed", &format!("document file {}", mine.file)],
    );
}

#[test]
fn an_encrypted_download_whose_later_chunk_fails_before_the_answer_is_a_json_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let secrets = tempfile::tempdir().expect("password directory");
    let data = dir.path().join("data");
    // Small enough to be checked whole (every chunk) before the first byte is sent.
    let (server, [mine, _]) =
        two_documents_with_same_size_files(&data, &encrypted_config(secrets.path()), 300_000);
    damage_first_stored_file(&data, inside_menc_chunk(3));
    let (status, body) = server.get(&mine.download_path(), ADMIN);
    assert_eq!(status, 500, "{body}");
    assert!(body["detail"].is_string(), "a JSON error: {body}");
}

#[test]
fn a_streamed_encrypted_download_whose_later_chunk_fails_breaks_off_and_logs_the_file_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let secrets = tempfile::tempdir().expect("password directory");
    let data = dir.path().join("data");
    let log = dir.path().join("server.log");
    let extra = format!(
        "{}download_verify_max_bytes: 0\n",
        encrypted_config(secrets.path())
    );
    let (server, [mine, _]) = two_documents_with_same_size_files(&data, &extra, 700_000);
    drop(server);
    let server = Server::start_logging_to(&data, &log);
    damage_first_stored_file(&data, inside_menc_chunk(6));
    match download(&agent(), &server.base, &mine.download_path(), ADMIN) {
        // The transfer broke off: the client knows it has no valid file.
        Err(_) => {}
        Ok((status, body)) => {
            assert_eq!(status, 200);
            assert!(
                body.len() < mine.content.len(),
                "a complete body of {} bytes",
                body.len()
            );
        }
    }
    wait_for_log_line(&log, &["download failed", &format!("file={}", mine.file)]);
}

#[cfg(unix)]
#[test]
fn docmeta_backup_writes_an_archive_only_its_owner_can_read() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    prepare(&data, false, "");
    let out = dir.path().join("backups");
    let mode = |p: &Path| std::fs::metadata(p).expect("archive").permissions().mode() & 0o777;
    let full = out.join("full.tar.zst");
    let status = docmeta(&data)
        .arg("backup")
        .arg("--out")
        .arg(&full)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("docmeta backup");
    assert!(status.success());
    assert_eq!(mode(&full), 0o600, "the archive holds the secret key");
    let inc = out.join("inc.tar.zst");
    let status = docmeta(&data)
        .arg("backup")
        .arg("--out")
        .arg(&inc)
        .arg("--since")
        .arg(&full)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("docmeta backup --since");
    assert!(status.success());
    assert_eq!(mode(&inc), 0o600, "an incremental archive too");
}

/// Every path below `dir` that the group or others may read, write or enter (links not
/// followed): its path and mode.
#[cfg(unix)]
fn open_to_others(dir: &Path) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(p) = pending.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue; // removed meanwhile
        };
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            out.push(format!("{} {mode:o}", p.display()));
        }
        if meta.is_dir() {
            pending.extend(
                std::fs::read_dir(&p)
                    .expect("read_dir")
                    .map(|e| e.expect("entry").path()),
            );
        }
    }
    out
}

/// The data directory at rest: one that an operator made with the shell's umask (0755,
/// config.yml 0644), served, uploaded into (a large upload goes through `.spool/`), searched,
/// with a file deleted and a backup taken beside the server: nothing in it is open to the group
/// or others, tantivy's segment files included (`docmeta` runs with umask 077).
#[cfg(unix)]
#[test]
fn a_served_data_directory_is_owner_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let (server, [mine, _]) = two_documents_with_same_size_files(&data, "", 600_000);
    let (status, answer) = server.call(
        "DELETE",
        &format!("/api/v4/documents/{}/files/{}/", mine.document, mine.file),
        Some(ADMIN),
        None,
    );
    assert_eq!(status, 204, "{answer}");
    // Indexed by the server's worker: wait until search finds the documents.
    let mut found = false;
    for _ in 0..200 {
        let (status, page) = server.get("/api/v4/search/documents/?q=Theirs", ADMIN);
        if status == 200 && page["count"].as_u64().is_some_and(|n| n > 0) {
            found = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(found, "the index never answered");
    assert!(
        data.join(".spool").is_dir(),
        "the large uploads were spooled"
    );
    let status = docmeta(&data)
        .arg("backup")
        .arg("--out")
        .arg(dir.path().join("backups/full.tar.zst"))
        .stdout(std::process::Stdio::null())
        .status()
        .expect("docmeta backup");
    assert!(status.success());
    assert_eq!(open_to_others(&data), Vec::<String>::new(), "while served");
    assert_eq!(
        open_to_others(&dir.path().join("backups")),
        Vec::<String>::new()
    );
    drop(server);
    assert_eq!(
        open_to_others(&data),
        Vec::<String>::new(),
        "after the server stopped"
    );
}
