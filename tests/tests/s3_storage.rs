//! Document files on S3-compatible object storage, against a real S3 server
//! on loopback: `scripts/s3-up` starts one (moto's) and prints its endpoint, which these tests
//! read from `DOCMETA_TEST_S3_ENDPOINT` (its bucket `docmeta-test`, any credentials). Without
//! it they skip with a printed reason, unless `DOCMETA_REQUIRE_S3=1` (set by `.ci/run`) makes
//! that a failure. Each test works under a prefix of its own.

use std::io::{self, Read};
use std::sync::Arc;

use docmeta_core::S3Storage;
use docmeta_core::menc::{KdfParams, Keyring, MAGIC, Password};
use docmeta_core::{Docmeta, ErrorKind, FileDamage, Result};
use docmeta_core::{EncryptedStorage, FileStorage, generate_name};

const BUCKET: &str = "docmeta-test";

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

fn settings(endpoint: &str) -> Vec<(String, String)> {
    [
        ("AWS_ENDPOINT_URL", endpoint),
        ("AWS_ACCESS_KEY_ID", "docmeta-test"),
        ("AWS_SECRET_ACCESS_KEY", "docmeta-test-secret"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
        ("AWS_ALLOW_HTTP", "true"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// A storage under a fresh prefix of the test bucket.
fn fresh_storage(endpoint: &str) -> Result<S3Storage> {
    let prefix = generate_name()?.replace('/', "");
    S3Storage::open_with(&format!("s3://{BUCKET}/t-{prefix}"), settings(endpoint))
}

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 13) as u8)
        .collect()
}

fn read_all(mut r: impl Read) -> Vec<u8> {
    let mut out = Vec::new();
    r.read_to_end(&mut out).expect("read");
    out
}

fn keyring() -> Arc<Keyring> {
    let params = KdfParams {
        memory_kib: 64,
        iterations: 1,
        parallelism: 1,
    };
    let (keyring, _) = Keyring::create(Password::new("correct horse"), params).expect("keyring");
    Arc::new(keyring)
}

fn fast_config() -> docmeta_core::Config {
    docmeta_core::Config::parse("password_hash_memory_kib: 64\npassword_hash_iterations: 1\n")
        .expect("config")
}

#[test]
fn a_stored_file_reads_back_has_its_length_and_is_gone_once_deleted() -> Result<()> {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let s3 = fresh_storage(&endpoint)?;
    let content = bytes(100_000, 1);
    let name = s3.put(&mut &content[..])?;
    assert_eq!(read_all(s3.open(&name)?), content);
    assert_eq!(s3.stored_len(&name)?, Some(100_000));
    assert_eq!(s3.names()?, vec![name.clone()]);
    s3.delete(&name)?;
    assert_eq!(s3.stored_len(&name)?, None);
    assert_eq!(
        s3.open(&name).map(drop).map_err(|e| e.kind()),
        Err(ErrorKind::Storage)
    );
    s3.delete(&name)?;
    Ok(())
}

#[test]
fn a_deleted_file_stays_readable_for_a_backup() -> Result<()> {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let s3 = fresh_storage(&endpoint)?;
    let content = bytes(5000, 2);
    let name = s3.put(&mut &content[..])?;
    s3.delete(&name)?;
    assert_eq!(s3.kept_len(&name)?, Some(5000));
    assert_eq!(read_all(s3.open_kept(&name)?), content);
    assert!(s3.names()?.is_empty(), "kept aside, not stored");
    Ok(())
}

#[test]
fn a_file_larger_than_a_part_goes_up_in_parts_and_streams_back() -> Result<()> {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let s3 = fresh_storage(&endpoint)?;
    // 2.5 parts of 8 MiB: a multipart upload of three parts, the last one short.
    let content = bytes(20 << 20, 3);
    let name = s3.put(&mut &content[..])?;
    assert_eq!(s3.stored_len(&name)?, Some(20 << 20));
    let mut download = s3.open(&name)?;
    let mut back = Vec::new();
    let mut buf = vec![0u8; 100_000];
    loop {
        let n = download.read(&mut buf).expect("read");
        if n == 0 {
            break;
        }
        back.extend_from_slice(&buf[..n]);
    }
    assert!(back == content, "the download differs from the upload");
    Ok(())
}

/// A reader that fails after `left` bytes, like a client that breaks off an upload.
struct BreaksOff {
    left: usize,
}

impl Read for BreaksOff {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "client gone",
            ));
        }
        let n = buf.len().min(self.left);
        buf[..n].fill(7);
        self.left -= n;
        Ok(n)
    }
}

#[test]
fn an_upload_that_breaks_off_after_a_part_leaves_no_object() -> Result<()> {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let s3 = fresh_storage(&endpoint)?;
    let err = s3
        .put(&mut BreaksOff { left: 10 << 20 })
        .expect_err("a broken upload fails");
    assert!(err.to_string().contains("client gone"), "{err}");
    assert!(s3.names()?.is_empty(), "the aborted upload left an object");
    Ok(())
}

#[test]
fn encrypted_files_on_s3_are_menc_bound_to_their_name() -> Result<()> {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let s3 = fresh_storage(&endpoint)?;
    let storage = EncryptedStorage::new(Arc::new(s3.clone()), keyring());
    let content = bytes(300_000, 4);
    let name = storage.put(&mut &content[..])?;
    let raw = read_all(s3.open(&name)?);
    assert_eq!(&raw[..4], MAGIC, "stored as MENC");
    assert!(!raw.windows(64).any(|w| w == &content[1000..1064]));
    assert_eq!(read_all(storage.open(&name)?), content);
    // Another file's bytes copied over this name fail authentication.
    let other = storage.put(&mut &b"another document"[..])?;
    s3.put_as(&name, &mut &read_all(s3.open(&other)?)[..])?;
    let err = storage.open(&name).map(drop).expect_err("swapped bytes");
    assert_eq!(err.kind(), ErrorKind::Decryption, "{err}");
    Ok(())
}

#[test]
fn a_document_file_added_through_docmeta_is_downloaded_from_the_bucket() -> Result<()> {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let s3 = fresh_storage(&endpoint)?;
    let db = Docmeta::builder()
        .data_dir(dir.path())
        .config(fast_config())
        .file_storage(EncryptedStorage::new(Arc::new(s3.clone()), keyring()))
        .open()?;
    let admin = db.system();
    let t = admin.create_document_type("Scan")?;
    let d = admin.create_document(t.id, "Invoice", &[])?.document;
    let content = bytes(200_000, 5);
    let file = admin.add_file(d.id, "invoice.pdf", &mut &content[..])?;
    assert_eq!(admin.read_file(file.id)?, content);
    assert_eq!(s3.names()?.len(), 1, "the file is an object of the bucket");
    let on_disk = std::fs::read_dir(dir.path().join("document_file_storage"))
        .expect("dir")
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .count();
    assert_eq!(on_disk, 0, "nothing stored in the data directory");
    Ok(())
}

#[test]
fn verify_storage_finds_a_damaged_object() -> Result<()> {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let s3 = fresh_storage(&endpoint)?;
    let db = Docmeta::builder()
        .data_dir(dir.path())
        .config(fast_config())
        .file_storage(s3.clone())
        .open()?;
    let admin = db.system();
    let t = admin.create_document_type("Scan")?;
    let d = admin.create_document(t.id, "Invoice", &[])?.document;
    let file = admin.add_file(d.id, "invoice.pdf", &mut &bytes(50_000, 6)[..])?;
    assert!(db.verify_storage(|_, _| {})?.is_intact());
    let [name] = &s3.names()?[..] else {
        panic!("one object expected");
    };
    let mut damaged = bytes(50_000, 6);
    damaged[777] ^= 1;
    s3.put_as(name, &mut &damaged[..])?;
    let report = db.verify_storage(|_, _| {})?;
    assert_eq!(report.damaged.len(), 1, "{report:?}");
    assert_eq!(report.damaged[0].file_id, file.id);
    assert!(
        matches!(report.damaged[0].damage, FileDamage::WrongChecksum { .. }),
        "{report:?}"
    );
    Ok(())
}

#[test]
fn a_backup_archives_the_objects_of_the_bucket() -> Result<()> {
    let Some(endpoint) = endpoint() else {
        return Ok(());
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let s3 = fresh_storage(&endpoint)?;
    let db = Docmeta::builder()
        .data_dir(dir.path().join("data"))
        .config(fast_config())
        .file_storage(s3.clone())
        .open()?;
    let admin = db.system();
    let t = admin.create_document_type("Scan")?;
    let d = admin.create_document(t.id, "Invoice", &[])?.document;
    let kept = admin.add_file(d.id, "kept.pdf", &mut &bytes(70_000, 7)[..])?;
    let archive = dir.path().join("backup.tar.zst");
    let report = db.backup(&archive, None, |_, _| {})?;
    assert!(report.manifest.is_intact(), "{:?}", report.manifest.damaged);
    assert_eq!(report.files_archived, 1);
    let [name] = &s3.names()?[..] else {
        panic!("one object expected");
    };
    let entry = (report.manifest.files.iter())
        .find(|f| f.path == format!("document_file_storage/{name}"))
        .expect("the object is archived under its name");
    assert_eq!(
        (entry.size, entry.sha256.as_str()),
        (kept.size, kept.checksum.as_str())
    );
    Ok(())
}

#[test]
fn an_unknown_bucket_is_refused_at_open_saying_so() {
    let Some(endpoint) = endpoint() else {
        return;
    };
    let err = S3Storage::open_with("s3://docmeta-no-such-bucket/x", settings(&endpoint))
        .expect_err("no such bucket");
    assert_eq!(err.kind(), ErrorKind::Storage, "{err}");
    assert!(
        err.to_string().contains("the bucket does not exist"),
        "{err}"
    );
}

#[test]
fn an_unreachable_endpoint_is_refused_at_open_saying_so() {
    if endpoint().is_none() {
        return;
    }
    // A loopback port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let started = std::time::Instant::now();
    let err = S3Storage::open_with(
        &format!("s3://{BUCKET}/x"),
        settings(&format!("http://127.0.0.1:{port}")),
    )
    .expect_err("nothing listens");
    assert_eq!(err.kind(), ErrorKind::Storage, "{err}");
    assert!(err.to_string().contains("cannot be reached"), "{err}");
    assert!(
        started.elapsed().as_secs() < 30,
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn missing_credentials_are_refused_before_any_request() {
    let err = S3Storage::open_with(
        "s3://docmeta-test/x",
        [(
            "AWS_ENDPOINT_URL".to_owned(),
            "http://127.0.0.1:9".to_owned(),
        )],
    )
    .expect_err("no credentials");
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("AWS_ACCESS_KEY_ID"), "{err}");
}
