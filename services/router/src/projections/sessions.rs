//! `routing_sessions`: per session the `local_only` flag, the last primary route and the
//! short-memory summary the worker keeps.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use ghost_shared::envelope::RecordedEvent;
use ghost_shared::events::{RouteDecided, SessionSummarized};
use ghost_shared::projector::ProjectionError;
use serde::Serialize;
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

/// What a pass's events change in one `routing_sessions` row, folded in their order, as the
/// events one by one would change it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct SessionChange {
    session_id: String,
    /// A route decision: its `local_only` overwrites the row's.
    route_set: bool,
    local_only: bool,
    /// The last primary route of the pass, if any was primary.
    primary_route: Option<String>,
    /// A summary: the one covering the most turns (the later on a tie) replaces the row's
    /// unless the row's covers more.
    summary_set: bool,
    summary: Option<String>,
    summary_turns: i32,
    updated_at: DateTime<Utc>,
}

/// A pass's changes to `routing_sessions`, one per session.
#[derive(Debug, Default)]
pub(crate) struct SessionChanges {
    rows: Vec<SessionChange>,
    index: HashMap<String, usize>,
}

ghost_shared::event_enum! {
    /// What the sessions fold reads.
    enum SessionsInput {
        RouteDecided,
        SessionSummarized,
    }
}

impl SessionChanges {
    /// The changes, for the pass's statement (empty when no event touched the table).
    pub(crate) fn rows(&self) -> &[SessionChange] {
        &self.rows
    }

    fn row(&mut self, session_id: &str, at: DateTime<Utc>) -> &mut SessionChange {
        let next = self.rows.len();
        let i = *self.index.entry(session_id.to_owned()).or_insert(next);
        if i == next {
            self.rows.push(SessionChange {
                session_id: session_id.to_owned(),
                route_set: false,
                local_only: false,
                primary_route: None,
                summary_set: false,
                summary: None,
                summary_turns: 0,
                updated_at: at,
            });
        }
        let row = &mut self.rows[i];
        row.updated_at = at;
        row
    }

    /// Folds one event in (events of other types change nothing).
    pub(crate) fn add(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
        match SessionsInput::decode(event).map_err(|e| ProjectionError::decode(event, e))? {
            Some(SessionsInput::RouteDecided(d)) => {
                let row = self.row(&d.session_id, event.recorded_at);
                row.route_set = true;
                row.local_only = d.local_only;
                if d.primary {
                    row.primary_route = Some(d.route.as_str().to_owned());
                }
            }
            Some(SessionsInput::SessionSummarized(s)) => {
                let turns = i32::try_from(s.user_turns).unwrap_or(i32::MAX);
                let row = self.row(&s.session_id, event.recorded_at);
                if !row.summary_set || turns >= row.summary_turns {
                    // Empty: forgotten with a person who took part (its turns still count).
                    row.summary = Some(s.summary).filter(|s| !s.is_empty());
                    row.summary_turns = turns;
                }
                row.summary_set = true;
            }
            None => {}
        }
        Ok(())
    }
}
