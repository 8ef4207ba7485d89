//! The worker contract (the local worker and the cloud coder): the work product and the
//! loop's meta-information (validated by the router's `parse_worker_output`).

use schemars::JsonSchema;
use serde::Deserialize;

use crate::Contract;
use ghost_domain::routing::Route;

/// How risky the worker judges its result.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RiskShape {
    /// Nothing to worry about.
    Low,
    /// Worth care.
    Medium,
    /// Ask the user first.
    High,
}

/// The worker's answer as the model writes it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct WorkerOutputShape {
    /// The work product.
    pub result: String,
    /// Whether another run is needed.
    pub needs_next_loop: bool,
    /// Why (short; empty when none is needed).
    #[schemars(length(max = 200))]
    pub why: String,
    /// At most three next steps.
    #[schemars(length(max = 3))]
    pub next_actions: Vec<String>,
    /// At most three questions only the user can answer.
    #[schemars(length(max = 3))]
    pub questions_for_user: Vec<String>,
    /// Confidence, 0..=1.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: f64,
    /// Risk.
    pub risk: RiskShape,
    /// Whether the route fits.
    pub fit: Option<bool>,
    /// The route to use instead.
    pub suggested_route: Option<Route>,
    /// The URLs used (RESEARCH only; each one listed in the task).
    pub sources: Vec<String>,
}

/// Tokens a work product may take.
pub const MAX_TOKENS: u32 = 1024;

/// The worker contract; `sources` limited to the URLs the task lists (none off RESEARCH).
pub fn contract<S: AsRef<str>>(listed_sources: &[S]) -> Contract {
    Contract::of::<WorkerOutputShape>("worker", MAX_TOKENS)
        .allow(&["sources"], listed_sources)
        .max_length(&["next_actions", "[]"], 200)
        .max_length(&["questions_for_user", "[]"], 200)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_the_listed_ones() {
        let c = contract(&["https://a.example/"]);
        let ok = r#"{"result":"r","needs_next_loop":false,"why":"","next_actions":[],"questions_for_user":[],
            "confidence":0.7,"risk":"low","fit":true,"suggested_route":null,"sources":["https://a.example/"]}"#;
        assert!(c.admits(ok));
        assert!(!c.admits(&ok.replace("https://a.example/", "https://b.example/")));
        let none: [&str; 0] = [];
        assert!(!contract(&none).admits(ok), "no sources off RESEARCH");
    }
}
