//! People by name (issue 48): what a person id (the speaker of a user message: a LINE,
//! Slack or Telegram user id, an `/api/chat` `user_id`) is shown as.
//!
//! - `user`, the person of the HTTP API and the console when none is named, is the one
//!   using the console: "you";
//! - a platform user is shown by their profile name on that platform (LINE's display name,
//!   Slack's display or real name, Telegram's first and last name), asked of the platform
//!   ([`crate::channel::Platform::profile_request`]) in the conversation they last spoke in,
//!   and kept for [`KEPT`] (a failed lookup too, for [`RETRY_AFTER`]: a page of memories
//!   asks once, not once a read);
//! - anyone else keeps their id.
//!
//! This is the one place names are looked up: the console's Memory view reads them through
//! `GET /api/memory`'s `people`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ghost_shared::events::Channel;
use ghost_shared::memory::model::DEFAULT_PERSON;
use serde::Serialize;

use crate::channel::Platforms;

/// How long a name found is kept.
const KEPT: Duration = Duration::from_secs(3600);
/// How long a lookup that found nothing is not repeated.
const RETRY_AFTER: Duration = Duration::from_secs(60);
/// Names kept at most (the oldest go first).
const MAX_KEPT: usize = 10_000;
/// How long one lookup may take (the page waits for it).
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(3);

/// A person as the console shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Person {
    /// Their name (`null`: none known; show the id).
    pub name: Option<String>,
    /// Where they speak (`line`, `slack`, `telegram`, `http`), when known.
    pub channel: Option<&'static str>,
    /// Whether this is the console's own person (`user`).
    pub you: bool,
}

/// Where a person last spoke: the channel and conversation a lookup asks in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SpokeIn {
    /// The channel.
    pub channel: Channel,
    /// The conversation.
    pub session_id: String,
}

/// A name looked up (`None`: the platform did not say) and when.
type Found = (Instant, Option<String>);

/// The names found, kept for a while.
#[derive(Debug, Default)]
pub struct People {
    http: reqwest::Client,
    kept: Mutex<HashMap<(Channel, String), Found>>,
}

impl People {
    /// Each of `persons` as shown, `spoke_in` saying where each platform user last spoke.
    pub async fn shown(
        &self,
        platforms: &Platforms,
        persons: impl IntoIterator<Item = String>,
        spoke_in: &HashMap<String, SpokeIn>,
    ) -> BTreeMap<String, Person> {
        let mut out = BTreeMap::new();
        for person in persons {
            if out.contains_key(&person) {
                continue;
            }
            let shown = match spoke_in.get(&person) {
                _ if person == DEFAULT_PERSON => Person {
                    name: Some("you".into()),
                    channel: Some(Channel::Http.as_str()),
                    you: true,
                },
                Some(at) if at.channel != Channel::Http => Person {
                    name: self.name(platforms, &person, at).await,
                    channel: Some(at.channel.as_str()),
                    you: false,
                },
                at => Person {
                    name: None,
                    channel: at.map(|a| a.channel.as_str()),
                    you: false,
                },
            };
            out.insert(person, shown);
        }
        out
    }

    /// `person`'s profile name on `at`'s platform (kept, or asked now).
    async fn name(&self, platforms: &Platforms, person: &str, at: &SpokeIn) -> Option<String> {
        let key = (at.channel, person.to_owned());
        let kept = self.kept.lock().ok()?.get(&key).cloned();
        if let Some((when, name)) = kept {
            let fresh = if name.is_some() { KEPT } else { RETRY_AFTER };
            if when.elapsed() < fresh {
                return name;
            }
        }
        let name = lookup(platforms, &self.http, person, at).await;
        if let Ok(mut kept) = self.kept.lock() {
            if kept.len() >= MAX_KEPT {
                let oldest = kept.iter().min_by_key(|(_, (at, _))| *at);
                if let Some(oldest) = oldest.map(|(k, _)| k.clone()) {
                    kept.remove(&oldest);
                }
            }
            kept.insert(key, (Instant::now(), name.clone()));
        }
        name
    }
}

/// Asks the platform; `None` (and a note in the log) when it cannot say.
async fn lookup(
    platforms: &Platforms,
    http: &reqwest::Client,
    person: &str,
    at: &SpokeIn,
) -> Option<String> {
    let platform = platforms.get(at.channel)?;
    let request = platform.profile_request(http, person, &at.session_id)?;
    let answer = async {
        let response = request.timeout(LOOKUP_TIMEOUT).send().await?;
        let status = response.status();
        let body: serde_json::Value = response.json().await?;
        Ok::<_, reqwest::Error>((status, body))
    }
    .await;
    match answer {
        Ok((status, body)) if status.is_success() => {
            let name = platform.profile_name(&body);
            if name.is_none() {
                tracing::info!(
                    channel = at.channel.as_str(),
                    "no profile name in the answer"
                );
            }
            name
        }
        Ok((status, _)) => {
            tracing::info!(channel = at.channel.as_str(), %status, "profile lookup refused");
            None
        }
        Err(e) => {
            // Without its URL: Telegram's carries the bot token.
            let e = e.without_url();
            tracing::info!(channel = at.channel.as_str(), error = %e, "profile lookup failed");
            None
        }
    }
}

/// The channel a conversation is on, from its session id (`line:…`, `slack:…`,
/// `telegram:…`; anything else is HTTP).
pub fn channel_of_session(session_id: &str) -> Channel {
    match session_id.split(':').next() {
        Some("line") => Channel::Line,
        Some("slack") => Channel::Slack,
        Some("telegram") => Channel::Telegram,
        _ => Channel::Http,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_names_its_channel() {
        assert_eq!(channel_of_session("line:group:G1"), Channel::Line);
        assert_eq!(channel_of_session("slack:D1:123.4"), Channel::Slack);
        assert_eq!(channel_of_session("telegram:user:42"), Channel::Telegram);
        assert_eq!(channel_of_session("console"), Channel::Http);
        assert_eq!(channel_of_session("linen"), Channel::Http);
    }
}
