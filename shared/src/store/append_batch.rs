//! Group commit: many appends in one transaction (`ghost_append_batch`, migration 0090).
//!
//! Where many small appends wait on their own commit (one webhook each), one transaction
//! shares the commit's fsync among all of them. Each request keeps [`EventStore::append`]'s
//! meaning: idempotent by event id, checked against its expected version, with outbox rows.

use sqlx::Row;

use super::append::{events_json, SENT_BACK_ONLY_WHEN_STORED};
use super::{read::row_to_appended, AppendOutcome, EventStore, ExpectedVersion, StoreError};
use crate::envelope::NewEvent;

/// One append of a batch: events for one stream.
#[derive(Debug, Clone)]
pub struct AppendRequest {
    /// The stream.
    pub stream: String,
    /// What the caller believes the stream's version to be.
    pub expected: ExpectedVersion,
    /// The events, appended atomically together.
    pub events: Vec<NewEvent>,
}

impl EventStore {
    /// Appends every request in one transaction, in the order given (so one stream's
    /// requests keep their order), and returns one result per request.
    ///
    /// A request the database refuses (a version conflict, reused ids) commits nothing of
    /// its own and does not stop the others; it is then tried alone with
    /// [`EventStore::append`], whose typed error (or success, after a lost race) is its
    /// result. The outer error means nothing was committed.
    pub async fn append_batch(
        &self,
        requests: &[AppendRequest],
    ) -> Result<Vec<Result<AppendOutcome, StoreError>>, StoreError> {
        let mut results: Vec<Option<Result<AppendOutcome, StoreError>>> =
            requests.iter().map(|_| None).collect();
        let mut body = Vec::with_capacity(requests.len());
        // The SQL side numbers requests from 1 over the non-empty ones.
        let mut sent: Vec<usize> = Vec::with_capacity(requests.len());
        for (i, r) in requests.iter().enumerate() {
            if r.events.is_empty() {
                results[i] = Some(Err(StoreError::Empty));
                continue;
            }
            if let Err(e) = self.check_declared(&r.events) {
                results[i] = Some(Err(e));
                continue;
            }
            sent.push(i);
            body.push(serde_json::json!({
                "stream": r.stream,
                "expected": r.expected.as_sql(),
                "events": events_json(&r.events),
            }));
        }
        let mut refused = vec![false; requests.len()];
        if !body.is_empty() {
            let rows = sqlx::query(&format!(
                "SELECT request, error_code, position, tx_id, event_id, stream, version, \
                 event_type, schema_version, {SENT_BACK_ONLY_WHEN_STORED}, recorded_at, duplicate \
                 FROM ghost_append_batch($1)"
            ))
            .bind(serde_json::Value::Array(body))
            .fetch_all(&self.pool)
            .await?;
            let mut outcomes: Vec<AppendOutcome> = sent
                .iter()
                .map(|_| AppendOutcome {
                    events: Vec::new(),
                    duplicate: false,
                })
                .collect();
            for row in &rows {
                let request: i32 = row.try_get("request")?;
                let slot = usize::try_from(request - 1)
                    .ok()
                    .filter(|s| *s < sent.len())
                    .ok_or_else(|| StoreError::Corrupt {
                        position: 0,
                        reason: format!("ghost_append_batch answered for request {request}"),
                    })?;
                if row.try_get::<Option<String>, _>("error_code")?.is_some() {
                    refused[sent[slot]] = true;
                    continue;
                }
                let duplicate = row.try_get::<bool, _>("duplicate")?;
                outcomes[slot].duplicate = duplicate;
                let sent_events = &requests[sent[slot]].events;
                outcomes[slot]
                    .events
                    .push(row_to_appended(row, duplicate, sent_events)?);
            }
            self.woken_by(
                outcomes
                    .iter()
                    .enumerate()
                    .filter(|(slot, _)| !refused[sent[*slot]])
                    .map(|(_, o)| o),
            );
            for (slot, outcome) in outcomes.into_iter().enumerate() {
                if !refused[sent[slot]] {
                    results[sent[slot]] = Some(Ok(outcome));
                }
            }
        }
        for (i, r) in requests.iter().enumerate() {
            if refused[i] {
                results[i] = Some(self.append(&r.stream, r.expected, &r.events).await);
            }
        }
        Ok(results
            .into_iter()
            .map(|r| r.unwrap_or(Err(StoreError::Empty)))
            .collect())
    }
}
