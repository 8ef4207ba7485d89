//! Vector recall on the embedded embedding model (issue 35 item 5): with the real
//! all-MiniLM-L6-v2 served as `/v1/embeddings` by the model service's own routes, recall
//! finds "I love green tea" (said in an older session, under newer lines) from "What do I
//! like to drink?", which shares no word with it, where the trigram and recency sources alone
//! do not.

use std::time::Duration;

use ghost_model::server::{embedding_router, EmbeddingState};
use ghost_model::Embedder;
use ghost_persona::recall::collect::{collect, Scope};
use ghost_shared::llm::{LlmClient, LlmRoleConfig};
use ghost_shared::memory::retrieval::{retrieval_plan, RetrievalLimits};
use ghost_testkit::testing::{embedding_model_dir, TestEnv};
use serde_json::json;

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

/// Utterances of an older session, in order (positions from 1).
async fn plant_old_session(pool: &sqlx::PgPool, lines: &[String]) {
    sqlx::query(
        "INSERT INTO assistant_text (session_id, position, event_id, role, speaker, source, text, recorded_at) \
         SELECT 'old', n, gen_random_uuid(), 'user', 'user', 'http', t, now() \
         FROM unnest($1::text[]) WITH ORDINALITY AS u(t, n)",
    )
    .bind(lines)
    .execute(pool)
    .await
    .unwrap();
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
        source_timeout: Duration::from_secs(60),
        similarity_threshold: 0.1,
        embedding,
    };
    collect(pool, scope, &plan).await
}

#[tokio::test]
async fn the_embedded_model_recalls_what_shares_no_word_with_the_question() {
    let base_url = embedding_server().await;
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
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
    plant_old_session(store.pool(), &lines).await;
    let question = "What do I like to drink?";

    // Trigram and recency alone: the memory is not among the candidates.
    let off = candidates(store.pool(), question, None).await;
    assert!(!off.counts.contains_key("vector"), "{:?}", off.counts);
    assert!(
        off.candidates.iter().all(|c| !c.text.contains("green tea")),
        "{:?}",
        off.candidates
    );

    // With the embedded model: the vector source finds it.
    let cfg: LlmRoleConfig = serde_json::from_value(json!({
        "provider": "openai",
        "base_url": base_url,
        "model": NAME,
        "timeout_secs": 60,
    }))
    .unwrap();
    let model = LlmClient::new(cfg, None).unwrap();
    let on = candidates(store.pool(), question, Some(&model)).await;
    assert!(on.skipped.is_empty(), "{:?}", on.skipped);
    let vector: Vec<_> = on
        .candidates
        .iter()
        .filter(|c| c.source == "vector")
        .collect();
    assert!(
        vector.iter().any(|c| c.text.contains("green tea")),
        "{:?}",
        on.candidates
    );
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM memory_embeddings WHERE model = $1")
        .bind(NAME)
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(stored, lines.len() as i64);
    env.cleanup().await;
}
