//! The router's read models, each a checkpointed projection rebuildable from position 0.
//!
//! - [`sessions`]: per session `local_only`, last primary route, short-memory summary;
//! - [`log`]: the routing log, one row per user message (masked; never shown to users);
//! - [`analyze`]: ANALYZE results as structured JSON, for later turns to build on.

pub mod analyze;
pub mod log;
pub mod sessions;

pub use analyze::AnalyzeResultsProjection;
pub use log::{RoutingLogProjection, RoutingLogRow};
pub use sessions::{RoutingSessionsProjection, SessionRow};

use ghost_shared::event::RecordedEvent;
use ghost_shared::projection::ProjectionError;

/// A decode failure of a projected event.
pub(crate) fn decode_error(event: &RecordedEvent, e: impl std::fmt::Display) -> ProjectionError {
    ProjectionError::Decode {
        event_id: event.event_id,
        event_type: event.event_type.clone(),
        reason: e.to_string(),
    }
}
