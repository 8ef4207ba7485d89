//! The typed shape of `ghost.yaml` and `characters.yaml`.

use std::collections::HashMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::ConfigError;
use crate::bus::BusConfig;
use crate::llm::LlmRoleConfig;

/// `ghost.yaml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GhostSettings {
    /// Postgres.
    pub database: DatabaseSettings,
    /// NATS.
    pub bus: BusConfig,
    /// Outbox relay timing.
    pub outbox: OutboxSettings,
    /// Projection runners.
    pub projections: ProjectionSettings,
    /// HTTP front door.
    pub gateway: GatewaySettings,
    /// The persona that writes replies.
    pub persona: PersonaSettings,
    /// Model endpoints per role (`persona`, `worker`, `coder`, ...).
    pub llm: HashMap<String, LlmRoleConfig>,
    /// Logs and traces.
    pub telemetry: TelemetrySettings,
    /// LINE Messaging API.
    pub line: super::channels::LineSettings,
    /// Slack Events and Web API.
    pub slack: super::channels::SlackSettings,
    /// Telegram Bot API.
    pub telegram: super::channels::TelegramSettings,
    /// Media (images users send), kept in the database.
    pub media: super::channels::MediaSettings,
    /// The multi-character stage.
    pub stage: super::stage::StageSettings,
    /// Routing: entry modes per channel, dictionary file, short memory.
    pub routing: RoutingSettings,
    /// The mood computation and how the persona asks for it.
    pub mood: MoodSettings,
    /// The embedded model server.
    pub model: super::model::ModelSettings,
    /// Web search and page fetching (limits, search endpoint).
    pub web: super::web::WebSettings,
    /// Autonomy: deliberation schedule, message conversation, prompts, the CLI agent.
    pub autonomy: super::autonomy::AutonomySettings,
    /// Long-term memory: the write plan and recall.
    pub memory: super::memory::MemorySettings,
    /// The cloud coder's daily token cap.
    pub coder: super::coder::CoderSettings,
    /// The system's clock.
    pub clock: ClockSettings,
    /// Reminders: time zones, the scheduler, lateness.
    pub reminders: super::reminders::ReminderSettings,
}

/// `clock:`: the one clock every service reads (`ghost_shared::clock`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClockSettings {
    /// Whether the clock may be moved forward (`POST /api/clock/advance`), so that an
    /// evaluation lets days pass in minutes. Never on a deployment people use: a moved clock
    /// stays moved for the database.
    pub simulated: bool,
}

/// `mood:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MoodSettings {
    /// Constants of the mood integral and the response-policy knobs (seed 004).
    pub constants: crate::affect::MoodConstants,
    /// How long the persona waits for `ghost.mood.get` before using the calm default.
    pub request_timeout_ms: u64,
    /// Most personas the debug API may hold an override for at once (in the mood
    /// service's memory); one more is refused until one is cleared.
    pub max_overrides: usize,
}

impl Default for MoodSettings {
    fn default() -> Self {
        Self {
            constants: crate::affect::MoodConstants::default(),
            request_timeout_ms: 500,
            max_overrides: 64,
        }
    }
}

/// `database:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseSettings {
    /// Connection URL.
    pub url: String,
    /// Pool size per process.
    pub max_connections: u32,
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        Self {
            url: "postgres://ghost:ghost@127.0.0.1:5432/ghost".into(),
            max_connections: 16,
        }
    }
}

/// `outbox:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutboxSettings {
    /// How often the relay looks for unpublished events.
    pub relay_interval_ms: u64,
    /// How old an outbox row must be before the relay takes it (the fast path's window).
    pub grace_ms: u64,
}

impl Default for OutboxSettings {
    fn default() -> Self {
        Self {
            relay_interval_ms: 500,
            grace_ms: 1000,
        }
    }
}

/// `projections:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProjectionSettings {
    /// Fallback poll interval when no notification arrives.
    pub poll_interval_ms: u64,
    /// Events applied per transaction.
    pub batch_size: i64,
}

impl Default for ProjectionSettings {
    fn default() -> Self {
        Self {
            poll_interval_ms: 250,
            batch_size: 500,
        }
    }
}

/// `gateway:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatewaySettings {
    /// Listen address.
    pub listen: String,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// Longest accepted chat message, in characters.
    pub max_message_chars: usize,
    /// A turn without an ending after this long no longer blocks its session.
    pub turn_timeout_secs: u64,
    /// Largest WebSocket frame accepted on `/api/stage`, in bytes.
    pub max_ws_frame_bytes: usize,
    /// Largest WebSocket message (all frames of one message) accepted, in bytes; a bigger
    /// one closes the connection with 1009 (message too big).
    pub max_ws_message_bytes: usize,
    /// Connections served at once; more wait in the listen backlog.
    pub max_connections: usize,
    /// A request's headers must arrive within this (408 when part came, else the
    /// connection closes); also how long a kept-alive connection may wait for its next
    /// request.
    pub header_read_timeout_secs: u64,
    /// A request body must arrive within this (408).
    pub body_read_timeout_secs: u64,
    /// A connection that moves no byte for this long is closed (at least 20 s: the reply
    /// stream and the stage socket send keep-alives every 15 s).
    pub idle_timeout_secs: u64,
}

impl Default for GatewaySettings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            max_body_bytes: 64 * 1024,
            max_message_chars: 8000,
            turn_timeout_secs: 260,
            max_ws_frame_bytes: 64 * 1024,
            max_ws_message_bytes: 64 * 1024,
            max_connections: 1024,
            header_read_timeout_secs: 10,
            body_read_timeout_secs: 30,
            idle_timeout_secs: 120,
        }
    }
}

/// `persona:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PersonaSettings {
    /// Which character of `characters.yaml` answers chats.
    pub character: String,
    /// The prompt template (relative to the repository root).
    pub prompt_file: PathBuf,
    /// How many earlier turns of the session the prompt includes.
    pub history_turns: usize,
    /// A silence this long (seconds) ends a sitting: a prompt's history holds only the lines
    /// after the last such pause, the older ones reaching it through the summary and recall.
    /// 0 = never.
    pub history_pause_secs: u64,
    /// The line after which the model writes its affect JSON (never shown to users).
    pub affect_marker: String,
    /// The instruction asking for the affect trailer (relative to the repository root).
    pub affect_prompt_file: PathBuf,
    /// The instruction for judging a work result before replying (seed 002 proposals).
    pub proposal_prompt_file: PathBuf,
    /// Most tokens of a conversational reply, affect trailer included: the model stops
    /// there and the reply is stored as it was shown.
    pub reply_max_tokens: u32,
    /// Most tokens of a reply that conveys a work result (a plan, an analysis, code).
    pub result_reply_max_tokens: u32,
}

impl Default for PersonaSettings {
    fn default() -> Self {
        Self {
            character: "kuro".into(),
            prompt_file: PathBuf::from("prompts/persona.md"),
            history_turns: 12,
            history_pause_secs: 3 * 3600,
            affect_marker: crate::affect::DEFAULT_TRAILER_MARKER.into(),
            affect_prompt_file: PathBuf::from("prompts/affect_trailer.md"),
            proposal_prompt_file: PathBuf::from("prompts/persona_proposal.md"),
            reply_max_tokens: 400,
            result_reply_max_tokens: 1536,
        }
    }
}

/// `telemetry:`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetrySettings {
    /// OTLP/HTTP traces endpoint, e.g. `http://127.0.0.1:4318/v1/traces`; none = no export.
    pub otlp_endpoint: Option<String>,
    /// Logs as JSON lines instead of text.
    pub json_logs: bool,
    /// The base address of `ghost run <service>`'s Prometheus metrics (`GET /metrics`) when
    /// the process runs no gateway (the gateway serves `/metrics` itself): the port is raised
    /// by the service's offset (`ServiceName::metrics_port_offset`); none = no listener.
    pub metrics_listen: Option<String>,
}

/// `characters.yaml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CharacterSettings {
    /// Every character, in registry order.
    pub characters: Vec<CharacterConfig>,
}

/// One character.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CharacterConfig {
    /// Internal id (what `[Next: …]` nominates).
    pub name: String,
    /// Full display name.
    pub display_name: String,
    /// Short name.
    #[serde(default)]
    pub short_name: Option<String>,
    /// Who the character is, in its own words: every prompt that speaks as or for the
    /// character starts from it. Required and non-empty (there is no persona-less fallback).
    pub persona_text: String,
    /// What the character cares about beyond its persona (seed 001: the interest axis of the
    /// write plan and of recall); may be empty.
    #[serde(default)]
    pub addon_text: String,
    /// What the character calls the user (seed 001 `second_person_label`). Required.
    pub second_person_label: String,
    /// The character's own model; the `persona` role when absent.
    #[serde(default)]
    pub llm: Option<LlmRoleConfig>,
}

fn positive(key: &str, value: u64) -> Result<(), ConfigError> {
    if value == 0 {
        return Err(ConfigError::invalid(key, "must be greater than 0"));
    }
    Ok(())
}

/// A reply budget: room for a sentence and the affect trailer at least.
pub(crate) fn at_least_tokens(key: &str, value: u32) -> Result<(), ConfigError> {
    if value < 32 {
        return Err(ConfigError::invalid(key, "must be at least 32 tokens"));
    }
    Ok(())
}

fn url_like(key: &str, value: &str, schemes: &[&str]) -> Result<(), ConfigError> {
    if !schemes
        .iter()
        .any(|s| value.starts_with(&format!("{s}://")))
    {
        return Err(ConfigError::invalid(
            key,
            format!(
                "must be a URL starting with {}",
                schemes.join("://, ") + "://"
            ),
        ));
    }
    Ok(())
}

impl GhostSettings {
    /// Range checks that serde cannot express.
    pub fn validate(&self) -> Result<(), ConfigError> {
        url_like(
            "database.url",
            &self.database.url,
            &["postgres", "postgresql"],
        )?;
        positive(
            "database.max_connections",
            self.database.max_connections.into(),
        )?;
        url_like("bus.url", &self.bus.url, &["nats", "tls"])?;
        let prefix_ok = !self.bus.subject_prefix.is_empty()
            && self.bus.subject_prefix.split('.').all(|t| {
                !t.is_empty()
                    && t.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            });
        if !prefix_ok {
            return Err(ConfigError::invalid(
                "bus.subject_prefix",
                "must be dot-separated tokens of [A-Za-z0-9_-]",
            ));
        }
        if self.bus.stream_name.is_empty()
            || !self
                .bus
                .stream_name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(ConfigError::invalid(
                "bus.stream_name",
                "must be non-empty [A-Za-z0-9_-]",
            ));
        }
        for (i, server) in self.bus.servers.iter().enumerate() {
            url_like(&format!("bus.servers[{i}]"), server, &["nats", "tls"])?;
        }
        if !(1..=crate::bus::MAX_REPLICAS).contains(&self.bus.replicas) {
            return Err(ConfigError::invalid(
                "bus.replicas",
                format!("must be between 1 and {}", crate::bus::MAX_REPLICAS),
            ));
        }
        if self.bus.max_deliver < 1 {
            return Err(ConfigError::invalid(
                "bus.max_deliver",
                "must be at least 1",
            ));
        }
        positive("bus.ack_wait_secs", self.bus.ack_wait_secs)?;
        positive("bus.duplicate_window_secs", self.bus.duplicate_window_secs)?;
        if self.bus.max_age_secs < self.bus.duplicate_window_secs {
            return Err(ConfigError::invalid(
                "bus.max_age_secs",
                format!(
                    "must be at least bus.duplicate_window_secs ({})",
                    self.bus.duplicate_window_secs
                ),
            ));
        }
        if self.bus.max_bytes < crate::bus::MIN_STREAM_BYTES {
            return Err(ConfigError::invalid(
                "bus.max_bytes",
                format!("must be at least {} (1 MiB)", crate::bus::MIN_STREAM_BYTES),
            ));
        }
        if !(1..=4096).contains(&self.bus.concurrency) {
            return Err(ConfigError::invalid(
                "bus.concurrency",
                "must be between 1 and 4096",
            ));
        }
        positive("outbox.relay_interval_ms", self.outbox.relay_interval_ms)?;
        positive(
            "projections.poll_interval_ms",
            self.projections.poll_interval_ms,
        )?;
        if self.projections.batch_size < 1 {
            return Err(ConfigError::invalid(
                "projections.batch_size",
                "must be at least 1",
            ));
        }
        if self.gateway.listen.parse::<std::net::SocketAddr>().is_err() {
            return Err(ConfigError::invalid(
                "gateway.listen",
                "must be host:port with an IP address",
            ));
        }
        positive("gateway.max_body_bytes", self.gateway.max_body_bytes as u64)?;
        positive(
            "gateway.max_message_chars",
            self.gateway.max_message_chars as u64,
        )?;
        positive("gateway.turn_timeout_secs", self.gateway.turn_timeout_secs)?;
        positive(
            "gateway.max_connections",
            self.gateway.max_connections as u64,
        )?;
        positive(
            "gateway.header_read_timeout_secs",
            self.gateway.header_read_timeout_secs,
        )?;
        positive(
            "gateway.body_read_timeout_secs",
            self.gateway.body_read_timeout_secs,
        )?;
        if self.gateway.idle_timeout_secs < 20 {
            return Err(ConfigError::invalid(
                "gateway.idle_timeout_secs",
                "must be at least 20 (keep-alives come every 15 s)",
            ));
        }
        if self.gateway.max_ws_message_bytes < 1024 {
            return Err(ConfigError::invalid(
                "gateway.max_ws_message_bytes",
                "must be at least 1024",
            ));
        }
        if !(1024..=self.gateway.max_ws_message_bytes).contains(&self.gateway.max_ws_frame_bytes) {
            return Err(ConfigError::invalid(
                "gateway.max_ws_frame_bytes",
                "must be at least 1024 and at most gateway.max_ws_message_bytes",
            ));
        }
        positive(
            "persona.history_turns",
            self.persona.history_turns as u64 + 1,
        )?;
        at_least_tokens("persona.reply_max_tokens", self.persona.reply_max_tokens)?;
        at_least_tokens(
            "persona.result_reply_max_tokens",
            self.persona.result_reply_max_tokens,
        )?;
        if let Some(endpoint) = &self.telemetry.otlp_endpoint {
            url_like("telemetry.otlp_endpoint", endpoint, &["http", "https"])?;
        }
        if let Some(listen) = &self.telemetry.metrics_listen {
            if listen.parse::<std::net::SocketAddr>().is_err() {
                return Err(ConfigError::invalid(
                    "telemetry.metrics_listen",
                    format!("{listen:?} is not an address like 0.0.0.0:9464"),
                ));
            }
        }
        if self.persona.affect_marker.trim().is_empty() || self.persona.affect_marker.contains('\n')
        {
            return Err(ConfigError::invalid(
                "persona.affect_marker",
                "must be one non-empty line",
            ));
        }
        if let Err(e) = self.mood.constants.validate() {
            return Err(ConfigError::invalid(
                format!("mood.constants.{}", e.field),
                e.to_string(),
            ));
        }
        positive("mood.request_timeout_ms", self.mood.request_timeout_ms)?;
        if !(1..=10_000).contains(&self.mood.max_overrides) {
            return Err(ConfigError::invalid(
                "mood.max_overrides",
                "must be between 1 and 10000",
            ));
        }
        self.routing.validate()?;
        for (role, llm) in &self.llm {
            validate_llm(&format!("llm.{role}"), llm)?;
        }
        self.stage.validate()?;
        self.model.validate()?;
        self.web.validate()?;
        self.autonomy.validate()?;
        self.memory.validate()?;
        self.coder.validate()?;
        self.reminders.validate()?;
        if !self.llm.contains_key("persona") {
            return Err(ConfigError::invalid(
                "llm.persona",
                "is required (the persona's model)",
            ));
        }
        super::channels::validate(&self.line, &self.slack, &self.media)?;
        self.telegram.validate()?;
        Ok(())
    }
}

fn validate_llm(key: &str, llm: &LlmRoleConfig) -> Result<(), ConfigError> {
    url_like(
        &format!("{key}.base_url"),
        &llm.base_url,
        &["http", "https"],
    )?;
    if llm.model.trim().is_empty() {
        return Err(ConfigError::invalid(
            format!("{key}.model"),
            "must not be empty",
        ));
    }
    positive(&format!("{key}.timeout_secs"), llm.timeout_secs)?;
    if llm.max_response_bytes < 1024 {
        return Err(ConfigError::invalid(
            format!("{key}.max_response_bytes"),
            "must be at least 1024",
        ));
    }
    if let Some(t) = llm.options.temperature {
        if !(0.0..=2.0).contains(&t) {
            return Err(ConfigError::invalid(
                format!("{key}.options.temperature"),
                "must be within 0..=2",
            ));
        }
    }
    if let Some(p) = llm.options.top_p {
        if !(0.0..=1.0).contains(&p) {
            return Err(ConfigError::invalid(
                format!("{key}.options.top_p"),
                "must be within 0..=1",
            ));
        }
    }
    Ok(())
}

impl CharacterConfig {
    /// The persona placeholders every prompt speaking as or for a character may use.
    pub const PERSONA_PLACEHOLDERS: [&'static str; 5] = [
        "{{name}}",
        "{{display_name}}",
        "{{persona_text}}",
        "{{addon_text}}",
        "{{second_person_label}}",
    ];

    /// `template` with the [`Self::PERSONA_PLACEHOLDERS`] filled from this character.
    pub fn fill_persona(&self, template: &str) -> String {
        template
            .replace("{{name}}", &self.name)
            .replace("{{display_name}}", &self.display_name)
            .replace("{{persona_text}}", self.persona_text.trim())
            .replace("{{addon_text}}", self.addon_text.trim())
            .replace("{{second_person_label}}", self.second_person_label.trim())
    }
}

impl CharacterSettings {
    /// Ids unique and non-empty; the persona's character exists.
    pub fn validate(&self, ghost: &GhostSettings) -> Result<(), ConfigError> {
        let mut seen = std::collections::HashSet::new();
        for (i, c) in self.characters.iter().enumerate() {
            if c.name.trim().is_empty() {
                return Err(ConfigError::invalid(
                    format!("characters[{i}].name"),
                    "must not be empty",
                ));
            }
            if !seen.insert(c.name.as_str()) {
                return Err(ConfigError::invalid(
                    format!("characters[{i}].name"),
                    format!("duplicate id {}", c.name),
                ));
            }
            if c.persona_text.trim().is_empty() {
                return Err(ConfigError::invalid(
                    format!("characters[{i}].persona_text"),
                    "must not be empty: every character needs a persona",
                ));
            }
            if c.second_person_label.trim().is_empty() {
                return Err(ConfigError::invalid(
                    format!("characters[{i}].second_person_label"),
                    "must not be empty: what the character calls the user",
                ));
            }
            if let Some(llm) = &c.llm {
                validate_llm(&format!("characters[{i}].llm"), llm)?;
            }
        }
        if self.get(&ghost.persona.character).is_none() {
            return Err(ConfigError::invalid(
                "persona.character",
                format!(
                    "no character named {} in characters.yaml",
                    ghost.persona.character
                ),
            ));
        }
        Ok(())
    }

    /// The character with internal id `name`.
    pub fn get(&self, name: &str) -> Option<&CharacterConfig> {
        self.characters.iter().find(|c| c.name == name)
    }
}

/// `routing:` (seed 002).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RoutingSettings {
    /// Gates, loop limits and the rule dictionary (relative to the repository root).
    pub rules_file: PathBuf,
    /// Entry mode per channel (`http`, `line`, `slack`): `router` (front router) or `kuro`
    /// (the persona decides on delegation; logged as `line_forced_chat`).
    pub entry_modes: HashMap<String, String>,
    /// Once a session has this many user messages, the worker keeps a short summary
    /// (refreshed every this many messages) and prompts use it plus the last turns.
    pub summarize_after_turns: u32,
    /// How many earlier turns (user and assistant messages) worker prompts include.
    pub recent_turns: usize,
    /// How many earlier ANALYZE results of the session an ANALYZE task is given.
    pub analyze_context: usize,
    /// A turn nobody closed within this many seconds of its message is closed by the turn
    /// watchdog with a `TurnTimedOut` notice. Keep it below `gateway.turn_timeout_secs`, so
    /// an HTTP client still waiting gets the notice.
    pub turn_timeout_secs: u64,
    /// How often the turn watchdog looks for overdue turns, in milliseconds.
    pub watchdog_interval_ms: u64,
}

impl Default for RoutingSettings {
    fn default() -> Self {
        Self {
            rules_file: PathBuf::from("config/routing.yaml"),
            entry_modes: [("http", "router"), ("slack", "router"), ("line", "kuro")]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            summarize_after_turns: 20,
            recent_turns: 6,
            analyze_context: 3,
            turn_timeout_secs: 250,
            watchdog_interval_ms: 1000,
        }
    }
}

impl RoutingSettings {
    /// Known channels and modes only; positive lengths.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (channel, mode) in &self.entry_modes {
            if !matches!(channel.as_str(), "http" | "line" | "slack" | "telegram") {
                return Err(ConfigError::invalid(
                    format!("routing.entry_modes.{channel}"),
                    "unknown channel (expected http, line, slack or telegram)",
                ));
            }
            if !matches!(mode.as_str(), "router" | "kuro") {
                return Err(ConfigError::invalid(
                    format!("routing.entry_modes.{channel}"),
                    "must be router or kuro",
                ));
            }
        }
        positive(
            "routing.summarize_after_turns",
            self.summarize_after_turns.into(),
        )?;
        positive("routing.turn_timeout_secs", self.turn_timeout_secs)?;
        positive("routing.watchdog_interval_ms", self.watchdog_interval_ms)?;
        Ok(())
    }

    /// The entry mode configured for `channel` (`kuro` for LINE and `router` otherwise when
    /// the channel is not listed).
    pub fn entry_mode(&self, channel: &str) -> &str {
        match self.entry_modes.get(channel) {
            Some(mode) => mode,
            None if channel == "line" => "kuro",
            None => "router",
        }
    }
}
