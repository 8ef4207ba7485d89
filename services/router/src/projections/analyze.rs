//! `analyze_results`: every contract-conforming ANALYZE result as structured JSON, per
//! session, so later ANALYZE turns can build on earlier ones.

use chrono::{DateTime, Utc};
use ghost_shared::envelope::{EventPayload, RecordedEvent};
use ghost_shared::events::WorkerCompleted;
use ghost_shared::projector::ProjectionError;
use serde::Serialize;
use serde_json::{json, Value};
use sqlx::{PgExecutor, Postgres, Transaction};
use uuid::Uuid;

use crate::routing::{parse_worker_output, Route};

/// The `analyze_results` table, one part of the `routing` projection: no checkpoint or CLI name
/// of its own (`ghost projections rebuild routing` rebuilds it).
#[derive(Debug, Default, Clone, Copy)]
pub struct AnalyzeResults;

impl AnalyzeResults {
    /// The last `limit` ANALYZE results of a session, oldest first.
    pub async fn recent<'e>(
        executor: impl PgExecutor<'e>,
        session_id: &str,
        limit: i64,
    ) -> Result<Vec<Value>, sqlx::Error> {
        sqlx::query_scalar(
            "SELECT result FROM (SELECT result, position FROM analyze_results \
             WHERE session_id = $1 ORDER BY position DESC LIMIT $2) t ORDER BY position",
        )
        .bind(session_id)
        .bind(limit)
        .fetch_all(executor)
        .await
    }
}

/// One `analyze_results` row a pass adds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct AnalyzeRow {
    event_id: Uuid,
    session_id: String,
    position: i64,
    user_event_id: Uuid,
    result: Value,
    recorded_at: DateTime<Utc>,
}

/// The row a contract-conforming ANALYZE result adds, if `event` is one.
pub(crate) fn analyze_row(event: &RecordedEvent) -> Result<Option<AnalyzeRow>, ProjectionError> {
    if event.event_type != WorkerCompleted::EVENT_TYPE {
        return Ok(None);
    }
    let done: WorkerCompleted = event
        .decode()
        .map_err(|e| ProjectionError::decode(event, e))?;
    if done.route != Route::Analyze {
        return Ok(None);
    }
    // Output that breaks the contract is a failure, not a result worth keeping.
    let Ok(result) = parse_worker_output(&done.result) else {
        return Ok(None);
    };
    // A JSON result (the usual case for ANALYZE) is kept as JSON, not as text.
    let data = serde_json::from_str::<Value>(&result.result)
        .unwrap_or_else(|_| Value::String(result.result.clone()));
    Ok(Some(AnalyzeRow {
        event_id: event.event_id,
        session_id: done.session_id,
        position: event.position,
        user_event_id: done.user_event_id,
        result: json!({
            "result": data,
            "confidence": result.confidence,
            "risk": result.risk,
        }),
        recorded_at: event.recorded_at,
    }))
}

impl AnalyzeResults {
    /// Empties the table, inside the `routing` projection's rebuild.
    pub(crate) async fn reset(
        &self,
        tx: &mut Transaction<'_, Postgres>,
    ) -> Result<(), ProjectionError> {
        sqlx::query("DELETE FROM analyze_results")
            .execute(&mut **tx)
            .await?;
        Ok(())
    }
}
