//! Wake-up notifications for projection runners, sent after an append commits.
//!
//! A transaction that notifies holds a database-wide lock from its pre-commit step until it
//! ends, its WAL flush included: every appending commit would wait for the previous one's
//! flush instead of sharing it (migration 0098). So the append functions do not notify; the
//! appending process sends the wake-up in a transaction of its own, which commits without
//! waiting for its flush and so holds that lock only briefly. Appends that commit while a
//! wake-up is being sent are named together in the next one. A wake-up is a hint: a runner
//! that misses one (this process died after the commit) catches up at its poll interval.
//!
//! The payload names the types, then `@tx_id.position` of the newest event announced
//! ([`WakeUp`]): a runner whose last pass already read that far skips the wake-up instead
//! of running a pass that finds nothing.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, OnceLock};

use sqlx::PgPool;
use tracing::debug;

use super::{ReadPosition, NOTIFY_CHANNEL};
use crate::envelope::RecordedEvent;

/// Longest payload a notification carries (Postgres allows 8000 bytes); past it the
/// wake-up names no type, which wakes every runner.
const MAX_PAYLOAD: usize = 7000;

/// Whether some projection runner wakes for an event type ([`crate::projector::Projection::wakes_on`]
/// over every projection there is).
pub type WakeFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// The event types appended since the last wake-up, and whether one is being sent.
#[derive(Default)]
pub(crate) struct Wakeups {
    state: Mutex<Pending>,
    /// Set where every runner is known: types no runner wakes for are not announced.
    announced_only: OnceLock<WakeFilter>,
}

impl std::fmt::Debug for Wakeups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wakeups")
            .field("state", &self.state)
            .field("filtered", &self.announced_only.get().is_some())
            .finish()
    }
}

#[derive(Debug, Default)]
struct Pending {
    types: BTreeSet<String>,
    newest: Option<ReadPosition>,
    sending: bool,
}

/// What one wake-up announces.
struct Announced {
    types: BTreeSet<String>,
    newest: Option<ReadPosition>,
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
    fn next(&mut self) -> Option<Announced> {
        let mut pending = self.wakeups.lock();
        if pending.types.is_empty() {
            pending.sending = false;
            self.done = true;
            return None;
        }
        Some(Announced {
            types: std::mem::take(&mut pending.types),
            newest: pending.newest.take(),
        })
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

    /// From now on announces only the types `wakes` names (the first filter set stays).
    pub(crate) fn announce_only(&self, wakes: WakeFilter) {
        let _ = self.announced_only.set(wakes);
    }

    /// Announces that `events` committed: sent at once in the background, or with the
    /// next wake-up when one is already under way. An append of types no runner wakes
    /// for sends nothing: every runner would skip its wake-up.
    pub(crate) fn committed<'a>(
        self: &Arc<Self>,
        pool: &PgPool,
        events: impl IntoIterator<Item = &'a RecordedEvent>,
    ) {
        let wakes = self.announced_only.get();
        let events = events
            .into_iter()
            .filter(|e| wakes.is_none_or(|wakes| wakes(&e.event_type)));
        {
            let mut pending = self.lock();
            for event in events {
                if !pending.types.contains(&event.event_type) {
                    pending.types.insert(event.event_type.clone());
                }
                pending.newest = pending.newest.max(Some(ReadPosition::of(event)));
            }
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
            while let Some(announced) = sending.next() {
                send(&pool, &announced).await;
            }
        });
    }
}

/// One notification for what was `announced`, in its own transaction (flushed lazily).
async fn send(pool: &PgPool, announced: &Announced) {
    let mut payload = announced
        .types
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(",");
    if payload.len() > MAX_PAYLOAD {
        payload.clear();
    }
    if let Some(newest) = announced.newest {
        payload.push_str(&format!("@{}.{}", newest.tx_id, newest.position));
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

/// A wake-up notification's payload, read: the event types it names (none: any type) and
/// the newest event it announces, when it says (`Type,Type@tx_id.position`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WakeUp<'a> {
    types: &'a str,
    /// The newest announced event, in the runners' `(tx_id, position)` order.
    pub newest: Option<ReadPosition>,
}

impl<'a> WakeUp<'a> {
    /// Reads a payload; one without a readable `@tx_id.position` tail is all types.
    pub fn parse(payload: &'a str) -> Self {
        let with_tail = payload.rsplit_once('@').and_then(|(types, at)| {
            let (tx_id, position) = at.split_once('.')?;
            let newest = ReadPosition {
                tx_id: tx_id.parse().ok()?,
                position: position.parse().ok()?,
            };
            Some(Self {
                types,
                newest: Some(newest),
            })
        });
        with_tail.unwrap_or(Self {
            types: payload,
            newest: None,
        })
    }

    /// The event types named.
    pub fn types(&self) -> impl Iterator<Item = &'a str> {
        self.types.split(',').filter(|t| !t.is_empty())
    }

    /// Whether it names no type (then it wakes every runner).
    pub fn names_no_type(&self) -> bool {
        self.types.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_reads_as_types_and_the_newest_event() {
        let w = WakeUp::parse("Alpha,Beta@12.345");
        assert_eq!(w.types().collect::<Vec<_>>(), ["Alpha", "Beta"]);
        assert_eq!(
            w.newest,
            Some(ReadPosition {
                tx_id: 12,
                position: 345
            })
        );
        assert!(!w.names_no_type());
    }

    #[test]
    fn a_payload_without_a_position_is_types_only() {
        let w = WakeUp::parse("Alpha");
        assert_eq!(w.types().collect::<Vec<_>>(), ["Alpha"]);
        assert_eq!(w.newest, None);
        let bad = WakeUp::parse("Alpha@x.1");
        assert_eq!(bad.types().collect::<Vec<_>>(), ["Alpha@x.1"]);
        assert_eq!(bad.newest, None);
    }

    #[test]
    fn an_empty_type_list_names_no_type() {
        for payload in ["", "@3.4"] {
            let w = WakeUp::parse(payload);
            assert!(w.names_no_type(), "{payload}");
            assert_eq!(w.types().count(), 0, "{payload}");
        }
        assert_eq!(WakeUp::parse("@3.4").newest.map(|n| n.position), Some(4));
    }
}
