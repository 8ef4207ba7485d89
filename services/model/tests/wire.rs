//! The embedded server's OpenAI wire format, checked with the client the coder and the
//! persona use (`ghost_shared::llm::LlmClient`, provider `openai`), on the real SmolLM2 file
//! (fetched by deploy/model.sh and cached outside the clone).

use std::sync::OnceLock;

use futures::StreamExt;
use ghost_shared::config::Config;
use ghost_shared::llm::{
    ChatMessage, GenerationOptions, LlmClient, LlmError, LlmRoleConfig, Provider,
};
use ghost_testkit::testing::{embedded_model_file, repo_config_dir};
use serde_json::{json, Value};

const NAME: &str = "smollm2-wire";

/// One server for the whole file, on its own runtime (each test has its own runtime, and
/// the server must outlive them).
fn server() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        let path = embedded_model_file();
        let vars = vec![
            ("GHOST_MODEL__LISTEN".to_owned(), "127.0.0.1:0".to_owned()),
            ("GHOST_MODEL__ENABLED".to_owned(), "true".to_owned()),
            ("GHOST_MODEL__PATH".to_owned(), path.display().to_string()),
            ("GHOST_MODEL__NAME".to_owned(), NAME.to_owned()),
            ("GHOST_MODEL__CONTEXT_SIZE".to_owned(), "2048".to_owned()),
            ("GHOST_MODEL__MAX_TOKENS".to_owned(), "256".to_owned()),
            // The tests share the two cores with whatever else runs; llama.cpp's threads
            // spin-wait for each other, so one thread is the robust choice here.
            ("GHOST_MODEL__THREADS".to_owned(), "1".to_owned()),
        ];
        let config = Config::load(&repo_config_dir(), vars).expect("config");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().expect("runtime");
            runtime.block_on(async move {
                let handle = ghost_model::start(&config).await.expect("model server");
                tx.send(format!("http://{}", handle.addr.expect("addr")))
                    .unwrap();
                handle.wait().await;
            });
        });
        rx.recv().expect("server address")
    })
}

fn client(max_tokens: Option<u32>, stop: Option<Vec<String>>) -> LlmClient {
    LlmClient::new(
        LlmRoleConfig {
            provider: Provider::Openai,
            base_url: format!("{}/v1", server()),
            model: NAME.into(),
            options: GenerationOptions {
                temperature: Some(0.0),
                max_tokens,
                stop,
                ..GenerationOptions::default()
            },
            timeout_secs: 300,
            stream_idle_secs: 30,
            background_timeout_secs: 900,
            max_response_bytes: 1 << 20,
            background_concurrency: 1,
        },
        None,
    )
    .expect("client")
}

fn greeting() -> Vec<ChatMessage> {
    vec![
        ChatMessage::system("You are a helpful assistant. Answer in one short sentence."),
        ChatMessage::user("Say hello to Ann."),
    ]
}

async fn raw(body: Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", server()))
        .json(&body)
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON body"))
}

fn greeting_body(extra: Value) -> Value {
    let mut body = json!({
        "model": NAME, "temperature": 0,
        "messages": [
            {"role": "system", "content": "You are a helpful assistant. Answer in one short sentence."},
            {"role": "user", "content": "Say hello to Ann."}
        ]
    });
    for (k, v) in extra.as_object().expect("object") {
        body[k] = v.clone();
    }
    body
}

#[tokio::test]
async fn non_streaming_reply_honours_max_tokens() {
    let text = client(Some(3), None)
        .chat(&greeting())
        .await
        .expect("reply");
    assert!(!text.trim().is_empty());
    let (status, body) = raw(greeting_body(json!({"max_tokens": 3}))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], NAME);
    assert_eq!(body["usage"]["completion_tokens"], 3);
    assert_eq!(body["choices"][0]["finish_reason"], "length");
    assert_eq!(body["choices"][0]["message"]["content"], text.as_str());
}

#[tokio::test]
async fn a_streamed_reply_stops_at_the_end_of_the_turn() {
    let mut stream = client(Some(200), None)
        .chat_stream(&greeting())
        .await
        .expect("stream");
    let mut deltas = Vec::new();
    while let Some(delta) = stream.next().await {
        // The client errs on a stream that ends without `data: [DONE]`.
        deltas.push(delta.expect("delta"));
    }
    let text: String = deltas.concat();
    assert!(deltas.len() > 1, "streamed in pieces: {deltas:?}");
    assert!(!text.trim().is_empty());
    assert!(
        !text.contains("<|im_end|>") && !text.contains("<|im_start|>"),
        "{text:?}"
    );
    // The same request unstreamed: the model ended its turn before the cap.
    let (status, body) = raw(greeting_body(json!({"max_tokens": 200}))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["choices"][0]["finish_reason"], "stop", "{body}");
    assert!(body["usage"]["completion_tokens"].as_u64().expect("count") < 200);
}

#[tokio::test]
async fn the_raw_stream_has_a_role_chunk_a_finish_chunk_usage_and_done() {
    let response = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", server()))
        .json(&greeting_body(json!({
            "stream": true, "max_tokens": 5, "stream_options": {"include_usage": true}
        })))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let body = response.text().await.expect("body");
    let data: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    assert_eq!(data.last(), Some(&"[DONE]"));
    let chunks: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).expect("JSON chunk"))
        .collect();
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert!(chunks
        .iter()
        .all(|c| c["object"] == "chat.completion.chunk"));
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "length");
    let usage = &chunks[chunks.len() - 1];
    assert_eq!(usage["usage"]["completion_tokens"], 5);
    assert!(
        usage["usage"]["prompt_tokens"]
            .as_u64()
            .expect("prompt tokens")
            > 10
    );
}

#[tokio::test]
async fn a_stop_sequence_ends_the_reply_before_it() {
    let full = client(Some(40), None)
        .chat(&greeting())
        .await
        .expect("reply");
    let words: Vec<&str> = full.split_whitespace().collect();
    assert!(words.len() >= 3, "a reply long enough to cut: {full:?}");
    let stop = format!(" {}", words[2]);
    let cut = client(Some(40), Some(vec![stop.clone()]))
        .chat(&greeting())
        .await
        .expect("reply");
    assert!(!cut.contains(&stop), "{cut:?} stops before {stop:?}");
    assert!(full.starts_with(&cut), "{cut:?} is the start of {full:?}");
    assert!(cut.len() < full.len());
}

#[tokio::test]
async fn a_prompt_larger_than_the_context_gets_400_and_the_server_goes_on() {
    let long = "lorem ipsum ".repeat(2000);
    let err = client(Some(4), None)
        .chat(&[ChatMessage::user(long)])
        .await
        .unwrap_err();
    match err {
        LlmError::HttpStatus { status, body } => {
            assert_eq!(status, 400);
            assert!(body.contains("context_length_exceeded"), "{body}");
            assert!(body.contains("model.context_size"), "{body}");
        }
        other => panic!("expected 400, got {other:?}"),
    }
    assert!(!client(Some(2), None)
        .chat(&greeting())
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn concurrent_requests_wait_their_turn() {
    let requests = (0..3).map(|_| async { client(Some(4), None).chat(&greeting()).await });
    for reply in futures::future::join_all(requests).await {
        assert!(!reply.expect("every request is served").is_empty());
    }
}

#[tokio::test]
async fn the_model_list_names_the_model_and_other_names_get_404() {
    let c = client(None, None);
    let names = c.models().await.expect("models");
    assert!(c.model_listed(&names), "{names:?}");
    let (status, body) =
        raw(json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})).await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "model_not_found");
    let (status, body) = raw(json!({"model": NAME, "messages": []})).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], "missing_messages");
}
