//! Validation of the persona's proposal after a work result (seed 002: the conversation model
//! may propose to continue, stop, ask the user or reroute; the loop controller decides).
//!
//! Shape, JSON only (a code fence or a leading `<think>` block tolerated, as for the
//! classifier): `{"goal_reached": true}` or
//! `{"goal_reached": false, "proposal": "continue|stop|confirm|reroute", "reason": "…",
//! "route": "PLAN"}` — `route` only with `reroute`, where it is required.

use serde::Serialize;
use serde_json::Value;

use super::reply::json_payload;
use ghost_shared::masking::mask_secrets;
use ghost_shared::routing::Route;

/// Longest `reason` kept, in characters (it goes to logs and the next task).
const MAX_REASON_CHARS: usize = 200;

/// What the persona proposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "proposal", content = "route", rename_all = "snake_case")]
pub enum ProposedStep {
    /// Run the worker once more on the same route.
    Continue,
    /// Stop here and reply with what there is.
    Stop,
    /// Ask the user before going on.
    Confirm,
    /// Run the worker once on another route.
    Reroute(Route),
}

impl ProposedStep {
    /// The proposal's name as the model writes it.
    pub fn as_str(&self) -> &'static str {
        match self {
            ProposedStep::Continue => "continue",
            ProposedStep::Stop => "stop",
            ProposedStep::Confirm => "confirm",
            ProposedStep::Reroute(_) => "reroute",
        }
    }
}

/// A validated persona judgement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum PersonaVerdict {
    /// The result reaches the goal: reply now.
    GoalReached,
    /// Not reached: the proposed step and why (masked, cut).
    Propose {
        /// The step.
        step: ProposedStep,
        /// The persona's short reason.
        reason: String,
    },
}

impl PersonaVerdict {
    /// One line for the routing log: `goal_reached`, `continue: reason`, `reroute PLAN: …`.
    pub fn log_line(&self) -> String {
        match self {
            PersonaVerdict::GoalReached => "goal_reached".to_owned(),
            PersonaVerdict::Propose {
                step: ProposedStep::Reroute(route),
                reason,
            } => format!("reroute {route}: {reason}"),
            PersonaVerdict::Propose { step, reason } => format!("{}: {reason}", step.as_str()),
        }
    }
}

/// Why a proposal was ignored (logged; the reply then goes ahead as if the goal was reached).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProposalError {
    /// Not JSON (after tolerating a code fence).
    #[error("proposal is not JSON: {0}")]
    Unparsable(String),
    /// JSON but not an object.
    #[error("proposal is not a JSON object")]
    NotAnObject,
    /// `goal_reached` missing or not a boolean.
    #[error("proposal lacks a boolean goal_reached")]
    GoalNotBoolean,
    /// Goal not reached but no `proposal`, or not a string.
    #[error("proposal lacks the key \"proposal\"")]
    MissingProposal,
    /// `proposal` outside continue/stop/confirm/reroute.
    #[error("proposal {0:?} is outside continue, stop, confirm, reroute")]
    UnknownProposal(String),
    /// No non-empty `reason`.
    #[error("proposal lacks a reason")]
    MissingReason,
    /// `reroute` without a route inside the enumeration.
    #[error("reroute proposal without a known route")]
    BadRoute,
    /// A `route` given with a proposal other than `reroute`.
    #[error("route given with a proposal other than reroute")]
    UnexpectedRoute,
    /// The persona's model call failed.
    #[error("proposal call failed: {0}")]
    CallFailed(String),
}

impl ProposalError {
    /// A stable snake_case kind for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            ProposalError::Unparsable(_) => "unparsable",
            ProposalError::NotAnObject => "not_an_object",
            ProposalError::GoalNotBoolean => "goal_not_boolean",
            ProposalError::MissingProposal => "missing_proposal",
            ProposalError::UnknownProposal(_) => "unknown_proposal",
            ProposalError::MissingReason => "missing_reason",
            ProposalError::BadRoute => "bad_route",
            ProposalError::UnexpectedRoute => "unexpected_route",
            ProposalError::CallFailed(_) => "call_failed",
        }
    }
}

fn cut(text: &str, max: usize) -> String {
    let masked = mask_secrets(text.trim());
    let mut s: String = masked.chars().take(max).collect();
    if masked.chars().count() > max {
        s.push('…');
    }
    s
}

/// Validates the persona's proposal output. Unknown extra keys are ignored.
pub fn parse_proposal(raw: &str) -> Result<PersonaVerdict, ProposalError> {
    let value: Value = serde_json::from_str(json_payload(raw))
        .map_err(|e| ProposalError::Unparsable(e.to_string()))?;
    let Value::Object(map) = value else {
        return Err(ProposalError::NotAnObject);
    };
    match map.get("goal_reached") {
        Some(Value::Bool(true)) => return Ok(PersonaVerdict::GoalReached),
        Some(Value::Bool(false)) => {}
        _ => return Err(ProposalError::GoalNotBoolean),
    }
    let name = match map.get("proposal") {
        Some(Value::String(name)) => name.as_str(),
        _ => return Err(ProposalError::MissingProposal),
    };
    let reason = match map.get("reason") {
        Some(Value::String(r)) if !r.trim().is_empty() => cut(r, MAX_REASON_CHARS),
        _ => return Err(ProposalError::MissingReason),
    };
    let route = match map.get("route") {
        None | Some(Value::Null) => None,
        Some(Value::String(r)) => Some(r.parse::<Route>().map_err(|_| ProposalError::BadRoute)?),
        Some(_) => return Err(ProposalError::BadRoute),
    };
    let step = match (name, route) {
        ("reroute", Some(route)) => ProposedStep::Reroute(route),
        ("reroute", None) => return Err(ProposalError::BadRoute),
        ("continue" | "stop" | "confirm", Some(_)) => return Err(ProposalError::UnexpectedRoute),
        ("continue", None) => ProposedStep::Continue,
        ("stop", None) => ProposedStep::Stop,
        ("confirm", None) => ProposedStep::Confirm,
        (other, _) => return Err(ProposalError::UnknownProposal(cut(other, 40))),
    };
    Ok(PersonaVerdict::Propose { step, reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn propose(step: ProposedStep, reason: &str) -> PersonaVerdict {
        PersonaVerdict::Propose {
            step,
            reason: reason.into(),
        }
    }

    #[test]
    fn valid_proposals_parse() {
        assert_eq!(
            parse_proposal(r#"{"goal_reached":true}"#),
            Ok(PersonaVerdict::GoalReached)
        );
        assert_eq!(
            parse_proposal(r#"{"goal_reached":false,"proposal":"continue","reason":"半分だけ"}"#),
            Ok(propose(ProposedStep::Continue, "半分だけ"))
        );
        assert_eq!(
            parse_proposal(
                "```json\n{\"goal_reached\":false,\"proposal\":\"reroute\",\"route\":\"RESEARCH\",\"reason\":\"出典が要る\"}\n```"
            ),
            Ok(propose(ProposedStep::Reroute(Route::Research), "出典が要る"))
        );
        for (name, step) in [
            ("stop", ProposedStep::Stop),
            ("confirm", ProposedStep::Confirm),
        ] {
            let raw = format!(r#"{{"goal_reached":false,"proposal":"{name}","reason":"r"}}"#);
            assert_eq!(parse_proposal(&raw), Ok(propose(step, "r")));
        }
    }

    #[test]
    fn invalid_proposals_are_rejected_with_a_kind() {
        let kind = |raw: &str| parse_proposal(raw).unwrap_err().kind();
        assert_eq!(kind("continue please"), "unparsable");
        assert_eq!(kind("[]"), "not_an_object");
        assert_eq!(
            kind(r#"{"proposal":"continue","reason":"r"}"#),
            "goal_not_boolean"
        );
        assert_eq!(kind(r#"{"goal_reached":"no"}"#), "goal_not_boolean");
        assert_eq!(
            kind(r#"{"goal_reached":false,"reason":"r"}"#),
            "missing_proposal"
        );
        assert_eq!(
            kind(r#"{"goal_reached":false,"proposal":"dance","reason":"r"}"#),
            "unknown_proposal"
        );
        assert_eq!(
            kind(r#"{"goal_reached":false,"proposal":"continue"}"#),
            "missing_reason"
        );
        assert_eq!(
            kind(r#"{"goal_reached":false,"proposal":"continue","reason":"  "}"#),
            "missing_reason"
        );
        assert_eq!(
            kind(r#"{"goal_reached":false,"proposal":"reroute","reason":"r"}"#),
            "bad_route"
        );
        assert_eq!(
            kind(r#"{"goal_reached":false,"proposal":"reroute","route":"SING","reason":"r"}"#),
            "bad_route"
        );
        assert_eq!(
            kind(r#"{"goal_reached":false,"proposal":"stop","route":"PLAN","reason":"r"}"#),
            "unexpected_route"
        );
    }
}
