//! A user turn's interactive calls (route decision, recall selection, reply) each have a
//! system prompt of their own; on the real SmolLM2 file, each keeps its prefix in a slot
//! of its own, so the reply of the next turn decodes only what is new, whatever came
//! between. Asserted on the engine's own count of decoded prompt tokens.

mod support;

use ghost_model::engine::{Engine, Generate, Piece, Priority, Usage};
use support::{request, server, ONE_AT_A_TIME};

fn engine() -> &'static Engine {
    &server(512).0
}

/// How many prompt tokens the engine decoded for `request` (the rest came from a cache).
async fn decoded(request: Generate) -> Usage {
    let mut reply = engine().generate(request).await.expect("served");
    while let Some(piece) = reply.pieces.recv().await {
        match piece {
            Piece::Text(_) => {}
            Piece::Done { usage, .. } => return usage,
            Piece::Failed(e) => panic!("generation failed: {e}"),
        }
    }
    panic!("the reply ended without Done")
}

/// A system prompt of some length, different per purpose.
fn system(purpose: &str) -> String {
    format!("You are the {purpose} of a persona called Kuro. ").repeat(12)
}

fn call(purpose: &str, history: &[(&'static str, &'static str)]) -> Generate {
    let sys = system(purpose);
    let mut turns: Vec<(&str, &str)> = vec![("system", sys.as_str())];
    turns.extend_from_slice(history);
    request(purpose, Priority::Interactive, &turns, 1)
}

#[tokio::test]
async fn each_calls_prefix_survives_the_turns_other_calls() {
    let _one = ONE_AT_A_TIME.lock().await;
    let first: [(&str, &str); 1] = [("user", "I love green tea.")];
    let second: [(&str, &str); 3] = [
        ("user", "I love green tea."),
        ("assistant", "Green tea is lovely."),
        ("user", "What do I like to drink?"),
    ];
    // Turn one: the route decision, the recall selection, the reply.
    decoded(call("router", &first[..])).await;
    decoded(call("recall selector", &first[..])).await;
    let reply_one = decoded(call("voice", &first[..])).await;
    // Turn two: the route decision and the selection come between the two replies.
    let router_two = decoded(call("router", &second[..])).await;
    decoded(call("recall selector", &second[..])).await;
    let reply_two = decoded(call("voice", &second[..])).await;
    // The second reply found the first one's prompt in its slot: only the new messages
    // were decoded, not the system prompt again.
    let new_tokens = reply_two.prompt_tokens - reply_one.prompt_tokens;
    assert!(
        reply_two.prompt_decoded <= new_tokens + 2,
        "the reply decoded {} of {} prompt tokens; the new messages are about {new_tokens}",
        reply_two.prompt_decoded,
        reply_two.prompt_tokens
    );
    assert!(
        router_two.prompt_decoded <= new_tokens + 2,
        "{router_two:?}"
    );
}
