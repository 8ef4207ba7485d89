//! The tunable constants of the mood computation, defaults from seed 004 and the README.

use serde::{Deserialize, Serialize};

/// Every constant of the mood computation (defaults: seed 004 and the seeds README decisions).
///
/// Field names for the decay and thresholds match the `params` object of `mood.json`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MoodConstants {
    /// τ_min in seconds: the shortest residence time (small talk fades on this scale).
    pub tau_min_seconds: f64,
    /// τ_max in seconds: the longest residence time (the aftertaste of a big event).
    pub tau_max_seconds: f64,
    /// k in `s^k`: how sharply τ grows with salience.
    pub salience_power: f64,
    /// Dominant intensity below this reads as `neutral`.
    pub neutral_below: f64,
    /// `refusal_allowed` when anger ≥ this.
    pub refusal_gate_anger: f64,
    /// Anger at which `refusal_bias` starts rising above 0.
    pub refusal_bias_anger_floor: f64,
    /// Anger span over which `refusal_bias` rises from 0 to 1.
    pub refusal_bias_anger_span: f64,
    /// `cooperation = 1 − slope × refusal_bias`.
    pub cooperation_refusal_slope: f64,
    /// Gain in `score = clamp01(gain × salience × confidence × decay)` of an LLM policy.
    pub policy_score_gain: f64,
    /// An LLM policy's `refusal_allowed` replaces the computed one only at score ≥ this.
    pub policy_override_min_score: f64,
    /// Confidence assumed for episodes that carry none.
    pub default_confidence: f64,
    /// Only the newest this-many labelled episodes count.
    pub max_episodes: usize,
}

impl Default for MoodConstants {
    /// The seed defaults.
    fn default() -> Self {
        MoodConstants {
            tau_min_seconds: 120.0,
            tau_max_seconds: 6.0 * 3600.0,
            salience_power: 2.0,
            neutral_below: 0.15,
            refusal_gate_anger: 0.75,
            refusal_bias_anger_floor: 0.55,
            refusal_bias_anger_span: 0.45,
            cooperation_refusal_slope: 0.9,
            policy_score_gain: 1.5,
            policy_override_min_score: 0.5,
            default_confidence: 0.5,
            max_episodes: 500,
        }
    }
}

/// A constant outside its allowed range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("mood constant `{field}` = {value} is invalid: must be {expected}")]
pub struct ConstantsError {
    /// The field name as written in configuration.
    pub field: &'static str,
    /// The offending value (as f64, also for `max_episodes`).
    pub value: f64,
    /// The allowed range in words.
    pub expected: &'static str,
}

impl MoodConstants {
    /// Checks every field; the first offending one is named in the error.
    pub fn validate(&self) -> Result<(), ConstantsError> {
        let err = |field, value, expected| {
            Err(ConstantsError {
                field,
                value,
                expected,
            })
        };
        let positive = |v: f64| v.is_finite() && v > 0.0;
        let unit = |v: f64| (0.0..=1.0).contains(&v);
        let non_negative = |v: f64| v.is_finite() && v >= 0.0;

        if !positive(self.tau_min_seconds) {
            return err("tau_min_seconds", self.tau_min_seconds, "finite and > 0");
        }
        if !(self.tau_max_seconds.is_finite() && self.tau_max_seconds >= self.tau_min_seconds) {
            return err(
                "tau_max_seconds",
                self.tau_max_seconds,
                "finite and >= tau_min_seconds",
            );
        }
        if !positive(self.salience_power) {
            return err("salience_power", self.salience_power, "finite and > 0");
        }
        for (field, value) in [
            ("neutral_below", self.neutral_below),
            ("refusal_gate_anger", self.refusal_gate_anger),
            ("refusal_bias_anger_floor", self.refusal_bias_anger_floor),
            ("policy_override_min_score", self.policy_override_min_score),
            ("default_confidence", self.default_confidence),
        ] {
            if !unit(value) {
                return err(field, value, "within 0..1");
            }
        }
        if !positive(self.refusal_bias_anger_span) {
            return err(
                "refusal_bias_anger_span",
                self.refusal_bias_anger_span,
                "finite and > 0",
            );
        }
        for (field, value) in [
            ("cooperation_refusal_slope", self.cooperation_refusal_slope),
            ("policy_score_gain", self.policy_score_gain),
        ] {
            if !non_negative(value) {
                return err(field, value, "finite and >= 0");
            }
        }
        if self.max_episodes == 0 {
            return err("max_episodes", 0.0, ">= 1");
        }
        Ok(())
    }

    /// τ(s) = τ_min + (τ_max − τ_min)·s^k, in seconds.
    pub fn tau(&self, salience: f64) -> f64 {
        self.tau_min_seconds
            + (self.tau_max_seconds - self.tau_min_seconds) * salience.powf(self.salience_power)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_seed_values_and_valid() {
        let c = MoodConstants::default();
        assert_eq!(c.tau_min_seconds, 120.0);
        assert_eq!(c.tau_max_seconds, 21600.0);
        assert_eq!(c.salience_power, 2.0);
        assert_eq!(c.neutral_below, 0.15);
        assert_eq!(c.max_episodes, 500);
        assert!(c.validate().is_ok());
    }

    #[test]
    fn partial_config_takes_defaults_and_unknown_fields_are_refused() {
        let c: MoodConstants = serde_json::from_str(r#"{"neutral_below": 0.2}"#).unwrap();
        assert_eq!(c.neutral_below, 0.2);
        assert_eq!(c.tau_min_seconds, 120.0);
        assert!(serde_json::from_str::<MoodConstants>(r#"{"neutral": 0.2}"#).is_err());
    }

    #[test]
    fn validation_names_the_field() {
        let cases: [(&str, MoodConstants); 7] = [
            (
                "tau_min_seconds",
                MoodConstants {
                    tau_min_seconds: 0.0,
                    ..Default::default()
                },
            ),
            (
                "tau_max_seconds",
                MoodConstants {
                    tau_max_seconds: 60.0,
                    ..Default::default()
                },
            ),
            (
                "salience_power",
                MoodConstants {
                    salience_power: f64::NAN,
                    ..Default::default()
                },
            ),
            (
                "neutral_below",
                MoodConstants {
                    neutral_below: 1.5,
                    ..Default::default()
                },
            ),
            (
                "refusal_bias_anger_span",
                MoodConstants {
                    refusal_bias_anger_span: 0.0,
                    ..Default::default()
                },
            ),
            (
                "policy_score_gain",
                MoodConstants {
                    policy_score_gain: f64::INFINITY,
                    ..Default::default()
                },
            ),
            (
                "max_episodes",
                MoodConstants {
                    max_episodes: 0,
                    ..Default::default()
                },
            ),
        ];
        for (field, c) in cases {
            assert_eq!(c.validate().unwrap_err().field, field);
        }
    }

    #[test]
    fn tau_spans_min_to_max() {
        let c = MoodConstants::default();
        assert_eq!(c.tau(0.0), 120.0);
        assert_eq!(c.tau(1.0), 21600.0);
        assert!((c.tau(0.5) - (120.0 + 21480.0 * 0.25)).abs() < 1e-9);
    }
}
