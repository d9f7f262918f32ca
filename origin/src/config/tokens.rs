//! The `[[tokens]]` tables: the static tokens and what each may do.

use serde::{Deserialize, Serialize};

/// What a token may do: the role the tiers share (`standings_core::contract::access`).
pub use standings_core::contract::access::Role;

/// One static token.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// The token's name, recorded as the source of the events it submits.
    pub name: String,
    /// The bearer secret.
    pub secret: String,
    /// What it may do.
    pub role: Role,
    /// The games it may touch; `["*"]` for all.
    #[serde(default = "all_games")]
    pub games: Vec<String>,
    /// For `role = "player"`: the player it reads as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub player_id: Option<String>,
    /// Requests per second allowed to this token (a token bucket with one second of burst).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_per_second: Option<u32>,
}

pub(super) fn all_games() -> Vec<String> {
    vec!["*".into()]
}
