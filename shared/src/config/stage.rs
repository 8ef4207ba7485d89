//! `stage:` — the multi-character stage (seeds 000 and 003): who is on it, how many turns one
//! user input may run, the nomination policy, the model timeout and post-processing.

use std::path::PathBuf;

use serde::Deserialize;

use super::settings::CharacterSettings;
use super::ConfigError;

/// `stage:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StageSettings {
    /// Internal ids of the characters on stage, in registry (round-robin) order; empty = every
    /// character of `characters.yaml` in file order.
    pub cast: Vec<String>,
    /// Character turns one user input may run (seed 003 `conversation.auto_loops`).
    pub auto_loops: u32,
    /// Bound on one character's model call, in seconds (seed 003: 60 s).
    pub model_timeout_secs: f64,
    /// Whether a character may nominate itself (seed 000 `allow_self_nomination`).
    pub allow_self_nomination: bool,
    /// `round_robin` or `random` (seed 000 `fallback`).
    pub fallback: String,
    /// Cutoff of the fuzzy name match, 0..=1 (seed 000 `fuzzy_threshold`).
    pub fuzzy_threshold: f64,
    /// Longest text shown per turn, in characters; longer replies are shortened (0 = no limit).
    pub max_chars: usize,
    /// Most tokens of one character's line: the model stops there.
    pub reply_max_tokens: u32,
    /// Greetings removed from the start of a reply (the seed's 挨拶除去), case-insensitive.
    pub greetings: Vec<String>,
    /// The shared rules every character gets (relative to the repository root).
    pub prompt_file: PathBuf,
    /// How many earlier lines of the stage each prompt includes.
    pub history_lines: usize,
    /// How many earlier runs' memories (what `persist_memory` saved) each prompt includes,
    /// newest last (0 = none).
    pub memory_runs: usize,
}

impl Default for StageSettings {
    fn default() -> Self {
        Self {
            cast: Vec::new(),
            auto_loops: 4,
            model_timeout_secs: 60.0,
            allow_self_nomination: false,
            fallback: "round_robin".into(),
            fuzzy_threshold: 0.85,
            max_chars: 200,
            reply_max_tokens: 160,
            greetings: [
                "こんにちは",
                "こんばんは",
                "おはようございます",
                "おはよう",
                "はじめまして",
                "やあ",
                "hello",
                "hi",
                "hey",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
            prompt_file: PathBuf::from("prompts/stage.md"),
            history_lines: 12,
            memory_runs: 3,
        }
    }
}

impl StageSettings {
    /// Range checks naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.auto_loops == 0 {
            return Err(ConfigError::invalid(
                "stage.auto_loops",
                "must be greater than 0",
            ));
        }
        if !(self.model_timeout_secs.is_finite() && self.model_timeout_secs > 0.0) {
            return Err(ConfigError::invalid(
                "stage.model_timeout_secs",
                "must be a positive number of seconds",
            ));
        }
        super::settings::at_least_tokens("stage.reply_max_tokens", self.reply_max_tokens)?;
        if !matches!(self.fallback.as_str(), "round_robin" | "random") {
            return Err(ConfigError::invalid(
                "stage.fallback",
                format!("must be round_robin or random, got {}", self.fallback),
            ));
        }
        if !(0.0..=1.0).contains(&self.fuzzy_threshold) {
            return Err(ConfigError::invalid(
                "stage.fuzzy_threshold",
                "must be within 0..=1",
            ));
        }
        Ok(())
    }

    /// Every cast member exists in `characters.yaml`, once.
    pub fn validate_cast(&self, characters: &CharacterSettings) -> Result<(), ConfigError> {
        let mut seen = std::collections::HashSet::new();
        for (i, id) in self.cast.iter().enumerate() {
            if characters.get(id).is_none() {
                return Err(ConfigError::invalid(
                    format!("stage.cast[{i}]"),
                    format!("no character named {id} in characters.yaml"),
                ));
            }
            if !seen.insert(id.as_str()) {
                return Err(ConfigError::invalid(
                    format!("stage.cast[{i}]"),
                    format!("{id} is listed twice"),
                ));
            }
        }
        Ok(())
    }

    /// The cast's ids in order (all characters when `cast` is empty).
    pub fn cast_ids<'a>(&'a self, characters: &'a CharacterSettings) -> Vec<&'a str> {
        if self.cast.is_empty() {
            characters
                .characters
                .iter()
                .map(|c| c.name.as_str())
                .collect()
        } else {
            self.cast.iter().map(String::as_str).collect()
        }
    }

    /// The model timeout as a duration.
    pub fn model_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(self.model_timeout_secs)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use std::path::PathBuf;

    const GHOST: &str =
        "llm:\n  persona:\n    provider: ollama\n    base_url: http://127.0.0.1:11434\n    model: m\n";
    const CHARACTERS: &str =
        "characters:\n  - {name: a, display_name: A, persona_text: p, second_person_label: you}\n  - {name: b, display_name: B, persona_text: q, second_person_label: you}\n";

    fn load(stage: &str, vars: &[(&str, &str)]) -> Result<Config, super::ConfigError> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect();
        Config::from_strings(
            &format!("{GHOST}persona:\n  character: a\n{stage}"),
            CHARACTERS,
            &vars,
            PathBuf::from("."),
        )
    }

    #[test]
    fn defaults_follow_the_seeds() {
        let c = load("", &[]).unwrap();
        let s = &c.ghost.stage;
        assert_eq!(s.model_timeout_secs, 60.0);
        assert_eq!(s.fallback, "round_robin");
        assert_eq!(s.fuzzy_threshold, 0.85);
        assert!(!s.allow_self_nomination);
        assert_eq!(s.cast_ids(&c.characters), vec!["a", "b"]);
    }

    #[test]
    fn bad_values_name_their_key() {
        let err = |stage: &str| load(stage, &[]).unwrap_err().to_string();
        assert!(err("stage:\n  auto_loops: 0\n").contains("stage.auto_loops"));
        assert!(err("stage:\n  fallback: coin\n").contains("stage.fallback"));
        assert!(err("stage:\n  fuzzy_threshold: 1.5\n").contains("stage.fuzzy_threshold"));
        assert!(err("stage:\n  model_timeout_secs: 0\n").contains("stage.model_timeout_secs"));
        assert!(err("stage:\n  cast: [a, zed]\n").contains("stage.cast[1]"));
        assert!(err("stage:\n  cast: [a, a]\n").contains("stage.cast[1]"));
        assert!(err("stage:\n  auto_loop: 3\n").contains("auto_loop"));
    }

    #[test]
    fn environment_overrides_apply() {
        let c = load(
            "",
            &[
                ("GHOST_STAGE__AUTO_LOOPS", "7"),
                ("GHOST_STAGE__MODEL_TIMEOUT_SECS", "0.5"),
                ("GHOST_STAGE__FALLBACK", "random"),
            ],
        )
        .unwrap();
        assert_eq!(c.ghost.stage.auto_loops, 7);
        assert_eq!(c.ghost.stage.model_timeout_secs, 0.5);
        assert_eq!(c.ghost.stage.fallback, "random");
    }
}
