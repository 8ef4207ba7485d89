//! Sending one reply (or autonomy message) to a Telegram chat with `sendMessage`, part by
//! part, in order.
//!
//! `sendMessage` has no idempotency key, like Slack's `chat.postMessage`, so the same rule
//! decides retries ([`PostRetryPolicy`]): again only after a 429 (waiting Telegram's
//! `retry_after`) or a connection that never opened; after a timeout or a 5xx the part may
//! have been sent, and the reply ends as `outcome_unknown` instead of showing it twice. A
//! part that fails ends the reply there, so the parts after it never arrive out of order.

use std::time::Duration;

use tracing::info;

use ghost_shared::bus::HandlerError;
use ghost_shared::config::{Secret, TelegramSettings};
use ghost_shared::events::{Channel, ReplyTarget};

use super::send::{send_message_bodies, SendMessage, SEND_MESSAGE_METHOD};
use super::wire::ApiAnswer;
use crate::channel::{DeliveryOutcome, Outbound};
use crate::slack::{PostDecision, PostOutcome, PostRetryPolicy};

/// How one part ended, when not sent.
struct PartFailed {
    code: &'static str,
    why: String,
}

/// Delivers `text` for `out.cause` to the chat in `target`, with settings `s` and bot token
/// `token`.
pub(super) async fn deliver(
    s: &TelegramSettings,
    token: Option<&Secret>,
    out: &Outbound<'_>,
    target: &ReplyTarget,
    text: &str,
) -> Result<DeliveryOutcome, HandlerError> {
    if !matches!(target, ReplyTarget::Telegram { .. }) {
        return Ok(DeliveryOutcome::no_target());
    }
    let Some(token) = token else {
        return Ok(DeliveryOutcome::failed(
            "not_configured",
            "GHOST_TELEGRAM_BOT_TOKEN is not set",
        ));
    };
    let bodies = match send_message_bodies(target, text, s.max_chars_per_message) {
        Ok(b) => b,
        Err(e) => return Ok(DeliveryOutcome::failed("invalid", e.to_string())),
    };
    // sendMessage has no idempotency key: an earlier attempt may have sent.
    if out.mark_attempt(Channel::Telegram).await? {
        return Ok(DeliveryOutcome::failed(
            "outcome_unknown",
            "an earlier attempt may have sent; not sending again",
        ));
    }
    let url = format!(
        "{}/bot{}/{SEND_MESSAGE_METHOD}",
        s.api_base.trim_end_matches('/'),
        token.expose()
    );
    let mut calls = Vec::new();
    for (i, body) in bodies.iter().enumerate() {
        if let Err(PartFailed { code, why }) = send_part(s, out.http, &url, body).await {
            let sent = match calls.len() {
                0 => String::new(),
                n => format!(" ({n} part(s) before it were sent)"),
            };
            let message = format!("part {} of {}: {why}{sent}", i + 1, bodies.len());
            return Ok(DeliveryOutcome::failed(code, message));
        }
        calls.push(SEND_MESSAGE_METHOD.to_owned());
    }
    Ok(DeliveryOutcome::Delivered(calls))
}

/// Sends one part, retrying only while Telegram certainly did not send it. `url` holds the
/// token: it never goes into a message.
async fn send_part(
    s: &TelegramSettings,
    http: &reqwest::Client,
    url: &str,
    body: &SendMessage,
) -> Result<(), PartFailed> {
    let policy = PostRetryPolicy {
        max_attempts: s.max_attempts,
        default_delay: Duration::from_millis(s.retry_default_delay_ms),
        max_retry_after: Duration::from_secs(s.max_retry_after_secs),
    };
    let mut attempts = 0;
    loop {
        attempts += 1;
        let sent = http
            .post(url)
            .timeout(Duration::from_secs(s.request_timeout_secs))
            .json(body)
            .send()
            .await;
        let (status, retry_after, answer) = match sent {
            Ok(r) => {
                let status = r.status().as_u16();
                let header = r
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let answer: Option<ApiAnswer<serde::de::IgnoredAny>> = r.json().await.ok();
                let wait = answer
                    .as_ref()
                    .and_then(|a| a.parameters)
                    .and_then(|p| p.retry_after)
                    .map(|secs| secs.to_string());
                (Some(status), wait.or(header), answer)
            }
            Err(e) if e.is_connect() => (None, None, None),
            Err(_) => (Some(0), None, None),
        };
        let description = answer
            .as_ref()
            .and_then(|a| a.description.clone())
            .unwrap_or_default();
        let outcome = match (status, answer.as_ref().map(|a| a.ok)) {
            (None, _) => PostOutcome::ConnectFailed,
            (Some(0), _) => PostOutcome::Timeout,
            (Some(200), Some(true)) => PostOutcome::Ok,
            (Some(200), Some(false)) => PostOutcome::ApiError(&description),
            (Some(status), _) => PostOutcome::Status(status),
        };
        let what = match status {
            None => "the connection failed".to_owned(),
            Some(0) => "no answer in time".to_owned(),
            Some(status) => format!("sendMessage answered {status} {description}")
                .trim_end()
                .to_owned(),
        };
        match policy.decide(outcome, attempts, retry_after.as_deref()) {
            PostDecision::Delivered => return Ok(()),
            PostDecision::Retry(delay) => {
                info!(%what, ?delay, "Telegram send refused; retrying after the wait");
                tokio::time::sleep(delay).await;
            }
            PostDecision::GiveUp => {
                return Err(PartFailed {
                    code: "gave_up",
                    why: what,
                })
            }
            PostDecision::Unknown => {
                return Err(PartFailed {
                    code: "outcome_unknown",
                    why: format!("{what}: may have sent; not sending again"),
                })
            }
        }
    }
}
