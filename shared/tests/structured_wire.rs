//! Structured output on the wire, against the fake model recording its requests: every
//! contract's schema in each provider's own field (Ollama `format`, OpenAI
//! `response_format` with `json_schema`), its token budget, the call's urgency header, the
//! lazy affect trailer, and an endpoint that refuses structured output (prompt-only from
//! then on, said once).

use std::io::Write;
use std::sync::{Arc, Mutex};

use ghost_shared::contracts::{self, write_plan::PlanIds, Contract};
use ghost_shared::llm::{
    refusal, Call, ChatMessage, GenerationOptions, LlmClient, LlmRoleConfig, Provider,
};
use ghost_testkit::fake_llm::{Failure, FakeLlm, Script};
use serde_json::json;

fn client(provider: Provider, fake: &FakeLlm, role: &str) -> LlmClient {
    let cfg = LlmRoleConfig {
        provider,
        base_url: fake.base_url(),
        model: "test-model".into(),
        options: GenerationOptions::default(),
        timeout_secs: 10,
        stream_idle_secs: 30,
        background_timeout_secs: 900,
        max_response_bytes: ghost_shared::llm::DEFAULT_MAX_RESPONSE_BYTES,
        background_concurrency: 1,
    };
    LlmClient::new(cfg, None).unwrap().with_role(role)
}

/// Every contract Ghost sends, built as its call sites build them.
fn every_contract() -> Vec<Contract> {
    let ids = PlanIds {
        current: "00000000-0000-0000-0000-000000000001".into(),
        events: vec!["00000000-0000-0000-0000-000000000002".into()],
        states: vec![],
    };
    vec![
        contracts::route_decision::classifier(),
        contracts::route_decision::delegation(),
        contracts::worker_output::contract(&["https://example.org/a"]),
        contracts::proposal::contract(),
        contracts::selection::contract(&["m1", "m2"], 12),
        contracts::affect::reflection(),
        contracts::write_plan::contract(&ids),
        contracts::decision::contract(&["web_access"]),
    ]
}

#[tokio::test]
async fn each_contract_goes_in_the_providers_own_wire_with_its_budget_and_urgency() {
    let fake = FakeLlm::start().await.unwrap();
    fake.set_default(Script::reply("{}"));
    let msgs = [ChatMessage::user("hi")];
    for provider in [Provider::Ollama, Provider::Openai] {
        let llm = client(provider, &fake, "structured_wire_test");
        for (i, c) in every_contract().iter().enumerate() {
            let call = if i % 2 == 0 {
                Call::interactive().shaped(c)
            } else {
                Call::background().shaped(c)
            };
            llm.complete(&msgs, call).await.unwrap();
            let req = fake.requests().pop().unwrap();
            match provider {
                Provider::Ollama => {
                    assert_eq!(req.body["format"], c.schema, "{}", c.name);
                    assert_eq!(req.body["options"]["num_predict"], c.max_tokens);
                    assert!(req.body.get("response_format").is_none());
                }
                Provider::Openai => {
                    assert_eq!(
                        req.body["response_format"],
                        json!({"type": "json_schema", "json_schema": {
                            "name": c.name, "schema": c.schema, "strict": true}}),
                        "{}",
                        c.name
                    );
                    assert_eq!(req.body["max_tokens"], c.max_tokens);
                    assert!(req.body.get("format").is_none());
                }
            }
            let want = if i % 2 == 0 {
                "interactive"
            } else {
                "background"
            };
            assert_eq!(req.priority.as_deref(), Some(want), "{}", c.name);
        }
    }
    // Every schema is one a strict endpoint takes: every object closed, every key required.
    for c in every_contract() {
        assert_closed(&c.schema, c.name);
    }
    fake.shutdown().await;
}

fn assert_closed(schema: &serde_json::Value, name: &str) {
    if let Some(props) = schema.get("properties").and_then(|p| p.as_object()) {
        assert_eq!(schema["additionalProperties"], false, "{name}: {schema}");
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r.as_str())
            .collect();
        for key in props.keys() {
            assert!(required.contains(&key.as_str()), "{name}: {key} optional");
        }
    }
    match schema {
        serde_json::Value::Object(o) => o.values().for_each(|v| assert_closed(v, name)),
        serde_json::Value::Array(a) => a.iter().for_each(|v| assert_closed(v, name)),
        _ => {}
    }
}

#[tokio::test]
async fn the_reply_streams_free_with_the_affect_trailer_shaped_on_the_openai_wire_only() {
    let fake = FakeLlm::start().await.unwrap();
    fake.set_default(Script::chunks(vec!["Hel", "lo"]));
    let trailer = contracts::affect::trailer();
    let msgs = [ChatMessage::user("hi")];
    for provider in [Provider::Ollama, Provider::Openai] {
        let llm = client(provider, &fake, "structured_trailer_test");
        let call = Call::interactive().with_trailer("<<<MARK>>>", &trailer);
        let mut stream = llm.stream(&msgs, call).await.unwrap();
        while futures::StreamExt::next(&mut stream).await.is_some() {}
        let req = fake.requests().pop().unwrap();
        assert!(req.body.get("response_format").is_none() && req.body.get("format").is_none());
        match provider {
            Provider::Openai => assert_eq!(
                req.body["trailer_format"],
                json!({"trigger": "<<<MARK>>>", "schema": trailer.schema})
            ),
            Provider::Ollama => assert!(req.body.get("trailer_format").is_none()),
        }
    }
    fake.shutdown().await;
}

/// Log lines written while the guard lives (this test's thread only).
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn an_endpoint_that_refuses_the_schema_gets_the_prompt_only_request_and_one_log_line() {
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let fake = FakeLlm::start().await.unwrap();
    // A server that knows nothing of response_format refuses the field.
    fake.set_responder(|req| {
        if req.body.get("response_format").is_some() {
            Script::failing(Failure::Status(
                400,
                "unrecognized request argument: response_format".into(),
            ))
        } else {
            Script::reply(r#"{"route":"CHAT","confidence":0.9}"#)
        }
    });
    let role = "structured_refusal_test";
    let llm = client(Provider::Openai, &fake, role);
    let contract = contracts::route_decision::classifier();
    let msgs = [ChatMessage::user("hi")];
    for _ in 0..3 {
        let answer = llm
            .complete(&msgs, Call::interactive().shaped(&contract))
            .await
            .unwrap();
        assert!(answer.contains("CHAT"));
    }
    let requests = fake.requests();
    let shaped = requests
        .iter()
        .filter(|r| r.body.get("response_format").is_some())
        .count();
    assert_eq!(requests.len(), 4, "one refused, then three prompt-only");
    assert_eq!(shaped, 1, "the refusal is remembered for the role");
    assert!(refusal::of(role).unwrap().contains("response_format"));
    let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
    assert_eq!(
        text.matches("refuses structured output").count(),
        1,
        "said once: {text}"
    );
    // A failure that is not a refusal (the server is down) is not noted as one.
    let other = "structured_refusal_5xx_test";
    fake.set_responder(|_| Script::failing(Failure::Status(500, "boom".into())));
    let llm = client(Provider::Openai, &fake, other);
    assert!(llm
        .complete(&msgs, Call::interactive().shaped(&contract))
        .await
        .is_err());
    assert_eq!(refusal::of(other), None);
    fake.shutdown().await;
}
