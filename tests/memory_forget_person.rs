//! Forgetting a person (issue 35 item 2): Ann and Ben talk in one Slack thread (the thread's
//! summary, the classifier's context and Ben's recall all come to hold Ann's words), Ann
//! also talks to the persona alone over HTTP; then Ann is forgotten. Afterwards no table,
//! no bus message, no API answer and no export holds her words or memories (a marker word
//! she used is searched for everywhere), Ben's memory and conversation stay, a rebuild of
//! every projection gives the same rows, a redelivered request changes nothing, and a later
//! plan resting on what she said cannot bring it back. Real Postgres and NATS, fake Slack,
//! a fake model.

mod support;

use std::sync::Arc;
use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_shared::bus::EventHandler;
use ghost_shared::envelope::EventPayload;
use ghost_shared::memory::forget_person::{PersonForgetRequested, PersonForgotten};
use ghost_shared::projections::MemoryProjection;
use ghost_shared::projector::ProjectionRunner;
use ghost_testkit::fake_llm::{RecordedRequest, Script};
use ghost_testkit::testing::{eventually, WORKER_MODEL};
use ghost_write_plan::forget_person::ForgetPerson;
use ghost_write_plan::writer::MemoryWriter;
use serde_json::{json, Value};
use support::plans::{applied, select_candidates, wait_applied, write_plan};
use support::platforms::{slack_event, ChannelApp, BOT};
use support::{NEUTRAL_AFFECT, TOKEN};

const WAIT: Duration = Duration::from_secs(30);

const ANN: &str = "UANN0001";
const BEN: &str = "UBEN0002";
const THREAD: &str = "slack:C1:1700000001.000100";
/// Ann's word: it must be nowhere once she is forgotten.
const MARKER: &str = "zanzibarquokka";
/// A later plan's body resting on what Ann said before she was forgotten.
const RESURRECTED: &str = "resurrected from forgotten words";

/// The fake model. Plans: a like or a dislike of celery with a state about the speaker,
/// and for Ann a state about no one that rests on her words (holding the marker); when
/// `old` names one of her forgotten messages, a plan resting on it. Summaries and replies
/// repeat the marker when the text holds it; selections take every candidate.
fn answer(r: &RecordedRequest, old: Option<String>) -> Script {
    let system = r.system_text().unwrap_or_default();
    let input = r.last_user_json();
    let last = r.last_user_text().unwrap_or_default();
    if system.contains("long-term memory") {
        let current = input["current_event_id"].clone();
        let text = input["turn"]["user_text"].as_str().unwrap_or_default();
        let state = |body: &str, about: &str, evidence: Value| {
            json!({"kind": "fact", "op": "upsert", "about": about, "body_text": body,
                   "confidence": 0.9, "evidence_event_ids": evidence, "reason": "said so"})
        };
        let preference = |polarity: &str| {
            json!({"op": "confirm", "domain": "food", "polarity": polarity,
                   "subject": "celery", "confidence": 0.9, "evidence_event_ids": [current],
                   "reason": "said so"})
        };
        let (states, preferences) = if text.contains("back again") {
            let evidence = json!([current, old.unwrap_or_default()]);
            (json!([state(RESURRECTED, "speaker", evidence)]), json!([]))
        } else if text.contains("love celery") {
            (
                json!([
                    state(
                        &format!("{MARKER} is the name of their cat"),
                        "speaker",
                        json!([current])
                    ),
                    state(
                        &format!("someone's cat is called {MARKER}"),
                        "nobody",
                        json!([current])
                    )
                ]),
                json!([preference("like")]),
            )
        } else if text.contains("hate celery") {
            (
                json!([state(
                    "celery gives them headaches",
                    "speaker",
                    json!([current])
                )]),
                json!([preference("dislike")]),
            )
        } else {
            (json!([]), json!([]))
        };
        return Script::reply(&write_plan(states, preferences, "celery", "observe").to_string());
    }
    if let Some(selection) = select_candidates(r, |_| true) {
        return selection;
    }
    if last.contains("[turns since]") {
        let marker = if last.contains(MARKER) {
            MARKER
        } else {
            "nothing"
        };
        return Script::reply(&format!("They talked about celery and {marker}."));
    }
    // The reply repeats the marker when the message it answers holds it (not the MEMORY or
    // SUMMARY blocks before it: a reply to someone else quoting a memory is that reply's).
    let message = last
        .rsplit_once("[the message you answer]\n")
        .map_or(last.as_str(), |(_, m)| m);
    match r.model.as_deref() {
        Some(WORKER_MODEL) => Script::reply(NEUTRAL_AFFECT),
        _ if message.contains(MARKER) => Script::reply(&format!("{MARKER} is a lovely name")),
        _ => Script::reply("noted"),
    }
}

/// `user` says `text` in the Slack thread (the `n`th message there).
async fn slack_says(c: &ChannelApp, n: usize, user: &str, text: &str) {
    let body = slack_event(
        &format!("Ev-forget-{n}"),
        json!({"type": "app_mention", "user": user, "text": format!("<@{BOT}> {text}"),
               "ts": format!("1700000009.00030{n}"), "thread_ts": "1700000001.000100",
               "channel": "C1"}),
    );
    assert_eq!(c.post_slack_signed(&body, None).await, 200);
    c.slack_deliveries(n).await;
}

/// One HTTP chat turn as `user` in `session`.
async fn chat_as(c: &ChannelApp, session: &str, user: &str, text: &str) {
    let body = json!({"session_id": session, "text": text, "user_id": user}).to_string();
    let response = c.app.post_chat_raw(body, Some(TOKEN)).await;
    assert_eq!(response.status(), 200);
    let events = support::read_sse(response).await;
    assert_eq!(events.last().unwrap().event, "done", "{events:?}");
}

/// Every table of the database holding `word`, with how many rows.
async fn tables_holding(c: &ChannelApp, word: &str) -> Vec<(String, i64)> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables \
          WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1",
    )
    .fetch_all(c.app.store.pool())
    .await
    .unwrap();
    let mut holding = Vec::new();
    for table in tables {
        let n: i64 = sqlx::query_scalar(&format!(
            "SELECT count(*) FROM \"{table}\" t WHERE t::text ILIKE '%' || $1 || '%'"
        ))
        .bind(word)
        .fetch_one(c.app.store.pool())
        .await
        .unwrap();
        if n > 0 {
            holding.push((table, n));
        }
    }
    holding
}

/// How many messages of the bus's streams (events and dead letters) hold `word`.
async fn bus_messages_holding(c: &ChannelApp, word: &str) -> usize {
    let bus = c.app.stack.ctx.bus();
    let name = bus.config().stream_name.clone();
    let mut n = 0;
    for name in [name.clone(), format!("{name}_DLQ")] {
        let mut stream = bus.jetstream().get_stream(&name).await.unwrap();
        let last = stream.info().await.unwrap().state.last_sequence;
        for seq in 1..=last {
            if let Ok(m) = stream.get_raw_message(seq).await {
                n += usize::from(String::from_utf8_lossy(&m.payload).contains(word));
            }
        }
    }
    n
}

/// Nothing holds Ann's words anywhere; her id is only in the request and its audit.
async fn nowhere(c: &ChannelApp) {
    assert_eq!(tables_holding(c, MARKER).await, vec![]);
    let with_her_id: Vec<String> = tables_holding(c, ANN)
        .await
        .into_iter()
        .map(|t| t.0)
        .filter(|t| t != "events" && t != "person_redactions")
        .collect();
    assert_eq!(with_her_id, Vec::<String>::new());
    let events_with_her_id: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT event_type FROM events WHERE payload::text LIKE '%' || $1 || '%' ORDER BY 1",
    )
    .bind(ANN)
    .fetch_all(c.app.store.pool())
    .await
    .unwrap();
    assert_eq!(
        events_with_her_id,
        vec![
            PersonForgetRequested::EVENT_TYPE,
            PersonForgotten::EVENT_TYPE
        ]
    );
    assert_eq!(bus_messages_holding(c, MARKER).await, 0);
}

/// `POST /api/memory/forget-person` with `body`: status and answer.
async fn forget(c: &ChannelApp, body: &str) -> (u16, Value) {
    let response = c
        .app
        .http
        .post(format!("{}/api/memory/forget-person", c.app.base_url))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// `POST /api/reminders` with `body`: the status.
async fn remind(c: &ChannelApp, body: Value) -> u16 {
    let response = c
        .app
        .http
        .post(format!("{}/api/reminders", c.app.base_url))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    response.status().as_u16()
}

/// `person`'s reminders still to come, as `GET /api/reminders` lists them.
async fn reminders_of(c: &ChannelApp, person: &str) -> Vec<Value> {
    let listed = get(c, &format!("/api/reminders?person={person}")).await;
    listed["reminders"].as_array().cloned().unwrap_or_default()
}

async fn get(c: &ChannelApp, path: &str) -> Value {
    c.app
        .http
        .get(format!("{}{path}", c.app.base_url))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The projections' tables, as JSON rows in a stable order.
async fn projected(c: &ChannelApp) -> Vec<Value> {
    let mut out = Vec::new();
    for table in [
        "assistant_text",
        "memory_states",
        "memory_state_revisions",
        "preferences",
        "memory_event_annotations",
        "memory_forgotten",
        "persona_interest_state",
        "routing_sessions",
        "routing_log",
        "analyze_results",
        "mood_episodes",
    ] {
        let rows: Option<Value> = sqlx::query_scalar(&format!(
            "SELECT jsonb_agg(to_jsonb(t) - 'updated_at' ORDER BY to_jsonb(t)::text) FROM {table} t"
        ))
        .fetch_one(c.app.store.pool())
        .await
        .unwrap();
        out.push(json!({ table: rows }));
    }
    out
}

/// `ghost projections rebuild <name>` until it replayed every stored event (the gap-safe
/// read holds back what other tests' running transactions might still write before).
async fn rebuild(c: &ChannelApp, name: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let stored = c.app.event_count().await;
        let (ok, out, err) = c.app.ghost(&["projections", "rebuild", name]).await;
        assert!(ok, "{err}");
        if out.contains(&format!("rebuilt {name} from {stored} events")) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{out}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgotten_person_is_nowhere_and_everyone_else_stays() {
    let mut services = ServiceName::ALL.to_vec();
    services.push(ServiceName::WritePlan);
    let c = ChannelApp::spawn_services(
        &services,
        &[
            ("GHOST_MEMORY__RECALL_ENABLED", "true"),
            ("GHOST_ROUTING__SUMMARIZE_AFTER_TURNS", "3"),
        ],
    )
    .await;
    let old: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
    let cited = old.clone();
    c.app
        .llm
        .set_responder(move |r| answer(r, cited.lock().unwrap().clone()));

    slack_says(&c, 1, ANN, &format!("I love celery; my cat is {MARKER}")).await;
    wait_applied(&c.app, 1).await;
    slack_says(&c, 2, BEN, "I hate celery").await;
    wait_applied(&c.app, 2).await;
    slack_says(&c, 3, BEN, "what about celery, Ben here?").await;
    chat_as(
        &c,
        "ann-alone",
        ANN,
        &format!("did I tell you about {MARKER}?"),
    )
    .await;
    wait_applied(&c.app, 4).await;
    // A reminder each: hers holds her words, his must stay.
    let ann_reminder = json!({"person": ANN, "session_id": "ann-alone",
                              "text": format!("brush {MARKER}"), "when": "in 2 hours"});
    assert_eq!(remind(&c, ann_reminder).await, 201);
    let ben_reminder = json!({"person": BEN, "session_id": THREAD,
                              "text": "buy celery", "when": "in 3 hours"});
    assert_eq!(remind(&c, ben_reminder).await, 201);
    eventually(WAIT, "both reminders projected", || async {
        let listed = reminders_of(&c, ANN).await.len() + reminders_of(&c, BEN).await.len();
        (listed == 2).then_some(())
    })
    .await;
    eventually(WAIT, "the thread's summary", || async {
        let summarized = c.events_of("SessionSummarized").await;
        summarized
            .iter()
            .any(|s| s["summary"].as_str().is_some_and(|t| t.contains(MARKER)))
            .then_some(())
    })
    .await;
    let her_first = c
        .app
        .session_events(THREAD)
        .await
        .into_iter()
        .next()
        .unwrap();
    assert_eq!(her_first.payload["speaker"], ANN);
    // Everywhere before: the check below would find nothing to find otherwise.
    let before: Vec<String> = tables_holding(&c, MARKER)
        .await
        .into_iter()
        .map(|t| t.0)
        .collect();
    for table in [
        "events",
        "assistant_text",
        "memory_states",
        "routing_log",
        "reminders",
    ] {
        assert!(before.contains(&table.to_owned()), "{before:?}");
    }
    assert!(bus_messages_holding(&c, MARKER).await > 0);
    let recalled_by_ben = c.events_of("RecallPerformed").await.iter().any(|r| {
        r["session_id"] == THREAD
            && r.to_string().contains(MARKER)
            && r.to_string().contains("Ben here")
    });
    assert!(
        recalled_by_ben,
        "Ben's recall selected the state resting on Ann's words"
    );
    let bens = MemoryProjection::load_for(c.app.store.pool(), "kuro", BEN)
        .await
        .unwrap();
    let bens_messages = |m: &Value| -> Vec<String> {
        m["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["role"] == "user")
            .map(|x| x["text"].as_str().unwrap().to_owned())
            .collect()
    };

    // Refused, recording nothing: a body that is no request, a person nobody knows.
    let events = c.app.event_count().await;
    assert_eq!(forget(&c, "{").await.0, 400);
    assert_eq!(forget(&c, r#"{"person": ""}"#).await.0, 400);
    let (status, body) = forget(&c, r#"{"person": "UNOBODY"}"#).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (404, json!("no_such_person"))
    );
    assert_eq!(c.app.event_count().await, events);

    // Forgotten.
    let request = json!({"person": ANN, "reason": "asked to", "request_id": "r-1"}).to_string();
    let (status, body) = forget(&c, &request).await;
    assert_eq!(status, 202, "{body}");
    let done = eventually(WAIT, "PersonForgotten", || async {
        c.events_of(PersonForgotten::EVENT_TYPE)
            .await
            .into_iter()
            .next()
    })
    .await;
    let done: PersonForgotten = serde_json::from_value(done).unwrap();
    assert_eq!(done.person, ANN);
    assert!(done.redacted["UserMessageReceived"] >= 2, "{done:?}");
    assert!(done.scrubbed["SessionSummarized"] >= 1, "{done:?}");
    assert!(done.bus_copies_deleted > 0, "{done:?}");
    assert_eq!(done.redacted["ReminderScheduled"], 1, "{done:?}");

    nowhere(&c).await;
    // Her reminder will not come due; his is as he asked it.
    assert_eq!(reminders_of(&c, ANN).await, Vec::<Value>::new());
    let his = reminders_of(&c, BEN).await;
    assert_eq!(his.len(), 1);
    assert_eq!(his[0]["text"], "buy celery");
    // The same request again (the API, then the handler as a redelivery): nothing new.
    let events = c.app.event_count().await;
    assert_eq!(forget(&c, &request).await.0, 202);
    let stored = c
        .app
        .store
        .read_stream("people-forget", 0)
        .await
        .unwrap()
        .into_iter()
        .find(|e| e.event_type == PersonForgetRequested::EVENT_TYPE)
        .unwrap();
    let runner = ProjectionRunner::new(
        c.app.store.clone(),
        Arc::new(MemoryProjection),
        100,
        Duration::from_millis(50),
    );
    let ctx = c.app.stack.ctx.for_service("write-plan");
    let handler = ForgetPerson::new(ctx.clone(), Arc::new(MemoryWriter::new(ctx, runner)));
    handler.handle(stored).await.unwrap();
    assert_eq!(c.app.event_count().await, events);

    // The API: nothing of hers; Ben's memory and words as they were.
    let hers = get(&c, &format!("/api/memory?person={ANN}")).await;
    assert_eq!(hers["preferences"], json!([]), "{hers}");
    assert!(
        hers["states"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["person"].is_null()),
        "{hers}"
    );
    assert_eq!(
        get(&c, "/api/sessions/ann-alone/messages").await["messages"],
        json!([])
    );
    let thread = get(&c, &format!("/api/sessions/{THREAD}/messages")).await;
    assert_eq!(
        bens_messages(&thread),
        vec![
            "I hate celery".to_owned(),
            "what about celery, Ben here?".to_owned()
        ],
        "{thread}"
    );
    assert_eq!(
        MemoryProjection::load_for(c.app.store.pool(), "kuro", BEN)
            .await
            .unwrap()
            .preferences,
        bens.preferences
    );
    // The conversation goes on for Ben.
    slack_says(&c, 4, BEN, "still there?").await;

    // The export holds nothing of her.
    let file = std::env::temp_dir().join(format!("ghost-forget-{}.json", uuid::Uuid::new_v4()));
    let path = file.to_str().unwrap();
    let (ok, _, err) = c
        .app
        .ghost(&["memory", "export", "--history", "--out", path])
        .await;
    assert!(ok, "{err}");
    let exported = std::fs::read_to_string(&file).unwrap();
    std::fs::remove_file(&file).ok();
    assert!(
        !exported.contains(MARKER) && !exported.contains(ANN),
        "{exported}"
    );
    assert!(exported.contains("I hate celery"));

    // Rebuilt from the first event, every projection gives the same rows.
    c.app.wait_idle().await;
    wait_applied(&c.app, 3).await;
    let rows = projected(&c).await;
    for name in ["assistant_text", "memory", "routing", "partner_mood_state"] {
        rebuild(&c, name).await;
    }
    assert_eq!(projected(&c).await, rows);
    nowhere(&c).await;

    // Ann comes back; a plan resting on what she said before cannot bring it back.
    *old.lock().unwrap() = Some(her_first.event_id.to_string());
    let annotations = applied(&c.app).await;
    slack_says(&c, 5, ANN, "I am back again").await;
    wait_applied(&c.app, annotations + 1).await;
    let states: Vec<String> = sqlx::query_scalar("SELECT body_text FROM memory_states")
        .fetch_all(c.app.store.pool())
        .await
        .unwrap();
    assert!(!states.iter().any(|s| s == RESURRECTED), "{states:?}");
    assert!(tables_holding(&c, MARKER).await.is_empty());
    c.cleanup().await;
}
