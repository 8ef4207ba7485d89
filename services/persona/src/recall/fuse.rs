//! The sources fused by rank (issue 45 item 4): reciprocal-rank fusion, so an old fact that
//! several relevance sources rank high beats recent small talk that only the recency source
//! offers. Each source's own scores are on their own scales (a trigram share, a cosine, a
//! `ts_rank`, a recency decay) and are used only to order that source; what counts across
//! sources is the rank, weighted by how much the source says about relevance.
//!
//! A candidate's score is the sum over the sources that offered it of
//! `weight / (K + rank)`, rank counted from 1. [`UNIT`] (the first place of a weight-1
//! source) is the scale the persona's focus ([`super::rank`]) adds and takes away in.

use std::collections::BTreeMap;

use super::collect::Candidate;

/// The fusion constant: small, because every source offers a few dozen rows at most, and a
/// source's first places should count clearly more than its twentieth.
pub const K: f64 = 10.0;

/// What the first place of a weight-1 source is worth.
pub const UNIT: f64 = 1.0 / (K + 1.0);

/// How much each source says about a memory's relevance to the message.
pub fn weight(source: &str) -> f64 {
    match source {
        // The memory names the time the message asks about.
        "about_time" | "said_then" => 1.5,
        // Matches by meaning or by words.
        "vector" | "keyword_events" | "keyword_states" | "trigram_events" | "trigram_states" => 1.0,
        "stage_memories" => 0.5,
        // What is there whatever the message says: it fills the gaps, never the top.
        "recent_states" | "preferences" => 0.4,
        "recent_events" => 0.25,
        _ => 0.5,
    }
}

/// One source's rows, best first: `(id, text, the source's own score)`.
pub type Rows = Vec<(String, String, f64)>;

/// Fuses `lists` (a source's name and its rows, best first) into one list, best first (ties
/// by id, so the order is stable). A candidate keeps the text of the first source that
/// offered it, and names as its source the one that contributed most.
pub fn fuse(lists: &[(&'static str, Rows)]) -> Vec<Candidate> {
    let mut fused: BTreeMap<String, (Candidate, f64)> = BTreeMap::new();
    for (source, rows) in lists {
        let w = weight(source);
        let mut seen = std::collections::HashSet::new();
        let mut rank = 0usize;
        for (id, text, _) in rows {
            // A source that lists an item twice ranks it once, at its best place.
            if !seen.insert(id.as_str()) {
                continue;
            }
            rank += 1;
            let share = w / (K + rank as f64);
            let entry = fused.entry(id.clone()).or_insert_with(|| {
                (
                    Candidate {
                        id: id.clone(),
                        source,
                        text: text.clone(),
                        score: 0.0,
                    },
                    0.0,
                )
            });
            entry.0.score += share;
            if share > entry.1 {
                entry.0.source = source;
                entry.1 = share;
            }
        }
    }
    let mut out: Vec<Candidate> = fused.into_values().map(|(c, _)| c).collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(ids: &[&str]) -> Rows {
        ids.iter()
            .map(|id| (id.to_string(), format!("text of {id}"), 0.5))
            .collect()
    }

    #[test]
    fn an_old_fact_two_relevance_sources_agree_on_beats_every_recent_line() {
        let recent: Vec<String> = (0..20).map(|i| format!("small-talk-{i}")).collect();
        let recent: Vec<&str> = recent.iter().map(String::as_str).collect();
        let fused = fuse(&[
            ("recent_events", rows(&recent)),
            ("keyword_events", rows(&["other-match", "old-fact"])),
            ("vector", rows(&["old-fact", "other-match"])),
        ]);
        assert_eq!(fused[0].id, "old-fact");
        assert_eq!(fused[1].id, "other-match");
        // The best of the recent lines comes after both matches.
        assert_eq!(fused[2].id, "small-talk-0");
        assert_eq!(fused[0].source, "vector");
    }

    #[test]
    fn a_source_alone_still_ranks_and_duplicates_count_once() {
        let fused = fuse(&[("trigram_events", rows(&["a", "b", "a"]))]);
        assert_eq!(
            fused.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert!((fused[0].score - UNIT).abs() < 1e-12);
        assert!(fuse(&[]).is_empty());
    }

    #[test]
    fn the_time_a_message_names_outweighs_a_word_match() {
        let fused = fuse(&[
            ("trigram_events", rows(&["word-match", "said-then"])),
            ("said_then", rows(&["said-then"])),
        ]);
        assert_eq!(fused[0].id, "said-then");
    }
}
