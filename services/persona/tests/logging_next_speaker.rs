//! The `operation` log: every decision at INFO with the seed's four fields, failures at
//! WARN, and the end of the loop (`none`) at ERROR.

use std::io::Write;
use std::sync::{Arc, Mutex};

use ghost_persona::next_speaker::{
    resolve_next_speaker, NominationPolicy, SpeakerEntry, SpeakerRegistry,
};
use serde_json::Value;

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut buf) = self.0.lock() {
            buf.extend_from_slice(data);
        }
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `f` under a JSON subscriber and returns the events it logged.
fn capture(f: impl FnOnce()) -> Vec<Value> {
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, f);
    let bytes = buffer.0.lock().map(|b| b.clone()).unwrap_or_default();
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn with_level<'a>(events: &'a [Value], level: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["level"] == level && e["target"] == "operation")
        .collect()
}

#[test]
fn decision_is_logged_at_info_with_the_seed_fields() {
    let reg = SpeakerRegistry::seed_example();
    let events = capture(|| {
        resolve_next_speaker(
            "了解。[Next: ルミナさん]",
            "NOX",
            &reg,
            &NominationPolicy::default(),
        );
    });
    let info = with_level(&events, "INFO");
    assert_eq!(info.len(), 1, "{events:?}");
    let fields = &info[0]["fields"];
    assert_eq!(fields["extracted_raw"], "ルミナさん");
    assert_eq!(fields["normalized"], "ルミナ");
    assert_eq!(fields["matched_id"], "LUMINA");
    assert_eq!(fields["reason"], "tag");
    assert!(with_level(&events, "WARN").is_empty());
}

#[test]
fn failures_are_warnings_before_the_fallback_decision() {
    let reg = SpeakerRegistry::seed_example();
    let policy = NominationPolicy::default();
    for (text, current, needle) in [
        ("no tag here", "NOX", "no next-speaker tag"),
        ("[Next: MIKU]", "NOX", "not a registered character"),
        ("[Next: USER]", "NOX", "user rejected"),
        ("[Next: NOX]", "NOX", "self-nomination rejected"),
    ] {
        let events = capture(|| {
            resolve_next_speaker(text, current, &reg, &policy);
        });
        let warn = with_level(&events, "WARN");
        assert_eq!(warn.len(), 1, "{text}: {events:?}");
        let message = warn[0]["fields"]["message"].as_str().unwrap_or("");
        assert!(message.contains(needle), "{text}: {message}");
        let info = with_level(&events, "INFO");
        assert_eq!(info.len(), 1, "{text}");
        assert_eq!(info[0]["fields"]["reason"], "round_robin");
        assert_eq!(info[0]["fields"]["matched_id"], "LUMINA");
    }
}

#[test]
fn no_one_left_is_an_error() {
    let solo = SpeakerRegistry::new(vec![SpeakerEntry::new("NOX", "ノクス", "の")]);
    let Ok(solo) = solo else {
        panic!("solo registry rejected")
    };
    let events = capture(|| {
        resolve_next_speaker("[Next: NOX]", "NOX", &solo, &NominationPolicy::default());
    });
    assert_eq!(with_level(&events, "ERROR").len(), 1, "{events:?}");
    let info = with_level(&events, "INFO");
    assert_eq!(info.len(), 1);
    assert_eq!(info[0]["fields"]["reason"], "none");
    assert_eq!(info[0]["fields"]["matched_id"], "");
}

#[test]
fn duplicate_display_names_are_warned_about_at_load() {
    let events = capture(|| {
        let r = SpeakerRegistry::new(vec![
            SpeakerEntry::new("A", "ルミナ", "a"),
            SpeakerEntry::new("B", "ルミナ", "b"),
        ]);
        assert!(r.is_ok());
    });
    let warn = with_level(&events, "WARN");
    assert_eq!(warn.len(), 1, "{events:?}");
    assert_eq!(warn[0]["fields"]["field"], "display_name");
    assert_eq!(warn[0]["fields"]["shadowed"], "B");
}
