//! What a platform sends with, and how a send ended.
//!
//! The attempt marker lives here, not in each platform, because what it guards is the same
//! everywhere: a call the platform cannot deduplicate (a LINE reply token, Slack's
//! `chat.postMessage`, Telegram's `sendMessage`) is preceded by a `ReplyAttempted` whose id
//! derives from the reply; finding it already stored means an earlier attempt may have gone
//! through, and the call is not blindly made again.

use chrono::{DateTime, Utc};
use ghost_shared::bus::HandlerError;
use ghost_shared::envelope::{session_stream, NewEvent, RecordedEvent};
use ghost_shared::events::{Channel, ReplyAttempted};
use ghost_shared::service::ServiceContext;
use ghost_shared::store::ExpectedVersion;

/// The step the attempt marker's id derives from.
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

    /// The reply has nowhere to go on this platform.
    pub fn no_target() -> Self {
        Self::failed("no_target", "the user message carries no reply target")
    }
}

/// One send: the event it answers, its conversation, and the clients to send with.
#[derive(Clone, Copy)]
pub struct Outbound<'a> {
    /// Store, bus, configuration.
    pub ctx: &'a ServiceContext,
    /// The HTTP client replies go out on.
    pub http: &'a reqwest::Client,
    /// The reply (or autonomy message) being sent: every id of the send derives from it.
    pub cause: &'a RecordedEvent,
    /// Its conversation (where the marker is stored).
    pub session_id: &'a str,
}

impl Outbound<'_> {
    /// Records that a call the platform cannot deduplicate is about to be made; returns
    /// whether an earlier attempt had already recorded it (so that call may have gone
    /// through).
    pub async fn mark_attempt(&self, channel: Channel) -> Result<bool, HandlerError> {
        Ok(self.mark_attempt_at(channel).await?.is_some())
    }

    /// [`Self::mark_attempt`], with when the earlier attempt recorded its marker (`None`:
    /// this is the first attempt).
    ///
    /// The marker is committed, not published before the call: nothing consumes it, the
    /// outbox relay publishes it, and a call that waited for the bus's acknowledgement (up
    /// to its timeout while a stream elects a leader) would widen the moment in which a
    /// crash leaves a marker and no call.
    pub async fn mark_attempt_at(
        &self,
        channel: Channel,
    ) -> Result<Option<DateTime<Utc>>, HandlerError> {
        let marker = ReplyAttempted {
            session_id: self.session_id.to_owned(),
            channel,
            reply_event_id: self.cause.event_id,
        };
        let e = NewEvent::caused_by(self.cause, STEP_ATTEMPTED, &marker, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        let outcome = self
            .ctx
            .store()
            .append(&session_stream(self.session_id), ExpectedVersion::Any, &[e])
            .await
            .map_err(HandlerError::transient)?;
        ghost_shared::fault::point("gateway.after_attempt_marked");
        Ok(outcome
            .duplicate
            .then(|| outcome.events.first().map(|e| e.recorded_at))
            .flatten())
    }

    /// When an earlier attempt of this send recorded its marker, if one did (read only: for
    /// a send that makes no call needing one, but must not race one that did).
    pub async fn earlier_attempt_at(&self) -> Result<Option<DateTime<Utc>>, HandlerError> {
        let id = ghost_shared::ids::derive_event_id(self.cause.event_id, STEP_ATTEMPTED);
        let marker = self
            .ctx
            .store()
            .get(id)
            .await
            .map_err(HandlerError::transient)?;
        Ok(marker.map(|m| m.recorded_at))
    }
}
