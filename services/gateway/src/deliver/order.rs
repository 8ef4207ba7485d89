//! Replies of one conversation go out in the order of the user's messages.
//!
//! Two turns of a conversation can run at once (a LINE webhook may carry several messages,
//! and a platform message is not refused while a turn runs), so the second reply may be
//! written first. Before a reply is sent, [`wait_for_previous`] waits until the reply to
//! the conversation's previous platform message is settled: a `ReplyDelivered` or
//! `ReplyFailed` for it is stored (the deliverer records one for every reply it handles,
//! an empty one and one it gave up on included). Each reply waiting only for the one
//! before it orders them all.
//!
//! The state is the store's, so the order holds across redeliveries, restarts and several
//! gateway processes. The wait holds a consumer slot and is bounded: after `patience`
//! from the previous message's acceptance (its turn has long timed out, or its delivery is
//! stuck) the reply goes out anyway, and a warning says so.

use std::time::Duration;

use tracing::{debug, warn};
use uuid::Uuid;

use ghost_shared::envelope::{EventPayload, RecordedEvent};
use ghost_shared::events::{ReplyDelivered, ReplyFailed, UserMessageReceived};
use ghost_shared::store::{EventStore, StoreError};

/// How often a waiting reply looks at the store again.
const LOOK_AGAIN: Duration = Duration::from_millis(100);

/// The conversation's platform message before `user`, how long ago it was accepted, and
/// whether its reply is settled.
async fn previous(
    store: &EventStore,
    user: &RecordedEvent,
) -> Result<Option<(Uuid, Duration, bool)>, StoreError> {
    // The event type is written into the statement: the partial index on user messages
    // (migration 0071) is only chosen when the query's own filter matches its predicate.
    let sql = format!(
        "SELECT p.event_id, \
                EXTRACT(EPOCH FROM ghost_now() - p.recorded_at)::float8, \
                EXISTS (SELECT 1 FROM events d \
                        WHERE d.stream = p.stream AND d.version > p.version \
                          AND d.event_type = ANY($3) \
                          AND d.payload->>'user_event_id' = p.event_id::text) \
         FROM (SELECT event_id, stream, version, recorded_at FROM events \
               WHERE stream = $1 AND event_type = '{}' AND version < $2 \
                 AND payload ? 'reply_to' \
               ORDER BY version DESC LIMIT 1) p",
        UserMessageReceived::EVENT_TYPE
    );
    let row: Option<(Uuid, f64, bool)> = sqlx::query_as(&sql)
        .bind(&user.stream)
        .bind(user.version)
        .bind(&[ReplyDelivered::EVENT_TYPE, ReplyFailed::EVENT_TYPE][..])
        .fetch_optional(store.pool())
        .await?;
    Ok(row.map(|(id, age, settled)| (id, Duration::from_secs_f64(age.max(0.0)), settled)))
}

/// Waits until the reply to the message before `user` in its conversation is settled, or
/// until `patience` has passed since that message was accepted.
pub async fn wait_for_previous(
    store: &EventStore,
    user: &RecordedEvent,
    patience: Duration,
) -> Result<(), StoreError> {
    let mut logged = false;
    loop {
        let Some((id, age, settled)) = previous(store, user).await? else {
            return Ok(());
        };
        if settled {
            return Ok(());
        }
        if age >= patience {
            warn!(
                user_event = %user.event_id,
                previous = %id,
                "the previous message's reply is still open; sending this one out of order"
            );
            return Ok(());
        }
        if !logged {
            debug!(user_event = %user.event_id, previous = %id, "waiting for the previous reply");
            logged = true;
        }
        tokio::time::sleep(LOOK_AGAIN).await;
    }
}
