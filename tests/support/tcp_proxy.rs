//! A TCP proxy a test puts between a service and Postgres or NATS, to cut the service off
//! (every connection through it is dropped, and new ones are refused) or to stall it
//! (connections stay open and no byte passes), until it is restored.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

#[derive(Default)]
struct Links {
    /// Where connections go (set by [`TcpProxy::route`]).
    upstream: Option<String>,
    /// Whether the proxy is cut (connections refused).
    cut: bool,
    /// The tasks copying each connection's bytes (aborting one drops both sockets).
    open: Vec<JoinHandle<()>>,
}

/// A proxy on a local port; dropping it closes everything.
pub struct TcpProxy {
    addr: SocketAddr,
    links: Arc<Mutex<Links>>,
    stalled: watch::Sender<bool>,
    accept: JoinHandle<()>,
}

impl TcpProxy {
    /// A proxy listening on a free local port (nothing passes until [`TcpProxy::route`]).
    pub async fn start() -> TcpProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let links = Arc::new(Mutex::new(Links::default()));
        let (stalled, watch) = watch::channel(false);
        let accept = tokio::spawn(accept_loop(listener, links.clone(), watch));
        TcpProxy {
            addr,
            links,
            stalled,
            accept,
        }
    }

    /// Points the proxy at the server of the Postgres URL `url` and returns the URL that
    /// reaches it through the proxy.
    pub fn route(&self, url: &str) -> String {
        let (scheme, rest) = url.split_once("://").expect("a URL with a scheme");
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let (user, host) = match authority.rsplit_once('@') {
            Some((user, host)) => (format!("{user}@"), host),
            None => (String::new(), authority),
        };
        assert!(
            !host.is_empty() && !host.starts_with('%'),
            "the proxy reaches Postgres over TCP, not a socket: {url}"
        );
        let upstream = if host.contains(':') {
            host.to_owned()
        } else {
            format!("{host}:5432")
        };
        self.lock().upstream = Some(upstream);
        format!("{scheme}://{user}{}{path}", self.addr)
    }

    /// Drops every connection and refuses new ones.
    pub fn cut(&self) {
        let mut links = self.lock();
        links.cut = true;
        for link in links.open.drain(..) {
            link.abort();
        }
    }

    /// Holds every byte sent either way (the connections stay open) until a restore; a cut
    /// meanwhile loses what was held, as a connection that dies with data in flight does.
    pub fn stall(&self) {
        self.stalled.send_replace(true);
    }

    /// Lets connections through again.
    pub fn restore(&self) {
        self.lock().cut = false;
        self.stalled.send_replace(false);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Links> {
        self.links.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

async fn accept_loop(
    listener: TcpListener,
    links: Arc<Mutex<Links>>,
    stalled: watch::Receiver<bool>,
) {
    loop {
        let Ok((inbound, _)) = listener.accept().await else {
            continue;
        };
        // Checked and recorded under the lock, so a cut misses no connection.
        let mut guard = links.lock().unwrap_or_else(|e| e.into_inner());
        let Some(upstream) = guard.upstream.clone().filter(|_| !guard.cut) else {
            continue; // dropped: refused
        };
        guard.open.retain(|link| !link.is_finished());
        let stalled = stalled.clone();
        guard.open.push(tokio::spawn(async move {
            let Ok(outbound) = TcpStream::connect(&upstream).await else {
                return;
            };
            let (in_read, in_write) = inbound.into_split();
            let (out_read, out_write) = outbound.into_split();
            // Either direction ending ends the link (both sockets close).
            tokio::select! {
                _ = pump(in_read, out_write, stalled.clone()) => {}
                _ = pump(out_read, in_write, stalled) => {}
            }
        }));
    }
}

/// Copies bytes one way, holding them while the proxy is stalled.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, mut stalled: watch::Receiver<bool>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if stalled.wait_for(|s| !*s).await.is_err() {
            return;
        }
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        // Read before the stall began: held too.
        if stalled.wait_for(|s| !*s).await.is_err() || to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
