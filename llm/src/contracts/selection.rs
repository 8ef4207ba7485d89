//! Recall selection: `{"selected_ids": [...]}`, each an id of a candidate offered.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::Contract;

/// The selection as the model writes it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SelectionShape {
    /// The chosen candidates' ids, most important first.
    pub selected_ids: Vec<String>,
}

/// Tokens per id chosen (a handle such as `m12` and its quotes and comma take a few; a
/// stored id, some thirty), plus the frame.
const TOKENS_PER_ID: u32 = 40;

/// The selection's contract: ids limited to `candidate_ids`, at most `max_selected`.
pub fn contract<S: AsRef<str>>(candidate_ids: &[S], max_selected: usize) -> Contract {
    let max = max_selected.min(candidate_ids.len());
    Contract::of::<SelectionShape>("recall_selection", 16 + TOKENS_PER_ID * max as u32)
        .allow(&["selected_ids"], candidate_ids)
        .max_items(&["selected_ids"], max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_offered_ids_and_at_most_the_maximum() {
        let c = contract(&["a", "b", "c"], 2);
        assert!(c.admits(r#"{"selected_ids":["b","a"]}"#));
        assert!(c.admits(r#"{"selected_ids":[]}"#));
        assert!(!c.admits(r#"{"selected_ids":["z"]}"#));
        assert!(!c.admits(r#"{"selected_ids":["a","b","c"]}"#));
    }
}
