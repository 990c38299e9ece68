//! Adding metadata values to documents through a session and the SQLite store, in batches
//! (target: ≥ 20,000 values/s). Every value is permission-checked, runs the pipeline, and is
//! written with its event, as in production.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use docmeta_core::{Docmeta, DocumentId, MetadataTypeInput};

const BATCH: usize = 1000;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Docmeta::builder()
        .data_dir(dir.path())
        .worker(false)
        .open()
        .expect("open");
    let s = db.system();
    let dt = s.create_document_type("Invoice").expect("type");
    let mt = s
        .create_metadata_type(
            MetadataTypeInput::new("due", "Due")
                .validation("svc.apps.metadata.metadata_validators.DateValidator", "")
                .parser("svc.apps.metadata.metadata_parsers.DateParser", ""),
        )
        .expect("metadata type");
    s.associate(dt.id, mt.id, false).expect("associate");
    let mut group = c.benchmark_group("store");
    group.throughput(Throughput::Elements(BATCH as u64));
    group.bench_function("add 1000 date values in one batch", |b| {
        b.iter_batched(
            || -> Vec<DocumentId> {
                (0..BATCH)
                    .map(|i| {
                        s.create_document(dt.id, &format!("d{i}"), &[])
                            .expect("doc")
                            .document
                            .id
                    })
                    .collect::<Vec<_>>()
            },
            |docs| {
                let values: Vec<_> = docs.iter().map(|d| (*d, mt.id, "31/12/2024")).collect();
                s.add_document_metadata_batch(&values).expect("batch");
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(std::time::Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
