//! Which URLs Ghost fetches or hands on: absolute `http://` and `https://` ones with a host
//! (a decision's source, a search hit, an image a model may see).

/// An absolute `http://` or `https://` URL with a host.
pub fn is_http_url(url: &str) -> bool {
    match url::Url::parse(url) {
        Ok(u) => matches!(u.scheme(), "http" | "https") && u.host_str().is_some(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_absolute_http_urls_with_a_host_pass() {
        assert!(is_http_url("https://example.com/a?b"));
        assert!(is_http_url("http://127.0.0.1:8080/"));
        for bad in [
            "ftp://example.com",
            "file:///etc/passwd",
            "/relative",
            "http://",
            "",
            "javascript:alert(1)",
        ] {
            assert!(!is_http_url(bad), "{bad}");
        }
    }
}
