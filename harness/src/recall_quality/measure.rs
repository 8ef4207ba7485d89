//! Asks every question under each recall configuration and scores the ranked candidates
//! `collect` returns (what recall offers its selection call, best first):
//!
//! - **recall@12**: the question's evidence (the fact's utterance, its state or its
//!   preference; for a correction, the correcting utterance or the state holding the new
//!   form) is among the first 12 candidates;
//! - **newest first**: for a corrected fact, its new form is among the first 12 and ranks
//!   above every old form (the original utterance, a closed state);
//! - **cross-person**: any candidate at all (not only the first 12) is another person's:
//!   their utterance, a state about them, a preference only they hold, or what the persona
//!   said in the group. What the selection is offered bounds what it can select.

use std::time::Duration;

use ghost_persona::recall::collect::{collect, Scope};
use ghost_shared::config::MemorySettings;
use ghost_shared::llm::LlmClient;
use ghost_shared::memory::retrieval::{focus_hint, retrieval_plan};
use ghost_shared::memory::subject_key;
use ghost_shared::projections::MemoryProjection;
use sqlx::PgPool;

use super::corpus::{Corpus, Kind, Question};
use super::facts::FACTS;
use super::seed::{preference_id, Owner, Seeded, PERSONA};

/// The first candidates recall@k counts (the selection keeps at most 12).
pub const K: usize = 12;

/// One recall configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Its name in the report.
    pub name: &'static str,
    /// The vector source on.
    pub vectors: bool,
    /// The persona's focus hint (the asker's confirmed preferences and interest) ranks.
    pub focus: bool,
}

/// The configurations measured.
pub const CONFIGS: [Config; 3] = [
    Config {
        name: "trigram only",
        vectors: false,
        focus: false,
    },
    Config {
        name: "with vectors",
        vectors: true,
        focus: false,
    },
    Config {
        name: "vectors + focus hint",
        vectors: true,
        focus: true,
    },
];

/// How one question fared under one configuration.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The configuration.
    pub config: Config,
    /// The question (index into the corpus's).
    pub question: usize,
    /// Rank (0-based) of the first evidence candidate, if any was collected.
    pub evidence_rank: Option<usize>,
    /// For a correction: rank (0-based) of the first old form collected.
    pub old_rank: Option<usize>,
    /// For a correction: whether its new form is in the first [`K`] and above every old one.
    pub newest_first: Option<bool>,
    /// Candidates that are another person's.
    pub cross_person: Vec<String>,
    /// Candidates this bench did not seed (should be none).
    pub unknown: usize,
    /// Sources skipped (timed out or failed).
    pub skipped: usize,
    /// Milliseconds the collection took, and the vector source (when on).
    pub ms: (f64, Option<f64>),
}

impl Outcome {
    /// Whether the evidence is among the first [`K`].
    pub fn hit(&self) -> bool {
        self.evidence_rank.is_some_and(|r| r < K)
    }
}

/// The candidate ids that answer `q` (its newest form), and those holding an old form.
pub fn evidence(q: &Question, seeded: &Seeded) -> (Vec<String>, Vec<String>) {
    let f = &FACTS[q.fact];
    let ids = &seeded.facts[q.fact];
    let event = |id: Option<uuid::Uuid>| id.map(|i| format!("event:{i}"));
    let state = |id: Option<uuid::Uuid>| id.map(|i| format!("state:{i}"));
    if q.kind == Kind::Correction {
        let new = [event(ids.corrected), state(ids.new_state)];
        let replaced = f.correction.is_some_and(|c| c.replaces);
        let old = [event(ids.said), state(ids.state).filter(|_| replaced)];
        return (
            new.into_iter().flatten().collect(),
            old.into_iter().flatten().collect(),
        );
    }
    let preference = f
        .preference
        .map(|(d, p, s)| preference_id(d, &subject_key(s), p));
    let new = [event(ids.said), state(ids.state), preference];
    (new.into_iter().flatten().collect(), Vec::new())
}

/// Asks question `i` under `config`.
pub async fn ask(
    pool: &PgPool,
    corpus: &Corpus,
    seeded: &Seeded,
    settings: &MemorySettings,
    model: Option<&LlmClient>,
    config: Config,
    i: usize,
) -> anyhow::Result<Outcome> {
    let q = &corpus.questions[i];
    let focus = if config.focus {
        let memory = MemoryProjection::load_focus(pool, PERSONA, q.asker).await?;
        focus_hint(&memory, corpus.now, settings.interest_tau_secs)
    } else {
        Default::default()
    };
    let plan = retrieval_plan(q.text, settings.recall_limits(), focus);
    let session = format!("ask-{i}");
    let scope = Scope {
        persona: PERSONA,
        person: q.asker,
        session_id: &session,
        history: Default::default(),
        // Generous: a skipped source would measure the machine, not recall.
        source_timeout: Duration::from_secs(30),
        similarity_threshold: settings.recall_similarity_threshold,
        embedding: model.filter(|_| config.vectors),
    };
    let started = std::time::Instant::now();
    let collected = collect(pool, scope, &plan).await;
    let ms = (
        started.elapsed().as_secs_f64() * 1e3,
        collected.timings_ms.get("vector").copied(),
    );
    let ids: Vec<&str> = collected.candidates.iter().map(|c| c.id.as_str()).collect();
    let (new, old) = evidence(q, seeded);
    let first = |set: &[String]| ids.iter().position(|id| set.iter().any(|e| e == id));
    let evidence_rank = first(&new);
    let old_rank = first(&old);
    let newest_first = (q.kind == Kind::Correction).then_some(match (evidence_rank, old_rank) {
        (Some(n), Some(o)) => n < K && n < o,
        (Some(n), None) => n < K,
        (None, _) => false,
    });
    let mut cross_person = Vec::new();
    let mut unknown = 0;
    for c in &collected.candidates {
        match seeded.owners.get(&c.id) {
            Some(Owner::People(people)) if !people.contains(&q.asker) => {
                cross_person.push(c.text.clone())
            }
            Some(_) => {}
            None => unknown += 1,
        }
    }
    Ok(Outcome {
        config,
        question: i,
        evidence_rank,
        old_rank,
        newest_first,
        cross_person,
        unknown,
        skipped: collected.skipped.len(),
        ms,
    })
}
