//! The mood service answers `mood.get` from the windows it keeps in memory, kept current by
//! the projection's announcements: no read of the store while a window is current, the
//! next episode arriving without one, and a rebuild elsewhere or a lost announcement
//! listener dropping what it held.

mod support;

use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_mood::mood::{mood_at, Episode};
use ghost_shared::affect::{Affect, AffectLabel, MoodState};
use ghost_shared::envelope::NewEvent;
use ghost_shared::events::AffectReflected;
use ghost_shared::store::{EventStore, ExpectedVersion};
use ghost_testkit::testing::{eventually, origin_event};
use serde_json::Value;
use support::tcp_proxy::TcpProxy;
use support::TestApp;
use uuid::Uuid;

/// The time every answer is asked for (after every episode below).
const NOW: f64 = 1_700_001_000.0;

/// An episode `at` seconds, and the event that reflects it for `persona`.
fn episode(persona: &str, at: f64, label: AffectLabel, intensity: f64) -> (Episode, NewEvent) {
    let affect = Affect {
        label,
        intensity,
        salience: 0.8,
        confidence: Some(0.9),
        reflection_text: None,
        topic_tags: Vec::new(),
        policy: None,
    };
    let episode = Episode {
        at,
        label,
        intensity,
        salience: 0.8,
        confidence: Some(0.9),
        policy: None,
    };
    let payload = AffectReflected {
        persona: persona.into(),
        episode_event_id: Uuid::new_v4(),
        at,
        affect,
    };
    (episode, origin_event(Uuid::new_v4(), &payload))
}

async fn projected(app: &TestApp, persona: &str, count: i64) {
    eventually(Duration::from_secs(30), "episodes projected", || async {
        let n: Option<i64> = sqlx::query_scalar(
            "SELECT episode_count::bigint FROM partner_mood_state WHERE persona = $1",
        )
        .bind(persona)
        .fetch_optional(app.store.pool())
        .await
        .unwrap();
        (n == Some(count)).then_some(())
    })
    .await;
}

/// The service's answer at [`NOW`], or why there is none.
async fn ask(app: &TestApp, persona: &str) -> Result<MoodState, String> {
    app.ask_mood(persona, Some(NOW))
        .await
        .map(|a| a.state)
        .map_err(|e| e.to_string())
}

/// Whether two moods agree (the window computes incrementally: equal up to rounding).
fn same(a: &MoodState, b: &MoodState) -> bool {
    fn close(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => {
                (x.as_f64().unwrap() - y.as_f64().unwrap()).abs() < 1e-9
            }
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| close(v, w)))
            }
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(v, w)| close(v, w))
            }
            _ => a == b,
        }
    }
    close(
        &serde_json::to_value(a).unwrap(),
        &serde_json::to_value(b).unwrap(),
    )
}

/// Renames the window's tables away (`hide`) or back: while away, any read fails.
async fn hide_tables(app: &TestApp, hide: bool) {
    let (from, to) = if hide { ("", "_away") } else { ("_away", "") };
    support::execute_all(
        &app.store,
        &[
            &format!("ALTER TABLE mood_episodes{from} RENAME TO mood_episodes{to}"),
            &format!("ALTER TABLE partner_mood_state{from} RENAME TO partner_mood_state{to}"),
        ],
    )
    .await;
}

#[tokio::test]
async fn a_current_window_is_answered_without_reading_the_store() {
    let app = TestApp::spawn_services(&[ServiceName::Mood], &[]).await;
    let constants = app.env.config.ghost.mood.constants;
    let persona = "warm";
    let (e1, r1) = episode(persona, NOW - 600.0, AffectLabel::Joy, 0.7);
    let (e2, r2) = episode(persona, NOW - 300.0, AffectLabel::Sadness, 0.4);
    app.append_to_persona(persona, &[r1, r2]).await;
    projected(&app, persona, 2).await;
    let first = ask(&app, persona).await.unwrap();
    assert!(same(
        &first,
        &mood_at(&[e1.clone(), e2.clone()], NOW, &constants)
    ));

    // With the tables gone, an answer can only come from memory.
    hide_tables(&app, true).await;
    let from_memory = ask(&app, persona).await;
    hide_tables(&app, false).await;
    assert!(
        from_memory.as_ref().is_ok_and(|m| same(m, &first)),
        "a current window is answered without a read: {from_memory:?}"
    );

    // The next episode reaches the window through the projection's announcement: the
    // answer moves to it while the store still cannot be read.
    let (e3, r3) = episode(persona, NOW - 60.0, AffectLabel::Anger, 0.9);
    app.append_to_persona(persona, &[r3]).await;
    projected(&app, persona, 3).await;
    hide_tables(&app, true).await;
    let expected = mood_at(&[e1, e2, e3], NOW, &constants);
    assert!(
        !same(&expected, &first),
        "the third episode changes the mood"
    );
    let moved = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Ok(m) = ask(&app, persona).await {
                break m;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    hide_tables(&app, false).await;
    let moved = moved.expect("an answer from memory once the announcement arrived");
    assert!(same(&moved, &expected), "{moved:?} vs {expected:?}");
    app.cleanup().await;
}

#[tokio::test]
async fn a_rebuild_in_another_process_drops_the_windows_held_in_memory() {
    let app = TestApp::spawn_services(&[ServiceName::Mood], &[]).await;
    let constants = app.env.config.ghost.mood.constants;
    let persona = "rebuilt";
    let (e1, r1) = episode(persona, NOW - 600.0, AffectLabel::Anger, 0.9);
    let (e2, r2) = episode(persona, NOW - 300.0, AffectLabel::Joy, 0.3);
    app.append_to_persona(persona, &[r1, r2]).await;
    projected(&app, persona, 2).await;
    let held = ask(&app, persona).await.unwrap();
    assert!(same(&held, &mood_at(&[e1, e2.clone()], NOW, &constants)));

    // Another process rebuilds the window keeping only the newest episode.
    app.run_ghost_command(
        &["projections", "rebuild", "partner_mood_state"],
        &[("GHOST_MOOD__CONSTANTS__MAX_EPISODES", "1")],
    )
    .await;
    projected(&app, persona, 1).await;
    let expected = mood_at(&[e2], NOW, &constants);
    assert!(!same(&expected, &held), "the rebuild changes the mood");
    eventually(
        Duration::from_secs(30),
        "the rebuilt window answered",
        || async { ask(&app, persona).await.ok().filter(|m| same(m, &expected)) },
    )
    .await;
    app.cleanup().await;
}

#[tokio::test]
async fn a_lost_announcement_listener_drops_the_windows_until_it_listens_again() {
    let logs = support::logs::capture();
    let lost = "mood announcements lost";
    let lost_before = logs.count(lost);
    // The mood service reaches Postgres through a proxy the test can cut; the test and
    // the rebuild below reach it directly.
    let proxy = TcpProxy::start().await;
    let mut direct = String::new();
    let mut app = TestApp::spawn_adjusted(&[ServiceName::Mood], &[], |c| {
        direct = c.ghost.database.url.clone();
        c.ghost.database.url = proxy.route(&direct);
    })
    .await;
    app.store = EventStore::connect(&direct, 4).await.unwrap();
    let constants = app.env.config.ghost.mood.constants;
    let persona = "unheard";
    let (e1, r1) = episode(persona, NOW - 600.0, AffectLabel::Anger, 0.9);
    let (e2, r2) = episode(persona, NOW - 300.0, AffectLabel::Joy, 0.3);
    let stream = ghost_shared::events::persona_stream(persona);
    app.store
        .append(&stream, ExpectedVersion::Any, &[r1, r2])
        .await
        .unwrap();
    projected(&app, persona, 2).await;
    let held = ask(&app, persona).await.unwrap();
    assert!(same(&held, &mood_at(&[e1, e2.clone()], NOW, &constants)));
    assert!(
        answered_from_memory(&app, persona)
            .await
            .is_some_and(|m| same(&m, &held)),
        "the window is held in memory"
    );

    // Cut off, the service cannot hear that another process rebuilds the window.
    proxy.cut();
    logs.wait_for_more(lost, lost_before).await;
    app.run_ghost_command(
        &["projections", "rebuild", "partner_mood_state"],
        &[("GHOST_MOOD__CONSTANTS__MAX_EPISODES", "1")],
    )
    .await;
    projected(&app, persona, 1).await;
    let rebuilt = mood_at(std::slice::from_ref(&e2), NOW, &constants);
    assert!(!same(&rebuilt, &held), "the rebuild changes the mood");
    // Deaf, it reads the store (here unreachable) instead of answering what it held.
    let deaf = ask(&app, persona).await;
    assert!(
        !deaf.as_ref().is_ok_and(|m| same(m, &held)),
        "a deaf service answered the window it held: {deaf:?}"
    );

    // Back, it answers the rebuilt window, not the one it held before the loss...
    proxy.restore();
    eventually(
        Duration::from_secs(30),
        "the rebuilt window answered",
        || async { ask(&app, persona).await.ok().filter(|m| same(m, &rebuilt)) },
    )
    .await;
    // ...and, listening again, it keeps what it reads and answers it from memory...
    eventually(
        Duration::from_secs(30),
        "the window answered from memory again",
        || async {
            ask(&app, persona).await.ok()?;
            answered_from_memory(&app, persona)
                .await
                .filter(|m| same(m, &rebuilt))
        },
    )
    .await;
    // ...where the next episode reaches it through the announcement, while the store
    // cannot be read.
    let (e3, r3) = episode(persona, NOW - 60.0, AffectLabel::Sadness, 0.6);
    app.store
        .append(&stream, ExpectedVersion::Any, &[r3])
        .await
        .unwrap();
    projected(&app, persona, 2).await;
    let expected = mood_at(&[e2, e3], NOW, &constants);
    eventually(
        Duration::from_secs(30),
        "the next episode answered from memory",
        || async {
            answered_from_memory(&app, persona)
                .await
                .filter(|m| same(m, &expected))
        },
    )
    .await;
    app.cleanup().await;
}

/// The service's answer while the window's tables are away: only a window held in memory
/// can give one.
async fn answered_from_memory(app: &TestApp, persona: &str) -> Option<MoodState> {
    hide_tables(app, true).await;
    let answer = ask(app, persona).await;
    hide_tables(app, false).await;
    answer.ok()
}
