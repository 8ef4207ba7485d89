//! The announcement of an image waiting for its download, in platform-neutral terms.
//!
//! A webhook is answered before any download (a platform redelivers a slow answer), so an
//! image turn is stored in two steps: this event first, then, once the bytes are in the
//! media table, the turn's `UserMessageReceived` ([`crate::media`]). LINE and Slack store
//! their own event types for the first step (`LineImageReceived`, `SlackImageReceived`, as
//! before this type existed), mapped to and from this one ([`ImageAnnouncement`]);
//! platforms added since store this one. Only the gateway writes and reads it.

use serde::{Deserialize, Serialize};

use ghost_shared::bus::HandlerError;
use ghost_shared::envelope::{EventMetadata, EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{Channel, ReplyTarget};

/// A platform message came with an image; the gateway downloads it and then appends the
/// turn's `UserMessageReceived`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageReceived {
    /// The conversation.
    pub session_id: String,
    /// The platform.
    pub channel: Channel,
    /// Sender.
    pub speaker: String,
    /// The message's dedup key (the user message's `external_id`).
    pub external_id: String,
    /// The text that came with the image (may be empty).
    pub text: String,
    /// The platform's id of the image.
    pub content_id: String,
    /// Its URL, when the platform named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Its MIME type, when the platform named one (used when the download names none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mimetype: Option<String>,
    /// Where to answer.
    pub reply_to: ReplyTarget,
}

impl EventPayload for ImageReceived {
    const EVENT_TYPE: &'static str = "ImageReceived";
}

/// A platform's own image announcement, written from and read as the neutral one.
pub trait ImageAnnouncement: EventPayload {
    /// The announcement of `image`.
    fn from_neutral(image: ImageReceived) -> Self;
    /// The image it announces.
    fn into_neutral(self) -> ImageReceived;
}

impl ImageAnnouncement for ImageReceived {
    fn from_neutral(image: ImageReceived) -> Self {
        image
    }

    fn into_neutral(self) -> ImageReceived {
        self
    }
}

/// How one platform's image announcements are stored and read back.
#[derive(Debug, Clone, Copy)]
pub struct ImageEvents {
    /// Their event type (the download consumer's).
    pub event_type: &'static str,
    write: fn(uuid::Uuid, ImageReceived, EventMetadata) -> Result<NewEvent, serde_json::Error>,
    read: fn(&RecordedEvent) -> Result<ImageReceived, HandlerError>,
}

impl ImageEvents {
    /// Announcements stored as `T`.
    pub fn of<T: ImageAnnouncement>() -> Self {
        Self {
            event_type: T::EVENT_TYPE,
            write: |id, image, metadata| NewEvent::new(id, &T::from_neutral(image), metadata),
            read: |event| {
                let announcement = event.decode::<T>().map_err(HandlerError::permanent)?;
                Ok(announcement.into_neutral())
            },
        }
    }

    /// The event announcing `image` under `id`.
    pub fn announce(
        &self,
        id: uuid::Uuid,
        image: ImageReceived,
        metadata: EventMetadata,
    ) -> Result<NewEvent, serde_json::Error> {
        (self.write)(id, image, metadata)
    }

    /// The image `event` announces, if it is of this type.
    pub fn read(&self, event: &RecordedEvent) -> Option<Result<ImageReceived, HandlerError>> {
        (event.event_type == self.event_type).then(|| (self.read)(event))
    }
}
