//! Priorities on the real SmolLM2 file, asserted on the engine's journal (its own order of
//! service), never on timings: interactive requests go before waiting background ones, and a
//! background reply in progress (in its prompt or in its generation) pauses for them, then
//! resumes with the text it would have had anyway.

mod support;

use ghost_model::engine::{Engine, Phase, Piece, Priority, Served};
use support::{complete, read_rest, request, server, ONE_AT_A_TIME};

/// Small prompt batches, so that a long background prompt has many points to yield at.
const BATCH: u32 = 32;

fn engine() -> &'static Engine {
    &server(BATCH).0
}

/// Leaves the background sequence holding another prompt, so that the next background
/// request decodes its prompt the same way (same cached prefix, same batches) each time.
async fn reset_background(engine: &Engine) {
    let mut other = story("other");
    other.turns[1].content = "Name a colour.".into();
    other.max_tokens = Some(1);
    let _ = complete(engine, other).await;
}

/// A reply long enough to be interrupted.
fn story(label: &str) -> ghost_model::engine::Generate {
    request(
        label,
        Priority::Background,
        &[
            ("system", "You are a storyteller."),
            (
                "user",
                "Tell me a long story about a lighthouse keeper and a storm.",
            ),
        ],
        96,
    )
}

fn question(label: &str) -> ghost_model::engine::Generate {
    request(
        label,
        Priority::Interactive,
        &[
            (
                "system",
                "You are a helpful assistant. Answer in one short sentence.",
            ),
            ("user", "What is the capital of France?"),
        ],
        16,
    )
}

/// The phases of `label`'s entries, in the journal's order, with the other labels between.
fn phases(journal: &[Served], labels: &[&str]) -> Vec<(String, Phase)> {
    journal
        .iter()
        .filter(|s| labels.contains(&s.label.as_str()))
        .map(|s| (s.label.clone(), s.phase))
        .collect()
}

fn entry(label: &str, phase: Phase) -> (String, Phase) {
    (label.to_owned(), phase)
}

/// The journal's order when `interactive` came while `background` was in progress.
fn preemption(background: &str, interactive: &str) -> Vec<(String, Phase)> {
    vec![
        entry(background, Phase::Started),
        entry(background, Phase::Paused),
        entry(interactive, Phase::Started),
        entry(interactive, Phase::Finished),
        entry(background, Phase::Resumed),
        entry(background, Phase::Finished),
    ]
}

/// Tokens `label` had generated when it paused.
fn paused_at(journal: &[Served], label: &str) -> u32 {
    journal
        .iter()
        .find(|s| s.label == label && s.phase == Phase::Paused)
        .map(|s| s.tokens)
        .unwrap_or_else(|| panic!("{label} never paused"))
}

/// The first text piece of a started reply (the reply is then in its generation).
async fn first_text(pieces: &mut tokio::sync::mpsc::UnboundedReceiver<Piece>) -> String {
    match pieces.recv().await {
        Some(Piece::Text(t)) => t,
        other => panic!("expected text, got {other:?}"),
    }
}

#[tokio::test]
async fn an_interactive_request_pauses_the_running_background_reply_and_goes_before_the_queued_one()
{
    let _one = ONE_AT_A_TIME.lock().await;
    ghost_shared::metrics::install();
    let engine = engine();
    // What the background reply is when nothing interrupts it (greedy).
    reset_background(engine).await;
    let (alone, _, alone_tokens) = complete(engine, story("reference")).await;
    assert!(
        alone_tokens > 40,
        "a reply long enough to interrupt: {alone:?}"
    );
    reset_background(engine).await;

    let mut running = engine.generate(story("bg-running")).await.expect("served");
    let first = first_text(&mut running.pieces).await;
    // Queued while it runs: another background request, then an interactive one.
    let queued = engine.generate(story("bg-queued"));
    let interactive = engine.generate(question("interactive"));
    let (answer, _, _) = read_rest(
        &mut interactive.await.expect("served").pieces,
        String::new(),
    )
    .await;
    assert!(!answer.trim().is_empty());
    let (resumed, _, tokens) = read_rest(&mut running.pieces, first).await;
    let (_, _, _) = read_rest(&mut queued.await.expect("served").pieces, String::new()).await;

    assert_eq!(
        resumed, alone,
        "the paused reply goes on as if nothing happened"
    );
    assert_eq!(tokens, alone_tokens);
    let journal = engine.journal();
    let mut expected = preemption("bg-running", "interactive");
    expected.extend([
        entry("bg-queued", Phase::Started),
        entry("bg-queued", Phase::Finished),
    ]);
    assert_eq!(
        phases(&journal, &["bg-running", "bg-queued", "interactive"]),
        expected
    );
    assert!(
        paused_at(&journal, "bg-running") >= 1,
        "paused in its generation"
    );
    let metrics = ghost_shared::metrics::render();
    let preemptions = metrics
        .lines()
        .find_map(|l| l.strip_prefix("ghost_model_preemptions_total "))
        .and_then(|v| v.trim().parse::<f64>().ok());
    assert!(preemptions.is_some_and(|n| n >= 1.0), "{metrics}");
    assert!(
        metrics.contains(r#"ghost_model_queue_depth{priority="background"} 0"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_background_prompt_yields_between_batches() {
    let _one = ONE_AT_A_TIME.lock().await;
    let engine = engine();
    // A prompt of many batches, new to the background sequence's cache.
    let notes = "The keeper wrote down the wind, the waves and the ships he saw. ".repeat(40);
    let long = |label: &str| {
        let mut r = story(label);
        r.turns[1].content = format!("{notes}\nSummarise these notes in one sentence.");
        r.max_tokens = Some(8);
        r
    };
    reset_background(engine).await;
    let (alone, _, _) = complete(engine, long("long-reference")).await;
    reset_background(engine).await;

    let mut watch = engine.watch();
    let background = engine.generate(long("long-bg"));
    loop {
        let s = watch.recv().await.expect("journal");
        if s.label == "long-bg" && s.phase == Phase::Started {
            break;
        }
    }
    // Its prompt is decoding, batch by batch.
    let interactive = engine.generate(question("while-prompt"));
    let _ = read_rest(
        &mut interactive.await.expect("served").pieces,
        String::new(),
    )
    .await;
    let (text, _, _) =
        read_rest(&mut background.await.expect("served").pieces, String::new()).await;
    assert_eq!(text, alone);
    let journal = engine.journal();
    assert_eq!(
        phases(&journal, &["long-bg", "while-prompt"]),
        preemption("long-bg", "while-prompt")
    );
    assert_eq!(paused_at(&journal, "long-bg"), 0, "paused in its prompt");
}
