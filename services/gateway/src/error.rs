//! HTTP errors: a status, a stable code and a clear message, as JSON.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use ghost_shared::store::Unreachable;
use serde_json::json;

/// Seconds a client is told to wait before trying again while the database is out of reach.
const RETRY_AFTER_SECS: u32 = 1;

/// An error answered to an HTTP client.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Stable machine-readable code.
    pub code: &'static str,
    /// What went wrong, for a person.
    pub message: String,
    /// Seconds to wait before trying again (`Retry-After`), when waiting helps.
    pub retry_after: Option<u32>,
}

impl ApiError {
    /// An error with any status.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 400 with `code`.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 500: something on our side failed (details are logged, not sent).
    pub fn internal(what: &str, e: impl std::fmt::Display) -> Self {
        tracing::error!(error = %e, "{what}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("{what}; try again"),
        )
    }

    /// A store failure: 503 with `Retry-After` when the database was out of reach (nothing
    /// was done; the same request can be sent again), else [`ApiError::internal`].
    pub fn store(what: &str, e: &(impl Unreachable + std::fmt::Display)) -> Self {
        if !e.database_unreachable() {
            return Self::internal(what, e);
        }
        tracing::warn!(error = %e, "{what}: the database is out of reach");
        Self {
            retry_after: Some(RETRY_AFTER_SECS),
            ..Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "store_unavailable",
                format!("{what}: the database is out of reach; try again shortly"),
            )
        }
    }

    /// The body every refusal has: `{"error": {"code", "message"}}`.
    pub fn body(&self) -> serde_json::Value {
        json!({ "error": { "code": self.code, "message": self.message } })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body())).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from(secs));
        }
        response
    }
}
