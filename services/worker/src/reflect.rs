//! `reflect_episode`: a reply that came without a usable affect trailer gets its affect
//! later, from the worker's model (seed 004). So does every autonomy message: the persona's
//! own words count in its mood, and their render asks for no trailer (seed 004: entry points
//! other than the reply are filled in by reflection). Once per episode, whatever is
//! redelivered.

use ghost_shared::affect::ParsedAffect;
use ghost_shared::affect::{parse_affect, Affect};
use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::contracts;
use ghost_shared::envelope::{EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{
    persona_stream, AffectReflected, ModelAnswerRejected, PersonaUtterance, UserMessageReceived,
};
use ghost_shared::llm::{transcript, Call, ChatMessage, Fence, LlmClient, LlmError};
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

/// One thing the persona said, to be reflected on.
struct Episode {
    /// The persona.
    speaker: String,
    /// The exchange as the model reads it.
    exchange: String,
}

impl Reflector {
    /// The episode of `event`, or None when it needs no reflection (a reply whose trailer
    /// gave its affect).
    async fn episode(&self, event: &RecordedEvent) -> Result<Option<Episode>, HandlerError> {
        let reply = match PersonaUtterance::decode(event).map_err(HandlerError::permanent)? {
            Some(PersonaUtterance::AssistantReplied(reply)) => reply,
            Some(PersonaUtterance::AutonomyMessageRendered(message)) => {
                // No user message: the persona spoke on its own, reporting what it did.
                return Ok(Some(Episode {
                    exchange: transcript([(message.persona.as_str(), message.text.as_str())]),
                    speaker: message.persona,
                }));
            }
            None => {
                return Err(HandlerError::permanent(format!(
                    "reflection does not handle {}",
                    event.event_type
                )))
            }
        };
        if reply.affect.is_some() {
            return Ok(None); // the trailer already gave it
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
        Ok(Some(Episode {
            exchange: transcript([
                ("user", user_text.as_str()),
                (reply.speaker.as_str(), reply.text.as_str()),
            ]),
            speaker: reply.speaker,
        }))
    }
}

#[async_trait::async_trait]
impl EventHandler for Reflector {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let Some(episode) = self.episode(&event).await? else {
            return Ok(());
        };
        if self.ctx.outcome_stored(&event, &[STEP]).await? {
            return Ok(()); // reflected before: a redelivery changes nothing
        }
        let messages = [
            ChatMessage::system(self.template.replace("{{persona}}", &episode.speaker)),
            ChatMessage::user(Fence::new().block("EXCHANGE", &episode.exchange)),
        ];
        // A broken answer is retried once, then recorded as a permanent failure of this
        // step: never a reason to redeliver the reply (five more calls each) until it is
        // dead-lettered.
        let contract = contracts::affect::reflection();
        let mut reasons = Vec::new();
        let mut last = String::new();
        let mut affect = None;
        for _ in 0..2 {
            let answer = match self
                .llm
                .complete(&messages, Call::background().shaped(&contract))
                .await
            {
                Ok(answer) => answer,
                // As long again next time: this reflection's failure, recorded once.
                Err(e @ (LlmError::Timeout { .. } | LlmError::ResponseTooLarge { .. })) => {
                    reasons.push(format!("the model gave no answer: {e}"));
                    break;
                }
                Err(e) => return Err(HandlerError::transient(e)),
            };
            let parsed = parse_affect(&answer);
            match Affect::from_parsed(&parsed) {
                Some(a) => {
                    contract.record(self.llm.role(), &answer, Ok(()));
                    affect = Some(a);
                    break;
                }
                None => {
                    contract.record(self.llm.role(), &answer, Err("unusable"));
                    warn!(rejected = ?parsed.rejected, error = ?parsed.error, "reflection unusable");
                    reasons.push(unusable_reason(&parsed));
                    last = answer;
                }
            }
        }
        let Some(affect) = affect else {
            let rejected = ModelAnswerRejected {
                contract: contract.name.to_owned(),
                source_event_id: event.event_id,
                reasons,
                raw: ModelAnswerRejected::excerpt(&last),
            };
            self.record(&event, &episode.speaker, &rejected).await?;
            warn!(episode = %event.event_id, "reflection failed twice; recorded, not retried");
            return Ok(());
        };
        let reflected = AffectReflected {
            persona: episode.speaker.clone(),
            episode_event_id: event.event_id,
            at: event.recorded_at.timestamp_micros() as f64 / 1e6,
            affect,
        };
        self.record(&event, &episode.speaker, &reflected).await?;
        info!(episode = %event.event_id, "episode reflected");
        Ok(())
    }
}

impl Reflector {
    /// Appends the step's one outcome (its id derives from the reply) to the persona's stream.
    async fn record<P: EventPayload>(
        &self,
        reply: &RecordedEvent,
        persona: &str,
        outcome: &P,
    ) -> Result<(), HandlerError> {
        let new = NewEvent::caused_by(reply, STEP, outcome, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        self.ctx
            .log
            .append(&persona_stream(persona), ExpectedVersion::Any, &[new])
            .await
            .map_err(HandlerError::transient)?;
        Ok(())
    }
}

/// Why a reflection gave no affect, in one line.
fn unusable_reason(parsed: &ParsedAffect) -> String {
    match &parsed.error {
        Some(e) => e.to_string(),
        None => {
            let fields: Vec<String> = parsed
                .rejected
                .iter()
                .map(|r| format!("{}: {}", r.field, r.reason))
                .collect();
            format!("no usable affect ({})", fields.join(", "))
        }
    }
}

/// The event types this handler consumes: replies and autonomy messages.
pub const CONSUMES: &[&str] = PersonaUtterance::TYPES;
