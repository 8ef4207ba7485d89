//! Hot paths of a webhook request: signature check, parse + classify, reply splitting.

// `criterion_group!` generates an undocumented `benches` function.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use ghost_gateway::{line, slack};

const LINE_SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";
const LINE_BODY: &str = r#"{"destination":"U00000000000000000000000000000000","events":[{"type":"message","mode":"active","timestamp":1762000000000,"webhookEventId":"01JCTESTEVENT0000000000000","deliveryContext":{"isRedelivery":false},"source":{"type":"group","groupId":"C1","userId":"U11111111111111111111111111111111"},"replyToken":"rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr","message":{"id":"444573844083572737","type":"text","quoteToken":"q","text":"@Kuro こんにちは、今日の予定を教えて","mention":{"mentionees":[{"index":0,"length":5,"type":"user","isSelf":true}]}}}]}"#;

const SLACK_SECRET: &[u8] = b"8f742231b10e8888abcd99yyyzzz85a5";
const SLACK_TS: &str = "1531420618";
const SLACK_BODY: &str = r#"{"type":"event_callback","team_id":"T1","event_id":"Ev1","event_time":1531420618,"event":{"type":"app_mention","user":"U2","text":"<@UBOT> 調べて &lt;これ&gt;","ts":"1531420618.000100","channel":"C1"}}"#;

fn bench(c: &mut Criterion) {
    let line_sig = line::signature::sign(LINE_SECRET, LINE_BODY.as_bytes()).unwrap_or_default();
    c.bench_function("line_verify_signature", |b| {
        b.iter(|| {
            line::verify_signature(
                black_box(LINE_SECRET),
                black_box(LINE_BODY.as_bytes()),
                Some(black_box(&line_sig)),
            )
        })
    });

    let cfg = line::LineConfig::default();
    c.bench_function("line_parse_and_classify", |b| {
        b.iter(|| {
            let body = line::WebhookBody::from_slice(black_box(LINE_BODY.as_bytes()));
            body.map(|b| {
                b.events
                    .iter()
                    .map(|e| line::classify(e, &cfg))
                    .collect::<Vec<_>>()
            })
        })
    });

    let slack_sig =
        slack::signature::sign(SLACK_SECRET, SLACK_TS, SLACK_BODY.as_bytes()).unwrap_or_default();
    c.bench_function("slack_verify_signature", |b| {
        b.iter(|| {
            slack::verify_signature(
                black_box(SLACK_SECRET),
                black_box(SLACK_BODY.as_bytes()),
                Some(SLACK_TS),
                Some(black_box(&slack_sig)),
                1_531_420_618,
                slack::DEFAULT_WINDOW_SECS,
            )
        })
    });

    c.bench_function("slack_parse_and_classify", |b| {
        b.iter(|| {
            slack::Envelope::from_slice(black_box(SLACK_BODY.as_bytes()))
                .map(|e| slack::classify(&e, None, Some("UBOT")))
        })
    });

    let long_reply = "今日はいい天気ですね。散歩に行きましょう。\n".repeat(1200); // ~26k units
    c.bench_function("line_split_text_26k", |b| {
        b.iter(|| {
            line::split_text(
                black_box(&long_reply),
                line::MAX_TEXT_UNITS,
                line::MAX_MESSAGES_PER_CALL,
            )
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
