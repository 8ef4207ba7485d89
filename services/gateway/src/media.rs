//! Media: LINE and Slack image content is downloaded after the webhook was answered (at most
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
use ghost_shared::events::{
    Channel, ImageAttachment, LineImageReceived, SlackImageReceived, UserMessageReceived,
};
use ghost_shared::media::MediaStore;
use ghost_shared::service::{ServiceContext, ServiceHandle};
use ghost_shared::store::ExpectedVersion;

/// Text of a user message that is only an image (the model sees the image itself).
pub const IMAGE_TEXT: &str = "[image]";
/// Text when the image could not be fetched: the persona still answers.
pub const IMAGE_FAILED_TEXT: &str = "[image that could not be downloaded]";

/// Downloads LINE and Slack images into the media store and then appends the turn's
/// `UserMessageReceived`.
pub struct ImageFetcher {
    ctx: ServiceContext,
    http: reqwest::Client,
    media: MediaStore,
}

/// An image announced by a platform, waiting for its download.
enum Incoming {
    Line(LineImageReceived),
    Slack(SlackImageReceived),
}

impl Incoming {
    fn of(event: &RecordedEvent) -> Result<Self, HandlerError> {
        if event.is::<SlackImageReceived>() {
            return event
                .decode()
                .map(Incoming::Slack)
                .map_err(HandlerError::permanent);
        }
        event
            .decode()
            .map(Incoming::Line)
            .map_err(HandlerError::permanent)
    }

    /// The platform's id of the image (LINE message id, Slack file id).
    fn content_id(&self) -> &str {
        match self {
            Incoming::Line(i) => &i.message_id,
            Incoming::Slack(i) => &i.file_id,
        }
    }
}

impl ImageFetcher {
    /// The download request of an image, with its platform's credentials.
    fn request(&self, image: &Incoming) -> Result<reqwest::RequestBuilder, HandlerError> {
        let secrets = &self.ctx.config.secrets;
        match image {
            Incoming::Line(image) => {
                let s = &self.ctx.config.ghost.line;
                let req = match &image.external_url {
                    Some(url) => self.http.get(url),
                    None => {
                        let Some(token) = &secrets.line_channel_access_token else {
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
                Ok(req.timeout(Duration::from_secs(s.request_timeout_secs.max(30))))
            }
            Incoming::Slack(image) => {
                let s = &self.ctx.config.ghost.slack;
                // The bot token goes only to Slack's file host, whatever a body claims.
                if !image.url.starts_with(&s.files_base) {
                    return Err(HandlerError::permanent(format!(
                        "file URL is outside slack.files_base ({}); not fetched",
                        s.files_base
                    )));
                }
                let Some(token) = &secrets.slack_bot_token else {
                    return Err(HandlerError::permanent("GHOST_SLACK_BOT_TOKEN is not set"));
                };
                Ok(self
                    .http
                    .get(&image.url)
                    .bearer_auth(token.expose())
                    .timeout(Duration::from_secs(s.request_timeout_secs.max(30))))
            }
        }
    }

    /// Downloads the image into the media store under `media_id`.
    async fn download(
        &self,
        image: &Incoming,
        media_id: uuid::Uuid,
    ) -> Result<ImageAttachment, HandlerError> {
        let r = self
            .request(image)?
            .send()
            .await
            .map_err(HandlerError::transient)?;
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
            .map(|v| v.split(';').next().unwrap_or(v).trim().to_owned())
            .or_else(|| match image {
                Incoming::Slack(i) => Some(i.mimetype.clone()),
                Incoming::Line(_) => None,
            });
        let bytes = read_capped(r, self.ctx.config.ghost.media.max_image_bytes).await?;
        self.media
            .put(media_id, content_type.as_deref(), &bytes)
            .await
            .map_err(HandlerError::transient)?;
        info!(%media_id, bytes = bytes.len(), "image stored in the media table");
        Ok(ImageAttachment {
            message_id: image.content_id().to_owned(),
            media_id: Some(media_id),
            content_type,
        })
    }

    async fn append_message(
        &self,
        event: &RecordedEvent,
        image: Incoming,
        attachment: Option<ImageAttachment>,
    ) -> Result<(), HandlerError> {
        let placeholder = if attachment.is_some() {
            IMAGE_TEXT
        } else {
            IMAGE_FAILED_TEXT
        };
        let message = match image {
            Incoming::Line(image) => UserMessageReceived {
                session_id: image.session_id,
                channel: Channel::Line,
                speaker: image.speaker,
                text: placeholder.into(),
                external_id: Some(image.webhook_event_id),
                reply_to: Some(image.reply_to),
                image: attachment,
            },
            Incoming::Slack(image) => UserMessageReceived {
                session_id: image.session_id,
                channel: Channel::Slack,
                speaker: image.speaker,
                text: match (image.text.trim(), &attachment) {
                    ("", _) => placeholder.to_owned(),
                    (text, Some(_)) => text.to_owned(),
                    (text, None) => format!("{text}\n{placeholder}"),
                },
                external_id: Some(image.external_id),
                reply_to: Some(image.reply_to),
                image: attachment,
            },
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
        let image = Incoming::of(&event)?;
        if self.ctx.outcome_stored(&event, &[STEP]).await? {
            return Ok(());
        }
        let media_id = ghost_shared::ids::derive_event_id(event.event_id, MEDIA_STEP);
        let attachment = self.download(&image, media_id).await?;
        self.append_message(&event, image, Some(attachment)).await
    }

    async fn on_dead_letter(&self, event: Option<&RecordedEvent>, reason: &str) {
        let Some(event) = event else { return };
        let Ok(image) = Incoming::of(event) else {
            return;
        };
        warn!(%reason, "image could not be downloaded; answering without it");
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
    for event_type in [
        LineImageReceived::EVENT_TYPE,
        SlackImageReceived::EVENT_TYPE,
    ] {
        handle.spawn(run_consumer(
            ctx.bus().clone(),
            ConsumerSpec::new(ctx.service, event_type),
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
