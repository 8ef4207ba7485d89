//! Ranking that lets relevance win (issue 45 item 4), through the chat API over the real
//! Postgres and NATS: sources fused by rank, so an old fact a question matches outranks
//! the recent small talk that only recency offers; at most twelve candidates reach the
//! selection; a conversation's own older lines are recalled, the lines its reply already
//! holds are not; a period the question names raises what was said then; after a pause the
//! history starts anew and what came before is recalled; the person's own words outrank the
//! persona's reply to them.

mod support;

use std::time::Duration;

use ghost_shared::events::{persona_stream, RecallPerformed, UserMessageReceived};
use ghost_testkit::fake_llm::Script;
use ghost_testkit::testing::eventually;
use support::TestApp;

/// Small talk, none of it about family or cities.
const SMALL_TALK: [&str; 6] = [
    "the weather is lovely today",
    "I had pancakes for breakfast",
    "my train was a bit late this morning",
    "I watched a funny movie yesterday evening",
    "the coffee at work is terrible",
    "I should clean my desk soon",
];

async fn spawn(extra: &[(&str, &str)]) -> TestApp {
    let mut vars = vec![("GHOST_MEMORY__RECALL_ENABLED", "true")];
    vars.extend_from_slice(extra);
    TestApp::spawn(&vars).await
}

async fn say(app: &TestApp, session: &str, text: &str) {
    app.reply(Script::reply("I see."));
    let events = app.chat(session, text).await;
    assert_eq!(events.last().unwrap().event, "done", "{text}: {events:?}");
}

/// The id of the user message `text` said in `session`, as recall names candidates.
async fn candidate_id(app: &TestApp, session: &str, text: &str) -> String {
    let said = app
        .session_events(session)
        .await
        .into_iter()
        .find(|e| {
            e.decode::<UserMessageReceived>()
                .is_ok_and(|m| m.text == text)
        })
        .expect("said");
    format!("event:{}", said.event_id)
}

/// The recall made for the reply to the last message said in `session`.
async fn last_recall(app: &TestApp, session: &str) -> RecallPerformed {
    let last = app
        .session_events(session)
        .await
        .into_iter()
        .rev()
        .find(|e| e.is::<UserMessageReceived>())
        .expect("a message");
    eventually(Duration::from_secs(20), "RecallPerformed", || async {
        let events = app
            .store
            .read_stream(&persona_stream("kuro"), 0)
            .await
            .ok()?;
        events
            .iter()
            .filter_map(|e| e.decode::<RecallPerformed>().ok())
            .find(|r| r.user_event_id == last.event_id)
    })
    .await
}

#[tokio::test]
async fn an_old_fact_the_question_matches_outranks_recent_small_talk() {
    let app = spawn(&[]).await;
    let fact = "My sister moved to Lisbon for her new job";
    say(&app, "week-1", fact).await;
    // Three weeks of small talk since, in other conversations: recency alone offers only it.
    for (i, line) in SMALL_TALK.iter().cycle().take(24).enumerate() {
        say(&app, &format!("chat-{}", i / 6), &format!("{line} ({i})")).await;
    }
    // Asked in more words than the fact shares with it.
    say(
        &app,
        "today",
        "Can you remind me which city my sister lives in these days, please?",
    )
    .await;
    let recall = last_recall(&app, "today").await;
    let id = candidate_id(&app, "week-1", fact).await;
    assert_eq!(
        recall.candidate_ids.first(),
        Some(&id),
        "{:#?}",
        recall.candidate_ids
    );
    assert!(
        recall.candidate_ids.len() <= 12,
        "{:?}",
        recall.candidate_ids
    );
    app.cleanup().await;
}

#[tokio::test]
async fn a_conversations_older_lines_are_recalled_and_the_replys_history_is_not() {
    // A summary every three messages and a history of four lines: the prompt holds the
    // summary and the last lines, not the conversation's start.
    let app = spawn(&[
        ("GHOST_PERSONA__HISTORY_TURNS", "4"),
        ("GHOST_ROUTING__SUMMARIZE_AFTER_TURNS", "3"),
    ])
    .await;
    let fact = "I keep my spare key under the blue flowerpot";
    say(&app, "long", fact).await;
    for (i, line) in SMALL_TALK.iter().cycle().take(8).enumerate() {
        say(&app, "long", &format!("{line} ({i})")).await;
    }
    let recent = "my spare umbrella is in the car";
    say(&app, "long", recent).await;
    say(&app, "long", "where did I say the spare key is?").await;
    let recall = last_recall(&app, "long").await;
    let old = candidate_id(&app, "long", fact).await;
    let in_history = candidate_id(&app, "long", recent).await;
    assert_eq!(recall.candidate_ids.first(), Some(&old), "{recall:#?}");
    assert!(
        !recall.candidate_ids.contains(&in_history),
        "a line of the reply's own history offered again: {recall:#?}"
    );
    app.cleanup().await;
}

#[tokio::test]
async fn a_period_the_question_names_raises_what_was_said_then() {
    let app = spawn(&[("GHOST_CLOCK__SIMULATED", "true")]).await;
    let advance = |days: u32| {
        let app = &app;
        async move {
            let r = app
                .http
                .post(format!("{}/api/clock/advance", app.base_url))
                .bearer_auth(support::TOKEN)
                .json(&serde_json::json!({"secs": days * 86_400}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
        }
    };
    // Two weeks ago: a dinner; today's small talk mentions dinner too.
    let then = "we had a lovely dinner at the harbour restaurant";
    say(&app, "then", then).await;
    advance(7).await;
    say(&app, "mid", "work was busy all week").await;
    advance(7).await;
    for (i, line) in SMALL_TALK.iter().enumerate() {
        say(&app, "now-talk", &format!("{line} ({i})")).await;
    }
    say(&app, "now-talk", "dinner tonight will be pasta at home").await;
    say(&app, "ask", "what did we do for dinner two weeks ago?").await;
    let recall = last_recall(&app, "ask").await;
    let id = candidate_id(&app, "then", then).await;
    assert_eq!(recall.candidate_ids.first(), Some(&id), "{recall:#?}");
    let plan = &recall.plan;
    assert!(plan["period"]["start_ts"].is_i64(), "{plan}");
    app.cleanup().await;
}

#[tokio::test]
async fn a_line_said_before_a_pause_is_recalled_and_left_out_of_the_history() {
    let app = spawn(&[("GHOST_CLOCK__SIMULATED", "true")]).await;
    let fact = "I keep my spare key under the blue flowerpot";
    say(&app, "days", fact).await;
    say(&app, "days", SMALL_TALK[0]).await;
    // A day later, in the same conversation: a new sitting.
    let r = app
        .http
        .post(format!("{}/api/clock/advance", app.base_url))
        .bearer_auth(support::TOKEN)
        .json(&serde_json::json!({"secs": 86_400}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let today = "good morning, I slept well";
    say(&app, "days", today).await;
    say(&app, "days", "where did I say the spare key is?").await;
    let recall = last_recall(&app, "days").await;
    let old = candidate_id(&app, "days", fact).await;
    assert_eq!(recall.candidate_ids.first(), Some(&old), "{recall:#?}");
    // The reply's history: this sitting's lines, not yesterday's.
    let request = app.persona_requests().pop().expect("a reply request");
    let messages = request.body["messages"].as_array().cloned().unwrap();
    let (_, history) = messages.split_last().unwrap();
    let said: Vec<&str> = history
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(said.contains(&today), "{said:#?}");
    assert!(
        !said.iter().any(|m| *m == fact || *m == SMALL_TALK[0]),
        "yesterday's lines in the history: {said:#?}"
    );
    app.cleanup().await;
}

#[tokio::test]
async fn the_persons_own_words_outrank_the_personas_reply_to_them() {
    let app = spawn(&[]).await;
    let fact = "My brother Tom lives in Nagoya now";
    // The persona's reply shares more of the later question's words than the fact does.
    app.reply(Script::reply(
        "Which city does your brother live in these days? Nagoya! Your brother must like that city.",
    ));
    let events = app.chat("told", fact).await;
    assert_eq!(events.last().unwrap().event, "done", "{events:?}");
    for (i, line) in SMALL_TALK.iter().enumerate() {
        say(&app, "talk", &format!("{line} ({i})")).await;
    }
    say(
        &app,
        "ask",
        "which city does my brother live in these days?",
    )
    .await;
    let recall = last_recall(&app, "ask").await;
    let told = candidate_id(&app, "told", fact).await;
    let reply = app
        .session_events("told")
        .await
        .into_iter()
        .find(|e| e.is::<ghost_shared::events::AssistantReplied>())
        .map(|e| format!("event:{}", e.event_id))
        .expect("the reply");
    let rank = |id: &String| recall.candidate_ids.iter().position(|c| c == id);
    assert_eq!(rank(&told), Some(0), "{recall:#?}");
    assert!(rank(&reply).is_none_or(|r| r > 0), "{recall:#?}");
    app.cleanup().await;
}
