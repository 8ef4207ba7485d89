//! LINE as a [`Platform`]: the webhook's signature and events, replies and pushes
//! ([`super::deliver`]), and message content.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tracing::info;

use ghost_shared::bus::HandlerError;
use ghost_shared::config::{Config, PushBinding, Secret};
use ghost_shared::events::{Channel, LineImageReceived, ReplyTarget};

use super::{
    classify, verify_signature, ContentProvider, LineAction, LineConfig, LineTurn, ProviderType,
    TurnInput, WebhookBody, SIGNATURE_HEADER,
};
use crate::channel::{
    About, DeliveryOutcome, ImageAnnouncement, ImageEvents, ImageReceived, ImageRef, Inbound,
    InboundError, Outbound, Platform, Request, Turn,
};

/// The LINE Messaging API, with the configured channel secret, token and endpoints.
pub struct Line {
    config: Arc<Config>,
}

impl Line {
    /// LINE as `config` sets it up.
    pub fn new(config: Arc<Config>) -> Self {
        Self { config }
    }
}

const ABOUT: About = About {
    channel: Channel::Line,
    title: "LINE",
    secret_var: "GHOST_LINE_CHANNEL_SECRET",
    inbound_secret: |s| s.line_channel_secret.as_ref(),
};

#[async_trait::async_trait]
impl Platform for Line {
    fn about(&self) -> &'static About {
        &ABOUT
    }

    fn receive(&self, request: Request<'_>, secret: &Secret) -> Result<Inbound, InboundError> {
        let signature = request.header(SIGNATURE_HEADER);
        verify_signature(secret.expose().as_bytes(), request.body, signature)
            .map_err(InboundError::unauthorized)?;
        let webhook = WebhookBody::from_slice(request.body).map_err(InboundError::malformed)?;
        let received_at = Utc::now();
        let cfg = LineConfig {
            group_requires_mention: self.config.ghost.line.group_requires_mention,
        };
        let mut turns = Vec::new();
        for event in &webhook.events {
            match classify(event, &cfg) {
                LineAction::StartTurn(turn) => turns.push(neutral(turn, received_at)),
                LineAction::Ignore { reason } => {
                    info!(webhook_event_id = %event.webhook_event_id, reason = reason.as_str(), "line event acknowledged, no turn");
                }
            }
        }
        Ok(Inbound::turns(turns))
    }

    async fn deliver(
        &self,
        out: &Outbound<'_>,
        target: &ReplyTarget,
        text: &str,
    ) -> Result<DeliveryOutcome, HandlerError> {
        let token = self.config.secrets.line_channel_access_token.as_ref();
        super::deliver::deliver(&self.config.ghost.line, token, out, target, text).await
    }

    /// No reply token: every batch is a push keyed by the message event.
    fn push_target(&self, binding: &PushBinding) -> Option<ReplyTarget> {
        binding.line.as_ref().map(|target| ReplyTarget::Line {
            reply_token: None,
            received_at: Utc::now(),
            push_to: target.to.clone(),
            is_redelivery: false,
        })
    }

    async fn image_request(
        &self,
        http: &reqwest::Client,
        image: &ImageReceived,
    ) -> Result<reqwest::RequestBuilder, HandlerError> {
        let s = &self.config.ghost.line;
        let req = match &image.url {
            Some(url) => http.get(url),
            None => {
                let Some(token) = &self.config.secrets.line_channel_access_token else {
                    return Err(HandlerError::permanent(
                        "GHOST_LINE_CHANNEL_ACCESS_TOKEN is not set",
                    ));
                };
                http.get(format!(
                    "{}/v2/bot/message/{}/content",
                    s.data_api_base.trim_end_matches('/'),
                    image.content_id
                ))
                .bearer_auth(token.expose())
            }
        };
        Ok(req.timeout(Duration::from_secs(s.request_timeout_secs.max(30))))
    }

    fn failure_reply(&self) -> &str {
        &self.config.ghost.line.failure_reply
    }

    fn profile_request(
        &self,
        http: &reqwest::Client,
        person: &str,
        session_id: &str,
    ) -> Option<reqwest::RequestBuilder> {
        let token = self.config.secrets.line_channel_access_token.as_ref()?;
        let path = super::profile::profile_path(person, session_id)?;
        let base = self.config.ghost.line.api_base.trim_end_matches('/');
        Some(
            http.get(format!("{base}{path}"))
                .bearer_auth(token.expose()),
        )
    }

    fn profile_name(&self, answer: &serde_json::Value) -> Option<String> {
        super::profile::display_name(answer)
    }

    fn image_events(&self) -> ImageEvents {
        ImageEvents::of::<LineImageReceived>()
    }
}

/// LINE's image announcement: its `webhookEventId`, message id and external URL.
impl ImageAnnouncement for LineImageReceived {
    fn from_neutral(image: ImageReceived) -> Self {
        LineImageReceived {
            session_id: image.session_id,
            speaker: image.speaker,
            webhook_event_id: image.external_id,
            message_id: image.content_id,
            external_url: image.url,
            reply_to: image.reply_to,
        }
    }

    fn into_neutral(self) -> ImageReceived {
        ImageReceived {
            session_id: self.session_id,
            channel: Channel::Line,
            speaker: self.speaker,
            external_id: self.webhook_event_id,
            text: String::new(),
            content_id: self.message_id,
            url: self.external_url,
            mimetype: None,
            reply_to: self.reply_to,
        }
    }
}

/// A LINE turn in the gateway's terms: its `webhookEventId` is the dedup key; an image's
/// bytes are fetched from LINE unless it is hosted elsewhere.
fn neutral(turn: LineTurn, received_at: DateTime<Utc>) -> Turn {
    let reply_to = ReplyTarget::Line {
        reply_token: turn.reply_token.clone(),
        received_at,
        push_to: turn.push_to.clone(),
        is_redelivery: turn.is_redelivery,
    };
    let speaker = turn.user_id.clone().unwrap_or_else(|| turn.push_to.clone());
    let (text, image) = match turn.input {
        TurnInput::Text { text } => (text, None),
        TurnInput::Image {
            message_id,
            content_provider,
        } => (
            String::new(),
            Some(ImageRef {
                content_id: message_id,
                url: external_url(&content_provider),
                mimetype: None,
            }),
        ),
    };
    Turn {
        dedup_key: turn.webhook_event_id,
        session_id: turn.session_key,
        speaker,
        text,
        image,
        reply_to,
    }
}

fn external_url(cp: &ContentProvider) -> Option<String> {
    match cp.provider {
        ProviderType::External => cp.original_content_url.clone(),
        _ => None,
    }
}
