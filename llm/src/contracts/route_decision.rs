//! The classifier's and Kuro's delegation answer: `{"route", "confidence", "reason",
//! "evidence", "corrects_previous"}` (validated by the router's `parse_classifier_output`).

use schemars::JsonSchema;
use serde::Deserialize;

use crate::Contract;
use ghost_domain::routing::Route;

/// A structured route decision as the model writes it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct RouteDecisionShape {
    /// The route.
    pub route: Route,
    /// Confidence, 0..=1.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: f64,
    /// A short reason (a long one only costs the user's wait).
    #[schemars(length(max = 60))]
    pub reason: String,
    /// At most two fragments of the message.
    #[schemars(length(max = 2))]
    pub evidence: Vec<String>,
    /// Whether the message rejects how the previous one was handled.
    pub corrects_previous: bool,
}

/// Tokens a route decision may take: enough for its strings at their longest, one token a
/// character (a small model stuck in a loop writes them so), and the rest. Its schema bounds
/// the answer, so a budget that covers it costs nothing on a sane answer; 96 cut a looping
/// classifier inside its second piece of evidence, and a cut answer is no decision.
pub const MAX_TOKENS: u32 = 192;

fn shaped(name: &'static str) -> Contract {
    Contract::of::<RouteDecisionShape>(name, MAX_TOKENS).max_length(&["evidence", "[]"], 40)
}

/// The classifier's contract (on the worker model).
pub fn classifier() -> Contract {
    shaped("classifier")
}

/// Kuro's delegation decision (on the persona's model).
pub fn delegation() -> Contract {
    shaped("kuro_delegation")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_the_six_uppercase_names() {
        let c = classifier();
        let routes = c.at(&["route"]).unwrap()["enum"]
            .as_array()
            .unwrap()
            .clone();
        let names: Vec<&str> = routes.iter().filter_map(|r| r.as_str()).collect();
        assert_eq!(names.len(), 6);
        for r in Route::ALL {
            assert!(names.contains(&r.as_str()), "{r}");
        }
        assert_eq!(c.at(&["evidence"]).unwrap()["maxItems"], 2);
        assert!(c.admits(
            r#"{"route":"PLAN","confidence":0.8,"reason":"steps","evidence":["next week"],"corrects_previous":false}"#
        ));
        assert!(!c.admits(r#"{"route":"plan","confidence":0.8}"#));
    }

    /// Tokens the keys, punctuation, route, number and flag of a decision take at most.
    const REST_TOKENS: u64 = 40;

    #[test]
    fn the_budget_holds_the_longest_answer_the_schema_allows() {
        let c = classifier();
        let reason = c.at(&["reason"]).unwrap()["maxLength"].as_u64().unwrap();
        let items = c.at(&["evidence"]).unwrap()["maxItems"].as_u64().unwrap();
        let item = c.at(&["evidence", "[]"]).unwrap()["maxLength"]
            .as_u64()
            .unwrap();
        let longest = reason + items * item + REST_TOKENS;
        assert!(
            u64::from(MAX_TOKENS) >= longest,
            "{MAX_TOKENS} tokens cannot hold {longest}"
        );
    }
}
