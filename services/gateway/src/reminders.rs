//! The reminders API (issue 46), per person: a person sees and changes only their own.
//!
//! - `POST /api/reminders` `{"person", "session_id", "text", "at" | "when", "rule"?}`: a
//!   reminder in the conversation `session_id` (where it is delivered; the person must have
//!   spoken there, which says the channel and where to push). `at` is an RFC 3339 instant,
//!   `when` a `/remind` time phrase ("in 20 minutes", "tomorrow at 9", "every monday at
//!   7:00") read in the person's zone (the one they set, else `reminders.time_zones`, else
//!   `reminders.time_zone`);
//!   `rule` an RRULE repeating from `at`. A time counted from now ("in 20 minutes") that
//!   would come in the person's quiet hours (`reminders.quiet_hours`) is due at their end,
//!   and the answer's `held_from` says the time asked for;
//! - `GET /api/reminders?person=P`: their reminders still to come, soonest first; beside
//!   them their zone (`time_zone`), their quiet hours (`quiet_hours`, null: none) and the conversations they have spoken in, the latest
//!   first (`conversations`: where a new one can be said; the console's Reminders view);
//! - `PUT /api/reminders/{id}` `{"person", "at" | "when", "rule"?}`: moved;
//! - `DELETE /api/reminders/{id}?person=P`: cancelled.
//!
//! Each change is an event on the conversation's stream; the `reminders` projection and
//! the scheduler take it from there. Bad input is a 400 and appends nothing; someone
//! else's reminder is a 404, as an unknown one.

use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, SubsecRound, Utc};
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use ghost_shared::envelope::{session_stream, EventPayload, NewEvent};
use ghost_shared::events::{Channel, ReplyTarget, UserMessageReceived};
use ghost_shared::reminders::command::{parse_remind, CommandError, RemindCommand, When};
use ghost_shared::reminders::events::{ReminderCancelled, ReminderChanged, ReminderScheduled};
use ghost_shared::reminders::own_settings;
use ghost_shared::reminders::projection::{self, ReminderRow};
use ghost_shared::reminders::{parse_zone, validate_rule};
use ghost_shared::store::ExpectedVersion;

use crate::error::ApiError;
use crate::extract::{Path, Query};
use crate::AppState;

/// Longest reminder text accepted.
pub const MAX_TEXT_CHARS: usize = 500;

/// `POST /api/reminders`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewReminder {
    person: String,
    session_id: String,
    text: String,
    #[serde(default)]
    at: Option<DateTime<Utc>>,
    #[serde(default)]
    when: Option<String>,
    #[serde(default)]
    rule: Option<String>,
}

/// `PUT /api/reminders/{id}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Move {
    person: String,
    #[serde(default)]
    at: Option<DateTime<Utc>>,
    #[serde(default)]
    when: Option<String>,
    #[serde(default)]
    rule: Option<String>,
}

/// `?person=P`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonParam {
    person: String,
}

fn bad(code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::bad_request(code, message)
}

fn valid_person(person: &str) -> Result<(), ApiError> {
    if person.is_empty() || person.chars().count() > 200 || person.chars().any(char::is_control) {
        return Err(bad(
            "invalid_person",
            "person must be 1-200 printable characters",
        ));
    }
    Ok(())
}

/// A time resolved for a person.
struct Resolved {
    /// When it is due (held to the end of their quiet hours, if it was).
    when: When,
    /// Their zone.
    zone: String,
    /// The time asked for, when quiet hours held it.
    held_from: Option<DateTime<Utc>>,
}

/// The time an `at`/`when` pair names, with its rule, resolved for `person` at `now`: a
/// time counted from now that would come in their quiet hours waits until they end.
async fn resolve(
    state: &AppState,
    person: &str,
    at: Option<DateTime<Utc>>,
    when: Option<&str>,
    rule: Option<String>,
) -> Result<Resolved, ApiError> {
    let zone = projection::zone_of(
        state.ctx.store().pool(),
        &state.ctx.config.ghost.reminders,
        person,
    )
    .await
    .map_err(|e| ApiError::internal("cannot read the person's time zone", e))?;
    let tz = parse_zone(&zone).map_err(|e| bad("invalid_time_zone", e.to_string()))?;
    let now = state.ctx.clock().now();
    let when = match (at, when) {
        (Some(at), None) => match rule {
            // Whole seconds, as every time a phrase names.
            None if at.timestamp_subsec_nanos() != 0 => When::Once(at.trunc_subsecs(0)),
            None => When::Once(at),
            Some(rule) => {
                let at = at.trunc_subsecs(0);
                validate_rule(&rule, at, tz).map_err(|e| bad("invalid_rule", e.to_string()))?;
                When::Every { rule, first: at }
            }
        },
        (None, Some(phrase)) if rule.is_none() => {
            // The phrase as a `/remind` command's time, with a placeholder text.
            let command = format!("/remind {phrase} x");
            match parse_remind(&command, now, tz) {
                Some(Ok(RemindCommand::Schedule { when, text })) if text == "x" => when,
                Some(Err(e)) => return Err(bad("invalid_when", e.to_string())),
                _ => return Err(bad("invalid_when", CommandError::Usage.to_string())),
            }
        }
        _ => return Err(bad(
            "invalid_time",
            "give exactly one of at (RFC 3339) and when (a /remind time phrase); rule only with at",
        )),
    };
    if when.first() <= now {
        return Err(bad("in_the_past", "that time has already passed"));
    }
    let (when, held_from) = own_settings::hold(
        state.ctx.store().pool(),
        &state.ctx.config.ghost.reminders,
        person,
        when,
        tz,
    )
    .await
    .map_err(|e| ApiError::internal("cannot read the person's quiet hours", e))?;
    Ok(Resolved {
        when,
        zone,
        held_from,
    })
}

/// The channel and push target of `person`'s latest message in `session_id`.
async fn conversation_of(
    state: &AppState,
    session_id: &str,
    person: &str,
) -> Result<(Channel, Option<ReplyTarget>), ApiError> {
    let payload: Option<Value> = sqlx::query_scalar(
        "SELECT payload FROM events WHERE stream = $1 AND event_type = $2 \
         AND payload->>'speaker' = $3 ORDER BY version DESC LIMIT 1",
    )
    .bind(session_stream(session_id))
    .bind(UserMessageReceived::EVENT_TYPE)
    .bind(person)
    .fetch_optional(state.ctx.store().pool())
    .await
    .map_err(|e| ApiError::internal("cannot read the conversation", e))?;
    let message: UserMessageReceived = payload
        .and_then(|p| serde_json::from_value(p).ok())
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "unknown_conversation",
                "this person has not spoken in that conversation: a reminder goes where it was asked",
            )
        })?;
    Ok((message.channel, message.reply_to))
}

async fn append(state: &AppState, session_id: &str, event: NewEvent) -> Result<(), ApiError> {
    state
        .ctx
        .log
        .append(&session_stream(session_id), ExpectedVersion::Any, &[event])
        .await
        .map_err(|e| ApiError::internal("cannot store the reminder", e))?;
    Ok(())
}

fn shown(row: &ReminderRow) -> Value {
    let due_local = row.due_at.and_then(|at| {
        parse_zone(&row.time_zone)
            .ok()
            .map(|tz| at.with_timezone(&tz).to_rfc3339())
    });
    let mut v = json!(row);
    if let Some(o) = v.as_object_mut() {
        o.insert("due_local".into(), json!(due_local));
    }
    v
}

/// `POST /api/reminders`.
pub async fn create(State(state): State<AppState>, body: Body) -> Result<Response, ApiError> {
    let body = crate::server::read_api_body(&state, body).await?;
    let r: NewReminder = serde_json::from_slice(&body)
        .map_err(|e| bad("invalid_json", format!("not a reminder: {e}")))?;
    valid_person(&r.person)?;
    if !crate::webhooks::valid_session_key(&r.session_id) {
        return Err(bad(
            "invalid_session_id",
            "session id must be 1-200 characters of A-Z a-z 0-9 - _ . : @",
        ));
    }
    let text = r.text.trim().to_owned();
    if text.is_empty() || text.chars().count() > MAX_TEXT_CHARS {
        return Err(bad(
            "invalid_text",
            format!("text must be 1-{MAX_TEXT_CHARS} characters"),
        ));
    }
    let Resolved {
        when,
        zone,
        held_from,
    } = resolve(&state, &r.person, r.at, r.when.as_deref(), r.rule).await?;
    let (channel, target) = conversation_of(&state, &r.session_id, &r.person).await?;
    let reminder_id = Uuid::new_v4();
    let scheduled = ReminderScheduled {
        reminder_id,
        person: r.person,
        session_id: r.session_id.clone(),
        channel,
        target,
        text,
        due_at: when.first(),
        rule: when.rule().map(str::to_owned),
        time_zone: zone,
        held_from,
    };
    let event = NewEvent::origin(reminder_id, &scheduled, state.ctx.service)
        .map_err(|e| ApiError::internal("cannot encode the reminder", e))?;
    append(&state, &r.session_id, event).await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "reminder_id": reminder_id,
            "due_at": scheduled.due_at,
            "rule": scheduled.rule,
            "time_zone": scheduled.time_zone,
            "channel": channel.as_str(),
            "held_from": scheduled.held_from,
        })),
    )
        .into_response())
}

/// `GET /api/reminders?person=P`.
pub async fn list(
    State(state): State<AppState>,
    Query(p): Query<PersonParam>,
) -> Result<Json<Value>, ApiError> {
    valid_person(&p.person)?;
    let rows = projection::upcoming(state.ctx.store().pool(), &p.person)
        .await
        .map_err(|e| ApiError::internal("cannot read reminders", e))?;
    let reminders: Vec<Value> = rows.iter().map(shown).collect();
    let conversations = spoken_in(&state, &p.person).await?;
    let pool = state.ctx.store().pool();
    let time_zone = projection::zone_of(pool, &state.ctx.config.ghost.reminders, &p.person)
        .await
        .map_err(|e| ApiError::internal("cannot read the person's time zone", e))?;
    let quiet_hours =
        own_settings::quiet_hours_of(pool, &state.ctx.config.ghost.reminders, &p.person)
            .await
            .map_err(|e| ApiError::internal("cannot read the person's quiet hours", e))?;
    Ok(Json(json!({
        "person": p.person,
        "time_zone": time_zone,
        "quiet_hours": quiet_hours.map(|q| q.to_string()),
        "reminders": reminders,
        "conversations": conversations,
    })))
}

/// Most conversations [`spoken_in`] lists.
const MAX_CONVERSATIONS: i64 = 20;

/// The conversations `person` has spoken in, the one they spoke in last first: where a
/// reminder of theirs can be said.
async fn spoken_in(state: &AppState, person: &str) -> Result<Vec<Value>, ApiError> {
    let rows: Vec<(String, DateTime<Utc>)> = sqlx::query_as(
        "SELECT session_id, max(recorded_at) FROM assistant_text \
         WHERE role = 'user' AND speaker = $1 \
         GROUP BY session_id ORDER BY max(position) DESC LIMIT $2",
    )
    .bind(person)
    .bind(MAX_CONVERSATIONS)
    .fetch_all(state.ctx.store().pool())
    .await
    .map_err(|e| ApiError::internal("cannot read the conversations", e))?;
    Ok(rows
        .into_iter()
        .map(|(session_id, at)| {
            let channel = crate::people::channel_of_session(&session_id);
            json!({ "session_id": session_id, "channel": channel.as_str(), "last_spoke_at": at })
        })
        .collect())
}

/// `person`'s reminder `id` still to come, or 404.
async fn theirs(state: &AppState, person: &str, id: &str) -> Result<ReminderRow, ApiError> {
    let not_found = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_reminder",
            "no such reminder of this person still to come",
        )
    };
    let id: Uuid = id.parse().map_err(|_| not_found())?;
    projection::one(state.ctx.store().pool(), person, id)
        .await
        .map_err(|e| ApiError::internal("cannot read reminders", e))?
        .filter(|r| r.status == "scheduled")
        .ok_or_else(not_found)
}

/// `PUT /api/reminders/{id}`.
pub async fn change(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Body,
) -> Result<Json<Value>, ApiError> {
    let body = crate::server::read_api_body(&state, body).await?;
    let m: Move = serde_json::from_slice(&body)
        .map_err(|e| bad("invalid_json", format!("not a move: {e}")))?;
    valid_person(&m.person)?;
    let row = theirs(&state, &m.person, &id).await?;
    let Resolved {
        when, held_from, ..
    } = resolve(&state, &m.person, m.at, m.when.as_deref(), m.rule).await?;
    // A recurring reminder moved by a phrase without a rule keeps its rule.
    let rule = when.rule().map(str::to_owned).or(row.rule.clone());
    let changed = ReminderChanged {
        reminder_id: row.reminder_id,
        person: m.person,
        session_id: row.session_id.clone(),
        due_at: when.first(),
        rule,
        held_from,
    };
    let event = NewEvent::origin(Uuid::new_v4(), &changed, state.ctx.service)
        .map_err(|e| ApiError::internal("cannot encode the change", e))?;
    append(&state, &row.session_id, event).await?;
    Ok(Json(json!({
        "reminder_id": row.reminder_id,
        "due_at": changed.due_at,
        "rule": changed.rule,
        "held_from": changed.held_from,
    })))
}

/// `DELETE /api/reminders/{id}?person=P`.
pub async fn cancel(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(p): Query<PersonParam>,
) -> Result<Json<Value>, ApiError> {
    valid_person(&p.person)?;
    let row = theirs(&state, &p.person, &id).await?;
    let cancelled = ReminderCancelled {
        reminder_id: row.reminder_id,
        person: p.person,
        session_id: row.session_id.clone(),
    };
    let event = NewEvent::origin(Uuid::new_v4(), &cancelled, state.ctx.service)
        .map_err(|e| ApiError::internal("cannot encode the cancellation", e))?;
    append(&state, &row.session_id, event).await?;
    Ok(Json(
        json!({ "reminder_id": row.reminder_id, "status": "cancelled" }),
    ))
}
