//! Decides, per Slack envelope, whether to echo a challenge, start a turn, or ignore it, and
//! which keys deduplicate the turn.
//!
//! Two different duplicates reach us, so a turn carries two keys:
//!
//! * **Retries** of one delivery (`X-Slack-Retry-Num`) repeat the same `event_id`. The caller
//!   acknowledges them at once; the durable dedup drops them.
//! * **The same message as two events.** With both `app_mention` and `message.*` subscribed, a
//!   mention arrives twice with *different* `event_id`s. Both events describe one message,
//!   identified by `channel` + `ts`, so that pair is the turn's dedup key (`dedup_key`). It
//!   also covers retries, because a retry repeats the message too.
//!
//! `event_key` (from `event_id`) is provided for logging and for recording ignored deliveries.

use super::wire::{Envelope, EventCallback, InnerEvent, MessageEvent, SlackImage};

/// What the gateway should do with one Slack request.
#[derive(Debug, Clone, PartialEq, Eq)]
// One value per request, matched at once and never stored: boxing the turn buys nothing.
#[allow(clippy::large_enum_variant)]
pub enum SlackAction {
    /// Answer the endpoint check with this challenge.
    UrlVerification {
        /// The value to echo.
        challenge: String,
    },
    /// Start a conversation turn (unless `dedup_key` was seen before).
    StartTurn(SlackTurn),
    /// Acknowledge and record as ignored.
    Ignore {
        /// Why.
        reason: SlackIgnoreReason,
    },
}

/// How a message reached the bot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// An `app_mention` event.
    AppMention,
    /// A `message` event in a direct message with the bot.
    DirectMessage,
    /// A `message` event in a channel whose text mentions the bot.
    MessageMention,
}

/// Everything the gateway needs to start a turn and answer it in the thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlackTurn {
    /// Message identity `slack:msg:{channel}:{ts}`: the durable dedup key.
    pub dedup_key: String,
    /// Delivery identity `slack:event:{event_id}`: the same on retries of one event only.
    pub event_key: String,
    /// Conversation key: `slack:{channel}` in a DM, `slack:{channel}:{thread_ts or ts}` (one
    /// session per thread) in a channel.
    pub session_key: String,
    /// The text with our bot's mention removed and Slack's `&lt; &gt; &amp;` decoded.
    pub text: String,
    /// Parent to reply under: the thread's parent, or this message starting a new thread.
    pub thread_ts: String,
    /// Channel id.
    pub channel: String,
    /// Sender's user id.
    pub user: String,
    /// Workspace id, if sent.
    pub team_id: Option<String>,
    /// `X-Slack-Retry-Num` when this delivery is a retry.
    pub retry_num: Option<u32>,
    /// Which event brought it.
    pub trigger: Trigger,
    /// The first image shared with the message, downloaded before the turn starts.
    pub image: Option<SlackImage>,
}

/// Why a request does not start a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlackIgnoreReason {
    /// Envelope type we do not handle.
    UnsupportedEnvelope,
    /// Inner event type we do not handle.
    UnsupportedEvent {
        /// The event type.
        event_type: String,
    },
    /// Posted by a bot (`bot_id` or subtype `bot_message`): never answer bots, or two bots
    /// answer each other forever.
    FromBot,
    /// Posted by our own bot user.
    OwnMessage,
    /// Edits, deletions, joins and every other subtype: not a new user message.
    Subtype {
        /// The subtype.
        subtype: String,
    },
    /// A field needed to answer is missing.
    MissingField {
        /// Which field.
        field: &'static str,
    },
    /// A channel message that does not mention the bot.
    NotAddressed,
    /// Nothing left after removing the mention.
    EmptyText,
}

impl SlackIgnoreReason {
    /// Short stable label for logs and the ignored-event record.
    pub fn as_str(&self) -> &'static str {
        match self {
            SlackIgnoreReason::UnsupportedEnvelope => "unsupported_envelope",
            SlackIgnoreReason::UnsupportedEvent { .. } => "unsupported_event",
            SlackIgnoreReason::FromBot => "from_bot",
            SlackIgnoreReason::OwnMessage => "own_message",
            SlackIgnoreReason::Subtype { .. } => "subtype",
            SlackIgnoreReason::MissingField { .. } => "missing_field",
            SlackIgnoreReason::NotAddressed => "not_addressed",
            SlackIgnoreReason::EmptyText => "empty_text",
        }
    }
}

/// The message-identity dedup key for a message in `channel` at `ts`.
pub fn message_dedup_key(channel: &str, ts: &str) -> String {
    format!("slack:msg:{channel}:{ts}")
}

/// The delivery dedup key for an `event_id`.
pub fn event_dedup_key(event_id: &str) -> String {
    format!("slack:event:{event_id}")
}

/// Classifies one envelope.
///
/// `retry_num` is the parsed `X-Slack-Retry-Num`; it does not change the outcome (a retry
/// yields the same `dedup_key`, which the caller's durable dedup then drops). `bot_user_id` is
/// our bot's user id (configured or learned from `auth.test`); without it the envelope's
/// `authorizations[].user_id` is used, and without both own messages are still caught by
/// `bot_id`, but channel `message` events cannot be recognised as mentions, so only
/// `app_mention` and direct messages start turns.
///
/// Rules for `message`/`app_mention`, in order: bot posts are ignored; our own user is
/// ignored; any subtype is ignored; channel, ts and user must be present; a `message` event
/// counts only in a DM (`channel_type: im`) or when its text mentions the bot; the bot's
/// mention is removed and empty text is ignored.
pub fn classify(
    envelope: &Envelope,
    retry_num: Option<u32>,
    bot_user_id: Option<&str>,
) -> SlackAction {
    let action = match envelope {
        Envelope::UrlVerification { challenge } => SlackAction::UrlVerification {
            challenge: challenge.clone(),
        },
        Envelope::Other => ignore(SlackIgnoreReason::UnsupportedEnvelope),
        Envelope::EventCallback(cb) => classify_callback(cb, retry_num, bot_user_id),
    };
    if let SlackAction::Ignore { reason } = &action {
        tracing::debug!(reason = reason.as_str(), ?retry_num, "slack event ignored");
    }
    action
}

fn ignore(reason: SlackIgnoreReason) -> SlackAction {
    SlackAction::Ignore { reason }
}

fn classify_callback(
    cb: &EventCallback,
    retry_num: Option<u32>,
    bot_user_id: Option<&str>,
) -> SlackAction {
    // The configured (or `auth.test`-learned) id, else the one the envelope names; a
    // message from either is our own.
    let named = cb.bot_user_id();
    let bot_user_id = bot_user_id.filter(|b| !b.is_empty()).or(named);
    let (msg, is_app_mention) = match &cb.event {
        InnerEvent::Message(m) => (m, false),
        InnerEvent::AppMention(m) => (m, true),
        InnerEvent::Other { event_type } => {
            return ignore(SlackIgnoreReason::UnsupportedEvent {
                event_type: event_type.clone(),
            })
        }
    };
    if msg.bot_id.is_some() || msg.subtype.as_deref() == Some("bot_message") {
        return ignore(SlackIgnoreReason::FromBot);
    }
    let own = |id: Option<&str>| id.is_some() && msg.user.as_deref() == id;
    if own(bot_user_id) || own(named) {
        return ignore(SlackIgnoreReason::OwnMessage);
    }
    let image = msg.images().into_iter().next();
    // `file_share` is a user's message with files: a turn when an image came with it.
    if let Some(subtype) = msg
        .subtype
        .as_ref()
        .filter(|s| !(s.as_str() == "file_share" && image.is_some()))
    {
        return ignore(SlackIgnoreReason::Subtype {
            subtype: subtype.clone(),
        });
    }
    let (channel, ts, user) = match required(msg) {
        Ok(v) => v,
        Err(field) => return ignore(SlackIgnoreReason::MissingField { field }),
    };
    let raw_text = msg.text.as_deref().unwrap_or("");

    let trigger = if is_app_mention {
        Trigger::AppMention
    } else if msg.channel_type.as_deref() == Some("im") {
        Trigger::DirectMessage
    } else if bot_user_id.is_some_and(|b| mentions(raw_text, b)) {
        Trigger::MessageMention
    } else {
        return ignore(SlackIgnoreReason::NotAddressed);
    };

    let text = unescape(&strip_bot_mention(raw_text, bot_user_id, is_app_mention));
    let text = text.trim();
    if text.is_empty() && image.is_none() {
        return ignore(SlackIgnoreReason::EmptyText);
    }

    let parent = msg
        .thread_ts
        .as_deref()
        .filter(|t| !t.is_empty())
        .unwrap_or(ts);
    // In a DM the DM is the conversation (commands, route and short memory carry over from
    // one message to the next); in a channel each thread is one.
    let direct = msg.channel_type.as_deref() == Some("im")
        || (msg.channel_type.is_none() && channel.starts_with('D'));
    let session_key = if direct {
        format!("slack:{channel}")
    } else {
        format!("slack:{channel}:{parent}")
    };
    SlackAction::StartTurn(SlackTurn {
        dedup_key: message_dedup_key(channel, ts),
        event_key: event_dedup_key(&cb.event_id),
        session_key,
        text: text.to_owned(),
        thread_ts: parent.to_owned(),
        channel: channel.to_owned(),
        user: user.to_owned(),
        team_id: cb.team_id.clone(),
        retry_num,
        trigger,
        image,
    })
}

fn required(msg: &MessageEvent) -> Result<(&str, &str, &str), &'static str> {
    Ok((
        non_empty(&msg.channel, "channel")?,
        non_empty(&msg.ts, "ts")?,
        non_empty(&msg.user, "user")?,
    ))
}

fn non_empty<'a>(v: &'a Option<String>, name: &'static str) -> Result<&'a str, &'static str> {
    v.as_deref().filter(|s| !s.is_empty()).ok_or(name)
}

/// True when `text` contains a mention of `bot` (`<@BOT>` or `<@BOT|name>`).
fn mentions(text: &str, bot: &str) -> bool {
    mention_tokens(text).any(|(_, _, id)| id == bot)
}

/// Yields `(start, end, user_id)` for each `<@…>` token in `text` (byte offsets).
fn mention_tokens(text: &str) -> impl Iterator<Item = (usize, usize, &str)> {
    let mut from = 0usize;
    std::iter::from_fn(move || {
        let start = from + text.get(from..)?.find("<@")?;
        let body_start = start + 2;
        let Some(close_rel) = text.get(body_start..)?.find('>') else {
            from = text.len();
            return None;
        };
        let end = body_start + close_rel + 1;
        from = end;
        let body = text.get(body_start..end - 1)?;
        let id = body.split('|').next().unwrap_or(body);
        Some((start, end, id))
    })
}

/// Removes our bot's `<@…>` mention tokens from `text`.
///
/// With a known bot id every mention of it is removed. Without one, only a leading mention of
/// an `app_mention` is removed (that event exists because the bot was mentioned, and people
/// put the mention first); other mentions stay since we cannot tell whose they are.
pub fn strip_bot_mention(text: &str, bot_user_id: Option<&str>, is_app_mention: bool) -> String {
    let leading = text.len() - text.trim_start().len();
    let mut out = String::with_capacity(text.len());
    let mut cursor = 0usize;
    for (start, end, id) in mention_tokens(text) {
        let ours = match bot_user_id {
            Some(bot) => id == bot,
            None => is_app_mention && start == leading,
        };
        if !ours {
            continue;
        }
        push_joined(&mut out, text.get(cursor..start).unwrap_or(""));
        cursor = end;
    }
    push_joined(&mut out, text.get(cursor..).unwrap_or(""));
    out
}

fn push_joined(out: &mut String, piece: &str) {
    if out.ends_with(char::is_whitespace) {
        out.push_str(piece.trim_start());
    } else {
        out.push_str(piece);
    }
}

/// Decodes the three entities Slack escapes in message text. `&amp;` goes last so that a
/// literal `&lt;` typed by the user (sent as `&amp;lt;`) stays `&lt;`.
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOT: &str = "UBOT";

    fn env(event: &str) -> Envelope {
        let json = format!(
            r#"{{"type":"event_callback","team_id":"T1","event_id":"Ev1","event_time":1,"event":{event}}}"#
        );
        match Envelope::from_slice(json.as_bytes()) {
            Ok(e) => e,
            Err(err) => panic!("bad test json: {err}"),
        }
    }

    fn turn(a: SlackAction) -> SlackTurn {
        match a {
            SlackAction::StartTurn(t) => t,
            other => panic!("no turn: {other:?}"),
        }
    }

    #[test]
    fn a_shared_image_starts_a_turn_even_without_text() {
        let file = r#"{"id":"F1","mimetype":"image/png","url_private_download":"https://files.slack.com/files-pri/T1-F1/download/a.png"}"#;
        let t = turn(classify(
            &env(&format!(
                r#"{{"type":"message","subtype":"file_share","channel":"D1","channel_type":"im","user":"U2","text":"","ts":"1.2","files":[{file}]}}"#
            )),
            None,
            Some(BOT),
        ));
        let image = t.image.expect("an image");
        assert_eq!(
            (image.file_id.as_str(), image.mimetype.as_str()),
            ("F1", "image/png")
        );
        // A PDF is no image; a file_share without an image is an ordinary subtype.
        let pdf =
            r#"{"id":"F2","mimetype":"application/pdf","url_private":"https://files.slack.com/x"}"#;
        let ignored = classify(
            &env(&format!(
                r#"{{"type":"message","subtype":"file_share","channel":"D1","channel_type":"im","user":"U2","text":"","ts":"1.3","files":[{pdf}, 7, "x"]}}"#
            )),
            None,
            Some(BOT),
        );
        assert!(matches!(ignored, SlackAction::Ignore { .. }));
    }

    fn reason(a: SlackAction) -> SlackIgnoreReason {
        match a {
            SlackAction::Ignore { reason } => reason,
            other => panic!("not ignored: {other:?}"),
        }
    }

    const MENTION: &str =
        r#"{"type":"app_mention","user":"U2","text":"<@UBOT> 調べて","ts":"100.1","channel":"C1"}"#;
    const SAME_AS_MESSAGE: &str = r#"{"type":"message","user":"U2","text":"<@UBOT> 調べて","ts":"100.1","channel":"C1","channel_type":"channel"}"#;

    #[test]
    fn url_verification_echoes_challenge() {
        let e = Envelope::UrlVerification {
            challenge: "xyz".into(),
        };
        assert_eq!(
            classify(&e, None, Some(BOT)),
            SlackAction::UrlVerification {
                challenge: "xyz".into()
            }
        );
    }

    #[test]
    fn unknown_envelope_and_event_are_ignored() {
        assert_eq!(
            reason(classify(&Envelope::Other, None, Some(BOT))),
            SlackIgnoreReason::UnsupportedEnvelope
        );
        assert_eq!(
            reason(classify(
                &env(r#"{"type":"reaction_added","user":"U2"}"#),
                None,
                Some(BOT)
            )),
            SlackIgnoreReason::UnsupportedEvent {
                event_type: "reaction_added".into()
            }
        );
    }

    #[test]
    fn app_mention_starts_turn_with_keys_and_stripped_text() {
        let t = turn(classify(&env(MENTION), None, Some(BOT)));
        assert_eq!(t.dedup_key, "slack:msg:C1:100.1");
        assert_eq!(t.event_key, "slack:event:Ev1");
        assert_eq!(t.session_key, "slack:C1:100.1");
        assert_eq!(t.text, "調べて");
        assert_eq!(t.thread_ts, "100.1");
        assert_eq!(t.channel, "C1");
        assert_eq!(t.user, "U2");
        assert_eq!(t.team_id.as_deref(), Some("T1"));
        assert_eq!(t.trigger, Trigger::AppMention);
    }

    #[test]
    fn mention_as_app_mention_and_message_share_one_dedup_key() {
        let a = turn(classify(&env(MENTION), None, Some(BOT)));
        let json = format!(
            r#"{{"type":"event_callback","event_id":"Ev2","event_time":1,"event":{SAME_AS_MESSAGE}}}"#
        );
        let other = Envelope::from_slice(json.as_bytes()).unwrap_or(Envelope::Other);
        let b = turn(classify(&other, None, Some(BOT)));
        assert_eq!(b.trigger, Trigger::MessageMention);
        assert_eq!(a.dedup_key, b.dedup_key);
        assert_ne!(a.event_key, b.event_key);
        assert_eq!(a.session_key, b.session_key);
        assert_eq!(a.text, b.text);
    }

    #[test]
    fn retry_gives_same_dedup_key_and_reports_retry_num() {
        let first = turn(classify(&env(MENTION), None, Some(BOT)));
        let retry = turn(classify(&env(MENTION), Some(1), Some(BOT)));
        assert_eq!(first.dedup_key, retry.dedup_key);
        assert_eq!(first.event_key, retry.event_key);
        assert_eq!(retry.retry_num, Some(1));
        assert_eq!(first.retry_num, None);
    }

    #[test]
    fn thread_reply_uses_parent_for_session_and_reply() {
        let e = env(
            r#"{"type":"app_mention","user":"U2","text":"<@UBOT>続き","ts":"200.5","thread_ts":"100.1","channel":"C1"}"#,
        );
        let t = turn(classify(&e, None, Some(BOT)));
        assert_eq!(t.session_key, "slack:C1:100.1");
        assert_eq!(t.thread_ts, "100.1");
        assert_eq!(t.dedup_key, "slack:msg:C1:200.5");
    }

    #[test]
    fn bot_messages_are_ignored() {
        let by_bot_id = env(
            r#"{"type":"message","user":"U3","bot_id":"B1","text":"<@UBOT> hi","ts":"1.0","channel":"C1","channel_type":"im"}"#,
        );
        assert_eq!(
            reason(classify(&by_bot_id, None, Some(BOT))),
            SlackIgnoreReason::FromBot
        );
        let by_subtype = env(
            r#"{"type":"message","subtype":"bot_message","text":"hi","ts":"1.0","channel":"C1","channel_type":"im"}"#,
        );
        assert_eq!(
            reason(classify(&by_subtype, None, Some(BOT))),
            SlackIgnoreReason::FromBot
        );
        let mention_by_bot = env(
            r#"{"type":"app_mention","user":"U3","bot_id":"B1","text":"<@UBOT> hi","ts":"1.0","channel":"C1"}"#,
        );
        assert_eq!(
            reason(classify(&mention_by_bot, None, Some(BOT))),
            SlackIgnoreReason::FromBot
        );
    }

    #[test]
    fn own_user_is_learned_from_the_envelope_authorizations() {
        let e = Envelope::from_slice(
            br#"{"type":"event_callback","event_id":"Ev9","event_time":1,
                "authorizations":[{"team_id":"T1","user_id":"UOWN","is_bot":true}],
                "event":{"type":"message","user":"UOWN","text":"my reply","ts":"1.0","channel":"D1","channel_type":"im"}}"#,
        );
        let e = e.unwrap_or(Envelope::Other);
        assert_eq!(
            reason(classify(&e, None, None)),
            SlackIgnoreReason::OwnMessage
        );
    }

    #[test]
    fn own_user_is_ignored() {
        let e = env(
            r#"{"type":"message","user":"UBOT","text":"hello","ts":"1.0","channel":"D1","channel_type":"im"}"#,
        );
        assert_eq!(
            reason(classify(&e, None, Some(BOT))),
            SlackIgnoreReason::OwnMessage
        );
    }

    #[test]
    fn subtypes_are_ignored() {
        for st in [
            "message_changed",
            "message_deleted",
            "channel_join",
            "file_share",
            "thread_broadcast",
        ] {
            let e = env(&format!(
                r#"{{"type":"message","subtype":"{st}","user":"U2","text":"<@UBOT> x","ts":"1.0","channel":"D1","channel_type":"im"}}"#
            ));
            assert_eq!(
                reason(classify(&e, None, Some(BOT))),
                SlackIgnoreReason::Subtype { subtype: st.into() }
            );
        }
    }

    #[test]
    fn direct_message_starts_turn_without_mention() {
        let e = env(
            r#"{"type":"message","user":"U2","text":"こんにちは","ts":"5.0","channel":"D1","channel_type":"im"}"#,
        );
        let t = turn(classify(&e, None, Some(BOT)));
        assert_eq!(t.trigger, Trigger::DirectMessage);
        assert_eq!(t.text, "こんにちは");
        assert_eq!(t.session_key, "slack:D1", "in a DM the DM is the session");
        // Works even when the bot's user id is unknown.
        assert!(matches!(
            classify(&e, None, None),
            SlackAction::StartTurn(_)
        ));
    }

    #[test]
    fn channel_message_without_mention_is_not_addressed() {
        let e = env(
            r#"{"type":"message","user":"U2","text":"lunch?","ts":"5.0","channel":"C1","channel_type":"channel"}"#,
        );
        assert_eq!(
            reason(classify(&e, None, Some(BOT))),
            SlackIgnoreReason::NotAddressed
        );
        let other_user = env(
            r#"{"type":"message","user":"U2","text":"<@U999> lunch?","ts":"5.0","channel":"C1","channel_type":"channel"}"#,
        );
        assert_eq!(
            reason(classify(&other_user, None, Some(BOT))),
            SlackIgnoreReason::NotAddressed
        );
    }

    #[test]
    fn channel_message_mention_needs_known_bot_id() {
        let e = env(SAME_AS_MESSAGE);
        assert_eq!(
            reason(classify(&e, None, None)),
            SlackIgnoreReason::NotAddressed
        );
    }

    #[test]
    fn missing_fields_are_ignored_not_errors() {
        let no_ts = env(r#"{"type":"app_mention","user":"U2","text":"<@UBOT> x","channel":"C1"}"#);
        assert_eq!(
            reason(classify(&no_ts, None, Some(BOT))),
            SlackIgnoreReason::MissingField { field: "ts" }
        );
        let no_user = env(r#"{"type":"app_mention","text":"<@UBOT> x","ts":"1.0","channel":"C1"}"#);
        assert_eq!(
            reason(classify(&no_user, None, Some(BOT))),
            SlackIgnoreReason::MissingField { field: "user" }
        );
        let no_channel = env(r#"{"type":"app_mention","user":"U2","text":"<@UBOT> x","ts":"1.0"}"#);
        assert_eq!(
            reason(classify(&no_channel, None, Some(BOT))),
            SlackIgnoreReason::MissingField { field: "channel" }
        );
    }

    #[test]
    fn mention_only_is_empty() {
        let e = env(
            r#"{"type":"app_mention","user":"U2","text":"<@UBOT>  ","ts":"1.0","channel":"C1"}"#,
        );
        assert_eq!(
            reason(classify(&e, None, Some(BOT))),
            SlackIgnoreReason::EmptyText
        );
    }

    #[test]
    fn text_entities_are_decoded_after_stripping() {
        let e = env(
            r#"{"type":"app_mention","user":"U2","text":"<@UBOT> a &lt; b &amp;&amp; c &gt; d &amp;lt;","ts":"1.0","channel":"C1"}"#,
        );
        assert_eq!(
            turn(classify(&e, None, Some(BOT))).text,
            "a < b && c > d &lt;"
        );
    }

    #[test]
    fn escaped_fake_mention_is_not_a_mention() {
        // A user typing "<@UBOT>" literally arrives escaped and must not count as a mention.
        let e = env(
            r#"{"type":"message","user":"U2","text":"&lt;@UBOT&gt; hi","ts":"1.0","channel":"C1","channel_type":"channel"}"#,
        );
        assert_eq!(
            reason(classify(&e, None, Some(BOT))),
            SlackIgnoreReason::NotAddressed
        );
    }

    #[test]
    fn strip_handles_labels_middle_position_and_others() {
        assert_eq!(
            strip_bot_mention("hey <@UBOT|kuro> what's up", Some(BOT), false),
            "hey what's up"
        );
        assert_eq!(
            strip_bot_mention("<@UBOT> ask <@U2> too <@UBOT>", Some(BOT), true),
            " ask <@U2> too "
        );
    }

    #[test]
    fn strip_without_bot_id_removes_only_leading_app_mention() {
        assert_eq!(
            strip_bot_mention("  <@UX> hi <@UY>", None, true),
            "  hi <@UY>"
        );
        assert_eq!(strip_bot_mention("<@UX> hi", None, false), "<@UX> hi");
        let e = env(MENTION);
        assert_eq!(turn(classify(&e, None, None)).text, "調べて");
    }

    #[test]
    fn strip_survives_unterminated_tokens() {
        assert_eq!(strip_bot_mention("<@UBOT hi", Some(BOT), true), "<@UBOT hi");
        assert_eq!(strip_bot_mention("<@", Some(BOT), true), "<@");
        assert!(!mentions("<@UBOT", BOT));
    }

    #[test]
    fn empty_bot_id_counts_as_unknown() {
        let e = env(
            r#"{"type":"message","user":"","text":"hi","ts":"1.0","channel":"D1","channel_type":"im"}"#,
        );
        // An empty configured bot id must not make an empty user look like "us".
        assert_eq!(
            reason(classify(&e, None, Some(""))),
            SlackIgnoreReason::MissingField { field: "user" }
        );
    }

    #[test]
    fn keys_helpers() {
        assert_eq!(message_dedup_key("C1", "1.2"), "slack:msg:C1:1.2");
        assert_eq!(event_dedup_key("Ev9"), "slack:event:Ev9");
    }
}
