//! Crash safety: `docmeta serve` under write load is killed with SIGKILL at random
//! points, started again on the same data directory, and checked:
//!
//! - every write acknowledged with a 2xx is there, exactly as acknowledged (documents, metadata
//!   values, uploaded files whose bytes still match their SHA-256);
//! - nothing half-written is visible: every document carries the metadata its type requires
//!   (added in the document's own transaction), every listed file downloads whole and matches
//!   its checksum;
//! - durable tasks pending at the kill (a required association adds a value to every existing
//!   document, in the background) run after the restart;
//! - the search index catches up with what was acknowledged before the kill.
//!
//! `DOCMETA_CRASH_ITERATIONS` (default 20) sets the number of kills, `DOCMETA_CRASH_SEED` replays
//! a run (the seed is printed).

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{ADMIN, Rng, Server};

/// What the server acknowledged.
#[derive(Default, Clone)]
struct Acknowledged {
    /// Document id -> label.
    documents: BTreeMap<i64, String>,
    /// Document id -> the `serial` value acknowledged for it.
    serials: BTreeMap<i64, String>,
    /// File id -> (document id, size, SHA-256).
    files: BTreeMap<i64, (i64, u64, String)>,
    /// Names of the metadata types made required (their task adds them everywhere).
    required: Vec<String>,
}

struct World {
    document_type: i64,
    serial: i64,
}

fn setup(s: &Server) -> World {
    let (status, t) = s.call(
        "POST",
        "/api/v4/documents/types/",
        Some(ADMIN),
        Some(&json!({"label": "Crash"})),
    );
    assert_eq!(status, 201, "{t}");
    let document_type = t["id"].as_i64().expect("id");
    let mut types = Vec::new();
    for (name, default) in [("tag", "tagged"), ("serial", "")] {
        let (status, m) = s.call(
            "POST",
            "/api/v4/metadata/metadata-types/",
            Some(ADMIN),
            Some(&json!({"name": name, "label": name, "default": default})),
        );
        assert_eq!(status, 201, "{m}");
        types.push(m["id"].as_i64().expect("id"));
    }
    let associations = format!("/api/v4/documents/types/{document_type}/metadata-types/");
    for (id, required) in [(types[0], true), (types[1], false)] {
        let (status, a) = s.call(
            "POST",
            &associations,
            Some(ADMIN),
            Some(&json!({"metadata_type_id": id, "required": required})),
        );
        assert_eq!(status, 201, "{a}");
    }
    World {
        document_type,
        serial: types[1],
    }
}

/// One writer: documents, a value on each, a file on every third, until the server dies.
fn writer(base: String, world: Arc<World>, ack: Arc<Mutex<Acknowledged>>, tag: String, seed: u64) {
    let agent = support::agent();
    let mut rng = Rng(seed);
    for n in 0.. {
        let label = format!("crash {tag} {n}");
        let Ok((201, d)) = support::request(
            &agent,
            &base,
            "POST",
            "/api/v4/documents/",
            Some(ADMIN),
            Some(&json!({"document_type_id": world.document_type, "label": label})),
        ) else {
            return;
        };
        let id = d["id"].as_i64().expect("id");
        ack.lock()
            .expect("lock")
            .documents
            .insert(id, label.clone());
        let serial = format!("S-{tag}-{n}");
        let Ok((201, _)) = support::request(
            &agent,
            &base,
            "POST",
            &format!("/api/v4/documents/{id}/metadata/"),
            Some(ADMIN),
            Some(&json!({"metadata_type_id": world.serial, "value": serial})),
        ) else {
            return;
        };
        ack.lock().expect("lock").serials.insert(id, serial);
        if n % 3 == 0 {
            let size = rng.range(1..300_000) as usize;
            let content: Vec<u8> = (0..size).map(|i| (i as u64 ^ seed) as u8).collect();
            let Ok((201, f)) = support::upload(
                &agent,
                &base,
                &format!("/api/v4/documents/{id}/files/"),
                ADMIN,
                "scan.bin",
                &content,
            ) else {
                return;
            };
            let file = f["id"].as_i64().expect("file id");
            ack.lock()
                .expect("lock")
                .files
                .insert(file, (id, size as u64, support::sha256_hex(&content)));
        }
    }
}

fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < timeout, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn document_metadata(s: &Server, id: i64) -> BTreeMap<String, String> {
    let (status, page) = s.get(
        &format!("/api/v4/documents/{id}/metadata/?page_size=500"),
        ADMIN,
    );
    assert_eq!(status, 200, "document {id}: {page}");
    page["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|v| {
            (
                v["metadata_type"]["name"]
                    .as_str()
                    .expect("name")
                    .to_owned(),
                v["value"].as_str().expect("value").to_owned(),
            )
        })
        .collect()
}

/// Checks the writes acknowledged since `since`, on the restarted server.
fn check_acknowledged(s: &Server, ack: &Acknowledged, since: &Acknowledged) {
    for (id, label) in ack
        .documents
        .iter()
        .filter(|(id, _)| !since.documents.contains_key(id))
    {
        let (status, d) = s.get(&format!("/api/v4/documents/{id}/"), ADMIN);
        assert_eq!(status, 200, "acknowledged document {id} is gone");
        assert_eq!(d["label"], *label);
        let values = document_metadata(s, *id);
        assert_eq!(
            values.get("tag").map(String::as_str),
            Some("tagged"),
            "document {id}"
        );
        if let Some(serial) = ack.serials.get(id) {
            assert_eq!(values.get("serial"), Some(serial), "document {id}");
        }
    }
    let agent = support::agent();
    for (file, (document, size, sha)) in ack
        .files
        .iter()
        .filter(|(f, _)| !since.files.contains_key(f))
    {
        let (status, bytes) = support::download(
            &agent,
            &s.base,
            &format!("/api/v4/documents/{document}/files/{file}/download/"),
            ADMIN,
        )
        .expect("download");
        assert_eq!(status, 200, "acknowledged file {file}");
        assert_eq!(
            (bytes.len() as u64, &support::sha256_hex(&bytes)),
            (*size, sha)
        );
    }
}

/// Checks the whole data set: nothing half-written anywhere, every task done.
fn check_everything(s: &Server, ack: &Acknowledged) -> usize {
    let mut requests = 0;
    let mut ids = Vec::new();
    for page in 1.. {
        let (status, p) = s.get(
            &format!("/api/v4/documents/?page={page}&page_size=500"),
            ADMIN,
        );
        requests += 1;
        assert_eq!(status, 200);
        ids.extend(
            p["results"]
                .as_array()
                .expect("results")
                .iter()
                .map(|d| d["id"].as_i64().expect("id")),
        );
        if p["next"].is_null() {
            break;
        }
    }
    assert!(ack.documents.keys().all(|id| ids.contains(id)));
    let agent = support::agent();
    for id in &ids {
        let values = document_metadata(s, *id);
        requests += 1;
        for name in std::iter::once("tag").chain(ack.required.iter().map(String::as_str)) {
            assert!(
                values.contains_key(name),
                "document {id} lacks {name}: {values:?}"
            );
        }
        let (status, files) = s.get(
            &format!("/api/v4/documents/{id}/files/?page_size=500"),
            ADMIN,
        );
        requests += 1;
        assert_eq!(status, 200);
        for f in files["results"].as_array().expect("files") {
            let (status, bytes) = support::download(
                &agent,
                &s.base,
                f["download_url"]
                    .as_str()
                    .map_or(String::new(), |u| {
                        u.find("/api/").map_or(u.to_owned(), |i| u[i..].to_owned())
                    })
                    .as_str(),
                ADMIN,
            )
            .expect("download");
            requests += 1;
            assert_eq!(status, 200);
            assert_eq!(
                f["size"].as_u64(),
                Some(bytes.len() as u64),
                "file {}",
                f["id"]
            );
            assert_eq!(
                f["checksum"].as_str(),
                Some(support::sha256_hex(&bytes).as_str())
            );
        }
    }
    requests
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let iterations: u64 = std::env::var("DOCMETA_CRASH_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let seed = support::seed("DOCMETA_CRASH_SEED");
    println!("seed {seed} (DOCMETA_CRASH_SEED replays it)");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().expect("tempdir");
    support::prepare(dir.path(), false, "");
    let mut server = Server::start(dir.path());
    let world = Arc::new(setup(&server));
    let ack = Arc::new(Mutex::new(Acknowledged::default()));
    let mut tasks_seen_pending = 0;
    // What the previous iterations checked: each checks only the writes since.
    let mut checked = Acknowledged::default();
    let start = Instant::now();
    for iteration in 0..iterations {
        // A metadata type made required: its task adds the value to every existing document,
        // in the background, while the writers go on.
        let name = format!("late{iteration}");
        let (status, m) = server.call(
            "POST",
            "/api/v4/metadata/metadata-types/",
            Some(ADMIN),
            Some(&json!({"name": name, "label": name, "default": "late"})),
        );
        assert_eq!(status, 201, "{m}");
        let writers: Vec<_> = (0..3)
            .map(|w| {
                let (base, world, ack) = (server.base.clone(), world.clone(), ack.clone());
                let seed = rng.next() | 1;
                std::thread::spawn(move || {
                    writer(base, world, ack, format!("{iteration}.{w}"), seed)
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(rng.range(50..250)));
        let (status, a) = server.call(
            "POST",
            &format!(
                "/api/v4/documents/types/{}/metadata-types/",
                world.document_type
            ),
            Some(ADMIN),
            Some(&json!({"metadata_type_id": m["id"], "required": true})),
        );
        assert_eq!(status, 201, "{a}");
        ack.lock().expect("lock").required.push(name);
        // Every other kill lands right after the task was queued, likely before it ran.
        let pause = if iteration % 2 == 0 { 0..5 } else { 0..400 };
        std::thread::sleep(Duration::from_millis(rng.range(pause)));
        server.kill();
        for w in writers {
            w.join().expect("writer");
        }
        // The tasks the kill left pending, read without running them (no worker).
        let pending = docmeta_core::Docmeta::builder()
            .data_dir(dir.path())
            .worker(false)
            .open()
            .and_then(|db| db.open_tasks())
            .expect("the data directory opens after a SIGKILL")
            .len();
        if pending > 0 {
            tasks_seen_pending += 1;
        }
        server = Server::start(dir.path());
        let acknowledged = ack.lock().expect("lock").clone();
        check_acknowledged(&server, &acknowledged, &checked);
        checked = acknowledged;
        // Pending tasks run after the restart.
        wait_until(
            "the tasks pending at the kill",
            Duration::from_secs(60),
            || {
                let (status, tasks) = server.get("/api/v4/tasks/?page_size=500", ADMIN);
                assert_eq!(status, 200);
                let tasks = tasks["results"].as_array().expect("tasks");
                assert!(
                    tasks.iter().all(|t| t["state"] != "failed"),
                    "a task failed: {tasks:?}"
                );
                tasks.is_empty()
            },
        );
        // The search index catches up with the last document acknowledged before the kill.
        if let Some(label) = checked.documents.values().next_back() {
            let q = label.replace(' ', "+");
            wait_until("the search index", Duration::from_secs(60), || {
                let (status, r) =
                    server.get(&format!("/api/v4/search/documents/?q=%22{q}%22"), ADMIN);
                assert_eq!(status, 200, "{r}");
                r["results"]
                    .as_array()
                    .is_some_and(|r| r.iter().any(|d| d["label"] == *label))
            });
        }
    }
    let ack = ack.lock().expect("lock");
    let requests = check_everything(&server, &ack);
    println!(
        "{iterations} SIGKILLs in {:.1} s: {} documents, {} values, {} files acknowledged and found; \
         tasks pending at {tasks_seen_pending} kills ran after the restart; final check: {requests} requests",
        start.elapsed().as_secs_f64(),
        ack.documents.len(),
        ack.serials.len(),
        ack.files.len(),
    );
    assert!(
        ack.documents.len() >= iterations as usize,
        "the load wrote too little to prove anything"
    );
}
