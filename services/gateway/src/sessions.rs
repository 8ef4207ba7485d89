//! `GET /api/sessions/{id}/messages`: the conversation as projected (re-query after a
//! dropped connection).

use axum::extract::{Path, State};
use axum::Json;
use serde_json::{json, Value};

use ghost_shared::projections::AssistantTextProjection;

use crate::error::ApiError;
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
    let turns = AssistantTextProjection::recent(state.ctx.store().pool(), &session_id, 200)
        .await
        .map_err(|e| ApiError::internal("cannot read the conversation", e))?;
    Ok(Json(json!({ "session_id": session_id, "messages": turns })))
}
