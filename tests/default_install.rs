//! What a default install talks to (seed 002): two resident local models, a conversation
//! model for the persona and a reasoning model for the worker, reached through Ollama's
//! OpenAI-compatible endpoint so an image goes to the model as an `image_url` part (the
//! 2026-02-20 update). The test takes the roles' wire and model names from
//! `config/ghost.yaml` as shipped, only the address is the fake's.

mod support;

use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_shared::config::Config;
use ghost_testkit::fake_llm::Script;
use ghost_testkit::testing::{eventually, repo_config_dir};
use serde_json::json;
use support::platforms::ChannelApp;

/// The repository's configuration with nothing overridden.
fn shipped() -> Config {
    Config::load(&repo_config_dir(), Vec::<(String, String)>::new()).expect("config/ghost.yaml")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_install_keeps_two_models_and_sends_images_as_image_url() {
    let shipped = shipped();
    let (persona, worker) = (&shipped.ghost.llm["persona"], &shipped.ghost.llm["worker"]);
    assert_ne!(
        persona.model, worker.model,
        "seed 002: at least two resident models (conversation and reasoning)"
    );
    let (persona, worker) = (persona.clone(), worker.clone());
    let c = ChannelApp::spawn_adjusted(&ServiceName::ALL, &[], |config| {
        for (role, shipped) in [("persona", &persona), ("worker", &worker)] {
            let cfg = config.ghost.llm.get_mut(role).expect("role");
            cfg.provider = shipped.provider;
            cfg.model = shipped.model.clone();
        }
    })
    .await;
    // A reply without an affect trailer: the worker reflects on it (its own model).
    c.app
        .llm
        .set_default_for_model(&persona.model, Script::reply("a nice picture"));
    c.line
        .set_content("img-d", b"\x89PNG\r\n\x1a\nimage".to_vec(), "image/png");
    let webhook = json!({"destination":"Ubot","events":[{
        "type":"message","mode":"active","timestamp":1_762_000_000_000_i64,
        "webhookEventId":"ev-default","deliveryContext":{"isRedelivery":false},
        "source":{"type":"user","userId":"U9"},"replyToken":"rt-default",
        "message":{"id":"img-d","type":"image","contentProvider":{"type":"line"}}
    }]});
    assert_eq!(c.post_line_signed(&webhook.to_string()).await, 200);
    assert_eq!(c.line_deliveries(1).await[0].texts, ["a nice picture"]);

    // The persona's request: the shipped model, an image_url part.
    let requests = c.app.llm.requests();
    let reply = requests
        .iter()
        .find(|r| r.body["model"] == persona.model.as_str())
        .expect("a request to the persona's model");
    assert!(
        reply.path.ends_with("/v1/chat/completions"),
        "{}",
        reply.path
    );
    let parts = reply.body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_array())
        .cloned()
        .expect("content parts");
    assert!(
        parts.iter().any(|p| p["type"] == "image_url"
            && p["image_url"]["url"]
                .as_str()
                .is_some_and(|u| u.starts_with("data:image/png;base64,"))),
        "{parts:?}"
    );
    // The worker answers on the other model.
    eventually(Duration::from_secs(20), "the worker's call", || async {
        c.app
            .llm
            .requests()
            .iter()
            .find(|r| r.body["model"] == worker.model.as_str())
            .map(|r| r.path.clone())
    })
    .await;
    c.cleanup().await;
}
