//! `ghost-harness reply-bench`: the whole pipeline on the embedded model, as a newcomer runs it.
//! Scripted turns go through `/api/chat` with every service (router with its classifier,
//! recall, the persona, write plans and reflections in the background), and each turn's
//! time to first token is set beside the model's own: the reply's final request, recorded
//! on its way to the model, sent again straight to the model once the pipeline is idle.
//! Per contract: calls, answers valid against their request's schema, and answers their
//! validator accepted.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use futures::StreamExt;
use ghost_testkit::model_recorder::{Exchange, Recorder};
use ghost_testkit::testing::{embedded_model_overrides, TestEnv};
use serde_json::Value;

use ghost::stack::{start_stack, ServiceName};

/// Options of `ghost-harness reply-bench`.
#[derive(Debug, Clone, Args)]
pub struct ReplyBenchArgs {
    /// Chat turns, one after another in one conversation.
    #[arg(long, default_value_t = 20)]
    pub turns: usize,
    /// The model's CPU threads.
    #[arg(long, default_value_t = 2)]
    pub threads: u32,
    /// The reply's token budget (the persona's `max_tokens`).
    #[arg(long, default_value_t = 96)]
    pub reply_tokens: u32,
}

/// What a newcomer says over a first conversation: likes, facts, worries, questions.
const SCRIPT: [&str; 10] = [
    "I love green tea. It is my favourite drink.",
    "I live in Osaka and I work as a nurse at a hospital.",
    "I am worried about my driving test next week.",
    "What did I say I like to drink?",
    "Hello!",
    "I hate celery, it tastes like soap to me.",
    "My sister Aiko is visiting me this weekend.",
    "Can you help me plan a short trip to Kyoto?",
    "Do you remember where I work?",
    "Thanks, see you tomorrow.",
];

/// Runs the turns and prints the table BENCHMARKS.md keeps.
pub async fn run(args: ReplyBenchArgs) -> Result<()> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let (recorder, recorder_url) = Recorder::start(format!("http://127.0.0.1:{port}")).await;
    let roles = ["persona", "worker"];
    let mut vars = embedded_model_overrides(port, "smollm2-bench", &recorder_url, &roles, 600);
    let reply_tokens = args.reply_tokens.to_string();
    let threads = args.threads.to_string();
    for (k, v) in [
        ("GHOST_MODEL__THREADS", threads.as_str()),
        ("GHOST_MODEL__MAX_TOKENS", "1536"),
        ("GHOST_ROUTING__RULES_FILE", "config/routing.yaml"),
        ("GHOST_MEMORY__RECALL_ENABLED", "true"),
        ("GHOST_BUS__STORAGE", "file"),
        ("GHOST_BUS__ACK_WAIT_SECS", "30"),
        (
            "GHOST_LLM__PERSONA__OPTIONS__MAX_TOKENS",
            reply_tokens.as_str(),
        ),
    ] {
        vars.push((k.to_owned(), v.to_owned()));
    }
    let refs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let env = TestEnv::new(&recorder_url, &refs).await;
    let result = drive(&env, &args, &recorder).await;
    env.cleanup().await;
    result
}

async fn drive(env: &TestEnv, args: &ReplyBenchArgs, recorder: &Recorder) -> Result<()> {
    let mut services = vec![ServiceName::Model];
    services.extend(ServiceName::ALL);
    services.push(ServiceName::WritePlan);
    let stack = start_stack(env.config.clone(), &services).await?;
    let gateway = stack.gateway_addr().context("no gateway")?;
    let http = reqwest::Client::new();
    let token = crate::chaos::api_token(env)?;
    let mut pipeline = Vec::new();
    for i in 0..args.turns {
        let text = SCRIPT[i % SCRIPT.len()];
        let started = Instant::now();
        let response = http
            .post(format!("http://{gateway}/api/chat"))
            .bearer_auth(&token)
            .json(&serde_json::json!({"session_id": "reply-bench", "text": text}))
            .send()
            .await?;
        let first = first_sse_token(response, gateway_token).await?;
        pipeline.push(first.duration_since(started));
        eprintln!(
            "turn {:>2}: first token after {:>6.0} ms",
            i + 1,
            first.duration_since(started).as_secs_f64() * 1e3
        );
    }
    // The model's own: the pipeline stops (its background work with it), and a fresh
    // model server on the same file gets each reply's final request, in the same order.
    stack.abort();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let exchanges = recorder.exchanges();
    let replies: Vec<&Exchange> = exchanges
        .iter()
        .filter(|x| x.contract().as_deref() == Some("trailer"))
        .collect();
    if replies.is_empty() {
        bail!("no reply request was recorded");
    }
    let mut alone = env.config.clone();
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    alone.ghost.model.listen = format!("127.0.0.1:{port}");
    let model = ghost_model::start(&alone).await?;
    let mut own = Vec::new();
    for x in &replies {
        let started = Instant::now();
        let response = http
            .post(format!("http://127.0.0.1:{port}/v1/chat/completions"))
            .json(&x.request)
            .send()
            .await?;
        let first = first_sse_token(response, model_token).await?;
        own.push(first.duration_since(started));
    }
    model.abort();
    report(args, &pipeline, &own, &exchanges);
    Ok(())
}

/// When the first SSE block that `is_token` recognises arrived; the stream is read to its
/// end (the conversation takes its next message only after the reply).
async fn first_sse_token(
    response: reqwest::Response,
    is_token: impl Fn(&str) -> bool,
) -> Result<Instant> {
    if !response.status().is_success() {
        bail!("HTTP {}", response.status());
    }
    let mut body = response.bytes_stream();
    let mut buffer = String::new();
    let mut first = None;
    while let Some(chunk) = body.next().await {
        buffer.push_str(&String::from_utf8_lossy(&chunk?));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            if first.is_none() && is_token(&block) {
                first = Some(Instant::now());
            }
        }
    }
    first.context("the stream ended without a token")
}

/// A gateway block carrying reply text.
fn gateway_token(block: &str) -> bool {
    block.lines().any(|l| l.trim() == "event: token")
}

/// A model block whose delta carries text (the first only opens the message).
fn model_token(block: &str) -> bool {
    block
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .any(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|t| !t.is_empty())
        })
}

/// The `q` quantile of `samples`, in milliseconds (nearest rank; `samples` not empty).
pub(crate) fn quantile(samples: &[Duration], q: f64) -> f64 {
    let mut v: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 - 1.0) * q).round() as usize;
    v[i.min(v.len() - 1)]
}

fn report(args: &ReplyBenchArgs, pipeline: &[Duration], own: &[Duration], xs: &[Exchange]) {
    println!(
        "ghost-harness reply-bench: {} turns on the embedded model ({} threads), background work on",
        args.turns, args.threads
    );
    println!(
        "  time to first token, /api/chat: p50 {:.0} ms, p95 {:.0} ms",
        quantile(pipeline, 0.5),
        quantile(pipeline, 0.95)
    );
    println!(
        "  the model's own, same final requests sent straight to it: p50 {:.0} ms, p95 {:.0} ms",
        quantile(own, 0.5),
        quantile(own, 0.95)
    );
    println!(
        "  ratio of the p50s: {:.2}",
        quantile(pipeline, 0.5) / quantile(own, 0.5)
    );
    let per = contract_answers(xs);
    let accepted = accepted_per_contract();
    println!("  contract           calls  schema-valid  accepted");
    for (name, (calls, valid)) in per {
        let ok = accepted.get(&name).copied().unwrap_or(0.0);
        println!("  {name:<18} {calls:>5}  {valid:>12}  {ok:>8.0}");
    }
}

/// Per contract (replies' trailers left out): calls answered, and answers valid against
/// the schema their own request carried (an independent validator, `jsonschema`).
pub(crate) fn contract_answers(xs: &[Exchange]) -> BTreeMap<String, (usize, usize)> {
    let mut per: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for x in xs {
        let (Some(name), Some(schema)) = (x.contract(), x.schema()) else {
            continue;
        };
        if name == "trailer" {
            continue; // a reply: free text, its trailer optional
        }
        let valid = serde_json::from_str::<Value>(&x.text)
            .ok()
            .zip(jsonschema::validator_for(schema).ok())
            .is_some_and(|(v, s)| s.is_valid(&v));
        let e = per.entry(name).or_default();
        e.0 += 1;
        e.1 += usize::from(valid);
    }
    per
}

/// `ghost_llm_contract_answers_total{verdict="accepted"}` per contract, from this process'
/// metrics (every service ran in it).
pub(crate) fn accepted_per_contract() -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in ghost_shared::metrics::render().lines() {
        if !line.starts_with(ghost_shared::metrics::LLM_CONTRACT_ANSWERS)
            || !line.contains("verdict=\"accepted\"")
        {
            continue;
        }
        let contract = line
            .split("contract=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap_or_default();
        let value: f64 = line
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        *out.entry(contract.to_owned()).or_default() += value;
    }
    out
}
