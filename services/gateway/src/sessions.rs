//! `GET /api/sessions/{id}/messages`: the conversation as projected (re-query after a
//! dropped connection).

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use ghost_shared::projections::{AssistantTextProjection, AUTONOMY_SOURCE};

use crate::error::ApiError;
use crate::extract::Path;
use crate::AppState;

/// The session's last 200 turns, oldest first.
pub async fn messages(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    // Only ids a session can have (chat, LINE and Slack keys); a NUL or other odd
    // character is a clear 400, never a database error.
    if !crate::webhooks::valid_session_key(&session_id) {
        return Err(ApiError::bad_request(
            "invalid_session_id",
            "session id must be 1-200 characters of A-Z a-z 0-9 - _ . : @",
        ));
    }
    let pool = state.ctx.store().pool();
    let turns = AssistantTextProjection::recent(pool, &session_id, 200)
        .await
        .map_err(|e| ApiError::store("cannot read the conversation", &e))?;
    let autonomous: Vec<uuid::Uuid> = turns
        .iter()
        .filter(|t| t.source == AUTONOMY_SOURCE)
        .map(|t| t.event_id)
        .collect();
    let displays = if autonomous.is_empty() {
        Default::default()
    } else {
        AssistantTextProjection::autonomy_displays(pool, &autonomous)
            .await
            .map_err(|e| ApiError::store("cannot read the conversation", &e))?
    };
    // Autonomous messages carry their display style (`chat`, `notify`), as on /api/events.
    let messages: Vec<Value> = turns
        .into_iter()
        .map(|t| {
            let display = displays.get(&t.event_id).cloned();
            let mut v = json!(t);
            if let (Some(display), Some(o)) = (display, v.as_object_mut()) {
                o.insert("display".into(), Value::String(display));
            }
            v
        })
        .collect();
    Ok(Json(
        json!({ "session_id": session_id, "messages": messages }),
    ))
}
