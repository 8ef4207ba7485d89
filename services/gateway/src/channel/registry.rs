//! Every platform the gateway speaks, in one list.
//!
//! Adding a platform is: its module implementing [`Platform`], one line in
//! `Platforms::listed`, and its webhook's line in [`crate::routes::ROUTES`]. Its webhook
//! counters, reply delivery, autonomy pushes and image downloads follow from the list.

use std::sync::Arc;

use ghost_shared::config::Config;
use ghost_shared::events::Channel;
use ghost_shared::service::ServiceContext;

use super::Platform;
use crate::{line, slack, telegram};

/// The platforms, shared by the webhook handler, delivery, pushes and downloads.
#[derive(Clone)]
pub struct Platforms(Arc<[Arc<dyn Platform>]>);

impl Platforms {
    /// Every platform, configured from `ctx`, Slack knowing its bot's user id (configured,
    /// else asked of `auth.test`).
    pub async fn start(ctx: &ServiceContext) -> Self {
        let slack_bot = slack::Slack::bot_identity(&ctx.config).await;
        Self::listed(ctx.config.clone(), slack_bot)
    }

    /// Every platform, configured from `config`, for sending only (Slack's bot id is the
    /// configured one, if any: only reading Slack's events needs it).
    pub fn for_sending(config: &Arc<Config>) -> Self {
        let slack_bot = config.ghost.slack.bot_user_id.as_deref();
        let slack_bot = slack_bot.map(slack::BotIdentity::known).unwrap_or_default();
        Self::listed(config.clone(), slack_bot)
    }

    /// The list itself.
    fn listed(config: Arc<Config>, slack_bot: slack::BotIdentity) -> Self {
        Self::new(vec![
            Arc::new(line::Line::new(config.clone())),
            Arc::new(slack::Slack::new(config.clone(), slack_bot)),
            Arc::new(telegram::Telegram::new(config)),
        ])
    }

    /// These platforms.
    pub fn new(platforms: Vec<Arc<dyn Platform>>) -> Self {
        Self(platforms.into())
    }

    /// The platform of `channel` (none for HTTP).
    pub fn get(&self, channel: Channel) -> Option<&dyn Platform> {
        self.iter().find(|p| p.channel() == channel)
    }

    /// The platform whose webhook is `/webhooks/<name>`.
    pub fn named(&self, name: &str) -> Option<&dyn Platform> {
        self.iter().find(|p| p.channel().as_str() == name)
    }

    /// Each platform, in the list's order.
    pub fn iter(&self) -> impl Iterator<Item = &dyn Platform> {
        self.0.iter().map(|p| p.as_ref())
    }
}
