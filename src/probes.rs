//! The probes (`ghost mood`, `route`, `mask`: stdin in, one JSON object out) and two small
//! operator verbs (`ghost route-report`, `ghost autonomy tick`).

use anyhow::{Context, Result};
use ghost_shared::config::Config;

use crate::doctor::require_infrastructure;
use crate::serve::migrate;

/// `ghost autonomy tick`.
pub async fn autonomy_tick(config: Config) -> Result<()> {
    require_infrastructure(&config).await?;
    let persona = config.ghost.persona.character.clone();
    let ctx = ghost_shared::service::ServiceContext::connect(config, "cli").await?;
    let id = ghost_shared::autonomy::tick::request_tick(
        &ctx.log,
        uuid::Uuid::new_v4(),
        &persona,
        ghost_shared::autonomy::events::TickTrigger::Cli,
        ctx.service,
    )
    .await?;
    println!(
        "{}",
        serde_json::json!({"tick_event_id": id, "persona": persona})
    );
    Ok(())
}

/// `ghost mood --now`: episodes on stdin, the mood as JSON on stdout. Constants come from
/// the configuration (the seed's defaults when there is no configuration directory).
pub fn mood(now: f64) -> Result<()> {
    let mut input = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut input).context("reading stdin")?;
    let constants = match Config::load_default() {
        Ok(config) => config.ghost.mood.constants,
        Err(ghost_shared::config::ConfigError::Read { .. }) => Default::default(),
        Err(e) => return Err(e.into()),
    };
    let state = ghost_mood::mood::probe(&input, now, &constants)?;
    println!("{}", serde_json::to_string(&state)?);
    Ok(())
}

/// `ghost route-report`: the corrected routes as one JSON object.
pub async fn route_report(config: Config, limit: i64) -> Result<()> {
    require_infrastructure(&config).await?;
    let store = migrate(&config).await?;
    let report = crate::route_report::report(store.pool(), limit).await?;
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}

/// `ghost route`: the first routing stage for stdin, as JSON on stdout.
pub fn route(local_only: bool, rules: Option<std::path::PathBuf>) -> Result<()> {
    use std::io::Read;
    let path = match rules {
        Some(path) => path,
        None => {
            let config = Config::load_default()?;
            config.resolve(&config.ghost.routing.rules_file)
        }
    };
    let yaml = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let routing = ghost_router::routing::RoutingConfig::from_yaml(&yaml)
        .with_context(|| format!("{} is not a valid routing file", path.display()))?;
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("stdin is not UTF-8 text")?;
    let text = text.strip_suffix('\n').unwrap_or(&text);
    let output = ghost_router::routing::probe(text, local_only, &routing.dictionary);
    println!("{}", serde_json::to_string(&output)?);
    Ok(())
}

/// `ghost mask`: stdin text masked with the rules file, as JSON.
pub fn mask(rules: Option<std::path::PathBuf>) -> Result<()> {
    use std::io::Read;
    let path = rules.unwrap_or_else(|| {
        std::env::var_os(ghost_shared::config::CONFIG_DIR_ENV)
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::path::PathBuf::from("config"))
            .join(ghost_shared::config::MASKING_FILE)
    });
    let masker = ghost_shared::masking::masker_from_file(&path)?;
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("stdin is not UTF-8 text")?;
    let text = text.strip_suffix('\n').unwrap_or(&text);
    println!("{}", serde_json::to_string(&masker.mask(text))?);
    Ok(())
}
