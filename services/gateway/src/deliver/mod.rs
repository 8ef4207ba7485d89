//! Reply delivery: a consumer of `AssistantReplied`, `RenderFailed` and `TurnTimedOut` (the
//! three share one id per turn, so a turn has at most one of them) that sends each platform
//! reply through its [`Platform`](crate::channel::Platform), at most once, and records
//! `ReplyDelivered` or `ReplyFailed` (which share one id per reply). Replies of one
//! conversation go out in the order of the user's messages ([`order`]);
//! [`autonomy_push`] sends autonomy messages to bound conversations the same way, and
//! [`reminder`] reminders where they were asked.
//!
//! Idempotency, from cheapest to most careful:
//! - the outcome events' ids derive from the reply event, and an existing outcome means done;
//! - a platform's own idempotency key where it has one (LINE pushes carry `X-Line-Retry-Key`
//!   derived from the reply event and batch, so a resend after a crash is dropped by LINE);
//! - calls the platform cannot deduplicate (a LINE reply token, Slack `chat.postMessage`,
//!   Telegram `sendMessage`) are preceded by a `ReplyAttempted` marker
//!   ([`Outbound::mark_attempt`]); finding the marker without an outcome means a previous
//!   attempt may have gone through, and such a call is not blindly repeated.

pub mod autonomy_push;
pub mod order;
pub mod reminder;

use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};

use ghost_shared::bus::{run_consumer, EventHandler, HandlerError};
use ghost_shared::envelope::{session_stream, EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{
    AssistantReplied, Channel, RenderFailed, ReplyDelivered, ReplyFailed, TurnTimedOut,
    UserMessageReceived, DAILY_TOKEN_CAP,
};
use ghost_shared::service::{ServiceContext, ServiceError, ServiceHandle};
use ghost_shared::store::ExpectedVersion;

pub use crate::channel::DeliveryOutcome;
use crate::channel::{Outbound, Platforms};

/// The step the delivery outcome's id derives from: `ReplyDelivered` and `ReplyFailed` of
/// one reply share it, so two handlers of the reply never store both.
const STEP_OUTCOME: &str = "delivery";
/// The steps the two outcomes' ids derived from before (still checked, so an old outcome
/// still means done).
const STEP_DELIVERED: &str = "ReplyDelivered";
const STEP_FAILED: &str = "ReplyFailed";

/// The reply to deliver, whichever event carried it.
struct Reply {
    session_id: String,
    channel: Channel,
    user_event_id: uuid::Uuid,
    text: String,
}

/// Delivers replies for every platform.
pub struct Deliverer {
    ctx: ServiceContext,
    http: reqwest::Client,
    platforms: Platforms,
}

impl Deliverer {
    /// A deliverer sending through every platform as `ctx` configures it.
    pub fn new(ctx: ServiceContext) -> Result<Self, reqwest::Error> {
        let platforms = Platforms::for_sending(&ctx.config);
        Self::with_platforms(ctx, platforms)
    }

    /// A deliverer sending through `platforms`.
    pub fn with_platforms(
        ctx: ServiceContext,
        platforms: Platforms,
    ) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()?;
        Ok(Self {
            http,
            ctx,
            platforms,
        })
    }

    /// One send of `cause` in conversation `session_id`.
    fn outbound<'a>(&'a self, cause: &'a RecordedEvent, session_id: &'a str) -> Outbound<'a> {
        Outbound {
            ctx: &self.ctx,
            http: &self.http,
            cause,
            session_id,
        }
    }

    /// How long a reply waits for the reply to the conversation's previous message: that
    /// turn's timeout, then as long again for its delivery (retries included).
    fn patience(&self) -> Duration {
        Duration::from_secs(
            self.ctx
                .config
                .ghost
                .gateway
                .turn_timeout_secs
                .saturating_mul(2),
        )
    }

    fn reply_of(&self, event: &RecordedEvent) -> Result<Option<Reply>, HandlerError> {
        if let Ok(r) = event.decode::<AssistantReplied>() {
            return Ok(Some(Reply {
                session_id: r.session_id,
                channel: r.channel,
                user_event_id: r.user_event_id,
                text: r.text,
            }));
        }
        if let Ok(t) = event.decode::<TurnTimedOut>() {
            return Ok(Some(Reply {
                session_id: t.session_id,
                channel: t.channel,
                user_event_id: t.user_event_id,
                text: t.notice,
            }));
        }
        let f: RenderFailed = event.decode().map_err(HandlerError::permanent)?;
        let text = match self.platforms.get(f.channel) {
            None => String::new(),
            // A refusal written for the user (in their language) is theirs to read.
            Some(_) if f.code == DAILY_TOKEN_CAP => f.message.clone(),
            Some(platform) => platform.failure_reply().to_owned(),
        };
        Ok(Some(Reply {
            session_id: f.session_id,
            channel: f.channel,
            user_event_id: f.user_event_id,
            text,
        }))
    }
}

#[async_trait::async_trait]
impl EventHandler for Deliverer {
    /// A reply given up on (every delivery failed) is recorded as failed: the
    /// conversation's next reply waits for this one's outcome, not for the bound.
    async fn on_dead_letter(&self, event: Option<&RecordedEvent>, reason: &str) {
        let Some(event) = event else { return };
        let Ok(Some(reply)) = self.reply_of(event) else {
            return;
        };
        if reply.channel == Channel::Http {
            return;
        }
        let message =
            ghost_shared::masking::mask_secrets(&reason.chars().take(200).collect::<String>())
                .into_owned();
        let outcome = DeliveryOutcome::failed("dead_lettered", message);
        if let Err(e) = self.record(event, &reply, outcome).await {
            warn!(reply = %event.event_id, error = %e, "cannot record the reply given up on");
        }
    }

    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let Some(reply) = self.reply_of(&event)? else {
            return Ok(());
        };
        if reply.channel == Channel::Http {
            return Ok(());
        }
        if self
            .ctx
            .outcome_stored(&event, &[STEP_OUTCOME, STEP_DELIVERED, STEP_FAILED])
            .await?
        {
            info!(reply = %event.event_id, "reply already delivered or given up; nothing to do");
            return Ok(());
        }
        let user = self
            .ctx
            .store()
            .get(reply.user_event_id)
            .await
            .map_err(HandlerError::transient)?;
        if let Some(user) = &user {
            // The previous message's reply first, whichever was written first.
            order::wait_for_previous(self.ctx.store(), user, self.patience())
                .await
                .map_err(HandlerError::transient)?;
        }
        if reply.text.trim().is_empty() {
            // Recorded, so that the conversation's next reply does not wait for it.
            let outcome =
                DeliveryOutcome::failed("empty_reply", "the reply is empty; nothing was sent");
            return self.record(&event, &reply, outcome).await;
        }
        let target = user
            .as_ref()
            .and_then(|u| u.decode::<UserMessageReceived>().ok())
            .and_then(|m| m.reply_to);
        let outcome = match (&target, self.platforms.get(reply.channel)) {
            (Some(target), Some(platform)) => {
                let out = self.outbound(&event, &reply.session_id);
                platform.deliver(&out, target, &reply.text).await?
            }
            _ => DeliveryOutcome::no_target(),
        };
        self.record(&event, &reply, outcome).await
    }
}

impl Deliverer {
    async fn record(
        &self,
        cause: &RecordedEvent,
        reply: &Reply,
        outcome: DeliveryOutcome,
    ) -> Result<(), HandlerError> {
        let service = self.ctx.service;
        let e = match outcome {
            DeliveryOutcome::Delivered(calls) => {
                info!(reply = %cause.event_id, ?calls, "reply delivered");
                NewEvent::caused_by(
                    cause,
                    STEP_OUTCOME,
                    &ReplyDelivered {
                        session_id: reply.session_id.clone(),
                        channel: reply.channel,
                        reply_event_id: cause.event_id,
                        user_event_id: reply.user_event_id,
                        calls,
                    },
                    service,
                )
            }
            DeliveryOutcome::Failed { code, message } => {
                warn!(reply = %cause.event_id, code, %message, "reply not delivered");
                NewEvent::caused_by(
                    cause,
                    STEP_OUTCOME,
                    &ReplyFailed {
                        session_id: reply.session_id.clone(),
                        channel: reply.channel,
                        reply_event_id: cause.event_id,
                        user_event_id: reply.user_event_id,
                        code: code.into(),
                        message,
                    },
                    service,
                )
            }
        }
        .map_err(HandlerError::permanent)?;
        ghost_shared::fault::point("gateway.before_delivery_outcome");
        self.ctx
            .log
            .append(
                &session_stream(&reply.session_id),
                ExpectedVersion::Any,
                &[e],
            )
            .await
            .map_err(HandlerError::transient)?;
        Ok(())
    }
}

/// Starts the delivery consumers: replies, autonomy messages to bound conversations, and
/// reminders.
pub fn spawn(
    ctx: ServiceContext,
    platforms: Platforms,
    handle: &mut ServiceHandle,
) -> Result<(), ServiceError> {
    let deliverer = Arc::new(
        Deliverer::with_platforms(ctx.clone(), platforms)
            .map_err(|e| ServiceError::Config(format!("HTTP client for replies: {e}")))?,
    );
    for event_type in [
        AssistantReplied::EVENT_TYPE,
        RenderFailed::EVENT_TYPE,
        TurnTimedOut::EVENT_TYPE,
    ] {
        handle.spawn(run_consumer(
            ctx.bus().clone(),
            ctx.consumer(event_type)?,
            deliverer.clone(),
        ));
    }
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ctx.consumer(autonomy_push::CONSUMES)?,
        Arc::new(autonomy_push::AutonomyPusher::new(deliverer.clone())),
    ));
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ctx.consumer(reminder::CONSUMES)?,
        Arc::new(reminder::ReminderDeliverer::new(deliverer)),
    ));
    Ok(())
}
