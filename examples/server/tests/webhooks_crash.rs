//! Webhooks survive a SIGKILL: `docmeta serve` with two webhooks (every event, and document
//! creations only) pointing at a receiver on loopback takes 1,000 document creations; the server
//! is killed with SIGKILL half-way, while deliveries are still going out, and started again on
//! the same data directory. Then every event of the log since the webhooks were created
//! (committed before the kill, acknowledged or not, and after the restart) reaches each webhook
//! it is for, with a valid Standard Webhooks signature, once after dropping repeats by
//! `webhook-id` (deliveries are at least once), and in the order of the log.

mod support;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use hmac::Mac;
use serde_json::{Value, json};
use support::{ADMIN, Server};

/// Document creations in all.
const CHANGES: usize = 1000;

/// One request the receiver got: its path, headers and body.
#[derive(Debug, Clone)]
struct Received {
    path: String,
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
}

/// A receiver on loopback answering `204` to every POST, each connection in a thread.
fn receiver() -> (String, Arc<Mutex<Vec<Received>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let got = Arc::new(Mutex::new(Vec::new()));
    let thread_got = got.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let got = thread_got.clone();
            std::thread::spawn(move || serve(stream, &got));
        }
    });
    (base, got)
}

fn serve(stream: TcpStream, got: &Mutex<Vec<Received>>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line.split(' ').nth(1).unwrap_or_default().to_owned();
    let mut headers = BTreeMap::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    got.lock().expect("lock").push(Received {
        path,
        headers,
        body,
    });
    let mut stream = stream;
    let _ = stream
        .write_all(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
}

/// Whether `r` carries the Standard Webhooks signature of its id, timestamp and body under
/// `secret`.
fn signed_with(r: &Received, secret: &str) -> bool {
    let b64 = base64::engine::general_purpose::STANDARD;
    let key = b64
        .decode(secret.strip_prefix("whsec_").expect("whsec_"))
        .expect("base64");
    let header = |name: &str| r.headers.get(name).map_or("", String::as_str);
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).expect("key");
    mac.update(format!("{}.{}.", header("webhook-id"), header("webhook-timestamp")).as_bytes());
    mac.update(&r.body);
    let expected = format!("v1,{}", b64.encode(mac.finalize().into_bytes()));
    header("webhook-signature")
        .split(' ')
        .any(|s| s == expected)
}

/// Creates documents until `CHANGES` are acknowledged or the server stops answering; returns
/// how many it acknowledged.
fn write(base: &str, document_type: i64, from: usize, acknowledged: &AtomicUsize) {
    let agent = support::agent();
    for n in from..CHANGES {
        match support::request(
            &agent,
            base,
            "POST",
            "/api/v4/documents/",
            Some(ADMIN),
            Some(&json!({"document_type_id": document_type, "label": format!("change {n}")})),
        ) {
            Ok((201, _)) => {
                acknowledged.fetch_add(1, Ordering::SeqCst);
            }
            _ => return,
        }
    }
}

/// Every event of the log after `after`, oldest first, as `(id, name)`: the events API answers
/// windows of 1,000, newest first, each older than the `before` of the next.
fn events_after(s: &Server, after: i64) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    let mut before: Option<i64> = None;
    loop {
        let mut window = Vec::new();
        for page in 1.. {
            let older = before.map(|b| format!("&before={b}")).unwrap_or_default();
            let path = format!("/api/v4/events/?page_size=500&page={page}{older}");
            let (status, body) = s.get(&path, ADMIN);
            assert_eq!(status, 200, "{body}");
            for e in body["results"].as_array().expect("results") {
                let id = e["id"].as_i64().expect("id");
                window.push((id, e["name"].as_str().expect("name").to_owned()));
            }
            if body["next"].is_null() {
                break;
            }
        }
        let Some(oldest) = window.iter().map(|e| e.0).min() else {
            break;
        };
        out.extend(window.into_iter().filter(|e| e.0 > after));
        if oldest <= after {
            break;
        }
        before = Some(oldest);
    }
    out.sort();
    out
}

#[test]
fn every_event_is_delivered_signed_and_in_order_across_a_sigkill() {
    let dir = tempfile::tempdir().expect("tempdir");
    support::prepare(dir.path(), false, "webhooks_allow_private_networks: true\n");
    let (receiver_base, got) = receiver();
    let server = Server::start(dir.path());
    let (status, t) = server.call(
        "POST",
        "/api/v4/documents/types/",
        Some(ADMIN),
        Some(&json!({"label": "Changes"})),
    );
    assert_eq!(status, 201, "{t}");
    let document_type = t["id"].as_i64().expect("id");
    let last_before = events_after(&server, 0).last().map_or(0, |e| e.0);
    let mut secrets = BTreeMap::new();
    for (path, events) in [
        ("/all", json!([])),
        ("/created", json!(["documents.document_created"])),
    ] {
        let (status, w) = server.call(
            "POST",
            "/api/v4/webhooks/",
            Some(ADMIN),
            Some(&json!({"url": format!("{receiver_base}{path}"), "events": events})),
        );
        assert_eq!(status, 201, "{w}");
        secrets.insert(
            path.to_owned(),
            w["secret"].as_str().expect("secret").to_owned(),
        );
    }
    // Half the changes, then SIGKILL while they still go on (and deliveries still go out).
    let acknowledged = Arc::new(AtomicUsize::new(0));
    let writer = {
        let (base, acknowledged) = (server.base.clone(), acknowledged.clone());
        std::thread::spawn(move || write(&base, document_type, 0, &acknowledged))
    };
    let deadline = Instant::now() + Duration::from_secs(600);
    while acknowledged.load(Ordering::SeqCst) < CHANGES / 2 {
        assert!(Instant::now() < deadline, "the writes did not get half-way");
        std::thread::sleep(Duration::from_millis(5));
    }
    let delivered_at_kill = got.lock().expect("lock").len();
    server.kill();
    writer.join().expect("writer");
    let done = acknowledged.load(Ordering::SeqCst);
    println!("killed after {done} acknowledged changes and {delivered_at_kill} deliveries");
    // Restarted on the same data directory: the rest of the changes.
    let server = Server::start(dir.path());
    write(&server.base, document_type, done, &acknowledged);
    assert!(acknowledged.load(Ordering::SeqCst) >= CHANGES - 1);
    let events = events_after(&server, last_before);
    let expected: BTreeMap<&str, Vec<i64>> = [
        ("/all", events.iter().map(|e| e.0).collect()),
        (
            "/created",
            (events.iter())
                .filter(|e| e.1 == "documents.document_created")
                .map(|e| e.0)
                .collect(),
        ),
    ]
    .into_iter()
    .collect();
    assert!(expected["/created"].len() >= CHANGES - 1);
    // Every event reaches each webhook it is for; repeats (sent again after the kill) dropped.
    let per_webhook = |path: &str| -> Vec<Received> {
        let mut seen = HashSet::new();
        (got.lock().expect("lock").iter())
            .filter(|r| r.path == path)
            .filter(|r| seen.insert(r.headers.get("webhook-id").cloned().unwrap_or_default()))
            .cloned()
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(600);
    for (path, want) in &expected {
        while per_webhook(path).len() < want.len() {
            assert!(
                Instant::now() < deadline,
                "{path}: {} of {} delivered",
                per_webhook(path).len(),
                want.len()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let all = got.lock().expect("lock").clone();
    let repeats = all.len() - expected.values().map(Vec::len).sum::<usize>();
    for (path, want) in &expected {
        let received = per_webhook(path);
        let secret = &secrets[*path];
        let mut ids = Vec::new();
        for r in &received {
            assert!(signed_with(r, secret), "{path}: a bad signature: {r:?}");
            let body: Value = serde_json::from_slice(&r.body).expect("JSON");
            assert_eq!(body["type"], body["data"]["name"]);
            ids.push(body["data"]["id"].as_i64().expect("data.id"));
        }
        assert_eq!(
            &ids, want,
            "{path}: every event once, in the order of the log"
        );
        // A repeat is the same delivery again: same event, same id.
        let mut by_id: BTreeMap<&str, BTreeSet<i64>> = BTreeMap::new();
        for r in all.iter().filter(|r| r.path == *path) {
            let body: Value = serde_json::from_slice(&r.body).expect("JSON");
            by_id
                .entry(r.headers.get("webhook-id").map_or("", String::as_str))
                .or_default()
                .insert(body["data"]["id"].as_i64().unwrap_or(0));
        }
        assert!(by_id.values().all(|events| events.len() == 1));
    }
    println!(
        "{} events, {} deliveries received, {repeats} repeats",
        events.len(),
        all.len()
    );
}
