//! Fake LINE and Slack API servers for tests and load runs: they record every call, keep
//! what each call delivered, and can be scripted to fail (500, 429 with `Retry-After`).
//!
//! They implement the platform semantics that exactly-once delivery depends on: a LINE reply
//! token works once, a LINE push with an `X-Line-Retry-Key` already accepted answers 409
//! without delivering again, and Slack's `chat.postMessage` posts every time it says ok.

mod core;
mod line;
mod slack;

pub use self::core::{Delivery, PlatformCall, Scripted};
pub use line::FakeLine;
pub use slack::{FakeSlack, FAKE_BOT_USER_ID};
