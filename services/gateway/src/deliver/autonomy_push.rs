//! Autonomy messages to bound conversations (issue 13, item 6): a consumer of
//! `AutonomyMessageRendered` that pushes a `chat`/`notify` message of a conversation bound in
//! `autonomy.push` to each platform it binds (its LINE chat, Slack channel, Telegram chat),
//! once per platform, through the platform's own delivery
//! ([`Platform::deliver`] to its [`Platform::push_target`]), so the same retry keys, attempt
//! markers and retry policies apply as to replies.
//!
//! Each platform's outcome (`AutonomyMessagePushed` or `AutonomyPushFailed`) has one id
//! derived from the message event and the platform (step `autonomy.push.<platform>`): a
//! stored outcome means done, so a redelivered message or a restarted gateway never pushes
//! again, and a failure is recorded once and not retried for ever.

use std::sync::Arc;

use tracing::{info, warn};

use ghost_shared::autonomy::events::{
    AutonomyMessagePushed, AutonomyMessageRendered, AutonomyPushFailed,
};
use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::envelope::{session_stream, EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::Channel;
use ghost_shared::store::ExpectedVersion;

use super::{Deliverer, DeliveryOutcome};
use crate::channel::Platform;

/// The step a push outcome's id derives from: `autonomy.push.line` and
/// `autonomy.push.slack` as before (`steps::PUSHED_LINE`, `steps::PUSHED_SLACK`).
fn push_step(platform: Channel) -> String {
    format!("autonomy.push.{}", platform.as_str())
}

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

    /// Pushes to one platform, if the conversation is bound to it, unless its outcome is
    /// already stored; then stores it.
    async fn push_once(
        &self,
        cause: &RecordedEvent,
        message: &AutonomyMessageRendered,
        platform: &dyn Platform,
        text: &str,
    ) -> Result<(), HandlerError> {
        let d = &self.deliverer;
        let binding = d
            .ctx
            .config
            .ghost
            .autonomy
            .push_binding(&message.session_id);
        let Some(target) = binding.and_then(|b| platform.push_target(b)) else {
            return Ok(());
        };
        let step = push_step(platform.channel());
        if d.ctx.outcome_stored(cause, &[step.as_str()]).await? {
            return Ok(());
        }
        let out = d.outbound(cause, &message.session_id);
        let outcome = platform.deliver(&out, &target, text).await?;
        self.record(cause, message, platform.channel(), &step, outcome)
            .await
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
        for platform in self.deliverer.platforms.iter() {
            self.push_once(&event, &message, platform, text).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ghost_shared::autonomy::events::steps;

    #[test]
    fn the_push_steps_of_line_and_slack_keep_their_ids() {
        assert_eq!(push_step(Channel::Line), steps::PUSHED_LINE);
        assert_eq!(push_step(Channel::Slack), steps::PUSHED_SLACK);
        assert_eq!(push_step(Channel::Telegram), "autonomy.push.telegram");
    }
}
