//! `autonomy:`: when the persona deliberates, which conversation its messages belong to,
//! its prompts, and the command-line agent `agent_delegate` runs.

use std::path::PathBuf;

use serde::Deserialize;

use super::ConfigError;

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
    /// How many recent events of the conversation the deliberation input holds.
    pub recent_events: usize,
    /// How many open tasks and goals the deliberation input holds at most.
    pub max_focus_items: usize,
    /// The command-line agent of `agent_delegate`; none = that capability fails.
    pub cli_agent: Option<CliAgentSettings>,
}

impl Default for AutonomySettings {
    fn default() -> Self {
        Self {
            interval_secs: 1800,
            session_id: "console".into(),
            deliberation_prompt_file: PathBuf::from("prompts/autonomy_deliberation.md"),
            message_prompt_file: PathBuf::from("prompts/autonomy_message.md"),
            recent_events: 12,
            max_focus_items: 8,
            cli_agent: None,
        }
    }
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
    /// Range checks serde cannot express.
    pub fn validate(&self) -> Result<(), ConfigError> {
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
