//! `POST /api/memory/forget-person` (issue 35 item 2): forget a whole person.
//!
//! Body: `{"person", "reason"?, "request_id"?}`. A person Ghost has no words or memory of
//! is 404 (a mistyped id should not look done), unless the request was recorded before. Otherwise the request is recorded as
//! `PersonForgetRequested` and the write-plan service carries it out (202; what it does:
//! `ghost_shared::memory::forget_person`). The same `request_id` records it once.

use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use ghost_shared::envelope::NewEvent;
use ghost_shared::ids::external_event_id;
use ghost_shared::memory::forget_person::{PersonForgetRequested, FORGET_STREAM};
use ghost_shared::store::ExpectedVersion;

use crate::error::ApiError;
use crate::AppState;

/// The request body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ForgetRequest {
    person: String,
    #[serde(default)]
    reason: String,
    request_id: Option<String>,
}

/// The longest person id taken.
const MAX_PERSON_CHARS: usize = 128;

fn parse(body: &[u8]) -> Result<ForgetRequest, ApiError> {
    let req: ForgetRequest = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(
            "invalid_json",
            format!("not a request to forget a person: {e}"),
        )
    })?;
    let person = req.person.trim();
    if person.is_empty()
        || person.chars().count() > MAX_PERSON_CHARS
        || person.chars().any(char::is_control)
    {
        return Err(ApiError::bad_request(
            "invalid_person",
            format!("person must be 1-{MAX_PERSON_CHARS} characters without control characters"),
        ));
    }
    crate::memory_edits::check_reason_and_request_id(&req.reason, req.request_id.as_deref())?;
    Ok(req)
}

/// Whether Ghost holds anything of `person`: their words or a memory about them.
async fn known(state: &AppState, person: &str) -> Result<bool, ApiError> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM assistant_text WHERE role = 'user' AND speaker = $1) \
             OR EXISTS (SELECT 1 FROM preferences WHERE person = $1) \
             OR EXISTS (SELECT 1 FROM memory_states WHERE person = $1)",
    )
    .bind(person)
    .fetch_one(state.ctx.store().pool())
    .await
    .map_err(|e| ApiError::internal("cannot read what is known of the person", e))
}

/// `POST /api/memory/forget-person`.
pub async fn post(State(state): State<AppState>, body: Body) -> Result<Response, ApiError> {
    let body = crate::server::read_api_body(&state, body).await?;
    let req = parse(&body)?;
    let person = req.person.trim().to_owned();
    let id = match &req.request_id {
        Some(r) => external_event_id("forget-person", &format!("{person}/{r}")),
        None => Uuid::new_v4(),
    };
    let accepted = (
        StatusCode::ACCEPTED,
        Json(json!({"request_id": id, "person": person})),
    );
    // A request sent again (its answer lost) is the one recorded, even once carried out.
    let recorded = state
        .ctx
        .store()
        .get(id)
        .await
        .map_err(|e| ApiError::store("cannot read the requests", &e))?;
    if recorded.is_some() {
        return Ok(accepted.into_response());
    }
    if !known(&state, &person).await? {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "no_such_person",
            format!("nothing is known of {person}"),
        ));
    }
    let request = PersonForgetRequested {
        person: person.clone(),
        reason: req.reason.trim().to_owned(),
    };
    let event = NewEvent::origin(id, &request, state.ctx.service)
        .map_err(|e| ApiError::internal("cannot encode the request", e))?;
    state
        .ctx
        .log
        .append(FORGET_STREAM, ExpectedVersion::Any, &[event])
        .await
        .map_err(|e| ApiError::store("cannot store the request", &e))?;
    Ok(accepted.into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_that_is_not_a_request_is_refused_with_its_reason() {
        let code = |b: &str| parse(b.as_bytes()).unwrap_err().code;
        assert_eq!(code("{"), "invalid_json");
        assert_eq!(code(r#"{"person": "u", "extra": 1}"#), "invalid_json");
        assert_eq!(code(r#"{"person": "  "}"#), "invalid_person");
        assert_eq!(code(r#"{"person": "a\u0000b"}"#), "invalid_person");
        assert_eq!(
            code(&format!(r#"{{"person": "{}"}}"#, "x".repeat(129))),
            "invalid_person"
        );
        assert_eq!(
            code(&format!(
                r#"{{"person": "u", "reason": "{}"}}"#,
                "r".repeat(201)
            )),
            "invalid_reason"
        );
        assert_eq!(
            code(r#"{"person": "u", "request_id": ""}"#),
            "invalid_request_id"
        );
        assert_eq!(parse(br#"{"person": " U1 "}"#).unwrap().person, " U1 ");
    }
}
