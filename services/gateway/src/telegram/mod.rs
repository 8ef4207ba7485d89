//! Telegram Bot API: the webhook's secret token, update types, turn classification,
//! `sendMessage` bodies, and Telegram as a [`crate::channel::Platform`] ([`Telegram`];
//! sending in `deliver.rs`, photos through `getFile` in `file.rs`).
//!
//! Exactly-once shape: inbound, Telegram redelivers an update (same `update_id`) until the
//! webhook answers 2xx; a turn's durable dedup key is the message's identity (chat id and
//! message id), the same on every redelivery, and unlike `update_id` never reused (Telegram
//! picks update ids at random again after a week without updates). Outbound, `sendMessage`
//! has no idempotency key, so it is preceded by an attempt marker and retried only when
//! Telegram certainly did not send (a 429, a connection that never opened).
//!
//! The bot token is part of every Bot API URL (`/bot<token>/…`): no URL is ever put in an
//! error, a log line or an event.

pub mod classify;
mod deliver;
mod file;
mod platform;
pub mod profile;
pub mod secret;
pub mod send;
pub mod wire;

pub use classify::{
    classify, message_dedup_key, strip_bot_address, IgnoreReason, TelegramAction, TelegramConfig,
    TelegramTurn,
};
pub use platform::Telegram;
pub use secret::{verify_secret_token, SecretTokenError, SECRET_TOKEN_HEADER};
pub use send::{send_message_bodies, ReplyParameters, SendBuildError, SendMessage};
pub use wire::{ApiAnswer, Chat, ChatType, FileInfo, Message, PhotoSize, Update, User};
