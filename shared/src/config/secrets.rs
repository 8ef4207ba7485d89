//! Secrets: from the environment only, never printed.

use std::fmt;

/// A secret string whose `Debug`/`Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Every secret Ghost knows, each from its environment variable.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    /// `GHOST_API_TOKEN`: bearer token for `/api/*`.
    pub api_token: Option<Secret>,
    /// `GHOST_LINE_CHANNEL_SECRET`.
    pub line_channel_secret: Option<Secret>,
    /// `GHOST_LINE_CHANNEL_ACCESS_TOKEN`.
    pub line_channel_access_token: Option<Secret>,
    /// `GHOST_SLACK_SIGNING_SECRET`.
    pub slack_signing_secret: Option<Secret>,
    /// `GHOST_SLACK_BOT_TOKEN`.
    pub slack_bot_token: Option<Secret>,
    /// `GHOST_CLOUD_API_KEY`: the cloud coder's API key.
    pub cloud_api_key: Option<Secret>,
    /// `GHOST_TELEGRAM_BOT_TOKEN`: the Bot API token (it is part of every Bot API URL).
    pub telegram_bot_token: Option<Secret>,
    /// `GHOST_TELEGRAM_SECRET_TOKEN`: `setWebhook`'s `secret_token`, which Telegram sends
    /// back in `X-Telegram-Bot-Api-Secret-Token`.
    pub telegram_secret_token: Option<Secret>,
}

/// The environment variables that hold secrets.
pub const SECRET_ENV: [&str; 8] = [
    "GHOST_API_TOKEN",
    "GHOST_LINE_CHANNEL_SECRET",
    "GHOST_LINE_CHANNEL_ACCESS_TOKEN",
    "GHOST_SLACK_SIGNING_SECRET",
    "GHOST_SLACK_BOT_TOKEN",
    "GHOST_CLOUD_API_KEY",
    "GHOST_TELEGRAM_BOT_TOKEN",
    "GHOST_TELEGRAM_SECRET_TOKEN",
];

impl Secrets {
    /// Picks the secrets out of `vars`; empty values count as absent.
    pub fn from_vars(vars: &[(String, String)]) -> Self {
        let get = |name: &str| {
            vars.iter()
                .rev()
                .find(|(k, v)| k == name && !v.is_empty())
                .map(|(_, v)| Secret::new(v.clone()))
        };
        Self {
            api_token: get(SECRET_ENV[0]),
            line_channel_secret: get(SECRET_ENV[1]),
            line_channel_access_token: get(SECRET_ENV[2]),
            slack_signing_secret: get(SECRET_ENV[3]),
            slack_bot_token: get(SECRET_ENV[4]),
            cloud_api_key: get(SECRET_ENV[5]),
            telegram_bot_token: get(SECRET_ENV[6]),
            telegram_secret_token: get(SECRET_ENV[7]),
        }
    }
}
