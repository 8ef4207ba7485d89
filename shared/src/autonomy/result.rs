//! `ActionResult`: what a capability hands back — facts, never persona speech.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// How the action went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultStatus {
    /// It did what it was asked.
    Success,
    /// It ran and failed (an error, a non-zero exit).
    Failed,
    /// It ran out of time (and was stopped).
    Timeout,
}

/// The facts an action produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionResult {
    /// How it went.
    pub result_status: ResultStatus,
    /// Which capability ran.
    pub capability_name: String,
    /// A short neutral summary for internal use (never shown to anyone as is).
    pub summary_text: String,
    /// The primary facts (search hits with their URLs, page text, exit status, ...).
    pub result_payload: Map<String, Value>,
    /// Raw material kept for reference (e.g. an agent's stdout in `raw_output_text`).
    pub details: Map<String, Value>,
}

impl ActionResult {
    /// A failure of `capability` with a neutral summary and no facts.
    pub fn failed(capability: &str, summary: impl Into<String>) -> Self {
        Self {
            result_status: ResultStatus::Failed,
            capability_name: capability.to_owned(),
            summary_text: summary.into(),
            result_payload: Map::new(),
            details: Map::new(),
        }
    }
}
