//! Turning `ImagePart`s into the URL actually sent, with the image audit log of seed 002
//! ("LLM image audit before request" / "after timeout", target `provider.http`).

use std::path::Path;
use std::sync::Arc;

use base64::Engine as _;

use super::config::Provider;
use super::message::{ImagePart, ImageSource};
use super::LOG_TARGET;

/// `url_type` of an image sent as an inline `data:` URI (given, or built from its source).
pub(crate) const URL_TYPE_DATA_URI: &str = "data_uri";
/// `url_type` of an `http(s)://` URL.
pub(crate) const URL_TYPE_REMOTE: &str = "remote_url";
/// `url_type` of a URL with any other scheme (always dropped).
pub(crate) const URL_TYPE_UNKNOWN: &str = "unknown";

/// Largest image inlined from a source (bigger ones are dropped rather than bloating the request).
const MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;

/// An image that survived resolution: the URL to put on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResolvedImage {
    /// `data:` URI or http URL.
    pub url: String,
}

impl ResolvedImage {
    /// The base64 payload of a data URI (what Ollama's `images` wants), if it is one.
    pub(crate) fn base64_payload(&self) -> Option<&str> {
        data_uri_payload(&self.url)
    }
}

/// Outcome of resolving one image part, before logging.
struct Resolution {
    url_type: &'static str,
    /// The URL that is (or would have been) sent; empty when none could be built.
    url: String,
    drop_reason: Option<&'static str>,
}

/// Resolves one image part for `provider` and writes the "before request" audit line.
/// Returns `None` when the part is dropped (the request proceeds without it).
pub(crate) async fn resolve_image(part: &ImagePart, provider: Provider) -> Option<ResolvedImage> {
    let (exists_before, size_before) = match &part.source {
        Some(source) => source.stat().await,
        None => (false, 0),
    };
    let res = resolve_inner(part, provider).await;
    let source_path = part.source.as_ref().map(|s| s.label()).unwrap_or_default();
    tracing::info!(
        target: LOG_TARGET,
        source_path = %source_path,
        url_type = res.url_type,
        image_url = %summarize_url(&res.url),
        image_url_length = res.url.len() as u64,
        local_exists_before = exists_before,
        local_size_before_bytes = size_before,
        included = res.drop_reason.is_none(),
        drop_reason = res.drop_reason.unwrap_or(""),
        "LLM image audit before request"
    );
    match res.drop_reason {
        None => Some(ResolvedImage { url: res.url }),
        Some(_) => None,
    }
}

/// Writes the "after timeout" audit line for every image that came from a source, so a
/// timeout can be told apart from the media having been swept mid-request.
pub(crate) async fn audit_after_timeout(sources: &[Arc<dyn ImageSource>]) {
    for source in sources {
        let (exists, size) = source.stat().await;
        tracing::info!(
            target: LOG_TARGET,
            source_path = %source.label(),
            local_exists_after_timeout = exists,
            local_size_after_timeout_bytes = size,
            "LLM image audit after timeout"
        );
    }
}

async fn resolve_inner(part: &ImagePart, provider: Provider) -> Resolution {
    match part.url.as_deref() {
        Some(url) if url.starts_with("data:") => {
            let drop_reason = match (provider, data_uri_payload(url)) {
                // Ollama only takes raw base64, so a data URI without a base64 payload is unusable.
                (Provider::Ollama, None) => Some("invalid_data_uri"),
                _ => None,
            };
            Resolution {
                url_type: URL_TYPE_DATA_URI,
                url: url.to_string(),
                drop_reason,
            }
        }
        Some(url) if is_http_url(url) => match provider {
            Provider::Openai => Resolution {
                url_type: URL_TYPE_REMOTE,
                url: url.to_string(),
                drop_reason: None,
            },
            // Ollama cannot fetch URLs; fall back to the source's copy when there is one.
            Provider::Ollama => match &part.source {
                Some(source) => from_source(source.as_ref()).await,
                None => Resolution {
                    url_type: URL_TYPE_REMOTE,
                    url: url.to_string(),
                    drop_reason: Some("remote_url_unsupported_by_ollama"),
                },
            },
        },
        Some(url) => Resolution {
            url_type: URL_TYPE_UNKNOWN,
            url: url.to_string(),
            drop_reason: Some("unsupported_url_scheme"),
        },
        None => match &part.source {
            Some(source) => from_source(source.as_ref()).await,
            None => Resolution {
                url_type: URL_TYPE_UNKNOWN,
                url: String::new(),
                drop_reason: Some("no_image_source"),
            },
        },
    }
}

/// Reads an image from its source and inlines it as a data URI.
async fn from_source(source: &dyn ImageSource) -> Resolution {
    let dropped = |reason| Resolution {
        url_type: URL_TYPE_DATA_URI,
        url: String::new(),
        drop_reason: Some(reason),
    };
    if let (true, size) = source.stat().await {
        if size > MAX_IMAGE_BYTES {
            return dropped("file_too_large");
        }
    }
    let (bytes, declared) = match source.load().await {
        Ok(loaded) => loaded,
        Err(reason) => return dropped(reason),
    };
    if bytes.is_empty() {
        return dropped("file_empty");
    }
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return dropped("file_too_large");
    }
    let declared = declared.filter(|m| m.starts_with("image/"));
    let Some(mime) = sniff_mime(&bytes).map(str::to_owned).or(declared) else {
        return dropped("unsupported_image_type");
    };
    let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
    Resolution {
        url_type: URL_TYPE_DATA_URI,
        url: format!("data:{mime};base64,{b64}"),
        drop_reason: None,
    }
}

fn is_http_url(url: &str) -> bool {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// The part after `;base64,` of a data URI.
fn data_uri_payload(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("data:")?;
    let comma = rest.find(',')?;
    let (meta, payload) = rest.split_at(comma);
    if !meta.ends_with(";base64") {
        return None;
    }
    payload.get(1..)
}

/// Log-safe form of an image URL: data URIs lose their payload
/// (`data:image/png;base64,[omitted]`), http URLs lose their query (signed URLs carry tokens).
pub(crate) fn summarize_url(url: &str) -> String {
    if url.starts_with("data:") {
        match url.find(',') {
            Some(i) => format!("{}[omitted]", url.get(..=i).unwrap_or("data:")),
            None => "data:[omitted]".to_string(),
        }
    } else {
        match url.find(['?', '#']) {
            Some(i) => format!("{}?[omitted]", url.get(..i).unwrap_or("")),
            None => url.to_string(),
        }
    }
}

/// Image type from magic bytes.
fn sniff_mime(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WEBP") {
        Some("image/webp")
    } else {
        None
    }
}

/// Image type from the file extension, for files whose header we do not recognise.
pub(crate) fn mime_from_extension(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_hide_payloads_and_queries() {
        assert_eq!(
            summarize_url("data:image/png;base64,AAAA"),
            "data:image/png;base64,[omitted]"
        );
        assert_eq!(
            summarize_url("https://x/y.png?sig=secret"),
            "https://x/y.png?[omitted]"
        );
        assert_eq!(summarize_url("https://x/y.png"), "https://x/y.png");
        assert_eq!(summarize_url(""), "");
    }

    #[test]
    fn payload_requires_base64_marker() {
        assert_eq!(data_uri_payload("data:image/png;base64,QUJD"), Some("QUJD"));
        assert_eq!(data_uri_payload("data:image/png,raw"), None);
        assert_eq!(data_uri_payload("https://x"), None);
    }

    #[test]
    fn mime_by_magic_then_extension() {
        assert_eq!(sniff_mime(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(sniff_mime(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(sniff_mime(b"GIF89a..."), Some("image/gif"));
        assert_eq!(sniff_mime(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff_mime(b"RIFF"), None);
        assert_eq!(
            mime_from_extension(Path::new("a/b.JPG")),
            Some("image/jpeg")
        );
        assert_eq!(mime_from_extension(Path::new("a/b.txt")), None);
    }

    #[tokio::test]
    async fn ollama_drops_remote_url_without_local_copy_but_openai_keeps_it() {
        let part = ImagePart::from_url("https://example.com/a.png");
        assert!(resolve_image(&part, Provider::Ollama).await.is_none());
        let kept = resolve_image(&part, Provider::Openai).await;
        assert_eq!(
            kept.map(|r| r.url).as_deref(),
            Some("https://example.com/a.png")
        );
    }

    #[tokio::test]
    async fn file_without_known_type_is_dropped() {
        let dir = std::env::temp_dir().join(format!("ghost-llm-img-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("blob.bin");
        std::fs::write(&path, b"not an image").unwrap();
        let part = ImagePart::from_path(&path);
        assert!(resolve_image(&part, Provider::Openai).await.is_none());
        let _ = std::fs::remove_file(&path);
    }
}
