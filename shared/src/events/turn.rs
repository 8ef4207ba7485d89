//! A conversation's turn: the user's message, the route decided for it, the request for
//! the persona's reply (or its judgement of a work result), and how the turn ends (the
//! reply, a failure, the watchdog's notice), with the notices users are given.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::envelope::EventPayload;

use super::{ImageAttachment, ReplyTarget};
use crate::autonomy::events::AutonomyMessageRendered;
use crate::routing::{Notice, Route, RouteSource};

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
    /// Telegram Bot API webhook.
    Telegram,
}

impl Channel {
    /// The lower-case name used in logs and the `source` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Http => "http",
            Channel::Line => "line",
            Channel::Slack => "slack",
            Channel::Telegram => "telegram",
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
    /// An image the user sent, kept in the media store.
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
    pub route: Route,
    /// How it was decided (`explicit`, `rule`, `classifier`, `default`, ...).
    pub source: RouteSource,
    /// The session's `local_only` flag after this message (set by `/local`, cleared by `/cloud`).
    #[serde(default)]
    pub local_only: bool,
    /// Whether `route` is the message's primary route (false for a bare `/local` or `/cloud`,
    /// which leave the session's last primary route as it was).
    #[serde(default = "primary_default")]
    pub primary: bool,
    /// The one-line declaration shown before the reply (only when the primary route changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declaration: Option<String>,
    /// How the message entered routing (`router`, or `kuro` logged as `line_forced_chat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// The routing decision's details for the routing log: evidence, proposed route,
    /// confidence, fallback reason, notice (masked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<serde_json::Value>,
    /// The previous message's route, marked as misclassified by this message (the user's
    /// negation or an explicit command right after an automatically routed answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrects: Option<Misclassification>,
    /// User messages in the session up to and including this one: the next message's
    /// router counts on from here rather than counting the whole session. Absent on
    /// decisions stored before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_turns: Option<u32>,
}

/// A previous routing decision the user corrected (seed 002 誤分類検知).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Misclassification {
    /// The corrected user message.
    pub user_event_id: Uuid,
    /// The route it was given.
    pub route: Route,
    /// How it was decided then (`rule`, `classifier`, …).
    pub source: RouteSource,
    /// `negation` (the classifier read a rejection) or `explicit` (a route command).
    pub signal: String,
}

fn primary_default() -> bool {
    true
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
    /// Who spoke (the user message's speaker): the person whose memory recall reads.
    /// None in requests stored before memory was per person: the default person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    /// The user message being answered.
    pub user_event_id: Uuid,
    /// Its text.
    pub user_text: String,
    /// The route's outcome the persona should convey, if any work ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_result: Option<serde_json::Value>,
    /// The one-line declaration to put before the reply (route changed), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declaration: Option<String>,
    /// What the persona must mention briefly (`cloud_required`, `local_on`, `local_off`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<Notice>,
    /// The session's short-memory summary, when the history has grown past its limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_summary: Option<String>,
    /// High-risk secret categories the message held that were masked before work went to
    /// the cloud; the persona says so.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub withheld_from_cloud: Vec<String>,
    /// How many of the user messages before this one the reply's history reaches back to
    /// (those since the short-memory summary, which covers the rest:
    /// [`crate::short_memory`]). None in requests stored before it existed: the last
    /// `persona.history_turns` lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_user_messages: Option<u32>,
}

impl EventPayload for RenderRequested {
    const EVENT_TYPE: &'static str = "RenderRequested";
}

/// The persona should judge a finished work result before anyone replies (seed 002's
/// proposal): does it reach the user's goal, or should another run or route follow? It
/// answers with [`PersonaProposed`]; the router decides, and only then asks for the reply
/// ([`RenderRequested`]). Nothing reaches the user. (Requests stored before judging had a
/// type of its own were `RenderRequested` with `may_propose`; they are now replied to.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeRequested {
    /// The conversation.
    pub session_id: String,
    /// Where the reply will go (and a failure, when judging is given up on).
    pub channel: Channel,
    /// The user message the work is for.
    pub user_event_id: Uuid,
    /// Its text.
    pub user_text: String,
    /// The finished run's result, as a reply's `work_result` carries it.
    pub work_result: serde_json::Value,
}

impl EventPayload for JudgeRequested {
    const EVENT_TYPE: &'static str = "JudgeRequested";
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
    /// Why the reply ended before the model ended it, when it did: `repetition` (a loop cut
    /// to one copy), `time_left` (the turn's time ran out), `interrupted: <error>` (the
    /// stream broke off). The text is what was shown up to there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<String>,
}

impl EventPayload for AssistantReplied {
    const EVENT_TYPE: &'static str = "AssistantReplied";
}

crate::event_enum! {
    /// Something the persona said to people: a reply, or a message of its own. Reflection
    /// and the write plan take both.
    pub enum PersonaUtterance {
        AssistantReplied,
        AutonomyMessageRendered,
    }
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

/// The turn watchdog closed a turn nobody answered within `routing.turn_timeout_secs`
/// (a worker, the coder or the persona down or hung). Ends a turn; its id is the turn's
/// outcome id, so a reply that comes later is refused by the store and never delivered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnTimedOut {
    /// The conversation.
    pub session_id: String,
    /// Where the notice goes.
    pub channel: Channel,
    /// The user message that went unanswered.
    pub user_event_id: Uuid,
    /// The limit that passed, in seconds.
    pub limit_secs: u64,
    /// The short notice the user gets, in the language of their message.
    pub notice: String,
}

impl EventPayload for TurnTimedOut {
    const EVENT_TYPE: &'static str = "TurnTimedOut";
}

/// The event types that end a turn in its session.
pub const TURN_ENDING_TYPES: [&str; 4] = [
    AssistantReplied::EVENT_TYPE,
    RenderFailed::EVENT_TYPE,
    TurnTimedOut::EVENT_TYPE,
    // A forgotten person's turn, redacted whole: nothing of it runs any more.
    crate::memory::forget_person::REDACTED,
];

/// Event types that land in a conversation outside any turn: the persona's autonomy
/// messages and their pushes, reminders and their occurrences. A session's next turn does
/// not wait for them (`TurnGuard::not_turn`).
pub const OUT_OF_TURN_TYPES: [&str; 9] = [
    crate::autonomy::events::AutonomyMessageRendered::EVENT_TYPE,
    crate::autonomy::events::AutonomyMessagePushed::EVENT_TYPE,
    crate::autonomy::events::AutonomyPushFailed::EVENT_TYPE,
    crate::reminders::events::ReminderScheduled::EVENT_TYPE,
    crate::reminders::events::ReminderChanged::EVENT_TYPE,
    crate::reminders::events::ReminderCancelled::EVENT_TYPE,
    crate::reminders::events::ReminderDue::EVENT_TYPE,
    crate::reminders::events::ReminderDelivered::EVENT_TYPE,
    crate::reminders::events::ReminderMissed::EVENT_TYPE,
];

/// Whether an event type ends a turn in its session.
pub fn ends_turn(event_type: &str) -> bool {
    TURN_ENDING_TYPES.contains(&event_type)
}

/// Whether a user's text is Japanese (contains kana or kanji): the notices Ghost writes
/// without the persona follow it (Japanese, else English).
fn is_japanese(user_text: &str) -> bool {
    user_text.chars().any(|c| {
        matches!(c as u32,
            0x3040..=0x30FF     // hiragana, katakana
            | 0x3400..=0x4DBF   // CJK extension A
            | 0x4E00..=0x9FFF   // CJK unified ideographs
            | 0xFF66..=0xFF9F) // half-width katakana
    })
}

/// The notice a user gets when their turn timed out, in the language of their message
/// (Japanese when it contains kana or kanji, English otherwise).
pub fn timed_out_notice(user_text: &str) -> &'static str {
    if is_japanese(user_text) {
        "ごめんなさい、時間内に返事を用意できませんでした。もう一度送ってください。"
    } else {
        "Sorry, I could not answer in time. Please send your message again."
    }
}

/// The `RenderFailed` code of a CODE turn refused over the day's cloud token cap: its
/// message is [`token_cap_notice`], which every channel delivers as it is.
pub const DAILY_TOKEN_CAP: &str = "daily_token_cap";

/// The notice a user gets when a CODE turn is refused because the day's cloud token cap
/// (`coder.daily_token_cap`) is used up, in the language of their message.
pub fn token_cap_notice(user_text: &str) -> &'static str {
    if is_japanese(user_text) {
        "ごめんなさい、今日のコード作業の上限に達したので、いまは引き受けられません。上限は毎日 0:00 (UTC、日本時間 9:00) に戻ります。"
    } else {
        "Sorry, today's limit for coding work is used up, so I cannot take this on now. It resets at 00:00 UTC."
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timed_out_notice_follows_the_language_of_the_message() {
        assert!(timed_out_notice("/code これ直して").starts_with("ごめんなさい"));
        assert!(timed_out_notice("ｶﾀｶﾅ").starts_with("ごめんなさい"));
        assert!(timed_out_notice("/code fix this").starts_with("Sorry"));
        assert!(timed_out_notice("").starts_with("Sorry"));
    }

    #[test]
    fn the_token_cap_notice_follows_the_language_of_the_message() {
        assert!(token_cap_notice("/code この関数を直して").starts_with("ごめんなさい"));
        assert!(token_cap_notice("/code fix this function").starts_with("Sorry"));
    }

    #[test]
    fn typed_fields_keep_the_stored_json_shape() {
        let json = serde_json::json!({
            "session_id": "s", "user_event_id": Uuid::nil(), "route": "CODE",
            "source": "classifier_failed", "local_only": true, "entry": "router"
        });
        let d: RouteDecided =
            serde_json::from_value(json.clone()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (d.route, d.source),
            (Route::Code, RouteSource::ClassifierFailed)
        );
        let back = serde_json::to_value(&d).unwrap_or_default();
        assert_eq!(back["route"], "CODE");
        assert_eq!(back["source"], "classifier_failed");
        let bad = serde_json::json!({
            "session_id": "s", "user_event_id": Uuid::nil(), "route": "DANCE", "source": "rule"
        });
        assert!(serde_json::from_value::<RouteDecided>(bad).is_err());
    }

    #[test]
    fn image_turns_recorded_before_the_media_table_still_decode() {
        // Events are never rewritten: the temp-file shape of earlier versions must still
        // decode (the image itself is gone; the turn is answered without it).
        let old = serde_json::json!({
            "session_id": "line:user:U1", "channel": "line", "speaker": "U1", "text": "[image]",
            "image": {"message_id": "m1", "local_path": "/tmp/ghost-media/x.png", "content_type": "image/png"}
        });
        let m: UserMessageReceived = serde_json::from_value(old).unwrap();
        let image = m.image.unwrap();
        assert_eq!((image.message_id.as_str(), image.media_id), ("m1", None));
    }
}
