//! Routing end to end (seed 002) through the gateway, NATS and Postgres: every case of
//! `fixtures/routing.json` with scripted classifier replies, `/local`, the loop controller,
//! Kuro's delegation and the `ghost route` probe.

mod routing_support;
mod support;

use std::sync::Arc;
use std::time::Duration;

use ghost_router::projections::{RoutingLog, RoutingSessions};
use ghost_shared::envelope::EventPayload;
use ghost_shared::events::{
    ClassifyRequested, LoopDecided, RenderRequested, RouteDecided, WorkRequested,
};
use ghost_testkit::testing::eventually;
use routing_support::{payload, Kind, RoutingApp, Scripts, PERSONA_REPLY};
use serde_json::Value;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/routing.json");

fn fixture() -> Value {
    serde_json::from_str(&std::fs::read_to_string(FIXTURE).expect("fixture")).expect("JSON")
}

/// The scripted classifier reply of a case as the raw text the model sends.
fn scripted_reply(case: &Value) -> Option<String> {
    if let Some(raw) = case.get("classifier_reply_raw").and_then(Value::as_str) {
        return Some(raw.to_owned());
    }
    case.get("classifier_reply").map(Value::to_string)
}

/// What the user sees: the declaration line, then the persona's words.
fn expected_reply(declaration: Option<&str>) -> String {
    match declaration {
        Some(line) => format!("{line}\n{PERSONA_REPLY}"),
        None => PERSONA_REPLY.to_owned(),
    }
}

#[tokio::test]
async fn every_fixture_case_routes_end_to_end_with_its_declaration() {
    let fixture = fixture();
    let cases = fixture["cases"].as_array().expect("cases").clone();
    let declarations = fixture["declarations"].clone();
    let mut scripts = Scripts::default();
    for case in &cases {
        let text = case["text"].as_str().expect("text");
        if let Some(reply) = scripted_reply(case) {
            // The classifier sees the text without leading commands (none of these has one).
            scripts.classifier.insert(text.to_owned(), reply);
        }
    }
    let r = RoutingApp::spawn(scripts, &[]).await;

    // Distinct sessions, all at once; each says its text twice.
    let turns = cases.iter().enumerate().map(|(i, case)| {
        let r = &r;
        async move {
            let session = format!("fx{i}");
            let text = case["text"].as_str().unwrap_or_default();
            let first = r.say(&session, text).await;
            let second = r.say(&session, text).await;
            (session, first, second)
        }
    });
    let results = futures::future::join_all(turns).await;

    let mut code_messages = 0;
    for (case, (session, first, second)) in cases.iter().zip(&results) {
        let text = case["text"].as_str().unwrap_or_default();
        let want_route = case["expect"]["route"].as_str().unwrap_or_default();
        let want_source = case["expect"]["source"].as_str().unwrap_or_default();
        let decided = r.of_type(session, RouteDecided::EVENT_TYPE).await;
        assert_eq!(decided.len(), 2, "{text:?}");
        for d in &decided {
            assert_eq!(d.payload["route"], want_route, "{text:?}: {}", d.payload);
            assert_eq!(d.payload["source"], want_source, "{text:?}: {}", d.payload);
        }
        // Declared on the first message only (CHAT never), before the persona's words.
        let line = declarations[want_route].as_str();
        assert_eq!(first, &expected_reply(line), "{text:?}");
        assert_eq!(second, &expected_reply(None), "{text:?}: same route again");
        // The classifier was asked once per message exactly when the case scripts a reply.
        let asked = r
            .of_type(session, ClassifyRequested::EVENT_TYPE)
            .await
            .len();
        let want_asked = if scripted_reply(case).is_some() { 2 } else { 0 };
        assert_eq!(asked, want_asked, "{text:?}");
        let model_asked = r
            .requests(Kind::Classifier)
            .iter()
            .filter(|q| routing_support::routed_text(q) == text.trim())
            .count();
        assert_eq!(model_asked, want_asked, "{text:?}: classifier model calls");
        // Work ran on the decided route (CHAT: none).
        let works = r.of_type(session, WorkRequested::EVENT_TYPE).await;
        if want_route == "CHAT" {
            assert!(works.is_empty(), "{text:?}");
        } else {
            assert_eq!(works.len(), 2, "{text:?}");
            assert!(works.iter().all(|w| w.payload["route"] == want_route));
        }
        if want_route == "CODE" {
            code_messages += 2;
        }
    }
    // Only CODE reached the cloud, once per CODE message.
    let cloud = r.cloud.requests();
    assert_eq!(
        cloud
            .iter()
            .filter(|q| q.path.ends_with("/chat/completions"))
            .count(),
        code_messages
    );
    assert!(cloud
        .iter()
        .all(|q| q.authorization.as_deref() == Some("Bearer cloud-test-key")));

    // The routing log has one row per message, with the classifier's verdict and failures.
    let explicit = &results[0].0; // "/code …"
    let unparsable = results
        .iter()
        .zip(&cases)
        .find(|(_, c)| c["classifier_reply_raw"].is_string())
        .map(|(r, _)| r.0.clone())
        .expect("an unparsable case");
    let below = results
        .iter()
        .zip(&cases)
        .find(|(_, c)| c["text"] == "どうしよう")
        .map(|(r, _)| r.0.clone())
        .expect("the below-threshold case");
    let rows = |session: String| {
        let r = &r;
        async move {
            let users = r.of_type(&session, "UserMessageReceived").await;
            eventually(Duration::from_secs(15), "routing log rows", || async {
                let mut rows = Vec::new();
                for u in &users {
                    let row = RoutingLog::get(r.app.store.pool(), u.event_id)
                        .await
                        .ok()??;
                    row.final_route.as_ref()?;
                    rows.push(row);
                }
                Some(rows)
            })
            .await
        }
    };
    let code_rows = rows(explicit.clone()).await;
    assert_eq!(code_rows[0].first_route.as_deref(), Some("CODE"));
    assert_eq!(code_rows[0].first_source.as_deref(), Some("explicit"));
    assert!(code_rows[0].user_override);
    assert_eq!(
        (code_rows[0].coder_calls, code_rows[0].worker_calls),
        (1, 0)
    );
    assert_eq!(code_rows[0].final_route.as_deref(), Some("CODE"));
    assert_eq!(code_rows[0].risk.as_deref(), Some("low"));
    assert_eq!(code_rows[0].needs_next_loop, Some(false));
    let failed_rows = rows(unparsable).await;
    assert_eq!(
        failed_rows[0].first_source.as_deref(),
        Some("classifier_failed")
    );
    assert_eq!(failed_rows[0].parse_failures[0]["kind"], "unparsable");
    let below_rows = rows(below).await;
    assert_eq!(below_rows[0].classifier_route.as_deref(), Some("PLAN"));
    assert_eq!(below_rows[0].classifier_confidence, Some(0.3));
    assert_eq!(below_rows[0].final_route.as_deref(), Some("CHAT"));

    // Session state as a projection: the last primary route.
    let session = eventually(Duration::from_secs(15), "session row", || async {
        RoutingSessions::get(r.app.store.pool(), explicit)
            .await
            .ok()?
    })
    .await;
    assert_eq!(session.last_primary_route.as_deref(), Some("CODE"));
    assert!(!session.local_only);

    // One fixed classifier prompt (seed 002): every message, whatever it says, was
    // classified under the same system prompt; only the user message differs.
    let prompts: std::collections::HashSet<String> = r
        .requests(Kind::Classifier)
        .iter()
        .filter_map(|q| q.system_text())
        .collect();
    assert!(r.requests(Kind::Classifier).len() > 2);
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    r.cleanup().await;
}

#[tokio::test]
async fn local_only_sends_nothing_to_the_cloud_until_cloud_lifts_it() {
    let r = RoutingApp::spawn(Scripts::default(), &[]).await;
    let fixture = fixture();
    let sequences = fixture["local_only"].as_array().expect("sequences").clone();
    for (i, seq) in sequences.iter().enumerate() {
        let session = format!("lo{i}");
        let steps: Vec<&str> = seq["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let before = r.cloud.request_count();
        let mut last_reply = String::new();
        for step in &steps {
            last_reply = r.say(&session, step).await;
        }
        let expect = seq["expect"].as_str().unwrap_or_default();
        let renders = r.of_type(&session, RenderRequested::EVENT_TYPE).await;
        let last_render = payload(&renders);
        if expect.contains("runs on the cloud coder") {
            assert_eq!(r.cloud.request_count(), before + 1, "{steps:?}");
            assert_eq!(last_reply, format!("コーディングするね。\n{PERSONA_REPLY}"));
        } else {
            assert_eq!(
                r.cloud.request_count(),
                before,
                "{steps:?}: no cloud request"
            );
            assert_eq!(last_render["notice"], "cloud_required", "{steps:?}");
            // Blocked CODE is not announced as coding.
            assert_eq!(last_reply, PERSONA_REPLY, "{steps:?}");
            // The persona was told to say briefly that /cloud lifts it.
            let persona = r.requests(Kind::Persona);
            let prompt = persona
                .iter()
                .rev()
                .find_map(|q| q.last_user_text())
                .unwrap_or_default();
            assert!(prompt.contains("/cloud"), "{prompt}");
        }
        // The first step, a bare /local, is acknowledged without a route.
        let first = &renders[0].payload;
        assert_eq!(first["notice"], "local_on", "{steps:?}");
    }
    assert_eq!(r.requests(Kind::Work).len(), 0, "nothing else ran");
    r.cleanup().await;
}

/// A worker that loops forever, reports a wrong route, or breaks the contract, by marker.
fn misbehaving_worker(task: &str) -> String {
    if task.contains("loop-forever") {
        r#"{"result":"partial","needs_next_loop":true,"why":"more to do","next_actions":["continue"],"questions_for_user":[],"confidence":0.9,"risk":"low"}"#.to_owned()
    } else if task.contains("wrong-route") {
        let suggested = if task.contains("did not fit") {
            "PLAN"
        } else {
            "OPS"
        };
        format!(
            r#"{{"result":"not mine","needs_next_loop":false,"why":"wrong route","next_actions":[],"questions_for_user":[],"confidence":0.9,"risk":"low","fit":false,"suggested_route":"{suggested}"}}"#
        )
    } else if task.contains("garbage") {
        "了解です、やっておきます".to_owned()
    } else {
        routing_support::CONTRACT_OK.to_owned()
    }
}

#[tokio::test]
async fn loop_controller_limits_loops_reroutes_once_and_stops_on_malformed_output() {
    let scripts = Scripts {
        worker: Some(Arc::new(misbehaving_worker)),
        ..Scripts::default()
    };
    let r = RoutingApp::spawn(scripts, &[]).await;

    // Loop limit (3 in routing.yaml): three runs, then a progress report.
    let reply = r.say("loop", "/plan loop-forever").await;
    assert_eq!(reply, format!("段取りを組むね。\n{PERSONA_REPLY}"));
    let works = r.of_type("loop", WorkRequested::EVENT_TYPE).await;
    let indexes: Vec<u64> = works
        .iter()
        .filter_map(|w| w.payload["loop_index"].as_u64())
        .collect();
    assert_eq!(indexes, [1, 2, 3]);
    assert!(works[1].payload["task"]
        .as_str()
        .unwrap_or_default()
        .contains("continue"));
    let render = payload(&r.of_type("loop", RenderRequested::EVENT_TYPE).await);
    assert_eq!(render["work_result"]["status"], "limit_reached");
    assert_eq!(render["work_result"]["result"], "partial");
    let decisions: Vec<Value> = r
        .of_type("loop", LoopDecided::EVENT_TYPE)
        .await
        .iter()
        .map(|e| e.payload["decision"].clone())
        .collect();
    assert_eq!(decisions, ["another_loop", "another_loop", "limit_reached"]);
    let prompt = r.last_prompt(Kind::Persona);
    assert!(prompt.contains("what input is needed"), "{prompt}");

    // Reroute: PLAN says OPS fits; OPS says PLAN fits — only the first is taken.
    r.say("reroute", "/plan wrong-route").await;
    let works = r.of_type("reroute", WorkRequested::EVENT_TYPE).await;
    let routes: Vec<&str> = works
        .iter()
        .filter_map(|w| w.payload["route"].as_str())
        .collect();
    assert_eq!(routes, ["PLAN", "OPS"]);
    assert_eq!(works[1].payload["reroute"], true);
    let render = payload(&r.of_type("reroute", RenderRequested::EVENT_TYPE).await);
    assert_eq!(render["work_result"]["route"], "OPS");
    assert_eq!(render["work_result"]["status"], "done");

    // Malformed output: a failure, no further loop, a short failure summary.
    r.say("garbage", "/ops garbage").await;
    let works = r.of_type("garbage", WorkRequested::EVENT_TYPE).await;
    assert_eq!(works.len(), 1);
    let render = payload(&r.of_type("garbage", RenderRequested::EVENT_TYPE).await);
    assert_eq!(render["work_result"]["status"], "failed");
    assert!(
        render["work_result"]["result"].is_null(),
        "no raw output is conveyed"
    );
    let decided = payload(&r.of_type("garbage", LoopDecided::EVENT_TYPE).await);
    assert_eq!(decided["decision"], "render_failure");
    assert!(decided["failure"]
        .as_str()
        .unwrap_or_default()
        .starts_with("unparsable"));
    r.cleanup().await;
}

#[tokio::test]
async fn kuro_mode_delegates_through_the_same_gates() {
    let mut scripts = Scripts::default();
    scripts.kuro.insert(
        "引っ越しどうしよう".into(),
        r#"{"route":"PLAN","confidence":0.9,"reason":"段取り","evidence":["引っ越し"]}"#.into(),
    );
    scripts.kuro.insert(
        "ちょっと手伝ってほしい".into(),
        r#"{"route":"CODE","confidence":0.99,"reason":"?","evidence":[]}"#.into(),
    );
    scripts
        .kuro
        .insert("ねえねえ".into(), "I think PLAN".into());
    let r = RoutingApp::spawn(scripts, &[("GHOST_ROUTING__ENTRY_MODES__HTTP", "kuro")]).await;

    let reply = r.say("k1", "引っ越しどうしよう").await;
    assert_eq!(reply, format!("段取りを組むね。\n{PERSONA_REPLY}"));
    let d = payload(&r.of_type("k1", RouteDecided::EVENT_TYPE).await);
    assert_eq!(
        (d["route"].as_str(), d["source"].as_str()),
        (Some("PLAN"), Some("kuro"))
    );
    assert_eq!(d["entry"], "line_forced_chat");
    // The CODE guard applies to Kuro as to the classifier: no evidence, no CODE.
    r.say("k2", "ちょっと手伝ってほしい").await;
    let d = payload(&r.of_type("k2", RouteDecided::EVENT_TYPE).await);
    assert_eq!(
        (d["route"].as_str(), d["source"].as_str()),
        (Some("CHAT"), Some("kuro"))
    );
    assert_eq!(d["detail"]["fallback"]["kind"], "code_guard");
    // Unparsable delegation: discarded, CHAT.
    r.say("k3", "ねえねえ").await;
    let d = payload(&r.of_type("k3", RouteDecided::EVENT_TYPE).await);
    assert_eq!(d["source"], "kuro_failed");
    // Explicit commands come first: Kuro is not asked.
    r.say("k4", "/ops nginx").await;
    let d = payload(&r.of_type("k4", RouteDecided::EVENT_TYPE).await);
    assert_eq!(d["source"], "explicit");
    assert_eq!(r.requests(Kind::Kuro).len(), 3);
    assert_eq!(
        r.requests(Kind::Classifier).len(),
        0,
        "no front classifier in kuro mode"
    );
    assert_eq!(r.cloud.request_count(), 0);
    r.cleanup().await;
}

/// Seed 002's CODE gate: 0.8 and above *plus strong evidence re-checked*. Kuro is sure
/// (0.99) that "fizzbuzzをRustで書いて" is CODE, but a coding request without an artefact (no
/// code block, diff, trace or file name) is only weak evidence: CHAT, logged as the guard's
/// fallback, and nothing reaches the cloud. With a code block the same decision is CODE.
#[tokio::test]
async fn code_from_a_model_needs_strong_evidence_not_a_coding_request() {
    let mut scripts = Scripts::default();
    let sure =
        r#"{"route":"CODE","confidence":0.99,"reason":"コード","evidence":["Rustで書いて"]}"#;
    let weak = "fizzbuzzをRustで書いて";
    let strong = "これ直して\n```python\nprint(1/0)\n```";
    scripts.kuro.insert(weak.into(), sure.into());
    scripts.kuro.insert(strong.into(), sure.into());
    let r = RoutingApp::spawn(scripts, &[("GHOST_ROUTING__ENTRY_MODES__HTTP", "kuro")]).await;

    r.say("weak", weak).await;
    let d = payload(&r.of_type("weak", RouteDecided::EVENT_TYPE).await);
    assert_eq!(d["route"], "CHAT", "{d}");
    assert_eq!(d["detail"]["fallback"]["kind"], "code_guard", "{d}");
    assert_eq!(d["detail"]["fallback"]["evidence_found"], false, "{d}");
    assert_eq!(r.cloud.request_count(), 0, "no cloud for weak evidence");

    r.say("strong", strong).await;
    let d = payload(&r.of_type("strong", RouteDecided::EVENT_TYPE).await);
    assert_eq!(d["route"], "CODE", "{d}");
    assert!(
        r.cloud.request_count() > 0,
        "the code block is strong evidence"
    );
    r.cleanup().await;
}

#[tokio::test]
async fn short_memory_is_summarized_and_used_in_prompts() {
    let r = RoutingApp::spawn(
        Scripts::default(),
        &[("GHOST_ROUTING__SUMMARIZE_AFTER_TURNS", "2")],
    )
    .await;
    r.say("m", "/chat one").await;
    r.say("m", "/chat two").await;
    eventually(Duration::from_secs(15), "summary row", || async {
        RoutingSessions::get(r.app.store.pool(), "m")
            .await
            .ok()?
            .and_then(|s| s.summary)
    })
    .await;
    r.say("m", "/plan three").await;
    let work = r.requests(Kind::Work);
    let task = work
        .last()
        .and_then(|q| q.last_user_text())
        .unwrap_or_default();
    assert!(task.contains("short summary of the talk"), "{task}");
    // The reply gets it in the message it answers, as the SUMMARY block.
    let persona = r.requests(Kind::Persona);
    let message = persona
        .last()
        .and_then(|q| q.last_user_text())
        .unwrap_or_default();
    assert!(message.contains("short summary of the talk"), "{message}");
    assert_eq!(r.requests(Kind::Summary).len(), 1);
    r.cleanup().await;
}

#[test]
fn route_probe_prints_the_first_stage_as_json() {
    let run = |args: &[&str], input: &str| -> Value {
        use std::io::Write;
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ghost"))
            .arg("route")
            .args(args)
            .env(
                "GHOST_CONFIG_DIR",
                concat!(env!("CARGO_MANIFEST_DIR"), "/config"),
            )
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("run ghost route");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write");
        let out = child.wait_with_output().expect("output");
        assert!(out.status.success());
        serde_json::from_slice(&out.stdout).expect("one JSON object")
    };
    let out = run(&[], "sudo systemctl restart nginx\n");
    assert_eq!(out["route"], "OPS");
    assert_eq!(out["source"], "rule");
    assert!(!out["evidence"].as_array().expect("evidence").is_empty());
    let out = run(&[], "/code fizzbuzz");
    assert_eq!(
        out,
        serde_json::json!({"route":"CODE","source":"explicit","evidence":["/code"]})
    );
    let out = run(&[], "「/code」って書いてみて");
    assert_eq!(out["source"], "classifier_needed");
    let out = run(&["--local-only"], "/code fizzbuzz");
    assert_eq!(out["route"], "CHAT");
    assert_eq!(out["notice"], "cloud_required");
}

/// A number its writer names as a national ID never reaches the cloud coder, whatever its
/// check digit (`1234 5678 9012` fails My Number's): the words say what it is, also with
/// words between label and number ("マイナンバーカードの番号は …") and for each country's ID
/// the category holds (issue 47 item 10).
#[tokio::test]
async fn a_number_named_as_a_national_id_never_reaches_the_cloud() {
    let r = RoutingApp::spawn(Scripts::default(), &[]).await;
    r.say(
        "myno",
        "/code validate this form field\nマイナンバー 1234 5678 9012\nmy SSN is 999-12-3456\n\
         マイナンバーカードの番号は 2345 6789 0123\n個人番号（マイナンバー）は、3456-7890-1233\n\
         身份证号码是 110105194912310021\nmy national insurance number is qq 12 34 56 c",
    )
    .await;
    let cloud = r.cloud.requests();
    assert!(!cloud.is_empty(), "the code went to the cloud");
    for request in &cloud {
        let body = request.body.to_string();
        for private in [
            "1234 5678 9012",
            "999-12-3456",
            "2345 6789 0123",
            "3456-7890-1233",
            "110105194912310021",
            "qq 12 34 56 c",
        ] {
            assert!(
                !body.contains(private),
                "{private} reached the cloud: {body}"
            );
        }
        assert!(body.contains("[REDACTED:national_id]"), "{body}");
    }
    r.cleanup().await;
}

/// The declaration follows the route that answered: PLAN rerouted to OPS is declared as OPS,
/// and the next OPS message declares nothing (it is compared against OPS, not PLAN).
#[tokio::test]
async fn a_reroute_is_declared_and_the_next_message_is_compared_against_it() {
    // The worker reads only the task's request: the earlier turns it is given mention
    // "wrong-route" too.
    let request_only = |task: &str| {
        let request = ghost_shared::llm::Fence::data_of(task, "REQUEST").unwrap_or(task);
        let note = if task.contains("did not fit") {
            " (did not fit)"
        } else {
            ""
        };
        misbehaving_worker(&format!("{request}{note}"))
    };
    let scripts = Scripts {
        worker: Some(Arc::new(request_only)),
        ..Scripts::default()
    };
    let r = RoutingApp::spawn(scripts, &[]).await;
    let reply = r.say("decl", "/plan wrong-route").await;
    let works = r.of_type("decl", WorkRequested::EVENT_TYPE).await;
    assert_eq!(works.len(), 2, "PLAN, then the reroute to OPS");
    assert_eq!(reply, format!("手順で案内するね。\n{PERSONA_REPLY}"));

    let reply = r.say("decl", "/ops next step please").await;
    assert_eq!(reply, PERSONA_REPLY, "OPS again: nothing to declare");
    let reply = r.say("decl", "/plan a fresh plan").await;
    assert_eq!(reply, format!("段取りを組むね。\n{PERSONA_REPLY}"));
    r.cleanup().await;
}

/// Short memory leaves no gap (seed 002 §9): consecutive summaries fold in every line between
/// them, and the persona and the worker see every line since the latest summary (however
/// few lines their minimum is), so each exchange is in the summary or in the window.
#[tokio::test]
async fn short_memory_leaves_no_gap_between_the_summary_and_the_window() {
    let r = RoutingApp::spawn(
        Scripts::default(),
        &[
            ("GHOST_ROUTING__SUMMARIZE_AFTER_TURNS", "4"),
            ("GHOST_ROUTING__RECENT_TURNS", "2"),
            ("GHOST_PERSONA__HISTORY_TURNS", "2"),
        ],
    )
    .await;
    let summary_at = |n: i32| {
        let pool = r.app.store.pool().clone();
        async move {
            eventually(Duration::from_secs(20), "the summary", || async {
                RoutingSessions::get(&pool, "gap")
                    .await
                    .ok()?
                    .filter(|s| s.summary_turns >= n)
            })
            .await
        }
    };
    for i in 1..=8 {
        r.say("gap", &format!("/chat m{i}")).await;
        if i % 4 == 0 {
            summary_at(i).await;
        }
    }
    r.say("gap", "/chat m9").await;
    r.say("gap", "/plan m10").await;

    // The second summary folded in exactly what came after the first one's message.
    let summaries: Vec<String> = r
        .requests(Kind::Summary)
        .iter()
        .filter_map(|q| q.last_user_text())
        .collect();
    assert_eq!(summaries.len(), 2, "{summaries:?}");
    for i in 1..=4 {
        assert!(
            summaries[0].contains(&said_by_user(&format!("/chat m{i}"))),
            "{}",
            summaries[0]
        );
    }
    let second = &summaries[1];
    assert!(second.contains("[previous summary]"), "{second}");
    for i in 5..=8 {
        assert!(
            second.contains(&said_by_user(&format!("/chat m{i}"))),
            "{second}"
        );
    }
    assert!(!second.contains(&said_by_user("/chat m4")), "{second}");

    // The reply to m10 and the worker's task see m8 (the summary's message) and m9, and
    // their minimum windows (two lines) before m8: m7 and its reply, not m6.
    let persona = r
        .requests(Kind::Persona)
        .pop()
        .expect("the reply's request");
    let history: Vec<String> = persona
        .messages()
        .iter()
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect();
    for said in ["/chat m8", "/chat m9"] {
        assert!(
            history.iter().any(|h| h == said),
            "{said} not in {history:?}"
        );
    }
    assert!(history.iter().any(|h| h == "/chat m7"), "{history:?}");
    assert!(!history.iter().any(|h| h == "/chat m6"), "{history:?}");
    let task = r
        .requests(Kind::Work)
        .pop()
        .and_then(|q| q.last_user_text())
        .unwrap_or_default();
    for said in ["/chat m8", "/chat m9"] {
        assert!(task.contains(&said_by_user(said)), "{said} not in {task}");
    }
    r.cleanup().await;
}

/// `text` as a transcript holds a line the user said (its speaker a field of its own).
fn said_by_user(text: &str) -> String {
    serde_json::json!({"speaker": "user", "text": text}).to_string()
}
