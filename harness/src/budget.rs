//! `ghost-harness load --budget`: where the time of a chat turn goes, hop by hop.
//!
//! Three sources, all on this machine's one clock: the load generator's own times (request
//! sent, first token, `done`), the `recorded_at` of the turn's events in the store (set by
//! Postgres at insert), and, when the services run in this process, the start and end of
//! their spans (the consumer's `handle` span per event, the gateway's `chat_turn`, the
//! persona's `mood_request` and `model_call`), captured by [`SpanClock`]. Each turn is laid
//! out on one timeline; a hop is the time between two consecutive points of it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// What the client saw of one turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientTurn {
    /// The `AssistantReplied` event `done` named.
    pub reply_event_id: uuid::Uuid,
    /// Request sent.
    pub sent: DateTime<Utc>,
    /// First `token` event received.
    pub first_token: Option<DateTime<Utc>>,
    /// `done` received.
    pub done: DateTime<Utc>,
}

/// One closed span of a turn.
#[derive(Debug, Clone)]
pub struct SpanTime {
    /// `otel.name` when the span has one, else its name.
    pub name: String,
    /// The turn (`correlation_id`), from the span or its parent.
    pub turn: String,
    /// Opened.
    pub start: DateTime<Utc>,
    /// Closed.
    pub end: DateTime<Utc>,
}

/// A tracing layer recording when each span of a turn opened and when it last ran: the end
/// of the work it wraps (a span can close long after, or never, while a clone of it is kept
/// somewhere).
#[derive(Clone, Default)]
pub struct SpanClock {
    state: Arc<Mutex<ClockState>>,
}

#[derive(Default)]
struct ClockState {
    open: HashMap<u64, Open>,
    closed: Vec<SpanTime>,
}

/// A span not closed yet.
struct Open {
    name: String,
    turn: Option<String>,
    start: DateTime<Utc>,
    last_exit: Option<DateTime<Utc>>,
}

impl Open {
    fn time(&self) -> Option<SpanTime> {
        Some(SpanTime {
            name: self.name.clone(),
            turn: self.turn.clone()?,
            start: self.start,
            end: self.last_exit?,
        })
    }
}

#[derive(Default)]
struct Fields {
    name: Option<String>,
    turn: Option<String>,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "otel.name" => self.name = Some(format!("{value:?}")),
            "correlation_id" => self.turn = Some(format!("{value:?}")),
            _ => {}
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.record_debug(field, &format_args!("{value}"));
    }
}

impl SpanClock {
    /// Every span of a turn that ran, closed or not.
    pub fn spans(&self) -> Vec<SpanTime> {
        let Ok(state) = self.state.lock() else {
            return Vec::new();
        };
        let mut spans = state.closed.clone();
        spans.extend(state.open.values().filter_map(Open::time));
        spans
    }

    /// Installs the clock as this process's only subscriber (no logging); `false` when one
    /// was installed already.
    pub fn install(&self) -> bool {
        use tracing_subscriber::layer::SubscriberExt;
        use tracing_subscriber::util::SubscriberInitExt;
        tracing_subscriber::registry()
            .with(self.clone())
            .try_init()
            .is_ok()
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for SpanClock {
    // Spans only: no event (log line) costs anything.
    fn register_callsite(
        &self,
        m: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        if m.is_span() {
            tracing::subscriber::Interest::always()
        } else {
            tracing::subscriber::Interest::never()
        }
    }

    fn enabled(&self, m: &tracing::Metadata<'_>, _ctx: Context<'_, S>) -> bool {
        m.is_span()
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let parent = ctx.span(id).and_then(|s| s.parent()).map(|p| p.id());
        let turn = fields.turn.or_else(|| {
            parent.and_then(|p| state.open.get(&p.into_u64()).and_then(|o| o.turn.clone()))
        });
        let open = Open {
            name: fields
                .name
                .unwrap_or_else(|| attrs.metadata().name().to_owned()),
            turn,
            start: Utc::now(),
            last_exit: None,
        };
        state.open.insert(id.into_u64(), open);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        values.record(&mut fields);
        if let (Ok(mut state), Some(turn)) = (self.state.lock(), fields.turn) {
            if let Some(open) = state.open.get_mut(&id.into_u64()) {
                open.turn = Some(turn);
            }
        }
    }

    fn on_exit(&self, id: &Id, _ctx: Context<'_, S>) {
        if let Ok(mut state) = self.state.lock() {
            if let Some(open) = state.open.get_mut(&id.into_u64()) {
                open.last_exit = Some(Utc::now());
            }
        }
    }

    fn on_close(&self, id: Id, _ctx: Context<'_, S>) {
        if let Ok(mut state) = self.state.lock() {
            if let Some(time) = state.open.remove(&id.into_u64()).and_then(|o| o.time()) {
                state.closed.push(time);
            }
        }
    }
}

/// Where a point of the timeline comes from.
enum Source {
    Sent,
    Done,
    Event(&'static str),
    SpanStart(&'static str),
    SpanEnd(&'static str),
}

/// The timeline of a turn, in order. Points without data (spans of services in other
/// processes) are skipped, so their hops merge into one.
const TIMELINE: [(&str, Source); 14] = [
    ("client sends the request", Source::Sent),
    (
        "gateway handler starts",
        Source::SpanStart("gateway chat_turn"),
    ),
    (
        "UserMessageReceived inserted",
        Source::Event("UserMessageReceived"),
    ),
    (
        "gateway append returns (committed, published)",
        Source::SpanEnd("append_user_message"),
    ),
    (
        "router handler starts",
        Source::SpanStart("router UserMessageReceived"),
    ),
    ("RenderRequested inserted", Source::Event("RenderRequested")),
    (
        "router handler ends (committed, published, acked)",
        Source::SpanEnd("router UserMessageReceived"),
    ),
    (
        "persona handler starts",
        Source::SpanStart("persona RenderRequested"),
    ),
    ("mood request sent", Source::SpanStart("mood_request")),
    ("mood answer received", Source::SpanEnd("mood_request")),
    ("model call starts", Source::SpanStart("model_call")),
    (
        "model stream ends (every token relayed)",
        Source::SpanEnd("model_call"),
    ),
    (
        "AssistantReplied inserted",
        Source::Event("AssistantReplied"),
    ),
    ("client receives done", Source::Done),
];

/// One stored event of a turn.
#[derive(Debug, Clone)]
pub struct EventTime {
    /// Its id.
    pub event_id: uuid::Uuid,
    /// Its turn (`metadata.correlation_id`).
    pub turn: String,
    /// Its type.
    pub event_type: String,
    /// `recorded_at` (the insert).
    pub at: DateTime<Utc>,
}

/// One hop's figures.
#[derive(Debug, Clone)]
pub struct Hop {
    /// From which point.
    pub from: &'static str,
    /// To which point.
    pub to: &'static str,
    /// Every turn's duration, sorted (ms).
    pub ms: Vec<f64>,
}

/// The hops of every turn, the whole turns and the first tokens (ms, sorted).
#[derive(Debug, Clone, Default)]
pub struct Budget {
    /// In timeline order.
    pub hops: Vec<Hop>,
    /// Request sent → `done` received.
    pub total: Vec<f64>,
    /// Request sent → first `token` received.
    pub first_token: Vec<f64>,
}

fn ms_between(a: DateTime<Utc>, b: DateTime<Utc>) -> f64 {
    (b - a).num_microseconds().unwrap_or(0) as f64 / 1000.0
}

/// Lays out each turn and measures every hop.
pub fn budget(clients: &[ClientTurn], events: &[EventTime], spans: &[SpanTime]) -> Budget {
    // turn → event type → first insert; reply event id → turn.
    let mut inserted: HashMap<&str, HashMap<&str, DateTime<Utc>>> = HashMap::new();
    let mut turn_of: HashMap<uuid::Uuid, &str> = HashMap::new();
    for e in events {
        inserted
            .entry(e.turn.as_str())
            .or_default()
            .entry(e.event_type.as_str())
            .or_insert(e.at);
        turn_of.insert(e.event_id, e.turn.as_str());
    }
    let mut span_of: HashMap<(&str, &str), &SpanTime> = HashMap::new();
    for s in spans {
        span_of
            .entry((s.turn.as_str(), s.name.as_str()))
            .or_insert(s);
    }
    let mut out = Budget::default();
    for c in clients {
        let Some(turn) = turn_of.get(&c.reply_event_id).copied() else {
            continue;
        };
        let at = |source: &Source| -> Option<DateTime<Utc>> {
            match source {
                Source::Sent => Some(c.sent),
                Source::Done => Some(c.done),
                Source::Event(t) => inserted.get(turn).and_then(|m| m.get(t)).copied(),
                Source::SpanStart(n) => span_of.get(&(turn, *n)).map(|s| s.start),
                Source::SpanEnd(n) => span_of.get(&(turn, *n)).map(|s| s.end),
            }
        };
        let points: Vec<(&'static str, DateTime<Utc>)> = TIMELINE
            .iter()
            .filter_map(|(name, source)| at(source).map(|t| (*name, t)))
            .collect();
        for w in points.windows(2) {
            let ms = ms_between(w[0].1, w[1].1);
            match out
                .hops
                .iter_mut()
                .find(|h| h.from == w[0].0 && h.to == w[1].0)
            {
                Some(h) => h.ms.push(ms),
                None => out.hops.push(Hop {
                    from: w[0].0,
                    to: w[1].0,
                    ms: vec![ms],
                }),
            }
        }
        out.total.push(ms_between(c.sent, c.done));
        if let Some(f) = c.first_token {
            out.first_token.push(ms_between(c.sent, f));
        }
    }
    for h in &mut out.hops {
        h.ms.sort_by(f64::total_cmp);
    }
    out.total.sort_by(f64::total_cmp);
    out.first_token.sort_by(f64::total_cmp);
    out
}

/// Prints the budget as a Markdown table (p50, p90 per hop; the sum of the medians against
/// the median turn).
pub fn print(b: &Budget) {
    println!("  latency budget ({} turns; ms):", b.total.len());
    println!("  | hop | p50 | p90 |");
    println!("  |---|---|---|");
    let mut sum = 0.0;
    for h in &b.hops {
        let p50 = quantile(&h.ms, 0.5);
        sum += p50;
        println!(
            "  | {} → {} | {:.2} | {:.2} |",
            h.from,
            h.to,
            p50,
            quantile(&h.ms, 0.9)
        );
    }
    println!(
        "  | whole turn (request → done) | {:.2} | {:.2} |",
        quantile(&b.total, 0.5),
        quantile(&b.total, 0.9)
    );
    println!(
        "  | request → first token | {:.2} | {:.2} |",
        quantile(&b.first_token, 0.5),
        quantile(&b.first_token, 0.9)
    );
    println!(
        "  sum of the hop medians {sum:.2} ms; median turn {:.2} ms",
        quantile(&b.total, 0.5)
    );
}

/// The `q` quantile of sorted figures.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[(((sorted.len() - 1) as f64) * q).round() as usize]
}

/// The events of the streams starting with `stream_prefix`, with their turn and insert time.
pub async fn stored_events(
    pool: &sqlx::PgPool,
    stream_prefix: &str,
) -> Result<Vec<EventTime>, sqlx::Error> {
    let rows: Vec<(uuid::Uuid, Option<String>, String, DateTime<Utc>)> = sqlx::query_as(
        "SELECT event_id, metadata->>'correlation_id', event_type, recorded_at FROM events \
         WHERE stream LIKE $1",
    )
    .bind(format!("{stream_prefix}%"))
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(event_id, turn, event_type, at)| {
            Some(EventTime {
                event_id,
                turn: turn?,
                event_type,
                at,
            })
        })
        .collect())
}

/// The `AssistantReplied` id named by the `done` event of an SSE body.
pub fn done_event_id(body: &str) -> Option<uuid::Uuid> {
    let mut lines = body.lines();
    lines.find(|l| l.trim() == "event: done")?;
    let data = lines.find_map(|l| l.strip_prefix("data:"))?;
    let v: serde_json::Value = serde_json::from_str(data.trim()).ok()?;
    v.get("event_id")?.as_str()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(1_700_000_000_000 + ms).expect("time")
    }

    #[test]
    fn hops_follow_the_timeline_and_skip_missing_points() {
        let reply = uuid::Uuid::new_v4();
        let client = ClientTurn {
            reply_event_id: reply,
            sent: t(0),
            first_token: Some(t(6)),
            done: t(10),
        };
        let ev = |id, ty: &str, ms| EventTime {
            event_id: id,
            turn: "turn-1".into(),
            event_type: ty.into(),
            at: t(ms),
        };
        let events = [
            ev(uuid::Uuid::new_v4(), "UserMessageReceived", 2),
            ev(uuid::Uuid::new_v4(), "RenderRequested", 5),
            ev(reply, "AssistantReplied", 9),
        ];
        let span = |name: &str, start, end| SpanTime {
            name: name.into(),
            turn: "turn-1".into(),
            start: t(start),
            end: t(end),
        };
        let spans = [
            span("gateway chat_turn", 1, 9),
            span("append_user_message", 1, 3),
        ];
        let b = budget(&[client], &events, &spans);
        let got: Vec<(&str, &str, f64)> = b.hops.iter().map(|h| (h.from, h.to, h.ms[0])).collect();
        assert_eq!(
            got,
            vec![
                ("client sends the request", "gateway handler starts", 1.0),
                (
                    "gateway handler starts",
                    "UserMessageReceived inserted",
                    1.0
                ),
                (
                    "UserMessageReceived inserted",
                    "gateway append returns (committed, published)",
                    1.0
                ),
                (
                    "gateway append returns (committed, published)",
                    "RenderRequested inserted",
                    2.0
                ),
                ("RenderRequested inserted", "AssistantReplied inserted", 4.0),
                ("AssistantReplied inserted", "client receives done", 1.0),
            ]
        );
        assert_eq!(b.total, vec![10.0]);
        assert_eq!(b.first_token, vec![6.0]);
    }

    #[test]
    fn done_event_id_reads_the_sse_body() {
        let id = uuid::Uuid::new_v4();
        let body = format!("event: token\ndata: {{\"delta\":\"hi\"}}\n\nevent: done\ndata: {{\"event_id\":\"{id}\",\"reply_text\":\"hi\"}}\n\n");
        assert_eq!(done_event_id(&body), Some(id));
        assert_eq!(done_event_id("event: token\ndata: {}\n\n"), None);
    }
}
