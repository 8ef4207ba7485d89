//! `routing.yaml`: gates, loop limits and the rule dictionary, loaded and validated together.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::rules::{RawRule, RuleDictionary};

/// Everything that can be wrong with `routing.yaml`; each variant names the rule or key.
#[derive(Debug, thiserror::Error)]
pub enum DictionaryError {
    /// The YAML did not parse or has unknown/missing keys (the message carries the location).
    #[error("routing.yaml: {0}")]
    Yaml(String),
    /// A rule's regular expression does not compile.
    #[error("rule {rule:?}: bad regex {pattern:?}: {source}")]
    BadRegex {
        /// The rule's name.
        rule: String,
        /// The offending pattern.
        pattern: String,
        /// The compiler's error.
        #[source]
        source: Box<regex::Error>,
    },
    /// A rule's regular expression matches the empty string (it would count matches everywhere).
    #[error("rule {rule:?}: regex {pattern:?} matches the empty string")]
    EmptyMatch {
        /// The rule's name.
        rule: String,
        /// The offending pattern.
        pattern: String,
    },
    /// A rule names a route outside the enumeration.
    #[error("rule {rule:?}: unknown route {route:?}")]
    UnknownRoute {
        /// The rule's name.
        rule: String,
        /// The route as written.
        route: String,
    },
    /// A rule has no `any` patterns, so it could never produce evidence.
    #[error("rule {rule:?}: `any` must list at least one pattern")]
    NoPatterns {
        /// The rule's name.
        rule: String,
    },
    /// A rule has an empty name or `min_matches: 0`.
    #[error("rule {rule:?}: {problem}")]
    InvalidRule {
        /// The rule's name.
        rule: String,
        /// What is wrong.
        problem: &'static str,
    },
    /// Two rules share a name (names identify rules in logs, so they must be unique).
    #[error("rule {rule:?} is defined twice")]
    DuplicateRule {
        /// The repeated name.
        rule: String,
    },
    /// A gate or loop value is outside its allowed range.
    #[error("routing.yaml: {key} = {value} is out of range ({expected})")]
    OutOfRange {
        /// Dotted key, e.g. `gates.code_threshold`.
        key: &'static str,
        /// The value as configured.
        value: String,
        /// The allowed range.
        expected: &'static str,
    },
}

/// Adoption thresholds for the classifier's (and Kuro's) structured route decision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GateConfig {
    /// Below this confidence the decision is discarded for the safe side (CHAT).
    pub accept_threshold: f64,
    /// CODE needs at least this confidence (and strong evidence in the dictionary).
    pub code_threshold: f64,
}

impl Default for GateConfig {
    fn default() -> Self {
        Self {
            accept_threshold: 0.6,
            code_threshold: 0.8,
        }
    }
}

impl GateConfig {
    /// Checks both thresholds lie in 0..=1 and CODE's is not laxer than the general one.
    pub fn validate(&self) -> Result<(), DictionaryError> {
        check_unit("gates.accept_threshold", self.accept_threshold)?;
        check_unit("gates.code_threshold", self.code_threshold)?;
        if self.code_threshold < self.accept_threshold {
            return Err(DictionaryError::OutOfRange {
                key: "gates.code_threshold",
                value: self.code_threshold.to_string(),
                expected: ">= gates.accept_threshold",
            });
        }
        Ok(())
    }
}

/// Limits and thresholds of the loop controller.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoopPolicy {
    /// Maximum worker runs for one user message (the first run included).
    pub max_loops: u32,
    /// Maximum wall time in seconds for one user message's loop.
    pub max_seconds: u64,
    /// A worker confidence below this is "low": the user is asked when the branch matters.
    pub ask_below_confidence: f64,
    /// Whether the persona judges a finished result before replying and may propose the
    /// next step (one more model call per worker-backed reply, once per user message).
    pub persona_proposals: bool,
}

impl Default for LoopPolicy {
    fn default() -> Self {
        Self {
            max_loops: 3,
            max_seconds: 120,
            ask_below_confidence: 0.5,
            persona_proposals: true,
        }
    }
}

impl LoopPolicy {
    /// The time limit as a `Duration`.
    pub fn max_elapsed(&self) -> Duration {
        Duration::from_secs(self.max_seconds)
    }

    /// Whether a message's whole work fits before the turn watchdog closes it: every loop
    /// taking its run's full timeout (`run_secs`, the worker's or the coder's, whichever is
    /// longer) and the reply its own (`render_secs`) must end before `turn_secs`, or the
    /// watchdog's canned notice would replace the persona's report. The error names the
    /// settings and the fix.
    pub fn fits_turn(&self, run_secs: u64, render_secs: u64, turn_secs: u64) -> Result<(), String> {
        let needed = u64::from(self.max_loops) * run_secs + render_secs;
        if needed <= turn_secs {
            return Ok(());
        }
        Err(format!(
            "loop.max_loops ({}) x the worker's or coder's llm timeout_secs ({run_secs}) + \
             llm.persona.timeout_secs ({render_secs}) = {needed} s does not fit under \
             routing.turn_timeout_secs ({turn_secs} s): the watchdog would close turns whose \
             work is still within its limits. Lower loop.max_loops or the timeouts, or raise \
             routing.turn_timeout_secs to at least {needed} (and gateway.turn_timeout_secs \
             above it)",
            self.max_loops
        ))
    }

    /// Checks the limits are usable (at least one loop, a positive time, a unit threshold).
    pub fn validate(&self) -> Result<(), DictionaryError> {
        if self.max_loops == 0 {
            return Err(DictionaryError::OutOfRange {
                key: "loop.max_loops",
                value: "0".to_owned(),
                expected: ">= 1",
            });
        }
        if self.max_seconds == 0 {
            return Err(DictionaryError::OutOfRange {
                key: "loop.max_seconds",
                value: "0".to_owned(),
                expected: ">= 1",
            });
        }
        check_unit("loop.ask_below_confidence", self.ask_below_confidence)
    }
}

fn check_unit(key: &'static str, value: f64) -> Result<(), DictionaryError> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(DictionaryError::OutOfRange {
            key,
            value: value.to_string(),
            expected: "0.0..=1.0",
        })
    }
}

/// The file as written; only used to load [`RoutingConfig`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoutingFile {
    #[serde(default)]
    gates: GateConfig,
    #[serde(default, rename = "loop")]
    loop_policy: LoopPolicy,
    rules: Vec<RawRule>,
}

/// The whole of `routing.yaml`, validated: gates, loop policy and the compiled dictionary.
#[derive(Debug, Clone)]
pub struct RoutingConfig {
    /// Classifier/Kuro adoption thresholds.
    pub gates: GateConfig,
    /// Loop controller limits.
    pub loop_policy: LoopPolicy,
    /// The compiled rule dictionary.
    pub dictionary: RuleDictionary,
}

impl RoutingConfig {
    /// Parses and validates `routing.yaml` (unknown keys, bad regexes, unknown routes and
    /// out-of-range values are errors naming the rule or key).
    pub fn from_yaml(yaml: &str) -> Result<Self, DictionaryError> {
        let raw: RawRoutingFile =
            serde_norway::from_str(yaml).map_err(|e| DictionaryError::Yaml(e.to_string()))?;
        raw.gates.validate()?;
        raw.loop_policy.validate()?;
        let dictionary = RuleDictionary::compile(raw.rules)?;
        Ok(Self {
            gates: raw.gates,
            loop_policy: raw.loop_policy,
            dictionary,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = "rules:\n  - name: r\n    route: PLAN\n    any: ['設計']\n";

    #[test]
    fn defaults_apply_when_sections_are_missing() {
        let config = RoutingConfig::from_yaml(MINIMAL).unwrap();
        assert_eq!(config.gates, GateConfig::default());
        assert_eq!(config.loop_policy, LoopPolicy::default());
        assert_eq!(config.gates.accept_threshold, 0.6);
        assert_eq!(config.gates.code_threshold, 0.8);
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let yaml = format!("gates:\n  accept: 0.5\n{MINIMAL}");
        let err = RoutingConfig::from_yaml(&yaml).unwrap_err();
        assert!(
            matches!(err, DictionaryError::Yaml(ref m) if m.contains("accept")),
            "{err}"
        );
        let yaml = format!("extra: 1\n{MINIMAL}");
        assert!(matches!(
            RoutingConfig::from_yaml(&yaml),
            Err(DictionaryError::Yaml(_))
        ));
    }

    #[test]
    fn out_of_range_thresholds_name_the_key() {
        let yaml = format!("gates:\n  accept_threshold: 1.5\n{MINIMAL}");
        let err = RoutingConfig::from_yaml(&yaml).unwrap_err();
        assert!(matches!(
            err,
            DictionaryError::OutOfRange {
                key: "gates.accept_threshold",
                ..
            }
        ));
        let yaml = format!("gates:\n  accept_threshold: 0.7\n  code_threshold: 0.6\n{MINIMAL}");
        let err = RoutingConfig::from_yaml(&yaml).unwrap_err();
        assert!(err.to_string().contains("gates.code_threshold"), "{err}");
    }

    #[test]
    fn the_loops_and_the_reply_must_fit_under_the_turn_timeout() {
        let policy = LoopPolicy::default(); // 3 loops
        assert!(policy.fits_turn(60, 60, 250).is_ok());
        assert!(policy.fits_turn(60, 70, 250).is_ok());
        let err = policy.fits_turn(60, 71, 250).unwrap_err();
        for named in [
            "loop.max_loops",
            "llm.persona.timeout_secs",
            "routing.turn_timeout_secs",
            "at least 251",
        ] {
            assert!(err.contains(named), "{err}");
        }
    }

    #[test]
    fn loop_limits_must_be_positive() {
        let yaml = format!("loop:\n  max_loops: 0\n{MINIMAL}");
        assert!(matches!(
            RoutingConfig::from_yaml(&yaml),
            Err(DictionaryError::OutOfRange {
                key: "loop.max_loops",
                ..
            })
        ));
        let yaml = format!("loop:\n  max_seconds: 0\n{MINIMAL}");
        assert!(matches!(
            RoutingConfig::from_yaml(&yaml),
            Err(DictionaryError::OutOfRange {
                key: "loop.max_seconds",
                ..
            })
        ));
        let yaml = format!("loop:\n  max_loops: 5\n  max_seconds: 30\n{MINIMAL}");
        let config = RoutingConfig::from_yaml(&yaml).unwrap();
        assert_eq!(config.loop_policy.max_loops, 5);
        assert_eq!(config.loop_policy.max_elapsed(), Duration::from_secs(30));
    }

    #[test]
    fn shipped_routing_yaml_loads() {
        let yaml = crate::routing::test_support::shipped_yaml();
        let config = RoutingConfig::from_yaml(&yaml).unwrap();
        assert!(config.dictionary.len() >= 10);
    }
}
