//! The mood projection writes a pass's episodes in one statement and its trims in another:
//! whatever the pass boundaries, the windows, the summary rows and the announcements are
//! those the events give one at a time.

use std::time::Duration;

use ghost_mood::cache::CHANNEL;
use ghost_mood::episodes::MoodEpisodes;
use ghost_shared::affect::MoodConstants;
use ghost_shared::envelope::{EventMetadata, NewEvent, RecordedEvent};
use ghost_shared::projector::Projection;
use ghost_shared::store::{EventStore, ExpectedVersion};
use ghost_testkit::testing::TestEnv;
use serde_json::{json, Value};
use sqlx::postgres::PgListener;
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

fn reply(persona: &str, label: &str, intensity: f64) -> NewEvent {
    raw(
        "AssistantReplied",
        json!({"session_id": "mood-fold", "channel": "http", "user_event_id": Uuid::new_v4(),
               "speaker": persona, "text": "…",
               "affect": {"label": label, "intensity": intensity, "salience": 0.6,
                          "confidence": 0.8}}),
    )
}

fn reflected(persona: &str, at: f64, label: &str) -> NewEvent {
    raw(
        "AffectReflected",
        json!({"persona": persona, "episode_event_id": Uuid::new_v4(), "at": at,
               "affect": {"label": label, "intensity": 0.4, "salience": 0.3}}),
    )
}

/// Windows of three: Kuro fills hers and goes past it twice (once with an episode older
/// than all, which is dropped at once), Shiro starts hers; a reply without an affect and
/// an event of another kind add nothing.
fn episodes() -> Vec<NewEvent> {
    vec![
        reply("kuro", "joy", 0.5),
        reply("shiro", "anger", 0.7),
        reply("kuro", "sadness", 0.3),
        raw(
            "AssistantReplied",
            json!({"session_id": "mood-fold", "channel": "http", "user_event_id": Uuid::new_v4(),
                   "speaker": "kuro", "text": "no affect"}),
        ),
        reply("kuro", "fear", 0.6),
        reflected("kuro", 1_000.0, "anger"),
        raw(
            "SessionSummarized",
            json!({"session_id": "mood-fold", "summary": "-", "user_turns": 1}),
        ),
        reply("kuro", "joy", 0.9),
        reply("shiro", "joy", 0.2),
    ]
}

/// Both tables, every row.
async fn rows(store: &EventStore) -> Value {
    sqlx::query_scalar(
        "SELECT jsonb_build_object( \
           'episodes', (SELECT jsonb_agg(to_jsonb(t) ORDER BY t.persona, t.position) \
                        FROM mood_episodes t), \
           'state', (SELECT jsonb_agg(to_jsonb(t) - 'updated_at' ORDER BY t.persona) \
                     FROM partner_mood_state t))",
    )
    .fetch_one(store.pool())
    .await
    .unwrap()
}

/// Applies `events` in passes of the given sizes, each in its own transaction, after a
/// reset; returns the rows and the episode announcements, in the order they arrived.
async fn project(
    store: &EventStore,
    listener: &mut PgListener,
    events: &[RecordedEvent],
    passes: &[usize],
) -> (Value, Vec<Value>) {
    let projection = MoodEpisodes::new(MoodConstants {
        max_episodes: 3,
        ..MoodConstants::default()
    });
    let mut tx = store.pool().begin().await.unwrap();
    projection.reset(&mut tx).await.unwrap();
    tx.commit().await.unwrap();
    let mut at = 0;
    for &size in passes {
        let mut tx = store.pool().begin().await.unwrap();
        let pass = &events[at..at + size];
        if size == 1 {
            projection.apply(&mut tx, &pass[0]).await.unwrap();
        } else {
            projection.apply_all(&mut tx, pass).await.unwrap();
        }
        tx.commit().await.unwrap();
        at += size;
    }
    assert_eq!(at, events.len());
    // Seven episodes are announced (the reset before them too).
    let mut announced = Vec::new();
    while announced.len() < 7 {
        let n = tokio::time::timeout(Duration::from_secs(30), listener.recv())
            .await
            .expect("an announcement")
            .unwrap();
        let notice: Value = serde_json::from_str(n.payload()).unwrap();
        if notice["kind"] == "episode" {
            announced.push(json!([
                notice["persona"],
                notice["seq"],
                notice["position"]
            ]));
        }
    }
    (rows(store).await, announced)
}

#[tokio::test]
async fn a_pass_writes_the_windows_its_episodes_give_one_at_a_time() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let events = store
        .append("session-mood-fold", ExpectedVersion::Any, &episodes())
        .await
        .unwrap()
        .events;
    let n = events.len();
    let mut listener = PgListener::connect_with(store.pool()).await.unwrap();
    listener.listen(CHANNEL).await.unwrap();

    let (together, announced) = project(&store, &mut listener, &events, &[n]).await;
    let position = |i: usize| json!(events[i].position);
    assert_eq!(
        announced,
        vec![
            json!(["kuro", 1, position(0)]),
            json!(["shiro", 1, position(1)]),
            json!(["kuro", 2, position(2)]),
            json!(["kuro", 3, position(4)]),
            json!(["kuro", 4, position(5)]),
            json!(["kuro", 5, position(7)]),
            json!(["shiro", 2, position(8)]),
        ],
        "every episode numbered in its persona's order, announced in the pass's"
    );
    let kept: Vec<(&str, &Value)> = together["episodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["persona"].as_str().unwrap(), &e["position"]))
        .collect();
    assert_eq!(
        kept,
        vec![
            ("kuro", &position(2)),
            ("kuro", &position(4)),
            ("kuro", &position(7)),
            ("shiro", &position(1)),
            ("shiro", &position(8)),
        ],
        "the newest three of each window; the old reflection and the oldest reply dropped"
    );
    let state = &together["state"];
    assert_eq!(
        (
            &state[0]["persona"],
            &state[0]["episode_count"],
            &state[0]["episode_seq"]
        ),
        (&json!("kuro"), &json!(3), &json!(5))
    );
    assert_eq!(state[0]["last_event_id"], json!(events[7].event_id));
    assert_eq!(
        (
            &state[1]["persona"],
            &state[1]["episode_count"],
            &state[1]["episode_seq"]
        ),
        (&json!("shiro"), &json!(2), &json!(2))
    );

    let one_at_a_time = project(&store, &mut listener, &events, &vec![1; n]).await;
    assert_eq!(
        one_at_a_time,
        (together.clone(), announced.clone()),
        "one event a pass"
    );
    for split in 1..n {
        let two = project(&store, &mut listener, &events, &[split, n - split]).await;
        assert_eq!(
            two,
            (together.clone(), announced.clone()),
            "passes of {split} and {}",
            n - split
        );
    }
    env.cleanup().await;
}
