//! The system's clock over HTTP: `GET /api/clock` says what time it is for Ghost (the wall
//! clock plus the simulated offset) and whether it may be moved; `POST /api/clock/advance`
//! (`{"secs": 86400}`) moves it forward for every service at once, when `clock.simulated`
//! is on (an evaluation, such as `ghost-harness converse`): 409 otherwise.

use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use ghost_shared::clock::ClockError;

use crate::error::ApiError;
use crate::AppState;

/// The request body of an advance.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Advance {
    /// Seconds to move forward (more than 0, at most a year).
    secs: f64,
}

fn answer(state: &AppState) -> Json<serde_json::Value> {
    let clock = state.ctx.clock();
    Json(json!({
        "now": clock.now().to_rfc3339(),
        "offset_secs": clock.offset_secs(),
        "simulated": clock.simulated(),
    }))
}

/// `GET /api/clock`.
pub async fn get(State(state): State<AppState>) -> Json<serde_json::Value> {
    answer(&state)
}

/// `POST /api/clock/advance`.
pub async fn advance(State(state): State<AppState>, body: Body) -> Result<Response, ApiError> {
    let body = crate::server::read_api_body(&state, body).await?;
    let step: Advance = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request("invalid_json", format!("not a clock advance: {e}")))?;
    match state.ctx.clock().advance(step.secs).await {
        Ok(_) => Ok((StatusCode::OK, answer(&state)).into_response()),
        Err(e @ ClockError::NotSimulated) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "clock_not_simulated",
            e.to_string(),
        )),
        Err(e @ ClockError::InvalidStep(_)) => {
            Err(ApiError::bad_request("invalid_step", e.to_string()))
        }
        Err(ClockError::Database(e)) => Err(ApiError::store(
            "cannot move the clock",
            &ghost_shared::store::StoreError::from(e),
        )),
    }
}
