//! `coder:`: the ceiling on the cloud coder's spend.

use serde::Deserialize;

use super::ConfigError;

/// The smallest cap accepted: one cloud call often uses more, so a smaller one is a slip
/// (thousands or dollars meant), not a budget.
pub const MIN_DAILY_TOKEN_CAP: u64 = 1000;

/// `coder:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CoderSettings {
    /// Cloud tokens (prompt plus completion) the coder may use per UTC day; once they are
    /// used, CODE turns get a short notice and nothing is sent to the cloud until the next
    /// day. `null` or 0 = no cap.
    pub daily_token_cap: Option<u64>,
}

impl Default for CoderSettings {
    fn default() -> Self {
        Self {
            daily_token_cap: Some(1_000_000),
        }
    }
}

impl CoderSettings {
    /// The cap in force (`None`: no cap).
    pub fn cap(&self) -> Option<u64> {
        self.daily_token_cap.filter(|cap| *cap > 0)
    }

    /// A cap, when set, is at least [`MIN_DAILY_TOKEN_CAP`].
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self.cap() {
            Some(cap) if cap < MIN_DAILY_TOKEN_CAP => Err(ConfigError::invalid(
                "coder.daily_token_cap",
                format!(
                    "must be null or 0 (no cap), or at least {MIN_DAILY_TOKEN_CAP} tokens (one cloud call often uses more)"
                ),
            )),
            _ => Ok(()),
        }
    }
}
