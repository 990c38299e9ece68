//! Faults: a full disk during an upload, a database write and a backup gives a clear
//! error and leaves no corrupt state; a read-only data directory is reported at start.
//!
//! The full and read-only disks are small tmpfs mounts made by the test, which needs the right to
//! mount (root, or CAP_SYS_ADMIN). Without it the test says why it is skipped; with
//! `DOCMETA_REQUIRE_FAULTS=1` that is a failure instead.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use support::{ADMIN, Server};

/// A tmpfs of `size` mounted on a fresh directory, unmounted on drop.
struct Tmpfs {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("mnt");
        std::fs::create_dir(&path).expect("mount point");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs { path, _dir: dir }),
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
                    "skipped: cannot mount a tmpfs to simulate a full disk ({why}); needs root or CAP_SYS_ADMIN"
                );
                None
            }
        }
    }

    fn remount_read_only(&self) {
        let status = Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.path)
            .status()
            .expect("mount");
        assert!(status.success(), "remount read-only");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

/// Fills `dir`'s file system until a write fails; returns the filler's path.
fn fill(dir: &Path) -> PathBuf {
    use std::io::Write;
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).expect("filler");
    let block = vec![0x5a; 64 << 10];
    while f.write_all(&block).is_ok() {}
    let _ = f.sync_all();
    path
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_full_disk_is_a_clear_error_and_corrupts_nothing() {
    let Some(disk) = Tmpfs::mount("24m") else {
        return;
    };
    let data = disk.path.join("data");
    support::prepare(&data, false, "");
    let s = Server::start(&data);
    let (status, t) = s.call(
        "POST",
        "/api/v4/documents/types/",
        Some(ADMIN),
        Some(&json!({"label": "Scans"})),
    );
    assert_eq!(status, 201, "{t}");
    let (status, d) = s.call(
        "POST",
        "/api/v4/documents/",
        Some(ADMIN),
        Some(&json!({"document_type_id": t["id"], "label": "before"})),
    );
    assert_eq!(status, 201, "{d}");
    let files = format!("/api/v4/documents/{}/files/", d["id"]);
    let agent = support::agent();

    // An upload larger than the space left.
    let big = vec![7u8; 40 << 20];
    let (status, body) = support::upload_expecting_early_answer(&s.base, &files, ADMIN, &big);
    assert_eq!(status, 507, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .is_some_and(|d| d.contains("no space left")),
        "{body}"
    );
    let (status, listed) = s.get(&files, ADMIN);
    assert_eq!(
        (status, listed["results"].as_array().map(Vec::len)),
        (200, Some(0)),
        "no record of the failed upload"
    );
    let storage = data.join("document_file_storage");
    assert!(
        entries(&storage.join(".incoming")).is_empty(),
        "no partial file left behind"
    );

    // The space is back: the same server takes a file.
    let (status, f) =
        support::upload(&agent, &s.base, &files, ADMIN, "small.bin", b"fits").expect("upload");
    assert_eq!(status, 201, "{f}");

    // A database write on a full disk.
    let filler = fill(&disk.path);
    let (status, body) = s.call(
        "POST",
        "/api/v4/documents/",
        Some(ADMIN),
        Some(&json!({"document_type_id": t["id"], "label": "while full"})),
    );
    assert!(
        status == 507 || status == 201,
        "a write on a full disk answered {status}: {body}"
    );
    let full_write_refused = status == 507;
    let (status, body) =
        support::upload_expecting_early_answer(&s.base, &files, ADMIN, &[1u8; 256 << 10]);
    assert_eq!(status, 507, "{body}");
    std::fs::remove_file(&filler).expect("free the disk");
    let (status, docs) = s.get("/api/v4/documents/", ADMIN);
    assert_eq!(status, 200);
    let labels: Vec<&str> = docs["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|d| d["label"].as_str())
        .collect();
    if full_write_refused {
        assert_eq!(labels, ["before"], "the refused write left nothing");
    }
    let (status, after) = s.call(
        "POST",
        "/api/v4/documents/",
        Some(ADMIN),
        Some(&json!({"document_type_id": t["id"], "label": "after"})),
    );
    assert_eq!(
        status, 201,
        "writes work again once space is freed: {after}"
    );
    let (status, listed) = s.get(&files, ADMIN);
    assert_eq!(
        (status, listed["results"].as_array().map(Vec::len)),
        (200, Some(1))
    );
    let (status, bytes) = support::download(
        &agent,
        &s.base,
        &format!("{files}{}/download/", f["id"]),
        ADMIN,
    )
    .expect("download");
    assert_eq!((status, bytes.as_slice()), (200, &b"fits"[..]));
    drop(s);
    // The database is intact: the CLI's verification of a backup of it passes.
    let out = tempfile::tempdir().expect("out");
    let archive = out.path().join("after.tar.zst");
    let o = support::docmeta(&data)
        .args(["backup", "--out"])
        .arg(&archive)
        .output()
        .expect("backup");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = support::docmeta(&data)
        .args(["backup", "verify"])
        .arg(&archive)
        .output()
        .expect("verify");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    eprintln!(
        "full disk: upload 507, database write {}",
        if full_write_refused {
            "507"
        } else {
            "fit in the WAL"
        }
    );
}

#[test]
fn a_backup_onto_a_full_disk_fails_cleanly() {
    let Some(disk) = Tmpfs::mount("1m") else {
        return;
    };
    let data = tempfile::tempdir().expect("data");
    support::prepare(data.path(), false, "");
    {
        let s = Server::start(data.path());
        let (_, t) = s.call(
            "POST",
            "/api/v4/documents/types/",
            Some(ADMIN),
            Some(&json!({"label": "Scans"})),
        );
        let (_, d) = s.call(
            "POST",
            "/api/v4/documents/",
            Some(ADMIN),
            Some(&json!({"document_type_id": t["id"], "label": "scan"})),
        );
        // Incompressible content, larger than the backup disk.
        let mut rng = support::Rng(7);
        let content: Vec<u8> = (0..(3 << 20)).map(|_| rng.next() as u8).collect();
        let (status, _) = support::upload(
            &support::agent(),
            &s.base,
            &format!("/api/v4/documents/{}/files/", d["id"]),
            ADMIN,
            "noise.bin",
            &content,
        )
        .expect("upload");
        assert_eq!(status, 201);
    }
    let archive = disk.path.join("backup.tar.zst");
    let o = support::docmeta(data.path())
        .args(["backup", "--out"])
        .arg(&archive)
        .output()
        .expect("backup");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "the backup cannot fit");
    assert!(
        stderr.to_lowercase().contains("no space left"),
        "a clear error: {stderr}"
    );
    assert!(
        entries(&disk.path).is_empty(),
        "nothing left on the backup disk: {:?}",
        entries(&disk.path)
    );
    // The instance is untouched and a backup elsewhere works.
    let out = tempfile::tempdir().expect("out");
    let o = support::docmeta(data.path())
        .args(["backup", "--out"])
        .arg(out.path().join("b.tar.zst"))
        .output()
        .expect("backup");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_read_only_data_directory_is_reported_at_start() {
    let Some(disk) = Tmpfs::mount("16m") else {
        return;
    };
    let data = disk.path.join("data");
    support::prepare(&data, true, "");
    disk.remount_read_only();
    let o = support::docmeta(&data)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .output()
        .expect("serve");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success(),
        "serve must refuse a read-only data directory"
    );
    assert!(
        stderr.contains("read-only") && stderr.contains(&data.display().to_string()),
        "the error names the directory and the cause: {stderr}"
    );
}
