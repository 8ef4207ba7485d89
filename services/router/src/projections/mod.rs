//! The router's read models: three tables behind one checkpointed projection, `routing`
//! ([`RoutingProjection`]), rebuildable from position 0.
//!
//! - [`sessions`]: per session `local_only`, last primary route, short-memory summary;
//! - [`log`]: the routing log, one row per user message (masked; never shown to users);
//! - [`analyze`]: ANALYZE results as structured JSON, for later turns to build on.

pub mod analyze;
mod changes;
pub mod log;
pub mod sessions;

pub use analyze::AnalyzeResults;
pub use log::{Misrouted, RoutingLog, RoutingLogRow};
pub use sessions::{RoutingSessions, SessionRow};

use ghost_shared::envelope::{EventPayload, RecordedEvent};
use ghost_shared::events::{SessionSummarized, WorkerCompleted};
use ghost_shared::projector::{Projection, ProjectionError};
use sqlx::{Postgres, Transaction};

use changes::RoutingChanges;

/// The router's three read models behind one checkpoint and one runner (`routing`): a
/// projection runner holds a listener connection and two pool connections while it works,
/// so one runner instead of three keeps the router light on the pool.
#[derive(Debug, Default, Clone, Copy)]
pub struct RoutingProjection;

impl RoutingProjection {
    /// Projection name (checkpoint key, `ghost projections rebuild routing`).
    pub const NAME: &'static str = "routing";
}

#[async_trait::async_trait]
impl Projection for RoutingProjection {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    /// Woken only by what a turn reads back soon: a summary (the router's next turn
    /// prompts with it) and a worker's result (a later ANALYZE turn builds on it). The
    /// router reads its other state from the events themselves, so the routing log of a
    /// turn waits for the poll interval, applied with every turn since in one statement.
    /// Every route decision woke a pass of its own: a pass and a wake-up a turn.
    fn wakes_on(&self, event_type: &str) -> bool {
        [SessionSummarized::EVENT_TYPE, WorkerCompleted::EVENT_TYPE].contains(&event_type)
    }

    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        self.apply_all(tx, std::slice::from_ref(event)).await
    }

    /// The pass's events folded into one change per row and written in one statement.
    async fn apply_all(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        events: &[RecordedEvent],
    ) -> Result<(), ProjectionError> {
        RoutingChanges::of(events)?.write(tx).await
    }

    async fn reset(&self, tx: &mut Transaction<'_, Postgres>) -> Result<(), ProjectionError> {
        RoutingSessions.reset(tx).await?;
        RoutingLog.reset(tx).await?;
        AnalyzeResults.reset(tx).await
    }
}
