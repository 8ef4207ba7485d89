//! Memory is about someone (issue 35 item 1): in a Slack thread and in a LINE group, two
//! people state opposite preferences; each keeps their own through redelivery and rebuild,
//! and the memories recalled into the reply for each are their own and what is about no
//! one. Real Postgres and NATS, fake platforms, a fake worker writing the plans.

mod support;

use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_shared::bus::EventHandler;
use ghost_shared::envelope::EventPayload;
use ghost_shared::events::{persona_stream, AssistantReplied, RecallPerformed};
use ghost_shared::projections::MemoryProjection;
use ghost_testkit::fake_llm::{RecordedRequest, Script};
use ghost_testkit::testing::{eventually, WORKER_MODEL};
use serde_json::{json, Value};
use support::plans::{
    is_state_or_preference, second_planner, select_candidates, wait_applied, write_plan,
};
use support::platforms::{line_text_event, slack_event, ChannelApp, BOT};
use support::NEUTRAL_AFFECT;

const WAIT: Duration = Duration::from_secs(30);

/// Slack users in one thread.
const ANN: &str = "UANN0001";
const BEN: &str = "UBEN0002";
/// LINE users in one group.
const CHO: &str = "U0000000000000000000000000000c40";
const DAN: &str = "U0000000000000000000000000000d47";

/// The fake worker: plans by the user's words (a like or a dislike of celery, each with a
/// state about the speaker, and one state about no one), a selection taking every memory
/// candidate, a neutral affect otherwise.
fn answer(r: &RecordedRequest) -> Script {
    let system = r.system_text().unwrap_or_default();
    let input = r.last_user_json();
    if system.contains("long-term memory") {
        let current = input["current_event_id"].clone();
        let text = input["turn"]["user_text"].as_str().unwrap_or_default();
        let (polarity, fact) = if text.contains("love celery") {
            ("like", "セロリのスープを毎週作る人")
        } else if text.contains("hate celery") {
            ("dislike", "セロリの匂いで頭が痛くなる人")
        } else {
            return Script::reply(
                &write_plan(json!([]), json!([]), "celery", "observe").to_string(),
            );
        };
        let state = |body: &str, about: &str| {
            json!({"kind": "fact", "op": "upsert", "about": about, "body_text": body,
                   "confidence": 0.9, "evidence_event_ids": [current], "reason": "said so"})
        };
        let preference = json!({"op": "confirm", "domain": "food", "polarity": polarity,
            "subject": "celery", "confidence": 0.9, "evidence_event_ids": [current],
            "reason": "said so"});
        let states = json!([
            state(fact, "speaker"),
            state("セロリについてもっと知りたい", "nobody")
        ]);
        return Script::reply(
            &write_plan(states, json!([preference]), "celery", "observe").to_string(),
        );
    }
    if let Some(selection) = select_candidates(r, is_state_or_preference) {
        return selection;
    }
    match r.model.as_deref() {
        Some(WORKER_MODEL) => Script::reply(NEUTRAL_AFFECT),
        _ => Script::reply("ok"),
    }
}

async fn spawn() -> ChannelApp {
    let mut services = ServiceName::ALL.to_vec();
    services.push(ServiceName::WritePlan);
    let c =
        ChannelApp::spawn_services(&services, &[("GHOST_MEMORY__RECALL_ENABLED", "true")]).await;
    c.app.llm.set_responder(answer);
    c
}

/// `user` says `text` in Slack thread 1700000001.000100 of channel C1.
async fn slack_says(c: &ChannelApp, n: usize, user: &str, text: &str) {
    let body = slack_event(
        &format!("Ev-person-{n}"),
        json!({"type": "app_mention", "user": user, "text": format!("<@{BOT}> {text}"),
               "ts": format!("1700000009.00020{n}"), "thread_ts": "1700000001.000100",
               "channel": "C1"}),
    );
    assert_eq!(c.post_slack_signed(&body, None).await, 200);
    c.slack_deliveries(n).await;
}

/// `user` says `text` to Kuro (mentioned) in LINE group G7.
async fn line_says(c: &ChannelApp, n: usize, user: &str, text: &str) {
    let mut ev = line_text_event(
        &format!("ev-person-{n}"),
        user,
        &format!("@Kuro {text}"),
        &format!("rt-person-{n}"),
        false,
    );
    ev["source"] = json!({"type": "group", "groupId": "G7", "userId": user});
    ev["message"]["mention"] =
        json!({"mentionees": [{"index": 0, "length": 5, "type": "user", "isSelf": true}]});
    let body = json!({"destination": "Ubot", "events": [ev]}).to_string();
    assert_eq!(c.post_line_signed(&body).await, 200);
    c.line_deliveries(n).await;
}

/// The preferences rows as (person, polarity, status), sorted.
async fn preferences(c: &ChannelApp) -> Vec<(String, String, String)> {
    let mut rows: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT person, polarity, status FROM preferences WHERE persona = 'kuro' AND subject_key = 'celery'",
    )
    .fetch_all(c.app.store.pool())
    .await
    .unwrap();
    rows.sort();
    rows
}

/// The states rows as (person, body), sorted.
async fn states(c: &ChannelApp) -> Vec<(Option<String>, String)> {
    let mut rows: Vec<(Option<String>, String)> =
        sqlx::query_as("SELECT person, body_text FROM memory_states WHERE persona = 'kuro'")
            .fetch_all(c.app.store.pool())
            .await
            .unwrap();
    rows.sort();
    rows
}

/// The texts recall selected for the user message holding `needle`.
async fn recalled(c: &ChannelApp, needle: &str) -> Vec<String> {
    let recall = eventually(WAIT, "RecallPerformed", || async {
        let asked: Vec<Value> = c.events_of("UserMessageReceived").await;
        let asked = asked
            .iter()
            .find(|m| m["text"].as_str().is_some_and(|t| t.contains(needle)))?;
        let events = c
            .app
            .store
            .read_stream(&persona_stream("kuro"), 0)
            .await
            .ok()?;
        events.into_iter().find(|e| {
            e.event_type == RecallPerformed::EVENT_TYPE
                && e.payload["session_id"] == asked["session_id"]
                && e.payload["user_event_id"].as_str().is_some()
                && e.decode::<RecallPerformed>().is_ok_and(|r| {
                    r.selected_texts.iter().any(|t| t.contains("celery"))
                        && r.plan.to_string().contains(needle)
                })
        })
    })
    .await;
    recall.decode::<RecallPerformed>().unwrap().selected_texts
}

/// The MEMORY block of the last reply request (the persona's model) holding `needle`.
fn reply_memory_with(c: &ChannelApp, needle: &str) -> Option<String> {
    let user = c
        .app
        .llm
        .requests()
        .iter()
        .rev()
        .filter(|r| r.model.as_deref() != Some(WORKER_MODEL))
        .find(|r| r.last_user_text().is_some_and(|t| t.contains(needle)))
        .and_then(RecordedRequest::last_user_text)?;
    ghost_shared::llm::Fence::data_of(&user, "MEMORY").map(str::to_owned)
}

fn own(person: &str, polarity: &str) -> (String, String, String) {
    (person.into(), polarity.into(), "confirmed".into())
}

/// Asserts the memories recalled for the person asking `question` are theirs and about no
/// one, never the other's.
async fn asks(c: &ChannelApp, question: &str, mine: &str, theirs: &str) {
    let texts = recalled(c, question).await;
    let joined = texts.join("\n");
    assert!(joined.contains(&format!(" {mine}: celery")), "{texts:?}");
    assert!(!joined.contains(&format!(" {theirs}: celery")), "{texts:?}");
    assert!(joined.contains("セロリについてもっと知りたい"), "{texts:?}");
    let pack = reply_memory_with(c, question).expect("the reply's MEMORY block");
    assert!(pack.contains(&format!(" {mine}: celery")), "{pack}");
    assert!(!pack.contains(&format!(" {theirs}: celery")), "{pack}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_people_in_one_thread_and_one_group_keep_their_own_preferences() {
    let c = spawn().await;
    // Slack: Ann loves celery, Ben hates it, in one thread.
    slack_says(&c, 1, ANN, "I love celery").await;
    wait_applied(&c.app, 1).await;
    slack_says(&c, 2, BEN, "I hate celery").await;
    wait_applied(&c.app, 2).await;
    // LINE: Cho hates it, Dan loves it, in one group.
    line_says(&c, 1, CHO, "I hate celery").await;
    wait_applied(&c.app, 3).await;
    line_says(&c, 2, DAN, "I love celery").await;
    wait_applied(&c.app, 4).await;

    // Each confirm stays its speaker's: nobody's opposite confirm revoked it.
    let expected = {
        let mut v = vec![
            own(ANN, "like"),
            own(BEN, "dislike"),
            own(CHO, "dislike"),
            own(DAN, "like"),
        ];
        v.sort();
        v
    };
    assert_eq!(preferences(&c).await, expected);
    let about: Vec<Option<String>> = states(&c).await.into_iter().map(|s| s.0).collect();
    for person in [ANN, BEN, CHO, DAN] {
        assert!(about.contains(&Some(person.into())), "{about:?}");
    }
    assert_eq!(about.iter().filter(|p| p.is_none()).count(), 4, "{about:?}");

    // Asked again, each is reminded of their own preference only.
    slack_says(&c, 3, ANN, "what about celery, Ann here?").await;
    asks(&c, "Ann here", "like", "dislike").await;
    slack_says(&c, 4, BEN, "what about celery, Ben here?").await;
    asks(&c, "Ben here", "dislike", "like").await;
    line_says(&c, 3, CHO, "what about celery, Cho here?").await;
    asks(&c, "Cho here", "dislike", "like").await;
    line_says(&c, 4, DAN, "what about celery, Dan here?").await;
    asks(&c, "Dan here", "like", "dislike").await;
    wait_applied(&c.app, 8).await;

    // Per person in the API too.
    let memory = MemoryProjection::load_for(c.app.store.pool(), "kuro", BEN)
        .await
        .unwrap();
    assert_eq!(memory.preferences.len(), 1);
    assert_eq!(memory.preferences[0].person, BEN);
    assert!(memory
        .states
        .iter()
        .all(|s| s.person.is_none() || s.person.as_deref() == Some(BEN)));

    // Redelivered to another instance: nothing appended; rebuilt: the same rows.
    let (planner, runner) = second_planner(&c.app);
    let (events, rows) = (
        c.app.event_count().await,
        MemoryProjection::dump(c.app.store.pool()).await.unwrap(),
    );
    let mut replies = c.app.session_events("slack:C1:1700000001.000100").await;
    replies.extend(c.app.session_events("line:group:G7").await);
    replies.retain(|e| e.event_type == AssistantReplied::EVENT_TYPE);
    assert_eq!(replies.len(), 8);
    for reply in replies {
        planner.handle(reply).await.unwrap();
    }
    assert_eq!(c.app.event_count().await, events);
    assert_eq!(
        MemoryProjection::dump(c.app.store.pool()).await.unwrap(),
        rows
    );
    runner.rebuild().await.unwrap();
    assert_eq!(
        MemoryProjection::dump(c.app.store.pool()).await.unwrap(),
        rows
    );
    assert_eq!(preferences(&c).await, expected);
    c.cleanup().await;
}

/// One HTTP chat turn as `user`.
async fn chat_as(c: &ChannelApp, session: &str, user: &str, text: &str) {
    let body = json!({"session_id": session, "text": text, "user_id": user}).to_string();
    let response = c.app.post_chat_raw(body, Some(support::TOKEN)).await;
    assert_eq!(response.status(), 200);
    let events = support::read_sse(response).await;
    assert_eq!(events.last().unwrap().event, "done", "{events:?}");
}

/// What was said in other conversations is recalled only for the person it is theirs:
/// their own words, and the persona's words where nobody else spoke. Ann's words in her
/// conversation never reach Ben's recall; they reach hers in a later conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_persons_conversation_is_never_recalled() {
    let c = spawn().await;
    c.app.llm.set_responder(|r| {
        if let Some(selection) = select_candidates(r, |_| true) {
            return selection;
        }
        match r.model.as_deref() {
            Some(WORKER_MODEL) => Script::reply(NEUTRAL_AFFECT),
            _ => Script::reply("the attic, noted"),
        }
    });
    chat_as(&c, "ann-1", "ann", "the blue teapot is hidden in the attic").await;
    chat_as(&c, "ben-1", "ben", "where is the blue teapot hidden?").await;
    chat_as(&c, "ann-2", "ann", "where is the blue teapot hidden?").await;

    // A recall is appended beside the reply, not before its end: wait for all three.
    let recalls: Vec<RecallPerformed> = eventually(WAIT, "a recall per conversation", || async {
        let recalls: Vec<RecallPerformed> = c
            .app
            .store
            .read_stream(&persona_stream("kuro"), 0)
            .await
            .ok()?
            .iter()
            .filter(|e| e.event_type == RecallPerformed::EVENT_TYPE)
            .map(|e| e.decode().unwrap())
            .collect();
        (recalls.len() >= 3).then_some(recalls)
    })
    .await;
    let of = |session: &str| {
        recalls
            .iter()
            .find(|r| r.session_id == session)
            .unwrap_or_else(|| panic!("no recall in {session}"))
            .selected_texts
            .join("\n")
    };
    let ben = of("ben-1");
    assert!(!ben.contains("attic"), "{ben}");
    let ann = of("ann-2");
    assert!(ann.contains("hidden in the attic"), "{ann}");
    assert!(
        ann.contains("the attic, noted"),
        "her conversation's reply too: {ann}"
    );
    c.cleanup().await;
}
