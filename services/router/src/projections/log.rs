//! `routing_log`: per user message the masked input, first route and source, the
//! classifier's route and confidence, user override, reroute, worker/coder calls, loop
//! signals, final route and parse-failure reasons — the data to grow the dictionary and tune
//! the thresholds from. Never mixed into the conversation.

use ghost_shared::envelope::{EventPayload, RecordedEvent};
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

impl RoutingLog {
    /// Applies one event, inside the `routing` projection's transaction.
    pub(crate) async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        match event.event_type.as_str() {
            UserMessageReceived::EVENT_TYPE => {
                let m: UserMessageReceived = event
                    .decode()
                    .map_err(|e| ProjectionError::decode(event, e))?;
                sqlx::query(
                    "INSERT INTO routing_log (user_event_id, session_id, position, channel, input_masked, recorded_at) \
                     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (user_event_id) DO NOTHING",
                )
                .bind(event.event_id)
                .bind(&m.session_id)
                .bind(event.position)
                .bind(m.channel.as_str())
                .bind(mask_secrets(&m.text).as_ref())
                .bind(event.recorded_at)
                .execute(&mut **tx)
                .await?;
            }
            RouteDecided::EVENT_TYPE => {
                let d: RouteDecided = event
                    .decode()
                    .map_err(|e| ProjectionError::decode(event, e))?;
                let (route, confidence, failure) = classifier_columns(&d);
                let failures = Value::Array(failure.into_iter().collect());
                sqlx::query(
                    "UPDATE routing_log SET entry = $2, first_route = $3, first_source = $4, \
                     classifier_route = $5, classifier_confidence = $6, user_override = $7, \
                     local_only = $8, parse_failures = parse_failures || $9::jsonb, \
                     final_route = CASE WHEN $3 = 'CHAT' THEN 'CHAT' ELSE final_route END \
                     WHERE user_event_id = $1",
                )
                .bind(d.user_event_id)
                .bind(&d.entry)
                .bind(d.route.as_str())
                .bind(d.source.as_str())
                .bind(route)
                .bind(confidence)
                .bind(d.source == RouteSource::Explicit)
                .bind(d.local_only)
                .bind(failures)
                .execute(&mut **tx)
                .await?;
                if let Some(c) = &d.corrects {
                    sqlx::query(
                        "UPDATE routing_log SET corrects_event_id = $2, misrouted_as = $3, \
                         misrouted_source = $4, correction_signal = $5 WHERE user_event_id = $1",
                    )
                    .bind(d.user_event_id)
                    .bind(c.user_event_id)
                    .bind(c.route.as_str())
                    .bind(c.source.as_str())
                    .bind(&c.signal)
                    .execute(&mut **tx)
                    .await?;
                }
            }
            WorkRequested::EVENT_TYPE => {
                let w: WorkRequested = event
                    .decode()
                    .map_err(|e| ProjectionError::decode(event, e))?;
                let cloud = w.route == Route::Code;
                sqlx::query(
                    "UPDATE routing_log SET worker_calls = worker_calls + $2, \
                     coder_calls = coder_calls + $3, rerouted = rerouted OR $4 \
                     WHERE user_event_id = $1",
                )
                .bind(w.user_event_id)
                .bind(i32::from(!cloud))
                .bind(i32::from(cloud))
                .bind(w.reroute)
                .execute(&mut **tx)
                .await?;
            }
            LoopDecided::EVENT_TYPE => {
                let l: LoopDecided = event
                    .decode()
                    .map_err(|e| ProjectionError::decode(event, e))?;
                let entry = serde_json::to_value(&l).unwrap_or(Value::Null);
                let ignored_proposal = l
                    .persona_proposal
                    .as_deref()
                    .and_then(|p| p.strip_prefix("invalid "))
                    .map(|p| p.split(':').next().unwrap_or(p));
                let failures = Value::Array(
                    l.failure
                        .iter()
                        .map(|f| json!({"stage": "worker", "route": l.route, "kind": f}))
                        .chain(
                            ignored_proposal
                                .map(|kind| json!({"stage": "persona_proposal", "kind": kind})),
                        )
                        .collect(),
                );
                sqlx::query(
                    "UPDATE routing_log SET needs_next_loop = $2, risk = $3, fit = $4, \
                     loop_decisions = loop_decisions || jsonb_build_array($5::jsonb), \
                     parse_failures = parse_failures || $6::jsonb WHERE user_event_id = $1",
                )
                .bind(l.user_event_id)
                .bind(l.needs_next_loop)
                .bind(&l.risk)
                .bind(l.fit)
                .bind(entry)
                .bind(failures)
                .execute(&mut **tx)
                .await?;
            }
            RenderRequested::EVENT_TYPE => {
                let r: RenderRequested = event
                    .decode()
                    .map_err(|e| ProjectionError::decode(event, e))?;
                let route = r
                    .work_result
                    .as_ref()
                    .and_then(|w| w.get("route"))
                    .and_then(Value::as_str)
                    .unwrap_or(Route::Chat.as_str())
                    .to_owned();
                sqlx::query("UPDATE routing_log SET final_route = $2 WHERE user_event_id = $1")
                    .bind(r.user_event_id)
                    .bind(route)
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
        sqlx::query("DELETE FROM routing_log")
            .execute(&mut **tx)
            .await?;
        Ok(())
    }
}
