//! Adding metadata values to documents through a session and the SQLite store, in batches
//! (target: ≥ 20,000 values/s). Every value is permission-checked, runs the pipeline, and is
//! written with its event, as in production. The same again with ten webhooks for every event:
//! what the outbox (a pending delivery per webhook, inserted with each event) costs a write.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use docmeta_core::{Config, Docmeta, DocumentId, MetadataTypeInput};

const BATCH: usize = 1000;

/// Webhooks of the second run: each gets a pending delivery of every event.
const WEBHOOKS: usize = 10;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("store");
    group.throughput(Throughput::Elements(BATCH as u64));
    for webhooks in [0, 1, WEBHOOKS] {
        let name = match webhooks {
            0 => "add 1000 date values in one batch".to_owned(),
            1 => "add 1000 date values in one batch, a webhook for every event".to_owned(),
            n => format!("add 1000 date values in one batch, {n} webhooks for every event"),
        };
        run(&mut group, &name, webhooks);
    }
    group.finish();
}

fn run(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    webhooks: usize,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    // No worker: the deliveries are queued with their events and never sent.
    let db = Docmeta::builder()
        .data_dir(dir.path())
        .config(Config {
            webhooks_allow_private_networks: true,
            password_hash_memory_kib: 64,
            password_hash_iterations: 1,
            ..Config::default()
        })
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
    if webhooks > 0 {
        let owner = s
            .create_user("hooks", "a long enough password", true)
            .expect("owner");
        let hooks = db.session(owner.id);
        for i in 0..webhooks {
            hooks
                .create_webhook(&format!("http://127.0.0.1:9/hook{i}"), &[], None)
                .expect("webhook");
        }
    }
    group.bench_function(name, |b| {
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
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(std::time::Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
