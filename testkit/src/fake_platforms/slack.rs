//! Fake Slack Web API: `chat.postMessage`, `auth.test`, `users.info`, `conversations.replies` and
//! `conversations.history` (what it posted, with the posts' metadata), and shared files
//! under `/files-pri/{id}/{name}` (Slack's `url_private_download`, served only with a bot
//! token).

use axum::body::Bytes;
use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::core::{Delivery, Fake, Scripted, Shared};

/// Path of `chat.postMessage`.
const POST_MESSAGE: &str = "/api/chat.postMessage";
/// Path of `conversations.replies`.
const REPLIES: &str = "/api/conversations.replies";
/// Path of `conversations.history`.
const HISTORY: &str = "/api/conversations.history";
/// Path of `auth.test`.
const AUTH_TEST: &str = "/api/auth.test";
/// Path of `users.info`.
const USERS_INFO: &str = "/api/users.info";
/// The bot user id `auth.test` answers unless told otherwise.
pub const FAKE_BOT_USER_ID: &str = "UFAKEBOT";

/// A fake Slack Web API on `127.0.0.1:<port>` (its [`Fake::base_url`] is `slack.api_base`).
#[derive(Debug, Clone)]
pub struct FakeSlack(Fake);

impl std::ops::Deref for FakeSlack {
    type Target = Fake;
    fn deref(&self) -> &Fake {
        &self.0
    }
}

impl FakeSlack {
    /// Starts the server.
    pub async fn start() -> std::io::Result<FakeSlack> {
        let routes = Router::new()
            .route(POST_MESSAGE, post(post_message))
            .route(AUTH_TEST, post(auth_test))
            .route(REPLIES, get(replies))
            .route(HISTORY, get(history))
            .route(USERS_INFO, get(users_info))
            .route("/files-pri/{id}/{name}", get(file));
        let fake = Fake::start(routes).await?;
        fake.shared.lock().bot_user_id = Some(FAKE_BOT_USER_ID.to_owned());
        Ok(FakeSlack(fake))
    }

    /// The user id `auth.test` answers from now on (None: it answers `invalid_auth`).
    pub fn set_bot_user_id(&self, user_id: Option<&str>) {
        self.shared.lock().bot_user_id = user_id.map(str::to_owned);
    }

    /// Serves `bytes` as shared file `id`; its download URL is [`Self::file_url`].
    pub fn set_file(&self, id: &str, bytes: Vec<u8>, content_type: &str) {
        self.shared
            .lock()
            .contents
            .insert(id.to_owned(), (bytes, content_type.to_owned()));
    }

    /// The `url_private_download` of file `id`.
    pub fn file_url(&self, id: &str) -> String {
        format!("{}/files-pri/{id}/image.png", self.base_url())
    }

    /// Scripts the next answer of `conversations.replies` / `conversations.history`
    /// (`Scripted::fail(403)`: `missing_scope`).
    pub fn script_history(&self, s: Scripted) {
        self.script(REPLIES, s.clone());
        self.script(HISTORY, s);
    }

    /// Scripts the next answer of `chat.postMessage`.
    pub fn script_post(&self, s: Scripted) {
        self.script(POST_MESSAGE, s);
    }
}

async fn auth_test(State(s): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let authorized = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("Bearer xoxb-"));
    let user = s.lock().bot_user_id.clone();
    let response = match (authorized, user) {
        (true, Some(user_id)) => {
            json!({"ok": true, "user_id": user_id, "bot_id": "BFAKE", "team_id": "T1"})
        }
        _ => json!({"ok": false, "error": "invalid_auth"}),
    };
    s.record(AUTH_TEST, &headers, &body, 200);
    Json(response).into_response()
}

async fn post_message(State(s): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let authorized = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("Bearer xoxb-"));
    let script = s.next_script(POST_MESSAGE);
    let (status, retry_after, response) = {
        let mut st = s.lock();
        if !authorized {
            (200, None, json!({"ok": false, "error": "invalid_auth"}))
        } else if let Some(Scripted {
            status,
            retry_after,
            deliver: false,
        }) = &script
        {
            let error = if *status == 429 {
                "ratelimited"
            } else {
                "internal_error"
            };
            (
                *status,
                retry_after.clone(),
                json!({"ok": false, "error": error}),
            )
        } else {
            let str_field = |k: &str| parsed.get(k).and_then(Value::as_str).map(str::to_owned);
            st.next_ts += 1;
            let ts = format!("1700000000.{:06}", st.next_ts);
            st.slack_messages.push(json!({
                "channel": str_field("channel"), "ts": ts, "thread_ts": str_field("thread_ts"),
                "text": str_field("text"), "metadata": parsed.get("metadata"),
            }));
            st.deliveries.push(Delivery {
                endpoint: "chat.postMessage",
                to: str_field("channel").unwrap_or_default(),
                thread_ts: str_field("thread_ts"),
                texts: str_field("text").into_iter().collect(),
            });
            match script {
                Some(sc) => (
                    sc.status,
                    sc.retry_after,
                    json!({"ok": false, "error": "internal_error"}),
                ),
                None => (
                    200,
                    None,
                    json!({"ok": true, "channel": str_field("channel"), "ts": ts}),
                ),
            }
        }
    };
    s.record(POST_MESSAGE, &headers, &body, status);
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = (code, Json(response)).into_response();
    if let Some(v) = retry_after.and_then(|v| v.parse().ok()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// `conversations.replies`: the posts in thread `ts` of `channel` (the parent is not
/// kept), with their metadata when `include_all_metadata` is true.
async fn replies(
    State(s): State<Shared>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let thread = q.get("ts").cloned();
    read_messages(&s, REPLIES, &q, &headers, |m| {
        thread.is_some() && m["thread_ts"].as_str() == thread.as_deref()
    })
}

/// `conversations.history`: the posts in `channel` outside threads.
async fn history(
    State(s): State<Shared>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    read_messages(&s, HISTORY, &q, &headers, |m| m["thread_ts"].is_null())
}

/// `users.info`: the profile set with [`Fake::set_profile`] (`user_not_found` else).
async fn users_info(
    State(s): State<Shared>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let authorized = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("Bearer xoxb-"));
    let user = q.get("user").cloned().unwrap_or_default();
    let name = s.lock().profiles.get(&user).cloned();
    let response = match (authorized, name) {
        (false, _) => json!({"ok": false, "error": "invalid_auth"}),
        (true, None) => json!({"ok": false, "error": "user_not_found"}),
        (true, Some(name)) => json!({"ok": true, "user": {"id": user, "real_name": name,
            "profile": {"display_name": name, "real_name": name}}}),
    };
    let query = serde_json::to_vec(&q).unwrap_or_default();
    s.record(USERS_INFO, &headers, &query, 200);
    Json(response).into_response()
}

fn read_messages(
    s: &Shared,
    path: &str,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
    keep: impl Fn(&Value) -> bool,
) -> Response {
    let authorized = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("Bearer xoxb-"));
    let script = s.next_script(path);
    let with_metadata = q.get("include_all_metadata").map(String::as_str) == Some("true");
    let channel = q.get("channel").cloned().unwrap_or_default();
    let response = match script {
        _ if !authorized => json!({"ok": false, "error": "invalid_auth"}),
        Some(sc) if sc.status == 403 => json!({"ok": false, "error": "missing_scope"}),
        _ => {
            let messages: Vec<Value> = s
                .lock()
                .slack_messages
                .iter()
                .filter(|m| m["channel"].as_str() == Some(channel.as_str()) && keep(m))
                .map(|m| {
                    let mut m = m.clone();
                    if !with_metadata {
                        m["metadata"] = Value::Null;
                    }
                    m
                })
                .collect();
            json!({"ok": true, "messages": messages, "has_more": false,
                   "response_metadata": {"next_cursor": ""}})
        }
    };
    // The query, recorded as the call's body.
    let query = serde_json::to_vec(q).unwrap_or_default();
    s.record(path, headers, &query, 200);
    Json(response).into_response()
}

/// A shared file's bytes, for a request with a bot token (Slack answers others with a login
/// page; a 403 here).
async fn file(
    State(s): State<Shared>,
    Path((id, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let path = format!("/files-pri/{id}/{name}");
    let authorized = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("Bearer xoxb-"));
    let found = s.lock().contents.get(&id).cloned();
    let (status, response) = match (authorized, found) {
        (false, _) => (403, StatusCode::FORBIDDEN.into_response()),
        (true, None) => (404, StatusCode::NOT_FOUND.into_response()),
        (true, Some((bytes, ct))) => (200, ([(header::CONTENT_TYPE, ct)], bytes).into_response()),
    };
    s.record(&path, &headers, b"", status);
    response
}
