//! Every refusal in one JSON shape (issue 39), the router's edges included: each route of
//! the gateway's table with each method it does not take, paths no route matches, query
//! strings and path segments that cannot be read, ids that are `.` or `..`, and a plain GET
//! on a WebSocket route. Each answer is `application/json` with `{"error": {"code",
//! "message"}}` and a stable code, and none stores anything.
//!
//! Requests go over raw TCP: an HTTP client library would rewrite `..`, `//` and `%2F`
//! before they reach the gateway.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_gateway::routes::{Access, ROUTES};
use serde_json::{json, Value};
use support::{TestApp, TOKEN};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Every method a route could be asked with (CONNECT takes an authority, not a path).
const METHODS: [&str; 8] = [
    "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE",
];

/// What the gateway answered.
#[derive(Debug)]
struct Answer {
    status: u16,
    /// Header names in lower case.
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One request with `target` sent as is, then everything the gateway answers until it
/// closes the connection.
async fn send(
    app: &TestApp,
    method: &str,
    target: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> Answer {
    let addr = app.base_url.trim_start_matches("http://");
    let mut tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let mut request = format!("{method} {target} HTTP/1.1\r\nHost: ghost\r\nConnection: close\r\n");
    if let Some(token) = token {
        request.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    if !body.is_empty() {
        request.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    tcp.write_all(request.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), tcp.read_to_end(&mut raw))
        .await
        .expect("the gateway closes the connection after its answer")
        .expect("read");
    parse(&String::from_utf8_lossy(&raw))
}

fn parse(raw: &str) -> Answer {
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((raw, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let answer = Answer {
        status,
        headers,
        body: body.to_owned(),
    };
    // Refusals have a known length: a chunked body would need decoding before reading.
    assert_eq!(answer.header("transfer-encoding"), None, "{raw}");
    answer
}

/// `answer` is a refusal with `status` and `code` in the one JSON shape (a HEAD answer has
/// the headers and no body).
fn assert_refusal(answer: &Answer, status: u16, code: &str, request: &str) {
    assert_eq!(answer.status, status, "{request}: {answer:?}");
    assert_eq!(
        answer.header("content-type"),
        Some("application/json"),
        "{request}: {answer:?}"
    );
    if request.starts_with("HEAD ") {
        assert!(answer.body.is_empty(), "{request}: {answer:?}");
        return;
    }
    let json: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    assert_eq!(json["error"]["code"], code, "{request}: {answer:?}");
    let message = json["error"]["message"].as_str().unwrap_or_default();
    assert!(!message.is_empty(), "{request}: {answer:?}");
    assert_eq!(
        json.as_object().map(|o| o.len()),
        Some(1),
        "only `error`: {answer:?}"
    );
}

/// Sends each `(method, target)` with the token and checks its refusal.
async fn assert_refused(app: &TestApp, cases: &[(&str, &str)], status: u16, code: &str) {
    for (method, target) in cases {
        let answer = send(app, method, target, Some(TOKEN), None).await;
        assert_refusal(&answer, status, code, &format!("{method} {target}"));
    }
}

/// A concrete path for a route (`{param}` segments filled in).
fn example(path: &str) -> String {
    path.split('/')
        .map(|segment| match segment.starts_with('{') {
            true => "x1",
            false => segment,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The methods a route answers: its table's, and HEAD wherever GET is.
fn taken(methods: &[impl ToString]) -> BTreeSet<String> {
    let mut taken: BTreeSet<String> = methods.iter().map(ToString::to_string).collect();
    if taken.contains("GET") {
        taken.insert("HEAD".into());
    }
    taken
}

/// The gateway alone (refusals need nothing behind it), and how many events it holds.
async fn gateway_alone() -> (TestApp, i64) {
    let app = TestApp::spawn_services(&[ServiceName::Gateway], &[]).await;
    let stored = app.event_count().await;
    (app, stored)
}

/// No refusal stored anything.
async fn finish(app: TestApp, stored: i64) {
    assert_eq!(app.event_count().await, stored, "nothing was stored");
    app.cleanup().await;
}

#[tokio::test]
async fn every_route_refuses_each_method_it_does_not_take_with_405_and_allow() {
    let (app, stored) = gateway_alone().await;
    let mut refused = 0;
    for route in ROUTES {
        let target = example(route.path);
        let taken = taken(route.methods);
        for method in METHODS.iter().filter(|m| !taken.contains(**m)) {
            let request = format!("{method} {target}");
            let answer = send(&app, method, &target, Some(TOKEN), None).await;
            assert_refusal(&answer, 405, "method_not_allowed", &request);
            // Allow is what the router really takes, so the table cannot drift from it.
            let allow: BTreeSet<String> = answer
                .header("allow")
                .unwrap_or_default()
                .split(',')
                .map(|m| m.trim().to_owned())
                .collect();
            assert_eq!(allow, taken, "{request}: {answer:?}");
            refused += 1;

            // Without the token, an `/api/*` route says 401 first, whatever the method.
            let anonymous = send(&app, method, &target, None, None).await;
            match route.access {
                Access::Bearer => assert_refusal(&anonymous, 401, "unauthorized", &request),
                Access::Open | Access::Webhook => {
                    assert_refusal(&anonymous, 405, "method_not_allowed", &request)
                }
            }
        }
    }
    let every_pair: usize = ROUTES
        .iter()
        .map(|r| METHODS.len() - taken(r.methods).len())
        .sum();
    assert_eq!(refused, every_pair);
    assert!(
        ROUTES.iter().any(|r| r.path == "/api/chat") && refused >= ROUTES.len() * 5,
        "the whole table was walked"
    );
    finish(app, stored).await;
}

#[tokio::test]
async fn paths_no_route_matches_answer_404_not_found() {
    let (app, stored) = gateway_alone().await;
    let paths = [
        "/api/sessions/../x/messages",
        "/api/sessions/x/../../chat",
        "//api/chat",
        "//api/sessions/x/messages",
        "/api//chat",
        "/API/chat",
        "/Api/partner_mood",
        "/HEALTHZ",
        "/api/chat/",
        "/healthz/",
        "/api/partner_mood/",
        "/webhooks/line/",
        "/console/console.js/",
        "/api%2Fsessions%2Fx%2Fmessages",
        "/api/sessions%2Fx%2Fmessages",
        "/console/../api/chat",
        "/console/../healthz",
        "/console/%2E%2E/healthz",
        "/console/nope.js",
        "/console//",
        "/api",
        "/api/",
        "/api/sessions/x/messages/y",
        "/api/recalls/",
        "/webhooks",
        "/webhooks/teams",
        "/nope",
        "/%FF",
    ];
    for path in paths {
        for method in ["GET", "POST", "DELETE", "OPTIONS"] {
            let answer = send(&app, method, path, Some(TOKEN), None).await;
            let request = format!("{method} {path}");
            assert_refusal(&answer, 404, "not_found", &request);
            assert_eq!(answer.header("allow"), None, "{request}: {answer:?}");
        }
    }
    finish(app, stored).await;
}

#[tokio::test]
async fn query_strings_that_cannot_be_read_answer_400_invalid_query() {
    let (app, stored) = gateway_alone().await;
    let mut cases = Vec::new();
    for method in ["GET", "PUT", "DELETE"] {
        for query in [
            "x=1",
            "persona=kuro&x=1",
            "persona=kuro&persona=kuro",
            "persona[]=kuro",
            "persona%5B%5D=kuro",
            "persona=%FF",
            "persona=a%C3",
            "persona=%C3%28",
            "%FF=kuro",
        ] {
            cases.push((method, format!("/api/partner_mood?{query}")));
        }
    }
    for query in [
        "x=1",
        "persona=%FF",
        "persona=a%E3%81",
        "persona=a&persona=b",
    ] {
        cases.push(("GET", format!("/api/memory?{query}")));
    }
    // Read before the upgrade is: a plain GET is enough.
    for query in ["stage_id=%FF", "stage_id=a&stage_id=b"] {
        cases.push(("GET", format!("/api/stage?{query}")));
    }
    cases.push(("GET", "/api/events?token=%FF".into()));
    let cases: Vec<(&str, &str)> = cases.iter().map(|(m, t)| (*m, t.as_str())).collect();
    assert_refused(&app, &cases, 400, "invalid_query").await;
    finish(app, stored).await;
}

#[tokio::test]
async fn ids_that_are_not_utf8_or_are_dot_segments_answer_400() {
    let (app, stored) = gateway_alone().await;
    let unreadable = [
        ("GET", "/api/sessions/a%FFb/messages"),
        ("GET", "/api/sessions/%C3/messages"),
        ("GET", "/api/recalls/%FF"),
    ];
    assert_refused(&app, &unreadable, 400, "invalid_path").await;
    // An empty id matches the route's parameter and is refused as any malformed id.
    let malformed = [
        ("GET", "/api/sessions//messages"),
        ("GET", "/api/sessions/./messages"),
        ("GET", "/api/sessions/../messages"),
        ("GET", "/api/sessions/%2E/messages"),
        ("GET", "/api/sessions/%2e%2E/messages"),
    ];
    assert_refused(&app, &malformed, 400, "invalid_session_id").await;
    assert_refused(
        &app,
        &[("GET", "/api/recalls/.."), ("GET", "/api/recalls/%2E")],
        400,
        "invalid_event_id",
    )
    .await;
    let personas = [
        ("GET", "/api/partner_mood?persona=."),
        ("DELETE", "/api/partner_mood?persona=.."),
        ("DELETE", "/api/partner_mood?persona=%2E%2E"),
        ("GET", "/api/memory?persona=.."),
        ("GET", "/api/memory?persona=%2E"),
    ];
    assert_refused(&app, &personas, 400, "invalid_persona").await;
    // The same ids in a chat body.
    for (body, code) in [
        (
            json!({"session_id": "..", "text": "hi"}),
            "invalid_session_id",
        ),
        (
            json!({"session_id": ".", "text": "hi"}),
            "invalid_session_id",
        ),
        (
            json!({"session_id": "s", "text": "hi", "request_id": ".."}),
            "invalid_request_id",
        ),
    ] {
        let answer = send(&app, "POST", "/api/chat", Some(TOKEN), Some(body.clone())).await;
        assert_refusal(&answer, 400, code, &format!("POST /api/chat {body}"));
    }
    assert_eq!(app.model_calls(), 0);
    finish(app, stored).await;
}

#[tokio::test]
async fn a_plain_get_on_a_websocket_route_answers_400_websocket_required() {
    let (app, stored) = gateway_alone().await;
    for target in ["/api/stage", "/api/stage?stage_id=s1", "/api/events"] {
        let answer = send(&app, "GET", target, Some(TOKEN), None).await;
        assert_refusal(&answer, 400, "websocket_required", &format!("GET {target}"));
        // The message says what the request lacked, not only that it failed.
        assert!(answer.body.contains("upgrade"), "{target}: {answer:?}");
        let head = send(&app, "HEAD", target, Some(TOKEN), None).await;
        assert_refusal(&head, 400, "websocket_required", &format!("HEAD {target}"));
    }
    finish(app, stored).await;
}

#[tokio::test]
async fn headers_that_never_end_get_a_json_408() {
    let app = TestApp::spawn_services(
        &[ServiceName::Gateway],
        &[("GHOST_GATEWAY__HEADER_READ_TIMEOUT_SECS", "1")],
    )
    .await;
    let addr = app.base_url.trim_start_matches("http://");
    let mut tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: ghost\r\n")
        .await
        .expect("write");
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), tcp.read_to_end(&mut raw))
        .await
        .expect("closed after the 408")
        .expect("read");
    let answer = parse(&String::from_utf8_lossy(&raw));
    assert_refusal(&answer, 408, "request_timeout", "half a request");
    assert_eq!(
        answer.header("content-length"),
        Some(answer.body.len().to_string().as_str())
    );
    app.cleanup().await;
}
