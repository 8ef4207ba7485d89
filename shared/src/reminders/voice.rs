//! A reminder in the persona's voice (issue 46 item 3). When an occurrence is delivered the
//! gateway asks the persona for a short line on core NATS (`<prefix>.reminder.word`, a
//! queue group: one persona instance answers) and says it with the task after it, as it was
//! asked. The line is not stored on its own: `ReminderDelivered` holds what was said and
//! whether the persona worded it ([`Voice`]).
//!
//! A reminder never waits on a model for long: no answer within `reminders.voice.timeout_ms`,
//! an error, or an empty line, and it is said plainly.

use std::time::Duration;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::bus::Bus;

/// Subject name (after the prefix) of the persona's reminder lines.
pub const SUBJECT: &str = "reminder.word";

/// The queue group the persona's instances answer in (one of them answers a request).
pub const QUEUE_GROUP: &str = "persona-reminders";

/// Ask the persona for a reminder's line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WordingRequest {
    /// Whose reminder (their memory and name shape the line).
    pub person: String,
    /// The conversation it is said in.
    pub session_id: String,
    /// What they asked to be reminded of.
    pub task: String,
    /// When the occurrence was due.
    pub due_at: DateTime<Utc>,
    /// The person's time zone (the line may say the time in it).
    pub time_zone: String,
    /// Whether it comes late (Ghost was down when it came due).
    pub late: bool,
}

/// The persona's answer: a line, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WordingAnswer {
    /// The line, to be said before the task.
    Line(String),
    /// Why the persona wrote none (the model failed, or wrote nothing usable).
    Error(String),
}

/// Who worded what was said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Voice {
    /// Ghost's plain words (no line came, or the voice is off).
    #[default]
    Plain,
    /// The persona's line, then the task.
    Persona,
}

/// Why no line came.
#[derive(Debug, thiserror::Error)]
pub enum VoiceError {
    /// Nobody answered in time (the model is slow or busy, or no persona runs).
    #[error("the persona did not word it within {0:?}")]
    Timeout(Duration),
    /// The request failed on the bus (no persona subscribed, the connection lost).
    #[error("request failed: {0}")]
    Request(String),
    /// The persona answered that it wrote none.
    #[error("the persona wrote no line: {0}")]
    NoLine(String),
    /// The answer is not a wording answer.
    #[error("the persona answered: {0}")]
    BadAnswer(String),
}

/// Asks the persona for `request`'s line, waiting at most `timeout`.
pub async fn request(
    bus: &Bus,
    request: &WordingRequest,
    timeout: Duration,
) -> Result<String, VoiceError> {
    let payload =
        Bytes::from(serde_json::to_vec(request).map_err(|e| VoiceError::Request(e.to_string()))?);
    // The client's own request timeout (10 s by default) is replaced by ours: a model on a
    // loaded machine may take longer, and is waited for up to `timeout`.
    let asked = async_nats::Request::new()
        .payload(payload)
        .timeout(Some(timeout));
    let reply = bus
        .client()
        .send_request(bus.core_subject(SUBJECT), asked)
        .await
        .map_err(|e| match e.kind() {
            async_nats::RequestErrorKind::TimedOut => VoiceError::Timeout(timeout),
            _ => VoiceError::Request(e.to_string()),
        })?;
    match serde_json::from_slice::<WordingAnswer>(&reply.payload) {
        Ok(WordingAnswer::Line(line)) if !line.trim().is_empty() => Ok(line),
        Ok(WordingAnswer::Line(_)) => Err(VoiceError::NoLine("an empty line".into())),
        Ok(WordingAnswer::Error(e)) => Err(VoiceError::NoLine(e)),
        Err(_) => Err(VoiceError::BadAnswer(
            String::from_utf8_lossy(&reply.payload)
                .chars()
                .take(300)
                .collect(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_a_line_or_an_error_on_the_wire() {
        let line = serde_json::to_value(WordingAnswer::Line("time to go".into())).unwrap();
        assert_eq!(line, serde_json::json!({"line": "time to go"}));
        let error: WordingAnswer = serde_json::from_str(r#"{"error": "model down"}"#).unwrap();
        assert_eq!(error, WordingAnswer::Error("model down".into()));
        assert!(serde_json::from_str::<WordingAnswer>(r#"{"text": "x"}"#).is_err());
    }
}
