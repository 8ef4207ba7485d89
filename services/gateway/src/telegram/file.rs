//! A photo's bytes: `getFile` names the file's path, then the file is downloaded from
//! `<api_base>/file/bot<token>/<file_path>` (Telegram keeps that link for at least an hour,
//! and a redelivered download asks `getFile` again).
//!
//! Both URLs hold the bot token, so a failure is described by its status and Telegram's
//! description only, and a transport error loses its URL before it is kept anywhere.

use std::time::Duration;

use serde_json::json;

use ghost_shared::bus::HandlerError;
use ghost_shared::config::{Secret, TelegramSettings};

use super::wire::{ApiAnswer, FileInfo};

/// Path of the method under `<api_base>/bot<token>/`.
pub const GET_FILE_METHOD: &str = "getFile";

/// The download of file `file_id` (once `getFile` named its path), refusing one Telegram
/// says is over `max_bytes`.
pub(super) async fn download(
    s: &TelegramSettings,
    token: Option<&Secret>,
    http: &reqwest::Client,
    file_id: &str,
    max_bytes: u64,
) -> Result<reqwest::RequestBuilder, HandlerError> {
    let Some(token) = token else {
        return Err(HandlerError::permanent(
            "GHOST_TELEGRAM_BOT_TOKEN is not set",
        ));
    };
    let base = s.api_base.trim_end_matches('/');
    let timeout = Duration::from_secs(s.request_timeout_secs.max(30));
    let answer = http
        .post(format!("{base}/bot{}/{GET_FILE_METHOD}", token.expose()))
        .timeout(timeout)
        .json(&json!({ "file_id": file_id }))
        .send()
        .await
        .map_err(|e| HandlerError::transient(e.without_url()))?;
    let status = answer.status();
    let info: Option<ApiAnswer<FileInfo>> = answer.json().await.ok();
    let description = info.as_ref().and_then(|a| a.description.clone());
    let described = || {
        format!(
            "getFile answered {status} {}",
            description.as_deref().unwrap_or_default()
        )
    };
    if status.is_client_error() && status.as_u16() != 429 {
        return Err(HandlerError::permanent(described().trim_end().to_owned()));
    }
    let Some(file) = info
        .filter(|a| status.is_success() && a.ok)
        .and_then(|a| a.result)
    else {
        return Err(HandlerError::transient(described().trim_end().to_owned()));
    };
    if let Some(size) = file.file_size.filter(|n| *n > max_bytes) {
        return Err(HandlerError::permanent(format!(
            "image is larger than {max_bytes} bytes (media.max_image_bytes): Telegram says {size}; not downloaded"
        )));
    }
    let path = file
        .file_path
        .filter(|p| !p.is_empty() && !p.starts_with('/') && !p.split('/').any(|s| s == ".."))
        .ok_or_else(|| HandlerError::permanent("getFile named no usable file_path"))?;
    let url = format!("{base}/file/bot{}/{path}", token.expose());
    Ok(http.get(url).timeout(timeout))
}
