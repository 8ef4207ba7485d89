//! What one cloud call used, as the `CloudTokensUsed` event the day's cap counts.

use ghost_shared::events::{CloudTokensUsed, WorkRequested};

/// The step a `CloudTokensUsed` id derives from, with the `WorkRequested` it served: a
/// redelivered request stores it once.
pub const CLOUD_USAGE_STEP: &str = "cloud-usage";

/// The usage of a call for `work` on `model`: the server's counts when it reported them,
/// else an estimate from what was sent (`prompt`) and received (`completion`).
pub fn of_call(
    work: &WorkRequested,
    model: &str,
    reported: Option<(u64, u64)>,
    prompt: &[&str],
    completion: &str,
) -> CloudTokensUsed {
    let (prompt_tokens, completion_tokens, reported) = match reported {
        Some((p, c)) => (p, c, true),
        None => (
            prompt.iter().map(|t| estimate(t)).sum(),
            estimate(completion),
            false,
        ),
    };
    CloudTokensUsed {
        session_id: work.session_id.clone(),
        user_event_id: work.user_event_id,
        model: model.to_owned(),
        prompt_tokens,
        completion_tokens,
        reported,
    }
}

/// Tokens of `text` estimated on the high side: one per three UTF-8 bytes (about one per
/// kana or kanji, more than one per word of English).
fn estimate(text: &str) -> u64 {
    text.len().div_ceil(3) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work() -> WorkRequested {
        let json = serde_json::json!({
            "session_id": "s", "user_event_id": "00000000-0000-0000-0000-000000000000",
            "route": "CODE", "task": "t", "loop_index": 1
        });
        serde_json::from_value(json).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn reported_counts_are_kept_as_they_are() {
        let used = of_call(&work(), "m", Some((600, 500)), &["abcdef"], "xyz");
        assert_eq!(
            (used.prompt_tokens, used.completion_tokens, used.reported),
            (600, 500, true)
        );
    }

    #[test]
    fn missing_counts_are_estimated_from_the_text() {
        let used = of_call(&work(), "m", None, &["abcdef", "この関数"], "xyz1");
        // 6 bytes → 2, 12 bytes → 4; 4 bytes → 2.
        assert_eq!(
            (used.prompt_tokens, used.completion_tokens, used.reported),
            (6, 2, false)
        );
    }
}
