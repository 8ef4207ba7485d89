//! Whether a scheduled deliberation runs at all (issue 46 item 4: quiet when it should be).
//! A tick on the schedule asks the model what to do; most of the time the honest answer is
//! "nothing", and the model is the dearest part of the machine. Three cheap checks come
//! first, each a read of the store, and a tick that fails one is recorded as skipped
//! (`AutonomyTickSkipped`) with no model call:
//!
//! - **quiet hours**: the conversation's person (the console's user) is in their quiet
//!   hours (`reminders.quiet_hours`, the rule reminders keep);
//! - **the daily cap**: the persona already said `autonomy.max_messages_per_day` messages in
//!   its conversation today (the person's local day);
//! - **nothing new**: nothing happened in the conversation (other than the persona's own
//!   autonomy messages and reminders) and no memory changed since the last deliberation, so
//!   it would deliberate on the same input again.
//!
//! A tick someone asked for (`/api/autonomy/tick`, `ghost autonomy tick`) always
//! deliberates.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use sqlx::PgPool;

use super::events::{
    autonomy_stream, ActionDecided, ActionDropped, AutonomyMessageRendered, SkipReason, TickTrigger,
};
use crate::envelope::{session_stream, EventPayload};
use crate::events::{
    persona_stream, PreferenceUpdated, StateClosed, StateUpserted, OUT_OF_TURN_TYPES,
};
use crate::memory::edits::MemoryCorrected;
use crate::reminders::QuietHours;

/// What the checks read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateFacts {
    /// The conversation's person is in their quiet hours.
    pub quiet: bool,
    /// Autonomy messages said in the conversation since the person's local midnight.
    pub messages_today: i64,
    /// Something happened since the last deliberation (or there was none).
    pub something_new: bool,
}

/// Why a tick of `trigger` is skipped, given `facts` and the daily cap (0: none).
pub fn skip_reason(trigger: TickTrigger, facts: &GateFacts, cap: u32) -> Option<SkipReason> {
    if trigger != TickTrigger::Schedule {
        return None;
    }
    if facts.quiet {
        Some(SkipReason::QuietHours)
    } else if cap > 0 && facts.messages_today >= i64::from(cap) {
        Some(SkipReason::DailyCap)
    } else if !facts.something_new {
        Some(SkipReason::NothingNew)
    } else {
        None
    }
}

/// Where the checks look: the persona, its conversation, its person's zone and quiet hours.
pub struct GateScope<'a> {
    /// The persona deliberating.
    pub persona: &'a str,
    /// Its conversation (`autonomy.session_id`).
    pub session_id: &'a str,
    /// The person's zone.
    pub zone: Tz,
    /// The person's quiet hours.
    pub quiet_hours: Option<QuietHours>,
}

/// The memory events that make a deliberation's input new.
const MEMORY_CHANGES: [&str; 4] = [
    StateUpserted::EVENT_TYPE,
    StateClosed::EVENT_TYPE,
    PreferenceUpdated::EVENT_TYPE,
    MemoryCorrected::EVENT_TYPE,
];

/// Reads the facts for a tick at `at` (the system's clock).
pub async fn read_facts(
    pool: &PgPool,
    scope: &GateScope<'_>,
    at: DateTime<Utc>,
) -> Result<GateFacts, sqlx::Error> {
    let quiet = scope
        .quiet_hours
        .is_some_and(|q| q.ends_after(at, scope.zone).is_some());
    let local = at.with_timezone(&scope.zone);
    let midnight = local
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .and_then(|m| crate::reminders::recurrence::local_to_utc(m, scope.zone).ok())
        .unwrap_or(at - chrono::Duration::hours(24));
    let session = session_stream(scope.session_id);
    let messages_today: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM events WHERE stream = $1 AND event_type = $2 \
           AND recorded_at >= $3 AND payload->'delivery'->>'mode' IN ('chat', 'notify')",
    )
    .bind(&session)
    .bind(AutonomyMessageRendered::EVENT_TYPE)
    .bind(midnight)
    .fetch_one(pool)
    .await?;
    let something_new: bool = sqlx::query_scalar(
        "WITH last AS (SELECT coalesce(max(position), 0) AS p FROM events \
                        WHERE stream = $1 AND event_type = ANY($2)) \
         SELECT EXISTS (SELECT 1 FROM events e, last \
                         WHERE e.stream = $3 AND e.position > last.p \
                           AND e.event_type <> ALL($4)) \
             OR EXISTS (SELECT 1 FROM events e, last \
                         WHERE e.stream = $5 AND e.position > last.p \
                           AND e.event_type = ANY($6)) \
             OR (SELECT p FROM last) = 0",
    )
    .bind(autonomy_stream(scope.persona))
    .bind(vec![ActionDecided::EVENT_TYPE, ActionDropped::EVENT_TYPE])
    .bind(&session)
    .bind(OUT_OF_TURN_TYPES.to_vec())
    .bind(persona_stream(scope.persona))
    .bind(MEMORY_CHANGES.to_vec())
    .fetch_one(pool)
    .await?;
    Ok(GateFacts {
        quiet,
        messages_today,
        something_new,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN: GateFacts = GateFacts {
        quiet: false,
        messages_today: 0,
        something_new: true,
    };

    #[test]
    fn a_scheduled_tick_is_skipped_for_quiet_hours_then_the_cap_then_nothing_new() {
        let s = TickTrigger::Schedule;
        assert_eq!(skip_reason(s, &OPEN, 3), None);
        let quiet = GateFacts {
            quiet: true,
            messages_today: 9,
            something_new: false,
        };
        assert_eq!(skip_reason(s, &quiet, 3), Some(SkipReason::QuietHours));
        let capped = GateFacts {
            messages_today: 3,
            ..OPEN
        };
        assert_eq!(skip_reason(s, &capped, 3), Some(SkipReason::DailyCap));
        assert_eq!(skip_reason(s, &capped, 4), None);
        assert_eq!(skip_reason(s, &capped, 0), None, "0: no cap");
        let same = GateFacts {
            something_new: false,
            ..OPEN
        };
        assert_eq!(skip_reason(s, &same, 3), Some(SkipReason::NothingNew));
    }

    #[test]
    fn a_tick_someone_asked_for_always_deliberates() {
        let shut = GateFacts {
            quiet: true,
            messages_today: 99,
            something_new: false,
        };
        for asked in [TickTrigger::Api, TickTrigger::Cli] {
            assert_eq!(skip_reason(asked, &shut, 1), None);
        }
    }
}
