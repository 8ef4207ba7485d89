//! Media: a platform's image (LINE, Slack, Telegram: whatever its
//! [`Platform::image_request`] asks for) is downloaded after the webhook was answered (at most
//! `media.max_image_bytes`, counted while it streams in), stored in the database's media
//! table (so the persona reaches it from any machine), kept for `media.retention_secs`
//! (seed 002: not deleted right after use, so a slow or retried model call still finds it),
//! and removed by a sweeper.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tracing::{info, warn};

use ghost_shared::bus::{run_consumer, EventHandler, HandlerError};
use ghost_shared::envelope::{NewEvent, RecordedEvent};
use ghost_shared::events::{ImageAttachment, UserMessageReceived};
use ghost_shared::media::MediaStore;
use ghost_shared::service::{ServiceContext, ServiceError, ServiceHandle};
use ghost_shared::store::ExpectedVersion;

use crate::channel::{ImageReceived, Platform, Platforms};

/// Text of a user message that is only an image (the model sees the image itself).
pub const IMAGE_TEXT: &str = "[image]";
/// Text when the image could not be fetched: the persona still answers.
pub const IMAGE_FAILED_TEXT: &str = "[image that could not be downloaded]";

/// Downloads platform images into the media store and then appends the turn's
/// `UserMessageReceived`.
pub struct ImageFetcher {
    ctx: ServiceContext,
    http: reqwest::Client,
    media: MediaStore,
    platforms: Platforms,
}

impl ImageFetcher {
    /// The image `event` announces, and the platform it came from.
    fn pending(
        &self,
        event: &RecordedEvent,
    ) -> Result<(&dyn Platform, ImageReceived), HandlerError> {
        for platform in self.platforms.iter() {
            match platform.image_events().read(event).transpose()? {
                Some(image) if image.channel == platform.channel() => return Ok((platform, image)),
                _ => {}
            }
        }
        Err(HandlerError::permanent(format!(
            "{} announces no image of a known platform",
            event.event_type
        )))
    }

    /// Downloads the image into the media store under `media_id`.
    async fn download(
        &self,
        platform: &dyn Platform,
        image: &ImageReceived,
        media_id: uuid::Uuid,
    ) -> Result<ImageAttachment, HandlerError> {
        let r = platform
            .image_request(&self.http, image)
            .await?
            .send()
            .await
            // Without its URL: a platform's URL may hold its token (Telegram's do).
            .map_err(|e| HandlerError::transient(e.without_url()))?;
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
        // What the download says, unless it says nothing useful: then what the platform's
        // event named (Slack's `mimetype`; Telegram serves photos as octet-stream).
        let content_type = r
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or(v).trim().to_owned())
            .filter(|v| v != "application/octet-stream" || image.mimetype.is_none())
            .or_else(|| image.mimetype.clone());
        let bytes = read_capped(r, self.ctx.config.ghost.media.max_image_bytes).await?;
        self.media
            .put(media_id, content_type.as_deref(), &bytes)
            .await
            .map_err(HandlerError::transient)?;
        info!(%media_id, bytes = bytes.len(), "image stored in the media table");
        Ok(ImageAttachment {
            message_id: image.content_id.clone(),
            media_id: Some(media_id),
            content_type,
        })
    }

    async fn append_message(
        &self,
        event: &RecordedEvent,
        image: ImageReceived,
        attachment: Option<ImageAttachment>,
    ) -> Result<(), HandlerError> {
        let placeholder = if attachment.is_some() {
            IMAGE_TEXT
        } else {
            IMAGE_FAILED_TEXT
        };
        let message = UserMessageReceived {
            session_id: image.session_id,
            channel: image.channel,
            speaker: image.speaker,
            text: match (image.text.trim(), &attachment) {
                ("", _) => placeholder.to_owned(),
                (text, Some(_)) => text.to_owned(),
                (text, None) => format!("{text}\n{placeholder}"),
            },
            external_id: Some(image.external_id),
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
            ghost_shared::metrics::turn_started(image.channel.as_str());
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
        // Without its URL: a platform's URL may hold its token (Telegram's file URLs do).
        let chunk = chunk.map_err(|e| HandlerError::transient(e.without_url()))?;
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
        let (platform, image) = self.pending(&event)?;
        if self.ctx.outcome_stored(&event, &[STEP]).await? {
            return Ok(());
        }
        let media_id = ghost_shared::ids::derive_event_id(event.event_id, MEDIA_STEP);
        let attachment = self.download(platform, &image, media_id).await?;
        self.append_message(&event, image, Some(attachment)).await
    }

    async fn on_dead_letter(&self, event: Option<&RecordedEvent>, reason: &str) {
        let Some(event) = event else { return };
        let Ok((_, image)) = self.pending(event) else {
            return;
        };
        warn!(%reason, "image could not be downloaded; answering without it");
        if let Err(e) = self.append_message(event, image, None).await {
            warn!(error = %e, "cannot record the image turn");
        }
    }
}

/// Starts the image fetcher consumers (one per image event type the platforms announce
/// with) and the media sweeper.
pub fn spawn(
    ctx: ServiceContext,
    platforms: Platforms,
    handle: &mut ServiceHandle,
) -> Result<(), ServiceError> {
    let media = MediaStore::new(ctx.store().pool().clone());
    let mut event_types: Vec<&'static str> = Vec::new();
    for platform in platforms.iter() {
        let event_type = platform.image_events().event_type;
        if !event_types.contains(&event_type) {
            event_types.push(event_type);
        }
    }
    let fetcher = Arc::new(ImageFetcher {
        http: reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(std::io::Error::other)?,
        media: media.clone(),
        ctx: ctx.clone(),
        platforms,
    });
    for event_type in event_types {
        handle.spawn(run_consumer(
            ctx.bus().clone(),
            ctx.consumer(event_type)?,
            fetcher.clone(),
        ));
    }
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
