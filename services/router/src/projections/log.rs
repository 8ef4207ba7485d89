//! `routing_log`: per user message the masked input, first route and source, the
//! classifier's route and confidence, user override, reroute, worker/coder calls, loop
//! signals, final route and parse-failure reasons — the data to grow the dictionary and tune
//! the thresholds from. Never mixed into the conversation.

use ghost_shared::envelope::RecordedEvent;
use ghost_shared::events::{
    LoopDecided, RenderRequested, RouteDecided, UserMessageReceived, WorkRequested,
};
use ghost_shared::projector::ProjectionError;
use serde::Serialize;
use serde_json::{json, Value};
use sqlx::{PgExecutor, Postgres, Row, Transaction};
use uuid::Uuid;

use crate::routing::{Route, RouteSource};
use ghost_shared::masking::mask_secrets;

/// One row of `routing_log`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoutingLogRow {
    /// The user message.
    pub user_event_id: Uuid,
    /// The conversation.
    pub session_id: String,
    /// Its text, masked.
    pub input_masked: Option<String>,
    /// `router` or `kuro`.
    pub entry: Option<String>,
    /// The route first decided.
    pub first_route: Option<String>,
    /// Where it came from (`explicit`, `rule`, `classifier`, `kuro`, …).
    pub first_source: Option<String>,
    /// The classifier's (or Kuro's) proposed route, when one was asked and answered.
    pub classifier_route: Option<String>,
    /// Its confidence.
    pub classifier_confidence: Option<f64>,
    /// Whether the user chose the route with an explicit command.
    pub user_override: bool,
    /// The session's `local_only` flag for this message.
    pub local_only: bool,
    /// Whether the one automatic reroute happened.
    pub rerouted: bool,
    /// Local worker runs.
    pub worker_calls: i32,
    /// Cloud coder runs.
    pub coder_calls: i32,
    /// The last run's `needs_next_loop`.
    pub needs_next_loop: Option<bool>,
    /// The last run's `risk`.
    pub risk: Option<String>,
    /// The last run's `fit`.
    pub fit: Option<bool>,
    /// Every loop decision, in order.
    pub loop_decisions: Value,
    /// The route of the reply's material (CHAT when no work ran).
    pub final_route: Option<String>,
    /// Why classifier or worker output was discarded.
    pub parse_failures: Value,
}

/// The `routing_log` table, one part of the `routing` projection: no checkpoint or CLI name
/// of its own (`ghost projections rebuild routing` rebuilds it).
#[derive(Debug, Default, Clone, Copy)]
pub struct RoutingLog;

impl RoutingLog {
    /// The row of one user message.
    pub async fn get<'e>(
        executor: impl PgExecutor<'e>,
        user_event_id: Uuid,
    ) -> Result<Option<RoutingLogRow>, sqlx::Error> {
        let row = sqlx::query(
            "SELECT user_event_id, session_id, input_masked, entry, first_route, first_source, \
             classifier_route, classifier_confidence, user_override, local_only, rerouted, \
             worker_calls, coder_calls, needs_next_loop, risk, fit, loop_decisions, final_route, \
             parse_failures FROM routing_log WHERE user_event_id = $1",
        )
        .bind(user_event_id)
        .fetch_optional(executor)
        .await?;
        row.map(|r| {
            Ok(RoutingLogRow {
                user_event_id: r.try_get(0)?,
                session_id: r.try_get(1)?,
                input_masked: r.try_get(2)?,
                entry: r.try_get(3)?,
                first_route: r.try_get(4)?,
                first_source: r.try_get(5)?,
                classifier_route: r.try_get(6)?,
                classifier_confidence: r.try_get(7)?,
                user_override: r.try_get(8)?,
                local_only: r.try_get(9)?,
                rerouted: r.try_get(10)?,
                worker_calls: r.try_get(11)?,
                coder_calls: r.try_get(12)?,
                needs_next_loop: r.try_get(13)?,
                risk: r.try_get(14)?,
                fit: r.try_get(15)?,
                loop_decisions: r.try_get(16)?,
                final_route: r.try_get(17)?,
                parse_failures: r.try_get(18)?,
            })
        })
        .transpose()
    }
}

/// One correction: a message whose route the next message marked as misclassified.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Misrouted {
    /// The misrouted message.
    pub user_event_id: Uuid,
    /// The conversation.
    pub session_id: String,
    /// Its text, masked (what the dictionary or classifier got wrong).
    pub input_masked: Option<String>,
    /// The route it was given.
    pub misrouted_as: String,
    /// How (`rule`, `classifier`, `default`, …).
    pub misrouted_source: Option<String>,
    /// The classifier's confidence then, if it was asked.
    pub classifier_confidence: Option<f64>,
    /// The route the correcting message took.
    pub corrected_to: Option<String>,
    /// `negation` or `explicit`.
    pub signal: String,
    /// The correcting message, masked.
    pub correction_masked: Option<String>,
    /// When the correction arrived.
    pub corrected_at: chrono::DateTime<chrono::Utc>,
}

impl RoutingLog {
    /// The newest `limit` corrections, newest first: the material for improving the rule
    /// dictionary and the thresholds (`ghost route-report`).
    pub async fn misclassifications<'e>(
        executor: impl PgExecutor<'e>,
        limit: i64,
    ) -> Result<Vec<Misrouted>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT c.corrects_event_id, c.session_id, p.input_masked, c.misrouted_as, \
             c.misrouted_source, p.classifier_confidence, c.first_route, c.correction_signal, \
             c.input_masked, c.recorded_at \
             FROM routing_log c LEFT JOIN routing_log p ON p.user_event_id = c.corrects_event_id \
             WHERE c.corrects_event_id IS NOT NULL ORDER BY c.recorded_at DESC LIMIT $1",
        )
        .bind(limit)
        .fetch_all(executor)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(Misrouted {
                    user_event_id: r.try_get(0)?,
                    session_id: r.try_get(1)?,
                    input_masked: r.try_get(2)?,
                    misrouted_as: r.try_get(3)?,
                    misrouted_source: r.try_get(4)?,
                    classifier_confidence: r.try_get(5)?,
                    corrected_to: r.try_get(6)?,
                    signal: r.try_get(7)?,
                    correction_masked: r.try_get(8)?,
                    corrected_at: r.try_get(9)?,
                })
            })
            .collect()
    }
}

/// The classifier columns and parse failure of a decision's `detail`.
fn classifier_columns(d: &RouteDecided) -> (Option<String>, Option<f64>, Option<Value>) {
    let asked = matches!(
        d.source,
        RouteSource::Classifier
            | RouteSource::Kuro
            | RouteSource::ClassifierFailed
            | RouteSource::KuroFailed
    );
    if !asked {
        return (None, None, None);
    }
    let detail = d.detail.clone().unwrap_or(Value::Null);
    let failure = detail
        .get("fallback")
        .filter(|f| f.get("kind").and_then(Value::as_str) == Some("discarded"))
        .map(|f| {
            json!({
                "stage": if matches!(d.source, RouteSource::Kuro | RouteSource::KuroFailed) { "kuro" } else { "classifier" },
                "kind": f.pointer("/error/kind").cloned().unwrap_or(Value::Null),
            })
        });
    if failure.is_some() {
        return (None, None, failure);
    }
    let route = detail
        .get("proposed")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| Some(d.route.as_str().to_owned()));
    let confidence = detail.get("confidence").and_then(Value::as_f64);
    (route, confidence, None)
}

/// What a pass's events change in one `routing_log` row, folded in their order: written by
/// one statement with every other row of the pass ([`super::RoutingChanges::write`]).
/// Applied to a row as the events one by one would: a `Some` or a `*_set` flag overwrites
/// its columns, counters add, lists append.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub(crate) struct LogChange {
    user_event_id: Uuid,
    /// The message itself (the row's insert), when the pass holds it.
    session_id: Option<String>,
    position: Option<i64>,
    channel: Option<String>,
    input_masked: Option<String>,
    recorded_at: Option<chrono::DateTime<chrono::Utc>>,
    /// A route decision: its seven columns overwrite the row's.
    route_set: bool,
    entry: Option<String>,
    first_route: Option<String>,
    first_source: Option<String>,
    classifier_route: Option<String>,
    classifier_confidence: Option<f64>,
    user_override: bool,
    local_only: bool,
    /// A correction of the previous message's route.
    corrects_set: bool,
    corrects_event_id: Option<Uuid>,
    misrouted_as: Option<String>,
    misrouted_source: Option<String>,
    correction_signal: Option<String>,
    worker_add: i32,
    coder_add: i32,
    rerouted: bool,
    /// A loop decision: its three signals overwrite the row's.
    loop_set: bool,
    needs_next_loop: Option<bool>,
    risk: Option<String>,
    fit: Option<bool>,
    loop_decisions: Vec<Value>,
    parse_failures: Vec<Value>,
    final_route: Option<String>,
}

/// A pass's changes to `routing_log`, one per row, in the order the rows were first touched.
#[derive(Debug, Default)]
pub(crate) struct LogChanges {
    rows: Vec<LogChange>,
    index: std::collections::HashMap<Uuid, usize>,
}

ghost_shared::event_enum! {
    /// What the routing log's fold reads.
    enum LogInput {
        UserMessageReceived,
        RouteDecided,
        WorkRequested,
        LoopDecided,
        RenderRequested,
    }
}

impl LogChanges {
    /// The changes, for the pass's statement (empty when no event touched the table).
    pub(crate) fn rows(&self) -> &[LogChange] {
        &self.rows
    }

    fn row(&mut self, user_event_id: Uuid) -> &mut LogChange {
        let next = self.rows.len();
        let i = *self.index.entry(user_event_id).or_insert(next);
        if i == next {
            self.rows.push(LogChange {
                user_event_id,
                ..LogChange::default()
            });
        }
        &mut self.rows[i]
    }

    /// Folds one event in (events of other types change nothing).
    pub(crate) fn add(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
        let decode = |e| ProjectionError::decode(event, e);
        match LogInput::decode(event).map_err(decode)? {
            Some(LogInput::UserMessageReceived(m)) => {
                let row = self.row(event.event_id);
                // A second copy of the message (never stored twice) would insert nothing.
                if row.session_id.is_none() {
                    row.input_masked = Some(mask_secrets(&m.text).into_owned());
                    row.channel = Some(m.channel.as_str().to_owned());
                    row.session_id = Some(m.session_id);
                    row.position = Some(event.position);
                    row.recorded_at = Some(event.recorded_at);
                }
            }
            Some(LogInput::RouteDecided(d)) => {
                let (route, confidence, failure) = classifier_columns(&d);
                let row = self.row(d.user_event_id);
                row.route_set = true;
                row.entry = d.entry.clone();
                row.first_route = Some(d.route.as_str().to_owned());
                row.first_source = Some(d.source.as_str().to_owned());
                row.classifier_route = route;
                row.classifier_confidence = confidence;
                row.user_override = d.source == RouteSource::Explicit;
                row.local_only = d.local_only;
                row.parse_failures.extend(failure);
                if d.route == Route::Chat {
                    row.final_route = Some(Route::Chat.as_str().to_owned());
                }
                if let Some(c) = &d.corrects {
                    row.corrects_set = true;
                    row.corrects_event_id = Some(c.user_event_id);
                    row.misrouted_as = Some(c.route.as_str().to_owned());
                    row.misrouted_source = Some(c.source.as_str().to_owned());
                    row.correction_signal = Some(c.signal.clone());
                }
            }
            Some(LogInput::WorkRequested(w)) => {
                let cloud = w.route == Route::Code;
                let row = self.row(w.user_event_id);
                row.worker_add += i32::from(!cloud);
                row.coder_add += i32::from(cloud);
                row.rerouted |= w.reroute;
            }
            Some(LogInput::LoopDecided(l)) => {
                let entry = serde_json::to_value(&l).unwrap_or(Value::Null);
                let ignored_proposal = l
                    .persona_proposal
                    .as_deref()
                    .and_then(|p| p.strip_prefix("invalid "))
                    .map(|p| p.split(':').next().unwrap_or(p));
                let row = self.row(l.user_event_id);
                row.parse_failures.extend(
                    l.failure
                        .iter()
                        .map(|f| json!({"stage": "worker", "route": l.route, "kind": f}))
                        .chain(
                            ignored_proposal
                                .map(|kind| json!({"stage": "persona_proposal", "kind": kind})),
                        ),
                );
                row.loop_decisions.push(entry);
                row.loop_set = true;
                row.needs_next_loop = l.needs_next_loop;
                row.risk = l.risk;
                row.fit = l.fit;
            }
            Some(LogInput::RenderRequested(r)) => {
                let route = r
                    .work_result
                    .as_ref()
                    .and_then(|w| w.get("route"))
                    .and_then(Value::as_str)
                    .unwrap_or(Route::Chat.as_str())
                    .to_owned();
                self.row(r.user_event_id).final_route = Some(route);
            }
            None => {}
        }
        Ok(())
    }
}

impl RoutingLog {
    /// Empties the table, inside the `routing` projection's rebuild.
    pub(crate) async fn reset(
        &self,
        tx: &mut Transaction<'_, Postgres>,
    ) -> Result<(), ProjectionError> {
        sqlx::query("DELETE FROM routing_log")
            .execute(&mut **tx)
            .await?;
        Ok(())
    }
}
