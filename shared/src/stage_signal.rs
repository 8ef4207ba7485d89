//! What the persona announces on a stage's core-NATS subject (`<prefix>.stage.<stage_id>`).
//!
//! Core NATS may drop messages, so only what may be lost travels here: the `thinking`
//! status, and a wake-up saying the stage's stream grew. Watchers (the gateway's WebSocket)
//! read the spoken lines themselves from the event store, so none is ever missed.

use serde::{Deserialize, Serialize};

use crate::bus::Bus;

/// One signal on a stage's subject.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StageSignal {
    /// A character is calling its model.
    Thinking {
        /// Internal id of the character.
        speaker: String,
    },
    /// The stage's stream grew to `version`: read it.
    Appended {
        /// The stream's version after the append.
        version: i32,
    },
}

/// The subject of one stage's signals.
pub fn stage_subject(bus: &Bus, stage_id: &str) -> String {
    bus.core_subject(&format!("stage.{stage_id}"))
}
