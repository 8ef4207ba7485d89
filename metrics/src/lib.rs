//! Prometheus metrics: every metric Ghost exports is named and described here, once, and
//! recorded through the helpers below (the `metrics` facade; the recorder is this process's
//! Prometheus exporter). The gateway serves [`render`] at `/metrics`; `ghost run <service>`
//! serves it on `telemetry.metrics_listen`.
//!
//! Series a dashboard queries are registered at zero when their component starts
//! ([`register_consumer`], [`register_llm_role`], ...), so they exist before the first event.

use std::sync::OnceLock;
use std::time::Duration;

use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

/// Upper bounds (seconds) of every latency histogram: 5 ms to 2 minutes (an LLM reply).
pub const LATENCY_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

/// Turns begun (a user message accepted), by channel.
pub const TURNS_STARTED: &str = "ghost_turns_started_total";
/// Turns that ended with a reply, by channel.
pub const TURNS_FINISHED: &str = "ghost_turns_finished_total";
/// Turns that ended without a reply, by channel (the error code is in the log and the
/// `RenderFailed` event).
pub const TURNS_FAILED: &str = "ghost_turns_failed_total";
/// From the user's message to the reply (or failure), by channel and outcome.
pub const TURN_DURATION: &str = "ghost_turn_duration_seconds";
/// Messages a durable consumer received (first deliveries and redeliveries).
pub const CONSUMER_DELIVERIES: &str = "ghost_consumer_deliveries_total";
/// Messages a consumer received again (a handler failed, or a process died holding them).
pub const CONSUMER_REDELIVERIES: &str = "ghost_consumer_redeliveries_total";
/// Messages a consumer gave up on and moved to the dead-letter stream.
pub const CONSUMER_DEAD_LETTERS: &str = "ghost_consumer_dead_letters_total";
/// Time a consumer's handler took, by outcome (`ok`, `retry`, `dead_letter`).
pub const CONSUMER_HANDLER_DURATION: &str = "ghost_consumer_handler_duration_seconds";
/// Committed events not yet confirmed published (rows in `outbox`).
pub const OUTBOX_DEPTH: &str = "ghost_outbox_depth";
/// Age of the oldest outbox row: how far publishing is behind committing.
pub const OUTBOX_RELAY_LAG: &str = "ghost_outbox_relay_lag_seconds";
/// Events the relay published (what the fast path did not).
pub const OUTBOX_RELAYED: &str = "ghost_outbox_relayed_total";
/// Events committed after a projection's checkpoint, by projection.
pub const PROJECTION_LAG_EVENTS: &str = "ghost_projection_lag_events";
/// Age of the oldest event a projection has not applied yet, by projection.
pub const PROJECTION_LAG: &str = "ghost_projection_lag_seconds";
/// Events a projection parked (could not decode or apply), by projection.
pub const PROJECTION_PARKED: &str = "ghost_projection_parked_total";
/// Model calls, by role and outcome (`ok`, `error`, `cancelled`).
pub const LLM_CALLS: &str = "ghost_llm_calls_total";
/// Model call failures, by role and error code.
pub const LLM_ERRORS: &str = "ghost_llm_errors_total";
/// Model call time (to the last token of a stream), by role.
pub const LLM_CALL_DURATION: &str = "ghost_llm_call_duration_seconds";
/// Tokens, by role and kind (`prompt`, `completion`): as the server reports them, else one
/// per streamed chunk for completions.
pub const LLM_TOKENS: &str = "ghost_llm_tokens_total";
/// Model calls that asked for a shaped answer, by role, contract and how it was sent
/// (`structured`: in the backend's own wire; `prompt_only`: the endpoint refuses it).
pub const LLM_STRUCTURED_CALLS: &str = "ghost_llm_structured_calls_total";
/// Shaped answers, by role, contract, whether they were valid against the schema
/// (`schema_valid`: true/false) and what their validator made of them (`verdict`:
/// `accepted` or the rejection's kind).
pub const LLM_CONTRACT_ANSWERS: &str = "ghost_llm_contract_answers_total";
/// Webhook requests acknowledged (2xx), by platform.
pub const WEBHOOK_ACKS: &str = "ghost_webhook_acks_total";
/// Webhook requests refused, by platform and reason.
pub const WEBHOOK_REJECTIONS: &str = "ghost_webhook_rejections_total";
/// Stage turns, by outcome (`spoke`, `failed`).
pub const STAGE_TURNS: &str = "ghost_stage_turns_total";

/// Autonomy deliberations that produced a decision, by decision (`do_action`, `skip`) and
/// capability (`none` for a skip).
pub const AUTONOMY_DECISIONS: &str = "ghost_autonomy_decisions_total";

/// Autonomy deliberations dropped without a decision, by reason (`invalid_decision`,
/// `model_error`).
pub const AUTONOMY_DROPPED: &str = "ghost_autonomy_dropped_total";
/// Scheduled autonomy ticks skipped without a model call, by reason (`quiet_hours`,
/// `daily_cap`, `nothing_new`).
pub const AUTONOMY_SKIPPED: &str = "ghost_autonomy_skipped_total";

/// The cloud coder's tokens used this UTC day, by kind (`prompt`, `completion`): the sum
/// of the store's `CloudTokensUsed` events, as last read by this process.
pub const CODER_TOKENS_TODAY: &str = "ghost_coder_tokens_today";
/// The cap on the coder's cloud tokens per UTC day (`coder.daily_token_cap`; 0 = none).
pub const CODER_DAILY_TOKEN_CAP: &str = "ghost_coder_daily_token_cap";
/// CODE requests refused because the day's cloud token cap was used up.
pub const CODER_CAP_REFUSALS: &str = "ghost_coder_cap_refusals_total";

/// Every channel a turn can come from (label values of the turn metrics).
pub const CHANNELS: [&str; 3] = ["http", "line", "slack"];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs this process's Prometheus recorder (once; later calls return the same handle).
/// When another recorder was installed first, metrics go there and this handle renders
/// nothing of them.
pub fn install() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let builder = PrometheusBuilder::new();
        let builder = match builder.set_buckets(&LATENCY_BUCKETS) {
            Ok(b) => b,
            // Only an empty bucket list fails, and LATENCY_BUCKETS is not empty.
            Err(_) => PrometheusBuilder::new(),
        };
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("a metrics recorder was already installed; /metrics shows only ours");
        }
        describe_all();
        handle
    })
}

/// The Prometheus text exposition of this process's metrics.
pub fn render() -> String {
    let handle = install();
    handle.run_upkeep();
    handle.render()
}

/// The `Content-Type` of [`render`]'s output.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

fn describe_all() {
    describe_counter!(
        TURNS_STARTED,
        "Turns begun (a user message accepted), by channel."
    );
    describe_counter!(TURNS_FINISHED, "Turns that ended with a reply, by channel.");
    describe_counter!(
        TURNS_FAILED,
        "Turns that ended without a reply, by channel."
    );
    describe_histogram!(
        TURN_DURATION,
        "Seconds from the user's message to the reply or failure, by channel and outcome."
    );
    describe_counter!(
        CONSUMER_DELIVERIES,
        "Messages a durable consumer received, redeliveries included."
    );
    describe_counter!(
        CONSUMER_REDELIVERIES,
        "Messages a durable consumer received more than once."
    );
    describe_counter!(
        CONSUMER_DEAD_LETTERS,
        "Messages a durable consumer moved to the dead-letter stream."
    );
    describe_histogram!(
        CONSUMER_HANDLER_DURATION,
        "Seconds a consumer's handler took, by outcome (ok, retry, dead_letter)."
    );
    describe_gauge!(
        OUTBOX_DEPTH,
        "Committed events not yet confirmed published."
    );
    describe_gauge!(
        OUTBOX_RELAY_LAG,
        "Age in seconds of the oldest committed event not yet confirmed published."
    );
    describe_counter!(
        OUTBOX_RELAYED,
        "Events the outbox relay published (the fast path had not)."
    );
    describe_gauge!(
        PROJECTION_LAG_EVENTS,
        "Events committed after a projection's checkpoint, by projection."
    );
    describe_gauge!(
        PROJECTION_LAG,
        "Age in seconds of the oldest event a projection has not applied, by projection."
    );
    describe_counter!(
        PROJECTION_PARKED,
        "Events a projection parked because it could not decode or apply them."
    );
    describe_counter!(LLM_CALLS, "Model calls, by role and outcome.");
    describe_counter!(LLM_ERRORS, "Failed model calls, by role and error code.");
    describe_histogram!(
        LLM_CALL_DURATION,
        "Seconds a model call took (to the last token of a stream), by role."
    );
    describe_counter!(
        LLM_TOKENS,
        "Model tokens, by role and kind (prompt, completion)."
    );
    describe_counter!(
        LLM_STRUCTURED_CALLS,
        "Model calls asking for a shaped answer, by role, contract and how (structured, prompt_only)."
    );
    describe_counter!(
        LLM_CONTRACT_ANSWERS,
        "Shaped model answers, by role, contract, schema validity and verdict (accepted or the reason)."
    );
    describe_counter!(WEBHOOK_ACKS, "Webhook requests acknowledged, by platform.");
    describe_counter!(
        WEBHOOK_REJECTIONS,
        "Webhook requests refused, by platform and reason."
    );
    describe_counter!(STAGE_TURNS, "Stage turns, by outcome (spoke, failed).");
    describe_counter!(
        AUTONOMY_DECISIONS,
        "Autonomy decisions recorded, by decision (do_action, skip) and capability."
    );
    describe_counter!(
        AUTONOMY_DROPPED,
        "Autonomy deliberations dropped without a decision, by reason."
    );
    describe_counter!(
        AUTONOMY_SKIPPED,
        "Scheduled autonomy ticks skipped without a model call, by reason."
    );
    describe_gauge!(
        CODER_TOKENS_TODAY,
        "Cloud coder tokens used this UTC day (from the event store), by kind."
    );
    describe_gauge!(
        CODER_DAILY_TOKEN_CAP,
        "Cap on the cloud coder's tokens per UTC day (0 = none)."
    );
    describe_counter!(
        CODER_CAP_REFUSALS,
        "CODE requests refused because the day's cloud token cap was used up."
    );
}

/// Registers the turn series of every channel at zero (the gateway and persona at start).
pub fn register_turns() {
    install();
    for channel in CHANNELS {
        counter!(TURNS_STARTED, "channel" => channel).increment(0);
        counter!(TURNS_FINISHED, "channel" => channel).increment(0);
        counter!(TURNS_FAILED, "channel" => channel).increment(0);
    }
}

/// A turn begun on `channel`.
pub fn turn_started(channel: &str) {
    counter!(TURNS_STARTED, "channel" => channel.to_owned()).increment(1);
}

/// A turn on `channel` ended, `took` after the user's message (when known): with a reply
/// when `error` is `None`, else with that error code.
pub fn turn_ended(channel: &str, error: Option<&str>, took: Option<Duration>) {
    let channel = channel.to_owned();
    let outcome = match error {
        None => {
            counter!(TURNS_FINISHED, "channel" => channel.clone()).increment(1);
            "finished"
        }
        Some(code) => {
            tracing::debug!(%channel, code, "turn failed");
            counter!(TURNS_FAILED, "channel" => channel.clone()).increment(1);
            "failed"
        }
    };
    if let Some(took) = took {
        histogram!(TURN_DURATION, "channel" => channel, "outcome" => outcome).record(took);
    }
}

/// Registers a consumer's series at zero (when it starts).
pub fn register_consumer(consumer: &str) {
    install();
    let c = consumer.to_owned();
    counter!(CONSUMER_DELIVERIES, "consumer" => c.clone()).increment(0);
    counter!(CONSUMER_REDELIVERIES, "consumer" => c.clone()).increment(0);
    counter!(CONSUMER_DEAD_LETTERS, "consumer" => c).increment(0);
}

/// A consumer received a message for the `delivered`-th time.
pub fn consumer_delivery(consumer: &str, delivered: i64) {
    counter!(CONSUMER_DELIVERIES, "consumer" => consumer.to_owned()).increment(1);
    if delivered > 1 {
        counter!(CONSUMER_REDELIVERIES, "consumer" => consumer.to_owned()).increment(1);
    }
}

/// A consumer's handler finished with `outcome` (`ok`, `retry`, `dead_letter`) after `took`.
pub fn consumer_handled(consumer: &str, outcome: &'static str, took: Duration) {
    histogram!(CONSUMER_HANDLER_DURATION, "consumer" => consumer.to_owned(), "outcome" => outcome)
        .record(took);
}

/// A consumer moved a message to the dead-letter stream.
pub fn consumer_dead_letter(consumer: &str) {
    counter!(CONSUMER_DEAD_LETTERS, "consumer" => consumer.to_owned()).increment(1);
}

/// The outbox as one relay pass saw it: `depth` rows, the oldest `lag` old.
pub fn outbox_observed(depth: u64, lag: Duration) {
    gauge!(OUTBOX_DEPTH).set(depth as f64);
    gauge!(OUTBOX_RELAY_LAG).set(lag.as_secs_f64());
}

/// The age of the oldest outbox row, between two counts of its rows.
pub fn outbox_lag(lag: Duration) {
    gauge!(OUTBOX_RELAY_LAG).set(lag.as_secs_f64());
}

/// Registers the outbox relay's counter at zero (when the relay starts).
pub fn register_outbox() {
    install();
    counter!(OUTBOX_RELAYED).increment(0);
}

/// The relay published `n` events.
pub fn outbox_relayed(n: usize) {
    counter!(OUTBOX_RELAYED).increment(n as u64);
}

/// A projection is `events` events and `age` behind the head of the store.
pub fn projection_lag(projection: &'static str, events: u64, age: Duration) {
    gauge!(PROJECTION_LAG_EVENTS, "projection" => projection).set(events as f64);
    gauge!(PROJECTION_LAG, "projection" => projection).set(age.as_secs_f64());
    counter!(PROJECTION_PARKED, "projection" => projection).increment(0);
}

/// A projection parked `n` events.
pub fn projection_parked(projection: &'static str, n: usize) {
    counter!(PROJECTION_PARKED, "projection" => projection).increment(n as u64);
}

/// Registers a model role's series at zero (when its client is built).
pub fn register_llm_role(role: &str) {
    install();
    let r = role.to_owned();
    counter!(LLM_CALLS, "role" => r.clone(), "outcome" => "ok").increment(0);
    counter!(LLM_CALLS, "role" => r.clone(), "outcome" => "error").increment(0);
    counter!(LLM_TOKENS, "role" => r.clone(), "kind" => "prompt").increment(0);
    counter!(LLM_TOKENS, "role" => r, "kind" => "completion").increment(0);
}

/// One model call of `role` ended after `took`: `error` is the error code when it failed.
pub fn llm_call(role: &str, error: Option<&str>, took: Duration) {
    let r = role.to_owned();
    let outcome = match error {
        None => "ok",
        Some("cancelled") => "cancelled",
        Some(code) => {
            counter!(LLM_ERRORS, "role" => r.clone(), "code" => code.to_owned()).increment(1);
            "error"
        }
    };
    counter!(LLM_CALLS, "role" => r.clone(), "outcome" => outcome).increment(1);
    histogram!(LLM_CALL_DURATION, "role" => r).record(took);
}

/// `n` tokens of `kind` (`prompt` or `completion`) for `role`.
pub fn llm_tokens(role: &str, kind: &'static str, n: u64) {
    counter!(LLM_TOKENS, "role" => role.to_owned(), "kind" => kind).increment(n);
}

/// Registers the webhook series of `platform` at zero (when the gateway starts).
pub fn register_webhooks(platform: &'static str) {
    install();
    counter!(WEBHOOK_ACKS, "platform" => platform).increment(0);
    counter!(WEBHOOK_REJECTIONS, "platform" => platform, "reason" => "signature").increment(0);
}

/// A shaped call of `role` for `contract` was sent (`prompt_only` when its endpoint refuses
/// structured output).
pub fn structured_call(role: &str, contract: &'static str, prompt_only: bool) {
    // The answers' series exist from the first call on, so a panel has them at once.
    counter!(LLM_CONTRACT_ANSWERS, "role" => role.to_owned(), "contract" => contract,
        "schema_valid" => "true", "verdict" => "accepted")
    .increment(0);
    let how = if prompt_only {
        "prompt_only"
    } else {
        "structured"
    };
    counter!(LLM_STRUCTURED_CALLS, "role" => role.to_owned(), "contract" => contract, "how" => how)
        .increment(1);
}

/// An answer of `role` to `contract` came back: valid against the schema or not, and
/// accepted or rejected (with the reason's kind).
pub fn contract_answer(
    role: &str,
    contract: &'static str,
    schema_valid: bool,
    verdict: Result<(), &str>,
) {
    let verdict = match verdict {
        Ok(()) => "accepted".to_owned(),
        Err(kind) => kind.to_owned(),
    };
    counter!(LLM_CONTRACT_ANSWERS, "role" => role.to_owned(), "contract" => contract,
        "schema_valid" => if schema_valid { "true" } else { "false" }, "verdict" => verdict)
    .increment(1);
}

/// A webhook request of `platform` was acknowledged.
pub fn webhook_acked(platform: &'static str) {
    counter!(WEBHOOK_ACKS, "platform" => platform).increment(1);
}

/// A webhook request of `platform` was refused for `reason`.
pub fn webhook_rejected(platform: &'static str, reason: &'static str) {
    counter!(WEBHOOK_REJECTIONS, "platform" => platform, "reason" => reason).increment(1);
}

/// Registers the stage series at zero (when the persona starts).
pub fn register_stage() {
    install();
    counter!(STAGE_TURNS, "outcome" => "spoke").increment(0);
    counter!(STAGE_TURNS, "outcome" => "failed").increment(0);
}

/// A stage turn ended: a character spoke, or the turn failed.
pub fn stage_turn(spoke: bool) {
    let outcome = if spoke { "spoke" } else { "failed" };
    counter!(STAGE_TURNS, "outcome" => outcome).increment(1);
}

/// Registers the autonomy series at zero (when the worker's deliberation starts): every
/// capability's `do_action`, the skip and every drop reason.
pub fn register_autonomy() {
    install();
    for capability in ghost_domain::autonomy::decision::CAPABILITIES {
        counter!(AUTONOMY_DECISIONS, "decision" => "do_action", "capability" => *capability)
            .increment(0);
    }
    counter!(AUTONOMY_DECISIONS, "decision" => "skip", "capability" => "none").increment(0);
    for reason in ["invalid_decision", "model_error"] {
        counter!(AUTONOMY_DROPPED, "reason" => reason).increment(0);
    }
    for reason in ["quiet_hours", "daily_cap", "nothing_new"] {
        counter!(AUTONOMY_SKIPPED, "reason" => reason).increment(0);
    }
}

/// A deliberation recorded `decision` (`do_action`, `skip`) for `capability` (empty: none).
pub fn autonomy_decided(decision: &'static str, capability: &str) {
    let capability = if capability.is_empty() {
        "none".to_owned()
    } else {
        capability.to_owned()
    };
    counter!(AUTONOMY_DECISIONS, "decision" => decision, "capability" => capability).increment(1);
}

/// A deliberation was dropped for `reason` (`invalid_decision`, `model_error`).
pub fn autonomy_dropped(reason: &'static str) {
    counter!(AUTONOMY_DROPPED, "reason" => reason).increment(1);
}

/// A scheduled tick was skipped for `reason` (`quiet_hours`, `daily_cap`, `nothing_new`).
pub fn autonomy_skipped(reason: &'static str) {
    counter!(AUTONOMY_SKIPPED, "reason" => reason).increment(1);
}

/// Registers the cloud coder's spend series (when the coder starts): the cap (`None`: no
/// cap, shown as 0) and the refusals at zero.
pub fn register_coder_spend(cap: Option<u64>) {
    install();
    gauge!(CODER_DAILY_TOKEN_CAP).set(cap.unwrap_or(0) as f64);
    counter!(CODER_CAP_REFUSALS).increment(0);
}

/// The day's cloud coder tokens as just read from the store.
pub fn coder_tokens_today(prompt: u64, completion: u64) {
    gauge!(CODER_TOKENS_TODAY, "kind" => "prompt").set(prompt as f64);
    gauge!(CODER_TOKENS_TODAY, "kind" => "completion").set(completion as f64);
}

/// A CODE request was refused: the day's cap was used up.
pub fn coder_cap_refused() {
    counter!(CODER_CAP_REFUSALS).increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_series_render_at_zero_with_help() {
        register_turns();
        register_consumer("unit_test_consumer");
        let text = render();
        assert!(text.contains("# HELP ghost_turns_started_total"), "{text}");
        assert!(
            text.contains("ghost_consumer_dead_letters_total{consumer=\"unit_test_consumer\"} 0"),
            "{text}"
        );
    }

    #[test]
    fn autonomy_series_exist_at_zero_and_count_decisions_and_drops() {
        register_autonomy();
        let text = render();
        assert!(
            text.contains("# HELP ghost_autonomy_decisions_total"),
            "{text}"
        );
        assert!(
            text.contains("ghost_autonomy_decisions_total{decision=\"skip\",capability=\"none\"}"),
            "{text}"
        );
        autonomy_decided("do_action", "unit_test_capability");
        autonomy_dropped("unit_test_reason");
        let text = render();
        assert!(
            text.contains("ghost_autonomy_decisions_total{decision=\"do_action\",capability=\"unit_test_capability\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("ghost_autonomy_dropped_total{reason=\"unit_test_reason\"} 1"),
            "{text}"
        );
    }

    #[test]
    fn histograms_render_as_histograms_with_the_latency_buckets() {
        install();
        llm_call("unit_test_role", None, Duration::from_millis(30));
        let text = render();
        assert!(
            text.contains("# TYPE ghost_llm_call_duration_seconds histogram"),
            "{text}"
        );
        assert!(
            text.contains(
                "ghost_llm_call_duration_seconds_bucket{role=\"unit_test_role\",le=\"0.05\"} 1"
            ),
            "{text}"
        );
    }
}
