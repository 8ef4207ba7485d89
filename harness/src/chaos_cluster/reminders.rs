//! The reminders of the cluster fault run (issue 46): reminders come due while the faults
//! happen, and each must be said exactly once. They are asked as a person would, through
//! `POST /api/reminders`, in the LINE conversations of the traffic before the first fault:
//! before each fault its share, due seconds apart while it is held and as it heals. Both hosts' gateways run the scheduler
//! (due reminders shared through `SKIP LOCKED`); a LINE push said twice is what must never
//! happen, and the fake LINE records every push. At the end each reminder is checked on
//! the fake LINE (its text pushed once) and in the store (one `ReminderDelivered` or
//! `ReminderMissed`).

use std::collections::HashSet;
use std::ops::Range;
use std::time::{Duration, Instant};

use anyhow::Result;
use chrono::{SubsecRound, Utc};
use futures::future::join_all;
use ghost_shared::envelope::EventPayload;
use ghost_shared::reminders::events::{ReminderDelivered, ReminderMissed};
use ghost_testkit::fake_platforms::FakeLine;
use ghost_testkit::testing::TestEnv;
use serde::Serialize;
use serde_json::{json, Value};

use super::Fault;

/// What became of one reminder.
#[derive(Debug, Clone, Serialize)]
pub struct ReminderSeen {
    /// Its text (unique in the run).
    pub text: String,
    /// The LINE user who asked.
    pub person: String,
    /// The fault it came due during.
    pub during: Fault,
    /// Seconds from its asking (just before that fault) to when it was due.
    pub due_after_secs: f64,
    /// Pushes on the fake LINE carrying its text.
    pub pushes: usize,
    /// `ReminderDelivered` events.
    pub delivered: usize,
    /// `ReminderMissed` events.
    pub missed: usize,
}

/// Figures of the reminders due during the faults.
#[derive(Debug, Clone, Serialize)]
pub struct ReminderFigures {
    /// Reminders the run meant to ask for.
    pub wanted: usize,
    /// Reminders the API took (201).
    pub asked: usize,
    /// Pushed once, with one `ReminderDelivered`.
    pub delivered_once: usize,
    /// Pushed more than once, or more than one outcome.
    pub doubled: usize,
    /// Never pushed, or no outcome.
    pub missing: usize,
    /// Delivered with a note that it is late.
    pub late: usize,
    /// Each reminder asked, in order.
    pub reminders: Vec<ReminderSeen>,
}

impl ReminderFigures {
    /// Every reminder asked and said exactly once.
    pub fn once_each(&self) -> bool {
        self.asked == self.wanted && self.delivered_once == self.asked
    }
}

/// A reminder the API took.
pub(super) struct Asked {
    id: String,
    person: String,
    text: String,
    during: Fault,
    due_after: Duration,
}

/// The LINE conversation of each of `persons` (LINE users who have spoken), found as an
/// operator's console finds it: `GET /api/reminders?person=P` lists where they have spoken.
/// A person whose conversation does not show within 30 s is left out.
pub(super) async fn conversations(
    client: &reqwest::Client,
    bases: &[String],
    token: &str,
    persons: &[String],
) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for person in persons {
        if let Some(s) = conversation(client, bases, token, person).await {
            found.push((person.clone(), s));
        }
    }
    found
}

/// Asks for reminders `ks` of the run, reminder `k` for the person of `sessions[k % len]`
/// in their conversation, due from two seconds on and spread over `span`: asked just before
/// `during` is injected, so that they come due while it is held and as it heals. A gateway
/// that does not answer is asked again, or the other one; a reminder not taken within 30 s
/// is left out (the figures count it).
#[allow(clippy::too_many_arguments)]
pub(super) async fn ask(
    client: &reqwest::Client,
    bases: &[String],
    token: &str,
    run: &str,
    sessions: &[(String, String)],
    ks: Range<usize>,
    during: Fault,
    span: Duration,
) -> Vec<Asked> {
    if sessions.is_empty() {
        return Vec::new();
    }
    let (start, first) = (Instant::now(), Utc::now());
    let n = ks.len();
    // All at once: asking takes a moment, and the fault waits for it.
    let asking = ks.enumerate().map(|(j, k)| async move {
        let (person, session) = &sessions[k % sessions.len()];
        let after = span.mul_f64(j as f64 / n as f64) + Duration::from_secs(1);
        // Whole seconds (the API keeps no more), rounded up.
        let at = (first + chrono::Duration::from_std(after).unwrap_or_default()).trunc_subsecs(0)
            + chrono::Duration::seconds(1);
        // Bracketed, so that no text is part of another.
        let text = format!("[r-{run}-{k}]");
        let body = json!({"person": person, "session_id": session, "text": text, "at": at});
        let (_, v) = retry(client, bases, |c, base| {
            c.post(format!("{base}/api/reminders"))
                .bearer_auth(token)
                .json(&body)
        })
        .await
        .filter(|(status, _)| *status == 201)?;
        Some(Asked {
            id: v["reminder_id"].as_str().unwrap_or_default().to_owned(),
            person: person.clone(),
            text,
            during,
            due_after: (at - first).to_std().unwrap_or_default(),
        })
    });
    let asked: Vec<Asked> = join_all(asking).await.into_iter().flatten().collect();
    eprintln!(
        "ghost-harness chaos --cluster: {} of {n} reminders asked in {:.1} s, due during \
         {during:?} (over {:.0} s)",
        asked.len(),
        start.elapsed().as_secs_f64(),
        span.as_secs_f64() + 2.0
    );
    asked
}

/// The LINE conversation `person` spoke in (the `assistant_text` projection lists it a
/// moment after the message).
async fn conversation(
    client: &reqwest::Client,
    bases: &[String],
    token: &str,
    person: &str,
) -> Option<String> {
    let (_, v) = retry(client, bases, |c, base| {
        c.get(format!("{base}/api/reminders"))
            .query(&[("person", person)])
            .bearer_auth(token)
    })
    .await
    .filter(|(status, v)| {
        *status == 200
            && v["conversations"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["channel"] == "line"))
    })?;
    v["conversations"]
        .as_array()?
        .iter()
        .find(|c| c["channel"] == "line")?["session_id"]
        .as_str()
        .map(str::to_owned)
}

/// A request to the gateways in turn until one answers other than with a 5xx, a 404 or an
/// empty list of conversations (the person's message not stored or listed yet), for up to
/// 30 s: the last status and JSON body.
async fn retry<F>(client: &reqwest::Client, bases: &[String], request: F) -> Option<(u16, Value)>
where
    F: Fn(&reqwest::Client, &str) -> reqwest::RequestBuilder,
{
    let give_up = Instant::now() + Duration::from_secs(30);
    let mut last = None;
    for attempt in 0.. {
        if Instant::now() > give_up {
            break;
        }
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let Ok(r) = request(client, &bases[attempt % bases.len()]).send().await else {
            continue;
        };
        let status = r.status().as_u16();
        let v: Value = r.json().await.unwrap_or_default();
        let listed = v["conversations"].as_array().is_none_or(|c| !c.is_empty());
        if status < 500 && status != 404 && listed {
            return Some((status, v));
        }
        last = Some((status, v));
    }
    last
}

/// Waits (up to `wait`) until every reminder in `asked` has an outcome in the store, a
/// moment more for a doubled push to show, and counts what each came to.
pub(super) async fn outcomes(
    env: &TestEnv,
    line: &FakeLine,
    wanted: usize,
    asked: &[Asked],
    wait: Duration,
) -> Result<ReminderFigures> {
    let store = env.store().await;
    let ids: Vec<String> = asked.iter().map(|a| a.id.clone()).collect();
    let deadline = Instant::now() + wait;
    let rows = loop {
        let rows: Vec<(String, String, bool)> = sqlx::query_as(
            "SELECT payload->>'reminder_id', event_type, coalesce((payload->>'late')::boolean, \
             false) FROM events WHERE event_type IN ($1, $2) \
             AND payload->>'reminder_id' = ANY($3)",
        )
        .bind(ReminderDelivered::EVENT_TYPE)
        .bind(ReminderMissed::EVENT_TYPE)
        .bind(&ids)
        .fetch_all(store.pool())
        .await?;
        let done: HashSet<&str> = rows.iter().map(|r| r.0.as_str()).collect();
        if done.len() == ids.len() || Instant::now() > deadline {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    let deliveries = line.deliveries();
    let mut figures = ReminderFigures {
        wanted,
        asked: asked.len(),
        delivered_once: 0,
        doubled: 0,
        missing: 0,
        late: rows.iter().filter(|r| r.2).count(),
        reminders: Vec::new(),
    };
    for a in asked {
        let pushes = deliveries
            .iter()
            .filter(|d| d.texts.iter().any(|t| t.contains(&a.text)))
            .count();
        let of = |kind: &str| rows.iter().filter(|r| r.0 == a.id && r.1 == kind).count();
        let (delivered, missed) = (
            of(ReminderDelivered::EVENT_TYPE),
            of(ReminderMissed::EVENT_TYPE),
        );
        if pushes == 1 && delivered == 1 && missed == 0 {
            figures.delivered_once += 1;
        }
        if pushes > 1 || delivered + missed > 1 {
            figures.doubled += 1;
        }
        if pushes == 0 || delivered + missed == 0 {
            figures.missing += 1;
        }
        figures.reminders.push(ReminderSeen {
            text: a.text.clone(),
            person: a.person.clone(),
            during: a.during,
            due_after_secs: a.due_after.as_secs_f64(),
            pushes,
            delivered,
            missed,
        });
    }
    Ok(figures)
}
