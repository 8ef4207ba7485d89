//! What a persona remembers: states, preferences and the interest state, as the write plan
//! reads and changes them (the projections hold the same values as rows).

use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;
use uuid::Uuid;

use super::vocab::{
    InteractionMode, Polarity, PreferenceDomain, PreferenceStatus, StateKind, StateStatus,
    TargetType,
};

/// One persona's memory (of everyone, or of one person and what is about no one).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    /// States, current revision of each.
    #[serde(default)]
    pub states: Vec<MemoryState>,
    /// Preferences, one per (person, domain, subject key, polarity).
    #[serde(default)]
    pub preferences: Vec<Preference>,
    /// The interest state (`None`: nothing recorded yet).
    #[serde(default)]
    pub interest: Option<InterestState>,
}

/// The current revision of one state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryState {
    /// Stable id (derived from the event that created it).
    pub state_id: Uuid,
    /// What it holds.
    pub kind: StateKind,
    /// Active, closed or done.
    #[serde(default = "active")]
    pub status: StateStatus,
    /// The text, in the persona's first-person view.
    pub body_text: String,
    /// Structured detail the plan gave, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<serde_json::Value>,
    /// How sure, 0..=1.
    #[serde(default)]
    pub confidence: f64,
    /// How much it matters, 0..=1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub salience: Option<f64>,
    /// Valid from (Unix seconds).
    #[serde(default)]
    pub valid_from_ts: Option<i64>,
    /// Valid until (Unix seconds).
    #[serde(default)]
    pub valid_to_ts: Option<i64>,
    /// 1 for a new state, +1 per later upsert, close or mark_done.
    #[serde(default = "first_revision")]
    pub revision: i32,
    /// The events this revision rests on.
    #[serde(default)]
    pub evidence_event_ids: Vec<Uuid>,
    /// Why this revision was made.
    #[serde(default)]
    pub reason: String,
    /// Whom it is about (`None`: no one in particular, such as the persona's own plans). A
    /// revision stored before memory was per person lacks the field: the default person's.
    #[serde(default = "default_person_of_state")]
    pub person: Option<String>,
}

impl MemoryState {
    /// The topic the write plan filed it under (`payload.topic`, see
    /// [`super::plan::StatePayload`]), if any.
    pub fn topic(&self) -> Option<&str> {
        payload_topic(self.payload.as_ref()?)
    }
}

/// The topic of a stored state payload (older payloads may hold anything: only a string
/// `topic` counts).
pub fn payload_topic(payload: &serde_json::Value) -> Option<&str> {
    payload
        .get("topic")?
        .as_str()
        .filter(|t| !t.trim().is_empty())
}

/// The person memory belongs to when nobody is named: the HTTP API's and the console's user,
/// and every memory written before memory was per person.
pub const DEFAULT_PERSON: &str = "user";

fn default_person_of_state() -> Option<String> {
    Some(DEFAULT_PERSON.to_owned())
}

fn default_person() -> String {
    DEFAULT_PERSON.to_owned()
}

fn active() -> StateStatus {
    StateStatus::Active
}

fn first_revision() -> i32 {
    1
}

/// One preference of the user, as the persona holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preference {
    /// Food, topic or style.
    pub domain: PreferenceDomain,
    /// What it is about, as first written (NFKC, trimmed).
    pub subject: String,
    /// Like or dislike.
    pub polarity: Polarity,
    /// Candidate, confirmed or revoked.
    pub status: PreferenceStatus,
    /// How sure, 0..=1.
    pub confidence: f64,
    /// Whose preference it is (stored before memory was per person: the default person's).
    #[serde(default = "default_person")]
    pub person: String,
}

impl Preference {
    /// Whether this preference is about (`domain`, subject key `key`).
    pub fn has_key(&self, domain: PreferenceDomain, key: &str) -> bool {
        self.domain == domain && subject_key(&self.subject) == key
    }
}

/// The key a preference subject is matched by: NFKC, trimmed, case-folded (lower case).
pub fn subject_key(subject: &str) -> String {
    let nfkc: String = subject.nfkc().collect();
    nfkc.trim().to_lowercase()
}

/// A subject as stored and shown: NFKC, trimmed (case kept).
pub fn subject_display(subject: &str) -> String {
    let nfkc: String = subject.nfkc().collect();
    nfkc.trim().to_owned()
}

/// What the persona attends to now (seed 001 Phase C `persona_interest_state`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterestState {
    /// At most 12, highest weight first (ties by value).
    #[serde(default)]
    pub attention_targets: Vec<AttentionTarget>,
    /// How the persona means to engage.
    pub interaction_mode: InteractionMode,
    /// The last 20 events that changed it, oldest first.
    #[serde(default)]
    pub updated_from_event_ids: Vec<Uuid>,
    /// When the weights were last set (Unix seconds): decay runs from here.
    pub updated_at: f64,
}

impl InterestState {
    /// Nothing attended to yet, as of `now`.
    pub fn empty(now: f64) -> Self {
        Self {
            attention_targets: Vec::new(),
            interaction_mode: InteractionMode::Observe,
            updated_from_event_ids: Vec::new(),
            updated_at: now,
        }
    }
}

/// One thing the persona attends to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttentionTarget {
    /// Topic, goal or person.
    #[serde(rename = "type")]
    pub target_type: TargetType,
    /// What exactly.
    pub value: String,
    /// How strongly, 0..=1.
    pub weight: f64,
}

/// How a `goal` attention target refers to a task the persona holds: `goal_id:<state_id>`
/// (the one format the write plan writes and the deliberation orders by). A goal named in
/// words (without the prefix) refers to no state.
pub const GOAL_PREFIX: &str = "goal_id:";

/// The value of a goal target referring to the task `state_id`.
pub fn goal_ref(state_id: Uuid) -> String {
    format!("{GOAL_PREFIX}{state_id}")
}

/// What a goal target's `value` refers to after [`GOAL_PREFIX`], if it has the prefix.
pub fn goal_ref_text(value: &str) -> Option<&str> {
    value.trim().strip_prefix(GOAL_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subject_keys_fold_width_space_and_case() {
        assert_eq!(subject_key("  Ｃｏｆｆｅｅ "), "coffee");
        assert_eq!(subject_key("ｺｰﾋｰ"), subject_key("コーヒー"));
        assert_eq!(subject_display(" Ｃｏｆｆｅｅ"), "Coffee");
    }
}
