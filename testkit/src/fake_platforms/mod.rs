//! Fake LINE, Slack and Telegram API servers for tests and load runs: they record every
//! call, keep what each call delivered, and can be scripted to fail (500, 429 with
//! `Retry-After`).
//!
//! They implement the platform semantics that exactly-once delivery depends on: a LINE reply
//! token works once, a LINE push with an `X-Line-Retry-Key` already accepted answers 409
//! without delivering again, and Slack's `chat.postMessage` and Telegram's `sendMessage`
//! send every time they say ok.

mod core;
mod line;
mod slack;
mod telegram;

pub use self::core::{Delivery, Fake, PlatformCall, Scripted};
pub use line::FakeLine;
pub use slack::{FakeSlack, FAKE_BOT_USER_ID};
pub use telegram::{FakeTelegram, FAKE_TELEGRAM_TOKEN};
