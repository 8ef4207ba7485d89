//! Chaos (issue 10, item 9): `ghost-harness chaos` runs every service as its own process, sends
//! mixed HTTP, LINE and Slack messages, SIGKILLs and restarts services during the traffic,
//! and every accepted message is answered exactly once.

mod support;

use support::run_harness;

#[test]
fn a_hundred_messages_through_three_kills_lose_and_duplicate_nothing() {
    let (ok, report, stderr) = run_harness(
        &[
            "chaos",
            "--messages",
            "99",
            "--kills",
            "3",
            "--kill-interval-ms",
            "1500",
            "--concurrency",
            "8",
            "--json",
        ],
        b"",
    );
    assert!(report.is_object(), "no JSON report; stderr: {stderr}");
    let total = &report["total"];
    assert_eq!(
        report["kills"].as_array().map(Vec::len),
        Some(3),
        "{report}"
    );
    assert_eq!(total["sent"], 99, "{report}");
    assert_eq!(total["accepted"], 99, "{report}");
    assert_eq!(total["lost"], 0, "{report}");
    assert_eq!(total["duplicated"], 0, "{report}");
    assert_eq!(total["answered_once"], 99, "{report}");
    for channel in ["http", "line", "slack"] {
        assert_eq!(report[channel]["answered_once"], 33, "{channel}: {report}");
    }
    assert_eq!(report["quiescent"], true, "{report}");
    assert!(ok, "exit status non-zero; stderr: {stderr}");
}
