//! Memory as people read it (issue 48), beside the rows `GET /api/memory` answers with:
//!
//! - **order**: states in the order they were first remembered (a corrected state stays
//!   where it was; the projection orders by the latest revision);
//! - **duplicates**: states that say the same of the same person (same kind and status, the
//!   same words once case, width, spaces and punctuation are set aside), which people read
//!   as one memory: the write plan may file a fact twice, from two messages, and both
//!   messages are its evidence. Shown merged; the rows are left as the write plan made them;
//! - **history**: each state's earlier revisions;
//! - **evidence**: what each evidence id is, in words: the message (who said it, where,
//!   when), or the kind of event it is when it is no message (an action's result, an edit).

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use ghost_shared::memory::model::{subject_key, MemoryState};
use serde::Serialize;
use sqlx::PgPool;
use uuid::Uuid;

/// The states in the order they were first remembered (their first revision's position;
/// a state without revisions keeps its place after those with).
pub async fn first_remembered(pool: &PgPool, states: &mut [MemoryState]) -> sqlx::Result<()> {
    let ids: Vec<Uuid> = states.iter().map(|s| s.state_id).collect();
    let first: HashMap<Uuid, i64> = sqlx::query_as::<_, (Uuid, i64)>(
        "SELECT state_id, min(position) FROM memory_state_revisions \
         WHERE state_id = ANY($1) GROUP BY state_id",
    )
    .bind(&ids)
    .fetch_all(pool)
    .await?
    .into_iter()
    .collect();
    // Stable: states first remembered together keep the projection's order.
    states.sort_by_key(|s| first.get(&s.state_id).copied().unwrap_or(i64::MAX));
    Ok(())
}

/// What two states must share to be one memory.
fn same_words(s: &MemoryState) -> (Option<&str>, &'static str, &'static str, String) {
    let words: String = subject_key(&s.body_text)
        .chars()
        .filter(|c| c.is_alphanumeric())
        .collect();
    (
        s.person.as_deref(),
        s.kind.as_str(),
        s.status.as_str(),
        words,
    )
}

/// Groups of two or more states (ids, in the order given) that people read as one memory.
pub fn duplicates(states: &[MemoryState]) -> Vec<Vec<Uuid>> {
    let mut groups: Vec<(_, Vec<Uuid>)> = Vec::new();
    for s in states {
        let key = same_words(s);
        if key.3.is_empty() {
            continue;
        }
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, ids)) => ids.push(s.state_id),
            None => groups.push((key, vec![s.state_id])),
        }
    }
    groups
        .into_iter()
        .map(|(_, ids)| ids)
        .filter(|ids| ids.len() > 1)
        .collect()
}

/// An earlier revision of a state.
#[derive(Debug, Clone, Serialize)]
pub struct Revision {
    /// Its number.
    pub revision: i32,
    /// What it said then.
    pub body_text: String,
    /// Its status then.
    pub status: String,
    /// Why it was made.
    pub reason: String,
}

/// Each state's revisions before its current one, oldest first (states never revised are
/// left out).
pub async fn history(
    pool: &PgPool,
    states: &[MemoryState],
) -> sqlx::Result<BTreeMap<Uuid, Vec<Revision>>> {
    let revised: Vec<Uuid> = states
        .iter()
        .filter(|s| s.revision > 1)
        .map(|s| s.state_id)
        .collect();
    if revised.is_empty() {
        return Ok(BTreeMap::new());
    }
    let current: HashMap<Uuid, i32> = states.iter().map(|s| (s.state_id, s.revision)).collect();
    let rows = sqlx::query_as::<_, (Uuid, i32, Option<String>, Option<String>, Option<String>)>(
        "SELECT state_id, revision, state->>'body_text', state->>'status', state->>'reason' \
         FROM memory_state_revisions WHERE state_id = ANY($1) ORDER BY state_id, revision",
    )
    .bind(&revised)
    .fetch_all(pool)
    .await?;
    let mut out: BTreeMap<Uuid, Vec<Revision>> = BTreeMap::new();
    for (id, revision, body, status, reason) in rows {
        if current.get(&id).is_some_and(|&now| revision < now) {
            out.entry(id).or_default().push(Revision {
                revision,
                body_text: body.unwrap_or_default(),
                status: status.unwrap_or_default(),
                reason: reason.unwrap_or_default(),
            });
        }
    }
    Ok(out)
}

/// What an evidence id is.
#[derive(Debug, Clone, Serialize)]
pub struct Evidence {
    /// The event's type (`UserMessageReceived`, `AssistantReplied`, `ActionResultRecorded`,
    /// `MemoryEditRequested`, …).
    pub event_type: String,
    /// When it was recorded.
    pub recorded_at: DateTime<Utc>,
    /// When it is something said: the words, who said them, where.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub said: Option<Said>,
}

/// Something said in a conversation, as the conversation shows it.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Said {
    /// The words.
    pub text: String,
    /// `user` or `assistant`.
    pub role: String,
    /// Who said them (a person id, or the persona's).
    pub speaker: String,
    /// Where (`http`, `line`, `slack`, `telegram`, `autonomy_message`).
    pub source: String,
    /// The conversation.
    pub session_id: String,
    /// Its place in the conversation.
    pub position: i64,
}

/// What each of `ids` is (ids the store does not hold, such as those of forgotten
/// messages, are left out): two reads by primary key.
pub async fn evidence(pool: &PgPool, ids: &[Uuid]) -> sqlx::Result<BTreeMap<Uuid, Evidence>> {
    if ids.is_empty() {
        return Ok(BTreeMap::new());
    }
    let events = sqlx::query_as::<_, (Uuid, String, DateTime<Utc>)>(
        "SELECT event_id, event_type, recorded_at FROM events WHERE event_id = ANY($1)",
    )
    .bind(ids)
    .fetch_all(pool)
    .await?;
    let said: HashMap<Uuid, Said> = sqlx::query_as::<
        _,
        (Uuid, String, String, String, String, String, i64),
    >(
        "SELECT event_id, text, role, speaker, source, session_id, position FROM assistant_text \
         WHERE event_id = ANY($1)",
    )
    .bind(ids)
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|(id, text, role, speaker, source, session_id, position)| {
        let said = Said {
            text,
            role,
            speaker,
            source,
            session_id,
            position,
        };
        (id, said)
    })
    .collect();
    let mut said = said;
    Ok(events
        .into_iter()
        .map(|(id, event_type, recorded_at)| {
            let evidence = Evidence {
                event_type,
                recorded_at,
                said: said.remove(&id),
            };
            (id, evidence)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ghost_shared::memory::vocab::{StateKind, StateStatus};

    fn state(body: &str, person: Option<&str>, kind: StateKind) -> MemoryState {
        serde_json::from_value(serde_json::json!({
            "state_id": Uuid::new_v4(), "kind": kind, "status": StateStatus::Active,
            "body_text": body, "person": person,
        }))
        .unwrap()
    }

    #[test]
    fn the_same_words_of_the_same_person_are_one_memory() {
        let a = state("マスターは京都に住んでいる", Some("user"), StateKind::Fact);
        let b = state(
            " マスターは、京都に住んでいる。",
            Some("user"),
            StateKind::Fact,
        );
        let c = state("Master lives in KYOTO", Some("user"), StateKind::Fact);
        let d = state("master lives in kyoto!", Some("user"), StateKind::Fact);
        let other_person = state("マスターは京都に住んでいる", Some("ann"), StateKind::Fact);
        let no_one = state("マスターは京都に住んでいる", None, StateKind::Fact);
        let a_task = state("マスターは京都に住んでいる", Some("user"), StateKind::Task);
        let different = state("マスターは大阪に住んでいる", Some("user"), StateKind::Fact);
        let all = [&a, &b, &c, &d, &other_person, &no_one, &a_task, &different];
        let states: Vec<MemoryState> = all.iter().map(|s| (*s).clone()).collect();
        assert_eq!(
            duplicates(&states),
            vec![vec![a.state_id, b.state_id], vec![c.state_id, d.state_id]]
        );
    }

    #[test]
    fn punctuation_alone_is_no_memory_to_merge() {
        let a = state("…", Some("user"), StateKind::Fact);
        let b = state("!!", Some("user"), StateKind::Fact);
        assert!(duplicates(&[a, b]).is_empty());
    }
}
