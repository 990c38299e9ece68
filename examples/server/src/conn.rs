//! Connections: a listener whose connections cut a client that stops reading.
//!
//! A response is written only as fast as the client reads it. A client that stops reading (a
//! stalled download) leaves the server's writes pending; without a limit the connection, its
//! buffers and whatever feeds the response would be held forever. Each connection's writes
//! therefore have an idle limit (no byte accepted by the client for `stream_idle_timeout_ms`)
//! and, while a download streams, that download's total limit: past either, the write fails,
//! hyper closes the connection and drops the response body (and with it the open file).
//!
//! Reads have no such limit here: hyper keeps reading while a handler runs (to notice a client
//! that went away), so an idle limit on reads would cut slow requests. A stalled upload is cut by
//! the upload handler instead (see `routes::files`).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Sleep;

/// The TCP listener of the server; its connections are [`GuardedIo`].
pub struct GuardedListener {
    pub inner: TcpListener,
    /// The longest a write may wait for the client to read.
    pub write_idle: Duration,
}

impl Listener for GuardedListener {
    type Io = GuardedIo;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (stream, addr) = Listener::accept(&mut self.inner).await;
        // Small JSON answers go out at once rather than waiting for more to send.
        let _ = stream.set_nodelay(true);
        let io = GuardedIo {
            inner: stream,
            write_idle: self.write_idle,
            shared: Arc::new(ConnShared::default()),
            stalled_since: None,
            timer: None,
        };
        (io, addr)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// What a request may tell its connection.
#[derive(Debug, Default)]
struct ConnShared {
    /// While a download streams: the instant it must be done by.
    deadline: Mutex<Option<Instant>>,
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

impl Connected<IncomingStream<'_, GuardedListener>> for Conn {
    fn connect_info(stream: IncomingStream<'_, GuardedListener>) -> Self {
        Conn {
            addr: *stream.remote_addr(),
            shared: stream.io().shared.clone(),
        }
    }
}

/// A TCP connection whose writes fail (`TimedOut`) when the client has read nothing for
/// `write_idle`, or when the deadline of a streaming response has passed.
pub struct GuardedIo {
    inner: TcpStream,
    write_idle: Duration,
    shared: Arc<ConnShared>,
    /// Since when a write has been waiting for the client.
    stalled_since: Option<Instant>,
    timer: Option<Pin<Box<Sleep>>>,
}

fn timed_out(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, why.to_owned())
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
                let idle_end = since + self.write_idle;
                let wake_at = deadline.map_or(idle_end, |d| d.min(idle_end));
                let timer = self
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(wake_at.into())));
                if timer.deadline() != tokio::time::Instant::from_std(wake_at) {
                    timer.as_mut().reset(wake_at.into());
                }
                ready!(timer.as_mut().poll(cx));
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
        Pin::new(&mut self.inner).poll_read(cx, buf)
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

/// The request's [`Conn`], when it came through [`GuardedListener`] (not in in-process tests).
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
