//! Asking for a deliberation: one `AutonomyTickRequested` on the persona's autonomy stream
//! (the schedule, `POST /api/autonomy/tick` and `ghost autonomy tick` all go through here).

use uuid::Uuid;

use super::events::{autonomy_stream, AutonomyTickRequested, TickTrigger};
use crate::envelope::{EventMetadata, NewEvent};
use crate::event_log::{EventLog, EventLogError};
use crate::ids::external_event_id;
use crate::store::ExpectedVersion;

/// A tick that was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum TickError {
    /// The event store or the bus.
    #[error(transparent)]
    Log(#[from] EventLogError),
    /// The payload did not encode.
    #[error("the tick does not encode: {0}")]
    Encode(#[from] serde_json::Error),
}

/// The id of the scheduled tick of `persona` in time slot `slot`: the same for every
/// process running the schedule, so one slot makes one tick.
pub fn scheduled_tick_id(persona: &str, slot: u64) -> Uuid {
    external_event_id("autonomy.schedule", &format!("{persona}:{slot}"))
}

/// Appends tick `id` for `persona` (by `service`, because of `trigger`); idempotent per id.
pub async fn request_tick(
    log: &EventLog,
    id: Uuid,
    persona: &str,
    trigger: TickTrigger,
    service: &str,
) -> Result<Uuid, TickError> {
    let event = NewEvent::new(
        id,
        &AutonomyTickRequested {
            persona: persona.into(),
            trigger,
        },
        EventMetadata {
            correlation_id: id,
            causation_id: None,
            traceparent: None,
            tracestate: None,
            service: service.into(),
        },
    )?;
    log.append(&autonomy_stream(persona), ExpectedVersion::Any, &[event])
        .await?;
    Ok(id)
}
