//! `GET /metrics` (Prometheus text, no token: scrapers do not hold the API token, and no
//! metric carries user data) and the webhook outcome counter, judged by each answer's status.

use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use ghost_shared::metrics;

/// `GET /metrics`: this process's metrics.
pub async fn metrics() -> Response {
    (
        [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
        metrics::render(),
    )
        .into_response()
}

/// Counts each `/webhooks/<platform>` answer: 2xx is an acknowledgement, anything else a
/// rejection with the reason its status stands for.
pub async fn count_webhooks(request: Request, next: Next) -> Response {
    let platform = platform_of(request.uri().path());
    let response = next.run(request).await;
    if let Some(platform) = platform {
        let status = response.status();
        if status.is_success() {
            metrics::webhook_acked(platform);
        } else {
            metrics::webhook_rejected(platform, rejection_reason(status));
        }
    }
    response
}

/// The platforms whose webhooks are counted, from their path.
fn platform_of(path: &str) -> Option<&'static str> {
    match path.rsplit('/').next() {
        Some("line") => Some("line"),
        Some("slack") => Some("slack"),
        _ => None,
    }
}

/// The `reason` label of a refused webhook (the handlers' error statuses, see
/// [`crate::webhooks`]).
fn rejection_reason(status: StatusCode) -> &'static str {
    match status {
        StatusCode::UNAUTHORIZED => "signature",
        StatusCode::PAYLOAD_TOO_LARGE => "too_large",
        StatusCode::BAD_REQUEST => "invalid_body",
        StatusCode::SERVICE_UNAVAILABLE => "not_configured",
        _ => "error",
    }
}

/// Registers the webhook series at zero.
pub fn register() {
    metrics::register_turns();
    metrics::register_webhooks("line");
    metrics::register_webhooks("slack");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_follow_the_webhook_statuses() {
        assert_eq!(rejection_reason(StatusCode::UNAUTHORIZED), "signature");
        assert_eq!(rejection_reason(StatusCode::PAYLOAD_TOO_LARGE), "too_large");
        assert_eq!(rejection_reason(StatusCode::BAD_REQUEST), "invalid_body");
        assert_eq!(platform_of("/webhooks/line"), Some("line"));
        assert_eq!(platform_of("/webhooks/other"), None);
    }
}
