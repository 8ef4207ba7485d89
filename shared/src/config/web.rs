//! `web:`: the search endpoint and the limits of every web request Ghost makes on its own
//! (autonomy's `web_access`, routing's RESEARCH).

use serde::Deserialize;

use super::ConfigError;

/// `web:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebSettings {
    /// A search endpoint answering the SearXNG JSON API (`GET <url>?q=…&format=json`),
    /// e.g. `http://127.0.0.1:8888/search`; none = searching is off (fetching still works).
    pub search_url: Option<String>,
    /// Whole-request time limit (connect, headers and body), in milliseconds.
    pub timeout_ms: u64,
    /// A page body stops being read after this many bytes (the text is marked truncated).
    pub max_page_bytes: usize,
    /// A search answer larger than this is refused.
    pub max_search_bytes: usize,
    /// Longest extracted text kept from a page, in characters.
    pub max_text_chars: usize,
    /// Most search results kept.
    pub max_results: usize,
    /// Redirects followed per request.
    pub max_redirects: usize,
    /// `User-Agent` sent with every request.
    pub user_agent: String,
}

impl Default for WebSettings {
    fn default() -> Self {
        Self {
            search_url: None,
            timeout_ms: 10_000,
            max_page_bytes: 1 << 20,
            max_search_bytes: 1 << 20,
            max_text_chars: 20_000,
            max_results: 5,
            max_redirects: 5,
            user_agent: "ghost/0.1 (+self-hosted persona)".into(),
        }
    }
}

impl WebSettings {
    /// Range checks serde cannot express.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(url) = &self.search_url {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ConfigError::invalid(
                    "web.search_url",
                    "must be a URL starting with http:// or https://",
                ));
            }
        }
        for (key, value) in [
            ("web.timeout_ms", self.timeout_ms),
            ("web.max_page_bytes", self.max_page_bytes as u64),
            ("web.max_search_bytes", self.max_search_bytes as u64),
            ("web.max_text_chars", self.max_text_chars as u64),
        ] {
            if value == 0 {
                return Err(ConfigError::invalid(key, "must be greater than 0"));
            }
        }
        if !(1..=50).contains(&self.max_results) {
            return Err(ConfigError::invalid(
                "web.max_results",
                "must be between 1 and 50",
            ));
        }
        if self.max_redirects > 20 {
            return Err(ConfigError::invalid(
                "web.max_redirects",
                "must be at most 20",
            ));
        }
        Ok(())
    }
}
