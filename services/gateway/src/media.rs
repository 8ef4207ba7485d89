//! Media: LINE image content is downloaded after the webhook was answered (at most
//! `media.max_image_bytes`, counted while it streams in), stored in the database's media
//! table (so the persona reaches it from any machine), kept for `media.retention_secs`
//! (seed 002: not deleted right after use, so a slow or retried model call still finds it),
//! and removed by a sweeper.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tracing::{info, warn};

use ghost_shared::bus::{run_consumer, ConsumerSpec, EventHandler, HandlerError};
use ghost_shared::envelope::{EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{Channel, ImageAttachment, LineImageReceived, UserMessageReceived};
use ghost_shared::media::MediaStore;
use ghost_shared::service::{ServiceContext, ServiceHandle};
use ghost_shared::store::ExpectedVersion;

/// Text of a user message that is only an image (the model sees the image itself).
pub const IMAGE_TEXT: &str = "[image]";
/// Text when the image could not be fetched: the persona still answers.
pub const IMAGE_FAILED_TEXT: &str = "[image that could not be downloaded]";

/// Downloads LINE images into the media store and then appends the turn's
/// `UserMessageReceived`.
pub struct ImageFetcher {
    ctx: ServiceContext,
    http: reqwest::Client,
    media: MediaStore,
}

impl ImageFetcher {
    /// Downloads the image into the media store under `media_id`.
    async fn download(
        &self,
        image: &LineImageReceived,
        media_id: uuid::Uuid,
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
        let bytes = read_capped(r, self.ctx.config.ghost.media.max_image_bytes).await?;
        self.media
            .put(media_id, content_type.as_deref(), &bytes)
            .await
            .map_err(HandlerError::transient)?;
        info!(%media_id, bytes = bytes.len(), "LINE image stored in the media table");
        Ok(ImageAttachment {
            message_id: image.message_id.clone(),
            media_id: Some(media_id),
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
        let outcome = self
            .ctx
            .log
            .append(&event.stream, ExpectedVersion::Any, &[e])
            .await
            .map_err(HandlerError::transient)?;
        if !outcome.duplicate {
            ghost_shared::metrics::turn_started(Channel::Line.as_str());
        }
        Ok(())
    }
}

/// Step the user message's id derives from.
const STEP: &str = "UserMessageReceived";
/// Step the image's media id derives from (so a redelivery stores it once).
const MEDIA_STEP: &str = "Media";

/// The whole body, refused as soon as it grows past `max` bytes: reading stops there, so an
/// endless or oversized body never sits in memory.
async fn read_capped(response: reqwest::Response, max: u64) -> Result<Vec<u8>, HandlerError> {
    let too_big = || {
        HandlerError::permanent(format!(
            "image is larger than {max} bytes (media.max_image_bytes); download stopped"
        ))
    };
    if response.content_length().is_some_and(|n| n > max) {
        return Err(too_big());
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(HandlerError::transient)?;
        if (body.len() + chunk.len()) as u64 > max {
            return Err(too_big());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[async_trait::async_trait]
impl EventHandler for ImageFetcher {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let image: LineImageReceived = event.decode().map_err(HandlerError::permanent)?;
        if self.ctx.outcome_stored(&event, &[STEP]).await? {
            return Ok(());
        }
        let media_id = ghost_shared::ids::derive_event_id(event.event_id, MEDIA_STEP);
        let attachment = self.download(&image, media_id).await?;
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

/// Starts the image fetcher consumer and the media sweeper.
pub fn spawn(ctx: ServiceContext, handle: &mut ServiceHandle) -> std::io::Result<()> {
    let media = MediaStore::new(ctx.store().pool().clone());
    let fetcher = Arc::new(ImageFetcher {
        http: reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(std::io::Error::other)?,
        media: media.clone(),
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
            match media.sweep(retention).await {
                Ok(0) => {}
                Ok(n) => info!(removed = n, "expired media removed"),
                Err(e) => warn!(error = %e, "media sweep failed"),
            }
        }
        #[allow(unreachable_code)]
        Ok::<(), std::io::Error>(())
    });
    Ok(())
}
