//! Inbound platform webhooks: `POST /webhooks/line` and `POST /webhooks/slack`.
//!
//! Every request is checked in the same order, and nothing is stored unless all checks pass:
//! size limit (413) → signature over the raw bytes (401) → JSON (400). Then each event that
//! starts a turn is appended with an id derived from the platform's own event identity, so a
//! redelivery (even after a restart) appends nothing, and the answer is 200 before any model
//! work: the router and persona pick the turn up from the bus. Webhooks arriving together
//! share one transaction (group commit, [`ghost_shared::event_log::GroupAppender`]); each
//! is answered only after the transaction holding its events commits.

pub mod line;
pub mod slack;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode};

use crate::error::ApiError;

/// Reads the raw body, refusing more than `limit` bytes with 413 and a body that does not
/// arrive within `gateway.body_read_timeout_secs` with 408.
pub(crate) async fn read_body(
    body: Body,
    limit: usize,
    gateway: &ghost_shared::config::GatewaySettings,
) -> Result<Bytes, ApiError> {
    let timeout = std::time::Duration::from_secs(gateway.body_read_timeout_secs);
    crate::server::read_body_within(body, limit, timeout).await
}

/// A header's value as text.
pub(crate) fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// 401 for a request whose signature does not verify.
pub(crate) fn unauthorized(platform: &str, e: impl std::fmt::Display) -> ApiError {
    tracing::warn!(platform, error = %e, "webhook rejected: bad signature");
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "invalid_signature",
        format!("{platform} signature rejected: {e}"),
    )
}

/// 503 when the platform's secret is not configured.
pub(crate) fn not_configured(platform: &str, var: &str) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "not_configured",
        format!("{platform} webhooks are disabled: {var} is not set"),
    )
}

/// 400 for a body that verified but does not parse.
pub(crate) fn bad_json(platform: &str, e: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(
        "invalid_json",
        format!("{platform} webhook body is not valid JSON for its schema: {e}"),
    )
}

/// Session keys become stream names: keep them to a safe alphabet and length.
pub(crate) fn valid_session_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 200
        // Path steps: `/api/sessions/../messages` names no session.
        && key != "."
        && key != ".."
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:@".contains(c))
}
