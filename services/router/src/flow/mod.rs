//! The router's event handlers: one [`Router`] reacts to every event type it consumes.
//!
//! Every step appends a fixed set of events whose ids derive from the event handled, so a
//! redelivery appends nothing and never asks the classifier or a worker twice.

pub mod confirm;
pub mod intake;
pub mod loops;
pub mod proposal;
pub mod remind;
pub mod task;
pub mod turn;

use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::envelope::{session_stream, NewEvent, RecordedEvent};
use ghost_shared::events::{
    ClassifierReplied, ConfirmationChecked, PersonaProposed, RenderFailed, UserMessageReceived,
    WorkerCompleted, WorkerFailed,
};
use ghost_shared::service::ServiceContext;
use ghost_shared::store::ExpectedVersion;
use uuid::Uuid;

use crate::routing::{EntryMode, RoutingConfig};

/// Step names: the ids of the events a handler appends derive from the handled event and
/// these, the same whatever the decision, so a redelivery is always a duplicate.
pub(crate) const STEP_ROUTE: &str = "route";
pub(crate) const STEP_NEXT: &str = "next";
pub(crate) const STEP_CLASSIFY: &str = "classify";
pub(crate) const STEP_LOOP: &str = "loop";
pub(crate) const STEP_SUMMARIZE: &str = "summarize";
pub(crate) const STEP_CONFIRM: &str = "confirm";
pub(crate) const STEP_RESOLVE: &str = "resolve";
pub(crate) const STEP_PENDING: &str = "pending";

/// How many times the dead-letter path tries to store the turn's failure.
const DEAD_LETTER_APPEND_ATTEMPTS: u32 = 8;

ghost_shared::event_enum! {
    /// What the router takes from the bus: the messages that start turns and every step's
    /// answer that moves one on.
    pub enum RouterInput {
        UserMessageReceived,
        ClassifierReplied,
        WorkerCompleted,
        WorkerFailed,
        PersonaProposed,
        ConfirmationChecked,
    }
}

impl RouterInput {
    /// The user message whose turn this event belongs to (`own` when it is that message).
    fn user_event_id(&self, own: Uuid) -> Uuid {
        match self {
            Self::UserMessageReceived(_) => own,
            Self::ClassifierReplied(r) => r.user_event_id,
            Self::WorkerCompleted(w) => w.user_event_id,
            Self::WorkerFailed(w) => w.user_event_id,
            Self::PersonaProposed(p) => p.user_event_id,
            Self::ConfirmationChecked(c) => c.user_event_id,
        }
    }
}

/// The router's handler for user messages, classifier replies and worker results.
pub struct Router {
    pub(crate) ctx: ServiceContext,
    pub(crate) config: RoutingConfig,
}

impl Router {
    /// A router with a loaded `routing.yaml`.
    pub fn new(ctx: ServiceContext, config: RoutingConfig) -> Self {
        Self { ctx, config }
    }

    /// The configured entry mode of a channel.
    pub(crate) fn entry_mode(&self, channel: &str) -> EntryMode {
        match self.ctx.config.ghost.routing.entry_mode(channel) {
            "kuro" => EntryMode::Kuro,
            _ => EntryMode::Router,
        }
    }

    /// Appends `events` to the session's stream (idempotent by their derived ids).
    pub(crate) async fn append(
        &self,
        session_id: &str,
        events: &[NewEvent],
    ) -> Result<(), HandlerError> {
        self.ctx
            .log
            .append(&session_stream(session_id), ExpectedVersion::Any, events)
            .await
            .map_err(HandlerError::transient)?;
        Ok(())
    }
}

#[async_trait::async_trait]
impl EventHandler for Router {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let input = RouterInput::decode(&event).map_err(HandlerError::permanent)?;
        match input {
            Some(RouterInput::UserMessageReceived(_)) => self.on_user_message(&event).await,
            Some(RouterInput::ClassifierReplied(reply)) => {
                self.on_classifier_reply(&event, reply).await
            }
            Some(RouterInput::WorkerCompleted(_) | RouterInput::WorkerFailed(_)) => {
                self.on_worker_outcome(&event).await
            }
            Some(RouterInput::PersonaProposed(proposed)) => {
                self.on_persona_proposal(&event, proposed).await
            }
            Some(RouterInput::ConfirmationChecked(checked)) => {
                self.on_confirmation_checked(&event, checked).await
            }
            None => Err(HandlerError::permanent(format!(
                "router does not handle {}",
                event.event_type
            ))),
        }
    }

    async fn on_dead_letter(&self, event: Option<&RecordedEvent>, reason: &str) {
        // Close the turn so the session is not left busy.
        let Some(event) = event else { return };
        // A payload that does not decode names no turn: nothing to close.
        let Ok(Some(input)) = RouterInput::decode(event) else {
            return;
        };
        let user_event_id = input.user_event_id(event.event_id);
        let Ok(Some(user_event)) = self.ctx.store().get(user_event_id).await else {
            return;
        };
        let Ok(message) = user_event.decode::<UserMessageReceived>() else {
            return;
        };
        let failed = RenderFailed {
            session_id: message.session_id.clone(),
            channel: message.channel,
            user_event_id,
            code: "routing_failed".into(),
            message: ghost_shared::masking::mask_secrets(
                &reason.chars().take(200).collect::<String>(),
            )
            .into_owned(),
        };
        let Ok(e) = NewEvent::closing_turn(event, user_event_id, &failed, self.ctx.service) else {
            return;
        };
        // The turn's only way out from here: retry the append (a store hiccup must not strand
        // it), a bounded number of times; the turn watchdog closes it if even that fails.
        let mut delay = std::time::Duration::from_millis(100);
        for attempt in 1..=DEAD_LETTER_APPEND_ATTEMPTS {
            match self
                .append(&message.session_id, std::slice::from_ref(&e))
                .await
            {
                Ok(()) => return,
                Err(err) => {
                    tracing::warn!(attempt, error = %err, "cannot close the dead-lettered turn; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(std::time::Duration::from_secs(5));
                }
            }
        }
        tracing::error!(%user_event_id, "could not close the dead-lettered turn; the watchdog will");
    }
}
