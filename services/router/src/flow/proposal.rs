//! The persona's proposal before a reply (seed 002): the persona judged a finished result
//! and wrote `PersonaProposed`; the loop controller validates it like the classifier's
//! output and decides within its limits. An invalid proposal is ignored and logged: the
//! reply goes ahead as if the goal had been reached.

use ghost_shared::bus::HandlerError;
use ghost_shared::contracts;
use ghost_shared::envelope::{NewEvent, RecordedEvent};
use ghost_shared::events::{PersonaProposed, WorkerCompleted};
use tracing::{info, warn};

use super::loops::{loop_decided, outcome_of};
use super::{Router, STEP_LOOP};
use crate::routing::{
    decide_on_proposal, parse_proposal, LoopDecision, PersonaVerdict, ProposalError,
};

impl Router {
    /// `PersonaProposed`: one loop-controller decision on the persona's proposal.
    pub(crate) async fn on_persona_proposal(
        &self,
        event: &RecordedEvent,
        proposed: PersonaProposed,
    ) -> Result<(), HandlerError> {
        // The result the persona judged: the last completed run of this message.
        let turn = self.load_turn(proposed.user_event_id).await?;
        let completed = self
            .turn_events(&turn)
            .await?
            .into_iter()
            .rfind(|e| e.is::<WorkerCompleted>())
            .ok_or_else(|| HandlerError::permanent("proposal without a completed run"))?;
        let run = outcome_of(&completed)?;
        let Ok(result) = &run.result else {
            return Err(HandlerError::permanent("proposal about a failed run"));
        };
        let cx = self
            .loop_context(proposed.user_event_id, completed.metadata.causation_id)
            .await?;
        let route = run.route;
        let verdict = match &proposed.call_failed {
            Some(why) => Err(ProposalError::CallFailed(why.clone())),
            None => {
                let verdict = parse_proposal(&proposed.raw);
                let kind = verdict.as_ref().map(|_| ()).map_err(ProposalError::kind);
                contracts::proposal::contract().record("persona", &proposed.raw, kind);
                verdict
            }
        };
        let state = self.loop_state(&cx, route, event);
        let (decision, why, logged_as) = match &verdict {
            Ok(PersonaVerdict::Propose { step, reason }) => (
                decide_on_proposal(&state, &self.config.loop_policy, *step),
                Some(reason.as_str()),
                verdict
                    .as_ref()
                    .map(PersonaVerdict::log_line)
                    .unwrap_or_default(),
            ),
            Ok(PersonaVerdict::GoalReached) => {
                (LoopDecision::Render, None, "goal_reached".to_owned())
            }
            Err(e) => {
                warn!(%route, kind = e.kind(), error = %e, "persona proposal ignored");
                (
                    LoopDecision::Render,
                    None,
                    format!("invalid {}: {e}", e.kind()),
                )
            }
        };
        info!(%route, proposal = %logged_as, decision = ?decision, "persona proposal decided");
        let mut logged = loop_decided(&cx, route, &decision, Some(result), None);
        logged.persona_proposal = Some(logged_as);
        let next = self
            .next_step(
                event,
                &cx,
                route,
                &decision,
                Ok(result),
                why,
                false,
                &run.sources,
            )
            .await?;
        let logged = NewEvent::caused_by(event, STEP_LOOP, &logged, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        let events: Vec<NewEvent> = std::iter::once(logged).chain(next).collect();
        self.append(&cx.turn.message.session_id, &events).await
    }
}
