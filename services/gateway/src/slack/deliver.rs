//! Sending one reply (or autonomy message) to Slack with `chat.postMessage`, in the thread
//! when there is one. Each post carries the reply's id as metadata; a delivery that finds
//! an earlier attempt's marker looks for that post before posting (`lookup.rs`).

use std::time::Duration;

use tracing::info;

use ghost_shared::bus::HandlerError;
use ghost_shared::config::{Secret, SlackSettings};
use ghost_shared::events::Channel;

use super::history::ReplyMetadata;
use super::lookup::{find_earlier_post, EarlierPost};
use crate::channel::{DeliveryOutcome, Outbound};
use crate::slack::{
    post_message_body, PostDecision, PostOutcome, PostRetryPolicy, POST_MESSAGE_PATH,
};

/// Delivers `text` for the event `out.cause` in `channel`, under `thread_ts` when given
/// (an empty one posts in the channel itself), with settings `s` and bot token `token`.
pub(super) async fn deliver(
    s: &SlackSettings,
    token: Option<&Secret>,
    out: &Outbound<'_>,
    (channel, thread_ts): (&str, Option<&str>),
    text: &str,
) -> Result<DeliveryOutcome, HandlerError> {
    let Some(token) = token else {
        return Ok(DeliveryOutcome::failed(
            "not_configured",
            "GHOST_SLACK_BOT_TOKEN is not set",
        ));
    };
    let mut body = match post_message_body(channel, thread_ts, text) {
        Ok(b) => b,
        Err(e) => return Ok(DeliveryOutcome::failed("invalid", e.to_string())),
    };
    body.metadata = Some(ReplyMetadata::of(out.cause.event_id));
    let policy = PostRetryPolicy {
        max_attempts: s.max_attempts,
        default_delay: Duration::from_millis(s.retry_default_delay_ms),
        max_retry_after: Duration::from_secs(s.max_retry_after_secs),
    };
    // chat.postMessage has no idempotency key: an earlier attempt may have posted.
    if let Some(marked_at) = out.mark_attempt_at(Channel::Slack).await? {
        match find_earlier_post(s, token, out, (channel, thread_ts), marked_at).await? {
            EarlierPost::Found(read) => return Ok(DeliveryOutcome::Delivered(vec![read])),
            EarlierPost::Absent => info!(
                reply = %out.cause.event_id,
                "the earlier attempt did not post; posting"
            ),
            EarlierPost::Unknown(why) => {
                return Ok(DeliveryOutcome::failed(
                    "outcome_unknown",
                    format!("an earlier attempt may have posted ({why}); not posting again"),
                ))
            }
        }
    }
    let url = format!("{}{POST_MESSAGE_PATH}", s.api_base.trim_end_matches('/'));
    let mut attempts = 0;
    loop {
        attempts += 1;
        let sent = out
            .http
            .post(&url)
            .bearer_auth(token.expose())
            .timeout(Duration::from_secs(s.request_timeout_secs))
            .json(&body)
            .send()
            .await;
        let (status, retry_after, api) = match sent {
            Ok(r) => {
                let status = r.status().as_u16();
                let retry_after = r
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let json: Option<serde_json::Value> = r.json().await.ok();
                (Some(status), retry_after, json)
            }
            Err(e) if e.is_connect() => (None, None, None),
            Err(_) => (Some(0), None, None),
        };
        let error = api
            .as_ref()
            .and_then(|j| j.get("error"))
            .and_then(|e| e.as_str())
            .map(str::to_owned);
        let ok = api
            .as_ref()
            .and_then(|j| j.get("ok"))
            .and_then(|v| v.as_bool());
        let outcome = match (status, ok, error.as_deref()) {
            (None, _, _) => PostOutcome::ConnectFailed,
            (Some(0), _, _) => PostOutcome::Timeout,
            (Some(200), Some(true), _) => PostOutcome::Ok,
            (Some(200), _, Some(e)) => PostOutcome::ApiError(e),
            (Some(s), _, _) => PostOutcome::Status(s),
        };
        match policy.decide(outcome, attempts, retry_after.as_deref()) {
            PostDecision::Delivered => {
                return Ok(DeliveryOutcome::Delivered(vec!["chat.postMessage".into()]))
            }
            PostDecision::Retry(delay) => {
                info!(
                    ?outcome,
                    ?delay,
                    "Slack post refused; retrying after the wait"
                );
                tokio::time::sleep(delay).await;
            }
            PostDecision::GiveUp => {
                return Ok(DeliveryOutcome::failed("gave_up", format!("{outcome:?}")))
            }
            PostDecision::Unknown => {
                return Ok(DeliveryOutcome::failed(
                    "outcome_unknown",
                    format!("{outcome:?}: may have posted; not posting again"),
                ))
            }
        }
    }
}
