//! Channels (LINE, Slack, Telegram): where a reply goes, the images people send, and each
//! delivery attempt's outcome.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::envelope::EventPayload;

use super::Channel;

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
    /// Telegram: `sendMessage` to the chat (in its forum topic, quoting the message in groups).
    Telegram {
        /// The chat's id.
        chat_id: i64,
        /// The forum topic the message was in.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_thread_id: Option<i64>,
        /// The message the reply quotes (in groups, so it is clear whom it answers).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply_to_message_id: Option<i64>,
    },
}

/// An image attached to a user message, downloaded by the gateway into the media store
/// (Postgres), where every service reaches it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageAttachment {
    /// The platform's message id of the image.
    pub message_id: String,
    /// The `media` row holding the bytes (kept for `media.retention_secs`). Absent on events
    /// recorded before images moved to the database (their temp files are gone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_id: Option<Uuid>,
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

/// A Slack message came with an image; the gateway downloads it with the bot token and then
/// appends the turn's `UserMessageReceived` (the acknowledgement never waits for it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlackImageReceived {
    /// The conversation.
    pub session_id: String,
    /// Sender.
    pub speaker: String,
    /// The message's dedup key (`slack:msg:{channel}:{ts}`).
    pub external_id: String,
    /// The message's text (may be empty).
    pub text: String,
    /// Slack's file id.
    pub file_id: String,
    /// Its `url_private_download`.
    pub url: String,
    /// Its `mimetype`.
    pub mimetype: String,
    /// Where to answer.
    pub reply_to: ReplyTarget,
}

impl EventPayload for SlackImageReceived {
    const EVENT_TYPE: &'static str = "SlackImageReceived";
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
