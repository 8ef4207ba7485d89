//! Reply delivery: a consumer of `AssistantReplied`, `RenderFailed` and `TurnTimedOut` (the
//! three share one id per turn, so a turn has at most one of them) that sends LINE and
//! Slack replies, each at most once, and records `ReplyDelivered` or `ReplyFailed` (which
//! share one id per reply). Replies of one conversation go out in the order of the user's
//! messages ([`order`]).
//!
//! Idempotency, from cheapest to most careful:
//! - the outcome events' ids derive from the reply event, and an existing outcome means done;
//! - LINE pushes carry `X-Line-Retry-Key` derived from the reply event and batch, so a resend
//!   after a crash is dropped by LINE (409);
//! - calls the platform cannot deduplicate (a LINE reply token, Slack `chat.postMessage`) are
//!   preceded by a `ReplyAttempted` marker; finding the marker without an outcome means a
//!   previous attempt may have gone through, and such a call is not blindly repeated.

pub mod autonomy_push;
pub mod line;
pub mod order;
pub mod slack;

use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};

use ghost_shared::bus::{run_consumer, ConsumerSpec, EventHandler, HandlerError};
use ghost_shared::config::Secret;
use ghost_shared::envelope::{session_stream, EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{
    AssistantReplied, Channel, RenderFailed, ReplyAttempted, ReplyDelivered, ReplyFailed,
    ReplyTarget, TurnTimedOut, UserMessageReceived, DAILY_TOKEN_CAP,
};
use ghost_shared::service::{ServiceContext, ServiceHandle};
use ghost_shared::store::ExpectedVersion;

/// The step the delivery outcome's id derives from: `ReplyDelivered` and `ReplyFailed` of
/// one reply share it, so two handlers of the reply never store both.
const STEP_OUTCOME: &str = "delivery";
/// The steps the two outcomes' ids derived from before (still checked, so an old outcome
/// still means done).
const STEP_DELIVERED: &str = "ReplyDelivered";
const STEP_FAILED: &str = "ReplyFailed";
const STEP_ATTEMPTED: &str = "ReplyAttempted";

/// How one delivery ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryOutcome {
    /// Every part reached the platform; the API calls made, in order.
    Delivered(Vec<String>),
    /// Not delivered, or not known to be.
    Failed {
        /// Stable code.
        code: &'static str,
        /// Explanation.
        message: String,
    },
}

impl DeliveryOutcome {
    /// A failure.
    pub fn failed(code: &'static str, message: impl Into<String>) -> Self {
        Self::Failed {
            code,
            message: message.into(),
        }
    }
}

/// The reply to deliver, whichever event carried it.
struct Reply {
    session_id: String,
    channel: Channel,
    user_event_id: uuid::Uuid,
    text: String,
}

/// Delivers replies for the LINE and Slack channels.
pub struct Deliverer {
    ctx: ServiceContext,
    http: reqwest::Client,
    line_token: Option<Secret>,
    slack_token: Option<Secret>,
}

impl Deliverer {
    /// A deliverer using the configured endpoints and tokens.
    pub fn new(ctx: ServiceContext) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()?;
        Ok(Self {
            line_token: ctx.config.secrets.line_channel_access_token.clone(),
            slack_token: ctx.config.secrets.slack_bot_token.clone(),
            http,
            ctx,
        })
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
        let text = match f.channel {
            // A refusal written for the user (in their language) is theirs to read.
            Channel::Line | Channel::Slack if f.code == DAILY_TOKEN_CAP => f.message.clone(),
            Channel::Line => self.ctx.config.ghost.line.failure_reply.clone(),
            Channel::Slack => self.ctx.config.ghost.slack.failure_reply.clone(),
            Channel::Http => String::new(),
        };
        Ok(Some(Reply {
            session_id: f.session_id,
            channel: f.channel,
            user_event_id: f.user_event_id,
            text,
        }))
    }

    /// Records that a non-deduplicable call is about to be made; returns whether an earlier
    /// attempt had already recorded it (so that call may have gone through).
    pub(crate) async fn mark_attempt(
        &self,
        cause: &RecordedEvent,
        session_id: &str,
        channel: Channel,
    ) -> Result<bool, HandlerError> {
        let marker = ReplyAttempted {
            session_id: session_id.to_owned(),
            channel,
            reply_event_id: cause.event_id,
        };
        let e = NewEvent::caused_by(cause, STEP_ATTEMPTED, &marker, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        let outcome = self
            .ctx
            .log
            .append(&session_stream(session_id), ExpectedVersion::Any, &[e])
            .await
            .map_err(HandlerError::transient)?;
        Ok(outcome.duplicate)
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
        let outcome = match (&target, reply.channel) {
            (Some(ReplyTarget::Line { .. }), Channel::Line) => {
                line::deliver(
                    self,
                    &event,
                    &reply.session_id,
                    &reply.text,
                    target.as_ref(),
                )
                .await?
            }
            (Some(ReplyTarget::Slack { channel, thread_ts }), Channel::Slack) => {
                slack::deliver(
                    self,
                    &event,
                    &reply.session_id,
                    channel,
                    Some(thread_ts),
                    &reply.text,
                )
                .await?
            }
            _ => DeliveryOutcome::failed("no_target", "the user message carries no reply target"),
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

/// Starts the delivery consumers: replies, and autonomy messages to bound conversations.
pub fn spawn(ctx: ServiceContext, handle: &mut ServiceHandle) -> Result<(), reqwest::Error> {
    let deliverer = Arc::new(Deliverer::new(ctx.clone())?);
    for event_type in [
        AssistantReplied::EVENT_TYPE,
        RenderFailed::EVENT_TYPE,
        TurnTimedOut::EVENT_TYPE,
    ] {
        handle.spawn(run_consumer(
            ctx.bus().clone(),
            ConsumerSpec::new(ctx.service, event_type),
            deliverer.clone(),
        ));
    }
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ConsumerSpec::new(ctx.service, autonomy_push::CONSUMES),
        Arc::new(autonomy_push::AutonomyPusher::new(deliverer)),
    ));
    Ok(())
}
