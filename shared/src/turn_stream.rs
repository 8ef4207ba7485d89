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
