//! The edges of the HTTP layer: a request answered `408` must not be applied
//! later; a truncated upload is the client's fault (`400`, not `500`); the default upload limit
//! is api.md's 512 MiB; and the errors the HTTP layer makes itself (`405`, `414`, `431`, `404`)
//! have JSON bodies like every other error.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::*;

const BOUNDARY: &str = "docmeta-test-boundary-7d1f";

/// A raw exchange: sends `request` (then half-closes when `shutdown`), reads the answer for at
/// most `wait`; the status, the headers (lower-cased) and the JSON body (`Null` if none).
fn exchange(base: &str, request: &[u8], shutdown: bool, wait: Duration) -> (u16, String, Value) {
    let mut stream = TcpStream::connect(base.trim_start_matches("http://")).expect("connect");
    stream.write_all(request).expect("send");
    if shutdown {
        stream.shutdown(Shutdown::Write).expect("half-close");
    }
    stream.set_read_timeout(Some(wait)).expect("timeout");
    let mut answer = Vec::new();
    let mut buf = [0u8; 8192];
    let started = Instant::now();
    while started.elapsed() < wait {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
        }
        if complete(&answer) {
            break;
        }
    }
    let text = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (
        status,
        head.to_ascii_lowercase(),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

/// Whether `answer` holds a whole answer with a `content-length` body.
fn complete(answer: &[u8]) -> bool {
    let text = String::from_utf8_lossy(answer).to_ascii_lowercase();
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    head.lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|n| n.trim().parse::<usize>().ok())
        .is_some_and(|n| body.len() >= n)
}

fn server(extra: &str) -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, extra);
    let server = Server::start(dir.path());
    (dir, server)
}

/// Asserts a JSON error answer: `{"detail": ...}` with `Content-Type: application/json`.
fn assert_json_detail(status: u16, expected: u16, head: &str, body: &Value) {
    assert_eq!(status, expected, "{head}");
    assert!(
        head.contains("content-type: application/json"),
        "a JSON answer: {head}"
    );
    assert!(body["detail"].is_string(), "a detail: {body}");
}

#[test]
fn a_truncated_multipart_upload_is_400_not_500() {
    let (_dir, s) = server("");
    let part = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"cut.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n{}",
        "x".repeat(1000)
    );
    // Announces 100,000 bytes, sends about 1,100, then ends its side of the connection.
    let request = format!(
        "POST /api/v4/documents/1/files/ HTTP/1.1\r\nHost: test\r\nAuthorization: {}\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: 100000\r\n\r\n{part}",
        basic(ADMIN)
    );
    let (status, head, body) = exchange(&s.base, request.as_bytes(), true, Duration::from_secs(10));
    assert_eq!(status, 400, "{head}{body}");
    assert!(
        body["file"].is_array() || body["detail"].is_string(),
        "a field error or a detail: {body}"
    );
    let (_, files) = s.get("/api/v4/documents/1/files/?page_size=500", ADMIN);
    assert!(
        files["results"]
            .as_array()
            .is_some_and(|f| f.iter().all(|f| f["filename"] != "cut.bin")),
        "nothing was stored: {files}"
    );
}

#[test]
fn the_default_upload_limit_is_512_mib() {
    let (_dir, s) = server("");
    // 600 MiB announced: over api.md's 512 MiB (the old default was 2 GiB), refused at once.
    let request = format!(
        "POST /api/v4/documents/1/files/ HTTP/1.1\r\nHost: test\r\nAuthorization: {}\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {}\r\n\r\n",
        basic(ADMIN),
        600u64 << 20
    );
    let (status, head, body) = exchange(&s.base, request.as_bytes(), false, Duration::from_secs(5));
    assert_json_detail(status, 413, &head, &body);
    assert!(
        body["detail"]
            .as_str()
            .is_some_and(|d| d.contains(&(512u64 << 20).to_string())),
        "{body}"
    );
}

#[test]
fn an_unsupported_method_is_405_with_a_json_body() {
    let (_dir, s) = server("");
    let request = format!(
        "PUT /api/v4/health/ HTTP/1.1\r\nHost: test\r\nAuthorization: {}\r\nContent-Length: 0\r\n\r\n",
        basic(ADMIN)
    );
    let (status, head, body) = exchange(&s.base, request.as_bytes(), false, Duration::from_secs(5));
    assert_json_detail(status, 405, &head, &body);
    assert!(
        head.contains("allow: "),
        "the allowed methods are named: {head}"
    );
}

#[test]
fn an_overlong_request_target_is_414_with_a_json_body() {
    let (_dir, s) = server("");
    let request = format!(
        "GET /api/v4/health/?pad={} HTTP/1.1\r\nHost: test\r\n\r\n",
        "a".repeat(16 * 1024)
    );
    let (status, head, body) = exchange(&s.base, request.as_bytes(), false, Duration::from_secs(5));
    assert_json_detail(status, 414, &head, &body);
}

#[test]
fn too_many_header_fields_are_431_with_a_json_body() {
    let (_dir, s) = server("");
    let headers: String = (0..80).map(|i| format!("X-Pad-{i}: {i}\r\n")).collect();
    let request = format!("GET /api/v4/health/ HTTP/1.1\r\nHost: test\r\n{headers}\r\n");
    let (status, head, body) = exchange(&s.base, request.as_bytes(), false, Duration::from_secs(5));
    assert_json_detail(status, 431, &head, &body);
}

#[test]
fn oversized_header_fields_are_431_with_a_json_body() {
    let (_dir, s) = server("");
    let request = format!(
        "GET /api/v4/health/ HTTP/1.1\r\nHost: test\r\nX-Pad: {}\r\n\r\n",
        "a".repeat(40 * 1024)
    );
    let (status, head, body) = exchange(&s.base, request.as_bytes(), false, Duration::from_secs(5));
    assert_json_detail(status, 431, &head, &body);
}

#[test]
fn an_unknown_path_is_404_with_a_json_body() {
    let (_dir, s) = server("");
    let request = "GET /api/v4/no-such-thing/ HTTP/1.1\r\nHost: test\r\n\r\n";
    let (status, head, body) = exchange(&s.base, request.as_bytes(), false, Duration::from_secs(5));
    assert_json_detail(status, 404, &head, &body);
}

/// Creates a document type with `n` required metadata types whose defaults take a while to
/// render (bounded by the template fuel), so creating a document of it is a slow write.
fn slow_document_type(s: &Server, n: usize) -> i64 {
    let (status, dt) = s.call(
        "POST",
        "/api/v4/documents/types/",
        Some(ADMIN),
        Some(&json!({"label": "Slow"})),
    );
    assert_eq!(status, 201, "{dt}");
    let dt = dt["id"].as_i64().expect("id");
    for i in 0..n {
        let (status, mt) = s.call(
            "POST",
            "/api/v4/metadata/metadata-types/",
            Some(ADMIN),
            Some(&json!({
                "name": format!("slow_{i}"),
                "label": format!("Slow {i}"),
                "default": "{% for i in range(4000) %}{% if i % 7 == 3 %}{% endif %}{% endfor %}1",
            })),
        );
        assert_eq!(status, 201, "{mt}");
        let (status, assoc) = s.call(
            "POST",
            &format!("/api/v4/documents/types/{dt}/metadata-types/"),
            Some(ADMIN),
            Some(&json!({"metadata_type_id": mt["id"], "required": true})),
        );
        assert_eq!(status, 201, "{assoc}");
    }
    dt
}

fn document_count(s: &Server) -> u64 {
    let (status, page) = s.get("/api/v4/documents/", ADMIN);
    assert_eq!(status, 200, "{page}");
    page["count"].as_u64().expect("count")
}

#[test]
fn a_request_that_times_out_leaves_no_change_behind() {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, "");
    let s = Server::start(dir.path());
    let document_type = slow_document_type(&s, 30);
    let create = |s: &Server, label: &str| {
        let started = Instant::now();
        let (status, body) = s.call(
            "POST",
            "/api/v4/documents/",
            Some(ADMIN),
            Some(&json!({"document_type_id": document_type, "label": label})),
        );
        (status, body, started.elapsed())
    };
    // How long the slow write takes here, with the default time limit.
    let (status, body, took) = create(&s, "in time");
    assert_eq!(status, 201, "{body}");
    let before = document_count(&s);
    s.kill();
    // A time limit well under that: the write is still running when it passes.
    let limit = (took.as_millis() / 4).max(20);
    eprintln!("the slow write took {took:?}; request_timeout_ms: {limit}");
    prepare(dir.path(), false, &format!("request_timeout_ms: {limit}\n"));
    let s = Server::start(dir.path());
    let (status, body, _) = create(&s, "too late");
    assert_eq!(status, 408, "{body}");
    // Whatever was still running when 408 went out must not have committed since.
    std::thread::sleep(took * 2);
    s.kill();
    prepare(dir.path(), false, "");
    let s = Server::start(dir.path());
    assert_eq!(
        document_count(&s),
        before,
        "the timed-out document was not created"
    );
    let (_, found) = s.get("/api/v4/documents/?label=too+late", ADMIN);
    assert!(
        found["results"]
            .as_array()
            .is_some_and(|r| r.iter().all(|d| d["label"] != "too late")),
        "{found}"
    );
}
