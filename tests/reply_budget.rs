//! A reply that has started is a reply (issue 45 item 2): it is bounded by its token budget
//! and by the silence between chunks, never cut into an `llm_timeout` for its length; a
//! repetition loop ends it with one copy kept, the start of a copied prompt block ends it
//! before the block; a stream that breaks off after text keeps
//! what was shown. Over the real Postgres and NATS, the fake model honouring `max_tokens`.

mod support;

use std::time::Duration;

use ghost_shared::events::{AssistantReplied, RenderFailed};
use ghost_testkit::fake_llm::{Failure, Script};
use support::TestApp;

/// The stored reply of `session` (there must be exactly one, and no failure).
async fn stored_reply(app: &TestApp, session: &str) -> AssistantReplied {
    let events = app.session_events(session).await;
    assert!(
        !events.iter().any(|e| e.is::<RenderFailed>()),
        "{events:#?}"
    );
    let replies: Vec<AssistantReplied> = events.iter().filter_map(|e| e.decode().ok()).collect();
    assert_eq!(replies.len(), 1, "{events:#?}");
    replies.into_iter().next().unwrap()
}

#[tokio::test]
async fn a_reply_streaming_longer_than_the_model_timeout_is_read_to_its_end() {
    // One second to the first token; the reply then streams for about three.
    let app = TestApp::spawn(&[("GHOST_LLM__PERSONA__TIMEOUT_SECS", "1")]).await;
    let words: Vec<String> = (0..15).map(|i| format!("word{i} ")).collect();
    let chunks: Vec<&str> = words.iter().map(String::as_str).collect();
    app.reply(Script::chunks(chunks.clone()).with_chunk_delay(Duration::from_millis(200)));
    let events = app.chat("long", "tell me a story").await;
    let done = events.last().unwrap();
    assert_eq!(done.event, "done", "{events:#?}");
    let reply = stored_reply(&app, "long").await;
    assert_eq!(reply.text, chunks.concat().trim_end());
    assert_eq!(reply.cut, None);
    app.cleanup().await;
}

#[tokio::test]
async fn every_reply_asks_for_its_budget_and_one_cut_there_is_a_normal_reply() {
    let app = TestApp::spawn(&[("GHOST_PERSONA__REPLY_MAX_TOKENS", "40")]).await;
    let words: Vec<String> = (0..100).map(|i| format!("w{i} ")).collect();
    app.reply(Script::chunks(words.iter().map(String::as_str).collect()));
    let events = app.chat("budget", "talk to me").await;
    assert_eq!(events.last().unwrap().event, "done", "{events:#?}");
    // The request carried the budget (no role sets one in the test configuration), and the
    // model stopped there.
    let request = &app.persona_requests()[0];
    assert_eq!(
        request.body["options"]["num_predict"], 40,
        "{}",
        request.body
    );
    let reply = stored_reply(&app, "budget").await;
    assert_eq!(reply.text, words[..40].concat().trim_end());
    assert_eq!(reply.cut, None);
    app.cleanup().await;
}

#[tokio::test]
async fn a_reply_caught_in_a_loop_is_cut_to_one_copy() {
    let app = TestApp::spawn(&[]).await;
    let looped = format!(
        "Hello! {}",
        "I am always here for you, my friend. ".repeat(20)
    );
    app.reply(Script::reply(&looped));
    let events = app.chat("loop", "hi").await;
    let done = events.last().unwrap();
    assert_eq!(done.event, "done", "{events:#?}");
    let kept = "Hello! I am always here for you, my friend.";
    assert_eq!(done.data["reply_text"], kept);
    let reply = stored_reply(&app, "loop").await;
    assert_eq!(reply.text, kept);
    assert_eq!(reply.cut.as_deref(), Some("repetition"));
    app.cleanup().await;
}

#[tokio::test]
async fn a_reply_that_starts_copying_its_prompts_memory_block_ends_before_it() {
    let app = TestApp::spawn(&[]).await;
    // SmolLM2 did this in the live conversation: it answered, then wrote the fenced block it
    // had read, memories and all, as its own words.
    app.reply(Script::chunks(vec![
        "You live in Kyoto now.",
        "\n\n<",
        "<<MEMORY qwertyuiopasdfgh\n- ",
        "Alice: my sister lives in Osaka",
    ]));
    let events = app.chat("echo", "where do I live?").await;
    let done = events.last().unwrap();
    assert_eq!(done.event, "done", "{events:#?}");
    let kept = "You live in Kyoto now.";
    assert_eq!(done.data["reply_text"], kept);
    let streamed: String = events
        .iter()
        .filter(|e| e.event == "token")
        .map(|e| e.data["delta"].as_str().unwrap_or_default())
        .collect();
    assert!(!streamed.contains("<<<"), "{streamed:?}");
    assert!(!streamed.contains("Osaka"), "{streamed:?}");
    let reply = stored_reply(&app, "echo").await;
    assert_eq!(reply.text, kept);
    assert_eq!(reply.cut.as_deref(), Some("echoed_data"));
    app.cleanup().await;
}

#[tokio::test]
async fn a_stream_that_breaks_off_after_text_keeps_what_was_shown() {
    let app = TestApp::spawn(&[("GHOST_LLM__PERSONA__STREAM_IDLE_SECS", "1")]).await;
    app.reply(Script::failing(Failure::MalformedMidStream));
    let events = app.chat("broken", "hello").await;
    let done = events.last().unwrap();
    assert_eq!(done.event, "done", "{events:#?}");
    let reply = stored_reply(&app, "broken").await;
    assert_eq!(reply.text, "partial reply");
    assert_eq!(reply.cut.as_deref(), Some("interrupted: llm_stream"));
    // A model that stalls after its first words: the idle bound ends the stream, and the
    // words shown are the reply.
    app.reply(
        Script::chunks(vec!["Well, ", "let me ", "think"])
            .with_chunk_delay(Duration::from_millis(2500)),
    );
    let events = app.chat("stalled", "hello").await;
    assert_eq!(events.last().unwrap().event, "done", "{events:#?}");
    let reply = stored_reply(&app, "stalled").await;
    assert_eq!(reply.text, "Well,");
    assert_eq!(reply.cut.as_deref(), Some("interrupted: llm_timeout"));
    app.cleanup().await;
}
