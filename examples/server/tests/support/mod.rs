//! What the reliability tests share: a `docmeta serve` process on an ephemeral loopback port
//! over a data directory the test owns (so it can be killed and started again on the same data),
//! and a small HTTP client.
#![allow(dead_code)] // each test file uses its own part

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

pub const ADMIN: (&str, &str) = ("admin", "admin-password");

/// Cheap password hashing: these tests are about HTTP, not Argon2 cost.
pub const FAST_HASHING: &str = "password_hash_memory_kib: 64\npassword_hash_iterations: 1\n";

/// The `docmeta` binary on `dir`, with the administrator's password set.
pub fn docmeta(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_docmeta"));
    c.env("DOCMETA_DATA", dir)
        .env("DOCMETA_ADMIN_PASSWORD", ADMIN.1)
        .env("DOCMETA_LOG", "warn")
        .env_remove("DOCMETA_DATABASE_URL");
    c
}

/// Writes `config.yml` (fast hashing plus `extra`) and, with `demo`, loads the demo data.
pub fn prepare(dir: &Path, demo: bool, extra: &str) {
    std::fs::create_dir_all(dir).expect("data directory");
    std::fs::write(dir.join("config.yml"), format!("{FAST_HASHING}{extra}")).expect("config");
    if demo {
        let status = docmeta(dir)
            .arg("demo")
            .stdout(Stdio::null())
            .status()
            .expect("run demo");
        assert!(status.success(), "demo failed");
    }
}

/// A running `docmeta serve`.
pub struct Server {
    pub child: Child,
    pub base: String,
    pub dir: PathBuf,
    agent: ureq::Agent,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

pub fn basic(user: (&str, &str)) -> String {
    use base64::Engine;
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", user.0, user.1));
    format!("Basic {token}")
}

impl Server {
    /// Starts `docmeta serve` on `dir` and waits until it listens.
    pub fn start(dir: &Path) -> Server {
        Server::start_with_log(dir, Stdio::inherit())
    }

    /// [`Server::start`] with the server's log (its standard error) written to the file `log`.
    pub fn start_logging_to(dir: &Path, log: &Path) -> Server {
        let file = std::fs::File::create(log).expect("log file");
        Server::start_with_log(dir, Stdio::from(file))
    }

    /// Starts `command` (a [`docmeta`] on `dir` with more settings) as `docmeta serve`.
    pub fn start_command(command: Command, dir: &Path) -> Server {
        Server::start_from(command, dir, Stdio::inherit())
    }

    fn start_with_log(dir: &Path, log: Stdio) -> Server {
        Server::start_from(docmeta(dir), dir, log)
    }

    fn start_from(mut command: Command, dir: &Path, log: Stdio) -> Server {
        let mut child = command
            .args(["serve", "--bind", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let mut base = String::new();
        for line in lines.by_ref() {
            let line = line.expect("line");
            if let Some(addr) = line.strip_prefix("docmeta listening on ") {
                base = addr.trim().to_owned();
                break;
            }
        }
        assert!(!base.is_empty(), "the server did not start");
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Server {
            child,
            base,
            dir: dir.to_path_buf(),
            agent: agent(),
        }
    }

    /// SIGKILL, as a crash: no shutdown code runs.
    pub fn kill(mut self) {
        self.child.kill().expect("SIGKILL");
        let _ = self.child.wait();
    }

    /// A request with a JSON body (or none); the status and the JSON answer (`Null` if none).
    pub fn call(
        &self,
        method: &str,
        path: &str,
        user: Option<(&str, &str)>,
        body: Option<&Value>,
    ) -> (u16, Value) {
        request(&self.agent, &self.base, method, path, user, body)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    pub fn get(&self, path: &str, user: (&str, &str)) -> (u16, Value) {
        self.call("GET", path, Some(user), None)
    }
}

/// One HTTP exchange; `Err` when the connection failed (a killed server, say).
pub fn request(
    agent: &ureq::Agent,
    base: &str,
    method: &str,
    path: &str,
    user: Option<(&str, &str)>,
    body: Option<&Value>,
) -> Result<(u16, Value), ureq::Error> {
    let url = format!("{base}{path}");
    let auth = user.map(basic);
    let response = match method {
        "GET" | "DELETE" => {
            let mut r = if method == "GET" {
                agent.get(&url)
            } else {
                agent.delete(&url)
            };
            if let Some(a) = &auth {
                r = r.header("Authorization", a);
            }
            r.call()
        }
        _ => {
            let mut r = match method {
                "POST" => agent.post(&url),
                "PATCH" => agent.patch(&url),
                _ => agent.put(&url),
            };
            if let Some(a) = &auth {
                r = r.header("Authorization", a);
            }
            r.header("Content-Type", "application/json")
                .send(body.map(Value::to_string).unwrap_or_default())
        }
    };
    let mut response = response?;
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string()?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

/// Uploads `content` as the multipart field `file` of `path`.
pub fn upload(
    agent: &ureq::Agent,
    base: &str,
    path: &str,
    user: (&str, &str),
    filename: &str,
    content: &[u8],
) -> Result<(u16, Value), ureq::Error> {
    let boundary = "docmeta-test-boundary-7d1f";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(content);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let mut response = agent
        .post(format!("{base}{path}"))
        .header("Authorization", basic(user))
        .header(
            "Content-Type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .send(&body[..])?;
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string()?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

/// Downloads `path`: the status and the bytes.
pub fn download(
    agent: &ureq::Agent,
    base: &str,
    path: &str,
    user: (&str, &str),
) -> Result<(u16, Vec<u8>), ureq::Error> {
    let mut response = agent
        .get(format!("{base}{path}"))
        .header("Authorization", basic(user))
        .call()?;
    let status = response.status().as_u16();
    let bytes = response
        .body_mut()
        .with_config()
        .limit(256 << 20)
        .read_to_vec()?;
    Ok((status, bytes))
}

/// SHA-256 of `bytes`, hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A small deterministic generator (xorshift64*), so failures replay from the printed seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `range`.
    pub fn range(&mut self, range: std::ops::Range<u64>) -> u64 {
        range.start + self.next() % (range.end - range.start)
    }
}

/// A seed from the environment variable `name`, or from the clock (printed by the caller).
pub fn seed(name: &str) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        })
}

/// An upload over a raw connection that keeps reading when the server answers before the body
/// is sent (as it does when it refuses a file part-way): the status and the JSON answer.
pub fn upload_expecting_early_answer(
    base: &str,
    path: &str,
    user: (&str, &str),
    content: &[u8],
) -> (u16, Value) {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    let boundary = "docmeta-test-boundary-7d1f";
    let head = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    );
    let tail = format!("\r\n--{boundary}--\r\n");
    let length = head.len() + content.len() + tail.len();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {}\r\nContent-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n{head}",
        basic(user)
    );
    let _ = stream
        .write_all(request.as_bytes())
        .and_then(|()| stream.write_all(content))
        .and_then(|()| stream.write_all(tail.as_bytes()));
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
    // A chunked answer: the JSON is between the chunk sizes.
    let json = body
        .find('{')
        .and_then(|start| body.rfind('}').map(|end| &body[start..=end]))
        .unwrap_or("");
    (status, serde_json::from_str(json).unwrap_or(Value::Null))
}

/// A new database on the test cluster: its URL, its name and a connection to the cluster (to
/// drop it); `None` (the test skips) without `DOCMETA_TEST_POSTGRES_URL`.
pub fn fresh_postgres_database(prefix: &str) -> Option<(String, String, postgres::Client)> {
    let Some(base_url) = std::env::var("DOCMETA_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        assert!(
            std::env::var("DOCMETA_REQUIRE_POSTGRES").is_err_and(|_| true)
                || std::env::var("DOCMETA_REQUIRE_POSTGRES").is_ok_and(|v| v != "1"),
            "DOCMETA_REQUIRE_POSTGRES=1 but DOCMETA_TEST_POSTGRES_URL is not set"
        );
        eprintln!(
            "skipped: DOCMETA_TEST_POSTGRES_URL is not set (no PostgreSQL; .ci/run starts one)"
        );
        return None;
    };
    let name = format!("{prefix}_{}", std::process::id());
    let mut admin = postgres::Client::connect(&base_url, postgres::NoTls).expect("connect");
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
        .expect("drop");
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .expect("create");
    let url = format!(
        "{}/{name}",
        &base_url[..base_url.rfind('/').expect("url with a database")]
    );
    Some((url, name, admin))
}

/// A `/proc/<pid>/status` figure of a process in KiB (`VmHWM`, `VmRSS`, ...); `None` off Linux.
pub fn process_kib(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status
        .lines()
        .find(|l| l.strip_prefix(key).is_some_and(|r| r.starts_with(':')))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Resets a process's peak resident size (`VmHWM`) to its current one; whether it could.
pub fn reset_peak(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

/// A `/proc/<pid>/io` counter of a process (`rchar`: bytes it read, sockets included; `wchar`).
pub fn process_io(pid: u32, key: &str) -> Option<u64> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    let line = io
        .lines()
        .find(|l| l.strip_prefix(key).is_some_and(|r| r.starts_with(':')))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
