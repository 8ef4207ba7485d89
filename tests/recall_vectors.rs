//! Vector recall on the embedded embedding model (issues 35 and 45): with the real
//! all-MiniLM-L6-v2 served as `/v1/embeddings` by the model service's own routes, every line
//! is embedded when it is said, and recall finds "I love green tea" (said in an older
//! session, under newer lines) from "What do I like to drink?", which shares no word with
//! it, where the trigram and recency sources alone do not.

mod support;

use std::time::Duration;

use ghost_model::server::{embedding_router, EmbeddingState};
use ghost_model::Embedder;
use ghost_persona::recall::collect::{collect, Scope};
use ghost_shared::llm::{LlmClient, LlmRoleConfig};
use ghost_shared::memory::retrieval::{retrieval_plan, RetrievalLimits};
use ghost_testkit::fake_llm::Script;
use ghost_testkit::testing::{embedding_model_dir, eventually};
use serde_json::json;
use support::TestApp;

const NAME: &str = "all-minilm-l6-v2";

/// The embedding routes on an ephemeral port; their base URL.
async fn embedding_server() -> String {
    let embedder = tokio::task::spawn_blocking(|| Embedder::load(&embedding_model_dir(), 1, 8))
        .await
        .unwrap()
        .expect("embedding model");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let app = embedding_router(EmbeddingState {
        embedder,
        name: NAME.into(),
        max_inputs: 128,
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// Recall's candidates for `message`, with the vector source when `embedding` is given.
async fn candidates(
    pool: &sqlx::PgPool,
    message: &str,
    embedding: Option<&LlmClient>,
) -> ghost_persona::recall::collect::Collected {
    let limits = RetrievalLimits {
        max_candidates: 80,
        max_selected: 12,
    };
    let plan = retrieval_plan(message, limits, Default::default());
    let scope = Scope {
        persona: "kuro",
        person: ghost_shared::memory::DEFAULT_PERSON,
        session_id: "now",
        history: Default::default(),
        source_timeout: Duration::from_secs(60),
        similarity_threshold: 0.1,
        embedding,
    };
    collect(pool, scope, &plan).await
}

fn embedding_role(base_url: &str) -> LlmClient {
    let cfg: LlmRoleConfig = serde_json::from_value(json!({
        "provider": "openai",
        "base_url": base_url,
        "model": NAME,
        "timeout_secs": 60,
    }))
    .unwrap();
    LlmClient::new(cfg, None).unwrap()
}

/// Every line said is embedded when it is said, by the embedding projection, with recall
/// off (no recall ever ran to embed a backlog); a question days later in another
/// conversation then finds by meaning what shares no word with it, where the trigram and
/// recency sources alone do not.
#[tokio::test]
async fn every_line_is_embedded_when_said_and_found_later_by_meaning() {
    let base_url = embedding_server().await;
    let app = TestApp::spawn(&[
        ("GHOST_LLM__EMBEDDING__PROVIDER", "openai"),
        ("GHOST_LLM__EMBEDDING__BASE_URL", base_url.as_str()),
        ("GHOST_LLM__EMBEDDING__MODEL", NAME),
        ("GHOST_LLM__EMBEDDING__TIMEOUT_SECS", "60"),
        ("GHOST_MEMORY__RECALL_ENABLED", "false"),
    ])
    .await;
    // The memory first, then newer lines enough that recency alone does not reach it.
    let filler = [
        "the bus was late again this morning",
        "I finished the quarterly report",
        "my sister visits next weekend",
        "the printer on the third floor is broken",
        "we should repaint the fence",
    ];
    let lines: Vec<String> = std::iter::once("I love green tea".to_owned())
        .chain((0..25).map(|i| format!("{} ({i})", filler[i % filler.len()])))
        .collect();
    for line in &lines {
        app.reply(Script::reply("I see."));
        let events = app.chat("old", line).await;
        assert_eq!(events.last().unwrap().event, "done");
    }
    // Each user line and each reply gets its vector, with no recall asking for it.
    let said = lines.len() as i64 * 2;
    let pool = app.store.pool().clone();
    eventually(Duration::from_secs(120), "every line embedded", || {
        let pool = pool.clone();
        async move {
            let stored: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM memory_embeddings WHERE model = $1 AND item_id LIKE 'event:%'",
            )
            .bind(NAME)
            .fetch_one(&pool)
            .await
            .ok()?;
            (stored == said).then_some(())
        }
    })
    .await;
    let tea: String =
        sqlx::query_scalar("SELECT text FROM memory_embeddings WHERE text LIKE '%green tea%'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(tea, "(the user said) I love green tea");

    let question = "What do I like to drink?";
    // Trigram and recency alone: the memory is not among the candidates.
    let off = candidates(&pool, question, None).await;
    assert!(!off.counts.contains_key("vector"), "{:?}", off.counts);
    assert!(
        off.candidates.iter().all(|c| !c.text.contains("green tea")),
        "{:?}",
        off.candidates
    );
    // With the embedding model: the vector source finds it, embedding only the question.
    let model = embedding_role(&base_url);
    let on = candidates(&pool, question, Some(&model)).await;
    assert!(on.skipped.is_empty(), "{:?}", on.skipped);
    assert!(
        on.candidates
            .iter()
            .any(|c| c.source == "vector" && c.text.contains("green tea")),
        "{:?}",
        on.candidates
    );
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM memory_embeddings")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(stored, said, "a recall stores no vector of its own");
    app.cleanup().await;
}
