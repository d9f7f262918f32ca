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

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::http::{HeaderMap, header};
use standings_core::contract::access::{self, Denied, Subject};

use crate::config::{Config, Role, TokenConfig};
use crate::http::error::AppError;
use crate::sync::LockUnpoisoned;

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

/// A caller as the read-access rules of the contract see it.
impl Subject for Principal {
    fn name(&self) -> Option<&str> {
        Some(&self.name)
    }

    fn role(&self) -> Role {
        self.role
    }

    fn allows_game(&self, game: &str) -> bool {
        Principal::allows_game(self, game)
    }

    fn player_id(&self) -> Option<&str> {
        self.player_id.as_deref()
    }
}

/// A refusal of the read-access rules. Every origin caller has a name, so none is handed on
/// (that is the edge's case).
fn denied(denied: Denied) -> AppError {
    match denied {
        Denied::Problem(problem) => problem.into(),
        Denied::AskOrigin => AppError::Internal("the origin was asked to ask the origin".into()),
    }
}

/// A caller submits events as its token's name, to the games it may touch.
impl crate::intake::Submitter for Principal {
    fn name(&self) -> &str {
        &self.name
    }

    fn may_write(&self, game: &str) -> bool {
        self.allows_game(game)
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
    jwt_max_lifetime_secs: i64,
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
            jwt_max_lifetime_secs: config.player_jwt_max_lifetime_seconds,
            public_reads: config.public_reads,
        }
    }

    /// The caller named by the `Authorization` header, if any. A header that names nobody is
    /// an error, never anonymous access.
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Option<Principal>, AppError> {
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
            .map_err(|_| AppError::Unauthenticated("the Authorization header is not text".into()))?;
        let Some(secret) = value.strip_prefix("Bearer ") else {
            return Err(AppError::Unauthenticated(
                "the Authorization header must be `Bearer <token>`".into(),
            ));
        };
        let secret = secret.trim();
        if let Some(token) = self.tokens.get(secret) {
            if let Some(limiter) = &token.limiter
                && !limiter.lock_unpoisoned().take()
            {
                return Err(AppError::RateLimited(format!(
                    "token {:?} is over its rate limit; retry shortly",
                    token.principal.name
                )));
            }
            return Ok(Some(Caller::Token(&token.principal)));
        }
        if let Some(claims) = self.player_jwt(secret) {
            return Ok(Some(Caller::Player(claims?.into())));
        }
        Err(AppError::Unauthenticated("the token is not known".into()))
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

    /// A caller allowed to introspect tokens (edge or admin). No game is named: the answer is
    /// narrowed to the caller's games by [`Introspection::seen_by`].
    pub fn introspector(&self, headers: &HeaderMap) -> Result<Principal, AppError> {
        self.require(headers, None, Role::can_introspect, "an edge or admin token")
    }

    /// What `token` is at `now_secs`, as [`Auth::authenticate`] would take it from an
    /// `Authorization: Bearer` header, and how long that answer may be cached. A static token's
    /// rate limit is not charged: it is only named here, not used. O(token length).
    pub fn introspect(&self, token: &str, now_secs: i64) -> Introspection {
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

    /// Checks that the caller may read `game`; with `public_reads`, anyone may (a bad token
    /// still fails). Copies nothing for a static token.
    pub fn reader(&self, headers: &HeaderMap, game: &str) -> Result<(), AppError> {
        let caller = self.caller(headers)?;
        access::reader(caller.as_deref(), self.public_reads, game).map_err(denied)
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
    pub fn subscriber(
        &self,
        headers: &HeaderMap,
        access_token: Option<&str>,
        game: &str,
    ) -> Result<Option<String>, AppError> {
        let caller = match access_token {
            None => match self.caller(headers)? {
                None if self.public_reads => return Ok(None),
                None => return Err(AppError::Unauthenticated("reads need a token".into())),
                Some(caller) => caller,
            },
            Some(_) if headers.contains_key(header::AUTHORIZATION) => {
                return Err(AppError::InvalidRequest(
                    "the request has both an Authorization header and access_token; send the token once"
                        .into(),
                ));
            }
            Some(token) if self.tokens.contains_key(token.trim()) => {
                return Err(AppError::Unauthenticated(
                    "access_token takes only a player JWT; send a static token in the Authorization header, as a URL is written down by proxies and browsers".into(),
                ));
            }
            Some(token) => match self.player_jwt(token.trim()) {
                Some(claims) => Caller::Player(claims?.into()),
                None if self.jwt_secret.is_none() => {
                    return Err(AppError::Unauthenticated(
                        "access_token takes only a player JWT, and this service takes none (player_jwt_hs256_secret is not set); send a token in the Authorization header".into(),
                    ));
                }
                None => {
                    return Err(AppError::Unauthenticated(
                        "access_token is not a player JWT (header.payload.signature)".into(),
                    ));
                }
            },
        };
        if !caller.allows_game(game) {
            return Err(AppError::Forbidden(format!(
                "token {:?} may not read game {game:?}",
                caller.name
            )));
        }
        Ok(Some(caller.holder()))
    }

    /// Who may read snapshots, checked before the board or part is looked up: with
    /// `public_reads`, anyone (a token is still held to its games, a bad one still fails);
    /// otherwise an edge or admin token. A snapshot holds every player's score, so a player
    /// token is refused with a reason, as is a service or moderator token. O(the caller's games).
    pub fn snapshot_reader(&self, headers: &HeaderMap) -> Result<SnapshotReader, AppError> {
        let caller = match self.caller(headers)? {
            None if self.public_reads => return Ok(SnapshotReader::Anyone),
            None => {
                return Err(AppError::Unauthenticated(
                    "snapshots need an edge or admin token".into(),
                ));
            }
            Some(caller) => caller,
        };
        if !self.public_reads && !caller.role.can_read_snapshots() {
            let detail = if caller.role == Role::Player {
                "a player token cannot read snapshots: they hold every player's score; read the board through the read API or the edge".to_string()
            } else {
                format!(
                    "a {} token cannot read snapshots; they need an edge or admin token",
                    caller.role
                )
            };
            return Err(AppError::Forbidden(detail));
        }
        Ok(SnapshotReader::Games {
            name: caller.name.clone(),
            games: caller.games.clone(),
        })
    }

    /// Checks that the caller may read `player`'s friend list in `game`: a player token only its
    /// own, a service, moderator, admin or edge token of the game anyone's. A friend list is
    /// private, so `public_reads` does not open it to callers without a token.
    pub fn friends_reader(&self, headers: &HeaderMap, game: &str, player: &str) -> Result<(), AppError> {
        let caller = self.caller(headers)?;
        access::friends_reader(caller.as_deref(), game, player).map_err(denied)
    }
}

/// A caller [`Auth::snapshot_reader`] admitted, to be checked against the game of what it reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SnapshotReader {
    /// Anyone may read every game's snapshots (`public_reads`, no token).
    Anyone,
    /// A token that may read these games' snapshots.
    Games {
        /// The token's name, for the refusal.
        name: String,
        /// Its games (`*` for all).
        games: Vec<String>,
    },
}

impl SnapshotReader {
    /// Checks that the caller may read what `published_by` (a board's game, or every game
    /// that published a part) published: 403 when it may read none of them. O(games x the
    /// caller's games).
    pub fn check<'a>(
        &self,
        published_by: impl IntoIterator<Item = &'a str>,
        what: &str,
    ) -> Result<(), AppError> {
        let SnapshotReader::Games { name, games } = self else {
            return Ok(());
        };
        let mut published_by = published_by.into_iter().peekable();
        let first = published_by.peek().copied();
        if published_by.any(|game| games.iter().any(|g| g == "*" || g == game)) {
            return Ok(());
        }
        Err(AppError::Forbidden(match first {
            Some(game) => format!("token {name:?} may not read {what} of game {game:?}"),
            None => format!("token {name:?} may not read {what}"),
        }))
    }
}

/// How long an edge may cache that a static token is active. Tokens change only with the config,
/// so this is how long a removed token may still be taken at the edge after a restart.
pub const STATIC_TOKEN_CACHE_SECONDS: i64 = 60;
/// The longest an edge may cache that a player JWT is active; never past the JWT's `exp`.
pub const PLAYER_JWT_CACHE_SECONDS_MAX: i64 = 300;
/// How long an edge may cache that a token is not active: short, so that a token added to the
/// config, or a JWT whose `nbf` arrives, is taken soon after.
pub const INACTIVE_CACHE_SECONDS: i64 = 10;

/// What a bearer token is, as `POST /v1/auth/introspect` answers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Introspection {
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
    pub fn seen_by(self, caller_games: &[String]) -> Introspection {
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
    pub fn to_json(&self) -> serde_json::Value {
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

/// The caller named by a request's token: a static token's principal, borrowed, or the one a
/// player JWT makes.
enum Caller<'a> {
    /// A static token of the config.
    Token(&'a Principal),
    /// A verified player JWT.
    Player(Principal),
}

impl Caller<'_> {
    fn into_principal(self) -> Principal {
        match self {
            Caller::Token(principal) => principal.clone(),
            Caller::Player(principal) => principal,
        }
    }

    /// Whom a live subscription of this caller counts against.
    fn holder(&self) -> String {
        match self {
            Caller::Token(principal) => format!("token:{}", principal.name),
            Caller::Player(principal) => {
                format!("player:{}", principal.player_id.as_deref().unwrap_or_default())
            }
        }
    }
}

impl std::ops::Deref for Caller<'_> {
    type Target = Principal;

    fn deref(&self) -> &Principal {
        match self {
            Caller::Token(principal) => principal,
            Caller::Player(principal) => principal,
        }
    }
}

impl From<PlayerClaims> for Principal {
    fn from(claims: PlayerClaims) -> Principal {
        Principal {
            name: format!("jwt:{}", claims.player),
            role: Role::Player,
            games: claims.games,
            player_id: Some(claims.player),
        }
    }
}

/// What a verified player JWT says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlayerClaims {
    /// `sub`: the player it reads as.
    pub player: String,
    /// `games`: the games it may read, `["*"]` for all.
    pub games: Vec<String>,
}

/// Verifies an HS256 JWT held to what a static player token is held to: it must carry `exp`,
/// live at most `max_lifetime_secs` (from `iat`, or from now when it has none or names a later
/// time), and name its `games`. Checks `exp` and `nbf` against `now_secs`.
pub fn verify_jwt(
    key: &[u8],
    token: &str,
    now_secs: i64,
    max_lifetime_secs: i64,
) -> Result<PlayerClaims, AppError> {
    verify_jwt_expiring(key, token, now_secs, max_lifetime_secs).map(|(claims, _)| claims)
}

/// [`verify_jwt`], with the token's `exp` beside its claims: the core's check
/// (`standings_core::jwt`), which the edge worker makes too.
fn verify_jwt_expiring(
    key: &[u8],
    token: &str,
    now_secs: i64,
    max_lifetime_secs: i64,
) -> Result<(PlayerClaims, i64), AppError> {
    let jwt = standings_core::jwt::verify(key, token, now_secs, max_lifetime_secs)
        .map_err(|refusal| AppError::Unauthenticated(refusal.to_string()))?;
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

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    use super::*;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";
    const DAY: i64 = 86_400;

    fn verify(payload: serde_json::Value, now: i64) -> Result<PlayerClaims, String> {
        verify_jwt(KEY, &sign_jwt(KEY, &payload), now, DAY).map_err(|e| e.to_string())
    }

    /// An authenticator with a static token of `arena-clash`, JWTs signed with [`KEY`], and
    /// `public_reads` as given.
    fn auth(public_reads: bool) -> Auth {
        let text = format!(
            r#"
            database = "sqlite::memory:"
            public_reads = {public_reads}
            player_jwt_hs256_secret = "{}"
            [[tokens]]
            name = "arena-service"
            secret = "arena-service-secret-0000"
            role = "service"
            games = ["arena-clash"]
            "#,
            std::str::from_utf8(KEY).unwrap()
        );
        Auth::from_config(&Config::parse(&text, std::path::Path::new("test.toml")).unwrap())
    }

    fn bearer(token: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
        headers
    }

    /// A player JWT for `games`, valid for an hour from now.
    fn player_jwt(games: &[&str]) -> String {
        let now = crate::clock::now_ms() / 1000;
        sign_jwt(
            KEY,
            &serde_json::json!({"sub": "p-ava", "exp": now + 3600, "games": games}),
        )
    }

    /// The holder of a live subscription: a static token's name, a player JWT's subject from
    /// the header or from `access_token`, or none for a public read without a token.
    #[test]
    fn a_subscriber_is_counted_against_its_token_or_player() {
        let (closed, open) = (auth(false), auth(true));
        let none = HeaderMap::new();
        let jwt = player_jwt(&["arena-clash"]);
        let holder = |auth: &Auth, headers: &HeaderMap, query: Option<&str>| {
            auth.subscriber(headers, query, "arena-clash")
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            holder(&closed, &bearer("arena-service-secret-0000"), None),
            Ok(Some("token:arena-service".into()))
        );
        assert_eq!(
            holder(&closed, &bearer(&jwt), None),
            Ok(Some("player:p-ava".into()))
        );
        assert_eq!(
            holder(&closed, &none, Some(&jwt)),
            Ok(Some("player:p-ava".into()))
        );
        assert_eq!(holder(&open, &none, None), Ok(None));
        assert_eq!(
            holder(&open, &none, Some(&jwt)),
            Ok(Some("player:p-ava".into())),
            "a token counts even where reads are public"
        );
    }

    /// Each refusal has its status: no token, a token of another game, a bad or expired JWT in
    /// the query, a static token in the query (told to use the header), both at once.
    #[test]
    fn a_subscriber_is_refused_as_a_reader_would_be_and_more() {
        let auth = auth(false);
        let none = HeaderMap::new();
        let refusal = |headers: &HeaderMap, query: Option<&str>| {
            let error = auth.subscriber(headers, query, "arena-clash").unwrap_err();
            (error.status_and_code().1, error.to_string())
        };
        assert_eq!(refusal(&none, None).0, "UNAUTHENTICATED");
        let other_game = auth
            .subscriber(&bearer("arena-service-secret-0000"), None, "other-game")
            .unwrap_err();
        assert_eq!(other_game.status_and_code().1, "FORBIDDEN");
        let elsewhere = player_jwt(&["other-game"]);
        assert_eq!(refusal(&none, Some(&elsewhere)).0, "FORBIDDEN");
        let expired = sign_jwt(
            KEY,
            &serde_json::json!({"sub": "p-ava", "exp": 1_000, "games": ["*"]}),
        );
        let (code, text) = refusal(&none, Some(&expired));
        assert_eq!(code, "UNAUTHENTICATED");
        assert!(text.contains("it has expired"), "{text}");
        let forged = format!("{}x", player_jwt(&["*"]));
        assert_eq!(refusal(&none, Some(&forged)).0, "UNAUTHENTICATED");
        assert_eq!(refusal(&none, Some("not-a-jwt")).0, "UNAUTHENTICATED");
        let (code, text) = refusal(&none, Some("arena-service-secret-0000"));
        assert_eq!(code, "UNAUTHENTICATED");
        assert!(text.contains("Authorization header"), "{text}");
        let (code, text) = refusal(&bearer(&player_jwt(&["*"])), Some(&player_jwt(&["*"])));
        assert_eq!(code, "INVALID_REQUEST", "{text}");
    }

    /// An authenticator with an edge, a service and a rate-limited player token of
    /// `arena-clash`, and JWTs signed with [`KEY`].
    fn edge_auth() -> Auth {
        let text = format!(
            r#"
            database = "sqlite::memory:"
            player_jwt_hs256_secret = "{}"
            [[tokens]]
            name = "arena-edge"
            secret = "arena-edge-secret-000000"
            role = "edge"
            games = ["arena-clash"]
            [[tokens]]
            name = "arena-service"
            secret = "arena-service-secret-0000"
            role = "service"
            games = ["arena-clash"]
            [[tokens]]
            name = "ava"
            secret = "ava-player-secret-000000"
            role = "player"
            games = ["*"]
            player_id = "p-ava"
            rate_limit_per_second = 1
            "#,
            std::str::from_utf8(KEY).unwrap()
        );
        Auth::from_config(&Config::parse(&text, std::path::Path::new("test.toml")).unwrap())
    }

    /// A static token is active for a minute with its role, games and player; a player JWT for
    /// its remaining life up to five minutes; anything the origin would answer 401 to is not
    /// active, for ten seconds.
    #[test]
    fn introspection_says_what_a_token_is_and_for_how_long() {
        let auth = edge_auth();
        let now = 1_000_000;
        assert_eq!(
            auth.introspect(" arena-service-secret-0000 ", now),
            Introspection::Active {
                role: Role::Service,
                games: vec!["arena-clash".into()],
                player_id: None,
                cache_seconds: STATIC_TOKEN_CACHE_SECONDS,
            }
        );
        assert_eq!(
            auth.introspect("ava-player-secret-000000", now),
            Introspection::Active {
                role: Role::Player,
                games: vec!["*".into()],
                player_id: Some("p-ava".into()),
                cache_seconds: STATIC_TOKEN_CACHE_SECONDS,
            }
        );
        let jwt = |exp: i64| {
            sign_jwt(
                KEY,
                &serde_json::json!({"sub": "p-ben", "exp": exp, "games": ["arena-clash"]}),
            )
        };
        let active_for = |token: &str| match auth.introspect(token, now) {
            Introspection::Active {
                role: Role::Player,
                player_id: Some(player),
                games,
                cache_seconds,
            } if player == "p-ben" && games == ["arena-clash"] => Some(cache_seconds),
            _ => None,
        };
        assert_eq!(active_for(&jwt(now + 42)), Some(42), "bounded by exp");
        assert_eq!(active_for(&jwt(now + 1)), Some(1), "bounded by exp");
        assert_eq!(
            active_for(&jwt(now + 3600)),
            Some(PLAYER_JWT_CACHE_SECONDS_MAX),
            "bounded by the cap"
        );
        let inactive = Introspection::Inactive {
            cache_seconds: INACTIVE_CACHE_SECONDS,
        };
        let forged = sign_jwt(
            b"another-key-another-key-another!!",
            &serde_json::json!({"sub": "p-ben", "exp": now + 60, "games": ["*"]}),
        );
        for token in [
            jwt(now),
            jwt(now - 1),
            forged,
            format!("{}x", jwt(now + 60)),
            "a.b.c".into(),
            "not-a-token-anyone-was-given".into(),
            String::new(),
        ] {
            assert_eq!(auth.introspect(&token, now), inactive, "{token}");
        }
    }

    /// Without a JWT secret, a well-signed JWT is as unknown as any other string.
    #[test]
    fn without_a_jwt_secret_no_jwt_is_active() {
        let auth = auth(false);
        let no_jwts = Auth {
            jwt_secret: None,
            ..auth
        };
        let token = sign_jwt(
            KEY,
            &serde_json::json!({"sub": "p-ben", "exp": 2_000, "games": ["*"]}),
        );
        assert_eq!(
            no_jwts.introspect(&token, 1_000),
            Introspection::Inactive {
                cache_seconds: INACTIVE_CACHE_SECONDS
            }
        );
    }

    /// A caller sees only its own games of a token: all of them with `*`, its own when the
    /// token has `*`, the common ones otherwise, and "not active" when there are none.
    #[test]
    fn an_answer_is_narrowed_to_the_callers_games() {
        let active = |games: &[&str]| Introspection::Active {
            role: Role::Service,
            games: games.iter().map(|g| g.to_string()).collect(),
            player_id: None,
            cache_seconds: 60,
        };
        let games = |games: &[&str]| games.iter().map(|g| g.to_string()).collect::<Vec<_>>();
        assert_eq!(active(&["a", "b"]).seen_by(&games(&["*"])), active(&["a", "b"]));
        assert_eq!(active(&["*"]).seen_by(&games(&["b", "c"])), active(&["b", "c"]));
        assert_eq!(active(&["*"]).seen_by(&games(&["*"])), active(&["*"]));
        assert_eq!(
            active(&["a", "b", "c"]).seen_by(&games(&["c", "a"])),
            active(&["a", "c"])
        );
        let inactive = Introspection::Inactive {
            cache_seconds: INACTIVE_CACHE_SECONDS,
        };
        assert_eq!(active(&["a"]).seen_by(&games(&["b"])), inactive);
        assert_eq!(inactive.clone().seen_by(&games(&["*"])), inactive);
    }

    /// The answers' JSON has the documented fields, `player_id` null for a non-player.
    #[test]
    fn an_introspection_answer_has_stable_fields() {
        let service = Introspection::Active {
            role: Role::Edge,
            games: vec!["arena-clash".into()],
            player_id: None,
            cache_seconds: 60,
        };
        assert_eq!(
            service.to_json(),
            serde_json::json!({"active": true, "role": "edge", "games": ["arena-clash"],
                               "player_id": null, "cache_seconds": 60})
        );
        assert_eq!(
            Introspection::Inactive { cache_seconds: 10 }.to_json(),
            serde_json::json!({"active": false, "cache_seconds": 10})
        );
    }

    /// Introspecting a rate-limited token does not spend its budget: the token itself still
    /// gets its one request of the second afterwards.
    #[test]
    fn introspection_does_not_charge_the_token_asked_about() {
        let auth = edge_auth();
        for _ in 0..5 {
            assert!(matches!(
                auth.introspect("ava-player-secret-000000", 1_000),
                Introspection::Active { .. }
            ));
        }
        assert!(auth.authenticate(&bearer("ava-player-secret-000000")).is_ok());
    }

    /// An edge token reads its game, any player's friends included, and introspects; it never
    /// writes, moderates or defines boards. A service token may not introspect.
    #[test]
    fn an_edge_token_reads_and_introspects_but_never_writes() {
        let auth = edge_auth();
        let edge = bearer("arena-edge-secret-000000");
        let code =
            |result: Result<Principal, AppError>| result.map(|_| ()).map_err(|e| e.status_and_code().1);
        assert!(auth.reader(&edge, "arena-clash").is_ok());
        assert!(auth.friends_reader(&edge, "arena-clash", "p-ben").is_ok());
        let other = auth.reader(&edge, "other-game").unwrap_err();
        assert_eq!(other.status_and_code().1, "FORBIDDEN");
        assert_eq!(code(auth.introspector(&edge)), Ok(()));
        assert_eq!(code(auth.writer(&edge, Some("arena-clash"))), Err("FORBIDDEN"));
        assert_eq!(code(auth.moderator(&edge, Some("arena-clash"))), Err("FORBIDDEN"));
        assert_eq!(code(auth.admin(&edge, "arena-clash")), Err("FORBIDDEN"));
        let service = bearer("arena-service-secret-0000");
        assert_eq!(code(auth.introspector(&service)), Err("FORBIDDEN"));
        assert_eq!(code(auth.introspector(&HeaderMap::new())), Err("UNAUTHENTICATED"));
    }

    /// Snapshots are read by the edge of their game, whether the game is the board's or one of
    /// the games that published a part; players and services are refused before anything is
    /// looked up, and nobody without a token unless reads are public.
    #[test]
    fn snapshots_are_read_by_the_edge_of_their_game() {
        let auth = edge_auth();
        let code = |result: Result<SnapshotReader, AppError>| result.map_err(|e| e.status_and_code().1);
        let edge = auth.snapshot_reader(&bearer("arena-edge-secret-000000")).unwrap();
        assert!(edge.check(["arena-clash"], "snapshots").is_ok());
        assert!(edge.check(["other-game", "arena-clash"], "this part").is_ok());
        let refused = edge.check(["other-game"], "this part").unwrap_err();
        assert_eq!(refused.status_and_code().1, "FORBIDDEN");
        assert!(
            refused
                .to_string()
                .contains("\"arena-edge\" may not read this part of game \"other-game\"")
        );
        for (secret, says) in [
            ("ava-player-secret-000000", "every player's score"),
            (
                "arena-service-secret-0000",
                "a service token cannot read snapshots",
            ),
        ] {
            let refused = auth.snapshot_reader(&bearer(secret)).unwrap_err();
            assert_eq!(refused.status_and_code().1, "FORBIDDEN");
            assert!(refused.to_string().contains(says), "{refused}");
        }
        assert_eq!(
            code(auth.snapshot_reader(&HeaderMap::new())),
            Err("UNAUTHENTICATED")
        );
        let public = auth_with_public_reads(edge_auth());
        assert_eq!(
            code(public.snapshot_reader(&HeaderMap::new())),
            Ok(SnapshotReader::Anyone)
        );
        let service = public
            .snapshot_reader(&bearer("arena-service-secret-0000"))
            .unwrap();
        assert!(service.check(["arena-clash"], "snapshots").is_ok());
        assert!(service.check(["other-game"], "snapshots").is_err());
        assert_eq!(
            code(public.snapshot_reader(&bearer("unknown-secret-000000000"))),
            Err("UNAUTHENTICATED")
        );
    }

    fn auth_with_public_reads(mut auth: Auth) -> Auth {
        auth.public_reads = true;
        auth
    }

    /// A signed token verifies; a tampered, expired or wrong-alg one does not.
    #[test]
    fn jwt_verification() {
        let token = sign_jwt(
            KEY,
            &serde_json::json!({"sub": "p-ava", "exp": 2_000, "games": ["arena-clash"]}),
        );
        let claims = verify_jwt(KEY, &token, 1_000, DAY).unwrap();
        assert_eq!(
            claims,
            PlayerClaims {
                player: "p-ava".into(),
                games: vec!["arena-clash".into()]
            }
        );
        assert!(verify_jwt(KEY, &token, 2_000, DAY).is_err(), "expired");
        assert!(verify_jwt(b"another-key-another-key-another!!", &token, 1_000, DAY).is_err());
        let mut parts: Vec<&str> = token.split('.').collect();
        let forged = URL_SAFE_NO_PAD.encode(r#"{"sub":"p-ben","exp":2000,"games":["*"]}"#);
        parts[1] = &forged;
        assert!(verify_jwt(KEY, &parts.join("."), 1_000, DAY).is_err());
        let none_alg = format!("{}.{}.", URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#), parts[1]);
        assert!(verify_jwt(KEY, &none_alg, 1_000, DAY).is_err());
        assert!(
            verify_jwt(KEY, &format!("{token}.x"), 1_000, DAY).is_err(),
            "four parts"
        );
    }

    /// `exp` is required and bounds the token's life, counted from `iat` or from now,
    /// whichever is earlier; `games` is required and is what the token may read.
    #[test]
    fn a_player_jwt_must_expire_soon_and_name_its_games() {
        let now = 1_000_000;
        let games = serde_json::json!(["*"]);
        let ok = verify(
            serde_json::json!({"sub": "p-ava", "exp": now + DAY, "games": games}),
            now,
        );
        assert_eq!(ok.unwrap().games, ["*"]);
        let iat = verify(
            serde_json::json!({"sub": "p-ava", "iat": now - 10, "exp": now - 10 + DAY, "games": games}),
            now,
        );
        assert!(iat.is_ok(), "{iat:?}");
        for (payload, why) in [
            (
                serde_json::json!({"sub": "p-ava", "games": games}),
                "exp is missing",
            ),
            (
                serde_json::json!({"sub": "p-ava", "exp": "soon", "games": games}),
                "exp is not a whole number",
            ),
            (
                serde_json::json!({"sub": "p-ava", "exp": now + DAY + 1, "games": games}),
                "longer than the 86400 s allowed",
            ),
            (
                serde_json::json!({"sub": "p-ava", "iat": now - DAY, "exp": now + 60, "games": games}),
                "longer than the 86400 s allowed",
            ),
            (
                serde_json::json!({"sub": "p-ava", "iat": now + 3 * DAY, "exp": now + 3 * DAY + 60, "games": games}),
                "longer than the 86400 s allowed",
            ),
            (
                serde_json::json!({"sub": "p-ava", "nbf": now + 1, "exp": now + 60, "games": games}),
                "not valid yet",
            ),
            (
                serde_json::json!({"sub": "p-ava", "exp": now + 60}),
                "the games claim is missing",
            ),
            (
                serde_json::json!({"sub": "p-ava", "exp": now + 60, "games": []}),
                "non-empty list",
            ),
            (
                serde_json::json!({"sub": "p-ava", "exp": now + 60, "games": "arena-clash"}),
                "non-empty list",
            ),
            (
                serde_json::json!({"sub": "p-ava", "exp": now + 60, "games": [7]}),
                "a list of game names",
            ),
            (
                serde_json::json!({"exp": now + 60, "games": games}),
                "sub is missing",
            ),
        ] {
            let err = verify(payload.clone(), now).unwrap_err();
            assert!(err.contains(why), "{payload}: {err}");
        }
    }
}
