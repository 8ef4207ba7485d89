//! Sending one reply to LINE: reply token for the first batch while it is fresh, pushes with
//! `X-Line-Retry-Key` for the rest (or all, when the token is stale), retries per
//! [`RetryPolicy`].

use std::time::Duration;

use chrono::Utc;
use tracing::{info, warn};

use ghost_shared::bus::HandlerError;
use ghost_shared::config::{LineSettings, Secret};
use ghost_shared::events::{Channel, ReplyTarget};

use crate::channel::{DeliveryOutcome, Outbound};
use crate::line::reply::{PUSH_PATH, REPLY_PATH, RETRY_KEY_HEADER};
use crate::line::retry::{Attempt, Decision, Endpoint, Outcome, RetryPolicy};
use crate::line::{plan_delivery, push_step, reply_token_fresh, split_text, DeliveryStep};

/// One HTTP answer, reduced to what the retry policy needs.
struct Answer {
    outcome: Outcome,
    retry_after: Option<String>,
}

/// How one batch ended.
enum BatchEnd {
    Sent(&'static str),
    Unknown(String),
    Failed(String),
}

/// How long an attempt may still be running after it left its marker: a few calls' time.
fn earlier_attempt_bound(s: &LineSettings) -> Duration {
    Duration::from_secs(s.request_timeout_secs.max(1).saturating_mul(3))
}

fn policy(s: &LineSettings) -> RetryPolicy {
    RetryPolicy {
        base_delay: Duration::from_millis(s.retry_base_delay_ms),
        max_delay: Duration::from_millis(s.retry_max_delay_ms),
        max_attempts: s.max_attempts,
        max_retry_after: Duration::from_secs(s.max_retry_after_secs),
    }
}

/// Delivers `text` for the reply event `out.cause` to the LINE chat in `target`, with
/// settings `s` and access token `token`.
pub(super) async fn deliver(
    s: &LineSettings,
    token: Option<&Secret>,
    out: &Outbound<'_>,
    target: &ReplyTarget,
    text: &str,
) -> Result<DeliveryOutcome, HandlerError> {
    let ReplyTarget::Line {
        reply_token,
        received_at,
        push_to,
        is_redelivery,
    } = target
    else {
        return Ok(DeliveryOutcome::no_target());
    };
    let Some(token) = token else {
        return Ok(DeliveryOutcome::failed(
            "not_configured",
            "GHOST_LINE_CHANNEL_ACCESS_TOKEN is not set",
        ));
    };
    let cause = out.cause;
    let max_age = Duration::from_secs(s.reply_token_max_age_secs);
    let fresh_now = || !is_redelivery && reply_token_fresh(*received_at, Utc::now(), max_age);
    let batches = split_text(text, s.max_chars_per_message, s.max_messages_per_call);
    let plan = match plan_delivery(
        &batches,
        reply_token.as_deref(),
        fresh_now(),
        push_to,
        cause.event_id,
    ) {
        Ok(p) => p,
        Err(e) => return Ok(DeliveryOutcome::failed("invalid", e.to_string())),
    };
    let uses_token = plan.iter().any(|p| matches!(p, DeliveryStep::Reply { .. }));
    // A reply token cannot be deduplicated by LINE: leave a marker first. A plan of pushes
    // only (the token went stale) leaves none, but still looks for one.
    let earlier = if uses_token {
        out.mark_attempt_at(Channel::Line).await?
    } else {
        out.earlier_attempt_at().await?
    };
    if let Some(at) = earlier {
        // Another handler of this reply started first: a copy the bus delivered again while
        // the first waited its turn, or a retry of this one. While it may still be running
        // it is waited for, not raced: its reply and a push from here would both arrive.
        let running = Utc::now()
            .signed_duration_since(at)
            .to_std()
            .unwrap_or_default();
        if running < earlier_attempt_bound(s) {
            return Err(HandlerError::Later {
                reason: "an earlier attempt of this reply may still be running".into(),
                after: Duration::from_secs(s.request_timeout_secs.max(1)),
            });
        }
        if !uses_token {
            // It used the reply token (only such an attempt leaves a marker) and never said
            // how that ended: a push now could say the reply twice.
            return Ok(DeliveryOutcome::failed(
                "outcome_unknown",
                "an earlier attempt replied with the token and never recorded how it ended",
            ));
        }
    }
    let earlier_attempt = earlier.is_some();
    let sender = Sender {
        s,
        http: out.http,
        token: token.expose(),
        policy: policy(s),
    };
    let mut calls = Vec::new();
    let mut unknown = Vec::new();
    for step in plan {
        let end = match step {
            DeliveryStep::Reply { batch_index, body } => {
                let fallback =
                    push_step(push_to, &batches[batch_index], cause.event_id, batch_index);
                sender
                    .reply(&body, earlier_attempt, &fresh_now, fallback.ok())
                    .await
            }
            push @ DeliveryStep::Push { .. } => sender.push(&push).await,
        };
        match end {
            BatchEnd::Sent(call) => calls.push(call.to_owned()),
            // Later batches still go out: they are pushes with their own retry keys.
            BatchEnd::Unknown(why) => unknown.push(why),
            BatchEnd::Failed(why) => {
                return Ok(DeliveryOutcome::failed("gave_up", why));
            }
        }
    }
    if !unknown.is_empty() {
        return Ok(DeliveryOutcome::failed(
            "outcome_unknown",
            unknown.join("; "),
        ));
    }
    Ok(DeliveryOutcome::Delivered(calls))
}

struct Sender<'a> {
    s: &'a LineSettings,
    http: &'a reqwest::Client,
    token: &'a str,
    policy: RetryPolicy,
}

impl Sender<'_> {
    async fn call(&self, path: &str, body: &impl serde::Serialize, key: Option<&str>) -> Answer {
        let s = self.s;
        let mut req = self
            .http
            .post(format!("{}{path}", s.api_base.trim_end_matches('/')))
            .bearer_auth(self.token)
            .timeout(Duration::from_secs(s.request_timeout_secs))
            .json(body);
        if let Some(k) = key {
            req = req.header(RETRY_KEY_HEADER, k);
        }
        match req.send().await {
            Ok(r) => Answer {
                outcome: Outcome::Status(r.status().as_u16()),
                retry_after: r
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned),
            },
            Err(e) if e.is_connect() => Answer {
                outcome: Outcome::ConnectFailed,
                retry_after: None,
            },
            // Timeouts and broken connections: LINE may have processed it.
            Err(_) => Answer {
                outcome: Outcome::Timeout,
                retry_after: None,
            },
        }
    }

    async fn reply(
        &self,
        body: &crate::line::ReplyRequest,
        earlier_attempt: bool,
        fresh_now: &impl Fn() -> bool,
        fallback: Option<DeliveryStep>,
    ) -> BatchEnd {
        let mut ambiguous = earlier_attempt;
        let mut attempts = 0;
        loop {
            attempts += 1;
            let a = self.call(REPLY_PATH, body, None).await;
            let decision = self.policy.decide(&Attempt {
                endpoint: Endpoint::Reply,
                outcome: a.outcome,
                attempts_made: attempts,
                earlier_ambiguous: ambiguous,
                retry_after: a.retry_after.as_deref(),
                now: Utc::now(),
                reply_token_fresh: fresh_now(),
            });
            ambiguous |= a.outcome.is_ambiguous();
            match decision {
                Decision::Delivered | Decision::AlreadyDelivered => return BatchEnd::Sent("reply"),
                Decision::Retry(delay) => {
                    info!(?a.outcome, ?delay, "LINE reply failed; retrying");
                    tokio::time::sleep(delay).await;
                }
                Decision::FallBackToPush => {
                    info!(?a.outcome, "LINE reply token unusable; pushing instead");
                    return match &fallback {
                        Some(step) => self.push(step).await,
                        None => BatchEnd::Failed("no push target".into()),
                    };
                }
                Decision::GiveUp => return BatchEnd::Failed(format!("reply: {:?}", a.outcome)),
                Decision::Unknown => {
                    warn!(?a.outcome, "LINE reply may or may not have been delivered");
                    return BatchEnd::Unknown(format!("reply: {:?}", a.outcome));
                }
            }
        }
    }

    async fn push(&self, step: &DeliveryStep) -> BatchEnd {
        let DeliveryStep::Push {
            retry_key, body, ..
        } = step
        else {
            return BatchEnd::Failed("not a push".into());
        };
        let key = retry_key.to_string();
        let mut ambiguous = false;
        let mut attempts = 0;
        loop {
            attempts += 1;
            let a = self.call(PUSH_PATH, body, Some(&key)).await;
            let decision = self.policy.decide(&Attempt {
                endpoint: Endpoint::Push,
                outcome: a.outcome,
                attempts_made: attempts,
                earlier_ambiguous: ambiguous,
                retry_after: a.retry_after.as_deref(),
                now: Utc::now(),
                reply_token_fresh: false,
            });
            ambiguous |= a.outcome.is_ambiguous();
            match decision {
                Decision::Delivered | Decision::AlreadyDelivered => return BatchEnd::Sent("push"),
                Decision::Retry(delay) => {
                    info!(?a.outcome, ?delay, "LINE push failed; retrying with the same retry key");
                    tokio::time::sleep(delay).await;
                }
                Decision::Unknown => return BatchEnd::Unknown(format!("push: {:?}", a.outcome)),
                Decision::GiveUp | Decision::FallBackToPush => {
                    return BatchEnd::Failed(format!("push: {:?}", a.outcome))
                }
            }
        }
    }
}
