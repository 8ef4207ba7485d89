//! Throughput of the fake LLM server driven by the real client (zero-delay scripts):
//! the load command relies on it sustaining well over 1000 requests/s.

use criterion::{criterion_main, Criterion, Throughput};
use futures::StreamExt;
use ghost_shared::llm::{ChatMessage, LlmClient, LlmRoleConfig, Provider};
use ghost_testkit::fake_llm::{FakeLlm, Script};

/// Requests per measured iteration in the concurrent benchmark.
const BATCH: u64 = 64;

fn client(provider: Provider, fake: &FakeLlm) -> Option<LlmClient> {
    LlmClient::new(
        LlmRoleConfig {
            provider,
            base_url: fake.base_url(),
            model: "bench".into(),
            options: Default::default(),
            timeout_secs: 10,
            stream_idle_secs: 30,
            background_timeout_secs: 900,
            max_response_bytes: ghost_shared::llm::DEFAULT_MAX_RESPONSE_BYTES,
            background_concurrency: 1,
        },
        None,
    )
    .ok()
}

async fn one_stream(c: &LlmClient) -> usize {
    let mut n = 0;
    if let Ok(mut s) = c.chat_stream(&[ChatMessage::user("hello")]).await {
        while let Some(Ok(tok)) = s.next().await {
            n += tok.len();
        }
    }
    n
}

fn bench(crit: &mut Criterion) {
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    else {
        return;
    };
    let Ok(fake) = rt.block_on(FakeLlm::start()) else {
        return;
    };
    fake.set_default(Script::reply(
        "a short streamed reply of about ten words in total here",
    ));
    let mut group = crit.benchmark_group("fake_llm");
    for provider in [Provider::Ollama, Provider::Openai] {
        let Some(c) = client(provider, &fake) else {
            return;
        };
        group.throughput(Throughput::Elements(1));
        group.bench_function(format!("{}_stream_sequential", provider.as_str()), |b| {
            b.iter(|| rt.block_on(one_stream(&c)))
        });
        group.throughput(Throughput::Elements(BATCH));
        group.bench_function(
            format!("{}_stream_concurrent_x{BATCH}", provider.as_str()),
            |b| {
                b.iter(|| {
                    rt.block_on(async {
                        let futs = (0..BATCH).map(|_| one_stream(&c));
                        futures::future::join_all(futs).await
                    })
                })
            },
        );
    }
    group.finish();
    rt.block_on(fake.shutdown());
}

/// Criterion's generated group function carries no doc comment.
#[allow(missing_docs)]
mod group {
    criterion::criterion_group!(benches, super::bench);
}
criterion_main!(group::benches);
