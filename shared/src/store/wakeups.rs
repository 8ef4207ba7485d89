//! Wake-up notifications for projection runners, sent after an append commits.
//!
//! A transaction that notifies holds a database-wide lock from its pre-commit step until it
//! ends, its WAL flush included: every appending commit would wait for the previous one's
//! flush instead of sharing it (migration 0098). So the append functions do not notify; the
//! appending process sends the wake-up in a transaction of its own, which commits without
//! waiting for its flush and so holds that lock only briefly. Appends that commit while a
//! wake-up is being sent are named together in the next one. A wake-up is a hint: a runner
//! that misses one (this process died after the commit) catches up at its poll interval.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use sqlx::PgPool;
use tracing::debug;

use super::NOTIFY_CHANNEL;

/// Longest payload a notification carries (Postgres allows 8000 bytes); past it the
/// wake-up names no type, which wakes every runner.
const MAX_PAYLOAD: usize = 7000;

/// The event types appended since the last wake-up, and whether one is being sent.
#[derive(Debug, Default)]
pub(crate) struct Wakeups {
    state: Mutex<Pending>,
}

#[derive(Debug, Default)]
struct Pending {
    types: BTreeSet<String>,
    sending: bool,
}

/// The one sender's hold on `sending`: released when it finds nothing left to send, or
/// when it is dropped before that (its task cancelled).
struct Sending {
    wakeups: Arc<Wakeups>,
    done: bool,
}

impl Sending {
    /// The types to name next; `None` (and `sending` cleared) when none are left. Under
    /// the same lock as the appenders' check, so none is left out.
    fn next(&mut self) -> Option<BTreeSet<String>> {
        let mut pending = self.wakeups.lock();
        if pending.types.is_empty() {
            pending.sending = false;
            self.done = true;
            return None;
        }
        Some(std::mem::take(&mut pending.types))
    }
}

impl Drop for Sending {
    fn drop(&mut self) {
        if !self.done {
            self.wakeups.lock().sending = false;
        }
    }
}

impl Wakeups {
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Announces that events of `types` committed: sent at once in the background, or
    /// with the next wake-up when one is already under way.
    pub(crate) fn committed<'a>(
        self: &Arc<Self>,
        pool: &PgPool,
        types: impl IntoIterator<Item = &'a str>,
    ) {
        {
            let mut pending = self.lock();
            pending.types.extend(types.into_iter().map(str::to_owned));
            if pending.sending || pending.types.is_empty() {
                return;
            }
            pending.sending = true;
        }
        let mut sending = Sending {
            wakeups: self.clone(),
            done: false,
        };
        let pool = pool.clone();
        tokio::spawn(async move {
            while let Some(types) = sending.next() {
                send(&pool, &types).await;
            }
        });
    }
}

/// One notification naming `types`, in its own transaction (flushed lazily).
async fn send(pool: &PgPool, types: &BTreeSet<String>) {
    let mut payload = types
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(",");
    if payload.len() > MAX_PAYLOAD {
        payload.clear();
    }
    let sent = sqlx::query(
        "SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, $2)::text",
    )
    .bind(NOTIFY_CHANNEL)
    .bind(&payload)
    .execute(pool)
    .await;
    if let Err(e) = sent {
        // The runners poll as well: a lost wake-up only delays them.
        debug!(error = %e, "wake-up not sent");
    }
}
