//! Slowloris: connections that never finished their headers, or idled
//! between requests, were never timed out nor capped. 1,100 idle sockets took a server whose
//! open-file limit was 1,024 offline, and each unfinished 380 KB head held some 300 KiB. Now a
//! connection's head must arrive within `header_read_timeout_ms` of its first byte, a connection
//! without a request in progress closes after `keep_alive_timeout_ms`, connections are capped in
//! all and per client address (those beyond are closed at once), a head is at most 64 KiB, and
//! the server raises its soft open-file limit to the hard one at start.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use super::support::*;

/// A server on `extra` settings and the demo data, started (with `low_file_limit`) under a soft
/// open-file limit of 1,024, the limit the attack exhausted (through util-linux's `prlimit`;
/// without it, under this process's limits, said on standard error).
fn server(extra: &str, low_file_limit: bool) -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, extra);
    let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .maximum
        .map_or("unlimited".to_owned(), |n| n.to_string());
    let prlimit_works = std::process::Command::new("prlimit")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !low_file_limit || !prlimit_works {
        if low_file_limit {
            eprintln!("prlimit is not available: the server starts under this process's limits");
        }
        let s = Server::start(dir.path());
        return (dir, s);
    }
    let mut command = std::process::Command::new("prlimit");
    command
        .arg(format!("--nofile=1024:{hard}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_docmeta"))
        .env("DOCMETA_DATA", dir.path())
        .env("DOCMETA_ADMIN_PASSWORD", ADMIN.1)
        .env("DOCMETA_LOG", "warn")
        .env_remove("DOCMETA_DATABASE_URL");
    let s = Server::start_command(command, dir.path());
    (dir, s)
}

fn set_soft_file_limit(soft: Option<u64>) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: soft,
            maximum: limit.maximum,
        },
    )
    .expect("set the open-file limit");
}

/// The soft open-file limit of this test process, raised to the hard one (the attack holds
/// thousands of sockets).
fn raise_own_file_limit() {
    let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum;
    set_soft_file_limit(hard);
}

fn server_addr(s: &Server) -> SocketAddr {
    s.base
        .trim_start_matches("http://")
        .parse()
        .expect("server address")
}

/// A connection to the server from the loopback address `from` (127.0.0.x).
fn connect_from(s: &Server, from: [u8; 4]) -> std::io::Result<TcpStream> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    socket.bind(&SocketAddr::from((from, 0)).into())?;
    socket.connect_timeout(&server_addr(s).into(), Duration::from_secs(2))?;
    Ok(socket.into())
}

/// One request from `from` with `Connection: close`: its status (0 when the connection failed,
/// was closed or did not answer within 10 s) and how long it took.
fn request_from(
    s: &Server,
    from: [u8; 4],
    path: &str,
    user: Option<(&str, &str)>,
) -> (u16, Duration) {
    let started = Instant::now();
    let status = (|| -> std::io::Result<u16> {
        let mut stream = connect_from(s, from)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        let auth = user.map_or(String::new(), |u| {
            format!("Authorization: {}\r\n", basic(u))
        });
        stream.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: test\r\n{auth}Connection: close\r\n\r\n")
                .as_bytes(),
        )?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer)?;
        let text = String::from_utf8_lossy(&answer);
        Ok(text
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0))
    })()
    .unwrap_or(0);
    (status, started.elapsed())
}

/// Whether `stream` is still open: not closed by the server, nothing (such as a `503`) sent.
fn still_open(mut stream: &TcpStream) -> bool {
    let _ = stream.set_nonblocking(true);
    let mut buf = [0u8; 1];
    let open =
        matches!(stream.read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    let _ = stream.set_nonblocking(false);
    open
}

/// How many of `streams` the server keeps open, once it has closed those beyond `expected`:
/// it closes them at once, but on a loaded machine "at once" may take longer than a fixed
/// pause, so this waits (up to 10 s) until no more than `expected` are open, then counts
/// again after a short pause (a server that closes too many shows it then).
fn open_once_settled(streams: &[TcpStream], expected: usize) -> usize {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    std::thread::sleep(Duration::from_millis(500));
    while streams.iter().filter(|s| still_open(s)).count() > expected
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(200));
    streams.iter().filter(|s| still_open(s)).count()
}

/// Waits up to `wait` for the server to close `stream` (or answer on it and close it); whether
/// it did.
fn closed_within(stream: &mut TcpStream, wait: Duration) -> bool {
    let _ = stream.set_read_timeout(Some(wait));
    let started = Instant::now();
    let mut buf = [0u8; 4096];
    while started.elapsed() < wait {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return false,
            Err(_) => return true,
        }
    }
    false
}

/// The start of a request head, never finished.
fn unfinished_head() -> Vec<u8> {
    let mut head = b"GET /api/v4/health/ HTTP/1.1\r\nHost: test\r\nX-Padding: ".to_vec();
    head.resize(16 * 1024, b'p');
    head
}

#[test]
fn two_thousand_stalled_connections_leave_the_api_responsive() {
    raise_own_file_limit();
    // Default settings, and the soft open-file limit the attack exhausted.
    let (_dir, s) = server("", true);
    let limit =
        std::fs::read_to_string(format!("/proc/{}/limits", s.child.id())).unwrap_or_default();
    eprintln!(
        "the server's open-file limit: {}",
        limit
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .unwrap_or("?")
    );
    let mut held = Vec::new();
    for i in 0..2000 {
        let Ok(mut stream) = connect_from(&s, [127, 0, 0, 1]) else {
            // Not even queued: the server is already offline (what the checks below find).
            break;
        };
        // Half never send anything, half stop in the middle of their headers.
        if i % 2 == 1 {
            let _ = stream.write_all(&unfinished_head());
        }
        held.push(stream);
    }
    std::thread::sleep(Duration::from_millis(500));
    for round in 0..3 {
        let (status, took) = request_from(&s, [127, 0, 0, 2], "/api/v4/health/", None);
        assert_eq!(status, 200, "health from another address, round {round}");
        assert!(took < Duration::from_secs(1), "health took {took:?}");
        let (status, took) = request_from(&s, [127, 0, 0, 2], "/api/v4/documents/1/", Some(ADMIN));
        assert_eq!(status, 200, "a read from another address, round {round}");
        assert!(took < Duration::from_secs(1), "the read took {took:?}");
    }
    // The attacker's address holds no more than its share; the rest were closed at once.
    let open = held.iter().filter(|s| still_open(s)).count();
    assert!(open <= 256, "{open} connections from one address are held");
    drop(held);
}

#[test]
fn connections_beyond_the_caps_are_closed_at_once() {
    raise_own_file_limit();
    let (_dir, s) = server(
        "max_connections: 80\nmax_connections_per_address: 50\nkeep_alive_timeout_ms: 60000\n",
        false,
    );
    let first: Vec<TcpStream> = (0..100)
        .filter_map(|_| connect_from(&s, [127, 0, 0, 1]).ok())
        .collect();
    let open = open_once_settled(&first, 50);
    assert_eq!(open, 50, "one address holds max_connections_per_address");
    let (status, _) = request_from(&s, [127, 0, 0, 2], "/api/v4/health/", None);
    assert_eq!(status, 200, "another address is served");
    let second: Vec<TcpStream> = (0..60)
        .filter_map(|_| connect_from(&s, [127, 0, 0, 3]).ok())
        .collect();
    let open = open_once_settled(&second, 30);
    assert_eq!(open, 30, "the server holds max_connections in all");
    // Beyond max_connections a connection is closed at once, with a `503` when the client has
    // not sent its request yet (else the close may reset the connection before it reads it).
    let mut refused = connect_from(&s, [127, 0, 0, 4]).expect("connect");
    let mut answer = Vec::new();
    refused
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let _ = refused.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    let (status, _) = request_from(&s, [127, 0, 0, 4], "/api/v4/health/", None);
    assert!(status == 503 || status == 0, "{status}");
    drop(first);
    drop(second);
    std::thread::sleep(Duration::from_millis(500));
    let (status, _) = request_from(&s, [127, 0, 0, 4], "/api/v4/health/", None);
    assert_eq!(status, 200, "places are freed when connections close");
}

#[test]
fn idle_and_unfinished_connections_are_closed_after_their_timeouts() {
    let (_dir, s) = server(
        "header_read_timeout_ms: 1500\nkeep_alive_timeout_ms: 1000\n",
        false,
    );
    let wait = Duration::from_secs(15);
    // A connection that never sends a byte.
    let mut silent = connect_from(&s, [127, 0, 0, 1]).expect("connect");
    // One that sends half a head and stops.
    let mut unfinished = connect_from(&s, [127, 0, 0, 1]).expect("connect");
    unfinished.write_all(&unfinished_head()).expect("send");
    // One that sends its head a byte at a time, never pausing long enough to look idle.
    let mut trickling = connect_from(&s, [127, 0, 0, 1]).expect("connect");
    let trickle = std::thread::spawn({
        let mut stream = trickling.try_clone().expect("clone");
        move || {
            let started = Instant::now();
            for byte in b"GET /api/v4/health/ HTTP/1.1\r\nHost: test\r\n"
                .iter()
                .cycle()
            {
                if stream.write_all(&[*byte]).is_err()
                    || started.elapsed() > Duration::from_secs(20)
                {
                    return started.elapsed();
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            started.elapsed()
        }
    });
    // One kept alive after an answer, then silent.
    let mut kept = connect_from(&s, [127, 0, 0, 1]).expect("connect");
    kept.write_all(b"GET /api/v4/health/ HTTP/1.1\r\nHost: test\r\n\r\n")
        .expect("send");
    let mut answer = [0u8; 4096];
    let n = kept.read(&mut answer).expect("the answer");
    assert!(String::from_utf8_lossy(&answer[..n]).starts_with("HTTP/1.1 200"));

    assert!(
        closed_within(&mut silent, wait),
        "a silent connection stays open"
    );
    assert!(
        closed_within(&mut unfinished, wait),
        "an unfinished head stays open"
    );
    assert!(
        closed_within(&mut kept, wait),
        "an idle kept-alive connection stays open"
    );
    assert!(
        closed_within(&mut trickling, wait),
        "a trickling head stays open"
    );
    let trickled = trickle.join().expect("trickle");
    assert!(
        trickled < Duration::from_secs(20),
        "the trickling head was never cut"
    );
    // The server still answers.
    let (status, _) = request_from(&s, [127, 0, 0, 2], "/api/v4/health/", None);
    assert_eq!(status, 200);
}
