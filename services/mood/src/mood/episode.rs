//! One labelled episode: the affect recorded for a past turn.

use serde::{Deserialize, Serialize};

use ghost_shared::affect::{AffectLabel, ResponsePolicy};

/// A labelled episode as the mood computation sees it (same shape as `mood.json` episodes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawEpisode")]
pub struct Episode {
    /// When it happened, Unix seconds.
    pub at: f64,
    /// The partner's affect label.
    pub label: AffectLabel,
    /// Strength of the reaction, 0..1.
    pub intensity: f64,
    /// Importance of the event, 0..1 (also lengthens τ).
    pub salience: f64,
    /// Confidence of the estimate, 0..1; `None` counts as `default_confidence` (0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// The LLM's `partner_response_policy` for that turn, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<ResponsePolicy>,
}

/// The wire form before validation; keeps the label as text so an unknown one gets its own error.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEpisode {
    at: f64,
    label: String,
    intensity: f64,
    salience: f64,
    #[serde(default)]
    confidence: Option<f64>,
    #[serde(default)]
    policy: Option<ResponsePolicy>,
}

/// Why an episode is invalid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EpisodeError {
    /// `at` is NaN or infinite.
    #[error("episode `at` = {0} is not a finite timestamp")]
    InvalidTime(f64),
    /// A 0..1 field outside 0..1 (or NaN).
    #[error("episode `{field}` = {value} is outside 0..1")]
    OutOfRange {
        /// `intensity`, `salience`, `confidence`, `policy.cooperation` or `policy.refusal_bias`.
        field: &'static str,
        /// The offending value.
        value: f64,
    },
    /// The label is not one of `joy|sadness|anger|fear|neutral`.
    #[error(transparent)]
    UnknownLabel(#[from] ghost_shared::affect::UnknownLabel),
}

impl Episode {
    /// Checks the timestamp and every 0..1 field.
    pub fn validate(&self) -> Result<(), EpisodeError> {
        if !self.at.is_finite() {
            return Err(EpisodeError::InvalidTime(self.at));
        }
        let unit = |field, value: f64| {
            if (0.0..=1.0).contains(&value) {
                Ok(())
            } else {
                Err(EpisodeError::OutOfRange { field, value })
            }
        };
        unit("intensity", self.intensity)?;
        unit("salience", self.salience)?;
        if let Some(c) = self.confidence {
            unit("confidence", c)?;
        }
        if let Some(p) = &self.policy {
            unit("policy.cooperation", p.cooperation)?;
            unit("policy.refusal_bias", p.refusal_bias)?;
        }
        Ok(())
    }
}

impl TryFrom<RawEpisode> for Episode {
    type Error = EpisodeError;

    fn try_from(raw: RawEpisode) -> Result<Self, Self::Error> {
        let episode = Episode {
            at: raw.at,
            label: raw.label.parse()?,
            intensity: raw.intensity,
            salience: raw.salience,
            confidence: raw.confidence,
            policy: raw.policy,
        };
        episode.validate()?;
        Ok(episode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Episode, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn round_trips_the_fixture_shape() {
        let json = r#"{"at":1759999990.0,"label":"sadness","intensity":0.7,"salience":0.9,"confidence":0.8,"policy":{"cooperation":0.2,"refusal_bias":0.8,"refusal_allowed":true}}"#;
        let e = parse(json).unwrap();
        assert_eq!(e.label, AffectLabel::Sadness);
        assert_eq!(serde_json::to_string(&e).unwrap(), json);
        let minimal = parse(r#"{"at":1,"label":"fear","intensity":0.9,"salience":1}"#).unwrap();
        assert_eq!(minimal.confidence, None);
        assert_eq!(
            serde_json::to_string(&minimal).unwrap(),
            r#"{"at":1.0,"label":"fear","intensity":0.9,"salience":1.0}"#
        );
    }

    #[test]
    fn rejects_out_of_range_and_unknown_labels() {
        let bad = Episode {
            at: 0.0,
            label: AffectLabel::Joy,
            intensity: 0.5,
            salience: 0.5,
            confidence: Some(1.01),
            policy: None,
        };
        assert_eq!(
            bad.validate(),
            Err(EpisodeError::OutOfRange {
                field: "confidence",
                value: 1.01
            })
        );
        let nan_time = Episode {
            at: f64::NAN,
            confidence: None,
            ..bad.clone()
        };
        assert!(matches!(
            nan_time.validate(),
            Err(EpisodeError::InvalidTime(_))
        ));
        assert!(parse(r#"{"at":1,"label":"surprise","intensity":0.9,"salience":1}"#).is_err());
        assert!(parse(r#"{"at":1,"label":"joy","intensity":0.9,"salience":1,"x":1}"#).is_err());
        assert!(parse(r#"{"at":1,"label":"joy","intensity":-0.1,"salience":1}"#).is_err());
        assert!(parse(
            r#"{"at":1,"label":"joy","intensity":0.1,"salience":1,"policy":{"cooperation":2,"refusal_bias":0,"refusal_allowed":false}}"#
        )
        .is_err());
    }
}
