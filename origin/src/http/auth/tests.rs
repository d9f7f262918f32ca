//! The authenticator's answers, through its public methods.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::introspection::{
    INACTIVE_CACHE_SECONDS, Introspection, PLAYER_JWT_CACHE_SECONDS_MAX, STATIC_TOKEN_CACHE_SECONDS,
};
use super::snapshot::SnapshotReader;
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
        (error.code().name, error.to_string())
    };
    assert_eq!(refusal(&none, None).0, "UNAUTHENTICATED");
    let other_game = auth
        .subscriber(&bearer("arena-service-secret-0000"), None, "other-game")
        .unwrap_err();
    assert_eq!(other_game.code().name, "FORBIDDEN");
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
    let code = |result: Result<Principal, AppError>| result.map(|_| ()).map_err(|e| e.code().name);
    assert!(auth.reader(&edge, "arena-clash").is_ok());
    assert!(auth.friends_reader(&edge, "arena-clash", "p-ben").is_ok());
    let other = auth.reader(&edge, "other-game").unwrap_err();
    assert_eq!(other.code().name, "FORBIDDEN");
    assert_eq!(code(auth.introspector(&edge)), Ok(()));
    assert_eq!(code(auth.writer(&edge, Some("arena-clash"))), Err("FORBIDDEN"));
    assert_eq!(
        auth.writer(&edge, Some("arena-clash")).unwrap_err().to_string(),
        "FORBIDDEN: an edge token cannot do this; it needs a service token"
    );
    // A profile is a player's own: the edge reads it, and the rule is the profile's, in its words.
    assert!(auth.profile_reader(&edge, "arena-clash", "p-ben").is_ok());
    let ava = bearer(&player_jwt(&["arena-clash"]));
    assert_eq!(
        auth.profile_reader(&ava, "arena-clash", "p-ben")
            .unwrap_err()
            .to_string(),
        "FORBIDDEN: a player token reads only its own player's profile, not \"p-ben\"'s"
    );
    assert_eq!(
        auth.writer(&bearer("Bearer-less"), None)
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Err("UNAUTHENTICATED: the token is not known".to_string())
    );
    let mut lower = HeaderMap::new();
    lower.insert(
        axum::http::header::AUTHORIZATION,
        axum::http::HeaderValue::from_static("bearer arena-edge-secret-000000"),
    );
    assert!(
        auth.reader(&lower, "arena-clash").is_ok(),
        "the scheme is case-insensitive"
    );
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
    let code = |result: Result<SnapshotReader, AppError>| result.map_err(|e| e.code().name);
    let edge = auth.snapshot_reader(&bearer("arena-edge-secret-000000")).unwrap();
    assert!(edge.check(["arena-clash"], "snapshots").is_ok());
    assert!(edge.check(["other-game", "arena-clash"], "this part").is_ok());
    let refused = edge.check(["other-game"], "this part").unwrap_err();
    assert_eq!(refused.code().name, "FORBIDDEN");
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
        assert_eq!(refused.code().name, "FORBIDDEN");
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
