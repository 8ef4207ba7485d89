//! `ghost-harness reminder-load`: many reminders due in the same minute (issue 46). People
//! each say one thing in their own HTTP conversation, then ask for reminders through
//! `POST /api/reminders`, all due within one minute; the simulated clock is moved past
//! that minute (`POST /api/clock/advance`) and the harness times how long until the last
//! one is said, then checks the store: one `ReminderDue` and one `ReminderDelivered` per
//! reminder, none twice, none missed. The scheduler and delivery run with the shipped
//! settings (`reminders.*`); only the clock is simulated.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use chrono::{DateTime, SubsecRound, Utc};
use clap::Args;
use futures::{stream, StreamExt};
use ghost_shared::envelope::EventPayload;
use ghost_shared::reminders::events::{ReminderDelivered, ReminderDue, ReminderMissed};
use ghost_testkit::fake_llm::{FakeLlm, Script};
use ghost_testkit::testing::{TestEnv, WORKER_MODEL};
use serde_json::json;
use sqlx::PgPool;

use ghost::stack::{start_stack, ServiceName};

/// Options of `ghost-harness reminder-load`.
#[derive(Debug, Clone, Args)]
pub struct ReminderLoadArgs {
    /// Reminders, all due in the same minute.
    #[arg(long, default_value_t = 10_000)]
    pub reminders: usize,
    /// People (each in their own conversation), sharing the reminders.
    #[arg(long, default_value_t = 50)]
    pub people: usize,
    /// Requests to `POST /api/reminders` in flight at once.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
}

/// Runs the load and prints the figures.
pub async fn run(args: ReminderLoadArgs) -> Result<()> {
    if args.people == 0 || args.reminders == 0 {
        bail!("--people and --reminders must be more than 0");
    }
    let llm = FakeLlm::start().await.context("fake model")?;
    llm.set_default(Script::reply("hello"));
    llm.set_default_for_model(
        WORKER_MODEL,
        Script::reply(r#"{"reflection_text":"fine","partner_affect_label":"neutral","partner_affect_intensity":0.1,"salience":0.1,"confidence":0.9,"topic_tags":[]}"#),
    );
    let env = TestEnv::new(
        &llm.base_url(),
        &[
            ("GHOST_CLOCK__SIMULATED", "true"),
            ("GHOST_BUS__STORAGE", "file"),
        ],
    )
    .await;
    let result = drive(&env, &args).await;
    env.cleanup().await;
    result
}

async fn drive(env: &TestEnv, args: &ReminderLoadArgs) -> Result<()> {
    let stack = start_stack(env.config.clone(), &ServiceName::ALL).await?;
    let gateway = stack.gateway_addr().context("no gateway")?;
    let base = format!("http://{gateway}");
    let http = reqwest::Client::new();
    let token = crate::chaos::api_token(env)?;
    // Everyone speaks once: a reminder goes to a conversation its person spoke in.
    for p in 0..args.people {
        let r = http
            .post(format!("{base}/api/chat"))
            .bearer_auth(&token)
            .json(&json!({"session_id": format!("load-{p}"), "user_id": format!("person-{p}"), "text": "hi"}))
            .send()
            .await?;
        if !r.status().is_success() {
            bail!("chat for person {p}: {}", r.status());
        }
        r.bytes().await?;
    }
    // All due within one minute, starting ten minutes on.
    let minute = (Utc::now() + chrono::Duration::minutes(10)).trunc_subsecs(0);
    let asked = Instant::now();
    let statuses: Vec<Result<reqwest::StatusCode>> = stream::iter(0..args.reminders)
        .map(|i| {
            let (http, base, token) = (&http, &base, &token);
            let p = i % args.people;
            let at = minute + chrono::Duration::milliseconds((i % 60_000) as i64);
            async move {
                let r = http
                    .post(format!("{base}/api/reminders"))
                    .bearer_auth(token)
                    .json(
                        &json!({"person": format!("person-{p}"), "session_id": format!("load-{p}"),
                                  "text": format!("reminder {i}"), "at": at}),
                    )
                    .send()
                    .await?;
                Ok(r.status())
            }
        })
        .buffer_unordered(args.concurrency.max(1))
        .collect()
        .await;
    let refused = statuses
        .iter()
        .filter(|s| !matches!(s, Ok(s) if s.as_u16() == 201))
        .count();
    if refused > 0 {
        bail!("{refused} of {} reminders refused", args.reminders);
    }
    let asking = asked.elapsed();
    let pool = stack.ctx.store().pool().clone();
    wait_scheduled(&pool, args.reminders).await?;

    // The minute passes at once for every service.
    let until = minute + chrono::Duration::seconds(61);
    let secs = (until - Utc::now()).num_seconds().max(1);
    let r = http
        .post(format!("{base}/api/clock/advance"))
        .bearer_auth(&token)
        .json(&json!({ "secs": secs }))
        .send()
        .await?;
    if !r.status().is_success() {
        bail!("clock advance: {}", r.status());
    }
    let advanced = Instant::now();
    let mut last = (0, Instant::now());
    loop {
        let n = count(&pool, ReminderDelivered::EVENT_TYPE).await?;
        if n != last.0 {
            last = (n, Instant::now());
        }
        if n >= args.reminders as i64 {
            break;
        }
        if last.1.elapsed() > Duration::from_secs(120) {
            bail!(
                "{n} of {} delivered; none more for 2 minutes",
                args.reminders
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let delivering = advanced.elapsed();
    // Settle, then count what the store holds: none twice, none missed.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let due = count(&pool, ReminderDue::EVENT_TYPE).await?;
    let delivered = count(&pool, ReminderDelivered::EVENT_TYPE).await?;
    let missed = count(&pool, ReminderMissed::EVENT_TYPE).await?;
    let distinct: i64 = sqlx::query_scalar(
        "SELECT count(DISTINCT payload->>'reminder_id') FROM events WHERE event_type = $1",
    )
    .bind(ReminderDelivered::EVENT_TYPE)
    .fetch_one(&pool)
    .await?;
    let late: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM events WHERE event_type = $1 AND (payload->>'late')::boolean",
    )
    .bind(ReminderDelivered::EVENT_TYPE)
    .fetch_one(&pool)
    .await?;
    let first_last: (Option<DateTime<Utc>>, Option<DateTime<Utc>>) = sqlx::query_as(
        "SELECT min(recorded_at), max(recorded_at) FROM events WHERE event_type = $1",
    )
    .bind(ReminderDelivered::EVENT_TYPE)
    .fetch_one(&pool)
    .await?;
    // Where the time goes: the scheduler's appends of occurrences, or their delivery.
    let due_span: (Option<DateTime<Utc>>, Option<DateTime<Utc>>) = sqlx::query_as(
        "SELECT min(recorded_at), max(recorded_at) FROM events WHERE event_type = $1",
    )
    .bind(ReminderDue::EVENT_TYPE)
    .fetch_one(&pool)
    .await?;
    let worded: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM events WHERE event_type = $1 AND payload->>'voice' = 'persona'",
    )
    .bind(ReminderDelivered::EVENT_TYPE)
    .fetch_one(&pool)
    .await?;
    stack.abort();
    let settings = &env.config.ghost.reminders;
    println!(
        "ghost-harness reminder-load: {} reminders of {} people due in one minute \
         (poll {} ms, claim batch {}, grace {} s)",
        args.reminders,
        args.people,
        settings.poll_interval_ms,
        settings.claim_batch,
        settings.grace_secs
    );
    println!(
        "  asked through the API in {:.1} s ({:.0}/s)",
        asking.as_secs_f64(),
        args.reminders as f64 / asking.as_secs_f64().max(1e-9)
    );
    println!(
        "  clock moved past the minute -> last one said: {:.1} s ({:.0}/s)",
        delivering.as_secs_f64(),
        args.reminders as f64 / delivering.as_secs_f64().max(1e-9)
    );
    if let (Some(a), Some(b)) = first_last {
        println!(
            "  first to last delivery recorded: {:.1} s",
            (b - a).num_milliseconds() as f64 / 1e3
        );
    }
    if let (Some(a), Some(b), Some(first)) = (due_span.0, due_span.1, first_last.0) {
        println!(
            "  occurrences appended over {:.1} s; the first delivery {:.1} s after the first \
             occurrence",
            (b - a).num_milliseconds() as f64 / 1e3,
            (first - a).num_milliseconds() as f64 / 1e3
        );
    }
    println!(
        "  in the persona's words: {worded}; plainly: {}",
        delivered - worded
    );
    println!(
        "  store: {due} due, {delivered} delivered ({distinct} distinct, {late} with a late note), {missed} missed"
    );
    let expected = args.reminders as i64;
    if due != expected || delivered != expected || distinct != expected || missed != 0 {
        bail!(
            "not once each: {due} due, {delivered} delivered, {distinct} distinct, {missed} missed"
        );
    }
    Ok(())
}

async fn count(pool: &PgPool, event_type: &str) -> Result<i64> {
    Ok(
        sqlx::query_scalar("SELECT count(*) FROM events WHERE event_type = $1")
            .bind(event_type)
            .fetch_one(pool)
            .await?,
    )
}

/// Waits until the `reminders` projection holds `n` scheduled rows.
async fn wait_scheduled(pool: &PgPool, n: usize) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let rows: i64 =
            sqlx::query_scalar("SELECT count(*) FROM reminders WHERE status = 'scheduled'")
                .fetch_one(pool)
                .await?;
        if rows >= n as i64 {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{rows} of {n} reminders projected in 5 minutes");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
