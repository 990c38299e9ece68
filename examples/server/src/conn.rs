//! Connections: how the server accepts and serves them, and what bounds each.
//!
//! A client that opens connections and then sends nothing, or sends its headers a byte at a time,
//! or stops reading an answer, must not hold the server's sockets, memory or open files. The server
//! therefore serves its connections itself (axum's `serve` exposes none of hyper's connection
//! settings) and bounds each:
//!
//! - **How many**: at most `max_connections` in all and `max_connections_per_address` from one
//!   client address (an IPv6 /64 network counts as one address). A connection beyond either is
//!   answered `503` and closed as soon as it is accepted, so the listen queue never fills with
//!   connections waiting to be refused. The process's soft open-file limit is raised to its hard
//!   one at start ([`raise_open_file_limit`]) and the connection cap kept below it.
//! - **Reading**: a connection with no request in progress (new, or its last answer sent) that
//!   receives no byte for `keep_alive_timeout_ms` is closed; a request's head must be complete
//!   within `header_read_timeout_ms` of its first byte, and may be at most [`MAX_HEAD_BYTES`]
//!   (hyper answers `431` beyond). hyper's own header timer, which starts when it begins to wait
//!   for a head (so it covers the idle time before a kept-alive request's first byte, as its
//!   source shows: `Conn::poll_read_head` arms it and an idle connection re-arms it), is set to
//!   the sum of the two as a backstop. While a request is in progress the read side has no
//!   limit here: its handler's (`request_timeout_ms`) and an upload's (stream limits) apply.
//! - **Writing**: a response is written only as fast as the client reads it. Each connection's
//!   writes have an idle limit (no byte accepted by the client for `stream_idle_timeout_ms`)
//!   and, while a download streams, that download's total limit: past either, the write fails,
//!   hyper closes the connection and drops the response body (and with it the open file).
//!
//! Graceful shutdown is axum's: on the signal the listener closes, idle connections close,
//! requests in progress finish, then `serve` returns.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::ConnectInfo;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Sleep;
use tower::ServiceExt as _;

use crate::streams::config_duration;

/// The largest request head (request line and headers) the server reads; a larger one, or an
/// unfinished one reaching this size, is answered `431` by hyper and the connection closed.
/// (docmeta's own limits, 8 KiB of target and 32 KiB of headers, answer JSON below it.)
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Open files the server keeps for itself beyond its connections (database, search index,
/// stored files being read or written, log).
const RESERVED_FILES: u64 = 512;

/// The connection settings of `config.yml`.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// The longest a write may wait for the client to read (`stream_idle_timeout_ms`).
    pub write_idle: Duration,
    /// A request's head must arrive within this of its first byte (`header_read_timeout_ms`).
    pub header_read: Duration,
    /// A connection with no request in progress closes after this without a byte
    /// (`keep_alive_timeout_ms`).
    pub keep_alive: Duration,
    /// Connections open at once (`max_connections`, kept below the open-file limit).
    pub max_connections: usize,
    /// Connections open at once from one client address (`max_connections_per_address`).
    pub per_address: usize,
}

impl ConnLimits {
    pub fn from_config(config: &docmeta_core::Config) -> ConnLimits {
        ConnLimits {
            write_idle: config_duration(config.stream_idle_timeout_ms),
            header_read: config_duration(config.header_read_timeout_ms),
            keep_alive: config_duration(config.keep_alive_timeout_ms),
            max_connections: config.max_connections.max(1),
            per_address: config.max_connections_per_address.max(1),
        }
    }
}

/// Raises the process's soft open-file limit to its hard one (a server's idle connections are
/// open files: a soft limit of 1,024 let 1,100 idle sockets take one offline). Returns the soft
/// limit now in force (`None` when unknown or unlimited).
pub fn raise_open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        use rustix::process::{Resource, getrlimit, setrlimit};
        let limit = getrlimit(Resource::Nofile);
        if limit.current != limit.maximum {
            let raised = rustix::process::Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            };
            if let Err(e) = setrlimit(Resource::Nofile, raised) {
                tracing::warn!(error = %e, "could not raise the open-file limit");
            }
        }
        getrlimit(Resource::Nofile).current
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Connections open at once, in all and per client address.
#[derive(Debug)]
struct Admission {
    max: usize,
    per_address: usize,
    open: Mutex<(usize, HashMap<IpAddr, usize>)>,
}

/// One admitted connection; dropping it frees its place.
#[derive(Debug)]
struct Admitted {
    admission: Arc<Admission>,
    address: IpAddr,
}

/// The address a client's connections are counted under: an IPv6 client's /64 network (one
/// host usually holds all of it), an IPv4 address as it is (mapped IPv6 included).
fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut segments = v6.segments();
                segments[4..].fill(0);
                IpAddr::V6(segments.into())
            }
        },
    }
}

impl Admission {
    fn admit(self: &Arc<Admission>, ip: IpAddr) -> Option<Admitted> {
        let address = client_key(ip);
        let mut open = self.open.lock();
        let from_address = open.1.get(&address).copied().unwrap_or(0);
        if open.0 >= self.max || from_address >= self.per_address {
            return None;
        }
        open.0 += 1;
        open.1.insert(address, from_address + 1);
        Some(Admitted {
            admission: self.clone(),
            address,
        })
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.admission.open.lock();
        open.0 = open.0.saturating_sub(1);
        if let Some(n) = open.1.get_mut(&self.address) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.1.remove(&self.address);
            }
        }
    }
}

/// The answer to a connection beyond a cap, written if the socket takes it at once (never
/// waited for), before the connection is closed.
const TOO_MANY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
retry-after: 1\r\nconnection: close\r\ncontent-length: 43\r\n\r\n\
{\"detail\": \"Too many connections. Retry.\"}\n";

/// Serves `router` on `listener` until `shutdown` completes, then finishes the requests in
/// progress (see the module documentation for every bound).
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    mut limits: ConnLimits,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    if let Some(files) = raise_open_file_limit() {
        let most = usize::try_from(files.saturating_sub(RESERVED_FILES).max(1)).unwrap_or(1);
        if most < limits.max_connections {
            tracing::warn!(
                max_connections = limits.max_connections,
                open_file_limit = files,
                "serving at most {most} connections: the open-file limit allows no more"
            );
            limits.max_connections = most;
        }
    }
    let admission = Arc::new(Admission {
        max: limits.max_connections,
        per_address: limits.per_address,
        open: Mutex::new((0, HashMap::new())),
    });
    // Connection tasks hold a receiver of `stop` (told to shut down gracefully) and one of
    // `done` (dropped when they end: `serve` waits for all).
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (done_tx, done_rx) = tokio::sync::watch::channel(());
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.keep_alive + limits.header_read)
        .max_header_size(MAX_HEAD_BYTES);
    let builder = Arc::new(builder);
    tokio::pin!(shutdown);
    loop {
        let (stream, addr) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // A connection reset before it was accepted is nothing; anything else
                    // (out of files, say) is retried after a pause rather than in a busy loop.
                    if !matches!(
                        e.kind(),
                        io::ErrorKind::ConnectionAborted
                            | io::ErrorKind::ConnectionReset
                            | io::ErrorKind::Interrupted
                    ) {
                        tracing::warn!(error = %e, "accepting a connection failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(admitted) = admission.admit(addr.ip()) else {
            let _ = stream.try_write(TOO_MANY);
            drop(stream);
            continue;
        };
        // Small JSON answers go out at once rather than waiting for more to send.
        let _ = stream.set_nodelay(true);
        let shared = Arc::new(ConnShared::new());
        let io = GuardedIo {
            inner: stream,
            limits,
            shared: shared.clone(),
            stalled_since: None,
            timer: None,
            read_timer: None,
        };
        let conn = Conn { addr, shared };
        let router = router.clone();
        let builder = builder.clone();
        let mut stop = stop_rx.clone();
        let done = done_rx.clone();
        tokio::spawn(async move {
            let _admitted = admitted;
            let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                let request_guard = conn.shared.request_started();
                let router = router.clone();
                let conn = conn.clone();
                async move {
                    let mut request = request.map(axum::body::Body::new);
                    request.extensions_mut().insert(ConnectInfo(conn));
                    let response = router.oneshot(request).await?;
                    Ok::<_, Infallible>(response.map(|body| Answer {
                        body,
                        _request: request_guard,
                    }))
                }
            });
            let connection = builder.serve_connection(TokioIo::new(io), service);
            tokio::pin!(connection);
            let mut stopping = false;
            loop {
                tokio::select! {
                    result = connection.as_mut() => {
                        if let Err(e) = result {
                            tracing::debug!(error = %e, "connection ended");
                        }
                        break;
                    }
                    changed = stop.changed(), if !stopping => {
                        stopping = true;
                        if changed.is_ok() {
                            connection.as_mut().graceful_shutdown();
                        }
                    }
                }
            }
            drop(done);
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(done_rx);
    done_tx.closed().await;
    Ok(())
}

/// An answer's body, which tells its connection when it has been sent (dropped by hyper).
struct Answer {
    body: axum::body::Body,
    _request: RequestGuard,
}

impl hyper::body::Body for Answer {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// What a connection's requests tell its reads and writes.
#[derive(Debug)]
struct ConnShared {
    /// While a download streams: the instant it must be done by.
    deadline: Mutex<Option<Instant>>,
    reading: Mutex<Reading>,
}

/// Whether a connection is waiting for a request, and since when.
#[derive(Debug)]
struct Reading {
    /// Requests whose answer is not sent yet.
    requests: usize,
    waiting: Waiting,
}

#[derive(Debug, Clone, Copy)]
enum Waiting {
    /// No request in progress and no byte of the next one (new, or the last answer sent).
    Idle(Instant),
    /// The first bytes of a request's head came at this instant; its handler has not started.
    Head(Instant),
    /// A request is in progress.
    Busy,
}

impl ConnShared {
    fn new() -> ConnShared {
        ConnShared {
            deadline: Mutex::new(None),
            reading: Mutex::new(Reading {
                requests: 0,
                waiting: Waiting::Idle(Instant::now()),
            }),
        }
    }

    fn bytes_read(&self, now: Instant) {
        let mut reading = self.reading.lock();
        if let Waiting::Idle(_) = reading.waiting {
            reading.waiting = Waiting::Head(now);
        }
    }

    fn request_started(self: &Arc<Self>) -> RequestGuard {
        let mut reading = self.reading.lock();
        reading.requests += 1;
        reading.waiting = Waiting::Busy;
        RequestGuard(self.clone())
    }

    /// When a read waiting now must fail, and why.
    fn read_deadline(&self, limits: &ConnLimits) -> Option<(Instant, &'static str)> {
        match self.reading.lock().waiting {
            Waiting::Idle(since) => Some((
                since + limits.keep_alive,
                "the connection was idle longer than allowed",
            )),
            Waiting::Head(since) => Some((
                since + limits.header_read,
                "the request's headers took longer than allowed",
            )),
            Waiting::Busy => None,
        }
    }
}

/// A request in progress on its connection; dropped when its answer has been sent.
#[derive(Debug)]
struct RequestGuard(Arc<ConnShared>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let mut reading = self.0.reading.lock();
        reading.requests = reading.requests.saturating_sub(1);
        if reading.requests == 0 {
            reading.waiting = Waiting::Idle(Instant::now());
        }
    }
}

/// The connection of a request (as `ConnectInfo<Conn>`): the client's address, and a handle to
/// give the connection a deadline while a response streams.
#[derive(Debug, Clone)]
pub struct Conn {
    pub addr: SocketAddr,
    shared: Arc<ConnShared>,
}

impl Conn {
    /// Writes on this connection fail once `deadline` has passed, until the returned guard is
    /// dropped (when the streamed response ends).
    pub fn deadline(&self, deadline: Instant) -> DeadlineGuard {
        *self.shared.deadline.lock() = Some(deadline);
        DeadlineGuard(self.shared.clone())
    }
}

/// Clears a connection's deadline when dropped (see [`Conn::deadline`]).
#[derive(Debug)]
pub struct DeadlineGuard(Arc<ConnShared>);

impl Drop for DeadlineGuard {
    fn drop(&mut self) {
        *self.0.deadline.lock() = None;
    }
}

/// A TCP connection whose reads fail (`TimedOut`) past the idle and head limits, and whose
/// writes fail when the client has read nothing for `write_idle`, or when the deadline of a
/// streaming response has passed.
struct GuardedIo {
    inner: TcpStream,
    limits: ConnLimits,
    shared: Arc<ConnShared>,
    /// Since when a write has been waiting for the client.
    stalled_since: Option<Instant>,
    timer: Option<Pin<Box<Sleep>>>,
    read_timer: Option<Pin<Box<Sleep>>>,
}

fn timed_out(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, why.to_owned())
}

/// Waits for `at` on `timer` (made or moved there as needed).
fn poll_until(timer: &mut Option<Pin<Box<Sleep>>>, at: Instant, cx: &mut Context<'_>) -> Poll<()> {
    let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at.into())));
    if timer.deadline() != tokio::time::Instant::from_std(at) {
        timer.as_mut().reset(at.into());
    }
    timer.as_mut().poll(cx)
}

impl GuardedIo {
    /// Runs one write attempt under the limits.
    fn guarded<T>(
        &mut self,
        cx: &mut Context<'_>,
        write: impl FnOnce(Pin<&mut TcpStream>, &mut Context<'_>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        let now = Instant::now();
        let deadline = *self.shared.deadline.lock();
        if deadline.is_some_and(|d| now >= d) {
            return Poll::Ready(Err(timed_out("the response took longer than allowed")));
        }
        match write(Pin::new(&mut self.inner), cx) {
            Poll::Ready(result) => {
                self.stalled_since = None;
                self.timer = None;
                Poll::Ready(result)
            }
            Poll::Pending => {
                let since = *self.stalled_since.get_or_insert(now);
                let idle_end = since + self.limits.write_idle;
                let wake_at = deadline.map_or(idle_end, |d| d.min(idle_end));
                ready!(poll_until(&mut self.timer, wake_at, cx));
                self.timer = None;
                Poll::Ready(Err(timed_out("the client stopped reading")))
            }
        }
    }
}

impl AsyncRead for GuardedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    self.shared.bytes_read(Instant::now());
                }
                self.read_timer = None;
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => {
                let Some((at, why)) = self.shared.read_deadline(&self.limits) else {
                    self.read_timer = None;
                    return Poll::Pending;
                };
                // Checked at every wait too: a head trickling in a byte at a time never
                // leaves its reads pending long enough for the timer alone to end it.
                if Instant::now() < at {
                    ready!(poll_until(&mut self.read_timer, at, cx));
                }
                self.read_timer = None;
                Poll::Ready(Err(timed_out(why)))
            }
        }
    }
}

impl AsyncWrite for GuardedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.guarded(cx, |io, cx| io.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.guarded(cx, |io, cx| io.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.guarded(cx, |io, cx| io.poll_flush(cx))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.guarded(cx, |io, cx| io.poll_shutdown(cx))
    }
}

/// The request's [`Conn`], when it came through [`serve`] (not in in-process tests).
pub struct MaybeConn(pub Option<Conn>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for MaybeConn {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(MaybeConn(
            parts
                .extensions
                .get::<axum::extract::ConnectInfo<Conn>>()
                .map(|c| c.0.clone()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_are_counted_by_address_and_ipv6_network() {
        let admission = Arc::new(Admission {
            max: 3,
            per_address: 2,
            open: Mutex::new((0, HashMap::new())),
        });
        let ip = |s: &str| s.parse::<IpAddr>().expect("address");
        let a = admission.admit(ip("2001:db8::1"));
        let b = admission.admit(ip("2001:db8::ffff:2"));
        assert!(a.is_some() && b.is_some());
        assert!(admission.admit(ip("2001:db8::3")).is_none(), "one /64");
        let c = admission.admit(ip("::ffff:10.0.0.1"));
        assert!(c.is_some());
        assert!(admission.admit(ip("10.0.0.2")).is_none(), "three in all");
        drop(a);
        assert!(
            admission.admit(ip("10.0.0.1")).is_some(),
            "mapped IPv4 is IPv4"
        );
    }
}
