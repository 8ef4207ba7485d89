//! The handler of persona utterances (`AssistantReplied`, `AutonomyMessageRendered`): one
//! write plan per utterance. A redelivered utterance whose plan was applied or rejected
//! before changes nothing; the plan's events are appended in one atomic append with ids
//! derived from the utterance.

use std::sync::Arc;

use tracing::{info, warn};

use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::config::CharacterConfig;
use ghost_shared::contracts;
use ghost_shared::envelope::{session_stream, NewEvent, RecordedEvent};
use ghost_shared::events::{
    ModelAnswerRejected, PersonaUtterance, UserMessageReceived, WritePlanRejected,
};
use ghost_shared::llm::{Call, ChatMessage, LlmClient, LlmError};
use ghost_shared::memory::apply::{MemoryChange, ANNOTATED_STEP, REJECTED_STEP};
use ghost_shared::memory::edits::drop_forgotten;
use ghost_shared::memory::{apply_plan, validate, ApplyContext, WritePlan, DEFAULT_PERSON};
use ghost_shared::projections::MemoryProjection;
use ghost_shared::projector::ProjectionRunner;
use ghost_shared::service::{ServiceContext, ServiceError};
use ghost_shared::template::unknown_placeholder;

use crate::handles::Handles;
use crate::input::{memory_input, plan_ids, plan_input, recent_events, TurnInput, UtteranceKind};
use crate::writer::MemoryWriter;

/// The event types this handler consumes.
pub const CONSUMES: &[&str] = PersonaUtterance::TYPES;

/// One persona utterance, whichever event carried it.
struct Utterance {
    speaker: String,
    session_id: String,
    text: String,
    /// The user message it answers (none for an autonomy message).
    user_event_id: Option<uuid::Uuid>,
}

impl Utterance {
    fn of(event: &RecordedEvent) -> Result<Self, HandlerError> {
        match PersonaUtterance::decode(event).map_err(HandlerError::permanent)? {
            Some(PersonaUtterance::AutonomyMessageRendered(m)) => Ok(Self {
                speaker: m.persona,
                session_id: m.session_id,
                text: m.text,
                user_event_id: None,
            }),
            Some(PersonaUtterance::AssistantReplied(r)) => Ok(Self {
                speaker: r.speaker,
                session_id: r.session_id,
                text: r.text,
                user_event_id: Some(r.user_event_id),
            }),
            None => Err(HandlerError::permanent(format!(
                "the write plan does not handle {}",
                event.event_type
            ))),
        }
    }
}

/// Handles persona utterances.
pub struct Planner {
    ctx: ServiceContext,
    llm: LlmClient,
    template: String,
    /// Plans are validated and applied one at a time, against a caught-up memory.
    writer: Arc<MemoryWriter>,
}

impl Planner {
    /// A planner with its own writer over the projection `runner` feeds.
    pub fn new(ctx: ServiceContext, runner: ProjectionRunner) -> Result<Self, ServiceError> {
        let writer = Arc::new(MemoryWriter::new(ctx.clone(), runner));
        Self::with_writer(ctx, writer)
    }

    /// A planner using the worker's model and `memory.plan_prompt_file`, changing memory
    /// through `writer`.
    pub fn with_writer(
        ctx: ServiceContext,
        writer: Arc<MemoryWriter>,
    ) -> Result<Self, ServiceError> {
        let llm = ctx.llm("worker")?;
        let path = ctx
            .config
            .resolve(&ctx.config.ghost.memory.plan_prompt_file);
        let template = std::fs::read_to_string(&path).map_err(|e| {
            ServiceError::Config(format!("memory.plan_prompt_file {}: {e}", path.display()))
        })?;
        if let Some(p) = unknown_placeholder(&template, &CharacterConfig::PERSONA_PLACEHOLDERS) {
            return Err(ServiceError::Config(format!(
                "memory.plan_prompt_file: unknown placeholder {p}"
            )));
        }
        Ok(Self {
            ctx,
            llm,
            template,
            writer,
        })
    }

    async fn turn(&self, reply: &Utterance) -> Result<TurnInput, HandlerError> {
        let Some(user_event_id) = reply.user_event_id else {
            // Said on its own: there is no user message to invent.
            return Ok(TurnInput {
                kind: UtteranceKind::AutonomyMessage,
                user_text: None,
                user_event_id: None,
                // Said to the console, whose user is the default person.
                person: DEFAULT_PERSON.to_owned(),
                reply_text: reply.text.clone(),
                images: Vec::new(),
            });
        };
        let user = self
            .ctx
            .store()
            .get(user_event_id)
            .await
            .map_err(HandlerError::transient)?
            .and_then(|e| e.decode::<UserMessageReceived>().ok());
        Ok(TurnInput {
            kind: UtteranceKind::Reply,
            user_text: Some(user.as_ref().map(|m| m.text.clone()).unwrap_or_default()),
            user_event_id: Some(user_event_id),
            person: user
                .as_ref()
                .map_or_else(|| DEFAULT_PERSON.to_owned(), |m| m.speaker.clone()),
            reply_text: reply.text.clone(),
            images: user
                .and_then(|m| m.image)
                .map(|i| vec![format!("image {}", i.message_id)])
                .unwrap_or_default(),
        })
    }
}

#[async_trait::async_trait]
impl EventHandler for Planner {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let reply = Utterance::of(&event)?;
        if self
            .ctx
            .outcome_stored(&event, &[ANNOTATED_STEP, REJECTED_STEP])
            .await?
        {
            return Ok(()); // planned before: a redelivery changes nothing
        }
        // No persona, no plan: never a persona-less fallback.
        let Some(character) = self.ctx.config.characters.get(&reply.speaker) else {
            warn!(speaker = %reply.speaker, "no character for this utterance; no write plan");
            return Err(HandlerError::permanent(format!(
                "no character {}",
                reply.speaker
            )));
        };
        let settings = &self.ctx.config.ghost.memory;
        let now = event.recorded_at.timestamp_micros() as f64 / 1e6;
        let turn = self.turn(&reply).await?;
        let memory = self.writer.load_for(&reply.speaker, &turn.person).await?;
        let tail = self
            .ctx
            .store()
            .read_stream_tail(
                &session_stream(&reply.session_id),
                (settings.plan_recent_events as i64) * 4 + 4,
            )
            .await
            .map_err(HandlerError::transient)?;
        let recent = recent_events(&tail, event.version, settings.plan_recent_events);
        let ids = plan_ids(
            event.event_id,
            &turn,
            &recent,
            &memory,
            settings.plan_memory_items,
        );
        let handles = Handles::of(&ids);
        let contract = contracts::write_plan::contract(&handles.named(&ids));
        let mut input = plan_input(
            event.event_id,
            &turn,
            &recent,
            memory_input(
                &memory,
                now,
                settings.interest_tau_secs,
                settings.plan_memory_items,
            ),
        );
        handles.hide(&mut input);
        let messages = [
            ChatMessage::system(character.fill_persona(&self.template)),
            ChatMessage::user(input.to_string()),
        ];
        // Nobody waits for a plan: it yields to replies on the model. A model that ran out
        // of time (or of room) would take as long again: that is this plan's failure,
        // recorded once; an endpoint out of reach is worth another delivery.
        let called = self
            .llm
            .complete(&messages, Call::background().shaped(&contract))
            .await;
        let answer = match called {
            Ok(answer) => Ok(answer),
            Err(e @ (LlmError::Timeout { .. } | LlmError::ResponseTooLarge { .. })) => {
                Err(vec![format!("the model gave no plan: {e}")])
            }
            Err(e) => return Err(HandlerError::transient(e)),
        };

        let _serial = self.writer.serial().await;
        let memory = self.writer.load_for(&reply.speaker, &turn.person).await?;
        let parsed = answer
            .clone()
            .and_then(|a| WritePlan::parse(&a))
            .map(|plan| handles.reveal_in(plan));
        let unparsable = parsed.is_err();
        let checked = parsed.and_then(|plan| validate(&plan, &memory, event.event_id));
        let verdict = match (&checked, unparsable) {
            (Ok(_), _) => Ok(()),
            (Err(_), true) if answer.is_err() => Err("no_answer"),
            (Err(_), true) => Err("unparsable"),
            (Err(_), false) => Err("rule"),
        };
        let raw = answer.as_deref().unwrap_or_default();
        contract.record(self.llm.role(), raw, verdict);
        let new_events = match checked {
            Ok(mut checked) => {
                let mut forgotten =
                    MemoryProjection::forgotten_evidence(self.ctx.store().pool(), &reply.speaker)
                        .await
                        .map_err(HandlerError::transient)?;
                // What a forgotten person said is evidence of nothing any more.
                let cited: Vec<_> = checked
                    .states
                    .iter()
                    .flat_map(|u| &u.evidence_event_ids)
                    .chain(
                        checked
                            .preferences
                            .iter()
                            .flat_map(|u| &u.evidence_event_ids),
                    )
                    .copied()
                    .collect();
                forgotten.extend(
                    self.ctx
                        .store()
                        .redacted_among(&cited)
                        .await
                        .map_err(HandlerError::transient)?,
                );
                let dropped = drop_forgotten(&mut checked, &forgotten);
                if dropped > 0 {
                    warn!(utterance = %event.event_id, dropped, "updates resting on forgotten evidence dropped");
                }
                let ctx = ApplyContext {
                    persona: &reply.speaker,
                    person: &turn.person,
                    event_id: event.event_id,
                    now,
                    interest_tau_secs: settings.interest_tau_secs,
                };
                let (_, changes) = apply_plan(&memory, &checked, ctx);
                info!(utterance = %event.event_id, changes = changes.len(), "write plan applied");
                changes
                    .iter()
                    .map(|c| new_event(&event, &c.step, &c.change, self.ctx.service))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(HandlerError::permanent)?
            }
            Err(errors) => {
                warn!(utterance = %event.event_id, ?errors, "write plan rejected whole");
                let rejected = WritePlanRejected {
                    persona: reply.speaker.clone(),
                    source_event_id: event.event_id,
                    errors,
                    raw: ModelAnswerRejected::excerpt(raw),
                };
                vec![
                    NewEvent::caused_by(&event, REJECTED_STEP, &rejected, self.ctx.service)
                        .map_err(HandlerError::permanent)?,
                ]
            }
        };
        self.writer.append(&reply.speaker, &new_events).await
    }
}

fn new_event(
    cause: &RecordedEvent,
    step: &str,
    change: &MemoryChange,
    service: &str,
) -> Result<NewEvent, serde_json::Error> {
    match change {
        MemoryChange::StateUpserted(p) => NewEvent::caused_by(cause, step, p, service),
        MemoryChange::StateClosed(p) => NewEvent::caused_by(cause, step, p, service),
        MemoryChange::PreferenceUpdated(p) => NewEvent::caused_by(cause, step, p, service),
        MemoryChange::EventAnnotated(p) => NewEvent::caused_by(cause, step, p, service),
        MemoryChange::InterestStateUpdated(p) => NewEvent::caused_by(cause, step, p, service),
    }
}
