//! Read models that more than one service reads: `assistant_text` (the conversation) and
//! `memory` (states, preferences, interest state; written by the write-plan service, read
//! by the persona's recall and autonomy).

mod assistant_text;
mod memory;

pub use assistant_text::{
    own_utterance, said, AssistantTextProjection, ConversationTurn, Listing, Said, AUTONOMY_SOURCE,
};
pub use memory::{preference_from_row, MemoryProjection, MEMORY_TABLES};
