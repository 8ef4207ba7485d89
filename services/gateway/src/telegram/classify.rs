//! Decides, per update, whether it starts a conversation turn or is acknowledged without one,
//! and what the turn's keys are.
//!
//! Which group messages reach the bot is Telegram's choice (privacy mode: commands,
//! mentions and replies to the bot), so every message that arrives counts.

use super::wire::{Chat, ChatType, Message, PhotoSize, Update};

/// Settings that affect classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TelegramConfig<'a> {
    /// Our bot's username (without `@`): removed from `/command@<it>` and `@<it>`.
    pub bot_username: Option<&'a str>,
    /// The largest photo size that may be chosen (`media.max_image_bytes`).
    pub max_image_bytes: u64,
}

/// What the gateway should do with one update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TelegramAction {
    /// Start a conversation turn.
    StartTurn(TelegramTurn),
    /// Acknowledge without a turn; never an error.
    Ignore {
        /// Why.
        reason: IgnoreReason,
    },
}

/// Everything the gateway needs to start a turn and answer it later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelegramTurn {
    /// Message identity `telegram:msg:{chat}:{message}`: the durable dedup key.
    pub dedup_key: String,
    /// Conversation key: `telegram:user:{chat}` for a private chat, `telegram:group:{chat}`
    /// for a group (`…:{topic}` in a forum topic).
    pub session_key: String,
    /// Sender's user id (the chat's, for messages sent on behalf of a chat).
    pub speaker: String,
    /// The text, or a photo's caption, with our bot's address removed (may be empty with a
    /// photo).
    pub text: String,
    /// The photo size to download, when a photo came.
    pub photo: Option<PhotoSize>,
    /// The chat to answer in.
    pub chat_id: i64,
    /// The forum topic to answer in.
    pub message_thread_id: Option<i64>,
    /// The message the answer quotes (in groups, so it is clear whom it answers).
    pub reply_to_message_id: Option<i64>,
}

/// Why an update does not start a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IgnoreReason {
    /// Not a new message (an edit, a button press, a channel post, …).
    NotAMessage,
    /// Sent by a bot: never answer bots, or two bots answer each other forever.
    FromBot,
    /// A channel, or a chat kind this code does not know.
    UnsupportedChat,
    /// Neither text nor a photo (a sticker, a voice message, …).
    UnsupportedMessage,
    /// Nothing left after removing our bot's address.
    EmptyText,
}

impl IgnoreReason {
    /// Short stable label for logs.
    pub fn as_str(&self) -> &'static str {
        match self {
            IgnoreReason::NotAMessage => "not_a_message",
            IgnoreReason::FromBot => "from_bot",
            IgnoreReason::UnsupportedChat => "unsupported_chat",
            IgnoreReason::UnsupportedMessage => "unsupported_message",
            IgnoreReason::EmptyText => "empty_text",
        }
    }
}

/// The message-identity dedup key of message `message_id` in chat `chat_id`.
pub fn message_dedup_key(chat_id: i64, message_id: i64) -> String {
    format!("telegram:msg:{chat_id}:{message_id}")
}

/// Classifies one update.
///
/// Rules, in order: only new messages count; a bot's message is ignored; private chats,
/// groups and supergroups count, channels do not; the text (else the caption) loses our
/// bot's address; a photo's largest size within `max_image_bytes` is chosen; a message
/// with neither text nor a photo is ignored.
pub fn classify(update: &Update, cfg: &TelegramConfig<'_>) -> TelegramAction {
    let ignore = |reason| TelegramAction::Ignore { reason };
    let Some(message) = &update.message else {
        return ignore(IgnoreReason::NotAMessage);
    };
    if message.from.as_ref().is_some_and(|u| u.is_bot) {
        return ignore(IgnoreReason::FromBot);
    }
    let Some(session_key) = session_key(&message.chat, topic(message)) else {
        return ignore(IgnoreReason::UnsupportedChat);
    };
    let raw = message.text.as_deref().or(message.caption.as_deref());
    let photo = choose_photo(&message.photo, cfg.max_image_bytes);
    if raw.is_none() && photo.is_none() {
        return ignore(IgnoreReason::UnsupportedMessage);
    }
    let text = strip_bot_address(raw.unwrap_or_default(), cfg.bot_username);
    if text.is_empty() && photo.is_none() {
        return ignore(IgnoreReason::EmptyText);
    }
    let chat = &message.chat;
    let speaker = message.from.as_ref().map_or(chat.id, |u| u.id);
    TelegramAction::StartTurn(TelegramTurn {
        dedup_key: message_dedup_key(chat.id, message.message_id),
        session_key,
        speaker: speaker.to_string(),
        text,
        photo,
        chat_id: chat.id,
        message_thread_id: topic(message),
        reply_to_message_id: (chat.kind != ChatType::Private).then_some(message.message_id),
    })
}

/// The forum topic a message is in, if any.
fn topic(message: &Message) -> Option<i64> {
    message
        .message_thread_id
        .filter(|_| message.is_topic_message == Some(true))
}

/// One conversation per private chat, group, and forum topic.
fn session_key(chat: &Chat, topic: Option<i64>) -> Option<String> {
    let id = chat.id;
    match (chat.kind, topic) {
        (ChatType::Private, _) => Some(format!("telegram:user:{id}")),
        (ChatType::Group | ChatType::Supergroup, None) => Some(format!("telegram:group:{id}")),
        (ChatType::Group | ChatType::Supergroup, Some(t)) => {
            Some(format!("telegram:group:{id}:{t}"))
        }
        (ChatType::Channel | ChatType::Other, _) => None,
    }
}

/// The largest size whose known size is within `max_bytes`, else the smallest (whose
/// download then stops at the limit, and the turn goes on without it).
fn choose_photo(sizes: &[PhotoSize], max_bytes: u64) -> Option<PhotoSize> {
    let fits = |p: &&PhotoSize| p.file_size.is_none_or(|n| n <= max_bytes);
    let area = |p: &&PhotoSize| u64::from(p.width) * u64::from(p.height);
    sizes
        .iter()
        .filter(fits)
        .max_by_key(area)
        .or_else(|| sizes.iter().min_by_key(area))
        .cloned()
}

/// Removes our bot's address: `/command@bot` becomes `/command` (the router reads commands
/// without it), and an `@bot` mention standing alone is dropped (one of the spaces around it
/// with it). Usernames compare without case, as Telegram's do. The result is trimmed;
/// everything else (newlines of code included) is kept.
pub fn strip_bot_address(text: &str, bot_username: Option<&str>) -> String {
    let Some(bot) = bot_username.filter(|b| !b.is_empty()) else {
        return text.trim().to_owned();
    };
    let handle = format!("@{bot}");
    let is_name_byte = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = text.as_bytes();
    let command_end = text
        .starts_with('/')
        .then(|| text.find(char::is_whitespace).unwrap_or(text.len()));
    let mut out = String::with_capacity(text.len());
    let mut cursor = 0;
    let mut at = 0;
    while let Some(found) = text.get(at..).and_then(|rest| rest.find('@')) {
        let start = at + found;
        let end = start + handle.len();
        at = start + 1;
        let matches = text
            .get(start..end)
            .is_some_and(|h| h.eq_ignore_ascii_case(&handle));
        let ends_name = bytes.get(end).is_none_or(|b| !is_name_byte(*b));
        let in_command = command_end.is_some_and(|c| end <= c);
        let stands_alone = start == 0 || bytes[start - 1].is_ascii_whitespace();
        if !(matches && ends_name && (in_command || stands_alone)) {
            continue;
        }
        let kept = &text[cursor..start];
        if out.ends_with(char::is_whitespace) {
            out.push_str(kept.trim_start());
        } else {
            out.push_str(kept);
        }
        cursor = end;
        at = end;
        if !in_command && out.ends_with(char::is_whitespace) {
            // The mention's own space: the text after it joins with one space only.
            let rest = &text[cursor..];
            cursor += rest.len() - rest.trim_start_matches([' ', '\t']).len();
        }
    }
    out.push_str(&text[cursor..]);
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: TelegramConfig<'static> = TelegramConfig {
        bot_username: Some("GhostBot"),
        max_image_bytes: 1000,
    };

    fn update(message: &str) -> Update {
        Update::from_slice(format!(r#"{{"update_id":5,"message":{message}}}"#).as_bytes())
            .unwrap_or_else(|e| panic!("bad test json: {e}"))
    }

    fn private(text: &str) -> Update {
        update(&format!(
            r#"{{"message_id":11,"date":1,"from":{{"id":42,"is_bot":false}},
                "chat":{{"id":42,"type":"private"}},"text":{}}}"#,
            serde_json::Value::from(text)
        ))
    }

    fn turn(action: TelegramAction) -> TelegramTurn {
        match action {
            TelegramAction::StartTurn(t) => t,
            TelegramAction::Ignore { reason } => panic!("ignored: {reason:?}"),
        }
    }

    fn reason(action: TelegramAction) -> IgnoreReason {
        match action {
            TelegramAction::Ignore { reason } => reason,
            TelegramAction::StartTurn(t) => panic!("started a turn: {t:?}"),
        }
    }

    #[test]
    fn a_private_text_starts_a_turn_with_all_its_keys() {
        let t = turn(classify(&private("こんにちは"), &CFG));
        assert_eq!(t.session_key, "telegram:user:42");
        assert_eq!(t.dedup_key, "telegram:msg:42:11");
        assert_eq!((t.speaker.as_str(), t.text.as_str()), ("42", "こんにちは"));
        assert_eq!(
            (t.chat_id, t.message_thread_id, t.reply_to_message_id),
            (42, None, None)
        );
        assert!(t.photo.is_none());
    }

    #[test]
    fn a_group_message_quotes_and_a_topic_is_its_own_conversation() {
        let group = update(
            r#"{"message_id":7,"from":{"id":1},"chat":{"id":-100200,"type":"supergroup"},"text":"hi"}"#,
        );
        let t = turn(classify(&group, &CFG));
        assert_eq!(t.session_key, "telegram:group:-100200");
        assert_eq!(t.reply_to_message_id, Some(7));
        let topic = update(
            r#"{"message_id":8,"message_thread_id":3,"is_topic_message":true,"from":{"id":1},
                "chat":{"id":-100200,"type":"supergroup"},"text":"hi"}"#,
        );
        let t = turn(classify(&topic, &CFG));
        assert_eq!(t.session_key, "telegram:group:-100200:3");
        assert_eq!(t.message_thread_id, Some(3));
        // A reply in a thread that is not a forum topic stays in the group's conversation.
        let reply = update(
            r#"{"message_id":9,"message_thread_id":3,"from":{"id":1},
                "chat":{"id":-5,"type":"group"},"text":"hi"}"#,
        );
        let t = turn(classify(&reply, &CFG));
        assert_eq!(
            (t.session_key.as_str(), t.message_thread_id),
            ("telegram:group:-5", None)
        );
    }

    #[test]
    fn what_is_not_a_person_s_new_text_or_photo_is_acknowledged_without_a_turn() {
        let cases = [
            (
                Update::from_slice(br#"{"update_id":1,"edited_message":{"message_id":1}}"#)
                    .unwrap(),
                IgnoreReason::NotAMessage,
            ),
            (
                update(
                    r#"{"message_id":1,"from":{"id":9,"is_bot":true},"chat":{"id":9,"type":"private"},"text":"beep"}"#,
                ),
                IgnoreReason::FromBot,
            ),
            (
                update(r#"{"message_id":1,"chat":{"id":-9,"type":"channel"},"text":"news"}"#),
                IgnoreReason::UnsupportedChat,
            ),
            (
                update(
                    r#"{"message_id":1,"from":{"id":9},"chat":{"id":9,"type":"private"},"sticker":{"file_id":"x"}}"#,
                ),
                IgnoreReason::UnsupportedMessage,
            ),
            (private("   "), IgnoreReason::EmptyText),
            (private("@GhostBot"), IgnoreReason::EmptyText),
        ];
        for (update, expected) in cases {
            assert_eq!(reason(classify(&update, &CFG)), expected, "{update:?}");
        }
    }

    #[test]
    fn a_photo_picks_the_largest_size_within_the_limit_and_keeps_its_caption() {
        let photo = update(
            r#"{"message_id":4,"from":{"id":42},"chat":{"id":42,"type":"private"},"caption":"これ見て",
                "photo":[{"file_id":"s","width":90,"height":90,"file_size":100},
                         {"file_id":"m","width":320,"height":320,"file_size":900},
                         {"file_id":"l","width":1280,"height":1280,"file_size":5000}]}"#,
        );
        let t = turn(classify(&photo, &CFG));
        assert_eq!(t.photo.map(|p| p.file_id).as_deref(), Some("m"));
        assert_eq!(t.text, "これ見て");
        let alone = update(
            r#"{"message_id":4,"from":{"id":42},"chat":{"id":42,"type":"private"},
                "photo":[{"file_id":"l","width":1280,"height":1280,"file_size":5000},
                         {"file_id":"xl","width":2560,"height":2560,"file_size":9000}]}"#,
        );
        let t = turn(classify(&alone, &CFG));
        assert_eq!(
            t.photo.map(|p| p.file_id).as_deref(),
            Some("l"),
            "the smallest"
        );
        assert_eq!(t.text, "");
    }

    #[test]
    fn the_bot_s_address_is_removed_from_commands_and_mentions_only() {
        let strip = |t: &str| strip_bot_address(t, Some("GhostBot"));
        assert_eq!(strip("/local@GhostBot"), "/local");
        assert_eq!(strip("/local@ghostbot please"), "/local please");
        assert_eq!(strip("@GhostBot hello"), "hello");
        assert_eq!(strip("hey @GhostBot how are you"), "hey how are you");
        assert_eq!(strip("hey @GhostBot"), "hey");
        assert_eq!(strip("/local@OtherBot"), "/local@OtherBot");
        assert_eq!(strip("@GhostBotter hi"), "@GhostBotter hi");
        assert_eq!(strip("mail me@GhostBot.com"), "mail me@GhostBot.com");
        assert_eq!(strip("/code\n```\nx = 1\n```"), "/code\n```\nx = 1\n```");
        assert_eq!(strip("🍎 @GhostBot 🍏"), "🍎 🍏");
        assert_eq!(
            strip_bot_address(" /local@GhostBot ", None),
            "/local@GhostBot"
        );
    }
}
