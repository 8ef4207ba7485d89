//! The gateway's extractors: axum's `Query`, `Path` and `WebSocketUpgrade`, read the same way
//! but refused as [`ApiError`]s (`invalid_query`, `invalid_path`, `websocket_required`), so a
//! client never gets axum's plain-text rejections. A query whose names or values are not UTF-8
//! once percent-decoded is refused too: axum would read `%FF` as U+FFFD, making two different
//! ids one.

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// The query string as `T`, or `400 invalid_query`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Query<T>(pub T);

impl<T, S> FromRequestParts<S> for Query<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let raw = parts.uri.query().unwrap_or_default();
        if std::str::from_utf8(&percent_decode(raw)).is_err() {
            return Err(ApiError::bad_request(
                "invalid_query",
                "the query string is not UTF-8 once percent-decoded",
            ));
        }
        axum::extract::Query::try_from_uri(&parts.uri)
            .map(|axum::extract::Query(value)| Self(value))
            .map_err(query_refusal)
    }
}

fn query_refusal(rejection: QueryRejection) -> ApiError {
    // The deserializer's own words name the parameter (unknown, repeated, wrong type).
    let detail = std::error::Error::source(&rejection)
        .map(ToString::to_string)
        .unwrap_or_else(|| rejection.body_text());
    ApiError::new(
        rejection.status(),
        "invalid_query",
        format!("the query string cannot be read: {detail}"),
    )
}

/// The path parameters as `T`, or `400 invalid_path` (a segment that is not UTF-8 once
/// percent-decoded, or does not parse as `T`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Path<T>(pub T);

impl<T, S> FromRequestParts<S> for Path<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(value)| Self(value))
            .map_err(path_refusal)
    }
}

fn path_refusal(rejection: PathRejection) -> ApiError {
    let status = rejection.status();
    // 500s are routes declared wrongly (a handler asking for parameters its path lacks).
    if status.is_server_error() {
        return ApiError::internal("path parameters", rejection.body_text());
    }
    let detail = match &rejection {
        PathRejection::FailedToDeserializePathParams(e) => e.kind().to_string(),
        other => other.body_text(),
    };
    ApiError::new(
        status,
        "invalid_path",
        format!("the path cannot be read: {detail}"),
    )
}

/// A WebSocket upgrade, or `websocket_required`: 400 for a request that is not an upgrade,
/// 426 when the connection cannot be upgraded.
pub struct WebSocketUpgrade(pub axum::extract::ws::WebSocketUpgrade);

impl<S> FromRequestParts<S> for WebSocketUpgrade
where
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::ws::WebSocketUpgrade::from_request_parts(parts, state)
            .await
            .map(Self)
            .map_err(upgrade_refusal)
    }
}

fn upgrade_refusal(rejection: WebSocketUpgradeRejection) -> ApiError {
    let status = match rejection {
        // A HEAD reaches a GET route's handler: it is no more an upgrade than a plain GET
        // (axum's 405 for it would come without `Allow`).
        WebSocketUpgradeRejection::MethodNotGet(_)
        | WebSocketUpgradeRejection::MethodNotConnect(_) => StatusCode::BAD_REQUEST,
        ref other => other.status(),
    };
    ApiError::new(
        status,
        "websocket_required",
        format!(
            "this route is a WebSocket: {}",
            rejection.body_text().to_lowercase()
        ),
    )
}

/// `raw` with its `%XX` escapes decoded (any other byte as is, like the reader axum uses).
fn percent_decode(raw: &str) -> Vec<u8> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        // Two hex digits each (not `u8::from_str_radix`, which takes a sign: `%+1`).
        let digit = |at: usize| bytes.get(at).and_then(|&b| char::from(b).to_digit(16));
        let escaped = match (bytes[i], digit(i + 1), digit(i + 2)) {
            (b'%', Some(high), Some(low)) => Some((high * 16 + low) as u8),
            _ => None,
        };
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::percent_decode;

    #[test]
    fn escapes_decode_and_broken_ones_stay() {
        assert_eq!(percent_decode("a%20b"), b"a b");
        assert_eq!(percent_decode("%FF"), [0xFF]);
        assert_eq!(percent_decode("%e3%81%82"), "あ".as_bytes());
        assert_eq!(percent_decode("%G1%2"), b"%G1%2");
        assert_eq!(percent_decode("%+1"), b"%+1");
        assert!(std::str::from_utf8(&percent_decode("persona=a%C3")).is_err());
        assert!(std::str::from_utf8(&percent_decode("persona=%C3%A9&x=%25FF")).is_ok());
    }
}
