//! Time per `resolve_next_speaker` call on realistic replies (target: ≤ 2 µs).

use std::hint::black_box;

use criterion::{criterion_main, Criterion};
use ghost_persona::next_speaker::{resolve_next_speaker, NominationPolicy, SpeakerRegistry};

/// A ~300-character Japanese reply ending in a tag, as a character would write it.
fn reply(tag: &str) -> String {
    let body =
        "なるほど、それは面白い視点だね。私も昨日の散歩のときに似たようなことを考えていたんだ。\
        川沿いの桜がもう散り始めていて、季節が移ろうのは本当に早いなって。ところで、\
        さっきの話に出てきた古い喫茶店、今度みんなで行ってみない？ 静かな場所だから、\
        ゆっくり話すのにちょうどいいと思うの。コーヒーも美味しいらしいし、\
        ケーキも手作りなんだって。週末の午後なんてどうかな。\
        天気が良ければ、帰りに公園を少し歩いてもいいよね。\
        そうそう、クラリスは前に紅茶の淹れ方にこだわってたでしょ？ お店の人と話が合いそう。\
        ノクスは静かな席が好きだから、窓際を予約しておくね。楽しみ！ ";
    format!("{body}{tag}")
}

fn bench(c: &mut Criterion) {
    let registry = SpeakerRegistry::seed_example();
    let policy = NominationPolicy::default();
    let tagged = reply("[Next: CLARIS]");
    let fuzzy = reply("[Next: CLARISS]");
    let display = reply("[Next: ルミナさん]");
    let untagged = reply("");
    println!("reply length: {} chars", tagged.chars().count());

    c.bench_function("resolve/tag_internal_id", |b| {
        b.iter(|| resolve_next_speaker(black_box(&tagged), "LUMINA", &registry, &policy))
    });
    c.bench_function("resolve/tag_display_name_honorific", |b| {
        b.iter(|| resolve_next_speaker(black_box(&display), "NOX", &registry, &policy))
    });
    c.bench_function("resolve/fuzzy", |b| {
        b.iter(|| resolve_next_speaker(black_box(&fuzzy), "NOX", &registry, &policy))
    });
    c.bench_function("resolve/no_tag_round_robin", |b| {
        b.iter(|| resolve_next_speaker(black_box(&untagged), "LUMINA", &registry, &policy))
    });
}

/// The bench group, written out instead of `criterion_group!` so it carries a doc comment.
fn benches() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
}

criterion_main!(benches);
