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
