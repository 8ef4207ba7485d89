//! The embedding model (`/v1/embeddings`) on the real all-MiniLM-L6-v2 files (fetched by
//! deploy/model.sh, cached outside the clone): its vectors rank a paraphrase above an
//! unrelated sentence, a batch gives what each text gives alone, long texts are cut, and
//! the HTTP route speaks the OpenAI wire (checked with the client Ghost's recall uses) and
//! refuses bad bodies with a 4xx.

use std::sync::OnceLock;
use std::time::Instant;

use base64::Engine as _;
use ghost_model::embedding::MAX_TOKENS;
use ghost_model::server::{embedding_router, EmbeddingState, MAX_EMBEDDING_BODY};
use ghost_model::Embedder;
use ghost_shared::llm::{LlmClient, LlmRoleConfig, Provider};
use ghost_testkit::testing::embedding_model_dir;
use serde_json::{json, Value};

const NAME: &str = "minilm-test";
const MAX_INPUTS: usize = 8;

fn embedder() -> &'static Embedder {
    static EMBEDDER: OnceLock<Embedder> = OnceLock::new();
    EMBEDDER.get_or_init(|| Embedder::load(&embedding_model_dir(), 1, 4).expect("embedding model"))
}

/// The routes on their own runtime (each test has its own, and the server must outlive
/// them); the base URL.
fn server() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().expect("runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("listener");
                tx.send(format!("http://{}", listener.local_addr().expect("addr")))
                    .expect("send");
                let app = embedding_router(EmbeddingState {
                    embedder: embedder().clone(),
                    name: NAME.into(),
                    max_inputs: MAX_INPUTS,
                });
                axum::serve(listener, app).await.expect("serve");
            });
        });
        rx.recv().expect("server")
    })
}

fn embed(texts: &[&str]) -> Vec<Vec<f32>> {
    let texts: Vec<String> = texts.iter().map(|t| (*t).to_owned()).collect();
    embedder().embed_blocking(&texts).expect("embedded").vectors
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn a_paraphrase_ranks_above_an_unrelated_sentence() {
    let cases = [
        (
            "I love green tea",
            "What do I like to drink?",
            "The train to Osaka leaves at nine.",
        ),
        (
            "A man is playing a guitar.",
            "Someone is strumming an acoustic guitar.",
            "The stock market fell sharply today.",
        ),
        (
            "My cat is called Mochi.",
            "What is the name of my kitten?",
            "Please close the window before it rains.",
        ),
    ];
    for (anchor, paraphrase, unrelated) in cases {
        let v = embed(&[anchor, paraphrase, unrelated]);
        for x in &v {
            assert_eq!(x.len(), 384);
            assert!((dot(x, x) - 1.0).abs() < 1e-4, "not unit length");
        }
        let (near, far) = (dot(&v[0], &v[1]), dot(&v[0], &v[2]));
        println!("{anchor:?}: paraphrase {near:.4}, unrelated {far:.4}");
        assert!(
            near > far + 0.1,
            "{anchor:?}: paraphrase {near}, unrelated {far}"
        );
    }
}

#[test]
fn a_batch_gives_what_each_text_gives_alone() {
    let texts = [
        "short",
        "a somewhat longer sentence about green tea and mornings",
        "I love green tea",
    ];
    let batch = embed(&texts);
    for (text, together) in texts.iter().zip(&batch) {
        let alone = &embed(&[text])[0];
        let drift = alone
            .iter()
            .zip(together)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(
            drift < 1e-4,
            "{text:?}: padding changed the vector by {drift}"
        );
    }
}

#[test]
fn a_long_text_is_cut_at_the_models_limit() {
    let long = "tea ".repeat(2000);
    let done = embedder().embed_blocking(&[long]).expect("embedded");
    assert_eq!(done.tokens, MAX_TOKENS);
    assert_eq!(done.vectors[0].len(), 384);
}

#[tokio::test]
async fn the_route_speaks_the_openai_wire_to_ghosts_client() {
    let client = LlmClient::new(
        LlmRoleConfig {
            provider: Provider::Openai,
            base_url: format!("{}/v1", server()),
            model: NAME.into(),
            options: Default::default(),
            timeout_secs: 60,
            stream_idle_secs: 30,
            background_timeout_secs: 900,
            max_response_bytes: ghost_shared::llm::DEFAULT_MAX_RESPONSE_BYTES,
            background_concurrency: 1,
        },
        None,
    )
    .expect("client");
    let texts = vec![
        "I love green tea".to_owned(),
        "What do I like to drink?".into(),
    ];
    let over_http = client.embed(&texts).await.expect("embedded over HTTP");
    let direct = embedder().embed_blocking(&texts).expect("embedded").vectors;
    assert_eq!(over_http.len(), 2);
    for (a, b) in over_http.iter().zip(&direct) {
        assert!(a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6));
    }

    // base64: little-endian f32s, the same vector.
    let http = reqwest::Client::new();
    let url = format!("{}/v1/embeddings", server());
    let reply: Value = http
        .post(&url)
        .json(&json!({"model": NAME, "input": "I love green tea", "encoding_format": "base64"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(reply["data"][0]["embedding"].as_str().expect("base64"))
        .unwrap();
    let decoded: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert_eq!(decoded, direct[0]);
    assert_eq!(reply["model"], NAME);
    assert!(reply["usage"]["prompt_tokens"].as_u64().unwrap() > 2);
}

#[tokio::test]
async fn bad_bodies_get_a_4xx_with_an_openai_error() {
    let http = reqwest::Client::new();
    let url = format!("{}/v1/embeddings", server());
    let too_many: Vec<String> = (0..=MAX_INPUTS).map(|i| format!("text {i}")).collect();
    for (body, status, code) in [
        (json!({"model": NAME, "input": []}), 400, "empty_input"),
        (json!({"model": NAME, "input": ""}), 400, "empty_input"),
        (
            json!({"model": NAME, "input": [1, 2, 3]}),
            400,
            "unsupported_input",
        ),
        (
            json!({"model": NAME, "input": {"text": "a"}}),
            400,
            "invalid_input",
        ),
        (
            json!({"model": NAME, "input": too_many}),
            400,
            "too_many_inputs",
        ),
        (
            json!({"model": "other", "input": "a"}),
            404,
            "model_not_found",
        ),
        (json!({"input": "a"}), 400, "missing_model"),
    ] {
        let r = http.post(&url).json(&body).send().await.unwrap();
        assert_eq!(r.status().as_u16(), status, "{body}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], code, "{body}: {v}");
    }
    let r = http.post(&url).body("{nope").send().await.unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let huge = json!({"model": NAME, "input": "a".repeat(MAX_EMBEDDING_BODY)}).to_string();
    let r = http.post(&url).body(huge).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 413);
    // The server still answers.
    let r = http
        .post(&url)
        .json(&json!({"model": NAME, "input": "still here"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
}

/// Latency per text, for BENCHMARKS.md (no threshold is asserted):
/// `cargo test -p ghost-model --test embeddings -- --ignored --nocapture latency`.
#[test]
#[ignore = "a measurement, run by hand"]
fn latency() {
    let sentence = "I love green tea in the morning, especially with a little rice cracker.";
    embed(&[sentence]);
    let runs = 50;
    let mut single: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            embed(&[sentence]);
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    single.sort_by(f64::total_cmp);
    let batch: Vec<String> = (0..32).map(|i| format!("{sentence} ({i})")).collect();
    let texts: Vec<&str> = batch.iter().map(String::as_str).collect();
    let start = Instant::now();
    let rounds = 5;
    for _ in 0..rounds {
        embed(&texts);
    }
    let per_text = start.elapsed().as_secs_f64() * 1e3 / f64::from(rounds * 32);
    let long = "tea and rice crackers in the morning ".repeat(60);
    let start = Instant::now();
    embed(&[long.as_str()]);
    let long_ms = start.elapsed().as_secs_f64() * 1e3;
    println!(
        "one short text (≈ 18 tokens): p50 {:.1} ms, p99 {:.1} ms; batch of 32: {per_text:.2} ms a text; one 256-token text: {long_ms:.1} ms",
        single[runs / 2],
        single[runs * 99 / 100],
    );
}
