//! The HTTP server loop: a cap on concurrent connections, a deadline for request headers
//! (answered 408 when part of a request came), an idle timeout for connections that move no
//! byte, and HTTP/1.1 with upgrades (the `/api/stage` WebSocket). Body reads have their own
//! deadline in the handlers ([`read_body_within`]).
//!
//! `axum::serve` has no such limits: a client that sends half a header or half a body, or
//! a thousand idle connections, would hold the server for as long as it liked.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tracing::{debug, warn};

use crate::error::ApiError;

/// The limits of [`serve`] (from `gateway.*` in `ghost.yaml`).
#[derive(Debug, Clone, Copy)]
pub struct ServerLimits {
    /// Connections served at once; more wait in the listen backlog.
    pub max_connections: usize,
    /// From the first byte of a request (or the end of the previous response) to its last
    /// header line.
    pub header_read_timeout: Duration,
    /// A connection moving no byte in either direction for this long is closed.
    pub idle_timeout: Duration,
}

/// What a request whose headers did not arrive in time gets before the connection closes:
/// written by hand, the HTTP layer having let go of the socket, in the JSON of every refusal.
fn request_timeout_response(header_read_timeout: Duration) -> Vec<u8> {
    let body = ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        "request_timeout",
        format!(
            "the request headers did not arrive within {} s",
            header_read_timeout.as_secs()
        ),
    )
    .body()
    .to_string();
    format!(
        "HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Serves `app` on `listener` within `limits` until the listener fails.
pub async fn serve(listener: TcpListener, app: Router, limits: ServerLimits) -> io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    loop {
        // A free slot first: beyond the cap, connections wait in the kernel's backlog.
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return Ok(());
        };
        let tcp = match listener.accept().await {
            Ok((tcp, _)) => tcp,
            Err(e) => {
                // Out of file descriptors and the like: wait a little, keep serving.
                warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let app = app.clone();
        tokio::spawn(async move {
            serve_connection(tcp, app, limits).await;
            drop(slot);
        });
    }
}

async fn serve_connection(mut tcp: TcpStream, app: Router, limits: ServerLimits) {
    ghost_shared::net::set_nodelay(&mut tcp);
    let tcp = Arc::new(tcp);
    let io = WatchedIo::new(tcp.clone(), limits.idle_timeout);
    let mid_request = io.mid_request.clone();
    let service = TowerToHyperService::new(app);
    let result = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades()
        .await;
    match result {
        Err(e) if e.is_timeout() && mid_request.load(Ordering::Relaxed) => {
            debug!("request headers did not arrive in time: 408");
            // The HTTP layer has let go of the socket: answer, then close.
            if let Ok(mut tcp) = Arc::try_unwrap(tcp) {
                let answer = request_timeout_response(limits.header_read_timeout);
                let _ = tcp.write_all(&answer).await;
                let _ = tcp.shutdown().await;
            }
        }
        Err(e) => debug!(error = %e, "connection ended"),
        Ok(()) => {}
    }
}

/// An API request's body within the gateway's `max_body_bytes` and `body_read_timeout_secs`.
pub async fn read_api_body(state: &crate::AppState, body: Body) -> Result<Bytes, ApiError> {
    let g = &state.ctx.config.ghost.gateway;
    read_body_within(
        body,
        g.max_body_bytes,
        Duration::from_secs(g.body_read_timeout_secs),
    )
    .await
}

/// Reads a whole request body: more than `limit` bytes is 413, a body that has not arrived
/// within `timeout` is 408.
pub async fn read_body_within(
    body: Body,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, ApiError> {
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("request body exceeds {limit} bytes"),
        )),
        Err(_) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            format!(
                "the request body did not arrive within {} s",
                timeout.as_secs()
            ),
        )),
    }
}

fn poll_write(tcp: &TcpStream, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
    loop {
        std::task::ready!(tcp.poll_write_ready(cx))?;
        match tcp.try_write(buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            other => return Poll::Ready(other),
        }
    }
}

/// The socket as the HTTP layer sees it: it notes whether part of a request has come since
/// the last response byte, and fails with `TimedOut` when no byte moved for `idle`.
struct WatchedIo {
    tcp: Arc<TcpStream>,
    mid_request: Arc<AtomicBool>,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
}

impl WatchedIo {
    fn new(tcp: Arc<TcpStream>, idle: Duration) -> Self {
        Self {
            tcp,
            mid_request: Arc::new(AtomicBool::new(false)),
            idle,
            deadline: Box::pin(tokio::time::sleep(idle)),
        }
    }

    fn moved(&mut self) {
        let next = Instant::now() + self.idle;
        self.deadline.as_mut().reset(next);
    }

    fn check_idle(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        if self.deadline.as_mut().poll(cx).is_ready() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no byte moved within the idle timeout",
            ));
        }
        Ok(())
    }
}

impl AsyncRead for WatchedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            match self.tcp.poll_read_ready(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {
                    self.check_idle(cx)?;
                    return Poll::Pending;
                }
            }
            let unfilled = buf.initialize_unfilled();
            match self.tcp.try_read(unfilled) {
                Ok(n) => {
                    buf.advance(n);
                    if n > 0 {
                        self.mid_request.store(true, Ordering::Relaxed);
                        self.moved();
                    }
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for WatchedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match poll_write(&self.tcp, cx, buf) {
            Poll::Ready(Ok(n)) => {
                if n > 0 {
                    self.mid_request.store(false, Ordering::Relaxed);
                    self.moved();
                }
                Poll::Ready(Ok(n))
            }
            Poll::Pending => {
                self.check_idle(cx)?;
                Poll::Pending
            }
            other => other,
        }
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The socket closes when the connection drops it.
        Poll::Ready(Ok(()))
    }
}
