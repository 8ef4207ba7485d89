//! `/api/partner_mood`: the debug API of the persona's mood (seed 004).
//!
//! `GET` returns the value used for the last reply (or the default) — never a fresh
//! computation; `PUT` replaces it entirely with a validated override, held in the mood
//! service's memory only (lost on restart; at most `mood.max_overrides` personas at once,
//! one more is `409 too_many_overrides`); `DELETE` returns to the computed value. A persona
//! that is no character of `characters.yaml` is `404 unknown_persona` for all three: nothing
//! is shown of it, nothing saved for it.

use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use ghost_shared::affect::MoodState;
use ghost_shared::mood_api::{self, MoodAnswer, MoodApiError, MoodDebugRequest, Refusal};
use serde::Deserialize;

use crate::error::ApiError;
use crate::extract::Query;
use crate::AppState;

/// `?persona=<id>`; the chat persona when absent.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonaParam {
    persona: Option<String>,
}

const TIMEOUT: Duration = Duration::from_secs(2);

async fn ask(state: &AppState, request: MoodDebugRequest) -> Result<Json<MoodAnswer>, ApiError> {
    match mood_api::request(state.ctx.bus(), mood_api::DEBUG_SUBJECT, &request, TIMEOUT).await {
        Ok(answer) => Ok(Json(answer)),
        Err(MoodApiError::Refused { code, message }) => {
            let status = match code {
                Refusal::TooManyOverrides => StatusCode::CONFLICT,
                Refusal::InvalidPersona | Refusal::InvalidMood => StatusCode::BAD_REQUEST,
            };
            Err(ApiError::new(status, code.as_str(), message))
        }
        Err(e @ (MoodApiError::Timeout(_) | MoodApiError::Request(_))) => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "mood_unavailable",
            format!("the mood service is not answering: {e}"),
        )),
        Err(e) => Err(ApiError::internal("mood service error", e)),
    }
}

/// The persona asked about (the chat persona when absent), checked before it reaches the
/// mood service or the store.
pub(crate) fn persona(state: &AppState, asked: Option<String>) -> Result<String, ApiError> {
    let persona = asked.unwrap_or_else(|| state.ctx.config.ghost.persona.character.clone());
    let refuse = |why: String| ApiError::bad_request(Refusal::InvalidPersona.as_str(), why);
    mood_api::check_persona_id(&persona).map_err(refuse)?;
    // Path steps, never an id, though the mood service's check lets them through.
    if persona == "." || persona == ".." {
        return Err(refuse(format!("persona must not be {persona:?}")));
    }
    Ok(persona)
}

/// `GET /api/partner_mood`.
pub async fn get(
    State(state): State<AppState>,
    Query(p): Query<PersonaParam>,
) -> Result<Json<MoodAnswer>, ApiError> {
    let persona = crate::memory::character(&state, p.persona)?;
    ask(&state, MoodDebugRequest::Get { persona }).await
}

/// `PUT /api/partner_mood`: the whole state, `{"label", "intensity", "components", "response_policy"}`.
pub async fn put(
    State(state): State<AppState>,
    Query(p): Query<PersonaParam>,
    body: Body,
) -> Result<Json<MoodAnswer>, ApiError> {
    let g = &state.ctx.config.ghost.gateway;
    let timeout = std::time::Duration::from_secs(g.body_read_timeout_secs);
    let body = crate::server::read_body_within(body, g.max_body_bytes, timeout).await?;
    let mood: MoodState = serde_json::from_slice(&body).map_err(|e| {
        ApiError::bad_request(
            "invalid_mood",
            format!("body must be a whole mood state {{label, intensity, components, response_policy}}: {e}"),
        )
    })?;
    mood.validate()
        .map_err(|e| ApiError::bad_request("invalid_mood", e.to_string()))?;
    let persona = crate::memory::character(&state, p.persona)?;
    ask(
        &state,
        MoodDebugRequest::Put {
            persona,
            state: mood,
        },
    )
    .await
}

/// `DELETE /api/partner_mood`.
pub async fn delete(
    State(state): State<AppState>,
    Query(p): Query<PersonaParam>,
) -> Result<Json<MoodAnswer>, ApiError> {
    let persona = crate::memory::character(&state, p.persona)?;
    ask(&state, MoodDebugRequest::Delete { persona }).await
}
