//! When to retry a LINE reply or push call, how long to wait, and when a retry would risk a
//! duplicate message.
//!
//! Push calls carry `X-Line-Retry-Key`, so LINE accepts a retried push at most once (a repeat
//! gets 409). Reply calls cannot carry a retry key, but a reply token works only once, so a
//! retried reply cannot deliver twice either. What is *not* safe is switching from reply to
//! push after a reply attempt whose outcome is unknown (timeout or 5xx): the first attempt may
//! have been delivered, and the push has nothing to deduplicate against. Such cases end in
//! [`Decision::Unknown`] and the caller records the reply as failed rather than risk sending it
//! twice.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// Which API a call went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// The reply API (reply token, no retry key).
    Reply,
    /// The push API (with `X-Line-Retry-Key`).
    Push,
}

/// What happened to one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// LINE answered with this HTTP status.
    Status(u16),
    /// The request was sent but no answer arrived in time: it may have been processed.
    Timeout,
    /// The connection could not be established: LINE never saw the request.
    ConnectFailed,
}

impl Outcome {
    /// True when LINE may have processed the request even though we saw a failure.
    pub fn is_ambiguous(self) -> bool {
        matches!(self, Outcome::Timeout)
            || matches!(self, Outcome::Status(s) if (500..=599).contains(&s))
    }

    /// True for failures worth retrying: 429, 5xx, timeouts and connection failures.
    pub fn is_retryable(self) -> bool {
        match self {
            Outcome::Status(s) => is_retryable_status(s),
            Outcome::Timeout | Outcome::ConnectFailed => true,
        }
    }
}

/// Statuses worth retrying: 429 (rate limited) and 5xx (server trouble). Other 4xx will fail
/// the same way again; 409 on a push means an earlier attempt was already accepted.
pub fn is_retryable_status(status: u16) -> bool {
    status == 429 || (500..=599).contains(&status)
}

/// What to do after a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// 2xx: done.
    Delivered,
    /// 409 on a push: an earlier attempt with the same retry key was accepted; done.
    AlreadyDelivered,
    /// Send the same request again (same retry key / same reply token) after this delay.
    Retry(Duration),
    /// The reply call certainly delivered nothing; send this batch by push instead.
    FallBackToPush,
    /// Certainly not delivered and retrying will not help.
    GiveUp,
    /// May or may not have been delivered, and no further attempt is safe.
    Unknown,
}

/// Facts about the call just made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt<'a> {
    /// Which API.
    pub endpoint: Endpoint,
    /// What happened.
    pub outcome: Outcome,
    /// Calls made for this batch so far, including this one (1 after the first call).
    pub attempts_made: u32,
    /// Whether an earlier call for this batch on this endpoint had an ambiguous outcome.
    pub earlier_ambiguous: bool,
    /// The `Retry-After` header of the response, if any.
    pub retry_after: Option<&'a str>,
    /// Current time (for HTTP-date `Retry-After` values).
    pub now: DateTime<Utc>,
    /// For replies: whether the reply token is still fresh enough for another attempt.
    pub reply_token_fresh: bool,
}

/// Backoff schedule and limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Delay before the first retry; doubles each time.
    pub base_delay: Duration,
    /// Upper bound of the computed backoff.
    pub max_delay: Duration,
    /// Total calls per batch, the first one included.
    pub max_attempts: u32,
    /// A `Retry-After` longer than this makes us give up instead of waiting.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            max_attempts: 5,
            // LINE keeps a retry key for 24 h; waiting minutes is fine, hours is not useful.
            max_retry_after: Duration::from_secs(300),
        }
    }
}

impl RetryPolicy {
    /// Exponential backoff after `attempts_made` calls: base, 2·base, 4·base, … capped.
    pub fn backoff(&self, attempts_made: u32) -> Duration {
        let exp = attempts_made.saturating_sub(1).min(31);
        self.base_delay
            .saturating_mul(1u32 << exp)
            .min(self.max_delay)
    }

    /// Delay before the next call, or `None` when no further call should be made (attempts
    /// used up, or the server asks us to wait longer than `max_retry_after`). A parseable
    /// `Retry-After` replaces the computed backoff.
    pub fn retry_delay(
        &self,
        attempts_made: u32,
        retry_after: Option<&str>,
        now: DateTime<Utc>,
    ) -> Option<Duration> {
        if attempts_made >= self.max_attempts {
            return None;
        }
        match retry_after.and_then(|v| parse_retry_after(v, now)) {
            Some(wait) if wait > self.max_retry_after => None,
            Some(wait) => Some(wait),
            None => Some(self.backoff(attempts_made)),
        }
    }

    /// Decides what follows a call; see the module docs for the duplicate-safety reasoning.
    pub fn decide(&self, a: &Attempt<'_>) -> Decision {
        let ambiguous = a.earlier_ambiguous || a.outcome.is_ambiguous();
        match (a.endpoint, a.outcome) {
            (_, Outcome::Status(s)) if (200..=299).contains(&s) => Decision::Delivered,
            (Endpoint::Push, Outcome::Status(409)) => Decision::AlreadyDelivered,
            (endpoint, outcome) if outcome.is_retryable() => {
                let token_usable = endpoint == Endpoint::Push || a.reply_token_fresh;
                if token_usable {
                    if let Some(delay) = self.retry_delay(a.attempts_made, a.retry_after, a.now) {
                        return Decision::Retry(delay);
                    }
                }
                match (ambiguous, endpoint) {
                    (true, _) => Decision::Unknown,
                    (false, Endpoint::Reply) => Decision::FallBackToPush,
                    (false, Endpoint::Push) => Decision::GiveUp,
                }
            }
            // Other 4xx: the request itself is refused.
            (Endpoint::Reply, _) if ambiguous => {
                // Typically "invalid reply token" because the earlier, timed-out call used it.
                Decision::Unknown
            }
            (Endpoint::Reply, _) => Decision::FallBackToPush,
            // A push with a retry key that had been accepted earlier would answer 409, so any
            // other 4xx means nothing was delivered.
            (Endpoint::Push, _) => Decision::GiveUp,
        }
    }
}

/// Parses a `Retry-After` value: delta-seconds or an HTTP-date. Past dates give zero; a number
/// too large for `u64` gives `Duration::MAX` (so it exceeds any limit rather than being
/// ignored).
pub fn parse_retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let v = value.trim();
    if v.is_empty() {
        return None;
    }
    if v.bytes().all(|b| b.is_ascii_digit()) {
        return Some(v.parse::<u64>().map_or(Duration::MAX, Duration::from_secs));
    }
    let at = DateTime::parse_from_rfc2822(v).ok()?.with_timezone(&Utc);
    Some((at - now).to_std().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.timestamp_opt(1_445_412_480, 0)
            .single()
            .unwrap_or_default() // 2015-10-21 07:28:00 UTC
    }

    fn attempt(endpoint: Endpoint, outcome: Outcome, attempts_made: u32) -> Attempt<'static> {
        Attempt {
            endpoint,
            outcome,
            attempts_made,
            earlier_ambiguous: false,
            retry_after: None,
            now: now(),
            reply_token_fresh: true,
        }
    }

    #[test]
    fn retryable_statuses_are_429_and_5xx_only() {
        assert!(is_retryable_status(429));
        assert!(is_retryable_status(500));
        assert!(is_retryable_status(503));
        assert!(is_retryable_status(599));
        for s in [200, 400, 401, 403, 404, 409, 418, 499, 600] {
            assert!(!is_retryable_status(s), "{s}");
        }
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let p = RetryPolicy::default();
        let secs: Vec<u64> = (1..=8).map(|n| p.backoff(n).as_secs()).collect();
        assert_eq!(secs, vec![1, 2, 4, 8, 16, 30, 30, 30]);
        assert_eq!(p.backoff(u32::MAX), p.max_delay);
    }

    #[test]
    fn retry_after_seconds_and_http_date() {
        assert_eq!(parse_retry_after("7", now()), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now()),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now()),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now()), None);
        assert_eq!(parse_retry_after("", now()), None);
        assert_eq!(parse_retry_after("-3", now()), None);
        assert_eq!(
            parse_retry_after("99999999999999999999999", now()),
            Some(Duration::MAX)
        );
    }

    #[test]
    fn retry_after_replaces_backoff_and_too_long_gives_up() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.retry_delay(1, Some("12"), now()),
            Some(Duration::from_secs(12))
        );
        assert_eq!(p.retry_delay(1, Some("garbage"), now()), Some(p.backoff(1)));
        assert_eq!(p.retry_delay(1, Some("301"), now()), None);
        assert_eq!(p.retry_delay(p.max_attempts, None, now()), None);
    }

    #[test]
    fn success_is_delivered_on_both_endpoints() {
        let p = RetryPolicy::default();
        for e in [Endpoint::Reply, Endpoint::Push] {
            assert_eq!(
                p.decide(&attempt(e, Outcome::Status(200), 1)),
                Decision::Delivered
            );
        }
    }

    #[test]
    fn push_409_means_already_delivered() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.decide(&attempt(Endpoint::Push, Outcome::Status(409), 2)),
            Decision::AlreadyDelivered
        );
    }

    #[test]
    fn push_retries_429_5xx_timeouts_with_backoff() {
        let p = RetryPolicy::default();
        for o in [
            Outcome::Status(429),
            Outcome::Status(500),
            Outcome::Status(502),
            Outcome::Timeout,
            Outcome::ConnectFailed,
        ] {
            assert_eq!(
                p.decide(&attempt(Endpoint::Push, o, 2)),
                Decision::Retry(Duration::from_secs(2)),
                "{o:?}"
            );
        }
    }

    #[test]
    fn push_honours_retry_after() {
        let p = RetryPolicy::default();
        let a = Attempt {
            retry_after: Some("20"),
            ..attempt(Endpoint::Push, Outcome::Status(429), 1)
        };
        assert_eq!(p.decide(&a), Decision::Retry(Duration::from_secs(20)));
    }

    #[test]
    fn push_other_4xx_gives_up() {
        let p = RetryPolicy::default();
        for s in [400, 401, 403, 404] {
            let a = Attempt {
                earlier_ambiguous: true,
                ..attempt(Endpoint::Push, Outcome::Status(s), 2)
            };
            assert_eq!(p.decide(&a), Decision::GiveUp, "{s}");
        }
    }

    #[test]
    fn push_exhausted_is_unknown_if_ambiguous_else_give_up() {
        let p = RetryPolicy::default();
        let n = p.max_attempts;
        assert_eq!(
            p.decide(&attempt(Endpoint::Push, Outcome::Status(503), n)),
            Decision::Unknown
        );
        assert_eq!(
            p.decide(&attempt(Endpoint::Push, Outcome::Status(429), n)),
            Decision::GiveUp
        );
        let a = Attempt {
            earlier_ambiguous: true,
            ..attempt(Endpoint::Push, Outcome::Status(429), n)
        };
        assert_eq!(p.decide(&a), Decision::Unknown);
    }

    #[test]
    fn reply_retries_while_token_fresh() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.decide(&attempt(Endpoint::Reply, Outcome::Timeout, 1)),
            Decision::Retry(Duration::from_secs(1))
        );
    }

    #[test]
    fn reply_definite_failure_falls_back_to_push() {
        let p = RetryPolicy::default();
        // Token expired before any ambiguous attempt: LINE refused, nothing delivered.
        assert_eq!(
            p.decide(&attempt(Endpoint::Reply, Outcome::Status(400), 1)),
            Decision::FallBackToPush
        );
        // Rate limited and the token went stale meanwhile: nothing delivered either.
        let stale = Attempt {
            reply_token_fresh: false,
            ..attempt(Endpoint::Reply, Outcome::Status(429), 1)
        };
        assert_eq!(p.decide(&stale), Decision::FallBackToPush);
        let refused = Attempt {
            reply_token_fresh: false,
            ..attempt(Endpoint::Reply, Outcome::ConnectFailed, 1)
        };
        assert_eq!(p.decide(&refused), Decision::FallBackToPush);
    }

    #[test]
    fn reply_after_ambiguous_attempt_never_falls_back_to_push() {
        let p = RetryPolicy::default();
        // Timed out and the token is now stale: the reply may have landed.
        let stale = Attempt {
            reply_token_fresh: false,
            ..attempt(Endpoint::Reply, Outcome::Timeout, 1)
        };
        assert_eq!(p.decide(&stale), Decision::Unknown);
        // "Invalid reply token" after an earlier timeout: the first call probably used it.
        let after = Attempt {
            earlier_ambiguous: true,
            ..attempt(Endpoint::Reply, Outcome::Status(400), 2)
        };
        assert_eq!(p.decide(&after), Decision::Unknown);
    }

    #[test]
    fn ambiguity_classification() {
        assert!(Outcome::Timeout.is_ambiguous());
        assert!(Outcome::Status(500).is_ambiguous());
        assert!(!Outcome::Status(429).is_ambiguous());
        assert!(!Outcome::ConnectFailed.is_ambiguous());
        assert!(!Outcome::Status(400).is_ambiguous());
    }
}
