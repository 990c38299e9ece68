//! Offline sync: a replica's initial sync of DOCS documents with 5 values each (target: at
//! least 20,000 values/s), and an incremental sync after one value changed on the server
//! (target: at most 20 ms), and the time from a change's commit on the server to its arrival
//! in a replica that watches (`sync_when_changed` in a loop; target: p99 at most 200 ms),
//! timed as whole calls. Not a criterion benchmark: the initial sync
//! runs once, on a generated server data directory.
//!
//! The server is reached in the same process (`InProcessServer`: the server's work and the
//! replica's, without HTTP), and, when DOCMETA_BIN names a `docmeta` binary (build it with
//! `cargo build --release -p docmeta-server`), also over loopback through `docmeta serve`.
//!
//! `DOCS=100000 cargo bench -p docmeta-benches --bench sync` (default 20,000 documents)

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use docmeta_core::{
    Docmeta, InProcessServer, MetadataTypeInput, NewDocument, ObjectKind, ObjectRef, PageRequest,
    Permission, Remote, Replica,
};

const CONFIG: &str = "password_hash_memory_kib: 64\npassword_hash_iterations: 1\n";

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A server data directory with `docs` documents of 5 values each that ann may view.
fn server(dir: &std::path::Path, docs: usize) -> Docmeta {
    std::fs::write(dir.join("config.yml"), CONFIG).expect("config");
    let db = Docmeta::builder()
        .data_dir(dir)
        .worker(false)
        .open()
        .expect("open");
    let admin = db.system();
    let ann = admin
        .create_user("ann", "a long password", false)
        .expect("ann")
        .id;
    let group = admin.create_group("staff").expect("group").id;
    let role = admin.create_role("reader").expect("role").id;
    admin.set_group_member(group, ann, true).expect("member");
    admin.set_role_group(role, group, true).expect("role");
    let invoice = admin.create_document_type("Invoice").expect("type").id;
    let mut types = Vec::new();
    for name in ["number", "customer", "amount", "due", "status"] {
        let t = admin
            .create_metadata_type(MetadataTypeInput::new(name, name))
            .expect("metadata type")
            .id;
        admin.associate(invoice, t, false).expect("associate");
        types.push(t);
    }
    let on_type = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, invoice.0);
    for p in [
        Permission::DocumentView,
        Permission::DocumentTypeView,
        Permission::DocumentMetadataView,
    ] {
        admin.grant(p, role, on_type).expect("grant");
    }
    for &t in &types {
        admin
            .grant(
                Permission::DocumentMetadataView,
                role,
                ObjectRef::new(ObjectKind::METADATA_TYPE, t.0),
            )
            .expect("grant");
    }
    let started = Instant::now();
    for chunk in (0..docs).collect::<Vec<_>>().chunks(1000) {
        let texts: Vec<(String, [String; 5])> = chunk
            .iter()
            .map(|i| {
                (
                    format!("Invoice {i}"),
                    [
                        format!("INV-{i:06}"),
                        format!("customer {}", i % 997),
                        format!("{}.{:02}", i % 5000, i % 100),
                        format!("2026-{:02}-{:02}", 1 + i % 12, 1 + i % 28),
                        ["open", "paid", "late"][i % 3].to_owned(),
                    ],
                )
            })
            .collect();
        let values: Vec<Vec<_>> = texts
            .iter()
            .map(|(_, v)| types.iter().zip(v).map(|(t, v)| (*t, v.as_str())).collect())
            .collect();
        let batch: Vec<NewDocument<'_>> = texts
            .iter()
            .zip(&values)
            .map(|((label, _), values)| NewDocument {
                document_type: invoice,
                label,
                values,
            })
            .collect();
        admin.create_documents(&batch).expect("documents");
    }
    eprintln!(
        "server: {docs} documents, {} values, made in {:.1?}",
        docs * 5,
        started.elapsed()
    );
    db
}

/// Times the initial sync and `rounds` incremental syncs after one change each.
fn measure(what: &str, db: &Docmeta, replica: &Replica, docs: usize, rounds: usize) {
    let started = Instant::now();
    let done = replica.sync().expect("initial sync");
    let took = started.elapsed();
    assert_eq!(done.received, docs, "every document arrived");
    println!(
        "{what}: initial sync of {docs} documents ({} values) in {:.2} s: {:.0} values/s, {} batches",
        docs * 5,
        took.as_secs_f64(),
        (docs * 5) as f64 / took.as_secs_f64(),
        done.batches
    );
    let admin = db.system();
    let first = admin
        .document_metadata(docmeta_core::DocumentId(1), PageRequest::ALL)
        .expect("values")
        .items[0]
        .value
        .clone();
    let mut times = Vec::with_capacity(rounds);
    for round in 0..rounds {
        admin
            .edit_document_metadata(first.document_id, first.id, &format!("INV-X{round}"), None)
            .expect("edit");
        let started = Instant::now();
        let done = replica.sync().expect("incremental sync");
        times.push(started.elapsed());
        assert_eq!(done.received, 1);
    }
    report(what, "incremental sync after one change", times);
    // A replica watching (`sync_when_changed` in a loop): from a change's commit on the server
    // to the end of the sync that stored it.
    let (synced, arrived) = std::sync::mpsc::channel();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut times = Vec::with_capacity(rounds);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let done = replica
                    .sync_when_changed(Duration::from_secs(2))
                    .expect("a watching sync");
                if done.received > 0 {
                    let _ = synced.send(Instant::now());
                }
            }
        });
        for round in 0..rounds {
            std::thread::sleep(Duration::from_millis(20));
            let changed = Instant::now();
            admin
                .edit_document_metadata(first.document_id, first.id, &format!("INV-W{round}"), None)
                .expect("edit");
            let at = arrived.recv().expect("the change arrived");
            times.push(at.duration_since(changed));
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    report(what, "a change seen by a watching replica", times);
}

fn report(what: &str, measured: &str, mut times: Vec<Duration>) {
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    println!(
        "{what}: {measured}: median {:.2} ms, p99 {:.2} ms ({} rounds)",
        ms(at(0.5)),
        ms(at(0.99)),
        times.len()
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `docmeta serve` on `dir`, and its URL.
fn serve(bin: &str, dir: &std::path::Path) -> (Child, String) {
    use std::io::BufRead;
    let mut child = Command::new(bin)
        .env("DOCMETA_DATA", dir)
        .env("DOCMETA_LOG", "warn")
        .args(["serve", "--bind", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("docmeta serve");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let url = lines
        .by_ref()
        .map_while(|l| l.ok())
        .find_map(|l| {
            l.strip_prefix("docmeta listening on ")
                .map(|u| u.trim().to_owned())
        })
        .expect("the server started");
    std::thread::spawn(move || lines.for_each(drop));
    (child, url)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` probing for tests
    }
    let docs = env("DOCS", 20_000);
    let rounds = env("ROUNDS", 200);
    let root = tempfile::tempdir().expect("tempdir");
    let data = root.path().join("server");
    std::fs::create_dir_all(&data).expect("server directory");
    let db = server(&data, docs);
    {
        let dir = root.path().join("in-process");
        let replica = Replica::open_with(
            &dir,
            InProcessServer::new(db.clone()),
            "ann",
            "a long password",
        )
        .expect("replica");
        measure("in process", &db, &replica, docs, rounds);
    }
    let Ok(bin) = std::env::var("DOCMETA_BIN") else {
        println!("over loopback: set DOCMETA_BIN to a docmeta binary to measure it");
        return;
    };
    drop(db);
    let (mut child, url) = serve(&bin, &data);
    let remote = Remote {
        url,
        username: "ann".into(),
        password: "a long password".into(),
    };
    let replica = Replica::open(root.path().join("http"), &remote).expect("replica");
    // Edits go through a handle of the same database beside the server (SQLite, WAL).
    let db = Docmeta::builder()
        .data_dir(&data)
        .worker(false)
        .open()
        .expect("open beside the server");
    measure("over loopback", &db, &replica, docs, rounds);
    let _ = child.kill();
    let _ = child.wait();
}
