//! Telegram Bot API wire types: the `Update` Telegram POSTs to the webhook, and the answers
//! of the methods the gateway calls (`sendMessage`, `getFile`).
//!
//! Only what the gateway acts on is modelled; every other field is skipped, and an update
//! of any other kind (`edited_message`, `callback_query`, `channel_post`, …) parses with no
//! `message`, so a kind Telegram adds later is acknowledged, not refused (a refusal makes
//! Telegram redeliver it for hours).

use serde::Deserialize;

/// One webhook request body.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Update {
    /// Telegram's id of the update (the same on a redelivery).
    pub update_id: i64,
    /// A new message, when the update is one.
    #[serde(default)]
    pub message: Option<Message>,
}

impl Update {
    /// Parses a raw request body (check the secret token first).
    pub fn from_slice(raw_body: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(raw_body)
    }
}

/// A message.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Message {
    /// Its id, unique within its chat.
    pub message_id: i64,
    /// The forum topic it is in (with `is_topic_message`).
    #[serde(default)]
    pub message_thread_id: Option<i64>,
    /// True when it was sent in a forum topic.
    #[serde(default)]
    pub is_topic_message: Option<bool>,
    /// The sender (absent for messages sent on behalf of a chat).
    #[serde(default)]
    pub from: Option<User>,
    /// The chat it was sent in.
    pub chat: Chat,
    /// Its text, for a text message.
    #[serde(default)]
    pub text: Option<String>,
    /// The caption of a photo (or other media).
    #[serde(default)]
    pub caption: Option<String>,
    /// A photo, in the sizes Telegram has it (smallest first).
    #[serde(default)]
    pub photo: Vec<PhotoSize>,
}

/// A user or bot.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct User {
    /// Their id.
    pub id: i64,
    /// True for bots.
    #[serde(default)]
    pub is_bot: bool,
}

/// A chat.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Chat {
    /// Its id (negative for groups).
    pub id: i64,
    /// What kind of chat.
    #[serde(rename = "type")]
    pub kind: ChatType,
}

/// The kind of a chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatType {
    /// A one-to-one chat with the bot.
    Private,
    /// A group.
    Group,
    /// A supergroup (forum topics live here).
    Supergroup,
    /// A channel.
    Channel,
    /// A kind this code does not know.
    #[serde(other)]
    Other,
}

/// One size of a photo.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PhotoSize {
    /// The id `getFile` takes.
    pub file_id: String,
    /// Width in pixels.
    #[serde(default)]
    pub width: u32,
    /// Height in pixels.
    #[serde(default)]
    pub height: u32,
    /// Size in bytes, when Telegram says.
    #[serde(default)]
    pub file_size: Option<u64>,
}

/// Every Bot API answer: `ok` and the `result`, or the error.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ApiAnswer<T> {
    /// Whether the call succeeded.
    pub ok: bool,
    /// What it returned.
    #[serde(default = "none")]
    pub result: Option<T>,
    /// What went wrong, for a person.
    #[serde(default)]
    pub description: Option<String>,
    /// How long to wait before trying again (on a 429).
    #[serde(default)]
    pub parameters: Option<ResponseParameters>,
}

fn none<T>() -> Option<T> {
    None
}

/// Why a call failed, when Telegram says more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct ResponseParameters {
    /// Seconds to wait before the next call (a flood limit).
    #[serde(default)]
    pub retry_after: Option<u64>,
}

/// `getFile`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct FileInfo {
    /// Its size in bytes, when Telegram says.
    #[serde(default)]
    pub file_size: Option<u64>,
    /// Where it is downloaded from: `<api_base>/file/bot<token>/<file_path>`.
    #[serde(default)]
    pub file_path: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_photo_message_parses_and_other_update_kinds_have_no_message() {
        let body = br#"{"update_id":7,"message":{"message_id":3,"date":1,
            "from":{"id":42,"is_bot":false,"first_name":"A"},
            "chat":{"id":42,"type":"private","first_name":"A"},
            "caption":"look","photo":[{"file_id":"s","file_unique_id":"u","width":90,"height":60,"file_size":900},
                                      {"file_id":"b","file_unique_id":"v","width":900,"height":600}]}}"#;
        let u = Update::from_slice(body).unwrap();
        let m = u.message.unwrap();
        assert_eq!(
            (m.chat.id, m.chat.kind, m.message_id),
            (42, ChatType::Private, 3)
        );
        assert_eq!(m.photo.len(), 2);
        assert_eq!(m.photo[0].file_size, Some(900));
        assert_eq!(m.caption.as_deref(), Some("look"));

        for other in [
            r#"{"update_id":8,"edited_message":{"message_id":3}}"#,
            r#"{"update_id":9,"callback_query":{"id":"x"}}"#,
            r#"{"update_id":10,"some_future_kind":{"a":[1,2]}}"#,
        ] {
            let u = Update::from_slice(other.as_bytes()).unwrap();
            assert!(u.message.is_none(), "{other}");
        }
        let forum =
            br#"{"update_id":1,"message":{"message_id":1,"chat":{"id":-100,"type":"forum"}}}"#;
        let m = Update::from_slice(forum).unwrap().message.unwrap();
        assert_eq!(m.chat.kind, ChatType::Other);
    }

    #[test]
    fn bodies_that_are_not_updates_are_errors() {
        for bad in [
            &b"{\"update_id\":1,\"message\":{\"message_id\":1,\"chat\":{\"id\":1,\"type\":\"private\"},\"text\":\"a\x00b\"}}"[..],
            b"{\"update_id\":",
            b"[]",
            b"{\"message\":{}}",
            b"{\"update_id\":\"seven\"}",
            b"\xff\xfe",
        ] {
            assert!(Update::from_slice(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn answers_carry_the_result_or_the_wait() {
        let ok: ApiAnswer<FileInfo> = serde_json::from_str(
            r#"{"ok":true,"result":{"file_id":"b","file_unique_id":"v","file_size":5,"file_path":"photos/file_1.jpg"}}"#,
        )
        .unwrap();
        assert_eq!(
            ok.result.and_then(|f| f.file_path).as_deref(),
            Some("photos/file_1.jpg")
        );
        let limited: ApiAnswer<serde_json::Value> = serde_json::from_str(
            r#"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 3","parameters":{"retry_after":3}}"#,
        )
        .unwrap();
        assert!(!limited.ok);
        assert_eq!(limited.parameters.and_then(|p| p.retry_after), Some(3));
    }
}
