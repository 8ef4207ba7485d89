//! The affect as stored with an episode (a reply), and the check of a mood override.

use serde::{Deserialize, Serialize};

use super::{AffectLabel, MoodState, ParsedAffect, ResponsePolicy};

/// A validated affect: enough to count as a mood episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Affect {
    /// The persona's own reaction.
    pub label: AffectLabel,
    /// Its strength, 0..1.
    pub intensity: f64,
    /// How much the moment matters, 0..1.
    pub salience: f64,
    /// Confidence of the estimate, 0..1 (absent = the default confidence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// The model's short note on what happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reflection_text: Option<String>,
    /// Topics.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topic_tags: Vec<String>,
    /// The model's suggested response policy, if it gave a valid one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<ResponsePolicy>,
}

impl Affect {
    /// The episode a parsed trailer describes; `None` without label, intensity and salience.
    pub fn from_parsed(parsed: &ParsedAffect) -> Option<Affect> {
        Some(Affect {
            label: parsed.partner_affect_label?,
            intensity: parsed.partner_affect_intensity?,
            salience: parsed.salience?,
            confidence: parsed.confidence,
            reflection_text: parsed.reflection_text.clone(),
            topic_tags: parsed.topic_tags.clone(),
            policy: parsed.partner_response_policy,
        })
    }
}

/// Why a mood state given from outside (the debug override) is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field} = {value} must be within 0..1")]
pub struct MoodStateError {
    /// The offending field.
    pub field: &'static str,
    /// Its value.
    pub value: f64,
}

impl MoodState {
    /// Every number within 0..1 (and not NaN).
    pub fn validate(&self) -> Result<(), MoodStateError> {
        let c = &self.components;
        let p = &self.response_policy;
        for (field, value) in [
            ("intensity", self.intensity),
            ("components.joy", c.joy),
            ("components.sadness", c.sadness),
            ("components.anger", c.anger),
            ("components.fear", c.fear),
            ("response_policy.cooperation", p.cooperation),
            ("response_policy.refusal_bias", p.refusal_bias),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(MoodStateError { field, value });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::affect::parse_affect;

    #[test]
    fn an_episode_needs_label_intensity_and_salience() {
        let full = parse_affect(
            r#"{"reflection_text":"x","partner_affect_label":"anger","partner_affect_intensity":0.8,"salience":0.9,"confidence":0.7,"topic_tags":["a"]}"#,
        );
        let a = Affect::from_parsed(&full).unwrap();
        assert_eq!(
            (a.label, a.intensity, a.salience, a.confidence),
            (AffectLabel::Anger, 0.8, 0.9, Some(0.7))
        );
        let partial = parse_affect(
            r#"{"partner_affect_label":"anger","partner_affect_intensity":1.7,"salience":0.9}"#,
        );
        assert!(
            Affect::from_parsed(&partial).is_none(),
            "out-of-range intensity is rejected"
        );
    }

    #[test]
    fn override_values_must_be_in_range() {
        let mut s = MoodState::default();
        assert!(s.validate().is_ok());
        s.components.anger = 1.5;
        assert_eq!(s.validate().unwrap_err().field, "components.anger");
        s.components.anger = f64::NAN;
        assert!(s.validate().is_err());
    }
}
