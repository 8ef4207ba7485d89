//! Property tests: no routing function panics on arbitrary input, and the pipeline's
//! invariants hold for any text (CODE never reaches the cloud while `local_only` is set).

use std::sync::LazyLock;

use ghost_router::routing::{
    first_stage, parse_classifier_output, parse_worker_output, FirstOutcome, RoutingConfig,
    SessionRouting,
};
use ghost_shared::masking::mask_secrets;
use proptest::prelude::*;

/// Loaded once: compiling the dictionary per generated case would dominate the run time.
static CONFIG: LazyLock<RoutingConfig> = LazyLock::new(load_config);

fn load_config() -> RoutingConfig {
    let root = env!("CARGO_MANIFEST_DIR");
    let yaml = [
        format!("{root}/../../config/routing.yaml"),
        format!("{root}/routing.yaml"),
    ]
    .iter()
    .find_map(|p| std::fs::read_to_string(p).ok())
    .expect("routing.yaml is present");
    RoutingConfig::from_yaml(&yaml).expect("routing.yaml loads")
}

/// Text mixing command words, code punctuation, Japanese and secrets-like shapes.
fn messy_text() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "/code",
        "/local",
        "/cloud",
        "/plan",
        " ",
        "\n",
        "```",
        "rust",
        "fn main(){}",
        "直して",
        "sudo",
        "systemctl",
        "a,1",
        "集計",
        "https://x.y/z",
        "設計",
        "sk-",
        "@",
        "090-",
        "1234",
        "　",
        "é",
        "🙂",
        "{",
        "}",
        "\"",
        ":",
        "0.9",
    ]);
    prop::collection::vec(
        prop_oneof![pieces.prop_map(str::to_owned), any::<String>()],
        0..12,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #[test]
    fn pipeline_never_panics_and_local_only_never_uses_the_cloud(text in messy_text(), local in any::<bool>(), reply in messy_text()) {
        let config = &*CONFIG;
        let session = SessionRouting { local_only: local, last_primary_route: None };
        let stage = first_stage(&text, &session, &config.dictionary);
        let decision = match &stage.outcome {
            FirstOutcome::FlagOnly(_) => None,
            _ => Some(stage.with_classifier_reply(&reply, &config.dictionary, &config.gates)),
        };
        if let Some(d) = decision {
            prop_assert!(!(stage.local_only && d.uses_cloud()));
        }
    }

    #[test]
    fn parsers_and_masking_never_panic(text in messy_text()) {
        let _ = parse_classifier_output(&text);
        let _ = parse_worker_output(&text);
        let masked = mask_secrets(&text);
        // Masking is idempotent: masked text has nothing left to mask.
        let twice = mask_secrets(&masked).into_owned();
        prop_assert_eq!(twice.as_str(), masked.as_ref());
    }
}
