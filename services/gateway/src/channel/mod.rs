//! A messaging platform is one module: it implements [`Platform`], and the gateway's webhook
//! handler, reply delivery, autonomy pushes and image downloads do the rest the same way for
//! every platform.
//!
//! - this file: the [`Platform`] trait, what it is called ([`About`]) and what crosses it
//!   inbound ([`Inbound`], [`Turn`], [`ImageRef`], [`InboundError`]);
//! - [`outbound`]: what a platform is given to send with ([`Outbound`]: the reply event, its
//!   conversation, the store for the attempt marker) and how a send ended
//!   ([`DeliveryOutcome`]);
//! - [`image`]: the platform-neutral announcement of an image waiting for its download
//!   ([`ImageReceived`]), and how a platform's own announcement type maps to it
//!   ([`ImageEvents`]);
//! - [`registry`]: every platform in one list ([`Platforms`]), the one place a new platform
//!   is added.
//!
//! What each side keeps: the platform knows its wire (signatures, JSON, sessions, limits,
//! retry rules, where its files live); the gateway knows Ghost (the order of the checks,
//! event ids from the platform's dedup keys, group commit, exactly-once outcomes, the order
//! of replies in a conversation, the media table).

pub mod image;
pub mod outbound;
pub mod registry;

use axum::http::HeaderMap;

use ghost_shared::bus::HandlerError;
use ghost_shared::config::{PushBinding, Secret, Secrets};
use ghost_shared::events::{Channel, ReplyTarget};

pub use image::{ImageAnnouncement, ImageEvents, ImageReceived};
pub use outbound::{DeliveryOutcome, Outbound};
pub use registry::Platforms;

/// A webhook request, as the gateway read it (the body within `gateway.max_body_bytes`).
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// Its headers.
    pub headers: &'a HeaderMap,
    /// Its raw body: signatures are over these bytes, so nothing is parsed before them.
    pub body: &'a [u8],
}

impl Request<'_> {
    /// A header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// What one verified request asks of the gateway.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inbound {
    /// The turns it starts, in the platform's order (a conversation's order is this order).
    pub turns: Vec<Turn>,
    /// A body to answer with instead of an empty 200 (Slack's `url_verification`).
    pub answer: Option<serde_json::Value>,
}

impl Inbound {
    /// These turns, answered with an empty 200.
    pub fn turns(turns: Vec<Turn>) -> Self {
        Self {
            turns,
            answer: None,
        }
    }
}

/// One user message that starts a turn, in platform-neutral terms.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The platform's identity of the message, the same on every redelivery of it: the
    /// stored event's id derives from it, so a redelivery appends nothing.
    pub dedup_key: String,
    /// The conversation (`line:user:U…`, `slack:D…`, `telegram:user:…`): a stream name.
    pub session_id: String,
    /// Who said it (the platform's user id).
    pub speaker: String,
    /// What they said (may be empty when an image came alone).
    pub text: String,
    /// An image that came with it, downloaded before the turn starts.
    pub image: Option<ImageRef>,
    /// Where and how to answer.
    pub reply_to: ReplyTarget,
}

/// Where a platform keeps an image a user sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    /// The platform's id of it (LINE message id, Slack file id, Telegram `file_id`).
    pub content_id: String,
    /// Its URL, when the event named one.
    pub url: Option<String>,
    /// Its MIME type, when the event named one.
    pub mimetype: Option<String>,
}

/// Why a webhook request is refused (nothing of it is stored).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InboundError {
    /// The signature or secret token does not verify (401).
    #[error("{0}")]
    Unauthorized(String),
    /// The body is not JSON of the platform's schema (400).
    #[error("{0}")]
    Malformed(String),
}

impl InboundError {
    /// Unauthorized, for any error that explains itself.
    pub fn unauthorized(e: impl std::fmt::Display) -> Self {
        Self::Unauthorized(e.to_string())
    }

    /// Malformed, for any error that explains itself.
    pub fn malformed(e: impl std::fmt::Display) -> Self {
        Self::Malformed(e.to_string())
    }
}

/// What a platform is called, and which secret checks its webhook.
#[derive(Debug, Clone, Copy)]
pub struct About {
    /// The channel its conversations are on (`/webhooks/<channel>` is its webhook).
    pub channel: Channel,
    /// Its name in messages to people (`LINE`).
    pub title: &'static str,
    /// The environment variable of the inbound secret: while it is unset, the webhook is
    /// refused (503) before the body is read.
    pub secret_var: &'static str,
    /// The inbound secret among the configured ones.
    pub inbound_secret: fn(&Secrets) -> Option<&Secret>,
}

/// One messaging platform: how its requests are checked and read, how Ghost answers on it,
/// pushes to it and fetches its images.
#[async_trait::async_trait]
pub trait Platform: Send + Sync {
    /// What it is called.
    fn about(&self) -> &'static About;

    /// The channel its conversations are on.
    fn channel(&self) -> Channel {
        self.about().channel
    }

    /// Verifies one request over its raw bytes with `secret` (its [`About::inbound_secret`]),
    /// then reads it: the turns it
    /// starts. Everything else it carries (other event types, bots, edits) is acknowledged
    /// without a turn, and logged here with the reason.
    fn receive(&self, request: Request<'_>, secret: &Secret) -> Result<Inbound, InboundError>;

    /// Sends `text` for `out.cause` to `target`, at most once: a call the platform cannot
    /// deduplicate is preceded by [`Outbound::mark_attempt`], and is not repeated when it
    /// may have gone through. A target of another platform is `no_target`.
    async fn deliver(
        &self,
        out: &Outbound<'_>,
        target: &ReplyTarget,
        text: &str,
    ) -> Result<DeliveryOutcome, HandlerError>;

    /// Where autonomy messages of a conversation bound by `binding` are pushed on this
    /// platform (then sent with [`Platform::deliver`]), if it binds this platform.
    fn push_target(&self, binding: &PushBinding) -> Option<ReplyTarget>;

    /// The request for an image's bytes (the caller sends it, and streams the answer in,
    /// capped), after any call it takes to find them. Its credentials go only to the
    /// platform's own hosts.
    async fn image_request(
        &self,
        http: &reqwest::Client,
        image: &ImageReceived,
    ) -> Result<reqwest::RequestBuilder, HandlerError>;

    /// What is sent when the persona could not answer (empty sends nothing).
    fn failure_reply(&self) -> &str;

    /// The request for `person`'s profile as seen in the conversation `session_id` (the
    /// caller sends it), when the platform has profiles and Ghost may ask: `None` without
    /// its token, or for an id no user of it could have. Read with
    /// [`Platform::profile_name`]; used by [`crate::people`] only.
    fn profile_request(
        &self,
        _http: &reqwest::Client,
        _person: &str,
        _session_id: &str,
    ) -> Option<reqwest::RequestBuilder> {
        None
    }

    /// The name people know `person` by, from the answer to [`Platform::profile_request`].
    fn profile_name(&self, _answer: &serde_json::Value) -> Option<String> {
        None
    }

    /// How its image announcements are stored (LINE and Slack keep the event types they
    /// stored before; a new platform uses the neutral [`ImageReceived`]).
    fn image_events(&self) -> ImageEvents {
        ImageEvents::of::<ImageReceived>()
    }
}
