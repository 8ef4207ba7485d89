//! Seed 003 §7: every node of the stage graph logs its name and the run's correlation id at
//! INFO (target `stage.node`), so one run can be followed through the log from its input to
//! `persist_memory`; `call_llm` also logs the model's request and response (target
//! `stage.llm`), masked and cut to [`EXCERPT_CHARS`].

use tracing::info;
use uuid::Uuid;

/// Characters of a model request or response a log line keeps.
pub const EXCERPT_CHARS: usize = 400;

/// A node of seed 003's graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    /// The recent lines, the rules and the saved memories gathered into a prompt.
    PrepareContext,
    /// Watchers told the character is thinking (before its model is asked).
    UpdateStatusThinking,
    /// The character's model asked, within the stage's timeout.
    CallLlm,
    /// `<think>`, tags and greetings removed, the line shortened.
    PostprocessResponse,
    /// The line stored and announced to watchers.
    SendMessage,
    /// The next speaker read from the line.
    ExtractNext,
    /// The policy's fallback chose (no answer, no usable tag, or a self-nomination).
    ChooseNextFallback,
    /// Another turn, or the run's end.
    EndOrContinue,
    /// The turn's outcome stored: watchers show its speaker idle.
    UpdateStatusIdle,
    /// The run's summary saved.
    PersistMemory,
    /// The run's memory stored: watchers show the stage waiting for the user again.
    UpdateStatusActive,
}

impl Node {
    /// The seed's name of the node.
    pub fn as_str(self) -> &'static str {
        match self {
            Node::PrepareContext => "prepare_context",
            Node::UpdateStatusThinking => "update_status_thinking",
            Node::CallLlm => "call_llm",
            Node::PostprocessResponse => "postprocess_response",
            Node::SendMessage => "send_message",
            Node::ExtractNext => "extract_next",
            Node::ChooseNextFallback => "choose_next_fallback",
            Node::EndOrContinue => "end_or_continue",
            Node::UpdateStatusIdle => "update_status_idle",
            Node::PersistMemory => "persist_memory",
            Node::UpdateStatusActive => "update_status_active",
        }
    }
}

/// Logs that the run `correlation_id` (the run's user input) passed `node`.
pub fn passed(node: Node, correlation_id: Uuid, stage_id: &str, turn: u32) {
    info!(
        target: "stage.node",
        node = node.as_str(),
        correlation_id = %correlation_id,
        stage_id,
        turn,
        "stage node {}",
        node.as_str()
    );
}

/// Logs the model request (`direction` REQ) or response (RESP) of a `call_llm`.
pub fn model_exchange(direction: &str, correlation_id: Uuid, speaker: &str, text: &str) {
    info!(
        target: "stage.llm",
        direction,
        correlation_id = %correlation_id,
        speaker,
        chars = text.chars().count(),
        text = %excerpt(text),
        "stage model {direction}"
    );
}

/// `text` masked like anything bound for a log, then cut to [`EXCERPT_CHARS`].
fn excerpt(text: &str) -> String {
    let masked = ghost_shared::masking::mask_secrets(text);
    let mut cut: String = masked.chars().take(EXCERPT_CHARS).collect();
    if masked.chars().count() > EXCERPT_CHARS {
        cut.push('…');
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_are_masked_and_cut() {
        let long = "a".repeat(EXCERPT_CHARS + 10);
        assert_eq!(excerpt(&long).chars().count(), EXCERPT_CHARS + 1);
        let secret = excerpt("my password is correcthorsebattery9");
        assert!(!secret.contains("correcthorsebattery9"), "{secret}");
    }
}
