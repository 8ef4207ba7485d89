//! `ghost-harness model-bench`: time to first token, prompt tokens/s and generation tokens/s of any
//! OpenAI-compatible chat endpoint (the embedded model server, or another server on the
//! same GGUF for comparison), over streamed requests with fresh prompts (no prompt cache).

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use futures::StreamExt;
use serde_json::{json, Value};

/// Options of `ghost-harness model-bench`.
#[derive(Debug, Clone, Args)]
pub struct ModelBenchArgs {
    /// Server root, e.g. `http://127.0.0.1:8090/v1`.
    #[arg(long, default_value = "http://127.0.0.1:8090/v1")]
    pub base_url: String,
    /// Model id to ask for.
    #[arg(long, default_value = "smollm2-135m-instruct")]
    pub model: String,
    /// Measured requests (one at a time).
    #[arg(long, default_value_t = 5)]
    pub requests: usize,
    /// Tokens to generate per request (`max_tokens`; the reply may end earlier).
    #[arg(long, default_value_t = 128)]
    pub max_tokens: u32,
    /// Sentences of filler in the prompt (about 12 tokens each).
    #[arg(long, default_value_t = 40)]
    pub prompt_sentences: usize,
}

/// One measured request.
#[derive(Debug, Clone, Copy)]
struct Sample {
    ttft: Duration,
    total: Duration,
    prompt_tokens: u64,
    completion_tokens: u64,
}

/// Runs the requests and prints medians.
pub async fn run(args: ModelBenchArgs) -> Result<()> {
    let http = reqwest::Client::new();
    let url = format!("{}/chat/completions", args.base_url.trim_end_matches('/'));
    let mut samples = Vec::new();
    // The first request warms the server up and is not counted.
    for i in 0..=args.requests {
        let sample = one(&http, &url, &args, i).await?;
        if i > 0 {
            samples.push(sample);
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let ttft = median(samples.iter().map(|s| s.ttft.as_secs_f64()).collect());
    let prompt_tps = median(
        samples
            .iter()
            .map(|s| s.prompt_tokens as f64 / s.ttft.as_secs_f64())
            .collect(),
    );
    let gen_tps = median(
        samples
            .iter()
            .map(|s| {
                (s.completion_tokens.saturating_sub(1)) as f64
                    / (s.total - s.ttft).as_secs_f64().max(1e-9)
            })
            .collect(),
    );
    let prompt_tokens = median(samples.iter().map(|s| s.prompt_tokens as f64).collect());
    let completion = median(samples.iter().map(|s| s.completion_tokens as f64).collect());
    println!(
        "model-bench {} ({}): {} requests, median prompt {prompt_tokens:.0} tokens, median reply {completion:.0} tokens",
        args.model, args.base_url, args.requests
    );
    println!("  time to first token: {:.0} ms (median)", ttft * 1000.0);
    println!("  prompt: {prompt_tps:.0} tokens/s (prompt tokens / time to first token)");
    println!("  generation: {gen_tps:.1} tokens/s (tokens after the first / time after it)");
    Ok(())
}

async fn one(http: &reqwest::Client, url: &str, args: &ModelBenchArgs, i: usize) -> Result<Sample> {
    // A different first line per request, so no server can reuse a cached prompt.
    let filler = "The quick brown fox jumps over the lazy dog near the quiet river bank. "
        .repeat(args.prompt_sentences);
    let body = json!({
        "model": args.model, "stream": true, "max_tokens": args.max_tokens, "temperature": 0,
        "stream_options": {"include_usage": true},
        "messages": [
            {"role": "system", "content": format!("Request {i} at {:?}. You are a helpful assistant.", Instant::now())},
            {"role": "user", "content": format!("{filler}\nWrite a long story about the fox.")}
        ]
    });
    let start = Instant::now();
    let response = http.post(url).json(&body).send().await.context("request")?;
    if !response.status().is_success() {
        bail!(
            "{url} answered {}: {}",
            response.status(),
            response.text().await.unwrap_or_default()
        );
    }
    let mut stream = response.bytes_stream();
    let mut buffer = String::new();
    let mut ttft = None;
    let mut chunks = 0u64;
    let mut usage: Option<Value> = None;
    while let Some(bytes) = stream.next().await {
        buffer.push_str(&String::from_utf8_lossy(&bytes.context("body")?));
        while let Some(end) = buffer.find('\n') {
            let line: String = buffer.drain(..=end).collect();
            let Some(data) = line.trim().strip_prefix("data:").map(str::trim) else {
                continue;
            };
            if data == "[DONE]" {
                continue;
            }
            let v: Value = serde_json::from_str(data).context("chunk")?;
            if v["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|c| !c.is_empty())
            {
                ttft.get_or_insert_with(|| start.elapsed());
                chunks += 1;
            }
            if v["usage"].is_object() {
                usage = Some(v["usage"].clone());
            }
        }
    }
    let total = start.elapsed();
    let ttft = ttft.context("no token came")?;
    let (prompt_tokens, completion_tokens) = match usage {
        Some(u) => (
            u["prompt_tokens"].as_u64().unwrap_or(0),
            u["completion_tokens"].as_u64().unwrap_or(chunks),
        ),
        // A server without `stream_options.include_usage`: the prompt's size from the
        // same request unstreamed (one token), the reply's from the chunks (one per token).
        None => (prompt_size(http, url, body).await?, chunks),
    };
    Ok(Sample {
        ttft,
        total,
        prompt_tokens,
        completion_tokens,
    })
}

async fn prompt_size(http: &reqwest::Client, url: &str, mut body: Value) -> Result<u64> {
    body["stream"] = json!(false);
    body["max_tokens"] = json!(1);
    let reply: Value = http.post(url).json(&body).send().await?.json().await?;
    reply["usage"]["prompt_tokens"]
        .as_u64()
        .context("the server reports no prompt_tokens")
}
