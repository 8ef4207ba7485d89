//! Nomination policy (seed 000 "設定（提案）"): self-nomination, fallback strategy, fuzzy cutoff.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The seed's default cutoff for the fuzzy match (`difflib.get_close_matches(cutoff=0.85)`).
pub const DEFAULT_FUZZY_THRESHOLD: f64 = 0.85;

/// What to do when the tag is missing, unknown or rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// The next character in registry order after the current one, skipping the current one.
    #[default]
    RoundRobin,
    /// A uniformly random character other than the current one.
    Random,
}

impl Fallback {
    /// The wire name (`round_robin` / `random`).
    pub fn as_str(self) -> &'static str {
        match self {
            Fallback::RoundRobin => "round_robin",
            Fallback::Random => "random",
        }
    }
}

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Fallback {
    type Err = PolicyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "round_robin" => Ok(Fallback::RoundRobin),
            "random" => Ok(Fallback::Random),
            other => Err(PolicyError::InvalidField {
                field: "fallback",
                reason: format!("expected `round_robin` or `random`, got `{other}`"),
            }),
        }
    }
}

/// A policy field that failed validation or parsing.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PolicyError {
    /// A field holds a value outside its domain.
    #[error("invalid nomination policy field `{field}`: {reason}")]
    InvalidField {
        /// The offending field's name as written in configuration.
        field: &'static str,
        /// Why the value was refused.
        reason: String,
    },
    /// The document is not a valid policy (syntax, unknown field, wrong type).
    #[error("invalid nomination policy: {0}")]
    Parse(String),
}

/// How nominations are accepted and what happens when none is usable.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "PolicyRepr")]
pub struct NominationPolicy {
    /// Whether a character may nominate itself (seed default: false).
    pub allow_self_nomination: bool,
    /// Strategy when the tag is missing, unknown or rejected (default: round_robin).
    pub fallback: Fallback,
    /// Minimum Ratcliff/Obershelp ratio for the fuzzy match, in `0..=1` (default: 0.85).
    pub fuzzy_threshold: f64,
}

impl Default for NominationPolicy {
    fn default() -> Self {
        Self {
            allow_self_nomination: false,
            fallback: Fallback::RoundRobin,
            fuzzy_threshold: DEFAULT_FUZZY_THRESHOLD,
        }
    }
}

impl NominationPolicy {
    /// A validated policy.
    pub fn new(
        allow_self_nomination: bool,
        fallback: Fallback,
        fuzzy_threshold: f64,
    ) -> Result<Self, PolicyError> {
        let policy = Self {
            allow_self_nomination,
            fallback,
            fuzzy_threshold,
        };
        policy.validate()?;
        Ok(policy)
    }

    /// Checks every field's domain (`fuzzy_threshold` must be a number in `0..=1`).
    pub fn validate(&self) -> Result<(), PolicyError> {
        if !(0.0..=1.0).contains(&self.fuzzy_threshold) {
            return Err(PolicyError::InvalidField {
                field: "fuzzy_threshold",
                reason: format!("must be within 0..=1, got {}", self.fuzzy_threshold),
            });
        }
        Ok(())
    }

    /// Parses and validates a JSON policy (missing fields take their defaults).
    pub fn from_json(text: &str) -> Result<Self, PolicyError> {
        serde_json::from_str(text).map_err(|e| PolicyError::Parse(e.to_string()))
    }
}

/// The wire shape: strict about unknown fields, lenient about missing ones.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
struct PolicyRepr {
    allow_self_nomination: bool,
    fallback: Fallback,
    fuzzy_threshold: f64,
}

impl Default for PolicyRepr {
    fn default() -> Self {
        let d = NominationPolicy::default();
        Self {
            allow_self_nomination: d.allow_self_nomination,
            fallback: d.fallback,
            fuzzy_threshold: d.fuzzy_threshold,
        }
    }
}

impl TryFrom<PolicyRepr> for NominationPolicy {
    type Error = PolicyError;

    fn try_from(r: PolicyRepr) -> Result<Self, Self::Error> {
        NominationPolicy::new(r.allow_self_nomination, r.fallback, r.fuzzy_threshold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_seed() {
        let p = NominationPolicy::default();
        assert!(!p.allow_self_nomination);
        assert_eq!(p.fallback, Fallback::RoundRobin);
        assert_eq!(p.fuzzy_threshold, 0.85);
        assert_eq!(NominationPolicy::from_json("{}"), Ok(p));
    }

    #[test]
    fn deserializes_snake_case_fields() {
        let p = NominationPolicy::from_json(
            r#"{"allow_self_nomination":true,"fallback":"random","fuzzy_threshold":0.5}"#,
        );
        assert_eq!(p, NominationPolicy::new(true, Fallback::Random, 0.5));
    }

    #[test]
    fn rejects_unknown_fields_and_values() {
        assert!(matches!(
            NominationPolicy::from_json(r#"{"fallbak":"random"}"#),
            Err(PolicyError::Parse(m)) if m.contains("fallbak")
        ));
        assert!(matches!(
            NominationPolicy::from_json(r#"{"fallback":"roundrobin"}"#),
            Err(PolicyError::Parse(_))
        ));
    }

    #[test]
    fn threshold_outside_unit_interval_names_the_field() {
        for bad in [-0.01, 1.01, f64::NAN, f64::INFINITY] {
            let err = NominationPolicy::new(false, Fallback::RoundRobin, bad);
            assert!(
                matches!(
                    err,
                    Err(PolicyError::InvalidField {
                        field: "fuzzy_threshold",
                        ..
                    })
                ),
                "{bad} accepted"
            );
        }
        assert!(NominationPolicy::new(false, Fallback::RoundRobin, 0.0).is_ok());
        assert!(NominationPolicy::new(false, Fallback::RoundRobin, 1.0).is_ok());
        let parsed = NominationPolicy::from_json(r#"{"fuzzy_threshold": 2}"#);
        assert!(matches!(parsed, Err(PolicyError::Parse(m)) if m.contains("fuzzy_threshold")));
    }

    #[test]
    fn fallback_parses_from_cli_strings() {
        assert_eq!("round_robin".parse(), Ok(Fallback::RoundRobin));
        assert_eq!("random".parse(), Ok(Fallback::Random));
        assert!(matches!(
            "rr".parse::<Fallback>(),
            Err(PolicyError::InvalidField {
                field: "fallback",
                ..
            })
        ));
        assert_eq!(Fallback::Random.to_string(), "random");
    }
}
