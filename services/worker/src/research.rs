//! RESEARCH with real sources (seed 002): the request is searched through the configured
//! SearXNG-JSON endpoint (`web.search_url`), the hits' pages are fetched within the `web:`
//! limits, and the worker model gets them as its only sources. The URLs given travel on
//! `WorkerCompleted.sources`: a reply may cite those and nothing else.

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

/// The request part of a task (`[request]` up to the next section).
fn request_of(task: &str) -> &str {
    let body = task
        .split_once("[request]\n")
        .map_or(task, |(_, rest)| rest);
    body.split("\n\n[").next().unwrap_or(body).trim()
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
    let mut section = String::from(
        "\n\n[sources found for this request — use only these; cite them by URL in \"sources\"]\n",
    );
    let mut urls = Vec::new();
    for (i, hit) in results.hits.iter().enumerate() {
        section.push_str(&format!("[{}] {} — {}\n", i + 1, hit.title.trim(), hit.url));
        if !hit.snippet.trim().is_empty() {
            section.push_str(&format!("snippet: {}\n", hit.snippet.trim()));
        }
        match web.fetch(&hit.url).await {
            Ok(page) => {
                let excerpt: String = page.text.chars().take(PAGE_EXCERPT_CHARS).collect();
                section.push_str(&format!("page text: {excerpt}\n"));
            }
            Err(e) => warn!(url = %hit.url, error = %e, "source page not read; snippet only"),
        }
        urls.push(hit.url.clone());
    }
    if urls.is_empty() {
        section.push_str("(the search found nothing)\n");
    }
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
    fn the_query_is_the_request_section() {
        let task = "[request]\nRust 1.95 の新機能\n\n[recent turns]\nuser: hi\n";
        assert_eq!(request_of(task), "Rust 1.95 の新機能");
        assert_eq!(request_of("plain"), "plain");
    }
}
