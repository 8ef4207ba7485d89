//! `AutonomyTickRequested`: collect the deliberation input, ask the model for one
//! `ActionDecision` (JSON only), record `ActionDecided` — or `ActionDropped` with every
//! reason (an invalid answer is never repaired) plus a warning. Once per tick. A scheduled
//! tick with nothing to say now (quiet hours, the daily cap, nothing new: [`gate`]) is
//! recorded as `AutonomyTickSkipped` before any model call.

use serde_json::json;
use tracing::warn;

use ghost_shared::autonomy::activity::publish_activity_of;
use ghost_shared::autonomy::decision::{
    parse_decision, ActionDecision, DecisionKind, AGENT_DELEGATE, CAPABILITIES,
};
use ghost_shared::autonomy::events::{
    autonomy_stream, steps, ActionDecided, ActionDropped, ActionResultRecorded,
    AutonomyTickRequested, AutonomyTickSkipped, DropReason, SkipReason, TickTrigger,
};
use ghost_shared::autonomy::gate::{self, GateScope};
use ghost_shared::autonomy::persona::PersonaFields;
use ghost_shared::autonomy::recent_vad::recent_vad_average;
use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::contracts;
use ghost_shared::envelope::{EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::ModelAnswerRejected;
use ghost_shared::llm::{Call, ChatMessage, LlmClient};
use ghost_shared::memory::DEFAULT_PERSON;
use ghost_shared::metrics;
use ghost_shared::mood_api::{self, MoodQuery};
use ghost_shared::projections::{AssistantTextProjection, MemoryProjection};
use ghost_shared::reminders::{own_settings, parse_zone, projection};
use ghost_shared::service::ServiceContext;
use ghost_shared::store::{AppendOutcome, ExpectedVersion};

use super::focus::{build_input, FocusSources, Intent, RecentEvent};

/// Handles `AutonomyTickRequested`.
pub struct Deliberator {
    pub(crate) ctx: ServiceContext,
    pub(crate) llm: LlmClient,
    /// The deliberation prompt.
    pub(crate) system: String,
}

impl Deliberator {
    /// What the deliberation looks at as of `now` (collection; the ordering is
    /// [`build_input`]'s).
    async fn collect(&self, persona: &str, now: f64) -> Result<FocusSources, HandlerError> {
        let settings = &self.ctx.config.ghost.autonomy;
        let turns = AssistantTextProjection::recent(
            self.ctx.store().pool(),
            &settings.session_id,
            settings.recent_events as i64,
        )
        .await
        .map_err(HandlerError::transient)?;
        let timeout =
            std::time::Duration::from_millis(self.ctx.config.ghost.mood.request_timeout_ms);
        let query = MoodQuery {
            persona: persona.to_owned(),
            now: None,
        };
        let long_mood =
            match mood_api::request(self.ctx.bus(), mood_api::GET_SUBJECT, &query, timeout).await {
                Ok(answer) => Some(answer.state),
                Err(e) => {
                    warn!(error = %e, "no mood for the deliberation");
                    None
                }
            };
        // Deliberation reports to the console, whose user is the default person: their
        // memory and what is about no one, never another person's.
        let memory = MemoryProjection::load_for(self.ctx.store().pool(), persona, DEFAULT_PERSON)
            .await
            .map_err(HandlerError::transient)?;
        let tau = self.ctx.config.ghost.memory.interest_tau_secs;
        let mut sources = FocusSources::from_memory(&memory, now, tau);
        sources.long_mood = long_mood;
        sources.recent_vad = recent_vad_average(self.ctx.store().pool(), persona, now)
            .await
            .map_err(|e| warn!(error = %e, "no recent affect for the deliberation"))
            .ok();
        sources.intents = self.intents(persona).await?;
        sources.recent_events = turns
            .into_iter()
            .map(|t| RecentEvent {
                role: t.role,
                speaker: t.speaker,
                text: t.text,
            })
            .collect();
        Ok(sources)
    }

    /// The persona's recent intents (seed 001 B-3): its latest decisions to act, from its
    /// autonomy stream, each `pending` until its result is recorded, then that result's
    /// status. Newest last; at most four times the focus's item count is read.
    async fn intents(&self, persona: &str) -> Result<Vec<Intent>, HandlerError> {
        let limit = 4 * self.ctx.config.ghost.autonomy.max_focus_items.max(1) as i64;
        let events = self
            .ctx
            .store()
            .read_stream_tail_of_types(
                &autonomy_stream(persona),
                &[ActionDecided::EVENT_TYPE, ActionResultRecorded::EVENT_TYPE],
                uuid::Uuid::nil(),
                limit,
            )
            .await
            .map_err(HandlerError::transient)?;
        let mut intents: Vec<Intent> = Vec::new();
        for e in &events {
            if e.event_type == ActionDecided::EVENT_TYPE {
                let Ok(d) = e.decode::<ActionDecided>() else {
                    continue;
                };
                if d.decision.decision != DecisionKind::DoAction {
                    continue;
                }
                let topic = d.decision.persona_influence.get("topic");
                intents.push(Intent {
                    id: e.event_id.to_string(),
                    action_type: d.decision.action_type.clone(),
                    capability: d.decision.capability.clone(),
                    reason: d.decision.reason.clone(),
                    topic: topic.and_then(|t| t.as_str()).map(str::to_owned),
                    status: "pending".into(),
                });
            } else if let Ok(r) = e.decode::<ActionResultRecorded>() {
                // (the only other type read)
                let id = r.decision_event_id.to_string();
                if let Some(intent) = intents.iter_mut().find(|i| i.id == id) {
                    intent.status = serde_json::to_value(r.result.result_status)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_else(|| "done".into());
                }
            }
        }
        Ok(intents)
    }

    /// Why `tick` is skipped without a model call ([`gate`]), if it is.
    async fn skip_reason(
        &self,
        event: &RecordedEvent,
        tick: &AutonomyTickRequested,
    ) -> Result<Option<SkipReason>, HandlerError> {
        if tick.trigger != TickTrigger::Schedule {
            return Ok(None);
        }
        let config = &self.ctx.config.ghost;
        // The conversation's person is the console's user, as the deliberation's memory.
        // Their own zone and quiet hours (set in a conversation) before the configuration's.
        let reminders = &config.reminders;
        let pool = self.ctx.store().pool();
        let zone = projection::zone_of(pool, reminders, DEFAULT_PERSON)
            .await
            .map_err(HandlerError::transient)?;
        let Ok(zone) = parse_zone(&zone) else {
            return Ok(None);
        };
        let quiet_hours = own_settings::quiet_hours_of(pool, reminders, DEFAULT_PERSON)
            .await
            .map_err(HandlerError::transient)?;
        let scope = GateScope {
            persona: &tick.persona,
            session_id: &config.autonomy.session_id,
            zone,
            quiet_hours,
        };
        let facts = gate::read_facts(self.ctx.store().pool(), &scope, event.recorded_at)
            .await
            .map_err(HandlerError::transient)?;
        Ok(gate::skip_reason(
            tick.trigger,
            &facts,
            config.autonomy.max_messages_per_day,
        ))
    }

    /// Records `tick` as skipped for `reason` (once).
    async fn skip(
        &self,
        event: &RecordedEvent,
        tick: &AutonomyTickRequested,
        reason: SkipReason,
    ) -> Result<(), HandlerError> {
        let skipped = AutonomyTickSkipped {
            persona: tick.persona.clone(),
            tick_event_id: event.event_id,
            reason,
        };
        let new = NewEvent::caused_by(event, steps::SKIPPED, &skipped, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        if !self.append_outcome(event, new).await?.duplicate {
            metrics::autonomy_skipped(reason.as_str());
        }
        Ok(())
    }

    /// Appends a tick's one outcome on its stream (a duplicate when stored before).
    async fn append_outcome(
        &self,
        tick: &RecordedEvent,
        outcome: NewEvent,
    ) -> Result<AppendOutcome, HandlerError> {
        self.ctx
            .log
            .append(&tick.stream, ExpectedVersion::Any, &[outcome])
            .await
            .map_err(HandlerError::transient)
    }

    /// The capabilities this deployment can run (`agent_delegate` needs a CLI agent).
    fn available(&self) -> Vec<&'static str> {
        let agent = self.ctx.config.ghost.autonomy.cli_agent.is_some();
        CAPABILITIES
            .iter()
            .copied()
            .filter(|c| *c != AGENT_DELEGATE || agent)
            .collect()
    }

    /// The user message: persona fields, the ordered input and the capabilities.
    fn request(&self, persona: &str, sources: &FocusSources) -> String {
        let settings = &self.ctx.config.ghost.autonomy;
        let fields = self
            .ctx
            .config
            .characters
            .get(persona)
            .map(PersonaFields::of);
        json!({
            "persona": fields,
            "deliberation_input": build_input(sources, settings.max_focus_items, settings.recent_events),
            "capabilities": self.available(),
        })
        .to_string()
    }
}

#[async_trait::async_trait]
impl EventHandler for Deliberator {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let tick: AutonomyTickRequested = event.decode().map_err(HandlerError::permanent)?;
        if self
            .ctx
            .outcome_stored(&event, &[steps::DECIDED, steps::DROPPED, steps::SKIPPED])
            .await?
        {
            return Ok(());
        }
        if let Some(reason) = self.skip_reason(&event, &tick).await? {
            return self.skip(&event, &tick, reason).await;
        }
        // Weights decay to the tick's own time, not to whenever it is handled.
        let now = event.recorded_at.timestamp_micros() as f64 / 1e6;
        let sources = self.collect(&tick.persona, now).await?;
        let messages = [
            ChatMessage::system(self.system.clone()),
            ChatMessage::user(self.request(&tick.persona, &sources)),
        ];
        // Nobody waits for a deliberation: it yields to replies on the model. A broken
        // answer drops this tick's decision (recorded once), as any invalid decision does.
        let contract = contracts::decision::contract(&self.available());
        let call = Call::background().shaped(&contract);
        let mut raw = String::new();
        let outcome = match self.llm.complete(&messages, call).await {
            Ok(text) => {
                let decided = parse_decision(&text);
                let verdict = decided.as_ref().map(|_| ()).map_err(|_| "invalid_decision");
                contract.record(self.llm.role(), &text, verdict);
                raw = ModelAnswerRejected::excerpt(&text);
                decided.map_err(|errors| (DropReason::InvalidDecision, errors))
            }
            Err(e) => Err((DropReason::ModelError, vec![e.to_string()])),
        };
        let counted = Counted::of(&outcome);
        let new = match outcome {
            Ok(decision) => NewEvent::caused_by(
                &event,
                steps::DECIDED,
                &ActionDecided {
                    persona: tick.persona.clone(),
                    tick_event_id: event.event_id,
                    decision,
                },
                self.ctx.service,
            ),
            Err((reason, errors)) => {
                warn!(tick = %event.event_id, ?reason, ?errors, "autonomy decision dropped; nothing runs");
                NewEvent::caused_by(
                    &event,
                    steps::DROPPED,
                    &ActionDropped {
                        persona: tick.persona.clone(),
                        tick_event_id: event.event_id,
                        reason,
                        errors,
                        raw,
                    },
                    self.ctx.service,
                )
            }
        };
        let new = new.map_err(HandlerError::permanent)?;
        let appended = self.append_outcome(&event, new).await?;
        if !appended.duplicate {
            counted.record();
            for e in &appended.events {
                publish_activity_of(self.ctx.bus(), e).await;
            }
        }
        Ok(())
    }
}

/// What the decisions metric counts of one deliberation (taken before the outcome is
/// consumed, counted once the event is stored for the first time).
enum Counted {
    Decided(&'static str, String),
    Dropped(&'static str),
}

impl Counted {
    fn of(outcome: &Result<ActionDecision, (DropReason, Vec<String>)>) -> Self {
        match outcome {
            Ok(d) => Counted::Decided(
                match d.decision {
                    DecisionKind::DoAction => "do_action",
                    DecisionKind::Skip => "skip",
                },
                d.capability.clone(),
            ),
            Err((DropReason::InvalidDecision, _)) => Counted::Dropped("invalid_decision"),
            Err((DropReason::ModelError, _)) => Counted::Dropped("model_error"),
        }
    }

    fn record(&self) {
        match self {
            Counted::Decided(decision, capability) => {
                metrics::autonomy_decided(decision, capability)
            }
            Counted::Dropped(reason) => metrics::autonomy_dropped(reason),
        }
    }
}

/// The event types this handler consumes.
pub const CONSUMES: &str = AutonomyTickRequested::EVENT_TYPE;
