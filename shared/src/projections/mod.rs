//! Read models that more than one service reads.

mod assistant_text;

pub use assistant_text::{AssistantTextProjection, ConversationTurn};
