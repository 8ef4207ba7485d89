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
use ghost_shared::autonomy::persona::{mood_context, PersonaFields};
use ghost_shared::config::CharacterConfig;
use ghost_shared::llm::{Call, ChatMessage, LlmClient};
use ghost_shared::mood_api;
use ghost_shared::projections::MemoryProjection;
use ghost_shared::reminders::voice::{WordingAnswer, WordingRequest, QUEUE_GROUP, SUBJECT};
use ghost_shared::service::{ServiceContext, ServiceError};

use crate::prompt::PersonaPrompt;

/// Most characters of a line: a reminder's line is a sentence or two, not a message.
const MAX_LINE_CHARS: usize = 280;

/// Answers reminder line requests.
pub struct ReminderVoice {
    ctx: ServiceContext,
    character: CharacterConfig,
    system: String,
    llm: LlmClient,
}

impl ReminderVoice {
    /// Loads the persona rules, the reminder prompt and the model.
    pub fn new(ctx: ServiceContext) -> Result<Self, ServiceError> {
        let settings = &ctx.config.ghost;
        let character = crate::render::configured_character(&ctx)?;
        let read = |path: &std::path::Path, key: &str| {
            let path = ctx.config.resolve(path);
            std::fs::read_to_string(&path)
                .map_err(|e| ServiceError::Config(format!("{key} {}: {e}", path.display())))
        };
        let rules = PersonaPrompt::new(read(&settings.persona.prompt_file, "persona.prompt_file")?)
            .map_err(|e| ServiceError::Config(e.to_string()))?
            .render(&character);
        let prompt = character.fill_persona(&read(
            &settings.reminders.voice.prompt_file,
            "reminders.voice.prompt_file",
        )?);
        let llm = match &character.llm {
            Some(cfg) => LlmClient::new(cfg.clone(), None)?,
            None => ctx.llm("persona")?,
        };
        Ok(Self {
            system: format!("{rules}\n\n{prompt}"),
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

    /// The structured input: the persona, its mood now, what it knows the person cares
    /// about, and the reminder.
    async fn input(&self, request: &WordingRequest) -> Value {
        let timeout =
            std::time::Duration::from_millis(self.ctx.config.ghost.mood.request_timeout_ms);
        let long_mood = mood_api::now_or_none(
            self.ctx.bus(),
            &self.character.name,
            timeout,
            "the reminder line",
        )
        .await;
        let pool = self.ctx.store().pool();
        let now = self.ctx.clock().now_unix();
        let tau = self.ctx.config.ghost.memory.interest_tau_secs;
        let cares =
            match MemoryProjection::load_focus(pool, &self.character.name, &request.person).await {
                Ok(memory) => Cares::of(&memory, now, tau),
                Err(e) => {
                    warn!(error = %e, "memory unreadable; the line knows no preferences");
                    Cares::default()
                }
            };
        let due_local = ghost_shared::reminders::parse_zone(&request.time_zone)
            .map(|tz| {
                request
                    .due_at
                    .with_timezone(&tz)
                    .format("%Y-%m-%d %H:%M")
                    .to_string()
            })
            .unwrap_or_else(|_| request.due_at.format("%Y-%m-%d %H:%M UTC").to_string());
        json!({
            "persona": PersonaFields::of(&self.character),
            "mood": mood_context(long_mood.as_ref(), None),
            "cares": cares.shown(),
            "reminder": {
                "task": request.task,
                "due_at_local": due_local,
                "late": request.late,
            },
        })
    }

    /// The line, or why there is none.
    async fn word(&self, request: &WordingRequest) -> Result<String, String> {
        let input = self.input(request).await;
        let messages = [
            ChatMessage::system(self.system.clone()),
            ChatMessage::user(input.to_string()),
        ];
        let budget = self.ctx.config.ghost.reminders.voice.max_tokens;
        let written = self
            .llm
            .write(&messages, Call::interactive().with_budget(budget))
            .await
            .map_err(|e| e.to_string())?;
        usable_line(&written.text).ok_or_else(|| "the model wrote no usable line".into())
    }
}

/// The line as it is said: its first paragraph, trimmed, at most [`MAX_LINE_CHARS`]
/// characters (cut at a word where it can be); none when nothing is left.
pub fn usable_line(text: &str) -> Option<String> {
    let first = text.split("\n\n").map(str::trim).find(|p| !p.is_empty())?;
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
    fn a_line_is_its_first_paragraph_on_one_line() {
        assert_eq!(
            usable_line("\n  Time to call\n your mom!  \n\nP.S. more").as_deref(),
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
