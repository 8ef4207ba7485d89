//! Decides, per LINE webhook event, whether it starts a conversation turn or is ignored.

use super::wire::{ContentProvider, Event, EventKind, Mentionee, Message, Mode};

/// Per-channel LINE settings that affect classification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineConfig {
    /// In groups and rooms, answer only when the bot is mentioned (default true), so the
    /// persona does not butt into every message of a group chat.
    pub group_requires_mention: bool,
}

impl Default for LineConfig {
    fn default() -> Self {
        Self {
            group_requires_mention: true,
        }
    }
}

/// What the gateway should do with one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineAction {
    /// Start a conversation turn.
    StartTurn(LineTurn),
    /// Record the event as ignored; never an error.
    Ignore {
        /// Why it is ignored.
        reason: IgnoreReason,
    },
}

/// Everything the gateway needs to start a turn and answer it later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineTurn {
    /// Conversation key: `line:user:U…`, `line:group:C…` or `line:room:R…`.
    pub session_key: String,
    /// What the user sent.
    pub input: TurnInput,
    /// Single-use reply token, if the event carried one.
    pub reply_token: Option<String>,
    /// LINE's event id: the durable dedup key (stable across redeliveries).
    pub webhook_event_id: String,
    /// The sender, when LINE discloses it.
    pub user_id: Option<String>,
    /// Where a push message must go to reach this chat (user, group or room id).
    pub push_to: String,
    /// LINE redelivered this event; its reply token is likely stale, so prefer push.
    pub is_redelivery: bool,
    /// Event time, milliseconds since the Unix epoch.
    pub timestamp_ms: i64,
}

/// The user's input for a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnInput {
    /// Text, with the bot's own mention removed.
    Text {
        /// The text to hand to the router.
        text: String,
    },
    /// An image; the gateway fetches the bytes into the media store.
    Image {
        /// Message id (the key for LINE's content API).
        message_id: String,
        /// Where the bytes live.
        content_provider: ContentProvider,
    },
}

/// Why an event does not start a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IgnoreReason {
    /// The channel is in standby (another module channel answers) or an unknown mode.
    NotActive,
    /// Not a message event (follow, join, postback, …).
    NotAMessage {
        /// The event type.
        event_type: String,
    },
    /// A message type we do not handle (sticker, video, …).
    UnsupportedMessage {
        /// The message type.
        message_type: String,
    },
    /// No usable source (absent or of an unknown type): nowhere to answer.
    UnknownSource,
    /// A group or room message that does not mention the bot.
    NotMentioned,
    /// Nothing left to answer after removing the bot's mention.
    EmptyText,
}

impl IgnoreReason {
    /// Short stable label for logs and the ignored-event record.
    pub fn as_str(&self) -> &'static str {
        match self {
            IgnoreReason::NotActive => "not_active",
            IgnoreReason::NotAMessage { .. } => "not_a_message",
            IgnoreReason::UnsupportedMessage { .. } => "unsupported_message",
            IgnoreReason::UnknownSource => "unknown_source",
            IgnoreReason::NotMentioned => "not_mentioned",
            IgnoreReason::EmptyText => "empty_text",
        }
    }
}

/// Classifies one event.
///
/// Rules, in order: only `active` mode may answer; only message events count; the source must
/// be known; in groups and rooms (when `group_requires_mention`) only messages that mention the
/// bot (`isSelf`) count, which means images there are ignored since they cannot carry a
/// mention; text and image messages start a turn, other message types are ignored; the bot's
/// mention is removed from the text, and text that is empty afterwards is ignored.
pub fn classify(event: &Event, cfg: &LineConfig) -> LineAction {
    let action = classify_inner(event, cfg);
    if let LineAction::Ignore { reason } = &action {
        tracing::debug!(
            webhook_event_id = %event.webhook_event_id,
            reason = reason.as_str(),
            "line event ignored"
        );
    }
    action
}

fn classify_inner(event: &Event, cfg: &LineConfig) -> LineAction {
    let ignore = |reason| LineAction::Ignore { reason };
    if event.mode != Mode::Active {
        return ignore(IgnoreReason::NotActive);
    }
    let message = match &event.kind {
        EventKind::Message(m) => m,
        EventKind::Other { event_type } => {
            return ignore(IgnoreReason::NotAMessage {
                event_type: event_type.clone(),
            })
        }
    };
    let Some(source) = &event.source else {
        return ignore(IgnoreReason::UnknownSource);
    };
    let (Some(session_key), Some(push_to)) = (source.session_key(), source.push_target()) else {
        return ignore(IgnoreReason::UnknownSource);
    };
    let needs_mention = cfg.group_requires_mention && source.is_multi_person();

    let input = match message {
        Message::Text(t) => {
            let mentionees = t.mention.as_ref().map_or(&[][..], |m| &m.mentionees[..]);
            if needs_mention && !mentionees.iter().any(|m| m.is_self) {
                return ignore(IgnoreReason::NotMentioned);
            }
            let text = strip_self_mentions(&t.text, mentionees);
            if text.is_empty() {
                return ignore(IgnoreReason::EmptyText);
            }
            TurnInput::Text { text }
        }
        Message::Image(img) => {
            if needs_mention {
                return ignore(IgnoreReason::NotMentioned);
            }
            TurnInput::Image {
                message_id: img.id.clone(),
                content_provider: img.content_provider.clone(),
            }
        }
        Message::Other { message_type, .. } => {
            return ignore(IgnoreReason::UnsupportedMessage {
                message_type: message_type.clone(),
            })
        }
    };

    LineAction::StartTurn(LineTurn {
        session_key,
        input,
        reply_token: event.reply_token.clone(),
        webhook_event_id: event.webhook_event_id.clone(),
        user_id: source.user_id().map(str::to_owned),
        push_to: push_to.to_owned(),
        is_redelivery: event.is_redelivery,
        timestamp_ms: event.timestamp,
    })
}

/// Removes every span that mentions the bot (`isSelf`) from `text` and trims the result.
///
/// Spans are in UTF-16 code units; a span that is out of range or does not fall on character
/// boundaries is left in place rather than cutting a character in half. Where a removed span
/// had whitespace on both sides, one side is dropped so no double space remains.
pub fn strip_self_mentions(text: &str, mentionees: &[Mentionee]) -> String {
    let mut spans: Vec<(usize, usize)> = mentionees
        .iter()
        .filter(|m| m.is_self)
        .filter_map(|m| utf16_span_to_bytes(text, m.index, m.length))
        .collect();
    spans.sort_unstable();

    let mut out = String::with_capacity(text.len());
    let mut cursor = 0usize;
    for (start, end) in spans {
        if start < cursor {
            continue; // overlapping spans: the earlier one already removed this text
        }
        push_joined(&mut out, text.get(cursor..start).unwrap_or(""));
        cursor = end;
    }
    push_joined(&mut out, text.get(cursor..).unwrap_or(""));
    out.trim().to_owned()
}

/// Appends `piece`, dropping its leading whitespace when `out` already ends in whitespace.
fn push_joined(out: &mut String, piece: &str) {
    if out.ends_with(char::is_whitespace) {
        out.push_str(piece.trim_start());
    } else {
        out.push_str(piece);
    }
}

/// Converts a UTF-16 `(index, length)` span into a byte range of `text`, if it is valid.
fn utf16_span_to_bytes(text: &str, index: i64, length: i64) -> Option<(usize, usize)> {
    let start = usize::try_from(index).ok()?;
    let len = usize::try_from(length).ok()?;
    let end = start.checked_add(len)?;
    let mut start_byte = None;
    let mut units = 0usize;
    for (byte, ch) in text.char_indices() {
        if units == start {
            start_byte = Some(byte);
        }
        if units == end {
            return start_byte.map(|s| (s, byte));
        }
        if units > end {
            return None;
        }
        units += ch.len_utf16();
    }
    if units == start {
        start_byte = Some(text.len());
    }
    if units == end {
        return start_byte.map(|s| (s, text.len()));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::line::wire::{MentioneeType, ProviderType, WebhookBody};

    fn event(json: &str) -> Event {
        let body = format!(r#"{{"destination":"Ubot","events":[{json}]}}"#);
        match WebhookBody::from_slice(body.as_bytes()) {
            Ok(b) => b
                .events
                .into_iter()
                .next()
                .unwrap_or_else(|| panic!("no event")),
            Err(e) => panic!("bad test json: {e}"),
        }
    }

    fn text_event(source: &str, text: &str, mention: &str) -> Event {
        event(&format!(
            r#"{{"type":"message","mode":"active","timestamp":5,"webhookEventId":"E1",
                "replyToken":"RT","source":{source},
                "message":{{"id":"M1","type":"text","text":"{text}"{mention}}}}}"#
        ))
    }

    const USER: &str = r#"{"type":"user","userId":"U1"}"#;
    const GROUP: &str = r#"{"type":"group","groupId":"C1","userId":"U1"}"#;
    const ROOM: &str = r#"{"type":"room","roomId":"R1","userId":"U1"}"#;

    fn self_mention(index: usize, length: usize) -> String {
        format!(
            r#","mention":{{"mentionees":[{{"index":{index},"length":{length},"type":"user","isSelf":true}}]}}"#
        )
    }

    fn turn(action: LineAction) -> LineTurn {
        match action {
            LineAction::StartTurn(t) => t,
            LineAction::Ignore { reason } => panic!("ignored: {reason:?}"),
        }
    }

    fn reason(action: LineAction) -> IgnoreReason {
        match action {
            LineAction::Ignore { reason } => reason,
            LineAction::StartTurn(t) => panic!("started a turn: {t:?}"),
        }
    }

    #[test]
    fn one_to_one_text_starts_turn_with_all_fields() {
        let t = turn(classify(
            &text_event(USER, "こんにちは", ""),
            &LineConfig::default(),
        ));
        assert_eq!(t.session_key, "line:user:U1");
        assert_eq!(
            t.input,
            TurnInput::Text {
                text: "こんにちは".into()
            }
        );
        assert_eq!(t.reply_token.as_deref(), Some("RT"));
        assert_eq!(t.webhook_event_id, "E1");
        assert_eq!(t.user_id.as_deref(), Some("U1"));
        assert_eq!(t.push_to, "U1");
        assert!(!t.is_redelivery);
        assert_eq!(t.timestamp_ms, 5);
    }

    #[test]
    fn image_starts_turn_with_message_id() {
        let ev = event(
            r#"{"type":"message","mode":"active","timestamp":1,"webhookEventId":"E2",
                "replyToken":"RT","source":{"type":"user","userId":"U1"},
                "message":{"id":"IMG","type":"image","contentProvider":{"type":"line"}}}"#,
        );
        let t = turn(classify(&ev, &LineConfig::default()));
        match t.input {
            TurnInput::Image {
                message_id,
                content_provider,
            } => {
                assert_eq!(message_id, "IMG");
                assert_eq!(content_provider.provider, ProviderType::Line);
            }
            other => panic!("not an image: {other:?}"),
        }
    }

    #[test]
    fn standby_mode_is_ignored() {
        let ev = event(
            r#"{"type":"message","mode":"standby","timestamp":1,"webhookEventId":"E",
                "source":{"type":"user","userId":"U1"},
                "message":{"id":"M","type":"text","text":"hi"}}"#,
        );
        assert_eq!(
            reason(classify(&ev, &LineConfig::default())),
            IgnoreReason::NotActive
        );
    }

    #[test]
    fn unknown_mode_is_ignored() {
        let ev = event(
            r#"{"type":"message","mode":"paused","timestamp":1,"webhookEventId":"E",
                "source":{"type":"user","userId":"U1"},
                "message":{"id":"M","type":"text","text":"hi"}}"#,
        );
        assert_eq!(
            reason(classify(&ev, &LineConfig::default())),
            IgnoreReason::NotActive
        );
    }

    #[test]
    fn non_message_events_are_ignored_by_type() {
        for ty in ["follow", "unfollow", "join", "postback", "brandNewEvent"] {
            let ev = event(&format!(
                r#"{{"type":"{ty}","mode":"active","timestamp":1,"webhookEventId":"E",
                    "source":{{"type":"user","userId":"U1"}}}}"#
            ));
            assert_eq!(
                reason(classify(&ev, &LineConfig::default())),
                IgnoreReason::NotAMessage {
                    event_type: ty.into()
                }
            );
        }
    }

    #[test]
    fn other_message_types_are_ignored() {
        let ev = event(
            r#"{"type":"message","mode":"active","timestamp":1,"webhookEventId":"E",
                "source":{"type":"user","userId":"U1"},
                "message":{"id":"S","type":"sticker","packageId":"1","stickerId":"1"}}"#,
        );
        assert_eq!(
            reason(classify(&ev, &LineConfig::default())),
            IgnoreReason::UnsupportedMessage {
                message_type: "sticker".into()
            }
        );
    }

    #[test]
    fn unknown_or_missing_source_is_ignored() {
        let unknown = event(
            r#"{"type":"message","mode":"active","timestamp":1,"webhookEventId":"E",
                "source":{"type":"space","spaceId":"X"},
                "message":{"id":"M","type":"text","text":"hi"}}"#,
        );
        assert_eq!(
            reason(classify(&unknown, &LineConfig::default())),
            IgnoreReason::UnknownSource
        );
        let missing = event(
            r#"{"type":"message","mode":"active","timestamp":1,"webhookEventId":"E",
                "message":{"id":"M","type":"text","text":"hi"}}"#,
        );
        assert_eq!(
            reason(classify(&missing, &LineConfig::default())),
            IgnoreReason::UnknownSource
        );
    }

    #[test]
    fn group_without_mention_is_ignored_by_default() {
        let ev = text_event(GROUP, "hello all", "");
        assert_eq!(
            reason(classify(&ev, &LineConfig::default())),
            IgnoreReason::NotMentioned
        );
    }

    #[test]
    fn room_without_mention_is_ignored_by_default() {
        let ev = text_event(ROOM, "hello all", "");
        assert_eq!(
            reason(classify(&ev, &LineConfig::default())),
            IgnoreReason::NotMentioned
        );
    }

    #[test]
    fn group_mention_of_someone_else_or_all_does_not_count() {
        let other = r#","mention":{"mentionees":[{"index":0,"length":4,"type":"user","userId":"U9","isSelf":false},{"index":5,"length":4,"type":"all"}]}"#;
        let ev = text_event(GROUP, "@Bob @All hi", other);
        assert_eq!(
            reason(classify(&ev, &LineConfig::default())),
            IgnoreReason::NotMentioned
        );
    }

    #[test]
    fn group_with_self_mention_starts_turn_and_strips_mention() {
        let ev = text_event(GROUP, "@Kuro 今日の天気は?", &self_mention(0, 5));
        let t = turn(classify(&ev, &LineConfig::default()));
        assert_eq!(t.session_key, "line:group:C1");
        assert_eq!(t.push_to, "C1");
        assert_eq!(t.user_id.as_deref(), Some("U1"));
        assert_eq!(
            t.input,
            TurnInput::Text {
                text: "今日の天気は?".into()
            }
        );
    }

    #[test]
    fn room_with_self_mention_keys_by_room() {
        let ev = text_event(ROOM, "@Kuro hi", &self_mention(0, 5));
        let t = turn(classify(&ev, &LineConfig::default()));
        assert_eq!(t.session_key, "line:room:R1");
        assert_eq!(t.push_to, "R1");
    }

    #[test]
    fn group_rule_can_be_disabled() {
        let cfg = LineConfig {
            group_requires_mention: false,
        };
        let t = turn(classify(&text_event(GROUP, "hello all", ""), &cfg));
        assert_eq!(
            t.input,
            TurnInput::Text {
                text: "hello all".into()
            }
        );
    }

    #[test]
    fn group_image_is_ignored_when_mention_required() {
        let ev = event(
            r#"{"type":"message","mode":"active","timestamp":1,"webhookEventId":"E",
                "source":{"type":"group","groupId":"C1"},
                "message":{"id":"IMG","type":"image","contentProvider":{"type":"line"}}}"#,
        );
        assert_eq!(
            reason(classify(&ev, &LineConfig::default())),
            IgnoreReason::NotMentioned
        );
        let cfg = LineConfig {
            group_requires_mention: false,
        };
        assert!(matches!(classify(&ev, &cfg), LineAction::StartTurn(_)));
    }

    #[test]
    fn mention_only_message_is_ignored_as_empty() {
        let ev = text_event(GROUP, "@Kuro ", &self_mention(0, 5));
        assert_eq!(
            reason(classify(&ev, &LineConfig::default())),
            IgnoreReason::EmptyText
        );
    }

    #[test]
    fn whitespace_only_text_is_ignored_as_empty() {
        let ev = text_event(USER, "   ", "");
        assert_eq!(
            reason(classify(&ev, &LineConfig::default())),
            IgnoreReason::EmptyText
        );
    }

    #[test]
    fn redelivery_flag_is_carried() {
        let ev = event(
            r#"{"type":"message","mode":"active","timestamp":1,"webhookEventId":"E",
                "deliveryContext":{"isRedelivery":true},"replyToken":"RT",
                "source":{"type":"user","userId":"U1"},
                "message":{"id":"M","type":"text","text":"hi"}}"#,
        );
        assert!(turn(classify(&ev, &LineConfig::default())).is_redelivery);
    }

    fn me(index: i64, length: i64) -> Mentionee {
        Mentionee {
            index,
            length,
            kind: MentioneeType::User,
            user_id: None,
            is_self: true,
        }
    }

    #[test]
    fn strip_mid_text_mention_leaves_single_space() {
        assert_eq!(
            strip_self_mentions("ねえ @Kuro 元気?", &[me(3, 5)]),
            "ねえ 元気?"
        );
    }

    #[test]
    fn strip_uses_utf16_offsets() {
        // 🍎 is two UTF-16 units, so the mention starts at unit 3, not char 2.
        assert_eq!(strip_self_mentions("🍎 @Kuro hi", &[me(3, 5)]), "🍎 hi");
    }

    #[test]
    fn strip_keeps_other_peoples_mentions() {
        let bob = Mentionee {
            is_self: false,
            ..me(6, 4)
        };
        assert_eq!(
            strip_self_mentions("@Kuro @Bob hi", &[me(0, 5), bob]),
            "@Bob hi"
        );
    }

    #[test]
    fn strip_removes_multiple_self_mentions() {
        assert_eq!(
            strip_self_mentions("@Kuro hi @Kuro", &[me(9, 5), me(0, 5)]),
            "hi"
        );
    }

    #[test]
    fn strip_ignores_invalid_spans_without_panicking() {
        let text = "🍎@Kuro";
        // Negative, out of range, and splitting the surrogate pair of 🍎.
        for m in [me(-1, 5), me(0, 500), me(1, 2), me(i64::MAX, i64::MAX)] {
            assert_eq!(strip_self_mentions(text, &[m]), text);
        }
    }

    #[test]
    fn strip_handles_span_at_end_and_overlaps() {
        assert_eq!(strip_self_mentions("hi @Kuro", &[me(3, 5), me(4, 2)]), "hi");
    }
}
