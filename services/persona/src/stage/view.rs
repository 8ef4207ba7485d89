//! What a turn needs to know about its stage (seed 003 `prepare_context`): the recent lines
//! and whether a client asked the run to stop.

use uuid::Uuid;

use ghost_shared::envelope::{EventPayload, RecordedEvent};
use ghost_shared::events::{StageSpoke, StageStopRequested, StageUserInput};

/// One line of the stage's conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Internal id of the speaker, `USER` for the person.
    pub speaker: String,
    /// Display name (`User` for the person).
    pub display_name: String,
    /// What was said.
    pub text: String,
}

/// The recent stage as one turn sees it.
#[derive(Debug, Clone, Default)]
pub struct StageView {
    /// What earlier runs of this stage saved to memory (`StageMemorySaved` summaries),
    /// oldest first.
    pub memory: Vec<String>,
    /// Recent lines, oldest first.
    pub lines: Vec<Line>,
    /// A stop was requested after the run's input.
    pub stopped: bool,
}

impl StageView {
    /// The event types a view is built from (a tail of other types is read for nothing).
    pub const EVENT_TYPES: &'static [&'static str] = &[
        StageUserInput::EVENT_TYPE,
        StageSpoke::EVENT_TYPE,
        StageStopRequested::EVENT_TYPE,
    ];

    /// Builds the view of run `input_id` from the stream's tail (oldest first), keeping at
    /// most `max_lines` lines.
    pub fn from_tail(tail: &[RecordedEvent], input_id: Uuid, max_lines: usize) -> Self {
        let input_version = tail
            .iter()
            .find(|e| e.event_id == input_id)
            .map_or(0, |e| e.version);
        let mut view = StageView::default();
        for e in tail {
            if let Ok(input) = e.decode::<StageUserInput>() {
                view.lines.push(Line {
                    speaker: "USER".into(),
                    display_name: "User".into(),
                    text: input.text,
                });
            } else if let Ok(spoke) = e.decode::<StageSpoke>() {
                view.lines.push(Line {
                    speaker: spoke.speaker,
                    display_name: spoke.display_name,
                    text: spoke.text,
                });
            } else if e.is::<StageStopRequested>() && e.version > input_version {
                view.stopped = true;
            }
        }
        let skip = view.lines.len().saturating_sub(max_lines.max(1));
        view.lines.drain(..skip);
        view
    }

    /// The conversation as a transcript, with the instruction to speak as `display_name`.
    pub fn transcript_for(&self, display_name: &str) -> String {
        let mut out = String::new();
        if !self.memory.is_empty() {
            out.push_str("What this stage remembers from earlier conversations:\n");
            for summary in &self.memory {
                out.push_str(summary.trim());
                out.push_str("\n\n");
            }
        }
        // Who said each line is a field of its own: a line cannot speak as another.
        out.push_str("The conversation so far (JSON: who spoke, and what they said):\n");
        out.push_str(&ghost_shared::llm::transcript(
            self.lines
                .iter()
                .map(|l| (l.display_name.as_str(), l.text.as_str())),
        ));
        out.push('\n');
        out.push_str(&format!(
            "\nNow it is your turn. Speak as {display_name}, then nominate who speaks next."
        ));
        out
    }
}
