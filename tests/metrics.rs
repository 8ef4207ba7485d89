//! Prometheus metrics: the gateway's `/metrics` after real turns (checked by promtool),
//! the listener of `ghost run <service>`, and the operator files (Prometheus configuration,
//! dashboards, compose stack) kept consistent with what Ghost exports.

mod support;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use ghost::stack::ServiceName;
use ghost_testkit::fake_llm::Script;
use support::TestApp;
use tokio::io::{AsyncBufReadExt, BufReader};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `promtool <args>` with `input` on stdin: (success, stdout + stderr). promtool comes
/// from Debian's `prometheus` package (deploy/services.sh installs it).
fn promtool(args: &[&str], input: &[u8]) -> (bool, String) {
    let mut child = std::process::Command::new("promtool")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian package `prometheus`; deploy/services.sh installs it)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("write to promtool");
    let out = child.wait_with_output().expect("promtool output");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Series name with labels → value, from the text exposition.
fn samples(text: &str) -> HashMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_owned(), value.parse().ok()?))
        })
        .collect()
}

/// The metric names (`ghost_…`) every dashboard panel's queries use.
fn dashboard_metrics() -> Vec<(String, String)> {
    let dir = repo().join("deploy/grafana/dashboards");
    let mut found = Vec::new();
    let names = regex::Regex::new(r"ghost_[a-z_]+").expect("regex");
    let labels = regex::Regex::new(r"by \([^)]*\)|\{[^}]*\}").expect("regex");
    for entry in std::fs::read_dir(&dir).expect("deploy/grafana/dashboards") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let dashboard: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read dashboard"))
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let panels = dashboard["panels"].as_array().expect("panels");
        assert!(!panels.is_empty(), "{} has no panels", path.display());
        for panel in panels {
            let title = panel["title"].as_str().unwrap_or("?").to_owned();
            let targets = panel["targets"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            for target in targets {
                // Label names (`by (ghost_instance)`, `{ghost_instance=~"…"}`) are no metrics.
                let expr = labels.replace_all(target["expr"].as_str().unwrap_or_default(), "");
                for m in names.find_iter(&expr) {
                    found.push((title.clone(), m.as_str().to_owned()));
                }
            }
        }
    }
    assert!(!found.is_empty(), "no panel queries a ghost_ metric");
    found
}

/// A short run (a chat turn, the stage, a refused webhook), then `/metrics`: promtool
/// accepts it, the turn shows in the turn, consumer, LLM and projection families, and every
/// metric a dashboard panel queries is there.
#[tokio::test]
async fn gateway_metrics_after_a_short_run_pass_promtool_and_feed_every_panel() {
    let app = TestApp::spawn(&[]).await;
    app.reply(Script::chunks(vec!["Hello", " from", " Kuro."]));
    let events = app.chat("metrics-s1", "こんにちは").await;
    assert_eq!(events.last().map(|e| e.event.as_str()), Some("done"));
    let refused = app
        .http
        .post(format!("{}/webhooks/line", app.base_url))
        .body("{}")
        .send()
        .await
        .expect("webhook");
    assert!(!refused.status().is_success());

    // The projections measure their lag about once a second.
    let text = ghost_testkit::testing::eventually(
        std::time::Duration::from_secs(20),
        "projection lag measured",
        || async {
            let response = app
                .http
                .get(format!("{}/metrics", app.base_url))
                .send()
                .await
                .ok()?;
            let text = response.text().await.ok()?;
            let seen = text.contains("ghost_projection_lag_events{projection=\"assistant_text\"}")
                && !text.contains("ghost_turns_finished_total{channel=\"http\"} 0");
            seen.then_some(text)
        },
    )
    .await;

    let (ok, report) = promtool(&["check", "metrics"], text.as_bytes());
    assert!(ok, "promtool check metrics failed:\n{report}\n{text}");

    let s = samples(&text);
    let at_least_one = |series: &str| {
        let v = s.get(series).copied().unwrap_or(0.0);
        assert!(v >= 1.0, "{series} = {v}\n{text}");
    };
    at_least_one("ghost_turns_started_total{channel=\"http\"}");
    at_least_one("ghost_turns_finished_total{channel=\"http\"}");
    at_least_one("ghost_turn_duration_seconds_count{channel=\"http\",outcome=\"finished\"}");
    at_least_one("ghost_llm_calls_total{role=\"persona\",outcome=\"ok\"}");
    at_least_one("ghost_llm_tokens_total{role=\"persona\",kind=\"completion\"}");
    at_least_one("ghost_consumer_deliveries_total{consumer=\"persona_RenderRequested\"}");
    at_least_one("ghost_webhook_rejections_total{platform=\"line\",reason=\"not_configured\"}");
    assert!(text.contains("ghost_outbox_depth "), "{text}");
    assert!(
        text.contains("ghost_consumer_handler_duration_seconds_bucket{consumer=\"persona_RenderRequested\",outcome=\"ok\",le=\"0.005\"}"),
        "{text}"
    );

    let names: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(['{', ' ']).next())
        .collect();
    for (panel, metric) in dashboard_metrics() {
        assert!(
            names.contains(&metric.as_str()),
            "panel {panel:?} queries {metric}, which /metrics does not have after a short run"
        );
    }
    app.cleanup().await;
}

/// `ghost run router` (no gateway in the process) serves its metrics on
/// `telemetry.metrics_listen`, and they pass promtool.
#[tokio::test]
async fn ghost_run_serves_metrics_on_its_listener() {
    let app = TestApp::spawn_services(&[ServiceName::Gateway], &[]).await;
    let mut child = app
        .child_command("router", &[])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn ghost run router");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let url = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.expect("stdout line") {
            if let Some(url) = line.strip_prefix("ghost: metrics on ") {
                return url.to_owned();
            }
        }
        panic!("ghost run router ended without a metrics line");
    })
    .await
    .expect("metrics line within 60 s");
    let text = ghost_testkit::testing::eventually(
        std::time::Duration::from_secs(20),
        "router consumers registered",
        || async {
            let text = reqwest::get(&url).await.ok()?.text().await.ok()?;
            text.contains("consumer=\"router_UserMessageReceived\"")
                .then_some(text)
        },
    )
    .await;
    let (ok, report) = promtool(&["check", "metrics"], text.as_bytes());
    assert!(ok, "promtool check metrics failed:\n{report}\n{text}");
    let _ = child.kill().await;
    app.cleanup().await;
}

#[test]
fn prometheus_configuration_passes_promtool() {
    let path = repo().join("deploy/prometheus.yml");
    let (ok, report) = promtool(
        &["check", "config", path.to_str().expect("utf-8 path")],
        b"",
    );
    assert!(ok, "promtool check config deploy/prometheus.yml:\n{report}");
}

/// Every service `ghost run` knows runs in docker-compose.yml (as `ghost run <name>`), and
/// Prometheus scrapes each at the address compose gives its metrics.
#[test]
fn compose_runs_every_service_and_prometheus_scrapes_each() {
    let mut compose: serde_norway::Value = serde_norway::from_str(
        &std::fs::read_to_string(repo().join("docker-compose.yml")).expect("docker-compose.yml"),
    )
    .expect("docker-compose.yml is YAML");
    compose.apply_merge().expect("YAML merge keys");
    let prometheus: serde_norway::Value = serde_norway::from_str(
        &std::fs::read_to_string(repo().join("deploy/prometheus.yml"))
            .expect("deploy/prometheus.yml"),
    )
    .expect("deploy/prometheus.yml is YAML");
    let targets: Vec<String> = prometheus["scrape_configs"]
        .as_sequence()
        .expect("scrape_configs")
        .iter()
        .flat_map(|job| {
            job["static_configs"]
                .as_sequence()
                .cloned()
                .unwrap_or_default()
        })
        .flat_map(|c| c["targets"].as_sequence().cloned().unwrap_or_default())
        .filter_map(|t| t.as_str().map(str::to_owned))
        .collect();
    let services = compose["services"].as_mapping().expect("services");
    // Every service `ghost up` runs (the write-plan service too).
    let every = ServiceName::ALL
        .iter()
        .copied()
        .chain([ServiceName::WritePlan]);
    for service in every {
        let name = service.as_str();
        let entry = services
            .get(name)
            .unwrap_or_else(|| panic!("docker-compose.yml has no service {name}"));
        let command: Vec<&str> = entry["command"]
            .as_sequence()
            .unwrap_or_else(|| panic!("{name}: no command"))
            .iter()
            .filter_map(|c| c.as_str())
            .collect();
        assert_eq!(
            command,
            ["run", name],
            "{name} does not run `ghost run {name}`"
        );
        let env = &entry["environment"];
        let port = if service == ServiceName::Gateway {
            8080
        } else {
            let base = env["GHOST_TELEMETRY__METRICS_LISTEN"]
                .as_str()
                .unwrap_or_else(|| panic!("{name} sets no GHOST_TELEMETRY__METRICS_LISTEN"));
            ghost::stack::metrics_address(base, &[service])
                .expect("metrics address")
                .port()
        };
        let target = format!("{name}:{port}");
        assert!(
            targets.contains(&target),
            "deploy/prometheus.yml does not scrape {target}: {targets:?}"
        );
        if service != ServiceName::Gateway {
            let listen = env["GHOST_TELEMETRY__METRICS_LISTEN"].as_str();
            assert!(
                listen.is_some_and(|l| l.starts_with("0.0.0.0:")),
                "{name} does not open its metrics listener to Prometheus: {listen:?}"
            );
        }
    }
    for infra in ["postgres", "nats", "jaeger", "prometheus", "grafana"] {
        assert!(
            services.contains_key(infra),
            "docker-compose.yml has no {infra}"
        );
    }
    let grafana_mounts = format!("{:?}", services["grafana"]["volumes"]);
    assert!(
        grafana_mounts.contains("./deploy/grafana"),
        "grafana is not provisioned from deploy/grafana: {grafana_mounts}"
    );
}

/// The Grafana provisioning names both data sources the dashboards use, and every panel
/// that shows Ghost's traffic links to its traces in Jaeger.
#[test]
fn grafana_provisions_prometheus_and_jaeger_and_panels_link_to_traces() {
    let sources: serde_norway::Value = serde_norway::from_str(
        &std::fs::read_to_string(repo().join("deploy/grafana/provisioning/datasources/ghost.yml"))
            .expect("datasources"),
    )
    .expect("datasources YAML");
    let kinds: Vec<&str> = sources["datasources"]
        .as_sequence()
        .expect("datasources list")
        .iter()
        .filter_map(|d| d["type"].as_str())
        .collect();
    assert!(kinds.contains(&"prometheus"), "{kinds:?}");
    assert!(kinds.contains(&"jaeger"), "{kinds:?}");
    let overview =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/grafana/dashboards/ghost-overview.json");
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(overview).expect("overview")).expect("JSON");
    for panel in dashboard["panels"].as_array().expect("panels") {
        if panel["type"] == "row" {
            continue;
        }
        let links = panel["links"].to_string();
        assert!(
            links.contains("/explore") && links.contains("jaeger"),
            "panel {} links to no Jaeger traces: {links}",
            panel["title"]
        );
    }
}

/// The cluster profile (issue 36): three NATS nodes routed to each other with JetStream,
/// two instances of every Ghost service on them at three replicas, a Postgres primary of
/// their own, and a Prometheus (its configuration passes promtool) scraping every instance.
#[test]
fn compose_cluster_profile_runs_two_of_every_service_on_three_nats_nodes() {
    let mut compose: serde_norway::Value = serde_norway::from_str(
        &std::fs::read_to_string(repo().join("docker-compose.yml")).expect("docker-compose.yml"),
    )
    .expect("docker-compose.yml is YAML");
    compose.apply_merge().expect("YAML merge keys");
    let services = compose["services"].as_mapping().expect("services");
    let in_cluster = |name: &str| {
        let entry = services
            .get(name)
            .unwrap_or_else(|| panic!("docker-compose.yml has no service {name}"));
        let profiles = format!("{:?}", entry["profiles"]);
        assert!(profiles.contains("cluster"), "{name}: profiles {profiles}");
        entry.clone()
    };
    let routes = "nats://nats-1:6222,nats://nats-2:6222,nats://nats-3:6222";
    for n in 1..=3 {
        let node = in_cluster(&format!("nats-{n}"));
        let command: Vec<&str> = node["command"]
            .as_sequence()
            .expect("nats command")
            .iter()
            .filter_map(|c| c.as_str())
            .collect();
        for flag in ["-js", "--cluster", "--cluster_name", "--routes", routes] {
            assert!(
                command.contains(&flag),
                "nats-{n} lacks {flag}: {command:?}"
            );
        }
    }
    in_cluster("postgres-primary");
    let prometheus = in_cluster("prometheus-cluster");
    assert!(
        format!("{:?}", prometheus["volumes"]).contains("./deploy/prometheus-cluster.yml"),
        "prometheus-cluster does not load deploy/prometheus-cluster.yml"
    );
    let path = repo().join("deploy/prometheus-cluster.yml");
    let (ok, report) = promtool(
        &["check", "config", path.to_str().expect("utf-8 path")],
        b"",
    );
    assert!(ok, "promtool check config {}:\n{report}", path.display());
    let config: serde_norway::Value =
        serde_norway::from_str(&std::fs::read_to_string(&path).expect("prometheus-cluster"))
            .expect("YAML");
    let targets = format!("{:?}", config["scrape_configs"]);
    for service in ServiceName::ALL
        .iter()
        .copied()
        .chain([ServiceName::WritePlan])
    {
        let name = service.as_str();
        for k in 1..=2 {
            let instance = format!("{name}-{k}");
            let entry = in_cluster(&instance);
            let command = format!("{:?}", entry["command"]);
            assert!(
                command.contains("run") && command.contains(&format!("\"{name}\"")),
                "{instance} does not run `ghost run {name}`: {command}"
            );
            let env = &entry["environment"];
            assert_eq!(env["GHOST_BUS__REPLICAS"].as_str(), Some("3"), "{instance}");
            let nodes = format!(
                "{},{}",
                env["GHOST_BUS__URL"].as_str().unwrap_or_default(),
                env["GHOST_BUS__SERVERS"].as_str().unwrap_or_default()
            );
            for n in 1..=3 {
                assert!(
                    nodes.contains(&format!("nats://nats-{n}:4222")),
                    "{instance} does not list nats-{n}: {nodes}"
                );
            }
            assert!(
                env["GHOST_DATABASE__URL"]
                    .as_str()
                    .is_some_and(|u| u.contains("@postgres-primary:")),
                "{instance} is not on the cluster's Postgres"
            );
            let port = if service == ServiceName::Gateway {
                8080
            } else {
                let base = env["GHOST_TELEMETRY__METRICS_LISTEN"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{instance} sets no metrics listener"));
                ghost::stack::metrics_address(base, &[service])
                    .expect("metrics address")
                    .port()
            };
            let target = format!("{instance}:{port}");
            assert!(
                targets.contains(&target),
                "deploy/prometheus-cluster.yml does not scrape {target}"
            );
        }
    }
}

/// The cluster's per-instance dashboard: on the cluster's Prometheus (a Grafana data source),
/// every panel split by the `ghost_instance` label that deploy/prometheus-cluster.yml puts
/// on every scrape target, and filtered by the dashboard's instance variable.
#[test]
fn the_instances_dashboard_shows_a_row_per_instance_of_the_cluster() {
    let read = |p: &str| std::fs::read_to_string(repo().join(p)).expect(p);
    let dashboard: serde_json::Value =
        serde_json::from_str(&read("deploy/grafana/dashboards/ghost-instances.json"))
            .expect("JSON");
    let sources: serde_norway::Value =
        serde_norway::from_str(&read("deploy/grafana/provisioning/datasources/ghost.yml"))
            .expect("YAML");
    let cluster_source = sources["datasources"]
        .as_sequence()
        .expect("datasources")
        .iter()
        .find(|d| d["uid"].as_str() == Some("prometheus-cluster"))
        .expect("a prometheus-cluster data source");
    assert_eq!(
        cluster_source["url"].as_str(),
        Some("http://prometheus-cluster:9090")
    );
    let variable = &dashboard["templating"]["list"][0];
    assert_eq!(variable["name"], "instance");
    assert_eq!(variable["query"], "label_values(up, ghost_instance)");
    let panels = dashboard["panels"].as_array().expect("panels");
    assert!(panels.len() >= 6, "{}", panels.len());
    for panel in panels {
        let title = &panel["title"];
        assert_eq!(panel["datasource"]["uid"], "prometheus-cluster", "{title}");
        for target in panel["targets"].as_array().expect("targets") {
            let expr = target["expr"].as_str().unwrap_or_default();
            assert!(expr.contains("by (ghost_instance"), "{title}: {expr}");
            assert!(
                expr.contains("ghost_instance=~\"$instance\""),
                "{title}: {expr}"
            );
        }
    }
    // Every Ghost scrape target of the cluster's Prometheus carries the label the panels
    // split by.
    let config: serde_norway::Value =
        serde_norway::from_str(&read("deploy/prometheus-cluster.yml")).expect("YAML");
    let mut targets = 0;
    let jobs = config["scrape_configs"].as_sequence().expect("jobs");
    for job in jobs.iter().filter(|j| {
        j["job_name"]
            .as_str()
            .is_some_and(|n| n.starts_with("ghost-"))
    }) {
        for group in job["static_configs"].as_sequence().expect("static_configs") {
            targets += 1;
            assert!(
                group["labels"]["ghost_instance"].as_str().is_some(),
                "{group:?} has no ghost_instance"
            );
        }
    }
    assert!(targets >= 14, "{targets} targets");
}
