//! `GET /api/stage?stage_id=<id>` (WebSocket, bearer auth): watch a multi-character stage
//! and talk to it.
//!
//! Client → server: `{"type":"user","text":…}` starts a run; `{"type":"stop"}` (or
//! `{"type":"control","action":"stop"}`) ends the running one after the current turn.
//! Server → client: `{"type":"message","speaker","display_name","text"}`,
//! `{"type":"status","speaker","state":"thinking"|"idle"|"active"}`,
//! `{"type":"control","next":ID}`, `{"type":"user","text"}` (a run's topic),
//! `{"type":"turn_failed","speaker","code","message"}`, `{"type":"stopping"}` (a stop was
//! asked), `{"type":"ended","reason":"cap"|"none"|"stopped"|"error","turns"}`, and
//! `{"type":"error","code","message"}` for a frame it cannot take (the connection stays open).
//! With `?transcript=true` a watcher is first sent the stage's latest run so far (its frames
//! marked `"replayed": true`), then `{"type":"ready","running":bool}`.
//!
//! Frames and messages are capped (`gateway.max_ws_frame_bytes`, `max_ws_message_bytes`):
//! a bigger one closes the connection with 1009 (message too big) and a reason naming the
//! limit; nothing of it is read into memory or stored.
//!
//! Lines come from the stage's events in the store, woken by the persona's signals on core
//! NATS and a periodic check, so every watcher sees every line, in order, even if a signal
//! is lost. Any number of watchers may follow one stage.

use std::time::Duration;

use axum::extract::ws::{close_code, CloseFrame, Message, WebSocket};
use axum::extract::State;
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{json, Value};
use tracing::{debug, warn};
use uuid::Uuid;

use ghost_shared::envelope::{EventMetadata, NewEvent, RecordedEvent};
use ghost_shared::events::{
    stage_stream, StageEnded, StageMemorySaved, StageSpoke, StageStopRequested, StageTurnFailed,
    StageTurnRequested, StageUserInput,
};
use ghost_shared::stage_signal::{stage_subject, StageSignal};
use ghost_shared::store::{ExpectedVersion, StoreError};
use ghost_shared::telemetry;

use crate::error::ApiError;
use crate::extract::{Query, WebSocketUpgrade};
use crate::AppState;

/// How often a watcher checks the store when no signal arrives.
const CHECK_INTERVAL: Duration = Duration::from_millis(500);
/// How often a watcher is pinged (well under the smallest allowed idle timeout).
const PING_INTERVAL: Duration = Duration::from_secs(15);

/// `?stage_id=`.
#[derive(Debug, Deserialize)]
pub struct StageQuery {
    /// The stage to join (default `default`).
    pub stage_id: Option<String>,
    /// Whether to be sent the latest run so far first.
    #[serde(default)]
    pub transcript: bool,
}

/// A stage id usable in a stream name and a NATS subject token.
fn valid_stage_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Handles the upgrade.
pub async fn stage(
    State(state): State<AppState>,
    Query(query): Query<StageQuery>,
    WebSocketUpgrade(ws): WebSocketUpgrade,
) -> Result<Response, ApiError> {
    let stage_id = query.stage_id.unwrap_or_else(|| "default".into());
    if !valid_stage_id(&stage_id) {
        return Err(ApiError::bad_request(
            "invalid_stage_id",
            "stage_id must be 1-64 characters of A-Z a-z 0-9 - _",
        ));
    }
    let g = &state.ctx.config.ghost.gateway;
    let transcript = query.transcript;
    Ok(ws
        .protocols([crate::auth::WEBSOCKET_PROTOCOL])
        .max_frame_size(g.max_ws_frame_bytes)
        .max_message_size(g.max_ws_message_bytes)
        .on_upgrade(move |socket| watch(state, stage_id, transcript, socket)))
}

/// Whether a read failed because a frame or message was over the size limits.
fn over_limit(e: axum::Error) -> bool {
    matches!(
        e.into_inner().downcast::<tungstenite::Error>().as_deref(),
        Ok(tungstenite::Error::Capacity(_))
    )
}

/// Closes with 1009 naming the limit, then reads (and drops) whatever the client still
/// sends until it answers the close (or lingers when the rest cannot be read), so the
/// client sees the close frame rather than a reset.
async fn close_too_big<S, R>(sink: &mut S, incoming: &mut R, limits: (usize, usize))
where
    S: futures::Sink<Message> + Unpin,
    R: futures::Stream<Item = Result<Message, axum::Error>> + Unpin,
{
    let frame = CloseFrame {
        code: close_code::SIZE,
        reason: format!(
            "message too big: at most {} bytes a frame and {} bytes a message",
            limits.0, limits.1
        )
        .into(),
    };
    let _ = sink.send(Message::Close(Some(frame))).await;
    let drain = async {
        while let Some(message) = incoming.next().await {
            if matches!(message, Ok(Message::Close(_))) {
                return; // the client answered the close: a clean end
            }
        }
        // The reader stopped at the oversized data, some of it still unread: closing the
        // socket now would reset the connection, and a reset can overtake our close frame
        // on its way to the client. Give the client time to read it first.
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), drain).await;
}

/// A frame the client sent.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum ClientFrame {
    User { text: String },
    Stop {},
    Control { action: String },
}

fn error_frame(code: &str, message: impl std::fmt::Display) -> Value {
    json!({ "type": "error", "code": code, "message": message.to_string() })
}

/// The frames an event becomes for watchers.
fn frames_for(event: &RecordedEvent) -> Vec<Value> {
    if let Ok(s) = event.decode::<StageSpoke>() {
        vec![
            json!({ "type": "message", "speaker": s.speaker, "display_name": s.display_name, "text": s.text }),
            json!({ "type": "status", "speaker": s.speaker, "state": "idle" }),
        ]
    } else if let Ok(f) = event.decode::<StageTurnFailed>() {
        let mut frames = vec![json!({ "type": "status", "speaker": f.speaker, "state": "idle" })];
        frames.extend(more_frames_for(event));
        frames
    } else if let Ok(t) = event.decode::<StageTurnRequested>() {
        vec![json!({ "type": "control", "next": t.speaker })]
    } else if let Ok(m) = event.decode::<StageMemorySaved>() {
        let last = m.speakers.last().cloned().unwrap_or_default();
        vec![json!({ "type": "status", "speaker": last, "state": "active" })]
    } else {
        more_frames_for(event)
    }
}

/// The frames of the events a console shows besides lines and turns: the topic, a failed
/// turn, a stop asked, the run's end.
fn more_frames_for(event: &RecordedEvent) -> Vec<Value> {
    if let Ok(u) = event.decode::<StageUserInput>() {
        vec![json!({ "type": "user", "text": u.text })]
    } else if let Ok(f) = event.decode::<StageTurnFailed>() {
        vec![
            json!({ "type": "turn_failed", "speaker": f.speaker, "code": f.code, "message": f.message }),
        ]
    } else if event.is::<StageStopRequested>() {
        vec![json!({ "type": "stopping" })]
    } else if let Ok(e) = event.decode::<StageEnded>() {
        vec![json!({ "type": "ended", "reason": e.reason.as_str(), "turns": e.turns })]
    } else {
        Vec::new()
    }
}

/// One watcher's connection.
async fn watch(state: AppState, stage_id: String, transcript: bool, socket: WebSocket) {
    let (mut sink, mut incoming) = socket.split();
    let stream = stage_stream(&stage_id);
    let bus = state.ctx.bus();
    let mut signals = match bus.client().subscribe(stage_subject(bus, &stage_id)).await {
        Ok(s) => s,
        Err(e) => {
            let frame = error_frame("unavailable", format!("cannot follow the stage: {e}"));
            let _ = sink.send(Message::Text(frame.to_string().into())).await;
            return;
        }
    };
    // A watcher sees what happens from now on.
    let mut seen = match state.ctx.store().stream_version(&stream).await {
        Ok(v) => v,
        Err(e) => {
            let frame = error_frame("unavailable", format!("event store: {e}"));
            let _ = sink.send(Message::Text(frame.to_string().into())).await;
            return;
        }
    };
    if transcript && !send_transcript(&state, &stream, seen, &mut sink).await {
        return;
    }
    let mut check = tokio::time::interval(CHECK_INTERVAL);
    // A quiet stage still moves a byte now and then, so the server's idle timeout
    // (`gateway.idle_timeout_secs`) only closes watchers that are really gone.
    // The first ping after one interval, not at once: a new watcher's first frame is an
    // answer or an event.
    let mut ping =
        tokio::time::interval_at(tokio::time::Instant::now() + PING_INTERVAL, PING_INTERVAL);
    loop {
        let mut out: Vec<Value> = Vec::new();
        tokio::select! {
            _ = ping.tick() => {
                if sink.send(Message::Ping(Default::default())).await.is_err() {
                    return;
                }
            }
            frame = incoming.next() => match frame {
                Some(Ok(Message::Text(text))) => {
                    if let Err(e) = take_frame(&state, &stage_id, text.as_bytes()).await {
                        out.push(error_frame(e.code, e.message));
                    }
                }
                Some(Ok(Message::Binary(_))) => {
                    out.push(error_frame("invalid_frame", "frames must be JSON text"));
                }
                Some(Err(e)) => {
                    if over_limit(e) {
                        let g = &state.ctx.config.ghost.gateway;
                        let limits = (g.max_ws_frame_bytes, g.max_ws_message_bytes);
                        debug!(stage_id, ?limits, "websocket frame or message over the limit");
                        close_too_big(&mut sink, &mut incoming, limits).await;
                    }
                    break;
                }
                Some(Ok(Message::Close(_))) | None => break,
                Some(Ok(_)) => {} // ping/pong: axum answers pings itself
            },
            signal = signals.next() => {
                let Some(signal) = signal else { break };
                match serde_json::from_slice::<StageSignal>(&signal.payload) {
                    Ok(StageSignal::Thinking { speaker }) => {
                        // Lines stored before the thinking began come first.
                        catch_up(&state, &stream, &mut seen, &mut out).await;
                        out.push(json!({ "type": "status", "speaker": speaker, "state": "thinking" }));
                    }
                    Ok(StageSignal::Appended { .. }) => catch_up(&state, &stream, &mut seen, &mut out).await,
                    Err(e) => debug!(error = %e, "undecodable stage signal"),
                }
            }
            _ = check.tick() => catch_up(&state, &stream, &mut seen, &mut out).await,
        }
        for frame in out {
            if sink
                .send(Message::Text(frame.to_string().into()))
                .await
                .is_err()
            {
                return; // the watcher went away; the stage goes on
            }
        }
    }
}

/// Events of a stage's stream read back to find its latest run's start.
const TRANSCRIPT_EVENTS: i64 = 400;

/// Sends the stage's latest run up to version `seen` (from its topic on, each frame marked
/// `replayed`), then `ready` with whether a run is under way; false when the watcher left.
async fn send_transcript<S>(state: &AppState, stream: &str, seen: i32, sink: &mut S) -> bool
where
    S: futures::Sink<Message> + Unpin,
{
    let events = match state
        .ctx
        .store()
        .read_stream_tail(stream, TRANSCRIPT_EVENTS)
        .await
    {
        Ok(events) => events,
        Err(e) => {
            warn!(error = %e, "cannot read the stage's transcript");
            Vec::new()
        }
    };
    let events: Vec<&RecordedEvent> = events.iter().filter(|e| e.version <= seen).collect();
    let start = events
        .iter()
        .rposition(|e| e.is::<StageUserInput>())
        .unwrap_or(events.len());
    let mut frames: Vec<Value> = events[start..]
        .iter()
        .flat_map(|e| frames_for(e))
        .filter(|f| f["type"] != "status")
        .map(|mut f| {
            f["replayed"] = Value::Bool(true);
            f
        })
        .collect();
    frames.push(json!({ "type": "ready", "running": running(state, events.last().copied()) }));
    crate::conversations::send_all(sink, frames).await
}

/// Appends to `out` the frames of every event after `seen`.
async fn catch_up(state: &AppState, stream: &str, seen: &mut i32, out: &mut Vec<Value>) {
    match state.ctx.store().read_stream(stream, *seen).await {
        Ok(events) => {
            for e in &events {
                out.extend(frames_for(e));
                *seen = e.version;
            }
        }
        Err(e) => warn!(error = %e, "cannot read the stage"),
    }
}

/// Whether a run is under way on the stage (its last run has not saved its memory), judged
/// by the stream's last event; a run silent for longer than the turn timeout no longer counts.
fn running(state: &AppState, last: Option<&RecordedEvent>) -> bool {
    let Some(last) = last else { return false };
    let timeout =
        chrono::Duration::seconds(state.ctx.config.ghost.gateway.turn_timeout_secs as i64);
    !last.is::<StageMemorySaved>() && state.ctx.clock().now() - last.recorded_at < timeout
}

fn metadata(correlation: Uuid) -> EventMetadata {
    let (traceparent, tracestate) = telemetry::current_trace_headers();
    EventMetadata {
        correlation_id: correlation,
        causation_id: None,
        traceparent,
        tracestate,
        service: "gateway".into(),
    }
}

/// Takes one client frame: a user line or a stop.
async fn take_frame(state: &AppState, stage_id: &str, body: &[u8]) -> Result<(), ApiError> {
    let frame: ClientFrame = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(
            "invalid_frame",
            format!("expected {{\"type\":\"user\",\"text\":…}} or {{\"type\":\"stop\"}}: {e}"),
        )
    })?;
    let stream = stage_stream(stage_id);
    let store = state.ctx.store();
    let last = store
        .last_event(&stream)
        .await
        .map_err(|e| ApiError::store("cannot read the store", &e))?;
    let is_running = running(state, last.as_ref());
    let id = Uuid::new_v4();
    let (event, expected) = match frame {
        ClientFrame::User { text } => {
            let max = state.ctx.config.ghost.gateway.max_message_chars;
            if text.trim().is_empty() {
                return Err(ApiError::bad_request(
                    "empty_text",
                    "text must not be empty",
                ));
            }
            if text.chars().count() > max {
                return Err(ApiError::bad_request(
                    "text_too_long",
                    format!("text is longer than {max} characters"),
                ));
            }
            if is_running {
                return Err(busy(stage_id));
            }
            let input = StageUserInput {
                stage_id: stage_id.to_owned(),
                text,
            };
            let expected = ExpectedVersion::Exact(last.as_ref().map_or(0, |e| e.version));
            (NewEvent::new(id, &input, metadata(id)), expected)
        }
        ClientFrame::Stop {} => stop_event(stage_id, id, is_running)?,
        ClientFrame::Control { action } if action == "stop" => {
            stop_event(stage_id, id, is_running)?
        }
        ClientFrame::Control { action } => {
            return Err(ApiError::bad_request(
                "invalid_frame",
                format!("unknown control action {action}; only stop is accepted"),
            ))
        }
    };
    let event = event.map_err(|e| ApiError::internal("cannot encode the frame", e))?;
    match state.ctx.log.append(&stream, expected, &[event]).await {
        Ok(_) => Ok(()),
        Err(ghost_shared::event_log::EventLogError::Store(StoreError::Conflict { .. })) => {
            Err(busy(stage_id))
        }
        Err(e) => Err(ApiError::store("cannot store the frame", &e)),
    }
}

type Pending = (Result<NewEvent, serde_json::Error>, ExpectedVersion);

fn stop_event(stage_id: &str, id: Uuid, is_running: bool) -> Result<Pending, ApiError> {
    if !is_running {
        return Err(ApiError::bad_request(
            "not_running",
            format!("stage {stage_id} has no run to stop"),
        ));
    }
    let stop = StageStopRequested {
        stage_id: stage_id.to_owned(),
    };
    Ok((NewEvent::new(id, &stop, metadata(id)), ExpectedVersion::Any))
}

fn busy(stage_id: &str) -> ApiError {
    ApiError::bad_request(
        "busy",
        format!("stage {stage_id} is still running; wait for it to end or send a stop"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_frames_parse_strictly() {
        let parse = |s: &str| serde_json::from_str::<ClientFrame>(s);
        assert!(matches!(
            parse(r#"{"type":"user","text":"hi"}"#),
            Ok(ClientFrame::User { .. })
        ));
        assert!(matches!(
            parse(r#"{"type":"stop"}"#),
            Ok(ClientFrame::Stop {})
        ));
        assert!(parse(r#"{"type":"control","action":"stop"}"#).is_ok());
        assert!(parse(r#"{"type":"user"}"#).is_err());
        assert!(parse(r#"{"type":"dance"}"#).is_err());
        assert!(parse("not json").is_err());
        assert!(parse(r#"{"type":"user","text":"hi","x":1}"#).is_err());
    }

    #[test]
    fn stage_ids_fit_a_subject_token() {
        assert!(valid_stage_id("s-1_a"));
        assert!(!valid_stage_id("a.b"));
        assert!(!valid_stage_id(""));
        assert!(!valid_stage_id("a b"));
    }
}
