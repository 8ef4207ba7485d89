//! The multi-character stage (seeds 000 and 003): a person's input, each character's turn,
//! who speaks next, how a run ends and what it leaves to memory.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::envelope::EventPayload;

// ---------------------------------------------------------------------------------------------
// The multi-character stage (seeds 000 and 003). Every event lives in the stream
// `stage-<stage_id>`; each step's id derives from the event that caused it, so a redelivered
// or restarted step appends nothing new.
// ---------------------------------------------------------------------------------------------

/// Stream name of one stage.
pub fn stage_stream(stage_id: &str) -> String {
    format!("stage-{stage_id}")
}

/// A person said something on the stage: starts a run of character turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageUserInput {
    /// The stage.
    pub stage_id: String,
    /// What they said.
    pub text: String,
}

impl EventPayload for StageUserInput {
    const EVENT_TYPE: &'static str = "StageUserInput";
}

/// A character is to speak (the state graph's `prepare_context` entry for one turn).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageTurnRequested {
    /// The stage.
    pub stage_id: String,
    /// The `StageUserInput` this run answers.
    pub input_id: Uuid,
    /// 0-based turn within the run (capped by `stage.auto_loops`).
    pub turn_index: u32,
    /// Internal id of the character to speak.
    pub speaker: String,
    /// Who has spoken in this run before this turn (seed 003 `spoken_set`), by internal id:
    /// the seed keys it by display name, which two characters may share (seed 000). Empty
    /// on requests stored before it existed.
    #[serde(default)]
    pub spoken_set: BTreeSet<String>,
}

impl EventPayload for StageTurnRequested {
    const EVENT_TYPE: &'static str = "StageTurnRequested";
}

/// A character spoke (after post-processing: `<think>`, tags and greetings removed, shortened).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageSpoke {
    /// The stage.
    pub stage_id: String,
    /// The run's `StageUserInput`.
    pub input_id: Uuid,
    /// 0-based turn within the run.
    pub turn_index: u32,
    /// Internal id of the speaker.
    pub speaker: String,
    /// The speaker's display name.
    pub display_name: String,
    /// What the watchers see.
    pub text: String,
    /// The model's reply as returned (kept for the nomination audit).
    pub raw_text: String,
}

impl EventPayload for StageSpoke {
    const EVENT_TYPE: &'static str = "StageSpoke";
}

/// A character's model call failed or timed out: nothing was said, the fallback path chose next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageTurnFailed {
    /// The stage.
    pub stage_id: String,
    /// The run's `StageUserInput`.
    pub input_id: Uuid,
    /// 0-based turn within the run.
    pub turn_index: u32,
    /// Who was to speak.
    pub speaker: String,
    /// Stable code (`llm_timeout`, `llm_http`, ...).
    pub code: String,
    /// Short explanation.
    pub message: String,
}

impl EventPayload for StageTurnFailed {
    const EVENT_TYPE: &'static str = "StageTurnFailed";
}

/// Why a next speaker was (or was not) chosen (seed 000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NextSpeakerReason {
    /// The tag named a registered character by id, display name, short name or synonym.
    Tag,
    /// The tag named a registered character only approximately (ratio ≥ threshold).
    Fuzzy,
    /// No usable tag: next in registry order after the current speaker.
    RoundRobin,
    /// No usable tag: a random other character.
    Random,
    /// Nobody else can speak; the autonomous loop ends.
    None,
}

impl NextSpeakerReason {
    /// The wire name (`tag`, `fuzzy`, `round_robin`, `random`, `none`).
    pub fn as_str(self) -> &'static str {
        match self {
            NextSpeakerReason::Tag => "tag",
            NextSpeakerReason::Fuzzy => "fuzzy",
            NextSpeakerReason::RoundRobin => "round_robin",
            NextSpeakerReason::Random => "random",
            NextSpeakerReason::None => "none",
        }
    }
}

impl std::fmt::Display for NextSpeakerReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a stage run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageEndReason {
    /// `stage.auto_loops` turns were taken.
    Cap,
    /// Nobody else can speak.
    None,
    /// A client asked the run to stop.
    Stopped,
    /// A turn was given up on.
    Error,
}

impl StageEndReason {
    /// The wire name (`cap`, `none`, `stopped`, `error`).
    pub fn as_str(self) -> &'static str {
        match self {
            StageEndReason::Cap => "cap",
            StageEndReason::None => "none",
            StageEndReason::Stopped => "stopped",
            StageEndReason::Error => "error",
        }
    }
}

impl std::fmt::Display for StageEndReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The next-speaker decision after a turn (seed 000's `Resolved`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NextSpeakerChosen {
    /// The stage.
    pub stage_id: String,
    /// The run's `StageUserInput`.
    pub input_id: Uuid,
    /// The turn just finished.
    pub turn_index: u32,
    /// Who just spoke (or failed to).
    pub current: String,
    /// Who is nominated; `None` when nobody else can speak.
    pub next_id: Option<String>,
    /// `tag`, `fuzzy`, `round_robin`, `random` or `none`.
    pub reason: NextSpeakerReason,
    /// The raw name inside the tag.
    pub extracted: String,
    /// The name after normalization.
    pub normalized: String,
}

impl EventPayload for NextSpeakerChosen {
    const EVENT_TYPE: &'static str = "NextSpeakerChosen";
}

/// The run is over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageEnded {
    /// The stage.
    pub stage_id: String,
    /// The run's `StageUserInput`.
    pub input_id: Uuid,
    /// Turns taken.
    pub turns: u32,
    /// `cap` (auto_loops reached), `none` (nobody to speak), `stopped` (a client asked) or
    /// `error` (a turn was given up on).
    pub reason: StageEndReason,
}

impl EventPayload for StageEnded {
    const EVENT_TYPE: &'static str = "StageEnded";
}

/// A client asked the running stage to stop after the current turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageStopRequested {
    /// The stage.
    pub stage_id: String,
}

impl EventPayload for StageStopRequested {
    const EVENT_TYPE: &'static str = "StageStopRequested";
}

/// The run's summary went into memory (seed 003 `persist_memory`). Ends the run's steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageMemorySaved {
    /// The stage.
    pub stage_id: String,
    /// The run's `StageUserInput`.
    pub input_id: Uuid,
    /// Who spoke, in order.
    pub speakers: Vec<String>,
    /// The summary text.
    pub summary: String,
}

impl EventPayload for StageMemorySaved {
    const EVENT_TYPE: &'static str = "StageMemorySaved";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_request_stored_before_the_spoken_set_still_decodes() {
        let old = r#"{"stage_id":"s","input_id":"00000000-0000-0000-0000-000000000000","turn_index":2,"speaker":"NOX"}"#;
        let req: Result<StageTurnRequested, _> = serde_json::from_str(old);
        assert!(req.is_ok_and(|r| r.spoken_set.is_empty()));
    }

    #[test]
    fn stage_reasons_serialise_as_the_old_strings() {
        let reasons = [
            NextSpeakerReason::Tag,
            NextSpeakerReason::Fuzzy,
            NextSpeakerReason::RoundRobin,
            NextSpeakerReason::Random,
            NextSpeakerReason::None,
        ];
        for r in reasons {
            let json = serde_json::to_string(&r).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", r.as_str()));
        }
        let ends = [
            StageEndReason::Cap,
            StageEndReason::None,
            StageEndReason::Stopped,
            StageEndReason::Error,
        ];
        for r in ends {
            let json = serde_json::to_string(&r).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", r.as_str()));
        }
    }
}
