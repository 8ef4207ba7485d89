//! Beyond one machine (issue 36): `ghost-harness chaos --cluster` builds, as root, three NATS
//! servers (JetStream, R3 streams) and two Ghost hosts each running every service in
//! network namespaces, with a private Postgres. Faults come while messages are sent: the
//! stream leader's NATS server SIGKILLed, a whole host SIGKILLed, a host cut off, Postgres
//! restarted. Every accepted message is answered exactly once, every reminder due during
//! the faults is pushed once, every fault recovers, and nothing of the run is left. Across
//! hosts, `/local` then a code paste never reaches the cloud.
//!
//! The runs need root (CI runs the suite as root): without it the tests fail and say so.
//! The two tests take turns (each builds a cluster; two at once would only compete for
//! the CPU).

mod support;

use std::sync::Mutex;

use serde_json::Value;
use support::run_harness;

/// One cluster at a time.
static CLUSTER: Mutex<()> = Mutex::new(());

fn require_root() {
    let uid = std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    assert_eq!(
        uid, "0",
        "tests/cluster.rs builds network namespaces and must run as root (CI does); \
         run `cargo test -p ghost-harness --test cluster` as root"
    );
}

/// Runs `ghost-harness chaos --cluster <args> --json` and checks the cleanup itself too.
fn cluster_run(args: &[&str]) -> (bool, Value, String) {
    require_root();
    let _turn = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let mut all = vec!["chaos", "--cluster", "--json"];
    all.extend_from_slice(args);
    let (ok, report, stderr) = run_harness(&all, b"");
    assert!(report.is_object(), "no JSON report; stderr: {stderr}");
    let id = report["run_id"].as_str().unwrap_or_default().to_owned();
    assert_eq!(id.len(), 6, "{report}");
    assert_eq!(
        report["left_behind"],
        serde_json::json!({"namespaces": [], "processes": [], "directory": false}),
        "{report}"
    );
    let netns = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip netns list");
    let netns = String::from_utf8_lossy(&netns.stdout);
    assert!(
        !netns.contains(&format!("-{id}-")),
        "namespaces left: {netns}"
    );
    let links = std::process::Command::new("ip")
        .args(["-o", "link"])
        .output()
        .expect("ip link");
    assert!(
        !String::from_utf8_lossy(&links.stdout).contains(&format!("gc{id}")),
        "interfaces left"
    );
    (ok, report, stderr)
}

#[test]
fn two_hundred_messages_through_every_cluster_fault_lose_and_duplicate_nothing() {
    // The partition is 8 s here (30 s is the command's default) to keep CI short.
    let (ok, report, stderr) = cluster_run(&[
        "--messages",
        "201",
        "--concurrency",
        "8",
        "--partition-secs",
        "8",
        "--settle-secs",
        "120",
    ]);
    let total = &report["total"];
    assert_eq!(total["sent"], 201, "{report}");
    assert_eq!(total["accepted"], 201, "{report}");
    assert_eq!(total["lost"], 0, "{report}");
    assert_eq!(total["duplicated"], 0, "{report}");
    assert_eq!(total["answered_once"], 201, "{report}");
    let faults = report["faults"].as_array().cloned().unwrap_or_default();
    let kinds: Vec<&str> = faults.iter().filter_map(|f| f["fault"].as_str()).collect();
    assert_eq!(
        kinds,
        ["nats-leader", "host-kill", "partition", "postgres-restart"],
        "{report}"
    );
    for f in &faults {
        assert!(f["window"]["accepted"].as_u64() > Some(0), "{f}");
        assert!(
            f["answers_flow_after_secs"].is_number(),
            "answers flow again after {f}"
        );
        assert!(
            f["in_flight_answered_after_secs"].is_number(),
            "messages in flight at {f}"
        );
    }
    // Twenty reminders came due during the faults: each pushed to LINE once, one outcome.
    let reminders = &report["reminders"];
    let figures = ["wanted", "asked", "delivered_once", "doubled", "missing"]
        .map(|k| reminders[k].as_u64().unwrap_or(u64::MAX));
    assert_eq!(figures, [20, 20, 20, 0, 0], "{reminders}");
    assert_eq!(report["quiescent"], true, "{report}");
    assert!(ok, "exit status non-zero; stderr: {stderr}");
}

#[test]
fn local_then_code_across_two_hosts_never_reaches_the_cloud() {
    let (ok, report, stderr) = cluster_run(&["--order-pairs", "20"]);
    let order = &report["order"];
    assert_eq!(order["pairs"], 20, "{report}");
    assert_eq!(order["batched"], 10, "{report}");
    assert_eq!(order["back_to_back"], 10, "{report}");
    assert_eq!(order["decisions"], 40, "{report}");
    assert_eq!(order["answered"], 40, "{report}");
    assert_eq!(order["local_only_lost"], 0, "{report}");
    assert_eq!(order["cloud_calls"], 0, "{report}");
    assert!(ok, "exit status non-zero; stderr: {stderr}");
}
