//! Routing vocabulary shared by the router (which decides), the worker and the coder (which do
//! the work) and the persona (which conveys notices): the six routes, where a decision came
//! from, who made a structured decision, and what the persona must mention.
//!
//! Every enum here serializes exactly as the strings the events carried before they were
//! typed (`"CODE"`, `"classifier_failed"`, `"kuro"`, `"cloud_required"`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One of the six routing categories of seed 002 (serialised as the uppercase names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Route {
    /// Explanation, consultation, small talk, summaries, reviews.
    Chat,
    /// Code generation or modification (the only route that may use the cloud).
    Code,
    /// Extraction, structuring, tagging, aggregation, trend analysis.
    Analyze,
    /// Step planning, specification, task breakdown, decisions on direction.
    Plan,
    /// Operations: procedures, incident response, configuration checks, command guidance.
    Ops,
    /// Investigation, sources, comparisons, latest information.
    Research,
}

impl Route {
    /// Every route, in the order of the specification's category list.
    pub const ALL: [Route; 6] = [
        Route::Chat,
        Route::Plan,
        Route::Analyze,
        Route::Ops,
        Route::Research,
        Route::Code,
    ];

    /// The uppercase wire name (`"CODE"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Route::Chat => "CHAT",
            Route::Code => "CODE",
            Route::Analyze => "ANALYZE",
            Route::Plan => "PLAN",
            Route::Ops => "OPS",
            Route::Research => "RESEARCH",
        }
    }

    /// Whether work on this route is sent to the cloud model (seed: only CODE ever is).
    pub fn uses_cloud(self) -> bool {
        matches!(self, Route::Code)
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A route name that is not one of the six categories.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown route {0:?} (expected one of CHAT, CODE, ANALYZE, PLAN, OPS, RESEARCH)")]
pub struct UnknownRoute(pub String);

impl FromStr for Route {
    type Err = UnknownRoute;

    /// Exact, case-sensitive match on the uppercase names: the enumeration is a contract and a
    /// model answering `"code"` is answering outside it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "CHAT" => Ok(Route::Chat),
            "CODE" => Ok(Route::Code),
            "ANALYZE" => Ok(Route::Analyze),
            "PLAN" => Ok(Route::Plan),
            "OPS" => Ok(Route::Ops),
            "RESEARCH" => Ok(Route::Research),
            other => Err(UnknownRoute(other.to_owned())),
        }
    }
}

/// Where a route decision came from (logged with every decision).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteSource {
    /// An explicit command at the very start of the message.
    Explicit,
    /// The rule dictionary found strong evidence.
    Rule,
    /// The classifier's answer, after validation and gates (a gated answer still says
    /// `classifier`; the fallback reason says why the route is CHAT).
    Classifier,
    /// The classifier's output was discarded (unparsable, missing key, unknown route,
    /// confidence out of range) or the call itself failed: CHAT.
    ClassifierFailed,
    /// Nothing to route on (empty text after the commands): CHAT without asking anyone.
    Default,
    /// Kuro entry mode: the message enters as CHAT and the persona decides on delegation.
    LineForcedChat,
    /// Kuro's delegation decision, validated and gated exactly like the classifier's.
    Kuro,
    /// Kuro's delegation decision was discarded for the same reasons as `classifier_failed`.
    KuroFailed,
    /// The message answered the questions of the session's paused work, which resumes on
    /// its route.
    Resumed,
}

impl RouteSource {
    /// The snake_case name used in logs and probe output.
    pub fn as_str(self) -> &'static str {
        match self {
            RouteSource::Explicit => "explicit",
            RouteSource::Rule => "rule",
            RouteSource::Classifier => "classifier",
            RouteSource::ClassifierFailed => "classifier_failed",
            RouteSource::Default => "default",
            RouteSource::LineForcedChat => "line_forced_chat",
            RouteSource::Kuro => "kuro",
            RouteSource::KuroFailed => "kuro_failed",
            RouteSource::Resumed => "resumed",
        }
    }
}

impl fmt::Display for RouteSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who produced a structured route decision (the `mode` of `ClassifyRequested` and
/// `ClassifierReplied`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionOrigin {
    /// The router-mode classifier (one call per user message).
    Classifier,
    /// Kuro's in-conversation delegation decision (kuro entry mode).
    Kuro,
}

impl DecisionOrigin {
    /// The wire name (`classifier`, `kuro`).
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionOrigin::Classifier => "classifier",
            DecisionOrigin::Kuro => "kuro",
        }
    }

    /// The source of a decision this origin produced and the gates accepted.
    pub fn accepted(self) -> RouteSource {
        match self {
            DecisionOrigin::Classifier => RouteSource::Classifier,
            DecisionOrigin::Kuro => RouteSource::Kuro,
        }
    }

    /// The source of a decision this origin failed to produce (discarded or no reply).
    pub fn failed(self) -> RouteSource {
        match self {
            DecisionOrigin::Classifier => RouteSource::ClassifierFailed,
            DecisionOrigin::Kuro => RouteSource::KuroFailed,
        }
    }
}

impl fmt::Display for DecisionOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Something the persona must tell the user about a routing decision (briefly, in its own
/// words).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Notice {
    /// CODE was asked for while `local_only` is on: nothing was sent to the cloud; say that
    /// `/cloud` lifts the restriction.
    CloudRequired,
    /// The user switched local-only mode on (`/local`).
    LocalOn,
    /// The user switched local-only mode off (`/cloud`).
    LocalOff,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_serialise_as_uppercase_names() {
        for route in Route::ALL {
            let json = serde_json::to_string(&route).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", route.as_str()));
            assert_eq!(route.as_str().parse::<Route>(), Ok(route));
        }
    }

    #[test]
    fn unknown_and_lowercase_route_names_are_rejected() {
        assert!("DANCE".parse::<Route>().is_err());
        assert!("code".parse::<Route>().is_err());
        assert!(serde_json::from_str::<Route>("\"DANCE\"").is_err());
    }

    #[test]
    fn only_code_uses_the_cloud() {
        let cloud: Vec<Route> = Route::ALL.into_iter().filter(|r| r.uses_cloud()).collect();
        assert_eq!(cloud, vec![Route::Code]);
    }

    #[test]
    fn sources_serialise_as_snake_case() {
        let json = serde_json::to_string(&RouteSource::ClassifierFailed).unwrap_or_default();
        assert_eq!(json, "\"classifier_failed\"");
        assert_eq!(RouteSource::LineForcedChat.as_str(), "line_forced_chat");
    }

    #[test]
    fn origins_and_notices_serialise_as_the_old_strings() {
        for origin in [DecisionOrigin::Classifier, DecisionOrigin::Kuro] {
            let json = serde_json::to_string(&origin).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", origin.as_str()));
        }
        let notices = [Notice::CloudRequired, Notice::LocalOn, Notice::LocalOff];
        let json = serde_json::to_string(&notices).unwrap_or_default();
        assert_eq!(json, r#"["cloud_required","local_on","local_off"]"#);
    }
}
