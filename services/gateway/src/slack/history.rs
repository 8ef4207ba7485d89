//! Was a reply already posted? `chat.postMessage` has no idempotency key, so each post
//! carries the reply's event id as message metadata, and a gateway that finds an earlier
//! attempt's marker (the earlier one crashed, or was cut off, between marker and outcome)
//! reads the thread (`conversations.replies`) or channel (`conversations.history`) for it
//! instead of giving the reply up. Pure: queries and page verdicts; the calls are in
//! `deliver.rs`.
//!
//! The read needs the app's history scopes (`channels:history`, `groups:history`,
//! `im:history`, `mpim:history`); without them Slack answers `missing_scope` and the reply
//! is recorded as `outcome_unknown`, as before this check existed.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

/// `conversations.replies`: a thread's messages, its parent first.
pub const REPLIES_PATH: &str = "/api/conversations.replies";
/// `conversations.history`: a channel's messages, newest first.
pub const HISTORY_PATH: &str = "/api/conversations.history";
/// The metadata event type of Ghost's posts.
pub const METADATA_EVENT_TYPE: &str = "ghost_reply";
/// Pages read at most (200 messages each) before the answer counts as unknown.
pub const MAX_PAGES: usize = 5;
/// How far before the earlier attempt's marker the channel is read (clock skew between
/// Slack and the store).
const OLDEST_MARGIN_SECS: i64 = 60;

/// A post's `metadata`: which reply it carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplyMetadata {
    /// Always [`METADATA_EVENT_TYPE`].
    pub event_type: &'static str,
    /// `{"reply_event_id": "<uuid>"}`.
    pub event_payload: ReplyPayload,
}

/// The payload of [`ReplyMetadata`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplyPayload {
    /// The reply (or autonomy message) event the post delivers.
    pub reply_event_id: Uuid,
}

impl ReplyMetadata {
    /// The metadata of the post delivering `reply_event_id`.
    pub fn of(reply_event_id: Uuid) -> Self {
        Self {
            event_type: METADATA_EVENT_TYPE,
            event_payload: ReplyPayload { reply_event_id },
        }
    }
}

/// The read that finds a post in `channel` (under `thread_ts` when given), made after the
/// marker recorded at `marked_at` (Unix seconds): its path and query, `cursor` for a later
/// page.
pub fn lookup_query(
    channel: &str,
    thread_ts: Option<&str>,
    marked_at: i64,
    cursor: Option<&str>,
) -> (&'static str, Vec<(&'static str, String)>) {
    let oldest = (marked_at - OLDEST_MARGIN_SECS).max(0).to_string();
    let mut query = vec![
        ("channel", channel.to_owned()),
        ("include_all_metadata", "true".to_owned()),
        ("limit", "200".to_owned()),
        ("oldest", oldest),
    ];
    if let Some(cursor) = cursor {
        query.push(("cursor", cursor.to_owned()));
    }
    match thread_ts.filter(|t| !t.is_empty()) {
        Some(ts) => {
            query.push(("ts", ts.to_owned()));
            (REPLIES_PATH, query)
        }
        None => (HISTORY_PATH, query),
    }
}

/// What one page of the read says about the reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageVerdict {
    /// A message carries the reply's id: it was posted.
    Posted,
    /// Not on this page; the next page's cursor, if there is one.
    NotHere(Option<String>),
    /// Slack refused the read (`missing_scope`, `channel_not_found`, ...) or answered
    /// something that is not a page.
    Refused(String),
}

/// Reads a `conversations.replies` / `conversations.history` answer for `reply_event_id`.
pub fn page_verdict(page: &Value, reply_event_id: Uuid) -> PageVerdict {
    if page.get("ok").and_then(Value::as_bool) != Some(true) {
        let error = page
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("not a Slack answer");
        return PageVerdict::Refused(error.to_owned());
    }
    let Some(messages) = page.get("messages").and_then(Value::as_array) else {
        return PageVerdict::Refused("no messages in the answer".to_owned());
    };
    let id = reply_event_id.to_string();
    let carries = |m: &Value| {
        let meta = m.get("metadata");
        meta.and_then(|m| m.get("event_type"))
            .and_then(Value::as_str)
            == Some(METADATA_EVENT_TYPE)
            && meta
                .and_then(|m| m.get("event_payload"))
                .and_then(|p| p.get("reply_event_id"))
                .and_then(Value::as_str)
                == Some(id.as_str())
    };
    if messages.iter().any(carries) {
        return PageVerdict::Posted;
    }
    let next = page
        .pointer("/response_metadata/next_cursor")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_owned);
    PageVerdict::NotHere(next)
}

/// How long after its marker an earlier attempt may still post: every attempt of the post
/// loop timing out, with the default wait between them. Before that, a missing post may
/// still be on its way from a gateway that is alive (a redelivery while the first handler
/// still runs), so the check waits until then.
pub fn earlier_attempt_bound(
    max_attempts: u32,
    request_timeout: Duration,
    default_delay: Duration,
) -> Duration {
    (request_timeout + default_delay) * max_attempts.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn id() -> Uuid {
        Uuid::from_u128(7)
    }

    #[test]
    fn a_thread_is_read_with_replies_and_a_channel_with_history() {
        let (path, q) = lookup_query("C1", Some("1.2"), 1_000, None);
        assert_eq!(path, REPLIES_PATH);
        assert!(q.contains(&("ts", "1.2".to_owned())));
        assert!(q.contains(&("oldest", "940".to_owned())));
        assert!(q.contains(&("include_all_metadata", "true".to_owned())));
        let (path, q) = lookup_query("C1", Some(""), 10, Some("next"));
        assert_eq!(path, HISTORY_PATH);
        assert!(q.contains(&("oldest", "0".to_owned())));
        assert!(q.contains(&("cursor", "next".to_owned())));
    }

    #[test]
    fn only_a_message_carrying_the_reply_id_counts_as_posted() {
        let ours = json!({"ok": true, "messages": [
            {"ts": "1", "text": "hi"},
            {"ts": "2", "metadata": {"event_type": "ghost_reply",
                "event_payload": {"reply_event_id": id().to_string()}}}
        ]});
        assert_eq!(page_verdict(&ours, id()), PageVerdict::Posted);
        let other = json!({"ok": true, "messages": [
            {"ts": "2", "metadata": {"event_type": "ghost_reply",
                "event_payload": {"reply_event_id": Uuid::from_u128(8).to_string()}}},
            {"ts": "3", "metadata": {"event_type": "other",
                "event_payload": {"reply_event_id": id().to_string()}}}
        ], "response_metadata": {"next_cursor": "c2"}});
        assert_eq!(
            page_verdict(&other, id()),
            PageVerdict::NotHere(Some("c2".into()))
        );
        let last = json!({"ok": true, "messages": [], "response_metadata": {"next_cursor": ""}});
        assert_eq!(page_verdict(&last, id()), PageVerdict::NotHere(None));
    }

    #[test]
    fn a_refused_or_malformed_read_is_refused_not_absent() {
        let refused = json!({"ok": false, "error": "missing_scope"});
        assert_eq!(
            page_verdict(&refused, id()),
            PageVerdict::Refused("missing_scope".into())
        );
        for page in [json!(null), json!({"ok": true}), json!("x")] {
            assert!(matches!(page_verdict(&page, id()), PageVerdict::Refused(_)));
        }
    }

    #[test]
    fn the_bound_covers_every_attempt_timing_out() {
        let b = earlier_attempt_bound(4, Duration::from_secs(10), Duration::from_secs(1));
        assert_eq!(b, Duration::from_secs(44));
        let b = earlier_attempt_bound(0, Duration::from_secs(10), Duration::from_secs(1));
        assert_eq!(b, Duration::from_secs(11));
    }
}
