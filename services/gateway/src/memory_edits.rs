//! `POST /api/memory/edits` (issue 35 item 2): a person corrects or forgets one memory.
//!
//! Body: `{"persona"?, "target": {"state": {"state_id"}} | {"preference": {"person",
//! "domain", "subject", "polarity"}}, "edit": {"op": "edit_body", "body_text"} | {"op":
//! "close"} | {"op": "flip_polarity"} | {"op": "forget"}, "reason"?, "request_id"?}`.
//! The edit is checked against the memory now (404 when there is no such memory, 400 when
//! the edit does not apply to it) and recorded as `MemoryEditRequested`; the write-plan
//! service applies it (202: it lands within a projection pass). The same `request_id`
//! records it once.

use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use ghost_shared::envelope::NewEvent;
use ghost_shared::events::persona_stream;
use ghost_shared::ids::external_event_id;
use ghost_shared::memory::edits::{
    refusal, MemoryEdit, MemoryEditRequested, MemoryTarget, Refusal,
};
use ghost_shared::projections::MemoryProjection;
use ghost_shared::store::ExpectedVersion;

use crate::error::ApiError;
use crate::AppState;

/// The request body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EditRequest {
    persona: Option<String>,
    target: MemoryTarget,
    edit: MemoryEdit,
    #[serde(default)]
    reason: String,
    request_id: Option<String>,
}

/// The longest reason kept.
const MAX_REASON_CHARS: usize = 200;

fn parse(body: &[u8]) -> Result<EditRequest, ApiError> {
    let req: EditRequest = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request("invalid_json", format!("not a memory edit: {e}")))?;
    check_reason_and_request_id(&req.reason, req.request_id.as_deref())?;
    Ok(req)
}

/// The checks every memory request's `reason` and `request_id` pass (edits, forgetting a
/// person).
pub(crate) fn check_reason_and_request_id(
    reason: &str,
    request_id: Option<&str>,
) -> Result<(), ApiError> {
    if reason.chars().count() > MAX_REASON_CHARS {
        return Err(ApiError::bad_request(
            "invalid_reason",
            format!("reason is longer than {MAX_REASON_CHARS} characters"),
        ));
    }
    if let Some(r) = request_id {
        if r.is_empty() || r.len() > 128 || r.chars().any(char::is_control) {
            return Err(ApiError::bad_request(
                "invalid_request_id",
                "request_id must be 1-128 characters without control characters",
            ));
        }
    }
    Ok(())
}

/// `POST /api/memory/edits`.
pub async fn post(State(state): State<AppState>, body: Body) -> Result<Response, ApiError> {
    let body = crate::server::read_api_body(&state, body).await?;
    let req = parse(&body)?;
    let persona = crate::memory::character(&state, req.persona)?;
    let memory = MemoryProjection::load(state.ctx.store().pool(), &persona)
        .await
        .map_err(|e| ApiError::store("cannot read the memory", &e))?;
    match refusal(&memory, &req.target, &req.edit) {
        None => {}
        Some(why @ Refusal::NoSuchMemory) => {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "no_such_memory",
                why.to_string(),
            ))
        }
        Some(Refusal::NotApplicable(why)) => {
            return Err(ApiError::bad_request("invalid_edit", why))
        }
    }
    let id = match &req.request_id {
        Some(r) => external_event_id("memory-edit", &format!("{persona}/{r}")),
        None => Uuid::new_v4(),
    };
    let request = MemoryEditRequested {
        persona: persona.clone(),
        target: req.target,
        edit: req.edit,
        reason: req.reason.trim().to_owned(),
    };
    let event = NewEvent::origin(id, &request, state.ctx.service)
        .map_err(|e| ApiError::internal("cannot encode the edit", e))?;
    state
        .ctx
        .log
        .append(&persona_stream(&persona), ExpectedVersion::Any, &[event])
        .await
        .map_err(|e| ApiError::store("cannot store the edit", &e))?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"edit_id": id, "persona": persona})),
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_that_is_not_an_edit_is_refused_with_its_reason() {
        let code = |b: &str| parse(b.as_bytes()).unwrap_err().code;
        assert_eq!(code("{"), "invalid_json");
        assert_eq!(
            code(r#"{"target": {"state": {}}, "edit": {"op": "forget"}}"#),
            "invalid_json"
        );
        assert_eq!(
            code(
                r#"{"target": {"state": {"state_id": "00000000-0000-0000-0000-000000000001"}}, "edit": {"op": "shout"}}"#
            ),
            "invalid_json"
        );
        let long = "x".repeat(201);
        assert_eq!(
            code(&format!(
                r#"{{"target": {{"state": {{"state_id": "00000000-0000-0000-0000-000000000001"}}}}, "edit": {{"op": "close"}}, "reason": "{long}"}}"#
            )),
            "invalid_reason"
        );
        let ok = parse(br#"{"target": {"preference": {"person": "ann", "domain": "food", "subject": "celery", "polarity": "like"}}, "edit": {"op": "flip_polarity"}}"#).unwrap();
        assert_eq!(ok.edit, MemoryEdit::FlipPolarity);
    }
}
