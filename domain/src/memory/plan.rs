//! The WritePlan as the model writes it (JSON only). Enumerated fields stay text here so
//! [`super::validate`] can name a value that is not listed; unknown keys are refused.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A write plan: how one utterance changes the persona's memory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WritePlan {
    /// About-time, life stage and entities of the utterance.
    #[serde(default)]
    pub event_annotations: Option<EventAnnotations>,
    /// Changes to states.
    #[serde(default)]
    pub state_updates: Vec<StateUpdate>,
    /// Changes to preferences.
    #[serde(default)]
    pub preference_updates: Vec<PreferenceUpdate>,
    /// The persona's momentary affect about the utterance.
    #[serde(default)]
    pub event_affect: Option<EventAffect>,
    /// Threads and links of the context graph.
    #[serde(default)]
    pub context_updates: ContextUpdates,
    /// What the persona now attends to (merged into the interest state).
    #[serde(default)]
    pub interest_update: Option<InterestUpdate>,
}

/// `event_annotations`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventAnnotations {
    /// Start of the time talked about (Unix seconds).
    #[serde(default)]
    #[schemars(range(min = 946_684_800, max = 4_102_444_800_i64))]
    pub about_start_ts: Option<i64>,
    /// End of the time talked about (Unix seconds).
    #[serde(default)]
    #[schemars(range(min = 946_684_800, max = 4_102_444_800_i64))]
    pub about_end_ts: Option<i64>,
    /// First year talked about.
    #[serde(default)]
    #[schemars(range(min = 1900, max = 2099))]
    pub about_year_start: Option<i32>,
    /// Last year talked about.
    #[serde(default)]
    #[schemars(range(min = 1900, max = 2099))]
    pub about_year_end: Option<i32>,
    /// `elementary|middle|high|university|work|unknown`.
    #[serde(default = "unknown_stage")]
    pub life_stage: String,
    /// How sure the time is, 0..=1.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub about_time_confidence: f64,
    /// People, places and things named.
    #[serde(default)]
    pub entities: Vec<Entity>,
}

fn unknown_stage() -> String {
    "unknown".into()
}

/// One named entity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Entity {
    /// `PERSON`, `PLACE`, ... (free text, not empty).
    #[serde(rename = "type")]
    pub entity_type: String,
    /// The name.
    pub name: String,
    /// How sure, 0..=1.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: f64,
}

/// One entry of `state_updates`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StateUpdate {
    /// `fact|relation|task|summary|long_mood_state`.
    pub kind: String,
    /// `upsert|close|mark_done`.
    pub op: String,
    /// The state changed (absent: a new state).
    #[serde(default)]
    pub state_id: Option<String>,
    /// `speaker|nobody`: whom a new state is about (absent: the speaker). A revision stays
    /// about whom the state was about.
    #[serde(default)]
    pub about: Option<String>,
    /// The text, in the persona's first-person view.
    #[serde(default, alias = "body")]
    pub body_text: String,
    /// The keys recall and deliberation order it by; absent on a revision keeps the held
    /// ones.
    #[serde(default)]
    pub payload: Option<StatePayload>,
    /// How sure, 0..=1.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: f64,
    /// How much it matters, 0..=1 (a task's priority); absent on a revision keeps the held
    /// one.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub salience: Option<f64>,
    /// Valid from (Unix seconds).
    #[serde(default)]
    #[schemars(range(min = 946_684_800, max = 4_102_444_800_i64))]
    pub valid_from_ts: Option<i64>,
    /// Valid until (Unix seconds).
    #[serde(default)]
    #[schemars(range(min = 946_684_800, max = 4_102_444_800_i64))]
    pub valid_to_ts: Option<i64>,
    /// When it was last confirmed (Unix seconds).
    #[serde(default)]
    pub last_confirmed_at: Option<i64>,
    /// The events it rests on; must include the current one.
    pub evidence_event_ids: Vec<String>,
    /// Why.
    #[serde(default)]
    pub reason: String,
}

/// A state's `payload`: the structured keys it is ordered by, in one format. Deliberation
/// ranks open tasks by their topic (against attention targets and preferences) and recall
/// matches a state to the persona's focus by it; texts are never compared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatePayload {
    /// The topic it belongs to, named as attention targets and preference subjects name
    /// topics (compared by subject key: NFKC, trimmed, case-folded). Not empty.
    pub topic: String,
}

/// One entry of `preference_updates`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PreferenceUpdate {
    /// `upsert_candidate|confirm|revoke`.
    pub op: String,
    /// `food|topic|style`.
    pub domain: String,
    /// `like|dislike`.
    pub polarity: String,
    /// What it is about.
    pub subject: String,
    /// A note.
    #[serde(default)]
    pub note: String,
    /// How sure, 0..=1.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: f64,
    /// The events it rests on; must include the current one.
    pub evidence_event_ids: Vec<String>,
    /// Why.
    #[serde(default)]
    pub reason: String,
}

/// `event_affect`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventAffect {
    /// The feeling in words.
    pub moment_affect_text: String,
    /// Labels.
    #[serde(default)]
    pub moment_affect_labels: Vec<String>,
    /// Valence, arousal, dominance, each -1..=1.
    pub moment_affect_score_vad: Vad,
    /// How sure, 0..=1.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub moment_affect_confidence: f64,
    /// An inner thought, if any.
    #[serde(default)]
    pub inner_thought_text: Option<String>,
}

/// Valence, arousal, dominance.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Vad {
    /// Valence, -1..=1.
    #[schemars(range(min = -1.0, max = 1.0))]
    pub v: f64,
    /// Arousal, -1..=1.
    #[schemars(range(min = -1.0, max = 1.0))]
    pub a: f64,
    /// Dominance, -1..=1.
    #[schemars(range(min = -1.0, max = 1.0))]
    pub d: f64,
}

/// `context_updates`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextUpdates {
    /// Threads the utterance belongs to.
    #[serde(default)]
    pub threads: Vec<ThreadUpdate>,
    /// Links to earlier events.
    #[serde(default)]
    pub links: Vec<LinkUpdate>,
}

/// One thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ThreadUpdate {
    /// The thread's key.
    pub thread_key: String,
    /// How sure, 0..=1.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: f64,
}

/// One link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkUpdate {
    /// The earlier event.
    pub to_event_id: String,
    /// `reply_to|same_topic|caused_by`.
    pub label: String,
    /// How sure, 0..=1.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: f64,
}

/// `interest_update`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InterestUpdate {
    /// Targets named now.
    #[serde(default)]
    pub attention_targets: Vec<TargetUpdate>,
    /// `observe|support|wait|explore`; absent keeps the current mode.
    #[serde(default)]
    pub interaction_mode: Option<String>,
}

/// One target named by the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetUpdate {
    /// `topic|goal|person`.
    #[serde(rename = "type")]
    pub target_type: String,
    /// What exactly; a goal that is a task held is `goal_id:<its state_id>`.
    pub value: String,
    /// How strongly, 0..=1.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub weight: f64,
}

impl WritePlan {
    /// The plan in `text`, which must be one JSON object and nothing else (no fence, no
    /// prose: nothing is repaired).
    pub fn parse(text: &str) -> Result<Self, Vec<String>> {
        serde_json::from_str(text).map_err(|e| {
            vec![format!(
                "plan is not valid JSON of the WritePlan shape: {e}"
            )]
        })
    }

    /// The plan in an already parsed JSON value.
    pub fn from_value(value: serde_json::Value) -> Result<Self, Vec<String>> {
        serde_json::from_value(value)
            .map_err(|e| vec![format!("plan does not have the WritePlan shape: {e}")])
    }
}
