//! The response-policy knobs (`cooperation`, `refusal_bias`, `refusal_allowed`), shared by the
//! trailer (`partner_response_policy`) and the mood state (`response_policy`).

use serde::{Deserialize, Serialize};

/// Behaviour knobs: how much to lean towards cooperating or refusing, and whether refusing is
/// allowed at all (a gate rather than a degree, so it stays stable).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponsePolicy {
    /// Lean towards cooperating, 0..1.
    pub cooperation: f64,
    /// Lean towards refusing or grumbling, 0..1.
    pub refusal_bias: f64,
    /// Whether refusing is allowed at all.
    pub refusal_allowed: bool,
}

impl Default for ResponsePolicy {
    /// The calm policy: fully cooperative, no refusal.
    fn default() -> Self {
        ResponsePolicy {
            cooperation: 1.0,
            refusal_bias: 0.0,
            refusal_allowed: false,
        }
    }
}

/// A policy knob outside 0..1 (or not a finite number).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("response policy field `{field}` = {value} is outside 0..1")]
pub struct PolicyError {
    /// `cooperation` or `refusal_bias`.
    pub field: &'static str,
    /// The offending value.
    pub value: f64,
}

impl ResponsePolicy {
    /// Checks that both numeric knobs are finite and within 0..1.
    pub fn validate(&self) -> Result<(), PolicyError> {
        for (field, value) in [
            ("cooperation", self.cooperation),
            ("refusal_bias", self.refusal_bias),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(PolicyError { field, value });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_names_the_offending_field() {
        let p = ResponsePolicy {
            cooperation: 0.5,
            refusal_bias: 1.5,
            refusal_allowed: true,
        };
        assert_eq!(p.validate().unwrap_err().field, "refusal_bias");
        let nan = ResponsePolicy {
            cooperation: f64::NAN,
            ..p
        };
        assert_eq!(nan.validate().unwrap_err().field, "cooperation");
        assert!(ResponsePolicy::default().validate().is_ok());
    }
}
