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

/// The reply's and the recall selection's system prompts begin alike ("You are クロ (internal
/// id: kuro)", some twenty tokens), and a LINE turn asks Kuro's delegation where an HTTP turn
/// asks the router: four kinds of call in all. Each still finds its own prefix: before, the
/// selection took the reply's slot for the tokens they share, and the two evicted each other
/// every turn.
#[tokio::test]
async fn calls_whose_prompts_begin_alike_keep_slots_of_their_own() {
    let _one = ONE_AT_A_TIME.lock().await;
    let header = "You are Kuro (internal id: kuro), a persona who lives in a quiet flat in \
                  Kyoto with the user and answers in a warm voice. ";
    let prompt =
        |purpose: &str| format!("{header}{}", format!("Now act as {purpose}. ").repeat(10));
    let voice = prompt("the voice that answers");
    let selector = prompt("the memory that recalls");
    let router = system("router");
    let delegation = system("delegation judge");
    let ask = |sys: &str, history: &[(&'static str, &'static str)]| {
        let mut turns: Vec<(&str, &str)> = vec![("system", sys)];
        turns.extend_from_slice(history);
        request("alike", Priority::Interactive, &turns, 1)
    };
    let one: [(&str, &str); 1] = [("user", "My sister moved to Osaka.")];
    let two: [(&str, &str); 3] = [
        ("user", "My sister moved to Osaka."),
        ("assistant", "Osaka is a lively city."),
        ("user", "We walked by the river today."),
    ];
    let three: [(&str, &str); 5] = [
        ("user", "My sister moved to Osaka."),
        ("assistant", "Osaka is a lively city."),
        ("user", "We walked by the river today."),
        ("assistant", "That sounds calm."),
        ("user", "Where does my sister live?"),
    ];
    // An HTTP turn, a LINE turn, an HTTP turn again.
    decoded(ask(&router, &one)).await;
    decoded(ask(&selector, &one)).await;
    decoded(ask(&voice, &one)).await;
    decoded(ask(&delegation, &two)).await;
    let selection_two = decoded(ask(&selector, &two)).await;
    let reply_two = decoded(ask(&voice, &two)).await;
    decoded(ask(&router, &three)).await;
    let selection_three = decoded(ask(&selector, &three)).await;
    let reply_three = decoded(ask(&voice, &three)).await;
    let new_tokens = reply_three.prompt_tokens - reply_two.prompt_tokens;
    for (what, before, now) in [
        ("selection", selection_two, selection_three),
        ("reply", reply_two, reply_three),
    ] {
        assert!(
            now.prompt_decoded <= new_tokens + 2,
            "the {what} decoded {} of {} prompt tokens (before: {before:?}); the new messages \
             are about {new_tokens}",
            now.prompt_decoded,
            now.prompt_tokens
        );
    }
}
