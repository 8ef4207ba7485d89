//! Our bot's Slack user id, so that the bot never answers itself: `slack.bot_user_id` when
//! configured, else learned from `auth.test` at start (retried in the background until it
//! answers); events also name it in `authorizations[].user_id`.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde::Deserialize;
use tracing::{info, warn};

/// Path of the Web API method (relative to the configurable base URL).
pub const AUTH_TEST_PATH: &str = "/api/auth.test";

/// How long to wait between `auth.test` attempts that failed.
const RETRY_EVERY: Duration = Duration::from_secs(30);

/// The bot user id as far as it is known (cheap to clone, shared by every request).
#[derive(Debug, Clone, Default)]
pub struct BotIdentity(Arc<RwLock<Option<String>>>);

impl BotIdentity {
    /// An identity already known (configured).
    pub fn known(user_id: &str) -> Self {
        let id = Self::default();
        id.set(user_id);
        id
    }

    /// The bot's user id, if known.
    pub fn get(&self) -> Option<String> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn set(&self, user_id: &str) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Some(user_id.to_owned());
    }

    /// Asks `auth.test` once; true when the id is now known.
    pub async fn learn(&self, http: &reqwest::Client, api_base: &str, token: &str) -> bool {
        match auth_test(http, api_base, token).await {
            Ok(user_id) => {
                info!(%user_id, "slack bot user id learned from auth.test");
                self.set(&user_id);
                true
            }
            Err(e) => {
                warn!(error = %e, "slack auth.test failed: own messages are recognised by the envelope only");
                false
            }
        }
    }

    /// Learns the id now, and keeps trying in the background if that failed.
    pub async fn learn_or_retry(&self, http: reqwest::Client, api_base: String, token: String) {
        if self.learn(&http, &api_base, &token).await {
            return;
        }
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(RETRY_EVERY).await;
                if me.learn(&http, &api_base, &token).await {
                    return;
                }
            }
        });
    }
}

#[derive(Debug, Deserialize)]
struct AuthTest {
    ok: bool,
    #[serde(default)]
    user_id: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

async fn auth_test(http: &reqwest::Client, api_base: &str, token: &str) -> Result<String, String> {
    let url = format!("{}{AUTH_TEST_PATH}", api_base.trim_end_matches('/'));
    let answer: AuthTest = http
        .post(url)
        .bearer_auth(token)
        .send()
        .await
        .map_err(|e| e.to_string())?
        .json()
        .await
        .map_err(|e| e.to_string())?;
    match (answer.ok, answer.user_id) {
        (true, Some(id)) if !id.is_empty() => Ok(id),
        _ => Err(answer
            .error
            .unwrap_or_else(|| "no user_id in the answer".into())),
    }
}
