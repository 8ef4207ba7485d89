//! The reply as it is written: the model's deltas streamed to the turn's subject, the
//! affect trailer held back and split off, the call bounded by the time left before the
//! turn watchdog.

use super::*;

impl Renderer {
    /// Streams the model's reply to the turn's subject, holding back everything from the
    /// affect marker on; the reply and its affect, or why not.
    pub(super) async fn generate(
        &self,
        turn: &Uuid,
        messages: &[ChatMessage],
        prefix: Option<String>,
    ) -> Result<Generated, LlmError> {
        let attempt = Uuid::new_v4();
        let marker = &self.ctx.config.ghost.persona.affect_marker;
        // The reply is free text; from the marker on, a backend that can (the embedded
        // server) holds the affect JSON to its schema.
        let contract = contracts::affect::trailer();
        let call = Call::interactive().with_trailer(marker, &contract);
        let stream = self.llm.stream(messages, call).await?;
        let mut filter = TrailerStreamFilter::new(marker);
        let mut seq = 0;
        // The route declaration, when there is one, is the reply's first line.
        self.emit(turn, attempt, &mut seq, prefix.unwrap_or_default())
            .await;
        // Deltas that are already here go out as one message: a model (or a proxy) that
        // sends faster than it is read costs one publish per read, not one per token.
        let mut ready = stream.ready_chunks(READY_DELTAS);
        while let Some(deltas) = ready.next().await {
            let mut visible = String::new();
            for delta in deltas {
                visible.push_str(&filter.push(&delta?));
            }
            self.emit(turn, attempt, &mut seq, visible).await;
        }
        let outcome = filter.finish();
        self.emit(turn, attempt, &mut seq, outcome.tail).await;
        let (affect, rejected) = match &outcome.trailer_raw {
            Some(raw) => {
                let parsed = parse_affect(raw);
                let rejected = parsed
                    .rejected
                    .iter()
                    .map(|r| format!("{}: {}", r.field, r.reason))
                    .chain(parsed.error.iter().map(|e| format!("trailer: {e}")))
                    .collect();
                (Affect::from_parsed(&parsed), rejected)
            }
            None => {
                info!("reply without an affect trailer; the worker will reflect on it");
                (None, Vec::new())
            }
        };
        Ok(Generated {
            reply: outcome.reply_text,
            affect,
            rejected,
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
        let left = (asked_at + turn - chrono::Utc::now())
            .to_std()
            .unwrap_or_default();
        left.saturating_sub(RENDER_MARGIN)
    }
}
