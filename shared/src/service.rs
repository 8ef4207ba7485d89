//! What every service runs with: configuration, the event log, and its own name.

use std::sync::Arc;
use std::time::Duration;

use crate::bus::{Bus, BusError, ConsumerSpec, HandlerError};
use crate::clock::Clock;
use crate::config::Config;
use crate::envelope::RecordedEvent;
use crate::event_log::{run_outbox_relay, EventLog};
use crate::ids::derive_event_id;
use crate::llm::{LlmClient, LlmError};
use crate::projector::{Projection, ProjectionRunner};
use crate::store::{EventStore, StoreError};
use futures::future::BoxFuture;

/// Failure to start or run a service.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// Postgres.
    #[error("event store: {0}")]
    Store(#[from] StoreError),
    /// NATS.
    #[error("bus: {0}")]
    Bus(#[from] BusError),
    /// A model client could not be built.
    #[error("llm: {0}")]
    Llm(#[from] LlmError),
    /// Configuration is incomplete for this service.
    #[error("config: {0}")]
    Config(String),
    /// A listener or file could not be opened.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

/// What a service is, for whatever runs it (`ghost up`, `ghost run`, `ghost projections`,
/// `ghost events`, the tests): each service crate describes itself once (`DESCRIPTOR`), so
/// its name, its metrics port, the projections it keeps and the event types it consumes and
/// appends are read from one place. A projection the service runs cannot be missing from
/// `ghost projections rebuild`; a consumer or an append it does not declare is refused when
/// it runs under its descriptor ([`ServiceContext::for_descriptor`]).
#[derive(Debug)]
pub struct ServiceDescriptor {
    /// The service's name (its consumers' durable names start with it).
    pub name: &'static str,
    /// The event types its bus consumers take ([`ServiceContext::consumer`] refuses others).
    pub consumes: &'static [&'static str],
    /// The event types it appends (its store refuses others).
    pub appends: &'static [&'static str],
    /// How far above `telemetry.metrics_listen`'s port its own metrics listener sits, so
    /// that processes of different services on one host never want the same port.
    pub metrics_port_offset: u16,
    /// The projections it keeps, as fresh instances (what a rebuild runs).
    pub projections: fn(&Config) -> Vec<Arc<dyn Projection>>,
    /// Starts it on `ctx`.
    pub start: fn(ServiceContext) -> BoxFuture<'static, Result<ServiceHandle, ServiceError>>,
}

impl ServiceDescriptor {
    /// The names of the projections it keeps.
    pub fn projection_names(&self, config: &Config) -> Vec<&'static str> {
        (self.projections)(config)
            .iter()
            .map(|p| p.name())
            .collect()
    }
}

/// For a service that keeps no projection.
pub fn no_projections(_: &Config) -> Vec<Arc<dyn Projection>> {
    Vec::new()
}

/// The running tasks of one service: abort them to stop it (as a crash would).
#[derive(Debug, Default)]
pub struct ServiceHandle {
    /// The service's name.
    pub service: &'static str,
    /// Its tasks.
    pub tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The address it listens on, for HTTP services.
    pub addr: Option<std::net::SocketAddr>,
    /// The projections it runs (checked against its descriptor's).
    pub projections: Vec<&'static str>,
}

impl ServiceHandle {
    /// A handle for `service` with no tasks yet.
    pub fn new(service: &'static str) -> Self {
        Self {
            service,
            tasks: Vec::new(),
            addr: None,
            projections: Vec::new(),
        }
    }

    /// Runs a projection as one of the service's tasks.
    pub fn run_projection(&mut self, runner: ProjectionRunner) {
        self.projections.push(runner.name());
        self.tasks.push(tokio::spawn(runner.run()));
    }

    /// Spawns `fut` as one of the service's tasks, logging if it ends with an error.
    pub fn spawn<E: std::fmt::Display>(
        &mut self,
        fut: impl std::future::Future<Output = Result<(), E>> + Send + 'static,
    ) {
        let service = self.service;
        self.tasks.push(tokio::spawn(async move {
            if let Err(e) = fut.await {
                tracing::error!(service, error = %e, "service task ended");
            }
        }));
    }

    /// Stops every task at once (in-process crash).
    pub fn abort(&self) {
        for t in &self.tasks {
            t.abort();
        }
    }

    /// Waits until any task ends (a service never ends on its own unless it failed).
    pub async fn wait(self) {
        if self.tasks.is_empty() {
            return;
        }
        let _ = futures::future::select_all(self.tasks).await;
    }
}

/// A service's handle on the world (cheap to clone).
#[derive(Clone, Debug)]
pub struct ServiceContext {
    /// The whole configuration.
    pub config: Arc<Config>,
    /// Store + bus.
    pub log: EventLog,
    /// This service's name (producer of its events, consumer-name prefix).
    pub service: &'static str,
    /// The system's clock.
    clock: Clock,
    /// What the service declares it consumes and appends, when it runs under its
    /// descriptor (as `ghost up` and `ghost run` start it); a bare context checks nothing.
    descriptor: Option<&'static ServiceDescriptor>,
}

impl ServiceContext {
    /// Connects to Postgres and NATS (does not migrate).
    pub async fn connect(config: Config, service: &'static str) -> Result<Self, ServiceError> {
        let store = EventStore::connect(
            &config.ghost.database.url,
            config.ghost.database.max_connections,
        )
        .await?;
        let bus = Bus::connect(config.ghost.bus.clone()).await?;
        let clock = Clock::of(store.pool(), config.ghost.clock.simulated)
            .await
            .map_err(|e| ServiceError::Store(StoreError::from(e)))?;
        Ok(Self {
            config: Arc::new(config),
            log: EventLog::new(store, bus),
            service,
            clock,
            descriptor: None,
        })
    }

    /// The same connections under another service's name, checking nothing it declares.
    pub fn for_service(&self, service: &'static str) -> Self {
        Self {
            config: self.config.clone(),
            log: self.log.clone(),
            service,
            clock: self.clock.clone(),
            descriptor: None,
        }
    }

    /// The same connections for the service `descriptor` describes, held to it: an append
    /// of a type it does not list in `appends`, or a consumer of one it does not list in
    /// `consumes`, is refused.
    pub fn for_descriptor(&self, descriptor: &'static ServiceDescriptor) -> Self {
        Self {
            config: self.config.clone(),
            log: self.log.declaring(descriptor.name, descriptor.appends),
            service: descriptor.name,
            clock: self.clock.clone(),
            descriptor: Some(descriptor),
        }
    }

    /// The durable consumer of `event_type` for this service; refused when the service's
    /// descriptor does not list the type in `consumes`.
    pub fn consumer(&self, event_type: &str) -> Result<ConsumerSpec, ServiceError> {
        if let Some(d) = self.descriptor {
            if !d.consumes.contains(&event_type) {
                return Err(ServiceError::Config(format!(
                    "{} consumes {event_type}, which its ServiceDescriptor::consumes does not list",
                    d.name
                )));
            }
        }
        Ok(ConsumerSpec::new(self.service, event_type))
    }

    /// The system's clock (`recorded_at` reads the same one).
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The event store.
    pub fn store(&self) -> &EventStore {
        self.log.store()
    }

    /// The bus.
    pub fn bus(&self) -> &Bus {
        self.log.bus()
    }

    /// The first stored outcome of `cause` among `steps` (each outcome's id derives from the
    /// cause and the step name, see [`derive_event_id`]), if any: how a handler sees that a
    /// redelivered message was already handled.
    pub async fn stored_outcome(
        &self,
        cause: &RecordedEvent,
        steps: &[&str],
    ) -> Result<Option<RecordedEvent>, HandlerError> {
        let ids: Vec<uuid::Uuid> = steps
            .iter()
            .map(|step| derive_event_id(cause.event_id, step))
            .collect();
        self.store()
            .get_any(&ids)
            .await
            .map_err(HandlerError::transient)
    }

    /// The event that closed the turn of user message `user_event_id`, if any (see
    /// [`crate::ids::turn_outcome_id`]).
    pub async fn turn_outcome(
        &self,
        user_event_id: uuid::Uuid,
    ) -> Result<Option<RecordedEvent>, HandlerError> {
        self.store()
            .get(crate::ids::turn_outcome_id(user_event_id))
            .await
            .map_err(HandlerError::transient)
    }

    /// Whether any of `steps`' outcomes of `cause` is stored already (a redelivery).
    pub async fn outcome_stored(
        &self,
        cause: &RecordedEvent,
        steps: &[&str],
    ) -> Result<bool, HandlerError> {
        Ok(self.stored_outcome(cause, steps).await?.is_some())
    }

    /// A client for the model configured under `llm.<role>`.
    pub fn llm(&self, role: &str) -> Result<LlmClient, ServiceError> {
        let cfg = self
            .config
            .ghost
            .llm
            .get(role)
            .ok_or_else(|| ServiceError::Config(format!("llm.{role} is not configured")))?;
        Ok(LlmClient::new(cfg.clone(), None)?.with_role(role))
    }

    /// Starts this process's outbox relay (one per process is plenty; many are safe).
    pub fn spawn_outbox_relay(&self) -> tokio::task::JoinHandle<()> {
        let o = &self.config.ghost.outbox;
        tokio::spawn(run_outbox_relay(
            self.store().clone(),
            self.bus().clone(),
            Duration::from_millis(o.relay_interval_ms),
            Duration::from_millis(o.grace_ms),
        ))
    }
}
