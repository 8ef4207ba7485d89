//! The computed mood, in the exact shape `ghost mood` prints and the capsule carries.

use serde::{Deserialize, Serialize};

use super::{AffectLabel, ResponsePolicy};

/// The four squashed per-label sums, each 0..1.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoodComponents {
    /// Joy component.
    pub joy: f64,
    /// Sadness component.
    pub sadness: f64,
    /// Anger component (drives the response-policy knobs).
    pub anger: f64,
    /// Fear component.
    pub fear: f64,
}

impl MoodComponents {
    /// The components in tie-break order (joy, sadness, anger, fear).
    pub fn as_array(&self) -> [f64; 4] {
        [self.joy, self.sadness, self.anger, self.fear]
    }
}

/// The partner's mood at one instant:
/// `{"label", "intensity", "components": {…}, "response_policy": {…}}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoodState {
    /// Dominant label, or `neutral` when the dominant intensity is below the threshold.
    pub label: AffectLabel,
    /// The largest component (reported even when the label falls back to `neutral`).
    pub intensity: f64,
    /// All four components.
    pub components: MoodComponents,
    /// Behaviour knobs derived from anger, blended with the strongest LLM policy.
    pub response_policy: ResponsePolicy,
}

impl Default for MoodState {
    /// The calm state: neutral, zero components, cooperative.
    fn default() -> Self {
        MoodState {
            label: AffectLabel::Neutral,
            intensity: 0.0,
            components: MoodComponents::default(),
            response_policy: ResponsePolicy::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_to_the_probe_format() {
        let json = serde_json::to_string(&MoodState::default()).unwrap();
        assert_eq!(
            json,
            r#"{"label":"neutral","intensity":0.0,"components":{"joy":0.0,"sadness":0.0,"anger":0.0,"fear":0.0},"response_policy":{"cooperation":1.0,"refusal_bias":0.0,"refusal_allowed":false}}"#
        );
        let back: MoodState = serde_json::from_str(&json).unwrap();
        assert_eq!(back, MoodState::default());
    }
}
