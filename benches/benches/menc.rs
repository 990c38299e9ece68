//! MENC throughput: encrypting and decrypting 64 MiB through the streaming readers (what every
//! upload and download of the encrypted storage does). Target: ≥ 1 GiB/s per core.

use std::hint::black_box;
use std::io::Read;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use docmeta_core::menc::{DEFAULT_CHUNK, KdfParams, Keyring, Password};

const SIZE: usize = 64 << 20;
/// A storage name, as the encrypted storage binds every file to its own (MENC version 2).
const NAME: &[u8] = b"3f/9a0c41d2e5b67f8091a2b3c4d5e6f7";

fn bench(c: &mut Criterion) {
    let params = KdfParams {
        memory_kib: 64,
        iterations: 1,
        parallelism: 1,
    };
    let (ring, _) = Keyring::create(Password::new("bench"), params).expect("keyring");
    let plain: Vec<u8> = (0..SIZE).map(|i| (i * 131 % 251) as u8).collect();
    let mut sealed = Vec::with_capacity(SIZE + SIZE / 1000);
    ring.encryptor_bound(&plain[..], DEFAULT_CHUNK, NAME)
        .expect("encryptor")
        .read_to_end(&mut sealed)
        .expect("seal");
    let mut group = c.benchmark_group("menc");
    group.throughput(Throughput::Bytes(SIZE as u64));
    let mut buf = vec![0u8; 256 * 1024];
    group.bench_function("encrypt 64 MiB (64 KiB chunks)", |b| {
        b.iter(|| {
            let mut r = ring
                .encryptor_bound(black_box(&plain[..]), DEFAULT_CHUNK, NAME)
                .expect("encryptor");
            while r.read(&mut buf).expect("read") > 0 {}
        })
    });
    group.bench_function("decrypt 64 MiB (64 KiB chunks)", |b| {
        b.iter(|| {
            let mut r = ring
                .decryptor_bound(black_box(&sealed[..]), NAME)
                .expect("decryptor");
            while r.read(&mut buf).expect("read") > 0 {}
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(std::time::Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
