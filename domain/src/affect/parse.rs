//! Field-by-field validation of the affect JSON that follows the marker.

use std::fmt;

use serde_json::{Map, Value};

use super::label::AffectLabel;
use super::policy::ResponsePolicy;

/// How many `{` positions are tried when looking for the object; a sane trailer has it at the
/// first one, and the cap keeps pathological input from costing quadratic time.
const MAX_OBJECT_STARTS: usize = 16;

/// The affect trailer after validation: every field that passed is kept, every field that did
/// not is `None` (or empty) and listed in `rejected`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedAffect {
    /// `reflection_text`: the model's short note on what happened.
    pub reflection_text: Option<String>,
    /// `partner_affect_label`.
    pub partner_affect_label: Option<AffectLabel>,
    /// `partner_affect_intensity`, 0..1.
    pub partner_affect_intensity: Option<f64>,
    /// `salience` (importance of the event), 0..1.
    pub salience: Option<f64>,
    /// `confidence` of the estimate, 0..1.
    pub confidence: Option<f64>,
    /// `topic_tags` (trimmed, empty tags dropped); empty when absent or rejected.
    pub topic_tags: Vec<String>,
    /// `partner_response_policy`, kept only if all three knobs are valid.
    pub partner_response_policy: Option<ResponsePolicy>,
    /// Fields that were missing or invalid, in document order of checking.
    pub rejected: Vec<RejectedField>,
    /// Set when no JSON object could be read at all (then every field is `None`).
    pub error: Option<AffectParseError>,
}

impl ParsedAffect {
    /// Whether the fields the mood integral needs (label, intensity, salience) are all present.
    pub fn has_mood_inputs(&self) -> bool {
        self.partner_affect_label.is_some()
            && self.partner_affect_intensity.is_some()
            && self.salience.is_some()
    }
}

/// One rejected field and why.
#[derive(Debug, Clone, PartialEq)]
pub struct RejectedField {
    /// JSON field name; `partner_response_policy.<knob>` for a knob of the policy.
    pub field: &'static str,
    /// Why it was rejected.
    pub reason: RejectReason,
}

/// Why a field of the affect JSON was rejected.
#[derive(Debug, Clone, PartialEq)]
pub enum RejectReason {
    /// Absent or `null` although required.
    Missing,
    /// Present with the wrong JSON type.
    WrongType {
        /// What was expected, e.g. `"number"`.
        expected: &'static str,
    },
    /// A number outside 0..1.
    OutOfRange {
        /// The offending value.
        value: f64,
    },
    /// A label outside `joy|sadness|anger|fear|neutral`.
    UnknownLabel {
        /// The label as given.
        value: String,
    },
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RejectReason::Missing => f.write_str("missing"),
            RejectReason::WrongType { expected } => write!(f, "wrong type (expected {expected})"),
            RejectReason::OutOfRange { value } => write!(f, "{value} is outside 0..1"),
            RejectReason::UnknownLabel { value } => write!(f, "unknown label {value:?}"),
        }
    }
}

/// Why no affect could be read from the trailer at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AffectParseError {
    /// There is no `{` in the trailer.
    #[error("no JSON object in the affect trailer")]
    NoJsonObject,
    /// Something object-like was found but it does not parse.
    #[error("affect trailer JSON does not parse: {0}")]
    InvalidJson(String),
}

/// Parses and validates the text after the marker.
///
/// Tolerates code fences and any text around the object: the first complete JSON object wins.
/// Each field is validated on its own; invalid or missing ones are dropped, logged with
/// `tracing::warn!` and listed in [`ParsedAffect::rejected`]. `topic_tags` and
/// `partner_response_policy` are optional; unknown extra fields are ignored.
pub fn parse_affect(json: &str) -> ParsedAffect {
    let object = match first_object(json) {
        Ok(object) => object,
        Err(error) => {
            tracing::warn!(%error, "affect trailer ignored");
            return ParsedAffect {
                error: Some(error),
                ..ParsedAffect::default()
            };
        }
    };

    let mut out = ParsedAffect::default();
    let mut rejected = Vec::new();
    let mut reject = |field: &'static str, reason: RejectReason| {
        tracing::warn!(field, %reason, "affect trailer field rejected");
        rejected.push(RejectedField { field, reason });
    };

    out.reflection_text = match object.get("reflection_text") {
        None | Some(Value::Null) => {
            reject("reflection_text", RejectReason::Missing);
            None
        }
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            reject(
                "reflection_text",
                RejectReason::WrongType { expected: "string" },
            );
            None
        }
    };

    out.partner_affect_label = match object.get("partner_affect_label") {
        None | Some(Value::Null) => {
            reject("partner_affect_label", RejectReason::Missing);
            None
        }
        // Case and surrounding blanks are forgiven: the meaning is unambiguous.
        Some(Value::String(s)) => match s.trim().to_ascii_lowercase().parse::<AffectLabel>() {
            Ok(label) => Some(label),
            Err(_) => {
                reject(
                    "partner_affect_label",
                    RejectReason::UnknownLabel { value: s.clone() },
                );
                None
            }
        },
        Some(_) => {
            reject(
                "partner_affect_label",
                RejectReason::WrongType { expected: "string" },
            );
            None
        }
    };

    for (field, slot) in [
        (
            "partner_affect_intensity",
            &mut out.partner_affect_intensity,
        ),
        ("salience", &mut out.salience),
        ("confidence", &mut out.confidence),
    ] {
        match unit_number(object.get(field)) {
            Ok(v) => *slot = Some(v),
            Err(reason) => reject(field, reason),
        }
    }

    match object.get("topic_tags") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            let tags: Option<Vec<String>> = items
                .iter()
                .map(|v| v.as_str().map(|s| s.trim().to_owned()))
                .collect();
            match tags {
                Some(tags) => out.topic_tags = tags.into_iter().filter(|t| !t.is_empty()).collect(),
                None => reject(
                    "topic_tags",
                    RejectReason::WrongType {
                        expected: "array of strings",
                    },
                ),
            }
        }
        Some(_) => reject(
            "topic_tags",
            RejectReason::WrongType {
                expected: "array of strings",
            },
        ),
    }

    match object.get("partner_response_policy") {
        None | Some(Value::Null) => {}
        Some(Value::Object(policy)) => match response_policy(policy) {
            Ok(policy) => out.partner_response_policy = Some(policy),
            Err((field, reason)) => reject(field, reason),
        },
        Some(_) => reject(
            "partner_response_policy",
            RejectReason::WrongType { expected: "object" },
        ),
    }

    out.rejected = rejected;
    out
}

/// The first JSON object in `text`, skipping fences or prose before it and ignoring what follows.
fn first_object(text: &str) -> Result<Map<String, Value>, AffectParseError> {
    let mut first_error = None;
    for (start, _) in text.match_indices('{').take(MAX_OBJECT_STARTS) {
        let Some(rest) = text.get(start..) else {
            continue;
        };
        // A stream deserializer stops after the first value, so trailing text is ignored.
        match serde_json::Deserializer::from_str(rest)
            .into_iter::<Value>()
            .next()
        {
            Some(Ok(Value::Object(object))) => return Ok(object),
            Some(Err(e)) => {
                first_error.get_or_insert_with(|| e.to_string());
            }
            _ => {}
        }
    }
    Err(first_error.map_or(
        AffectParseError::NoJsonObject,
        AffectParseError::InvalidJson,
    ))
}

/// A required number within 0..1.
fn unit_number(value: Option<&Value>) -> Result<f64, RejectReason> {
    match value {
        None | Some(Value::Null) => Err(RejectReason::Missing),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(v) if (0.0..=1.0).contains(&v) => Ok(v),
            Some(v) => Err(RejectReason::OutOfRange { value: v }),
            None => Err(RejectReason::WrongType { expected: "number" }),
        },
        Some(_) => Err(RejectReason::WrongType { expected: "number" }),
    }
}

/// All three knobs or nothing: a half policy would be blended against defaults it never meant.
fn response_policy(
    policy: &Map<String, Value>,
) -> Result<ResponsePolicy, (&'static str, RejectReason)> {
    let cooperation = unit_number(policy.get("cooperation"))
        .map_err(|r| ("partner_response_policy.cooperation", r))?;
    let refusal_bias = unit_number(policy.get("refusal_bias"))
        .map_err(|r| ("partner_response_policy.refusal_bias", r))?;
    let refusal_allowed = match policy.get("refusal_allowed") {
        None | Some(Value::Null) => Err(RejectReason::Missing),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(RejectReason::WrongType { expected: "bool" }),
    }
    .map_err(|r| ("partner_response_policy.refusal_allowed", r))?;
    Ok(ResponsePolicy {
        cooperation,
        refusal_bias,
        refusal_allowed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = r#"{
        "reflection_text": "ちょっとムッとした",
        "partner_affect_label": "anger",
        "partner_affect_intensity": 0.7,
        "salience": 0.8,
        "confidence": 0.9,
        "topic_tags": ["仕事", " 締め切り ", ""],
        "partner_response_policy": {"cooperation": 0.3, "refusal_bias": 0.6, "refusal_allowed": true}
    }"#;

    fn reasons(p: &ParsedAffect) -> Vec<(&'static str, RejectReason)> {
        p.rejected
            .iter()
            .map(|r| (r.field, r.reason.clone()))
            .collect()
    }

    #[test]
    fn parses_a_complete_valid_trailer() {
        let p = parse_affect(FULL);
        assert_eq!(p.error, None);
        assert!(p.rejected.is_empty(), "{:?}", p.rejected);
        assert_eq!(p.reflection_text.as_deref(), Some("ちょっとムッとした"));
        assert_eq!(p.partner_affect_label, Some(AffectLabel::Anger));
        assert_eq!(p.partner_affect_intensity, Some(0.7));
        assert_eq!(p.salience, Some(0.8));
        assert_eq!(p.confidence, Some(0.9));
        assert_eq!(p.topic_tags, vec!["仕事".to_owned(), "締め切り".to_owned()]);
        assert_eq!(
            p.partner_response_policy,
            Some(ResponsePolicy {
                cooperation: 0.3,
                refusal_bias: 0.6,
                refusal_allowed: true
            })
        );
        assert!(p.has_mood_inputs());
    }

    #[test]
    fn tolerates_code_fences_leading_newline_and_trailing_text() {
        let fenced = format!("\n```json\n{FULL}\n```\nthanks! {{\"other\": 1}}");
        let p = parse_affect(&fenced);
        assert_eq!(p.error, None);
        assert_eq!(p.partner_affect_label, Some(AffectLabel::Anger));
        assert!(p.rejected.is_empty());
    }

    #[test]
    fn skips_a_broken_brace_before_the_object() {
        let p = parse_affect(&format!("note {{oops}} {FULL}"));
        assert_eq!(p.partner_affect_label, Some(AffectLabel::Anger));
    }

    #[test]
    fn out_of_range_fields_are_rejected_individually() {
        let p = parse_affect(
            r#"{"reflection_text":"x","partner_affect_label":"joy","partner_affect_intensity":1.2,
                "salience":-0.1,"confidence":0.5}"#,
        );
        assert_eq!(p.partner_affect_label, Some(AffectLabel::Joy));
        assert_eq!(p.confidence, Some(0.5));
        assert_eq!(p.partner_affect_intensity, None);
        assert_eq!(p.salience, None);
        assert_eq!(
            reasons(&p),
            vec![
                (
                    "partner_affect_intensity",
                    RejectReason::OutOfRange { value: 1.2 }
                ),
                ("salience", RejectReason::OutOfRange { value: -0.1 }),
            ]
        );
        assert!(!p.has_mood_inputs());
    }

    #[test]
    fn missing_and_wrong_typed_fields_are_rejected_individually() {
        let p = parse_affect(
            r#"{"partner_affect_label":"surprise","partner_affect_intensity":"0.5","salience":null,
                "topic_tags":"a,b"}"#,
        );
        assert_eq!(
            reasons(&p),
            vec![
                ("reflection_text", RejectReason::Missing),
                (
                    "partner_affect_label",
                    RejectReason::UnknownLabel {
                        value: "surprise".into()
                    }
                ),
                (
                    "partner_affect_intensity",
                    RejectReason::WrongType { expected: "number" }
                ),
                ("salience", RejectReason::Missing),
                ("confidence", RejectReason::Missing),
                (
                    "topic_tags",
                    RejectReason::WrongType {
                        expected: "array of strings"
                    }
                ),
            ]
        );
        assert_eq!(p.error, None);
    }

    #[test]
    fn label_case_and_blanks_are_forgiven() {
        let p = parse_affect(r#"{"partner_affect_label":" Sadness "}"#);
        assert_eq!(p.partner_affect_label, Some(AffectLabel::Sadness));
    }

    #[test]
    fn topic_tags_with_a_non_string_are_rejected_and_absent_tags_are_fine() {
        let p = parse_affect(r#"{"topic_tags":["a",1]}"#);
        assert!(p.topic_tags.is_empty());
        assert!(p.rejected.iter().any(|r| r.field == "topic_tags"));
        let p = parse_affect(r#"{}"#);
        assert!(!p.rejected.iter().any(|r| r.field == "topic_tags"));
    }

    #[test]
    fn invalid_policy_is_dropped_naming_the_knob() {
        let p = parse_affect(
            r#"{"partner_response_policy":{"cooperation":0.5,"refusal_bias":2,"refusal_allowed":true}}"#,
        );
        assert_eq!(p.partner_response_policy, None);
        assert!(p.rejected.contains(&RejectedField {
            field: "partner_response_policy.refusal_bias",
            reason: RejectReason::OutOfRange { value: 2.0 }
        }));
        let p = parse_affect(
            r#"{"partner_response_policy":{"cooperation":0.5,"refusal_bias":0.2,"refusal_allowed":"yes"}}"#,
        );
        assert!(p.rejected.contains(&RejectedField {
            field: "partner_response_policy.refusal_allowed",
            reason: RejectReason::WrongType { expected: "bool" }
        }));
        let p = parse_affect(r#"{"partner_response_policy":[1]}"#);
        assert!(p.rejected.contains(&RejectedField {
            field: "partner_response_policy",
            reason: RejectReason::WrongType { expected: "object" }
        }));
        let p = parse_affect(r#"{"partner_response_policy":null}"#);
        assert!(!p
            .rejected
            .iter()
            .any(|r| r.field.starts_with("partner_response_policy")));
    }

    #[test]
    fn unparsable_json_gives_no_affect_and_a_reason() {
        let p = parse_affect("no json here");
        assert_eq!(p.error, Some(AffectParseError::NoJsonObject));
        assert_eq!(p.partner_affect_label, None);
        assert!(p.rejected.is_empty());

        let p = parse_affect("{\"partner_affect_label\": \"joy\", ");
        assert!(matches!(p.error, Some(AffectParseError::InvalidJson(_))));
        assert_eq!(p.partner_affect_label, None);
    }

    #[test]
    fn pathological_braces_do_not_blow_up() {
        let text = "{\"a\":".repeat(5000);
        let p = parse_affect(&text);
        assert!(matches!(p.error, Some(AffectParseError::InvalidJson(_))));
    }
}
