//! `POST /webhooks/line`: LINE Messaging API webhook.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use chrono::{DateTime, Utc};
use tracing::info;

use ghost_shared::envelope::{session_stream, EventMetadata, EventPayload, NewEvent};
use ghost_shared::events::{Channel, LineImageReceived, ReplyTarget, UserMessageReceived};
use ghost_shared::ids::external_event_id;
use ghost_shared::store::{AppendRequest, ExpectedVersion};
use ghost_shared::telemetry;

use super::{bad_json, header, not_configured, read_body, unauthorized, valid_session_key};
use crate::error::ApiError;
use crate::line::{
    classify, verify_signature, ContentProvider, LineAction, LineConfig, LineTurn, ProviderType,
    TurnInput, WebhookBody, SIGNATURE_HEADER,
};
use crate::AppState;

/// The id of the event that records LINE webhook event `webhook_event_id`.
pub fn line_event_id(webhook_event_id: &str) -> uuid::Uuid {
    external_event_id("line", webhook_event_id)
}

/// Handles one webhook request: verify, parse, record each turn (idempotently), answer 200.
pub async fn webhook(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<StatusCode, ApiError> {
    let Some(secret) = state.ctx.config.secrets.line_channel_secret.clone() else {
        return Err(not_configured("LINE", "GHOST_LINE_CHANNEL_SECRET"));
    };
    let gateway = &state.ctx.config.ghost.gateway;
    let body = read_body(body, gateway.max_body_bytes, gateway).await?;
    verify_signature(
        secret.expose().as_bytes(),
        &body,
        header(&headers, SIGNATURE_HEADER),
    )
    .map_err(|e| unauthorized("LINE", e))?;
    let webhook = WebhookBody::from_slice(&body).map_err(|e| bad_json("LINE", e))?;
    let received_at = Utc::now();
    let cfg = LineConfig {
        group_requires_mention: state.ctx.config.ghost.line.group_requires_mention,
    };
    let mut records = Vec::new();
    for event in &webhook.events {
        match classify(event, &cfg) {
            LineAction::StartTurn(turn) if valid_session_key(&turn.session_key) => {
                let r = record(turn, received_at)
                    .map_err(|e| ApiError::internal("cannot encode the LINE event", e))?;
                records.push(r);
            }
            LineAction::StartTurn(turn) => {
                info!(webhook_event_id = %turn.webhook_event_id, "line event ignored: unusable source id");
            }
            LineAction::Ignore { reason } => {
                info!(webhook_event_id = %event.webhook_event_id, reason = reason.as_str(), "line event acknowledged, no turn");
            }
        }
    }
    // One transaction, shared with other webhooks' (group commit), holds every event of
    // this webhook in its order (a conversation's stream order is the order every service
    // reads it in); the answer comes only after it commits.
    let requests = records
        .into_iter()
        .map(|(stream, event)| AppendRequest {
            stream,
            expected: ExpectedVersion::Any,
            events: vec![event],
        })
        .collect();
    // LINE redelivers on a non-2xx answer (when redelivery is on), and the ids make that safe.
    let stored = state
        .webhook_appends
        .append(requests)
        .await
        .map_err(|e| ApiError::store("cannot store the LINE event", &e))?;
    for outcome in stored {
        // An image becomes a turn once the media step appends its message.
        if !outcome.duplicate
            && outcome
                .events
                .iter()
                .any(|e| e.event_type == UserMessageReceived::EVENT_TYPE)
        {
            ghost_shared::metrics::turn_started(Channel::Line.as_str());
        }
    }
    Ok(StatusCode::OK)
}

/// The stream and event recording one turn: the message itself, or, for an image, the intent
/// to download it (the download happens after the 200).
fn record(
    turn: LineTurn,
    received_at: DateTime<Utc>,
) -> Result<(String, NewEvent), serde_json::Error> {
    let id = line_event_id(&turn.webhook_event_id);
    let (traceparent, tracestate) = telemetry::current_trace_headers();
    let metadata = EventMetadata {
        correlation_id: id,
        causation_id: None,
        traceparent,
        tracestate,
        service: crate::SERVICE.into(),
    };
    let reply_to = ReplyTarget::Line {
        reply_token: turn.reply_token.clone(),
        received_at,
        push_to: turn.push_to.clone(),
        is_redelivery: turn.is_redelivery,
    };
    let speaker = turn.user_id.clone().unwrap_or_else(|| turn.push_to.clone());
    let stream = session_stream(&turn.session_key);
    let event = match turn.input {
        TurnInput::Text { text } => NewEvent::new(
            id,
            &UserMessageReceived {
                session_id: turn.session_key,
                channel: Channel::Line,
                speaker,
                text,
                external_id: Some(turn.webhook_event_id),
                reply_to: Some(reply_to),
                image: None,
            },
            metadata,
        ),
        TurnInput::Image {
            message_id,
            content_provider,
        } => NewEvent::new(
            id,
            &LineImageReceived {
                session_id: turn.session_key,
                speaker,
                webhook_event_id: turn.webhook_event_id,
                message_id,
                external_url: external_url(&content_provider),
                reply_to,
            },
            metadata,
        ),
    };
    Ok((stream, event?))
}

fn external_url(cp: &ContentProvider) -> Option<String> {
    match cp.provider {
        ProviderType::External => cp.original_content_url.clone(),
        _ => None,
    }
}
