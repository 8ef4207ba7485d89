//! `GET /api/sessions/{id}/messages`: the conversation as projected (re-query after a
//! dropped connection).

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use ghost_shared::autonomy::events::AutonomyMessageRendered;
use ghost_shared::envelope::EventPayload;
use ghost_shared::projections::{AssistantTextProjection, ConversationTurn, AUTONOMY_SOURCE};

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
    let messages = as_listed(pool, turns).await?;
    Ok(Json(
        json!({ "session_id": session_id, "messages": messages }),
    ))
}

/// Turns as this endpoint lists them: autonomous messages with their `display` (also the
/// console's live socket's, [`crate::conversations`]).
pub(crate) async fn as_listed(
    pool: &sqlx::PgPool,
    turns: Vec<ConversationTurn>,
) -> Result<Vec<Value>, ApiError> {
    let autonomous: Vec<uuid::Uuid> = turns
        .iter()
        .filter(|t| t.source == AUTONOMY_SOURCE)
        .map(|t| t.event_id)
        .collect();
    // Autonomous messages carry their display style (`chat`, `notify`), as on /api/events,
    // and the action result they report (`result_event_id`).
    let about: std::collections::HashMap<uuid::Uuid, (Option<String>, Option<String>)> =
        if autonomous.is_empty() {
            Default::default()
        } else {
            sqlx::query_as::<_, (uuid::Uuid, Option<String>, Option<String>)>(
                "SELECT event_id, payload->'delivery'->>'mode', payload->>'result_event_id' \
                 FROM events WHERE event_id = ANY($1) AND event_type = $2",
            )
            .bind(&autonomous)
            .bind(AutonomyMessageRendered::EVENT_TYPE)
            .fetch_all(pool)
            .await
            .map_err(|e| ApiError::store("cannot read the conversation", &e))?
            .into_iter()
            .map(|(id, display, result)| (id, (display, result)))
            .collect()
        };
    let messages: Vec<Value> = turns
        .into_iter()
        .map(|t| {
            let (display, result) = about.get(&t.event_id).cloned().unwrap_or_default();
            let mut v = json!(t);
            if let Some(o) = v.as_object_mut() {
                if let Some(display) = display {
                    o.insert("display".into(), Value::String(display));
                }
                if let Some(result) = result {
                    o.insert("result_event_id".into(), Value::String(result));
                }
            }
            v
        })
        .collect();
    Ok(messages)
}
