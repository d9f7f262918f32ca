//! What a bearer token is, as `POST /v1/auth/introspect` tells the edge: a pure decision that
//! takes `now`, and says how long the answer may be cached.

use super::Auth;
use super::jwt::verify_jwt_expiring;
use crate::config::Role;

/// How long an edge may cache that a static token is active. Tokens change only with the config,
/// so this is how long a removed token may still be taken at the edge after a restart.
pub(super) const STATIC_TOKEN_CACHE_SECONDS: i64 = 60;
/// The longest an edge may cache that a player JWT is active; never past the JWT's `exp`.
pub(super) const PLAYER_JWT_CACHE_SECONDS_MAX: i64 = 300;
/// How long an edge may cache that a token is not active: short, so that a token added to the
/// config, or a JWT whose `nbf` arrives, is taken soon after.
pub(super) const INACTIVE_CACHE_SECONDS: i64 = 10;

/// What a bearer token is, as `POST /v1/auth/introspect` answers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Introspection {
    /// The origin takes the token.
    Active {
        /// Its role (`player` for a JWT).
        role: Role,
        /// The games it may touch, `["*"]` for all.
        games: Vec<String>,
        /// The player it reads as, for player tokens and JWTs.
        player_id: Option<String>,
        /// How long the answer may be cached, in seconds.
        cache_seconds: i64,
    },
    /// Unknown, malformed, expired, not yet valid or forged: the origin would answer 401.
    Inactive {
        /// How long the answer may be cached, in seconds.
        cache_seconds: i64,
    },
}

impl Introspection {
    /// The answer as a caller of `caller_games` may see it: only the games it serves, so an edge
    /// learns nothing about tokens of other games; a token none of whose games it serves is, to
    /// it, not active. O(games x caller games).
    pub(crate) fn seen_by(self, caller_games: &[String]) -> Introspection {
        let Introspection::Active {
            role,
            games,
            player_id,
            cache_seconds,
        } = self
        else {
            return self;
        };
        let all = |games: &[String]| games.iter().any(|g| g == "*");
        let games = if all(caller_games) {
            games
        } else if all(&games) {
            caller_games.to_vec()
        } else {
            games.into_iter().filter(|g| caller_games.contains(g)).collect()
        };
        if games.is_empty() {
            return Introspection::Inactive {
                cache_seconds: INACTIVE_CACHE_SECONDS,
            };
        }
        Introspection::Active {
            role,
            games,
            player_id,
            cache_seconds,
        }
    }

    /// The JSON answer: `{"active": true, "role", "games", "player_id" (or null),
    /// "cache_seconds"}` or `{"active": false, "cache_seconds"}`.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        match self {
            Introspection::Active {
                role,
                games,
                player_id,
                cache_seconds,
            } => serde_json::json!({
                "active": true, "role": role, "games": games, "player_id": player_id,
                "cache_seconds": cache_seconds,
            }),
            Introspection::Inactive { cache_seconds } => {
                serde_json::json!({"active": false, "cache_seconds": cache_seconds})
            }
        }
    }
}

impl Auth {
    /// What `token` is at `now_secs`, as [`Auth::authenticate`] would take it from an
    /// `Authorization: Bearer` header, and how long that answer may be cached. A static token's
    /// rate limit is not charged: it is only named here, not used. O(token length).
    pub(crate) fn introspect(&self, token: &str, now_secs: i64) -> Introspection {
        let token = token.trim();
        if let Some(found) = self.tokens.get(token) {
            let principal = &found.principal;
            return Introspection::Active {
                role: principal.role,
                games: principal.games.clone(),
                player_id: principal.player_id.clone(),
                cache_seconds: STATIC_TOKEN_CACHE_SECONDS,
            };
        }
        let verified = match &self.jwt_secret {
            Some(key) if token.matches('.').count() == 2 => {
                verify_jwt_expiring(key, token, now_secs, self.jwt_max_lifetime_secs).ok()
            }
            _ => None,
        };
        match verified {
            Some((claims, exp)) => Introspection::Active {
                role: Role::Player,
                games: claims.games,
                player_id: Some(claims.player),
                // `verify_jwt_expiring` takes only `now < exp`, so this is at least one second,
                // and an answer is never cached past the token's own life.
                cache_seconds: (exp - now_secs).min(PLAYER_JWT_CACHE_SECONDS_MAX),
            },
            None => Introspection::Inactive {
                cache_seconds: INACTIVE_CACHE_SECONDS,
            },
        }
    }
}
