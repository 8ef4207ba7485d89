//! `analyze_results`: every contract-conforming ANALYZE result as structured JSON, per
//! session, so later ANALYZE turns can build on earlier ones.

use ghost_shared::envelope::{EventPayload, RecordedEvent};
use ghost_shared::events::WorkerCompleted;
use ghost_shared::projector::ProjectionError;
use serde_json::{json, Value};
use sqlx::{PgExecutor, Postgres, Transaction};

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

impl AnalyzeResults {
    /// Applies one event, inside the `routing` projection's transaction.
    pub(crate) async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        if event.event_type != WorkerCompleted::EVENT_TYPE {
            return Ok(());
        }
        let done: WorkerCompleted = event
            .decode()
            .map_err(|e| ProjectionError::decode(event, e))?;
        if done.route != Route::Analyze {
            return Ok(());
        }
        // Output that breaks the contract is a failure, not a result worth keeping.
        let Ok(result) = parse_worker_output(&done.result) else {
            return Ok(());
        };
        // A JSON result (the usual case for ANALYZE) is kept as JSON, not as text.
        let data = serde_json::from_str::<Value>(&result.result)
            .unwrap_or_else(|_| Value::String(result.result.clone()));
        let stored = json!({
            "result": data,
            "confidence": result.confidence,
            "risk": result.risk,
        });
        sqlx::query(
            "INSERT INTO analyze_results (event_id, session_id, position, user_event_id, result, recorded_at) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (event_id) DO NOTHING",
        )
        .bind(event.event_id)
        .bind(&done.session_id)
        .bind(event.position)
        .bind(done.user_event_id)
        .bind(stored)
        .bind(event.recorded_at)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

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
