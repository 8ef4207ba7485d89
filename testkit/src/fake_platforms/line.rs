//! Fake LINE Messaging API: reply, push (with retry-key semantics), message content, and
//! users' profiles (`/v2/bot/profile/{user}`, a group's or room's member profile).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::core::{texts, Delivery, Fake, Scripted, Shared};

/// Path of the reply API.
const REPLY: &str = "/v2/bot/message/reply";
/// Path of the push API.
const PUSH: &str = "/v2/bot/message/push";

/// A fake LINE API on `127.0.0.1:<port>` (serves both the API and the content host: its
/// [`Fake::base_url`] is both `line.api_base` and `line.data_api_base`).
#[derive(Debug, Clone)]
pub struct FakeLine(Fake);

impl std::ops::Deref for FakeLine {
    type Target = Fake;
    fn deref(&self) -> &Fake {
        &self.0
    }
}

impl FakeLine {
    /// Starts the server.
    pub async fn start() -> std::io::Result<FakeLine> {
        let routes = Router::new()
            .route(REPLY, post(reply))
            .route(PUSH, post(push))
            .route("/v2/bot/message/{id}/content", get(content))
            .route("/v2/bot/profile/{user}", get(profile))
            .route("/v2/bot/{kind}/{chat}/member/{user}", get(member_profile));
        Ok(FakeLine(Fake::start(routes).await?))
    }

    /// Scripts the next answer of the reply API.
    pub fn script_reply(&self, s: Scripted) {
        self.script(REPLY, s);
    }

    /// Scripts the next answer of the push API.
    pub fn script_push(&self, s: Scripted) {
        self.script(PUSH, s);
    }

    /// Serves `total` bytes as the content of message `id`, streamed in chunks without a
    /// `Content-Length` (so a client only learns the size by reading).
    pub fn set_streamed_content(&self, id: &str, total: u64, content_type: &str) {
        self.shared
            .lock()
            .streamed
            .insert(id.to_owned(), (total, content_type.to_owned()));
    }

    /// How many bytes of message `id`'s streamed content the client has pulled so far.
    pub fn content_bytes_served(&self, id: &str) -> u64 {
        self.shared
            .lock()
            .served
            .get(id)
            .map_or(0, |n| n.load(std::sync::atomic::Ordering::SeqCst))
    }

    /// Serves `bytes` as the content of message `id`.
    pub fn set_content(&self, id: &str, bytes: Vec<u8>, content_type: &str) {
        self.shared
            .lock()
            .contents
            .insert(id.to_owned(), (bytes, content_type.to_owned()));
    }
}

fn answer(status: u16, retry_after: Option<&str>, body: Value) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = (code, Json(body)).into_response();
    if let Some(v) = retry_after.and_then(|v| v.parse().ok()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

fn authorized(headers: &HeaderMap) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("Bearer ") && v.len() > 7)
}

async fn reply(State(s): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let token = parsed
        .get("replyToken")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let script = s.next_script(REPLY);
    let (status, retry_after, msg) = {
        let mut st = s.lock();
        if !authorized(&headers) {
            (401, None, "Authentication failed")
        } else if let Some(Scripted {
            status,
            retry_after,
            deliver: false,
        }) = &script
        {
            (*status, retry_after.clone(), "scripted failure")
        } else if token.is_empty() || !st.used_reply_tokens.insert(token.clone()) {
            (400, None, "Invalid reply token")
        } else {
            st.deliveries.push(Delivery {
                endpoint: "reply",
                to: token.clone(),
                thread_ts: None,
                texts: texts(parsed.get("messages")),
            });
            match script {
                Some(sc) => (sc.status, sc.retry_after, "scripted failure after delivery"),
                None => (200, None, ""),
            }
        }
    };
    s.record(REPLY, &headers, &body, status);
    let body = if status == 200 {
        json!({})
    } else {
        json!({ "message": msg })
    };
    answer(status, retry_after.as_deref(), body)
}

async fn push(State(s): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let key = headers
        .get("x-line-retry-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let script = s.next_script(PUSH);
    let (status, retry_after, msg) = {
        let mut st = s.lock();
        if !authorized(&headers) {
            (401, None, "Authentication failed")
        } else if key
            .as_ref()
            .is_some_and(|k| st.accepted_retry_keys.contains(k))
        {
            // LINE: a request with this retry key was already accepted.
            (409, None, "The retry key is already accepted")
        } else if let Some(Scripted {
            status,
            retry_after,
            deliver: false,
        }) = &script
        {
            (*status, retry_after.clone(), "scripted failure")
        } else {
            if let Some(k) = &key {
                st.accepted_retry_keys.insert(k.clone());
            }
            st.deliveries.push(Delivery {
                endpoint: "push",
                to: parsed
                    .get("to")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                thread_ts: None,
                texts: texts(parsed.get("messages")),
            });
            match script {
                Some(sc) => (sc.status, sc.retry_after, "scripted failure after delivery"),
                None => (200, None, ""),
            }
        }
    };
    s.record(PUSH, &headers, &body, status);
    let body = if status == 200 {
        json!({ "sentMessages": [] })
    } else {
        json!({ "message": msg })
    };
    answer(status, retry_after.as_deref(), body)
}

/// `GET /v2/bot/profile/{user}`: the profile set with [`Fake::set_profile`].
async fn profile(
    State(s): State<Shared>,
    Path(user): Path<String>,
    headers: HeaderMap,
) -> Response {
    profile_of(&s, &format!("/v2/bot/profile/{user}"), &user, &headers)
}

/// `GET /v2/bot/{group|room}/{chat}/member/{user}`: the same profiles, in any chat.
async fn member_profile(
    State(s): State<Shared>,
    Path((kind, chat, user)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let path = format!("/v2/bot/{kind}/{chat}/member/{user}");
    if kind != "group" && kind != "room" {
        s.record(&path, &headers, b"", 404);
        return answer(404, None, json!({"message": "Not found"}));
    }
    profile_of(&s, &path, &user, &headers)
}

fn profile_of(s: &Shared, path: &str, user: &str, headers: &HeaderMap) -> Response {
    let name = s.lock().profiles.get(user).cloned();
    let (status, body) = match (authorized(headers), name) {
        (false, _) => (401, json!({"message": "Authentication failed"})),
        (true, None) => (404, json!({"message": "Not found"})),
        (true, Some(name)) => (200, json!({"userId": user, "displayName": name})),
    };
    s.record(path, headers, b"", status);
    answer(status, None, body)
}

async fn content(State(s): State<Shared>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    let path = format!("/v2/bot/message/{id}/content");
    if authorized(&headers) {
        if let Some(response) = streamed(&s, &id) {
            s.record(&path, &headers, b"", 200);
            return response;
        }
    }
    let found = s.lock().contents.get(&id).cloned();
    let (status, response) = match (authorized(&headers), found) {
        (false, _) => (
            401,
            answer(401, None, json!({"message": "Authentication failed"})),
        ),
        (true, None) => (404, answer(404, None, json!({"message": "Not found"}))),
        (true, Some((bytes, ct))) => (200, ([(header::CONTENT_TYPE, ct)], bytes).into_response()),
    };
    s.record(&path, &headers, b"", status);
    response
}

/// The streamed content of `id`, if it is one: 64 KiB chunks up to its size, each counted
/// when the server pulls it (that is, once the client made room for it).
fn streamed(s: &Shared, id: &str) -> Option<Response> {
    const CHUNK: usize = 64 * 1024;
    let (total, content_type) = s.lock().streamed.get(id).cloned()?;
    let served = Arc::new(std::sync::atomic::AtomicU64::new(0));
    s.lock().served.insert(id.to_owned(), served.clone());
    let chunk = Bytes::from(vec![0x42u8; CHUNK]);
    let body = futures::stream::unfold(0u64, move |sent| {
        let (chunk, served) = (chunk.clone(), served.clone());
        async move {
            if sent >= total {
                return None;
            }
            let n = (total - sent).min(CHUNK as u64);
            served.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
            let piece = chunk.slice(..n as usize);
            Some((Ok::<_, std::io::Error>(piece), sent + n))
        }
    });
    Some(
        (
            [(header::CONTENT_TYPE, content_type)],
            axum::body::Body::from_stream(body),
        )
            .into_response(),
    )
}
