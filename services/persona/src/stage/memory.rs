//! Seed 003 `persist_memory`: when a run ends, its summary goes into memory
//! (`StageMemorySaved`, which also closes the run for the gateway's busy check).

use tracing::info;

use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::envelope::{NewEvent, RecordedEvent};
use ghost_shared::events::{
    StageEnded, StageMemorySaved, StageSpoke, StageTurnFailed, StageUserInput,
};
use ghost_shared::service::ServiceContext;
use ghost_shared::stage_signal::StageSignal;

use super::signal::announce;
use super::StageLog;

/// Step name of the memory write.
pub const STEP_MEMORY: &str = "stage.memory";

/// Longest piece of one line kept in a summary, in characters.
const SUMMARY_LINE_CHARS: usize = 80;

/// Writes a run's summary once it ended.
pub struct MemoryHandler {
    ctx: ServiceContext,
    log: StageLog,
}

impl MemoryHandler {
    /// A handler on `ctx`, appending through `log`.
    pub fn new(ctx: ServiceContext, log: StageLog) -> Self {
        Self { ctx, log }
    }
}

fn clip(text: &str) -> String {
    let mut s: String = text.chars().take(SUMMARY_LINE_CHARS).collect();
    if text.chars().count() > SUMMARY_LINE_CHARS {
        s.push('…');
    }
    s
}

/// The summary of run `ended` from the stream's events (oldest first).
pub fn summarize(events: &[RecordedEvent], ended: &StageEnded) -> (Vec<String>, String) {
    let mut speakers = Vec::new();
    let mut lines = Vec::new();
    for e in events {
        if e.event_id == ended.input_id {
            if let Ok(input) = e.decode::<StageUserInput>() {
                lines.push(format!("User: {}", clip(&input.text)));
            }
        } else if let Ok(s) = e.decode::<StageSpoke>() {
            if s.input_id == ended.input_id {
                speakers.push(s.speaker.clone());
                lines.push(format!("{}: {}", s.display_name, clip(&s.text)));
            }
        } else if let Ok(f) = e.decode::<StageTurnFailed>() {
            if f.input_id == ended.input_id {
                lines.push(format!("({} did not answer: {})", f.speaker, f.code));
            }
        }
    }
    let summary = format!(
        "Stage {} run of {} turn(s), ended by {}.\n{}",
        ended.stage_id,
        ended.turns,
        ended.reason,
        lines.join("\n")
    );
    (speakers, summary)
}

#[async_trait::async_trait]
impl EventHandler for MemoryHandler {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let ended: StageEnded = event.decode().map_err(HandlerError::permanent)?;
        let limit = i64::from(self.ctx.config.ghost.stage.auto_loops) * 4 + 64;
        let tail = self
            .ctx
            .store()
            .read_stream_tail(&event.stream, limit)
            .await
            .map_err(HandlerError::transient)?;
        let (speakers, summary) = summarize(&tail, &ended);
        let saved = StageMemorySaved {
            stage_id: ended.stage_id.clone(),
            input_id: ended.input_id,
            speakers,
            summary,
        };
        let e = NewEvent::caused_by(&event, STEP_MEMORY, &saved, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        let version = self.log.append_steps(&event.stream, vec![e]).await?;
        super::node::passed(
            super::node::Node::PersistMemory,
            event.metadata.correlation_id,
            &ended.stage_id,
            ended.turns,
        );
        info!(target: "operation", stage_id = %ended.stage_id, turns = ended.turns, reason = %ended.reason, "stage run persisted to memory");
        announce(
            self.ctx.bus(),
            &ended.stage_id,
            &StageSignal::Appended { version },
        )
        .await;
        Ok(())
    }
}
