//! How late a reminder may be delivered: one that came due while Ghost was down (or the
//! scheduler could not run) is still delivered with a note that it is late, and past
//! `reminders.max_lateness_secs` it is dropped with a notice instead: "call Mom at 9" at
//! 3 in the afternoon is worth a word, the next day it is noise.

use serde::{Deserialize, Serialize};

/// How an occurrence is delivered, from how late it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lateness {
    /// Within the grace: delivered as asked.
    OnTime,
    /// Later than the grace: delivered, saying it is late.
    Late,
    /// Later than the limit: not delivered; the person is told it was missed.
    Missed,
}

/// The two bounds, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatenessPolicy {
    /// Up to this late is on time (a scheduler's poll, a busy minute).
    pub grace_secs: i64,
    /// Past this late, the occurrence is missed.
    pub max_lateness_secs: i64,
}

impl LatenessPolicy {
    /// The lateness of an occurrence `late_by_secs` past its time.
    pub fn classify(&self, late_by_secs: i64) -> Lateness {
        if late_by_secs > self.max_lateness_secs {
            Lateness::Missed
        } else if late_by_secs > self.grace_secs {
            Lateness::Late
        } else {
            Lateness::OnTime
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grace_then_late_then_missed() {
        let p = LatenessPolicy {
            grace_secs: 120,
            max_lateness_secs: 3600,
        };
        assert_eq!(p.classify(0), Lateness::OnTime);
        assert_eq!(p.classify(120), Lateness::OnTime);
        assert_eq!(p.classify(121), Lateness::Late);
        assert_eq!(p.classify(3600), Lateness::Late);
        assert_eq!(p.classify(3601), Lateness::Missed);
    }
}
