//! LINE webhook wire types: the request body LINE POSTs to us (parsed here, handled by
//! `webhooks::line`).
//!
//! Only what the gateway acts on is modelled; everything else is skipped. Unknown event types,
//! message types, source types and modes deserialize into catch-all variants rather than
//! failing, because LINE adds new ones over time and one unknown event must not make us reject
//! (and LINE redeliver) a whole batch.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// The whole webhook request body.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct WebhookBody {
    /// User id of the bot that should receive these events.
    pub destination: String,
    /// Events in this delivery; LINE sends an empty list to check the endpoint.
    #[serde(default)]
    pub events: Vec<Event>,
}

impl WebhookBody {
    /// Parses a raw request body (verify the signature first).
    pub fn from_slice(raw_body: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(raw_body)
    }
}

/// One webhook event: the fields every event type shares plus its type-specific kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// What happened; only message events carry a payload we use.
    pub kind: EventKind,
    /// Channel state; only `active` channels may answer.
    pub mode: Mode,
    /// When the event happened, milliseconds since the Unix epoch.
    pub timestamp: i64,
    /// Where it happened (1:1 chat, group, room); absent for some account-level events.
    pub source: Option<Source>,
    /// LINE's unique id of this event; stable across redeliveries, hence the dedup key.
    pub webhook_event_id: String,
    /// Whether LINE is redelivering an event we failed to acknowledge earlier.
    pub is_redelivery: bool,
    /// Single-use token for the reply API (present on events that can be replied to).
    pub reply_token: Option<String>,
}

/// Type-specific part of an event.
#[derive(Debug, Clone, PartialEq)]
pub enum EventKind {
    /// A user sent a message.
    Message(Message),
    /// Any other event type (follow, join, postback, unsend, …), kept by name for the log.
    Other {
        /// The `type` string LINE sent.
        event_type: String,
    },
}

/// Channel mode of the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The channel is active and may reply.
    #[default]
    Active,
    /// Another module channel holds the chat; we must stay silent.
    Standby,
    /// A mode this code does not know; treated as "may not reply".
    #[serde(other)]
    Unknown,
}

/// Where an event came from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Source {
    /// A 1:1 chat with a user.
    User {
        /// The user's id (`U…`).
        #[serde(rename = "userId")]
        user_id: String,
    },
    /// A group chat.
    Group {
        /// The group's id (`C…`).
        #[serde(rename = "groupId")]
        group_id: String,
        /// The sender, when LINE discloses it.
        #[serde(rename = "userId", default)]
        user_id: Option<String>,
    },
    /// A multi-person chat (room).
    Room {
        /// The room's id (`R…`).
        #[serde(rename = "roomId")]
        room_id: String,
        /// The sender, when LINE discloses it.
        #[serde(rename = "userId", default)]
        user_id: Option<String>,
    },
    /// A source type this code does not know.
    #[serde(other)]
    Other,
}

impl Source {
    /// The sending user's id, if known.
    pub fn user_id(&self) -> Option<&str> {
        match self {
            Source::User { user_id } => Some(user_id),
            Source::Group { user_id, .. } | Source::Room { user_id, .. } => user_id.as_deref(),
            Source::Other => None,
        }
    }

    /// The id a push message must be addressed to so it lands in this chat.
    pub fn push_target(&self) -> Option<&str> {
        match self {
            Source::User { user_id } => Some(user_id),
            Source::Group { group_id, .. } => Some(group_id),
            Source::Room { room_id, .. } => Some(room_id),
            Source::Other => None,
        }
    }

    /// Session key of this chat: one conversation per 1:1 chat, group or room.
    pub fn session_key(&self) -> Option<String> {
        match self {
            Source::User { user_id } => Some(format!("line:user:{user_id}")),
            Source::Group { group_id, .. } => Some(format!("line:group:{group_id}")),
            Source::Room { room_id, .. } => Some(format!("line:room:{room_id}")),
            Source::Other => None,
        }
    }

    /// True for groups and rooms, where the bot only answers when mentioned.
    pub fn is_multi_person(&self) -> bool {
        matches!(self, Source::Group { .. } | Source::Room { .. })
    }
}

/// The message inside a message event.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A text message.
    Text(TextMessage),
    /// An image message.
    Image(ImageMessage),
    /// Sticker, video, audio, file, location or anything newer; kept by name for the log.
    Other {
        /// The message `type` string LINE sent.
        message_type: String,
        /// The message id, if present.
        id: Option<String>,
    },
}

/// A text message.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextMessage {
    /// Message id.
    pub id: String,
    /// The text as the user typed it (mentions appear inline, e.g. `@Kuro`).
    pub text: String,
    /// Mentions in the text, if any.
    #[serde(default)]
    pub mention: Option<Mention>,
    /// Token for quoting this message in a reply.
    #[serde(default)]
    pub quote_token: Option<String>,
}

/// An image message.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageMessage {
    /// Message id (the key for fetching LINE-hosted content).
    pub id: String,
    /// Where the image bytes live.
    pub content_provider: ContentProvider,
    /// Set membership when the user sent several images at once.
    #[serde(default)]
    pub image_set: Option<ImageSet>,
    /// Token for quoting this message in a reply.
    #[serde(default)]
    pub quote_token: Option<String>,
}

/// Where an image's bytes can be fetched.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContentProvider {
    /// `line` (fetch via the content API by message id) or `external` (use the URLs).
    #[serde(rename = "type")]
    pub provider: ProviderType,
    /// Full-size image URL when the provider is external.
    #[serde(default)]
    pub original_content_url: Option<String>,
    /// Preview image URL when the provider is external.
    #[serde(default)]
    pub preview_image_url: Option<String>,
}

/// Who hosts an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderType {
    /// LINE hosts it; fetch by message id.
    Line,
    /// An external server hosts it; use the URLs.
    External,
    /// A provider this code does not know.
    #[serde(other)]
    Unknown,
}

/// Position of an image in a multi-image send.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ImageSet {
    /// Id shared by the images of one send.
    pub id: String,
    /// 1-based position in the set.
    #[serde(default)]
    pub index: Option<u32>,
    /// Number of images in the set.
    #[serde(default)]
    pub total: Option<u32>,
}

/// Mentions in a text message.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Mention {
    /// The mentioned targets, in text order.
    #[serde(default)]
    pub mentionees: Vec<Mentionee>,
}

/// One mention: a span of the text that refers to a user (or everyone).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mentionee {
    /// Start of the mention in the text, in UTF-16 code units (LINE counts text that way).
    pub index: i64,
    /// Length of the mention text (e.g. `@Kuro` is 5), in UTF-16 code units.
    pub length: i64,
    /// What is mentioned.
    #[serde(rename = "type", default)]
    pub kind: MentioneeType,
    /// The mentioned user's id, when LINE discloses it.
    #[serde(default)]
    pub user_id: Option<String>,
    /// True when the mentioned user is this bot.
    #[serde(default)]
    pub is_self: bool,
}

/// Target of a mention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MentioneeType {
    /// A single user.
    #[default]
    User,
    /// Everyone in the chat (`@All`).
    All,
    /// A target type this code does not know.
    #[serde(other)]
    Unknown,
}

/// Wire shape of an event before the type-specific part is resolved.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEvent {
    #[serde(rename = "type")]
    event_type: String,
    #[serde(default)]
    mode: Mode,
    #[serde(default)]
    timestamp: i64,
    #[serde(default)]
    source: Option<Source>,
    #[serde(default)]
    webhook_event_id: String,
    #[serde(default)]
    delivery_context: Option<RawDeliveryContext>,
    #[serde(default)]
    reply_token: Option<String>,
    // Kept raw so an unknown event type with an unexpected `message` shape still parses.
    #[serde(default)]
    message: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawDeliveryContext {
    #[serde(default)]
    is_redelivery: bool,
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = RawEvent::deserialize(deserializer)?;
        let kind = if raw.event_type == "message" {
            // A message event is the one we act on: its id is our dedup key, so it must exist.
            if raw.webhook_event_id.is_empty() {
                return Err(D::Error::missing_field("webhookEventId"));
            }
            let message = raw
                .message
                .ok_or_else(|| D::Error::missing_field("message"))?;
            EventKind::Message(serde_json::from_value(message).map_err(D::Error::custom)?)
        } else {
            EventKind::Other {
                event_type: raw.event_type,
            }
        };
        Ok(Event {
            kind,
            mode: raw.mode,
            timestamp: raw.timestamp,
            source: raw.source,
            webhook_event_id: raw.webhook_event_id,
            is_redelivery: raw.delivery_context.is_some_and(|d| d.is_redelivery),
            reply_token: raw.reply_token.filter(|t| !t.is_empty()),
        })
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let message_type = value
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| D::Error::missing_field("type"))?
            .to_owned();
        match message_type.as_str() {
            "text" => serde_json::from_value(value)
                .map(Message::Text)
                .map_err(D::Error::custom),
            "image" => serde_json::from_value(value)
                .map(Message::Image)
                .map_err(D::Error::custom),
            _ => Ok(Message::Other {
                id: value.get("id").and_then(Value::as_str).map(str::to_owned),
                message_type,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<WebhookBody, serde_json::Error> {
        WebhookBody::from_slice(json.as_bytes())
    }

    fn one_event(event_json: &str) -> Option<Event> {
        let body = format!(r#"{{"destination":"Ubot","events":[{event_json}]}}"#);
        parse(&body).ok()?.events.into_iter().next()
    }

    #[test]
    fn parses_text_message_event_with_all_common_fields() {
        let ev = one_event(
            r#"{"type":"message","mode":"active","timestamp":1762000000000,
                "webhookEventId":"01ABC","deliveryContext":{"isRedelivery":true},
                "source":{"type":"user","userId":"U1"},"replyToken":"rt",
                "message":{"id":"m1","type":"text","quoteToken":"q","text":"hi"}}"#,
        );
        let Some(ev) = ev else {
            panic!("event did not parse")
        };
        assert_eq!(ev.mode, Mode::Active);
        assert_eq!(ev.timestamp, 1_762_000_000_000);
        assert_eq!(ev.webhook_event_id, "01ABC");
        assert!(ev.is_redelivery);
        assert_eq!(ev.reply_token.as_deref(), Some("rt"));
        assert_eq!(
            ev.source,
            Some(Source::User {
                user_id: "U1".into()
            })
        );
        match ev.kind {
            EventKind::Message(Message::Text(t)) => {
                assert_eq!(t.text, "hi");
                assert_eq!(t.id, "m1");
                assert_eq!(t.quote_token.as_deref(), Some("q"));
            }
            other => panic!("unexpected kind {other:?}"),
        }
    }

    #[test]
    fn parses_mentionees_with_is_self_and_type() {
        let ev = one_event(
            r#"{"type":"message","mode":"active","timestamp":1,"webhookEventId":"e",
                "source":{"type":"group","groupId":"C1","userId":"U1"},
                "message":{"id":"m","type":"text","text":"@Kuro @All hi",
                  "mention":{"mentionees":[
                    {"index":0,"length":5,"type":"user","userId":"Ubot","isSelf":true},
                    {"index":6,"length":4,"type":"all"}]}}}"#,
        );
        let Some(Event {
            kind: EventKind::Message(Message::Text(t)),
            ..
        }) = ev
        else {
            panic!("not a text event")
        };
        let ms = t.mention.map(|m| m.mentionees).unwrap_or_default();
        assert_eq!(ms.len(), 2);
        assert!(ms[0].is_self);
        assert_eq!(ms[0].kind, MentioneeType::User);
        assert_eq!(ms[1].kind, MentioneeType::All);
        assert!(!ms[1].is_self);
    }

    #[test]
    fn parses_image_message_with_content_provider() {
        let ev = one_event(
            r#"{"type":"message","mode":"active","timestamp":1,"webhookEventId":"e",
                "source":{"type":"room","roomId":"R1"},
                "message":{"id":"img1","type":"image",
                  "contentProvider":{"type":"external","originalContentUrl":"https://x/o.jpg",
                                     "previewImageUrl":"https://x/p.jpg"},
                  "imageSet":{"id":"set","index":1,"total":2}}}"#,
        );
        let Some(Event {
            kind: EventKind::Message(Message::Image(img)),
            source,
            ..
        }) = ev
        else {
            panic!("not an image event")
        };
        assert_eq!(img.id, "img1");
        assert_eq!(img.content_provider.provider, ProviderType::External);
        assert_eq!(
            img.content_provider.original_content_url.as_deref(),
            Some("https://x/o.jpg")
        );
        assert_eq!(img.image_set.and_then(|s| s.total), Some(2));
        assert_eq!(
            source,
            Some(Source::Room {
                room_id: "R1".into(),
                user_id: None
            })
        );
    }

    #[test]
    fn unknown_event_type_parses_as_other_even_with_odd_fields() {
        let ev = one_event(
            r#"{"type":"somethingNew","mode":"active","timestamp":1,"webhookEventId":"e",
                "message":[1,2,3],"source":{"type":"user","userId":"U1"}}"#,
        );
        assert_eq!(
            ev.map(|e| e.kind),
            Some(EventKind::Other {
                event_type: "somethingNew".into()
            })
        );
    }

    #[test]
    fn follow_event_without_message_parses() {
        let ev = one_event(
            r#"{"type":"follow","mode":"active","timestamp":1,"webhookEventId":"e",
                "source":{"type":"user","userId":"U1"},"replyToken":"rt",
                "follow":{"isUnblocked":false}}"#,
        );
        assert!(matches!(
            ev.map(|e| e.kind),
            Some(EventKind::Other { event_type }) if event_type == "follow"
        ));
    }

    #[test]
    fn unknown_message_type_parses_as_other() {
        let ev = one_event(
            r#"{"type":"message","mode":"active","timestamp":1,"webhookEventId":"e",
                "source":{"type":"user","userId":"U1"},
                "message":{"id":"s1","type":"sticker","packageId":"1","stickerId":"2"}}"#,
        );
        assert_eq!(
            ev.map(|e| e.kind),
            Some(EventKind::Message(Message::Other {
                message_type: "sticker".into(),
                id: Some("s1".into())
            }))
        );
    }

    #[test]
    fn unknown_mode_and_source_parse_to_catch_alls() {
        let ev = one_event(
            r#"{"type":"message","mode":"sleeping","timestamp":1,"webhookEventId":"e",
                "source":{"type":"space","spaceId":"S1"},
                "message":{"id":"m","type":"text","text":"x"}}"#,
        );
        let Some(ev) = ev else {
            panic!("did not parse")
        };
        assert_eq!(ev.mode, Mode::Unknown);
        assert_eq!(ev.source, Some(Source::Other));
    }

    #[test]
    fn standby_mode_parses() {
        let ev = one_event(
            r#"{"type":"message","mode":"standby","timestamp":1,"webhookEventId":"e",
                "source":{"type":"user","userId":"U1"},
                "message":{"id":"m","type":"text","text":"x"}}"#,
        );
        assert_eq!(ev.map(|e| e.mode), Some(Mode::Standby));
    }

    #[test]
    fn empty_events_list_is_a_valid_body() {
        let body = parse(r#"{"destination":"Ubot","events":[]}"#);
        assert!(body.is_ok_and(|b| b.events.is_empty()));
    }

    #[test]
    fn message_event_without_event_id_is_rejected() {
        let body = parse(
            r#"{"destination":"Ubot","events":[{"type":"message","mode":"active","timestamp":1,
                "source":{"type":"user","userId":"U1"},
                "message":{"id":"m","type":"text","text":"x"}}]}"#,
        );
        assert!(body.is_err());
    }

    #[test]
    fn text_message_without_text_is_rejected() {
        let body = parse(
            r#"{"destination":"Ubot","events":[{"type":"message","mode":"active","timestamp":1,
                "webhookEventId":"e","source":{"type":"user","userId":"U1"},
                "message":{"id":"m","type":"text"}}]}"#,
        );
        assert!(body.is_err());
    }

    #[test]
    fn empty_reply_token_counts_as_absent() {
        let ev = one_event(
            r#"{"type":"message","mode":"active","timestamp":1,"webhookEventId":"e",
                "replyToken":"","source":{"type":"user","userId":"U1"},
                "message":{"id":"m","type":"text","text":"x"}}"#,
        );
        assert_eq!(ev.and_then(|e| e.reply_token), None);
    }

    #[test]
    fn source_helpers_give_keys_targets_and_users() {
        let g = Source::Group {
            group_id: "C9".into(),
            user_id: Some("U2".into()),
        };
        assert_eq!(g.session_key().as_deref(), Some("line:group:C9"));
        assert_eq!(g.push_target(), Some("C9"));
        assert_eq!(g.user_id(), Some("U2"));
        assert!(g.is_multi_person());
        let u = Source::User {
            user_id: "U1".into(),
        };
        assert_eq!(u.session_key().as_deref(), Some("line:user:U1"));
        assert!(!u.is_multi_person());
        let r = Source::Room {
            room_id: "R3".into(),
            user_id: None,
        };
        assert_eq!(r.session_key().as_deref(), Some("line:room:R3"));
        assert_eq!(Source::Other.session_key(), None);
    }
}
