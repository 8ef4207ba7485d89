//! Starting services. In one process or many, they only talk through NATS and Postgres.

use std::sync::Arc;

use clap::ValueEnum;
use ghost_shared::config::Config;
use ghost_shared::projector::Projection;
use ghost_shared::service::{ServiceContext, ServiceDescriptor, ServiceError, ServiceHandle};
use ghost_shared::store::WakeFilter;

/// A service `ghost run` can start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServiceName {
    /// HTTP front door.
    Gateway,
    /// Route decisions and the loop.
    Router,
    /// Local-model work.
    Worker,
    /// Writes every reply.
    Persona,
    /// Projects affect into mood; answers mood queries.
    Mood,
    /// CODE on the cloud model.
    Coder,
    /// The write plan after each reply; the `memory` projection.
    WritePlan,
    /// The embedded model server (needs neither Postgres nor NATS; `ghost up` starts it
    /// first when `model.enabled`).
    Model,
}

impl ServiceName {
    /// The conversation services, in start order (consumers before the front door); `ghost
    /// up` adds the write-plan service (see [`Self::up`]).
    pub const ALL: [ServiceName; 6] = [
        ServiceName::Mood,
        ServiceName::Router,
        ServiceName::Worker,
        ServiceName::Coder,
        ServiceName::Persona,
        ServiceName::Gateway,
    ];

    /// Every service, the embedded model first (the order `ghost up` would start them in,
    /// when it runs them all).
    pub const EVERY: [ServiceName; 8] = [
        ServiceName::Model,
        ServiceName::Mood,
        ServiceName::Router,
        ServiceName::Worker,
        ServiceName::Coder,
        ServiceName::Persona,
        ServiceName::Gateway,
        ServiceName::WritePlan,
    ];

    /// How the service describes itself (its crate's `DESCRIPTOR`).
    pub fn descriptor(self) -> &'static ServiceDescriptor {
        match self {
            ServiceName::Gateway => &ghost_gateway::DESCRIPTOR,
            ServiceName::Router => &ghost_router::DESCRIPTOR,
            ServiceName::Worker => &ghost_worker::DESCRIPTOR,
            ServiceName::Persona => &ghost_persona::DESCRIPTOR,
            ServiceName::Mood => &ghost_mood::DESCRIPTOR,
            ServiceName::Coder => &ghost_coder::DESCRIPTOR,
            ServiceName::WritePlan => &ghost_write_plan::DESCRIPTOR,
            ServiceName::Model => &ghost_model::DESCRIPTOR,
        }
    }

    /// Its name.
    pub fn as_str(self) -> &'static str {
        self.descriptor().name
    }

    /// How far above `telemetry.metrics_listen`'s port this service's metrics listener sits,
    /// so that `ghost run <service>` processes on one host never want the same port (the
    /// gateway serves `/metrics` on its own HTTP port and needs none).
    pub fn metrics_port_offset(self) -> u16 {
        self.descriptor().metrics_port_offset
    }

    /// What `ghost up` runs: the embedded model first when the configuration asks for it (its
    /// chat model, or the embedding model vector recall uses whichever chat model answers),
    /// then every service of [`Self::ALL`], then the write-plan service (after each reply,
    /// off the reply's path; kept out of `ALL` so tests that script the worker model's
    /// answers in order only get the calls they script).
    pub fn up(config: &Config) -> Vec<ServiceName> {
        let mut services = Vec::new();
        if config.ghost.model.enabled || config.serves_embeddings() {
            services.push(ServiceName::Model);
        }
        services.extend(ServiceName::ALL);
        services.push(ServiceName::WritePlan);
        services
    }
}

/// Running services and this process's outbox relay.
pub struct Stack {
    /// One handle per service.
    pub services: Vec<ServiceHandle>,
    /// The relay publishing what a crash left in the outbox.
    pub relay: tokio::task::JoinHandle<()>,
    /// The connections the services share.
    pub ctx: ServiceContext,
}

impl Stack {
    /// The gateway's address, if it runs here.
    pub fn gateway_addr(&self) -> Option<std::net::SocketAddr> {
        self.service(ServiceName::Gateway).and_then(|s| s.addr)
    }

    /// The embedded model server's address, if it runs here.
    pub fn model_addr(&self) -> Option<std::net::SocketAddr> {
        self.service(ServiceName::Model).and_then(|s| s.addr)
    }

    /// The handle of one service.
    pub fn service(&self, name: ServiceName) -> Option<&ServiceHandle> {
        self.services.iter().find(|s| s.service == name.as_str())
    }

    /// Stops everything at once (as a crash would).
    pub fn abort(&self) {
        for s in &self.services {
            s.abort();
        }
        self.relay.abort();
    }

    /// Waits until any task of any service ends, keeping the stack (so it can still be
    /// stopped gracefully afterwards).
    pub async fn wait_any(&mut self) {
        let tasks: Vec<_> = self
            .services
            .iter_mut()
            .flat_map(|s| s.tasks.iter_mut())
            .collect();
        if tasks.is_empty() {
            return futures::future::pending().await;
        }
        let _ = futures::future::select_all(tasks).await;
    }
}

/// Where a process running `services` serves its metrics: `base` (`telemetry.metrics_listen`)
/// with the port raised by the first service's [`ServiceName::metrics_port_offset`]. Port 0
/// (any free port) stays 0.
pub fn metrics_address(
    base: &str,
    services: &[ServiceName],
) -> Result<std::net::SocketAddr, ServiceError> {
    let mut addr: std::net::SocketAddr = base.parse().map_err(|_| {
        ServiceError::Config(format!(
            "telemetry.metrics_listen {base:?} is not an address like 127.0.0.1:9464"
        ))
    })?;
    if addr.port() != 0 {
        let offset = services.first().map_or(0, |s| s.metrics_port_offset());
        let port = addr.port().checked_add(offset).ok_or_else(|| {
            ServiceError::Config(format!(
                "telemetry.metrics_listen {base}: port + {offset} (the service's offset) is above 65535"
            ))
        })?;
        addr.set_port(port);
    }
    Ok(addr)
}

/// Serves this process's metrics (`GET /metrics`) on `listen`: what `ghost run <service>`
/// opens when the process runs no gateway.
pub async fn serve_metrics(listen: std::net::SocketAddr) -> Result<ServiceHandle, ServiceError> {
    let listener = tokio::net::TcpListener::bind(listen).await.map_err(|e| {
        ServiceError::Config(format!(
            "metrics listener {listen} (telemetry.metrics_listen + the service's offset): {e} (set GHOST_TELEMETRY__METRICS_LISTEN to another base address, or null)"
        ))
    })?;
    ghost_shared::metrics::install();
    let mut handle = ServiceHandle::new("metrics");
    handle.addr = Some(listener.local_addr()?);
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(ghost_gateway::metrics::metrics),
    );
    handle.spawn(async move { axum::serve(listener, app).await });
    Ok(handle)
}

/// Connects once and starts `services` on the shared connections.
pub async fn start_stack(config: Config, services: &[ServiceName]) -> Result<Stack, ServiceError> {
    let ctx = ServiceContext::connect(config, "ghost").await?;
    ctx.store().announce_only(any_projection_wakes(&ctx.config));
    let relay = ctx.spawn_outbox_relay();
    let mut handles = Vec::new();
    for name in services {
        // Held to what the service declares it consumes and appends.
        let sctx = ctx.for_descriptor(name.descriptor());
        let handle = (name.descriptor().start)(sctx).await;
        match handle {
            Ok(h) => handles.push(h),
            Err(e) => {
                for h in &handles {
                    h.abort();
                }
                relay.abort();
                return Err(e);
            }
        }
    }
    Ok(Stack {
        services: handles,
        relay,
        ctx,
    })
}

/// Every projection some service keeps, fresh (what `ghost projections rebuild` runs).
pub fn all_projections(config: &Config) -> Vec<Arc<dyn Projection>> {
    ServiceName::EVERY
        .iter()
        .flat_map(|s| (s.descriptor().projections)(config))
        .collect()
}

/// The projection called `name` (`ghost projections rebuild <name>`).
pub fn projection_by_name(name: &str, config: &Config) -> Option<Arc<dyn Projection>> {
    all_projections(config)
        .into_iter()
        .find(|p| p.name() == name)
}

/// The names [`projection_by_name`] accepts.
pub fn projection_names(config: &Config) -> Vec<&'static str> {
    all_projections(config).iter().map(|p| p.name()).collect()
}

/// Whether any projection there is wakes on an event type: every runner of the database is
/// one of this binary's, so an append of a type none wakes on needs no wake-up.
pub fn any_projection_wakes(config: &Config) -> WakeFilter {
    let projections = all_projections(config);
    Arc::new(move |event_type: &str| projections.iter().any(|p| p.wakes_on(event_type)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_are_announced_for_the_types_some_projection_wakes_on() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
        let config =
            Config::load(&dir, std::iter::empty()).expect("the repository's configuration");
        let wakes = any_projection_wakes(&config);
        // The routing, mood and memory projections.
        for woken in ["SessionSummarized", "AssistantReplied", "StateUpserted"] {
            assert!(wakes(woken), "{woken}");
        }
        // memory_embeddings embeds what users say, when there is an embedding model.
        let embeds = config.ghost.llm.contains_key("embedding");
        assert_eq!(wakes("UserMessageReceived"), embeds);
        // Listed by their writers, left to the poll, or projected by nobody.
        for quiet in [
            "RouteDecided",
            "RenderRequested",
            "TokenRelayed",
            "StageSpoke",
        ] {
            assert!(!wakes(quiet), "{quiet}");
        }
    }

    #[test]
    fn each_service_gets_its_own_metrics_port_above_the_base() {
        let port = |services: &[ServiceName]| {
            metrics_address("127.0.0.1:9464", services)
                .expect("address")
                .port()
        };
        let mut ports: Vec<u16> = [ServiceName::WritePlan, ServiceName::Model]
            .iter()
            .chain(ServiceName::ALL.iter())
            .map(|s| port(&[*s]))
            .collect();
        assert_eq!(port(&[ServiceName::Router]), 9465);
        assert_eq!(port(&[ServiceName::Mood, ServiceName::Router]), 9468);
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 8, "two services share a port: {ports:?}");
    }

    #[test]
    fn port_zero_stays_any_free_port_and_bad_bases_are_refused() {
        let any = metrics_address("127.0.0.1:0", &[ServiceName::Worker]).expect("address");
        assert_eq!(any.port(), 0);
        assert!(metrics_address("127.0.0.1:65535", &[ServiceName::Worker]).is_err());
        assert!(metrics_address("localhost", &[ServiceName::Worker]).is_err());
    }
}
