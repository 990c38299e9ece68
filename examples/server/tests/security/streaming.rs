//! Slow clients must not hang the API. A download the client never reads, or
//! an upload that stops half-way, used to hold one of the server's eight blocking threads each
//! (`blocking_send` / `blocking_recv`), with no time limit: eight of them took the whole API
//! down. Now no thread waits on a client, stalled streams are cut after an idle limit, and a
//! user's streams in progress are capped.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::support::*;

/// The demo's first document (an invoice the administrator may add files to).
const FILES: &str = "/api/v4/documents/1/files/";
const BOUNDARY: &str = "docmeta-test-boundary-7d1f";

/// A data directory of its own, with `extra` in its config.yml and the demo loaded.
fn server(extra: &str) -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, extra);
    let server = Server::start(dir.path());
    (dir, server)
}

/// Content larger than what the kernel buffers on loopback (a few MiB each way), so a client
/// that stops reading really stalls the server's writes.
fn big_content() -> Vec<u8> {
    (0..32u32 << 20).map(|i| (i % 251) as u8).collect()
}

/// Uploads `content` as the administrator; the download path of the new file.
fn upload_file(s: &Server, content: &[u8]) -> String {
    let (status, file) = upload(&agent(), &s.base, FILES, ADMIN, "big.bin", content)
        .unwrap_or_else(|e| panic!("upload: {e}"));
    assert_eq!(status, 201, "{file}");
    file["download_url"]
        .as_str()
        .expect("download_url")
        .trim_start_matches(&s.base)
        .to_owned()
}

fn connect(s: &Server) -> TcpStream {
    TcpStream::connect(s.base.trim_start_matches("http://")).expect("connect")
}

/// Sends a download request and never reads the answer.
fn stalled_download(s: &Server, path: &str) -> TcpStream {
    let mut stream = connect(s);
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: test\r\nAuthorization: {}\r\n\r\n",
        basic(ADMIN)
    );
    stream.write_all(request.as_bytes()).expect("send");
    stream
}

/// Sends an upload's headers (announcing 1 MiB) and the start of its body, then nothing more.
fn stalled_upload(s: &Server) -> TcpStream {
    let mut stream = connect(s);
    let head = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"slow.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    );
    let request = format!(
        "POST {FILES} HTTP/1.1\r\nHost: test\r\nAuthorization: {}\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {}\r\n\r\n{head}",
        basic(ADMIN),
        1 << 20
    );
    stream.write_all(request.as_bytes()).expect("send");
    stream
        .write_all(&[7u8; 4096])
        .expect("send part of the body");
    stream
}

/// The status of the answer on `stream` (0 when none came within `wait`).
fn answer_status(stream: &mut TcpStream, wait: Duration) -> (u16, String) {
    stream.set_read_timeout(Some(wait)).expect("timeout");
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
        }
    }
    // The rest of a short JSON body, if it is there.
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    if let Ok(n) = stream.read(&mut buf) {
        answer.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, text)
}

/// A request with a short client-side limit; its status and how long it took.
fn timed_get(base: &str, path: &str, user: Option<(&str, &str)>) -> (u16, Duration) {
    let quick: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let started = Instant::now();
    let status = request(&quick, base, "GET", path, user, None).map_or(0, |(status, _)| status);
    (status, started.elapsed())
}

#[test]
fn stalled_downloads_and_uploads_leave_the_api_responsive() {
    // No per-user cap in the way: every stalled stream is really held by the server.
    let (_dir, s) = server("streams_per_user: 1000\n");
    let download = upload_file(&s, &big_content());
    let mut held: Vec<TcpStream> = (0..64).map(|_| stalled_download(&s, &download)).collect();
    held.extend((0..64).map(|_| stalled_upload(&s)));
    // Let the server take them all in and fill the buffers of the downloads.
    std::thread::sleep(Duration::from_millis(1500));
    for round in 0..3 {
        let (status, took) = timed_get(&s.base, "/api/v4/health/", None);
        assert_eq!(status, 200, "health, round {round}");
        assert!(took < Duration::from_secs(1), "health took {took:?}");
        let (status, took) = timed_get(&s.base, "/api/v4/documents/1/", Some(ADMIN));
        assert_eq!(status, 200, "authenticated read, round {round}");
        assert!(took < Duration::from_secs(1), "the read took {took:?}");
    }
    drop(held);
}

#[test]
fn a_stalled_download_is_closed_after_the_idle_timeout() {
    let (_dir, s) = server("stream_idle_timeout_ms: 1000\n");
    let content = big_content();
    let download = upload_file(&s, &content);
    let mut stream = stalled_download(&s, &download);
    std::thread::sleep(Duration::from_secs(4));
    // Reading now gets what the kernel had buffered, then the end: the server gave up on us.
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut received = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    let ended = loop {
        match stream.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => received += n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break true,
            Err(_) => break false,
        }
    };
    assert!(ended, "the server closed the stalled download");
    assert!(
        received < content.len(),
        "the download was cut ({received} of {} bytes arrived)",
        content.len()
    );
}

#[test]
fn a_stalled_upload_is_answered_408_after_the_idle_timeout() {
    let (_dir, s) = server("stream_idle_timeout_ms: 1000\n");
    let mut stream = stalled_upload(&s);
    let started = Instant::now();
    let (status, text) = answer_status(&mut stream, Duration::from_secs(10));
    assert_eq!(status, 408, "{text}");
    assert!(text.contains("\"detail\""), "a JSON body: {text}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "answered after {:?}",
        started.elapsed()
    );
    // Nothing was stored.
    let (_, files) = s.get(&format!("{FILES}?page_size=500"), ADMIN);
    assert!(
        files["results"]
            .as_array()
            .is_some_and(|f| f.iter().all(|f| f["filename"] != "slow.bin")),
        "{files}"
    );
}

#[test]
fn a_download_that_is_read_too_slowly_is_cut_at_the_total_timeout() {
    let (_dir, s) = server("stream_total_timeout_ms: 1500\n");
    let content = big_content();
    let download = upload_file(&s, &content);
    let mut stream = stalled_download(&s, &download);
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    // Never idle long enough for the idle limit, but far too slow to finish in 1.5 s.
    let started = Instant::now();
    let mut received = 0usize;
    let mut buf = vec![0u8; 64 << 10];
    let ended = loop {
        match stream.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => received += n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break true,
            Err(_) => break false,
        }
        if started.elapsed() > Duration::from_secs(30) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(ended, "the server ended the slow download");
    assert!(
        received < content.len(),
        "it was cut ({received} of {} bytes arrived)",
        content.len()
    );
}

#[test]
fn an_upload_sent_too_slowly_is_answered_408_at_the_total_timeout() {
    let (_dir, s) = server("stream_total_timeout_ms: 1500\n");
    let mut stream = stalled_upload(&s);
    // A trickle, then silence: far from the idle limit (60 s) when the answer comes. (Stopping
    // before the total limit leaves no unread bytes that would make the close a reset.)
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(1) {
        stream.write_all(&[7u8; 512]).expect("send");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, text) = answer_status(&mut stream, Duration::from_secs(10));
    assert_eq!(status, 408, "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "answered at the total limit, not the idle one ({:?})",
        started.elapsed()
    );
}

#[test]
fn streams_beyond_the_per_user_cap_are_refused_with_429() {
    let (_dir, s) = server("streams_per_user: 2\n");
    let download = upload_file(&s, &big_content());
    let held: Vec<TcpStream> = (0..2).map(|_| stalled_download(&s, &download)).collect();
    std::thread::sleep(Duration::from_millis(500));
    let (status, took) = timed_get(&s.base, &download, Some(ADMIN));
    assert_eq!(status, 429, "a third download of the same user");
    assert!(took < Duration::from_secs(1), "refused at once ({took:?})");
    let (status, body) = upload(&agent(), &s.base, FILES, ADMIN, "x.txt", b"x").expect("upload");
    assert_eq!(status, 429, "an upload counts too: {body}");
    let (status, _) = timed_get(&s.base, "/api/v4/documents/1/", Some(ADMIN));
    assert_eq!(status, 200, "other requests are not streams and not capped");
    // Once the stalled clients go away, their places are free again.
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, _) = upload(&agent(), &s.base, FILES, ADMIN, "x.txt", b"x").expect("upload");
        if status == 201 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the places were never freed ({status})"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn encrypted_storage_uploads_and_downloads_stream_the_original_bytes() {
    let secrets = tempfile::tempdir().expect("tempdir");
    let password = secrets.path().join("storage-password");
    std::fs::write(&password, "correct horse battery staple\n").expect("password");
    let (_dir, s) = server(&format!(
        "storage_kdf_memory_kib: 64\nstorage_kdf_iterations: 1\ndocuments_file_storage_backend: encrypted\nstorage_password_file: {}\n",
        password.display()
    ));
    // Over the in-memory spool size and several download chunks.
    let content: Vec<u8> = (0..3_000_000u32).map(|i| (i % 241) as u8).collect();
    let path = upload_file(&s, &content);
    let (status, bytes) = download(&agent(), &s.base, &path, ADMIN).expect("download");
    assert_eq!(status, 200);
    assert!(
        bytes == content,
        "the decrypted bytes are the uploaded ones"
    );
}

#[test]
fn plain_storage_uploads_and_downloads_stream_the_original_bytes() {
    let (_dir, s) = server("");
    for size in [0usize, 1, 256 * 1024, 256 * 1024 + 1, 3_000_000] {
        let content: Vec<u8> = (0..size).map(|i| (i % 239) as u8).collect();
        let path = upload_file(&s, &content);
        let (status, bytes) = download(&agent(), &s.base, &path, ADMIN).expect("download");
        assert_eq!(status, 200);
        assert!(bytes == content, "{size} bytes come back whole");
    }
}
