//! Player JWTs (HS256), checked by the core's rule (`standings_core::jwt`), which the edge
//! worker applies too.

use crate::http::error::{AppError, Code};

/// What a verified player JWT says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PlayerClaims {
    /// `sub`: the player it reads as.
    pub player: String,
    /// `games`: the games it may read, `["*"]` for all.
    pub games: Vec<String>,
}

/// Verifies an HS256 JWT held to what a static player token is held to: it must carry `exp`,
/// live at most `max_lifetime_secs` (from `iat`, or from now when it has none or names a later
/// time), and name its `games`. Checks `exp` and `nbf` against `now_secs`.
pub(crate) fn verify_jwt(
    key: &[u8],
    token: &str,
    now_secs: i64,
    max_lifetime_secs: i64,
) -> Result<PlayerClaims, AppError> {
    verify_jwt_expiring(key, token, now_secs, max_lifetime_secs).map(|(claims, _)| claims)
}

/// [`verify_jwt`], with the token's `exp` beside its claims: the core's check
/// (`standings_core::jwt`), which the edge worker makes too.
pub(super) fn verify_jwt_expiring(
    key: &[u8],
    token: &str,
    now_secs: i64,
    max_lifetime_secs: i64,
) -> Result<(PlayerClaims, i64), AppError> {
    let jwt = standings_core::jwt::verify(key, token, now_secs, max_lifetime_secs)
        .map_err(|refusal| AppError::new(Code::UNAUTHENTICATED, refusal.to_string()))?;
    Ok((
        PlayerClaims {
            player: jwt.player,
            games: jwt.games,
        },
        jwt.exp,
    ))
}

/// Signs an HS256 JWT; used by tests and by operators' tooling.
pub fn sign_jwt(key: &[u8], payload: &serde_json::Value) -> String {
    standings_core::jwt::sign(key, &payload.to_string())
}
