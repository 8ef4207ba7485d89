//! The web as Ghost uses it on its own: a search through a configured SearXNG-JSON-shaped
//! endpoint and a page fetch, each bounded in time and size, pages turned into text, and the
//! source URLs kept with every result. Autonomy's `web_access` capability and routing's
//! RESEARCH both use this client.
//!
//! - [`extract`]: HTML → title and readable text.

pub mod extract;

use std::time::Duration;

use futures::StreamExt;
use serde::{Deserialize, Serialize};

use crate::config::WebSettings;
use crate::masking;

/// Why a web request gave nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebError {
    /// `web.search_url` is not set.
    #[error("web search is not configured (web.search_url)")]
    SearchNotConfigured,
    /// The query is empty.
    #[error("the search query is empty")]
    EmptyQuery,
    /// The URL is not an absolute http(s) URL.
    #[error("not an http(s) URL: {0}")]
    BadUrl(String),
    /// No answer within `web.timeout_ms`.
    #[error("no complete answer within {0:?}")]
    Timeout(Duration),
    /// The server could not be reached or the connection broke.
    #[error("request failed: {0}")]
    Connect(String),
    /// The server answered with a non-success status.
    #[error("{url} answered {status}")]
    Status {
        /// The URL asked.
        url: String,
        /// HTTP status.
        status: u16,
    },
    /// A search answer larger than `web.max_search_bytes`.
    #[error("the answer is larger than {0} bytes")]
    TooLarge(usize),
    /// The search answer is not the SearXNG JSON shape.
    #[error("the search answer is not SearXNG JSON: {0}")]
    BadSearchAnswer(String),
    /// A page whose content type is not text (HTML, plain text, JSON, XML).
    #[error("{url} is {content_type}, not text")]
    NotText {
        /// The URL asked.
        url: String,
        /// Its content type.
        content_type: String,
    },
    /// A URL that carries private data (a secret, an ID, an address): fetching it would
    /// send that data to a third party, so it is not fetched.
    #[error("the URL carries private data ({categories}); not fetched: {masked}")]
    PrivateUrl {
        /// The URL as masked.
        masked: String,
        /// The masking categories found in it.
        categories: String,
    },
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchHit {
    /// The result's title.
    pub title: String,
    /// Where it is (a source URL).
    pub url: String,
    /// The engine's snippet (`content` in SearXNG).
    pub snippet: String,
}

/// What a search found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchResults {
    /// The query as sent.
    pub query: String,
    /// At most `web.max_results` hits, in the engine's order.
    pub hits: Vec<SearchHit>,
}

impl SearchResults {
    /// Every hit's URL, in order.
    pub fn source_urls(&self) -> Vec<String> {
        self.hits.iter().map(|h| h.url.clone()).collect()
    }
}

/// A page read as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchedPage {
    /// The URL asked for.
    pub url: String,
    /// The URL answered (after redirects): the source.
    pub final_url: String,
    /// The page's content type.
    pub content_type: String,
    /// The HTML title, if any.
    pub title: Option<String>,
    /// Readable text, at most `web.max_text_chars` characters.
    pub text: String,
    /// The body or the text was cut at a limit.
    pub truncated: bool,
    /// Body bytes read.
    pub bytes_read: usize,
}

/// SearXNG's JSON answer, the parts we read.
#[derive(Deserialize)]
struct SearxAnswer {
    results: Vec<SearxResult>,
}

#[derive(Deserialize)]
struct SearxResult {
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    content: String,
}

/// The client: one connection pool, the limits of `web:`.
#[derive(Debug, Clone)]
pub struct WebClient {
    http: reqwest::Client,
    settings: WebSettings,
}

impl WebClient {
    /// A client with the limits of `settings`.
    pub fn new(settings: WebSettings) -> Result<Self, WebError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_millis(settings.timeout_ms))
            .redirect(reqwest::redirect::Policy::limited(settings.max_redirects))
            .user_agent(settings.user_agent.clone())
            .build()
            .map_err(|e| WebError::Connect(e.to_string()))?;
        Ok(Self { http, settings })
    }

    /// The limits in use.
    pub fn settings(&self) -> &WebSettings {
        &self.settings
    }

    /// Asks the search endpoint for `query`; at most `web.max_results` hits.
    pub async fn search(&self, query: &str) -> Result<SearchResults, WebError> {
        let endpoint = self
            .settings
            .search_url
            .as_deref()
            .ok_or(WebError::SearchNotConfigured)?;
        // The query leaves this machine: it is masked like text bound for the cloud.
        let query = masking::mask_secrets(query.trim());
        let query = query.trim();
        if query.is_empty() {
            return Err(WebError::EmptyQuery);
        }
        let resp = self
            .http
            .get(endpoint)
            .query(&[("q", query), ("format", "json")])
            .send()
            .await
            .map_err(|e| self.request_error(e))?;
        let resp = success(resp)?;
        let (body, cut) = self.read_body(resp, self.settings.max_search_bytes).await?;
        if cut {
            return Err(WebError::TooLarge(self.settings.max_search_bytes));
        }
        let answer: SearxAnswer =
            serde_json::from_slice(&body).map_err(|e| WebError::BadSearchAnswer(e.to_string()))?;
        let hits = answer
            .results
            .into_iter()
            .filter(|r| is_http_url(&r.url))
            .take(self.settings.max_results)
            .map(|r| SearchHit {
                title: extract::decode_entities(r.title.trim()),
                url: r.url,
                snippet: extract::decode_entities(r.content.trim()),
            })
            .collect();
        Ok(SearchResults {
            query: query.to_owned(),
            hits,
        })
    }

    /// Fetches `url` and reads it as text: a body past `web.max_page_bytes` is cut (and the
    /// page marked truncated), never an error.
    pub async fn fetch(&self, url: &str) -> Result<FetchedPage, WebError> {
        let url = url.trim();
        if !is_http_url(url) {
            return Err(WebError::BadUrl(url.to_owned()));
        }
        let masked = masking::mask(url);
        if !masked.categories.is_empty() {
            return Err(WebError::PrivateUrl {
                masked: masked.masked.into_owned(),
                categories: masked.categories.join(", "),
            });
        }
        let resp = self
            .http
            .get(url)
            .send()
            .await
            .map_err(|e| self.request_error(e))?;
        let resp = success(resp)?;
        let final_url = resp.url().to_string();
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("text/html")
            .to_ascii_lowercase();
        let kind = TextKind::of(&content_type).ok_or_else(|| WebError::NotText {
            url: url.to_owned(),
            content_type: content_type.clone(),
        })?;
        let (body, cut) = self.read_body(resp, self.settings.max_page_bytes).await?;
        let decoded = String::from_utf8_lossy(&body);
        let (title, text, text_cut) = match kind {
            TextKind::Html => {
                let page = extract::html_to_text(&decoded, self.settings.max_text_chars);
                (page.title, page.text, page.truncated)
            }
            TextKind::Plain => {
                let (text, cut) =
                    extract::cut_chars(decoded.trim().to_owned(), self.settings.max_text_chars);
                (None, text, cut)
            }
        };
        Ok(FetchedPage {
            url: url.to_owned(),
            final_url,
            content_type,
            title,
            text,
            truncated: cut || text_cut,
            bytes_read: body.len(),
        })
    }

    /// The body up to `limit` bytes, and whether there was more.
    async fn read_body(
        &self,
        resp: reqwest::Response,
        limit: usize,
    ) -> Result<(Vec<u8>, bool), WebError> {
        let mut body = Vec::new();
        let mut stream = resp.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| self.request_error(e))?;
            let room = limit - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                return Ok((body, true));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((body, false))
    }

    fn request_error(&self, e: reqwest::Error) -> WebError {
        if e.is_timeout() {
            return WebError::Timeout(Duration::from_millis(self.settings.timeout_ms));
        }
        let mut s = e.to_string();
        let mut cur = std::error::Error::source(&e);
        while let Some(c) = cur {
            s.push_str(": ");
            s.push_str(&c.to_string());
            cur = c.source();
        }
        WebError::Connect(s)
    }
}

enum TextKind {
    Html,
    Plain,
}

impl TextKind {
    fn of(content_type: &str) -> Option<TextKind> {
        let mime = content_type.split(';').next().unwrap_or("").trim();
        if mime == "text/html" || mime == "application/xhtml+xml" {
            Some(TextKind::Html)
        } else if mime.starts_with("text/")
            || mime == "application/json"
            || mime.ends_with("+json")
            || mime.ends_with("+xml")
            || mime == "application/xml"
        {
            Some(TextKind::Plain)
        } else {
            None
        }
    }
}

fn success(resp: reqwest::Response) -> Result<reqwest::Response, WebError> {
    if resp.status().is_success() {
        Ok(resp)
    } else {
        Err(WebError::Status {
            url: resp.url().to_string(),
            status: resp.status().as_u16(),
        })
    }
}

pub use ghost_domain::http_url::is_http_url;
