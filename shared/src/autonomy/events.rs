//! The autonomy events (stream `autonomy-<persona>`): a tick, its decision or why it was
//! dropped, the action's start and result, and the persona's message or why none was said.
//! Each id derives from its cause ([`crate::ids::derive_event_id`]), so a redelivered tick
//! decides once and a redelivered decision runs its action once.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::decision::ActionDecision;
use super::result::ActionResult;
use crate::envelope::EventPayload;

/// The stream of one persona's autonomy.
pub fn autonomy_stream(persona: &str) -> String {
    format!("autonomy-{persona}")
}

/// Step names the ids derive from.
pub mod steps {
    /// Tick → `ActionDecided`.
    pub const DECIDED: &str = "autonomy.decided";
    /// Tick → `ActionDropped`.
    pub const DROPPED: &str = "autonomy.dropped";
    /// `ActionDecided` → `ActionStarted`.
    pub const STARTED: &str = "autonomy.started";
    /// `ActionDecided` → `ActionResultRecorded`.
    pub const RESULT: &str = "autonomy.result";
    /// `ActionResultRecorded` → `AutonomyMessageRendered`.
    pub const MESSAGE: &str = "autonomy.message";
    /// `AutonomyMessageRendered` → the `SummarizeRequested` that folds it into its
    /// conversation's short summary.
    pub const MESSAGE_SUMMARY: &str = "autonomy.message_summary";
    /// `ActionResultRecorded` → `AutonomyMessageFailed`.
    pub const MESSAGE_FAILED: &str = "autonomy.message_failed";
    /// `AutonomyMessageRendered` → its LINE push outcome (`AutonomyMessagePushed` or
    /// `AutonomyPushFailed`: one id, so at most one of them).
    pub const PUSHED_LINE: &str = "autonomy.push.line";
    /// `AutonomyMessageRendered` → its Slack post outcome.
    pub const PUSHED_SLACK: &str = "autonomy.push.slack";
    /// Tick → `AutonomyTickSkipped`.
    pub const SKIPPED: &str = "autonomy.skipped";
}

/// What started a deliberation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TickTrigger {
    /// `autonomy.interval_secs` elapsed.
    Schedule,
    /// `POST /api/autonomy/tick`.
    Api,
    /// `ghost autonomy tick`.
    Cli,
}

/// Deliberate once now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutonomyTickRequested {
    /// The persona (character id) who deliberates.
    pub persona: String,
    /// Who asked.
    pub trigger: TickTrigger,
}

impl EventPayload for AutonomyTickRequested {
    const EVENT_TYPE: &'static str = "AutonomyTickRequested";
}

/// The model's decision, valid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionDecided {
    /// The persona.
    pub persona: String,
    /// The tick event.
    pub tick_event_id: Uuid,
    /// The decision.
    pub decision: ActionDecision,
}

impl EventPayload for ActionDecided {
    const EVENT_TYPE: &'static str = "ActionDecided";
}

/// A scheduled tick was not deliberated: the persona had nothing it should say now, found
/// without a model call ([`super::gate`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutonomyTickSkipped {
    /// The persona.
    pub persona: String,
    /// The tick event.
    pub tick_event_id: Uuid,
    /// Why.
    pub reason: SkipReason,
}

impl EventPayload for AutonomyTickSkipped {
    const EVENT_TYPE: &'static str = "AutonomyTickSkipped";
}

/// Why a scheduled tick was skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Inside the quiet hours of the conversation's person.
    QuietHours,
    /// The day's autonomy messages reached `autonomy.max_messages_per_day`.
    DailyCap,
    /// Nothing happened in the conversation or the persona's memory since the last
    /// deliberation: it would deliberate on the same input again.
    NothingNew,
}

impl SkipReason {
    /// Its name (the metric's label).
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::QuietHours => "quiet_hours",
            SkipReason::DailyCap => "daily_cap",
            SkipReason::NothingNew => "nothing_new",
        }
    }
}

/// Why a tick produced no decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// The answer broke a rule of `ActionDecision`.
    InvalidDecision,
    /// The model failed (error, timeout, too large).
    ModelError,
}

/// A tick's decision was dropped: nothing runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionDropped {
    /// The persona.
    pub persona: String,
    /// The tick event.
    pub tick_event_id: Uuid,
    /// Why.
    pub reason: DropReason,
    /// Every broken rule, or the model's error.
    pub errors: Vec<String>,
    /// The model's answer, masked and cut (`ModelAnswerRejected::excerpt`); empty when the
    /// call itself failed, and in events stored before it was kept.
    #[serde(default)]
    pub raw: String,
}

impl EventPayload for ActionDropped {
    const EVENT_TYPE: &'static str = "ActionDropped";
}

/// An action began (its id claims the run: a second claim finds it and runs nothing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionStarted {
    /// The persona.
    pub persona: String,
    /// The `ActionDecided` event.
    pub decision_event_id: Uuid,
    /// Which capability.
    pub capability: String,
}

impl EventPayload for ActionStarted {
    const EVENT_TYPE: &'static str = "ActionStarted";
}

/// What the action produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionResultRecorded {
    /// The persona.
    pub persona: String,
    /// The `ActionDecided` event.
    pub decision_event_id: Uuid,
    /// The decision it ran (copied: the persona renders from it).
    pub decision: ActionDecision,
    /// The facts.
    pub result: ActionResult,
    /// The agent job, for `agent_delegate` (`{backend, job_id}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_job: Option<serde_json::Value>,
}

impl EventPayload for ActionResultRecorded {
    const EVENT_TYPE: &'static str = "ActionResultRecorded";
}

/// The persona's message about a result: an utterance (`assistant_text`, source
/// `autonomy_message`), said when published on `<prefix>.autonomy.message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutonomyMessageRendered {
    /// The persona (the sender, whatever the mode).
    pub persona: String,
    /// The conversation it belongs to (`autonomy.session_id`).
    pub session_id: String,
    /// The `ActionResultRecorded` event.
    pub result_event_id: Uuid,
    /// What the persona said.
    pub text: String,
    /// The display policy.
    pub delivery: super::decision::ConsoleDelivery,
}

impl EventPayload for AutonomyMessageRendered {
    const EVENT_TYPE: &'static str = "AutonomyMessageRendered";
}

/// No message about a result (no fallback: nothing was said).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutonomyMessageFailed {
    /// The persona.
    pub persona: String,
    /// The `ActionResultRecorded` event.
    pub result_event_id: Uuid,
    /// Why the render failed.
    pub error: String,
}

impl EventPayload for AutonomyMessageFailed {
    const EVENT_TYPE: &'static str = "AutonomyMessageFailed";
}

/// An autonomy message reached a bound LINE chat or Slack channel (`autonomy.push`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutonomyMessagePushed {
    /// The conversation.
    pub session_id: String,
    /// Where it went (`line` or `slack`).
    pub platform: crate::events::Channel,
    /// The `AutonomyMessageRendered` event.
    pub message_event_id: Uuid,
    /// The API calls made, in order.
    pub calls: Vec<String>,
}

impl EventPayload for AutonomyMessagePushed {
    const EVENT_TYPE: &'static str = "AutonomyMessagePushed";
}

/// An autonomy message was not pushed to a bound platform, or not known to be (never retried
/// once recorded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutonomyPushFailed {
    /// The conversation.
    pub session_id: String,
    /// Where it was meant to go.
    pub platform: crate::events::Channel,
    /// The `AutonomyMessageRendered` event.
    pub message_event_id: Uuid,
    /// Stable code (`gave_up`, `outcome_unknown`, `invalid`, `not_configured`).
    pub code: String,
    /// Explanation.
    pub message: String,
}

impl EventPayload for AutonomyPushFailed {
    const EVENT_TYPE: &'static str = "AutonomyPushFailed";
}
