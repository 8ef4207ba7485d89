//! The persona's line for a reminder that came due (issue 46 item 3): the gateway asks on
//! core NATS ([`ghost_shared::reminders::voice`]) and says the line with the task after it.
//! The line is written from structured input (who the persona is, its mood now, what it
//! knows the person cares about, the task and when it was due) with
//! `reminders.voice.prompt_file` after the persona rules of the reply prompt.
//!
//! Nothing is stored here: the gateway's `ReminderDelivered` records what was said. A
//! request the persona cannot answer gets an error answer at once, so the gateway says the
//! reminder plainly instead of waiting for its timeout.

use std::sync::Arc;

use futures::StreamExt;
use serde_json::{json, Value};
use tracing::warn;

use ghost_shared::autonomy::cares::Cares;
use ghost_shared::config::CharacterConfig;
use ghost_shared::llm::{Call, ChatMessage, LlmClient};
use ghost_shared::mood_api;
use ghost_shared::projections::MemoryProjection;
use ghost_shared::reminders::voice::{WordingAnswer, WordingRequest, QUEUE_GROUP, SUBJECT};
use ghost_shared::service::{ServiceContext, ServiceError};

/// Most characters of a line: a reminder's line is a sentence, not a message.
const MAX_LINE_CHARS: usize = 200;

/// Most of the person's likes the input names.
const MAX_LIKES: usize = 3;

/// The shape of an answer, shown as turns before the real request.
const EXAMPLES: [(&str, &str); 2] = [
    (
        r#"{"task":"water the plants","mood":"joy","likes":["gardening"],"late":false}"#,
        "Your plants are thirsty! Time to give them some water.",
    ),
    (
        r#"{"task":"take out the trash","mood":"neutral","likes":[],"late":true}"#,
        "Sorry this comes late: it's time to take out the trash.",
    ),
];

/// Answers reminder line requests.
pub struct ReminderVoice {
    ctx: ServiceContext,
    character: CharacterConfig,
    system: String,
    llm: LlmClient,
}

impl ReminderVoice {
    /// Loads the reminder prompt (the persona's text in it: the reply prompt's rules are
    /// more than a small model can follow for one sentence) and the model.
    pub fn new(ctx: ServiceContext) -> Result<Self, ServiceError> {
        let character = crate::render::configured_character(&ctx)?;
        let key = "reminders.voice.prompt_file";
        let path = ctx
            .config
            .resolve(&ctx.config.ghost.reminders.voice.prompt_file);
        let prompt = std::fs::read_to_string(&path)
            .map_err(|e| ServiceError::Config(format!("{key} {}: {e}", path.display())))?;
        let llm = match &character.llm {
            Some(cfg) => LlmClient::new(cfg.clone(), None)?,
            None => ctx.llm("persona")?,
        };
        Ok(Self {
            system: character.fill_persona(&prompt),
            character,
            llm,
            ctx,
        })
    }

    /// Subscribes in the queue group (one instance answers each request), before the
    /// service counts as started: a reminder due at once finds the persona listening.
    pub async fn subscribe(&self) -> Result<async_nats::Subscriber, ServiceError> {
        let bus = self.ctx.bus();
        let requests = bus
            .client()
            .queue_subscribe(bus.core_subject(SUBJECT), QUEUE_GROUP.into())
            .await
            .map_err(|e| ServiceError::Config(format!("cannot subscribe to {SUBJECT}: {e}")))?;
        bus.ping().await?;
        Ok(requests)
    }

    /// Answers `requests` (each in a task of its own) until the connection ends.
    pub async fn serve(
        self: Arc<Self>,
        mut requests: async_nats::Subscriber,
    ) -> Result<(), ServiceError> {
        while let Some(message) = requests.next().await {
            let voice = self.clone();
            tokio::spawn(async move {
                let answer = match serde_json::from_slice::<WordingRequest>(&message.payload) {
                    Ok(request) => match voice.word(&request).await {
                        Ok(line) => WordingAnswer::Line(line),
                        Err(e) => {
                            warn!(error = %e, "no reminder line; the gateway says it plainly");
                            WordingAnswer::Error(e)
                        }
                    },
                    Err(e) => WordingAnswer::Error(format!("invalid wording request: {e}")),
                };
                let Some(reply) = message.reply else { return };
                let body = serde_json::to_vec(&answer).unwrap_or_default();
                if let Err(e) = voice.ctx.bus().client().publish(reply, body.into()).await {
                    warn!(error = %e, "reminder line not answered");
                }
            });
        }
        Ok(())
    }

    /// The structured input, kept small (a 135M model reads it): the task, the persona's
    /// mood now (its label), what it knows the person likes, and whether it comes late.
    async fn input(&self, request: &WordingRequest) -> Value {
        let timeout =
            std::time::Duration::from_millis(self.ctx.config.ghost.mood.request_timeout_ms);
        let mood = mood_api::now_or_none(
            self.ctx.bus(),
            &self.character.name,
            timeout,
            "the reminder line",
        )
        .await;
        let pool = self.ctx.store().pool();
        let now = self.ctx.clock().now_unix();
        let tau = self.ctx.config.ghost.memory.interest_tau_secs;
        let likes =
            match MemoryProjection::load_focus(pool, &self.character.name, &request.person).await {
                Ok(memory) => Cares::of(&memory, now, tau).keys(),
                Err(e) => {
                    warn!(error = %e, "memory unreadable; the line knows no preferences");
                    Vec::new()
                }
            };
        json!({
            "task": request.task,
            "mood": mood.map(|m| m.label),
            "likes": likes.into_iter().take(MAX_LIKES).collect::<Vec<_>>(),
            "late": request.late,
        })
    }

    /// The line, or why there is none.
    async fn word(&self, request: &WordingRequest) -> Result<String, String> {
        let input = self.input(request).await;
        // Two examples as turns: a small model copies a turn's shape far better than it
        // follows a described one.
        let mut messages = vec![ChatMessage::system(self.system.clone())];
        for (example, line) in EXAMPLES {
            messages.push(ChatMessage::user(example.to_owned()));
            messages.push(ChatMessage::assistant(line.to_owned()));
        }
        messages.push(ChatMessage::user(input.to_string()));
        let budget = self.ctx.config.ghost.reminders.voice.max_tokens;
        let written = self
            .llm
            .write(&messages, Call::interactive().with_budget(budget))
            .await
            .map_err(|e| e.to_string())?;
        usable_line(&written.text).ok_or_else(|| "the model wrote no usable line".into())
    }
}

/// The line as it is said: its first line, trimmed, at most [`MAX_LINE_CHARS`]
/// characters (cut at a word where it can be); none when nothing is left.
pub fn usable_line(text: &str) -> Option<String> {
    let first = text.lines().map(str::trim).find(|p| !p.is_empty())?;
    let line: String = first.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= MAX_LINE_CHARS {
        return Some(line);
    }
    let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
    let cut = match cut.rfind(' ') {
        Some(i) if i > MAX_LINE_CHARS / 2 => &cut[..i],
        _ => &cut,
    };
    Some(format!("{}…", cut.trim_end()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_its_first_line() {
        assert_eq!(
            usable_line("\n  Time to call  your mom!  \nP.S. more").as_deref(),
            Some("Time to call your mom!")
        );
        assert_eq!(usable_line(" \n\n  "), None);
    }

    #[test]
    fn a_long_line_is_cut_at_a_word() {
        let long = "word ".repeat(100);
        let line = usable_line(&long).unwrap();
        assert!(line.chars().count() <= MAX_LINE_CHARS + 1, "{line}");
        assert!(line.ends_with("word…"), "{line}");
    }
}
