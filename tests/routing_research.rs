//! RESEARCH with real sources (seed 002), end to end over NATS and Postgres with the fake
//! model and a fake SearXNG-JSON search server: the worker gets the pages the search found,
//! the reply cites only those URLs, and without a search endpoint the persona says it cannot
//! look things up and no source is invented.

mod routing_support;
mod support;

use std::sync::Arc;

use ghost_shared::envelope::EventPayload;
use ghost_shared::events::{RenderRequested, WorkerFailed};
use ghost_testkit::fake_search::{FakeHit, FakeSearch};
use routing_support::{payload, Kind, RoutingApp, Scripts};

const INVENTED: &str = "https://invented.example/rust-1-95";

/// A worker that cites the first listed source and one it made up.
fn citing_worker(task: &str) -> String {
    let listed = task
        .lines()
        .find_map(|l| l.split(" — ").nth(1).filter(|u| u.starts_with("http")))
        .unwrap_or_default()
        .to_owned();
    serde_json::json!({
        "result": "Rust 1.95 stabilises two features.",
        "needs_next_loop": false, "why": "", "next_actions": [], "questions_for_user": [],
        "confidence": 0.9, "risk": "low",
        "sources": [listed, INVENTED]
    })
    .to_string()
}

#[tokio::test]
async fn research_cites_only_what_the_search_found() {
    let search = FakeSearch::start().await.unwrap();
    search.add_page(
        "rust",
        "text/html",
        "<html><title>Rust 1.95</title><body>Rust 1.95 stabilises let chains.</body></html>",
    );
    let page = search.page_url("rust");
    search.set_hits(vec![FakeHit {
        title: "Rust 1.95 released".into(),
        url: page.clone(),
        content: "release notes".into(),
    }]);
    let scripts = Scripts {
        worker: Some(Arc::new(citing_worker)),
        ..Scripts::default()
    };
    let search_url = search.search_url();
    let r = RoutingApp::spawn(scripts, &[("GHOST_WEB__SEARCH_URL", &search_url)]).await;

    let reply = r.say("research", "/research Rust 1.95 の新機能").await;
    assert!(reply.starts_with("調べてまとめるね。"), "{reply}");
    assert_eq!(search.queries(), ["Rust 1.95 の新機能"]);
    assert_eq!(search.page_hits("rust"), 1, "the page was read");
    // The worker worked from the page.
    let task = r.requests(Kind::Work)[0].last_user_text().unwrap();
    assert!(
        task.contains(&page) && task.contains("stabilises let chains"),
        "{task}"
    );
    // Only the search's URL reaches the persona; the invented one is dropped.
    let render = payload(&r.of_type("research", RenderRequested::EVENT_TYPE).await);
    assert_eq!(render["work_result"]["sources"], serde_json::json!([page]));
    let prompt = r
        .requests(Kind::Persona)
        .last()
        .and_then(|q| q.last_user_text())
        .unwrap();
    assert!(prompt.contains(&page), "{prompt}");
    assert!(!prompt.contains(INVENTED), "{prompt}");
    assert!(prompt.contains("cite its sources"), "{prompt}");
    r.cleanup().await;
}

#[tokio::test]
async fn without_a_search_endpoint_nothing_is_looked_up_or_invented() {
    let scripts = Scripts {
        worker: Some(Arc::new(citing_worker)),
        ..Scripts::default()
    };
    let r = RoutingApp::spawn(scripts, &[]).await;
    r.say("nosearch", "/research Rust 1.95 の新機能").await;
    assert!(
        r.requests(Kind::Work).is_empty(),
        "no worker call without sources"
    );
    let failed = payload(&r.of_type("nosearch", WorkerFailed::EVENT_TYPE).await);
    assert_eq!(failed["code"], "research_unavailable");
    let render = payload(&r.of_type("nosearch", RenderRequested::EVENT_TYPE).await);
    assert_eq!(render["work_result"]["status"], "research_unavailable");
    assert!(render["work_result"].get("sources").is_none());
    let prompt = r
        .requests(Kind::Persona)
        .last()
        .and_then(|q| q.last_user_text())
        .unwrap();
    assert!(
        prompt.contains("Do not name, invent or guess any source"),
        "{prompt}"
    );
    assert!(!prompt.contains(INVENTED));
    r.cleanup().await;
}

/// Research is a side door out of the machine: the search query and every page fetched
/// reach third parties. A My Number (named as one, check digit wrong) and an e-mail address
/// in the request are masked in the query; a hit whose URL carries an address is not fetched.
#[tokio::test]
async fn private_data_never_leaves_through_the_search_or_a_fetched_url() {
    let search = FakeSearch::start().await.unwrap();
    search.add_page(
        "tea",
        "text/html",
        "<html><body>Green tea facts.</body></html>",
    );
    search.add_page("track", "text/html", "<html><body>tracked</body></html>");
    let clean = search.page_url("tea");
    let tracking = format!("{}?u=ren.kuro@example.com", search.page_url("track"));
    search.set_hits(vec![
        FakeHit {
            title: "Green tea".into(),
            url: clean.clone(),
            content: "facts".into(),
        },
        FakeHit {
            title: "Tracked".into(),
            url: tracking.clone(),
            content: "a link with an address in it".into(),
        },
    ]);
    let scripts = Scripts {
        worker: Some(Arc::new(citing_worker)),
        ..Scripts::default()
    };
    let search_url = search.search_url();
    let r = RoutingApp::spawn(scripts, &[("GHOST_WEB__SEARCH_URL", &search_url)]).await;

    r.say(
        "leak",
        "/research 緑茶の効能 マイナンバー 1234 5678 9012 連絡先 ren.kuro@example.com",
    )
    .await;
    let queries = search.queries();
    assert_eq!(queries.len(), 1, "{queries:?}");
    let query = &queries[0];
    assert!(query.starts_with("緑茶の効能"), "{query}");
    for private in ["1234", "5678", "9012", "ren.kuro", "example.com"] {
        assert!(!query.contains(private), "{private} in the query {query}");
    }
    assert!(query.contains("[REDACTED:national_id]"), "{query}");
    assert_eq!(search.page_hits("tea"), 1, "the clean page was read");
    assert_eq!(
        search.page_hits("track"),
        0,
        "the URL with an address was not fetched"
    );
    r.cleanup().await;
}
