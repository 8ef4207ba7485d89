//! A free-text answer nobody watches arrive (a stage line, an autonomy message): streamed,
//! so the time bounds are those of a stream (the first token, then the gap between chunks),
//! and ended at a repetition loop with one copy kept, or where it starts copying a fenced
//! block of its prompt ([`FenceEchoGuard`]). Text already written is the answer
//! even when the stream breaks off later: it was complete up to there.

use futures::StreamExt;

use super::repetition::RepetitionGuard;
use super::{Call, ChatMessage, FenceEchoGuard, LlmClient, LlmError};

/// How a written answer ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The model ended it, or its token budget did.
    Complete,
    /// It started repeating itself: the extra copies were cut.
    Repetition,
    /// It started writing a fenced block of its prompt: cut before it.
    EchoedData,
    /// The stream broke off (this error) after some text.
    Interrupted(String),
}

/// A free-text answer and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The text, trimmed.
    pub text: String,
    /// How it ended.
    pub ending: Ending,
}

impl LlmClient {
    /// Streams the answer to `messages` to its end (see the module docs). An error before
    /// any text is the call's error.
    pub async fn write(
        &self,
        messages: &[ChatMessage],
        call: Call<'_>,
    ) -> Result<Written, LlmError> {
        let mut stream = self.stream(messages, call).await?;
        let mut guard = RepetitionGuard::default();
        let mut echo = FenceEchoGuard::default();
        while let Some(delta) = stream.next().await {
            match delta {
                Ok(delta) => {
                    let shown = echo.push(&delta);
                    if echo.stopped() {
                        guard.push(&shown);
                        return Ok(Written {
                            text: guard.kept().trim().to_owned(),
                            ending: Ending::EchoedData,
                        });
                    }
                    if guard.push(&shown) {
                        return Ok(Written {
                            text: guard.kept().trim().to_owned(),
                            ending: Ending::Repetition,
                        });
                    }
                }
                Err(e) if guard.text().trim().is_empty() => return Err(e),
                Err(e) => {
                    return Ok(Written {
                        text: guard.kept().trim().to_owned(),
                        ending: Ending::Interrupted(e.to_string()),
                    })
                }
            }
        }
        guard.push(&echo.finish());
        Ok(Written {
            text: guard.kept().trim().to_owned(),
            ending: Ending::Complete,
        })
    }
}
