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
    /// Where and how to answer on LINE or Slack (absent for HTTP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<ReplyTarget>,
    /// An image the user sent, kept in temp media.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageAttachment>,
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

// ---------- channels (LINE, Slack): reply context and delivery outcomes ----------

/// Where a LINE or Slack reply goes: everything delivery needs, carried with the message so
/// it survives restarts and needs no side table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "platform", rename_all = "snake_case")]
pub enum ReplyTarget {
    /// LINE: reply token while fresh, else push.
    Line {
        /// Single-use reply token from the webhook event.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply_token: Option<String>,
        /// When the gateway received the webhook (reply-token age is measured from here).
        received_at: chrono::DateTime<chrono::Utc>,
        /// User, group or room id to push to.
        push_to: String,
        /// LINE marked the event as a redelivery (its token is likely stale).
        #[serde(default)]
        is_redelivery: bool,
    },
    /// Slack: `chat.postMessage` in the thread.
    Slack {
        /// Channel id.
        channel: String,
        /// The thread's parent message.
        thread_ts: String,
    },
}

/// An image attached to a user message, downloaded into temp media by the gateway.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageAttachment {
    /// The platform's message id of the image.
    pub message_id: String,
    /// Absolute path of the temp media file (kept for the configured retention).
    pub local_path: String,
    /// MIME type LINE reported, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
}

/// A LINE image message was accepted; the gateway downloads its content and then appends
/// the turn's `UserMessageReceived` (so the acknowledgement never waits for the download).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineImageReceived {
    /// The conversation.
    pub session_id: String,
    /// Sender.
    pub speaker: String,
    /// LINE's `webhookEventId`.
    pub webhook_event_id: String,
    /// LINE's message id (key of the content API).
    pub message_id: String,
    /// `originalContentUrl` when the image is hosted outside LINE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_url: Option<String>,
    /// Where to answer.
    pub reply_to: ReplyTarget,
}

impl EventPayload for LineImageReceived {
    const EVENT_TYPE: &'static str = "LineImageReceived";
}

/// The gateway is about to make a platform call that cannot be deduplicated by the platform
/// (LINE reply token, Slack `chat.postMessage`). If this exists without an outcome after a
/// crash, the call may have gone through, so it is not blindly repeated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplyAttempted {
    /// The conversation.
    pub session_id: String,
    /// Where.
    pub channel: Channel,
    /// The reply (`AssistantReplied` or `RenderFailed`) being delivered.
    pub reply_event_id: Uuid,
}

impl EventPayload for ReplyAttempted {
    const EVENT_TYPE: &'static str = "ReplyAttempted";
}

/// A reply reached the platform.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplyDelivered {
    /// The conversation.
    pub session_id: String,
    /// Where.
    pub channel: Channel,
    /// The reply delivered.
    pub reply_event_id: Uuid,
    /// The user message answered.
    pub user_event_id: Uuid,
    /// API calls that delivered it (`reply`, `push`, `chat.postMessage`), in order.
    pub calls: Vec<String>,
}

impl EventPayload for ReplyDelivered {
    const EVENT_TYPE: &'static str = "ReplyDelivered";
}

/// A reply could not be delivered (or its outcome is unknown and repeating it could
/// duplicate it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplyFailed {
    /// The conversation.
    pub session_id: String,
    /// Where.
    pub channel: Channel,
    /// The reply that failed.
    pub reply_event_id: Uuid,
    /// The user message answered.
    pub user_event_id: Uuid,
    /// Stable code (`gave_up`, `outcome_unknown`, `no_target`, `not_configured`, `invalid`).
    pub code: String,
    /// Short explanation (never secrets).
    pub message: String,
}

impl EventPayload for ReplyFailed {
    const EVENT_TYPE: &'static str = "ReplyFailed";
}
