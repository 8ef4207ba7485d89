//! Forgetting a person (issue 35 item 2; what and why:
//! `ghost_shared::memory::forget_person`): a `PersonForgetRequested` the API recorded is
//! carried out here, by memory's one writer, while no plan or edit is applied: the store's
//! redaction (one transaction, recorded as done), then the bus's copies of the redacted
//! events, then `PersonForgotten` with what changed. A redelivered request finds the
//! redaction done, deletes the copies again (nothing left) and appends nothing new.

use std::collections::HashSet;
use std::sync::Arc;

use tracing::info;

use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::envelope::{EventPayload, NewEvent, RecordedEvent};
use ghost_shared::memory::forget_person::{PersonForgetRequested, PersonForgotten, FORGET_STREAM};
use ghost_shared::service::ServiceContext;
use ghost_shared::store::ExpectedVersion;

use crate::writer::MemoryWriter;

/// The event types this handler consumes.
pub const CONSUMES: [&str; 1] = [PersonForgetRequested::EVENT_TYPE];

/// The step the outcome's id derives from.
pub const STEP: &str = "write-plan/forget-person";

/// Carries out requests to forget a person.
pub struct ForgetPerson {
    ctx: ServiceContext,
    writer: Arc<MemoryWriter>,
}

impl ForgetPerson {
    /// A handler forgetting people while `writer` holds memory still.
    pub fn new(ctx: ServiceContext, writer: Arc<MemoryWriter>) -> Self {
        Self { ctx, writer }
    }
}

#[async_trait::async_trait]
impl EventHandler for ForgetPerson {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let request: PersonForgetRequested = event.decode().map_err(HandlerError::permanent)?;
        if self.ctx.outcome_stored(&event, &[STEP]).await? {
            return Ok(());
        }
        let _serial = self.writer.serial().await;
        let done = self
            .ctx
            .store()
            .forget_person(&request.person, event.event_id)
            .await
            .map_err(HandlerError::transient)?;
        let ids: HashSet<_> = done.event_ids.iter().copied().collect();
        let bus_copies_deleted = self
            .ctx
            .bus()
            .delete_event_copies(&ids)
            .await
            .map_err(HandlerError::transient)?;
        let forgotten = PersonForgotten {
            person: request.person,
            request_id: event.event_id,
            redacted: done.redacted,
            scrubbed: done.scrubbed,
            bus_copies_deleted,
        };
        info!(
            request = %event.event_id,
            events = ids.len(),
            bus_copies_deleted,
            "person forgotten"
        );
        let new = NewEvent::caused_by(&event, STEP, &forgotten, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        self.ctx
            .log
            .append(FORGET_STREAM, ExpectedVersion::Any, &[new])
            .await
            .map_err(HandlerError::transient)?;
        // The memory projection's readers (the writer's next plan) see the rows as deleted.
        self.writer.caught_up().await
    }
}
