//! Oversized document creation forms: a multipart document creation read its text fields whole and
//! parsed `metadata` as JSON before checking anything, and spooled its file to disk before the
//! permission refused it. A logged-in user holding no permission at all grew the server by
//! 942 MiB with a 16 MB `metadata` field, by 241 MiB with a 100 MB `label`, and had a 200 MB file
//! written to disk. Every shape is sent here by such a user (and a JSON body of the worst shape
//! within its limit), over a raw connection that streams the body while reading the answer, and
//! the server's peak resident size (`VmHWM`, reset before each request), the bytes it wrote
//! (`wchar`: a spooled file) and how much of the body it took in before answering are measured.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};

use super::support::*;

const NOBODY: (&str, &str) = ("nobody", "nobody-password");
const BOUNDARY: &str = "docmeta-form-boundary-41c9";
const MIB: u64 = 1 << 20;
/// The name of a [`Part`] whose head never ends: its content is one long header line.
const UNENDING_HEADERS: &str = "(unending headers)";

/// One part of a form: its name, a file name for a file part, and its content: `prefix`, then
/// `fill` repeated up to `len` bytes in all.
struct Part {
    name: &'static str,
    filename: Option<&'static str>,
    prefix: &'static [u8],
    fill: &'static [u8],
    len: usize,
}

fn text(name: &'static str, value: &'static str) -> Part {
    Part {
        name,
        filename: None,
        prefix: value.as_bytes(),
        fill: b" ",
        len: value.len(),
    }
}

impl Part {
    fn head(&self) -> String {
        if self.name == UNENDING_HEADERS {
            // A header line that goes on as long as the content does.
            return format!(
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"pad\"\r\nX-Padding: "
            );
        }
        match self.filename {
            Some(f) => format!(
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{}\"; filename=\"{f}\"\r\nContent-Type: application/octet-stream\r\n\r\n",
                self.name
            ),
            None => format!(
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{}\"\r\n\r\n",
                self.name
            ),
        }
    }

    /// Writes the part's content in chunks (never built whole in memory).
    fn write(&self, out: &mut impl Write) -> std::io::Result<()> {
        out.write_all(self.head().as_bytes())?;
        out.write_all(self.prefix)?;
        let mut left = self.len - self.prefix.len();
        // Whole repetitions of `fill` per chunk, so that the pattern runs on across chunks.
        let per = (64 * 1024 / self.fill.len()).max(1) * self.fill.len();
        let chunk: Vec<u8> = self.fill.iter().copied().cycle().take(per).collect();
        while left > 0 {
            let n = left.min(chunk.len());
            out.write_all(&chunk[..n])?;
            left -= n;
        }
        out.write_all(b"\r\n")
    }
}

/// A connection counting the bytes written to it.
struct Counting(TcpStream, u64);

impl Write for Counting {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.0.write(buf)?;
        self.1 += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// What one request cost the server, and its answer.
struct Cost {
    status: u16,
    answer: Value,
    /// Peak resident size above the size before the request.
    grown_kib: u64,
    /// Bytes of the body the client could send (the server took them in, or the kernel's
    /// buffers did) before the server answered and closed.
    sent: u64,
    written: u64,
}

/// Sends `body` (written by `write`, `len` bytes, of `content_type`) to `path` as `user`, reading
/// the answer while the body is still being sent, and measures what it cost the server.
fn measured(
    s: &Server,
    path: &str,
    user: (&str, &str),
    content_type: &str,
    len: u64,
    write: impl FnOnce(&mut Counting) -> std::io::Result<()> + Send + 'static,
) -> Cost {
    let pid = s.child.id();
    // Let the previous request's memory be given back before the peak is reset.
    std::thread::sleep(Duration::from_millis(300));
    let peak_reset = reset_peak(pid);
    let rss = process_kib(pid, "VmRSS").unwrap_or(0);
    let base = if peak_reset {
        rss
    } else {
        process_kib(pid, "VmHWM").unwrap_or(rss)
    };
    let written = process_io(pid, "wchar").unwrap_or(0);
    let addr = s.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).expect("connect");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {}\r\nContent-Type: {content_type}\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n",
        basic(user)
    );
    stream.write_all(head.as_bytes()).expect("send the head");
    let mut sending = Counting(stream.try_clone().expect("clone"), 0);
    let writer = std::thread::spawn(move || {
        // Fails once the server has answered and closed: what it refused is never sent.
        let _ = write(&mut sending);
        sending.1
    });
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .expect("timeout");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let _ = stream.shutdown(std::net::Shutdown::Both);
    let sent = writer.join().unwrap_or(u64::MAX);
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
    let json = body
        .find('{')
        .and_then(|start| body.rfind('}').map(|end| &body[start..=end]))
        .unwrap_or("");
    let peak = process_kib(pid, "VmHWM").unwrap_or(0);
    Cost {
        status,
        answer: serde_json::from_str(json).unwrap_or(Value::Null),
        grown_kib: peak.saturating_sub(base),
        sent,
        written: process_io(pid, "wchar")
            .unwrap_or(0)
            .saturating_sub(written),
    }
}

/// A multipart document creation of `parts`, measured.
fn form(s: &Server, user: (&str, &str), parts: Vec<Part>) -> Cost {
    let closing = format!("--{BOUNDARY}--\r\n");
    let len: usize = parts
        .iter()
        .map(|p| p.head().len() + p.len + 2)
        .sum::<usize>()
        + closing.len();
    measured(
        s,
        "/api/v4/documents/",
        user,
        &format!("multipart/form-data; boundary={BOUNDARY}"),
        len as u64,
        move |out| {
            for p in &parts {
                p.write(out)?;
            }
            out.write_all(closing.as_bytes())
        },
    )
}

fn spooled_files(s: &Server) -> usize {
    std::fs::read_dir(s.dir.join(".spool")).map_or(0, |d| d.count())
}

/// A server with the demo data and `nobody`, a user holding no permission at all.
fn server() -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().expect("tempdir");
    // Uploads as large as the shapes: the limit is not what refuses them.
    prepare(dir.path(), true, "upload_max_bytes: 1073741824\n");
    let s = Server::start(dir.path());
    let (status, answer) = s.call(
        "POST",
        "/api/v4/users/",
        Some(ADMIN),
        Some(&json!({"username": NOBODY.0, "password": NOBODY.1})),
    );
    assert_eq!(status, 201, "{answer}");
    (dir, s)
}

/// Asserts that a request refused by `status` cost the server no more than `max_kib` (a small
/// multiple of what the server reads of a request before its permission check), however large
/// its body.
fn assert_cheap(what: &str, cost: &Cost, status: u16) {
    assert_costs(what, cost, status, 24 * 1024);
}

fn assert_costs(what: &str, cost: &Cost, status: u16, max_kib: u64) {
    eprintln!(
        "{what}: {} {}, peak +{} KiB, sent {} KiB, wrote {} KiB",
        cost.status,
        cost.answer,
        cost.grown_kib,
        cost.sent / 1024,
        cost.written / 1024
    );
    assert_eq!(cost.status, status, "{what}: {}", cost.answer);
    // Before the check the server reads at most 2 MiB of a form (or 1 MiB of JSON): a small
    // multiple of that, never of what the client sends.
    assert!(
        cost.grown_kib < max_kib,
        "{what}: the server grew by {} KiB",
        cost.grown_kib
    );
    // What the server read, plus what the kernel's buffers on loopback hold.
    assert!(
        cost.sent < 24 * MIB,
        "{what}: the server took in {} bytes of the body",
        cost.sent
    );
    assert!(
        cost.written < 8 * MIB,
        "{what}: the server wrote {} bytes (spooled the file?)",
        cost.written
    );
}

#[test]
fn a_form_costs_no_more_than_its_bounded_fields_before_its_permission_is_checked() {
    let (_dir, s) = server();
    // 16 MB of `metadata` as JSON (`[{},{},…`): parsed whole, it grew the server by 942 MiB.
    let cost = form(
        &s,
        NOBODY,
        vec![
            text("document_type_id", "1"),
            text("label", "x"),
            Part {
                name: "metadata",
                filename: None,
                prefix: b"[",
                fill: b"{},",
                len: 16_000_000,
            },
        ],
    );
    assert_cheap("a 16 MB metadata field", &cost, 413);
    assert!(cost.answer["metadata"].is_array(), "{}", cost.answer);

    // A 100 MB label (241 MiB).
    let cost = form(
        &s,
        NOBODY,
        vec![
            text("document_type_id", "1"),
            Part {
                name: "label",
                filename: None,
                prefix: b"",
                fill: b"x",
                len: 100_000_000,
            },
        ],
    );
    assert_cheap("a 100 MB label", &cost, 413);

    // A 100 MB field no one reads: bounded like the others.
    let cost = form(
        &s,
        NOBODY,
        vec![Part {
            name: "padding",
            filename: None,
            prefix: b"",
            fill: b"-",
            len: 100_000_000,
        }],
    );
    assert_cheap("a 100 MB unknown field", &cost, 413);

    // A 200 MB file after its fields: refused (the type is not even visible to this user)
    // before a byte of it is read, and nothing reaches the spool.
    let file = |len| Part {
        name: "file",
        filename: Some("big.bin"),
        prefix: b"",
        fill: b"0123456789abcdef",
        len,
    };
    let cost = form(
        &s,
        NOBODY,
        vec![
            text("document_type_id", "1"),
            text("label", "x"),
            file(200_000_000),
        ],
    );
    assert_cheap("a 200 MB file", &cost, 400);
    assert!(
        cost.answer["document_type_id"].is_array(),
        "{}",
        cost.answer
    );
    assert_eq!(spooled_files(&s), 0, "the refused file was spooled");

    // The file before the fields that decide its permission: refused before it is read.
    let cost = form(
        &s,
        NOBODY,
        vec![
            file(200_000_000),
            text("document_type_id", "1"),
            text("label", "x"),
        ],
    );
    assert_cheap("a 200 MB file before its fields", &cost, 400);
    assert!(cost.answer["file"].is_array(), "{}", cost.answer);
    assert_eq!(spooled_files(&s), 0, "the refused file was spooled");

    // 32 MB of a part's headers (the multipart parser buffers them until they end).
    let cost = form(
        &s,
        NOBODY,
        vec![Part {
            name: UNENDING_HEADERS,
            filename: None,
            prefix: b"",
            fill: b"h",
            len: 32_000_000,
        }],
    );
    assert_cheap("32 MB of a part's headers", &cost, 413);

    // The worst JSON bodies within the 1 MiB limit: `{}` values, 80-odd bytes each once parsed
    // (64 MiB for a megabyte of them): more than 100,000 values are refused unparsed, and the
    // most allowed cost a small multiple of the limit.
    for (values, status) in [(340_000, 413), (99_990, 400)] {
        let mut body = br#"{"document_type_id": 1, "label": "x", "metadata": ["#.to_vec();
        for _ in 1..values {
            body.extend_from_slice(b"{},");
        }
        body.extend_from_slice(b"{}]}");
        let len = body.len() as u64;
        let cost = measured(
            &s,
            "/api/v4/documents/",
            NOBODY,
            "application/json",
            len,
            move |out| out.write_all(&body),
        );
        // 100,000 parsed values are some 8 MiB, and their list's growth copies them.
        assert_costs(
            &format!("a JSON body of {values} values"),
            &cost,
            status,
            32 * 1024,
        );
    }

    // What is allowed still works: the administrator's form, fields first, then the file.
    let (status, plain) = s.call(
        "POST",
        "/api/v4/documents/types/",
        Some(ADMIN),
        Some(&json!({"label": "Plain"})),
    );
    assert_eq!(status, 201, "{plain}");
    let plain: &'static str = String::leak(plain["id"].to_string());
    let cost = form(
        &s,
        ADMIN,
        vec![
            text("document_type_id", plain),
            text("label", "with a file"),
            text("metadata", "[]"),
            file(3_000_000),
        ],
    );
    assert_eq!(cost.status, 201, "{}", cost.answer);
    assert_eq!(cost.answer["label"], "with a file");
    // And the same form with the file first is refused, saying why.
    let cost = form(
        &s,
        ADMIN,
        vec![
            file(1000),
            text("document_type_id", plain),
            text("label", "file first"),
        ],
    );
    assert_eq!(cost.status, 400, "{}", cost.answer);
    let why = cost.answer["file"][0].as_str().unwrap_or_default();
    assert!(why.contains("document_type_id"), "{why}");
}
