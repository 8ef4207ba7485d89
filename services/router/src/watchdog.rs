//! The turn watchdog: every accepted user message ends with exactly one user-visible outcome.
//!
//! A turn whose worker, coder or persona never answers (service down, model hung, a message
//! lost to `max_deliver`) would otherwise stay open for good. Every
//! `routing.watchdog_interval_ms` the watchdog looks for user messages older than
//! `routing.turn_timeout_secs` whose turn has no outcome (`AssistantReplied`,
//! `RenderFailed`, `TurnTimedOut`) and closes each with `TurnTimedOut`, carrying a short
//! notice in the language of the message; the gateway delivers it on the turn's channel and
//! an HTTP client still waiting gets it on the turn's stream.
//!
//! The `TurnTimedOut` id is the turn's outcome id ([`ghost_shared::ids::turn_outcome_id`]),
//! shared with the reply and the failures: several router processes may run the watchdog
//! at once (the store keeps one), and a reply that comes after the notice (the coder started
//! later) is refused by the store, so the user never gets a second message for the turn.
//!
//! Only messages from the last [`LOOKBACK`] beyond the limit are looked at: a turn left
//! open while no router ran for longer than that is not closed late.

use std::time::Duration;

use bytes::Bytes;
use tracing::{info, warn};

use ghost_shared::envelope::{EventPayload, NewEvent, RecordedEvent};
use ghost_shared::event_log::EventLogError;
use ghost_shared::events::{
    timed_out_notice, AssistantReplied, RenderFailed, TurnTimedOut, UserMessageReceived,
};
use ghost_shared::service::ServiceContext;
use ghost_shared::store::{ExpectedVersion, StoreError};
use ghost_shared::turn_stream::TurnStreamMessage;

/// How far back past the limit the watchdog looks for open turns.
pub const LOOKBACK: Duration = Duration::from_secs(24 * 3600);

/// Most turns closed in one pass (the next pass takes the rest).
const BATCH: i64 = 200;

/// Why a watchdog pass failed (the next pass tries again).
#[derive(Debug, thiserror::Error)]
pub enum WatchdogError {
    /// Reading or appending failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The notice does not encode.
    #[error("encode: {0}")]
    Encode(#[from] serde_json::Error),
}

impl From<EventLogError> for WatchdogError {
    fn from(e: EventLogError) -> Self {
        match e {
            EventLogError::Store(e) => Self::Store(e),
        }
    }
}

/// Runs the watchdog until its task is aborted.
pub async fn run(ctx: ServiceContext) -> Result<(), WatchdogError> {
    let interval = Duration::from_millis(ctx.config.ghost.routing.watchdog_interval_ms.max(1));
    loop {
        match close_overdue_turns(&ctx).await {
            Ok(n) if n > 0 => info!(closed = n, "turn watchdog closed overdue turns"),
            Ok(_) => {}
            Err(e) => warn!(error = %e, "turn watchdog pass failed; retrying"),
        }
        tokio::time::sleep(interval).await;
    }
}

/// One pass: closes every overdue open turn (up to [`BATCH`]); returns how many it closed.
pub async fn close_overdue_turns(ctx: &ServiceContext) -> Result<usize, WatchdogError> {
    let limit = ctx.config.ghost.routing.turn_timeout_secs;
    let sql = format!(
        "SELECT u.event_id FROM events u \
         WHERE u.event_type = '{user}' \
         AND u.recorded_at < ghost_now() - make_interval(secs => $1) \
         AND u.recorded_at >= ghost_now() - make_interval(secs => $2) \
         AND NOT EXISTS (SELECT 1 FROM events o WHERE o.stream = u.stream \
             AND o.version > u.version \
             AND o.event_type IN ('{replied}', '{failed}', '{timed_out}') \
             AND o.payload->>'user_event_id' = u.event_id::text) \
         ORDER BY u.position LIMIT $3",
        user = UserMessageReceived::EVENT_TYPE,
        replied = AssistantReplied::EVENT_TYPE,
        failed = RenderFailed::EVENT_TYPE,
        timed_out = TurnTimedOut::EVENT_TYPE,
    );
    let ids: Vec<uuid::Uuid> = sqlx::query_scalar(&sql)
        .bind(limit as f64)
        .bind((limit + LOOKBACK.as_secs()) as f64)
        .bind(BATCH)
        .fetch_all(ctx.store().pool())
        .await
        .map_err(StoreError::from)?;
    let mut closed = 0;
    for id in ids {
        let Some(event) = ctx.store().get(id).await? else {
            continue;
        };
        if close(ctx, &event, limit).await? {
            closed += 1;
        }
    }
    Ok(closed)
}

/// Closes the turn of `user`; false when something else closed it first.
async fn close(
    ctx: &ServiceContext,
    user: &RecordedEvent,
    limit: u64,
) -> Result<bool, WatchdogError> {
    let message = match user.decode::<UserMessageReceived>() {
        Ok(m) => m,
        Err(e) => {
            // Its handlers dead-lettered it already; nothing can be delivered without a channel.
            warn!(event_id = %user.event_id, error = %e, "overdue turn does not decode; left open");
            return Ok(false);
        }
    };
    let timed_out = TurnTimedOut {
        session_id: message.session_id.clone(),
        channel: message.channel,
        user_event_id: user.event_id,
        limit_secs: limit,
        notice: timed_out_notice(&message.text).to_owned(),
    };
    let event = NewEvent::closing_turn(user, user.event_id, &timed_out, ctx.service)?;
    let stored = ctx
        .log
        .append(&user.stream, ExpectedVersion::Any, &[event])
        .await?;
    let Some(outcome) = stored.events.first() else {
        return Ok(false);
    };
    // Whoever closed the turn, a client still waiting hears how it ended.
    if let Some(m) = TurnStreamMessage::of_outcome(outcome) {
        if let Ok(body) = serde_json::to_vec(&m) {
            let subject = ctx.bus().token_subject(&user.event_id);
            if let Err(e) = ctx.bus().publish_core(subject, Bytes::from(body)).await {
                warn!(error = %e, "cannot announce the closed turn on its stream");
            }
        }
    }
    if !stored.duplicate {
        info!(user_event_id = %user.event_id, channel = %message.channel.as_str(), "turn timed out");
    }
    Ok(!stored.duplicate)
}
