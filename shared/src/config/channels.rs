//! `line:`, `slack:`, `telegram:` and `media:`: platform endpoints, limits and the media store
//! of the chat channels. Secrets (channel secret, tokens) are not here: they come from the
//! environment.

use serde::Deserialize;

use super::ConfigError;

/// `line:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LineSettings {
    /// Messaging API base URL (reply, push).
    pub api_base: String,
    /// Content API base URL (image bytes).
    pub data_api_base: String,
    /// In groups and rooms answer only when the bot is mentioned.
    pub group_requires_mention: bool,
    /// A reply token older than this is not used (LINE honours it for about a minute).
    pub reply_token_max_age_secs: u64,
    /// Longest text message, in UTF-16 units (LINE allows 5000).
    pub max_chars_per_message: usize,
    /// Messages per API call (LINE allows 5).
    pub max_messages_per_call: usize,
    /// First retry delay after a 429/5xx; doubles each time.
    pub retry_base_delay_ms: u64,
    /// Upper bound of the backoff.
    pub retry_max_delay_ms: u64,
    /// Calls per batch, the first included.
    pub max_attempts: u32,
    /// A longer `Retry-After` than this makes delivery give up.
    pub max_retry_after_secs: u64,
    /// Per-request timeout for LINE API calls.
    pub request_timeout_secs: u64,
    /// Sent when the persona could not answer; empty sends nothing.
    pub failure_reply: String,
}

impl Default for LineSettings {
    fn default() -> Self {
        Self {
            api_base: "https://api.line.me".into(),
            data_api_base: "https://api-data.line.me".into(),
            group_requires_mention: true,
            reply_token_max_age_secs: 50,
            max_chars_per_message: 5000,
            max_messages_per_call: 5,
            retry_base_delay_ms: 1000,
            retry_max_delay_ms: 30_000,
            max_attempts: 5,
            max_retry_after_secs: 300,
            request_timeout_secs: 10,
            failure_reply: "ごめんなさい、いまはうまく返事ができませんでした。".into(),
        }
    }
}

/// `slack:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlackSettings {
    /// Web API base URL (`{api_base}/api/chat.postMessage`).
    pub api_base: String,
    /// Our bot's user id (from `auth.test`): to ignore our own messages and spot mentions.
    pub bot_user_id: Option<String>,
    /// Accepted distance between `X-Slack-Request-Timestamp` and now.
    pub signature_window_secs: i64,
    /// `chat.postMessage` calls per reply, the first included.
    pub max_attempts: u32,
    /// Wait after a 429 without `Retry-After`.
    pub retry_default_delay_ms: u64,
    /// A longer `Retry-After` than this makes delivery give up.
    pub max_retry_after_secs: u64,
    /// Per-request timeout.
    pub request_timeout_secs: u64,
    /// Sent when the persona could not answer; empty sends nothing.
    pub failure_reply: String,
    /// Where shared files are downloaded from: a file URL must start with this, or the bot
    /// token is never sent to it (the image is then left out).
    pub files_base: String,
}

impl Default for SlackSettings {
    fn default() -> Self {
        Self {
            files_base: "https://files.slack.com/".into(),
            api_base: "https://slack.com".into(),
            bot_user_id: None,
            signature_window_secs: 300,
            max_attempts: 4,
            retry_default_delay_ms: 1000,
            max_retry_after_secs: 120,
            request_timeout_secs: 10,
            failure_reply: "Sorry, I could not answer that just now.".into(),
        }
    }
}

/// `telegram:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelegramSettings {
    /// Bot API base URL (`{api_base}/bot<token>/sendMessage`, files under
    /// `{api_base}/file/bot<token>/`): the bot token is only ever sent here.
    pub api_base: String,
    /// Our bot's username (without `@`): `/command@<it>` and `@<it>` mentions are removed
    /// from the text, so `/local@bot` in a group is `/local`. None: nothing is removed.
    pub bot_username: Option<String>,
    /// Longest text message, in UTF-16 units (Telegram allows 4096).
    pub max_chars_per_message: usize,
    /// `sendMessage` calls per message part, the first included.
    pub max_attempts: u32,
    /// Wait after a 429 that names no `retry_after`.
    pub retry_default_delay_ms: u64,
    /// A longer `retry_after` than this makes delivery give up.
    pub max_retry_after_secs: u64,
    /// Per-request timeout of Bot API calls.
    pub request_timeout_secs: u64,
    /// Sent when the persona could not answer; empty sends nothing.
    pub failure_reply: String,
}

impl Default for TelegramSettings {
    fn default() -> Self {
        Self {
            api_base: "https://api.telegram.org".into(),
            bot_username: None,
            max_chars_per_message: 4096,
            max_attempts: 4,
            retry_default_delay_ms: 1000,
            max_retry_after_secs: 120,
            request_timeout_secs: 10,
            failure_reply: "Sorry, I could not answer that just now.".into(),
        }
    }
}

impl TelegramSettings {
    /// Range checks.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        http_url("telegram.api_base", &self.api_base)?;
        if !(1..=4096).contains(&self.max_chars_per_message) {
            return Err(ConfigError::invalid(
                "telegram.max_chars_per_message",
                "must be between 1 and 4096",
            ));
        }
        positive("telegram.max_attempts", self.max_attempts.into())?;
        positive("telegram.request_timeout_secs", self.request_timeout_secs)
    }
}

/// `media:`: images users send, kept in the database (the `media` table).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MediaSettings {
    /// Media are kept at least this long after download (seed 002: not deleted at once).
    pub retention_secs: u64,
    /// How often the gateway's sweeper removes expired media.
    pub sweep_interval_secs: u64,
    /// Largest image downloaded: the download stops as soon as it grows past this.
    pub max_image_bytes: u64,
}

impl Default for MediaSettings {
    fn default() -> Self {
        Self {
            retention_secs: 3600,
            sweep_interval_secs: 60,
            max_image_bytes: 10 * 1024 * 1024,
        }
    }
}

fn positive(key: &str, value: u64) -> Result<(), ConfigError> {
    if value == 0 {
        return Err(ConfigError::invalid(key, "must be greater than 0"));
    }
    Ok(())
}

fn http_url(key: &str, value: &str) -> Result<(), ConfigError> {
    if !(value.starts_with("http://") || value.starts_with("https://")) {
        return Err(ConfigError::invalid(
            key,
            "must be a URL starting with http:// or https://",
        ));
    }
    Ok(())
}

/// Range checks of the three sections.
pub(super) fn validate(
    line: &LineSettings,
    slack: &SlackSettings,
    media: &MediaSettings,
) -> Result<(), ConfigError> {
    http_url("line.api_base", &line.api_base)?;
    http_url("line.data_api_base", &line.data_api_base)?;
    positive(
        "line.reply_token_max_age_secs",
        line.reply_token_max_age_secs,
    )?;
    if !(1..=5000).contains(&line.max_chars_per_message) {
        return Err(ConfigError::invalid(
            "line.max_chars_per_message",
            "must be between 1 and 5000",
        ));
    }
    if !(1..=5).contains(&line.max_messages_per_call) {
        return Err(ConfigError::invalid(
            "line.max_messages_per_call",
            "must be between 1 and 5",
        ));
    }
    positive("line.max_attempts", line.max_attempts.into())?;
    positive("line.request_timeout_secs", line.request_timeout_secs)?;
    http_url("slack.api_base", &slack.api_base)?;
    if slack.signature_window_secs <= 0 {
        return Err(ConfigError::invalid(
            "slack.signature_window_secs",
            "must be greater than 0",
        ));
    }
    positive("slack.max_attempts", slack.max_attempts.into())?;
    positive("slack.request_timeout_secs", slack.request_timeout_secs)?;
    positive("media.retention_secs", media.retention_secs)?;
    positive("media.sweep_interval_secs", media.sweep_interval_secs)?;
    positive("media.max_image_bytes", media.max_image_bytes)?;
    Ok(())
}
