//! Telegram as a [`Platform`]: the webhook's secret token and updates, `sendMessage`
//! replies and pushes (`deliver.rs`), photos through `getFile` (`file.rs`).

use std::sync::Arc;

use tracing::info;

use ghost_shared::bus::HandlerError;
use ghost_shared::config::{Config, PushBinding, Secret};
use ghost_shared::events::{Channel, ReplyTarget};

use super::{
    classify, verify_secret_token, TelegramAction, TelegramConfig, TelegramTurn, Update,
    SECRET_TOKEN_HEADER,
};
use crate::channel::{
    About, DeliveryOutcome, ImageReceived, ImageRef, Inbound, InboundError, Outbound, Platform,
    Request, Turn,
};

/// Telegram photos are JPEG; its file host answers with no useful content type.
const PHOTO_MIMETYPE: &str = "image/jpeg";

/// The Telegram Bot API, with the configured bot token, secret token and endpoint.
pub struct Telegram {
    config: Arc<Config>,
}

impl Telegram {
    /// Telegram as `config` sets it up.
    pub fn new(config: Arc<Config>) -> Self {
        Self { config }
    }
}

const ABOUT: About = About {
    channel: Channel::Telegram,
    title: "Telegram",
    secret_var: "GHOST_TELEGRAM_SECRET_TOKEN",
    inbound_secret: |s| s.telegram_secret_token.as_ref(),
};

#[async_trait::async_trait]
impl Platform for Telegram {
    fn about(&self) -> &'static About {
        &ABOUT
    }

    fn receive(&self, request: Request<'_>, secret: &Secret) -> Result<Inbound, InboundError> {
        let given = request.header(SECRET_TOKEN_HEADER);
        verify_secret_token(secret.expose().as_bytes(), given)
            .map_err(InboundError::unauthorized)?;
        let update = Update::from_slice(request.body).map_err(InboundError::malformed)?;
        let cfg = TelegramConfig {
            bot_username: self.config.ghost.telegram.bot_username.as_deref(),
            max_image_bytes: self.config.ghost.media.max_image_bytes,
        };
        let turns = match classify(&update, &cfg) {
            TelegramAction::StartTurn(turn) => vec![neutral(turn)],
            TelegramAction::Ignore { reason } => {
                info!(
                    update_id = update.update_id,
                    reason = reason.as_str(),
                    "telegram update acknowledged, no turn"
                );
                Vec::new()
            }
        };
        Ok(Inbound::turns(turns))
    }

    async fn deliver(
        &self,
        out: &Outbound<'_>,
        target: &ReplyTarget,
        text: &str,
    ) -> Result<DeliveryOutcome, HandlerError> {
        let token = self.config.secrets.telegram_bot_token.as_ref();
        super::deliver::deliver(&self.config.ghost.telegram, token, out, target, text).await
    }

    fn push_target(&self, binding: &PushBinding) -> Option<ReplyTarget> {
        binding
            .telegram
            .as_ref()
            .map(|target| ReplyTarget::Telegram {
                chat_id: target.chat_id,
                message_thread_id: target.message_thread_id,
                reply_to_message_id: None,
            })
    }

    async fn image_request(
        &self,
        http: &reqwest::Client,
        image: &ImageReceived,
    ) -> Result<reqwest::RequestBuilder, HandlerError> {
        let token = self.config.secrets.telegram_bot_token.as_ref();
        let max = self.config.ghost.media.max_image_bytes;
        let s = &self.config.ghost.telegram;
        super::file::download(s, token, http, &image.content_id, max).await
    }

    fn failure_reply(&self) -> &str {
        &self.config.ghost.telegram.failure_reply
    }

    fn profile_request(
        &self,
        http: &reqwest::Client,
        person: &str,
        session_id: &str,
    ) -> Option<reqwest::RequestBuilder> {
        let token = self.config.secrets.telegram_bot_token.as_ref()?;
        let body = super::profile::chat_member_body(person, session_id)?;
        let base = self.config.ghost.telegram.api_base.trim_end_matches('/');
        let url = format!("{base}/bot{}/getChatMember", token.expose());
        Some(http.post(url).json(&body))
    }

    fn profile_name(&self, answer: &serde_json::Value) -> Option<String> {
        super::profile::member_name(answer)
    }
}

/// A Telegram turn in the gateway's terms: the message identity is the dedup key; a
/// photo's `file_id` is what `getFile` takes.
fn neutral(turn: TelegramTurn) -> Turn {
    Turn {
        dedup_key: turn.dedup_key,
        session_id: turn.session_key,
        speaker: turn.speaker,
        text: turn.text,
        image: turn.photo.map(|p| ImageRef {
            content_id: p.file_id,
            url: None,
            mimetype: Some(PHOTO_MIMETYPE.into()),
        }),
        reply_to: ReplyTarget::Telegram {
            chat_id: turn.chat_id,
            message_thread_id: turn.message_thread_id,
            reply_to_message_id: turn.reply_to_message_id,
        },
    }
}
