//! What belongs to something stays with it, over HTTP on SQLite and PostgreSQL: a friend list
//! belongs to a game and is read by its player or that game's services only, a player JWT reads
//! only the games it names and only while it is short-lived, and a cursor pages only the board
//! and period it was made for.

mod common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{Value, json};
use standings_origin::clock::{Clock, parse_rfc3339};
use standings_origin::config::{Role, TokenConfig};

const OTHER_ADMIN: &str = "other-admin-secret-00000000000";
const OTHER_MODERATOR: &str = "other-moderator-secret-0000000";
const FRIENDS: &str = "/v1/games/arena-clash/players/p-ben/friends";
const ARENA_FRIENDS_OF_BEN: &str = "/v1/leaderboards/arena-clash/solo/S7/global/friends-of/p-ben";

on_both_databases!(
    a_friend_list_belongs_to_its_game,
    a_player_reads_only_its_own_friend_list,
    a_player_jwt_is_held_to_its_games_and_its_lifetime,
    a_cursor_pages_only_its_own_board_and_period,
);

fn ms(rfc3339: &str) -> i64 {
    parse_rfc3339(rfc3339).unwrap()
}

/// `(status, code)` of an answer, for comparing refusals in one line.
fn answer(status: StatusCode, body: &Value) -> (StatusCode, Value) {
    (status, body["code"].clone())
}

/// The test service with an admin and a moderator of other-game besides the usual tokens, and
/// arena-clash's and other-game's boards with Ava, Ben and Chloe on the first.
async fn two_games(db: Db) -> TestService {
    let db = TestDb::new(db).await;
    let mut config = config(&db.url);
    for (name, secret, role) in [
        ("other-admin", OTHER_ADMIN, Role::Admin),
        ("other-moderator", OTHER_MODERATOR, Role::Moderator),
    ] {
        config.tokens.push(TokenConfig {
            name: name.into(),
            secret: secret.into(),
            role,
            games: vec!["other-game".into()],
            player_id: None,
            rate_limit_per_second: None,
        });
    }
    let service = TestService::start_with_config(db, &config, Clock::System).await;
    service.define("arena-clash/solo/S7/global", "highest").await;
    service.define("other-game/solo/S7/global", "highest").await;
    for (i, player) in ["p-ava", "p-ben", "p-chloe"].iter().enumerate() {
        let e = event(&format!("e-{i}"), player, 100 - i as i64, "2026-10-13T10:00:00Z");
        assert_eq!(service.submit(&e).await.0, StatusCode::ACCEPTED);
    }
    service
}

async fn put_friends(
    service: &TestService,
    path: &str,
    token: &str,
    friends: &[&str],
) -> (StatusCode, Value) {
    service
        .call(
            Method::PUT,
            path,
            Some(token),
            Some(&json!({ "friends": friends })),
        )
        .await
}

/// The friends-of answer's players, ranked then unranked.
fn listed(body: &Value) -> Vec<String> {
    let ranked = body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["player_id"]);
    ranked
        .chain(body["unranked"].as_array().unwrap())
        .map(|p| p.as_str().unwrap().to_string())
        .collect()
}

/// Another game's service, moderator or admin cannot replace arena-clash's list of Ben's
/// friends (403), and the list it sets in its own game is not what arena-clash's friends-of
/// reads; the route without a game is gone.
async fn a_friend_list_belongs_to_its_game(db: Db) {
    let service = two_games(db).await;
    let (status, body) = put_friends(&service, FRIENDS, SERVICE, &["p-ava", "p-secret"]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["game"], "arena-clash");
    for token in [OTHER_GAME, OTHER_MODERATOR, OTHER_ADMIN] {
        let (status, body) = put_friends(&service, FRIENDS, token, &["p-planted"]).await;
        assert_eq!(
            answer(status, &body),
            (StatusCode::FORBIDDEN, json!("FORBIDDEN")),
            "{body}"
        );
        let (status, body) = put_friends(
            &service,
            "/v1/games/other-game/players/p-ben/friends",
            token,
            &["p-planted"],
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (status, body) = put_friends(&service, "/v1/players/p-ben/friends", ADMIN, &["p-planted"]).await;
    assert_eq!(
        answer(status, &body),
        (StatusCode::NOT_FOUND, json!("NOT_FOUND")),
        "{body}"
    );

    let (status, arena) = service.get(ARENA_FRIENDS_OF_BEN).await;
    assert_eq!(status, StatusCode::OK, "{arena}");
    assert_eq!(listed(&arena), ["p-ava", "p-secret"]);
    let (status, other) = service
        .call(
            Method::GET,
            "/v1/leaderboards/other-game/solo/S7/global/friends-of/p-ben",
            Some(OTHER_GAME),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{other}");
    assert_eq!(listed(&other), ["p-planted"]);
    // The game's own moderator and admin may set it, as their roles include the service's.
    for token in [MODERATOR, ADMIN] {
        assert_eq!(
            put_friends(&service, FRIENDS, token, &["p-ava"]).await.0,
            StatusCode::OK
        );
    }
}

/// A player token, static or JWT, reads its own friend list and no one else's (403, so Ben's
/// private friends stay private); the game's service, moderator and admin tokens read anyone's;
/// `rank-players` stays open to the player.
async fn a_player_reads_only_its_own_friend_list(db: Db) {
    let service = two_games(db).await;
    put_friends(&service, FRIENDS, SERVICE, &["p-ava", "p-secret"]).await;
    let ava_jwt = jwt(json!({"sub": "p-ava", "exp": now_secs() + 600, "games": ["arena-clash"]}));
    let ben_jwt = jwt(json!({"sub": "p-ben", "exp": now_secs() + 600, "games": ["arena-clash"]}));
    for token in [PLAYER, ava_jwt.as_str()] {
        let (status, body) = service
            .call(Method::GET, ARENA_FRIENDS_OF_BEN, Some(token), None)
            .await;
        assert_eq!(
            answer(status, &body),
            (StatusCode::FORBIDDEN, json!("FORBIDDEN")),
            "{body}"
        );
        assert!(!body.to_string().contains("p-secret"), "{body}");
        let (status, body) = service
            .call(
                Method::GET,
                "/v1/leaderboards/arena-clash/solo/S7/global/friends-of/p-ava",
                Some(token),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let (status, body) = service
            .call(
                Method::POST,
                "/v1/leaderboards/arena-clash/solo/S7/global/rank-players",
                Some(token),
                Some(&json!({"player_ids": ["p-ben", "p-chloe"]})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    for token in [ben_jwt.as_str(), SERVICE, MODERATOR, ADMIN] {
        let (status, body) = service
            .call(Method::GET, ARENA_FRIENDS_OF_BEN, Some(token), None)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(listed(&body), ["p-ava", "p-secret"]);
    }
    let (status, body) = service.call(Method::GET, ARENA_FRIENDS_OF_BEN, None, None).await;
    assert_eq!(
        answer(status, &body),
        (StatusCode::UNAUTHORIZED, json!("UNAUTHENTICATED"))
    );

    // Public reads open the boards, not the friend lists.
    let db = service.stop().await;
    let mut open = config(&db.url);
    open.public_reads = true;
    let service = TestService::start_with_config(db, &open, Clock::System).await;
    let top = "/v1/leaderboards/arena-clash/solo/S7/global/top";
    assert_eq!(service.call(Method::GET, top, None, None).await.0, StatusCode::OK);
    let (status, body) = service.call(Method::GET, ARENA_FRIENDS_OF_BEN, None, None).await;
    assert_eq!(
        answer(status, &body),
        (StatusCode::UNAUTHORIZED, json!("UNAUTHENTICATED"))
    );
    assert!(body["detail"].as_str().unwrap().contains("private"), "{body}");
}

fn now_secs() -> i64 {
    standings_origin::clock::now_ms() / 1000
}

/// A player JWT signed with the test secret.
fn jwt(claims: Value) -> String {
    standings_origin::http::auth::sign_jwt(JWT_SECRET.as_bytes(), &claims)
}

/// A JWT reads the games of its `games` claim and no other, as a static player token does; one
/// without `exp`, without `games`, or living longer than a day is 401 with a detail that says
/// which.
async fn a_player_jwt_is_held_to_its_games_and_its_lifetime(db: Db) {
    let service = TestService::start(db).await;
    service.define("arena-clash/solo/S7/global", "highest").await;
    service.define("other-game/solo/S7/global", "highest").await;
    let arena = "/v1/leaderboards/arena-clash/solo/S7/global/top";
    let other = "/v1/leaderboards/other-game/solo/S7/global/top";
    let read = |path: &'static str, token: String| {
        let service = &service;
        async move {
            let (status, body) = service.call(Method::GET, path, Some(&token), None).await;
            (status, body)
        }
    };
    let exp = now_secs() + 600;
    let arena_only = jwt(json!({"sub": "p-ava", "exp": exp, "games": ["arena-clash"]}));
    assert_eq!(read(arena, arena_only.clone()).await.0, StatusCode::OK);
    let (status, body) = read(other, arena_only).await;
    assert_eq!(
        answer(status, &body),
        (StatusCode::FORBIDDEN, json!("FORBIDDEN")),
        "{body}"
    );
    let every_game = jwt(json!({"sub": "p-ava", "exp": exp, "games": ["*"]}));
    assert_eq!(read(other, every_game).await.0, StatusCode::OK);

    for (claims, detail) in [
        (json!({"sub": "p-ava", "games": ["*"]}), "exp is missing"),
        (json!({"sub": "p-ava", "exp": exp}), "the games claim is missing"),
        (
            json!({"sub": "p-ava", "exp": now_secs() + 2 * 86_400, "games": ["*"]}),
            "longer than the 86400 s allowed",
        ),
        (
            json!({"sub": "p-ava", "iat": now_secs() - 86_400, "exp": exp, "games": ["*"]}),
            "longer than the 86400 s allowed",
        ),
    ] {
        let (status, body) = read(arena, jwt(claims.clone())).await;
        assert_eq!(
            answer(status, &body),
            (StatusCode::UNAUTHORIZED, json!("UNAUTHENTICATED")),
            "{claims}: {body}"
        );
        assert!(
            body["detail"].as_str().unwrap().contains(detail),
            "{claims}: {body}"
        );
    }
}

/// The `next_cursor` of a cumulative board sent to another board's `top`, or to another period
/// of its own board, is 400 `INVALID_CURSOR`; on its own board and period it pages on.
async fn a_cursor_pages_only_its_own_board_and_period(db: Db) {
    let clock = Clock::manual(ms("2026-10-13T23:00:00Z"));
    let service = TestService::start_with_clock(TestDb::new(db).await, clock.clone()).await;
    service.define("arena-clash/solo/S7/global", "highest").await;
    let (status, body) = service
        .call(
            Method::PUT,
            "/v1/boards/arena-clash/solo/S7/coins",
            Some(ADMIN),
            Some(&json!({"score_mode": "cumulative", "periods": ["all_time", "daily"]})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let submit_all = |day: &'static str| {
        let service = &service;
        async move {
            for (i, player) in ["p-ava", "p-ben", "p-chloe"].iter().enumerate() {
                let mut e = event(
                    &format!("{day}-{i}"),
                    player,
                    10 * (i as i64 + 1),
                    &format!("{day}T22:00:00Z"),
                );
                e["scopes"] = json!(["global", "coins"]);
                let (status, body) = service.submit(&e).await;
                assert_eq!(status, StatusCode::ACCEPTED, "{body}");
            }
        }
    };
    submit_all("2026-10-13").await;
    clock.set(ms("2026-10-14T23:00:00Z"));
    submit_all("2026-10-14").await;

    let coins = "/v1/leaderboards/arena-clash/solo/S7/coins/top?limit=1";
    let (_, first) = service.get(coins).await;
    let cursor = first["next_cursor"].as_str().unwrap().to_string();
    let (status, second) = service.get(&format!("{coins}&cursor={cursor}")).await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(second["entries"][0]["rank"], 2);

    let global = "/v1/leaderboards/arena-clash/solo/S7/global/top?limit=1";
    let (status, body) = service.get(&format!("{global}&cursor={cursor}")).await;
    assert_eq!(
        answer(status, &body),
        (StatusCode::BAD_REQUEST, json!("INVALID_CURSOR")),
        "{body}"
    );
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("another board or period"),
        "{body}"
    );
    let (status, body) = service
        .get(&format!("{coins}&period=daily&cursor={cursor}"))
        .await;
    assert_eq!(
        answer(status, &body),
        (StatusCode::BAD_REQUEST, json!("INVALID_CURSOR"))
    );

    // Two instances of the same daily board: one day's cursor does not page the other's.
    let day = |at: &str| format!("{coins}&period=daily&at={at}");
    let (_, first) = service.get(&day("2026-10-13T12:00:00Z")).await;
    let daily_cursor = first["next_cursor"].as_str().unwrap().to_string();
    let (status, body) = service
        .get(&format!("{}&cursor={daily_cursor}", day("2026-10-13T18:00:00Z")))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = service
        .get(&format!("{}&cursor={daily_cursor}", day("2026-10-14T12:00:00Z")))
        .await;
    assert_eq!(
        answer(status, &body),
        (StatusCode::BAD_REQUEST, json!("INVALID_CURSOR"))
    );
}
