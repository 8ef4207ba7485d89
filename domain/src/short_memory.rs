//! Short memory without a gap (seed 002 §9): a prompt gets the session's summary and every
//! line since the user message the summary was made at, so each exchange is in one or the
//! other. The summary is refreshed every `routing.summarize_after_turns` user messages and
//! covers the session up to and including the message it was made at; the window starts
//! there (one message of overlap, never a gap). After a pause ([`sitting_start`]) the
//! window starts anew: older lines reach the prompt through the summary and recall.

/// How many of the user messages before the current one a prompt's history reaches back to:
/// with a summary made at user message `summary_turns`, those from it on; without one, all.
/// `user_turns` counts the session's user messages including the current one.
pub fn user_messages_since_summary(user_turns: u32, summary_turns: Option<u32>) -> u32 {
    match summary_turns.filter(|k| *k > 0) {
        Some(k) => user_turns.saturating_sub(k),
        None => user_turns.saturating_sub(1),
    }
}

/// Most history lines a prompt gets, however far behind the summary is: the lines of two
/// summary periods (`summarize_after_turns` user messages each, with their replies), at
/// least `min_lines`. A summary far behind must not grow a prompt without bound.
pub fn max_lines(summarize_after_turns: u32, min_lines: usize) -> usize {
    let every = summarize_after_turns.max(1) as usize;
    (every * 4 + 4).max(min_lines)
}

/// The index of the first history line a prompt includes. `is_user` tells, for each line
/// (oldest first), whether the user wrote it; `since` is
/// [`user_messages_since_summary`] (None for a request that does not say: the last
/// `min_lines`). The window reaches back to the `since`-th user line from the end (the
/// summary's anchor) and `min_lines` more before it (overlap with the summary is harmless),
/// and holds at most `max_lines` (a summary far behind must not grow a prompt without
/// bound).
///
/// Its start is counted from the anchor, not from the end: between two summaries it stays
/// on the same line turn after turn, so the prompt begins with the same bytes and a model
/// server that keeps the previous prompt's state decodes only the new lines (issue 45 item
/// 6). A window counted back from the end slid by two lines every turn and was decoded
/// whole every time.
pub fn window_start(
    is_user: &[bool],
    since: Option<u32>,
    min_lines: usize,
    max_lines: usize,
) -> usize {
    let len = is_user.len();
    let floor = len.saturating_sub(max_lines.max(min_lines));
    let by_count = len.saturating_sub(min_lines);
    let Some(since) = since else {
        return by_count;
    };
    let mut seen = 0u32;
    let mut start = len;
    if since > 0 {
        for (i, user) in is_user.iter().enumerate().rev() {
            if *user {
                seen += 1;
                start = i;
                if seen == since {
                    break;
                }
            }
        }
        if seen < since {
            // Fewer user lines than asked for in view: everything there is.
            start = 0;
        }
    }
    start.saturating_sub(min_lines).min(by_count).max(floor)
}

/// The index of the first line after the conversation's last pause: the first line said
/// after a silence of at least `pause_secs` (between two lines, or between the last line
/// and the message answered, `message_at`), 0 when there was none. `at` is each line's
/// time (seconds, oldest first).
///
/// A person back after hours or days starts a new sitting: what was said before reaches
/// the prompt through the summary and recall, where it is offered as memory, not as the
/// exchange in front of the persona (issue 45: days-old lines filled the window, so recall
/// offered nothing and every prompt carried them). `pause_secs` 0 keeps every line.
pub fn sitting_start(at: &[f64], message_at: f64, pause_secs: u64) -> usize {
    if pause_secs == 0 {
        return 0;
    }
    let pause = pause_secs as f64;
    let mut next = message_at;
    for (i, t) in at.iter().enumerate().rev() {
        if next - t >= pause {
            return i + 1;
        }
        next = *t;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` exchanges: user, assistant, user, assistant, …
    fn exchanges(n: usize) -> Vec<bool> {
        (0..n).flat_map(|_| [true, false]).collect()
    }

    #[test]
    fn the_window_reaches_back_to_the_summary() {
        // Summary at message 20, now at message 27: messages 20..26 (7) and their replies.
        let lines = exchanges(26);
        let since = user_messages_since_summary(27, Some(20));
        assert_eq!(since, 7);
        let start = window_start(&lines, Some(since), 6, 200);
        assert_eq!(
            lines.len() - start,
            14 + 6,
            "the anchor and six lines before it"
        );
        assert!(lines[start], "it starts at a user line");
    }

    #[test]
    fn before_any_summary_everything_is_in_view() {
        let lines = exchanges(15);
        let since = user_messages_since_summary(16, None);
        assert_eq!(window_start(&lines, Some(since), 12, 200), 0);
    }

    #[test]
    fn never_fewer_than_the_minimum_nor_more_than_the_maximum() {
        let lines = exchanges(30);
        // Right after a summary: the minimum still holds, before the anchor.
        assert_eq!(window_start(&lines, Some(1), 12, 200), 60 - 2 - 12);
        // A summary far behind: the maximum holds.
        assert_eq!(window_start(&lines, Some(30), 12, 40), 20);
        // A request that does not say: the minimum, as before.
        assert_eq!(window_start(&lines, None, 12, 200), 48);
        assert_eq!(window_start(&[], Some(3), 12, 40), 0);
    }

    #[test]
    fn the_maximum_is_two_summary_periods_of_exchanges() {
        assert_eq!(max_lines(20, 12), 84);
        assert_eq!(max_lines(2, 12), 12, "never below the minimum");
        assert_eq!(max_lines(0, 0), 8, "a period of at least one message");
    }

    #[test]
    fn a_summary_made_at_this_message_leaves_the_minimum() {
        assert_eq!(user_messages_since_summary(20, Some(20)), 0);
        let lines = exchanges(19);
        assert_eq!(window_start(&lines, Some(0), 6, 200), 38 - 6);
    }

    #[test]
    fn a_pause_starts_a_new_sitting() {
        let hour = 3600.0;
        // Day one: three lines a minute apart; day two: two lines, then the message.
        let at = [0.0, 60.0, 120.0, 24.0 * hour, 24.0 * hour + 60.0];
        assert_eq!(sitting_start(&at, 24.0 * hour + 120.0, 3 * 3600), 3);
        // The message itself after a pause: no line is in the sitting.
        assert_eq!(sitting_start(&at, 30.0 * hour, 3 * 3600), 5);
        // No pause that long: every line.
        assert_eq!(sitting_start(&at, 24.0 * hour + 120.0, 30 * 3600), 0);
        assert_eq!(
            sitting_start(&at, 24.0 * hour + 120.0, 0),
            0,
            "0 keeps every line"
        );
        assert_eq!(sitting_start(&[], 5.0, 60), 0);
    }

    #[test]
    fn between_two_summaries_the_window_starts_on_the_same_line() {
        // Summary at message 20; messages 21 to 39 come, each with its reply.
        let starts: Vec<usize> = (21..40)
            .map(|now| {
                let lines = exchanges(now - 1);
                window_start(
                    &lines,
                    Some(user_messages_since_summary(now as u32, Some(20))),
                    12,
                    200,
                )
            })
            .collect();
        assert!(starts.iter().all(|s| *s == starts[0]), "{starts:?}");
    }
}
