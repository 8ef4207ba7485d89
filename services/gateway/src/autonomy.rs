//! Autonomy over HTTP: `POST /api/autonomy/tick` (deliberate now) and `GET /api/events`, the
//! console clients' WebSocket carrying both autonomy streams: `{"type": "message", …}` for
//! the persona's utterances (sender: the persona, `display` `chat` or `notify`) and
//! `{"type": "activity", …}` for monitoring. After `ready`, a console is first shown the
//! persona's latest activity from the store (`"replayed": true`), then what happens. The
//! WebSocket takes the bearer token in the `Authorization` header or as `?token=`
//! (browsers cannot set headers on a WebSocket).

use axum::extract::ws::{Message, WebSocket};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{json, Value};
use tracing::{debug, warn};

use ghost_shared::autonomy::activity::{
    activity_of, activity_subject, message_subject, Activity, ActivityEvent, AutonomyMessage,
};
use ghost_shared::autonomy::events::{autonomy_stream, AutonomyMessageRendered, TickTrigger};
use ghost_shared::autonomy::tick::request_tick;

use crate::auth::constant_time_eq;
use crate::error::ApiError;
use crate::extract::{Query, WebSocketUpgrade};
use crate::AppState;

/// `POST /api/autonomy/tick`: records a tick; the worker deliberates on it.
pub async fn tick(State(state): State<AppState>) -> Result<Response, ApiError> {
    let persona = state.ctx.config.ghost.persona.character.clone();
    let id = request_tick(
        &state.ctx.log,
        uuid::Uuid::new_v4(),
        &persona,
        TickTrigger::Api,
        state.ctx.service,
    )
    .await
    .map_err(|e| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            e.to_string(),
        )
    })?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"tick_event_id": id, "persona": persona})),
    )
        .into_response())
}

/// `?token=`.
#[derive(Debug, Deserialize)]
pub struct EventsQuery {
    token: Option<String>,
}

/// `GET /api/events`: the upgrade, after the token check.
pub async fn events(
    State(state): State<AppState>,
    Query(query): Query<EventsQuery>,
    headers: HeaderMap,
    WebSocketUpgrade(ws): WebSocketUpgrade,
) -> Result<Response, ApiError> {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .map(str::to_owned)
        .or_else(|| crate::auth::protocol_token(&headers))
        .or(query.token);
    let authorized = presented
        .is_some_and(|t| constant_time_eq(t.as_bytes(), state.api_token.expose().as_bytes()));
    if !authorized {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing or wrong token (Authorization: Bearer <token>, or ?token=<token>)",
        ));
    }
    let g = &state.ctx.config.ghost.gateway;
    Ok(ws
        .protocols([crate::auth::WEBSOCKET_PROTOCOL])
        .max_frame_size(g.max_ws_frame_bytes)
        .max_message_size(g.max_ws_message_bytes)
        .on_upgrade(move |socket| follow(state, socket)))
}

/// The frame a message becomes: an utterance of the persona.
fn message_frame(m: AutonomyMessage) -> Value {
    json!({
        "type": "message",
        "event_id": m.event_id,
        "speaker": m.speaker,
        "session_id": m.session_id,
        "text": m.text,
        "display": m.delivery.mode.as_str(),
        "message_kind": m.delivery.message_kind,
    })
}

/// A message frame with the action result it reports (`result_event_id`) and when it was
/// said (`recorded_at`), from its stored event, so a console can link the two and date it.
async fn with_result(state: &AppState, mut frame: Value) -> Value {
    let Ok(id) = serde_json::from_value::<uuid::Uuid>(frame["event_id"].clone()) else {
        return frame;
    };
    if let Ok(Some(event)) = state.ctx.store().get(id).await {
        frame["recorded_at"] = json!(event.recorded_at);
        if let Ok(message) = event.decode::<AutonomyMessageRendered>() {
            frame["result_event_id"] = json!(message.result_event_id);
        }
    }
    frame
}

fn activity_frame(a: Activity) -> Value {
    json!({
        "type": "activity",
        "kind": a.kind,
        "persona": a.persona,
        "event_id": a.event_id,
        "detail": a.detail,
        "recorded_at": a.recorded_at,
    })
}

/// Activity entries a console is shown of the past when it connects.
const REPLAYED_ACTIVITY: i64 = 50;

/// The persona's latest activity entries, oldest first, read from its autonomy stream
/// (none, and a warning, when the store cannot be read: the live stream still works).
async fn recent_activity(state: &AppState) -> Vec<Activity> {
    let persona = &state.ctx.config.ghost.persona.character;
    let read = state
        .ctx
        .store()
        .read_stream_tail_of_types(
            &autonomy_stream(persona),
            ActivityEvent::TYPES,
            uuid::Uuid::nil(),
            REPLAYED_ACTIVITY,
        )
        .await;
    match read {
        Ok(events) => events.iter().filter_map(activity_of).collect(),
        Err(e) => {
            warn!(error = %e, "cannot read past activity; showing only what happens from now");
            Vec::new()
        }
    }
}

/// One console's connection: both subjects until it closes.
async fn follow(state: AppState, socket: WebSocket) {
    let (mut sink, mut incoming) = socket.split();
    let bus = state.ctx.bus();
    let subscribed = async {
        let messages = bus.client().subscribe(message_subject(bus)).await;
        let activity = bus.client().subscribe(activity_subject(bus)).await;
        Ok::<_, String>((
            messages.map_err(|e| e.to_string())?,
            activity.map_err(|e| e.to_string())?,
        ))
    };
    let (mut messages, mut activity) = match subscribed.await {
        Ok(subs) => subs,
        Err(e) => {
            let frame = json!({"type": "error", "code": "unavailable", "message": e});
            let _ = sink.send(Message::Text(frame.to_string().into())).await;
            return;
        }
    };
    // Consoles learn the connection is live (and from when they will see what is said).
    let ready = json!({"type": "ready"});
    if sink
        .send(Message::Text(ready.to_string().into()))
        .await
        .is_err()
    {
        return;
    }
    // The past after `ready`: what is published meanwhile waits in the subscription, and
    // an entry both read and published is sent once.
    let mut replayed = std::collections::HashSet::new();
    for a in recent_activity(&state).await {
        replayed.insert(a.event_id);
        let mut frame = activity_frame(a);
        frame["replayed"] = Value::Bool(true);
        if sink
            .send(Message::Text(frame.to_string().into()))
            .await
            .is_err()
        {
            return;
        }
    }
    loop {
        let frame = tokio::select! {
            m = messages.next() => match m {
                Some(m) => match serde_json::from_slice::<AutonomyMessage>(&m.payload) {
                    Ok(m) => with_result(&state, message_frame(m)).await,
                    Err(e) => { debug!(error = %e, "undecodable autonomy message"); continue }
                },
                None => break,
            },
            a = activity.next() => match a {
                Some(a) => match serde_json::from_slice::<Activity>(&a.payload) {
                    Ok(a) if replayed.contains(&a.event_id) => continue,
                    Ok(a) => activity_frame(a),
                    Err(e) => { debug!(error = %e, "undecodable activity"); continue }
                },
                None => break,
            },
            incoming = incoming.next() => match incoming {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                // Consoles only listen here; what they send is ignored.
                Some(Ok(_)) => continue,
            },
        };
        if sink
            .send(Message::Text(frame.to_string().into()))
            .await
            .is_err()
        {
            break;
        }
    }
}
