//! `memory:` — the write plan and recall (seed 001, issue 12).

use serde::Deserialize;

use super::ConfigError;

/// The most candidates a selection is offered: a small model reads them all before the
/// reply's first token, and a dozen well-ranked ones hold what recall finds.
pub const MAX_CANDIDATES: usize = 12;

/// `memory:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemorySettings {
    /// Decay time constant of interest weights, in seconds (3 days).
    pub interest_tau_secs: f64,
    /// How many recent events of the conversation the write plan's input carries.
    pub plan_recent_events: usize,
    /// How many current states and preferences the write plan's input carries at most.
    pub plan_memory_items: usize,
    /// The write plan's prompt (relative to the repository root).
    pub plan_prompt_file: std::path::PathBuf,
    /// Candidates that reach the selection per message, fused from every source (at most
    /// [`MAX_CANDIDATES`]).
    pub recall_max_candidates: usize,
    /// Memories the selection may keep per message.
    pub recall_max_selected: usize,
    /// Whether the persona recalls before it replies.
    pub recall_enabled: bool,
    /// Bound on each candidate source, in milliseconds (a slower source is skipped).
    pub recall_source_timeout_ms: u64,
    /// Bound on the selection model call, in milliseconds (then no memories this turn).
    pub recall_selection_timeout_ms: u64,
    /// Lowest trigram similarity a candidate needs (pg_trgm, 0..=1).
    pub recall_similarity_threshold: f64,
    /// The selection's prompt (relative to the repository root).
    pub recall_prompt_file: std::path::PathBuf,
    /// Days the raw text of a conversation line is kept, per channel (`http`, `line`,
    /// `slack`, `telegram`; seed 002: history is not kept in full text, to limit what can
    /// leak). Older lines are redacted as forgetting a person redacts them; summaries,
    /// states and preferences stay. A channel not listed keeps its lines.
    pub raw_text_retention_days: std::collections::BTreeMap<String, u32>,
    /// How often the write-plan service looks for lines past their retention, in seconds.
    pub retention_check_secs: u64,
}

/// Days a line's raw text is kept by default, on every channel.
pub const DEFAULT_RETENTION_DAYS: u32 = 90;

/// The channels a retention can name.
pub const RETENTION_CHANNELS: [&str; 4] = ["http", "line", "slack", "telegram"];

impl Default for MemorySettings {
    fn default() -> Self {
        Self {
            interest_tau_secs: crate::memory::interest::DEFAULT_TAU_SECS,
            plan_recent_events: 12,
            plan_memory_items: 40,
            plan_prompt_file: "prompts/write_plan.md".into(),
            recall_max_candidates: 12,
            recall_max_selected: 5,
            recall_enabled: true,
            recall_source_timeout_ms: 250,
            recall_selection_timeout_ms: 12_000,
            recall_similarity_threshold: 0.1,
            recall_prompt_file: "prompts/recall_selection.md".into(),
            raw_text_retention_days: RETENTION_CHANNELS
                .iter()
                .map(|c| ((*c).to_owned(), DEFAULT_RETENTION_DAYS))
                .collect(),
            retention_check_secs: 3600,
        }
    }
}

impl MemorySettings {
    /// Range checks naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.interest_tau_secs.is_finite() && self.interest_tau_secs > 0.0) {
            return Err(ConfigError::invalid(
                "memory.interest_tau_secs",
                "must be a positive number of seconds",
            ));
        }
        if self.plan_recent_events == 0 {
            return Err(ConfigError::invalid(
                "memory.plan_recent_events",
                "must be greater than 0",
            ));
        }
        if !(0.0..=1.0).contains(&self.recall_similarity_threshold) {
            return Err(ConfigError::invalid(
                "memory.recall_similarity_threshold",
                "must be within 0..=1",
            ));
        }
        if self.recall_source_timeout_ms == 0 || self.recall_selection_timeout_ms == 0 {
            return Err(ConfigError::invalid(
                "memory.recall_source_timeout_ms",
                "recall timeouts must be greater than 0",
            ));
        }
        if !(1..=MAX_CANDIDATES).contains(&self.recall_max_candidates) {
            return Err(ConfigError::invalid(
                "memory.recall_max_candidates",
                format!("must be between 1 and {MAX_CANDIDATES}"),
            ));
        }
        if let Some(c) = self
            .raw_text_retention_days
            .keys()
            .find(|c| !RETENTION_CHANNELS.contains(&c.as_str()))
        {
            return Err(ConfigError::invalid(
                "memory.raw_text_retention_days",
                format!("{c:?} is not a channel ({})", RETENTION_CHANNELS.join(", ")),
            ));
        }
        if self.retention_check_secs == 0 {
            return Err(ConfigError::invalid(
                "memory.retention_check_secs",
                "must be greater than 0",
            ));
        }
        if self.recall_max_selected == 0 || self.recall_max_selected > self.recall_max_candidates {
            return Err(ConfigError::invalid(
                "memory.recall_max_selected",
                "must be between 1 and memory.recall_max_candidates",
            ));
        }
        Ok(())
    }

    /// The recall limits.
    pub fn recall_limits(&self) -> crate::memory::retrieval::RetrievalLimits {
        crate::memory::retrieval::RetrievalLimits {
            max_candidates: self.recall_max_candidates,
            max_selected: self.recall_max_selected,
        }
    }
}
