//! `GET /api/recalls/{event_id}`: what a reply recalled (issue 12) — the `RecallPerformed`
//! event of the reply `event_id` (an `AssistantReplied` id), or that event itself by its id;
//! `"recall": null` for a reply with no recall recorded (yet), 404 for any other id.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use ghost_shared::envelope::RecordedEvent;
use ghost_shared::events::{AssistantReplied, RecallPerformed, RECALL_STEP};
use ghost_shared::ids::derive_event_id;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::error::ApiError;
use crate::extract::Path;
use crate::AppState;

async fn get_event(state: &AppState, id: Uuid) -> Result<Option<RecordedEvent>, ApiError> {
    state
        .ctx
        .store()
        .get(id)
        .await
        .map_err(|e| ApiError::store("cannot read the event", &e))
}

fn not_found(id: Uuid) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no_recall",
        format!("no recall recorded for {id} (a reply's event id, or a RecallPerformed id)"),
    )
}

/// `GET /api/recalls/{event_id}`.
pub async fn get(
    State(state): State<AppState>,
    Path(raw): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = Uuid::parse_str(&raw).map_err(|_| {
        ApiError::bad_request(
            "invalid_event_id",
            format!("{raw:?} is not an event id (UUID)"),
        )
    })?;
    let event = get_event(&state, id).await?.ok_or_else(|| not_found(id))?;
    let recall = if event.is::<RecallPerformed>() {
        event
    } else if event.is::<AssistantReplied>() {
        let cause = event.metadata.causation_id.ok_or_else(|| not_found(id))?;
        match get_event(&state, derive_event_id(cause, RECALL_STEP)).await? {
            Some(recall) => recall,
            // The reply is there and its recall is not (yet: it is recorded off the reply's
            // path, or there was none): not an error, so a page asking right after the
            // reply ends gets an answer, not a 404 in its log.
            None => return Ok(Json(json!({ "event_id": null, "recall": null }))),
        }
    } else {
        return Err(not_found(id));
    };
    Ok(Json(json!({
        "event_id": recall.event_id,
        "recorded_at": recall.recorded_at,
        "recall": recall.payload,
    })))
}
