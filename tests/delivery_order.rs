//! Replies reach a LINE or Slack user in the order of the user's messages, even when a
//! later message's reply is written first (the two turns run at once: a webhook appends
//! both messages, and nothing makes the second wait for the first's reply).

mod support;

use ghost_testkit::fake_llm::{Failure, Script};
use serde_json::json;
use support::execute_all;
use support::platforms::{line_text_event, slack_event, ChannelApp, BOT};

/// A Ghost whose model answers "first …" slowly and "second …" at once.
async fn spawn() -> ChannelApp {
    spawn_with(&[]).await
}

/// [`spawn`] with configuration overrides.
async fn spawn_with(extra: &[(&str, &str)]) -> ChannelApp {
    let c = ChannelApp::spawn(extra).await;
    c.answer_the_first_question_slowly();
    c
}

/// One LINE webhook carrying `user`'s "first question" and "second question".
fn two_line_messages(tag: &str, user: &str) -> String {
    let events: Vec<_> = ["first question", "second question"]
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let (id, token) = (format!("ev-{tag}{i}"), format!("rt-{tag}{i}"));
            line_text_event(&id, user, text, &token, false)
        })
        .collect();
    json!({ "destination": "Ubot", "events": events }).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn line_replies_arrive_in_the_order_of_the_messages_not_of_their_writing() {
    let c = spawn().await;
    let body = two_line_messages("o", "U-order");
    assert_eq!(c.post_line_signed(&body).await, 200);

    let delivered = c.line_deliveries(2).await;
    c.assert_written_second_shown_in_order(delivered).await;
    let outcomes = c.wait_events("ReplyDelivered", 2).await;
    assert_eq!(outcomes.len(), 2, "each reply delivered once");
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slack_replies_in_a_thread_arrive_in_the_order_of_the_messages() {
    let c = spawn().await;
    // Two messages of one thread, in two requests, as Slack sends them.
    for (id, ts, text) in [
        ("Ev-o1", "1700000001.000100", "first question"),
        ("Ev-o2", "1700000002.000100", "second question"),
    ] {
        let body = slack_event(
            id,
            json!({
                "type": "app_mention", "channel": "C-order", "user": "U-order",
                "text": format!("<@{BOT}> {text}"), "ts": ts,
                "thread_ts": "1700000000.000100",
            }),
        );
        assert_eq!(c.post_slack_signed(&body, None).await, 200);
    }
    let delivered = c.slack_deliveries(2).await;
    c.assert_written_second_shown_in_order(delivered).await;
    assert!(
        c.slack
            .deliveries()
            .iter()
            .all(|d| d.thread_ts.as_deref() == Some("1700000000.000100")),
        "both in the thread"
    );
    c.cleanup().await;
}

/// Asserts that the first reply was recorded as failed with `code` and nothing of it was
/// sent, and that the second went out all the same.
async fn assert_first_failed_second_delivered(c: &ChannelApp, code: &str) {
    let failed = c.wait_events("ReplyFailed", 1).await;
    assert_eq!(failed[0]["code"], code);
    c.wait_events("ReplyDelivered", 1).await;
    let delivered: Vec<Vec<String>> = c.line.deliveries().into_iter().map(|d| d.texts).collect();
    assert_eq!(delivered, [vec!["answer two"]], "only the second was sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_reply_is_recorded_and_holds_up_nothing_after_it() {
    // A failed turn's notice is configured empty: that reply sends nothing.
    let c = ChannelApp::spawn(&[("GHOST_LINE__FAILURE_REPLY", "")]).await;
    c.app.llm.set_responder(|r| {
        if r.last_user_text()
            .unwrap_or_default()
            .contains("first question")
        {
            Script::failing(Failure::Status(400, "refused".into()))
        } else {
            Script::reply("answer two")
        }
    });
    let body = two_line_messages("e", "U-empty");
    assert_eq!(c.post_line_signed(&body).await, 200);

    assert_first_failed_second_delivered(&c, "empty_reply").await;
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_given_up_on_is_recorded_and_the_next_one_still_goes_out() {
    let c = spawn_with(&[
        ("GHOST_BUS__MAX_DELIVER", "2"),
        ("GHOST_BUS__ACK_WAIT_SECS", "1"),
    ])
    .await;
    // Every attempt at the first reply fails in the store: its reply-token marker is
    // refused, a transient error, until the message runs out of deliveries.
    execute_all(
        &c.app.store,
        &[
            "CREATE FUNCTION refuse_first_marker() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN IF EXISTS (SELECT 1 FROM events r \
                 WHERE r.event_id = (NEW.payload->>'reply_event_id')::uuid \
                   AND r.payload->>'text' = 'answer one') \
             THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$",
            "CREATE TRIGGER refuse_first_marker BEFORE INSERT ON events FOR EACH ROW \
             WHEN (NEW.event_type = 'ReplyAttempted') EXECUTE FUNCTION refuse_first_marker()",
        ],
    )
    .await;
    assert_eq!(
        c.post_line_signed(&two_line_messages("d", "U-dead")).await,
        200
    );

    assert_first_failed_second_delivered(&c, "dead_lettered").await;
    c.cleanup().await;
}
