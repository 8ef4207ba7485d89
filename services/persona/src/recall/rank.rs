//! The ranking (seed 001 B-2): the persona's whole focus hint decides the order of the
//! candidates and so which of them the selection is offered (the lowest are cut). A
//! candidate is matched by its structured keys, never by its text: an utterance by the
//! entities and threads its write plan annotated (`memory_event_annotations`), a state by
//! its `payload.topic`, a preference by its subject; each compared as a subject key (NFKC,
//! trimmed, case-folded).
//!
//! - a topic term raises a candidate (earlier terms more);
//! - a style term raises it less: the user's wished manner, its own preference or what was
//!   annotated with it;
//! - an avoided term lowers it below anything neutral, so it is the first cut. Never a
//!   preference: the dislike itself is what the persona must remember.
//!
//! An utterance a state rested on before the state was revised or closed without it is
//! [`superseded`]: it ranks below the memory's newer form (a corrected fact's old words
//! otherwise match a question as well as the correction, often better). The persona's own
//! words count half ([`discount_persona_words`]): the person's are the evidence.

use std::collections::{HashMap, HashSet};

use sqlx::{PgPool, Row};
use uuid::Uuid;

use ghost_shared::events::EventAnnotated;
use ghost_shared::memory::model::{payload_topic, subject_key};
use ghost_shared::memory::retrieval::PersonaFocusHint;

use super::collect::Candidate;
use super::fuse::UNIT;

/// What the first topic term adds (the i-th adds this / i), in the fused ranks' units: half
/// a relevance source's first place.
const TOPIC_WEIGHT: f64 = 0.5 * UNIT;
/// What the first style term adds (the i-th adds this / i).
const STYLE_WEIGHT: f64 = 0.3 * UNIT;
/// What any avoided term takes away: more than every source together gives.
const AVOID_WEIGHT: f64 = 20.0 * UNIT;
/// What a superseded utterance loses: more than a match's edge over a correction's (the
/// old words match a question as well as the new ones, often better).
const SUPERSEDED_WEIGHT: f64 = 1.5 * UNIT;

/// The share of its score an utterance of the persona's own keeps.
const PERSONA_WORDS_SHARE: f64 = 0.5;

/// Where a candidate comes from, read from its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin<'a> {
    /// `event:<uuid>`.
    Event(Uuid),
    /// `state:<uuid>`.
    State(Uuid),
    /// `preference:<domain>/<subject key>/<polarity>`.
    Preference(&'a str),
}

impl<'a> Origin<'a> {
    fn of(id: &'a str) -> Option<Self> {
        if let Some(rest) = id.strip_prefix("event:") {
            return Uuid::parse_str(rest).ok().map(Self::Event);
        }
        if let Some(rest) = id.strip_prefix("state:") {
            return Uuid::parse_str(rest).ok().map(Self::State);
        }
        // The domain and the polarity hold no `/`; the key between them may.
        let rest = id.strip_prefix("preference:")?;
        let (_, keyed) = rest.split_once('/')?;
        let (key, _) = keyed.rsplit_once('/')?;
        Some(Self::Preference(key))
    }
}

/// The subject keys of each candidate (by id) that has any.
pub type Keys = HashMap<String, Vec<String>>;

/// The structured keys of `candidates`: two indexed reads side by side, whatever their
/// number.
pub async fn keys(pool: &PgPool, candidates: &[Candidate]) -> Result<Keys, sqlx::Error> {
    let mut events = Vec::new();
    let mut states = Vec::new();
    let mut keys = Keys::new();
    for c in candidates {
        match Origin::of(&c.id) {
            Some(Origin::Event(id)) => events.push(id),
            Some(Origin::State(id)) => states.push(id),
            Some(Origin::Preference(key)) => {
                keys.insert(c.id.clone(), vec![key.to_owned()]);
            }
            None => {}
        }
    }
    let (annotated, filed) = tokio::try_join!(
        sqlx::query(
            "SELECT source_event_id, annotation FROM memory_event_annotations \
             WHERE source_event_id = ANY($1)",
        )
        .bind(&events)
        .fetch_all(pool),
        sqlx::query("SELECT state_id, payload FROM memory_states WHERE state_id = ANY($1)")
            .bind(&states)
            .fetch_all(pool),
    )?;
    for r in annotated {
        let id: Uuid = r.try_get("source_event_id")?;
        let annotation: serde_json::Value = r.try_get("annotation")?;
        // A row whose payload no longer reads as an annotation keys nothing.
        if let Ok(a) = serde_json::from_value::<EventAnnotated>(annotation) {
            keys.insert(format!("event:{id}"), annotated_keys(&a));
        }
    }
    for r in filed {
        let id: Uuid = r.try_get("state_id")?;
        let payload: Option<serde_json::Value> = r.try_get("payload")?;
        if let Some(topic) = payload.as_ref().and_then(payload_topic) {
            keys.insert(format!("state:{id}"), vec![subject_key(topic)]);
        }
    }
    Ok(keys)
}

/// The utterances among `candidates` that some state of `persona` rested on in an earlier
/// revision and no longer does (revised with other evidence, or closed): one indexed read
/// of the persona's revised states (migration 0120).
pub async fn superseded(
    pool: &PgPool,
    persona: &str,
    candidates: &[Candidate],
) -> Result<HashSet<String>, sqlx::Error> {
    let events: Vec<String> = candidates
        .iter()
        .filter_map(|c| c.id.strip_prefix("event:").map(str::to_owned))
        .collect();
    let rows: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT ev FROM memory_states s \
         JOIN memory_state_revisions r ON r.state_id = s.state_id AND r.revision < s.revision \
         CROSS JOIN LATERAL jsonb_array_elements_text(r.state->'evidence_event_ids') AS ev \
         WHERE s.persona = $1 AND s.revision > 1 AND ev = ANY($2) \
         AND NOT (s.status = 'active' AND ev = ANY(s.evidence_event_ids::text[]))",
    )
    .bind(persona)
    .bind(&events)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|id| format!("event:{id}")).collect())
}

/// The utterances among `candidates` that the persona said (its replies, what it said on
/// its own): one indexed read of the conversation lines.
pub async fn persona_words(
    pool: &PgPool,
    candidates: &[Candidate],
) -> Result<HashSet<String>, sqlx::Error> {
    let events: Vec<Uuid> = candidates
        .iter()
        .filter_map(|c| match Origin::of(&c.id) {
            Some(Origin::Event(id)) => Some(id),
            _ => None,
        })
        .collect();
    let rows: Vec<Uuid> = sqlx::query_scalar(
        "SELECT event_id FROM assistant_text WHERE event_id = ANY($1) AND role = 'assistant'",
    )
    .bind(&events)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|id| format!("event:{id}")).collect())
}

/// Halves the score of each of `candidates` the persona said: what a person told is the
/// evidence of what they told; the persona's reply to it restates it at best and, on a
/// small model, invents (issue 45: its long replies outranked the person's own facts,
/// matching a question's words more often by being longer).
pub fn discount_persona_words(candidates: &mut [Candidate], persona_words: &HashSet<String>) {
    for c in candidates
        .iter_mut()
        .filter(|c| persona_words.contains(&c.id))
    {
        c.score *= PERSONA_WORDS_SHARE;
    }
}

/// Lowers each of `candidates` that is `superseded`.
pub fn demote(candidates: &mut [Candidate], superseded: &HashSet<String>) {
    for c in candidates.iter_mut().filter(|c| superseded.contains(&c.id)) {
        c.score -= SUPERSEDED_WEIGHT;
    }
}

/// An utterance's keys: the entities its plan named and the threads it put it in.
fn annotated_keys(a: &EventAnnotated) -> Vec<String> {
    let entities = a
        .event_annotations
        .iter()
        .flat_map(|x| x.entities.iter().map(|e| e.name.as_str()));
    let threads = a
        .context_updates
        .threads
        .iter()
        .map(|t| t.thread_key.as_str());
    let mut out: Vec<String> = entities.chain(threads).map(subject_key).collect();
    out.retain(|k| !k.is_empty());
    out.dedup();
    out
}

/// `candidates` scored by `focus` through their `keys`, the best `max` kept, highest score
/// first (ties by id, so the order is stable).
pub fn rank(
    mut candidates: Vec<Candidate>,
    keys: &Keys,
    focus: &PersonaFocusHint,
    max: usize,
) -> Vec<Candidate> {
    let terms = |list: &[String]| -> Vec<String> {
        list.iter()
            .map(|t| subject_key(t))
            .filter(|t| !t.is_empty())
            .collect()
    };
    let (topics, styles, avoided) = (
        terms(&focus.topic_bias),
        terms(&focus.style_bias),
        terms(&focus.avoid_bias),
    );
    let raised = |terms: &[String], own: &[String], weight: f64| -> f64 {
        terms
            .iter()
            .enumerate()
            .filter(|(_, t)| own.contains(t))
            .map(|(i, _)| weight / (i as f64 + 1.0))
            .sum()
    };
    for c in &mut candidates {
        let Some(own) = keys.get(&c.id) else { continue };
        c.score += raised(&topics, own, TOPIC_WEIGHT) + raised(&styles, own, STYLE_WEIGHT);
        let preference = matches!(Origin::of(&c.id), Some(Origin::Preference(_)));
        if !preference && avoided.iter().any(|t| own.contains(t)) {
            c.score -= AVOID_WEIGHT;
        }
    }
    candidates.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    candidates.truncate(max);
    candidates
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(id: &str, text: &str, score: f64) -> Candidate {
        Candidate {
            id: id.into(),
            source: "recent_states",
            text: text.into(),
            score,
        }
    }

    const A: &str = "state:00000000-0000-0000-0000-00000000000a";
    const B: &str = "state:00000000-0000-0000-0000-00000000000b";

    fn ids(ranked: &[Candidate]) -> Vec<&str> {
        ranked.iter().map(|c| c.id.as_str()).collect()
    }

    #[test]
    fn topic_style_and_avoid_bias_work_on_keys_never_on_text() {
        let keys: Keys = [
            (A.to_owned(), vec!["tea".to_owned()]),
            (B.to_owned(), vec!["gentle".to_owned()]),
        ]
        .into();
        // A's text names what B is keyed by, and the other way round: texts do not count.
        let both = || {
            vec![
                candidate(A, "gentle words", 0.3 * UNIT),
                candidate(B, "tea", 0.35 * UNIT),
            ]
        };
        let focus = |topic: &[&str], style: &[&str], avoid: &[&str]| PersonaFocusHint {
            topic_bias: topic.iter().map(|s| s.to_string()).collect(),
            style_bias: style.iter().map(|s| s.to_string()).collect(),
            avoid_bias: avoid.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(ids(&rank(both(), &keys, &focus(&[], &[], &[]), 9)), [B, A]);
        assert_eq!(
            ids(&rank(both(), &keys, &focus(&["TEA"], &[], &[]), 9)),
            [A, B]
        );
        assert_eq!(
            ids(&rank(both(), &keys, &focus(&[], &["Gentle"], &[]), 9)),
            [B, A]
        );
        let avoided = rank(both(), &keys, &focus(&[], &[], &["gentle"]), 9);
        assert_eq!(ids(&avoided), [A, B]);
        // The avoided one is the first cut.
        assert_eq!(
            ids(&rank(both(), &keys, &focus(&[], &[], &["gentle"]), 1)),
            [A]
        );
    }

    #[test]
    fn a_preference_is_keyed_by_its_subject_and_never_avoided() {
        let id = "preference:food/green/peppers/dislike";
        assert_eq!(Origin::of(id), Some(Origin::Preference("green/peppers")));
        let keys: Keys = [(id.to_owned(), vec!["green/peppers".to_owned()])].into();
        let focus = PersonaFocusHint {
            avoid_bias: vec!["green/peppers".into()],
            ..Default::default()
        };
        let ranked = rank(vec![candidate(id, "x", 0.4)], &keys, &focus, 9);
        assert!((ranked[0].score - 0.4).abs() < 1e-9);
        assert_eq!(Origin::of("event:nope"), None);
    }
}
