//! The persona's judgement of a work result: `{"goal_reached": true}` or a proposal
//! (validated by the router's `parse_proposal`, which also checks that `route` goes with
//! `reroute` alone).

use schemars::JsonSchema;
use serde::Deserialize;

use crate::Contract;
use ghost_domain::routing::Route;

/// What the persona may propose.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepShape {
    /// Run the worker once more.
    Continue,
    /// Stop and reply.
    Stop,
    /// Ask the user first.
    Confirm,
    /// Run once on another route.
    Reroute,
}

/// The judgement as the model writes it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ProposalShape {
    /// Whether the result reaches the goal (then the rest is ignored).
    pub goal_reached: bool,
    /// The step proposed when it does not.
    pub proposal: Option<StepShape>,
    /// Why.
    #[schemars(length(max = 200))]
    pub reason: String,
    /// The route of a `reroute`.
    pub route: Option<Route>,
}

/// Tokens a judgement may take.
pub const MAX_TOKENS: u32 = 96;

/// The judgement's contract.
pub fn contract() -> Contract {
    Contract::of::<ProposalShape>("persona_proposal", MAX_TOKENS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proposal_names_its_step_and_route() {
        let c = contract();
        assert!(c.admits(r#"{"goal_reached":true,"proposal":null,"reason":"","route":null}"#));
        assert!(c.admits(
            r#"{"goal_reached":false,"proposal":"reroute","reason":"needs a plan","route":"PLAN"}"#
        ));
        assert!(!c.admits(r#"{"goal_reached":false,"proposal":"dance","reason":"x","route":null}"#));
    }
}
