//! A TCP proxy a test puts between a service and Postgres, to cut the service off: every
//! connection through it is dropped, and new ones are refused, until it is restored.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
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
    accept: JoinHandle<()>,
}

impl TcpProxy {
    /// A proxy listening on a free local port (nothing passes until [`TcpProxy::route`]).
    pub async fn start() -> TcpProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let links = Arc::new(Mutex::new(Links::default()));
        let accept = tokio::spawn(accept_loop(listener, links.clone()));
        TcpProxy {
            addr,
            links,
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

    /// Lets connections through again.
    pub fn restore(&self) {
        self.lock().cut = false;
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

async fn accept_loop(listener: TcpListener, links: Arc<Mutex<Links>>) {
    loop {
        let Ok((mut inbound, _)) = listener.accept().await else {
            continue;
        };
        // Checked and recorded under the lock, so a cut misses no connection.
        let mut guard = links.lock().unwrap_or_else(|e| e.into_inner());
        let Some(upstream) = guard.upstream.clone().filter(|_| !guard.cut) else {
            continue; // dropped: refused
        };
        guard.open.retain(|link| !link.is_finished());
        guard.open.push(tokio::spawn(async move {
            if let Ok(mut outbound) = TcpStream::connect(&upstream).await {
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            }
        }));
    }
}
