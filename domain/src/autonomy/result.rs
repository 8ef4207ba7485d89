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

    /// The facts the persona's message is given (seed 001 A-1): the payload, plus, for a
    /// delegated job, what the job printed (`output`: its JSON when it printed JSON, else
    /// its text cut to [`OUTPUT_FACT_CHARS`]). Built for the message only: the stored
    /// payload and the activity stream never carry the agent's output.
    pub fn message_facts(&self) -> Value {
        let mut facts = self.result_payload.clone();
        if let Some(raw) = self.details.get("raw_output_text").and_then(Value::as_str) {
            facts.insert("output".into(), output_facts(raw));
        }
        Value::Object(facts)
    }
}

/// Characters of a delegated job's output the message gets as a fact.
pub const OUTPUT_FACT_CHARS: usize = 2_000;

/// A job's output as facts: its JSON when it printed a JSON object or array, else its
/// trimmed text cut to [`OUTPUT_FACT_CHARS`]; null when it printed nothing.
fn output_facts(raw: &str) -> Value {
    let raw = raw.trim();
    if raw.is_empty() {
        return Value::Null;
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => v,
        _ => {
            let mut cut: String = raw.chars().take(OUTPUT_FACT_CHARS).collect();
            if raw.chars().count() > OUTPUT_FACT_CHARS {
                cut.push('…');
            }
            Value::String(cut)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(raw: &str) -> ActionResult {
        let mut r = ActionResult::failed("agent_delegate", "x");
        r.details
            .insert("raw_output_text".into(), Value::String(raw.into()));
        r
    }

    #[test]
    fn a_job_s_output_reaches_the_message_as_facts() {
        assert_eq!(
            job("{\"notes\": 3}\n").message_facts(),
            json!({"output": {"notes": 3}})
        );
        assert_eq!(job("  done  ").message_facts(), json!({"output": "done"}));
        assert_eq!(job("").message_facts(), json!({"output": null}));
        let long = "x".repeat(OUTPUT_FACT_CHARS + 5);
        let cut = job(&long).message_facts();
        assert_eq!(
            cut["output"].as_str().unwrap().chars().count(),
            OUTPUT_FACT_CHARS + 1
        );
        let plain = ActionResult::failed("web_access", "y");
        assert_eq!(plain.message_facts(), json!({}));
    }
}
