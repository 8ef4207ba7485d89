//! Fake Telegram Bot API: `sendMessage`, `getFile`, `getChatMember`, and file downloads under
//! `/file/bot<token>/<file_path>`, each only for the bot token [`FAKE_TELEGRAM_TOKEN`] (the
//! token is part of every URL, as Telegram's is).
//!
//! `sendMessage` sends every time it says ok (it has no idempotency key); a scripted 429
//! answers with `parameters.retry_after`, as Telegram's flood limit does. Files are served
//! as `application/octet-stream`, as Telegram's file host serves photos.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::core::{Delivery, Fake, Scripted, Shared};

/// The bot token the fake accepts.
pub const FAKE_TELEGRAM_TOKEN: &str = "123456789:AAFakeTelegramBotToken_abcdefghijk";

/// Script key of `sendMessage`.
const SEND_MESSAGE: &str = "sendMessage";
/// Script key of `getFile`.
const GET_FILE: &str = "getFile";
/// `getChatMember`: the profile set with [`Fake::set_profile`].
const GET_CHAT_MEMBER: &str = "getChatMember";

/// A fake Telegram Bot API on `127.0.0.1:<port>` (its [`Fake::base_url`] is
/// `telegram.api_base`). A delivery's `to` is the chat id, its `thread_ts` the forum topic;
/// call paths are as called, the token in them.
#[derive(Debug, Clone)]
pub struct FakeTelegram(Fake);

impl std::ops::Deref for FakeTelegram {
    type Target = Fake;
    fn deref(&self) -> &Fake {
        &self.0
    }
}

impl FakeTelegram {
    /// Starts the server.
    pub async fn start() -> std::io::Result<FakeTelegram> {
        let routes = Router::new()
            .route("/{bot}/{method}", post(method))
            .route("/file/{bot}/{*path}", get(file));
        Ok(FakeTelegram(Fake::start(routes).await?))
    }

    /// Serves `bytes` as file `file_id` (through `getFile`, then its download).
    pub fn set_file(&self, file_id: &str, bytes: Vec<u8>) {
        self.shared.lock().contents.insert(
            file_id.to_owned(),
            (bytes, "application/octet-stream".into()),
        );
    }

    /// Scripts the next answer of `sendMessage`.
    pub fn script_send(&self, s: Scripted) {
        self.script(SEND_MESSAGE, s);
    }

    /// Scripts the next answer of `getFile`.
    pub fn script_get_file(&self, s: Scripted) {
        self.script(GET_FILE, s);
    }
}

/// The file path `getFile` names for `file_id`.
fn file_path(file_id: &str) -> String {
    format!("photos/{file_id}.jpg")
}

/// An answer in the Bot API's shape.
fn answer(status: u16, result: Value, description: &str, retry_after: Option<&str>) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = if status == 200 {
        json!({ "ok": true, "result": result })
    } else {
        let mut body = json!({ "ok": false, "error_code": status, "description": description });
        if let Some(secs) = retry_after.and_then(|s| s.parse::<u64>().ok()) {
            body["parameters"] = json!({ "retry_after": secs });
        }
        body
    };
    (code, Json(body)).into_response()
}

/// `POST /bot<token>/<method>`.
async fn method(
    State(s): State<Shared>,
    Path((bot, name)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = format!("/{bot}/{name}");
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (status, result, description, retry_after) = if bot != format!("bot{FAKE_TELEGRAM_TOKEN}") {
        (401, Value::Null, "Unauthorized", None)
    } else {
        match name.as_str() {
            SEND_MESSAGE => send_message(&s, &parsed),
            GET_FILE => get_file(&s, &parsed),
            GET_CHAT_MEMBER => chat_member(&s, &parsed),
            _ => (404, Value::Null, "Not Found", None),
        }
    };
    s.record(&path, &headers, &body, status);
    answer(status, result, description, retry_after.as_deref())
}

type Answer = (u16, Value, &'static str, Option<String>);

fn send_message(s: &Shared, parsed: &Value) -> Answer {
    let script = s.next_script(SEND_MESSAGE);
    if let Some(Scripted {
        status,
        retry_after,
        deliver: false,
    }) = &script
    {
        return (
            *status,
            Value::Null,
            "scripted failure",
            retry_after.clone(),
        );
    }
    let text = parsed.get("text").and_then(Value::as_str).unwrap_or("");
    let chat = parsed.get("chat_id").cloned().unwrap_or(Value::Null);
    if text.is_empty() || chat.is_null() {
        return (400, Value::Null, "Bad Request: message text is empty", None);
    }
    let mut st = s.lock();
    st.next_ts += 1;
    let id = st.next_ts;
    st.deliveries.push(Delivery {
        endpoint: "sendMessage",
        to: chat.to_string(),
        thread_ts: parsed.get("message_thread_id").map(Value::to_string),
        texts: vec![text.to_owned()],
    });
    match script {
        Some(sc) => (
            sc.status,
            Value::Null,
            "scripted failure after sending",
            sc.retry_after,
        ),
        None => (
            200,
            json!({ "message_id": id, "chat": { "id": chat }, "text": text }),
            "",
            None,
        ),
    }
}

fn chat_member(s: &Shared, parsed: &Value) -> Answer {
    let user = parsed
        .get("user_id")
        .and_then(Value::as_i64)
        .unwrap_or_default();
    match s.lock().profiles.get(&user.to_string()) {
        Some(name) => (
            200,
            json!({ "status": "member", "user": { "id": user, "is_bot": false, "first_name": name } }),
            "",
            None,
        ),
        None => (400, Value::Null, "Bad Request: user not found", None),
    }
}

fn get_file(s: &Shared, parsed: &Value) -> Answer {
    if let Some(sc) = s.next_script(GET_FILE) {
        return (sc.status, Value::Null, "scripted failure", sc.retry_after);
    }
    let id = parsed.get("file_id").and_then(Value::as_str).unwrap_or("");
    match s.lock().contents.get(id) {
        Some((bytes, _)) => (
            200,
            json!({ "file_id": id, "file_unique_id": format!("u-{id}"),
                    "file_size": bytes.len(), "file_path": file_path(id) }),
            "",
            None,
        ),
        None => (400, Value::Null, "Bad Request: invalid file_id", None),
    }
}

/// `GET /file/bot<token>/<file_path>`.
async fn file(
    State(s): State<Shared>,
    Path((bot, path)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let found = s
        .lock()
        .contents
        .iter()
        .find(|(id, _)| file_path(id) == path)
        .map(|(_, content)| content.clone());
    let (status, response) = match found {
        _ if bot != format!("bot{FAKE_TELEGRAM_TOKEN}") => {
            (401, StatusCode::UNAUTHORIZED.into_response())
        }
        None => (404, StatusCode::NOT_FOUND.into_response()),
        Some((bytes, ct)) => (200, ([(header::CONTENT_TYPE, ct)], bytes).into_response()),
    };
    s.record(&format!("/file/{bot}/{path}"), &headers, b"", status);
    response
}
