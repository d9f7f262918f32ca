//! Who is calling: static bearer tokens from the config, and player JWTs (HS256).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::http::{HeaderMap, header};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::config::{Config, Role, TokenConfig};
use crate::error::AppError;

/// An authenticated caller.
#[derive(Clone, Debug)]
pub struct Principal {
    /// The token's name (recorded as the source of events), or `jwt:<player>`.
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// The games it may touch (`*` for all).
    pub games: Vec<String>,
    /// The player it reads as, for player tokens.
    pub player_id: Option<String>,
}

impl Principal {
    /// Whether the caller may touch `game`.
    pub fn allows_game(&self, game: &str) -> bool {
        self.games.iter().any(|g| g == "*" || g == game)
    }
}

struct StaticToken {
    principal: Principal,
    limiter: Option<Mutex<Bucket>>,
}

/// A token bucket: `rate` tokens a second, holding at most one second's worth.
struct Bucket {
    rate: f64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    fn take(&mut self) -> bool {
        let now = Instant::now();
        self.tokens = (self.tokens + now.duration_since(self.last).as_secs_f64() * self.rate).min(self.rate);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The authenticator, built once from the config.
pub struct Auth {
    tokens: HashMap<String, Arc<StaticToken>>,
    jwt_secret: Option<Vec<u8>>,
    public_reads: bool,
}

impl Auth {
    /// Builds the authenticator from the config's tokens.
    pub fn from_config(config: &Config) -> Auth {
        let tokens = config
            .tokens
            .iter()
            .map(|t: &TokenConfig| {
                let principal = Principal {
                    name: t.name.clone(),
                    role: t.role,
                    games: t.games.clone(),
                    player_id: t.player_id.clone(),
                };
                let limiter = t.rate_limit_per_second.map(|rate| {
                    Mutex::new(Bucket {
                        rate: f64::from(rate),
                        tokens: f64::from(rate),
                        last: Instant::now(),
                    })
                });
                (t.secret.clone(), Arc::new(StaticToken { principal, limiter }))
            })
            .collect();
        Auth {
            tokens,
            jwt_secret: config
                .player_jwt_hs256_secret
                .as_ref()
                .map(|s| s.as_bytes().to_vec()),
            public_reads: config.public_reads,
        }
    }

    /// The caller named by the `Authorization` header, if any. A header that names nobody is
    /// an error, never anonymous access.
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Option<Principal>, AppError> {
        Ok(self.caller(headers)?.map(Cow::into_owned))
    }

    /// [`Auth::authenticate`] without copying a static token's principal: reads only look at
    /// it, and they are the hot path.
    fn caller(&self, headers: &HeaderMap) -> Result<Option<Cow<'_, Principal>>, AppError> {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Ok(None);
        };
        let value = value
            .to_str()
            .map_err(|_| AppError::Unauthenticated("the Authorization header is not text".into()))?;
        let Some(secret) = value.strip_prefix("Bearer ") else {
            return Err(AppError::Unauthenticated(
                "the Authorization header must be `Bearer <token>`".into(),
            ));
        };
        let secret = secret.trim();
        if let Some(token) = self.tokens.get(secret) {
            if let Some(limiter) = &token.limiter
                && !limiter.lock().unwrap_or_else(|e| e.into_inner()).take()
            {
                return Err(AppError::RateLimited(format!(
                    "token {:?} is over its rate limit; retry shortly",
                    token.principal.name
                )));
            }
            return Ok(Some(Cow::Borrowed(&token.principal)));
        }
        if let Some(key) = &self.jwt_secret
            && secret.matches('.').count() == 2
        {
            let player = verify_jwt(key, secret, crate::clock::now_ms() / 1000)?;
            return Ok(Some(Cow::Owned(Principal {
                name: format!("jwt:{player}"),
                role: Role::Player,
                games: vec!["*".into()],
                player_id: Some(player),
            })));
        }
        Err(AppError::Unauthenticated("the token is not known".into()))
    }

    /// A caller whose role passes `allowed`, and who may touch `game` when one is named.
    /// `needs` names the token that would do, for the error.
    fn require(
        &self,
        headers: &HeaderMap,
        game: Option<&str>,
        allowed: fn(Role) -> bool,
        needs: &str,
    ) -> Result<Principal, AppError> {
        let principal = self
            .authenticate(headers)?
            .ok_or_else(|| AppError::Unauthenticated(format!("this needs {needs}")))?;
        if !allowed(principal.role) {
            return Err(AppError::Forbidden(format!(
                "a {} token cannot do this; it needs {needs}",
                principal.role
            )));
        }
        if let Some(game) = game
            && !principal.allows_game(game)
        {
            return Err(AppError::Forbidden(format!(
                "token {:?} may not touch game {game:?}",
                principal.name
            )));
        }
        Ok(principal)
    }

    /// A caller allowed to write (service, moderator or admin), to `game` when one is named.
    pub fn writer(&self, headers: &HeaderMap, game: Option<&str>) -> Result<Principal, AppError> {
        self.require(headers, game, Role::can_write, "a service token")
    }

    /// A caller allowed to moderate `game` (moderator or admin).
    pub fn moderator(&self, headers: &HeaderMap, game: Option<&str>) -> Result<Principal, AppError> {
        self.require(headers, game, Role::can_moderate, "a moderator token")
    }

    /// A caller allowed to define boards of `game` and move its seasons (admin).
    pub fn admin(&self, headers: &HeaderMap, game: &str) -> Result<Principal, AppError> {
        self.require(headers, Some(game), Role::can_define_boards, "an admin token")
    }

    /// Checks that the caller may read `game`; with `public_reads`, anyone may (a bad token
    /// still fails). Copies nothing for a static token.
    pub fn reader(&self, headers: &HeaderMap, game: &str) -> Result<(), AppError> {
        match self.caller(headers)? {
            None if self.public_reads => Ok(()),
            None => Err(AppError::Unauthenticated("reads need a token".into())),
            Some(p) if !p.allows_game(game) => Err(AppError::Forbidden(format!(
                "token {:?} may not read game {game:?}",
                p.name
            ))),
            Some(_) => Ok(()),
        }
    }
}

/// Verifies an HS256 JWT and returns its `sub`. Checks `exp` and `nbf` against `now_secs`.
pub fn verify_jwt(key: &[u8], token: &str, now_secs: i64) -> Result<String, AppError> {
    let bad = |why: &str| AppError::Unauthenticated(format!("the player token is not valid: {why}"));
    let mut parts = token.split('.');
    let (Some(header_b64), Some(payload_b64), Some(signature_b64)) =
        (parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("not three parts"));
    };
    let header: serde_json::Value = URL_SAFE_NO_PAD
        .decode(header_b64)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or_else(|| bad("the header is not base64url JSON"))?;
    if header.get("alg").and_then(|a| a.as_str()) != Some("HS256") {
        return Err(bad("only alg HS256 is accepted"));
    }
    let signature = URL_SAFE_NO_PAD
        .decode(signature_b64)
        .map_err(|_| bad("the signature is not base64url"))?;
    let mut mac = Hmac::<Sha256>::new_from_slice(key).map_err(|_| bad("bad key"))?;
    mac.update(header_b64.as_bytes());
    mac.update(b".");
    mac.update(payload_b64.as_bytes());
    mac.verify_slice(&signature)
        .map_err(|_| bad("the signature does not match"))?;
    let payload: serde_json::Value = URL_SAFE_NO_PAD
        .decode(payload_b64)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or_else(|| bad("the payload is not base64url JSON"))?;
    if let Some(exp) = payload.get("exp") {
        let exp = exp.as_i64().ok_or_else(|| bad("exp is not a number"))?;
        if now_secs >= exp {
            return Err(bad("it has expired"));
        }
    }
    if let Some(nbf) = payload.get("nbf") {
        let nbf = nbf.as_i64().ok_or_else(|| bad("nbf is not a number"))?;
        if now_secs < nbf {
            return Err(bad("it is not valid yet"));
        }
    }
    let sub = payload
        .get("sub")
        .and_then(|s| s.as_str())
        .ok_or_else(|| bad("sub is missing"))?;
    standings_core::check_id("sub", sub).map_err(|e| bad(&e.to_string()))?;
    Ok(sub.to_string())
}

/// Signs an HS256 JWT; used by tests and by operators' tooling.
pub fn sign_jwt(key: &[u8], payload: &serde_json::Value) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(payload.to_string());
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(header.as_bytes());
    mac.update(b".");
    mac.update(payload.as_bytes());
    let signature = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    format!("{header}.{payload}.{signature}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A signed token verifies; a tampered, expired or wrong-alg one does not.
    #[test]
    fn jwt_verification() {
        let key = b"0123456789abcdef0123456789abcdef";
        let token = sign_jwt(key, &serde_json::json!({"sub": "p-ava", "exp": 2_000}));
        assert_eq!(verify_jwt(key, &token, 1_000).unwrap(), "p-ava");
        assert!(verify_jwt(key, &token, 2_000).is_err(), "expired");
        assert!(verify_jwt(b"another-key-another-key-another!!", &token, 1_000).is_err());
        let mut parts: Vec<&str> = token.split('.').collect();
        let forged = URL_SAFE_NO_PAD.encode(r#"{"sub":"p-ben","exp":2000}"#);
        parts[1] = &forged;
        assert!(verify_jwt(key, &parts.join("."), 1_000).is_err());
        let none_alg = format!("{}.{}.", URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#), parts[1]);
        assert!(verify_jwt(key, &none_alg, 1_000).is_err());
    }
}
