//! Cost of a mood read over a full 500-episode window, of one projection update, and of the
//! streaming trailer filter over a typical reply.

// `criterion_group!` expands to an undocumented `pub fn`.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use ghost_mood::mood::{mood_at, Episode, MoodConstants, MoodWindow};
use ghost_shared::affect::{
    AffectLabel, ResponsePolicy, TrailerStreamFilter, DEFAULT_TRAILER_MARKER,
};

const NOW: f64 = 1_760_000_000.0;

/// A deterministic, varied window: all labels, many saliences, missing confidences, policies.
fn episodes(n: usize) -> Vec<Episode> {
    (0..n)
        .map(|i| {
            let f = i as f64;
            Episode {
                at: NOW - (n - i) as f64 * 97.0,
                label: [
                    AffectLabel::Joy,
                    AffectLabel::Sadness,
                    AffectLabel::Anger,
                    AffectLabel::Fear,
                    AffectLabel::Neutral,
                ][i % 5],
                intensity: (f * 0.37).fract(),
                salience: (f * 0.61).fract(),
                confidence: (i % 4 != 0).then_some((f * 0.23).fract()),
                policy: (i % 10 == 0).then_some(ResponsePolicy {
                    cooperation: 0.4,
                    refusal_bias: 0.5,
                    refusal_allowed: i % 20 == 0,
                }),
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let constants = MoodConstants::default();
    let eps = episodes(500);
    let projection = MoodWindow::restore(constants, eps.clone()).expect("valid");

    c.bench_function("projection_state_at_500", |b| {
        b.iter(|| black_box(&projection).state_at(black_box(NOW)))
    });

    c.bench_function("mood_at_pure_500", |b| {
        b.iter(|| mood_at(black_box(&eps), black_box(NOW), &constants))
    });

    // What the service does per read: the stored rows (oldest first) into a window.
    let stored: Vec<Episode> = projection.episodes().cloned().collect();
    c.bench_function("window_restore_500", |b| {
        b.iter(|| MoodWindow::restore(constants, black_box(stored.iter().cloned())))
    });

    let reply = format!(
        "{}\n{DEFAULT_TRAILER_MARKER}\n{{\"reflection_text\":\"x\",\"partner_affect_label\":\"joy\"}}",
        "今日はいい天気だね。散歩でもしようか？ ".repeat(8)
    );
    let chunks: Vec<String> = reply
        .chars()
        .collect::<Vec<_>>()
        .chunks(3)
        .map(|c| c.iter().collect())
        .collect();
    c.bench_function("trailer_stream_filter_reply", |b| {
        b.iter(|| {
            let mut f = TrailerStreamFilter::default();
            let mut n = 0;
            for chunk in &chunks {
                n += f.push(black_box(chunk)).len();
            }
            (n, f.finish())
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
