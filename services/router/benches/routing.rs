//! Benchmarks of the hot routing paths: first stage (rules), classifier validation, masking.

use std::hint::black_box;

use criterion::{criterion_main, Criterion};
use ghost_router::routing::{first_stage, parse_classifier_output, RuleDictionary, SessionRouting};
use ghost_shared::masking::mask_secrets;

fn shipped_dictionary() -> Option<RuleDictionary> {
    let yaml = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/routing.yaml"))
        .or_else(|_| {
            std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../config/routing.yaml"
            ))
        })
        .ok()?;
    RuleDictionary::from_yaml(&yaml).ok()
}

fn bench(c: &mut Criterion) {
    let Some(dict) = shipped_dictionary() else {
        eprintln!("routing.yaml not found; nothing to benchmark");
        return;
    };
    let session = SessionRouting::default();
    let no_hit = "最近ちょっと疲れてるんだよね。週末は何しようかな、どこか出かけたい気もする。";
    let code_hit = "```rust\nfn main() { let v: Vec<i32> = vec![]; v[0]; }\n```\nこれ直して";
    let plan_hit = "新サービスの設計とタスク分解を手伝って";
    let long_no_hit = no_hit.repeat(40);

    c.bench_function("first_stage/no_rule_short", |b| {
        b.iter(|| first_stage(black_box(no_hit), &session, &dict))
    });
    c.bench_function("first_stage/no_rule_2kB", |b| {
        b.iter(|| first_stage(black_box(&long_no_hit), &session, &dict))
    });
    c.bench_function("first_stage/code_fence", |b| {
        b.iter(|| first_stage(black_box(code_hit), &session, &dict))
    });
    c.bench_function("first_stage/plan_last_rule", |b| {
        b.iter(|| first_stage(black_box(plan_hit), &session, &dict))
    });
    c.bench_function("first_stage/command", |b| {
        b.iter(|| first_stage(black_box("/code fizzbuzzをRustで書いて"), &session, &dict))
    });
    c.bench_function("classifier/parse_valid", |b| {
        b.iter(|| {
            parse_classifier_output(black_box(
                r#"{"route":"PLAN","confidence":0.75,"reason":"段取り","evidence":["来週"]}"#,
            ))
        })
    });
    c.bench_function("mask/clean_text", |b| {
        b.iter(|| mask_secrets(black_box(no_hit)))
    });
    let secrets = "連絡は ren@example.com か 090-1234-5678、鍵は sk-abcdefghijklmnop12345、DB は postgres://u:p@db/x";
    c.bench_function("mask/with_secrets", |b| {
        b.iter(|| mask_secrets(black_box(secrets)))
    });
}

/// The generated group function has no doc comment of its own.
#[allow(missing_docs)]
mod harness {
    criterion::criterion_group!(benches, super::bench);
}
criterion_main!(harness::benches);
