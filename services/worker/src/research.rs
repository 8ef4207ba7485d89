//! RESEARCH with real sources (seed 002): the request is searched through the configured
//! SearXNG-JSON endpoint (`web.search_url`), the hits' pages are fetched within the `web:`
//! limits, and the worker model gets them as its only sources. The URLs given travel on
//! `WorkerCompleted.sources`: a reply may cite those and nothing else.

use ghost_shared::llm::Fence;
use ghost_shared::web::{WebClient, WebError};
use tracing::{info, warn};

/// Characters of one page's text given to the worker.
const PAGE_EXCERPT_CHARS: usize = 2_000;

/// The sources found for a task, ready for the worker's prompt.
pub struct Sources {
    /// The task with the sources appended.
    pub task: String,
    /// The source URLs, in the engine's order.
    pub urls: Vec<String>,
}

/// Why research could not start.
#[derive(Debug)]
pub enum ResearchError {
    /// No search endpoint is configured.
    Unavailable,
    /// The search failed (the message says why).
    SearchFailed(WebError),
}

/// The request of a task (its REQUEST block; a task without one is all request).
fn request_of(task: &str) -> &str {
    Fence::data_of(task, "REQUEST").unwrap_or(task).trim()
}

/// Searches for the task's request and reads the hits' pages.
pub async fn gather(web: &WebClient, task: &str) -> Result<Sources, ResearchError> {
    if web.settings().search_url.is_none() {
        return Err(ResearchError::Unavailable);
    }
    let query: String = request_of(task).chars().take(300).collect();
    let results = web
        .search(&query)
        .await
        .map_err(ResearchError::SearchFailed)?;
    // What the search engine and the pages say is data: one block behind this task's own
    // boundary (a page cannot close it and speak as the task).
    let mut sources = String::new();
    let mut urls = Vec::new();
    for (i, hit) in results.hits.iter().enumerate() {
        sources.push_str(&format!("[{}] {} — {}\n", i + 1, hit.title.trim(), hit.url));
        if !hit.snippet.trim().is_empty() {
            sources.push_str(&format!("snippet: {}\n", hit.snippet.trim()));
        }
        match web.fetch(&hit.url).await {
            Ok(page) => {
                let excerpt: String = page.text.chars().take(PAGE_EXCERPT_CHARS).collect();
                sources.push_str(&format!("page text: {excerpt}\n"));
            }
            Err(e) => warn!(url = %hit.url, error = %e, "source page not read; snippet only"),
        }
        urls.push(hit.url.clone());
    }
    if urls.is_empty() {
        sources.push_str("(the search found nothing)\n");
    }
    let section = format!(
        "\n\n[sources found for this request — use only these; cite them by URL in \"sources\"]\n{}\n",
        Fence::new().block("SOURCES", sources.trim_end())
    );
    info!(sources = urls.len(), "research sources gathered");
    Ok(Sources {
        task: format!("{}{section}", task.trim_end()),
        urls,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_is_the_request_block() {
        let f = Fence::new();
        let task = format!(
            "[request]\n{}\n\n[the conversation]\n{}",
            f.block("REQUEST", "Rust 1.95 の新機能"),
            f.block("CONVERSATION", "user: hi")
        );
        assert_eq!(request_of(&task), "Rust 1.95 の新機能");
        assert_eq!(request_of("plain"), "plain");
    }
}
