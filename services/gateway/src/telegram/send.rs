//! `sendMessage` request bodies: a reply in parts within Telegram's length limit, in the
//! chat (and forum topic) it answers, the first part quoting the message in groups.
//!
//! The text goes without `parse_mode`: model output is shown as written and can never form
//! markup or links Telegram would render.

use serde::Serialize;

use ghost_shared::events::ReplyTarget;

/// Path of the method under `<api_base>/bot<token>/`.
pub const SEND_MESSAGE_METHOD: &str = "sendMessage";

/// Telegram's longest message, in UTF-16 units (its unit of counting).
pub const MAX_TEXT_UNITS: usize = 4096;

/// Body of a `sendMessage` call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SendMessage {
    /// The chat.
    pub chat_id: i64,
    /// The forum topic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_thread_id: Option<i64>,
    /// The text, plain.
    pub text: String,
    /// The message it quotes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_parameters: Option<ReplyParameters>,
}

/// The message a reply quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ReplyParameters {
    /// The quoted message.
    pub message_id: i64,
    /// Send anyway when it was deleted meanwhile.
    pub allow_sending_without_reply: bool,
}

/// Why no body could be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SendBuildError {
    /// The target is another platform's.
    #[error("not a Telegram chat")]
    NotTelegram,
    /// Nothing to send.
    #[error("text is empty")]
    EmptyText,
}

/// The `sendMessage` bodies sending `text` to `target`, in order: parts of at most
/// `max_units` UTF-16 units (split at a newline, else a space, never inside a character).
pub fn send_message_bodies(
    target: &ReplyTarget,
    text: &str,
    max_units: usize,
) -> Result<Vec<SendMessage>, SendBuildError> {
    let ReplyTarget::Telegram {
        chat_id,
        message_thread_id,
        reply_to_message_id,
    } = target
    else {
        return Err(SendBuildError::NotTelegram);
    };
    let max_units = max_units.clamp(1, MAX_TEXT_UNITS);
    let parts: Vec<String> = crate::line::split_text(text, max_units, 1)
        .into_iter()
        .flatten()
        .collect();
    if parts.is_empty() {
        return Err(SendBuildError::EmptyText);
    }
    Ok(parts
        .into_iter()
        .enumerate()
        .map(|(i, text)| SendMessage {
            chat_id: *chat_id,
            message_thread_id: *message_thread_id,
            text,
            reply_parameters: reply_to_message_id.filter(|_| i == 0).map(|message_id| {
                ReplyParameters {
                    message_id,
                    allow_sending_without_reply: true,
                }
            }),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group() -> ReplyTarget {
        ReplyTarget::Telegram {
            chat_id: -100,
            message_thread_id: Some(3),
            reply_to_message_id: Some(7),
        }
    }

    #[test]
    fn a_long_reply_is_split_within_the_limit_and_only_the_first_part_quotes() {
        let text = "one two three four five six";
        let bodies = send_message_bodies(&group(), text, 10).unwrap();
        let texts: Vec<&str> = bodies.iter().map(|b| b.text.as_str()).collect();
        assert_eq!(texts, ["one two", "three", "four five", "six"]);
        assert!(bodies.iter().all(|b| b.text.encode_utf16().count() <= 10));
        assert!(bodies
            .iter()
            .all(|b| (b.chat_id, b.message_thread_id) == (-100, Some(3))));
        assert_eq!(bodies[0].reply_parameters.map(|r| r.message_id), Some(7));
        assert!(bodies[1..].iter().all(|b| b.reply_parameters.is_none()));
        let json = serde_json::to_value(&bodies[1]).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"chat_id": -100, "message_thread_id": 3, "text": "three"})
        );
    }

    #[test]
    fn the_limit_is_telegram_s_at_most_and_empty_or_foreign_targets_are_refused() {
        let long = "あ".repeat(5000);
        let bodies = send_message_bodies(&group(), &long, 100_000).unwrap();
        assert_eq!(bodies[0].text.encode_utf16().count(), MAX_TEXT_UNITS);
        assert_eq!(
            send_message_bodies(&group(), "  \n ", 100),
            Err(SendBuildError::EmptyText)
        );
        let slack = ReplyTarget::Slack {
            channel: "C1".into(),
            thread_ts: "1.1".into(),
        };
        assert_eq!(
            send_message_bodies(&slack, "hi", 100),
            Err(SendBuildError::NotTelegram)
        );
    }
}
