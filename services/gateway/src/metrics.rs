//! `GET /metrics` (Prometheus text, no token: scrapers do not hold the API token, and no
//! metric carries user data) and the webhook outcome counter, judged by each answer's status.

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use ghost_shared::metrics;

use crate::channel::Platforms;
use crate::AppState;

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
pub async fn count_webhooks(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let names = state.platforms.iter().map(|p| p.channel().as_str());
    let platform = platform_of(request.uri().path(), names);
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

/// The platform (one of `names`) whose webhook `path` is.
fn platform_of(path: &str, names: impl IntoIterator<Item = &'static str>) -> Option<&'static str> {
    let last = path.rsplit('/').next()?;
    names.into_iter().find(|name| *name == last)
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

/// Registers the webhook series of each platform at zero.
pub fn register(platforms: &Platforms) {
    metrics::register_turns();
    for platform in platforms.iter() {
        metrics::register_webhooks(platform.channel().as_str());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_follow_the_webhook_statuses() {
        assert_eq!(rejection_reason(StatusCode::UNAUTHORIZED), "signature");
        assert_eq!(rejection_reason(StatusCode::PAYLOAD_TOO_LARGE), "too_large");
        assert_eq!(rejection_reason(StatusCode::BAD_REQUEST), "invalid_body");
        let names = ["line", "slack", "telegram"];
        assert_eq!(platform_of("/webhooks/line", names), Some("line"));
        assert_eq!(platform_of("/webhooks/telegram", names), Some("telegram"));
        assert_eq!(platform_of("/webhooks/other", names), None);
    }
}
