//! Slack as a [`Platform`]: the Events API request URL (signature, `url_verification`,
//! message events), `chat.postMessage` replies and posts (`deliver.rs`), shared files.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tracing::info;

use ghost_shared::bus::HandlerError;
use ghost_shared::config::{Config, PushBinding, Secret};
use ghost_shared::events::{Channel, ReplyTarget, SlackImageReceived};

use super::{
    classify, parse_retry_num, verify_signature, BotIdentity, Envelope, SlackAction, SlackTurn,
    RETRY_NUM_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER,
};
use crate::channel::{
    About, DeliveryOutcome, ImageAnnouncement, ImageEvents, ImageReceived, ImageRef, Inbound,
    InboundError, Outbound, Platform, Request, Turn,
};

/// The Slack Events and Web APIs, with the configured secrets, endpoints and our bot's id.
pub struct Slack {
    config: Arc<Config>,
    bot: BotIdentity,
}

impl Slack {
    /// Slack as `config` sets it up, knowing `bot`'s user id (see [`Slack::bot_identity`]).
    pub fn new(config: Arc<Config>, bot: BotIdentity) -> Self {
        Self { config, bot }
    }

    /// Our bot's user id: configured, else asked of `auth.test` when Slack is set up (and
    /// asked again in the background until it answers).
    pub async fn bot_identity(config: &Config) -> BotIdentity {
        let settings = &config.ghost.slack;
        if let Some(id) = settings.bot_user_id.as_deref().filter(|id| !id.is_empty()) {
            return BotIdentity::known(id);
        }
        let bot = BotIdentity::default();
        if let Some(token) = &config.secrets.slack_bot_token {
            let http = reqwest::Client::builder()
                .timeout(Duration::from_secs(settings.request_timeout_secs))
                .build()
                .unwrap_or_default();
            bot.learn_or_retry(http, settings.api_base.clone(), token.expose().to_owned())
                .await;
        }
        bot
    }
}

const ABOUT: About = About {
    channel: Channel::Slack,
    title: "Slack",
    secret_var: "GHOST_SLACK_SIGNING_SECRET",
    inbound_secret: |s| s.slack_signing_secret.as_ref(),
};

#[async_trait::async_trait]
impl Platform for Slack {
    fn about(&self) -> &'static About {
        &ABOUT
    }

    /// Retries (`X-Slack-Retry-Num`) take the same path: the append is a no-op when the
    /// first delivery was stored, and stores it when the first delivery failed on our side.
    fn receive(&self, request: Request<'_>, secret: &Secret) -> Result<Inbound, InboundError> {
        verify_signature(
            secret.expose().as_bytes(),
            request.body,
            request.header(TIMESTAMP_HEADER),
            request.header(SIGNATURE_HEADER),
            chrono::Utc::now().timestamp(),
            self.config.ghost.slack.signature_window_secs,
        )
        .map_err(InboundError::unauthorized)?;
        let envelope = Envelope::from_slice(request.body).map_err(InboundError::malformed)?;
        let retry_num = parse_retry_num(request.header(RETRY_NUM_HEADER));
        let bot_user_id = self.bot.get();
        Ok(
            match classify(&envelope, retry_num, bot_user_id.as_deref()) {
                SlackAction::UrlVerification { challenge } => Inbound {
                    turns: Vec::new(),
                    answer: Some(json!({ "challenge": challenge })),
                },
                SlackAction::StartTurn(turn) => Inbound {
                    turns: vec![neutral(turn)],
                    answer: None,
                },
                SlackAction::Ignore { reason } => {
                    info!(
                        reason = reason.as_str(),
                        ?retry_num,
                        "slack event acknowledged, no turn"
                    );
                    Inbound::default()
                }
            },
        )
    }

    async fn deliver(
        &self,
        out: &Outbound<'_>,
        target: &ReplyTarget,
        text: &str,
    ) -> Result<DeliveryOutcome, HandlerError> {
        let ReplyTarget::Slack { channel, thread_ts } = target else {
            return Ok(DeliveryOutcome::no_target());
        };
        let token = self.config.secrets.slack_bot_token.as_ref();
        let place = (channel.as_str(), Some(thread_ts.as_str()));
        super::deliver::deliver(&self.config.ghost.slack, token, out, place, text).await
    }

    /// In the bound thread, else in the channel itself (an empty `thread_ts`).
    fn push_target(&self, binding: &PushBinding) -> Option<ReplyTarget> {
        binding.slack.as_ref().map(|target| ReplyTarget::Slack {
            channel: target.channel.clone(),
            thread_ts: target.thread_ts.clone().unwrap_or_default(),
        })
    }

    async fn image_request(
        &self,
        http: &reqwest::Client,
        image: &ImageReceived,
    ) -> Result<reqwest::RequestBuilder, HandlerError> {
        let s = &self.config.ghost.slack;
        let url = image.url.as_deref().unwrap_or_default();
        // The bot token goes only to Slack's file host, whatever a body claims.
        if !url.starts_with(&s.files_base) {
            return Err(HandlerError::permanent(format!(
                "file URL is outside slack.files_base ({}); not fetched",
                s.files_base
            )));
        }
        let Some(token) = &self.config.secrets.slack_bot_token else {
            return Err(HandlerError::permanent("GHOST_SLACK_BOT_TOKEN is not set"));
        };
        let timeout = Duration::from_secs(s.request_timeout_secs.max(30));
        Ok(http.get(url).bearer_auth(token.expose()).timeout(timeout))
    }

    fn failure_reply(&self) -> &str {
        &self.config.ghost.slack.failure_reply
    }

    fn profile_request(
        &self,
        http: &reqwest::Client,
        person: &str,
        _session_id: &str,
    ) -> Option<reqwest::RequestBuilder> {
        let token = self.config.secrets.slack_bot_token.as_ref()?;
        let path = super::profile::users_info_path(person)?;
        let base = self.config.ghost.slack.api_base.trim_end_matches('/');
        Some(
            http.get(format!("{base}{path}"))
                .bearer_auth(token.expose()),
        )
    }

    fn profile_name(&self, answer: &serde_json::Value) -> Option<String> {
        super::profile::user_name(answer)
    }

    fn image_events(&self) -> ImageEvents {
        ImageEvents::of::<SlackImageReceived>()
    }
}

/// Slack's image announcement: the file's id, download URL and MIME type, and the text.
impl ImageAnnouncement for SlackImageReceived {
    fn from_neutral(image: ImageReceived) -> Self {
        SlackImageReceived {
            session_id: image.session_id,
            speaker: image.speaker,
            external_id: image.external_id,
            text: image.text,
            file_id: image.content_id,
            url: image.url.unwrap_or_default(),
            mimetype: image.mimetype.unwrap_or_default(),
            reply_to: image.reply_to,
        }
    }

    fn into_neutral(self) -> ImageReceived {
        ImageReceived {
            session_id: self.session_id,
            channel: Channel::Slack,
            speaker: self.speaker,
            external_id: self.external_id,
            text: self.text,
            content_id: self.file_id,
            url: Some(self.url),
            mimetype: Some(self.mimetype),
            reply_to: self.reply_to,
        }
    }
}

/// A Slack turn in the gateway's terms: the message identity (`slack:msg:{channel}:{ts}`)
/// is the dedup key, so retries and the `app_mention`/`message` pair of one mention are
/// one turn; the answer goes in the thread.
fn neutral(turn: SlackTurn) -> Turn {
    Turn {
        dedup_key: turn.dedup_key,
        session_id: turn.session_key,
        speaker: turn.user,
        text: turn.text,
        image: turn.image.map(|i| ImageRef {
            content_id: i.file_id,
            url: Some(i.url),
            mimetype: Some(i.mimetype),
        }),
        reply_to: ReplyTarget::Slack {
            channel: turn.channel,
            thread_ts: turn.thread_ts,
        },
    }
}
