//! Graceful stop of a service process (`ghost run` on SIGTERM or Ctrl-C).
//!
//! One flag per process: once [`request`]ed, every consumer stops pulling, the messages in
//! flight get `bus.shutdown_grace_secs` to finish (then they are handed back to the server
//! with a NAK, for another instance), and the process waits for [`in_flight`] to reach zero
//! before it flushes its traces and exits 0. Tests that run services in-process never
//! request it; they abort tasks instead (a crash).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use tokio::sync::watch;

fn flag() -> &'static watch::Sender<bool> {
    static FLAG: OnceLock<watch::Sender<bool>> = OnceLock::new();
    FLAG.get_or_init(|| watch::channel(false).0)
}

static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// Asks every consumer of this process to stop (idempotent).
pub fn request() {
    flag().send_replace(true);
}

/// Whether a stop was requested.
pub fn is_requested() -> bool {
    *flag().borrow()
}

/// Resolves once a stop is requested (at once if it already was).
pub async fn requested() {
    let mut rx = flag().subscribe();
    // The sender lives in a static, so `wait_for` only ends when the flag is set.
    let _ = rx.wait_for(|stop| *stop).await;
}

/// Messages being handled in this process right now.
pub fn in_flight() -> usize {
    IN_FLIGHT.load(Ordering::SeqCst)
}

/// Counts one message as in flight until dropped.
#[derive(Debug)]
pub struct InFlight(());

impl InFlight {
    /// Starts counting one message.
    pub fn start() -> Self {
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        Self(())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}
