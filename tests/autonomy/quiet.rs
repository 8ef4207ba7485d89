//! Scheduled deliberations that keep quiet (issue 46 item 4): a tick on the schedule is
//! skipped without a model call when nothing happened since the last deliberation, when
//! the day's autonomy messages are said, and in the person's quiet hours; a tick someone
//! asks for always deliberates.

use std::sync::{Arc, Mutex};

use uuid::Uuid;

use ghost_shared::autonomy::events::{
    autonomy_stream, AutonomyTickSkipped, SkipReason, TickTrigger,
};
use ghost_shared::autonomy::tick::{request_tick, scheduled_tick_id};
use ghost_shared::envelope::RecordedEvent;
use ghost_testkit::testing::PERSONA_MODEL;

use super::*;

const SKIP: &str = r#"{"decision": "skip", "reason": "今は待つ"}"#;

/// A Ghost whose worker answers deliberations with what `decision` holds (a skip unless a
/// test sets another), every other worker call with a neutral affect, and the persona "ok".
async fn spawn_quiet(
    search: &FakeSearch,
    vars: &[(&str, &str)],
    adjust: impl FnOnce(&mut ghost_shared::config::Config) + Send + 'static,
) -> (TestApp, Arc<Mutex<String>>) {
    let url = search.search_url();
    let mut all = vec![("GHOST_AUTONOMY__INTERVAL_SECS", "0")];
    all.extend_from_slice(vars);
    let app = TestApp::spawn_adjusted(&ghost::stack::ServiceName::ALL, &all, move |c| {
        c.ghost.web.search_url = Some(url);
        adjust(c);
    })
    .await;
    let decision = Arc::new(Mutex::new(SKIP.to_owned()));
    let next = decision.clone();
    app.llm.set_responder(move |r| {
        if r.model.as_deref() == Some(PERSONA_MODEL) {
            Script::reply("ok")
        } else if is_deliberation(r) {
            Script::reply(&next.lock().unwrap())
        } else {
            Script::reply(NEUTRAL_AFFECT)
        }
    });
    (app, decision)
}

fn is_deliberation(r: &RecordedRequest) -> bool {
    r.last_user_text()
        .is_some_and(|t| t.contains("deliberation_input"))
}

/// How many deliberations the model was asked for.
fn deliberations(app: &TestApp) -> usize {
    app.llm
        .requests()
        .iter()
        .filter(|r| is_deliberation(r))
        .count()
}

/// A tick on the schedule (slot `slot`), as the worker's ticker appends it.
async fn scheduled_tick(app: &TestApp, slot: u64) -> Uuid {
    let id = scheduled_tick_id("kuro", slot);
    request_tick(
        &app.stack.ctx.log,
        id,
        "kuro",
        TickTrigger::Schedule,
        "worker",
    )
    .await
    .unwrap()
}

/// Tick `tick`'s outcome: decided, dropped or skipped.
async fn outcome_of(app: &TestApp, tick: &str) -> RecordedEvent {
    let tick: Uuid = tick.parse().unwrap();
    eventually(WAIT, "the tick's outcome", || async {
        app.store
            .read_stream(&autonomy_stream("kuro"), 0)
            .await
            .unwrap()
            .into_iter()
            .find(|e| {
                e.metadata.causation_id == Some(tick)
                    && (e.is::<ActionDecided>()
                        || e.is::<ActionDropped>()
                        || e.is::<AutonomyTickSkipped>())
            })
    })
    .await
}

fn skipped(outcome: &RecordedEvent) -> Option<SkipReason> {
    outcome
        .decode::<AutonomyTickSkipped>()
        .ok()
        .map(|s| s.reason)
}

#[tokio::test]
async fn a_scheduled_tick_asks_the_model_only_when_something_is_new_and_the_day_has_room() {
    let search = FakeSearch::start().await.unwrap();
    tea_hits(&search);
    let (app, decision) = spawn_quiet(
        &search,
        &[("GHOST_AUTONOMY__MAX_MESSAGES_PER_DAY", "1")],
        |_| {},
    )
    .await;

    // The first deliberates: there was none before.
    let first = scheduled_tick(&app, 1).await.to_string();
    assert!(outcome_of(&app, &first).await.is::<ActionDecided>());
    assert_eq!(deliberations(&app), 1);
    // Nothing happened since: skipped, and the model is not asked.
    let second = scheduled_tick(&app, 2).await.to_string();
    assert_eq!(
        skipped(&outcome_of(&app, &second).await),
        Some(SkipReason::NothingNew)
    );
    assert_eq!(deliberations(&app), 1, "no model call");
    // The person says something in the conversation: the next one deliberates.
    let said = app.chat("console", "I found a new tea shop").await;
    assert_eq!(said.last().unwrap().event, "done", "{said:?}");
    let third = scheduled_tick(&app, 3).await.to_string();
    assert!(outcome_of(&app, &third).await.is::<ActionDecided>());
    assert_eq!(deliberations(&app), 2);

    // Asked for, it deliberates whatever the gate says, and says a message: the day's one.
    *decision.lock().unwrap() =
        support::autonomy::decision("web_access", json!({"query": "sencha"}), "chat", "report");
    let asked = app.tick().await;
    assert!(outcome_of(&app, &asked).await.is::<ActionDecided>());
    eventually(WAIT, "the autonomy message", || async {
        (count(&app, AutonomyMessageRendered::EVENT_TYPE).await == 1).then_some(())
    })
    .await;
    assert_eq!(deliberations(&app), 3);
    // The day's message is said: the schedule stays quiet, with no model call.
    let fourth = scheduled_tick(&app, 4).await.to_string();
    assert_eq!(
        skipped(&outcome_of(&app, &fourth).await),
        Some(SkipReason::DailyCap)
    );
    assert_eq!(deliberations(&app), 3, "no model call");
    // Each skip is recorded once, and nothing ran for them.
    assert_eq!(count(&app, AutonomyTickSkipped::EVENT_TYPE).await, 2);
    assert_eq!(count(&app, ActionStarted::EVENT_TYPE).await, 1);
    app.cleanup().await;
}

#[tokio::test]
async fn in_the_persons_quiet_hours_only_a_tick_someone_asks_for_deliberates() {
    let search = FakeSearch::start().await.unwrap();
    // The console's user is in their quiet hours now.
    let (quiet, _) = support::quiet_now("user", 120);
    let (app, _) = spawn_quiet(&search, &[], quiet).await;
    let tick = scheduled_tick(&app, 1).await.to_string();
    assert_eq!(
        skipped(&outcome_of(&app, &tick).await),
        Some(SkipReason::QuietHours)
    );
    assert_eq!(deliberations(&app), 0, "no model call");
    let asked = app.tick().await;
    assert!(outcome_of(&app, &asked).await.is::<ActionDecided>());
    assert_eq!(deliberations(&app), 1);
    app.cleanup().await;
}
