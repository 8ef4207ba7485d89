//! People's edits to memory (issue 35 item 2): a `MemoryEditRequested` the API recorded is
//! applied here, by memory's one writer, against a caught-up memory, and recorded as
//! `MemoryCorrected` or `MemoryForgotten` with an id derived from the request: a redelivered
//! request appends nothing. A request whose memory went meanwhile changes nothing.

use std::sync::Arc;

use tracing::{info, warn};

use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::envelope::{EventPayload, NewEvent, RecordedEvent};
use ghost_shared::memory::edits::{edit_outcome, find, EditOutcome, Found, MemoryEditRequested};
use ghost_shared::projections::MemoryProjection;
use ghost_shared::service::ServiceContext;

use crate::writer::MemoryWriter;

/// The event types this handler consumes.
pub const CONSUMES: [&str; 1] = [MemoryEditRequested::EVENT_TYPE];

/// The step the outcome's id derives from.
pub const STEP: &str = "write-plan/edit";

/// Applies edit requests.
pub struct Edits {
    ctx: ServiceContext,
    writer: Arc<MemoryWriter>,
}

impl Edits {
    /// A handler changing memory through `writer`.
    pub fn new(ctx: ServiceContext, writer: Arc<MemoryWriter>) -> Self {
        Self { ctx, writer }
    }
}

#[async_trait::async_trait]
impl EventHandler for Edits {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let request: MemoryEditRequested = event.decode().map_err(HandlerError::permanent)?;
        if self.ctx.outcome_stored(&event, &[STEP]).await? {
            return Ok(());
        }
        let _serial = self.writer.serial().await;
        let memory = self.writer.load(&request.persona).await?;
        let evidence = match find(&memory, &request.target) {
            Some(Found::Preference(p)) => {
                MemoryProjection::preference_evidence(self.ctx.store().pool(), &request.persona, p)
                    .await
                    .map_err(HandlerError::transient)?
            }
            _ => Vec::new(),
        };
        let now = event.recorded_at.timestamp_micros() as f64 / 1e6;
        let new = match edit_outcome(&memory, &request, event.event_id, now, evidence) {
            Some(EditOutcome::Corrected(c)) => NewEvent::caused_by(&event, STEP, &c, self.ctx.service),
            Some(EditOutcome::Forgotten(f)) => NewEvent::caused_by(&event, STEP, &f, self.ctx.service),
            None => {
                warn!(request = %event.event_id, "the memory to edit is gone or changed; nothing done");
                return Ok(());
            }
        }
        .map_err(HandlerError::permanent)?;
        info!(request = %event.event_id, outcome = %new.event_type, "memory edited");
        self.writer.append(&request.persona, &[new]).await
    }
}
