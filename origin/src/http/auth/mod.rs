//! Who is calling: static bearer tokens from the config (roles player < service < moderator <
//! admin, a list of games, an optional per-token rate limit) and HS256 player JWTs.
//!
//! A JWT is held to what a static player token is held to: a `games` claim, and an `exp` within
//! `player_jwt_max_lifetime_seconds`, so a JWT never reaches further, or lasts longer, than a
//! static player token could. A friend list is private: a player token reads only its own.
//!
//! An `edge` token (the Cloudflare Worker) reads like a token that is no player, writes nothing,
//! and may ask what a bearer token is ([`Auth::introspect`]): the decision is pure, takes `now`,
//! and says how long the edge may cache it.
//!
//! The parts: `principal` is who a caller is, `tokens` the static tokens and their rate
//! limits, `jwt` the player JWTs (the core's check), `introspection` what the edge is told of a
//! token, and `snapshot` who may read the snapshots; [`Auth`] here answers each route's question
//! (who may write, moderate, define, read, subscribe) from them.

mod introspection;
mod jwt;
mod principal;
mod snapshot;
#[cfg(test)]
mod tests;
mod tokens;

use standings_core::Audience;
use std::collections::HashMap;
use std::sync::Arc;

use axum::http::{HeaderMap, header};
use standings_core::contract::access::{self, Denied};

pub use self::jwt::sign_jwt;
pub(crate) use self::jwt::{PlayerClaims, verify_jwt};
use self::principal::Caller;
pub(crate) use self::principal::Principal;
use self::tokens::StaticToken;
use crate::config::{Config, Role, TokenConfig};
use crate::http::error::{AppError, Code};

/// A refusal of the read-access rules. Every origin caller has a name, so none is handed on
/// (that is the edge's case).
fn denied(denied: Denied) -> AppError {
    match denied {
        Denied::Problem(problem) => problem.into(),
        Denied::AskOrigin => AppError::new(Code::INTERNAL, "the origin was asked to ask the origin"),
    }
}

/// The authenticator, built once from the config.
pub(crate) struct Auth {
    tokens: HashMap<String, Arc<StaticToken>>,
    jwt_secret: Option<Vec<u8>>,
    jwt_max_lifetime_secs: i64,
    public_reads: bool,
}

impl Auth {
    /// Builds the authenticator from the config's tokens.
    pub(crate) fn from_config(config: &Config) -> Auth {
        let tokens = config
            .tokens
            .iter()
            .map(|t: &TokenConfig| (t.secret.clone(), Arc::new(StaticToken::new(t))))
            .collect();
        Auth {
            tokens,
            jwt_secret: config
                .player_jwt_hs256_secret
                .as_ref()
                .map(|s| s.as_bytes().to_vec()),
            jwt_max_lifetime_secs: config.player_jwt_max_lifetime_seconds,
            public_reads: config.public_reads,
        }
    }

    /// The caller named by the `Authorization` header, if any. A header that names nobody is
    /// an error, never anonymous access.
    pub(crate) fn authenticate(&self, headers: &HeaderMap) -> Result<Option<Principal>, AppError> {
        Ok(self.caller(headers)?.map(Caller::into_principal))
    }

    /// [`Auth::authenticate`] without copying a static token's principal: reads only look at
    /// it, and they are the hot path.
    fn caller(&self, headers: &HeaderMap) -> Result<Option<Caller<'_>>, AppError> {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Ok(None);
        };
        let value = value
            .to_str()
            .map_err(|_| AppError::new(Code::UNAUTHENTICATED, "the Authorization header is not text"))?;
        let secret = access::bearer_token(value)?;
        if let Some(token) = self.tokens.get(secret) {
            if !token.take() {
                return Err(AppError::new(
                    Code::RATE_LIMITED,
                    format!(
                        "token {:?} is over its rate limit; retry shortly",
                        token.principal.name
                    ),
                ));
            }
            return Ok(Some(Caller::Token(&token.principal)));
        }
        if let Some(claims) = self.player_jwt(secret) {
            return Ok(Some(Caller::Player(claims?.into())));
        }
        Err(AppError::new(Code::UNAUTHENTICATED, "the token is not known"))
    }

    /// The claims of `secret` when player JWTs are on and it has a JWT's shape; `None` when it
    /// cannot be one.
    fn player_jwt(&self, secret: &str) -> Option<Result<PlayerClaims, AppError>> {
        let key = self.jwt_secret.as_ref()?;
        (secret.matches('.').count() == 2).then(|| {
            verify_jwt(
                key,
                secret,
                crate::clock::now_ms() / 1000,
                self.jwt_max_lifetime_secs,
            )
        })
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
            .ok_or_else(|| AppError::new(Code::UNAUTHENTICATED, format!("this needs {needs}")))?;
        if !allowed(principal.role) {
            return Err(AppError::new(
                Code::FORBIDDEN,
                format!("{} cannot do this; it needs {needs}", principal.role.a_token()),
            ));
        }
        if let Some(game) = game
            && !principal.allows_game(game)
        {
            return Err(AppError::new(
                Code::FORBIDDEN,
                format!("token {:?} may not touch game {game:?}", principal.name),
            ));
        }
        Ok(principal)
    }

    /// A caller allowed to write (service, moderator or admin), to `game` when one is named.
    pub(crate) fn writer(&self, headers: &HeaderMap, game: Option<&str>) -> Result<Principal, AppError> {
        self.require(headers, game, Role::can_write, "a service token")
    }

    /// A caller allowed to moderate `game` (moderator or admin).
    pub(crate) fn moderator(&self, headers: &HeaderMap, game: Option<&str>) -> Result<Principal, AppError> {
        self.require(headers, game, Role::can_moderate, "a moderator token")
    }

    /// A caller allowed to define boards of `game` and move its seasons (admin).
    pub(crate) fn admin(&self, headers: &HeaderMap, game: &str) -> Result<Principal, AppError> {
        self.require(headers, Some(game), Role::can_define_boards, "an admin token")
    }

    /// A caller allowed to introspect tokens (edge or admin). No game is named: the answer is
    /// narrowed to the caller's games by [`Introspection::seen_by`].
    pub(crate) fn introspector(&self, headers: &HeaderMap) -> Result<Principal, AppError> {
        self.require(headers, None, Role::can_introspect, "an edge or admin token")
    }
    /// Checks that the caller may read `game`; with `public_reads`, anyone may (a bad token
    /// still fails). Answers what the caller is shown of anonymous players. Copies nothing
    /// for a static token.
    pub(crate) fn reader(&self, headers: &HeaderMap, game: &str) -> Result<Audience, AppError> {
        let caller = self.caller(headers)?;
        access::reader(caller.as_deref(), self.public_reads, game).map_err(denied)?;
        Ok(access::audience(caller.as_deref()))
    }

    /// Checks that the caller may read `game` as [`Auth::reader`] does, and says whom a live
    /// subscription counts against: `token:NAME` for a static token, `player:SUB` for a
    /// player JWT, `None` for a public read without a token.
    ///
    /// `access_token` is the `?access_token=` of the request, for browsers' `EventSource`,
    /// which cannot set headers. Only a player JWT is taken there: a URL ends up in proxy logs,
    /// browser history and `Referer` headers, where a JWT lapses within
    /// `player_jwt_max_lifetime_seconds` and can only read, while a static token never expires
    /// and may write. So a static token there is refused even when it is valid, and the answer
    /// says where it belongs. The service never logs query strings.
    pub(crate) fn subscriber(
        &self,
        headers: &HeaderMap,
        access_token: Option<&str>,
        game: &str,
    ) -> Result<Option<String>, AppError> {
        let caller = match access_token {
            None => match self.caller(headers)? {
                None if self.public_reads => return Ok(None),
                None => return Err(AppError::new(Code::UNAUTHENTICATED, "reads need a token")),
                Some(caller) => caller,
            },
            Some(_) if headers.contains_key(header::AUTHORIZATION) => {
                return Err(AppError::new(
                    Code::INVALID_REQUEST,
                    "the request has both an Authorization header and access_token; send the token once",
                ));
            }
            Some(token) if self.tokens.contains_key(token.trim()) => {
                return Err(AppError::new(
                    Code::UNAUTHENTICATED,
                    "access_token takes only a player JWT; send a static token in the Authorization header, as a URL is written down by proxies and browsers",
                ));
            }
            Some(token) => match self.player_jwt(token.trim()) {
                Some(claims) => Caller::Player(claims?.into()),
                None if self.jwt_secret.is_none() => {
                    return Err(AppError::new(
                        Code::UNAUTHENTICATED,
                        "access_token takes only a player JWT, and this service takes none (player_jwt_hs256_secret is not set); send a token in the Authorization header",
                    ));
                }
                None => {
                    return Err(AppError::new(
                        Code::UNAUTHENTICATED,
                        "access_token is not a player JWT (header.payload.signature)",
                    ));
                }
            },
        };
        if !caller.allows_game(game) {
            return Err(AppError::new(
                Code::FORBIDDEN,
                format!("token {:?} may not read game {game:?}", caller.name),
            ));
        }
        Ok(Some(caller.holder()))
    }
    /// Checks that the caller may read `player`'s friend list in `game`: a player token only its
    /// own, a service, moderator, admin or edge token of the game anyone's. A friend list is
    /// private, so `public_reads` does not open it to callers without a token.
    pub(crate) fn friends_reader(
        &self,
        headers: &HeaderMap,
        game: &str,
        player: &str,
    ) -> Result<Audience, AppError> {
        self.own_reader(headers, game, player, access::friends_reader)
    }

    /// Checks that the caller may read `player`'s profile in `game` (as a friend list: a player
    /// token only its own), and says what it is shown of an anonymous profile.
    pub(crate) fn profile_reader(
        &self,
        headers: &HeaderMap,
        game: &str,
        player: &str,
    ) -> Result<Audience, AppError> {
        self.own_reader(headers, game, player, access::profile_reader)
    }

    /// A read of something of `player`'s that `rule` guards, and what the caller is shown.
    fn own_reader(
        &self,
        headers: &HeaderMap,
        game: &str,
        player: &str,
        rule: fn(Option<&Principal>, &str, &str) -> Result<(), Denied>,
    ) -> Result<Audience, AppError> {
        let caller = self.caller(headers)?;
        rule(caller.as_deref(), game, player).map_err(denied)?;
        Ok(access::audience(caller.as_deref()))
    }
}
