//! A pass of the `routing` projection as one statement: its events folded into one change
//! per `routing_log` row and per `routing_sessions` row, and the ANALYZE results it adds,
//! all written together. A statement per event (four on a chat turn) was most of the pass.

use ghost_shared::envelope::RecordedEvent;
use ghost_shared::projector::ProjectionError;
use sqlx::types::Json;
use sqlx::{Postgres, Transaction};

use super::analyze::{analyze_row, AnalyzeRow};
use super::log::LogChanges;
use super::sessions::SessionChanges;

/// What a pass's events change in the router's three tables.
#[derive(Debug, Default)]
pub(crate) struct RoutingChanges {
    log: LogChanges,
    sessions: SessionChanges,
    analyze: Vec<AnalyzeRow>,
}

/// Each part inserts the rows that are not there and changes those that are. The `UPDATE`s
/// see the tables as they were before the statement, not the rows its `INSERT`s add, so a
/// row is either inserted with the whole change folded in or changed, never both. (One
/// runner holds the projection's lock, so no other writer inserts meanwhile.)
const WRITE: &str = "\
WITH lc AS ( \
  SELECT * FROM jsonb_to_recordset($1) AS c(user_event_id uuid, session_id text, position bigint, \
    channel text, input_masked text, recorded_at timestamptz, route_set boolean, entry text, \
    first_route text, first_source text, classifier_route text, classifier_confidence float8, \
    user_override boolean, local_only boolean, corrects_set boolean, corrects_event_id uuid, \
    misrouted_as text, misrouted_source text, correction_signal text, worker_add integer, \
    coder_add integer, rerouted boolean, loop_set boolean, needs_next_loop boolean, risk text, \
    fit boolean, loop_decisions jsonb, parse_failures jsonb, final_route text)), \
log_insert AS ( \
  INSERT INTO routing_log (user_event_id, session_id, position, channel, input_masked, \
    recorded_at, entry, first_route, first_source, classifier_route, classifier_confidence, \
    user_override, local_only, corrects_event_id, misrouted_as, misrouted_source, \
    correction_signal, worker_calls, coder_calls, rerouted, needs_next_loop, risk, fit, \
    loop_decisions, parse_failures, final_route) \
  SELECT user_event_id, session_id, position, channel, input_masked, recorded_at, entry, \
    first_route, first_source, classifier_route, classifier_confidence, user_override, \
    local_only, corrects_event_id, misrouted_as, misrouted_source, correction_signal, \
    worker_add, coder_add, rerouted, needs_next_loop, risk, fit, loop_decisions, \
    parse_failures, final_route \
  FROM lc WHERE session_id IS NOT NULL ON CONFLICT (user_event_id) DO NOTHING), \
log_update AS ( \
  UPDATE routing_log r SET \
    entry = CASE WHEN c.route_set THEN c.entry ELSE r.entry END, \
    first_route = CASE WHEN c.route_set THEN c.first_route ELSE r.first_route END, \
    first_source = CASE WHEN c.route_set THEN c.first_source ELSE r.first_source END, \
    classifier_route = CASE WHEN c.route_set THEN c.classifier_route ELSE r.classifier_route END, \
    classifier_confidence = CASE WHEN c.route_set THEN c.classifier_confidence \
      ELSE r.classifier_confidence END, \
    user_override = CASE WHEN c.route_set THEN c.user_override ELSE r.user_override END, \
    local_only = CASE WHEN c.route_set THEN c.local_only ELSE r.local_only END, \
    corrects_event_id = CASE WHEN c.corrects_set THEN c.corrects_event_id ELSE r.corrects_event_id END, \
    misrouted_as = CASE WHEN c.corrects_set THEN c.misrouted_as ELSE r.misrouted_as END, \
    misrouted_source = CASE WHEN c.corrects_set THEN c.misrouted_source ELSE r.misrouted_source END, \
    correction_signal = CASE WHEN c.corrects_set THEN c.correction_signal ELSE r.correction_signal END, \
    worker_calls = r.worker_calls + c.worker_add, \
    coder_calls = r.coder_calls + c.coder_add, \
    rerouted = r.rerouted OR c.rerouted, \
    needs_next_loop = CASE WHEN c.loop_set THEN c.needs_next_loop ELSE r.needs_next_loop END, \
    risk = CASE WHEN c.loop_set THEN c.risk ELSE r.risk END, \
    fit = CASE WHEN c.loop_set THEN c.fit ELSE r.fit END, \
    loop_decisions = r.loop_decisions || c.loop_decisions, \
    parse_failures = r.parse_failures || c.parse_failures, \
    final_route = COALESCE(c.final_route, r.final_route) \
  FROM lc c WHERE r.user_event_id = c.user_event_id), \
sc AS ( \
  SELECT * FROM jsonb_to_recordset($2) AS c(session_id text, route_set boolean, \
    local_only boolean, primary_route text, summary_set boolean, summary text, \
    summary_turns integer, updated_at timestamptz)), \
session_update AS ( \
  UPDATE routing_sessions s SET \
    local_only = CASE WHEN c.route_set THEN c.local_only ELSE s.local_only END, \
    last_primary_route = COALESCE(c.primary_route, s.last_primary_route), \
    summary = CASE WHEN c.summary_set AND c.summary_turns >= s.summary_turns THEN c.summary \
      ELSE s.summary END, \
    summary_turns = CASE WHEN c.summary_set THEN GREATEST(c.summary_turns, s.summary_turns) \
      ELSE s.summary_turns END, \
    updated_at = c.updated_at \
  FROM sc c WHERE s.session_id = c.session_id RETURNING s.session_id), \
session_insert AS ( \
  INSERT INTO routing_sessions (session_id, local_only, last_primary_route, summary, \
    summary_turns, updated_at) \
  SELECT session_id, route_set AND local_only, primary_route, summary, summary_turns, updated_at \
  FROM sc WHERE session_id NOT IN (SELECT session_id FROM session_update) \
  ON CONFLICT (session_id) DO NOTHING), \
analyze_insert AS ( \
  INSERT INTO analyze_results (event_id, session_id, position, user_event_id, result, recorded_at) \
  SELECT event_id, session_id, position, user_event_id, result, recorded_at \
  FROM jsonb_to_recordset($3) AS a(event_id uuid, session_id text, position bigint, \
    user_event_id uuid, result jsonb, recorded_at timestamptz) \
  ON CONFLICT (event_id) DO NOTHING) \
SELECT 1";

impl RoutingChanges {
    /// The changes `events` make, in their order (the first that does not decode fails them
    /// all).
    pub(crate) fn of(events: &[RecordedEvent]) -> Result<Self, ProjectionError> {
        let mut changes = Self::default();
        for event in events {
            changes.log.add(event)?;
            changes.sessions.add(event)?;
            changes.analyze.extend(analyze_row(event)?);
        }
        Ok(changes)
    }

    /// Writes them in one statement (none when the events touched no table).
    pub(crate) async fn write(
        &self,
        tx: &mut Transaction<'_, Postgres>,
    ) -> Result<(), ProjectionError> {
        if self.log.rows().is_empty() && self.sessions.rows().is_empty() && self.analyze.is_empty()
        {
            return Ok(());
        }
        sqlx::query(WRITE)
            .bind(Json(self.log.rows()))
            .bind(Json(self.sessions.rows()))
            .bind(Json(&self.analyze))
            .execute(&mut **tx)
            .await?;
        Ok(())
    }
}
