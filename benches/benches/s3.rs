//! Document file throughput of the S3 storage against the S3 server on loopback that
//! `scripts/s3-up` starts (moto's), beside the file system storage: uploads (`put`, a multipart
//! upload of 8 MiB parts) and downloads (`open` read to the end) of one 64 MiB file, plain and
//! MENC-encrypted. Needs `DOCMETA_TEST_S3_ENDPOINT`; says so and does nothing without it:
//!
//! `DOCMETA_TEST_S3_ENDPOINT=$(scripts/s3-up) cargo bench -p docmeta-benches --bench s3`
//!
//! A plain timing loop rather than criterion: each run moves 64 MiB, and the median of a few
//! is what docs/benchmarks.md quotes.

use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, Instant};

use docmeta_core::S3Storage;
use docmeta_core::menc::{KdfParams, Keyring, Password};
use docmeta_core::{EncryptedStorage, FileStorage, PlainStorage};

const SIZE: usize = 64 << 20;
const RUNS: usize = 5;

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn mib_per_s(d: Duration) -> f64 {
    (SIZE as f64 / (1 << 20) as f64) / d.as_secs_f64()
}

fn measure(label: &str, storage: &dyn FileStorage, content: &[u8]) {
    let (mut up, mut down) = (Vec::new(), Vec::new());
    let mut buf = vec![0u8; 256 * 1024];
    for _ in 0..RUNS {
        let started = Instant::now();
        let name = storage.put(&mut &content[..]).expect("upload");
        up.push(started.elapsed());
        let started = Instant::now();
        let mut r = storage.open(&name).expect("open");
        let mut n = 0;
        loop {
            let got = r.read(&mut buf).expect("read");
            if got == 0 {
                break;
            }
            n += got;
        }
        down.push(started.elapsed());
        assert_eq!(n, SIZE);
        storage.delete(&name).expect("delete");
    }
    let (up, down) = (median(up), median(down));
    println!(
        "{label:<28} upload {:>7.1} MiB/s ({:>6.0} ms)   download {:>7.1} MiB/s ({:>6.0} ms)",
        mib_per_s(up),
        up.as_secs_f64() * 1000.0,
        mib_per_s(down),
        down.as_secs_f64() * 1000.0,
    );
}

fn main() {
    let Ok(endpoint) = std::env::var("DOCMETA_TEST_S3_ENDPOINT") else {
        println!(
            "S3: skipped (DOCMETA_TEST_S3_ENDPOINT is not set; scripts/s3-up starts a server)"
        );
        return;
    };
    let settings = [
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_ACCESS_KEY_ID", "docmeta-bench"),
        ("AWS_SECRET_ACCESS_KEY", "docmeta-bench-secret"),
        ("AWS_ALLOW_HTTP", "true"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()));
    let content: Vec<u8> = (0..SIZE).map(|i| (i * 131 % 251) as u8).collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let fs = Arc::new(PlainStorage::open(dir.path()).expect("file system storage"));
    let s3 =
        Arc::new(S3Storage::open_with("s3://docmeta-test/bench", settings).expect("S3 storage"));
    let params = KdfParams {
        memory_kib: 64,
        iterations: 1,
        parallelism: 1,
    };
    let (keyring, _) = Keyring::create(Password::new("bench"), params).expect("keyring");
    let keyring = Arc::new(keyring);
    println!("one {} MiB file, median of {RUNS} runs", SIZE >> 20);
    measure("file system", fs.as_ref(), &content);
    measure("S3 (moto on loopback)", s3.as_ref(), &content);
    measure(
        "file system + MENC",
        &EncryptedStorage::new(fs.clone(), keyring.clone()),
        &content,
    );
    measure(
        "S3 + MENC",
        &EncryptedStorage::new(s3.clone(), keyring),
        &content,
    );
}
