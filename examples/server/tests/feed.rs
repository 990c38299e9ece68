//! Following the event log over HTTP, against a running `docmeta serve`: a long poll
//! (`GET /api/v4/events/?after=&wait=`) wakes when an event its caller may see is committed and
//! answers empty at its deadline with its cursor past what the caller may not see; Server-Sent
//! Events (`Accept: text/event-stream`) deliver events as they come and resume from
//! `Last-Event-ID`; bad parameters are `400`s naming them; waiting requests hold no thread (reads
//! go on beside 40 of them), outlive the request time limit, and end when the server stops; and
//! with two servers on one PostgreSQL database, a commit through one wakes a follower of the
//! other.
//!
//! Timing is asserted loosely: a wake must come well before the wait's end.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{ADMIN, Server, basic, docmeta, prepare};

const BOB: (&str, &str) = ("bob", "demo-password");

/// A wait long enough that a wake is told from a deadline on a loaded machine.
const LONG: u64 = 30;

/// A server on a fresh data directory with the demo loaded (bob may view contracts, not
/// invoices), with `extra` settings.
fn demo_server(extra: &str) -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, extra);
    let server = Server::start(dir.path());
    (dir, server)
}

/// The newest event id now (as the administrator sees the log).
fn head(s: &Server) -> i64 {
    let (status, page) = s.get("/api/v4/events/?page_size=1", ADMIN);
    assert_eq!(status, 200, "{page}");
    page["results"][0]["id"].as_i64().expect("an event")
}

/// A document bob may view (a contract) and one he may not (an invoice).
fn contract_and_invoice(s: &Server) -> (i64, i64) {
    let ids = |user| -> Vec<i64> {
        let (status, page) = s.get("/api/v4/documents/?page_size=500", user);
        assert_eq!(status, 200, "{page}");
        page["results"]
            .as_array()
            .expect("documents")
            .iter()
            .map(|d| d["id"].as_i64().expect("id"))
            .collect()
    };
    let bobs = ids(BOB);
    let all = ids(ADMIN);
    let contract = *bobs.first().expect("bob sees a contract");
    let invoice = *all
        .iter()
        .find(|d| !bobs.contains(d))
        .expect("an invoice bob may not see");
    (contract, invoice)
}

fn rename(s: &Server, document: i64, label: &str) {
    let (status, body) = s.call(
        "PATCH",
        &format!("/api/v4/documents/{document}/"),
        Some(ADMIN),
        Some(&json!({ "label": label })),
    );
    assert_eq!(status, 200, "{body}");
}

/// Runs `request` on another thread, `then` on this one `pause` later; `request`'s answer and
/// how long it took.
fn while_waiting<T: Send>(
    request: impl FnOnce() -> T + Send,
    pause: Duration,
    then: impl FnOnce(),
) -> (T, Duration) {
    std::thread::scope(|scope| {
        let waiter = scope.spawn(move || {
            let started = Instant::now();
            let out = request();
            (out, started.elapsed())
        });
        std::thread::sleep(pause);
        then();
        waiter.join().expect("the waiting request")
    })
}

fn labels(answer: &Value) -> Vec<String> {
    answer["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|e| e["target"]["label"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn a_long_poll_wakes_on_a_commit_it_may_see_and_its_cursor_passes_what_it_may_not() {
    let (_dir, s) = demo_server("");
    let (contract, invoice) = contract_and_invoice(&s);
    let from = head(&s);
    // bob waits; an invoice he may not see is renamed, then a contract he may see.
    let ((status, answer), took) = while_waiting(
        || s.get(&format!("/api/v4/events/?after={from}&wait={LONG}"), BOB),
        Duration::from_millis(300),
        || {
            rename(&s, invoice, "hidden rename");
            rename(&s, contract, "shown rename");
        },
    );
    assert_eq!(status, 200, "{answer}");
    assert!(
        took < Duration::from_secs(LONG / 2),
        "woken by the commit: {took:?}"
    );
    assert_eq!(labels(&answer), ["shown rename"], "{answer}");
    assert_eq!(answer["count"], 1);
    assert_eq!(answer["results"][0]["name"], "documents.document_edited");
    let cursor = answer["cursor"].as_i64().expect("a cursor");
    assert_eq!(cursor, head(&s), "past the hidden event too");
    assert_eq!(answer["cursor"], answer["results"][0]["id"]);
    assert_eq!(
        answer["next"],
        format!("/api/v4/events/?after={cursor}&wait={LONG}")
    );

    // At the deadline with nothing new: empty, the cursor kept.
    let started = Instant::now();
    let (status, empty) = s.get(&format!("/api/v4/events/?after={cursor}&wait=1"), BOB);
    assert_eq!(status, 200, "{empty}");
    assert!(started.elapsed() >= Duration::from_secs(1), "it waited");
    assert_eq!(empty["results"], json!([]));
    assert_eq!(empty["count"], 0);
    assert_eq!(empty["cursor"], cursor);

    // Only a hidden commit: bob waits to his deadline, shown nothing, his cursor past it.
    let ((status, answer), took) = while_waiting(
        || s.get(&format!("/api/v4/events/?after={cursor}&wait=2"), BOB),
        Duration::from_millis(300),
        || rename(&s, invoice, "hidden again"),
    );
    assert_eq!(status, 200, "{answer}");
    assert!(
        took >= Duration::from_secs(2),
        "a hidden event does not answer: {took:?}"
    );
    assert_eq!(answer["results"], json!([]));
    assert_eq!(answer["cursor"], head(&s));

    // Without `after`: from the start of the log, in commit order, `page_size` at a time.
    let (status, first) = s.get("/api/v4/events/?wait=0&page_size=3", ADMIN);
    assert_eq!(status, 200, "{first}");
    let ids: Vec<i64> = first["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|e| e["id"].as_i64().expect("id"))
        .collect();
    assert_eq!(ids.len(), 3);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "oldest first: {ids:?}");
    assert_eq!(
        first["next"],
        format!("/api/v4/events/?after={}&page_size=3&wait=0", ids[2])
    );
    // The list is unchanged without `after` and `wait`: newest first, no cursor.
    let (_, list) = s.get("/api/v4/events/?page_size=2", ADMIN);
    assert!(list.get("cursor").is_none(), "{list}");
    assert_eq!(list["results"][0]["id"], head(&s));
}

#[test]
fn bad_feed_parameters_are_400s_naming_them() {
    let (_dir, s) = demo_server("");
    for (query, field) in [
        ("wait=61", "wait"),
        ("wait=-1", "wait"),
        ("wait=soon", "wait"),
        ("wait=1.5", "wait"),
        ("after=x&wait=1", "after"),
        ("after=-3", "after"),
        ("after=1&before=5", "before"),
    ] {
        let (status, body) = s.get(&format!("/api/v4/events/?{query}"), ADMIN);
        assert_eq!(status, 400, "{query}: {body}");
        assert!(
            body[field].as_array().is_some_and(|m| !m.is_empty()),
            "{query}: {body}"
        );
    }
    let (status, body) = sse_request(&s, ADMIN, Some("not a number"), "");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("Last-Event-ID"), "{body}");
    // Without credentials, as every list.
    assert_eq!(s.call("GET", "/api/v4/events/?wait=1", None, None).0, 401);
}

/// Opens an event stream as `user` (from `last_event_id`, with `query`): the status and, for a
/// refusal, the body; the stream itself is read with [`read_until`].
fn sse_request(
    s: &Server,
    user: (&str, &str),
    last_event_id: Option<&str>,
    query: &str,
) -> (u16, String) {
    let mut stream = open_stream(s, user, last_event_id, query);
    let mut text = String::new();
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut buf = [0u8; 4096];
    while !text.contains("\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => text.push_str(&String::from_utf8_lossy(&buf[..n])),
        }
    }
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    if status != 200 {
        // An error's body is short: read what is left.
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        while let Ok(n) = stream.read(&mut buf) {
            if n == 0 {
                break;
            }
            text.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    }
    (status, text)
}

fn open_stream(
    s: &Server,
    user: (&str, &str),
    last_event_id: Option<&str>,
    query: &str,
) -> TcpStream {
    let addr = s.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).expect("connect");
    let last = last_event_id.map_or(String::new(), |id| format!("Last-Event-ID: {id}\r\n"));
    let request = format!(
        "GET /api/v4/events/{query} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {}\r\nAccept: text/event-stream\r\n{last}Connection: close\r\n\r\n",
        basic(user)
    );
    stream.write_all(request.as_bytes()).expect("send");
    stream
}

/// Reads `stream` until `done` holds for what was read (or 30 s pass): everything read.
fn read_until(stream: &mut TcpStream, mut text: String, done: impl Fn(&str) -> bool) -> String {
    let until = Instant::now() + Duration::from_secs(LONG);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let mut buf = [0u8; 8192];
    while !done(&text) && Instant::now() < until {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => text.push_str(&String::from_utf8_lossy(&buf[..n])),
            Err(_) => {}
        }
    }
    text
}

/// The events of an SSE text: (id, event name, data) for each event with data.
fn sse_events(text: &str) -> Vec<(i64, String, Value)> {
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let mut id = None;
        let mut name = None;
        let mut data = None;
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("id: ") {
                id = v.trim().parse::<i64>().ok();
            } else if let Some(v) = line.strip_prefix("event: ") {
                name = Some(v.trim().to_owned());
            } else if let Some(v) = line.strip_prefix("data: ") {
                data = serde_json::from_str::<Value>(v).ok();
            }
        }
        if let (Some(id), Some(name), Some(data)) = (id, name, data) {
            out.push((id, name, data));
        }
    }
    out
}

#[test]
fn server_sent_events_stream_new_events_and_resume_from_last_event_id() {
    let (_dir, s) = demo_server("");
    let (contract, invoice) = contract_and_invoice(&s);
    let from = head(&s);
    // bob's stream from now: nothing at first but the opening.
    let mut stream = open_stream(&s, BOB, Some(&from.to_string()), "");
    let opening = read_until(&mut stream, String::new(), |t| t.contains("retry: "));
    assert!(opening.starts_with("HTTP/1.1 200"), "{opening}");
    assert!(
        opening
            .to_ascii_lowercase()
            .contains("content-type: text/event-stream"),
        "{opening}"
    );
    assert!(sse_events(&opening).is_empty(), "{opening}");
    // A hidden rename and a shown one: the stream carries the shown one alone.
    rename(&s, invoice, "hidden in the stream");
    rename(&s, contract, "first in the stream");
    let text = read_until(&mut stream, opening, |t| t.contains("first in the stream"));
    let events = sse_events(&text);
    assert_eq!(events.len(), 1, "{text}");
    let (first_id, name, data) = &events[0];
    assert_eq!(name, "documents.document_edited");
    assert_eq!(data["target"]["label"], "first in the stream");
    assert_eq!(data["id"], *first_id);
    assert!(!text.contains("hidden in the stream"), "{text}");
    drop(stream);

    // Two more while nobody listens; a client resuming from the first gets exactly those.
    rename(&s, contract, "second while away");
    rename(&s, invoice, "hidden while away");
    rename(&s, contract, "third while away");
    let mut stream = open_stream(&s, BOB, Some(&first_id.to_string()), "");
    let text = read_until(&mut stream, String::new(), |t| {
        t.contains("third while away")
    });
    let labels: Vec<String> = sse_events(&text)
        .iter()
        .map(|(_, _, d)| d["target"]["label"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(labels, ["second while away", "third while away"], "{text}");
    assert!(!text.contains("hidden while away"), "{text}");
    drop(stream);

    // Only hidden events after the cursor: an `id:` alone moves the client past them.
    let last = head(&s);
    rename(&s, invoice, "hidden again");
    let mut stream = open_stream(&s, BOB, Some(&last.to_string()), "");
    let hidden = head(&s);
    let text = read_until(&mut stream, String::new(), |t| {
        t.contains(&format!("id: {hidden}\n"))
    });
    assert!(text.contains(&format!("id: {hidden}\n\n")), "{text}");
    assert!(sse_events(&text).is_empty(), "{text}");
    // `after` starts a stream without Last-Event-ID; Last-Event-ID wins over it.
    let mut stream = open_stream(&s, ADMIN, None, &format!("?after={first_id}"));
    let text = read_until(&mut stream, String::new(), |t| {
        t.contains("third while away")
    });
    assert!(text.contains("second while away"), "{text}");
    let mut stream = open_stream(
        &s,
        ADMIN,
        Some(&last.to_string()),
        &format!("?after={first_id}"),
    );
    let text = read_until(&mut stream, String::new(), |t| t.contains("hidden again"));
    assert!(!text.contains("second while away"), "{text}");
}

#[test]
fn waiting_feeds_hold_no_thread_outlive_the_request_limit_and_end_when_the_server_stops() {
    // A request time limit shorter than the waits.
    let (_dir, mut s) = demo_server("request_timeout_ms: 1000\n");
    let from = head(&s);
    // 40 long polls and 8 streams waiting (the blocking pool has 8 threads for reads).
    let waiting: Vec<std::thread::JoinHandle<(u16, Duration)>> = (0..40)
        .map(|_| {
            let base = s.base.clone();
            std::thread::spawn(move || {
                let agent = support::agent();
                let started = Instant::now();
                let (status, _) = support::request(
                    &agent,
                    &base,
                    "GET",
                    &format!("/api/v4/events/?after={from}&wait=3"),
                    Some(BOB),
                    None,
                )
                .expect("a long poll");
                (status, started.elapsed())
            })
        })
        .collect();
    let mut streams: Vec<TcpStream> = (0..8)
        .map(|_| open_stream(&s, BOB, Some(&from.to_string()), ""))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    // Reads and the health check answer meanwhile.
    for path in [
        "/api/v4/health/",
        "/api/v4/documents/1/",
        "/api/v4/events/?page_size=1",
    ] {
        let started = Instant::now();
        let (status, body) = s.get(path, ADMIN);
        assert_eq!(status, 200, "{path}: {body}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{path} answered in {:?} beside the waiting feeds",
            started.elapsed()
        );
    }
    // The long polls answer at their 3 s deadline, past the 1 s request limit, not 408.
    for w in waiting {
        let (status, took) = w.join().expect("a long poll");
        assert_eq!(status, 200);
        assert!(took >= Duration::from_secs(3), "{took:?}");
    }
    // The streams stay open past the request limit, then end when the server stops.
    for stream in &mut streams {
        let text = read_until(stream, String::new(), |t| t.contains("retry: "));
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    }
    // A long poll in progress when the server is told to stop.
    let base = s.base.clone();
    let polling = std::thread::spawn(move || {
        support::request(
            &support::agent(),
            &base,
            "GET",
            &format!("/api/v4/events/?after={}&wait=60", i64::MAX / 2),
            Some(ADMIN),
            None,
        )
    });
    std::thread::sleep(Duration::from_millis(500));
    let stopping = Instant::now();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &s.child.id().to_string()])
            .status()
            .expect("kill")
            .success()
    );
    let exited = loop {
        if let Ok(Some(status)) = s.child.try_wait() {
            break status;
        }
        assert!(
            stopping.elapsed() < Duration::from_secs(20),
            "the server did not stop with feeds open"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(exited.success(), "{exited:?}");
    assert!(
        stopping.elapsed() < Duration::from_secs(10),
        "stopped in {:?}",
        stopping.elapsed()
    );
    let (status, answer) = polling.join().expect("the long poll").expect("answered");
    assert_eq!(status, 200, "answered with what it had: {answer}");
    assert_eq!(answer["results"], json!([]));
    drop(streams);
}

#[test]
fn a_commit_through_one_server_wakes_a_follower_of_another_on_postgres() {
    let Some((url, name, mut admin)) = support::fresh_postgres_database("docmeta_feed") else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a_dir, b_dir) = (tmp.path().join("a"), tmp.path().join("b"));
    load_demo_on(&a_dir, &url);
    let start = |dir: &Path| {
        std::fs::create_dir_all(dir).expect("dir");
        std::fs::write(dir.join("config.yml"), support::FAST_HASHING).expect("config");
        let mut command = docmeta(dir);
        command.env("DOCMETA_DATABASE_URL", &url);
        Server::start_command(command, dir)
    };
    let a = start(&a_dir);
    let b = start(&b_dir);
    let (contract, invoice) = contract_and_invoice(&a);
    // Twice: the second time B's listening connection is already there.
    for round in 0..2 {
        let from = head(&b);
        let ((status, answer), took) = while_waiting(
            || b.get(&format!("/api/v4/events/?after={from}&wait={LONG}"), BOB),
            Duration::from_millis(300),
            || {
                rename(&a, invoice, &format!("hidden {round}"));
                rename(&a, contract, &format!("through A {round}"));
            },
        );
        assert_eq!(status, 200, "{answer}");
        assert!(
            took < Duration::from_secs(LONG / 2),
            "heard from A: {took:?}"
        );
        assert_eq!(labels(&answer), [format!("through A {round}")], "{answer}");
        assert_eq!(answer["cursor"], head(&a), "past the hidden event too");
    }
    // B's event stream carries what is committed through A.
    let from = head(&b);
    let mut stream = open_stream(&b, BOB, Some(&from.to_string()), "");
    let opening = read_until(&mut stream, String::new(), |t| t.contains("retry: "));
    rename(&a, contract, "streamed from A");
    let text = read_until(&mut stream, opening, |t| t.contains("streamed from A"));
    assert_eq!(sse_events(&text).len(), 1, "{text}");
    drop(stream);
    drop((a, b));
    let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
}

/// Loads the demo into the database at `url` through `dir` (before any server starts).
fn load_demo_on(dir: &Path, url: &str) {
    std::fs::create_dir_all(dir).expect("dir");
    std::fs::write(dir.join("config.yml"), support::FAST_HASHING).expect("config");
    let status = docmeta(dir)
        .env("DOCMETA_DATABASE_URL", url)
        .arg("demo")
        .stdout(Stdio::null())
        .status()
        .expect("demo");
    assert!(status.success(), "demo on PostgreSQL");
}
