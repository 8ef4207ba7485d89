//! `ghost write-plan apply`: one plan applied to a given memory, JSON in and out, no
//! database and no model.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::apply::{apply_plan, ApplyContext};
use super::interest::DEFAULT_TAU_SECS;
use super::model::{Memory, DEFAULT_PERSON};
use super::plan::WritePlan;
use super::validate::validate;

/// The probe's input.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeInput {
    /// The memory before the plan.
    #[serde(default)]
    pub memory: Memory,
    /// The utterance the plan is about.
    pub event_id: Uuid,
    /// The plan: a JSON object, or the model's text as a string (parsed strictly).
    pub plan: Value,
    /// The persona (default `probe`); only recorded in the changes.
    #[serde(default)]
    pub persona: Option<String>,
    /// The person who spoke (default: the default person): whose preferences and new states
    /// the plan writes.
    #[serde(default)]
    pub person: Option<String>,
}

/// The probe's output.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ProbeOutput {
    /// The plan applied.
    Applied {
        /// Always true.
        ok: bool,
        /// The memory after the plan.
        memory: Memory,
    },
    /// The plan was rejected whole.
    Rejected {
        /// Always false.
        ok: bool,
        /// Every reason.
        errors: Vec<String>,
    },
}

/// Runs the probe on `input` at `now` (Unix seconds).
pub fn run(input: ProbeInput, now: f64) -> ProbeOutput {
    let plan = match input.plan {
        Value::String(text) => WritePlan::parse(&text),
        other => WritePlan::from_value(other),
    };
    let checked = plan.and_then(|plan| validate(&plan, &input.memory, input.event_id));
    match checked {
        Ok(checked) => {
            let persona = input.persona.as_deref().unwrap_or("probe");
            let ctx = ApplyContext {
                persona,
                person: input.person.as_deref().unwrap_or(DEFAULT_PERSON),
                event_id: input.event_id,
                now,
                interest_tau_secs: DEFAULT_TAU_SECS,
            };
            let (memory, _) = apply_plan(&input.memory, &checked, ctx);
            ProbeOutput::Applied { ok: true, memory }
        }
        Err(errors) => ProbeOutput::Rejected { ok: false, errors },
    }
}
