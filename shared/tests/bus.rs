//! Publishing and consuming over the real NATS JetStream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use ghost_shared::bus::{run_consumer, Bus, ConsumerSpec, EventHandler, HandlerError};
use ghost_shared::envelope::{NewEvent, RecordedEvent};
use ghost_shared::event_log::{relay_once, run_outbox_relay, EventLog};
use ghost_shared::projections::AssistantTextProjection;
use ghost_shared::service::ServiceContext;
use ghost_shared::store::ExpectedVersion;
use ghost_testkit::testing::{eventually, user_message, TestEnv};
use uuid::Uuid;

fn message(text: &str) -> NewEvent {
    user_message(Uuid::new_v4(), text)
}

/// Records what it handled; fails as told by the message text.
#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<(String, Uuid)>>,
    dead: Mutex<Vec<String>>,
    attempts: Mutex<HashMap<Uuid, u32>>,
    /// When each delivery arrived, per event.
    arrivals: Mutex<HashMap<Uuid, Vec<std::time::Instant>>>,
    name: String,
}

impl Recorder {
    fn named(name: &str) -> Arc<Self> {
        Arc::new(Self {
            name: name.into(),
            ..Default::default()
        })
    }
    fn handled(&self) -> Vec<(String, Uuid)> {
        self.seen.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl EventHandler for Recorder {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let text = event.payload["text"].as_str().unwrap_or("").to_owned();
        let attempt = {
            let mut a = self.attempts.lock().unwrap();
            let n = a.entry(event.event_id).or_default();
            *n += 1;
            *n
        };
        self.arrivals
            .lock()
            .unwrap()
            .entry(event.event_id)
            .or_default()
            .push(std::time::Instant::now());
        match text.as_str() {
            "later" if attempt == 1 => {
                return Err(HandlerError::later(Duration::from_secs(2), "not yet"))
            }
            "flaky" if attempt < 3 => return Err(HandlerError::transient("not yet")),
            "always-fails" => return Err(HandlerError::transient("never")),
            "poison" => return Err(HandlerError::permanent("cannot ever work")),
            // Never finishes: as if the handler crashed the process every time.
            "crash" => futures::future::pending::<()>().await,
            _ => {}
        }
        self.seen
            .lock()
            .unwrap()
            .push((self.name.clone(), event.event_id));
        Ok(())
    }

    async fn on_dead_letter(&self, event: Option<&RecordedEvent>, reason: &str) {
        let what = event.map_or("undecodable".to_owned(), |e| {
            e.payload["text"].as_str().unwrap_or("").to_owned()
        });
        self.dead.lock().unwrap().push(format!("{what}: {reason}"));
    }
}

async fn context(env: &TestEnv) -> ServiceContext {
    env.context("test").await.unwrap()
}

/// The next event on `subscription` (within 30 s, else the test fails saying `what`).
async fn next_event(subscription: &mut async_nats::Subscriber, what: &str) -> RecordedEvent {
    let message = tokio::time::timeout(Duration::from_secs(30), subscription.next())
        .await
        .expect(what)
        .unwrap();
    serde_json::from_slice(&message.payload).unwrap()
}

/// A core subscription to `subject`, known to the server when this returns.
async fn subscribe(bus: &Bus, subject: String) -> async_nats::Subscriber {
    let subscription = bus.client().subscribe(subject).await.unwrap();
    bus.ping().await.unwrap();
    subscription
}

#[tokio::test]
async fn two_instances_share_the_work_and_never_both_handle_a_message() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let ctx = context(&env).await;
    let spec = ConsumerSpec::new("svc", "UserMessageReceived");
    let a = Recorder::named("a");
    let b = Recorder::named("b");
    let ta = tokio::spawn(run_consumer(ctx.bus().clone(), spec.clone(), a.clone()));
    let tb = tokio::spawn(run_consumer(ctx.bus().clone(), spec, b.clone()));
    let mut ids = Vec::new();
    for i in 0..200 {
        let e = message(&i.to_string());
        ids.push(e.event_id);
        ctx.log
            .append(&format!("session-{}", i % 7), ExpectedVersion::Any, &[e])
            .await
            .unwrap();
    }
    eventually(Duration::from_secs(20), "all handled", || async {
        (a.handled().len() + b.handled().len() >= 200).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut all: Vec<Uuid> = a
        .handled()
        .into_iter()
        .chain(b.handled())
        .map(|(_, id)| id)
        .collect();
    assert_eq!(all.len(), 200, "each message handled exactly once");
    all.sort();
    ids.sort();
    assert_eq!(all, ids);
    assert!(
        !a.handled().is_empty() && !b.handled().is_empty(),
        "both instances took work"
    );
    ta.abort();
    tb.abort();
    env.cleanup().await;
}

#[tokio::test]
async fn a_message_whose_handler_crashes_every_time_is_dead_lettered_through_the_advisory() {
    let env = TestEnv::new(
        "http://127.0.0.1:9",
        &[
            ("GHOST_BUS__MAX_DELIVER", "2"),
            ("GHOST_BUS__ACK_WAIT_SECS", "1"),
        ],
    )
    .await;
    let ctx = context(&env).await;
    let bus = ctx.bus().clone();
    let mut dlq = subscribe(&bus, bus.dead_letter_subject("svc_UserMessageReceived")).await;
    let handler = Recorder::named("r");
    let start = || {
        tokio::spawn(run_consumer(
            bus.clone(),
            ConsumerSpec::new("svc", "UserMessageReceived"),
            handler.clone(),
        ))
    };
    let crash = message("crash");
    let crash_id = crash.event_id;
    ctx.log
        .append("session-c", ExpectedVersion::Any, &[crash])
        .await
        .unwrap();
    // Each delivery "crashes" the instance holding it (its task dies mid-handler) and a new
    // instance starts, until the deliveries are used up.
    let mut instance = start();
    for delivery in 1..=2u32 {
        eventually(Duration::from_secs(30), "a delivery", || async {
            let n = handler.attempts.lock().unwrap().get(&crash_id).copied();
            (n == Some(delivery)).then_some(())
        })
        .await;
        instance.abort();
        instance = start();
    }
    let parked = next_event(&mut dlq, "dead-lettered through the advisory").await;
    assert_eq!(parked.event_id, crash_id);
    eventually(Duration::from_secs(10), "told about it", || async {
        let dead = handler.dead.lock().unwrap().clone();
        (dead.len() == 1).then_some(dead)
    })
    .await;
    assert!(handler.dead.lock().unwrap()[0].starts_with("crash: no handler finished it in 2"));
    assert_eq!(
        handler.attempts.lock().unwrap()[&crash_id],
        2,
        "never a third delivery"
    );
    instance.abort();
    env.cleanup().await;
}

#[tokio::test]
async fn transient_failures_are_redelivered_and_poison_goes_to_the_dead_letter_subject() {
    let env = TestEnv::new("http://127.0.0.1:9", &[("GHOST_BUS__MAX_DELIVER", "3")]).await;
    let ctx = context(&env).await;
    let bus = ctx.bus().clone();
    let dlq_subject = bus.dead_letter_subject("svc_UserMessageReceived");
    let mut dlq = bus.client().subscribe(dlq_subject).await.unwrap();
    let handler = Recorder::named("r");
    let task = tokio::spawn(run_consumer(
        bus.clone(),
        ConsumerSpec::new("svc", "UserMessageReceived"),
        handler.clone(),
    ));

    let flaky = message("flaky");
    let flaky_id = flaky.event_id;
    for e in [flaky, message("always-fails"), message("poison")] {
        ctx.log
            .append("session-s", ExpectedVersion::Any, &[e])
            .await
            .unwrap();
    }
    // A message that is not an event at all.
    bus.jetstream()
        .publish(
            format!(
                "{}.evt.session.UserMessageReceived",
                bus.config().subject_prefix
            ),
            "not json".into(),
        )
        .await
        .unwrap()
        .await
        .unwrap();

    let mut reasons = Vec::new();
    for _ in 0..3 {
        let m = tokio::time::timeout(Duration::from_secs(30), dlq.next())
            .await
            .expect("dead letter")
            .unwrap();
        let reason = m
            .headers
            .as_ref()
            .and_then(|h| h.get("Ghost-Dead-Letter-Reason"))
            .map(|v| v.to_string())
            .unwrap();
        reasons.push(reason);
    }
    reasons.sort();
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("permanent: cannot ever work")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.starts_with("transient: never")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.starts_with("undecodable event")),
        "{reasons:?}"
    );

    let handled = handler.handled();
    assert_eq!(
        handled.iter().map(|(_, id)| *id).collect::<Vec<_>>(),
        [flaky_id],
        "flaky succeeded on its third delivery"
    );
    assert_eq!(
        handler.attempts.lock().unwrap().values().copied().max(),
        Some(3),
        "bounded by max_deliver"
    );
    // The service hears of each right after its dead letter is parked.
    eventually(
        Duration::from_secs(10),
        "told about each dead letter",
        || async { (handler.dead.lock().unwrap().len() == 3).then_some(()) },
    )
    .await;
    task.abort();
    env.cleanup().await;
}

#[tokio::test]
async fn a_handler_that_says_later_is_delivered_again_after_its_wait_not_a_backoff_step() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let ctx = context(&env).await;
    let handler = Recorder::named("r");
    let task = tokio::spawn(run_consumer(
        ctx.bus().clone(),
        ConsumerSpec::new("svc", "UserMessageReceived"),
        handler.clone(),
    ));
    let later = message("later");
    let id = later.event_id;
    ctx.log
        .append("session-s", ExpectedVersion::Any, &[later])
        .await
        .unwrap();
    eventually(
        Duration::from_secs(30),
        "handled on the second delivery",
        || async { (!handler.handled().is_empty()).then_some(()) },
    )
    .await;
    let arrivals = handler.arrivals.lock().unwrap()[&id].clone();
    assert_eq!(arrivals.len(), 2, "one more delivery, not a series");
    // A transient error's first backoff step is 0.4 s; the wait asked for is 2 s.
    assert!(
        arrivals[1] - arrivals[0] >= Duration::from_millis(1900),
        "{:?}",
        arrivals[1] - arrivals[0]
    );
    assert!(handler.dead.lock().unwrap().is_empty());
    task.abort();
    env.cleanup().await;
}

#[tokio::test]
async fn the_relay_task_publishes_what_is_left_once_it_is_older_than_the_grace() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let ctx = context(&env).await;
    let handler = Recorder::named("r");
    let consumer = tokio::spawn(run_consumer(
        ctx.bus().clone(),
        ConsumerSpec::new("svc", "UserMessageReceived"),
        handler.clone(),
    ));
    let relay = tokio::spawn(run_outbox_relay(
        ctx.store().clone(),
        ctx.bus().clone(),
        Duration::from_millis(50),
        Duration::from_millis(300),
    ));
    // Committed straight to the store, as if the process died before publishing.
    ctx.store()
        .append("session-t", ExpectedVersion::Any, &[message("left")])
        .await
        .unwrap();
    eventually(Duration::from_secs(10), "relayed and delivered", || async {
        (!handler.handled().is_empty()).then_some(())
    })
    .await;
    // The relay clears the row once its publish is acknowledged, which may be after the
    // consumer already has the message.
    eventually(
        Duration::from_secs(10),
        "its outbox row cleared",
        || async {
            let left: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox")
                .fetch_one(ctx.store().pool())
                .await
                .unwrap();
            (left == 0).then_some(())
        },
    )
    .await;
    relay.abort();
    consumer.abort();
    env.cleanup().await;
}

#[tokio::test]
async fn a_commit_whose_publish_was_lost_is_relayed_and_delivered_once() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let ctx = context(&env).await;
    let handler = Recorder::named("r");
    let task = tokio::spawn(run_consumer(
        ctx.bus().clone(),
        ConsumerSpec::new("svc", "UserMessageReceived"),
        handler.clone(),
    ));

    // Committed straight to the store, as if the process died before publishing.
    let event = message("orphan");
    let id = event.event_id;
    ctx.store()
        .append(
            "session-s",
            ExpectedVersion::Any,
            std::slice::from_ref(&event),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(handler.handled().is_empty(), "not published yet");

    // The relay publishes it (twice, to show the copy is dropped).
    assert_eq!(
        relay_once(ctx.store(), ctx.bus(), Duration::ZERO)
            .await
            .unwrap(),
        1
    );
    let stored = ctx.store().get(id).await.unwrap().unwrap();
    ctx.bus().publish_event(&stored).await.unwrap();
    eventually(Duration::from_secs(10), "delivered", || async {
        (!handler.handled().is_empty()).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(handler.handled().len(), 1, "delivered once");
    assert_eq!(
        relay_once(ctx.store(), ctx.bus(), Duration::ZERO)
            .await
            .unwrap(),
        0,
        "outbox empty"
    );

    // A replayed append of the same step publishes nothing new either.
    let log = EventLog::new(ctx.store().clone(), ctx.bus().clone());
    assert!(
        log.append("session-s", ExpectedVersion::Any, &[event])
            .await
            .unwrap()
            .duplicate
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(handler.handled().len(), 1);
    task.abort();
    env.cleanup().await;
}

#[tokio::test]
async fn the_event_streams_carry_the_configured_limits_and_follow_a_change() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let ctx = env.context("test").await.unwrap();
    let config = env.config.ghost.bus.clone();
    let names = [
        config.stream_name.clone(),
        format!("{}_DLQ", config.stream_name),
    ];
    let limits = |bus: ghost_shared::bus::Bus| {
        let names = names.clone();
        async move {
            let mut out = Vec::new();
            for name in names {
                let mut stream = bus.jetstream().get_stream(&name).await.unwrap();
                let c = stream.info().await.unwrap().config.clone();
                out.push((c.max_age, c.max_bytes));
            }
            out
        }
    };
    let configured = (Duration::from_secs(config.max_age_secs), config.max_bytes);
    assert!(configured.0 > Duration::ZERO && configured.1 > 0);
    assert_eq!(limits(ctx.bus().clone()).await, [configured, configured]);

    // A deployment that changes the limits gets them on the streams that already exist.
    let mut changed = config.clone();
    changed.max_age_secs = 2 * config.max_age_secs;
    changed.max_bytes = config.max_bytes / 2;
    let bus = ghost_shared::bus::Bus::connect(changed.clone())
        .await
        .unwrap();
    let expected = (Duration::from_secs(changed.max_age_secs), changed.max_bytes);
    assert_eq!(limits(bus).await, [expected, expected]);
    env.cleanup().await;
}

#[tokio::test]
async fn published_outbox_rows_are_cleared_without_waiting_for_the_flush() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let ctx = env.context("test").await.unwrap();
    let pool = ctx.store().pool();
    // Records the setting each delete of outbox rows commits with.
    sqlx::raw_sql(
        "CREATE TABLE outbox_clears (setting text NOT NULL); \
         CREATE FUNCTION record_outbox_clear() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN INSERT INTO outbox_clears SELECT current_setting('synchronous_commit'); \
         RETURN NULL; END $$; \
         CREATE TRIGGER outbox_cleared AFTER DELETE ON outbox \
         FOR EACH ROW EXECUTE FUNCTION record_outbox_clear();",
    )
    .execute(pool)
    .await
    .unwrap();
    let log = EventLog::new(ctx.store().clone(), ctx.bus().clone());
    let stored = log
        .append("session-o", ExpectedVersion::Any, &[message("hello")])
        .await
        .unwrap();
    assert!(!stored.duplicate);
    let seen = eventually(
        Duration::from_secs(10),
        "the outbox row cleared",
        || async {
            let rows: Vec<String> = sqlx::query_scalar("SELECT setting FROM outbox_clears")
                .fetch_all(pool)
                .await
                .unwrap();
            (!rows.is_empty()).then_some(rows)
        },
    )
    .await;
    // The event is durable; its outbox row only saves the relay a publish.
    assert_eq!(seen, ["off"]);
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(left, 0);
    // Only that transaction: the pool's connections go on committing synchronously.
    for _ in 0..4 {
        let setting: String = sqlx::query_scalar("SELECT current_setting('synchronous_commit')")
            .fetch_one(pool)
            .await
            .unwrap();
        assert_eq!(setting, "on");
    }
    env.cleanup().await;
}

#[tokio::test]
async fn what_runs_first_after_a_commit_sees_the_events_stored_and_not_yet_published() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let ctx = context(&env).await;
    let bus = ctx.bus().clone();
    let mut published = subscribe(&bus, bus.event_type_filter("UserMessageReceived")).await;
    let log = EventLog::new(ctx.store().clone(), bus.clone());
    let event = message("first");
    let id = event.event_id;
    let listing = AssistantTextProjection::listing(&[], std::slice::from_ref(&event)).unwrap();
    let store = ctx.store().clone();
    let (stored, seen_first) = log
        .append_with_first(
            "session-first",
            ExpectedVersion::Any,
            &[event],
            listing.also(),
            |stored| async move {
                let committed = store.get(id).await.unwrap().is_some();
                // Were it published already, the subscription would have it by now.
                let early =
                    tokio::time::timeout(Duration::from_millis(300), published.next()).await;
                (stored.duplicate, committed, early.is_ok(), published)
            },
        )
        .await
        .unwrap();
    let (duplicate, committed, early, mut published) = seen_first;
    assert!(!stored.duplicate && !duplicate);
    assert!(committed, "stored before `first` runs");
    assert!(!early, "published only after `first`");
    let event = next_event(&mut published, "published after `first`").await;
    assert_eq!(event.event_id, id);
    env.cleanup().await;
}
