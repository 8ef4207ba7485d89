//! Seed 003 `persist_memory`: when a run ends, its summary goes into memory
//! (`StageMemorySaved`, which also closes the run for the gateway's busy check). The
//! summary is the worker model's (`prompts/stage_summary.md`): what was asked, said,
//! decided and left open, for the stage's next runs and its characters' recall. When the
//! model gives none, the run's transcript is kept instead, every line whole (newest kept
//! when it is long), never an invented summary.

use tracing::{info, warn};

use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::envelope::{NewEvent, RecordedEvent};
use ghost_shared::events::{
    StageEnded, StageMemorySaved, StageSpoke, StageTurnFailed, StageUserInput,
};
use ghost_shared::llm::{Call, ChatMessage, Fence, LlmClient};
use ghost_shared::masking::mask_secrets;
use ghost_shared::service::{ServiceContext, ServiceError};
use ghost_shared::stage_signal::StageSignal;

use super::signal::announce;
use super::StageLog;

/// Step name of the memory write.
pub const STEP_MEMORY: &str = "stage.memory";

/// Most characters of a transcript kept when the model gives no summary.
const TRANSCRIPT_CHARS: usize = 4_000;

/// Writes a run's summary once it ended.
pub struct MemoryHandler {
    ctx: ServiceContext,
    log: StageLog,
    /// The worker's model, which summarizes.
    llm: LlmClient,
    /// `prompts/stage_summary.md`.
    system: String,
}

impl MemoryHandler {
    /// A handler on `ctx`, appending through `log`, summarizing on the worker's model.
    pub fn new(ctx: ServiceContext, log: StageLog) -> Result<Self, ServiceError> {
        let path = ctx
            .config
            .resolve(std::path::Path::new("prompts/stage_summary.md"));
        let system = std::fs::read_to_string(&path)
            .map_err(|e| ServiceError::Config(format!("{}: {e}", path.display())))?;
        Ok(Self {
            llm: ctx.llm("worker")?,
            system,
            ctx,
            log,
        })
    }

    /// The model's summary of `transcript`, or None when it gives none.
    async fn summary_of(&self, transcript: &str) -> Option<String> {
        let messages = [
            ChatMessage::system(self.system.clone()),
            ChatMessage::user(Fence::new().block("TRANSCRIPT", transcript)),
        ];
        // Nobody waits for it: it yields to replies on the model.
        match self.llm.complete(&messages, Call::background()).await {
            Ok(text) if !text.trim().is_empty() => Some(mask_secrets(text.trim()).into_owned()),
            Ok(_) => {
                warn!("the stage summary came back empty; the transcript is kept");
                None
            }
            Err(e) => {
                warn!(error = %e, "stage summary failed; the transcript is kept");
                None
            }
        }
    }
}

/// The speakers and the transcript of run `ended` from the stream's events (oldest
/// first), every line whole.
/// Each utterance as `(speaker, text)`: the speaker is a field of its own, so no line can
/// speak as another ([`ghost_shared::llm::transcript`]).
pub fn transcript(
    events: &[RecordedEvent],
    ended: &StageEnded,
) -> (Vec<String>, Vec<(String, String)>) {
    let mut speakers = Vec::new();
    let mut lines = Vec::new();
    for e in events {
        if e.event_id == ended.input_id {
            if let Ok(input) = e.decode::<StageUserInput>() {
                lines.push(("user".to_owned(), input.text));
            }
        } else if let Ok(s) = e.decode::<StageSpoke>() {
            if s.input_id == ended.input_id {
                speakers.push(s.speaker.clone());
                lines.push((s.display_name, s.text));
            }
        } else if let Ok(f) = e.decode::<StageTurnFailed>() {
            if f.input_id == ended.input_id {
                lines.push((
                    "stage".to_owned(),
                    format!("({} did not answer: {})", f.speaker, f.code),
                ));
            }
        }
    }
    (speakers, lines)
}

/// `lines` as the JSON transcript a prompt or a memory holds.
fn as_json(lines: &[(String, String)]) -> String {
    ghost_shared::llm::transcript(lines.iter().map(|(s, t)| (s.as_str(), t.as_str())))
}

/// The transcript kept as the memory: a heading, then the newest whole utterances that fit
/// in [`TRANSCRIPT_CHARS`].
fn kept_transcript(ended: &StageEnded, lines: &[(String, String)]) -> String {
    let mut kept: Vec<(String, String)> = Vec::new();
    let mut used = 0;
    for line in lines.iter().rev() {
        let n = line.0.chars().count() + line.1.chars().count() + 4;
        if used + n > TRANSCRIPT_CHARS && !kept.is_empty() {
            break;
        }
        used += n;
        kept.push(line.clone());
    }
    kept.reverse();
    format!(
        "Stage {} run of {} turn(s), ended by {}.\n{}",
        ended.stage_id,
        ended.turns,
        ended.reason,
        as_json(&kept)
    )
}

#[async_trait::async_trait]
impl EventHandler for MemoryHandler {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let ended: StageEnded = event.decode().map_err(HandlerError::permanent)?;
        // A redelivery after the memory was stored asks the model nothing again; watchers
        // hear of it again (the first delivery may have died before announcing).
        if let Some(stored) = self.ctx.stored_outcome(&event, &[STEP_MEMORY]).await? {
            let version = stored.version;
            announce(
                self.ctx.bus(),
                &ended.stage_id,
                &StageSignal::Appended { version },
            )
            .await;
            return Ok(());
        }
        let limit = i64::from(self.ctx.config.ghost.stage.auto_loops) * 4 + 64;
        let tail = self
            .ctx
            .store()
            .read_stream_tail(&event.stream, limit)
            .await
            .map_err(HandlerError::transient)?;
        let (speakers, transcript) = transcript(&tail, &ended);
        let summary = match self.summary_of(&as_json(&transcript)).await {
            Some(summary) => summary,
            None => kept_transcript(&ended, &transcript),
        };
        let saved = StageMemorySaved {
            stage_id: ended.stage_id.clone(),
            input_id: ended.input_id,
            speakers,
            summary,
        };
        let e = NewEvent::caused_by(&event, STEP_MEMORY, &saved, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        let version = self.log.append_steps(&event.stream, vec![e]).await?;
        let passed = |n| {
            super::node::passed(
                n,
                event.metadata.correlation_id,
                &ended.stage_id,
                ended.turns,
            )
        };
        passed(super::node::Node::PersistMemory);
        // The watchers' active frame is made from the stored memory.
        passed(super::node::Node::UpdateStatusActive);
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
