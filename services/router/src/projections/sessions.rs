//! `routing_sessions`: per session the `local_only` flag, the last primary route and the
//! short-memory summary the worker keeps.

use ghost_shared::envelope::{EventPayload, RecordedEvent};
use ghost_shared::events::{RouteDecided, SessionSummarized};
use ghost_shared::projector::ProjectionError;
use sqlx::{PgExecutor, Postgres, Row, Transaction};

/// One row of `routing_sessions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    /// The conversation.
    pub session_id: String,
    /// No cloud call while set.
    pub local_only: bool,
    /// The last primary route (declarations compare against it).
    pub last_primary_route: Option<String>,
    /// The short-memory summary, once the history grew past its limit.
    pub summary: Option<String>,
    /// User messages the summary covers.
    pub summary_turns: i32,
}

/// The `routing_sessions` table, one part of the `routing` projection: no checkpoint or CLI name
/// of its own (`ghost projections rebuild routing` rebuilds it).
#[derive(Debug, Default, Clone, Copy)]
pub struct RoutingSessions;

impl RoutingSessions {
    /// The row of one session, if it was ever routed.
    pub async fn get<'e>(
        executor: impl PgExecutor<'e>,
        session_id: &str,
    ) -> Result<Option<SessionRow>, sqlx::Error> {
        let row = sqlx::query(
            "SELECT session_id, local_only, last_primary_route, summary, summary_turns \
             FROM routing_sessions WHERE session_id = $1",
        )
        .bind(session_id)
        .fetch_optional(executor)
        .await?;
        row.map(|r| {
            Ok(SessionRow {
                session_id: r.try_get(0)?,
                local_only: r.try_get(1)?,
                last_primary_route: r.try_get(2)?,
                summary: r.try_get(3)?,
                summary_turns: r.try_get(4)?,
            })
        })
        .transpose()
    }

    /// The session's summary, if any.
    pub async fn summary<'e>(
        executor: impl PgExecutor<'e>,
        session_id: &str,
    ) -> Result<Option<String>, sqlx::Error> {
        Ok(Self::get(executor, session_id)
            .await?
            .and_then(|r| r.summary))
    }

    /// Applies one event, inside the `routing` projection's transaction.
    pub(crate) async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        match event.event_type.as_str() {
            RouteDecided::EVENT_TYPE => {
                let d: RouteDecided = event
                    .decode()
                    .map_err(|e| ProjectionError::decode(event, e))?;
                let primary = d.primary.then_some(d.route.as_str());
                sqlx::query(
                    "INSERT INTO routing_sessions (session_id, local_only, last_primary_route, updated_at) \
                     VALUES ($1, $2, $3, $4) ON CONFLICT (session_id) DO UPDATE SET \
                     local_only = $2, last_primary_route = COALESCE($3, routing_sessions.last_primary_route), \
                     updated_at = $4",
                )
                .bind(&d.session_id)
                .bind(d.local_only)
                .bind(primary)
                .bind(event.recorded_at)
                .execute(&mut **tx)
                .await?;
            }
            SessionSummarized::EVENT_TYPE => {
                let s: SessionSummarized = event
                    .decode()
                    .map_err(|e| ProjectionError::decode(event, e))?;
                let turns = i32::try_from(s.user_turns).unwrap_or(i32::MAX);
                sqlx::query(
                    "INSERT INTO routing_sessions (session_id, summary, summary_turns, updated_at) \
                     VALUES ($1, $2, $3, $4) ON CONFLICT (session_id) DO UPDATE SET \
                     summary = CASE WHEN $3 >= routing_sessions.summary_turns THEN $2 ELSE routing_sessions.summary END, \
                     summary_turns = GREATEST($3, routing_sessions.summary_turns), updated_at = $4",
                )
                .bind(&s.session_id)
                .bind(&s.summary)
                .bind(turns)
                .bind(event.recorded_at)
                .execute(&mut **tx)
                .await?;
            }
            _ => {}
        }
        Ok(())
    }

    /// Empties the table, inside the `routing` projection's rebuild.
    pub(crate) async fn reset(
        &self,
        tx: &mut Transaction<'_, Postgres>,
    ) -> Result<(), ProjectionError> {
        sqlx::query("DELETE FROM routing_sessions")
            .execute(&mut **tx)
            .await?;
        Ok(())
    }
}
