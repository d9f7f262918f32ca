//! The HTTP API through the real router, on SQLite and on PostgreSQL.

mod common;

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{Value, json};

const BOARD: &str = "arena-clash/solo/S7/global";
const LB: &str = "/v1/leaderboards/arena-clash/solo/S7/global";

fn players(body: &Value) -> Vec<String> {
    body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["player_id"].as_str().unwrap().to_string())
        .collect()
}

/// Ava 9,800; Ben 9,500 (earlier); Chloe 9,500 (later); Dev 9,100; Eli 8,700.
async fn canonical(service: &TestService) {
    service.define(BOARD, "highest").await;
    for (id, player, value, at) in [
        ("evt-1", "p-ava", 9_800, "2026-10-13T10:00:00Z"),
        ("evt-2", "p-ben", 9_500, "2026-10-13T10:01:00Z"),
        ("evt-3", "p-chloe", 9_500, "2026-10-13T10:02:00Z"),
        ("evt-4", "p-dev", 9_100, "2026-10-13T10:03:00Z"),
        ("evt-5", "p-eli", 8_700, "2026-10-13T10:04:00Z"),
    ] {
        let (status, body) = service.submit(&event(id, player, value, at)).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        let position = body["position"].as_str().unwrap_or_default().to_string();
        assert!(position.starts_with("p1-"), "{body}");
        assert_eq!(
            body,
            json!({"event_id": id, "status": "ACCEPTED", "position": position})
        );
    }
}

on_both_databases!(
    every_read_of_one_instance_carries_its_board_version,
    the_contracts_bad_parameters_are_refused_in_its_words,
    canonical_board_and_core_scenarios,
    retries_and_conflicts,
    concurrent_retries_never_double_count,
    out_of_order_arrival,
    cursors_page_one_version_and_go_stale,
    every_error_code,
    roles_and_games,
    friends_and_rank_players,
    boards_and_operations,
    batch_submissions,
    resubmissions_among_new_events_are_found_after_the_insert,
    concurrent_batches_and_their_retries_count_each_event_once,
    batch_refusals_match_single_submissions,
    single_submissions_read_either_way_answer_alike,
    a_repeated_key_is_refused_on_every_endpoint_and_stores_nothing,
    a_pause_in_writes_repacks_boards_and_changes_no_answer,
    the_log_reads_back_page_by_page_exactly_as_stored,
    a_total_that_would_overflow_is_refused_while_earlier_groups_wait_to_be_applied,
    a_read_given_a_writes_position_answers_at_or_after_it,
);

/// Read-your-writes: a write names its position (header and body), a read that hands it back
/// (parameter or header) answers with the write in it, one ahead of the log is refused 503
/// `POSITION_NOT_REACHED` after the wait (never older), and a token of another game or none
/// this service gave is a 400 naming it.
async fn a_read_given_a_writes_position_answers_at_or_after_it(db: Db) {
    use standings_core::contract::position::Position;
    let service = TestService::start(db).await;
    service.define("arena-clash/solo/S7/global", "highest").await;
    let (status, body) = service
        .submit(&event("ryw-1", "p-ava", 10, "2026-10-13T10:00:00Z"))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let token = body["position"].as_str().unwrap().to_string();
    let top = "/v1/leaderboards/arena-clash/solo/S7/global/top";
    let (status, page) = service.get(&format!("{top}?min_position={token}")).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["entries"][0]["player_id"], "p-ava", "{page}");
    let (status, _, bytes) = service
        .get_raw(top, Some(SERVICE), &[("x-standings-min-position", &token)])
        .await;
    let page: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        (status, page["entries"][0]["player_id"].as_str()),
        (StatusCode::OK, Some("p-ava"))
    );

    // A batch of one game names its position too, in the header as in the body.
    let (status, batch) = service
        .submit_batch(&[event("ryw-2", "p-ben", 20, "2026-10-13T10:00:00Z")])
        .await;
    assert_eq!(status, StatusCode::OK, "{batch}");
    let later = batch["position"].as_str().unwrap();
    assert_ne!(later, token, "the log moved on");
    let (status, rank) = service
        .get(&format!(
            "/v1/leaderboards/arena-clash/solo/S7/global/players/p-ben/rank?min_position={later}"
        ))
        .await;
    assert_eq!(
        (status, rank["rank"].clone()),
        (StatusCode::OK, json!(1)),
        "{rank}"
    );

    // Any other write to a route that names its game names the position in its header: a
    // profile, then a read handed that position shows the name.
    let request = axum::http::Request::builder()
        .method(Method::PUT)
        .uri("/v1/games/arena-clash/players/p-ava/profile")
        .header("authorization", format!("Bearer {SERVICE}"))
        .header("content-type", "application/json")
        .body(axum::body::Body::from(r#"{"display_name":"Ava"}"#))
        .unwrap();
    let named = tower::ServiceExt::oneshot(service.app.clone(), request)
        .await
        .unwrap();
    assert_eq!(named.status(), StatusCode::OK);
    let after_name = named.headers()["x-standings-position"]
        .to_str()
        .unwrap()
        .to_string();
    let (status, page) = service.get(&format!("{top}?min_position={after_name}")).await;
    assert_eq!(
        (status, page["entries"][1]["display_name"].as_str()),
        (StatusCode::OK, Some("Ava")),
        "{page}"
    );
    use http_body_util::BodyExt;
    let body: Value = serde_json::from_slice(&named.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(body["position"], after_name.as_str(), "the body names it too");

    // A moderation action names its game in the body, and its position in both places; a read
    // handed it shows the action done.
    let (status, invalidated) = service
        .call(
            Method::POST,
            "/v1/moderation-actions",
            Some(MODERATOR),
            Some(
                &json!({"moderation_id": "ryw-m", "action_type": "INVALIDATE", "reason": "cheat",
                         "game": "arena-clash", "target_event_id": "ryw-2"}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{invalidated}");
    let after_action = invalidated["position"].as_str().unwrap();
    let (status, page) = service.get(&format!("{top}?min_position={after_action}")).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["total_players"], 1, "the invalidated score is gone: {page}");

    let ahead = Position::new("arena-clash", 1_000_000).token();
    let (status, headers, bytes) = service
        .get_raw(&format!("{top}?min_position={ahead}"), Some(SERVICE), &[])
        .await;
    let refused: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        (status, refused["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("POSITION_NOT_REACHED")),
        "{refused}"
    );
    assert_eq!(headers["retry-after"], "1");
    let other = Position::new("other-game", 1).token();
    let (status, refused) = service.get(&format!("{top}?min_position={other}")).await;
    assert_eq!(
        (status, refused["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("INVALID_REQUEST"))
    );
    assert!(
        refused["detail"].as_str().unwrap().contains("another game"),
        "{refused}"
    );
    let (status, refused) = service.get(&format!("{top}?min_position=yesterday")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert!(
        refused["detail"].as_str().unwrap().contains("\"yesterday\""),
        "{refused}"
    );
}

/// The canonical board over HTTP, and the core scenarios: Dev's 9,700 to #2, a late lower score
/// as a no-op, nearby, cumulative and fastest boards.
async fn canonical_board_and_core_scenarios(db: Db) {
    let service = TestService::start(db).await;
    canonical(&service).await;
    let (status, top) = service.get(&format!("{LB}/top?limit=10")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(players(&top), ["p-ava", "p-ben", "p-chloe", "p-dev", "p-eli"]);
    assert_eq!(top["board_version"], 5);
    assert_eq!(top["total_players"], 5);
    assert_eq!(
        top["entries"][1],
        json!({"rank": 2, "player_id": "p-ben", "value": 9500, "achieved_at": "2026-10-13T10:01:00Z"})
    );
    assert_eq!(top["next_cursor"], Value::Null);

    let (_, chloe) = service.get(&format!("{LB}/players/p-chloe/rank")).await;
    assert_eq!(chloe["rank"], 3);
    assert_eq!(chloe["competition_rank"], 2);
    assert_eq!(chloe["dense_rank"], 2);
    assert_eq!(chloe["total_players"], 5);
    assert_eq!(chloe["board_version"], 5);

    let (_, near) = service
        .get(&format!("{LB}/players/p-chloe/nearby?radius=1"))
        .await;
    assert_eq!(players(&near), ["p-ben", "p-chloe", "p-dev"]);
    assert_eq!(near["board_version"], 5);

    let (status, _) = service
        .submit(&event("evt-101", "p-dev", 9_700, "2026-10-13T10:05:00Z"))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (_, dev) = service.get(&format!("{LB}/players/p-dev/rank")).await;
    assert_eq!(
        (dev["rank"].clone(), dev["board_version"].clone()),
        (json!(2), json!(6))
    );
    // A late, lower score is stored (ACCEPTED) but changes nothing on a highest board.
    let (status, _) = service
        .submit(&event("evt-102", "p-dev", 9_200, "2026-10-13T09:00:00Z"))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (_, dev) = service.get(&format!("{LB}/players/p-dev/rank")).await;
    assert_eq!(
        (dev["value"].clone(), dev["board_version"].clone()),
        (json!(9700), json!(6))
    );

    service.define("arena-clash/solo/S7/coins", "cumulative").await;
    service.define("arena-clash/solo/S7/speedrun", "fastest").await;
    for (id, scope, value) in [("c1", "coins", 100), ("c2", "coins", 50)] {
        let mut e = event(id, "p-ava", value, "2026-10-13T10:00:00Z");
        e["scopes"] = json!([scope]);
        assert_eq!(service.submit(&e).await.0, StatusCode::ACCEPTED);
    }
    let (_, coins) = service
        .get("/v1/leaderboards/arena-clash/solo/S7/coins/players/p-ava/rank")
        .await;
    assert_eq!(coins["value"], 150);
    for (id, player, ms) in [
        ("f1", "p-ava", 64_000),
        ("f2", "p-ben", 61_200),
        ("f3", "p-ben", 62_000),
    ] {
        let mut e = event(id, player, ms, "2026-10-13T10:00:00Z");
        e["scopes"] = json!(["speedrun"]);
        assert_eq!(service.submit(&e).await.0, StatusCode::ACCEPTED);
    }
    let (_, speed) = service
        .get("/v1/leaderboards/arena-clash/solo/S7/speedrun/top")
        .await;
    assert_eq!(players(&speed), ["p-ben", "p-ava"]);
    assert_eq!(speed["entries"][0]["value"], 61_200);
}

/// The same event again is a 200 DUPLICATE that changes nothing; the same id with another
/// payload is a 409 EVENT_ID_CONFLICT.
async fn retries_and_conflicts(db: Db) {
    let service = TestService::start(db).await;
    service.define("arena-clash/solo/S7/coins", "cumulative").await;
    let mut e = event("evt-1", "p-ava", 100, "2026-10-13T10:00:00Z");
    e["scopes"] = json!(["coins"]);
    assert_eq!(service.submit(&e).await.0, StatusCode::ACCEPTED);
    let (status, body) = service.submit(&e).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({"event_id": "evt-1", "status": "DUPLICATE", "position": body["position"]})
    );
    let mut changed = e.clone();
    changed["value"] = json!(101);
    let (status, body) = service.submit(&changed).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["code"], "EVENT_ID_CONFLICT");
    let (_, rank) = service
        .get("/v1/leaderboards/arena-clash/solo/S7/coins/players/p-ava/rank")
        .await;
    assert_eq!(
        (rank["value"].clone(), rank["board_version"].clone()),
        (json!(100), json!(1))
    );
    // Another game may reuse the id: uniqueness is per game.
    service.define("other-game/solo/S1/global", "highest").await;
    let other = json!({"event_id": "evt-1", "player_id": "p-ava", "game": "other-game", "mode": "solo",
                       "season": "S1", "value": 5, "achieved_at": "2026-10-13T10:00:00Z"});
    let (status, _) = service
        .call(Method::POST, "/v1/score-events", Some(OTHER_GAME), Some(&other))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
}

/// 64 clients submitting and retrying the same cumulative events at once count each event once.
async fn concurrent_retries_never_double_count(db: Db) {
    let service = Arc::new(TestService::start(db).await);
    service.define("arena-clash/solo/S7/coins", "cumulative").await;
    let mut tasks = Vec::new();
    for client in 0..64 {
        let service = service.clone();
        tasks.push(tokio::spawn(async move {
            let mut statuses = Vec::new();
            // Every client submits the same 20 events (each twice): 2,560 submissions of 20 events.
            for round in 0..2 {
                for i in 0..20 {
                    let n = (i + client + round) % 20;
                    let mut e = event(
                        &format!("evt-{n}"),
                        &format!("p-{}", n % 4),
                        10,
                        "2026-10-13T10:00:00Z",
                    );
                    e["scopes"] = json!(["coins"]);
                    statuses.push(service.submit(&e).await.0);
                }
            }
            statuses
        }));
    }
    let mut accepted = 0;
    for task in tasks {
        for status in task.await.unwrap() {
            match status {
                StatusCode::ACCEPTED => accepted += 1,
                StatusCode::OK => {}
                other => panic!("unexpected status {other}"),
            }
        }
    }
    assert_eq!(accepted, 20, "each event accepted exactly once");
    let (_, top) = service
        .get("/v1/leaderboards/arena-clash/solo/S7/coins/top")
        .await;
    for entry in top["entries"].as_array().unwrap() {
        assert_eq!(entry["value"], 50, "5 events of 10 per player: {top}");
    }
    assert_eq!(top["board_version"], 20);
}

/// Events arriving in any order give the same board and digest.
async fn out_of_order_arrival(db: Db) {
    let a = TestService::start(db).await;
    let b = TestService::start(db).await;
    let events: Vec<Value> = (0..30)
        .map(|i| {
            event(
                &format!("evt-{i}"),
                &format!("p-{}", i % 7),
                (i * 37 % 11) as i64 * 100,
                &format!("2026-10-13T10:{:02}:00Z", i),
            )
        })
        .collect();
    a.define(BOARD, "highest").await;
    b.define(BOARD, "highest").await;
    for e in &events {
        assert_eq!(a.submit(e).await.0, StatusCode::ACCEPTED);
    }
    for e in events.iter().rev() {
        assert_eq!(b.submit(e).await.0, StatusCode::ACCEPTED);
    }
    let (_, da) = a.get(&format!("{LB}/digest")).await;
    let (_, db_) = b.get(&format!("{LB}/digest")).await;
    assert_eq!(da["digest"], db_["digest"]);
    let (_, ta) = a.get(&format!("{LB}/top?limit=100")).await;
    let (_, tb) = b.get(&format!("{LB}/top?limit=100")).await;
    assert_eq!(ta["entries"], tb["entries"]);
}

/// Pages follow the cursor within one version even while the board changes; a cursor whose
/// version is no longer held is 410 STALE_CURSOR; a forged one is 400 INVALID_CURSOR.
async fn cursors_page_one_version_and_go_stale(db: Db) {
    let service = TestService::start(db).await;
    canonical(&service).await;
    let (_, first) = service.get(&format!("{LB}/top?limit=2")).await;
    assert_eq!(players(&first), ["p-ava", "p-ben"]);
    let cursor = first["next_cursor"].as_str().unwrap().to_string();
    // The board changes between pages: Eli jumps to the top.
    assert_eq!(
        service
            .submit(&event("evt-9", "p-eli", 9_999, "2026-10-13T11:00:00Z"))
            .await
            .0,
        StatusCode::ACCEPTED
    );
    let (status, second) = service.get(&format!("{LB}/top?limit=2&cursor={cursor}")).await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(second["board_version"], 5, "the page is of the cursor's version");
    assert_eq!(players(&second), ["p-chloe", "p-dev"]);
    assert_eq!(second["entries"][0]["rank"], 3);
    let cursor = second["next_cursor"].as_str().unwrap();
    let (_, third) = service.get(&format!("{LB}/top?limit=2&cursor={cursor}")).await;
    assert_eq!(players(&third), ["p-eli"]);
    assert_eq!(third["entries"][0]["value"], 8_700, "Eli as of version 5");
    // The current version shows the move.
    let (_, now) = service.get(&format!("{LB}/top?limit=1")).await;
    assert_eq!(players(&now), ["p-eli"]);
    assert_eq!(now["board_version"], 6);
    // Past the history: 410.
    {
        let slot = service
            .state
            .registry()
            .entry(&standings_core::BoardId::new("arena-clash", "solo", "S7", "global").unwrap())
            .unwrap()
            .all_time();
        slot.write().set_history_limit(0);
    }
    // Cached pages belong to a version, so the next change is what retires them.
    assert_eq!(
        service
            .submit(&event("evt-10", "p-fay", 1, "2026-10-13T11:00:00Z"))
            .await
            .0,
        StatusCode::ACCEPTED
    );
    let (status, body) = service.get(&format!("{LB}/top?limit=2&cursor={cursor}")).await;
    assert_eq!(status, StatusCode::GONE);
    assert_eq!(body["code"], "STALE_CURSOR");
    let (status, body) = service
        .get(&format!("{LB}/top?limit=2&cursor=not-a-cursor"))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["code"], "INVALID_CURSOR");
}

/// Every error code the API promises, each for its own cause, as problem+json; a rejected
/// request changes nothing.
async fn every_error_code(db: Db) {
    let service = TestService::start(db).await;
    canonical(&service).await;
    let expect = |status: StatusCode, code: &str, got: (StatusCode, String, Value)| {
        assert_eq!(got.0, status, "{code}: {}", got.2);
        assert_eq!(got.2["code"], code, "{}", got.2);
        assert_eq!(got.1, "application/problem+json");
        assert_eq!(got.2["status"], status.as_u16());
        assert!(got.2["detail"].as_str().is_some_and(|d| !d.is_empty()));
    };
    let post = |token: Option<&'static str>, body: Value| {
        let service = &service;
        async move {
            service
                .call_full(Method::POST, "/v1/score-events", token, Some(&body))
                .await
        }
    };
    let good = event("evt-x", "p-zed", 100, "2026-10-13T10:00:00Z");

    expect(
        StatusCode::UNAUTHORIZED,
        "UNAUTHENTICATED",
        post(None, good.clone()).await,
    );
    expect(
        StatusCode::UNAUTHORIZED,
        "UNAUTHENTICATED",
        post(Some("not-a-known-token-000000"), good.clone()).await,
    );
    expect(
        StatusCode::FORBIDDEN,
        "FORBIDDEN",
        post(Some(PLAYER), good.clone()).await,
    );
    expect(
        StatusCode::FORBIDDEN,
        "FORBIDDEN",
        post(Some(OTHER_GAME), good.clone()).await,
    );
    let mut unknown = good.clone();
    unknown["scopes"] = json!(["region:mars"]);
    expect(
        StatusCode::NOT_FOUND,
        "UNKNOWN_BOARD",
        post(Some(SERVICE), unknown).await,
    );
    expect(
        StatusCode::NOT_FOUND,
        "UNKNOWN_BOARD",
        service
            .call_full(
                Method::GET,
                "/v1/leaderboards/arena-clash/solo/S9/global/top",
                Some(SERVICE),
                None,
            )
            .await,
    );
    expect(
        StatusCode::NOT_FOUND,
        "PLAYER_NOT_RANKED",
        service
            .call_full(
                Method::GET,
                &format!("{LB}/players/p-nobody/rank"),
                Some(SERVICE),
                None,
            )
            .await,
    );
    let raw = {
        use axum::body::Body;
        use http_body_util::BodyExt;
        use tower::ServiceExt;
        let request = axum::http::Request::post("/v1/score-events")
            .header("authorization", format!("Bearer {SERVICE}"))
            .header("content-type", "application/json")
            .body(Body::from("{\"event_id\": "))
            .unwrap();
        let response = service.app.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let ct = response.headers()["content-type"].to_str().unwrap().to_string();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (status, ct, serde_json::from_slice(&bytes).unwrap())
    };
    expect(StatusCode::BAD_REQUEST, "INVALID_JSON", raw);
    for (what, bad) in [
        (
            "missing field",
            json!({"event_id": "e", "player_id": "p", "game": "arena-clash"}),
        ),
        ("wrong type", {
            let mut e = good.clone();
            e["value"] = json!("lots");
            e
        }),
        ("long player id", {
            let mut e = good.clone();
            e["player_id"] = json!("p".repeat(129));
            e
        }),
        ("control character", {
            let mut e = good.clone();
            e["player_id"] = json!("p-\u{1}");
            e
        }),
        ("future time", {
            let mut e = good.clone();
            let future =
                standings_origin::clock::format_rfc3339(standings_origin::clock::now_ms() + 10 * 60 * 1000);
            e["achieved_at"] = json!(future);
            e
        }),
        ("bad time", {
            let mut e = good.clone();
            e["achieved_at"] = json!("yesterday");
            e
        }),
        ("unknown field", {
            let mut e = good.clone();
            e["bonus"] = json!(1);
            e
        }),
    ] {
        let got = post(Some(SERVICE), bad).await;
        assert_eq!(got.2["code"], "INVALID_EVENT", "{what}: {}", got.2);
        expect(StatusCode::UNPROCESSABLE_ENTITY, "INVALID_EVENT", got);
    }
    service.define("arena-clash/solo/S7/bounded", "highest").await;
    let (status, _) = service
        .call(
            Method::PUT,
            "/v1/boards/arena-clash/solo/S7/small",
            Some(ADMIN),
            Some(&json!({"score_mode": "highest", "value_min": 0, "value_max": 100})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let mut too_big = good.clone();
    too_big["scopes"] = json!(["global", "small"]);
    too_big["value"] = json!(101);
    expect(
        StatusCode::UNPROCESSABLE_ENTITY,
        "VALUE_OUT_OF_RANGE",
        post(Some(SERVICE), too_big).await,
    );
    let huge = json!({"events": (0..1001).map(|i| event(&format!("b{i}"), "p", 1, "2026-10-13T10:00:00Z")).collect::<Vec<_>>()});
    expect(
        StatusCode::PAYLOAD_TOO_LARGE,
        "PAYLOAD_TOO_LARGE",
        service
            .call_full(Method::POST, "/v1/score-events/batch", Some(SERVICE), Some(&huge))
            .await,
    );
    let enormous = json!({"events": [], "padding": "x".repeat(3 * 1024 * 1024)});
    expect(
        StatusCode::PAYLOAD_TOO_LARGE,
        "PAYLOAD_TOO_LARGE",
        service
            .call_full(
                Method::POST,
                "/v1/score-events/batch",
                Some(SERVICE),
                Some(&enormous),
            )
            .await,
    );
    // The limited token allows 3 requests a second (reads here, so the board stays as it was).
    let mut limited = Vec::new();
    for _ in 0..6 {
        limited.push(
            service
                .call_full(Method::GET, &format!("{LB}/top"), Some(LIMITED), None)
                .await,
        );
    }
    assert_eq!(limited[0].0, StatusCode::OK);
    let last = limited.pop().unwrap();
    expect(StatusCode::TOO_MANY_REQUESTS, "RATE_LIMITED", last);
    expect(
        StatusCode::CONFLICT,
        "BOARD_RULES_CONFLICT",
        service
            .call_full(
                Method::PUT,
                &format!("/v1/boards/{BOARD}"),
                Some(ADMIN),
                Some(&json!({"score_mode": "fastest"})),
            )
            .await,
    );
    expect(
        StatusCode::BAD_REQUEST,
        "INVALID_REQUEST",
        service
            .call_full(Method::GET, &format!("{LB}/top?limit=0"), Some(SERVICE), None)
            .await,
    );
    expect(
        StatusCode::BAD_REQUEST,
        "INVALID_REQUEST",
        service
            .call_full(Method::GET, &format!("{LB}/top?limit=1001"), Some(SERVICE), None)
            .await,
    );
    expect(
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
        service
            .call_full(Method::GET, "/v1/nothing-here", Some(SERVICE), None)
            .await,
    );
    // Nothing of the above changed the board.
    let (_, top) = service.get(&format!("{LB}/top?limit=100")).await;
    assert_eq!(players(&top), ["p-ava", "p-ben", "p-chloe", "p-dev", "p-eli"]);
    assert_eq!(top["board_version"], 5);
    // And rejections are counted by code.
    let (_, _, metrics) = service.call_full(Method::GET, "/metrics", None, None).await;
    let metrics = metrics.as_str().unwrap().to_string();
    assert!(
        metrics.contains("standings_rejections_total{code=\"INVALID_EVENT\"} 7"),
        "{metrics}"
    );
}

/// A player token can read but never write; a service token cannot touch another game; only an
/// admin defines boards; player JWTs are accepted for reads.
async fn roles_and_games(db: Db) {
    let service = TestService::start(db).await;
    canonical(&service).await;
    let (status, _) = service
        .call(Method::GET, &format!("{LB}/top"), Some(PLAYER), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = service
        .call(
            Method::POST,
            "/v1/score-events",
            Some(PLAYER),
            Some(&event("e-p", "p-ava", 99_999, "2026-10-13T10:00:00Z")),
        )
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::FORBIDDEN, json!("FORBIDDEN"))
    );
    let (status, _) = service
        .call(
            Method::PUT,
            "/v1/games/arena-clash/players/p-ava/friends",
            Some(PLAYER),
            Some(&json!({"friends": ["p-ben"]})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = service
        .call(Method::GET, &format!("{LB}/top"), Some(OTHER_GAME), None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = service
        .call(
            Method::PUT,
            "/v1/boards/arena-clash/solo/S7/new",
            Some(SERVICE),
            Some(&json!({"score_mode": "highest"})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = service.call(Method::GET, &format!("{LB}/top"), None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let jwt = standings_origin::http::auth::sign_jwt(
        JWT_SECRET.as_bytes(),
        &json!({"sub": "p-ben", "exp": standings_origin::clock::now_ms() / 1000 + 60, "games": ["arena-clash"]}),
    );
    let (status, _) = service
        .call(Method::GET, &format!("{LB}/players/p-ben/rank"), Some(&jwt), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = service
        .call(
            Method::POST,
            "/v1/score-events",
            Some(&jwt),
            Some(&event("e-j", "p-ben", 99_999, "2026-10-13T10:00:00Z")),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let expired = standings_origin::http::auth::sign_jwt(
        JWT_SECRET.as_bytes(),
        &json!({"sub": "p-ben", "exp": 1, "games": ["*"]}),
    );
    let (status, _) = service
        .call(Method::GET, &format!("{LB}/top"), Some(&expired), None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (_, top) = service.get(&format!("{LB}/top")).await;
    assert_eq!(top["board_version"], 5, "no write got through");
}

/// Friend lists rank friends among themselves; players with no score are unranked.
async fn friends_and_rank_players(db: Db) {
    let service = TestService::start(db).await;
    canonical(&service).await;
    let (status, body) = service
        .call(
            Method::PUT,
            "/v1/games/arena-clash/players/p-ava/friends",
            Some(SERVICE),
            Some(&json!({"friends": ["p-eli", "p-dev", "p-ben", "p-zoe", "p-ben", "p-ava"]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["friends"], json!(["p-eli", "p-dev", "p-ben", "p-zoe"]));
    let (_, friends) = service.get(&format!("{LB}/friends-of/p-ava")).await;
    let ranked: Vec<(i64, i64, String)> = friends["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["rank"].as_i64().unwrap(),
                e["global_rank"].as_i64().unwrap(),
                e["player_id"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        ranked,
        [
            (1, 2, "p-ben".into()),
            (2, 4, "p-dev".into()),
            (3, 5, "p-eli".into())
        ]
    );
    assert_eq!(friends["unranked"], json!(["p-zoe"]));
    let (_, with_self) = service
        .get(&format!("{LB}/friends-of/p-ava?include_self=true"))
        .await;
    assert_eq!(players(&with_self)[0], "p-ava");
    let (status, ranked) = service
        .call(
            Method::POST,
            &format!("{LB}/rank-players"),
            Some(PLAYER),
            Some(&json!({"player_ids": ["p-eli", "p-chloe", "p-nobody"]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(players(&ranked), ["p-chloe", "p-eli"]);
    assert_eq!(ranked["unranked"], json!(["p-nobody"]));
    assert_eq!(ranked["board_version"], 5);
}

/// Board definitions are idempotent; scope discovery, health, readiness, metrics and the
/// OpenAPI document answer.
async fn boards_and_operations(db: Db) {
    let service = TestService::start(db).await;
    canonical(&service).await;
    let (status, _) = service
        .call(
            Method::PUT,
            &format!("/v1/boards/{BOARD}"),
            Some(ADMIN),
            Some(&json!({"score_mode": "highest", "value_min": -1_000_000_000, "value_max": 1_000_000_000})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "identical definition");
    service
        .define("arena-clash/solo/S7/region:eu-west", "highest")
        .await;
    let (_, boards) = service.get("/v1/games/arena-clash/boards").await;
    let scopes: Vec<&str> = boards["boards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["scope"].as_str().unwrap())
        .collect();
    assert_eq!(scopes, ["global", "region:eu-west"]);
    assert_eq!(boards["boards"][0]["total_players"], 5);
    let (status, _) = service.call(Method::GET, "/healthz", None, None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = service.call(Method::GET, "/readyz", None, None).await;
    assert_eq!(status, StatusCode::OK);
    let (_, _, metrics) = service.call_full(Method::GET, "/metrics", None, None).await;
    let metrics = metrics.as_str().unwrap().to_string();
    for name in [
        "standings_durable_ack_seconds_count 5",
        "standings_event_visible_lag_seconds_count",
        "standings_query_seconds_count{kind=\"boards\"} 1",
        "standings_events_accepted_total 5",
        "standings_duplicates_total 0",
        "standings_board_members{game=\"arena-clash\",mode=\"solo\",season=\"S7\",scope=\"global\",period=\"all_time\"} 5",
    ] {
        assert!(metrics.contains(name), "missing {name} in\n{metrics}");
    }
    let (status, doc) = service.call(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.1.0");
    // Every documented operation is routed: calling it never hits the not-found fallback.
    for op in standings_origin::http::api::OPERATIONS {
        let path = op
            .path
            .replace("{game}", "arena-clash")
            .replace("{mode}", "solo")
            .replace("{season}", "S7")
            .replace("{scope}", "global")
            .replace("{player_id}", "p-ava");
        let method = Method::from_bytes(op.method.to_uppercase().as_bytes()).unwrap();
        assert!(
            doc["paths"][op.path][op.method].is_object(),
            "{} {}",
            op.method,
            op.path
        );
        let (status, body) = service.call(method, &path, Some(ADMIN), Some(&json!({}))).await;
        assert_ne!(
            body["code"], "NOT_FOUND",
            "{} {} is documented but not routed",
            op.method, op.path
        );
        assert_ne!(
            status,
            StatusCode::METHOD_NOT_ALLOWED,
            "{} {}",
            op.method,
            op.path
        );
    }
}

/// A batch answers per event, in order: accepted, duplicate and rejected side by side, and only
/// the valid ones land.
async fn batch_submissions(db: Db) {
    let service = TestService::start(db).await;
    canonical(&service).await;
    let batch = [
        event("b-1", "p-fay", 9_000, "2026-10-13T10:00:00Z"),
        event("evt-1", "p-ava", 9_800, "2026-10-13T10:00:00Z"),
        event("b-2", "p-\u{7}", 1, "2026-10-13T10:00:00Z"),
        event("evt-2", "p-ben", 1, "2026-10-13T10:00:00Z"),
        event("b-1", "p-fay", 9_000, "2026-10-13T10:00:00Z"),
    ];
    let (status, body) = service.submit_batch(&batch).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let statuses: Vec<(&str, &str)> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["event_id"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("b-1", "ACCEPTED"),
            ("evt-1", "DUPLICATE"),
            ("b-2", "REJECTED"),
            ("evt-2", "REJECTED"),
            ("b-1", "DUPLICATE")
        ]
    );
    assert_eq!(body["results"][2]["code"], "INVALID_EVENT");
    assert_eq!(body["results"][3]["code"], "EVENT_ID_CONFLICT");
    let (_, top) = service.get(&format!("{LB}/top?limit=100")).await;
    assert_eq!(top["total_players"], 6);
    assert_eq!(top["board_version"], 6);
}

/// The writer stores a group without looking its ids up first and rolls it back when the
/// insert meets a stored id: the group is then decided again, so a resubmission hidden among
/// new events is a DUPLICATE (or a conflict) and counts nothing, and the new events count once.
async fn resubmissions_among_new_events_are_found_after_the_insert(db: Db) {
    let service = TestService::start(db).await;
    service.define("arena-clash/solo/S7/coins", "cumulative").await;
    let coins = |id: &str, player: &str, value: i64| {
        let mut e = event(id, player, value, "2026-10-13T10:00:00Z");
        e["scopes"] = json!(["coins"]);
        e
    };
    let statuses = |body: &Value| -> Vec<String> {
        body["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["status"].as_str().unwrap().to_string() + r["code"].as_str().unwrap_or(""))
            .collect()
    };
    assert_eq!(
        service.submit(&coins("c-1", "p-ava", 100)).await.0,
        StatusCode::ACCEPTED
    );
    let (status, body) = service
        .submit_batch(&[
            coins("c-2", "p-ava", 10),
            coins("c-1", "p-ava", 100),
            coins("c-3", "p-ben", 5),
        ])
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(statuses(&body), ["ACCEPTED", "DUPLICATE", "ACCEPTED"]);
    // A group with nothing stored, then a changed resubmission among new events.
    assert_eq!(
        service.submit(&coins("c-4", "p-chloe", 1)).await.0,
        StatusCode::ACCEPTED
    );
    let (_, body) = service
        .submit_batch(&[coins("c-5", "p-ben", 5), coins("c-2", "p-ava", 11)])
        .await;
    assert_eq!(statuses(&body), ["ACCEPTED", "REJECTEDEVENT_ID_CONFLICT"]);
    // And alone, as a single submission.
    assert_eq!(
        service.submit(&coins("c-6", "p-chloe", 1)).await.0,
        StatusCode::ACCEPTED
    );
    let (status, body) = service.submit(&coins("c-3", "p-ben", 5)).await;
    assert_eq!(
        (status, body["status"].clone()),
        (StatusCode::OK, json!("DUPLICATE"))
    );
    let (_, top) = service
        .get("/v1/leaderboards/arena-clash/solo/S7/coins/top")
        .await;
    let totals: Vec<(&str, i64)> = top["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["player_id"].as_str().unwrap(), e["value"].as_i64().unwrap()))
        .collect();
    assert_eq!(totals, [("p-ava", 110), ("p-ben", 10), ("p-chloe", 2)]);
    assert_eq!(top["board_version"], 6, "six events stored, each once");
}

/// Eight clients upload batches of 1,000 on a cumulative board and retry each batch after the
/// next: groups are decided while others commit, and a retried batch meets its stored events
/// after the insert. Every event counts once and every retry is a DUPLICATE.
async fn concurrent_batches_and_their_retries_count_each_event_once(db: Db) {
    let service = Arc::new(TestService::start(db).await);
    service.define("arena-clash/solo/S7/coins", "cumulative").await;
    let batch = |client: usize, b: usize| -> Vec<Value> {
        (0..1_000)
            .map(|k| {
                let mut e = event(
                    &format!("e-{client}-{b}-{k}"),
                    &format!("p-{}", k % 50),
                    1,
                    "2026-10-13T10:00:00Z",
                );
                e["scopes"] = json!(["coins"]);
                e
            })
            .collect()
    };
    let mut tasks = Vec::new();
    for client in 0..8 {
        let service = service.clone();
        tasks.push(tokio::spawn(async move {
            let mut counts = std::collections::BTreeMap::new();
            for b in 0..4 {
                let mut uploads = vec![batch(client, b)];
                if b > 0 {
                    uploads.push(batch(client, b - 1));
                }
                for upload in uploads {
                    let (status, body) = service.submit_batch(&upload).await;
                    assert_eq!(status, StatusCode::OK, "{body}");
                    for result in body["results"].as_array().unwrap() {
                        *counts
                            .entry(result["status"].as_str().unwrap().to_string())
                            .or_insert(0) += 1;
                    }
                }
            }
            counts
        }));
    }
    let mut counts = std::collections::BTreeMap::new();
    for task in tasks {
        for (status, n) in task.await.unwrap() {
            *counts.entry(status).or_insert(0) += n;
        }
    }
    assert_eq!(
        counts,
        [
            ("ACCEPTED".to_string(), 32_000),
            ("DUPLICATE".to_string(), 24_000)
        ]
        .into()
    );
    let (_, top) = service
        .get("/v1/leaderboards/arena-clash/solo/S7/coins/top?limit=100")
        .await;
    assert_eq!(top["total_players"], 50);
    assert_eq!(top["board_version"], 32_000);
    for entry in top["entries"].as_array().unwrap() {
        assert_eq!(entry["value"], 640, "{entry}");
    }
}

/// A batch refuses each malformed event with the code and detail the single-event endpoint
/// gives it, so the batch's typed fast path and the general path agree word for word.
async fn batch_refusals_match_single_submissions(db: Db) {
    let service = TestService::start(db).await;
    service.define(BOARD, "highest").await;
    let good = event("m-0", "p-ok", 5, "2026-10-13T10:00:00Z");
    let with = |field: &str, value: Value| {
        let mut e = good.clone();
        e[field] = value;
        e
    };
    let without = |field: &str| {
        let mut e = good.clone();
        e.as_object_mut().unwrap().remove(field);
        e
    };
    let malformed = [
        with("value", json!(1.5)),
        with("value", json!(u64::MAX)),
        with("value", json!("5")),
        with("unexpected", json!(1)),
        without("value"),
        without("event_id"),
        with("event_id", json!(7)),
        with("player_id", json!("p-\u{7}")),
        with("scopes", json!([])),
        with("scopes", json!(["global", "global"])),
        with("scopes", json!("global")),
        with("scopes", json!(["nowhere"])),
        with("achieved_at", json!("yesterday")),
        with("achieved_at", json!("2999-01-01T00:00:00Z")),
        with("game", json!("other-game")),
        json!("not an object"),
        json!(null),
    ];
    let mut expected = Vec::new();
    for e in &malformed {
        let (status, body) = service.submit(e).await;
        assert!(status.is_client_error(), "{e} answered {status}: {body}");
        expected.push((body["code"].clone(), without_now(&body["detail"])));
    }
    let mut events = malformed.to_vec();
    events.push(good.clone());
    let (status, body) = service.submit_batch(&events).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let results = body["results"].as_array().unwrap();
    for (i, (code, detail)) in expected.iter().enumerate() {
        assert_eq!(results[i]["status"], "REJECTED", "{}", malformed[i]);
        assert_eq!(&results[i]["code"], code, "{}", malformed[i]);
        assert_eq!(&without_now(&results[i]["detail"]), detail, "{}", malformed[i]);
        let id = malformed[i]
            .get("event_id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        assert_eq!(results[i]["event_id"], id, "{}", malformed[i]);
    }
    assert_eq!(results[malformed.len()]["status"], "ACCEPTED");
}

/// Sends `body` as it is (not re-serialized, so it may repeat keys) and returns the status and
/// the parsed answer.
async fn send_text(
    service: &TestService,
    method: Method,
    path: &str,
    token: Option<&str>,
    body: String,
) -> (StatusCode, Value) {
    use axum::body::Body;
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let mut request = axum::http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = service
        .app
        .clone()
        .oneshot(request.body(Body::from(body)).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice::<Value>(&bytes).unwrap())
}

/// The single-event endpoint reads a body of the expected shape straight into its fields and
/// hands anything else to the general path: a repeated key (which the typed read refuses) is
/// 400 `INVALID_JSON` naming it, where it used to be read with the last value winning; text
/// that is not JSON is 400 `INVALID_JSON` whatever the token; and a refusal is the same
/// whichever path read it.
async fn single_submissions_read_either_way_answer_alike(db: Db) {
    let service = TestService::start(db).await;
    service.define(BOARD, "highest").await;
    let raw = |token: Option<&'static str>, body: String| {
        send_text(&service, Method::POST, "/v1/score-events", token, body)
    };
    let fields = r#""player_id": "p-dup", "game": "arena-clash", "mode": "solo", "season": "S7", "value": 70, "achieved_at": "2026-10-13T10:00:00Z""#;
    let (status, body) = raw(
        Some(SERVICE),
        format!(r#"{{"event_id": "dup-a", "event_id": "dup-b", {fields}}}"#),
    )
    .await;
    assert_eq!(
        (status, &body["code"]),
        (StatusCode::BAD_REQUEST, &json!("INVALID_JSON")),
        "{body}"
    );
    assert!(
        body["detail"].as_str().unwrap().contains(r#"key "event_id""#),
        "{body}"
    );
    // Neither id was stored.
    for id in ["dup-b", "dup-a"] {
        let (status, body) = service
            .submit(&event(id, "p-dup", 70, "2026-10-13T10:00:00Z"))
            .await;
        assert_eq!(
            (status, &body["status"]),
            (StatusCode::ACCEPTED, &json!("ACCEPTED")),
            "{body}"
        );
    }

    for token in [None, Some(SERVICE)] {
        let (status, body) = raw(token, "{\"event_id\": ".into()).await;
        assert_eq!(
            (status, &body["code"]),
            (StatusCode::BAD_REQUEST, &json!("INVALID_JSON")),
            "{body}"
        );
    }
    // Valid JSON of the right shape but no token: the typed path asks for the token first,
    // as the general path does.
    let (status, body) = raw(None, format!(r#"{{"event_id": "dup-c", {fields}}}"#)).await;
    assert_eq!(
        (status, &body["code"]),
        (StatusCode::UNAUTHORIZED, &json!("UNAUTHENTICATED")),
        "{body}"
    );
    // A well-formed body with a bad id is refused by the typed path's validation; a body the
    // typed read does not take (an id that is a number) is worded by the general path. Both
    // are 422 `INVALID_EVENT`, and neither is stored.
    let (typed_status, typed) = raw(Some(SERVICE), r#"{"event_id": "dup-d", "player_id": "p-\u0007", "game": "arena-clash", "mode": "solo", "season": "S7", "value": 70, "achieved_at": "2026-10-13T10:00:00Z"}"#.into()).await;
    let (general_status, general) = raw(Some(SERVICE), r#"{"event_id": 5, "player_id": "p-x", "game": "arena-clash", "mode": "solo", "season": "S7", "value": 70, "achieved_at": "2026-10-13T10:00:00Z"}"#.into()).await;
    assert_eq!(
        (typed_status, &typed["code"]),
        (StatusCode::UNPROCESSABLE_ENTITY, &json!("INVALID_EVENT")),
        "{typed}"
    );
    assert_eq!(
        (general_status, &general["code"]),
        (StatusCode::UNPROCESSABLE_ENTITY, &json!("INVALID_EVENT")),
        "{general}"
    );
    let (_, top) = service.get(&format!("{LB}/top?limit=10")).await;
    assert_eq!(top["total_players"], 1, "{top}");
    assert_eq!(top["board_version"], 1, "{top}");
}

/// A body that repeats a member name, at any depth, is 400 `INVALID_JSON` naming the key, on
/// the single-event, batch, board and moderation endpoints; nothing of it is stored, so a
/// proxy that checked the first value never sees the second one applied.
async fn a_repeated_key_is_refused_on_every_endpoint_and_stores_nothing(db: Db) {
    let service = TestService::start(db).await;
    service.define(BOARD, "cumulative").await;
    let fields = r#""player_id": "p-dup", "game": "arena-clash", "mode": "solo", "season": "S7", "achieved_at": "2026-10-13T10:00:00Z""#;
    let ev = |id: &str| format!(r#"{{"event_id": "{id}", "value": 5, {fields}}}"#);
    let cases = [
        (
            Method::POST,
            "/v1/score-events".to_string(),
            format!(r#"{{"event_id": "e-1", "value": 1, "value": 1000000000000, {fields}}}"#),
            "value",
            "$",
        ),
        (
            Method::POST,
            "/v1/score-events".to_string(),
            format!(r#"{{"event_id": "e-2", "event_id": "e-3", "value": 1, {fields}}}"#),
            "event_id",
            "$",
        ),
        (
            Method::POST,
            "/v1/score-events".to_string(),
            format!(r#"{{"event_id": "e-4", "\u0076alue": 1, "value": 2, {fields}}}"#),
            "value",
            "$",
        ),
        (
            Method::POST,
            "/v1/score-events/batch".to_string(),
            format!(r#"{{"events": [], "events": [{}]}}"#, ev("e-5")),
            "events",
            "$",
        ),
        (
            Method::POST,
            "/v1/score-events/batch".to_string(),
            format!(
                r#"{{"events": [{}, {{"event_id": "e-7", "value": 1, "value": 1000000000000, {fields}}}]}}"#,
                ev("e-6")
            ),
            "value",
            "$.events[1]",
        ),
        (
            Method::PUT,
            "/v1/boards/arena-clash/solo/S7/other".to_string(),
            r#"{"score_mode": "highest", "score_mode": "cumulative"}"#.to_string(),
            "score_mode",
            "$",
        ),
        (
            Method::POST,
            "/v1/moderation-actions".to_string(),
            r#"{"moderation_id": "m-1", "action_type": "DISQUALIFY", "reason": "r", "game": "arena-clash", "mode": "solo", "season": "S7", "target_player_id": "p-dup", "target_player_id": "p-other"}"#.to_string(),
            "target_player_id",
            "$",
        ),
    ];
    for (method, path, body, key, place) in cases {
        let (status, answer) = send_text(&service, method, &path, Some(ADMIN), body.clone()).await;
        assert_eq!(
            (status, &answer["code"]),
            (StatusCode::BAD_REQUEST, &json!("INVALID_JSON")),
            "{body}: {answer}"
        );
        let detail = answer["detail"].as_str().unwrap();
        assert!(
            detail.contains(&format!("key {key:?} in the object at {place};")),
            "{body}: {detail}"
        );
    }
    let (_, top) = service.get(&format!("{LB}/top?limit=10")).await;
    assert_eq!(
        (&top["total_players"], &top["board_version"]),
        (&json!(0), &json!(0)),
        "{top}"
    );
    let (status, _) = service
        .get("/v1/leaderboards/arena-clash/solo/S7/other/top")
        .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "the board with a repeated key was not defined"
    );
    let (_, audit) = service
        .call(Method::GET, "/v1/audit?game=arena-clash", Some(ADMIN), None)
        .await;
    assert_eq!(audit["audit"], json!([]), "{audit}");
    // None of the ids was stored: each is new now.
    for id in ["e-1", "e-2", "e-3", "e-4", "e-5", "e-6", "e-7"] {
        let (status, body) = service
            .submit(&event(id, "p-dup", 1, "2026-10-13T10:00:00Z"))
            .await;
        assert_eq!(
            (status, &body["status"]),
            (StatusCode::ACCEPTED, &json!("ACCEPTED")),
            "{id}: {body}"
        );
    }
}

/// A refusal's detail without the service's clock reading, which moves between two requests.
fn without_now(detail: &Value) -> String {
    let detail = detail.as_str().unwrap();
    detail.split(" (now is ").next().unwrap().to_string()
}

/// Two seconds (on the service's clock) after its last write the writer hands memory back:
/// boards whose leaves random inserts left part empty are repacked. Nothing anyone can read
/// changes: the same `board_version`, digest, pages and ranks; and writes go on afterwards.
async fn a_pause_in_writes_repacks_boards_and_changes_no_answer(db: Db) {
    let clock = standings_origin::clock::Clock::manual(standings_origin::clock::now_ms());
    let service = TestService::start_with_clock(TestDb::new(db).await, clock.clone()).await;
    canonical(&service).await;
    for b in 0..5 {
        let events: Vec<Value> = (0..1_000)
            .map(|i| {
                let n = b * 1_000 + i;
                let player = format!("p-{}", (n * 7_919) % 4_999);
                // Values in a scattered order, as real scores arrive: inserts all over the board.
                let value = (n * 2_654_435_761) % 1_000_003;
                let mut e = event(&format!("rest-{n}"), &player, value, "2026-10-13T10:00:00Z");
                e["achieved_at"] = json!(format!("2026-10-13T10:{:02}:00Z", n % 60));
                e
            })
            .collect();
        let (status, body) = service.submit_batch(&events).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let reads = [
        format!("{LB}/digest"),
        format!("{LB}/top?limit=1000"),
        format!("{LB}/players/p-1234/rank"),
        format!("{LB}/players/p-ava/nearby?radius=20"),
    ];
    let mut before = Vec::new();
    for path in &reads {
        before.push(service.get(path).await.1);
    }
    let counter = |metrics: &str, name: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("{name} in {metrics}"))
    };
    // The writer counts its idle time from when it finds nothing to do, which may be after a
    // first advance: the clock moves on until the rest is seen, with a deadline.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let metrics = loop {
        clock.advance(2_000);
        let (_, _, metrics) = service.call_full(Method::GET, "/metrics", None, None).await;
        let metrics = metrics.as_str().unwrap().to_string();
        if counter(&metrics, "standings_boards_repacked_total ") >= 1 {
            break metrics;
        }
        assert!(std::time::Instant::now() < deadline, "no rest: {metrics}");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    assert!(counter(&metrics, "standings_rests_total ") >= 1, "{metrics}");
    assert_eq!(
        counter(&metrics, "standings_boards_repacked_total "),
        1,
        "{metrics}"
    );
    for (path, expected) in reads.iter().zip(&before) {
        assert_eq!(&service.get(path).await.1, expected, "{path}");
    }
    let (status, _) = service
        .submit(&event(
            "after-rest",
            "p-newcomer",
            2_000_000,
            "2026-10-13T10:00:00Z",
        ))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (_, rank) = service.get(&format!("{LB}/players/p-newcomer/rank")).await;
    assert_eq!(rank["rank"], 1);
    assert_eq!(
        rank["board_version"],
        before[0]["board_version"].as_u64().unwrap() + 1
    );
}

/// A replay reads the log in pages the database packs as JSON: ids with quotes, backslashes,
/// commas and characters beyond ASCII, every scope and every field come back exactly, in `seq`
/// order, whatever the page size.
async fn the_log_reads_back_page_by_page_exactly_as_stored(db: Db) {
    let service = TestService::start(db).await;
    service.define(BOARD, "highest").await;
    service.define("arena-clash/solo/S7/coins", "cumulative").await;
    let odd = [
        ("evt-\"quoted\"", "p-\"ava\"", 9_800),
        ("evt\\back\\slash", "p-b\\en", 9_500),
        ("evt,comma", "p-chlöe-\u{1F600}", 100_000_000),
        ("evt-\u{4E2D}\u{6587}", "p-dev/'x'", 0),
        ("evt-plain", "p-eli", 8_700),
    ];
    let events: Vec<Value> = odd
        .iter()
        .enumerate()
        .map(|(i, (id, player, value))| {
            let mut e = event(id, player, *value, &format!("2026-10-13T10:0{i}:00Z"));
            e["scopes"] = json!(["global", "coins"]);
            e
        })
        .collect();
    let (status, body) = service.submit_batch(&events[..3]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for e in &events[3..] {
        assert_eq!(service.submit(e).await.0, StatusCode::ACCEPTED);
    }
    let store = service.state.store();
    let whole = store.events_after(0, 100).await.unwrap();
    assert_eq!(whole.len(), odd.len());
    for (stored, (id, player, value)) in whole.iter().zip(odd) {
        assert_eq!(
            (stored.event_id.as_str(), stored.player_id.as_str(), stored.value),
            (id, player, value)
        );
        assert_eq!(
            (stored.game.as_str(), stored.mode.as_str(), stored.season.as_str()),
            ("arena-clash", "solo", "S7")
        );
        assert_eq!(stored.scopes, ["global", "coins"]);
        assert_eq!(stored.status, standings_origin::domain::EventStatus::Applied);
        assert_eq!(stored.source, "game-server-07");
    }
    assert!(whole.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(
        whole[1].achieved_at - whole[0].achieved_at,
        60_000,
        "achieved_at is stored in ms"
    );
    let mut paged = Vec::new();
    let mut after = 0;
    loop {
        let page = store.events_after(after, 2).await.unwrap();
        let Some(last) = page.last() else { break };
        assert!(page.len() <= 2);
        after = last.seq;
        paged.extend(page);
    }
    assert_eq!(paged, whole);
    assert!(store.events_after(after, 2).await.unwrap().is_empty());
}

/// 64 clients add 2^55 six times each to one player's cumulative total: 255 fit below 2^63
/// and every other one is refused as out of range, though groups are decided while the groups
/// before them commit and wait to be applied, whose totals the board does not show yet.
async fn a_total_that_would_overflow_is_refused_while_earlier_groups_wait_to_be_applied(db: Db) {
    let service = Arc::new(TestService::start(db).await);
    let (status, body) = service
        .call(
            Method::PUT,
            "/v1/boards/arena-clash/solo/S7/global",
            Some(ADMIN),
            Some(&json!({"score_mode": "cumulative", "value_min": 0, "value_max": i64::MAX})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let mut tasks = Vec::new();
    for client in 0..64 {
        let service = service.clone();
        tasks.push(tokio::spawn(async move {
            let mut codes = Vec::new();
            for i in 0..6 {
                let e = event(
                    &format!("e-{client}-{i}"),
                    "p-ava",
                    1 << 55,
                    "2026-10-13T10:00:00Z",
                );
                let (status, body) = service.submit(&e).await;
                codes.push(match status {
                    StatusCode::ACCEPTED => "ACCEPTED".to_string(),
                    _ => body["code"].as_str().unwrap_or("?").to_string(),
                });
            }
            codes
        }));
    }
    let mut counts = std::collections::BTreeMap::new();
    for task in tasks {
        for code in task.await.unwrap() {
            *counts.entry(code).or_insert(0) += 1;
        }
    }
    assert_eq!(
        counts,
        [
            ("ACCEPTED".to_string(), 255),
            ("VALUE_OUT_OF_RANGE".to_string(), 129)
        ]
        .into()
    );
    let (_, rank) = service.get(&format!("{LB}/players/p-ava/rank")).await;
    assert_eq!(rank["value"], 255_i64 << 55, "{rank}");
    assert_eq!(rank["board_version"], 255);
}

on_both_databases!(a_database_that_is_gone_is_answered_503_with_a_code);

/// With the database gone (its connections closed), a submission, a read that reaches the
/// database and an action are answered 503 `DATABASE_UNAVAILABLE`, which clients retry, not
/// 500; what the boards hold is still served.
async fn a_database_that_is_gone_is_answered_503_with_a_code(db: Db) {
    let service = TestService::start(db).await;
    canonical(&service).await;
    service.state.store().close().await;
    let gone = |(status, body): (StatusCode, Value)| {
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert_eq!(body["code"], "DATABASE_UNAVAILABLE", "{body}");
    };
    gone(
        service
            .submit(&event("evt-6", "p-fay", 9_900, "2026-10-13T10:05:00Z"))
            .await,
    );
    gone(
        service
            .submit_batch(&[event("evt-7", "p-gus", 9_000, "2026-10-13T10:06:00Z")])
            .await,
    );
    gone(service.get(&format!("{LB}/friends-of/p-ava")).await);
    gone(
        service
            .call(
                Method::PUT,
                "/v1/seasons/arena-clash/S7/state",
                Some(ADMIN),
                Some(&json!({"state": "frozen"})),
            )
            .await,
    );
    let (status, body) = service.get(&format!("{LB}/players/p-ava/rank")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    service.stop().await;
}

/// Every read of one board instance carries `x-standings-board-version`, the answer's
/// `board_version`, as the edge's answers do (issue 28): top (fresh and from the page cache),
/// rank, nearby, friends-of and the digest.
async fn every_read_of_one_instance_carries_its_board_version(db: Db) {
    let service = TestService::start(db).await;
    canonical(&service).await;
    let (status, _) = service
        .call(
            Method::PUT,
            "/v1/games/arena-clash/players/p-ava/friends",
            Some(SERVICE),
            Some(&json!({"friends": ["p-ben"]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    for path in [
        format!("{LB}/top?limit=3"),
        format!("{LB}/top?limit=3"),
        format!("{LB}/players/p-ava/rank"),
        format!("{LB}/players/p-ava/nearby?radius=1"),
        format!("{LB}/friends-of/p-ava"),
        format!("{LB}/digest"),
    ] {
        let (status, headers, bytes) = service.get_raw(&path, Some(SERVICE), &[]).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            headers["x-standings-board-version"].to_str().unwrap(),
            body["board_version"].to_string(),
            "{path}"
        );
    }
    // A cursor pages the version it was made at: the header names that version, as the body.
    let (_, first) = service.get(&format!("{LB}/top?limit=2")).await;
    let cursor = first["next_cursor"].as_str().unwrap().to_string();
    let (status, _) = service
        .submit(&event("header-later", "p-new", 1, "2026-10-13T10:00:00Z"))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let path = format!("{LB}/top?limit=2&cursor={cursor}");
    for _ in 0..2 {
        let (status, headers, bytes) = service.get_raw(&path, Some(SERVICE), &[]).await;
        assert_eq!(status, StatusCode::OK);
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["board_version"], first["board_version"]);
        assert_eq!(
            headers["x-standings-board-version"].to_str().unwrap(),
            body["board_version"].to_string()
        );
    }
}

/// The read contract's table of bad parameters (`standings_core::contract::query`), fed through
/// the origin's whole read path: every answer is the contract's status, code and words. The
/// edge and the browser package feed the same table, so a tier that drifts fails its tests.
async fn the_contracts_bad_parameters_are_refused_in_its_words(db: Db) {
    let service = TestService::start(db).await;
    canonical(&service).await;
    for (read, query, status, code, detail) in standings_core::contract::query::BAD_PARAMETERS {
        let path = match *read {
            "top" => format!("{LB}/top?{query}"),
            "nearby" => format!("{LB}/players/p-ava/nearby?{query}"),
            "rank" => format!("{LB}/players/p-ava/rank?{query}"),
            "friends" => format!("{LB}/friends-of/p-ava?{query}"),
            other => panic!("no read {other}"),
        };
        let (got, body) = service.get(&path).await;
        assert_eq!(got.as_u16(), *status, "{path}: {body}");
        assert_eq!(
            (body["code"].as_str(), body["detail"].as_str()),
            (Some(*code), Some(*detail)),
            "{path}"
        );
    }
}

/// What a newcomer and an attacker tripped on, each answered plainly (issue 36's defects): a
/// wrong method and an unknown route are problem documents; a JSON array sent as one event says
/// where several go; the `Bearer` scheme is read in any case; a `game` given twice in a query is
/// refused rather than read one way by one layer and the other way by another; a player reading
/// another's profile hears about profiles; an edge token never reads an anonymous player's name
/// or country from the profile.
#[tokio::test]
async fn what_a_newcomer_and_an_attacker_trip_on_is_answered_plainly() {
    let db = TestDb::new(Db::Sqlite).await;
    let mut config = config(&db.url);
    config.tokens.push(standings_origin::config::TokenConfig {
        name: "arena-edge".into(),
        secret: "arena-edge-secret-00000000000".into(),
        role: standings_origin::config::Role::Edge,
        games: vec!["*".into()],
        player_id: None,
        rate_limit_per_second: None,
    });
    let service = TestService::start_with_config(db, &config, standings_origin::clock::Clock::System).await;
    service.define(BOARD, "highest").await;

    let (status, content_type, body) = service
        .call_full(Method::POST, &format!("/v1/boards/{BOARD}"), Some(ADMIN), None)
        .await;
    assert_eq!(
        (status, content_type.as_str(), body["code"].as_str()),
        (
            StatusCode::METHOD_NOT_ALLOWED,
            "application/problem+json",
            Some("METHOD_NOT_ALLOWED")
        )
    );
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .starts_with("POST is not allowed on /v1/boards/"),
        "{body}"
    );
    let (_, headers, _) = service.get_raw("/v1/score-events", Some(SERVICE), &[]).await;
    assert_eq!(headers.get("allow").map(|v| v.to_str().unwrap()), Some("POST"));
    let (status, content_type, body) = service
        .call_full(Method::GET, "/v1/nothing-here", None, None)
        .await;
    assert_eq!(
        (status, content_type.as_str(), body["code"].as_str()),
        (
            StatusCode::NOT_FOUND,
            "application/problem+json",
            Some("NOT_FOUND")
        )
    );

    let one = event("evt-1", "p-ava", 10, "2026-10-13T10:00:00Z");
    let (status, body) = service
        .call(
            Method::POST,
            "/v1/score-events",
            Some(SERVICE),
            Some(&json!([one])),
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("INVALID_EVENT"))
    );
    assert_eq!(
        body["detail"],
        "an event is one JSON object, not an array; send several events as {\"events\": [...]} to POST /v1/score-events/batch"
    );

    for scheme in ["bearer", "BEARER", "Bearer"] {
        let (status, _, _) = service
            .get_raw(
                &format!("{LB}/top"),
                None,
                &[("authorization", &format!("{scheme} {SERVICE}"))],
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{scheme}");
    }

    let (status, body) = service
        .call(
            Method::GET,
            "/v1/audit?game=other-game&game=arena-clash",
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("INVALID_REQUEST"))
    );
    assert_eq!(
        body["detail"],
        "the query parameter \"game\" is given more than once; give it once"
    );

    let profile = "/v1/games/arena-clash/players/p-ben/profile";
    let (status, _) = service
        .call(
            Method::PUT,
            profile,
            Some(SERVICE),
            Some(&json!({"display_name": "Ben", "country": "DE", "anonymous": true})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = service.call(Method::GET, profile, Some(PLAYER), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        body["detail"],
        "a player token reads only its own player's profile, not \"p-ben\"'s"
    );
    let (status, body) = service
        .call(Method::GET, profile, Some("arena-edge-secret-00000000000"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({"anonymous": true, "game": "arena-clash", "name_locked": false, "player_id": "p-ben"})
    );
    let (_, body) = service.call(Method::GET, profile, Some(SERVICE), None).await;
    assert_eq!(
        (body["display_name"].as_str(), body["country"].as_str()),
        (Some("Ben"), Some("DE"))
    );
}

/// The browser example of docs/live.md, pasted as written (with a player JWT where it says
/// `jwt`), subscribes: its path is the board's, not one that answers 404.
#[tokio::test]
async fn the_browser_example_of_the_live_docs_subscribes() {
    use axum::body::Body;
    use tower::ServiceExt;
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/live.md")).unwrap();
    let line = docs
        .lines()
        .find(|l| l.trim_start().starts_with("const url = `"))
        .expect("the browser example's URL");
    let url = line.split('`').nth(1).unwrap();
    let jwt = player_jwt("p-ava", &["arena-clash"]);
    let url = url.replace("${encodeURIComponent(jwt)}", &jwt);
    assert!(!url.contains("${"), "{url}");
    let service = TestService::start(Db::Sqlite).await;
    let (status, body) = service
        .call(
            Method::PUT,
            "/v1/boards/arena-clash/ranked/s1/global",
            Some(ADMIN),
            Some(&json!({"score_mode": "highest", "periods": ["all_time", "daily"]})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let request = axum::http::Request::builder()
        .uri(&url)
        .body(Body::empty())
        .unwrap();
    let response = service.app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK, "{url}");
    assert_eq!(
        response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap()),
        Some("text/event-stream"),
        "{url}"
    );
}

/// The moderation request of docs/players.md, sent as written after the player's profile was
/// set, answers exactly the line the page shows.
#[tokio::test]
async fn the_moderation_example_of_the_players_docs_answers_as_shown() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/players.md")).unwrap();
    let section = &docs[docs.find("## Moderated names").unwrap()..];
    let body = section.split("-d '").nth(1).unwrap().split('\'').next().unwrap();
    let shown = section
        .lines()
        .find_map(|l| l.strip_prefix("# {"))
        .map(|rest| format!("{{{rest}"))
        .unwrap();
    let service = TestService::start(Db::Sqlite).await;
    let (status, _) = service
        .call(
            Method::PUT,
            "/v1/games/arena-clash/players/p-ava/profile",
            Some(SERVICE),
            Some(&json!({"display_name": "Ava"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, answer) = service
        .call_raw(Method::POST, "/v1/moderation-actions", Some(ADMIN), body)
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer, serde_json::from_str::<Value>(&shown).unwrap(), "{body}");
}

/// `approximate=interval` answers the usual entry with `rank` null and a `rank_interval` that
/// holds the exact rank, at most a step of the board's sketch wide; an exact answer never
/// carries `approximate`.
#[tokio::test]
async fn a_rank_interval_holds_the_exact_rank_and_says_it_is_approximate() {
    let service = TestService::start(Db::Sqlite).await;
    service.define(BOARD, "highest").await;
    let players = 12_000;
    for first in (0..players).step_by(1_000) {
        let events: Vec<Value> = (first..first + 1_000)
            .map(|p| {
                let at = format!("2026-10-13T10:{:02}:00Z", p % 3);
                event(&format!("iv-{p}"), &format!("p-{p:05}"), (p % 40) as i64, &at)
            })
            .collect();
        let (status, body) = service.submit_batch(&events).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let step = standings_core::interval::step(players as u64);
    for p in (0..players).step_by(7) {
        let path = format!("{LB}/players/p-{p:05}/rank");
        let (_, exact) = service.get(&path).await;
        let (status, found) = service.get(&format!("{path}?approximate=interval")).await;
        assert_eq!(status, StatusCode::OK, "{found}");
        let rank = exact["rank"].as_u64().unwrap();
        let (low, high) = (
            found["rank_interval"]["low"].as_u64().unwrap(),
            found["rank_interval"]["high"].as_u64().unwrap(),
        );
        assert!(
            (low..=high).contains(&rank) && high - low < step,
            "{rank}: {found}"
        );
        assert_eq!(
            (&found["rank"], &found["approximate"]),
            (&Value::Null, &json!(true))
        );
        assert_eq!(found["competition_rank"], Value::Null);
        for same in [
            "board_version",
            "player_id",
            "value",
            "achieved_at",
            "total_players",
        ] {
            assert_eq!(found[same], exact[same], "{same}");
        }
        assert!(exact.get("approximate").is_none() && exact.get("rank_interval").is_none());
    }
    let (status, body) = service
        .get(&format!("{LB}/players/nobody/rank?approximate=interval"))
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("PLAYER_NOT_RANKED"))
    );
    service.stop().await;
}

on_both_databases!(a_split_board_answers_as_a_whole_one);

/// A board split into score-range shards (`"shards": 4`) answers every read byte for byte as a
/// whole board fed the same events: after invalidations and a disqualification, and after
/// restarts (from a checkpoint, the tree cut into its shards as it is decoded; then again). The board list and `/metrics` show the
/// shards; a count out of range is refused.
async fn a_split_board_answers_as_a_whole_one(db: Db) {
    let db = TestDb::new(db).await;
    let mut config = config(&db.url);
    // Checkpoints while the events land, so that a restart decodes the split board from one.
    config.checkpoint_every_events = 1_000;
    let clock = standings_origin::clock::Clock::System;
    let service = TestService::start_with_config(db, &config, clock.clone()).await;
    let (status, refused) = service
        .call(
            Method::PUT,
            "/v1/boards/arena-clash/solo/S7/many",
            Some(ADMIN),
            Some(&json!({"score_mode": "highest", "shards": 65})),
        )
        .await;
    assert_eq!(
        (status, refused["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("INVALID_BOARD")),
        "{refused}"
    );
    assert_eq!(
        refused["detail"],
        "shards 65 must be from 1 (a whole board) to 64"
    );
    service
        .define_scope("whole", &json!({"score_mode": "highest"}))
        .await;
    service
        .define_scope("split", &json!({"score_mode": "highest", "shards": 4}))
        .await;
    let players = 2_000;
    for batch in 0..4 {
        let events: Vec<Value> = (0..1_000)
            .map(|i| {
                let n = batch * 1_000 + i;
                let at = format!("2026-10-13T10:{:02}:{:02}Z", n % 60, n % 7);
                let mut e = event(
                    &format!("sp-{n}"),
                    &format!("p-{}", n % players),
                    ((n * 7919) % 300) as i64,
                    &at,
                );
                e["scopes"] = json!(["whole", "split"]);
                e
            })
            .collect();
        let (status, body) = service.submit_batch(&events).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let results = body["results"].as_array().unwrap();
        assert!(
            results.iter().all(|r| r["status"] == "ACCEPTED"),
            "{}",
            results[0]
        );
    }
    let disqualify = |scope: &str| {
        json!({"moderation_id": format!("sp-dq-{scope}"), "action_type": "DISQUALIFY", "reason": "cheat",
               "game": "arena-clash", "mode": "solo", "season": "S7", "scope": scope, "target_player_id": "p-5"})
    };
    let invalidate = |id: &str, target: &str| {
        json!({"moderation_id": id, "action_type": "INVALIDATE", "reason": "cheat",
               "game": "arena-clash", "target_event_id": target})
    };
    let actions = [
        invalidate("sp-m1", "sp-17"),
        invalidate("sp-m2", "sp-1017"),
        disqualify("whole"),
        disqualify("split"),
    ];
    for action in &actions {
        let (status, body) = service
            .call(
                Method::POST,
                "/v1/moderation-actions",
                Some(MODERATOR),
                Some(action),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let service = same_answers(service, players).await;
    for _ in 0..1_000 {
        if service.state.store().checkpoint_head().await.unwrap().is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let db = service.stop().await;
    let service = TestService::start_with_config(db, &config, clock).await;
    assert!(
        matches!(
            service.state.restored(),
            standings_origin::writer::checkpoint::Restored::Checkpoint { .. }
        ),
        "the restart decoded a checkpoint"
    );
    let service = same_answers(service, players).await;
    let db = service.stop().await;
    let service = same_answers(TestService::start_on(db).await, players).await;
    service.stop().await;
}

/// Every read of the split board equals the whole board's, and the split board shows 4 shards.
async fn same_answers(service: TestService, players: u64) -> TestService {
    let board = |scope: &str| format!("/v1/leaderboards/arena-clash/solo/S7/{scope}");
    let (whole, split) = (board("whole"), board("split"));
    let mut reads = vec!["/top?limit=1000".to_string(), "/digest".to_string()];
    for p in (0..players).step_by(37).chain([5, 17]) {
        reads.push(format!("/players/p-{p}/rank"));
        reads.push(format!("/players/p-{p}/rank?approximate=interval"));
        reads.push(format!("/players/p-{p}/nearby?radius=12"));
    }
    for read in &reads {
        let (mut a, mut b) = (
            service.get(&format!("{whole}{read}")).await,
            service.get(&format!("{split}{read}")).await,
        );
        // A cursor and a refusal's words name their board: what differs by design.
        for answer in [&mut a.1, &mut b.1] {
            if let Some(fields) = answer.as_object_mut() {
                fields.remove("next_cursor");
                fields.remove("detail");
            }
        }
        assert!(
            a == b,
            "{read}: {} against {}",
            a.1.to_string().len(),
            b.1.to_string().len()
        );
    }
    let (_, list) = service.get("/v1/games/arena-clash/boards").await;
    let listed = list["boards"].as_array().unwrap();
    let split_board = listed.iter().find(|b| b["scope"] == "split").unwrap();
    let shards: Vec<u64> = split_board["shard_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(
        (split_board["shards"].as_i64(), shards.len()),
        (Some(4), 4),
        "{split_board}"
    );
    assert_eq!(
        shards.iter().sum::<u64>(),
        split_board["total_players"].as_u64().unwrap()
    );
    assert!(shards.iter().all(|&n| n > 0), "{shards:?}");
    let whole_board = listed.iter().find(|b| b["scope"] == "whole").unwrap();
    assert!(whole_board.get("shard_members").is_none() && whole_board["shards"] == 1);
    let (_, _, metrics) = service.call_full(Method::GET, "/metrics", None, None).await;
    let metrics = metrics.as_str().unwrap_or_default().to_string();
    assert!(
        metrics.contains(r#"standings_board_shard_members{game="arena-clash",mode="solo",season="S7",scope="split",period="all_time",shard="3"}"#),
        "{metrics}"
    );
    service
}
