//! The mood service's request/reply protocol on core NATS.
//!
//! - `<prefix>.mood.get`: [`MoodQuery`] → [`MoodAnswer`] (the state now, or an override);
//! - `<prefix>.mood.debug`: [`MoodDebugRequest`] → [`MoodAnswer`] (the debug API's
//!   view: the value used for the last reply, and override set/clear).

use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::affect::MoodState;
use crate::bus::Bus;

/// Subject name (after the prefix) of mood reads.
pub const GET_SUBJECT: &str = "mood.get";
/// Subject name (after the prefix) of the debug API.
pub const DEBUG_SUBJECT: &str = "mood.debug";

/// Ask for a persona's mood.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoodQuery {
    /// Character id.
    pub persona: String,
    /// Evaluate at this Unix time (seconds); now when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<f64>,
}

/// A persona's mood.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MoodAnswer {
    /// Character id.
    pub persona: String,
    /// The state.
    pub state: MoodState,
    /// True when it is the debug override rather than the computed value.
    pub overridden: bool,
}

/// A debug API operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum MoodDebugRequest {
    /// The value used for the last reply (or the default).
    Get {
        /// Character id.
        persona: String,
    },
    /// Replace it with an override until cleared (in the mood process's memory only).
    Put {
        /// Character id.
        persona: String,
        /// The override (already validated by the caller; validated again).
        state: MoodState,
    },
    /// Clear the override.
    Delete {
        /// Character id.
        persona: String,
    },
}

/// Longest persona id the mood service keeps state for, in characters.
pub const MAX_PERSONA_CHARS: usize = 64;

/// Checks a persona id: 1 to [`MAX_PERSONA_CHARS`] characters, none of them whitespace or
/// control characters (ids name characters and streams; anything else is a mistake).
pub fn check_persona_id(persona: &str) -> Result<(), String> {
    let n = persona.chars().count();
    if n == 0 || n > MAX_PERSONA_CHARS {
        return Err(format!(
            "persona must be 1 to {MAX_PERSONA_CHARS} characters (got {n})"
        ));
    }
    if persona.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("persona must not contain whitespace or control characters".into());
    }
    Ok(())
}

/// Why the mood service refused a request (the answer's `code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// A new override while `mood.max_overrides` personas already have one.
    TooManyOverrides,
    /// The persona id is empty, too long or has whitespace or control characters.
    InvalidPersona,
    /// The override is not a valid mood state.
    InvalidMood,
}

impl Refusal {
    /// The stable code (as in the answer and in the HTTP error).
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::TooManyOverrides => "too_many_overrides",
            Refusal::InvalidPersona => "invalid_persona",
            Refusal::InvalidMood => "invalid_mood",
        }
    }
}

/// The mood service's answer to a request it refuses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefusedAnswer {
    /// Why, for a person.
    pub error: String,
    /// Why, as a code.
    pub code: Refusal,
}

/// Failure of a mood request.
#[derive(Debug, thiserror::Error)]
pub enum MoodApiError {
    /// The service refused the request (a limit or an invalid argument).
    #[error("{message}")]
    Refused {
        /// Why, as a code.
        code: Refusal,
        /// Why, for a person.
        message: String,
    },
    /// Nobody answered in time (no mood service running?).
    #[error("the mood service did not answer within {0:?}")]
    Timeout(Duration),
    /// The request failed on the bus.
    #[error("mood request failed: {0}")]
    Request(String),
    /// The answer is not a mood answer (or the service reported an error).
    #[error("mood service answered: {0}")]
    BadAnswer(String),
}

/// Sends `body` to `<prefix>.<subject>` and decodes the answer.
pub async fn request<T: Serialize>(
    bus: &Bus,
    subject: &str,
    body: &T,
    timeout: Duration,
) -> Result<MoodAnswer, MoodApiError> {
    let payload =
        Bytes::from(serde_json::to_vec(body).map_err(|e| MoodApiError::Request(e.to_string()))?);
    let reply = tokio::time::timeout(
        timeout,
        bus.client().request(bus.core_subject(subject), payload),
    )
    .await
    .map_err(|_| MoodApiError::Timeout(timeout))?
    .map_err(|e| MoodApiError::Request(e.to_string()))?;
    if let Ok(refused) = serde_json::from_slice::<RefusedAnswer>(&reply.payload) {
        return Err(MoodApiError::Refused {
            code: refused.code,
            message: refused.error,
        });
    }
    serde_json::from_slice(&reply.payload).map_err(|_| {
        MoodApiError::BadAnswer(
            String::from_utf8_lossy(&reply.payload)
                .chars()
                .take(300)
                .collect(),
        )
    })
}

/// `persona`'s mood now, or none when the mood service did not answer (a warning says what
/// went without it): a message written from the mood is still written.
pub async fn now_or_none(
    bus: &Bus,
    persona: &str,
    timeout: Duration,
    for_what: &str,
) -> Option<MoodState> {
    let query = MoodQuery {
        persona: persona.to_owned(),
        now: None,
    };
    match request(bus, GET_SUBJECT, &query, timeout).await {
        Ok(answer) => Some(answer.state),
        Err(e) => {
            tracing::warn!(error = %e, for_what, "no mood");
            None
        }
    }
}
