//! Who a caller is, as the origin would tell: the `Authorization` header read as the origin reads
//! it, a player JWT verified with the core's check (`standings_core::jwt`, with the shared
//! secret), or the origin's introspection of any other token. Whether that caller may read is
//! the read contract's rule (`standings_core::contract::access`), which the edge's [`Caller`]
//! answers as a [`Subject`]; the origin calls the same rules, so both tiers refuse alike.
//!
//! Two things differ by construction and are the origin's to answer: a static token refused for
//! another game (the origin's words name the token, which introspection does not tell), for which
//! the edge forwards the request; and a static token shaped like a JWT while the edge holds the
//! JWT secret, which the edge takes as a JWT.

use http::HeaderMap;
use http::header::AUTHORIZATION;
use serde::Deserialize;
use standings_core::contract::access::{self, Role, Subject};

use crate::problem::Problem;

/// What the `Authorization` header presents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presented<'a> {
    /// No header.
    Nobody,
    /// `Bearer <token>`, the token trimmed.
    Bearer(&'a str),
}

/// Reads the `Authorization` header as the origin does: absent is nobody; anything but text
/// (`HeaderValue::to_str`) or `Bearer <token>` is 401. O(header length).
pub fn presented(headers: &HeaderMap) -> Result<Presented<'_>, Problem> {
    let Some(value) = headers.get(AUTHORIZATION) else {
        return Ok(Presented::Nobody);
    };
    let Ok(value) = value.to_str() else {
        return Err(Problem::unauthenticated("the Authorization header is not text"));
    };
    Ok(Presented::Bearer(access::bearer_token(value)?))
}

/// Whether the edge verifies `token` itself as a player JWT: it holds the secret and the token
/// has a JWT's three parts, exactly when the origin would try it as one.
pub fn is_jwt(jwt_secret: Option<&[u8]>, token: &str) -> bool {
    jwt_secret.is_some() && token.matches('.').count() == 2
}

/// An authenticated caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The name the origin's errors use: `jwt:<sub>` for a JWT the edge verified; `None` for a
    /// token learned from introspection, which does not tell names.
    pub name: Option<String>,
    /// Its role.
    pub role: Role,
    /// The games it may read, `*` for all.
    pub games: Vec<String>,
    /// The player it reads as, for player tokens.
    pub player_id: Option<String>,
}

impl Subject for Caller {
    fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    fn role(&self) -> Role {
        self.role
    }

    /// O(games).
    fn allows_game(&self, game: &str) -> bool {
        self.games.iter().any(|g| g == "*" || g == game)
    }

    fn player_id(&self) -> Option<&str> {
        self.player_id.as_deref()
    }
}

/// The origin's answer to `POST /v1/auth/introspect`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Introspection {
    /// Whether the origin takes the token.
    pub active: bool,
    /// Its role, when active.
    #[serde(default)]
    pub role: Option<Role>,
    /// Its games, when active.
    #[serde(default)]
    pub games: Option<Vec<String>>,
    /// Its player, for player tokens.
    #[serde(default)]
    pub player_id: Option<String>,
    /// How long the answer may be cached.
    pub cache_seconds: i64,
}

impl Introspection {
    /// The caller an active token is, or the origin's 401 for an inactive one.
    pub fn caller(&self) -> Result<Caller, Problem> {
        match (self.active, &self.role, &self.games) {
            (true, Some(role), Some(games)) => Ok(Caller {
                name: None,
                role: *role,
                games: games.clone(),
                player_id: self.player_id.clone(),
            }),
            _ => Err(Problem::unauthenticated("the token is not known")),
        }
    }
}

/// Verifies an HS256 player JWT with the core's check (`standings_core::jwt`), the one the
/// origin makes: the same tokens pass, the same words for each refusal. O(token length).
pub fn verify_jwt(key: &[u8], token: &str, now_secs: i64, max_lifetime_secs: i64) -> Result<Caller, Problem> {
    let jwt = standings_core::jwt::verify(key, token, now_secs, max_lifetime_secs)
        .map_err(|refusal| Problem::unauthenticated(refusal.to_string()))?;
    Ok(Caller {
        name: Some(format!("jwt:{}", jwt.player)),
        role: Role::Player,
        games: jwt.games,
        player_id: Some(jwt.player),
    })
}

/// Signs an HS256 JWT as a game backend does; for tests.
#[cfg(test)]
pub fn sign_jwt(key: &[u8], payload: &serde_json::Value) -> String {
    standings_core::jwt::sign(key, &payload.to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use standings_core::contract::access::{Denied, friends_reader, reader};

    use super::*;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";
    const NOW: i64 = 1_800_000_000;

    fn detail(payload: serde_json::Value) -> String {
        match verify_jwt(KEY, &sign_jwt(KEY, &payload), NOW, 86_400) {
            Ok(c) => format!("ok {c:?}"),
            Err(p) => p.detail,
        }
    }

    /// Each JWT rule fails with the origin's words; a good token names its player and games.
    #[test]
    fn jwt_rules_match_the_origin() {
        let ok = verify_jwt(
            KEY,
            &sign_jwt(KEY, &json!({"sub": "ava", "exp": NOW + 60, "games": ["g"]})),
            NOW,
            86_400,
        )
        .unwrap();
        assert_eq!(ok.name.as_deref(), Some("jwt:ava"));
        assert_eq!(ok.player_id.as_deref(), Some("ava"));
        assert!(ok.allows_game("g") && !ok.allows_game("h"));
        let p = "the player token is not valid: ";
        assert_eq!(
            detail(json!({"sub": "a", "exp": NOW, "games": ["g"]})),
            format!("{p}it has expired")
        );
        assert_eq!(
            detail(json!({"sub": "a", "games": ["g"]})),
            format!("{p}exp is missing; a player token must expire")
        );
        assert_eq!(
            detail(json!({"sub": "a", "exp": NOW + 9, "nbf": NOW + 5, "games": ["g"]})),
            format!("{p}it is not valid yet")
        );
        assert_eq!(
            detail(json!({"sub": "a", "exp": NOW + 86_401, "games": ["g"]})),
            format!("{p}it lives 86401 s, longer than the 86400 s allowed (player_jwt_max_lifetime_seconds)")
        );
        assert_eq!(
            detail(json!({"exp": NOW + 9, "games": ["g"]})),
            format!("{p}sub is missing")
        );
        assert!(detail(json!({"sub": "a", "exp": NOW + 9})).contains("the games claim is missing"));
        assert!(detail(json!({"sub": "a", "exp": NOW + 9, "games": []})).contains("non-empty"));
        let forged = sign_jwt(
            b"another key",
            &json!({"sub": "a", "exp": NOW + 9, "games": ["g"]}),
        );
        assert_eq!(
            verify_jwt(KEY, &forged, NOW, 86_400).unwrap_err().detail,
            format!("{p}the signature does not match")
        );
    }

    /// The contract's reader and friends-reader decisions over the edge's callers (a verified
    /// JWT names itself, an introspected token does not), with the origin's codes and words.
    #[test]
    fn read_decisions_match_the_origin() {
        let jwt = Caller {
            name: Some("jwt:ava".into()),
            role: Role::Player,
            games: vec!["g".into()],
            player_id: Some("ava".into()),
        };
        let service = Caller {
            name: None,
            role: Role::Service,
            games: vec!["g".into()],
            player_id: None,
        };
        let problem = |r: Result<(), Denied>| match r {
            Err(Denied::Problem(p)) => (p.status, p.detail),
            other => panic!("{other:?}"),
        };
        assert_eq!(reader::<Caller>(None, true, "g"), Ok(()));
        assert_eq!(
            problem(reader::<Caller>(None, false, "g")),
            (401, "reads need a token".into())
        );
        assert_eq!(reader(Some(&jwt), false, "g"), Ok(()));
        assert_eq!(
            problem(reader(Some(&jwt), true, "h")),
            (403, "token \"jwt:ava\" may not read game \"h\"".into())
        );
        assert_eq!(reader(Some(&service), false, "h"), Err(Denied::AskOrigin));
        assert_eq!(
            problem(friends_reader::<Caller>(None, "g", "ava")),
            (401, "a friend list is private: friends-of needs a token".into())
        );
        assert_eq!(friends_reader(Some(&jwt), "g", "ava"), Ok(()));
        assert_eq!(
            problem(friends_reader(Some(&jwt), "g", "bo")),
            (
                403,
                "a player token reads only its own player's friends, not \"bo\"'s".into()
            )
        );
        assert_eq!(friends_reader(Some(&service), "g", "bo"), Ok(()));
    }

    /// The header is read as the origin reads it.
    #[test]
    fn the_header_is_read_as_the_origin_reads_it() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(AUTHORIZATION, http::HeaderValue::from_str(value).unwrap());
            headers
        };
        assert_eq!(presented(&HeaderMap::new()), Ok(Presented::Nobody));
        assert_eq!(presented(&with("Bearer  abc ")), Ok(Presented::Bearer("abc")));
        assert_eq!(
            presented(&with("Basic abc")).unwrap_err().detail,
            "the Authorization header must be `Bearer <token>`"
        );
        assert_eq!(
            presented(&with("Bearer ä")).unwrap_err().detail,
            "the Authorization header is not text"
        );
        assert!(is_jwt(Some(KEY), "a.b.c") && !is_jwt(Some(KEY), "abc") && !is_jwt(None, "a.b.c"));
    }
}
