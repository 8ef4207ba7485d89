//! One outcome per step (issue 10, item 2): the same render request handled by two persona
//! instances at once (what a redelivery after `ack_wait` does while the first handler still
//! works) stores exactly one outcome, and the user gets exactly one LINE message per turn,
//! even when one handler writes the reply and the other fails.

mod support;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;
use ghost::stack::ServiceName;
use ghost_persona::render::Renderer;
use ghost_shared::bus::EventHandler;
use ghost_shared::envelope::RecordedEvent;
use ghost_testkit::fake_llm::{Failure, Script};
use ghost_testkit::testing::{eventually, PERSONA_MODEL};
use support::platforms::{line_text, ChannelApp};
use support::NEUTRAL_AFFECT;

/// Turns, each handled by both persona instances at once (the "Must show").
const TURNS: usize = 100;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_persona_handlers_of_one_request_store_one_outcome_and_send_once() {
    // Everything but the persona runs as a service; the two persona instances are driven
    // directly, each with its own connections, like two processes.
    let services: Vec<ServiceName> = ServiceName::ALL
        .into_iter()
        .filter(|s| *s != ServiceName::Persona)
        .collect();
    let c =
        ChannelApp::spawn_services(&services, &[("GHOST_ROUTING__ENTRY_MODES__LINE", "router")])
            .await;
    // Per message: the first persona call writes a reply, the second fails. Both wait a
    // little, so both handlers are past their "already done?" check before either stores.
    let seen: Arc<Mutex<HashSet<String>>> = Arc::default();
    c.app.llm.set_responder(move |r| {
        if r.model.as_deref() != Some(PERSONA_MODEL) {
            return Script::reply(NEUTRAL_AFFECT);
        }
        let text = r.last_user_text().unwrap_or_default();
        let first = seen.lock().map(|mut s| s.insert(text)).unwrap_or(false);
        let script = if first {
            Script::reply("here you go")
        } else {
            Script::failing(Failure::Status(500, "model crashed".into()))
        };
        script.with_delay(Duration::from_millis(100))
    });

    for chunk in (0..TURNS).collect::<Vec<_>>().chunks(25) {
        join_all(chunk.iter().map(|n| {
            let body = line_text(
                &format!("ev-{n}"),
                &format!("U{n}"),
                &format!("/chat hello {n}"),
                &format!("rt-{n}"),
                false,
            );
            let c = &c;
            async move { assert_eq!(c.post_line_signed(&body).await, 200) }
        }))
        .await;
    }
    let requests: Vec<RecordedEvent> =
        eventually(Duration::from_secs(120), "render requests", || async {
            let e = render_requests(&c).await;
            (e.len() >= TURNS).then_some(e)
        })
        .await;

    let a = Renderer::new(c.app.env.context("persona").await.expect("ctx a")).expect("a");
    let b = Renderer::new(c.app.env.context("persona").await.expect("ctx b")).expect("b");
    for chunk in requests.chunks(25) {
        join_all(chunk.iter().map(|request| {
            let (a, b) = (&a, &b);
            async move {
                let (ra, rb) = tokio::join!(a.handle(request.clone()), b.handle(request.clone()));
                ra.expect("persona a");
                rb.expect("persona b");
            }
        }))
        .await;
    }
    c.app.wait_idle().await;

    let per_turn: Vec<(String, i64)> = sqlx::query_as(
        "SELECT stream, count(*) FROM events \
         WHERE event_type IN ('AssistantReplied', 'RenderFailed') GROUP BY stream",
    )
    .fetch_all(c.app.store.pool())
    .await
    .expect("outcomes");
    assert_eq!(per_turn.len(), TURNS, "every turn has an outcome");
    let doubled: Vec<&(String, i64)> = per_turn.iter().filter(|(_, n)| *n != 1).collect();
    assert!(
        doubled.is_empty(),
        "turns with several outcomes: {doubled:?}"
    );
    let sends = c.line.deliveries();
    let mut per_user = std::collections::HashMap::<String, usize>::new();
    for d in &sends {
        *per_user.entry(d.to.clone()).or_default() += 1;
    }
    let twice: Vec<_> = per_user.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.is_empty(),
        "users who got several messages: {twice:?}"
    );
    assert_eq!(sends.len(), TURNS, "one LINE message per turn");
    c.cleanup().await;
}

async fn render_requests(c: &ChannelApp) -> Vec<RecordedEvent> {
    let ids: Vec<uuid::Uuid> = sqlx::query_scalar(
        "SELECT event_id FROM events WHERE event_type = 'RenderRequested' ORDER BY position",
    )
    .fetch_all(c.app.store.pool())
    .await
    .expect("requests");
    let mut events = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(e) = c.app.store.get(id).await.expect("get") {
            events.push(e);
        }
    }
    events
}
