//! `chat.postMessage` request bodies and the rule for retrying them.
//!
//! `chat.postMessage` has no idempotency key, so a retry is safe only when Slack certainly did
//! not post: a 429 / `ratelimited` answer (the request was refused) or a connection that never
//! opened. After a timeout or a 5xx the message may already be in the thread, and posting again
//! could show it twice, so those end in [`PostDecision::Unknown`] for the caller to record.

use std::time::Duration;

use serde::Serialize;

use crate::slack::history::ReplyMetadata;

/// Path of the Web API method (relative to the configurable base URL).
pub const POST_MESSAGE_PATH: &str = "/api/chat.postMessage";

/// Slack truncates message text beyond this many characters; we refuse instead of losing text.
pub const MAX_TEXT_CHARS: usize = 40_000;

/// Body of a `chat.postMessage` call (sent as JSON with the bot token as bearer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PostMessage {
    /// Channel id.
    pub channel: String,
    /// Parent message to reply under; absent posts to the channel itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_ts: Option<String>,
    /// Text with `&`, `<`, `>` escaped.
    pub text: String,
    /// Which reply the post delivers, so that a later attempt can find it
    /// ([`crate::slack::history`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<ReplyMetadata>,
}

/// Why a body could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PostBuildError {
    /// No channel.
    #[error("channel is empty")]
    EmptyChannel,
    /// Nothing to post.
    #[error("text is empty")]
    EmptyText,
    /// Longer than Slack keeps.
    #[error("text is {chars} characters; Slack keeps at most {max}")]
    TextTooLong {
        /// Characters given.
        chars: usize,
        /// The limit.
        max: usize,
    },
}

/// Builds a `chat.postMessage` body replying in `thread_ts` (use the turn's `thread_ts`).
///
/// The text is escaped (`&` → `&amp;`, `<` → `&lt;`, `>` → `&gt;`), as Slack asks for text
/// with control characters. This also means model output can never form `<!channel>`,
/// `<!everyone>` or `<@U…>` tokens that would ping people, nor disguised `<url|label>` links.
pub fn post_message_body(
    channel: &str,
    thread_ts: Option<&str>,
    text: &str,
) -> Result<PostMessage, PostBuildError> {
    if channel.is_empty() {
        return Err(PostBuildError::EmptyChannel);
    }
    if text.trim().is_empty() {
        return Err(PostBuildError::EmptyText);
    }
    let chars = text.chars().count();
    if chars > MAX_TEXT_CHARS {
        return Err(PostBuildError::TextTooLong {
            chars,
            max: MAX_TEXT_CHARS,
        });
    }
    Ok(PostMessage {
        channel: channel.to_owned(),
        thread_ts: thread_ts.filter(|t| !t.is_empty()).map(str::to_owned),
        text: escape(text),
        metadata: None,
    })
}

/// Escapes the three characters Slack treats as markup.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// What happened to one `chat.postMessage` call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostOutcome<'a> {
    /// HTTP 200 with `"ok": true`.
    Ok,
    /// HTTP 200 with `"ok": false` and this `error` string.
    ApiError(&'a str),
    /// Any other HTTP status.
    Status(u16),
    /// Sent, but no answer in time.
    Timeout,
    /// The connection never opened.
    ConnectFailed,
}

/// What to do after a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostDecision {
    /// Posted.
    Delivered,
    /// Send the same body again after this delay.
    Retry(Duration),
    /// Certainly not posted; retrying will not help.
    GiveUp,
    /// May have been posted; another attempt could duplicate it.
    Unknown,
}

/// Limits for retrying `chat.postMessage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostRetryPolicy {
    /// Total calls, the first one included.
    pub max_attempts: u32,
    /// Wait when rate limited without a usable `Retry-After`, or after a failed connect.
    pub default_delay: Duration,
    /// A `Retry-After` longer than this makes us give up instead of waiting.
    pub max_retry_after: Duration,
}

impl Default for PostRetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            default_delay: Duration::from_secs(1),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

/// Errors in an `ok: false` answer after which the message may nonetheless have been posted.
const AMBIGUOUS_API_ERRORS: [&str; 3] = ["internal_error", "fatal_error", "service_unavailable"];

impl PostRetryPolicy {
    /// Decides what follows a call. `attempts_made` counts calls so far including this one;
    /// `retry_after` is the response's `Retry-After` header.
    ///
    /// Rate limits (429 or `ratelimited`) wait exactly `Retry-After` seconds when given (else
    /// `default_delay`), and give up if that is longer than `max_retry_after` or attempts are
    /// used up.
    pub fn decide(
        &self,
        outcome: PostOutcome<'_>,
        attempts_made: u32,
        retry_after: Option<&str>,
    ) -> PostDecision {
        let attempts_left = attempts_made < self.max_attempts;
        match outcome {
            PostOutcome::Ok => PostDecision::Delivered,
            PostOutcome::Status(429) | PostOutcome::ApiError("ratelimited") => {
                let wait = retry_after_delay(retry_after).unwrap_or(self.default_delay);
                if attempts_left && wait <= self.max_retry_after {
                    PostDecision::Retry(wait)
                } else {
                    PostDecision::GiveUp
                }
            }
            PostOutcome::ConnectFailed if attempts_left => PostDecision::Retry(self.default_delay),
            PostOutcome::ConnectFailed => PostDecision::GiveUp,
            PostOutcome::Timeout => PostDecision::Unknown,
            PostOutcome::Status(s) if (500..=599).contains(&s) => PostDecision::Unknown,
            PostOutcome::ApiError(e) if AMBIGUOUS_API_ERRORS.contains(&e) => PostDecision::Unknown,
            PostOutcome::Status(s) if (200..=299).contains(&s) => {
                // A 2xx the caller could not read as ok/error: Slack accepted the request.
                PostDecision::Delivered
            }
            PostOutcome::Status(_) | PostOutcome::ApiError(_) => PostDecision::GiveUp,
        }
    }
}

/// Parses Slack's `Retry-After` (whole seconds). A number too large for `u64` gives
/// `Duration::MAX`, so it exceeds any limit instead of being ignored.
pub fn retry_after_delay(header: Option<&str>) -> Option<Duration> {
    let v = header?.trim();
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(v.parse::<u64>().map_or(Duration::MAX, Duration::from_secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_has_channel_thread_and_text() {
        let body = post_message_body("C1", Some("100.1"), "こんにちは");
        let json = body.ok().and_then(|b| serde_json::to_value(b).ok());
        assert_eq!(
            json,
            Some(serde_json::json!({"channel":"C1","thread_ts":"100.1","text":"こんにちは"}))
        );
    }

    #[test]
    fn body_without_thread_omits_thread_ts() {
        for thread in [None, Some("")] {
            let json = post_message_body("C1", thread, "hi")
                .ok()
                .and_then(|b| serde_json::to_value(b).ok());
            assert_eq!(json, Some(serde_json::json!({"channel":"C1","text":"hi"})));
        }
    }

    #[test]
    fn text_is_escaped_so_model_output_cannot_ping() {
        let body = post_message_body("C1", Some("1.0"), "<!channel> a<b & c>d <@U1>");
        assert_eq!(
            body.map(|b| b.text),
            Ok("&lt;!channel&gt; a&lt;b &amp; c&gt;d &lt;@U1&gt;".to_string())
        );
    }

    #[test]
    fn body_rejects_bad_input() {
        assert_eq!(
            post_message_body("", Some("1.0"), "hi"),
            Err(PostBuildError::EmptyChannel)
        );
        assert_eq!(
            post_message_body("C1", Some("1.0"), "  \n"),
            Err(PostBuildError::EmptyText)
        );
        let long = "あ".repeat(MAX_TEXT_CHARS + 1);
        assert_eq!(
            post_message_body("C1", None, &long),
            Err(PostBuildError::TextTooLong {
                chars: MAX_TEXT_CHARS + 1,
                max: MAX_TEXT_CHARS
            })
        );
        assert!(post_message_body("C1", None, &"あ".repeat(MAX_TEXT_CHARS)).is_ok());
    }

    #[test]
    fn rate_limit_waits_exactly_retry_after() {
        let p = PostRetryPolicy::default();
        assert_eq!(
            p.decide(PostOutcome::Status(429), 1, Some("30")),
            PostDecision::Retry(Duration::from_secs(30))
        );
        assert_eq!(
            p.decide(PostOutcome::ApiError("ratelimited"), 1, Some("5")),
            PostDecision::Retry(Duration::from_secs(5))
        );
    }

    #[test]
    fn rate_limit_without_header_uses_default_delay() {
        let p = PostRetryPolicy::default();
        for h in [None, Some("soon"), Some("")] {
            assert_eq!(
                p.decide(PostOutcome::Status(429), 1, h),
                PostDecision::Retry(p.default_delay)
            );
        }
    }

    #[test]
    fn rate_limit_gives_up_when_too_long_or_exhausted() {
        let p = PostRetryPolicy::default();
        assert_eq!(
            p.decide(PostOutcome::Status(429), 1, Some("121")),
            PostDecision::GiveUp
        );
        assert_eq!(
            p.decide(PostOutcome::Status(429), 1, Some("99999999999999999999999")),
            PostDecision::GiveUp
        );
        assert_eq!(
            p.decide(PostOutcome::Status(429), p.max_attempts, Some("1")),
            PostDecision::GiveUp
        );
    }

    #[test]
    fn ambiguous_failures_are_never_retried() {
        let p = PostRetryPolicy::default();
        for o in [
            PostOutcome::Timeout,
            PostOutcome::Status(500),
            PostOutcome::Status(503),
            PostOutcome::ApiError("internal_error"),
            PostOutcome::ApiError("fatal_error"),
        ] {
            assert_eq!(p.decide(o, 1, Some("1")), PostDecision::Unknown, "{o:?}");
        }
    }

    #[test]
    fn connect_failure_is_retried_until_exhausted() {
        let p = PostRetryPolicy::default();
        assert_eq!(
            p.decide(PostOutcome::ConnectFailed, 1, None),
            PostDecision::Retry(p.default_delay)
        );
        assert_eq!(
            p.decide(PostOutcome::ConnectFailed, p.max_attempts, None),
            PostDecision::GiveUp
        );
    }

    #[test]
    fn definite_errors_give_up_and_ok_is_delivered() {
        let p = PostRetryPolicy::default();
        assert_eq!(p.decide(PostOutcome::Ok, 1, None), PostDecision::Delivered);
        assert_eq!(
            p.decide(PostOutcome::Status(200), 1, None),
            PostDecision::Delivered
        );
        for o in [
            PostOutcome::ApiError("channel_not_found"),
            PostOutcome::ApiError("not_in_channel"),
            PostOutcome::Status(400),
            PostOutcome::Status(403),
        ] {
            assert_eq!(p.decide(o, 1, None), PostDecision::GiveUp, "{o:?}");
        }
    }

    #[test]
    fn retry_after_parsing() {
        assert_eq!(retry_after_delay(Some("3")), Some(Duration::from_secs(3)));
        assert_eq!(retry_after_delay(Some(" 3 ")), Some(Duration::from_secs(3)));
        assert_eq!(retry_after_delay(Some("-3")), None);
        assert_eq!(retry_after_delay(None), None);
    }
}
