//! The cloud coder's token use this UTC day, summed from the event store: what
//! `coder.daily_token_cap` limits, and what `/healthz` and `ghost doctor` show.
//!
//! A sum over the day's `CloudTokensUsed` events rather than a projection: the coder reads
//! it right before each cloud call, so it must already hold what another coder instance
//! stored a moment ago (a projection trails the store by its poll), and a day holds few
//! such events (one per cloud call, read through a partial index on their time).

use sqlx::PgPool;

use crate::envelope::EventPayload;
use crate::events::CloudTokensUsed;
use crate::store::StoreError;

/// Tokens the cloud coder used this UTC day.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DayUse {
    /// Prompt tokens.
    pub prompt: u64,
    /// Completion tokens.
    pub completion: u64,
}

impl DayUse {
    /// Prompt and completion tokens together: what the cap counts.
    pub fn total(&self) -> u64 {
        self.prompt.saturating_add(self.completion)
    }

    /// Whether `cap` (`None`: no cap) is used up.
    pub fn reached(&self, cap: Option<u64>) -> bool {
        cap.is_some_and(|cap| self.total() >= cap)
    }
}

/// The day's use so far, by the database's clock (one clock for every instance). The day
/// starts at 00:00 UTC.
pub async fn today(pool: &PgPool) -> Result<DayUse, StoreError> {
    let sql = format!(
        "SELECT COALESCE(SUM((payload->>'prompt_tokens')::bigint), 0)::bigint, \
                COALESCE(SUM((payload->>'completion_tokens')::bigint), 0)::bigint \
         FROM events \
         WHERE event_type = '{used}' \
         AND recorded_at >= date_trunc('day', ghost_now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'",
        used = CloudTokensUsed::EVENT_TYPE,
    );
    let (prompt, completion): (i64, i64) = sqlx::query_as(&sql).fetch_one(pool).await?;
    Ok(DayUse {
        prompt: prompt.max(0) as u64,
        completion: completion.max(0) as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_counts_both_kinds_and_none_is_never_reached() {
        let used = DayUse {
            prompt: 600,
            completion: 400,
        };
        assert_eq!(used.total(), 1000);
        assert!(used.reached(Some(1000)));
        assert!(!used.reached(Some(1001)));
        assert!(!used.reached(None));
    }
}
