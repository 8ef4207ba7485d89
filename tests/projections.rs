//! Projections never stall: an event a projection cannot decode or apply is parked (with the
//! error) and the projection moves on; `ghost projections retry` re-applies parked events;
//! every rebuild starts from deliberately wrong rows and ends with exactly the live rows.

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ghost::stack::projection_by_name;
use ghost_shared::envelope::{EventMetadata, NewEvent, RecordedEvent};
use ghost_shared::projections::{AssistantTextProjection, MemoryProjection};
use ghost_shared::projector::{CatchUp, Projection, ProjectionError, ProjectionRunner};
use ghost_shared::store::{EventStore, ExpectedVersion, StoreError};
use ghost_testkit::testing::{eventually, repo_config_dir, TestEnv};
use serde_json::{json, Value};
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

/// An event with a raw JSON payload (the wire shape, whatever the Rust types look like).
fn raw(event_type: &str, payload: Value) -> NewEvent {
    let id = Uuid::new_v4();
    NewEvent {
        event_id: id,
        event_type: event_type.to_owned(),
        schema_version: 1,
        payload,
        metadata: EventMetadata {
            correlation_id: id,
            causation_id: None,
            traceparent: None,
            tracestate: None,
            service: "test".into(),
        },
    }
}

fn user_message(session: &str, text: &str) -> NewEvent {
    raw(
        "UserMessageReceived",
        json!({"session_id": session, "channel": "http", "speaker": "user", "text": text}),
    )
}

async fn append(store: &EventStore, stream: &str, events: &[NewEvent]) -> Vec<RecordedEvent> {
    store
        .append(stream, ExpectedVersion::Any, events)
        .await
        .expect("append")
        .events
}

fn runner(store: &EventStore, projection: Arc<dyn Projection>) -> ProjectionRunner {
    ProjectionRunner::new(store.clone(), projection, 500, Duration::from_millis(50))
}

/// Catch-up passes until nothing is held back: events stay invisible to the gap-safe read
/// while any older transaction runs anywhere in the cluster (other tests' databases
/// included), so one pass may see nothing yet. The first error ends it.
async fn catch_up(runner: &ProjectionRunner) -> Result<CatchUp, ProjectionError> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut total = CatchUp {
        processed: 0,
        parked: 0,
        pending: false,
        pending_wakes: false,
        contended: false,
    };
    loop {
        let pass = runner.catch_up().await?;
        total.processed += pass.processed;
        total.parked += pass.parked;
        if !pass.pending {
            return Ok(total);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "events held back for 30 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `(projection, event_id, position, error)` of every parked event, oldest first.
async fn parked(store: &EventStore) -> Vec<(String, Uuid, i64, String)> {
    sqlx::query_as(
        "SELECT projection, event_id, position, error FROM projection_parked ORDER BY position",
    )
    .fetch_all(store.pool())
    .await
    .expect("parked events")
}

async fn texts(store: &EventStore) -> Vec<String> {
    AssistantTextProjection::all(store.pool())
        .await
        .expect("assistant_text")
        .into_iter()
        .map(|t| t.text)
        .collect()
}

#[tokio::test]
async fn an_event_that_does_not_decode_is_parked_and_the_projection_moves_on() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let bad = raw(
        "UserMessageReceived",
        json!({"session_id": 5, "text": ["not", "text"]}),
    );
    let stored = append(
        &store,
        "session-p",
        &[user_message("p", "before"), bad, user_message("p", "after")],
    )
    .await;
    let runner = runner(&store, Arc::new(AssistantTextProjection));

    let pass = catch_up(&runner).await.expect("the pass does not stall");
    assert_eq!(pass.processed, 3);
    assert_eq!(texts(&store).await, ["before", "after"]);
    let parked = parked(&store).await;
    assert_eq!(parked.len(), 1, "{parked:?}");
    let (projection, event_id, position, error) = &parked[0];
    assert_eq!(projection, "assistant_text");
    assert_eq!(*event_id, stored[1].event_id);
    assert_eq!(*position, stored[1].position);
    assert!(error.contains("does not decode"), "{error}");

    // The checkpoint moved past it: a second pass neither applies nor parks it again.
    assert_eq!(catch_up(&runner).await.expect("second pass").processed, 0);
    assert_eq!(parked_len(&store).await, 1);
    env.cleanup().await;
}

async fn parked_len(store: &EventStore) -> usize {
    parked(store).await.len()
}

/// For every projection the CLI knows: a payload it cannot decode is parked under its name,
/// and the valid event after it is still applied.
#[tokio::test]
async fn every_projection_parks_what_it_cannot_decode() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let user = Uuid::new_v4();
    let cases: Vec<(&str, NewEvent, NewEvent, &str)> = vec![
        (
            "assistant_text",
            raw("AssistantReplied", json!({"session_id": []})),
            user_message("d1", "hello"),
            "SELECT count(*) FROM assistant_text WHERE session_id = 'd1'",
        ),
        (
            "partner_mood_state",
            raw(
                "AffectReflected",
                json!({"persona": "kuro", "at": "yesterday"}),
            ),
            raw(
                "AffectReflected",
                json!({"persona": "kuro", "episode_event_id": Uuid::new_v4(), "at": 1_700_000_000.0,
                       "affect": {"label": "joy", "intensity": 0.5, "salience": 0.5}}),
            ),
            "SELECT count(*) FROM mood_episodes WHERE persona = 'kuro'",
        ),
        (
            "routing",
            raw("RouteDecided", json!({"session_id": "d3", "route": 7})),
            raw(
                "RouteDecided",
                json!({"session_id": "d3", "user_event_id": user, "route": "CHAT",
                       "source": "rule", "local_only": true}),
            ),
            "SELECT count(*) FROM routing_sessions WHERE session_id = 'd3' AND local_only",
        ),
    ];
    for (name, bad, good, check) in cases {
        let stream = format!("session-{name}");
        let stored = append(&store, &stream, &[bad, good]).await;
        let projection = projection_by_name(name, &env.config).expect("known projection");
        catch_up(&runner(&store, projection))
            .await
            .unwrap_or_else(|e| panic!("{name} stalled: {e}"));
        let applied: i64 = sqlx::query_scalar(check)
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(
            applied, 1,
            "{name} applied the valid event after the bad one"
        );
        let parked = parked(&store).await;
        assert!(
            parked
                .iter()
                .any(|(p, id, _, _)| p == name && *id == stored[0].event_id),
            "{name} parked its bad event: {parked:?}"
        );
    }
    env.cleanup().await;
}

/// A test projection writing `payload.n` into `picky (n int CHECK (n >= 0))`: a negative `n`
/// fails inside the database; a `transient` event fails like a lost connection while
/// `flaky` is set.
struct Picky {
    flaky: AtomicBool,
    transient_failures: AtomicUsize,
}

impl Picky {
    fn new() -> Self {
        Self {
            flaky: AtomicBool::new(false),
            transient_failures: AtomicUsize::new(0),
        }
    }
}

#[async_trait::async_trait]
impl Projection for Picky {
    fn name(&self) -> &'static str {
        "picky"
    }

    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        if event.event_type != "Picked" {
            return Ok(());
        }
        if event.payload["transient"] == true && self.flaky.load(Ordering::SeqCst) {
            self.transient_failures.fetch_add(1, Ordering::SeqCst);
            return Err(ProjectionError::Store(StoreError::Database(
                sqlx::Error::PoolTimedOut,
            )));
        }
        sqlx::query("INSERT INTO picky (n) VALUES ($1)")
            .bind(event.payload["n"].as_i64().unwrap_or(0) as i32)
            .execute(&mut **tx)
            .await?;
        Ok(())
    }

    async fn reset(&self, tx: &mut Transaction<'_, Postgres>) -> Result<(), ProjectionError> {
        sqlx::query("DELETE FROM picky").execute(&mut **tx).await?;
        Ok(())
    }
}

async fn picky_table(store: &EventStore) {
    sqlx::query("CREATE TABLE picky (n int NOT NULL CHECK (n >= 0))")
        .execute(store.pool())
        .await
        .unwrap();
}

async fn picked(store: &EventStore) -> Vec<i32> {
    sqlx::query_scalar("SELECT n FROM picky ORDER BY n")
        .fetch_all(store.pool())
        .await
        .unwrap()
}

fn pick(n: i64) -> NewEvent {
    raw("Picked", json!({ "n": n }))
}

#[tokio::test]
async fn a_statement_that_fails_in_the_database_is_parked_and_the_rest_of_the_batch_applies() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    picky_table(&store).await;
    let stored = append(&store, "session-x", &[pick(1), pick(-1), pick(2), pick(3)]).await;
    let runner = runner(&store, Arc::new(Picky::new()));
    catch_up(&runner).await.expect("no stall");
    assert_eq!(picked(&store).await, [1, 2, 3]);
    let parked = parked(&store).await;
    assert_eq!(parked.len(), 1);
    assert_eq!(parked[0].1, stored[1].event_id);
    assert!(parked[0].3.contains("picky_n_check"), "{}", parked[0].3);
    env.cleanup().await;
}

#[tokio::test]
async fn a_transient_failure_is_retried_not_parked() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    picky_table(&store).await;
    let picky = Arc::new(Picky::new());
    picky.flaky.store(true, Ordering::SeqCst);
    append(
        &store,
        "session-t",
        &[pick(1), raw("Picked", json!({"n": 2, "transient": true}))],
    )
    .await;
    let runner = runner(&store, picky.clone());
    assert!(catch_up(&runner).await.is_err(), "the pass reports it");
    assert!(picky.transient_failures.load(Ordering::SeqCst) >= 1);
    assert_eq!(parked_len(&store).await, 0, "nothing parked");
    assert!(picked(&store).await.is_empty(), "the batch rolled back");
    picky.flaky.store(false, Ordering::SeqCst);
    catch_up(&runner)
        .await
        .expect("applies once the failure passed");
    assert_eq!(picked(&store).await, [1, 2]);
    env.cleanup().await;
}

#[tokio::test]
async fn retry_applies_what_works_now_and_keeps_what_still_fails() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    picky_table(&store).await;
    let stored = append(&store, "session-y", &[pick(1), pick(-1), pick(-2)]).await;
    let runner = runner(&store, Arc::new(Picky::new()));
    let pass = catch_up(&runner).await.unwrap();
    assert_eq!((pass.processed, pass.parked), (3, 2));
    assert_eq!(runner.parked_total(), 2, "counted");
    // The operator fixes the cause for one of them.
    sqlx::query(
        "ALTER TABLE picky DROP CONSTRAINT picky_n_check, ADD CONSTRAINT picky_n_check CHECK (n >= -1)",
    )
    .execute(store.pool())
    .await
    .unwrap();
    let outcome = runner.retry_parked().await.unwrap();
    assert_eq!(outcome.applied, [stored[1].event_id]);
    assert_eq!(outcome.still_parked.len(), 1);
    assert_eq!(outcome.still_parked[0].0, stored[2].event_id);
    assert_eq!(picked(&store).await, [-1, 1]);
    let left = ghost_shared::parking::list(store.pool(), "picky")
        .await
        .unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(
        (left[0].event_id, left[0].attempts),
        (stored[2].event_id, 2)
    );
    // Nothing more to do: a second retry keeps the one that still fails.
    let again = runner.retry_parked().await.unwrap();
    assert!(again.applied.is_empty());
    assert_eq!(again.still_parked.len(), 1);
    env.cleanup().await;
}

/// `Picky` woken only by its own type, as the real projections are.
struct WokenByPicked(Picky);

#[async_trait::async_trait]
impl Projection for WokenByPicked {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        self.0.apply(tx, event).await
    }

    async fn reset(&self, tx: &mut Transaction<'_, Postgres>) -> Result<(), ProjectionError> {
        self.0.reset(tx).await
    }

    fn wakes_on(&self, event_type: &str) -> bool {
        event_type == "Picked"
    }
}

async fn picky_checkpoint(store: &EventStore) -> Option<i64> {
    sqlx::query_scalar("SELECT position FROM projection_checkpoints WHERE name = 'picky'")
        .fetch_optional(store.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_runner_wakes_only_for_the_event_types_it_projects_and_still_applies_every_event() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    picky_table(&store).await;
    append(&store, "session-w", &[pick(1)]).await;
    // No polling to speak of: only notifications wake this runner.
    let runner = ProjectionRunner::new(
        store.clone(),
        Arc::new(WokenByPicked(Picky::new())),
        500,
        Duration::from_secs(3600),
    );
    let task = tokio::spawn(runner.run());
    let first = eventually(Duration::from_secs(30), "the first pass", || async {
        picky_checkpoint(&store).await
    })
    .await;
    assert_eq!(picked(&store).await, [1]);

    // An append of a type it does not project wakes nothing: its checkpoint stays.
    let other = append(&store, "session-w", &[raw("NotPicked", json!({}))]).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(picky_checkpoint(&store).await, Some(first));

    // One of its own wakes it, and that pass applies both, in order.
    append(&store, "session-w", &[pick(2)]).await;
    eventually(Duration::from_secs(30), "woken by Picked", || async {
        (picked(&store).await == [1, 2]).then_some(())
    })
    .await;
    let checkpoint = picky_checkpoint(&store).await.expect("checkpoint");
    assert!(
        checkpoint > other[0].position,
        "the ignored event was passed too"
    );
    task.abort();
    env.cleanup().await;
}

#[tokio::test]
async fn held_back_events_call_for_a_quick_pass_only_when_the_runner_wakes_on_one() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    picky_table(&store).await;
    let runner = runner(&store, Arc::new(WokenByPicked(Picky::new())));
    catch_up(&runner).await.unwrap();
    // A writing transaction left open holds back everything committed after it.
    let mut open = store.pool().begin().await.unwrap();
    sqlx::query("SELECT pg_current_xact_id()::text")
        .execute(&mut *open)
        .await
        .unwrap();

    append(&store, "session-h", &[raw("NotPicked", json!({}))]).await;
    let pass = runner.catch_up().await.unwrap();
    assert!(pass.pending, "the event is held back");
    assert!(
        !pass.pending_wakes,
        "a type the runner does not wake on waits for its poll"
    );

    append(&store, "session-h", &[pick(3)]).await;
    let pass = runner.catch_up().await.unwrap();
    assert!(
        pass.pending && pass.pending_wakes,
        "its wake-up may be gone: the runner passes again soon"
    );

    open.commit().await.unwrap();
    catch_up(&runner).await.unwrap();
    assert_eq!(picked(&store).await, [3]);
    env.cleanup().await;
}

/// A pass while another runner holds the projection applies nothing and says so: it is no
/// proof of being caught up (the write-plan's writer merged an interest update from a
/// projection the runner's own loop had not committed yet, and lost the update before).
#[tokio::test]
async fn a_pass_while_another_runner_holds_the_projection_says_it_proves_nothing() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    picky_table(&store).await;
    let runner = runner(&store, Arc::new(Picky::new()));
    append(&store, "session-c", &[pick(5)]).await;
    let mut other = store.pool().begin().await.unwrap();
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(runner.lock_key())
        .execute(&mut *other)
        .await
        .unwrap();
    let pass = runner.catch_up().await.unwrap();
    assert!(pass.contended, "{pass:?}");
    assert!(
        !pass.pending,
        "nothing was read, so nothing is known held back"
    );
    assert!(picked(&store).await.is_empty());

    other.rollback().await.unwrap();
    let pass = catch_up(&runner).await.unwrap();
    assert_eq!(pass.processed, 1);
    assert!(!runner.catch_up().await.unwrap().contended);
    assert_eq!(picked(&store).await, [5]);
    env.cleanup().await;
}

/// Sends a wake-up notification with `payload`, as an append's would be.
async fn notify(store: &EventStore, payload: &str) {
    sqlx::query("SELECT pg_notify($1, $2)::text")
        .bind(ghost_shared::store::NOTIFY_CHANNEL)
        .bind(payload)
        .execute(store.pool())
        .await
        .unwrap();
}

/// The runner's pass count once it has stayed the same for 300 ms.
async fn settled_passes(runner: &ProjectionRunner) -> u64 {
    let mut seen = runner.passes_total();
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = runner.passes_total();
        if now == seen {
            return now;
        }
        seen = now;
    }
}

#[tokio::test]
async fn a_wake_up_for_events_the_runner_already_read_runs_no_pass() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    picky_table(&store).await;
    let runner = ProjectionRunner::new(
        store.clone(),
        Arc::new(WokenByPicked(Picky::new())),
        500,
        Duration::from_secs(3600),
    );
    let task = tokio::spawn(runner.clone().run());
    let first = append(&store, "session-r", &[pick(1)]).await;
    eventually(
        Duration::from_secs(30),
        "the first event applied",
        || async { (picked(&store).await == [1]).then_some(()) },
    )
    .await;
    let before = settled_passes(&runner).await;

    // A wake-up naming an event the last pass read (it arrives after that pass, as an
    // append's often does): no pass.
    let read = &first[0];
    notify(&store, &format!("Picked@{}.{}", read.tx_id, read.position)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        runner.passes_total(),
        before,
        "a pass for an event already read"
    );

    // One naming no position (an older sender's) still wakes it.
    notify(&store, "Picked").await;
    eventually(
        Duration::from_secs(30),
        "woken without a position",
        || async { (runner.passes_total() > before).then_some(()) },
    )
    .await;

    // And an append's own wake-up, past what it read, wakes it and is applied.
    append(&store, "session-r", &[pick(2)]).await;
    eventually(
        Duration::from_secs(30),
        "woken by a newer event",
        || async { (picked(&store).await == [1, 2]).then_some(()) },
    )
    .await;
    task.abort();
    env.cleanup().await;
}

/// Runs `ghost <args>` against `env`; (success, stdout + stderr).
async fn ghost(env: &TestEnv, args: &[&str]) -> (bool, String) {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_ghost"))
        .args(args)
        .env("GHOST_CONFIG_DIR", repo_config_dir())
        .envs(env.vars.iter().cloned())
        .output()
        .await
        .expect("run ghost");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[tokio::test]
async fn ghost_projections_retry_reapplies_parked_events() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let bad = raw("UserMessageReceived", json!({"session_id": false}));
    let stored = append(&store, "session-r", &[user_message("r", "late"), bad]).await;
    let (good, bad) = (&stored[0], &stored[1]);
    // As an older version would have left it: both parked, the checkpoint past them.
    for e in [good, bad] {
        sqlx::query(
            "INSERT INTO projection_parked (projection, event_id, position, tx_id, event_type, error) \
             VALUES ('assistant_text', $1, $2, $3, $4, 'an older decoder failed')",
        )
        .bind(e.event_id)
        .bind(e.position)
        .bind(e.tx_id)
        .bind(&e.event_type)
        .execute(store.pool())
        .await
        .unwrap();
    }
    sqlx::query(
        "INSERT INTO projection_checkpoints (name, tx_id, position) VALUES ('assistant_text', $1, $2)",
    )
    .bind(bad.tx_id)
    .bind(bad.position)
    .execute(store.pool())
    .await
    .unwrap();

    let (ok, out) = ghost(&env, &["projections", "retry", "assistant_text"]).await;
    assert!(!ok, "an event still parked is an error: {out}");
    assert!(
        out.contains("1 applied") && out.contains("1 still parked"),
        "{out}"
    );
    assert!(out.contains(&bad.event_id.to_string()), "{out}");
    assert_eq!(texts(&store).await, ["late"]);
    let left = parked(&store).await;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].1, bad.event_id);
    assert!(
        left[0].3.contains("does not decode"),
        "the new error: {}",
        left[0].3
    );

    let (ok, out) = ghost(&env, &["projections", "retry", "no_such_projection"]).await;
    assert!(!ok && out.contains("unknown projection"), "{out}");
    env.cleanup().await;
}

/// `ghost projections rebuild <name>`, again until it replayed every stored event (the
/// gap-safe read holds back what a transaction younger than a running one wrote, and other
/// tests' transactions run in the same cluster).
async fn rebuild_all(env: &TestEnv, store: &EventStore, name: &str) {
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM events")
        .fetch_one(store.pool())
        .await
        .unwrap();
    let expected = format!("rebuilt {name} from {stored} events");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (ok, out) = ghost(env, &["projections", "rebuild", name]).await;
        assert!(ok, "{out}");
        if out.contains(&expected) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{out}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every table of every projection, as JSON rows in a stable order.
async fn snapshot(store: &EventStore, tables: &[&str]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for table in tables {
        let rows: Option<Value> = sqlx::query_scalar(&format!(
            "SELECT jsonb_agg(to_jsonb(t) ORDER BY to_jsonb(t)::text) FROM {table} t"
        ))
        .fetch_one(store.pool())
        .await
        .unwrap();
        out.push(((*table).to_owned(), rows.unwrap_or(Value::Null)));
    }
    out
}

/// Rows no event ever produced, plus a changed copy of a real one, in every table.
const GARBAGE: &[&str] = &[
    "INSERT INTO assistant_text VALUES ('ghost-session', 999999, gen_random_uuid(), 'user', 'x', 'http', 'garbage', now())",
    "UPDATE assistant_text SET text = 'wrong'",
    "INSERT INTO mood_episodes VALUES ('nobody', 999999, 1, 'anger', 1, 1, 1, NULL)",
    "UPDATE mood_episodes SET label = 'fear', intensity = 0.99",
    "INSERT INTO partner_mood_state VALUES ('nobody', 42, gen_random_uuid(), now())",
    "UPDATE partner_mood_state SET episode_count = 77",
    "INSERT INTO routing_sessions (session_id, local_only, updated_at) VALUES ('ghost-session', true, now())",
    "UPDATE routing_sessions SET local_only = NOT local_only, summary = 'wrong'",
    "INSERT INTO routing_log (user_event_id, session_id, position, recorded_at) VALUES (gen_random_uuid(), 'ghost-session', 999999, now())",
    "UPDATE routing_log SET final_route = 'OPS', worker_calls = 9",
    "INSERT INTO analyze_results VALUES (gen_random_uuid(), 'ghost-session', 999999, gen_random_uuid(), '{}', now())",
    "UPDATE analyze_results SET result = '{\"wrong\": true}'",
    "INSERT INTO projection_parked (projection, event_id, position, tx_id, event_type, error) \
     SELECT p, gen_random_uuid(), 1, 1, 'Stale', 'parked long ago' \
     FROM unnest(ARRAY['assistant_text', 'partner_mood_state', 'routing']) p",
];

#[tokio::test]
async fn every_rebuild_starts_from_wrong_rows_and_ends_with_the_live_rows() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let user = user_message("rb", "analyze this");
    let user_id = user.event_id;
    let contract = r#"{"result":"{\"rows\":3}","needs_next_loop":false,"why":"","next_actions":[],"questions_for_user":[],"confidence":0.9,"risk":"low"}"#;
    let affect = json!({"label": "joy", "intensity": 0.6, "salience": 0.5, "confidence": 0.8});
    append(
        &store,
        "session-rb",
        &[
            user,
            raw(
                "RouteDecided",
                json!({"session_id": "rb", "user_event_id": user_id, "route": "ANALYZE",
                       "source": "rule", "local_only": false, "primary": true}),
            ),
            raw(
                "WorkRequested",
                json!({"session_id": "rb", "user_event_id": user_id, "route": "ANALYZE",
                       "task": "analyze this", "loop_index": 0}),
            ),
            raw(
                "WorkerCompleted",
                json!({"session_id": "rb", "user_event_id": user_id, "route": "ANALYZE",
                       "result": contract}),
            ),
            raw(
                "RenderRequested",
                json!({"session_id": "rb", "channel": "http", "user_event_id": user_id,
                       "user_text": "analyze this", "work_result": {"route": "ANALYZE"}}),
            ),
            raw(
                "AssistantReplied",
                json!({"session_id": "rb", "channel": "http", "user_event_id": user_id,
                       "speaker": "kuro", "text": "three rows", "affect": affect}),
            ),
            raw(
                "SessionSummarized",
                json!({"session_id": "rb", "summary": "counted rows", "user_turns": 1}),
            ),
        ],
    )
    .await;
    append(
        &store,
        "persona-kuro",
        &[raw(
            "AffectReflected",
            json!({"persona": "kuro", "episode_event_id": Uuid::new_v4(), "at": 1_700_000_000.0,
                   "affect": {"label": "sadness", "intensity": 0.4, "salience": 0.3}}),
        )],
    )
    .await;
    let projections: [(&str, &[&str]); 3] = [
        ("assistant_text", &["assistant_text"]),
        (
            "partner_mood_state",
            &["mood_episodes", "partner_mood_state"],
        ),
        (
            "routing",
            &["routing_sessions", "routing_log", "analyze_results"],
        ),
    ];
    let mut live = Vec::new();
    for (name, tables) in projections {
        let projection = projection_by_name(name, &env.config).unwrap();
        catch_up(&runner(&store, projection)).await.unwrap();
        let rows = snapshot(&store, tables).await;
        assert!(
            rows.iter().all(|(_, r)| r.is_array()),
            "{name} projected something into every table: {rows:?}"
        );
        live.push(rows);
    }
    support::execute_all(&store, GARBAGE).await;
    for ((name, tables), expected) in projections.iter().zip(&live) {
        assert_ne!(
            &snapshot(&store, tables).await,
            expected,
            "{name}: wrong rows"
        );
        rebuild_all(&env, &store, name).await;
        assert_eq!(&snapshot(&store, tables).await, expected, "{name} rebuilt");
        let parked = ghost_shared::parking::count(store.pool(), name)
            .await
            .unwrap();
        assert_eq!(parked, 0, "{name}: nothing of the valid events parked");
    }
    env.cleanup().await;
}

/// Records the `synchronous_commit` its pass's transaction runs with.
struct CommitMode;

#[async_trait::async_trait]
impl Projection for CommitMode {
    fn name(&self) -> &'static str {
        "commit_mode"
    }

    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        _event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        sqlx::query("INSERT INTO commit_mode SELECT current_setting('synchronous_commit')")
            .execute(&mut **tx)
            .await?;
        Ok(())
    }

    async fn reset(&self, tx: &mut Transaction<'_, Postgres>) -> Result<(), ProjectionError> {
        sqlx::query("DELETE FROM commit_mode")
            .execute(&mut **tx)
            .await?;
        Ok(())
    }
}

#[tokio::test]
async fn a_pass_commits_without_waiting_for_the_flush_and_only_itself() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    sqlx::query("CREATE TABLE commit_mode (setting text NOT NULL)")
        .execute(store.pool())
        .await
        .unwrap();
    append(&store, "session-c", &[pick(1)]).await;
    let pass = catch_up(&runner(&store, Arc::new(CommitMode)))
        .await
        .unwrap();
    assert_eq!(pass.processed, 1);
    let seen: Vec<String> = sqlx::query_scalar("SELECT setting FROM commit_mode")
        .fetch_all(store.pool())
        .await
        .unwrap();
    // A read model is rebuilt from the events: its pass need not wait for the disk.
    assert_eq!(seen, ["off"]);
    // Only for that transaction: the pooled connections go on committing synchronously.
    for _ in 0..4 {
        let setting: String = sqlx::query_scalar("SELECT current_setting('synchronous_commit')")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(setting, "on");
    }
    env.cleanup().await;
}

/// A projection that keeps nothing: only its runner's passes and checkpoint matter.
struct KeepsNothing;

#[async_trait::async_trait]
impl Projection for KeepsNothing {
    fn name(&self) -> &'static str {
        "keeps_nothing"
    }

    async fn apply(
        &self,
        _tx: &mut Transaction<'_, Postgres>,
        _event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        Ok(())
    }

    async fn reset(&self, _tx: &mut Transaction<'_, Postgres>) -> Result<(), ProjectionError> {
        Ok(())
    }
}

async fn checkpoint_of(store: &EventStore, name: &str) -> Option<i64> {
    sqlx::query_scalar("SELECT position FROM projection_checkpoints WHERE name = $1")
        .bind(name)
        .fetch_optional(store.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_runner_cut_off_from_its_store_retries_at_its_pace_and_resumes_when_it_is_back() {
    let logs = support::logs::capture();
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    // The runner reaches Postgres through a proxy the test can cut; the test directly.
    let proxy = support::tcp_proxy::TcpProxy::start().await;
    let proxied = EventStore::connect(&proxy.route(&env.config.ghost.database.url), 4)
        .await
        .unwrap();
    let poll = Duration::from_millis(50);
    let runner = ProjectionRunner::new(proxied, Arc::new(KeepsNothing), 500, poll);
    let task = tokio::spawn(runner.run());
    let first = append(&store, "session-cut", &[user_message("session-cut", "one")]).await;
    eventually(Duration::from_secs(30), "the first pass", || async {
        checkpoint_of(&store, "keeps_nothing")
            .await
            .filter(|p| *p >= first[0].position)
    })
    .await;

    let failed = || {
        logs.text()
            .lines()
            .filter(|l| l.contains("projection pass failed") && l.contains("keeps_nothing"))
            .count()
    };
    let before = failed();
    proxy.cut();
    let cut_at = std::time::Instant::now();
    eventually(Duration::from_secs(30), "a failed pass", || async {
        (failed() > before).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let failures = failed() - before;
    // At most one pass a poll interval (fewer, as the waits grow): a runner that ended
    // every wait on its listener's instant error failed thousands of times a second.
    let paced = (cut_at.elapsed().as_millis() / poll.as_millis()) as usize + 1;
    assert!(
        failures <= paced,
        "{failures} failed passes in {:?} (at most {paced})",
        cut_at.elapsed()
    );

    // Back, it projects what was appended meanwhile.
    let second = append(&store, "session-cut", &[user_message("session-cut", "two")]).await;
    proxy.restore();
    eventually(
        Duration::from_secs(30),
        "the pass after the cut",
        || async {
            checkpoint_of(&store, "keeps_nothing")
                .await
                .filter(|p| *p >= second[0].position)
        },
    )
    .await;
    task.abort();
    env.cleanup().await;
}

/// Memory events stored before memory was per person (no `person` field) are the default
/// person's, as migration 0112 made the rows they had projected: a rebuild from position 0
/// gives rows the per-person reads find under `user`, and a revision's stored state names
/// `user` as the migration wrote it.
#[tokio::test]
async fn memory_events_from_before_memory_was_per_person_are_the_default_persons() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let state_id = Uuid::new_v4();
    let source = Uuid::new_v4();
    append(
        &store,
        "persona-kuro",
        &[
            raw(
                "StateUpserted",
                json!({"persona": "kuro", "source_event_id": source, "state": {
                    "state_id": state_id, "kind": "fact", "status": "active",
                    "body_text": "master likes tea", "confidence": 0.8, "revision": 1,
                    "evidence_event_ids": [source], "reason": "said so"}}),
            ),
            raw(
                "PreferenceUpdated",
                json!({"persona": "kuro", "source_event_id": source, "subject_key": "tea",
                       "preference": {"domain": "food", "subject": "tea", "polarity": "like",
                                      "status": "confirmed", "confidence": 0.9},
                       "evidence_event_ids": [source], "reason": "said so"}),
            ),
        ],
    )
    .await;
    let memory_runner = runner(&store, Arc::new(MemoryProjection));
    catch_up(&memory_runner).await.unwrap();
    let memory = MemoryProjection::load_for(store.pool(), "kuro", "user")
        .await
        .unwrap();
    assert_eq!(memory.states[0].person.as_deref(), Some("user"));
    assert_eq!(memory.preferences[0].person, "user");
    let other = MemoryProjection::load_for(store.pool(), "kuro", "ann")
        .await
        .unwrap();
    assert!(other.states.is_empty() && other.preferences.is_empty());
    let revision: Value =
        sqlx::query_scalar("SELECT state FROM memory_state_revisions WHERE state_id = $1")
            .bind(state_id)
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(revision["person"], "user");
    let rows = MemoryProjection::dump(store.pool()).await.unwrap();
    memory_runner.rebuild().await.unwrap();
    assert_eq!(MemoryProjection::dump(store.pool()).await.unwrap(), rows);
    env.cleanup().await;
}
