//! The worker output contract (shared by the local worker and the cloud coder).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::reply::json_payload;
use ghost_shared::routing::Route;

/// Most `next_actions` / `questions_for_user` kept (seed: at most 3 each).
pub const MAX_LIST_ITEMS: usize = 3;

/// How risky the worker judges its result (`high` escalates to the user).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Nothing to worry about.
    Low,
    /// Worth care; counts as a consequential branch when confidence is low.
    Medium,
    /// Escalate: ask the user before going on.
    High,
}

/// A validated worker result: the material for the persona plus loop meta-information.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerResult {
    /// The work product (text; a JSON value from the worker is kept as compact JSON text).
    pub result: String,
    /// Whether the worker thinks another loop is needed (the loop controller decides).
    pub needs_next_loop: bool,
    /// Why another loop is needed (short; may be empty when none is).
    pub why: String,
    /// Candidate next steps (at most 3).
    pub next_actions: Vec<String>,
    /// Questions only the user can answer (at most 3).
    pub questions_for_user: Vec<String>,
    /// Confidence in the result, 0.0..=1.0.
    pub confidence: f64,
    /// Risk of the result.
    pub risk: Risk,
    /// Whether this route was the right one (optional; absent means "not reported").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<bool>,
    /// The route the worker suggests instead (optional, inside the enumeration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_route: Option<Route>,
}

/// Why a worker's output breaks the contract (the result is then a failure: no further
/// loop, the persona gets a short failure summary).
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ContractError {
    /// Not JSON (after tolerating a code fence).
    #[error("worker output is not JSON: {detail}")]
    Unparsable {
        /// The parser's message (position only).
        detail: String,
    },
    /// JSON, but not an object.
    #[error("worker output is not a JSON object")]
    NotAnObject,
    /// A required field is missing or null.
    #[error("worker output lacks the required field {field:?}")]
    MissingField {
        /// The field name.
        field: &'static str,
    },
    /// A field has the wrong type or value.
    #[error("worker output field {field:?} is invalid: {problem}")]
    InvalidField {
        /// The field name.
        field: &'static str,
        /// What is wrong.
        problem: &'static str,
    },
}

impl ContractError {
    /// A stable snake_case kind for log fields.
    pub fn kind(&self) -> &'static str {
        match self {
            ContractError::Unparsable { .. } => "unparsable",
            ContractError::NotAnObject => "not_an_object",
            ContractError::MissingField { .. } => "missing_field",
            ContractError::InvalidField { .. } => "invalid_field",
        }
    }
}

fn required<'m>(
    map: &'m Map<String, Value>,
    field: &'static str,
) -> Result<&'m Value, ContractError> {
    match map.get(field) {
        None | Some(Value::Null) => Err(ContractError::MissingField { field }),
        Some(v) => Ok(v),
    }
}

fn string_field(map: &Map<String, Value>, field: &'static str) -> Result<String, ContractError> {
    required(map, field)?
        .as_str()
        .map(str::to_owned)
        .ok_or(ContractError::InvalidField {
            field,
            problem: "expected a string",
        })
}

fn list_field(map: &Map<String, Value>, field: &'static str) -> Result<Vec<String>, ContractError> {
    let Value::Array(items) = required(map, field)? else {
        return Err(ContractError::InvalidField {
            field,
            problem: "expected an array of strings",
        });
    };
    let mut out = Vec::with_capacity(items.len().min(MAX_LIST_ITEMS));
    for item in items {
        let text = item.as_str().ok_or(ContractError::InvalidField {
            field,
            problem: "expected an array of strings",
        })?;
        if !text.trim().is_empty() {
            out.push(text.trim().to_owned());
        }
    }
    if out.len() > MAX_LIST_ITEMS {
        tracing::debug!(
            field,
            given = out.len(),
            "worker listed more than 3 items; extra dropped"
        );
        out.truncate(MAX_LIST_ITEMS);
    }
    Ok(out)
}

/// Parses and validates a worker's output.
///
/// Required: `result` (string, or any JSON value kept as JSON text), `needs_next_loop`
/// (bool), `why` (string), `next_actions` and `questions_for_user` (arrays of strings, cut to
/// 3), `confidence` (0..=1), `risk` (`low`/`medium`/`high`). Optional: `fit` (bool) and
/// `suggested_route` (a route name). An invalid `suggested_route` is dropped with a warning
/// instead of failing the whole result: it is an optional hint, and discarding finished work
/// over it would cost more than ignoring it. Unknown keys are ignored.
pub fn parse_worker_output(raw: &str) -> Result<WorkerResult, ContractError> {
    let value: Value =
        serde_json::from_str(json_payload(raw)).map_err(|e| ContractError::Unparsable {
            detail: e.to_string(),
        })?;
    let Value::Object(map) = value else {
        return Err(ContractError::NotAnObject);
    };
    let result = match required(&map, "result")? {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let needs_next_loop =
        required(&map, "needs_next_loop")?
            .as_bool()
            .ok_or(ContractError::InvalidField {
                field: "needs_next_loop",
                problem: "expected true or false",
            })?;
    let why = string_field(&map, "why")?;
    let next_actions = list_field(&map, "next_actions")?;
    let questions_for_user = list_field(&map, "questions_for_user")?;
    let confidence = required(&map, "confidence")?
        .as_f64()
        .ok_or(ContractError::InvalidField {
            field: "confidence",
            problem: "expected a number",
        })?;
    if !(0.0..=1.0).contains(&confidence) {
        return Err(ContractError::InvalidField {
            field: "confidence",
            problem: "outside 0..=1",
        });
    }
    let risk = match required(&map, "risk")?.as_str() {
        Some("low") => Risk::Low,
        Some("medium") => Risk::Medium,
        Some("high") => Risk::High,
        _ => {
            return Err(ContractError::InvalidField {
                field: "risk",
                problem: "expected low, medium or high",
            })
        }
    };
    let fit = match map.get("fit") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => {
            return Err(ContractError::InvalidField {
                field: "fit",
                problem: "expected true or false",
            })
        }
    };
    let suggested_route = match map.get("suggested_route") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => match name.parse::<Route>() {
            Ok(route) => Some(route),
            Err(err) => {
                tracing::warn!(%err, "worker suggested a route outside the enumeration; ignored");
                None
            }
        },
        Some(_) => {
            tracing::warn!("worker suggested_route is not a string; ignored");
            None
        }
    };
    Ok(WorkerResult {
        result,
        needs_next_loop,
        why,
        next_actions,
        questions_for_user,
        confidence,
        risk,
        fit,
        suggested_route,
    })
}

/// The sources a RESEARCH reply may cite: those of `given` (the URLs the search returned)
/// that the worker's output lists in `sources`, or all of `given` when it lists none of
/// them. A URL the worker made up is never passed on.
pub fn cited_sources(raw: &str, given: &[String]) -> Vec<String> {
    let cited: Vec<String> = serde_json::from_str::<Value>(json_payload(raw))
        .ok()
        .and_then(|v| v.get("sources").and_then(Value::as_array).cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(Value::as_str)
        .filter(|url| given.iter().any(|g| g == url))
        .map(str::to_owned)
        .collect();
    if cited.is_empty() {
        given.to_vec()
    } else {
        cited
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_given_sources_are_cited() {
        let given = vec!["http://a/1".to_owned(), "http://a/2".to_owned()];
        let raw = r#"{"result":"r","sources":["http://a/2","https://invented.example/"]}"#;
        assert_eq!(cited_sources(raw, &given), vec!["http://a/2".to_owned()]);
        let invented = r#"{"result":"r","sources":["https://invented.example/"]}"#;
        assert_eq!(cited_sources(invented, &given), given);
        assert!(cited_sources(raw, &[]).is_empty());
    }

    const FULL: &str = r#"{"result":"手順です","needs_next_loop":true,"why":"情報不足","next_actions":["a","b"],"questions_for_user":["OSは?"],"confidence":0.7,"risk":"medium","fit":false,"suggested_route":"OPS"}"#;

    #[test]
    fn a_full_result_parses() {
        let r = parse_worker_output(FULL).unwrap();
        assert_eq!(r.result, "手順です");
        assert!(r.needs_next_loop);
        assert_eq!(r.why, "情報不足");
        assert_eq!(r.next_actions, vec!["a", "b"]);
        assert_eq!(r.questions_for_user, vec!["OSは?"]);
        assert_eq!(r.confidence, 0.7);
        assert_eq!(r.risk, Risk::Medium);
        assert_eq!(r.fit, Some(false));
        assert_eq!(r.suggested_route, Some(Route::Ops));
    }

    #[test]
    fn fenced_output_and_json_results_are_accepted() {
        let raw = "```json\n{\"result\":{\"rows\":2},\"needs_next_loop\":false,\"why\":\"\",\"next_actions\":[],\"questions_for_user\":[],\"confidence\":1,\"risk\":\"low\"}\n```";
        let r = parse_worker_output(raw).unwrap();
        assert_eq!(r.result, "{\"rows\":2}");
        assert_eq!(r.fit, None);
        assert_eq!(r.suggested_route, None);
    }

    #[test]
    fn unparsable_output_is_an_error() {
        assert_eq!(
            parse_worker_output("了解です").unwrap_err().kind(),
            "unparsable"
        );
        assert_eq!(parse_worker_output("[1]"), Err(ContractError::NotAnObject));
    }

    #[test]
    fn every_required_field_is_required() {
        let full: Value = serde_json::from_str(FULL).unwrap();
        for field in [
            "result",
            "needs_next_loop",
            "why",
            "next_actions",
            "questions_for_user",
            "confidence",
            "risk",
        ] {
            let mut v = full.clone();
            if let Some(map) = v.as_object_mut() {
                map.remove(field);
            }
            assert_eq!(
                parse_worker_output(&v.to_string()),
                Err(ContractError::MissingField { field }),
                "{field}"
            );
        }
    }

    #[test]
    fn invalid_values_are_errors() {
        let full: Value = serde_json::from_str(FULL).unwrap();
        for (field, bad) in [
            ("confidence", Value::from(1.5)),
            ("confidence", Value::from("high")),
            ("risk", Value::from("extreme")),
            ("needs_next_loop", Value::from("yes")),
            ("next_actions", Value::from("a")),
            ("questions_for_user", serde_json::json!([1])),
            ("why", Value::from(3)),
            ("fit", Value::from("no")),
        ] {
            let mut v = full.clone();
            if let Some(map) = v.as_object_mut() {
                map.insert(field.to_owned(), bad);
            }
            assert_eq!(
                parse_worker_output(&v.to_string()).unwrap_err().kind(),
                "invalid_field",
                "{field}"
            );
        }
    }

    #[test]
    fn lists_are_cut_to_three() {
        let raw = r#"{"result":"r","needs_next_loop":false,"why":"","next_actions":["1","2","3","4"],"questions_for_user":["a","b","c","d","e"],"confidence":0.5,"risk":"low"}"#;
        let r = parse_worker_output(raw).unwrap();
        assert_eq!(r.next_actions.len(), 3);
        assert_eq!(r.questions_for_user, vec!["a", "b", "c"]);
    }

    #[test]
    fn an_invalid_suggested_route_is_dropped() {
        let raw = FULL.replace("\"OPS\"", "\"DANCE\"");
        let r = parse_worker_output(&raw).unwrap();
        assert_eq!(r.suggested_route, None);
        assert_eq!(r.fit, Some(false));
    }
}
