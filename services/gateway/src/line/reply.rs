//! Outgoing LINE messages: request bodies, retry keys, reply-token freshness and the plan
//! that turns one assistant reply into API calls that each deliver at most once.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use super::split::{utf16_len, MAX_MESSAGES_PER_CALL, MAX_TEXT_UNITS};

/// Path of the reply API (relative to the configurable base URL).
pub const REPLY_PATH: &str = "/v2/bot/message/reply";

/// Path of the push API (relative to the configurable base URL).
pub const PUSH_PATH: &str = "/v2/bot/message/push";

/// Header carrying the idempotency key of a push call.
pub const RETRY_KEY_HEADER: &str = "X-Line-Retry-Key";

/// How long LINE guarantees a reply token works after the webhook: one minute. Pass less to
/// `reply_token_fresh` to keep a margin for the request's own latency.
pub const REPLY_TOKEN_VALIDITY: Duration = Duration::from_secs(60);

/// One text message object in a request body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutgoingText {
    /// Always `"text"`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The message text (at most 5000 UTF-16 code units).
    pub text: String,
}

/// Body of a reply API call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplyRequest {
    /// The single-use reply token from the webhook event.
    pub reply_token: String,
    /// One to five messages.
    pub messages: Vec<OutgoingText>,
}

/// Body of a push API call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PushRequest {
    /// User, group or room id.
    pub to: String,
    /// One to five messages.
    pub messages: Vec<OutgoingText>,
}

/// Why a request body could not be built (LINE would reject it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// Reply requested without a reply token.
    #[error("reply token is empty")]
    EmptyReplyToken,
    /// Push requested without a target id.
    #[error("push target is empty")]
    EmptyTarget,
    /// A call must carry at least one message.
    #[error("no messages to send")]
    NoMessages,
    /// More messages than one call may carry.
    #[error("{count} messages in one call; at most {max} allowed")]
    TooManyMessages {
        /// Messages given.
        count: usize,
        /// Allowed per call.
        max: usize,
    },
    /// LINE rejects empty text messages.
    #[error("message {index} is empty")]
    EmptyText {
        /// Position in the batch.
        index: usize,
    },
    /// Text longer than LINE accepts.
    #[error("message {index} is {units} UTF-16 units; at most {max} allowed")]
    TextTooLong {
        /// Position in the batch.
        index: usize,
        /// Its length in UTF-16 code units.
        units: usize,
        /// The limit.
        max: usize,
    },
}

/// Builds the body of a reply call for one batch.
pub fn reply_body(reply_token: &str, batch: &[String]) -> Result<ReplyRequest, BuildError> {
    if reply_token.is_empty() {
        return Err(BuildError::EmptyReplyToken);
    }
    Ok(ReplyRequest {
        reply_token: reply_token.to_owned(),
        messages: messages(batch)?,
    })
}

/// Builds the body of a push call for one batch.
pub fn push_body(to: &str, batch: &[String]) -> Result<PushRequest, BuildError> {
    if to.is_empty() {
        return Err(BuildError::EmptyTarget);
    }
    Ok(PushRequest {
        to: to.to_owned(),
        messages: messages(batch)?,
    })
}

fn messages(batch: &[String]) -> Result<Vec<OutgoingText>, BuildError> {
    if batch.is_empty() {
        return Err(BuildError::NoMessages);
    }
    if batch.len() > MAX_MESSAGES_PER_CALL {
        return Err(BuildError::TooManyMessages {
            count: batch.len(),
            max: MAX_MESSAGES_PER_CALL,
        });
    }
    batch
        .iter()
        .enumerate()
        .map(|(index, text)| {
            if text.trim().is_empty() {
                return Err(BuildError::EmptyText { index });
            }
            let units = utf16_len(text);
            if units > MAX_TEXT_UNITS {
                return Err(BuildError::TextTooLong {
                    index,
                    units,
                    max: MAX_TEXT_UNITS,
                });
            }
            Ok(OutgoingText {
                kind: "text",
                text: text.clone(),
            })
        })
        .collect()
}

/// The `X-Line-Retry-Key` for batch `batch_index` of the reply `reply_event_id`.
///
/// Deterministic (UUIDv5 in the reply's own namespace), so after a crash or a timeout the same
/// push is retried with the same key and LINE accepts it at most once (409 on a repeat).
pub fn retry_key(reply_event_id: Uuid, batch_index: usize) -> Uuid {
    Uuid::new_v5(
        &reply_event_id,
        format!("line.push.batch.{batch_index}").as_bytes(),
    )
}

/// True while a reply token received at `received_at` may still be used at `now`.
///
/// A `now` earlier than `received_at` (clock stepped back) counts as age zero.
pub fn reply_token_fresh(
    received_at: DateTime<Utc>,
    now: DateTime<Utc>,
    max_age: Duration,
) -> bool {
    match (now - received_at).to_std() {
        Ok(age) => age < max_age,
        Err(_) => true, // negative age
    }
}

/// One API call of a delivery plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryStep {
    /// Use the reply token (only ever for the first batch: a token works once).
    Reply {
        /// Which batch this is.
        batch_index: usize,
        /// Request body.
        body: ReplyRequest,
    },
    /// Push, with an idempotency key.
    Push {
        /// Which batch this is.
        batch_index: usize,
        /// Value of `X-Line-Retry-Key`.
        retry_key: Uuid,
        /// Request body.
        body: PushRequest,
    },
}

/// The push step for one batch, used both in plans and as the fallback when a reply call
/// definitely did not deliver (see `retry::Decision::FallBackToPush`).
pub fn push_step(
    push_to: &str,
    batch: &[String],
    reply_event_id: Uuid,
    batch_index: usize,
) -> Result<DeliveryStep, BuildError> {
    Ok(DeliveryStep::Push {
        batch_index,
        retry_key: retry_key(reply_event_id, batch_index),
        body: push_body(push_to, batch)?,
    })
}

/// Turns the batches of one reply into API calls, in order.
///
/// The first batch uses the reply token when there is one and it is still fresh (free and
/// shown as a reply); everything else is pushed with a per-batch retry key. Pushes cost
/// message quota, which is why the reply token is preferred.
pub fn plan_delivery(
    batches: &[Vec<String>],
    reply_token: Option<&str>,
    token_fresh: bool,
    push_to: &str,
    reply_event_id: Uuid,
) -> Result<Vec<DeliveryStep>, BuildError> {
    let usable_token = reply_token.filter(|t| token_fresh && !t.is_empty());
    batches
        .iter()
        .enumerate()
        .map(|(batch_index, batch)| match (batch_index, usable_token) {
            (0, Some(token)) => Ok(DeliveryStep::Reply {
                batch_index,
                body: reply_body(token, batch)?,
            }),
            _ => push_step(push_to, batch, reply_event_id, batch_index),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::line::split::split_text;
    use chrono::TimeZone;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn reply_body_serializes_to_line_shape() {
        let body = reply_body("RT", &s(&["a", "b"]));
        let json = body.ok().and_then(|b| serde_json::to_value(b).ok());
        assert_eq!(
            json,
            Some(serde_json::json!({
                "replyToken": "RT",
                "messages": [{"type":"text","text":"a"},{"type":"text","text":"b"}]
            }))
        );
    }

    #[test]
    fn push_body_serializes_to_line_shape() {
        let json = push_body("C1", &s(&["x"]))
            .ok()
            .and_then(|b| serde_json::to_value(b).ok());
        assert_eq!(
            json,
            Some(serde_json::json!({"to":"C1","messages":[{"type":"text","text":"x"}]}))
        );
    }

    #[test]
    fn bodies_reject_what_line_would_reject() {
        assert_eq!(reply_body("", &s(&["a"])), Err(BuildError::EmptyReplyToken));
        assert_eq!(push_body("", &s(&["a"])), Err(BuildError::EmptyTarget));
        assert_eq!(push_body("U", &[]), Err(BuildError::NoMessages));
        assert_eq!(
            push_body("U", &s(&["1", "2", "3", "4", "5", "6"])),
            Err(BuildError::TooManyMessages { count: 6, max: 5 })
        );
        assert_eq!(
            push_body("U", &s(&["ok", " "])),
            Err(BuildError::EmptyText { index: 1 })
        );
        let long = "🍎".repeat(2501); // 5002 units although only 2501 chars
        assert_eq!(
            push_body("U", &[long]),
            Err(BuildError::TextTooLong {
                index: 0,
                units: 5002,
                max: 5000
            })
        );
    }

    #[test]
    fn retry_key_is_deterministic_per_reply_and_batch() {
        let reply = Uuid::from_u128(42);
        assert_eq!(retry_key(reply, 0), retry_key(reply, 0));
        assert_ne!(retry_key(reply, 0), retry_key(reply, 1));
        assert_ne!(retry_key(reply, 0), retry_key(Uuid::from_u128(43), 0));
        assert_eq!(retry_key(reply, 3).get_version_num(), 5);
    }

    #[test]
    fn retry_key_formats_as_hyphenated_uuid() {
        let k = retry_key(Uuid::from_u128(7), 0).to_string();
        assert_eq!(k.len(), 36);
        assert!(Uuid::parse_str(&k).is_ok());
    }

    #[test]
    fn reply_token_freshness_window() {
        let t0 = Utc
            .timestamp_opt(1_700_000_000, 0)
            .single()
            .unwrap_or_default();
        let max = Duration::from_secs(60);
        assert!(reply_token_fresh(t0, t0, max));
        assert!(reply_token_fresh(
            t0,
            t0 + chrono::TimeDelta::seconds(59),
            max
        ));
        assert!(!reply_token_fresh(
            t0,
            t0 + chrono::TimeDelta::seconds(60),
            max
        ));
        assert!(!reply_token_fresh(
            t0,
            t0 + chrono::TimeDelta::hours(1),
            max
        ));
        // Clock stepped back: still fresh.
        assert!(reply_token_fresh(
            t0,
            t0 - chrono::TimeDelta::seconds(5),
            max
        ));
    }

    #[test]
    fn plan_uses_reply_for_first_batch_and_push_for_rest() {
        let text = "z".repeat(5000 * 7);
        let batches = split_text(&text, MAX_TEXT_UNITS, MAX_MESSAGES_PER_CALL);
        assert_eq!(batches.len(), 2);
        let reply_id = Uuid::from_u128(9);
        let plan = plan_delivery(&batches, Some("RT"), true, "U1", reply_id);
        let Ok(plan) = plan else {
            panic!("plan failed: {plan:?}")
        };
        assert!(
            matches!(&plan[0], DeliveryStep::Reply { batch_index: 0, body } if body.messages.len() == 5)
        );
        assert!(
            matches!(&plan[1], DeliveryStep::Push { batch_index: 1, retry_key: k, body }
            if *k == retry_key(reply_id, 1) && body.to == "U1" && body.messages.len() == 2)
        );
    }

    #[test]
    fn plan_pushes_everything_when_token_stale_or_absent() {
        let batches = vec![s(&["a"]), s(&["b"])];
        let id = Uuid::from_u128(1);
        for (token, fresh) in [(Some("RT"), false), (None, true), (Some(""), true)] {
            let plan = plan_delivery(&batches, token, fresh, "C1", id).unwrap_or_default();
            assert_eq!(plan.len(), 2);
            assert!(plan.iter().enumerate().all(
                |(i, st)| matches!(st, DeliveryStep::Push { batch_index, retry_key: k, .. }
                    if *batch_index == i && *k == retry_key(id, i))
            ));
        }
    }

    #[test]
    fn empty_reply_plans_nothing() {
        assert_eq!(
            plan_delivery(&[], Some("RT"), true, "U1", Uuid::nil()),
            Ok(vec![])
        );
    }
}
