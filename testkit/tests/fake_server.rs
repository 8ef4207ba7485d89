//! The fake server's own wire behaviour, checked with a plain HTTP client.

use std::time::{Duration, Instant};

use ghost_shared::llm::{ChatMessage, LlmClient, LlmRoleConfig, Provider};
use ghost_testkit::fake_llm::{Failure, FakeLlm, Script};
use serde_json::{json, Value};

async fn post(url: String, body: Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(url)
        .json(&body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn ollama_streams_when_stream_is_absent() {
    let fake = FakeLlm::start().await.unwrap();
    fake.push(Script::chunks(vec!["a", "b"]));
    let resp = post(
        format!("{}/api/chat", fake.base_url()),
        json!({"model": "m", "messages": [{"role": "user", "content": "q"}]}),
    )
    .await;
    assert_eq!(resp.headers()["content-type"], "application/x-ndjson");
    let text = resp.text().await.unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["message"]["content"], "a");
    assert_eq!(lines[0]["done"], false);
    assert_eq!(lines[2]["done"], true);
    assert!(fake.requests()[0].stream);

    // stream: false → a single JSON object.
    fake.push(Script::chunks(vec!["a", "b"]));
    let v: Value = post(
        format!("{}/api/chat", fake.base_url()),
        json!({"model": "m", "stream": false, "messages": []}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(v["message"]["content"], "ab");
    assert_eq!(v["done"], true);
    fake.shutdown().await;
}

#[tokio::test]
async fn openai_streams_only_when_asked() {
    let fake = FakeLlm::start().await.unwrap();
    let url = format!("{}/v1/chat/completions", fake.base_url());
    fake.push(Script::chunks(vec!["x", "y"]));
    let v: Value = post(url.clone(), json!({"model": "m", "messages": []}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "xy");
    assert!(!fake.requests()[0].stream);

    fake.push(Script::chunks(vec!["x", "y"]));
    let resp = post(url, json!({"model": "m", "stream": true, "messages": []})).await;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let text = resp.text().await.unwrap();
    let events: Vec<&str> = text.split("\n\n").filter(|e| !e.is_empty()).collect();
    assert_eq!(events.len(), 4);
    assert!(events[0].starts_with("data: {"));
    assert_eq!(events[3], "data: [DONE]");
    fake.shutdown().await;
}

#[tokio::test]
async fn invalid_json_body_is_a_400_and_still_recorded() {
    let fake = FakeLlm::start().await.unwrap();
    let resp = reqwest::Client::new()
        .post(format!("{}/api/chat", fake.base_url()))
        .body("{nope")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(fake.request_count(), 1);
    assert_eq!(fake.requests()[0].body, Value::Null);
    fake.shutdown().await;
}

#[tokio::test]
async fn first_delay_is_honoured() {
    let fake = FakeLlm::start().await.unwrap();
    fake.push(Script::reply("late").with_delay(Duration::from_millis(300)));
    let t0 = Instant::now();
    let resp = post(
        format!("{}/v1/chat/completions", fake.base_url()),
        json!({"model": "m", "messages": []}),
    )
    .await;
    assert!(resp.status().is_success());
    assert!(t0.elapsed() >= Duration::from_millis(290));
    fake.shutdown().await;
}

#[tokio::test]
async fn shutdown_releases_hanging_requests() {
    let fake = FakeLlm::start().await.unwrap();
    fake.set_default(Script::failing(Failure::Hang));
    let url = format!("{}/api/chat", fake.base_url());
    let pending = tokio::spawn(post(url, json!({"model": "m", "messages": []})));
    // Let the request arrive before shutting down.
    while fake.request_count() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let t0 = Instant::now();
    fake.clone().shutdown().await;
    // A hang guard, not a speed requirement.
    assert!(t0.elapsed() < Duration::from_secs(30));
    let resp = pending.await.unwrap();
    assert_eq!(resp.status(), 503);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_zero_delay_calls_all_complete() {
    // Correctness under concurrency; speed is measured by the benchmark, not here.
    let fake = FakeLlm::start().await.unwrap();
    fake.set_default(Script::reply("a short streamed reply of several words"));
    let client = LlmClient::new(
        LlmRoleConfig {
            provider: Provider::Openai,
            base_url: fake.base_url(),
            model: "m".into(),
            options: Default::default(),
            timeout_secs: 10,
            stream_idle_secs: 30,
            background_timeout_secs: 900,
            max_response_bytes: ghost_shared::llm::DEFAULT_MAX_RESPONSE_BYTES,
            background_concurrency: 1,
        },
        None,
    )
    .unwrap();
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let c = client.clone();
            tokio::spawn(async move {
                for _ in 0..50 {
                    let text = c.chat(&[ChatMessage::user("q")]).await.unwrap();
                    assert_eq!(text, "a short streamed reply of several words");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(fake.request_count(), 400);
    fake.shutdown().await;
}
