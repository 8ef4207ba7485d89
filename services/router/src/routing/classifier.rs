//! Validation of the classifier's structured output (also used for Kuro's delegation decision).

use serde::Serialize;
use serde_json::Value;

use super::reply::json_payload;
use ghost_shared::masking::mask_secrets;
use ghost_shared::routing::Route;

/// Most evidence fragments a classifier may cite (seed: at most 2).
pub const MAX_CLASSIFIER_EVIDENCE: usize = 2;
/// Longest `reason`/evidence string kept, in characters (they go to logs).
const MAX_TEXT_CHARS: usize = 200;

/// A validated structured route decision: `{"route", "confidence", "reason", "evidence"}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassifierVerdict {
    /// The proposed route (inside the enumeration).
    pub route: Route,
    /// Confidence in 0.0..=1.0.
    pub confidence: f64,
    /// Short reason (empty when the model gave none; masked and cut for logging).
    pub reason: String,
    /// Input fragments cited as evidence (at most 2, masked).
    pub evidence: Vec<String>,
    /// The message rejects how the previous message was handled (optional, default false).
    pub corrects_previous: bool,
}

/// Why a structured route decision was discarded (logged; the message then goes to CHAT).
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ClassifierError {
    /// The reply is not JSON (after tolerating a code fence).
    #[error("classifier output is not JSON: {detail}")]
    Unparsable {
        /// The JSON parser's message (position only, never the content).
        detail: String,
    },
    /// The reply is JSON but not an object.
    #[error("classifier output is not a JSON object")]
    NotAnObject,
    /// A required key (`route` or `confidence`) is missing or null.
    #[error("classifier output lacks the required key {key:?}")]
    MissingKey {
        /// The missing key.
        key: &'static str,
    },
    /// `route` is not a string.
    #[error("classifier route is not a string")]
    RouteNotString,
    /// `route` is outside the enumeration.
    #[error("classifier route {route:?} is outside the enumeration")]
    UnknownRoute {
        /// The route as returned (cut to 40 characters).
        route: String,
    },
    /// `confidence` is not a number.
    #[error("classifier confidence is not a number")]
    ConfidenceNotNumber,
    /// `confidence` is outside 0.0..=1.0.
    #[error("classifier confidence {confidence} is outside 0..=1")]
    ConfidenceOutOfRange {
        /// The confidence as returned.
        confidence: f64,
    },
    /// `corrects_previous` is present but not a boolean.
    #[error("classifier corrects_previous is not a boolean")]
    CorrectionNotBoolean,
    /// The call itself failed (timeout, transport, model error) — reported by the caller.
    #[error("classifier call failed: {detail}")]
    CallFailed {
        /// What went wrong, as the caller describes it.
        detail: String,
    },
}

impl ClassifierError {
    /// A stable snake_case kind for log fields and metrics labels.
    pub fn kind(&self) -> &'static str {
        match self {
            ClassifierError::Unparsable { .. } => "unparsable",
            ClassifierError::NotAnObject => "not_an_object",
            ClassifierError::MissingKey { .. } => "missing_key",
            ClassifierError::RouteNotString => "route_not_string",
            ClassifierError::UnknownRoute { .. } => "unknown_route",
            ClassifierError::ConfidenceNotNumber => "confidence_not_number",
            ClassifierError::ConfidenceOutOfRange { .. } => "confidence_out_of_range",
            ClassifierError::CorrectionNotBoolean => "correction_not_boolean",
            ClassifierError::CallFailed { .. } => "call_failed",
        }
    }
}

fn cut(text: &str, max: usize) -> String {
    let masked = mask_secrets(text.trim());
    if masked.chars().count() > max {
        let mut s: String = masked.chars().take(max).collect();
        s.push('…');
        s
    } else {
        masked.into_owned()
    }
}

/// Validates a classifier (or Kuro delegation) reply.
///
/// Required: `route` (one of the six names, exact case) and `confidence` (a number in
/// 0..=1). `reason` and `evidence` are optional: the seed lists only route/confidence as
/// grounds for discarding, so a missing reason is tolerated, non-string evidence items are
/// skipped and evidence beyond two items is dropped. Unknown extra keys are ignored.
pub fn parse_classifier_output(raw: &str) -> Result<ClassifierVerdict, ClassifierError> {
    let value: Value =
        serde_json::from_str(json_payload(raw)).map_err(|e| ClassifierError::Unparsable {
            detail: e.to_string(),
        })?;
    let Value::Object(map) = value else {
        return Err(ClassifierError::NotAnObject);
    };
    let route = match map.get("route") {
        None | Some(Value::Null) => return Err(ClassifierError::MissingKey { key: "route" }),
        Some(Value::String(name)) => {
            name.parse::<Route>()
                .map_err(|_| ClassifierError::UnknownRoute {
                    route: cut(name, 40),
                })?
        }
        Some(_) => return Err(ClassifierError::RouteNotString),
    };
    let confidence = match map.get("confidence") {
        None | Some(Value::Null) => return Err(ClassifierError::MissingKey { key: "confidence" }),
        Some(Value::Number(n)) => n.as_f64().ok_or(ClassifierError::ConfidenceNotNumber)?,
        Some(_) => return Err(ClassifierError::ConfidenceNotNumber),
    };
    if !(0.0..=1.0).contains(&confidence) {
        return Err(ClassifierError::ConfidenceOutOfRange { confidence });
    }
    let reason = map
        .get("reason")
        .and_then(Value::as_str)
        .map(|r| cut(r, MAX_TEXT_CHARS))
        .unwrap_or_default();
    let mut evidence: Vec<String> = map
        .get("evidence")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(|e| cut(e, MAX_TEXT_CHARS))
                .filter(|e| !e.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let corrects_previous = match map.get("corrects_previous") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(ClassifierError::CorrectionNotBoolean),
    };
    if evidence.len() > MAX_CLASSIFIER_EVIDENCE {
        tracing::debug!(
            given = evidence.len(),
            "classifier cited more evidence than allowed; extra dropped"
        );
        evidence.truncate(MAX_CLASSIFIER_EVIDENCE);
    }
    Ok(ClassifierVerdict {
        route,
        confidence,
        reason,
        evidence,
        corrects_previous,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_reply_parses() {
        let v = parse_classifier_output(
            r#"{"route":"PLAN","confidence":0.75,"reason":"段取り","evidence":["来週","引っ越し"]}"#,
        )
        .unwrap();
        assert_eq!(v.route, Route::Plan);
        assert_eq!(v.confidence, 0.75);
        assert_eq!(v.reason, "段取り");
        assert_eq!(v.evidence, vec!["来週", "引っ越し"]);
    }

    #[test]
    fn a_correction_of_the_previous_route_is_a_structured_field() {
        let v = parse_classifier_output(
            r#"{"route":"CHAT","confidence":0.9,"reason":"wants to talk","evidence":["相談したいだけ"],"corrects_previous":true}"#,
        )
        .unwrap();
        assert!(v.corrects_previous);
        let plain = parse_classifier_output(r#"{"route":"CHAT","confidence":0.9}"#).unwrap();
        assert!(!plain.corrects_previous);
        let bad = r#"{"route":"CHAT","confidence":0.9,"corrects_previous":"yes"}"#;
        assert_eq!(
            parse_classifier_output(bad).unwrap_err().kind(),
            "correction_not_boolean"
        );
    }

    #[test]
    fn a_code_fence_around_the_json_is_tolerated() {
        let v = parse_classifier_output("```json\n{\"route\":\"OPS\",\"confidence\":0.9}\n```")
            .unwrap();
        assert_eq!(v.route, Route::Ops);
        assert!(v.reason.is_empty() && v.evidence.is_empty());
    }

    #[test]
    fn unparsable_output_is_rejected() {
        let err = parse_classifier_output("route=PLAN").unwrap_err();
        assert_eq!(err.kind(), "unparsable");
        let err =
            parse_classifier_output("はい: {\"route\":\"PLAN\",\"confidence\":0.9}").unwrap_err();
        assert_eq!(err.kind(), "unparsable");
        assert_eq!(
            parse_classifier_output("").unwrap_err().kind(),
            "unparsable"
        );
    }

    #[test]
    fn non_objects_are_rejected() {
        assert_eq!(
            parse_classifier_output("[\"PLAN\", 0.9]"),
            Err(ClassifierError::NotAnObject)
        );
    }

    #[test]
    fn missing_keys_are_rejected() {
        assert_eq!(
            parse_classifier_output(r#"{"route":"PLAN"}"#),
            Err(ClassifierError::MissingKey { key: "confidence" })
        );
        assert_eq!(
            parse_classifier_output(r#"{"confidence":0.9}"#),
            Err(ClassifierError::MissingKey { key: "route" })
        );
        assert_eq!(
            parse_classifier_output(r#"{"route":null,"confidence":0.9}"#),
            Err(ClassifierError::MissingKey { key: "route" })
        );
    }

    #[test]
    fn unknown_routes_are_rejected() {
        assert_eq!(
            parse_classifier_output(r#"{"route":"DANCE","confidence":0.9}"#),
            Err(ClassifierError::UnknownRoute {
                route: "DANCE".into()
            })
        );
        assert_eq!(
            parse_classifier_output(r#"{"route":"plan","confidence":0.9}"#)
                .unwrap_err()
                .kind(),
            "unknown_route"
        );
        assert_eq!(
            parse_classifier_output(r#"{"route":3,"confidence":0.9}"#),
            Err(ClassifierError::RouteNotString)
        );
    }

    #[test]
    fn confidence_must_be_a_number_in_range() {
        assert_eq!(
            parse_classifier_output(r#"{"route":"PLAN","confidence":1.7}"#),
            Err(ClassifierError::ConfidenceOutOfRange { confidence: 1.7 })
        );
        assert_eq!(
            parse_classifier_output(r#"{"route":"PLAN","confidence":-0.1}"#)
                .unwrap_err()
                .kind(),
            "confidence_out_of_range"
        );
        assert_eq!(
            parse_classifier_output(r#"{"route":"PLAN","confidence":"0.9"}"#),
            Err(ClassifierError::ConfidenceNotNumber)
        );
        for edge in ["0", "1", "0.0", "1.0"] {
            let raw = format!(r#"{{"route":"PLAN","confidence":{edge}}}"#);
            assert!(parse_classifier_output(&raw).is_ok(), "{edge}");
        }
    }

    #[test]
    fn evidence_is_capped_at_two_and_masked() {
        let v = parse_classifier_output(
            r#"{"route":"RESEARCH","confidence":0.9,"evidence":["a","b","c",4,"me@example.com"]}"#,
        )
        .unwrap();
        assert_eq!(v.evidence, vec!["a", "b"]);
        let v = parse_classifier_output(
            r#"{"route":"RESEARCH","confidence":0.9,"reason":"mail me@example.com","evidence":["me@example.com"]}"#,
        )
        .unwrap();
        assert!(!v.reason.contains("me@example.com"));
        assert_eq!(v.evidence, vec!["[REDACTED:email]"]);
    }

    #[test]
    fn errors_serialise_with_their_kind() {
        let json = serde_json::to_value(ClassifierError::MissingKey { key: "confidence" }).unwrap();
        assert_eq!(json["kind"], "missing_key");
        assert_eq!(json["key"], "confidence");
    }
}
