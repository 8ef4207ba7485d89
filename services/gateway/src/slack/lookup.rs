//! Finding an earlier attempt's post: the reads of [`super::history`] made against Slack.
//!
//! A delivery that finds the attempt marker of an earlier one (which crashed, or was cut
//! off, between its marker and its outcome) reads the thread or channel for a post
//! carrying the reply's id. Found: delivered, nothing is posted. Absent once the earlier
//! attempt can no longer post: posted now. A read Slack refuses: `outcome_unknown`, as
//! before the check existed (an app without the history scopes).

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use ghost_shared::bus::HandlerError;
use ghost_shared::config::{Secret, SlackSettings};

use super::history::{self, PageVerdict, MAX_PAGES};
use crate::channel::Outbound;

/// What the read found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EarlierPost {
    /// The earlier attempt posted; the method that showed it.
    Found(String),
    /// It did not, and can no longer.
    Absent,
    /// Slack did not say (why).
    Unknown(String),
}

/// Looks for the post of the reply `out.cause` in `channel` (`thread_ts`), the earlier
/// attempt's marker being from `marked_at`.
///
/// An earlier attempt still running (a redelivery while the first handler waits out its
/// retries) may post up to [`history::earlier_attempt_bound`] after its marker. When the
/// read finds nothing before then, the reply is delivered again once that time is over
/// (one more delivery, not a backoff series that could run out first).
pub async fn find_earlier_post(
    s: &SlackSettings,
    token: &Secret,
    out: &Outbound<'_>,
    place: (&str, Option<&str>),
    marked_at: DateTime<Utc>,
) -> Result<EarlierPost, HandlerError> {
    let found = read(s, token, out, place, marked_at).await?;
    if found != EarlierPost::Absent {
        return Ok(found);
    }
    let bound = history::earlier_attempt_bound(
        s.max_attempts,
        Duration::from_secs(s.request_timeout_secs),
        Duration::from_millis(s.retry_default_delay_ms),
    );
    let age = (Utc::now() - marked_at).to_std().unwrap_or_default();
    let Some(wait) = bound.checked_sub(age).filter(|w| !w.is_zero()) else {
        return Ok(EarlierPost::Absent);
    };
    Err(HandlerError::later(
        wait,
        format!(
            "an earlier Slack attempt ({} ms ago) may still post; looking again then",
            age.as_millis()
        ),
    ))
}

/// One lookup: up to [`MAX_PAGES`] pages of the thread or channel since the marker.
async fn read(
    s: &SlackSettings,
    token: &Secret,
    out: &Outbound<'_>,
    (channel, thread_ts): (&str, Option<&str>),
    marked_at: DateTime<Utc>,
) -> Result<EarlierPost, HandlerError> {
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let (path, query) =
            history::lookup_query(channel, thread_ts, marked_at.timestamp(), cursor.as_deref());
        let url = format!("{}{path}", s.api_base.trim_end_matches('/'));
        let answer = out
            .http
            .get(&url)
            .bearer_auth(token.expose())
            .query(&query)
            .timeout(Duration::from_secs(s.request_timeout_secs))
            .send()
            .await
            // Slack unreachable: try again on a redelivery, as a failed post would.
            .map_err(|e| HandlerError::transient(format!("{path}: {e}")))?;
        let page: Value = answer.json().await.unwrap_or(Value::Null);
        let method = path.trim_start_matches("/api/").to_owned();
        match history::page_verdict(&page, out.cause.event_id) {
            PageVerdict::Posted => return Ok(EarlierPost::Found(method)),
            PageVerdict::NotHere(Some(next)) => cursor = Some(next),
            PageVerdict::NotHere(None) => return Ok(EarlierPost::Absent),
            PageVerdict::Refused(error) => {
                return Ok(EarlierPost::Unknown(format!("{method}: {error}")))
            }
        }
    }
    Ok(EarlierPost::Unknown(format!(
        "more than {MAX_PAGES} pages since the earlier attempt"
    )))
}
