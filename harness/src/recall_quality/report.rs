//! The figures: per configuration, recall@12 by language and kind of question, the
//! newest-first rate of corrected facts and the cross-person count; and the cosine check of
//! the vector source's threshold.

use std::fmt::Write;

use super::corpus::{Corpus, Kind};
use super::facts::Lang;
use super::measure::{Config, Outcome, CONFIGS, K};

/// Hits out of questions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rate {
    /// Questions that passed.
    pub hits: usize,
    /// Questions asked.
    pub n: usize,
}

impl Rate {
    fn add(&mut self, hit: bool) {
        self.hits += usize::from(hit);
        self.n += 1;
    }

    /// The share (0 when nothing was asked).
    pub fn share(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.hits as f64 / self.n as f64
        }
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.2} ({}/{})", self.share(), self.hits, self.n)
    }
}

/// One configuration's figures.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The configuration.
    pub config: Config,
    /// recall@12, English questions sharing words with the fact.
    pub en_lexical: Rate,
    /// recall@12, English paraphrases.
    pub en_paraphrase: Rate,
    /// recall@12, English questions about a corrected fact (its newest form).
    pub en_correction: Rate,
    /// recall@12, every English question.
    pub en: Rate,
    /// recall@12, every Japanese question.
    pub ja: Rate,
    /// Corrected facts whose newest form came first.
    pub newest_first: Rate,
    /// Questions with any candidate of another person.
    pub cross_person: Rate,
    /// Candidates of another person, in all.
    pub cross_person_candidates: usize,
    /// Candidates the bench did not seed.
    pub unknown: usize,
    /// Sources skipped.
    pub skipped: usize,
    /// Median milliseconds of the collection, and of the vector source when on.
    pub median_ms: (f64, Option<f64>),
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// The figures of `outcomes` per configuration.
pub fn summarize(corpus: &Corpus, outcomes: &[Outcome]) -> Vec<Summary> {
    CONFIGS
        .iter()
        .map(|&config| {
            let mut s = Summary {
                config,
                en_lexical: Rate::default(),
                en_paraphrase: Rate::default(),
                en_correction: Rate::default(),
                en: Rate::default(),
                ja: Rate::default(),
                newest_first: Rate::default(),
                cross_person: Rate::default(),
                cross_person_candidates: 0,
                unknown: 0,
                skipped: 0,
                median_ms: (0.0, None),
            };
            let mine = || outcomes.iter().filter(|o| o.config == config);
            s.median_ms = (
                median(mine().map(|o| o.ms.0).collect()).unwrap_or_default(),
                median(mine().filter_map(|o| o.ms.1).collect()),
            );
            for o in outcomes.iter().filter(|o| o.config == config) {
                let q = &corpus.questions[o.question];
                match (q.lang, q.kind) {
                    (Lang::Ja, _) => s.ja.add(o.hit()),
                    (Lang::En, kind) => {
                        s.en.add(o.hit());
                        match kind {
                            Kind::Lexical => s.en_lexical.add(o.hit()),
                            Kind::Paraphrase => s.en_paraphrase.add(o.hit()),
                            Kind::Correction => s.en_correction.add(o.hit()),
                        }
                    }
                }
                if let Some(first) = o.newest_first {
                    s.newest_first.add(first);
                }
                s.cross_person.add(!o.cross_person.is_empty());
                s.cross_person_candidates += o.cross_person.len();
                s.unknown += o.unknown;
                s.skipped += o.skipped;
            }
            s
        })
        .collect()
}

/// The table of `summaries` (Markdown).
pub fn table(summaries: &[Summary]) -> String {
    let mut out = format!(
        "| configuration | recall@{K} EN (lexical / paraphrase / correction) | recall@{K} JA | newest form first | cross-person |\n|---|---|---|---|---|\n"
    );
    for s in summaries {
        let _ = writeln!(
            out,
            "| {} | {} ({:.2} / {:.2} / {:.2}) | {} | {} | {} questions, {} candidates |",
            s.config.name,
            s.en,
            s.en_lexical.share(),
            s.en_paraphrase.share(),
            s.en_correction.share(),
            s.ja,
            s.newest_first,
            s.cross_person.hits,
            s.cross_person_candidates,
        );
    }
    out
}

/// The misses of `config`: each question whose evidence was not in the first [`K`] or
/// whose old form came first.
pub fn misses(corpus: &Corpus, outcomes: &[Outcome], config: Config) -> Vec<String> {
    outcomes
        .iter()
        .filter(|o| o.config == config && (!o.hit() || o.newest_first == Some(false)))
        .map(|o| {
            let q = &corpus.questions[o.question];
            let rank = o
                .evidence_rank
                .map_or("not collected".to_owned(), |r| format!("rank {}", r + 1));
            let old = o.old_rank.map_or(String::new(), |r| {
                format!(", an old form at rank {}", r + 1)
            });
            format!("{} ({:?}, {}): {rank}{old}", q.text, q.kind, q.asker)
        })
        .collect()
}
