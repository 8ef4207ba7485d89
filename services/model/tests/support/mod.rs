//! What the structured-output and priority tests share: an engine on the real SmolLM2 file
//! (one thread: the tests share two cores with whatever else runs), served over HTTP by the
//! crate's own router, and a reader of whole replies.

#![allow(dead_code)] // each test file uses part of it

use std::sync::OnceLock;

use ghost_model::engine::{Engine, EngineConfig, Finish, Generate, Piece, Priority, Turn};
use ghost_model::server::{router, AppState};
use ghost_testkit::testing::embedded_model_file;

/// The model id requests name.
pub const NAME: &str = "smollm2-test";

/// An engine with prompt batches of `batch_size` tokens, and its HTTP address; one per test
/// binary, on its own runtime (each test has its own, and the server must outlive them).
pub fn server(batch_size: u32) -> &'static (Engine, String) {
    static SERVER: OnceLock<(Engine, String)> = OnceLock::new();
    SERVER.get_or_init(|| {
        let config = EngineConfig {
            path: embedded_model_file(),
            threads: 1,
            context_size: 2048,
            max_tokens: 256,
            batch_size,
            queue_depth: 4,
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().expect("runtime");
            runtime.block_on(async move {
                let engine = Engine::start(config).await.expect("engine");
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("listener");
                let url = format!("http://{}", listener.local_addr().expect("addr"));
                let app = router(AppState {
                    engine: engine.clone(),
                    name: NAME.into(),
                    embedding_name: None,
                });
                tx.send((engine, url)).expect("send");
                axum::serve(listener, app).await.expect("serve");
            });
        });
        rx.recv().expect("server")
    })
}

/// Held by a test that compares two greedy replies: the tests of a file share one engine,
/// and a reply depends (by float rounding) on how its prompt was decoded, which depends on
/// what the sequence's cache held; such tests run one at a time and reset the cache first.
pub static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A greedy request.
pub fn request(label: &str, priority: Priority, turns: &[(&str, &str)], max: u32) -> Generate {
    Generate {
        turns: turns
            .iter()
            .map(|(role, content)| Turn {
                role: (*role).into(),
                content: (*content).into(),
            })
            .collect(),
        max_tokens: Some(max),
        temperature: 0.0,
        top_p: 1.0,
        seed: 1,
        stop: Vec::new(),
        constraint: None,
        priority,
        label: label.into(),
    }
}

/// The rest of a reply: its text, why it ended, and its completion tokens.
pub async fn read_rest(
    pieces: &mut tokio::sync::mpsc::UnboundedReceiver<Piece>,
    mut text: String,
) -> (String, Finish, u32) {
    while let Some(piece) = pieces.recv().await {
        match piece {
            Piece::Text(t) => text.push_str(&t),
            Piece::Done { finish, usage } => return (text, finish, usage.completion_tokens),
            Piece::Failed(e) => panic!("generation failed: {e}"),
        }
    }
    panic!("the reply ended without Done")
}

/// A whole reply.
pub async fn complete(engine: &Engine, request: Generate) -> (String, Finish, u32) {
    let mut reply = engine.generate(request).await.expect("served");
    read_rest(&mut reply.pieces, String::new()).await
}
