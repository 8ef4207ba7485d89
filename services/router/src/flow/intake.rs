//! A user message: first stage (command > rule > classifier or Kuro), then the decision is
//! recorded and the work (or the reply) is requested.

use ghost_shared::bus::HandlerError;
use ghost_shared::contracts;
use ghost_shared::envelope::{NewEvent, RecordedEvent};
use ghost_shared::events::{
    memory_stream, ClassifierReplied, ClassifyRequested, ConfirmationPending, Misclassification,
    RenderRequested, RouteDecided, SummarizeRequested, WorkRequested,
};
use ghost_shared::store::ExpectedVersion;
use tracing::info;

use super::turn::Turn;
use super::{Router, STEP_CLASSIFY, STEP_NEXT, STEP_ROUTE, STEP_SUMMARIZE};
use crate::routing::classifier::parse_classifier_output;
use crate::routing::{
    call_failed, declaration, first_stage_in, Command, DecisionOrigin, EntryMode, FirstOutcome,
    FirstStage, Notice, Route, RouteDecision, RouteSource,
};

/// How the entry mode is logged: the kuro mode as the seed's `line_forced_chat`.
fn entry_name(mode: EntryMode) -> &'static str {
    match mode {
        EntryMode::Router => "router",
        EntryMode::Kuro => "line_forced_chat",
    }
}

impl Router {
    /// `UserMessageReceived`: decide at once, or ask the classifier / Kuro once.
    pub(crate) async fn on_user_message(&self, event: &RecordedEvent) -> Result<(), HandlerError> {
        let turn = self.turn_of(event).await?;
        if turn.checking {
            return Ok(()); // redelivered: the check's outcome carries it on
        }
        self.request_summary_if_due(event, &turn).await?;
        // `/remind` is answered at once, before any paused work claims the message.
        if self.remind_if_asked(event, &turn).await? {
            return Ok(());
        }
        if let Some((pending_id, pending)) = &turn.pending {
            if self
                .check_pending(event, &turn, *pending_id, pending)
                .await?
            {
                return Ok(());
            }
        }
        self.route_message(event, &turn).await
    }

    /// The first stage of `turn`'s message as its channel enters it.
    pub(crate) fn first_stage_of<'t>(&self, turn: &'t Turn) -> (EntryMode, FirstStage<'t>) {
        let mode = self.entry_mode(turn.channel());
        let stage = first_stage_in(
            mode,
            &turn.message.text,
            &turn.session,
            &self.config.dictionary,
        );
        (mode, stage)
    }

    /// The first stage of a message and what follows it (no paused work to resume).
    pub(crate) async fn route_message(
        &self,
        event: &RecordedEvent,
        turn: &Turn,
    ) -> Result<(), HandlerError> {
        let (mode, stage) = self.first_stage_of(turn);
        match &stage.outcome {
            FirstOutcome::FlagOnly(_) => {
                let decision = RouteDecision::new(Route::Chat, RouteSource::Explicit, Vec::new());
                self.finalize(event, turn, &stage, decision, mode, None)
                    .await
            }
            FirstOutcome::ClassifierNeeded => {
                self.request_decision(event, turn, &stage, DecisionOrigin::Classifier)
                    .await
            }
            FirstOutcome::Decided(d) if d.source == RouteSource::LineForcedChat => {
                info!(
                    channel = turn.channel(),
                    "line_forced_chat: Kuro decides on delegation"
                );
                self.request_decision(event, turn, &stage, DecisionOrigin::Kuro)
                    .await
            }
            FirstOutcome::Decided(d) => {
                let decision = d.clone();
                self.finalize(event, turn, &stage, decision, mode, None)
                    .await
            }
        }
    }

    /// Asks for the one structured route decision of this message (its id derives from the
    /// message: a redelivery asks nothing new).
    async fn request_decision(
        &self,
        event: &RecordedEvent,
        turn: &Turn,
        stage: &FirstStage<'_>,
        mode: DecisionOrigin,
    ) -> Result<(), HandlerError> {
        let mut context = if mode == DecisionOrigin::Kuro {
            // Kuro decides on the local model.
            self.conversation_context(turn, false).await?
        } else {
            String::new()
        };
        // Whether this message rejects the previous routed answer is for the model to say.
        if let Some(previous) = self.previous_decision(turn).await? {
            context.push_str(&format!(
                "[the previous message was answered on route {}]\n",
                previous.route
            ));
        }
        let request = ClassifyRequested {
            session_id: turn.message.session_id.clone(),
            user_event_id: turn.id(),
            mode,
            text: stage.text.to_owned(),
            context,
        };
        let e = NewEvent::caused_by(event, STEP_CLASSIFY, &request, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        self.append(&turn.message.session_id, &[e]).await
    }

    /// `ClassifierReplied`: validate and gate the reply (the same way for both origins),
    /// then proceed as for any decision.
    pub(crate) async fn on_classifier_reply(
        &self,
        event: &RecordedEvent,
        reply: ClassifierReplied,
    ) -> Result<(), HandlerError> {
        let turn = self.load_turn(reply.user_event_id).await?;
        let kuro = reply.mode == DecisionOrigin::Kuro;
        let mode = if kuro {
            EntryMode::Kuro
        } else {
            EntryMode::Router
        };
        let stage = first_stage_in(
            mode,
            &turn.message.text,
            &turn.session,
            &self.config.dictionary,
        );
        let (dict, gates) = (&self.config.dictionary, &self.config.gates);
        if let Some(raw) = reply.raw.as_deref() {
            let (contract, role) = if kuro {
                (contracts::route_decision::delegation(), "persona")
            } else {
                (contracts::route_decision::classifier(), "worker")
            };
            let verdict = parse_classifier_output(raw)
                .map(|_| ())
                .map_err(|e| e.kind());
            contract.record(role, raw, verdict);
        }
        let failure = reply.error.clone().unwrap_or_else(|| "no reply".to_owned());
        let decision = match (kuro, reply.raw.as_deref()) {
            (true, Some(raw)) => stage.with_kuro_decision(raw, dict, gates),
            (true, None) => call_failed(DecisionOrigin::Kuro, failure),
            (false, Some(raw)) => stage.with_classifier_reply(raw, dict, gates),
            (false, None) => stage.with_classifier_failure(&failure),
        };
        self.finalize(event, &turn, &stage, decision, mode, None)
            .await
    }

    /// Records the decision (`RouteDecided`, with the declaration when the primary route
    /// changed) and requests what follows: the persona's reply for CHAT, else the first
    /// worker run.
    ///
    /// `resumed` is the paused work this message answered: its task goes on with the answer.
    pub(crate) async fn finalize(
        &self,
        cause: &RecordedEvent,
        turn: &Turn,
        stage: &FirstStage<'_>,
        decision: RouteDecision,
        mode: EntryMode,
        resumed: Option<&ConfirmationPending>,
    ) -> Result<(), HandlerError> {
        let flag_only = match stage.outcome {
            FirstOutcome::FlagOnly(flag) => Some(flag),
            _ => None,
        };
        let primary = flag_only.is_none();
        let line = if primary {
            declaration(turn.session.last_primary_route, decision.route).map(str::to_owned)
        } else {
            None
        };
        let notice = match (flag_only, decision.notice) {
            (_, Some(Notice::CloudRequired)) => Some(Notice::CloudRequired),
            (Some(Command::Local), _) => Some(Notice::LocalOn),
            (Some(Command::Cloud), _) => Some(Notice::LocalOff),
            _ => None,
        };
        info!(
            route = %decision.route,
            source = %decision.source,
            entry = entry_name(mode),
            local_only = stage.local_only,
            declared = line.is_some(),
            "route decided"
        );
        let corrects = if primary {
            self.misclassification(turn, &decision).await?
        } else {
            None
        };
        if let Some(c) = &corrects {
            info!(previous = %c.route, now = %decision.route, signal = %c.signal, "previous route marked misclassified");
        }
        let session_id = turn.message.session_id.clone();
        let decided = RouteDecided {
            session_id: session_id.clone(),
            user_event_id: turn.id(),
            route: decision.route,
            source: decision.source,
            local_only: stage.local_only,
            primary,
            declaration: line.clone(),
            entry: Some(entry_name(mode).to_owned()),
            detail: serde_json::to_value(&decision).ok(),
            corrects,
            user_turns: Some(turn.user_turns),
        };
        let service = self.ctx.service;
        let first = NewEvent::caused_by(cause, STEP_ROUTE, &decided, service)
            .map_err(HandlerError::permanent)?;
        let next = if decision.route == Route::Chat {
            let render = RenderRequested {
                session_id: session_id.clone(),
                channel: turn.message.channel,
                user_event_id: turn.id(),
                person: Some(turn.message.speaker.clone()),
                user_text: turn.message.text.clone(),
                work_result: None,
                declaration: line,
                notice,
                memory_summary: self.memory_summary(turn).await?,
                withheld_from_cloud: Vec::new(),
                history_user_messages: Some(turn.history_user_messages()),
            };
            NewEvent::caused_by(cause, STEP_NEXT, &render, service)
        } else {
            let context = self
                .conversation_context(turn, decision.route.uses_cloud())
                .await?;
            let earlier = if decision.route == Route::Analyze {
                self.earlier_analyses(turn).await?
            } else {
                Vec::new()
            };
            let work = WorkRequested {
                session_id: session_id.clone(),
                user_event_id: turn.id(),
                route: decision.route,
                task: match resumed {
                    Some(paused) => super::task::resumed_task(paused, &turn.message.text),
                    None => {
                        super::task::initial_task(decision.route, stage.text, &context, &earlier)
                    }
                },
                loop_index: 1,
                local_only: stage.local_only,
                reroute: false,
                deadline: Some(self.deadline_of(turn)),
            };
            NewEvent::caused_by(cause, STEP_NEXT, &work, service)
        }
        .map_err(HandlerError::permanent)?;
        self.append(&session_id, &[first, next]).await
    }

    /// Whether this message marks the previous one's route as misclassified: the previous
    /// message was routed automatically (not by the user's command), and now the classifier
    /// (or Kuro) reads a rejection of it, or the user names another route by command.
    async fn misclassification(
        &self,
        turn: &Turn,
        decision: &RouteDecision,
    ) -> Result<Option<Misclassification>, HandlerError> {
        let Some(previous) = self.previous_decision(turn).await? else {
            return Ok(None);
        };
        if previous.source == RouteSource::Explicit {
            return Ok(None);
        }
        let signal = if decision.corrects_previous {
            "negation"
        } else if decision.source == RouteSource::Explicit && decision.route != previous.route {
            "explicit"
        } else {
            return Ok(None);
        };
        Ok(Some(Misclassification {
            user_event_id: previous.user_event_id,
            route: previous.route,
            source: previous.source,
            signal: signal.to_owned(),
        }))
    }

    /// Earlier ANALYZE results of the session (structured JSON), for an ANALYZE task.
    async fn earlier_analyses(&self, turn: &Turn) -> Result<Vec<serde_json::Value>, HandlerError> {
        crate::projections::AnalyzeResults::recent(
            self.ctx.store().pool(),
            &turn.message.session_id,
            self.ctx.config.ghost.routing.analyze_context as i64,
        )
        .await
        .map_err(HandlerError::transient)
    }

    /// Every `routing.summarize_after_turns` user messages, asks the worker to refresh the
    /// session's short summary (in the session's memory stream, outside the turn).
    async fn request_summary_if_due(
        &self,
        event: &RecordedEvent,
        turn: &Turn,
    ) -> Result<(), HandlerError> {
        let n = turn.user_turns;
        let every = self.ctx.config.ghost.routing.summarize_after_turns.max(1);
        if n < every || !n.is_multiple_of(every) {
            return Ok(());
        }
        let request = SummarizeRequested {
            session_id: turn.message.session_id.clone(),
            user_event_id: turn.id(),
            user_turns: n,
        };
        let e = NewEvent::caused_by(event, STEP_SUMMARIZE, &request, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        self.ctx
            .log
            .append(
                &memory_stream(&turn.message.session_id),
                ExpectedVersion::Any,
                &[e],
            )
            .await
            .map_err(HandlerError::transient)?;
        Ok(())
    }
}
