//! The one writer of memory in this process: write plans and the interest updates of
//! deliberations are checked and applied one at a time, each against a memory holding every
//! committed change (an interest state merged from a stale one would lose an update).

use std::time::Duration;

use tokio::sync::{Mutex, MutexGuard};

use ghost_shared::bus::HandlerError;
use ghost_shared::envelope::NewEvent;
use ghost_shared::events::persona_stream;
use ghost_shared::memory::Memory;
use ghost_shared::projections::MemoryProjection;
use ghost_shared::projector::ProjectionRunner;
use ghost_shared::service::ServiceContext;
use ghost_shared::store::ExpectedVersion;

/// Serialises the changes to memory and keeps the `memory` projection caught up.
pub struct MemoryWriter {
    ctx: ServiceContext,
    runner: ProjectionRunner,
    serial: Mutex<()>,
}

impl MemoryWriter {
    /// A writer appending through `ctx`, reading the projection `runner` feeds.
    pub fn new(ctx: ServiceContext, runner: ProjectionRunner) -> Self {
        Self {
            ctx,
            runner,
            serial: Mutex::new(()),
        }
    }

    /// Held from reading the memory to appending what changes it.
    pub async fn serial(&self) -> MutexGuard<'_, ()> {
        self.serial.lock().await
    }

    /// Applies every committed memory event to the projection. Only a pass that held the
    /// projection proves it: while the runner's own loop holds it, its rows are not
    /// committed yet, and a change merged from them would lose the one before.
    pub async fn caught_up(&self) -> Result<(), HandlerError> {
        for _ in 0..200 {
            let pass = self
                .runner
                .catch_up()
                .await
                .map_err(HandlerError::transient)?;
            if !pass.pending && !pass.contended {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Err(HandlerError::transient(
            "memory projection held back; retrying later",
        ))
    }

    /// `persona`'s memory with every committed change in it (every person's).
    pub async fn load(&self, persona: &str) -> Result<Memory, HandlerError> {
        self.caught_up().await?;
        MemoryProjection::load(self.ctx.store().pool(), persona)
            .await
            .map_err(HandlerError::transient)
    }

    /// `persona`'s memory of `person` (and of no one) with every committed change in it:
    /// what a plan for an utterance to `person` may read and change.
    pub async fn load_for(&self, persona: &str, person: &str) -> Result<Memory, HandlerError> {
        self.caught_up().await?;
        MemoryProjection::load_for(self.ctx.store().pool(), persona, person)
            .await
            .map_err(HandlerError::transient)
    }

    /// Appends `events` to `persona`'s stream in one append, then catches up, so the next
    /// change (and the debug API) sees them at once.
    pub async fn append(&self, persona: &str, events: &[NewEvent]) -> Result<(), HandlerError> {
        self.ctx
            .log
            .append(&persona_stream(persona), ExpectedVersion::Any, events)
            .await
            .map_err(HandlerError::transient)?;
        self.caught_up().await
    }
}
