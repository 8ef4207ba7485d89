//! Inbound platform webhooks: `POST /webhooks/<platform>`, one handler for every
//! [`Platform`].
//!
//! Every request is checked in the same order, and nothing is stored unless all checks pass:
//! the platform's secret is configured (503) → size limit (413) → signature or secret token
//! over the raw bytes (401) → JSON (400). Then each turn is appended with an id derived from
//! the platform's own identity of the message ([`event_id`]), so a redelivery (even after a
//! restart) appends nothing, and the answer is 200 before any model work: the router and
//! persona pick the turn up from the bus. Webhooks arriving together share one transaction
//! (group commit, [`ghost_shared::event_log::GroupAppender`]); each is answered only after
//! the transaction holding its events commits.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use tracing::info;

use ghost_shared::envelope::{session_stream, EventMetadata, EventPayload, NewEvent};
use ghost_shared::events::{Channel, UserMessageReceived};
use ghost_shared::ids::external_event_id;
use ghost_shared::store::{AppendRequest, ExpectedVersion};
use ghost_shared::telemetry;

use crate::channel::{ImageReceived, InboundError, Platform, Request, Turn};
use crate::error::ApiError;
use crate::AppState;

/// The id of the event recording the message of `channel` with dedup key `dedup_key`.
pub fn event_id(channel: Channel, dedup_key: &str) -> uuid::Uuid {
    external_event_id(channel.as_str(), dedup_key)
}

/// LINE's event ids by their old name (tests find a stored webhook event by it).
pub mod line {
    /// The id of the event that records LINE webhook event `webhook_event_id`.
    pub fn line_event_id(webhook_event_id: &str) -> uuid::Uuid {
        super::event_id(ghost_shared::events::Channel::Line, webhook_event_id)
    }
}

/// Handles one webhook request of the platform its path names: check, read, record each
/// turn (idempotently), answer 200 (or the platform's own answer).
pub async fn receive(
    State(state): State<AppState>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let name = uri.path().rsplit('/').next().unwrap_or_default();
    let Some(platform) = state.platforms.named(name) else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no platform is called {name}"),
        ));
    };
    let about = platform.about();
    let title = about.title;
    let Some(secret) = (about.inbound_secret)(&state.ctx.config.secrets) else {
        return Err(not_configured(title, about.secret_var));
    };
    let gateway = &state.ctx.config.ghost.gateway;
    let body = read_body(body, gateway.max_body_bytes, gateway).await?;
    let request = Request {
        headers: &headers,
        body: &body,
    };
    let inbound = platform.receive(request, secret).map_err(|e| match e {
        InboundError::Unauthorized(e) => unauthorized(title, e),
        InboundError::Malformed(e) => bad_json(title, e),
    })?;
    let mut requests = Vec::new();
    for turn in inbound.turns {
        if !valid_session_key(&turn.session_id) {
            info!(platform = name, dedup_key = %turn.dedup_key, "event ignored: its conversation id is not usable");
            continue;
        }
        let (stream, event) = record(platform, turn)
            .map_err(|e| ApiError::internal(&format!("cannot encode the {title} event"), e))?;
        requests.push(AppendRequest {
            stream,
            expected: ExpectedVersion::Any,
            events: vec![event],
        });
    }
    if !requests.is_empty() {
        // One transaction, shared with other webhooks' (group commit), holds every event of
        // this request in its order (a conversation's stream order is the order every
        // service reads it in); the answer comes only after it commits. A platform
        // redelivers on a non-2xx answer, and the ids make that safe.
        let stored = state
            .webhook_appends
            .append(requests)
            .await
            .map_err(|e| ApiError::store(&format!("cannot store the {title} event"), &e))?;
        for outcome in stored {
            // An image becomes a turn once the media step appends its message.
            if !outcome.duplicate
                && outcome
                    .events
                    .iter()
                    .any(|e| e.event_type == UserMessageReceived::EVENT_TYPE)
            {
                ghost_shared::metrics::turn_started(platform.channel().as_str());
            }
        }
    }
    Ok(match inbound.answer {
        Some(answer) => Json(answer).into_response(),
        None => StatusCode::OK.into_response(),
    })
}

/// The stream and event recording one turn: the message itself, or, with an image, the
/// image to download first (after the 200), whose fetcher then appends the message.
fn record(platform: &dyn Platform, turn: Turn) -> Result<(String, NewEvent), serde_json::Error> {
    let channel = platform.channel();
    let id = event_id(channel, &turn.dedup_key);
    let (traceparent, tracestate) = telemetry::current_trace_headers();
    let metadata = EventMetadata {
        correlation_id: id,
        causation_id: None,
        traceparent,
        tracestate,
        service: crate::SERVICE.into(),
    };
    let stream = session_stream(&turn.session_id);
    let event = match turn.image {
        Some(image) => {
            let image = ImageReceived {
                session_id: turn.session_id,
                channel,
                speaker: turn.speaker,
                external_id: turn.dedup_key,
                text: turn.text,
                content_id: image.content_id,
                url: image.url,
                mimetype: image.mimetype,
                reply_to: turn.reply_to,
            };
            platform.image_events().announce(id, image, metadata)
        }
        None => NewEvent::new(
            id,
            &UserMessageReceived {
                session_id: turn.session_id,
                channel,
                speaker: turn.speaker,
                text: turn.text,
                external_id: Some(turn.dedup_key),
                reply_to: Some(turn.reply_to),
                image: None,
            },
            metadata,
        ),
    }?;
    Ok((stream, event))
}

/// Reads the raw body, refusing more than `limit` bytes with 413 and a body that does not
/// arrive within `gateway.body_read_timeout_secs` with 408.
pub(crate) async fn read_body(
    body: Body,
    limit: usize,
    gateway: &ghost_shared::config::GatewaySettings,
) -> Result<Bytes, ApiError> {
    let timeout = std::time::Duration::from_secs(gateway.body_read_timeout_secs);
    crate::server::read_body_within(body, limit, timeout).await
}

/// 401 for a request whose signature does not verify.
fn unauthorized(platform: &str, e: impl std::fmt::Display) -> ApiError {
    tracing::warn!(platform, error = %e, "webhook rejected: bad signature");
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "invalid_signature",
        format!("{platform} signature rejected: {e}"),
    )
}

/// 503 when the platform's secret is not configured.
fn not_configured(platform: &str, var: &str) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "not_configured",
        format!("{platform} webhooks are disabled: {var} is not set"),
    )
}

/// 400 for a body that verified but does not parse.
fn bad_json(platform: &str, e: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(
        "invalid_json",
        format!("{platform} webhook body is not valid JSON for its schema: {e}"),
    )
}

/// Session keys become stream names: keep them to a safe alphabet and length.
pub(crate) fn valid_session_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 200
        // Path steps: `/api/sessions/../messages` names no session.
        && key != "."
        && key != ".."
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:@".contains(c))
}
