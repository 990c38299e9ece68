//! The server and the operational commands with document files on S3-compatible object storage,
//! against the S3 server `scripts/s3-up` starts on loopback (its endpoint in
//! `DOCMETA_TEST_S3_ENDPOINT`, its bucket `docmeta-test`). Without it these tests skip with a
//! printed reason, unless `DOCMETA_REQUIRE_S3=1` (set by `.ci/run`) makes that a failure.

mod support;

use std::path::Path;
use std::process::Command;

use support::{ADMIN, Server, agent, docmeta, download, prepare, upload};

/// The test server's endpoint, or `None` (the test skips) when none was started.
fn endpoint() -> Option<String> {
    match std::env::var("DOCMETA_TEST_S3_ENDPOINT") {
        Ok(e) if !e.is_empty() => Some(e),
        _ => {
            assert!(
                std::env::var("DOCMETA_REQUIRE_S3").map_or(true, |v| v != "1"),
                "DOCMETA_REQUIRE_S3=1 but DOCMETA_TEST_S3_ENDPOINT is not set"
            );
            eprintln!(
                "skipped: DOCMETA_TEST_S3_ENDPOINT is not set (scripts/s3-up starts an S3 server)"
            );
            None
        }
    }
}

/// A location of its own in the test bucket.
fn fresh_location(what: &str) -> String {
    let mut suffix = [0u8; 8];
    getrandom::fill(&mut suffix).expect("random");
    let hex: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
    format!("s3://docmeta-test/{what}-{hex}")
}

/// `docmeta` on `dir` with the S3 server's endpoint and credentials in its environment.
fn docmeta_s3(dir: &Path, endpoint: &str) -> Command {
    let mut c = docmeta(dir);
    c.env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ACCESS_KEY_ID", "docmeta-test")
        .env("AWS_SECRET_ACCESS_KEY", "docmeta-test-secret")
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env("AWS_ALLOW_HTTP", "true");
    c
}

fn run(c: &mut Command) -> (bool, String) {
    let out = c.output().expect("run docmeta");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn serve_keeps_uploads_in_the_bucket_and_downloads_them_from_it() {
    let Some(endpoint) = endpoint() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let location = fresh_location("serve");
    prepare(
        dir.path(),
        false,
        &format!("documents_file_storage_location: {location}\n"),
    );
    let (ok, text) = run(docmeta_s3(dir.path(), &endpoint).arg("demo"));
    assert!(ok, "{text}");
    let server = Server::start_command(docmeta_s3(dir.path(), &endpoint), dir.path());
    let content: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let agent = agent();
    let (status, file) = upload(
        &agent,
        &server.base,
        "/api/v4/documents/1/files/",
        ADMIN,
        "scan.pdf",
        &content,
    )
    .expect("upload");
    assert_eq!(status, 201, "{file}");
    let id = file["id"].as_u64().expect("file id");
    let (status, back) = download(
        &agent,
        &server.base,
        &format!("/api/v4/documents/1/files/{id}/download/"),
        ADMIN,
    )
    .expect("download");
    assert_eq!(status, 200);
    assert!(back == content, "the download differs from the upload");
    let local = std::fs::read_dir(dir.path().join("document_file_storage"))
        .expect("dir")
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .count();
    assert_eq!(local, 0, "nothing stored in the data directory");
}

#[test]
fn a_backup_restored_into_a_fresh_directory_and_prefix_has_every_file_intact() {
    let Some(endpoint) = endpoint() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    prepare(&data, false, "");
    let source = fresh_location("backup");
    let (ok, text) = run(docmeta_s3(&data, &endpoint)
        .env("DOCMETA_FILE_STORAGE", &source)
        .arg("demo"));
    assert!(ok, "{text}");
    let archive = dir.path().join("full.tar.zst");
    let (ok, text) = run(docmeta_s3(&data, &endpoint)
        .args(["backup", "--file-storage", &source, "--out"])
        .arg(&archive));
    assert!(ok && text.contains("wrote"), "{text}");
    let target = dir.path().join("restored");
    let restored_location = fresh_location("restored");
    let (ok, text) = run(docmeta_s3(&target, &endpoint)
        .args(["restore", "--file-storage", &restored_location])
        .arg(&archive));
    assert!(ok && text.contains("matches its SHA-256"), "{text}");
    let (ok, text) = run(docmeta_s3(&target, &endpoint).args([
        "storage",
        "verify",
        "--file-storage",
        &restored_location,
    ]));
    assert!(ok && text.contains("all intact"), "{text}");
}

#[test]
fn an_unknown_bucket_is_refused_saying_so() {
    let Some(endpoint) = endpoint() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), false, "");
    let (ok, text) = run(docmeta_s3(dir.path(), &endpoint).args([
        "storage",
        "verify",
        "--file-storage",
        "s3://docmeta-no-such-bucket/x",
    ]));
    assert!(!ok, "{text}");
    assert!(text.contains("the bucket does not exist"), "{text}");
}

/// The objects stored at `location`, read as stored, by their names.
fn objects(endpoint: &str, location: &str) -> Vec<(String, Vec<u8>)> {
    use docmeta_core::FileStorage;
    let settings = [
        ("AWS_ENDPOINT_URL", endpoint),
        ("AWS_ACCESS_KEY_ID", "docmeta-test"),
        ("AWS_SECRET_ACCESS_KEY", "docmeta-test-secret"),
        ("AWS_ALLOW_HTTP", "true"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()));
    let s3 = docmeta_core::S3Storage::open_with(location, settings).expect("open");
    (s3.names().expect("names").into_iter())
        .map(|name| {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut s3.open(&name).expect("open"), &mut bytes)
                .expect("read");
            (name, bytes)
        })
        .collect()
}

#[test]
fn an_encrypted_store_in_a_bucket_holds_menc_objects_and_verifies() {
    let Some(endpoint) = endpoint() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let location = fresh_location("menc");
    prepare(
        dir.path(),
        false,
        &format!(
            "documents_file_storage_location: {location}\ndocuments_file_storage_backend: \
             encrypted\nstorage_kdf_memory_kib: 64\nstorage_kdf_iterations: 1\n"
        ),
    );
    let with_password = |c: &mut Command| {
        c.env("DOCMETA_STORAGE_PASSWORD", "correct horse");
    };
    let mut demo = docmeta_s3(dir.path(), &endpoint);
    with_password(&mut demo);
    let (ok, text) = run(demo.arg("demo"));
    assert!(ok, "{text}");
    let stored = objects(&endpoint, &location);
    assert!(!stored.is_empty(), "the demo's files are in the bucket");
    for (key, bytes) in &stored {
        assert_eq!(&bytes[..4], b"MENC", "{key} is not MENC");
    }
    let mut verify = docmeta_s3(dir.path(), &endpoint);
    with_password(&mut verify);
    let (ok, text) = run(verify.args(["storage", "verify"]));
    assert!(ok && text.contains("all intact"), "{text}");
}

#[test]
fn converting_a_store_in_a_bucket_to_menc_rewrites_every_object() {
    let Some(endpoint) = endpoint() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let location = fresh_location("convert");
    let settings = format!("documents_file_storage_location: {location}\n");
    prepare(dir.path(), false, &settings);
    let (ok, text) = run(docmeta_s3(dir.path(), &endpoint).arg("demo"));
    assert!(ok, "{text}");
    let before = objects(&endpoint, &location);
    assert!(before.iter().all(|(_, bytes)| !bytes.starts_with(b"MENC")));
    prepare(
        dir.path(),
        false,
        &format!(
            "{settings}documents_file_storage_backend: encrypted\nstorage_kdf_memory_kib: 64\n\
             storage_kdf_iterations: 1\n"
        ),
    );
    let (ok, text) = run(docmeta_s3(dir.path(), &endpoint)
        .env("DOCMETA_STORAGE_PASSWORD", "correct horse")
        .args(["storage", "encrypt"]));
    assert!(ok, "{text}");
    let after = objects(&endpoint, &location);
    assert_eq!(after.len(), before.len(), "one object per file");
    assert!(after.iter().all(|(_, bytes)| bytes.starts_with(b"MENC")));
    let (ok, text) = run(docmeta_s3(dir.path(), &endpoint)
        .env("DOCMETA_STORAGE_PASSWORD", "correct horse")
        .args(["storage", "verify"]));
    assert!(ok && text.contains("all intact"), "{text}");
}
