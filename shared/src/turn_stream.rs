//! What travels on a turn's core-NATS subject (`<prefix>.stream.<turn>`) from the
//! persona to whoever shows the reply as it is written.
//!
//! Core NATS may drop messages: `Done` repeats the whole reply, and the gateway also
//! checks the event store, so a lost delta never loses a reply.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// One message on a turn's stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TurnStreamMessage {
    /// A piece of the reply.
    Token {
        /// Rendering attempt (a redelivered render starts a new one).
        attempt: Uuid,
        /// Order within the attempt.
        seq: u64,
        /// The text.
        delta: String,
    },
    /// The reply is stored.
    Done {
        /// The `AssistantReplied` event.
        event_id: Uuid,
        /// The whole reply.
        reply_text: String,
    },
    /// The reply failed (a `RenderFailed` event is stored).
    Error {
        /// Stable code.
        code: String,
        /// Human-readable reason.
        message: String,
    },
}

impl TurnStreamMessage {
    /// The message announcing a stored turn outcome (`AssistantReplied`, `RenderFailed`,
    /// `TurnTimedOut`); `None` for any other event.
    pub fn of_outcome(event: &crate::envelope::RecordedEvent) -> Option<Self> {
        use crate::events::{AssistantReplied, RenderFailed, TurnTimedOut};
        if let Ok(r) = event.decode::<AssistantReplied>() {
            Some(Self::Done {
                event_id: event.event_id,
                reply_text: r.text,
            })
        } else if let Ok(f) = event.decode::<RenderFailed>() {
            Some(Self::Error {
                code: f.code,
                message: f.message,
            })
        } else if let Ok(t) = event.decode::<TurnTimedOut>() {
            Some(Self::Error {
                code: "turn_timed_out".into(),
                message: t.notice,
            })
        } else {
            None
        }
    }

    /// The user message a turn outcome answers (`None` for other events).
    pub fn outcome_user_event_id(event: &crate::envelope::RecordedEvent) -> Option<Uuid> {
        use crate::events::ends_turn;
        if !ends_turn(&event.event_type) {
            return None;
        }
        event
            .payload
            .get("user_event_id")
            .and_then(|v| v.as_str())
            .and_then(|s| s.parse().ok())
    }
}
