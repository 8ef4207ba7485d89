//! Autonomy messages pushed to bound conversations (issue 13, item 6): a tick (fake worker
//! model, fake search) → the persona's message (fake persona model) → the gateway pushes it
//! to fake LINE and fake Slack when `autonomy.push` binds the conversation, once each.

mod support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use ghost::stack::ServiceName;
use ghost_gateway::deliver::autonomy_push::AutonomyPusher;
use ghost_gateway::deliver::Deliverer;
use ghost_shared::autonomy::events::{AutonomyMessagePushed, AutonomyPushFailed};
use ghost_shared::bus::EventHandler;
use ghost_shared::config::{LinePushTarget, PushBinding, SlackPushTarget};
use ghost_shared::envelope::{EventPayload, RecordedEvent};
use ghost_testkit::fake_llm::Script;
use ghost_testkit::fake_platforms::Scripted;
use ghost_testkit::fake_search::{FakeHit, FakeSearch};
use ghost_testkit::testing::{eventually, WORKER_MODEL};
use support::autonomy::decision;
use support::platforms::ChannelApp;

const WAIT: Duration = Duration::from_secs(30);
const LINE_TO: &str = "Ugroup-of-master";
const SLACK_CHANNEL: &str = "CMASTER";

/// Where the autonomy messages (session `console`) are bound.
enum Bound {
    Both,
    LineOnly,
    /// Another conversation is bound; `console` is not.
    Elsewhere,
}

async fn spawn(search: &FakeSearch, bound: Bound) -> ChannelApp {
    let url = search.search_url();
    search.set_hits(vec![FakeHit {
        title: "Sencha guide".into(),
        url: "https://tea.example/sencha".into(),
        content: "Steep sencha at 70 degrees for one minute.".into(),
    }]);
    ChannelApp::spawn_adjusted(
        &ServiceName::ALL,
        &[("GHOST_AUTONOMY__INTERVAL_SECS", "0")],
        move |c| {
            c.ghost.web.search_url = Some(url);
            let line = Some(LinePushTarget { to: LINE_TO.into() });
            let slack = Some(SlackPushTarget {
                channel: SLACK_CHANNEL.into(),
                thread_ts: None,
            });
            let (session_id, slack) = match bound {
                Bound::Both => ("console", slack),
                Bound::LineOnly => ("console", None),
                Bound::Elsewhere => ("line-room", slack),
            };
            c.ghost.autonomy.push = vec![PushBinding {
                session_id: session_id.into(),
                line,
                slack,
                telegram: None,
            }];
        },
    )
    .await
}

/// Scripts one decision with `mode` (and, when it speaks, the persona's `said`), then ticks.
async fn tick(app: &ChannelApp, mode: &str, said: Option<&str>) {
    let decision = decision("web_access", json!({"query": mode}), mode, "report");
    app.app
        .llm
        .push_for_model(WORKER_MODEL, Script::reply(&decision));
    if let Some(said) = said {
        app.app.reply(Script::reply(said));
    }
    app.app.tick().await;
}

/// The stored `AutonomyMessageRendered` events, oldest first.
async fn messages(app: &ChannelApp) -> Vec<RecordedEvent> {
    app.app
        .session_events("console")
        .await
        .into_iter()
        .filter(|e| e.event_type == "AutonomyMessageRendered")
        .collect()
}

/// A second gateway's pusher (a restarted service, or another instance given the redelivery).
fn second_pusher(app: &ChannelApp) -> AutonomyPusher {
    let ctx = app.app.stack.ctx.for_service("gateway");
    AutonomyPusher::new(Arc::new(Deliverer::new(ctx).unwrap()))
}

/// The number of `ActionResultRecorded` events: a tick is over once its result is in.
async fn wait_results(app: &ChannelApp, n: usize) {
    app.wait_events("ActionResultRecorded", n).await;
}

#[tokio::test]
async fn a_chat_message_is_pushed_once_to_the_bound_line_chat_and_slack_channel() {
    let search = FakeSearch::start().await.unwrap();
    let app = spawn(&search, Bound::Both).await;
    let said = "煎茶は70度くらいで一分がいいみたいだよ。";
    tick(&app, "chat", Some(said)).await;

    let pushed = app.wait_events(AutonomyMessagePushed::EVENT_TYPE, 2).await;
    let line = app.line_deliveries(1).await;
    let slack = app.slack_deliveries(1).await;
    assert_eq!(line.len(), 1, "{line:?}");
    assert_eq!(line[0].endpoint, "push");
    assert_eq!(line[0].to, LINE_TO);
    assert_eq!(line[0].texts, vec![said.to_owned()]);
    assert_eq!(slack.len(), 1, "{slack:?}");
    assert_eq!(slack[0].endpoint, "chat.postMessage");
    assert_eq!(slack[0].to, SLACK_CHANNEL);
    assert_eq!(slack[0].thread_ts, None);
    assert_eq!(slack[0].texts, vec![said.to_owned()]);
    let platforms: Vec<&Value> = pushed.iter().map(|p| &p["platform"]).collect();
    assert!(platforms.contains(&&json!("line")) && platforms.contains(&&json!("slack")));
    // The LINE push carries a retry key, so LINE itself drops a resend.
    let push_call = app
        .line
        .calls()
        .into_iter()
        .find(|c| c.path.ends_with("/push"))
        .unwrap();
    assert!(push_call.header("x-line-retry-key").is_some());

    // Redelivered to this gateway and to a restarted one: nothing is pushed again.
    let message = messages(&app).await.pop().unwrap();
    let pusher = second_pusher(&app);
    for _ in 0..2 {
        pusher.handle(message.clone()).await.unwrap();
    }
    assert_eq!(app.line.deliveries().len(), 1);
    assert_eq!(app.line.calls().len(), 1);
    assert_eq!(app.slack.deliveries().len(), 1);
    assert_eq!(
        app.events_of(AutonomyMessagePushed::EVENT_TYPE).await.len(),
        2
    );
    app.cleanup().await;
}

#[tokio::test]
async fn silent_and_activity_only_push_nothing_notify_pushes() {
    let search = FakeSearch::start().await.unwrap();
    let app = spawn(&search, Bound::LineOnly).await;
    tick(&app, "silent", None).await;
    wait_results(&app, 1).await;
    tick(&app, "activity_only", None).await;
    wait_results(&app, 2).await;
    let said = "ちょっと調べものが進んだよ。";
    tick(&app, "notify", Some(said)).await;
    app.wait_events(AutonomyMessagePushed::EVENT_TYPE, 1).await;
    let line = app.line_deliveries(1).await;
    assert_eq!(line.len(), 1, "only the notify message: {line:?}");
    assert_eq!(line[0].texts, vec![said.to_owned()]);
    assert!(app.slack.deliveries().is_empty(), "Slack is not bound");
    assert_eq!(messages(&app).await.len(), 1);
    app.cleanup().await;
}

#[tokio::test]
async fn an_unbound_conversation_pushes_nothing() {
    let search = FakeSearch::start().await.unwrap();
    let app = spawn(&search, Bound::Elsewhere).await;
    tick(&app, "chat", Some("お茶の話、調べておいたよ。")).await;
    let message = eventually(WAIT, "the stored message", || async {
        messages(&app).await.pop()
    })
    .await;
    // Handled to the end by a pusher of our own (the service's may still be running).
    second_pusher(&app).handle(message).await.unwrap();
    assert!(app.line.calls().is_empty());
    assert!(app.slack.calls().is_empty());
    assert!(app
        .events_of(AutonomyMessagePushed::EVENT_TYPE)
        .await
        .is_empty());
    assert!(app
        .events_of(AutonomyPushFailed::EVENT_TYPE)
        .await
        .is_empty());
    app.cleanup().await;
}

#[tokio::test]
async fn a_refused_line_push_is_recorded_as_failed_and_not_retried_for_ever() {
    let search = FakeSearch::start().await.unwrap();
    let app = spawn(&search, Bound::LineOnly).await;
    app.line.script_push(Scripted::fail(400));
    tick(&app, "chat", Some("調べたよ。")).await;
    let failed = app.wait_events(AutonomyPushFailed::EVENT_TYPE, 1).await;
    assert_eq!(failed[0]["platform"], "line");
    assert_eq!(failed[0]["code"], "gave_up");
    assert_eq!(app.line.calls().len(), 1, "a 400 is not retried");
    assert!(app.line.deliveries().is_empty());
    // Redelivered: the failure stands, LINE is not called again.
    let message = messages(&app).await.pop().unwrap();
    second_pusher(&app).handle(message).await.unwrap();
    assert_eq!(app.line.calls().len(), 1);
    assert_eq!(app.events_of(AutonomyPushFailed::EVENT_TYPE).await.len(), 1);
    assert!(app
        .events_of(AutonomyMessagePushed::EVENT_TYPE)
        .await
        .is_empty());
    app.cleanup().await;
}

#[tokio::test]
async fn a_push_lost_after_line_took_it_is_retried_with_its_key_and_seen_once() {
    let search = FakeSearch::start().await.unwrap();
    let app = spawn(&search, Bound::LineOnly).await;
    // LINE delivers the push but the answer is a 500: the retry must not show it twice.
    app.line.script_push(Scripted::fail_after_delivery(500));
    let said = "お茶のこと、分かったよ。";
    tick(&app, "chat", Some(said)).await;
    let pushed = app.wait_events(AutonomyMessagePushed::EVENT_TYPE, 1).await;
    assert_eq!(pushed[0]["platform"], "line");
    let pushes = app.line.calls();
    assert_eq!(pushes.len(), 2, "the push and its retry: {pushes:?}");
    assert_eq!(
        pushes[0].header("x-line-retry-key"),
        pushes[1].header("x-line-retry-key")
    );
    assert_eq!(app.line.deliveries().len(), 1);
    assert_eq!(app.line.deliveries()[0].texts, vec![said.to_owned()]);
    app.cleanup().await;
}

#[tokio::test]
async fn a_slack_server_error_is_not_reposted_and_line_still_gets_its_push() {
    let search = FakeSearch::start().await.unwrap();
    let app = spawn(&search, Bound::Both).await;
    // chat.postMessage has no idempotency key: after a 500 it may have posted.
    app.slack.script_post(Scripted::fail(500));
    tick(&app, "chat", Some("調べものが終わったよ。")).await;
    let failed = app.wait_events(AutonomyPushFailed::EVENT_TYPE, 1).await;
    assert_eq!(failed[0]["platform"], "slack");
    assert_eq!(failed[0]["code"], "outcome_unknown");
    let pushed = app.wait_events(AutonomyMessagePushed::EVENT_TYPE, 1).await;
    assert_eq!(pushed[0]["platform"], "line");
    assert_eq!(app.slack.calls().len(), 1, "never posted a second time");
    // Redelivered: Slack is not called again, LINE not pushed again.
    let message = messages(&app).await.pop().unwrap();
    second_pusher(&app).handle(message).await.unwrap();
    assert_eq!(app.slack.calls().len(), 1);
    assert_eq!(app.line.deliveries().len(), 1);
    app.cleanup().await;
}
