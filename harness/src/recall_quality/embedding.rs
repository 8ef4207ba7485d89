//! The embedding model recall's vector source asks: all-MiniLM-L6-v2 served as
//! `/v1/embeddings` by the model service's own routes (what `ghost run model` serves), in
//! this process on an ephemeral port, or an existing server's URL.

use anyhow::{anyhow, Context, Result};
use serde_json::json;

use ghost_model::server::{embedding_router, EmbeddingState};
use ghost_model::Embedder;
use ghost_shared::llm::{LlmClient, LlmRoleConfig};

/// The model id the in-process server answers to.
pub const NAME: &str = "all-minilm-l6-v2";

/// Serves the model of `dir` on an ephemeral port; its base URL (`.../v1`).
pub async fn serve(dir: std::path::PathBuf) -> Result<String> {
    let embedder = tokio::task::spawn_blocking(move || Embedder::load(&dir, 1, 8))
        .await?
        .map_err(|e| anyhow!("the embedding model: {e}"))?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/v1", listener.local_addr()?);
    let app = embedding_router(EmbeddingState {
        embedder,
        name: NAME.into(),
        max_inputs: 128,
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

/// A client of the model `name` at `base_url` (OpenAI wire), as `llm.embedding` configures.
pub fn client(base_url: &str, name: &str) -> Result<LlmClient> {
    let cfg: LlmRoleConfig = serde_json::from_value(json!({
        "provider": "openai",
        "base_url": base_url,
        "model": name,
        "timeout_secs": 120,
    }))?;
    LlmClient::new(cfg, None).context("the embedding client")
}
