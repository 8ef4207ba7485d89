//! Benchmarks of masking (`config/masking.yaml`): it runs on every text sent to the cloud and
//! on every log line, so the clean-text path matters most.

use std::hint::black_box;

use criterion::{criterion_main, Criterion};
use ghost_shared::masking::{Masker, BUILTIN_RULES};

fn bench(c: &mut Criterion) {
    let masker = match Masker::from_yaml(BUILTIN_RULES) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            return;
        }
    };
    let chat = "最近ちょっと疲れてるんだよね。週末は何しようかな、どこか出かけたい気もする。";
    let chat_2k = chat.repeat(20);
    let log_line = "2026-11-22T23:40:00.123Z  INFO ghost_router::flow: route decided route=CODE source=rule session=line-U1234 loop_index=0";
    let every_category = "鍵 sk-proj-AbCdEfGhIjKlMnOpQrStUv123456 と AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY、\
        DB postgres://app:Sup3rS3cret@db/app、password=hunter2hunter2、my password is hunter3、\
        パスワードは「ひみつ」、カード 4111 1111 1111 1111、マイナンバー 1234 5678 9018、\
        電話 090-1234-5678、ren@example.com、東京都千代田区千代田1-1";
    let code = format!(
        "```python\nimport os\n{}\nAPI_KEY = \"sk-proj-AbCdEfGhIjKlMnOpQrStUv123456\"\n```",
        "def add(a, b):\n    return a + b  # adds two numbers\n".repeat(100)
    );

    c.bench_function("mask/chat_clean_short", |b| {
        b.iter(|| masker.mask(black_box(chat)))
    });
    c.bench_function("mask/chat_clean_2kB", |b| {
        b.iter(|| masker.mask(black_box(&chat_2k)))
    });
    c.bench_function("mask/log_line", |b| {
        b.iter(|| masker.mask(black_box(log_line)))
    });
    c.bench_function("mask/every_category", |b| {
        b.iter(|| masker.mask(black_box(every_category)))
    });
    c.bench_function("mask/code_5kB_one_key", |b| {
        b.iter(|| masker.mask(black_box(&code)))
    });
    c.bench_function("mask/compile_rules", |b| {
        b.iter(|| Masker::from_yaml(black_box(BUILTIN_RULES)).is_ok())
    });
}

/// The generated group function has no doc comment of its own.
#[allow(missing_docs)]
mod harness {
    criterion::criterion_group!(benches, super::bench);
}
criterion_main!(harness::benches);
