//! Paused work and the user's answer (seed 002): when the loop controller asks the user, the
//! turn records `ConfirmationPending` (route, task, work so far, questions). The user's next
//! message in the conversation is checked, as a structured output, for whether it answers:
//! an answer resumes the paused work on its route with it (`RouteSource::Resumed`); a new
//! topic, a route command or an unusable check drops the paused work (logged,
//! `ConfirmationResolved`) and the message is routed as any other.

use ghost_shared::bus::HandlerError;
use ghost_shared::contracts;
use ghost_shared::contracts::confirmation::ConfirmationAnswer;
use ghost_shared::envelope::{NewEvent, RecordedEvent};
use ghost_shared::events::{
    ConfirmationCheckRequested, ConfirmationChecked, ConfirmationOutcome, ConfirmationPending,
    ConfirmationResolved,
};
use tracing::{info, warn};
use uuid::Uuid;

use super::loops::LoopContext;
use super::turn::Turn;
use super::{Router, STEP_CONFIRM, STEP_RESOLVE};
use crate::routing::{FirstOutcome, Route, RouteDecision, RouteSource, WorkerResult};

/// The paused work of an `AskUser` decision on `route`.
pub(crate) fn pending_of(
    cx: &LoopContext,
    route: Route,
    result: Option<&WorkerResult>,
    questions: &[String],
) -> ConfirmationPending {
    ConfirmationPending {
        session_id: cx.turn.message.session_id.clone(),
        user_event_id: cx.turn.id(),
        route,
        task: cx.this.task.clone(),
        result: result.map(|r| r.result.clone()).unwrap_or_default(),
        questions: questions.to_vec(),
    }
}

impl Router {
    /// A message arriving while work waits for the user: a route command drops the work
    /// (false: route the message now); anything else is checked (true: the check's outcome
    /// carries the message on).
    pub(crate) async fn check_pending(
        &self,
        event: &RecordedEvent,
        turn: &Turn,
        pending_id: Uuid,
        pending: &ConfirmationPending,
    ) -> Result<bool, HandlerError> {
        let (_, stage) = self.first_stage_of(turn);
        match &stage.outcome {
            // `/local` alone answers nothing and drops nothing.
            FirstOutcome::FlagOnly(_) => Ok(false),
            FirstOutcome::Decided(d) if d.source == RouteSource::Explicit => {
                self.resolve(
                    event,
                    turn,
                    pending_id,
                    ConfirmationOutcome::Dropped,
                    "a route command",
                )
                .await?;
                Ok(false)
            }
            _ => {
                let request = ConfirmationCheckRequested {
                    session_id: turn.message.session_id.clone(),
                    user_event_id: turn.id(),
                    pending_event_id: pending_id,
                    questions: pending.questions.clone(),
                    result: pending.result.clone(),
                    text: turn.message.text.clone(),
                };
                let e = NewEvent::caused_by(event, STEP_CONFIRM, &request, self.ctx.service)
                    .map_err(HandlerError::permanent)?;
                self.append(&turn.message.session_id, &[e]).await?;
                Ok(true)
            }
        }
    }

    /// `ConfirmationChecked`: resume the paused work with the answer, or drop it and route
    /// the message as any other.
    pub(crate) async fn on_confirmation_checked(
        &self,
        event: &RecordedEvent,
        checked: ConfirmationChecked,
    ) -> Result<(), HandlerError> {
        let turn = self.load_turn(checked.user_event_id).await?;
        let pending = self
            .ctx
            .store()
            .get(checked.pending_event_id)
            .await
            .map_err(HandlerError::transient)?
            .ok_or_else(|| {
                HandlerError::permanent("confirmation checked without its pending work")
            })?
            .decode::<ConfirmationPending>()
            .map_err(HandlerError::permanent)?;
        let answer = match (&checked.raw, &checked.error) {
            (Some(raw), _) => {
                let parsed = ConfirmationAnswer::parse(raw);
                let verdict = parsed.as_ref().map(|_| ()).map_err(|_| "unparsable");
                contracts::confirmation::contract().record("worker", raw, verdict);
                parsed
            }
            (None, error) => Err(error.clone().unwrap_or_else(|| "no answer".into())),
        };
        let (outcome, reason) = match &answer {
            Ok(a) if a.answers_pending && self.may_resume(&turn, &pending) => {
                (ConfirmationOutcome::Resumed, a.reason.clone())
            }
            Ok(a) if a.answers_pending => (
                ConfirmationOutcome::Dropped,
                "the paused work needs the cloud and the conversation is /local".to_owned(),
            ),
            Ok(a) => (ConfirmationOutcome::Dropped, a.reason.clone()),
            Err(why) => (
                ConfirmationOutcome::Dropped,
                format!("check unusable: {why}"),
            ),
        };
        self.resolve(event, &turn, checked.pending_event_id, outcome, &reason)
            .await?;
        let message = &turn.event;
        if outcome == ConfirmationOutcome::Dropped {
            return self.route_message(message, &turn).await;
        }
        let (mode, stage) = self.first_stage_of(&turn);
        let decision = RouteDecision::new(pending.route, RouteSource::Resumed, Vec::new());
        self.finalize(message, &turn, &stage, decision, mode, Some(&pending))
            .await
    }

    /// Whether paused work may go on now: work for the cloud not in a `/local` conversation.
    fn may_resume(&self, turn: &Turn, pending: &ConfirmationPending) -> bool {
        !(pending.route.uses_cloud() && turn.session.local_only)
    }

    /// Records how the paused work ended (once: its id derives from `cause`).
    async fn resolve(
        &self,
        cause: &RecordedEvent,
        turn: &Turn,
        pending_event_id: Uuid,
        outcome: ConfirmationOutcome,
        reason: &str,
    ) -> Result<(), HandlerError> {
        match outcome {
            ConfirmationOutcome::Resumed => {
                info!(%reason, "the user answered; the paused work resumes")
            }
            ConfirmationOutcome::Dropped => {
                warn!(%reason, "paused work dropped: the message is a new topic")
            }
        }
        let resolved = ConfirmationResolved {
            session_id: turn.message.session_id.clone(),
            user_event_id: turn.id(),
            pending_event_id,
            outcome,
            reason: reason.to_owned(),
        };
        let e = NewEvent::caused_by(cause, STEP_RESOLVE, &resolved, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        self.append(&turn.message.session_id, &[e]).await
    }
}
