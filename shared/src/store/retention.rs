//! Retention of raw conversation text (seed 002: conversation history is not stored in full
//! text, to limit what can leak; issue 47 item 3). A channel's lines older than its
//! retention (`memory.raw_text_retention_days`) are redacted the way forgetting a person
//! redacts them ([`crate::memory::forget_person`]), in one audited transaction: the user's
//! message whole (`EventRedacted`, naming the request), the persona's reply in that turn
//! scrubbed (its text emptied, its affect kept, so the mood stays as it was lived). What
//! memory made of them stays: session summaries, states, preferences, annotations and the
//! interest state. The projections' rows holding their words go in the same transaction
//! (`assistant_text`, their vectors).

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::Row;
use uuid::Uuid;

use super::forget::{hold_projections, Redaction};
use super::{EventStore, StoreError};
use crate::memory::forget_person::{redacted, scrub, REDACTED};

/// The user messages of `$1` (a channel) recorded before `$2`, not yet redacted.
const EXPIRED: &str = "\
SELECT event_id, event_type, payload FROM events \
 WHERE event_type = 'UserMessageReceived' AND payload->>'channel' = $1 \
   AND recorded_at < $2 AND NOT payload ? 'redacted_by'";

/// The persona's replies in the turns those messages started.
const THEIR_REPLIES: &str = "\
SELECT event_id, event_type, payload FROM events \
 WHERE event_type = 'AssistantReplied' AND metadata->>'correlation_id' = ANY($1) \
   AND NOT payload ? 'redacted_by'";

/// The projections' rows holding their words.
const DERIVED: [&str; 2] = [
    "DELETE FROM assistant_text WHERE event_id = ANY($1)",
    "DELETE FROM memory_embeddings WHERE item_id IN (SELECT 'event:' || id FROM unnest($1::uuid[]) id)",
];

impl EventStore {
    /// Redacts the raw text of `channel`'s lines recorded before `before`, as request
    /// `request` (see the module); what it changed (nothing when every such line is gone).
    pub async fn expire_raw_text(
        &self,
        channel: &str,
        before: DateTime<Utc>,
        request: Uuid,
    ) -> Result<Redaction, StoreError> {
        let mut tx = self.pool().begin().await?;
        let said = sqlx::query(EXPIRED)
            .bind(channel)
            .bind(before)
            .fetch_all(&mut *tx)
            .await?;
        let mut done = Redaction::default();
        if said.is_empty() {
            return Ok(done);
        }
        sqlx::query("SELECT set_config('ghost.redaction', $1, true)")
            .bind(request.to_string())
            .execute(&mut *tx)
            .await?;
        hold_projections(&mut tx).await?;
        let said_ids: Vec<String> = said
            .iter()
            .map(|r| r.try_get::<Uuid, _>(0).map(|id| id.to_string()))
            .collect::<Result<_, _>>()?;
        let replies = sqlx::query(THEIR_REPLIES)
            .bind(&said_ids)
            .fetch_all(&mut *tx)
            .await?;
        let (mut ids, mut types, mut payloads) = (Vec::new(), Vec::new(), Vec::new());
        for row in said.iter().chain(&replies) {
            let id: Uuid = row.try_get(0)?;
            let event_type: String = row.try_get(1)?;
            let payload: Value = row.try_get(2)?;
            let (new_type, new_payload) = match scrub(&event_type, &payload, request) {
                Some(scrubbed) => {
                    *done.scrubbed.entry(event_type.clone()).or_default() += 1;
                    (event_type, scrubbed)
                }
                None => {
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
            sqlx::query(statement).bind(&ids).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        done.event_ids = ids;
        Ok(done)
    }
}
