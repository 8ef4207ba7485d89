//! Structured output on the real SmolLM2 file: `response_format` (json_object, json_schema)
//! and Ghost's lazy `trailer_format`, over HTTP, streaming and not; and the 400s of bad
//! formats and priorities, which serve nothing.

mod support;

use ghost_shared::contracts::confirmation::{self, ConfirmationAnswer};
use ghost_shared::contracts::{
    affect, decision, proposal, route_decision, selection, worker_output, write_plan,
};
use ghost_shared::llm::Fence;
use serde_json::{json, Value};
use support::{server, NAME, ONE_AT_A_TIME};

/// The affect trailer's marker, as the persona writes it.
const TRIGGER: &str = "<<<COCORO_GHOST_PARTNER_AFFECT_JSON_v1>>>";

fn url() -> String {
    format!("{}/v1/chat/completions", server(512).1)
}

fn verdict_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "verdict": {"enum": ["safe", "unsafe", "unsure"]},
            "reason": {"type": "string", "maxLength": 80}
        },
        "required": ["verdict", "reason"],
        "additionalProperties": false
    })
}

fn affect_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "emotion": {"enum": ["joy", "sadness", "anger", "fear", "neutral"]},
            "intensity": {"type": "integer", "minimum": 0, "maximum": 10}
        },
        "required": ["emotion", "intensity"],
        "additionalProperties": false
    })
}

fn body(messages: Value, extra: Value) -> Value {
    let mut body =
        json!({"model": NAME, "temperature": 0, "max_tokens": 120, "messages": messages});
    for (k, v) in extra.as_object().expect("object") {
        body[k] = v.clone();
    }
    body
}

fn classify() -> Value {
    json!([
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Is it safe to swim in a lake during a thunderstorm? Explain."}
    ])
}

async fn post(body: &Value, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut request = reqwest::Client::new().post(url()).json(body);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON body"))
}

/// Leaves the interactive sequence's cache holding another prompt, so that the next request
/// decodes its prompt the same way (same cached prefix, same batches) each time.
async fn reset() {
    let other = body(
        json!([{"role": "user", "content": "Name a colour."}]),
        json!({"max_tokens": 1}),
    );
    let (status, reply) = post(&other, &[]).await;
    assert_eq!(status, 200, "{reply}");
}

async fn content(body: &Value) -> String {
    reset().await;
    let (status, reply) = post(body, &[]).await;
    assert_eq!(status, 200, "{reply}");
    reply["choices"][0]["message"]["content"]
        .as_str()
        .expect("content")
        .to_owned()
}

/// The text of a streamed reply (its `data:` chunks' deltas).
async fn streamed(body: &Value) -> String {
    reset().await;
    let mut body = body.clone();
    body["stream"] = json!(true);
    let response = reqwest::Client::new()
        .post(url())
        .json(&body)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200);
    let text = response.text().await.expect("body");
    let data: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    assert_eq!(data.last(), Some(&"[DONE]"), "{text}");
    data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str::<Value>(d).expect("chunk"))
        .filter_map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

fn valid(schema: &Value, text: &str) -> bool {
    serde_json::from_str::<Value>(text.trim()).is_ok_and(|v| jsonschema::is_valid(schema, &v))
}

#[tokio::test]
async fn a_json_schema_turns_prose_into_valid_json_streaming_and_not() {
    let _one = ONE_AT_A_TIME.lock().await;
    let free = content(&body(classify(), json!({}))).await;
    assert!(
        !valid(&verdict_schema(), &free),
        "without a format the model writes prose: {free:?}"
    );
    let format = json!({"response_format": {"type": "json_schema", "json_schema": {
        "name": "verdict", "schema": verdict_schema(), "strict": true}}});
    let whole = content(&body(classify(), format.clone())).await;
    println!("free: {free:?}\nconstrained: {whole:?}");
    assert!(valid(&verdict_schema(), &whole), "{whole:?}");
    let stream = streamed(&body(classify(), format)).await;
    assert!(valid(&verdict_schema(), &stream), "{stream:?}");
    assert_eq!(whole, stream, "greedy: the same reply either way");
}

#[tokio::test]
async fn json_object_gives_a_json_object() {
    let _one = ONE_AT_A_TIME.lock().await;
    // No schema bounds its strings: with a prompt that does not ask for JSON, the model
    // may write one key until the token budget ends. Asked for JSON, it closes its object.
    let messages = json!([
        {"role": "system", "content": "Answer with a JSON object with the keys \"answer\" and \"reason\"."},
        {"role": "user", "content": "Is it safe to swim in a lake during a thunderstorm?"}
    ]);
    let format = json!({"response_format": {"type": "json_object"}, "max_tokens": 200});
    let text = content(&body(messages.clone(), format.clone())).await;
    let value: Value = serde_json::from_str(text.trim()).expect(&text);
    assert!(value.is_object(), "{text:?}");
    let text = streamed(&body(messages, format)).await;
    let value: Value = serde_json::from_str(text.trim()).expect(&text);
    assert!(value.is_object(), "{text:?}");
}

/// A conversation that shows the model the trailer twice, then asks for a third reply.
fn affect_conversation() -> Value {
    let system = format!(
        "You are a friendly companion. Reply in one or two sentences, then write the marker \
         {TRIGGER} on its own line followed by a JSON object with your emotion and its intensity."
    );
    json!([
        {"role": "system", "content": system},
        {"role": "user", "content": "I passed my exam!"},
        {"role": "assistant", "content": format!(
            "Congratulations, that is wonderful news! You worked hard for it.\n{TRIGGER}\n{{\"emotion\": \"joy\", \"intensity\": 8}}")},
        {"role": "user", "content": "My cat is sick."},
        {"role": "assistant", "content": format!(
            "I am sorry to hear that. I hope your cat gets better soon.\n{TRIGGER}\n{{\"emotion\": \"sadness\", \"intensity\": 6}}")},
        {"role": "user", "content": "I finally finished painting my room."}
    ])
}

/// (text before the trigger, text from it on) of a reply that has one.
fn split_at_trigger(text: &str) -> (&str, &str) {
    let at = text
        .find(TRIGGER)
        .unwrap_or_else(|| panic!("no trigger in {text:?}"));
    text.split_at(at)
}

#[tokio::test]
async fn a_trailer_leaves_the_prose_free_and_constrains_what_follows_its_trigger() {
    let _one = ONE_AT_A_TIME.lock().await;
    let trailer = json!({"trailer_format": {"trigger": TRIGGER, "schema": affect_schema()}});
    // Greedy text depends on how much of the prompt came from the cache (batched and
    // incremental decodes round differently): the first call puts the whole prompt in a
    // slot, so the two compared calls both decode only its last token.
    content(&body(affect_conversation(), json!({}))).await;
    let free = content(&body(affect_conversation(), json!({}))).await;
    let constrained = content(&body(affect_conversation(), trailer.clone())).await;
    println!("free: {free:?}\nconstrained: {constrained:?}");
    let (prose, tail) = split_at_trigger(&constrained);
    // Before the trigger, the grammar waits: the text is the model's own, token for token.
    assert!(
        free.starts_with(prose) && free[prose.len()..].starts_with(TRIGGER),
        "free: {free:?}\nconstrained: {constrained:?}"
    );
    assert!(!prose.trim().is_empty() && serde_json::from_str::<Value>(prose).is_err());
    assert!(
        prose.chars().filter(|c| c.is_alphabetic()).count() > 10,
        "{prose:?}"
    );
    // From it on, the grammar holds: the marker, then JSON valid against the schema.
    let json = &tail[TRIGGER.len()..];
    assert!(valid(&affect_schema(), json), "{tail:?}");
    let stream = streamed(&body(affect_conversation(), trailer)).await;
    assert_eq!(stream, constrained);
}

#[tokio::test]
async fn bad_formats_and_priorities_get_400_and_nothing_is_served() {
    // Other tests compare greedy texts: no request of this one may reorder their cache.
    let _one = ONE_AT_A_TIME.lock().await;
    let engine = &server(512).0;
    let messages = json!([{"role": "user", "content": "hi"}]);
    let trailer = json!({"trigger": TRIGGER, "schema": affect_schema()});
    let cases = [
        (
            json!({"response_format": {"type": "yaml"}}),
            None,
            "invalid_response_format",
        ),
        (
            json!({"response_format": "json"}),
            None,
            "invalid_response_format",
        ),
        (
            json!({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}),
            None,
            "invalid_response_format",
        ),
        (
            // llama.cpp's converter refuses an unresolved reference.
            json!({"response_format": {"type": "json_schema", "json_schema": {
                "name": "x", "schema": {"$ref": "#/$defs/nowhere"}}}}),
            None,
            "invalid_response_format",
        ),
        (
            json!({"response_format": {"type": "json_object"}, "trailer_format": trailer}),
            None,
            "invalid_response_format",
        ),
        (
            json!({"trailer_format": {"trigger": "", "schema": affect_schema()}}),
            None,
            "invalid_response_format",
        ),
        (json!({}), Some("urgent"), "invalid_priority"),
        (json!({}), Some(""), "invalid_priority"),
    ];
    for (i, (extra, priority, code)) in cases.into_iter().enumerate() {
        let label = format!("bad-{i}");
        let mut headers = vec![("x-request-id", label.as_str())];
        if let Some(p) = priority {
            headers.push(("x-ghost-priority", p));
        }
        let (status, reply) = post(&body(messages.clone(), extra.clone()), &headers).await;
        assert_eq!(
            (status, reply["error"]["code"].as_str()),
            (400, Some(code)),
            "{extra} {reply}"
        );
        assert!(!reply["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .is_empty());
        assert!(
            engine.journal().iter().all(|s| s.label != label),
            "{label} was served"
        );
    }
    // The priority header's good values are taken.
    let (status, reply) = post(
        &body(messages, json!({"max_tokens": 2})),
        &[
            ("x-ghost-priority", "Background"),
            ("x-request-id", "good-bg"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    assert!(engine
        .journal()
        .iter()
        .any(|s| s.label == "good-bg" && s.priority == ghost_model::engine::Priority::Background));
}

#[tokio::test]
async fn every_ghost_contract_is_taken_as_a_grammar() {
    // Other tests compare greedy texts: no request of this one may reorder their cache.
    let _one = ONE_AT_A_TIME.lock().await;
    let ids = write_plan::PlanIds {
        current: "e1".into(),
        events: vec!["e2".into()],
        states: vec!["s1".into()],
    };
    let contracts = [
        affect::reflection(),
        confirmation::contract(),
        decision::contract(&["speak", "wait"]),
        proposal::contract(),
        route_decision::classifier(),
        route_decision::delegation(),
        selection::contract(&["m1", "m2"], 2),
        worker_output::contract(&["src1"]),
        write_plan::contract(&ids),
    ];
    let messages = json!([{"role": "user", "content": "hi"}]);
    for c in contracts {
        let format = json!({"max_tokens": 4, "response_format": {"type": "json_schema",
            "json_schema": {"name": c.name, "schema": c.schema, "strict": true}}});
        let (status, reply) = post(&body(messages.clone(), format), &[]).await;
        assert_eq!(status, 200, "{}: {reply}", c.name);
    }
    let trailer = json!({"max_tokens": 4, "trailer_format": {
        "trigger": TRIGGER, "schema": affect::trailer().schema}});
    let (status, reply) = post(&body(messages, trailer), &[]).await;
    assert_eq!(status, 200, "{reply}");
}

/// The worker's check whether a message answers paused work, as the worker asks it (its
/// prompt, fenced data, the contract's budget): SmolLM2's answer is always a valid
/// judgement, whichever way it goes.
#[tokio::test]
async fn the_confirmation_check_holds_its_shape_on_the_real_model() {
    let _one = ONE_AT_A_TIME.lock().await;
    let system = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../prompts/confirmation.md"
    ))
    .expect("prompts/confirmation.md");
    let c = confirmation::contract();
    for message in [
        "Use port 8080, please.",
        "By the way, what is the weather today?",
    ] {
        let fence = Fence::new();
        let user = format!(
            "{}\n{}\n{}",
            fence.block("QUESTIONS", "Which port should the app use?"),
            fence.block("WORK_SO_FAR", "deployment plan drafted, port unknown"),
            fence.block("MESSAGE", message)
        );
        let request = body(
            json!([{"role": "system", "content": system}, {"role": "user", "content": user}]),
            json!({"max_tokens": c.max_tokens, "response_format": {"type": "json_schema",
                "json_schema": {"name": c.name, "schema": c.schema, "strict": true}}}),
        );
        let answer = content(&request).await;
        assert!(
            ConfirmationAnswer::parse(&answer).is_ok(),
            "{message}: {answer:?}"
        );
    }
}
