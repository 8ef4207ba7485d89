//! Bearer-token authentication for `/api/*`: `Authorization: Bearer <token>`, or, for a
//! WebSocket upgrade only (browsers cannot set headers on one), `?token=<token>`.

use axum::extract::{Query, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

use crate::error::ApiError;
use crate::AppState;

/// Constant-time equality, so the token cannot be guessed byte by byte from timings.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Rejects requests without `Authorization: Bearer <GHOST_API_TOKEN>`.
pub async fn require_bearer(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let query_token = websocket_query_token(&request);
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .or(query_token.as_deref());
    let Some(presented) = presented else {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing bearer token (Authorization: Bearer <token>; ?token=<token> on a WebSocket)",
        ));
    };
    if !constant_time_eq(presented.as_bytes(), state.api_token.expose().as_bytes()) {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "wrong bearer token",
        ));
    }
    Ok(next.run(request).await)
}

/// The `token` query parameter of a WebSocket upgrade request (never of other requests,
/// so tokens stay out of ordinary URLs).
fn websocket_query_token(request: &Request) -> Option<String> {
    let upgrade = request
        .headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    if !upgrade {
        return None;
    }
    let Query(params) =
        Query::<std::collections::HashMap<String, String>>::try_from_uri(request.uri()).ok()?;
    params.get("token").cloned()
}

#[cfg(test)]
mod tests {
    use super::constant_time_eq;

    #[test]
    fn equal_only_when_identical() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(!constant_time_eq(b"", b"a"));
    }
}
