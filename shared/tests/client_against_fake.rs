//! The LLM client against the fake server (and a raw TCP server for chunk splitting),
//! over real HTTP, for both wire formats.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use futures::StreamExt;
use ghost_shared::llm::{
    Call, ChatMessage, GenerationOptions, ImagePart, LlmClient, LlmError, LlmRoleConfig, Provider,
};
use ghost_testkit::fake_llm::{Failure, FakeLlm, Script};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BOTH: [Provider; 2] = [Provider::Ollama, Provider::Openai];

fn config(provider: Provider, base_url: &str, timeout_secs: u64) -> LlmRoleConfig {
    LlmRoleConfig {
        provider,
        base_url: base_url.to_string(),
        model: "test-model".into(),
        options: GenerationOptions::default(),
        timeout_secs,
        stream_idle_secs: 30,
        background_timeout_secs: 900,
        max_response_bytes: ghost_shared::llm::DEFAULT_MAX_RESPONSE_BYTES,
        background_concurrency: 1,
    }
}

fn client(provider: Provider, fake: &FakeLlm) -> LlmClient {
    LlmClient::new(config(provider, &fake.base_url(), 10), None).unwrap()
}

fn chat_path(provider: Provider) -> &'static str {
    match provider {
        Provider::Ollama => "/api/chat",
        Provider::Openai => "/v1/chat/completions",
    }
}

/// Collects a stream into its tokens and the error that ended it, if any.
async fn collect(
    client: &LlmClient,
    msgs: &[ChatMessage],
) -> Result<(Vec<String>, Option<LlmError>), LlmError> {
    let mut stream = client.chat_stream(msgs).await?;
    let mut tokens = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(t) => tokens.push(t),
            Err(e) => {
                // The stream must end right after its error.
                assert!(stream.next().await.is_none());
                return Ok((tokens, Some(e)));
            }
        }
    }
    Ok((tokens, None))
}

#[tokio::test]
async fn streamed_tokens_arrive_in_order() {
    let fake = FakeLlm::start().await.unwrap();
    for p in BOTH {
        let script = Script::reply("Hello brave new world, こんにちは!");
        let expected = script.chunks.clone();
        fake.push(script);
        let (tokens, err) = collect(&client(p, &fake), &[ChatMessage::user("hi")])
            .await
            .unwrap();
        assert!(err.is_none(), "{p:?}: {err:?}");
        assert_eq!(tokens, expected, "{p:?}");
        assert_eq!(tokens.concat(), "Hello brave new world, こんにちは!");
        let req = fake.requests().pop().unwrap();
        assert_eq!(req.path, chat_path(p));
        assert!(req.stream);
        assert_eq!(req.body["stream"], true);
        assert_eq!(req.model.as_deref(), Some("test-model"));
        assert_eq!(req.last_user_text().as_deref(), Some("hi"));
    }
    fake.shutdown().await;
}

#[tokio::test]
async fn paced_chunks_stream_in_order() {
    let fake = FakeLlm::start().await.unwrap();
    for p in BOTH {
        fake.push(Script::chunks(vec!["a", "b", "c"]).with_chunk_delay(Duration::from_millis(30)));
        let (tokens, err) = collect(&client(p, &fake), &[ChatMessage::user("x")])
            .await
            .unwrap();
        assert!(err.is_none());
        assert_eq!(tokens, vec!["a", "b", "c"]);
    }
    fake.shutdown().await;
}

#[tokio::test]
async fn non_streaming_chat_returns_whole_reply() {
    let fake = FakeLlm::start().await.unwrap();
    for p in BOTH {
        fake.push(Script::reply("the whole reply"));
        let text = client(p, &fake)
            .chat(&[ChatMessage::system("be brief"), ChatMessage::user("q")])
            .await
            .unwrap();
        assert_eq!(text, "the whole reply");
        let req = fake.requests().pop().unwrap();
        assert!(!req.stream, "{p:?}");
        assert_eq!(req.body["stream"], false);
        assert_eq!(req.system_text().as_deref(), Some("be brief"));
    }
    fake.shutdown().await;
}

#[tokio::test]
async fn generation_options_reach_the_wire() {
    let fake = FakeLlm::start().await.unwrap();
    for p in BOTH {
        let mut cfg = config(p, &fake.base_url(), 10);
        cfg.options = GenerationOptions {
            temperature: Some(0.25),
            top_p: None,
            max_tokens: Some(64),
            seed: Some(3),
            stop: Some(vec!["END".into()]),
        };
        LlmClient::new(cfg, None)
            .unwrap()
            .chat(&[ChatMessage::user("q")])
            .await
            .unwrap();
        let body = fake.requests().pop().unwrap().body;
        let opts = match p {
            Provider::Ollama => {
                assert_eq!(body["options"]["num_predict"], 64);
                body["options"].clone()
            }
            Provider::Openai => {
                assert_eq!(body["max_tokens"], 64);
                body.clone()
            }
        };
        assert_eq!(opts["temperature"], 0.25);
        assert_eq!(opts["seed"], 3);
        assert_eq!(opts["stop"][0], "END");
        assert!(opts.get("top_p").is_none());
    }
    fake.shutdown().await;
}

#[tokio::test]
async fn openai_base_url_may_end_with_v1() {
    let fake = FakeLlm::start().await.unwrap();
    fake.push(Script::reply("via v1"));
    let c = LlmClient::new(
        config(Provider::Openai, &format!("{}/v1/", fake.base_url()), 10),
        None,
    )
    .unwrap();
    assert_eq!(c.chat(&[ChatMessage::user("q")]).await.unwrap(), "via v1");
    assert_eq!(fake.requests()[0].path, "/v1/chat/completions");
    c.probe().await.unwrap();
    assert_eq!(fake.requests()[1].path, "/v1/models");
    fake.shutdown().await;
}

#[tokio::test]
async fn probe_hits_tags_or_models() {
    let fake = FakeLlm::start().await.unwrap();
    client(Provider::Ollama, &fake).probe().await.unwrap();
    client(Provider::Openai, &fake).probe().await.unwrap();
    let paths: Vec<String> = fake.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, vec!["/api/tags", "/v1/models"]);
    fake.shutdown().await;
}

#[tokio::test]
async fn auth_header_only_when_a_key_is_given() {
    let fake = FakeLlm::start().await.unwrap();
    let keyed = LlmClient::new(
        config(Provider::Openai, &fake.base_url(), 10),
        Some("sk-test-123".into()),
    )
    .unwrap();
    keyed.chat(&[ChatMessage::user("q")]).await.unwrap();
    keyed.probe().await.unwrap();
    client(Provider::Openai, &fake)
        .chat(&[ChatMessage::user("q")])
        .await
        .unwrap();
    let auths: Vec<Option<String>> = fake
        .requests()
        .into_iter()
        .map(|r| r.authorization)
        .collect();
    assert_eq!(
        auths,
        vec![
            Some("Bearer sk-test-123".to_string()),
            Some("Bearer sk-test-123".to_string()),
            None
        ]
    );
    fake.shutdown().await;
}

#[tokio::test]
async fn http_error_statuses() {
    let fake = FakeLlm::start().await.unwrap();
    for p in BOTH {
        for (code, body) in [(500u16, "boom"), (429, "{\"error\":\"rate limited\"}")] {
            fake.push(Script::failing(Failure::Status(code, body.into())));
            let err = match client(p, &fake)
                .chat_stream(&[ChatMessage::user("q")])
                .await
            {
                Err(e) => e,
                Ok(_) => panic!("expected an error"),
            };
            assert_eq!(
                err,
                LlmError::HttpStatus {
                    status: code,
                    body: body.into()
                }
            );
            fake.push(Script::failing(Failure::Status(code, body.into())));
            let err = client(p, &fake)
                .chat(&[ChatMessage::user("q")])
                .await
                .unwrap_err();
            assert!(matches!(err, LlmError::HttpStatus { status, .. } if status == code));
        }
    }
    fake.shutdown().await;
}

#[tokio::test]
async fn long_error_bodies_are_truncated() {
    let fake = FakeLlm::start().await.unwrap();
    fake.push(Script::failing(Failure::Status(503, "x".repeat(5000))));
    let err = client(Provider::Openai, &fake)
        .chat(&[ChatMessage::user("q")])
        .await
        .unwrap_err();
    match err {
        LlmError::HttpStatus { status, body } => {
            assert_eq!(status, 503);
            assert!(body.chars().count() < 600);
        }
        other => panic!("unexpected {other:?}"),
    }
    fake.shutdown().await;
}

#[tokio::test]
async fn malformed_and_closed_streams() {
    let fake = FakeLlm::start().await.unwrap();
    for p in BOTH {
        for f in [Failure::MalformedMidStream, Failure::CloseMidStream] {
            fake.push(Script::chunks(vec!["one ", "two"]).with_failure(f.clone()));
            let (tokens, err) = collect(&client(p, &fake), &[ChatMessage::user("q")])
                .await
                .unwrap();
            assert_eq!(tokens, vec!["one ", "two"], "{p:?} {f:?}");
            assert!(
                matches!(err, Some(LlmError::MalformedStream(_))),
                "{p:?} {f:?}: {err:?}"
            );
            // Non-streaming: garbage / truncated JSON.
            fake.push(Script::failing(f.clone()));
            let err = client(p, &fake)
                .chat(&[ChatMessage::user("q")])
                .await
                .unwrap_err();
            assert!(matches!(err, LlmError::MalformedStream(_)), "{p:?} {f:?}");
        }
    }
    fake.shutdown().await;
}

#[tokio::test]
async fn hang_times_out_within_budget() {
    let fake = FakeLlm::start().await.unwrap();
    for p in BOTH {
        let c = LlmClient::new(config(p, &fake.base_url(), 1), None).unwrap();
        fake.push(Script::failing(Failure::Hang));
        let t0 = Instant::now();
        let err = match c.chat_stream(&[ChatMessage::user("q")]).await {
            Err(e) => e,
            Ok(_) => panic!("expected timeout"),
        };
        let took = t0.elapsed();
        assert_eq!(
            err,
            LlmError::Timeout {
                after: Duration::from_secs(1)
            }
        );
        assert!(
            took >= Duration::from_millis(950) && took < Duration::from_secs(30),
            "{took:?}"
        );

        fake.push(Script::failing(Failure::Hang));
        let t0 = Instant::now();
        let err = c.chat(&[ChatMessage::user("q")]).await.unwrap_err();
        assert!(matches!(err, LlmError::Timeout { .. }));
        assert!(t0.elapsed() < Duration::from_secs(30)); // hang guard
    }
    fake.shutdown().await;
}

#[tokio::test]
async fn a_stalled_stream_times_out_after_its_idle_bound() {
    let fake = FakeLlm::start().await.unwrap();
    for p in BOTH {
        let mut cfg = config(p, &fake.base_url(), 10);
        cfg.stream_idle_secs = 1;
        let c = LlmClient::new(cfg, None).unwrap();
        fake.push(
            Script::chunks(vec!["a", "b", "c"]).with_chunk_delay(Duration::from_millis(1500)),
        );
        let t0 = Instant::now();
        let (tokens, err) = collect(&c, &[ChatMessage::user("q")]).await.unwrap();
        let took = t0.elapsed();
        assert_eq!(
            err,
            Some(LlmError::Timeout {
                after: Duration::from_secs(1)
            }),
            "{p:?}"
        );
        assert!(!tokens.is_empty() && tokens.len() < 3, "{tokens:?}");
        assert!(took < Duration::from_secs(30), "{took:?}");
    }
    fake.shutdown().await;
}

/// A reply the user is already reading is not cut for its length: `timeout_secs` bounds the
/// first token, the gaps after it `stream_idle_secs`.
#[tokio::test]
async fn a_started_stream_longer_than_the_timeout_is_read_to_its_end() {
    let fake = FakeLlm::start().await.unwrap();
    for p in BOTH {
        let c = LlmClient::new(config(p, &fake.base_url(), 1), None).unwrap();
        fake.push(
            Script::chunks(vec!["a", "b", "c", "d", "e", "f"])
                .with_delay(Duration::from_millis(600))
                .with_chunk_delay(Duration::from_millis(300)),
        );
        let (tokens, err) = collect(&c, &[ChatMessage::user("q")]).await.unwrap();
        assert_eq!(err, None, "{p:?}");
        assert_eq!(tokens.concat(), "abcdef");
    }
    fake.shutdown().await;
}

#[tokio::test]
async fn a_slow_first_token_times_out() {
    let fake = FakeLlm::start().await.unwrap();
    let c = LlmClient::new(config(Provider::Ollama, &fake.base_url(), 1), None).unwrap();
    fake.push(Script::chunks(vec!["a", "b"]).with_delay(Duration::from_millis(1500)));
    let err = c.chat_stream(&[ChatMessage::user("q")]).await.err();
    assert!(matches!(err, Some(LlmError::Timeout { .. })), "{err:?}");
    fake.shutdown().await;
}

/// A background call waits behind replies by design: `timeout_secs` does not bound it,
/// `background_timeout_secs` does.
#[tokio::test]
async fn a_background_call_has_its_own_bound() {
    let fake = FakeLlm::start().await.unwrap();
    let mut cfg = config(Provider::Openai, &fake.base_url(), 1);
    cfg.background_timeout_secs = 3;
    let c = LlmClient::new(cfg, None).unwrap();
    fake.push(Script::reply("late but fine").with_delay(Duration::from_millis(1500)));
    let answer = c
        .complete(&[ChatMessage::user("q")], Call::background())
        .await;
    assert_eq!(answer.as_deref(), Ok("late but fine"));
    fake.push(Script::failing(Failure::Hang));
    let err = c
        .complete(&[ChatMessage::user("q")], Call::background())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        LlmError::Timeout {
            after: Duration::from_secs(3)
        }
    );
    fake.shutdown().await;
}

#[tokio::test]
async fn per_model_queues_come_before_the_global_queue() {
    let fake = FakeLlm::start().await.unwrap();
    fake.push(Script::reply("global-1"));
    fake.push(Script::reply("global-2"));
    fake.push_for_model("special", Script::reply("special-1"));
    let mut special_cfg = config(Provider::Openai, &fake.base_url(), 10);
    special_cfg.model = "special".into();
    let special = LlmClient::new(special_cfg, None).unwrap();
    let plain = client(Provider::Openai, &fake);
    let q = [ChatMessage::user("q")];
    assert_eq!(plain.chat(&q).await.unwrap(), "global-1");
    assert_eq!(special.chat(&q).await.unwrap(), "special-1");
    // Its own queue is empty: falls through to the global queue, then the default.
    assert_eq!(special.chat(&q).await.unwrap(), "global-2");
    assert_eq!(plain.chat(&q).await.unwrap(), "ok");
    fake.set_default(Script::reply("new default"));
    assert_eq!(plain.chat(&q).await.unwrap(), "new default");
    assert_eq!(fake.request_count(), 5);
    fake.shutdown().await;
}

#[tokio::test]
async fn responder_computes_replies_when_queues_are_empty() {
    let fake = FakeLlm::start().await.unwrap();
    let probe = fake.clone();
    fake.set_responder(move |req| {
        // The responder may look at the fake itself (called without the lock held).
        let n = probe.request_count();
        Script::reply(&format!(
            "echo:{} #{n}",
            req.last_user_text().unwrap_or_default()
        ))
    });
    fake.push(Script::reply("queued"));
    let c = client(Provider::Ollama, &fake);
    assert_eq!(c.chat(&[ChatMessage::user("a")]).await.unwrap(), "queued");
    assert_eq!(
        c.chat(&[ChatMessage::user("b")]).await.unwrap(),
        "echo:b #2"
    );
    let (tokens, _) = collect(&c, &[ChatMessage::user("c")]).await.unwrap();
    assert_eq!(tokens.concat(), "echo:c #3");
    fake.shutdown().await;
}

// ---------- chunk boundaries over real HTTP ----------

/// Serves one HTTP request with `pieces` written separately (flushed, 15 ms apart), then closes.
async fn raw_server(content_type: &'static str, pieces: Vec<Vec<u8>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        // Read the whole request (headers + Content-Length body) so closing does not reset.
        let mut buf = Vec::new();
        let mut tmp = [0u8; 4096];
        loop {
            let n = sock.read(&mut tmp).await.unwrap();
            buf.extend_from_slice(&tmp[..n]);
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map(|v| v.trim().parse().unwrap())
                    .unwrap_or(0);
                if buf.len() >= end + 4 + len {
                    break;
                }
            }
            if n == 0 {
                break;
            }
        }
        let head =
            format!("HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\nconnection: close\r\n\r\n");
        sock.write_all(head.as_bytes()).await.unwrap();
        for p in pieces {
            sock.write_all(&p).await.unwrap();
            sock.flush().await.unwrap();
            tokio::time::sleep(Duration::from_millis(15)).await;
        }
        let _ = sock.shutdown().await;
    });
    format!("http://{addr}")
}

/// Cuts `body` at the given byte offsets.
fn cut(body: &[u8], at: &[usize]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut prev = 0;
    for &i in at {
        out.push(body[prev..i].to_vec());
        prev = i;
    }
    out.push(body[prev..].to_vec());
    out
}

#[tokio::test]
async fn ndjson_lines_split_across_http_chunks() {
    let body = "{\"message\":{\"role\":\"assistant\",\"content\":\"日本\"},\"done\":false}\n\
                {\"message\":{\"role\":\"assistant\",\"content\":\"語 ok\"},\"done\":false}\n\
                {\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true}\n";
    let bytes = body.as_bytes();
    // Cut inside a JSON line, inside a multi-byte character, and right before a newline.
    let first_nl = body.find('\n').unwrap();
    let pieces = cut(bytes, &[10, 45, 46, first_nl, first_nl + 30]);
    let base = raw_server("application/x-ndjson", pieces).await;
    let c = LlmClient::new(config(Provider::Ollama, &base, 5), None).unwrap();
    let (tokens, err) = collect(&c, &[ChatMessage::user("q")]).await.unwrap();
    assert!(err.is_none(), "{err:?}");
    assert_eq!(tokens, vec!["日本", "語 ok"]);
}

#[tokio::test]
async fn sse_events_split_across_http_chunks() {
    let body = ": ping\r\n\r\n\
                data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\r\n\r\n\
                data: {\"choices\":[{\"delta\":\n\
                data: {\"content\":\"lo 世界\"}}]}\n\n\
                data: [DONE]\r\n\r\n";
    let bytes = body.as_bytes();
    let crlf = body.find("\r\n\r\ndata").unwrap();
    // Cut between \r and \n, inside an event, and inside a multi-byte character.
    let cjk = body.find('世').unwrap();
    let pieces = cut(
        bytes,
        &[3, crlf + 1, crlf + 20, cjk + 1, cjk + 2, bytes.len() - 3],
    );
    let base = raw_server("text/event-stream", pieces).await;
    let c = LlmClient::new(config(Provider::Openai, &base, 5), None).unwrap();
    let (tokens, err) = collect(&c, &[ChatMessage::user("q")]).await.unwrap();
    assert!(err.is_none(), "{err:?}");
    assert_eq!(tokens, vec!["Hel", "lo 世界"]);
}

// ---------- images and the audit log ----------

/// Captured JSON log lines (the test runs on a current-thread runtime, so a thread-local
/// default subscriber sees everything).
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Capture {
    type Writer = Capture;
    fn make_writer(&'a self) -> Capture {
        self.clone()
    }
}

impl Capture {
    fn install(&self) -> tracing::subscriber::DefaultGuard {
        let sub = tracing_subscriber::fmt()
            .json()
            .with_writer(self.clone())
            .with_max_level(tracing::Level::DEBUG)
            .finish();
        tracing::subscriber::set_default(sub)
    }

    /// `fields` of every line with this message.
    fn lines(&self, message: &str) -> Vec<Value> {
        let raw = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        raw.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v["fields"]["message"] == message)
            .map(|v| {
                assert_eq!(v["target"], "provider.http");
                v["fields"].clone()
            })
            .collect()
    }

    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

/// A unique temp file holding a tiny PNG (magic bytes + padding).
fn temp_png(name: &str) -> (PathBuf, Vec<u8>) {
    let dir = std::env::temp_dir().join(format!("ghost-llm-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // No extension: the type must come from the magic bytes.
    let path = dir.join(name);
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.extend_from_slice(&[0u8; 24]);
    std::fs::write(&path, &bytes).unwrap();
    (path, bytes)
}

#[tokio::test]
async fn image_from_file_is_inlined_and_audited() {
    let cap = Capture::default();
    let _guard = cap.install();
    let fake = FakeLlm::start().await.unwrap();
    let (path, bytes) = temp_png("inline-img");
    let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let data_uri = format!("data:image/png;base64,{b64}");
    for p in BOTH {
        let msg = ChatMessage::user("what is this").with_image(ImagePart::from_path(&path));
        client(p, &fake).chat(&[msg]).await.unwrap();
        let body = fake.requests().pop().unwrap().body;
        match p {
            Provider::Openai => {
                let content = &body["messages"][0]["content"];
                assert_eq!(content[0]["type"], "text");
                assert_eq!(content[0]["text"], "what is this");
                assert_eq!(content[1]["type"], "image_url");
                assert_eq!(content[1]["image_url"]["url"], data_uri.as_str());
            }
            Provider::Ollama => {
                assert_eq!(body["messages"][0]["content"], "what is this");
                assert_eq!(body["messages"][0]["images"][0], b64.as_str());
            }
        }
    }
    let audits = cap.lines("LLM image audit before request");
    assert_eq!(audits.len(), 2);
    for a in &audits {
        assert_eq!(a["source_path"], path.display().to_string());
        assert_eq!(a["url_type"], "data_uri");
        assert_eq!(a["image_url"], "data:image/png;base64,[omitted]");
        assert_eq!(a["image_url_length"], data_uri.len() as u64);
        assert_eq!(a["local_exists_before"], true);
        assert_eq!(a["local_size_before_bytes"], bytes.len() as u64);
        assert_eq!(a["included"], true);
        assert_eq!(a["drop_reason"], "");
    }
    // The payload itself never reaches the log.
    assert!(!cap.text().contains(&b64));
    let _ = std::fs::remove_file(&path);
    fake.shutdown().await;
}

#[tokio::test]
async fn given_urls_are_sent_as_is() {
    let cap = Capture::default();
    let _guard = cap.install();
    let fake = FakeLlm::start().await.unwrap();
    let msg = ChatMessage::user("two")
        .with_image(ImagePart::from_url("data:image/webp;base64,UklGRg=="))
        .with_image(ImagePart::from_url(
            "https://cdn.example/x.jpg?token=secret",
        ));
    client(Provider::Openai, &fake)
        .chat(std::slice::from_ref(&msg))
        .await
        .unwrap();
    let body = fake.requests().pop().unwrap().body;
    let content = &body["messages"][0]["content"];
    assert_eq!(
        content[1]["image_url"]["url"],
        "data:image/webp;base64,UklGRg=="
    );
    assert_eq!(
        content[2]["image_url"]["url"],
        "https://cdn.example/x.jpg?token=secret"
    );
    // Ollama: the data URI's payload is kept, the remote URL (no local copy) is dropped.
    client(Provider::Ollama, &fake).chat(&[msg]).await.unwrap();
    let body = fake.requests().pop().unwrap().body;
    assert_eq!(
        body["messages"][0]["images"],
        serde_json::json!(["UklGRg=="])
    );
    let audits = cap.lines("LLM image audit before request");
    assert_eq!(audits.len(), 4);
    assert_eq!(audits[1]["url_type"], "remote_url");
    assert_eq!(
        audits[1]["image_url"],
        "https://cdn.example/x.jpg?[omitted]"
    );
    assert_eq!(audits[1]["included"], true);
    assert_eq!(audits[3]["included"], false);
    assert_eq!(audits[3]["drop_reason"], "remote_url_unsupported_by_ollama");
    assert!(!cap.text().contains("token=secret"));
    fake.shutdown().await;
}

#[tokio::test]
async fn missing_image_file_is_dropped_not_fatal() {
    let cap = Capture::default();
    let _guard = cap.install();
    let fake = FakeLlm::start().await.unwrap();
    let missing = std::env::temp_dir().join("ghost-llm-definitely-missing.png");
    for p in BOTH {
        let msg = ChatMessage::user("see").with_image(ImagePart::from_path(&missing));
        assert_eq!(client(p, &fake).chat(&[msg]).await.unwrap(), "ok");
        let body = fake.requests().pop().unwrap().body;
        // No image left: plain string content, no `images`.
        assert_eq!(body["messages"][0]["content"], "see");
        assert!(body["messages"][0].get("images").is_none());
    }
    let audits = cap.lines("LLM image audit before request");
    assert_eq!(audits.len(), 2);
    for a in audits {
        assert_eq!(a["included"], false);
        assert_eq!(a["drop_reason"], "file_not_found");
        assert_eq!(a["local_exists_before"], false);
        assert_eq!(a["local_size_before_bytes"], 0);
        assert_eq!(a["image_url_length"], 0);
    }
    fake.shutdown().await;
}

#[tokio::test]
async fn timeout_writes_the_after_timeout_audit() {
    let cap = Capture::default();
    let _guard = cap.install();
    let fake = FakeLlm::start().await.unwrap();
    let (path, bytes) = temp_png("timeout-img.png");
    fake.push(Script::failing(Failure::Hang));
    let c = LlmClient::new(
        config(Provider::Openai, &fake.base_url(), 1),
        Some("sk-hidden".into()),
    )
    .unwrap();
    let msg = ChatMessage::user("slow").with_image(ImagePart::from_path(&path));
    let err = match c.chat_stream(&[msg]).await {
        Err(e) => e,
        Ok(_) => panic!("expected timeout"),
    };
    assert!(matches!(err, LlmError::Timeout { .. }));
    let after = cap.lines("LLM image audit after timeout");
    assert_eq!(after.len(), 1);
    assert_eq!(after[0]["source_path"], path.display().to_string());
    assert_eq!(after[0]["local_exists_after_timeout"], true);
    assert_eq!(
        after[0]["local_size_after_timeout_bytes"],
        bytes.len() as u64
    );
    // The API key is never logged, even at debug level.
    assert!(!cap.text().contains("sk-hidden"));
    let _ = std::fs::remove_file(&path);
    fake.shutdown().await;
}

/// Streams `client`'s reply to "hi"; the error it ended with, as text.
async fn streamed_error(client: &LlmClient) -> Option<LlmError> {
    collect(client, &[ChatMessage::user("hi")]).await.unwrap().1
}

#[tokio::test]
async fn a_reply_larger_than_the_limit_is_refused_with_a_clear_error() {
    let fake = FakeLlm::start().await.unwrap();
    // The default limit (8 MiB), passed in one piece and in many, streamed and not.
    let huge = "x".repeat(9 * 1024 * 1024);
    let pieces: Vec<&str> = huge
        .as_bytes()
        .chunks(64 * 1024)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let too_large = LlmError::ResponseTooLarge {
        limit: ghost_shared::llm::DEFAULT_MAX_RESPONSE_BYTES,
    };
    for p in BOTH {
        fake.push(Script::chunks(vec![&huge]));
        assert_eq!(
            streamed_error(&client(p, &fake)).await.as_ref(),
            Some(&too_large),
            "{p:?}"
        );
        fake.push(Script::chunks(pieces.clone()));
        assert_eq!(
            streamed_error(&client(p, &fake)).await.as_ref(),
            Some(&too_large),
            "{p:?}"
        );
        fake.push(Script::chunks(vec![&huge]));
        let whole = client(p, &fake).chat(&[ChatMessage::user("hi")]).await;
        assert_eq!(whole.as_ref().err(), Some(&too_large), "{p:?}");
    }
    let message = too_large.to_string();
    assert!(
        message.contains("larger than") && message.contains("max_response_bytes"),
        "{message}"
    );

    // A configured limit; a reply under it still arrives whole.
    for p in BOTH {
        let mut cfg = config(p, &fake.base_url(), 10);
        cfg.max_response_bytes = 4096;
        let small = LlmClient::new(cfg, None).unwrap();
        fake.push(Script::reply(&"word ".repeat(2000)));
        assert_eq!(
            streamed_error(&small).await,
            Some(LlmError::ResponseTooLarge { limit: 4096 }),
            "{p:?}"
        );
        fake.push(Script::reply("short and sweet"));
        assert_eq!(
            small.chat(&[ChatMessage::user("hi")]).await.unwrap(),
            "short and sweet"
        );
    }
}
