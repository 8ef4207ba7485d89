//! Socket settings every HTTP server of ours wants.

/// Sets `TCP_NODELAY` on an accepted connection (use with axum's `ListenerExt::tap_io`):
/// without it the last bytes of a streamed reply wait for the peer's delayed ACK (~40 ms).
pub fn set_nodelay(tcp: &mut tokio::net::TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "cannot set TCP_NODELAY");
    }
}
