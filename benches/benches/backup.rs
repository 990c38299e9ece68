//! Backup and restore against `tar --zstd` on the same data (the target: docmeta at ≥ 80%
//! of tar's speed both ways). Not a criterion benchmark: each step is one whole command timed
//! once, on a generated data directory of FILES document files totalling BYTES (defaults:
//! 10,000 files, 2 GiB; half of each file random, half repetitive text). BENCH_DIR chooses where
//! the data goes (default: the system temporary directory).
//!
//! `cargo bench -p docmeta-benches --bench backup`

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use docmeta_core::Docmeta;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn content(size: usize, seed: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(size);
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    while out.len() < size / 2 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    let line = format!("Invoice {seed}: 1 x widget at 12.50 EUR, due 2024-03-31.\n");
    while out.len() < size {
        out.extend_from_slice(line.as_bytes());
    }
    out.truncate(size);
    out
}

fn tar(args: &[&str], dir: &Path) -> f64 {
    let started = Instant::now();
    let status = Command::new("tar")
        .args(args)
        .current_dir(dir)
        .status()
        .expect("run tar");
    assert!(status.success(), "tar {args:?}");
    started.elapsed().as_secs_f64()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` probing for tests
    }
    let files = env("FILES", 10_000) as usize;
    let bytes = env("BYTES", 2 << 30);
    let root = match std::env::var("BENCH_DIR") {
        Ok(d) => tempfile::tempdir_in(d),
        Err(_) => tempfile::tempdir(),
    }
    .expect("tempdir");
    let data = root.path().join("data");
    std::fs::create_dir_all(&data).expect("data");
    std::fs::write(
        data.join("config.yml"),
        "password_hash_memory_kib: 64\npassword_hash_iterations: 1\n",
    )
    .expect("config");
    let db = Docmeta::open(&data).expect("open");
    let admin = db.system();
    let kind = admin.create_document_type("Invoice").expect("type");
    let size = (bytes / files as u64) as usize;
    let started = Instant::now();
    let mut doc = None;
    for i in 0..files {
        if i % 10 == 0 {
            doc = Some(
                admin
                    .create_document(kind.id, &format!("Invoice {i}"), &[])
                    .expect("document")
                    .document
                    .id,
            );
        }
        let body = content(size, i as u64);
        admin
            .add_file(
                doc.expect("document"),
                &format!("scan-{i}.pdf"),
                &mut &body[..],
            )
            .expect("file");
    }
    let total = size as u64 * files as u64;
    let mib = total as f64 / (1 << 20) as f64;
    eprintln!(
        "generated {files} files, {mib:.0} MiB, in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let out = root.path().join("docmeta.tar.zst");
    let started = Instant::now();
    let report = db.backup(&out, None, |_, _| {}).expect("backup");
    let ours = started.elapsed().as_secs_f64();
    drop(db);
    let theirs = tar(
        &[
            "--zstd",
            "-cf",
            "../tar.tar.zst",
            "db.sqlite3",
            "config.yml",
            "system",
            "document_file_storage",
        ],
        &data,
    );
    let tar_size = std::fs::metadata(root.path().join("tar.tar.zst"))
        .map(|m| m.len())
        .unwrap_or(0);
    println!(
        "backup:  docmeta {ours:.2} s ({:.0} MiB/s, {} bytes, with SHA-256 of every file), tar --zstd {theirs:.2} s ({:.0} MiB/s, {tar_size} bytes): docmeta at {:.0}% of tar's speed",
        mib / ours,
        report.archive_bytes,
        mib / theirs,
        100.0 * theirs / ours
    );

    let target = root.path().join("restored");
    let started = Instant::now();
    docmeta_core::restore(std::slice::from_ref(&out), &target, None).expect("restore");
    let ours = started.elapsed().as_secs_f64();
    let untar = root.path().join("untarred");
    std::fs::create_dir_all(&untar).expect("dir");
    let theirs = tar(&["--zstd", "-xf", "../tar.tar.zst"], &untar);
    println!(
        "restore: docmeta {ours:.2} s ({:.0} MiB/s, verifying every checksum first, staged then moved), tar --zstd -x {theirs:.2} s ({:.0} MiB/s): docmeta at {:.0}% of tar's speed",
        mib / ours,
        mib / theirs,
        100.0 * theirs / ours
    );
}
