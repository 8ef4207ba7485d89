//! The console's conversations: `GET /api/sessions` (the conversation list) and
//! `GET /api/live` (WebSocket): one open conversation, live, whoever speaks in it.
//!
//! `GET /api/sessions?limit=N&before=P` lists sessions by their last message, newest first:
//! `{"sessions": [{"session_id", "last": <message>}], "next_before": P | null}`; pass
//! `next_before` as `before` for the next page. `limit` is 1-100 (default 30). A page is one
//! walk down `assistant_text` by position, each row checked against its session's newer
//! rows by primary key: it reads rows until it has `limit` sessions.
//!
//! `GET /api/live` takes its token in its first frame, `{"type":"auth","token"}` (within
//! 10 s), so the token is in no URL and a wrong one is an answer, not a failed upgrade:
//! `{"type":"ready","persona","names":{id: display name},"max_message_chars",
//! "autonomy_session_id","recall","stage_cast":[{"id","display_name"}]}` (`recall`: whether
//! replies recall memories, so have a `GET /api/recalls/{event_id}`; `stage_cast`: the
//! characters on a stage, in turn order) or
//! `{"type":"error","code":"unauthorized"}` and a close (1008). Then, client → server:
//!
//! - `{"type":"watch","session_id"}`: follow that conversation (instead of any before):
//!   `{"type":"history","session_id","messages":[…]}` (its last 200 messages, as
//!   `GET /api/sessions/{id}/messages` lists them), then `{"type":"message",…}` for each
//!   message stored after them (the console's, a LINE or Slack user's, a reply, an autonomous
//!   message), `{"type":"turn","state":"running"|"idle"|"failed","turn",…}` when the
//!   session's turn changes (also once when watching starts: a reply still being written
//!   after a reload is `running`; `failed` has the `code` and `message` of the turn's
//!   `RenderFailed` or `TurnTimedOut`), and while a turn runs its reply as it is written:
//!   `{"type":"token","turn","delta"}`, `{"type":"reset","turn"}` when it is written again;
//! - `{"type":"send","session_id","text","request_id"?,"ref"?}`: a chat message, taken as
//!   `POST /api/chat` takes it: `{"type":"sent","ref","event_id"}`, or
//!   `{"type":"refused","ref","code","message"}` with `POST /api/chat`'s code (`busy`,
//!   `text_too_long`, …) and nothing stored.
//!
//! Anything else is `{"type":"error","code":"invalid_frame"}`; the socket stays open.

use std::time::Duration;

use axum::extract::ws::{close_code, CloseFrame, Message, WebSocket};
use axum::extract::State;
use axum::response::Response;
use axum::Json;
use futures::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{json, Value};
use tracing::{debug, warn};
use uuid::Uuid;

use ghost_shared::envelope::{session_stream, EventPayload, RecordedEvent};
use ghost_shared::events::{AssistantReplied, RenderFailed, TurnTimedOut, UserMessageReceived};
use ghost_shared::projections::{AssistantTextProjection, ConversationTurn};
use ghost_shared::turn_stream::TurnStreamMessage;

use crate::auth::constant_time_eq;
use crate::error::ApiError;
use crate::extract::{Query, WebSocketUpgrade};
use crate::AppState;

/// Sessions a page of the list has at most.
const MAX_PAGE: i64 = 100;
/// Sessions a page has when the client does not say.
const DEFAULT_PAGE: i64 = 30;
/// Messages a watcher is sent when it starts.
const HISTORY: i64 = 200;
/// Messages one check sends at most (more wait for the next check).
const ROWS_PER_CHECK: i64 = 200;
/// How often a watched conversation is checked for new messages and its turn's state.
const CHECK_INTERVAL: Duration = Duration::from_millis(300);
/// How long a socket may take to send its token.
const AUTH_WAIT: Duration = Duration::from_secs(10);
/// How often the socket is pinged (under the smallest allowed idle timeout).
const PING_INTERVAL: Duration = Duration::from_secs(15);

/// `?limit=&before=`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Sessions on the page (1-100).
    limit: Option<i64>,
    /// Only sessions whose last message is before this position (the previous page's
    /// `next_before`).
    before: Option<i64>,
}

/// `GET /api/sessions`: sessions by their last message, newest first.
pub async fn list(
    State(state): State<AppState>,
    Query(query): Query<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = query.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::bad_request(
            "invalid_limit",
            format!("limit must be 1-{MAX_PAGE}"),
        ));
    }
    let before = query.before.unwrap_or(i64::MAX);
    let rows = sqlx::query_as::<_, ListedRow>(
        "SELECT a.session_id, a.position, a.event_id, a.role, a.speaker, a.source, a.text, \
         a.recorded_at FROM assistant_text a WHERE a.position < $1 AND NOT EXISTS \
         (SELECT 1 FROM assistant_text b WHERE b.session_id = a.session_id AND b.position > a.position) \
         ORDER BY a.position DESC LIMIT $2",
    )
    .bind(before)
    .bind(limit)
    .fetch_all(state.ctx.store().pool())
    .await
    .map_err(|e| ApiError::store("cannot read the conversations", &e))?;
    let next_before = (rows.len() as i64 == limit)
        .then(|| rows.last().map(|r| r.position))
        .flatten();
    let sessions: Vec<Value> = rows
        .into_iter()
        .map(|r| {
            json!({
                "session_id": r.session_id,
                "last": {
                    "position": r.position, "event_id": r.event_id, "role": r.role,
                    "speaker": r.speaker, "source": r.source, "text": r.text,
                    "recorded_at": r.recorded_at,
                },
            })
        })
        .collect();
    Ok(Json(
        json!({ "sessions": sessions, "next_before": next_before }),
    ))
}

/// A row of the list.
#[derive(Debug, sqlx::FromRow)]
struct ListedRow {
    session_id: String,
    position: i64,
    event_id: Uuid,
    role: String,
    speaker: String,
    source: String,
    text: String,
    recorded_at: chrono::DateTime<chrono::Utc>,
}

/// `GET /api/live`: the upgrade (the token comes in the first frame).
pub async fn live(
    State(state): State<AppState>,
    WebSocketUpgrade(ws): WebSocketUpgrade,
) -> Response {
    let g = &state.ctx.config.ghost.gateway;
    ws.max_frame_size(g.max_ws_frame_bytes)
        .max_message_size(g.max_ws_message_bytes)
        .on_upgrade(move |socket| run(state, socket))
}

/// A frame the console sends.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum ClientFrame {
    Auth {
        token: String,
    },
    Watch {
        session_id: String,
    },
    Send {
        session_id: String,
        text: String,
        #[serde(default)]
        request_id: Option<String>,
        /// The console's own name for the message, echoed back.
        #[serde(default, rename = "ref")]
        reference: Option<Value>,
    },
}

fn error_frame(code: &str, message: impl std::fmt::Display) -> Value {
    json!({ "type": "error", "code": code, "message": message.to_string() })
}

/// What woke the socket's loop.
enum Wake {
    Ping,
    Client(Option<Result<Message, axum::Error>>),
    Token(Option<async_nats::Message>),
    Check,
}

/// Sends `frames` in order; false when the client went away.
pub(crate) async fn send_all<S>(sink: &mut S, frames: Vec<Value>) -> bool
where
    S: futures::Sink<Message> + Unpin,
{
    for frame in frames {
        if sink
            .send(Message::Text(frame.to_string().into()))
            .await
            .is_err()
        {
            return false;
        }
    }
    true
}

/// Whether the first frame carries the right token (in time).
async fn authenticated<R>(state: &AppState, incoming: &mut R) -> bool
where
    R: futures::Stream<Item = Result<Message, axum::Error>> + Unpin,
{
    let first = tokio::time::timeout(AUTH_WAIT, async {
        loop {
            match incoming.next().await {
                Some(Ok(Message::Text(text))) => return Some(text),
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                _ => return None,
            }
        }
    })
    .await;
    let Ok(Some(text)) = first else { return false };
    match serde_json::from_str::<ClientFrame>(&text) {
        Ok(ClientFrame::Auth { token }) => {
            constant_time_eq(token.trim().as_bytes(), state.api_token.expose().as_bytes())
        }
        _ => false,
    }
}

fn ready_frame(state: &AppState) -> Value {
    let config = &state.ctx.config;
    let names: serde_json::Map<String, Value> = config
        .characters
        .characters
        .iter()
        .map(|c| (c.name.clone(), Value::String(c.display_name.clone())))
        .collect();
    let cast: Vec<Value> = config
        .ghost
        .stage
        .cast_ids(&config.characters)
        .into_iter()
        .filter_map(|id| config.characters.get(id))
        .map(|c| json!({ "id": c.name, "display_name": c.display_name }))
        .collect();
    json!({
        "type": "ready",
        "persona": config.ghost.persona.character,
        "names": names,
        "max_message_chars": config.ghost.gateway.max_message_chars,
        "autonomy_session_id": config.ghost.autonomy.session_id,
        "recall": config.ghost.memory.recall_enabled,
        "stage_cast": cast,
    })
}

/// One console's socket.
async fn run(state: AppState, socket: WebSocket) {
    let (mut sink, mut incoming) = socket.split();
    if !authenticated(&state, &mut incoming).await {
        let refusal = error_frame("unauthorized", "wrong or missing token");
        let _ = sink.send(Message::Text(refusal.to_string().into())).await;
        let close = CloseFrame {
            code: close_code::POLICY,
            reason: "unauthorized".into(),
        };
        let _ = sink.send(Message::Close(Some(close))).await;
        return;
    }
    if !send_all(&mut sink, vec![ready_frame(&state)]).await {
        return;
    }
    let mut watch: Option<Watch> = None;
    let mut tokens: Option<Tokens> = None;
    let mut check = tokio::time::interval(CHECK_INTERVAL);
    let mut ping =
        tokio::time::interval_at(tokio::time::Instant::now() + PING_INTERVAL, PING_INTERVAL);
    loop {
        let wake = tokio::select! {
            _ = ping.tick() => Wake::Ping,
            m = incoming.next() => Wake::Client(m),
            t = next_token(tokens.as_mut()) => Wake::Token(t),
            _ = check.tick() => Wake::Check,
        };
        let mut out = Vec::new();
        match wake {
            Wake::Ping => {
                if sink.send(Message::Ping(Default::default())).await.is_err() {
                    return;
                }
            }
            Wake::Client(Some(Ok(Message::Text(text)))) => {
                match serde_json::from_str::<ClientFrame>(&text) {
                    Ok(ClientFrame::Watch { session_id }) => {
                        if crate::webhooks::valid_session_key(&session_id) {
                            tokens = None;
                            let mut w = Watch::new(session_id);
                            w.start(&state, &mut out).await;
                            w.check(&state, &mut tokens, &mut out).await;
                            watch = Some(w);
                        } else {
                            out.push(error_frame(
                                "invalid_session_id",
                                "session id must be 1-200 characters of A-Z a-z 0-9 - _ . : @",
                            ));
                        }
                    }
                    Ok(ClientFrame::Send {
                        session_id,
                        text,
                        request_id,
                        reference,
                    }) => {
                        let body = json!({ "session_id": session_id, "text": text, "request_id": request_id });
                        let watched = watch.as_ref().map(|w| w.session_id.as_str());
                        out.push(send(&state, &body, watched, &mut tokens, reference).await);
                    }
                    Ok(ClientFrame::Auth { .. }) => {}
                    Err(e) => out.push(error_frame("invalid_frame", e)),
                }
            }
            Wake::Client(Some(Ok(Message::Binary(_)))) => {
                out.push(error_frame("invalid_frame", "frames must be JSON text"));
            }
            Wake::Client(Some(Ok(Message::Close(_))) | Some(Err(_)) | None) => return,
            Wake::Client(Some(Ok(_))) => {}
            Wake::Token(Some(message)) => {
                let ended = tokens
                    .as_mut()
                    .map(|t| t.take(&message.payload, &mut out))
                    .unwrap_or(false);
                // The outcome is stored: show it now rather than at the next check.
                if let (true, Some(w)) = (ended, watch.as_mut()) {
                    w.check(&state, &mut tokens, &mut out).await;
                }
            }
            Wake::Token(None) => tokens = None,
            Wake::Check => {
                if let Some(w) = watch.as_mut() {
                    w.check(&state, &mut tokens, &mut out).await;
                }
            }
        }
        if !send_all(&mut sink, out).await {
            return;
        }
    }
}

async fn next_token(tokens: Option<&mut Tokens>) -> Option<async_nats::Message> {
    match tokens {
        Some(t) => t.subscription.next().await,
        None => std::future::pending().await,
    }
}

/// Takes a chat message: the `sent` or `refused` frame. When it is for the watched session,
/// its reply's tokens are followed from before it is stored (none is missed).
async fn send(
    state: &AppState,
    body: &Value,
    watched: Option<&str>,
    tokens: &mut Option<Tokens>,
    reference: Option<Value>,
) -> Value {
    let max = state.ctx.config.ghost.gateway.max_message_chars;
    let input = match crate::chat::parse(body.to_string().as_bytes(), max) {
        Ok(input) => input,
        Err(e) => return refused(reference, &e),
    };
    let turn = crate::chat::turn_of(&input);
    if watched == Some(input.session_id.as_str()) {
        *tokens = Tokens::follow(state, turn).await;
    }
    match crate::chat::store_message(state, turn, input).await {
        Ok(event) => json!({ "type": "sent", "ref": reference, "event_id": event.event_id }),
        Err(e) => {
            if tokens.as_ref().is_some_and(|t| t.turn == turn) {
                *tokens = None;
            }
            refused(reference, &e)
        }
    }
}

fn refused(reference: Option<Value>, e: &ApiError) -> Value {
    json!({ "type": "refused", "ref": reference, "code": e.code, "message": e.message })
}

/// The watched conversation.
struct Watch {
    session_id: String,
    stream: String,
    /// Messages are looked for above this position: the newest one sent at least
    /// [`LATE_ROWS`] ago (a row can be listed after rows with later positions, e.g. a LINE
    /// message the projection lists after an autonomous message its writer listed at once).
    floor: i64,
    /// The newest position sent at each check that sent something, oldest first.
    marks: std::collections::VecDeque<(tokio::time::Instant, i64)>,
    /// The messages sent above `floor`.
    sent: std::collections::HashMap<Uuid, i64>,
    /// The turn state last sent.
    turn: Option<Value>,
}

/// How long after its position's time a message may still be listed.
const LATE_ROWS: Duration = Duration::from_secs(30);

/// The event types that say where a session's turn is.
const TURN_TYPES: [&str; 4] = [
    UserMessageReceived::EVENT_TYPE,
    AssistantReplied::EVENT_TYPE,
    RenderFailed::EVENT_TYPE,
    TurnTimedOut::EVENT_TYPE,
];

impl Watch {
    fn new(session_id: String) -> Self {
        Self {
            stream: session_stream(&session_id),
            session_id,
            floor: 0,
            marks: Default::default(),
            sent: Default::default(),
            turn: None,
        }
    }

    /// The history frame.
    async fn start(&mut self, state: &AppState, out: &mut Vec<Value>) {
        let pool = state.ctx.store().pool();
        let turns = match AssistantTextProjection::recent(pool, &self.session_id, HISTORY).await {
            Ok(turns) => turns,
            Err(e) => {
                let e = ApiError::store("cannot read the conversation", &e);
                out.push(error_frame(e.code, e.message));
                return;
            }
        };
        self.floor = turns.last().map_or(0, |t| t.position);
        match crate::sessions::as_listed(pool, turns).await {
            Ok(messages) => out.push(json!({
                "type": "history", "session_id": self.session_id, "messages": messages,
            })),
            Err(e) => out.push(error_frame(e.code, e.message)),
        }
    }

    /// New messages, then the turn's state if it changed.
    async fn check(&mut self, state: &AppState, tokens: &mut Option<Tokens>, out: &mut Vec<Value>) {
        let pool = state.ctx.store().pool();
        let now = tokio::time::Instant::now();
        while let Some(&(at, position)) = self.marks.front() {
            if now.duration_since(at) < LATE_ROWS {
                break;
            }
            self.floor = self.floor.max(position);
            self.marks.pop_front();
        }
        let floor = self.floor;
        self.sent.retain(|_, position| *position > floor);
        let sent: Vec<Uuid> = self.sent.keys().copied().collect();
        match newer(pool, &self.session_id, self.floor, &sent).await {
            Ok(turns) if !turns.is_empty() => {
                self.sent
                    .extend(turns.iter().map(|t| (t.event_id, t.position)));
                let newest = turns.iter().map(|t| t.position).max().unwrap_or(floor);
                self.marks.push_back((now, newest));
                match crate::sessions::as_listed(pool, turns).await {
                    Ok(messages) => out.extend(messages.into_iter().map(|mut m| {
                        m["type"] = json!("message");
                        m
                    })),
                    Err(e) => warn!(error = %e.message, "cannot list the new messages"),
                }
            }
            Ok(_) => {}
            Err(e) => {
                debug!(error = %e, "cannot read the conversation's new messages");
                return;
            }
        }
        let last = state
            .ctx
            .store()
            .read_stream_tail_of_types(&self.stream, &TURN_TYPES, Uuid::nil(), 1)
            .await;
        let last = match last {
            Ok(mut events) => events.pop(),
            Err(e) => {
                debug!(error = %e, "cannot read the session's turn");
                return;
            }
        };
        let timeout = state.ctx.config.ghost.gateway.turn_timeout_secs;
        let frame = turn_frame(
            &self.session_id,
            last.as_ref(),
            timeout,
            state.ctx.clock().now(),
        );
        if self.turn.as_ref() == Some(&frame) {
            return;
        }
        if frame["state"] == "running" {
            if let Ok(turn) = serde_json::from_value::<Uuid>(frame["turn"].clone()) {
                if tokens.as_ref().is_none_or(|t| t.turn != turn) {
                    *tokens = Tokens::follow(state, turn).await;
                }
            }
        } else {
            *tokens = None;
        }
        self.turn = Some(frame.clone());
        out.push(frame);
    }
}

/// The session's messages after position `after`, but those of `sent`, oldest first.
async fn newer(
    pool: &sqlx::PgPool,
    session_id: &str,
    after: i64,
    sent: &[Uuid],
) -> Result<Vec<ConversationTurn>, sqlx::Error> {
    let rows = sqlx::query_as::<_, ListedRow>(
        "SELECT session_id, position, event_id, role, speaker, source, text, recorded_at \
         FROM assistant_text WHERE session_id = $1 AND position > $2 \
         AND NOT (event_id = ANY($3)) ORDER BY position LIMIT $4",
    )
    .bind(session_id)
    .bind(after)
    .bind(sent)
    .bind(ROWS_PER_CHECK)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| ConversationTurn {
            session_id: r.session_id,
            position: r.position,
            event_id: r.event_id,
            role: r.role,
            speaker: r.speaker,
            source: r.source,
            text: r.text,
            recorded_at: r.recorded_at,
        })
        .collect())
}

/// The turn state `last` (the newest message or outcome of the session) says.
fn turn_frame(
    session_id: &str,
    last: Option<&RecordedEvent>,
    timeout_secs: u64,
    now: chrono::DateTime<chrono::Utc>,
) -> Value {
    let idle = json!({ "type": "turn", "session_id": session_id, "state": "idle" });
    let Some(last) = last else { return idle };
    if last.is::<UserMessageReceived>() {
        let age = now - last.recorded_at;
        if age < chrono::Duration::seconds(timeout_secs as i64) {
            return json!({
                "type": "turn", "session_id": session_id, "state": "running",
                "turn": last.event_id, "since": last.recorded_at,
            });
        }
        return idle;
    }
    match TurnStreamMessage::of_outcome(last) {
        Some(TurnStreamMessage::Error { code, message }) => json!({
            "type": "turn", "session_id": session_id, "state": "failed",
            "turn": TurnStreamMessage::outcome_user_event_id(last), "code": code,
            "message": message, "at": last.recorded_at,
        }),
        _ => idle,
    }
}

/// The running turn's reply as it is written (its core-NATS subject; see `chat.rs`'s
/// `follow_turn`: one attempt at a time, in order, a new attempt after a `reset`).
struct Tokens {
    turn: Uuid,
    subscription: async_nats::Subscriber,
    attempt: Option<Uuid>,
    retired: Vec<Uuid>,
    next_seq: u64,
}

impl Tokens {
    async fn follow(state: &AppState, turn: Uuid) -> Option<Tokens> {
        let bus = state.ctx.bus();
        match bus.client().subscribe(bus.token_subject(&turn)).await {
            Ok(subscription) => Some(Tokens {
                turn,
                subscription,
                attempt: None,
                retired: Vec::new(),
                next_seq: 0,
            }),
            Err(e) => {
                warn!(error = %e, "cannot follow a reply as it is written");
                None
            }
        }
    }

    /// Adds the frames of one stream message to `out`; true when it says the turn ended.
    fn take(&mut self, payload: &[u8], out: &mut Vec<Value>) -> bool {
        let message: TurnStreamMessage = match serde_json::from_slice(payload) {
            Ok(m) => m,
            Err(e) => {
                debug!(error = %e, "undecodable stream message");
                return false;
            }
        };
        let TurnStreamMessage::Token {
            attempt,
            seq,
            delta,
        } = message
        else {
            return true;
        };
        if self.retired.contains(&attempt) {
            return false;
        }
        match self.attempt {
            Some(current) if current != attempt => {
                if seq != 0 {
                    return false;
                }
                self.retired.push(current);
                self.attempt = Some(attempt);
                self.next_seq = 0;
                out.push(json!({ "type": "reset", "turn": self.turn }));
            }
            None => self.attempt = Some(attempt),
            Some(_) => {}
        }
        if seq != self.next_seq {
            return false;
        }
        self.next_seq += 1;
        out.push(json!({ "type": "token", "turn": self.turn, "delta": delta }));
        false
    }
}
