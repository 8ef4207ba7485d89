//! `ghost route-report`: the routes users corrected (seed 002: negation or an explicit
//! command right after an automatically routed answer), counted by wrong → right route and
//! listed newest first, to improve the rule dictionary and the thresholds from.

use std::collections::BTreeMap;

use ghost_router::projections::{Misrouted, RoutingLog};
use serde::Serialize;
use sqlx::PgPool;

/// The report printed as JSON.
#[derive(Debug, Serialize)]
pub struct RouteReport {
    /// Corrections listed (at most the limit).
    pub total: usize,
    /// `FROM->TO` pairs with their counts, e.g. `CODE->CHAT: 3`.
    pub by_pair: BTreeMap<String, usize>,
    /// `rule`, `classifier`, … : how the misrouted messages had been decided.
    pub by_source: BTreeMap<String, usize>,
    /// The corrections, newest first (inputs masked).
    pub items: Vec<Misrouted>,
}

/// The newest `limit` corrections from the `routing_log` projection.
pub async fn report(pool: &PgPool, limit: i64) -> Result<RouteReport, sqlx::Error> {
    let items = RoutingLog::misclassifications(pool, limit).await?;
    let mut by_pair = BTreeMap::new();
    let mut by_source = BTreeMap::new();
    for m in &items {
        let to = m.corrected_to.as_deref().unwrap_or("?");
        *by_pair
            .entry(format!("{}->{to}", m.misrouted_as))
            .or_insert(0) += 1;
        *by_source
            .entry(m.misrouted_source.clone().unwrap_or_default())
            .or_insert(0) += 1;
    }
    Ok(RouteReport {
        total: items.len(),
        by_pair,
        by_source,
        items,
    })
}
