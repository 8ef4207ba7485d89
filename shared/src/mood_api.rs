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

/// Failure of a mood request.
#[derive(Debug, thiserror::Error)]
pub enum MoodApiError {
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
    serde_json::from_slice(&reply.payload).map_err(|_| {
        MoodApiError::BadAnswer(
            String::from_utf8_lossy(&reply.payload)
                .chars()
                .take(300)
                .collect(),
        )
    })
}
