//! The redaction that forgets a person, in one transaction (what and why:
//! [`crate::memory::forget_person`]): selects the person's events and the events that carry
//! their words, rewrites them under the store's redaction rule (migration 0115), deletes the
//! projections' rows derived from them, and records the request as carried out. Selection
//! reads payloads without an index: forgetting is rare, and one pass over the store is its
//! cost (see BENCHMARKS.md).

use std::collections::BTreeMap;

use serde_json::Value;
use sqlx::{Postgres, Row, Transaction};
use uuid::Uuid;

use super::{EventStore, StoreError};
use crate::memory::forget_person::{
    redacted, scrub, KEPT_IN_THEIR_TURNS, REDACTED, SCRUBBED_IN_SHARED_CONVERSATIONS,
    SCRUBBED_IN_THEIR_TURNS,
};
use crate::projector::projection_lock_key;

/// What one request changed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Redaction {
    /// Every event rewritten (whole or scrubbed).
    pub event_ids: Vec<Uuid>,
    /// Redacted whole, per original type.
    pub redacted: BTreeMap<String, usize>,
    /// Scrubbed, per type.
    pub scrubbed: BTreeMap<String, usize>,
}

/// The types a person's words arrive in, each with where its speaker is.
const SAID: &str = "\
INSERT INTO forget_said \
SELECT event_id, payload->>'session_id', position FROM events \
 WHERE (event_type IN ('UserMessageReceived', 'ImageReceived', 'LineImageReceived', \
        'SlackImageReceived') AND payload->>'speaker' = $1) \
    OR (event_type = 'ConversationLineImported' AND payload->'line'->>'role' = 'user' \
        AND payload->'line'->>'speaker' = $1)";

/// Every event of the turns their words started (the words included).
const THEIR_TURNS: &str = "\
INSERT INTO forget_turns \
SELECT e.event_id, e.event_type FROM events e \
 WHERE e.metadata->>'correlation_id' IN (SELECT event_id::text FROM forget_said) \
    OR e.event_id IN (SELECT event_id FROM forget_said) \
ON CONFLICT DO NOTHING";

/// The persona's imported lines in imported conversations where nobody else spoke.
const THEIR_IMPORTED_CONVERSATIONS: &str = "\
INSERT INTO forget_turns \
SELECT e.event_id, e.event_type FROM events e \
 WHERE e.event_type = 'ConversationLineImported' AND e.payload->'line'->>'role' = 'assistant' \
   AND e.payload->>'session_id' IN (SELECT session_id FROM forget_said) \
   AND NOT EXISTS (SELECT 1 FROM events o WHERE o.event_type = 'ConversationLineImported' \
        AND o.payload->>'session_id' = e.payload->>'session_id' \
        AND o.payload->'line'->>'role' = 'user' AND o.payload->'line'->>'speaker' <> $1) \
ON CONFLICT DO NOTHING";

/// States about the person (a state without `person` is the default person's), and states
/// about no one that rest on their turns.
const THEIR_STATES: &str = "\
INSERT INTO forget_states \
SELECT DISTINCT s->>'state_id' FROM ( \
  SELECT payload->'state' AS s FROM events \
   WHERE event_type IN ('StateUpserted', 'StateClosed', 'MemoryCorrected')) x \
 WHERE jsonb_typeof(s) = 'object' \
   AND ((NOT s ? 'person' AND $1 = 'user') OR s->>'person' = $1 \
        OR (s->'person' = 'null'::jsonb AND EXISTS ( \
            SELECT 1 FROM jsonb_array_elements_text(s->'evidence_event_ids') ev \
              JOIN forget_turns f ON f.event_id::text = ev))) \
ON CONFLICT DO NOTHING";

/// Memory events about them or their states, and annotations of their turns.
const THEIR_MEMORY: &str = "\
INSERT INTO forget_turns \
SELECT e.event_id, e.event_type FROM events e \
 WHERE (e.event_type IN ('StateUpserted', 'StateClosed') \
        AND e.payload->'state'->>'state_id' IN (SELECT state_id FROM forget_states)) \
    OR (e.event_type = 'PreferenceUpdated' \
        AND coalesce(e.payload->'preference'->>'person', 'user') = $1) \
    OR (e.event_type = 'MemoryCorrected' \
        AND (e.payload->'state'->>'state_id' IN (SELECT state_id FROM forget_states) \
             OR EXISTS (SELECT 1 FROM jsonb_array_elements(e.payload->'preferences') p \
                         WHERE coalesce(p->'preference'->>'person', 'user') = $1))) \
    OR (e.event_type IN ('MemoryEditRequested', 'MemoryForgotten') \
        AND (e.payload->'target'->'state'->>'state_id' IN (SELECT state_id FROM forget_states) \
             OR e.payload->'target'->'preference'->>'person' = $1)) \
    OR (e.event_type = 'EventAnnotated' \
        AND e.payload->>'source_event_id' IN (SELECT event_id::text FROM forget_turns)) \
ON CONFLICT DO NOTHING";

/// Their reminders, every step of them: each carries the words they asked to be reminded
/// of, and a reminder of someone forgotten must not come due later.
const THEIR_REMINDERS: &str = "\
INSERT INTO forget_turns \
SELECT e.event_id, e.event_type FROM events e \
 WHERE e.event_type IN ('ReminderScheduled', 'ReminderChanged', 'ReminderCancelled', \
        'ReminderDue', 'ReminderDelivered', 'ReminderMissed', 'ReminderZoneSet', \
        'ReminderQuietHoursSet') \
   AND e.payload->>'person' = $1 \
ON CONFLICT DO NOTHING";

/// Other people's steps carrying the context of a conversation the person took part in,
/// from their first message there, and recalls that selected one of their memories.
const SHARED: &str = "\
WITH c AS (SELECT session_id, min(position) AS since FROM forget_said GROUP BY session_id) \
SELECT e.event_id, e.event_type, e.payload FROM events e \
  JOIN c ON c.session_id = e.payload->>'session_id' AND e.position > c.since \
 WHERE e.event_type = ANY($1) AND NOT e.payload ? 'redacted_by' \
   AND NOT EXISTS (SELECT 1 FROM forget_turns f WHERE f.event_id = e.event_id) \
UNION ALL \
SELECT e.event_id, e.event_type, e.payload FROM events e \
 WHERE e.event_type = 'RecallPerformed' AND NOT e.payload ? 'redacted_by' \
   AND NOT EXISTS (SELECT 1 FROM forget_turns f WHERE f.event_id = e.event_id) \
   AND EXISTS (SELECT 1 FROM jsonb_array_elements_text(e.payload->'selected_ids') s \
                WHERE s IN (SELECT 'event:' || event_id FROM forget_turns \
                            UNION ALL SELECT 'state:' || state_id FROM forget_states))";

/// The projections' rows derived from what was rewritten (a rebuild would not make them).
/// `$1`: the rewritten events' ids; `$2`: the person.
const DERIVED: [&str; 15] = [
    "DELETE FROM assistant_text WHERE event_id = ANY($1)",
    "DELETE FROM routing_log WHERE user_event_id = ANY($1) \
       AND user_event_id IN (SELECT event_id FROM forget_said)",
    "DELETE FROM analyze_results WHERE event_id = ANY($1) \
       OR user_event_id IN (SELECT event_id FROM forget_said)",
    "UPDATE routing_sessions SET summary = NULL WHERE session_id IN ( \
       SELECT payload->>'session_id' FROM events WHERE event_id = ANY($1) \
          AND event_type = 'SessionSummarized')",
    "DELETE FROM memory_states WHERE state_id::text IN (SELECT state_id FROM forget_states)",
    "DELETE FROM memory_state_revisions \
      WHERE state_id::text IN (SELECT state_id FROM forget_states)",
    "DELETE FROM preferences WHERE person = $2",
    "DELETE FROM memory_event_annotations WHERE source_event_id = ANY($1)",
    "DELETE FROM memory_forgotten WHERE source_event_id = ANY($1)",
    "DELETE FROM memory_embeddings WHERE item_id IN ( \
       SELECT 'event:' || id FROM unnest($1::uuid[]) id \
       UNION ALL SELECT 'state:' || state_id FROM forget_states)",
    "DELETE FROM reminders WHERE person = $2",
    "DELETE FROM reminder_zones WHERE person = $2",
    "DELETE FROM reminder_quiet_hours WHERE person = $2",
    "DELETE FROM projection_parked WHERE event_id = ANY($1)",
    "DELETE FROM outbox WHERE position IN (SELECT position FROM events WHERE event_id = ANY($1))",
];

/// Images they sent, from the media store.
const MEDIA: &str = "\
DELETE FROM media WHERE id::text IN ( \
  SELECT payload->'image'->>'media_id' FROM events WHERE event_id = ANY($1))";

impl EventStore {
    /// Forgets `person` for request `request` (see the module). A request carried out
    /// before changes nothing and returns what it changed then.
    pub async fn forget_person(
        &self,
        person: &str,
        request: Uuid,
    ) -> Result<Redaction, StoreError> {
        let mut tx = self.pool().begin().await?;
        if let Some(done) = carried_out(&mut tx, request).await? {
            return Ok(done);
        }
        sqlx::query("SELECT set_config('ghost.redaction', $1, true)")
            .bind(request.to_string())
            .execute(&mut *tx)
            .await?;
        hold_projections(&mut tx).await?;
        for table in [
            "forget_said (event_id uuid PRIMARY KEY, session_id text, position bigint)",
            "forget_turns (event_id uuid PRIMARY KEY, event_type text)",
            "forget_states (state_id text PRIMARY KEY)",
        ] {
            sqlx::query(&format!("CREATE TEMP TABLE {table} ON COMMIT DROP"))
                .execute(&mut *tx)
                .await?;
        }
        for step in [
            SAID,
            THEIR_TURNS,
            THEIR_IMPORTED_CONVERSATIONS,
            THEIR_STATES,
            THEIR_MEMORY,
            THEIR_REMINDERS,
        ] {
            let q = sqlx::query(step);
            let q = if step.contains("$1") {
                q.bind(person)
            } else {
                q
            };
            q.execute(&mut *tx).await?;
            // Their sizes, for the next step's plan (a temporary table has no statistics).
            sqlx::query("ANALYZE forget_said, forget_turns, forget_states")
                .execute(&mut *tx)
                .await?;
        }
        let mut done = Redaction::default();
        // Their turns' images go before the events naming them are rewritten.
        let turn_ids: Vec<Uuid> = sqlx::query_scalar("SELECT event_id FROM forget_turns")
            .fetch_all(&mut *tx)
            .await?;
        sqlx::query(MEDIA).bind(&turn_ids).execute(&mut *tx).await?;
        let theirs = sqlx::query(
            "SELECT e.event_id, e.event_type, e.payload FROM events e \
              JOIN forget_turns f ON f.event_id = e.event_id \
             WHERE e.event_type <> $1 AND NOT e.payload ? 'redacted_by' \
               AND e.event_type <> ALL($2)",
        )
        .bind(REDACTED)
        .bind(KEPT_IN_THEIR_TURNS.map(String::from).to_vec())
        .fetch_all(&mut *tx)
        .await?;
        let shared = sqlx::query(SHARED)
            .bind(SCRUBBED_IN_SHARED_CONVERSATIONS.map(String::from).to_vec())
            .fetch_all(&mut *tx)
            .await?;
        let mut ids = Vec::new();
        let mut types = Vec::new();
        let mut payloads = Vec::new();
        for (row, theirs) in theirs
            .iter()
            .map(|r| (r, true))
            .chain(shared.iter().map(|r| (r, false)))
        {
            let id: Uuid = row.try_get(0)?;
            let event_type: String = row.try_get(1)?;
            let payload: Value = row.try_get(2)?;
            let whole = theirs && !SCRUBBED_IN_THEIR_TURNS.contains(&event_type.as_str());
            let (new_type, new_payload) = match (whole, scrub(&event_type, &payload, request)) {
                (false, Some(scrubbed)) => {
                    *done.scrubbed.entry(event_type.clone()).or_default() += 1;
                    (event_type, scrubbed)
                }
                (false, None) if !theirs => continue,
                _ => {
                    *done.redacted.entry(event_type.clone()).or_default() += 1;
                    (REDACTED.to_owned(), redacted(&event_type, request))
                }
            };
            ids.push(id);
            types.push(new_type);
            payloads.push(new_payload);
        }
        sqlx::query(
            "UPDATE events e SET event_type = v.event_type, payload = v.payload \
               FROM unnest($1::uuid[], $2::text[], $3::jsonb[]) AS v(event_id, event_type, payload) \
              WHERE e.event_id = v.event_id",
        )
        .bind(&ids)
        .bind(&types)
        .bind(&payloads)
        .execute(&mut *tx)
        .await?;
        for statement in DERIVED {
            let q = sqlx::query(statement).bind(&ids);
            let q = if statement.contains("$2") {
                q.bind(person)
            } else {
                q
            };
            q.execute(&mut *tx).await?;
        }
        sqlx::query(
            "INSERT INTO person_redactions (request_id, person, event_ids, redacted, scrubbed) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(request)
        .bind(person)
        .bind(&ids)
        .bind(serde_json::to_value(&done.redacted).unwrap_or_default())
        .bind(serde_json::to_value(&done.scrubbed).unwrap_or_default())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        done.event_ids = ids;
        Ok(done)
    }
}

impl EventStore {
    /// Those of `events` that were forgotten with a person (redacted whole or scrubbed): a
    /// later plan resting on one would bring back what they said.
    pub async fn redacted_among(&self, events: &[Uuid]) -> Result<Vec<Uuid>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT event_id FROM events WHERE event_id = ANY($1) AND payload ? 'redacted_by'",
        )
        .bind(events)
        .fetch_all(self.pool())
        .await?)
    }
}

/// What `request` changed, if it was carried out already.
async fn carried_out(
    tx: &mut Transaction<'_, Postgres>,
    request: Uuid,
) -> Result<Option<Redaction>, StoreError> {
    let Some(row) = sqlx::query(
        "SELECT event_ids, redacted, scrubbed FROM person_redactions WHERE request_id = $1",
    )
    .bind(request)
    .fetch_optional(&mut **tx)
    .await?
    else {
        return Ok(None);
    };
    let counts = |v: Value| serde_json::from_value(v).unwrap_or_default();
    Ok(Some(Redaction {
        event_ids: row.try_get(0)?,
        redacted: counts(row.try_get(1)?),
        scrubbed: counts(row.try_get(2)?),
    }))
}

/// Waits for, then holds until commit, every projection's lock: a pass applying an event
/// being rewritten would otherwise commit its rows after these are deleted.
pub(super) async fn hold_projections(tx: &mut Transaction<'_, Postgres>) -> Result<(), StoreError> {
    // In name order: two redactions at once take them in the same order, never crosswise.
    let names: Vec<String> =
        sqlx::query_scalar("SELECT name FROM projection_checkpoints ORDER BY name")
            .fetch_all(&mut **tx)
            .await?;
    for name in names {
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(projection_lock_key(&name))
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}
