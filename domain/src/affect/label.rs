//! The affect label vocabulary shared by the trailer and the mood computation.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One of the five labels of seed 004: four emotions plus `neutral`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AffectLabel {
    /// Joy (喜).
    Joy,
    /// Sadness (哀).
    Sadness,
    /// Anger (怒).
    Anger,
    /// Fear.
    Fear,
    /// No particular reaction; never contributes to the mood integral.
    Neutral,
}

impl AffectLabel {
    /// The four emotion labels in tie-break order (joy > sadness > anger > fear).
    pub const EMOTIONS: [AffectLabel; 4] = [
        AffectLabel::Joy,
        AffectLabel::Sadness,
        AffectLabel::Anger,
        AffectLabel::Fear,
    ];

    /// The wire spelling (`"joy"`, …, `"neutral"`).
    pub fn as_str(self) -> &'static str {
        match self {
            AffectLabel::Joy => "joy",
            AffectLabel::Sadness => "sadness",
            AffectLabel::Anger => "anger",
            AffectLabel::Fear => "fear",
            AffectLabel::Neutral => "neutral",
        }
    }

    /// Position among [`AffectLabel::EMOTIONS`], `None` for `neutral`.
    pub fn emotion_index(self) -> Option<usize> {
        match self {
            AffectLabel::Joy => Some(0),
            AffectLabel::Sadness => Some(1),
            AffectLabel::Anger => Some(2),
            AffectLabel::Fear => Some(3),
            AffectLabel::Neutral => None,
        }
    }
}

impl fmt::Display for AffectLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A label string outside `joy|sadness|anger|fear|neutral`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown affect label {0:?} (expected joy|sadness|anger|fear|neutral)")]
pub struct UnknownLabel(pub String);

impl FromStr for AffectLabel {
    type Err = UnknownLabel;

    /// Exact, case-sensitive wire spelling; lenient callers normalise first.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "joy" => Ok(AffectLabel::Joy),
            "sadness" => Ok(AffectLabel::Sadness),
            "anger" => Ok(AffectLabel::Anger),
            "fear" => Ok(AffectLabel::Fear),
            "neutral" => Ok(AffectLabel::Neutral),
            other => Err(UnknownLabel(other.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_label_through_str_and_serde() {
        for label in AffectLabel::EMOTIONS
            .into_iter()
            .chain([AffectLabel::Neutral])
        {
            assert_eq!(label.as_str().parse::<AffectLabel>(), Ok(label));
            let json = serde_json::to_string(&label).unwrap();
            assert_eq!(json, format!("\"{}\"", label.as_str()));
        }
    }

    #[test]
    fn rejects_unknown_and_wrong_case_labels() {
        assert_eq!(
            "surprise".parse::<AffectLabel>(),
            Err(UnknownLabel("surprise".into()))
        );
        assert!("Joy".parse::<AffectLabel>().is_err());
    }

    #[test]
    fn neutral_has_no_emotion_index_and_order_is_tie_order() {
        assert_eq!(AffectLabel::Neutral.emotion_index(), None);
        for (i, l) in AffectLabel::EMOTIONS.iter().enumerate() {
            assert_eq!(l.emotion_index(), Some(i));
        }
    }
}
