//! Model scripts and settings that a test and a harness run share, so the one-host test
//! and the cluster run check the same thing.

use crate::fake_llm::{FakeLlm, Script};
use crate::testing::WORKER_MODEL;

/// The overrides that point every character of the repository's cast at `base_url`.
pub fn cast_model_overrides(base_url: &str, ids: &[&str]) -> Vec<(String, String)> {
    let mut vars = Vec::new();
    for id in ids {
        let key = id.to_uppercase();
        vars.push((format!("GHOST_LLM__{key}__PROVIDER"), "ollama".to_owned()));
        vars.push((format!("GHOST_LLM__{key}__BASE_URL"), base_url.to_owned()));
        vars.push((
            format!("GHOST_LLM__{key}__MODEL"),
            format!("{}-model", id.to_lowercase()),
        ));
    }
    vars
}

/// `/local` then a code paste: per-conversation order. The rule dictionary and the fake
/// classifier send [`local_then_code::CODE_PASTE`] to CODE, so a router that missed the
/// `/local` before it would call the cloud.
pub mod local_then_code {
    use super::*;

    /// A code paste the rule dictionary routes to CODE.
    pub const CODE_PASTE: &str = "```rust\nfn main() {\n    println!(\"hi\");\n}\n```";

    /// The worker's affect reflection.
    const NEUTRAL_AFFECT: &str = r#"{"reflection_text":"fine","partner_affect_label":"neutral","partner_affect_intensity":0.1,"salience":0.1,"confidence":0.9,"topic_tags":[]}"#;

    /// The configuration: the routing dictionary and the coder on the fake cloud.
    pub fn config(cloud_base: &str) -> [(&'static str, &str); 4] {
        [
            ("GHOST_ROUTING__RULES_FILE", "config/routing.yaml"),
            ("GHOST_LLM__CODER__BASE_URL", cloud_base),
            ("GHOST_LLM__CODER__MODEL", "cloud-model"),
            ("GHOST_CLOUD_API_KEY", "cloud-test-key"),
        ]
    }

    /// The model's answers: the classifier and Kuro say CODE, the worker reflects, the
    /// persona says "ok"; the cloud answers too (it must not be asked).
    pub fn script(llm: &FakeLlm, cloud: &FakeLlm) {
        llm.set_responder(|r| {
            let system = r.system_text().unwrap_or_default();
            let text = if system.contains("decide whether you answer this")
                || system.contains("You route one user message")
            {
                r#"{"route":"CODE","confidence":0.99,"reason":"code","evidence":["```rust"]}"#
            } else if r.model.as_deref() == Some(WORKER_MODEL) {
                NEUTRAL_AFFECT
            } else {
                "ok"
            };
            Script::chunks(vec![text])
        });
        cloud.set_responder(|_| Script::reply("cloud answer"));
    }
}
