//! `ghost_shared::web` against the fake web server: search in the SearXNG JSON shape, page
//! text, the size and time limits, and clear errors for everything else.

use std::time::Duration;

use ghost_shared::config::WebSettings;
use ghost_shared::web::{WebClient, WebError};
use ghost_testkit::fake_search::{FakeHit, FakeSearch};

fn client(fake: &FakeSearch, edit: impl FnOnce(&mut WebSettings)) -> WebClient {
    let mut settings = WebSettings {
        search_url: Some(fake.search_url()),
        ..WebSettings::default()
    };
    edit(&mut settings);
    WebClient::new(settings).expect("client")
}

fn hit(n: usize) -> FakeHit {
    FakeHit {
        title: format!("Result {n} &amp; more"),
        url: format!("https://example.org/{n}"),
        content: format!("snippet {n}"),
    }
}

#[tokio::test]
async fn search_returns_hits_with_sources_and_respects_max_results() {
    let fake = FakeSearch::start().await.unwrap();
    fake.set_hits((1..=4).map(hit).collect());
    let web = client(&fake, |s| s.max_results = 3);
    let found = web.search("  green tea  ").await.unwrap();
    assert_eq!(fake.queries(), vec!["green tea".to_owned()]);
    assert_eq!(found.query, "green tea");
    assert_eq!(found.hits.len(), 3);
    assert_eq!(found.hits[0].title, "Result 1 & more");
    assert_eq!(found.hits[0].snippet, "snippet 1");
    assert_eq!(
        found.source_urls(),
        vec![
            "https://example.org/1",
            "https://example.org/2",
            "https://example.org/3"
        ]
    );
}

#[tokio::test]
async fn search_drops_non_http_results_and_refuses_other_shapes() {
    let fake = FakeSearch::start().await.unwrap();
    fake.set_hits(vec![
        FakeHit {
            title: "bad".into(),
            url: "javascript:alert(1)".into(),
            content: String::new(),
        },
        hit(1),
    ]);
    let web = client(&fake, |_| {});
    let found = web.search("q").await.unwrap();
    assert_eq!(found.source_urls(), vec!["https://example.org/1"]);

    fake.set_search_body(Some("{\"results\": \"nope\"}".into()));
    assert!(matches!(
        web.search("q").await,
        Err(WebError::BadSearchAnswer(_))
    ));
    fake.set_search_body(Some("x".repeat(4096)));
    let small = client(&fake, |s| s.max_search_bytes = 1024);
    assert_eq!(small.search("q").await, Err(WebError::TooLarge(1024)));
    fake.set_search_body(None);
    fake.fail_search(Some(502));
    assert!(matches!(
        web.search("q").await,
        Err(WebError::Status { status: 502, .. })
    ));
}

#[tokio::test]
async fn search_needs_an_endpoint_and_a_query() {
    let fake = FakeSearch::start().await.unwrap();
    let off = client(&fake, |s| s.search_url = None);
    assert_eq!(off.search("q").await, Err(WebError::SearchNotConfigured));
    let web = client(&fake, |_| {});
    assert_eq!(web.search("   ").await, Err(WebError::EmptyQuery));
    assert!(fake.queries().is_empty());
}

#[tokio::test]
async fn fetch_turns_html_into_text_with_its_source() {
    let fake = FakeSearch::start().await.unwrap();
    fake.add_page(
        "tea",
        "text/html; charset=utf-8",
        "<html><head><title>Tea</title><script>alert('x')</script></head>\
         <body><h1>Sencha</h1><p>Steep at 70&deg;C &amp; wait.</p></body></html>",
    );
    fake.add_page("notes", "text/plain", "  plain words  ");
    let web = client(&fake, |_| {});
    let page = web.fetch(&fake.page_url("tea")).await.unwrap();
    assert_eq!(page.title.as_deref(), Some("Tea"));
    assert_eq!(page.text, "Sencha\nSteep at 70&deg;C & wait.");
    assert_eq!(page.final_url, fake.page_url("tea"));
    assert!(!page.truncated);
    let plain = web.fetch(&fake.page_url("notes")).await.unwrap();
    assert_eq!(plain.text, "plain words");
    assert_eq!(plain.title, None);
}

#[tokio::test]
async fn fetch_cuts_big_pages_at_the_byte_and_char_limits() {
    let fake = FakeSearch::start().await.unwrap();
    fake.add_page("big", "text/plain", "a".repeat(200_000));
    let web = client(&fake, |s| {
        s.max_page_bytes = 10_000;
        s.max_text_chars = 50_000;
    });
    let page = web.fetch(&fake.page_url("big")).await.unwrap();
    assert_eq!(page.bytes_read, 10_000);
    assert_eq!(page.text.len(), 10_000);
    assert!(page.truncated);
    let few_chars = client(&fake, |s| s.max_text_chars = 7);
    let page = few_chars.fetch(&fake.page_url("big")).await.unwrap();
    assert_eq!(page.text, "aaaaaaa");
    assert!(page.truncated);
}

#[tokio::test]
async fn fetch_gives_up_at_the_time_limit() {
    let fake = FakeSearch::start().await.unwrap();
    fake.add_page("slow", "text/html", "<p>late</p>");
    fake.delay_page("slow", Duration::from_secs(30));
    let web = client(&fake, |s| s.timeout_ms = 200);
    assert_eq!(
        web.fetch(&fake.page_url("slow")).await,
        Err(WebError::Timeout(Duration::from_millis(200)))
    );
}

#[tokio::test]
async fn fetch_refuses_bad_urls_missing_pages_and_binary_content() {
    let fake = FakeSearch::start().await.unwrap();
    fake.add_page("img", "image/png", vec![0x89, b'P', b'N', b'G']);
    let web = client(&fake, |_| {});
    for bad in ["file:///etc/passwd", "not a url", "ftp://example.org/x", ""] {
        assert!(
            matches!(web.fetch(bad).await, Err(WebError::BadUrl(_))),
            "{bad}"
        );
    }
    assert!(matches!(
        web.fetch(&fake.page_url("missing")).await,
        Err(WebError::Status { status: 404, .. })
    ));
    assert!(matches!(
        web.fetch(&fake.page_url("img")).await,
        Err(WebError::NotText { .. })
    ));
}
