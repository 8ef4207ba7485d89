//! `reflect_episode`: a reply that came without a usable affect trailer gets its affect
//! later, from the worker's model (seed 004). Once per reply, whatever is redelivered.

use ghost_shared::affect::{parse_affect, Affect};
use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::envelope::{EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{
    persona_stream, AffectReflected, AssistantReplied, UserMessageReceived,
};
use ghost_shared::llm::{ChatMessage, LlmClient};
use ghost_shared::service::ServiceContext;
use ghost_shared::store::ExpectedVersion;
use tracing::{info, warn};

/// The step name the reflection's event id derives from.
const STEP: &str = "reflect_episode";

/// Handles `AssistantReplied`: reflects on replies without an affect.
pub struct Reflector {
    ctx: ServiceContext,
    llm: LlmClient,
    /// `prompts/reflect.md` (with `{{persona}}` filled per reply).
    template: String,
}

impl Reflector {
    /// A reflector using the worker's model.
    pub fn new(ctx: ServiceContext, llm: LlmClient, template: String) -> Self {
        Self { ctx, llm, template }
    }
}

#[async_trait::async_trait]
impl EventHandler for Reflector {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let reply: AssistantReplied = event.decode().map_err(HandlerError::permanent)?;
        if reply.affect.is_some() {
            return Ok(()); // the trailer already gave it
        }
        if self.ctx.outcome_stored(&event, &[STEP]).await? {
            return Ok(()); // reflected before: a redelivery changes nothing
        }
        let user_text = match self
            .ctx
            .store()
            .get(reply.user_event_id)
            .await
            .map_err(HandlerError::transient)?
        {
            Some(e) => e
                .decode::<UserMessageReceived>()
                .map(|m| m.text)
                .unwrap_or_default(),
            None => String::new(),
        };
        let messages = [
            ChatMessage::system(self.template.replace("{{persona}}", &reply.speaker)),
            ChatMessage::user(format!(
                "User: {user_text}\n{}: {}",
                reply.speaker, reply.text
            )),
        ];
        let answer = self
            .llm
            .chat(&messages)
            .await
            .map_err(HandlerError::transient)?;
        let parsed = parse_affect(&answer);
        let Some(affect) = Affect::from_parsed(&parsed) else {
            warn!(rejected = ?parsed.rejected, error = ?parsed.error, "reflection unusable; will retry");
            return Err(HandlerError::transient("reflection gave no usable affect"));
        };
        let reflected = AffectReflected {
            persona: reply.speaker.clone(),
            episode_event_id: event.event_id,
            at: event.recorded_at.timestamp_micros() as f64 / 1e6,
            affect,
        };
        let new = NewEvent::caused_by(&event, STEP, &reflected, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        self.ctx
            .log
            .append(
                &persona_stream(&reply.speaker),
                ExpectedVersion::Any,
                &[new],
            )
            .await
            .map_err(HandlerError::transient)?;
        info!(episode = %event.event_id, "episode reflected");
        Ok(())
    }
}

/// The event type this handler consumes.
pub const CONSUMES: &str = AssistantReplied::EVENT_TYPE;
