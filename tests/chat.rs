//! The first path end to end: HTTP → gateway → router → persona → reply, over the real
//! Postgres and NATS with a fake model.

mod support;

use std::time::Duration;

use ghost_shared::envelope::EventPayload;
use ghost_shared::events::{
    AssistantReplied, RenderFailed, RenderRequested, RouteDecided, UserMessageReceived,
};
use ghost_shared::projections::AssistantTextProjection;
use ghost_testkit::fake_llm::{Failure, Script};
use ghost_testkit::testing::eventually;
use support::{TestApp, TOKEN};

/// The `token` events' deltas, in order.
fn tokens_of(events: &[support::SseEvent]) -> Vec<&str> {
    events
        .iter()
        .filter(|e| e.event == "token")
        .map(|e| e.data["delta"].as_str().unwrap())
        .collect()
}

/// Where each piece ends, as a byte offset into the whole.
fn ends(pieces: &[&str]) -> std::collections::BTreeSet<usize> {
    pieces
        .iter()
        .scan(0, |at, piece| {
            *at += piece.len();
            Some(*at)
        })
        .collect()
}

#[tokio::test]
async fn chunks_read_together_go_out_as_fewer_token_messages() {
    let app = TestApp::spawn(&[]).await;
    // No pause between chunks: the whole reply arrives in one read.
    let chunks = ["Hel", "lo,", " I am", " Kuro."];
    app.reply(Script::chunks(chunks.to_vec()));

    let events = app.chat("together", "hi there").await;

    let tokens = tokens_of(&events);
    assert!(
        !tokens.is_empty() && tokens.len() < chunks.len(),
        "one token message per chunk: {tokens:?}"
    );
    assert_eq!(tokens.concat(), chunks.concat());
    assert_eq!(events.last().unwrap().data["reply_text"], chunks.concat());
    app.cleanup().await;
}

#[tokio::test]
async fn chat_streams_tokens_and_records_the_turn() {
    let app = TestApp::spawn(&[]).await;
    let chunks = ["Hel", "lo,", " I am", " Kuro."];
    app.reply(Script::chunks(chunks.to_vec()).with_chunk_delay(Duration::from_millis(100)));

    let events = app.chat("s1", "hi there").await;

    let tokens = tokens_of(&events);
    // Paced chunks go out as they are read: a token is one chunk, or (on a machine busy
    // enough that the persona read several at once) consecutive ones.
    assert!(tokens.len() > 1, "one token for a paced reply: {tokens:?}");
    assert_eq!(tokens.concat(), chunks.concat());
    assert!(
        ends(&tokens).is_subset(&ends(&chunks)),
        "a token split a chunk: {tokens:?}"
    );
    let done = events.last().unwrap();
    assert_eq!(done.event, "done");
    assert_eq!(done.data["reply_text"], "Hello, I am Kuro.");

    let stored = app.session_events("s1").await;
    let types: Vec<&str> = stored.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(
        types,
        [
            UserMessageReceived::EVENT_TYPE,
            RouteDecided::EVENT_TYPE,
            RenderRequested::EVENT_TYPE,
            AssistantReplied::EVENT_TYPE
        ]
    );
    let (user, route, render, reply) = (&stored[0], &stored[1], &stored[2], &stored[3]);
    assert_eq!(done.data["event_id"], reply.event_id.to_string());
    assert_eq!(user.metadata.causation_id, None);
    assert_eq!(route.metadata.causation_id, Some(user.event_id));
    assert_eq!(render.metadata.causation_id, Some(user.event_id));
    assert_eq!(reply.metadata.causation_id, Some(render.event_id));
    for e in &stored {
        assert_eq!(
            e.metadata.correlation_id, user.event_id,
            "{} correlates",
            e.event_type
        );
    }
    assert_eq!(reply.metadata.service, "persona");

    // The persona saw the system prompt and the user's words.
    let request = &app.persona_requests()[0];
    assert_eq!(request.last_user_text().as_deref(), Some("hi there"));
    assert!(request.system_text().unwrap().contains("クロ"));

    let turns = eventually(
        Duration::from_secs(10),
        "assistant_text has both turns",
        || async {
            let t = AssistantTextProjection::recent(app.store.pool(), "s1", 10)
                .await
                .unwrap();
            (t.len() == 2).then_some(t)
        },
    )
    .await;
    assert_eq!(
        (
            turns[0].role.as_str(),
            turns[0].text.as_str(),
            turns[0].source.as_str()
        ),
        ("user", "hi there", "http")
    );
    assert_eq!(
        (
            turns[1].role.as_str(),
            turns[1].text.as_str(),
            turns[1].speaker.as_str()
        ),
        ("assistant", "Hello, I am Kuro.", "kuro")
    );
    assert_eq!(turns[1].event_id, reply.event_id);
    app.cleanup().await;
}

/// The text of each message of a chat request's body, in order.
/// The conversation the reply request carries: its user and assistant messages (the system
/// messages, the persona's and the mood capsule, left out).
fn message_contents(body: &serde_json::Value) -> Vec<&str> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| m["content"].as_str().unwrap_or(""))
        .collect()
}

#[tokio::test]
async fn later_turns_carry_the_conversation() {
    let app = TestApp::spawn(&[]).await;
    app.reply(Script::reply("first answer"));
    app.reply(Script::reply("second answer"));
    app.chat("s", "first question").await;
    app.chat("s", "second question").await;
    let body = &app.persona_requests()[1].body;
    let contents = message_contents(body);
    assert_eq!(
        contents,
        ["first question", "first answer", "second question"]
    );
    app.cleanup().await;
}

/// Before the session has a short-memory summary, the history is every utterance before
/// the message (`persona.history_turns` is only the floor: nothing may fall between the
/// summary and the window), however many routing events each turn stored between them.
#[tokio::test]
async fn before_any_summary_the_history_is_every_utterance() {
    let app = TestApp::spawn(&[("GHOST_PERSONA__HISTORY_TURNS", "3")]).await;
    for n in 1..=4 {
        app.reply(Script::reply(&format!("answer {n}")));
        app.chat("h", &format!("question {n}")).await;
    }
    let body = &app.persona_requests()[3].body;
    let contents = message_contents(body);
    assert_eq!(
        contents,
        [
            "question 1",
            "answer 1",
            "question 2",
            "answer 2",
            "question 3",
            "answer 3",
            "question 4"
        ]
    );
    app.cleanup().await;
}

#[tokio::test]
async fn a_second_message_while_a_turn_runs_is_busy_and_outputs_never_mix() {
    let app = TestApp::spawn(&[]).await;
    app.reply(Script::chunks(vec!["slow ", "reply"]).with_delay(Duration::from_millis(800)));
    app.reply(Script::reply("next reply"));

    let first = {
        let body = serde_json::json!({ "session_id": "busy", "text": "one" }).to_string();
        let response = app.post_chat_raw(body, Some(TOKEN)).await;
        assert_eq!(response.status(), 200);
        tokio::spawn(support::read_sse(response))
    };
    // Wait until the first turn is stored, then try again in the same session.
    eventually(Duration::from_secs(10), "first turn stored", || async {
        (!app.session_events("busy").await.is_empty()).then_some(())
    })
    .await;
    let second = app
        .post_chat_raw(
            serde_json::json!({ "session_id": "busy", "text": "two" }).to_string(),
            Some(TOKEN),
        )
        .await;
    assert_eq!(second.status(), 409);
    let body: serde_json::Value = second.json().await.unwrap();
    assert_eq!(body["error"]["code"], "busy");

    // Another session is not blocked. Its reply must take the second script, so it is sent
    // only once the first turn has asked the model for its own (under load the first turn's
    // request can come later than the stored message).
    eventually(Duration::from_secs(10), "first reply asked for", || async {
        (app.model_calls() >= 1).then_some(())
    })
    .await;
    let other = app.chat("other", "hello").await;
    assert_eq!(other.last().unwrap().data["reply_text"], "next reply");

    let first = first.await.unwrap();
    let text = tokens_of(&first).concat();
    assert_eq!(text, "slow reply");
    assert_eq!(first.last().unwrap().data["reply_text"], "slow reply");
    // The refused message left no trace.
    let stored = app.session_events("busy").await;
    assert_eq!(
        stored
            .iter()
            .filter(|e| e.is::<UserMessageReceived>())
            .count(),
        1
    );

    // Once the turn ended, the session takes messages again.
    app.reply(Script::reply("third"));
    assert_eq!(
        app.chat("busy", "three").await.last().unwrap().event,
        "done"
    );
    app.cleanup().await;
}

#[tokio::test]
async fn bad_requests_get_clear_4xx_and_store_nothing() {
    let app = TestApp::spawn(&[("GHOST_GATEWAY__MAX_BODY_BYTES", "1024")]).await;
    let cases: Vec<(String, Option<&str>, u16, &str)> = vec![
        ("{not json".into(), Some(TOKEN), 400, "invalid_json"),
        (
            r#"{"text":"hi"}"#.into(),
            Some(TOKEN),
            400,
            "missing_session_id",
        ),
        (
            r#"{"session_id":"s","text":""}"#.into(),
            Some(TOKEN),
            400,
            "empty_text",
        ),
        (
            format!(r#"{{"session_id":"s","text":"{}"}}"#, "x".repeat(2000)),
            Some(TOKEN),
            413,
            "body_too_large",
        ),
        (
            r#"{"session_id":"s","text":"hi"}"#.into(),
            Some("wrong"),
            401,
            "unauthorized",
        ),
        (
            r#"{"session_id":"s","text":"hi"}"#.into(),
            None,
            401,
            "unauthorized",
        ),
    ];
    for (body, token, status, code) in cases {
        let response = app.post_chat_raw(body.clone(), token).await;
        assert_eq!(response.status().as_u16(), status, "{code}");
        let json: serde_json::Value = response.json().await.unwrap();
        assert_eq!(json["error"]["code"], code);
        assert!(!json["error"]["message"].as_str().unwrap().is_empty());
    }
    assert_eq!(app.event_count().await, 0);
    assert_eq!(app.model_calls(), 0);
    app.cleanup().await;
}

#[tokio::test]
async fn model_errors_before_any_text_end_the_turn_with_an_sse_error_and_no_reply() {
    let app = TestApp::spawn(&[("GHOST_LLM__PERSONA__TIMEOUT_SECS", "1")]).await;
    let cases = [
        (
            "http",
            Script::failing(Failure::Status(500, "boom".into())),
            "llm_http",
        ),
        ("hang", Script::failing(Failure::Hang), "llm_timeout"),
        (
            "garbage",
            Script::chunks(Vec::new()).with_failure(Failure::MalformedMidStream),
            "llm_stream",
        ),
    ];
    for (session, script, code) in cases {
        app.reply(script);
        let events = app.chat(session, "hello").await;
        let last = events.last().unwrap();
        assert_eq!(last.event, "error", "{session}");
        assert_eq!(last.data["code"], code, "{session}");
        let stored = app.session_events(session).await;
        assert!(
            stored.iter().any(|e| e.is::<RenderFailed>()),
            "{session}: RenderFailed stored"
        );
        assert!(
            !stored.iter().any(|e| e.is::<AssistantReplied>()),
            "{session}: no reply stored"
        );
    }
    // The failed turn does not block the session.
    app.reply(Script::reply("recovered"));
    assert_eq!(
        app.chat("http", "again").await.last().unwrap().data["reply_text"],
        "recovered"
    );
    app.cleanup().await;
}

#[tokio::test]
async fn rebuilding_assistant_text_from_zero_equals_the_live_table() {
    let app = TestApp::spawn(&[]).await;
    for (session, text) in [("a", "one"), ("b", "two"), ("a", "three")] {
        app.reply(Script::reply(&format!("re: {text}")));
        app.chat(session, text).await;
    }
    let live = eventually(Duration::from_secs(10), "projection caught up", || async {
        let rows = AssistantTextProjection::all(app.store.pool())
            .await
            .unwrap();
        (rows.len() == 6).then_some(rows)
    })
    .await;
    // Start from deliberately wrong rows: a row no event produced and a changed one.
    support::execute_all(
        &app.store,
        &[
            "INSERT INTO assistant_text VALUES ('ghost', 999999, gen_random_uuid(), 'user', 'x', 'http', 'garbage', now())",
            "UPDATE assistant_text SET text = 'wrong' WHERE session_id = 'a'",
        ],
    )
    .await;
    // Rebuild with the operator command, as a separate process; again while it stopped
    // short (its gap-safe read holds back what is younger than another test's running
    // transaction: the cluster is shared).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        app.run_ghost_command(&["projections", "rebuild", "assistant_text"], &[])
            .await;
        let rebuilt = AssistantTextProjection::all(app.store.pool())
            .await
            .unwrap();
        if rebuilt == live || tokio::time::Instant::now() > deadline {
            assert_eq!(rebuilt, live);
            break;
        }
    }
    app.cleanup().await;
}

/// Each writer lists what it stores: the user's message is in the conversation once the
/// chat is accepted, the reply once `done` names it. The `assistant_text` runner wakes for
/// neither and polls only once a minute here, so every row below is a writer's own.
#[tokio::test]
async fn a_turn_is_in_the_conversation_as_its_writers_store_it() {
    let app = TestApp::spawn(&[("GHOST_PROJECTIONS__POLL_INTERVAL_MS", "60000")]).await;
    app.reply(Script::reply("hello back").with_delay(Duration::from_millis(1500)));
    let said = |messages: serde_json::Value| -> Vec<(String, String)> {
        messages["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let field = |k: &str| m[k].as_str().unwrap().to_owned();
                (field("role"), field("text"))
            })
            .collect()
    };
    let body = serde_json::json!({ "session_id": "listed", "text": "hi there" }).to_string();
    let response = app.post_chat_raw(body, Some(TOKEN)).await;
    assert_eq!(response.status(), 200);

    // Accepted; the reply is still being written.
    assert_eq!(
        said(app.messages("listed").await),
        [("user".to_owned(), "hi there".to_owned())]
    );
    let events = support::read_sse(response).await;
    assert_eq!(events.last().unwrap().event, "done");
    assert_eq!(
        said(app.messages("listed").await),
        [
            ("user".to_owned(), "hi there".to_owned()),
            ("assistant".to_owned(), "hello back".to_owned())
        ]
    );
    app.cleanup().await;
}
