//! The reply as it is written: the model's deltas streamed to the turn's subject, the
//! affect trailer held back and split off, the call bounded by the time left before the
//! turn watchdog.

use super::*;

impl Renderer {
    /// Streams the model's reply to the turn's subject, holding back everything from the
    /// affect marker on; the reply and its affect, or why not.
    ///
    /// The reply asks for at most `budget` tokens, and ends as a normal reply wherever it
    /// stops once text was shown: at the budget (the model stops), at a repetition loop (cut
    /// to one copy, the model call dropped), where it begins copying a fenced block of its
    /// prompt (`<<<MEMORY …`: cut before it, the call dropped), when the time `left` before the turn watchdog
    /// runs out, or when the stream breaks off. Only a call that showed nothing fails.
    pub(super) async fn generate(
        &self,
        turn: &Uuid,
        messages: &[ChatMessage],
        prefix: Option<String>,
        budget: u32,
        left: std::time::Duration,
    ) -> Result<Generated, LlmError> {
        let deadline = tokio::time::Instant::now() + left;
        let attempt = Uuid::new_v4();
        let marker = &self.ctx.config.ghost.persona.affect_marker;
        // The reply is free text; from the marker on, a backend that can (the embedded
        // server) holds the affect JSON to its schema.
        let contract = contracts::affect::trailer();
        let call = Call::interactive()
            .with_trailer(marker, &contract)
            .with_budget(budget);
        let stream = tokio::time::timeout_at(deadline, self.llm.stream(messages, call))
            .await
            .unwrap_or(Err(LlmError::Timeout { after: left }))?;
        let mut filter = TrailerStreamFilter::new(marker);
        let mut guard = RepetitionGuard::default();
        let mut echo = FenceEchoGuard::default();
        let mut seq = 0;
        // The route declaration, when there is one, is the reply's first line.
        self.emit(turn, attempt, &mut seq, prefix.unwrap_or_default())
            .await;
        // Deltas that are already here go out as one message: a model (or a proxy) that
        // sends faster than it is read costs one publish per read, not one per token.
        let mut ready = stream.ready_chunks(READY_DELTAS);
        let mut cut: Option<String> = None;
        'read: loop {
            let deltas = match tokio::time::timeout_at(deadline, ready.next()).await {
                Ok(Some(deltas)) => deltas,
                Ok(None) => break,
                Err(_) if guard.text().trim().is_empty() => {
                    return Err(LlmError::Timeout { after: left })
                }
                Err(_) => {
                    cut = Some("time_left".into());
                    break;
                }
            };
            let mut visible = String::new();
            for delta in deltas {
                let delta = match delta {
                    Ok(delta) => delta,
                    Err(e) if guard.text().trim().is_empty() && visible.trim().is_empty() => {
                        return Err(e)
                    }
                    Err(e) => {
                        cut = Some(format!("interrupted: {}", e.code()));
                        self.emit(turn, attempt, &mut seq, visible).await;
                        break 'read;
                    }
                };
                let shown = echo.push(&filter.push(&delta));
                visible.push_str(&shown);
                let looped = guard.push(&shown);
                if echo.stopped() {
                    // What it had written before it began copying its prompt is the reply.
                    cut = Some("echoed_data".into());
                    self.emit(turn, attempt, &mut seq, visible).await;
                    break 'read;
                }
                if looped {
                    // The rest of this batch is more of the loop: it is not shown.
                    cut = Some("repetition".into());
                    break;
                }
            }
            if cut.is_some() {
                break;
            }
            self.emit(turn, attempt, &mut seq, visible).await;
        }
        if cut.as_deref() == Some("repetition") {
            // The loop's extra copies never become the reply (the model call is dropped
            // with the stream, which stops it); its affect is reflected on later.
            info!("reply cut where it started repeating itself");
            return Ok(Generated {
                reply: guard.kept().to_owned(),
                affect: None,
                rejected: Vec::new(),
                cut,
            });
        }
        let outcome = filter.finish();
        // A tail that would open a block is not shown (nor kept: see below); after an echo
        // mid-stream the guard takes nothing more, and the reply is what was shown.
        let mut tail = echo.push(&outcome.tail);
        let echoed = echo.stopped();
        tail.push_str(&echo.finish());
        guard.push(&tail);
        self.emit(turn, attempt, &mut seq, tail).await;
        if echoed {
            cut = Some("echoed_data".into());
        }
        if let Some(why) = &cut {
            info!(%why, "reply ended before the model ended it; kept as shown");
        }
        let (affect, rejected) = match (&outcome.trailer_raw, &cut) {
            (Some(raw), None) => {
                let parsed = parse_affect(raw);
                let rejected = parsed
                    .rejected
                    .iter()
                    .map(|r| format!("{}: {}", r.field, r.reason))
                    .chain(parsed.error.iter().map(|e| format!("trailer: {e}")))
                    .collect();
                (Affect::from_parsed(&parsed), rejected)
            }
            _ => {
                info!("reply without an affect trailer; the worker will reflect on it");
                (None, Vec::new())
            }
        };
        Ok(Generated {
            reply: if echoed {
                guard.text().trim_end().to_owned()
            } else {
                outcome.reply_text
            },
            affect,
            rejected,
            cut,
        })
    }

    /// Publishes one visible piece of the reply (nothing when empty).
    pub(super) async fn emit(&self, turn: &Uuid, attempt: Uuid, seq: &mut u64, delta: String) {
        if delta.is_empty() {
            return;
        }
        self.publish(
            turn,
            &TurnStreamMessage::Token {
                attempt,
                seq: *seq,
                delta,
            },
        )
        .await;
        *seq += 1;
    }

    pub(super) async fn publish(&self, turn: &Uuid, message: &TurnStreamMessage) {
        let subject = self.ctx.bus().token_subject(turn);
        match serde_json::to_vec(message) {
            Ok(body) => {
                if let Err(e) = self
                    .ctx
                    .bus()
                    .publish_core(subject, Bytes::from(body))
                    .await
                {
                    warn!(error = %e, "token stream publish failed");
                }
            }
            Err(e) => warn!(error = %e, "token stream message does not encode"),
        }
    }

    /// What is left, for a turn whose message arrived at `asked_at`, before the turn
    /// watchdog would close it (less a margin to store and deliver the reply).
    pub(super) fn time_left(&self, asked_at: chrono::DateTime<chrono::Utc>) -> std::time::Duration {
        let turn = chrono::Duration::seconds(
            i64::try_from(self.ctx.config.ghost.routing.turn_timeout_secs).unwrap_or(i64::MAX),
        );
        let left = (asked_at + turn - self.ctx.clock().now())
            .to_std()
            .unwrap_or_default();
        left.saturating_sub(RENDER_MARGIN)
    }
}
