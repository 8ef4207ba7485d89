//! The persona's autonomy message (seed 001 A-1): for a result whose `console_delivery` is
//! `chat` or `notify`, the persona writes a message from structured input with its own
//! prompt (`prompts/autonomy_message.md` after the persona rules of the reply prompt),
//! stores it (`AutonomyMessageRendered` in the conversation's stream, its `assistant_text`
//! row written at once) and then publishes it on `<prefix>.autonomy.message`: that is the
//! moment it is said. Then it asks for the conversation's summary through it
//! (`SummarizeRequested`; seed 001 step 6: embedded, summarised, planned). No fallback: when the render fails nothing is said, the raw summary
//! never shown; `AutonomyMessageFailed`, an activity entry and a warning say why.

use serde_json::{json, Value};
use tracing::warn;

use ghost_shared::autonomy::activity::{publish_activity_of, publish_message, AutonomyMessage};
use ghost_shared::autonomy::cares::Cares;
use ghost_shared::autonomy::events::{
    steps, ActionResultRecorded, AutonomyMessageFailed, AutonomyMessageRendered,
};
use ghost_shared::autonomy::persona::{mood_context, PersonaFields};
use ghost_shared::autonomy::recent_vad::recent_vad_average;
use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::config::CharacterConfig;
use ghost_shared::envelope::{session_stream, EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{memory_stream, SummarizeRequested, UserMessageReceived};
use ghost_shared::llm::{Call, ChatMessage, LlmClient};
use ghost_shared::memory::DEFAULT_PERSON;
use ghost_shared::mood_api;
use ghost_shared::projections::{AssistantTextProjection, MemoryProjection};
use ghost_shared::service::{ServiceContext, ServiceError};
use ghost_shared::store::ExpectedVersion;

use crate::prompt::PersonaPrompt;
use crate::recall::vector::cosine;

/// Handles `ActionResultRecorded`.
pub struct MessageRenderer {
    ctx: ServiceContext,
    character: CharacterConfig,
    system: String,
    llm: LlmClient,
    /// `llm.embedding`, when configured: what the hits are about is compared with what the
    /// persona cares about by their vectors (without it, the capability's order stays).
    embedding: Option<LlmClient>,
}

/// The event type this handler consumes.
pub const CONSUMES: &str = ActionResultRecorded::EVENT_TYPE;

impl MessageRenderer {
    /// Loads the persona rules, the message prompt and the model.
    pub fn new(ctx: ServiceContext) -> Result<Self, ServiceError> {
        let settings = &ctx.config.ghost.persona;
        let character = crate::render::configured_character(&ctx)?;
        let read = |path: &std::path::Path, key: &str| {
            let path = ctx.config.resolve(path);
            std::fs::read_to_string(&path)
                .map_err(|e| ServiceError::Config(format!("{key} {}: {e}", path.display())))
        };
        let rules = PersonaPrompt::new(read(&settings.prompt_file, "persona.prompt_file")?)
            .map_err(|e| ServiceError::Config(e.to_string()))?
            .render(&character);
        let message = character.fill_persona(&read(
            &ctx.config.ghost.autonomy.message_prompt_file,
            "autonomy.message_prompt_file",
        )?);
        let llm = match &character.llm {
            Some(cfg) => LlmClient::new(cfg.clone(), None)?,
            None => ctx.llm("persona")?,
        };
        let embedding = match ctx.config.ghost.llm.contains_key("embedding") {
            true => Some(ctx.llm("embedding")?),
            false => None,
        };
        Ok(Self {
            system: format!("{rules}\n\n{message}"),
            character,
            llm,
            embedding,
            ctx,
        })
    }

    /// The structured input (seed 001 A-1): persona, mood, decision, result, agent job.
    async fn input(&self, recorded: &ActionResultRecorded) -> Value {
        let timeout =
            std::time::Duration::from_millis(self.ctx.config.ghost.mood.request_timeout_ms);
        let long_mood = mood_api::now_or_none(
            self.ctx.bus(),
            &self.character.name,
            timeout,
            "the autonomy message",
        )
        .await;
        let now = self.ctx.clock().now_unix();
        let recent = recent_vad_average(self.ctx.store().pool(), &self.character.name, now)
            .await
            .map_err(|e| warn!(error = %e, "no recent affect for the autonomy message"))
            .ok();
        let mood = mood_context(long_mood.as_ref(), recent);
        let d = &recorded.decision;
        let r = &recorded.result;
        // What the persona cares about decides what it reports first.
        let cares = self.cares().await;
        let mut payload = r.message_facts();
        let similarity = self.similarity(&cares, &payload).await;
        cares.order_payload(&mut payload, &similarity);
        let mut result = json!({
            "result_status": r.result_status,
            "capability_name": r.capability_name,
            "summary_text": r.summary_text,
            "result_payload": payload,
        });
        if let Some(raw) = r.details.get("raw_output_text") {
            result["raw_output_text"] = raw.clone();
        }
        json!({
            "persona": PersonaFields::of(&self.character),
            "mood": mood,
            "cares": cares.shown(),
            "decision": {
                "action_type": d.action_type,
                "reason": d.reason,
                "persona_influence": d.persona_influence,
                "mood_influence": d.mood_influence,
                "console_delivery": d.console_delivery,
            },
            "result": result,
            "agent_job": recorded.agent_job,
        })
    }

    /// The persona's attention now and the confirmed preferences of the console's user
    /// (the default person, whom autonomy messages are said to; none when memory cannot be
    /// read: the message is still said).
    async fn cares(&self) -> Cares {
        let pool = self.ctx.store().pool();
        let now = self.ctx.clock().now_unix();
        let tau = self.ctx.config.ghost.memory.interest_tau_secs;
        match MemoryProjection::load_focus(pool, &self.character.name, DEFAULT_PERSON).await {
            Ok(memory) => Cares::of(&memory, now, tau),
            Err(e) => {
                warn!(error = %e, "memory unreadable; the message knows no preferences");
                Cares::default()
            }
        }
    }

    /// How close each hit of `payload` is in meaning to each of the cares' keys (cosine of
    /// their embeddings, one row per hit); empty when there is nothing to compare, no
    /// embedding model or it failed (the hits then stay in the capability's order).
    async fn similarity(&self, cares: &Cares, payload: &Value) -> Vec<Vec<f64>> {
        let keys = cares.keys();
        let hits = Cares::hit_texts(payload);
        let Some(model) = self.embedding.as_ref() else {
            return Vec::new();
        };
        if keys.is_empty() || hits.len() < 2 {
            return Vec::new();
        }
        let texts: Vec<String> = keys.iter().chain(&hits).cloned().collect();
        match model.embed(&texts).await {
            Ok(vectors) if vectors.len() == texts.len() => {
                let (keys, hits) = vectors.split_at(keys.len());
                hits.iter()
                    .map(|h| keys.iter().map(|k| cosine(h, k)).collect())
                    .collect()
            }
            Ok(_) => {
                warn!("the embedding model answered another count; hits keep their order");
                Vec::new()
            }
            Err(e) => {
                warn!(error = %e, "hits not embedded; they keep the capability's order");
                Vec::new()
            }
        }
    }

    /// The message text, or why there is none.
    async fn render(&self, recorded: &ActionResultRecorded) -> Result<String, String> {
        let input = self.input(recorded).await;
        let messages = [
            ChatMessage::system(self.system.clone()),
            ChatMessage::user(input.to_string()),
        ];
        // A budget (the model stops there) and an end at a repetition loop: streamed, so a
        // long message is bounded by its first token and its pauses, never by its length.
        let budget = self.ctx.config.ghost.autonomy.message_max_tokens;
        let written = self
            .llm
            .write(&messages, Call::interactive().with_budget(budget))
            .await
            .map_err(|e| e.to_string())?;
        if written.text.is_empty() {
            return Err("the model wrote an empty message".into());
        }
        Ok(written.text)
    }

    async fn fail(
        &self,
        cause: &RecordedEvent,
        recorded: &ActionResultRecorded,
        error: String,
    ) -> Result<(), HandlerError> {
        warn!(result = %cause.event_id, %error, "autonomy message not rendered; nothing is said");
        let failed = AutonomyMessageFailed {
            persona: recorded.persona.clone(),
            result_event_id: cause.event_id,
            error,
        };
        let new = NewEvent::caused_by(cause, steps::MESSAGE_FAILED, &failed, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        let appended = self
            .ctx
            .log
            .append(&cause.stream, ExpectedVersion::Any, &[new])
            .await
            .map_err(HandlerError::transient)?;
        if !appended.duplicate {
            for e in &appended.events {
                publish_activity_of(self.ctx.bus(), e).await;
            }
        }
        Ok(())
    }

    /// Stores the message's `assistant_text` row, then publishes it: said.
    async fn say(
        &self,
        stored: &RecordedEvent,
        message: &AutonomyMessageRendered,
    ) -> Result<(), HandlerError> {
        AssistantTextProjection::store_now(self.ctx.store().pool(), &[stored])
            .await
            .map_err(|e| HandlerError::transient(e.to_string()))?;
        publish_message(
            self.ctx.bus(),
            &AutonomyMessage {
                event_id: stored.event_id,
                speaker: message.persona.clone(),
                session_id: message.session_id.clone(),
                text: message.text.clone(),
                delivery: message.delivery,
            },
        )
        .await;
        // Its vector comes from the embedding projection, like every other line's; its
        // summary from the worker (seed 001 step 6).
        self.ask_summary(stored, message).await
    }

    /// Asks the worker to fold the message into its conversation's short summary, as the
    /// router does every `routing.summarize_after_turns` user messages: the console's
    /// session may hear the persona for days with nobody writing. The request's id derives
    /// from the message, so a redelivery asks once.
    async fn ask_summary(
        &self,
        stored: &RecordedEvent,
        message: &AutonomyMessageRendered,
    ) -> Result<(), HandlerError> {
        // The summary names how many user messages it covers: the router's window counts
        // from it (`short_memory::user_messages_since_summary`).
        let user_turns: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM events WHERE stream = $1 AND event_type = $2 AND version < $3",
        )
        .bind(&stored.stream)
        .bind(UserMessageReceived::EVENT_TYPE)
        .bind(stored.version)
        .fetch_one(self.ctx.store().pool())
        .await
        .map_err(HandlerError::transient)?;
        let request = SummarizeRequested {
            session_id: message.session_id.clone(),
            user_event_id: stored.event_id,
            user_turns: u32::try_from(user_turns).unwrap_or(u32::MAX),
        };
        let new = NewEvent::caused_by(stored, steps::MESSAGE_SUMMARY, &request, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        self.ctx
            .log
            .append(
                &memory_stream(&message.session_id),
                ExpectedVersion::Any,
                &[new],
            )
            .await
            .map_err(HandlerError::transient)?;
        Ok(())
    }
}

#[async_trait::async_trait]
impl EventHandler for MessageRenderer {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let recorded: ActionResultRecorded = event.decode().map_err(HandlerError::permanent)?;
        let Some(delivery) = recorded
            .decision
            .console_delivery
            .filter(|d| d.mode.speaks())
        else {
            return Ok(());
        };
        if let Some(done) = self
            .ctx
            .stored_outcome(&event, &[steps::MESSAGE, steps::MESSAGE_FAILED])
            .await?
        {
            // Redelivered after the store: the earlier attempt may have died before publishing.
            if let Ok(message) = done.decode::<AutonomyMessageRendered>() {
                return self.say(&done, &message).await;
            }
            return Ok(());
        }
        let text = match self.render(&recorded).await {
            Ok(text) => text,
            Err(error) => return self.fail(&event, &recorded, error).await,
        };
        let message = AutonomyMessageRendered {
            persona: recorded.persona.clone(),
            session_id: self.ctx.config.ghost.autonomy.session_id.clone(),
            result_event_id: event.event_id,
            text,
            delivery,
        };
        let new = NewEvent::caused_by(&event, steps::MESSAGE, &message, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        let appended = self
            .ctx
            .log
            .append(
                &session_stream(&message.session_id),
                ExpectedVersion::Any,
                &[new],
            )
            .await
            .map_err(HandlerError::transient)?;
        let stored = appended
            .events
            .first()
            .ok_or_else(|| HandlerError::permanent("append returned no event"))?;
        self.say(stored, &message).await
    }
}
