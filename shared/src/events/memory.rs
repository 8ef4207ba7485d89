//! Memory and affect (seeds 001, 004): what a write plan changed, rejected plans and model
//! answers, recall, and the reflections that fill in a reply's affect. On the persona's
//! stream.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::envelope::EventPayload;

/// The worker reflected on a reply that came without a usable affect trailer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AffectReflected {
    /// The persona (character id) whose reaction this is.
    pub persona: String,
    /// The reply (episode) reflected on.
    pub episode_event_id: Uuid,
    /// When the episode happened (Unix seconds): the reply's time, not the reflection's.
    pub at: f64,
    /// The reaction.
    pub affect: crate::affect::Affect,
}

impl EventPayload for AffectReflected {
    const EVENT_TYPE: &'static str = "AffectReflected";
}

/// Stream name of one persona's own life (mood, interest, autonomy).
pub fn persona_stream(persona: &str) -> String {
    format!("persona-{persona}")
}

// ---------------------------------------------------------------------------------------
// Memory (seed 001): what a write plan changed, on the persona's stream. Each carries the
// values it sets, so the projections only store them (a rebuild gives the same rows).
// ---------------------------------------------------------------------------------------

/// A write plan created a state or added a revision to one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateUpserted {
    /// The persona (character id) whose memory this is.
    pub persona: String,
    /// The utterance whose plan made the change.
    pub source_event_id: Uuid,
    /// The state's new revision.
    pub state: crate::memory::MemoryState,
}

impl EventPayload for StateUpserted {
    const EVENT_TYPE: &'static str = "StateUpserted";
}

/// A write plan closed a state or marked a task done (a new revision with that status).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateClosed {
    /// The persona.
    pub persona: String,
    /// The utterance whose plan made the change.
    pub source_event_id: Uuid,
    /// The state's new revision (`closed` or `done`).
    pub state: crate::memory::MemoryState,
}

impl EventPayload for StateClosed {
    const EVENT_TYPE: &'static str = "StateClosed";
}

/// A write plan set a preference's status (candidate, confirmed, revoked).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreferenceUpdated {
    /// The persona.
    pub persona: String,
    /// The utterance whose plan made the change.
    pub source_event_id: Uuid,
    /// The preference as it now stands.
    pub preference: crate::memory::Preference,
    /// Its subject's key (NFKC, trimmed, case-folded).
    pub subject_key: String,
    /// The events it rests on.
    pub evidence_event_ids: Vec<Uuid>,
    /// Why.
    pub reason: String,
}

impl EventPayload for PreferenceUpdated {
    const EVENT_TYPE: &'static str = "PreferenceUpdated";
}

/// A write plan annotated an utterance (about-time, entities, affect, context). One per
/// applied plan: it also marks the utterance's plan as applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventAnnotated {
    /// The persona.
    pub persona: String,
    /// The utterance annotated.
    pub source_event_id: Uuid,
    /// About-time, life stage, entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_annotations: Option<crate::memory::EventAnnotations>,
    /// The persona's momentary affect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_affect: Option<crate::memory::EventAffect>,
    /// Threads and links.
    #[serde(default)]
    pub context_updates: crate::memory::ContextUpdates,
}

impl EventPayload for EventAnnotated {
    const EVENT_TYPE: &'static str = "EventAnnotated";
}

/// The persona's interest state after a write plan (the whole value; the last one wins).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterestStateUpdated {
    /// The persona.
    pub persona: String,
    /// The event that changed it.
    pub source_event_id: Uuid,
    /// The interest state after the merge.
    pub interest: crate::memory::InterestState,
}

impl EventPayload for InterestStateUpdated {
    const EVENT_TYPE: &'static str = "InterestStateUpdated";
}

/// A write plan was rejected whole: nothing of it was applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WritePlanRejected {
    /// The persona.
    pub persona: String,
    /// The utterance the plan was for.
    pub source_event_id: Uuid,
    /// Every rule it broke (or why it does not parse).
    pub errors: Vec<String>,
    /// The model's answer, masked and cut ([`ModelAnswerRejected::excerpt`]); empty in
    /// events stored before it was kept.
    #[serde(default)]
    pub raw: String,
}

impl EventPayload for WritePlanRejected {
    const EVENT_TYPE: &'static str = "WritePlanRejected";
}

/// A model's answer broke its contract and nothing came of that step (seed 002's rule for
/// every structured call: a permanent failure, recorded once, never redelivered). Used by
/// steps without an outcome event of their own (reflection, deliberation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelAnswerRejected {
    /// The contract (`reflection`, `action_decision`, ...).
    pub contract: String,
    /// The event the step handled.
    pub source_event_id: Uuid,
    /// Why, for each attempt (at most two: the call is retried once).
    pub reasons: Vec<String>,
    /// The last answer, masked and cut (see [`ModelAnswerRejected::excerpt`]).
    pub raw: String,
}

impl ModelAnswerRejected {
    /// Longest excerpt of a rejected answer kept, in characters.
    pub const MAX_RAW_CHARS: usize = 400;

    /// `raw` masked (secrets, personal data) and cut to [`Self::MAX_RAW_CHARS`].
    pub fn excerpt(raw: &str) -> String {
        let masked = crate::masking::mask_secrets(raw);
        let mut cut: String = masked.chars().take(Self::MAX_RAW_CHARS).collect();
        if masked.chars().count() > Self::MAX_RAW_CHARS {
            cut.push('…');
        }
        cut
    }
}

impl EventPayload for ModelAnswerRejected {
    const EVENT_TYPE: &'static str = "ModelAnswerRejected";
}

/// The persona recalled before a reply (seed 001 B-1/B-2): what it looked for, what each
/// source found, what it selected and how long each step took. On the persona's stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecallPerformed {
    /// The persona.
    pub persona: String,
    /// The conversation.
    pub session_id: String,
    /// The user message answered.
    pub user_event_id: Uuid,
    /// The reply this recall is for (its id is derived before it is written).
    pub reply_event_id: Uuid,
    /// The RetrievalPlan, as JSON.
    pub plan: serde_json::Value,
    /// Candidates per source.
    pub candidate_counts: std::collections::BTreeMap<String, usize>,
    /// Sources skipped (timed out or failed), with why.
    #[serde(default)]
    pub skipped_sources: std::collections::BTreeMap<String, String>,
    /// The candidates offered to the selection, best first (ids).
    #[serde(default)]
    pub candidate_ids: Vec<String>,
    /// The memories selected (ids), in the selection's order.
    pub selected_ids: Vec<String>,
    /// The selected memories' texts, as the reply prompt got them.
    #[serde(default)]
    pub selected_texts: Vec<String>,
    /// Why the selection gave nothing usable, when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection_error: Option<String>,
    /// Milliseconds per source, `collection` and `selection`.
    pub timings_ms: std::collections::BTreeMap<String, f64>,
}

impl EventPayload for RecallPerformed {
    const EVENT_TYPE: &'static str = "RecallPerformed";
}

/// The step a `RecallPerformed` id derives from, with the `RenderRequested` it served.
pub const RECALL_STEP: &str = "recall";
