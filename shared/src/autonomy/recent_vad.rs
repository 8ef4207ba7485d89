//! `recent_vad_average` (seed 001: the mood as the message, the selection and the
//! deliberation read it), the one definition: the average of the persona's own momentary
//! affects (`event_affect.moment_affect_score_vad`, stored by each applied write plan in
//! `memory_event_annotations`) over a defined window, each weighted by the plan's
//! `moment_affect_confidence`. It is not derived from the long mood's label, which the same
//! inputs already carry as `long_mood_state`: this is what the persona felt lately.

use sqlx::{PgPool, Row};

use super::persona::Vad;

/// The window: affects of the last day...
pub const WINDOW_SECS: f64 = 24.0 * 3600.0;
/// ...at most this many of them, the newest.
pub const WINDOW_MAX: i64 = 20;

/// The confidence-weighted mean of `affects` (`(vad, confidence)`); zeros when there is
/// none (nothing felt lately is calm); the plain mean when every confidence is zero.
pub fn average(affects: &[(Vad, f64)]) -> Vad {
    let zero = Vad {
        v: 0.0,
        a: 0.0,
        d: 0.0,
    };
    if affects.is_empty() {
        return zero;
    }
    let total: f64 = affects.iter().map(|(_, c)| c.max(0.0)).sum();
    let weight = |c: f64| match total > 0.0 {
        true => c.max(0.0) / total,
        false => 1.0 / affects.len() as f64,
    };
    affects.iter().fold(zero, |sum, (vad, c)| Vad {
        v: sum.v + vad.v * weight(*c),
        a: sum.a + vad.a * weight(*c),
        d: sum.d + vad.d * weight(*c),
    })
}

/// `persona`'s `recent_vad_average` at `now` (Unix seconds): [`average`] of the affects of
/// the utterances annotated for it in the [`WINDOW_SECS`] before `now` (when the utterance
/// was recorded), the newest [`WINDOW_MAX`].
pub async fn recent_vad_average(
    pool: &PgPool,
    persona: &str,
    now: f64,
) -> Result<Vad, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT (a.annotation #>> '{event_affect,moment_affect_score_vad,v}')::float8 AS v, \
                (a.annotation #>> '{event_affect,moment_affect_score_vad,a}')::float8 AS a, \
                (a.annotation #>> '{event_affect,moment_affect_score_vad,d}')::float8 AS d, \
                (a.annotation #>> '{event_affect,moment_affect_confidence}')::float8 AS c \
         FROM memory_event_annotations a JOIN events e ON e.event_id = a.source_event_id \
         WHERE a.persona = $1 AND jsonb_typeof(a.annotation -> 'event_affect') = 'object' \
           AND e.recorded_at > to_timestamp($2) AND e.recorded_at <= to_timestamp($3) \
         ORDER BY a.position DESC LIMIT $4",
    )
    .bind(persona)
    .bind(now - WINDOW_SECS)
    .bind(now)
    .bind(WINDOW_MAX)
    .fetch_all(pool)
    .await?;
    let affects = rows
        .iter()
        .map(|r| {
            Ok((
                Vad {
                    v: r.try_get::<Option<f64>, _>("v")?.unwrap_or(0.0),
                    a: r.try_get::<Option<f64>, _>("a")?.unwrap_or(0.0),
                    d: r.try_get::<Option<f64>, _>("d")?.unwrap_or(0.0),
                },
                r.try_get::<Option<f64>, _>("c")?.unwrap_or(0.0),
            ))
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()?;
    Ok(average(&affects))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vad(v: f64, a: f64, d: f64) -> Vad {
        Vad { v, a, d }
    }

    #[test]
    fn affects_are_averaged_by_confidence_and_nothing_is_calm() {
        let avg = average(&[(vad(0.6, 0.2, 0.1), 0.9), (vad(-0.4, 0.4, -0.2), 0.3)]);
        assert!((avg.v - 0.35).abs() < 1e-9, "{avg:?}");
        assert!((avg.a - 0.25).abs() < 1e-9, "{avg:?}");
        assert!((avg.d - 0.025).abs() < 1e-9, "{avg:?}");
        assert_eq!(average(&[]), vad(0.0, 0.0, 0.0));
        let plain = average(&[(vad(1.0, 0.0, 0.0), 0.0), (vad(0.0, 1.0, 0.0), 0.0)]);
        assert_eq!(plain, vad(0.5, 0.5, 0.0));
    }
}
