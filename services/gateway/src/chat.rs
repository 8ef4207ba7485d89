//! `POST /api/chat`: one user message in, the persona's reply out as server-sent events
//! (`token`, then `done` or `error`; `reset` when the reply is being written again, after
//! which the tokens start over). `done` is sent once the conversation lists the reply.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tracing::{info_span, warn, Instrument};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use uuid::Uuid;

use ghost_shared::envelope::{
    session_stream, storable_text, EventMetadata, NewEvent, RecordedEvent,
};
use ghost_shared::events::{Channel, UserMessageReceived, OUT_OF_TURN_TYPES, TURN_ENDING_TYPES};
use ghost_shared::ids::external_event_id;
use ghost_shared::projections::AssistantTextProjection;
use ghost_shared::store::{StoreError, TurnGuard};
use ghost_shared::telemetry;
use ghost_shared::turn_stream::TurnStreamMessage;

use crate::error::ApiError;
use crate::AppState;

/// The request body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChatRequest {
    session_id: Option<String>,
    text: Option<String>,
    /// Client's idempotency key: a retried request joins the first one's turn.
    request_id: Option<String>,
    /// Who is speaking (the person whose memory the persona reads and writes); absent: the
    /// default person, `user`.
    user_id: Option<String>,
}

/// A validated chat message.
#[derive(Debug)]
pub(crate) struct ChatInput {
    pub(crate) session_id: String,
    text: String,
    request_id: Option<String>,
    /// The speaker: `user_id`, or the default person.
    speaker: String,
}

/// A session key's alphabet (no `.` or `..`), shorter.
fn valid_id(s: &str) -> bool {
    s.len() <= 128 && crate::webhooks::valid_session_key(s)
}

/// The request body as a chat message, or the refusal `POST /api/chat` answers.
pub(crate) fn parse(body: &[u8], max_chars: usize) -> Result<ChatInput, ApiError> {
    let req: ChatRequest = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(
            "invalid_json",
            format!("request body is not valid chat JSON: {e}"),
        )
    })?;
    let session_id = req
        .session_id
        .ok_or_else(|| ApiError::bad_request("missing_session_id", "session_id is required"))?;
    if !valid_id(&session_id) {
        return Err(ApiError::bad_request(
            "invalid_session_id",
            "session_id must be 1-128 characters of A-Z a-z 0-9 - _ . : @",
        ));
    }
    let text = req
        .text
        .ok_or_else(|| ApiError::bad_request("missing_text", "text is required"))?;
    if text.trim().is_empty() {
        return Err(ApiError::bad_request(
            "empty_text",
            "text must not be empty",
        ));
    }
    if text.chars().count() > max_chars {
        return Err(ApiError::bad_request(
            "text_too_long",
            format!("text is longer than {max_chars} characters"),
        ));
    }
    if let Some(r) = &req.request_id {
        if !valid_id(r) {
            return Err(ApiError::bad_request(
                "invalid_request_id",
                "request_id must be 1-128 characters of A-Z a-z 0-9 - _ . : @",
            ));
        }
    }
    if let Some(u) = &req.user_id {
        if !valid_id(u) {
            return Err(ApiError::bad_request(
                "invalid_user_id",
                "user_id must be 1-128 characters of A-Z a-z 0-9 - _ . : @",
            ));
        }
    }
    Ok(ChatInput {
        session_id,
        text,
        request_id: req.request_id,
        speaker: req
            .user_id
            .unwrap_or_else(|| ghost_shared::memory::DEFAULT_PERSON.to_owned()),
    })
}

/// Whether the request says its body is JSON (`application/json`, parameters such as
/// `charset` allowed, any case).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// Handles `POST /api/chat`.
pub async fn chat(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    if !is_json(&headers) {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "the body must be JSON: send Content-Type: application/json",
        ));
    }
    let body = crate::server::read_api_body(&state, body).await?;
    let input = parse(&body, state.ctx.config.ghost.gateway.max_message_chars)?;
    let span = info_span!(
        "chat_turn",
        otel.name = "gateway chat_turn",
        ghost.service = "gateway",
        session_id = %input.session_id,
        // The turn (the user message's id), once known: ties the span to its events.
        correlation_id = tracing::field::Empty,
    );
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if header("traceparent").is_some() {
        let _ = span.set_parent(telemetry::context_from(
            header("traceparent"),
            header("tracestate"),
        ));
    }
    start_turn(state, input).instrument(span).await
}

async fn start_turn(state: AppState, input: ChatInput) -> Result<Response, ApiError> {
    let turn = turn_of(&input);
    tracing::Span::current().record("correlation_id", tracing::field::display(turn));
    let subject = state.ctx.bus().token_subject(&turn);
    // Subscribe before the turn exists, so no token can be missed.
    let subscription = state
        .ctx
        .bus()
        .client()
        .subscribe(subject)
        .await
        .map_err(|e| ApiError::internal("cannot follow the reply stream", e))?;
    let user_event = store_message(&state, turn, input).await?;
    let (tx, rx) = mpsc::channel::<Event>(64);
    let follow = follow_turn(state.clone(), user_event, subscription, tx);
    tokio::spawn(follow.in_current_span());
    let sse =
        Sse::new(ReceiverStream::new(rx).map(Ok::<_, Infallible>)).keep_alive(KeepAlive::default());
    Ok(sse.into_response())
}

/// The turn a message starts (its user message's id): a client-keyed request's is always
/// the same, so a retry joins the first.
pub(crate) fn turn_of(input: &ChatInput) -> Uuid {
    match &input.request_id {
        Some(r) => external_event_id("http", &format!("{}/{}", input.session_id, r)),
        None => Uuid::new_v4(),
    }
}

/// Stores the message as `turn` (a `request_id` used before joins its first turn): the
/// user message's event, or the refusal (`busy`, `idempotency_conflict`, ...). Also how the
/// console's live socket sends ([`crate::conversations`]).
pub(crate) async fn store_message(
    state: &AppState,
    turn: Uuid,
    input: ChatInput,
) -> Result<RecordedEvent, ApiError> {
    let stream = session_stream(&input.session_id);
    // Only a client-keyed request can repeat an earlier turn.
    let existing = match &input.request_id {
        Some(_) => state
            .ctx
            .store()
            .get(turn)
            .await
            .map_err(|e| ApiError::store("cannot read the store", &e))?,
        None => None,
    };
    match existing {
        Some(e) => same_request(e, &input),
        None => {
            append_message(state, &stream, turn, input)
                .instrument(info_span!("append_user_message"))
                .await
        }
    }
}

/// A reused `request_id` joins the first turn only when it carries the same message;
/// with another text it is a client error, never the first turn's reply.
fn same_request(existing: RecordedEvent, input: &ChatInput) -> Result<RecordedEvent, ApiError> {
    let first = existing
        .decode::<UserMessageReceived>()
        .map_err(|e| ApiError::internal("cannot read the stored message", e))?;
    // The stored text has U+0000 replaced (see `envelope::make_storable`).
    if first.session_id == input.session_id && first.text == storable_text(&input.text) {
        return Ok(existing);
    }
    Err(ApiError::new(
        StatusCode::CONFLICT,
        "idempotency_conflict",
        "request_id was already used for a different message; use a new request_id",
    ))
}

fn busy(session_id: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "busy",
        format!("session {session_id} is still answering the previous message; wait for its reply"),
    )
}

/// Appends the user's message unless the session is mid-turn.
async fn append_message(
    state: &AppState,
    stream: &str,
    turn: Uuid,
    input: ChatInput,
) -> Result<RecordedEvent, ApiError> {
    // Autonomy messages and reminders land in the conversation without being a turn.
    let guard = TurnGuard {
        ends_turn: &TURN_ENDING_TYPES,
        not_turn: &OUT_OF_TURN_TYPES,
        running: Duration::from_secs(state.ctx.config.ghost.gateway.turn_timeout_secs),
    };
    let (traceparent, tracestate) = telemetry::current_trace_headers();
    let message = UserMessageReceived {
        session_id: input.session_id.clone(),
        channel: Channel::Http,
        speaker: input.speaker,
        text: input.text,
        external_id: input.request_id,
        reply_to: None,
        image: None,
    };
    let event = NewEvent::new(
        turn,
        &message,
        EventMetadata {
            correlation_id: turn,
            causation_id: None,
            traceparent,
            tracestate,
            service: "gateway".into(),
        },
    )
    .map_err(|e| ApiError::internal("cannot encode the message", e))?;
    // In the conversation the moment it is stored (`GET /api/sessions/{id}/messages`).
    let listing = AssistantTextProjection::listing(&[], std::slice::from_ref(&event))
        .map_err(|e| ApiError::internal("cannot list the message", e))?;
    match state
        .ctx
        .log
        .append_turn(stream, guard, &[event], listing.also())
        .await
    {
        Ok(outcome) => {
            if !outcome.duplicate {
                ghost_shared::metrics::turn_started(Channel::Http.as_str());
            }
            outcome
                .events
                .into_iter()
                .next()
                .ok_or_else(|| ApiError::internal("append returned nothing", "empty outcome"))
        }
        // The previous turn is still running, or someone else's started first.
        Err(ghost_shared::event_log::EventLogError::Store(StoreError::TurnRunning { .. })) => {
            Err(busy(&input.session_id))
        }
        Err(e) => Err(ApiError::store("cannot store the message", &e)),
    }
}

/// The turn's outcome if it is already stored.
async fn stored_outcome(state: &AppState, user_event: &RecordedEvent) -> Option<TurnStreamMessage> {
    let events = state
        .ctx
        .store()
        .read_stream(&user_event.stream, user_event.version)
        .await
        .ok()?;
    events.iter().find_map(|e| {
        (TurnStreamMessage::outcome_user_event_id(e) == Some(user_event.event_id))
            .then(|| TurnStreamMessage::of_outcome(e))
            .flatten()
    })
}

/// Waits (until `deadline`) for the reply to reach the `assistant_text` projection.
async fn wait_until_listed(state: &AppState, event_id: Uuid, deadline: tokio::time::Instant) {
    let pool = state.ctx.store().pool();
    let mut poll = tokio::time::interval(Duration::from_millis(20));
    while tokio::time::Instant::now() < deadline {
        poll.tick().await;
        match AssistantTextProjection::contains(pool, event_id).await {
            Ok(true) => return,
            Ok(false) => {}
            Err(e) => {
                warn!(error = %e, "cannot check the conversation for the reply");
                return;
            }
        }
    }
}

/// Tells the client to drop the tokens it has: the reply is being written again.
fn reset_event() -> Event {
    Event::default().event("reset").data("{}")
}

fn sse_event(message: &TurnStreamMessage) -> Event {
    match message {
        TurnStreamMessage::Token { delta, .. } => Event::default()
            .event("token")
            .data(json!({ "delta": delta }).to_string()),
        TurnStreamMessage::Done {
            event_id,
            reply_text,
        } => Event::default()
            .event("done")
            .data(json!({ "event_id": event_id, "reply_text": reply_text }).to_string()),
        TurnStreamMessage::Error { code, message } => Event::default()
            .event("error")
            .data(json!({ "code": code, "message": message }).to_string()),
    }
}

/// Relays the turn's tokens to the client until the reply (or failure) is known. Also
/// checks the store now and then: core NATS may drop the final message.
async fn follow_turn(
    state: AppState,
    user_event: RecordedEvent,
    mut subscription: async_nats::Subscriber,
    tx: mpsc::Sender<Event>,
) {
    let deadline = tokio::time::Instant::now()
        + Duration::from_secs(state.ctx.config.ghost.gateway.turn_timeout_secs);
    let mut check = tokio::time::interval(Duration::from_millis(1000));
    check.tick().await;
    let mut attempt: Option<Uuid> = None;
    let mut retired: Vec<Uuid> = Vec::new();
    let mut next_seq = 0u64;
    // The persona lists a turn in `assistant_text` before it announces `done` on the
    // turn's subject; an outcome found in the store instead may not be listed yet.
    let mut listed = false;
    let outcome = loop {
        tokio::select! {
            message = subscription.next() => {
                let Some(message) = message else { break stored_outcome(&state, &user_event).await };
                let parsed: TurnStreamMessage = match serde_json::from_slice(&message.payload) {
                    Ok(m) => m,
                    Err(e) => { warn!(error = %e, "undecodable stream message"); continue; }
                };
                match &parsed {
                    TurnStreamMessage::Token { attempt: a, seq, .. } => {
                        // One rendering attempt at a time, in order. A new attempt (the
                        // persona died and the turn is redone) replaces the old one: the
                        // client gets `reset` and the new attempt's tokens from the start,
                        // so the tokens after the last reset add up to `done`.
                        if retired.contains(a) {
                            continue;
                        }
                        match attempt {
                            Some(current) if current != *a => {
                                if *seq != 0 {
                                    continue; // joined mid-attempt: wait for `done`
                                }
                                retired.push(current);
                                attempt = Some(*a);
                                next_seq = 0;
                                if tx.send(reset_event()).await.is_err() {
                                    return;
                                }
                            }
                            None => attempt = Some(*a),
                            Some(_) => {}
                        }
                        if *seq != next_seq {
                            continue;
                        }
                        next_seq += 1;
                        if tx.send(sse_event(&parsed)).await.is_err() {
                            return; // the client went away; the turn completes regardless
                        }
                    }
                    _ => {
                        listed = true;
                        break Some(parsed);
                    }
                }
            }
            _ = check.tick() => {
                if let Some(outcome) = stored_outcome(&state, &user_event).await {
                    break Some(outcome);
                }
            }
            _ = tokio::time::sleep_until(deadline) => break None,
        }
    };
    if let Some(TurnStreamMessage::Done { event_id, .. }) = &outcome {
        // Read your own writes: `done` is sent once the reply is in the conversation
        // `GET /api/sessions/{id}/messages` shows.
        if !listed {
            wait_until_listed(&state, *event_id, deadline).await;
        }
    }
    let outcome = outcome.unwrap_or(TurnStreamMessage::Error {
        code: "timeout".into(),
        message: "no reply within the turn timeout; it may still arrive (GET /api/sessions/<id>/messages)".into(),
    });
    let _ = tx.send(sse_event(&outcome)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_reports_each_problem_clearly() {
        let code = |b: &str| parse(b.as_bytes(), 10).unwrap_err().code;
        assert_eq!(code("{"), "invalid_json");
        assert_eq!(code(r#"{"text":"hi"}"#), "missing_session_id");
        assert_eq!(
            code(r#"{"session_id":"a b","text":"hi"}"#),
            "invalid_session_id"
        );
        assert_eq!(code(r#"{"session_id":"s"}"#), "missing_text");
        assert_eq!(code(r#"{"session_id":"s","text":"  "}"#), "empty_text");
        assert_eq!(
            code(r#"{"session_id":"s","text":"01234567890"}"#),
            "text_too_long"
        );
        assert_eq!(
            code(r#"{"session_id":"s","text":"hi","extra":1}"#),
            "invalid_json"
        );
        assert!(parse(br#"{"session_id":"s-1","text":"hi"}"#, 10).is_ok());
        assert_eq!(
            code(r#"{"session_id":"s","text":"hi","user_id":"a b"}"#),
            "invalid_user_id"
        );
        assert_eq!(
            parse(br#"{"session_id":"s","text":"hi","user_id":"ann"}"#, 10)
                .unwrap()
                .speaker,
            "ann"
        );
        assert_eq!(
            parse(br#"{"session_id":"s","text":"hi"}"#, 10)
                .unwrap()
                .speaker,
            "user"
        );
    }
}
