//! One character's turn, seed 003's graph from `prepare_context` to `end_or_continue`:
//!
//! ```text
//! prepare_context → update_status_thinking → call_llm (timeout) ─ok→ postprocess → extract_next
//!                                   └─error/timeout→ choose_next_fallback ─┐   │ (no usable tag,
//! extract_next ─(decided)→ end_or_continue ←──────────────────────────────┘   │  self-nominated)
//!              └──────────→ choose_next_fallback ──→ end_or_continue ←────────┘
//! end_or_continue → next StageTurnRequested (spoken_set grown) | StageEnded (→ persist_memory)
//! stored → send_message (a line) → update_status_idle
//! ```
//!
//! The turn's outcome, the decision and the continuation are appended in one transaction,
//! with ids derived from the `StageTurnRequested` that caused them: a redelivery or a
//! successor process finds them and speaks nothing twice.

use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};
use uuid::Uuid;

use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::envelope::{EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{
    NextSpeakerChosen, StageEndReason, StageEnded, StageMemorySaved, StageSpoke, StageTurnFailed,
    StageTurnRequested,
};
use ghost_shared::ids::derive_event_id;
use ghost_shared::llm::{Call, ChatMessage};
use ghost_shared::service::ServiceContext;
use ghost_shared::stage_signal::StageSignal;

use super::cast::{Cast, Member};
use super::node::{self, Node};
use super::signal::announce;
use super::view::StageView;
use super::StageLog;
use crate::next_speaker::{resolve_in_run, NextSpeakerDecision, Reason};

/// Step names: a turn's events derive their ids from the request and these. The outcome
/// (spoke or failed) and the continuation (next turn or end) share one id each whatever
/// their content, so two racing attempts can never both be stored.
const STEP_OUTCOME: &str = "stage.outcome";
const STEP_NEXT: &str = "stage.next";
const STEP_THEN: &str = "stage.then";

/// Why a model call produced nothing to say.
#[derive(Debug)]
struct CallFailure {
    code: &'static str,
    message: String,
}

/// Handles `StageTurnRequested`.
pub struct TurnHandler {
    ctx: ServiceContext,
    log: StageLog,
    cast: Arc<Cast>,
}

impl TurnHandler {
    /// A handler over the shared cast.
    pub fn new(ctx: ServiceContext, log: StageLog, cast: Arc<Cast>) -> Self {
        Self { ctx, log, cast }
    }

    /// `call_llm` with the stage's timeout; never longer, never a panic.
    async fn call(
        &self,
        member: &Member,
        view: &StageView,
        run: Uuid,
    ) -> Result<String, CallFailure> {
        let transcript = view.transcript_for(&member.character.display_name);
        node::model_exchange("REQ", run, &member.character.name, &transcript);
        let messages = [
            ChatMessage::system(member.system_prompt.clone()),
            ChatMessage::user(transcript),
        ];
        let stage = &self.ctx.config.ghost.stage;
        let limit: Duration = stage.model_timeout();
        // A line has a budget (the model stops there) and ends at a repetition loop.
        let call = Call::interactive().with_budget(stage.reply_max_tokens);
        match tokio::time::timeout(limit, member.llm.write(&messages, call)).await {
            Ok(Ok(written)) => {
                let text = written.text;
                node::model_exchange("RESP", run, &member.character.name, &text);
                Ok(text)
            }
            Ok(Err(e)) => Err(CallFailure {
                code: e.code(),
                message: e.to_string(),
            }),
            Err(_) => Err(CallFailure {
                code: "llm_timeout",
                message: format!("no reply within {:.1} s", limit.as_secs_f64()),
            }),
        }
    }

    /// The summaries earlier runs of this stage saved (`persist_memory`), oldest first.
    async fn memories(
        &self,
        event: &RecordedEvent,
        req: &StageTurnRequested,
    ) -> Result<Vec<String>, HandlerError> {
        let runs = self.ctx.config.ghost.stage.memory_runs;
        if runs == 0 {
            return Ok(Vec::new());
        }
        let saved = self
            .ctx
            .store()
            .read_stream_tail_of_type(
                &event.stream,
                StageMemorySaved::EVENT_TYPE,
                event.version,
                runs as i64,
            )
            .await
            .map_err(HandlerError::transient)?;
        Ok(saved
            .iter()
            .filter_map(|e| e.decode::<StageMemorySaved>().ok())
            .filter(|m| m.input_id != req.input_id)
            .map(|m| m.summary)
            .collect())
    }

    /// Ends the run without a turn (a client asked to stop).
    async fn stop(
        &self,
        event: &RecordedEvent,
        req: &StageTurnRequested,
    ) -> Result<(), HandlerError> {
        let ended = StageEnded {
            stage_id: req.stage_id.clone(),
            input_id: req.input_id,
            turns: req.turn_index,
            reason: StageEndReason::Stopped,
        };
        let e = NewEvent::caused_by(event, STEP_THEN, &ended, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        let version = self.log.append_steps(&event.stream, vec![e]).await?;
        announce(
            self.ctx.bus(),
            &req.stage_id,
            &StageSignal::Appended { version },
        )
        .await;
        Ok(())
    }
}

#[async_trait::async_trait]
impl EventHandler for TurnHandler {
    /// A turn given up on (the store kept failing) ends its run, so the stage does not stay
    /// busy; the end shares the continuation's id, so a late success cannot also continue.
    async fn on_dead_letter(&self, event: Option<&RecordedEvent>, reason: &str) {
        let Some(event) = event else { return };
        let Ok(req) = event.decode::<StageTurnRequested>() else {
            return;
        };
        warn!(target: "operation", stage_id = %req.stage_id, turn = req.turn_index, %reason, "turn abandoned; ending the run");
        let ended = StageEnded {
            stage_id: req.stage_id.clone(),
            input_id: req.input_id,
            turns: req.turn_index,
            reason: StageEndReason::Error,
        };
        if let Ok(e) = NewEvent::caused_by(event, STEP_THEN, &ended, self.ctx.service) {
            if let Err(e) = self.log.append_steps(&event.stream, vec![e]).await {
                warn!(error = %e, "could not end the abandoned run");
            }
        }
    }

    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let req: StageTurnRequested = event.decode().map_err(HandlerError::permanent)?;
        let store = self.ctx.store();
        let settings = &self.ctx.config.ghost.stage;
        // The tail holds what the view reads (lines, stop requests) and this request's
        // continuation if it is stored; the memories are read beside it.
        let then_id = derive_event_id(event.event_id, STEP_THEN);
        let (tail, memories) = tokio::join!(
            store.read_stream_tail_of_types(
                &event.stream,
                StageView::EVENT_TYPES,
                then_id,
                settings.history_lines as i64 + 16,
            ),
            self.memories(&event, &req)
        );
        let tail = tail.map_err(HandlerError::transient)?;
        // Already taken? The tail answers when it reaches back to this request; else ask.
        let done = match tail.iter().find(|e| e.event_id == then_id) {
            Some(done) => Some(done.version),
            None if tail.first().is_some_and(|e| e.version <= event.version) => None,
            None => store
                .get(then_id)
                .await
                .map_err(HandlerError::transient)?
                .map(|e| e.version),
        };
        if let Some(version) = done {
            info!(stage_id = %req.stage_id, turn = req.turn_index, "turn already taken; not speaking again");
            announce(
                self.ctx.bus(),
                &req.stage_id,
                &StageSignal::Appended { version },
            )
            .await;
            return Ok(());
        }

        // prepare_context: the recent lines, and what earlier runs saved to memory.
        let run = event.metadata.correlation_id;
        let passed = |n: Node| node::passed(n, run, &req.stage_id, req.turn_index);
        let mut view = StageView::from_tail(&tail, req.input_id, settings.history_lines);
        view.memory = memories?;
        passed(Node::PrepareContext);
        if view.stopped {
            info!(stage_id = %req.stage_id, turn = req.turn_index, "stop requested; ending the run");
            return self.stop(&event, &req).await;
        }

        // update_status_thinking → call_llm → postprocess_response | choose_next_fallback
        let member = self.cast.members.get(&req.speaker);
        let called = match member {
            Some(member) => {
                announce(
                    self.ctx.bus(),
                    &req.stage_id,
                    &StageSignal::Thinking {
                        speaker: req.speaker.clone(),
                    },
                )
                .await;
                passed(Node::UpdateStatusThinking);
                passed(Node::CallLlm);
                self.call(member, &view, run).await
            }
            None => Err(CallFailure {
                code: "unknown_speaker",
                message: format!(
                    "{} is not on the stage (configuration changed?)",
                    req.speaker
                ),
            }),
        };
        let service = self.ctx.service;
        let (outcome, decision) = match (called, member) {
            (Ok(raw), Some(member)) => {
                let text = self.cast.postprocess.apply(&raw);
                passed(Node::PostprocessResponse);
                let decision = resolve_in_run(
                    &raw,
                    &req.speaker,
                    &req.spoken_set,
                    &self.cast.registry,
                    &self.cast.policy,
                );
                passed(Node::ExtractNext);
                // Undecided or self-nominated: the graph's edge goes through the fallback.
                if by_fallback(decision.reason) {
                    passed(Node::ChooseNextFallback);
                }
                let spoke = StageSpoke {
                    stage_id: req.stage_id.clone(),
                    input_id: req.input_id,
                    turn_index: req.turn_index,
                    speaker: req.speaker.clone(),
                    display_name: member.character.display_name.clone(),
                    text,
                    raw_text: raw,
                };
                let e = NewEvent::caused_by(&event, STEP_OUTCOME, &spoke, service)
                    .map_err(HandlerError::permanent)?;
                (e, decision)
            }
            (result, _) => {
                let failure = result.err().unwrap_or(CallFailure {
                    code: "unknown_speaker",
                    message: format!("{} is not on the stage", req.speaker),
                });
                warn!(
                    target: "operation",
                    stage_id = %req.stage_id,
                    speaker = %req.speaker,
                    turn = req.turn_index,
                    code = failure.code,
                    error = %failure.message,
                    "character did not answer; the fallback chooses who is next"
                );
                // choose_next_fallback: no text, so no tag; the policy's fallback decides.
                let decision = resolve_in_run(
                    "",
                    &req.speaker,
                    &req.spoken_set,
                    &self.cast.registry,
                    &self.cast.policy,
                );
                passed(Node::ChooseNextFallback);
                let failed = StageTurnFailed {
                    stage_id: req.stage_id.clone(),
                    input_id: req.input_id,
                    turn_index: req.turn_index,
                    speaker: req.speaker.clone(),
                    code: failure.code.into(),
                    message: failure.message,
                };
                let e = NewEvent::caused_by(&event, STEP_OUTCOME, &failed, service)
                    .map_err(HandlerError::permanent)?;
                (e, decision)
            }
        };

        // extract_next → end_or_continue
        let chosen = chosen_event(&req, &decision);
        let chosen = NewEvent::caused_by(&event, STEP_NEXT, &chosen, service)
            .map_err(HandlerError::permanent)?;
        let next_turn = req.turn_index + 1;
        let spoke = outcome.event_type == StageSpoke::EVENT_TYPE;
        let then = match &decision.next_id {
            Some(next) if next_turn < settings.auto_loops => {
                // A failed turn said nothing: its speaker has not spoken.
                let mut spoken_set = req.spoken_set.clone();
                if spoke {
                    spoken_set.insert(req.speaker.clone());
                }
                let request = StageTurnRequested {
                    stage_id: req.stage_id.clone(),
                    input_id: req.input_id,
                    turn_index: next_turn,
                    speaker: next.clone(),
                    spoken_set,
                };
                NewEvent::caused_by(&event, STEP_THEN, &request, service)
            }
            next => {
                let ended = StageEnded {
                    stage_id: req.stage_id.clone(),
                    input_id: req.input_id,
                    turns: next_turn,
                    reason: if next.is_some() {
                        StageEndReason::Cap
                    } else {
                        StageEndReason::None
                    },
                };
                NewEvent::caused_by(&event, STEP_THEN, &ended, service)
            }
        }
        .map_err(HandlerError::permanent)?;
        passed(Node::EndOrContinue);

        ghost_shared::fault::point("stage.before_append");
        let version = self
            .log
            .append_steps(&event.stream, vec![outcome, chosen, then])
            .await?;
        ghost_shared::fault::point("stage.after_append");
        ghost_shared::metrics::stage_turn(spoke);
        if spoke {
            passed(Node::SendMessage);
        }
        // The watchers' idle frame is made from the stored outcome, spoken or failed.
        passed(Node::UpdateStatusIdle);
        ghost_shared::fault::point(&format!("stage.after_append.{}", req.turn_index));
        announce(
            self.ctx.bus(),
            &req.stage_id,
            &StageSignal::Appended { version },
        )
        .await;
        Ok(())
    }
}

/// Whether `reason` is the fallback's (no usable nomination), not the tag's.
fn by_fallback(reason: Reason) -> bool {
    matches!(reason, Reason::RoundRobin | Reason::Random | Reason::None)
}

/// The decision as an event.
fn chosen_event(req: &StageTurnRequested, decision: &NextSpeakerDecision) -> NextSpeakerChosen {
    NextSpeakerChosen {
        stage_id: req.stage_id.clone(),
        input_id: req.input_id,
        turn_index: req.turn_index,
        current: req.speaker.clone(),
        next_id: decision.next_id.clone(),
        reason: decision.reason,
        extracted: decision.extracted.clone(),
        normalized: decision.normalized.clone(),
    }
}
