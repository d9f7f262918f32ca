//! The `edge` role and token introspection, through the real router on SQLite and PostgreSQL: an
//! edge token reads its games and writes nothing, and `POST /v1/auth/introspect` tells an edge
//! (or admin) what another bearer token is and how long it may cache the answer.

mod common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{Value, json};
use standings_origin::clock::Clock;
use standings_origin::config::{Role, TokenConfig};
use standings_origin::http::auth::sign_jwt;

on_both_databases!(
    introspection_answers_what_each_token_is,
    an_edge_token_reads_its_games_and_writes_nothing,
    only_edge_and_admin_tokens_may_introspect,
    a_bad_introspection_body_is_refused_with_its_reason,
);

/// The edge token of arena-clash.
const EDGE: &str = "edge-arena-secret-0000000000";
const INTROSPECT: &str = "/v1/auth/introspect";
const BOARD: &str = "arena-clash/solo/S7/global";
const OTHER_BOARD: &str = "other-game/solo/S7/global";

/// The harness's service with an edge token of arena-clash beside its tokens.
async fn start(db: Db) -> TestService {
    let db = TestDb::new(db).await;
    let mut config = config(&db.url);
    config.tokens.push(TokenConfig {
        name: "edge-arena".into(),
        secret: EDGE.into(),
        role: Role::Edge,
        games: vec!["arena-clash".into()],
        player_id: None,
        rate_limit_per_second: None,
    });
    TestService::start_with_config(db, &config, Clock::System).await
}

/// `POST /v1/auth/introspect` about `token`, asked with `caller`.
async fn introspect(service: &TestService, caller: &str, token: &str) -> (StatusCode, Value) {
    service
        .call(
            Method::POST,
            INTROSPECT,
            Some(caller),
            Some(&json!({ "token": token })),
        )
        .await
}

/// A player JWT of arena-clash for p-ben, signed with `key`, expiring `exp_in_secs` from now by
/// the system clock (which the service checks JWTs against).
fn jwt(key: &[u8], exp_in_secs: i64) -> String {
    let now = standings_origin::clock::now_ms() / 1000;
    sign_jwt(
        key,
        &json!({"sub": "p-ben", "exp": now + exp_in_secs, "games": ["arena-clash"]}),
    )
}

/// A service token, a static player token and a player JWT are active with their role, games
/// (narrowed to the edge's), player and cache lifetime; an expired or forged JWT, an unknown
/// string and a token of another game only are not active, answered 200.
async fn introspection_answers_what_each_token_is(db: Db) {
    let service = start(db).await;
    let (status, body) = introspect(&service, EDGE, SERVICE).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"active": true, "role": "service", "games": ["arena-clash"], "player_id": null, "cache_seconds": 60})
    );
    // Ava's static token reads every game; the edge of arena-clash hears of its own only.
    let (status, body) = introspect(&service, EDGE, PLAYER).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"active": true, "role": "player", "games": ["arena-clash"], "player_id": "p-ava", "cache_seconds": 60})
    );
    let key = JWT_SECRET.as_bytes();
    let (status, body) = introspect(&service, EDGE, &jwt(key, 120)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (&body["active"], &body["role"], &body["games"], &body["player_id"]),
        (
            &json!(true),
            &json!("player"),
            &json!(["arena-clash"]),
            &json!("p-ben")
        )
    );
    let cache = body["cache_seconds"].as_i64().unwrap();
    assert!((1..=120).contains(&cache), "never past exp: {body}");
    let (_, body) = introspect(&service, EDGE, &jwt(key, 3_600)).await;
    assert_eq!(body["cache_seconds"], 300, "at most the cap: {body}");
    let inactive = json!({"active": false, "cache_seconds": 10});
    for (what, token) in [
        ("expired", jwt(key, -1)),
        ("forged", jwt(b"another-key-another-key-another-key!", 120)),
        ("unknown", "not-a-token-anyone-was-given-000".into()),
        ("of another game only", OTHER_GAME.into()),
    ] {
        let (status, body) = introspect(&service, EDGE, &token).await;
        assert_eq!((status, &body), (StatusCode::OK, &inactive), "{what}");
    }
    // The all-games admin sees another studio's token as it is.
    let (status, body) = introspect(&service, ADMIN, OTHER_GAME).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (&body["active"], &body["role"], &body["games"]),
        (&json!(true), &json!("service"), &json!(["other-game"]))
    );
}

/// An edge token reads a board of its game (any player's friends too) but not of another game,
/// and is refused on every write, moderation and board definition.
async fn an_edge_token_reads_its_games_and_writes_nothing(db: Db) {
    let service = start(db).await;
    service.define(BOARD, "highest").await;
    service.define(OTHER_BOARD, "highest").await;
    let (status, body) = service
        .submit(&event("e-1", "p-ava", 10, "2026-10-13T10:00:00Z"))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let (status, body) = service_get(&service, &format!("/v1/leaderboards/{BOARD}/top")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["entries"][0]["player_id"], "p-ava");
    let (status, body) = service_get(&service, &format!("/v1/leaderboards/{BOARD}/friends-of/p-ben")).await;
    assert_eq!(status, StatusCode::OK, "an edge is no player: {body}");
    let (status, body) = service_get(&service, &format!("/v1/leaderboards/{OTHER_BOARD}/top")).await;
    assert_eq!(
        (status, &body["code"]),
        (StatusCode::FORBIDDEN, &json!("FORBIDDEN")),
        "{body}"
    );
    let moderation = json!({"moderation_id": "m-1", "action_type": "DISQUALIFY", "reason": "edge",
        "game": "arena-clash", "mode": "solo", "season": "S7", "scope": "global", "target_player_id": "p-ava"});
    for (method, path, body) in [
        (
            Method::POST,
            "/v1/score-events".to_string(),
            event("e-2", "p-ben", 20, "2026-10-13T10:00:00Z"),
        ),
        (
            Method::POST,
            "/v1/score-events/batch".into(),
            json!({"events": [event("e-3", "p-ben", 20, "2026-10-13T10:00:00Z")]}),
        ),
        (
            Method::PUT,
            "/v1/games/arena-clash/players/p-ava/friends".into(),
            json!({"friends": ["p-ben"]}),
        ),
        (Method::POST, "/v1/moderation-actions".into(), moderation),
        (
            Method::PUT,
            format!("/v1/boards/{BOARD}"),
            json!({"score_mode": "highest"}),
        ),
        (
            Method::PUT,
            "/v1/seasons/arena-clash/S7/state".into(),
            json!({"state": "frozen"}),
        ),
    ] {
        let (status, answer) = service.call(method.clone(), &path, Some(EDGE), Some(&body)).await;
        assert_eq!(
            (status, &answer["code"]),
            (StatusCode::FORBIDDEN, &json!("FORBIDDEN")),
            "{method} {path}: {answer}"
        );
    }
    let (_, digest) = service_get(&service, &format!("/v1/leaderboards/{BOARD}/digest")).await;
    assert_eq!(digest["total_players"], 1, "no edge write landed: {digest}");
}

/// A GET as the edge token.
async fn service_get(service: &TestService, path: &str) -> (StatusCode, Value) {
    service.call(Method::GET, path, Some(EDGE), None).await
}

/// Only an edge or admin token may ask: a service, moderator or player token is 403, no token
/// or a bad one 401, and an inactive caller is never confused with an inactive answer.
async fn only_edge_and_admin_tokens_may_introspect(db: Db) {
    let service = start(db).await;
    for caller in [SERVICE, MODERATOR, PLAYER, &player_jwt("p-ava", &["arena-clash"])] {
        let (status, body) = introspect(&service, caller, SERVICE).await;
        assert_eq!(
            (status, &body["code"]),
            (StatusCode::FORBIDDEN, &json!("FORBIDDEN")),
            "{body}"
        );
    }
    let (status, body) = introspect(&service, "not-a-token-anyone-was-given-000", SERVICE).await;
    assert_eq!(
        (status, &body["code"]),
        (StatusCode::UNAUTHORIZED, &json!("UNAUTHENTICATED")),
        "{body}"
    );
    let (status, body) = service
        .call(Method::POST, INTROSPECT, None, Some(&json!({"token": SERVICE})))
        .await;
    assert_eq!(
        (status, &body["code"]),
        (StatusCode::UNAUTHORIZED, &json!("UNAUTHENTICATED")),
        "{body}"
    );
}

/// A body that repeats `token` is refused as every JSON body is (400 INVALID_JSON, naming the
/// key); a missing, unknown, mistyped or empty field is 400 INVALID_REQUEST saying which.
async fn a_bad_introspection_body_is_refused_with_its_reason(db: Db) {
    let service = start(db).await;
    let repeated = format!(r#"{{"token": "{SERVICE}", "token": "{ADMIN}"}}"#);
    let (status, body) = service
        .call_raw(Method::POST, INTROSPECT, Some(EDGE), &repeated)
        .await;
    assert_eq!(
        (status, &body["code"]),
        (StatusCode::BAD_REQUEST, &json!("INVALID_JSON")),
        "{body}"
    );
    assert!(body["detail"].as_str().unwrap().contains("token"), "{body}");
    for (sent, says) in [
        (json!({}), "missing field `token`"),
        (
            json!({"token": SERVICE, "game": "arena-clash"}),
            "unknown field `game`",
        ),
        (json!({"token": 7}), "invalid type"),
        (json!({"token": "  "}), "token is empty"),
    ] {
        let (status, body) = service
            .call(Method::POST, INTROSPECT, Some(EDGE), Some(&sent))
            .await;
        assert_eq!(
            (status, &body["code"]),
            (StatusCode::BAD_REQUEST, &json!("INVALID_REQUEST")),
            "{sent}: {body}"
        );
        let detail = body["detail"].as_str().unwrap();
        assert!(detail.contains(says), "{sent}: {detail}");
        assert!(!detail.contains(SERVICE), "the token is never echoed: {detail}");
    }
}
