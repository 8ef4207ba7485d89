//! Temp media: LINE image content is downloaded after the webhook was answered, kept in
//! `media.dir` for `media.retention_secs` (seed 002: not deleted right after use, so a slow or
//! retried model call still finds it), and removed by a sweeper.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tracing::{info, warn};

use ghost_shared::bus::{run_consumer, ConsumerSpec, EventHandler, HandlerError};
use ghost_shared::envelope::{EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{Channel, ImageAttachment, LineImageReceived, UserMessageReceived};
use ghost_shared::service::{ServiceContext, ServiceHandle};
use ghost_shared::store::ExpectedVersion;

/// Text of a user message that is only an image (the model sees the image itself).
pub const IMAGE_TEXT: &str = "[image]";
/// Text when the image could not be fetched: the persona still answers.
pub const IMAGE_FAILED_TEXT: &str = "[image that could not be downloaded]";

/// The media directory, resolved and created.
pub fn media_dir(ctx: &ServiceContext) -> std::io::Result<PathBuf> {
    let dir = ctx.config.resolve(&ctx.config.ghost.media.dir);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Downloads LINE images and then appends the turn's `UserMessageReceived`.
pub struct ImageFetcher {
    ctx: ServiceContext,
    http: reqwest::Client,
    dir: PathBuf,
}

fn extension(content_type: Option<&str>) -> &'static str {
    match content_type.unwrap_or("") {
        "image/png" => "png",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/jpeg" => "jpg",
        _ => "bin",
    }
}

impl ImageFetcher {
    async fn download(
        &self,
        image: &LineImageReceived,
        stem: &str,
    ) -> Result<ImageAttachment, HandlerError> {
        let s = &self.ctx.config.ghost.line;
        let mut req = match &image.external_url {
            Some(url) => self.http.get(url),
            None => {
                let Some(token) = &self.ctx.config.secrets.line_channel_access_token else {
                    return Err(HandlerError::permanent(
                        "GHOST_LINE_CHANNEL_ACCESS_TOKEN is not set",
                    ));
                };
                self.http
                    .get(format!(
                        "{}/v2/bot/message/{}/content",
                        s.data_api_base.trim_end_matches('/'),
                        image.message_id
                    ))
                    .bearer_auth(token.expose())
            }
        };
        req = req.timeout(Duration::from_secs(s.request_timeout_secs.max(30)));
        let r = req.send().await.map_err(HandlerError::transient)?;
        let status = r.status();
        if status.is_client_error() && status.as_u16() != 429 {
            return Err(HandlerError::permanent(format!(
                "image content answered {status}"
            )));
        }
        if !status.is_success() {
            return Err(HandlerError::transient(format!(
                "image content answered {status}"
            )));
        }
        let content_type = r
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or(v).trim().to_owned());
        let max = self.ctx.config.ghost.media.max_image_bytes;
        if r.content_length().is_some_and(|n| n > max) {
            return Err(HandlerError::permanent(format!(
                "image is larger than {max} bytes"
            )));
        }
        let bytes = r.bytes().await.map_err(HandlerError::transient)?;
        if bytes.len() as u64 > max {
            return Err(HandlerError::permanent(format!(
                "image is larger than {max} bytes"
            )));
        }
        let path = self
            .dir
            .join(format!("{stem}.{}", extension(content_type.as_deref())));
        let tmp = path.with_extension("part");
        tokio::fs::write(&tmp, &bytes)
            .await
            .map_err(HandlerError::transient)?;
        tokio::fs::rename(&tmp, &path)
            .await
            .map_err(HandlerError::transient)?;
        info!(path = %path.display(), bytes = bytes.len(), "LINE image stored in temp media");
        Ok(ImageAttachment {
            message_id: image.message_id.clone(),
            local_path: path.display().to_string(),
            content_type,
        })
    }

    async fn append_message(
        &self,
        event: &RecordedEvent,
        image: LineImageReceived,
        attachment: Option<ImageAttachment>,
    ) -> Result<(), HandlerError> {
        let text = if attachment.is_some() {
            IMAGE_TEXT
        } else {
            IMAGE_FAILED_TEXT
        };
        let message = UserMessageReceived {
            session_id: image.session_id.clone(),
            channel: Channel::Line,
            speaker: image.speaker,
            text: text.into(),
            external_id: Some(image.webhook_event_id),
            reply_to: Some(image.reply_to),
            image: attachment,
        };
        let e = NewEvent::caused_by(event, STEP, &message, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        self.ctx
            .log
            .append(&event.stream, ExpectedVersion::Any, &[e])
            .await
            .map_err(HandlerError::transient)?;
        Ok(())
    }
}

/// Step the user message's id derives from.
const STEP: &str = "UserMessageReceived";

#[async_trait::async_trait]
impl EventHandler for ImageFetcher {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let image: LineImageReceived = event.decode().map_err(HandlerError::permanent)?;
        if self.ctx.outcome_stored(&event, &[STEP]).await? {
            return Ok(());
        }
        let id = ghost_shared::ids::derive_event_id(event.event_id, STEP);
        let attachment = self.download(&image, &id.to_string()).await?;
        self.append_message(&event, image, Some(attachment)).await
    }

    async fn on_dead_letter(&self, event: Option<&RecordedEvent>, reason: &str) {
        let Some(event) = event else { return };
        let Ok(image) = event.decode::<LineImageReceived>() else {
            return;
        };
        warn!(%reason, "LINE image could not be downloaded; answering without it");
        if let Err(e) = self.append_message(event, image, None).await {
            warn!(error = %e, "cannot record the image turn");
        }
    }
}

/// Removes files in `dir` last modified more than `retention` ago; returns how many.
pub async fn sweep(dir: &Path, retention: Duration) -> std::io::Result<usize> {
    let mut removed = 0;
    let mut entries = tokio::fs::read_dir(dir).await?;
    let now = SystemTime::now();
    while let Some(entry) = entries.next_entry().await? {
        let Ok(meta) = entry.metadata().await else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let age = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .unwrap_or_default();
        if age > retention && tokio::fs::remove_file(entry.path()).await.is_ok() {
            info!(path = %entry.path().display(), "expired temp media removed");
            removed += 1;
        }
    }
    Ok(removed)
}

/// Starts the image fetcher consumer and the sweeper.
pub fn spawn(ctx: ServiceContext, handle: &mut ServiceHandle) -> std::io::Result<()> {
    let dir = media_dir(&ctx)?;
    let fetcher = Arc::new(ImageFetcher {
        http: reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(std::io::Error::other)?,
        dir: dir.clone(),
        ctx: ctx.clone(),
    });
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ConsumerSpec::new(ctx.service, LineImageReceived::EVENT_TYPE),
        fetcher,
    ));
    let m = &ctx.config.ghost.media;
    let retention = Duration::from_secs(m.retention_secs);
    let every = Duration::from_secs(m.sweep_interval_secs);
    handle.spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            if let Err(e) = sweep(&dir, retention).await {
                warn!(error = %e, dir = %dir.display(), "temp media sweep failed");
            }
        }
        #[allow(unreachable_code)]
        Ok::<(), std::io::Error>(())
    });
    Ok(())
}
