//! The `routing` projection writes a pass's events in one statement, folded into one change
//! per row: whatever the pass boundaries, its rows are those the events give one at a time.

use ghost_router::projections::RoutingProjection;
use ghost_shared::envelope::{EventMetadata, NewEvent, RecordedEvent};
use ghost_shared::projector::Projection;
use ghost_shared::store::{EventStore, ExpectedVersion};
use ghost_testkit::testing::TestEnv;
use serde_json::{json, Value};
use uuid::Uuid;

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

/// Two messages of one session with everything the router records about them: a
/// classified CODE turn with two loops (the second a reroute to ANALYZE) and an ANALYZE
/// result, then an explicit CHAT turn correcting it; two summaries, the older arriving last.
fn turns() -> Vec<NewEvent> {
    let first = raw(
        "UserMessageReceived",
        json!({"session_id": "fold", "channel": "http", "speaker": "user",
               "text": "fix it, password=hunter2"}),
    );
    let second = raw(
        "UserMessageReceived",
        json!({"session_id": "fold", "channel": "line", "speaker": "user", "text": "/chat no"}),
    );
    let (m1, m2) = (first.event_id, second.event_id);
    let contract = r#"{"result":"{\"rows\":3}","needs_next_loop":false,"why":"","next_actions":[],"questions_for_user":[],"confidence":0.9,"risk":"low"}"#;
    vec![
        first,
        raw(
            "RouteDecided",
            json!({"session_id": "fold", "user_event_id": m1, "route": "CODE",
                   "source": "classifier", "local_only": true, "primary": true,
                   "entry": "router", "detail": {"proposed": "CODE", "confidence": 0.8}}),
        ),
        raw(
            "WorkRequested",
            json!({"session_id": "fold", "user_event_id": m1, "route": "CODE",
                   "task": "fix it", "loop_index": 0}),
        ),
        raw(
            "LoopDecided",
            json!({"session_id": "fold", "user_event_id": m1, "route": "CODE",
                   "loop_index": 0, "decision": "reroute", "reroute_to": "ANALYZE",
                   "needs_next_loop": true, "risk": "high", "fit": false,
                   "failure": "contract"}),
        ),
        raw(
            "WorkRequested",
            json!({"session_id": "fold", "user_event_id": m1, "route": "ANALYZE",
                   "task": "fix it", "loop_index": 1, "reroute": true}),
        ),
        raw(
            "WorkerCompleted",
            json!({"session_id": "fold", "user_event_id": m1, "route": "ANALYZE",
                   "result": contract}),
        ),
        raw(
            "LoopDecided",
            json!({"session_id": "fold", "user_event_id": m1, "route": "ANALYZE",
                   "loop_index": 1, "decision": "done", "needs_next_loop": false,
                   "persona_proposal": "invalid route: OPS"}),
        ),
        raw(
            "RenderRequested",
            json!({"session_id": "fold", "channel": "http", "user_event_id": m1,
                   "user_text": "fix it", "work_result": {"route": "ANALYZE"}}),
        ),
        raw(
            "SessionSummarized",
            json!({"session_id": "fold", "summary": "three turns", "user_turns": 3}),
        ),
        second,
        raw(
            "RouteDecided",
            json!({"session_id": "fold", "user_event_id": m2, "route": "CHAT",
                   "source": "explicit", "local_only": false, "primary": false,
                   "corrects": {"user_event_id": m1, "route": "CODE",
                                "source": "classifier", "signal": "explicit"}}),
        ),
        raw(
            "RenderRequested",
            json!({"session_id": "fold", "channel": "line", "user_event_id": m2,
                   "user_text": "/chat no"}),
        ),
        raw(
            "SessionSummarized",
            json!({"session_id": "fold", "summary": "two turns", "user_turns": 2}),
        ),
    ]
}

/// Every row of the router's three tables, ids replaced by the message's number so two
/// databases compare equal.
async fn rows(store: &EventStore) -> Value {
    sqlx::query_scalar(
        "SELECT jsonb_build_object( \
           'log', (SELECT jsonb_agg(to_jsonb(t) - 'user_event_id' - 'corrects_event_id' \
                      || jsonb_build_object('corrects', t.corrects_event_id IS NOT NULL) \
                      ORDER BY t.position) FROM routing_log t), \
           'sessions', (SELECT jsonb_agg(to_jsonb(t)) FROM routing_sessions t), \
           'analyze', (SELECT jsonb_agg(to_jsonb(t) - 'event_id' - 'user_event_id') \
                       FROM analyze_results t))",
    )
    .fetch_one(store.pool())
    .await
    .unwrap()
}

/// Applies `events` in passes of the given sizes, each pass in its own transaction, after
/// emptying the tables.
async fn project(store: &EventStore, events: &[RecordedEvent], passes: &[usize]) -> Value {
    let mut tx = store.pool().begin().await.unwrap();
    RoutingProjection.reset(&mut tx).await.unwrap();
    tx.commit().await.unwrap();
    let mut at = 0;
    for &size in passes {
        let mut tx = store.pool().begin().await.unwrap();
        let pass = &events[at..at + size];
        if size == 1 {
            RoutingProjection.apply(&mut tx, &pass[0]).await.unwrap();
        } else {
            RoutingProjection.apply_all(&mut tx, pass).await.unwrap();
        }
        tx.commit().await.unwrap();
        at += size;
    }
    assert_eq!(at, events.len());
    rows(store).await
}

#[tokio::test]
async fn a_pass_writes_the_rows_its_events_give_one_at_a_time() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let events = store
        .append("session-fold", ExpectedVersion::Any, &turns())
        .await
        .unwrap()
        .events;
    let n = events.len();

    let together = project(&store, &events, &[n]).await;
    let log = &together["log"];
    let first = &log[0];
    let masked = first["input_masked"].as_str().unwrap();
    assert!(
        masked.starts_with("fix it, ")
            && masked.contains("[REDACTED:")
            && !masked.contains("hunter2"),
        "{masked}"
    );
    assert_eq!(first["channel"], "http");
    assert_eq!(first["first_route"], "CODE");
    assert_eq!(first["first_source"], "classifier");
    assert_eq!(first["classifier_route"], "CODE");
    assert_eq!(first["classifier_confidence"], 0.8);
    assert_eq!(first["local_only"], true);
    assert_eq!(first["user_override"], false);
    assert_eq!(
        (&first["worker_calls"], &first["coder_calls"]),
        (&json!(1), &json!(1))
    );
    assert_eq!(first["rerouted"], true);
    // The last loop's signals, every loop's decision, every discarded output.
    assert_eq!(
        (&first["needs_next_loop"], &first["risk"], &first["fit"]),
        (&json!(false), &Value::Null, &Value::Null)
    );
    assert_eq!(first["loop_decisions"].as_array().unwrap().len(), 2);
    assert_eq!(
        first["parse_failures"],
        json!([{"stage": "worker", "route": "CODE", "kind": "contract"},
               {"stage": "persona_proposal", "kind": "route"}])
    );
    assert_eq!(first["final_route"], "ANALYZE");
    assert_eq!(first["corrects"], false);
    let second = &log[1];
    assert_eq!(second["first_route"], "CHAT");
    assert_eq!(second["user_override"], true);
    assert_eq!(second["local_only"], false);
    assert_eq!(second["final_route"], "CHAT");
    assert_eq!(second["corrects"], true);
    assert_eq!(second["misrouted_as"], "CODE");
    assert_eq!(second["misrouted_source"], "classifier");
    assert_eq!(second["correction_signal"], "explicit");
    let session = &together["sessions"][0];
    assert_eq!(session["local_only"], false, "the last decision's flag");
    assert_eq!(
        session["last_primary_route"], "CODE",
        "the last primary route"
    );
    assert_eq!(
        session["summary"], "three turns",
        "the summary covering most turns"
    );
    assert_eq!(session["summary_turns"], 3);
    assert_eq!(
        together["analyze"][0]["result"]["result"],
        json!({"rows": 3})
    );

    let one_at_a_time = project(&store, &events, &vec![1; n]).await;
    assert_eq!(one_at_a_time, together, "one event a pass");
    for split in 1..n {
        let two = project(&store, &events, &[split, n - split]).await;
        assert_eq!(two, together, "passes of {split} and {}", n - split);
    }
    env.cleanup().await;
}
