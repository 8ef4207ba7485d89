//! `POST /webhooks/slack`: Slack Events API request URL.

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use tracing::info;

use ghost_shared::envelope::{session_stream, EventMetadata, NewEvent};
use ghost_shared::events::{Channel, ReplyTarget, SlackImageReceived, UserMessageReceived};
use ghost_shared::ids::external_event_id;
use ghost_shared::store::{AppendRequest, ExpectedVersion};
use ghost_shared::telemetry;

use super::{bad_json, header, not_configured, read_body, unauthorized, valid_session_key};
use crate::error::ApiError;
use crate::slack::{
    classify, parse_retry_num, verify_signature, Envelope, SlackAction, SlackTurn,
    RETRY_NUM_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER,
};
use crate::AppState;

/// The id of the event recording the Slack message with dedup key `dedup_key`
/// (`slack:msg:{channel}:{ts}`): the same for retries and for the `app_mention`/`message`
/// pair of one mention.
pub fn slack_event_id(dedup_key: &str) -> uuid::Uuid {
    external_event_id("slack", dedup_key)
}

/// Handles one Events API request.
///
/// Retries (`X-Slack-Retry-Num`) take the same path: the append is a no-op when the first
/// delivery was stored, and stores it when the first delivery failed on our side.
pub async fn events(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let Some(secret) = state.ctx.config.secrets.slack_signing_secret.clone() else {
        return Err(not_configured("Slack", "GHOST_SLACK_SIGNING_SECRET"));
    };
    let settings = &state.ctx.config.ghost.slack;
    let gateway = &state.ctx.config.ghost.gateway;
    let body = read_body(body, gateway.max_body_bytes, gateway).await?;
    verify_signature(
        secret.expose().as_bytes(),
        &body,
        header(&headers, TIMESTAMP_HEADER),
        header(&headers, SIGNATURE_HEADER),
        chrono::Utc::now().timestamp(),
        settings.signature_window_secs,
    )
    .map_err(|e| unauthorized("Slack", e))?;
    let envelope = Envelope::from_slice(&body).map_err(|e| bad_json("Slack", e))?;
    let retry_num = parse_retry_num(header(&headers, RETRY_NUM_HEADER));
    let bot_user_id = state.slack_bot.get();
    match classify(&envelope, retry_num, bot_user_id.as_deref()) {
        SlackAction::UrlVerification { challenge } => {
            Ok(Json(json!({ "challenge": challenge })).into_response())
        }
        SlackAction::StartTurn(turn) if valid_session_key(&turn.session_key) => {
            let (stream, event) =
                record(turn).map_err(|e| ApiError::internal("cannot encode the Slack event", e))?;
            let request = AppendRequest {
                stream,
                expected: ExpectedVersion::Any,
                events: vec![event],
            };
            let stored = state
                .webhook_appends
                .append(vec![request])
                .await
                .map_err(|e| ApiError::store("cannot store the Slack event", &e))?;
            if stored.iter().any(|o| !o.duplicate) {
                ghost_shared::metrics::turn_started(Channel::Slack.as_str());
            }
            Ok(axum::http::StatusCode::OK.into_response())
        }
        SlackAction::StartTurn(turn) => {
            info!(event_key = %turn.event_key, "slack event ignored: unusable channel or ts");
            Ok(axum::http::StatusCode::OK.into_response())
        }
        SlackAction::Ignore { reason } => {
            info!(
                reason = reason.as_str(),
                ?retry_num,
                "slack event acknowledged, no turn"
            );
            Ok(axum::http::StatusCode::OK.into_response())
        }
    }
}

/// The event starting a turn: the user message, or (with an image) the image to download
/// first, whose fetcher then appends the user message.
fn record(turn: SlackTurn) -> Result<(String, NewEvent), serde_json::Error> {
    let id = slack_event_id(&turn.dedup_key);
    let (traceparent, tracestate) = telemetry::current_trace_headers();
    let stream = session_stream(&turn.session_key);
    let metadata = EventMetadata {
        correlation_id: id,
        causation_id: None,
        traceparent,
        tracestate,
        service: crate::SERVICE.into(),
    };
    let reply_to = ReplyTarget::Slack {
        channel: turn.channel,
        thread_ts: turn.thread_ts,
    };
    let event = match turn.image {
        Some(image) => NewEvent::new(
            id,
            &SlackImageReceived {
                session_id: turn.session_key,
                speaker: turn.user,
                external_id: turn.dedup_key,
                text: turn.text,
                file_id: image.file_id,
                url: image.url,
                mimetype: image.mimetype,
                reply_to,
            },
            metadata,
        ),
        None => NewEvent::new(
            id,
            &UserMessageReceived {
                session_id: turn.session_key,
                channel: Channel::Slack,
                speaker: turn.user,
                text: turn.text,
                external_id: Some(turn.dedup_key),
                reply_to: Some(reply_to),
                image: None,
            },
            metadata,
        ),
    }?;
    Ok((stream, event))
}
