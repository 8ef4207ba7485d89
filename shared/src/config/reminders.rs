//! `reminders:`: people's time zones, the scheduler's pace and how late is too late
//! (issue 46; the rules are `ghost_domain::reminders`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use ghost_domain::reminders::QuietHours;
use serde::Deserialize;

use super::ConfigError;

/// `reminders:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReminderSettings {
    /// Whether the gateway runs the scheduler (every gateway instance may: they share the
    /// due reminders through `SKIP LOCKED`).
    pub enabled: bool,
    /// The time zone of a person `time_zones` does not name (IANA, `Asia/Tokyo`).
    pub time_zone: String,
    /// Per person (the speaker id: LINE `userId`, Slack user, `/api/chat`'s `user_id`),
    /// their IANA time zone.
    pub time_zones: BTreeMap<String, String>,
    /// How often the scheduler looks for due reminders.
    pub poll_interval_ms: u64,
    /// Most reminders one claim takes.
    pub claim_batch: i64,
    /// How long a claim holds a reminder (real seconds) before another instance may take it
    /// again (its claimer died before recording the occurrence).
    pub lease_secs: u64,
    /// Up to this late (on the system's clock) a reminder is on time.
    pub grace_secs: i64,
    /// Past this late (Ghost was down) an occurrence is dropped with a notice instead of
    /// delivered with a note that it is late.
    pub max_lateness_secs: i64,
    /// The quiet hours of a person `person_quiet_hours` does not name (local time in their
    /// zone, `22:00-07:00`; none: never quiet). A reminder counted from now that would come
    /// inside them waits until they end.
    pub quiet_hours: Option<QuietHours>,
    /// Per person (speaker id), their quiet hours.
    pub person_quiet_hours: BTreeMap<String, QuietHours>,
    /// How an occurrence is worded: in the persona's voice, or plainly.
    pub voice: ReminderVoiceSettings,
}

/// `reminders.voice:`: the persona says a reminder in its own words (a short line from its
/// model, with its mood and what it knows of the person), the task always after it as it
/// was asked. A reminder must arrive even when the model cannot word it: then, and for an
/// occurrence that waited too long to be worded, it is said plainly.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReminderVoiceSettings {
    /// Whether the persona words reminders (false: every one is said plainly).
    pub enabled: bool,
    /// The persona's prompt for the line (after its persona rules).
    pub prompt_file: PathBuf,
    /// How long the gateway waits for the line before saying the reminder plainly.
    pub timeout_ms: u64,
    /// An occurrence whose delivery starts more than this long (real seconds) after it was
    /// claimed is said plainly: on time matters more than the voice (10,000 due at once).
    pub within_secs: u64,
    /// The line's token budget.
    pub max_tokens: u32,
}

impl Default for ReminderVoiceSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            prompt_file: PathBuf::from("prompts/reminder_message.md"),
            timeout_ms: 30_000,
            within_secs: 60,
            max_tokens: 64,
        }
    }
}

impl Default for ReminderSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            time_zone: "UTC".into(),
            time_zones: BTreeMap::new(),
            poll_interval_ms: 1000,
            claim_batch: 64,
            lease_secs: 60,
            grace_secs: 120,
            max_lateness_secs: 6 * 3600,
            quiet_hours: None,
            person_quiet_hours: BTreeMap::new(),
            voice: ReminderVoiceSettings::default(),
        }
    }
}

impl ReminderSettings {
    /// `person`'s time zone name.
    pub fn zone_of(&self, person: &str) -> &str {
        self.time_zones
            .get(person)
            .map(String::as_str)
            .unwrap_or(&self.time_zone)
    }

    /// `person`'s quiet hours in the configuration, if they have any (the ones a person set
    /// themselves come first: `reminders::own_settings::quiet_hours_of`).
    pub fn quiet_hours_of(&self, person: &str) -> Option<QuietHours> {
        self.person_quiet_hours
            .get(person)
            .copied()
            .or(self.quiet_hours)
    }

    /// Every zone is an IANA name; the bounds are positive and in order.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let zones = std::iter::once(("reminders.time_zone".to_owned(), &self.time_zone)).chain(
            self.time_zones
                .iter()
                .map(|(p, z)| (format!("reminders.time_zones.{p}"), z)),
        );
        for (key, zone) in zones {
            ghost_domain::reminders::parse_zone(zone)
                .map_err(|e| ConfigError::invalid(&key, e.to_string()))?;
        }
        if self.poll_interval_ms == 0 || self.claim_batch <= 0 || self.lease_secs == 0 {
            return Err(ConfigError::invalid(
                "reminders",
                "poll_interval_ms, claim_batch and lease_secs must be more than 0",
            ));
        }
        if self.grace_secs < 0 || self.max_lateness_secs < self.grace_secs {
            return Err(ConfigError::invalid(
                "reminders.max_lateness_secs",
                "grace_secs must be 0 or more and max_lateness_secs at least grace_secs",
            ));
        }
        if self.voice.timeout_ms == 0 {
            return Err(ConfigError::invalid(
                "reminders.voice.timeout_ms",
                "must be more than 0 (to say every reminder plainly, set voice.enabled: false)",
            ));
        }
        super::settings::at_least_tokens("reminders.voice.max_tokens", self.voice.max_tokens)?;
        Ok(())
    }

    /// The lateness bounds.
    pub fn lateness(&self) -> ghost_domain::reminders::LatenessPolicy {
        ghost_domain::reminders::LatenessPolicy {
            grace_secs: self.grace_secs,
            max_lateness_secs: self.max_lateness_secs,
        }
    }
}
