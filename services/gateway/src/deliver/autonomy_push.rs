//! Autonomy messages to bound conversations (issue 13, item 6): a consumer of
//! `AutonomyMessageRendered` that pushes a `chat`/`notify` message of a conversation bound in
//! `autonomy.push` to its LINE chat and/or Slack channel, once per platform, through the
//! reply delivery's own LINE and Slack code (so the same retry keys, attempt markers and
//! retry policies apply).
//!
//! Each platform's outcome (`AutonomyMessagePushed` or `AutonomyPushFailed`) has one id
//! derived from the message event and the platform: a stored outcome means done, so a
//! redelivered message or a restarted gateway never pushes again, and a failure is recorded
//! once and not retried for ever.

use std::sync::Arc;

use chrono::Utc;
use tracing::{info, warn};

use ghost_shared::autonomy::events::{
    steps, AutonomyMessagePushed, AutonomyMessageRendered, AutonomyPushFailed,
};
use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::envelope::{session_stream, EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{Channel, ReplyTarget};
use ghost_shared::store::ExpectedVersion;

use super::{line, slack, Deliverer, DeliveryOutcome};

/// The event type this handler consumes.
pub const CONSUMES: &str = AutonomyMessageRendered::EVENT_TYPE;

/// Pushes autonomy messages with the reply deliverer's clients and settings.
pub struct AutonomyPusher {
    deliverer: Arc<Deliverer>,
}

impl AutonomyPusher {
    /// A pusher sharing `deliverer`'s HTTP client and tokens.
    pub fn new(deliverer: Arc<Deliverer>) -> Self {
        Self { deliverer }
    }

    /// Pushes to one platform unless its outcome is already stored, then stores it.
    async fn push_once(
        &self,
        cause: &RecordedEvent,
        message: &AutonomyMessageRendered,
        platform: Channel,
        text: &str,
    ) -> Result<(), HandlerError> {
        let d = &self.deliverer;
        let binding = d
            .ctx
            .config
            .ghost
            .autonomy
            .push_binding(&message.session_id);
        let (step, outcome) = match platform {
            Channel::Line => {
                let Some(target) = binding.and_then(|b| b.line.as_ref()) else {
                    return Ok(());
                };
                if d.ctx.outcome_stored(cause, &[steps::PUSHED_LINE]).await? {
                    return Ok(());
                }
                // No reply token: every batch is a push keyed by the message event.
                let push_only = ReplyTarget::Line {
                    reply_token: None,
                    received_at: Utc::now(),
                    push_to: target.to.clone(),
                    is_redelivery: false,
                };
                let outcome =
                    line::deliver(d, cause, &message.session_id, text, Some(&push_only)).await?;
                (steps::PUSHED_LINE, outcome)
            }
            Channel::Slack => {
                let Some(target) = binding.and_then(|b| b.slack.as_ref()) else {
                    return Ok(());
                };
                if d.ctx.outcome_stored(cause, &[steps::PUSHED_SLACK]).await? {
                    return Ok(());
                }
                let outcome = slack::deliver(
                    d,
                    cause,
                    &message.session_id,
                    &target.channel,
                    target.thread_ts.as_deref(),
                    text,
                )
                .await?;
                (steps::PUSHED_SLACK, outcome)
            }
            Channel::Http => return Ok(()),
        };
        self.record(cause, message, platform, step, outcome).await
    }

    async fn record(
        &self,
        cause: &RecordedEvent,
        message: &AutonomyMessageRendered,
        platform: Channel,
        step: &str,
        outcome: DeliveryOutcome,
    ) -> Result<(), HandlerError> {
        let service = self.deliverer.ctx.service;
        let (session_id, message_event_id) = (message.session_id.clone(), cause.event_id);
        let e = match outcome {
            DeliveryOutcome::Delivered(calls) => {
                info!(message = %cause.event_id, ?platform, ?calls, "autonomy message pushed");
                let pushed = AutonomyMessagePushed {
                    session_id,
                    platform,
                    message_event_id,
                    calls,
                };
                NewEvent::caused_by(cause, step, &pushed, service)
            }
            DeliveryOutcome::Failed { code, message: why } => {
                warn!(message = %cause.event_id, ?platform, code, %why, "autonomy message not pushed");
                let failed = AutonomyPushFailed {
                    session_id,
                    platform,
                    message_event_id,
                    code: code.into(),
                    message: why,
                };
                NewEvent::caused_by(cause, step, &failed, service)
            }
        }
        .map_err(HandlerError::permanent)?;
        self.deliverer
            .ctx
            .log
            .append(
                &session_stream(&message.session_id),
                ExpectedVersion::Any,
                &[e],
            )
            .await
            .map_err(HandlerError::transient)?;
        Ok(())
    }
}

#[async_trait::async_trait]
impl EventHandler for AutonomyPusher {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let message: AutonomyMessageRendered = event.decode().map_err(HandlerError::permanent)?;
        // silent/activity_only are never said, so never pushed either.
        if !message.delivery.mode.speaks() {
            return Ok(());
        }
        // Sent as stored and shown on the console, like a reply; the tokens stay `Secret`s
        // and every log line is masked by the log writer.
        let text = message.text.trim();
        if text.is_empty() {
            return Ok(());
        }
        for platform in [Channel::Line, Channel::Slack] {
            self.push_once(&event, &message, platform, text).await?;
        }
        Ok(())
    }
}
