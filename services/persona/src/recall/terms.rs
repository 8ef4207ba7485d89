//! The search terms of a message: the words a stored memory must contain to be a trigram
//! candidate.
//!
//! Why not the whole sentence: at a useful similarity threshold (0.1) a sentence's common
//! trigrams ("the", "you") make nearly every stored row a candidate, and Postgres rechecks
//! and sorts them all (1.4 s at 100,000 utterances). The content words are rare: a substring
//! search for each of them (`ILIKE '%word%'`, served by the same trigram index) touches only
//! the rows that contain one.
//!
//! Words are split where the script changes, so Japanese without spaces still yields terms:
//! katakana and kanji runs are kept (nouns, mostly), hiragana runs (particles, endings) are
//! dropped, as are English function words.

/// Terms shorter than this cannot use the trigram index; they rank but never select.
pub const MIN_INDEXED_CHARS: usize = 3;
/// Terms kept at most (the longest, which tend to be the rarest).
pub const MAX_TERMS: usize = 6;

/// Function words that would make most rows candidates.
const STOPWORDS: &[&str] = &[
    "about", "after", "again", "all", "also", "and", "any", "are", "because", "been", "before",
    "but", "can", "could", "did", "does", "doing", "don", "for", "from", "had", "has", "have",
    "her", "here", "him", "his", "how", "just", "know", "like", "more", "not", "now", "our", "out",
    "remember", "said", "say", "she", "should", "some", "talk", "talked", "tell", "than", "that",
    "the", "their", "them", "then", "there", "these", "they", "thing", "think", "this", "those",
    "very", "was", "were", "what", "when", "where", "which", "who", "why", "will", "with", "would",
    "you", "your",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Script {
    Latin,
    Katakana,
    Kanji,
    Hiragana,
    Other,
}

fn script(c: char) -> Script {
    match c {
        'ー' | '\u{30A0}'..='\u{30FF}' | '\u{31F0}'..='\u{31FF}' | '\u{FF66}'..='\u{FF9F}' => {
            Script::Katakana
        }
        '\u{3040}'..='\u{309F}' => Script::Hiragana,
        '々' | '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}' => {
            Script::Kanji
        }
        c if c.is_alphanumeric() => Script::Latin,
        _ => Script::Other,
    }
}

/// The message's search terms: lowercase, distinct, longest first (ties in message order),
/// at most [`MAX_TERMS`].
pub fn search_terms(message: &str) -> Vec<String> {
    let mut runs: Vec<(Script, String)> = Vec::new();
    for c in message.chars() {
        let s = script(c);
        match runs.last_mut() {
            Some((last, run)) if *last == s => run.push(c),
            _ => runs.push((s, c.to_string())),
        }
    }
    let mut terms: Vec<String> = Vec::new();
    for (s, run) in runs {
        let run = run.to_lowercase();
        let keep = match s {
            Script::Latin => run.chars().count() >= 3 && !STOPWORDS.contains(&run.as_str()),
            Script::Katakana | Script::Kanji => run.chars().count() >= 2,
            Script::Hiragana | Script::Other => false,
        };
        if keep && !terms.contains(&run) {
            terms.push(run);
        }
    }
    // Stable: equal lengths keep the message's order.
    terms.sort_by_key(|t| std::cmp::Reverse(t.chars().count()));
    terms.truncate(MAX_TERMS);
    terms
}

/// The terms long enough for the index (the others only rank).
pub fn indexed(terms: &[String]) -> Vec<&str> {
    terms
        .iter()
        .filter(|t| t.chars().count() >= MIN_INDEXED_CHARS)
        .map(String::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_function_words_are_dropped_and_content_words_kept_longest_first() {
        assert_eq!(
            search_terms("Do you remember the Kirabono and the velumi?"),
            vec!["kirabono", "velumi"]
        );
    }

    #[test]
    fn japanese_keeps_katakana_and_kanji_runs_and_drops_particles() {
        // 話 and 覚 are single kanji: too short to be a term.
        assert_eq!(
            search_terms("ピーマンが大好きって話、覚えてる？"),
            vec!["ピーマン", "大好"]
        );
    }

    #[test]
    fn terms_are_distinct_and_bounded() {
        let terms = search_terms("alpha alpha bravo charlie delta echoes foxtrot golfing hotels");
        assert_eq!(
            terms,
            vec!["charlie", "foxtrot", "golfing", "echoes", "hotels", "alpha"]
        );
    }

    #[test]
    fn short_terms_rank_but_are_not_indexed() {
        let terms = search_terms("猫と大好物");
        assert_eq!(terms, vec!["大好物"]);
        let terms = search_terms("大好き");
        assert_eq!(terms, vec!["大好"]);
        assert!(indexed(&terms).is_empty());
    }

    #[test]
    fn nothing_searchable_gives_no_terms() {
        assert!(search_terms("do you remember that?").is_empty());
        assert!(search_terms("").is_empty());
        assert!(search_terms("！？、。").is_empty());
    }
}
