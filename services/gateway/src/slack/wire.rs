//! Slack Events API wire types: the JSON body Slack POSTs to our request URL (parsed here,
//! handled by `webhooks::slack`).
//!
//! Unknown envelope and inner event types deserialize into catch-alls: Slack sends many event
//! types whose fields have other shapes (`channel` or `user` as objects), and none of them may
//! make us reject the request, because Slack would then retry it.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// Header with the retry count of a redelivered event (absent on the first delivery).
pub const RETRY_NUM_HEADER: &str = "x-slack-retry-num";

/// Header with the reason of a redelivery (`http_timeout`, `http_error`, …).
pub const RETRY_REASON_HEADER: &str = "x-slack-retry-reason";

/// The outer envelope.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Envelope {
    /// Endpoint check when the request URL is configured: echo the challenge.
    UrlVerification {
        /// The value to echo back.
        challenge: String,
    },
    /// A subscribed event happened (boxed: far larger than the other variants).
    EventCallback(Box<EventCallback>),
    /// Any other envelope type (e.g. `app_rate_limited`).
    #[serde(other)]
    Other,
}

impl Envelope {
    /// Parses a raw request body (verify the signature first).
    pub fn from_slice(raw_body: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(raw_body)
    }
}

/// An `event_callback` envelope.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct EventCallback {
    /// Slack's id of this event delivery; the same on every retry of it.
    pub event_id: String,
    /// When the event was dispatched, Unix seconds.
    pub event_time: i64,
    /// Workspace id.
    #[serde(default)]
    pub team_id: Option<String>,
    /// Our app's id.
    #[serde(default)]
    pub api_app_id: Option<String>,
    /// The event itself.
    pub event: InnerEvent,
    /// Who the event is visible to: for a bot install, our bot user (`is_bot`).
    #[serde(default)]
    pub authorizations: Vec<Authorization>,
}

impl EventCallback {
    /// Our bot's user id as the envelope names it (the bot authorization, else the only
    /// one).
    pub fn bot_user_id(&self) -> Option<&str> {
        let bot = self.authorizations.iter().find(|a| a.is_bot == Some(true));
        let only = (self.authorizations.len() == 1).then(|| &self.authorizations[0]);
        bot.or(only)
            .and_then(|a| a.user_id.as_deref())
            .filter(|id| !id.is_empty())
    }
}

/// One entry of an envelope's `authorizations`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
pub struct Authorization {
    /// The user the event is visible to (our bot user for a bot install).
    #[serde(default)]
    pub user_id: Option<String>,
    /// Whether that user is a bot.
    #[serde(default)]
    pub is_bot: Option<bool>,
}

/// The inner event.
#[derive(Debug, Clone, PartialEq)]
pub enum InnerEvent {
    /// A `message` event (any channel type, any subtype).
    Message(MessageEvent),
    /// An `app_mention` event: someone mentioned our bot.
    AppMention(MessageEvent),
    /// Any other event type, kept by name for the log.
    Other {
        /// The `type` string Slack sent.
        event_type: String,
    },
}

/// Fields shared by `message` and `app_mention` events. All optional because subtypes such as
/// `message_changed` omit some of them; classification decides what is required.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
pub struct MessageEvent {
    /// Sender's user id.
    #[serde(default)]
    pub user: Option<String>,
    /// Set when a bot (any bot, including ours) posted the message.
    #[serde(default)]
    pub bot_id: Option<String>,
    /// Message subtype (`bot_message`, `message_changed`, `message_deleted`, …).
    #[serde(default)]
    pub subtype: Option<String>,
    /// Message text in Slack's markup (`<@U…>` mentions, `&lt;` escapes).
    #[serde(default)]
    pub text: Option<String>,
    /// Channel id.
    #[serde(default)]
    pub channel: Option<String>,
    /// The message's timestamp: its id within the channel.
    #[serde(default)]
    pub ts: Option<String>,
    /// Parent message timestamp when the message is in a thread.
    #[serde(default)]
    pub thread_ts: Option<String>,
    /// `channel`, `group`, `im` or `mpim` (message events only).
    #[serde(default)]
    pub channel_type: Option<String>,
    /// When the event happened.
    #[serde(default)]
    pub event_ts: Option<String>,
    /// Files shared with the message, as sent (parsed leniently by [`MessageEvent::images`]).
    #[serde(default)]
    pub files: Vec<Value>,
}

/// An image shared with a Slack message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlackImage {
    /// Slack's file id.
    pub file_id: String,
    /// `url_private_download` (else `url_private`): fetched with the bot token.
    pub url: String,
    /// `mimetype`, e.g. `image/png`.
    pub mimetype: String,
}

impl MessageEvent {
    /// The shared files that are images with an id and a download URL, in order; anything
    /// else among `files` is skipped, never an error.
    pub fn images(&self) -> Vec<SlackImage> {
        self.files
            .iter()
            .filter_map(|f| {
                let field = |k: &str| f.get(k).and_then(Value::as_str).filter(|v| !v.is_empty());
                let mimetype = field("mimetype").filter(|m| m.starts_with("image/"))?;
                Some(SlackImage {
                    file_id: field("id")?.to_owned(),
                    url: field("url_private_download")
                        .or_else(|| field("url_private"))?
                        .to_owned(),
                    mimetype: mimetype.to_owned(),
                })
            })
            .collect()
    }
}

impl<'de> Deserialize<'de> for InnerEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let event_type = value
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| D::Error::missing_field("type"))?
            .to_owned();
        match event_type.as_str() {
            "message" => serde_json::from_value(value)
                .map(InnerEvent::Message)
                .map_err(D::Error::custom),
            "app_mention" => serde_json::from_value(value)
                .map(InnerEvent::AppMention)
                .map_err(D::Error::custom),
            _ => Ok(InnerEvent::Other { event_type }),
        }
    }
}

/// Parses the `X-Slack-Retry-Num` header; anything unparseable counts as "not a retry".
pub fn parse_retry_num(header: Option<&str>) -> Option<u32> {
    header.and_then(|h| h.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Envelope {
        match Envelope::from_slice(json.as_bytes()) {
            Ok(e) => e,
            Err(err) => panic!("did not parse: {err}"),
        }
    }

    #[test]
    fn url_verification() {
        assert_eq!(
            parse(r#"{"token":"t","challenge":"abc123","type":"url_verification"}"#),
            Envelope::UrlVerification {
                challenge: "abc123".into()
            }
        );
    }

    #[test]
    fn event_callback_with_message() {
        let env = parse(
            r#"{"token":"t","team_id":"T1","api_app_id":"A1","type":"event_callback",
                "event_id":"Ev1","event_time":1355517523,
                "authorizations":[{"team_id":"T1","user_id":"U0","is_bot":true}],
                "event":{"type":"message","channel":"C1","user":"U2","text":"hi",
                         "ts":"1355517523.000005","event_ts":"1355517523.000005",
                         "channel_type":"channel"}}"#,
        );
        let Envelope::EventCallback(cb) = env else {
            panic!("not a callback")
        };
        assert_eq!(cb.event_id, "Ev1");
        assert_eq!(cb.event_time, 1_355_517_523);
        assert_eq!(cb.team_id.as_deref(), Some("T1"));
        let InnerEvent::Message(m) = cb.event else {
            panic!("not a message")
        };
        assert_eq!(m.user.as_deref(), Some("U2"));
        assert_eq!(m.channel.as_deref(), Some("C1"));
        assert_eq!(m.ts.as_deref(), Some("1355517523.000005"));
        assert_eq!(m.channel_type.as_deref(), Some("channel"));
        assert_eq!(m.thread_ts, None);
    }

    #[test]
    fn app_mention_with_thread() {
        let env = parse(
            r#"{"type":"event_callback","event_id":"Ev2","event_time":1,
                "event":{"type":"app_mention","user":"U2","text":"<@UBOT> hi",
                         "ts":"2.0","thread_ts":"1.0","channel":"C1"}}"#,
        );
        let Envelope::EventCallback(cb) = env else {
            panic!("not a callback")
        };
        let InnerEvent::AppMention(m) = cb.event else {
            panic!("not an app_mention")
        };
        assert_eq!(m.thread_ts.as_deref(), Some("1.0"));
        assert_eq!(m.text.as_deref(), Some("<@UBOT> hi"));
    }

    #[test]
    fn message_changed_with_nested_message_parses() {
        let env = parse(
            r#"{"type":"event_callback","event_id":"Ev3","event_time":1,
                "event":{"type":"message","subtype":"message_changed","channel":"C1",
                         "hidden":true,"ts":"3.0",
                         "message":{"type":"message","user":"U2","text":"edited","ts":"2.0"}}}"#,
        );
        let Envelope::EventCallback(cb) = env else {
            panic!("not a callback")
        };
        let InnerEvent::Message(m) = cb.event else {
            panic!("not a message")
        };
        assert_eq!(m.subtype.as_deref(), Some("message_changed"));
        assert_eq!(m.user, None);
    }

    #[test]
    fn unknown_inner_event_with_object_fields_parses_as_other() {
        let env = parse(
            r#"{"type":"event_callback","event_id":"Ev4","event_time":1,
                "event":{"type":"channel_created","channel":{"id":"C9","name":"x"},
                         "user":{"id":"U1"}}}"#,
        );
        let Envelope::EventCallback(cb) = env else {
            panic!("not a callback")
        };
        assert_eq!(
            cb.event,
            InnerEvent::Other {
                event_type: "channel_created".into()
            }
        );
    }

    #[test]
    fn unknown_envelope_type_parses_as_other() {
        assert_eq!(
            parse(r#"{"type":"app_rate_limited","minute_rate_limited":1518467820}"#),
            Envelope::Other
        );
    }

    #[test]
    fn malformed_bodies_are_errors_not_panics() {
        assert!(Envelope::from_slice(b"not json").is_err());
        assert!(Envelope::from_slice(br#"{"type":"url_verification"}"#).is_err());
        assert!(Envelope::from_slice(
            br#"{"type":"event_callback","event_id":"E","event_time":1,"event":{"text":"no type"}}"#
        )
        .is_err());
    }

    #[test]
    fn retry_num_header() {
        assert_eq!(parse_retry_num(Some("2")), Some(2));
        assert_eq!(parse_retry_num(Some(" 1 ")), Some(1));
        assert_eq!(parse_retry_num(Some("x")), None);
        assert_eq!(parse_retry_num(None), None);
    }
}
