//! The catalogue of event payloads services exchange.
//!
//! Payloads live here, once, because producers and consumers sit in different crates.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::event::EventPayload;

/// The channel a conversation arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    /// `POST /api/chat`.
    Http,
    /// LINE Messaging API webhook.
    Line,
    /// Slack Events API.
    Slack,
}

impl Channel {
    /// The lower-case name used in logs and the `source` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Http => "http",
            Channel::Line => "line",
            Channel::Slack => "slack",
        }
    }
}

/// A person said something to the persona. Starts a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserMessageReceived {
    /// The conversation.
    pub session_id: String,
    /// Where it came from.
    pub channel: Channel,
    /// Who said it (platform user id, or `user` for HTTP).
    pub speaker: String,
    /// What they said.
    pub text: String,
    /// The platform's id of the delivery, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
}

impl EventPayload for UserMessageReceived {
    const EVENT_TYPE: &'static str = "UserMessageReceived";
}

/// The router chose the work's route for this user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteDecided {
    /// The conversation.
    pub session_id: String,
    /// The user message this decides for.
    pub user_event_id: Uuid,
    /// `CHAT`, `CODE`, `ANALYZE`, `PLAN`, `OPS` or `RESEARCH`.
    pub route: String,
    /// How it was decided (`explicit`, `rule`, `classifier`, `default`).
    pub source: String,
}

impl EventPayload for RouteDecided {
    const EVENT_TYPE: &'static str = "RouteDecided";
}

/// The persona should write the reply for a user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RenderRequested {
    /// The conversation.
    pub session_id: String,
    /// Where the reply goes.
    pub channel: Channel,
    /// The user message being answered.
    pub user_event_id: Uuid,
    /// Its text.
    pub user_text: String,
    /// The route's outcome the persona should convey, if any work ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_result: Option<serde_json::Value>,
}

impl EventPayload for RenderRequested {
    const EVENT_TYPE: &'static str = "RenderRequested";
}

/// The persona's reply, complete. Ends a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantReplied {
    /// The conversation.
    pub session_id: String,
    /// Where the reply goes.
    pub channel: Channel,
    /// The user message answered.
    pub user_event_id: Uuid,
    /// The persona speaking (character id).
    pub speaker: String,
    /// The words the user sees.
    pub text: String,
    /// The persona's own reaction from the reply's affect trailer, when it gave a valid one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affect: Option<crate::affect::Affect>,
    /// Trailer fields that were rejected (`field: reason`), for the record.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub affect_rejected: Vec<String>,
}

impl EventPayload for AssistantReplied {
    const EVENT_TYPE: &'static str = "AssistantReplied";
}

/// The persona could not write the reply. Ends a turn; nothing half-written is kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RenderFailed {
    /// The conversation.
    pub session_id: String,
    /// Where the reply would have gone.
    pub channel: Channel,
    /// The user message that went unanswered.
    pub user_event_id: Uuid,
    /// A stable machine-readable code (`llm_timeout`, `llm_http`, `llm_stream`, ...).
    pub code: String,
    /// A short human-readable explanation (never secrets).
    pub message: String,
}

impl EventPayload for RenderFailed {
    const EVENT_TYPE: &'static str = "RenderFailed";
}

/// Whether an event type ends a turn in its session.
pub fn ends_turn(event_type: &str) -> bool {
    event_type == AssistantReplied::EVENT_TYPE || event_type == RenderFailed::EVENT_TYPE
}

/// The router asks a worker (local model) or the coder (cloud) for one piece of work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkRequested {
    /// The conversation.
    pub session_id: String,
    /// The user message being served.
    pub user_event_id: Uuid,
    /// `ANALYZE`, `PLAN`, `OPS`, `RESEARCH`, `CODE`.
    pub route: String,
    /// What to do (already masked where it goes to the cloud).
    pub task: String,
    /// Loop number within the user message (1-based).
    pub loop_index: u32,
}

impl EventPayload for WorkRequested {
    const EVENT_TYPE: &'static str = "WorkRequested";
}

/// A worker finished a piece of work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerCompleted {
    /// The conversation.
    pub session_id: String,
    /// The user message being served.
    pub user_event_id: Uuid,
    /// The route worked on.
    pub route: String,
    /// The worker's output as returned by the model.
    pub result: String,
}

impl EventPayload for WorkerCompleted {
    const EVENT_TYPE: &'static str = "WorkerCompleted";
}

/// A worker could not do the work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerFailed {
    /// The conversation.
    pub session_id: String,
    /// The user message being served.
    pub user_event_id: Uuid,
    /// The route worked on.
    pub route: String,
    /// Stable code.
    pub code: String,
    /// Short explanation.
    pub message: String,
}

impl EventPayload for WorkerFailed {
    const EVENT_TYPE: &'static str = "WorkerFailed";
}

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
