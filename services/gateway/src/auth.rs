//! Bearer-token authentication for `/api/*`: `Authorization: Bearer <token>`, or, for a
//! WebSocket upgrade only (browsers cannot set headers on one), `?token=<token>` or the
//! subprotocol `ghost.token.<hex>` (the console's way: the token stays out of every URL, so
//! out of the browser's logs; such a socket is answered with the subprotocol `ghost`).

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
    if let Some(token) = protocol_token(request.headers()) {
        return Some(token);
    }
    let Query(params) =
        Query::<std::collections::HashMap<String, String>>::try_from_uri(request.uri()).ok()?;
    params.get("token").cloned()
}

/// The subprotocol a WebSocket that offers its token that way is answered with.
pub const WEBSOCKET_PROTOCOL: &str = "ghost";

/// What a subprotocol carrying the token starts with; the token's bytes follow in hex (a
/// subprotocol is an HTTP token: hex fits whatever the API token holds).
const TOKEN_PROTOCOL_PREFIX: &str = "ghost.token.";

/// The token offered in `Sec-WebSocket-Protocol` as `ghost.token.<hex>`, if any.
pub fn protocol_token(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .find_map(|p| p.trim().strip_prefix(TOKEN_PROTOCOL_PREFIX))
        .and_then(from_hex)
}

fn from_hex(hex: &str) -> Option<String> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::{constant_time_eq, protocol_token};

    #[test]
    fn token_offered_as_a_subprotocol() {
        let mut headers = axum::http::HeaderMap::new();
        assert_eq!(protocol_token(&headers), None);
        let offered = "ghost, ghost.token.612f62".parse().unwrap();
        headers.insert(axum::http::header::SEC_WEBSOCKET_PROTOCOL, offered);
        assert_eq!(protocol_token(&headers).as_deref(), Some("a/b"));
        let odd = "ghost.token.6".parse().unwrap();
        headers.insert(axum::http::header::SEC_WEBSOCKET_PROTOCOL, odd);
        assert_eq!(protocol_token(&headers), None);
    }

    #[test]
    fn equal_only_when_identical() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(!constant_time_eq(b"", b"a"));
    }
}
