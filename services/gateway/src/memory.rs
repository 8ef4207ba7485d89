//! `GET /api/memory?persona=ID[&person=P]`: what a persona remembers (issue 12) — its
//! current states (each naming whom it is about, `null` for no one), each person's
//! preferences as it holds them and its interest state, read from the `memory` projection.
//! With `person`, only what a turn with that person reads: their states and preferences and
//! the states about no one (issue 35).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use ghost_shared::memory::Memory;
use ghost_shared::projections::MemoryProjection;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::extract::Query;
use crate::AppState;

/// `?persona=<id>`; the chat persona when absent. `&person=<id>`: one person's view.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryParams {
    persona: Option<String>,
    person: Option<String>,
}

/// The answer.
#[derive(Debug, Serialize)]
pub struct MemoryAnswer {
    /// The persona asked about.
    pub persona: String,
    /// Its memory.
    #[serde(flatten)]
    pub memory: Memory,
}

/// The persona `asked` for (the chat persona when absent), refused when it is no character.
pub(crate) fn character(state: &AppState, asked: Option<String>) -> Result<String, ApiError> {
    let persona = crate::partner_mood::persona(state, asked)?;
    if state.ctx.config.characters.get(&persona).is_none() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_persona",
            format!("no character {persona} in characters.yaml"),
        ));
    }
    Ok(persona)
}

/// `GET /api/memory`.
pub async fn get(
    State(state): State<AppState>,
    Query(params): Query<MemoryParams>,
) -> Result<Json<MemoryAnswer>, ApiError> {
    let persona = character(&state, params.persona)?;
    let pool = state.ctx.store().pool();
    let memory = match &params.person {
        Some(person) if person.is_empty() || person.len() > 256 => {
            return Err(ApiError::bad_request(
                "invalid_person",
                "person must be 1-256 characters",
            ))
        }
        Some(person) => MemoryProjection::load_for(pool, &persona, person).await,
        None => MemoryProjection::load(pool, &persona).await,
    }
    .map_err(|e| ApiError::store("cannot read the memory", &e))?;
    Ok(Json(MemoryAnswer { persona, memory }))
}
