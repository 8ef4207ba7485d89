//! `autonomy:`: when the persona deliberates, which conversation its messages belong to,
//! its prompts, the command-line agent `agent_delegate` runs, and which conversations are
//! also pushed to LINE, Slack or Telegram (`autonomy.push`).

use std::path::PathBuf;

use serde::Deserialize;

use super::{ConfigError, Secrets};

/// `autonomy:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AutonomySettings {
    /// Seconds between scheduled deliberations; 0 = never on a schedule (on demand only).
    pub interval_secs: u64,
    /// The conversation (session id) the persona's autonomy messages belong to: they are
    /// stored there and the next reply in it sees them.
    pub session_id: String,
    /// The deliberation prompt (relative to the repository root).
    pub deliberation_prompt_file: PathBuf,
    /// The message prompt (relative to the repository root).
    pub message_prompt_file: PathBuf,
    /// Most tokens of one autonomy message: the model stops there.
    pub message_max_tokens: u32,
    /// How many recent events of the conversation the deliberation input holds.
    pub recent_events: usize,
    /// How many open tasks and goals the deliberation input holds at most.
    pub max_focus_items: usize,
    /// The command-line agent of `agent_delegate`; none = that capability fails.
    pub cli_agent: Option<CliAgentSettings>,
    /// Conversations bound to LINE, Slack and/or Telegram: their `chat`/`notify` messages
    /// are pushed there too, once each.
    pub push: Vec<PushBinding>,
    /// Most autonomy messages said in its conversation in one local day of its person (the
    /// console's user); past it, scheduled deliberations are skipped without a model call
    /// until the next day. 0 = no cap. A tick someone asks for is never skipped.
    pub max_messages_per_day: u32,
}

impl Default for AutonomySettings {
    fn default() -> Self {
        Self {
            interval_secs: 1800,
            session_id: "console".into(),
            deliberation_prompt_file: PathBuf::from("prompts/autonomy_deliberation.md"),
            message_prompt_file: PathBuf::from("prompts/autonomy_message.md"),
            message_max_tokens: 320,
            recent_events: 12,
            max_focus_items: 8,
            cli_agent: None,
            push: Vec::new(),
            max_messages_per_day: 6,
        }
    }
}

/// `autonomy.push[]`: one conversation bound to a LINE chat, a Slack channel, a Telegram chat,
/// or several.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushBinding {
    /// The conversation (an autonomy `session_id`).
    pub session_id: String,
    /// Pushed to this LINE user, group or room.
    #[serde(default)]
    pub line: Option<LinePushTarget>,
    /// Posted in this Slack channel (and thread).
    #[serde(default)]
    pub slack: Option<SlackPushTarget>,
    /// Sent to this Telegram chat (and forum topic).
    #[serde(default)]
    pub telegram: Option<TelegramPushTarget>,
}

/// `autonomy.push[].line`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinePushTarget {
    /// User, group or room id (the push API's `to`).
    pub to: String,
}

/// `autonomy.push[].slack`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlackPushTarget {
    /// Channel id.
    pub channel: String,
    /// Post in this thread instead of the channel itself.
    #[serde(default)]
    pub thread_ts: Option<String>,
}

/// `autonomy.push[].telegram`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelegramPushTarget {
    /// The chat's id (`sendMessage`'s `chat_id`).
    pub chat_id: i64,
    /// Send in this forum topic instead of the chat's general one.
    #[serde(default)]
    pub message_thread_id: Option<i64>,
}

/// `autonomy.cli_agent`: a program run with arguments in a directory, the task on stdin.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CliAgentSettings {
    /// The program (a path, or a name found on `PATH`).
    pub program: String,
    /// Its arguments; `{task}` in an argument is replaced by the task.
    #[serde(default)]
    pub args: Vec<String>,
    /// Where it runs (default: the current directory).
    #[serde(default)]
    pub working_dir: Option<PathBuf>,
    /// It is killed after this many seconds.
    #[serde(default = "default_agent_timeout")]
    pub timeout_secs: u64,
    /// Stdout kept (bytes); the rest is read and dropped.
    #[serde(default = "default_agent_output")]
    pub max_output_bytes: usize,
}

fn default_agent_timeout() -> u64 {
    600
}

fn default_agent_output() -> usize {
    256 * 1024
}

impl AutonomySettings {
    /// The binding of conversation `session_id`, if it has one.
    pub fn push_binding(&self, session_id: &str) -> Option<&PushBinding> {
        self.push.iter().find(|b| b.session_id == session_id)
    }

    /// Each bound platform needs its token: a binding that could never push is a start-up
    /// error, not a failure at the first message.
    pub fn validate_push_secrets(&self, secrets: &Secrets) -> Result<(), ConfigError> {
        for (i, b) in self.push.iter().enumerate() {
            if b.line.is_some() && secrets.line_channel_access_token.is_none() {
                return Err(ConfigError::invalid(
                    format!("autonomy.push[{i}].line"),
                    "GHOST_LINE_CHANNEL_ACCESS_TOKEN is not set",
                ));
            }
            if b.slack.is_some() && secrets.slack_bot_token.is_none() {
                return Err(ConfigError::invalid(
                    format!("autonomy.push[{i}].slack"),
                    "GHOST_SLACK_BOT_TOKEN is not set",
                ));
            }
            if b.telegram.is_some() && secrets.telegram_bot_token.is_none() {
                return Err(ConfigError::invalid(
                    format!("autonomy.push[{i}].telegram"),
                    "GHOST_TELEGRAM_BOT_TOKEN is not set",
                ));
            }
        }
        Ok(())
    }

    fn validate_push(&self) -> Result<(), ConfigError> {
        let blank = |v: &str| v.trim().is_empty();
        for (i, b) in self.push.iter().enumerate() {
            let key = |k: &str| format!("autonomy.push[{i}].{k}");
            if blank(&b.session_id) {
                return Err(ConfigError::invalid(key("session_id"), "must not be empty"));
            }
            if self.push[..i].iter().any(|o| o.session_id == b.session_id) {
                return Err(ConfigError::invalid(
                    key("session_id"),
                    format!("{} is bound twice", b.session_id),
                ));
            }
            if b.line.is_none() && b.slack.is_none() && b.telegram.is_none() {
                return Err(ConfigError::invalid(
                    format!("autonomy.push[{i}]"),
                    "binds no platform (give line, slack, telegram or several)",
                ));
            }
            if b.line.as_ref().is_some_and(|l| blank(&l.to)) {
                return Err(ConfigError::invalid(key("line.to"), "must not be empty"));
            }
            if let Some(s) = &b.slack {
                if blank(&s.channel) {
                    return Err(ConfigError::invalid(
                        key("slack.channel"),
                        "must not be empty",
                    ));
                }
                if s.thread_ts.as_deref().is_some_and(blank) {
                    return Err(ConfigError::invalid(
                        key("slack.thread_ts"),
                        "must not be empty (leave it out to post in the channel)",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Range checks serde cannot express.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_push()?;
        super::settings::at_least_tokens("autonomy.message_max_tokens", self.message_max_tokens)?;
        if self.session_id.trim().is_empty() {
            return Err(ConfigError::invalid(
                "autonomy.session_id",
                "must not be empty",
            ));
        }
        if !(1..=200).contains(&self.recent_events) {
            return Err(ConfigError::invalid(
                "autonomy.recent_events",
                "must be between 1 and 200",
            ));
        }
        if !(1..=100).contains(&self.max_focus_items) {
            return Err(ConfigError::invalid(
                "autonomy.max_focus_items",
                "must be between 1 and 100",
            ));
        }
        if let Some(agent) = &self.cli_agent {
            if agent.program.trim().is_empty() {
                return Err(ConfigError::invalid(
                    "autonomy.cli_agent.program",
                    "must not be empty",
                ));
            }
            if agent.timeout_secs == 0 {
                return Err(ConfigError::invalid(
                    "autonomy.cli_agent.timeout_secs",
                    "must be greater than 0",
                ));
            }
            if agent.max_output_bytes == 0 {
                return Err(ConfigError::invalid(
                    "autonomy.cli_agent.max_output_bytes",
                    "must be greater than 0",
                ));
            }
        }
        Ok(())
    }
}
