//! Segments (issue 41, `docs/segments.md`) through the real router on SQLite and PostgreSQL:
//! every read kind within `country:XX` against a model (the whole board, filtered to the
//! segment's members and ranked within), through events, country and anonymity changes,
//! renames, invalidations, and a restart; and every refusal with its code.

mod common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{Value, json};

const BOARD: &str = "/v1/boards/arena-clash/solo/S7/global";
const LB: &str = "/v1/leaderboards/arena-clash/solo/S7/global";
const COUNTRIES: [&str; 3] = ["DE", "FR", "JP"];
const PLAYERS: usize = 30;

on_both_databases!(
    segment_reads_match_the_board_filtered_through_changes_and_a_restart,
    segment_refusals_answer_their_codes,
);

fn player(i: usize) -> String {
    format!("p{i:02}")
}

async fn define(service: &TestService, body: Value) -> (StatusCode, Value) {
    service.call(Method::PUT, BOARD, Some(ADMIN), Some(&body)).await
}

async fn put_profile(service: &TestService, player: &str, body: Value) {
    let (status, answer) = service
        .call(
            Method::PUT,
            &format!("/v1/games/arena-clash/players/{player}/profile"),
            Some(SERVICE),
            Some(&body),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}: {answer}");
}

async fn get_ok(service: &TestService, path: &str) -> Value {
    let (status, answer) = service.call(Method::GET, path, Some(SERVICE), None).await;
    assert_eq!(status, StatusCode::OK, "{path}: {answer}");
    answer
}

/// The model of one segment: the whole board as the service token reads it, filtered to the
/// entries showing `country` and not anonymous, with their board-wide ranks.
fn model(board: &Value, country: &str) -> Vec<Value> {
    board["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["country"] == country && e.get("anonymous").is_none())
        .cloned()
        .collect()
}

/// Every read kind within each country segment, against the model; answers how many players
/// the segments hold.
async fn check(service: &TestService) -> usize {
    let board = get_ok(service, &format!("{LB}/top?limit=1000")).await;
    let mut held = 0;
    let version = board["board_version"].clone();
    for country in COUNTRIES {
        let members = model(&board, country);
        held += members.len();
        let segment = format!("segment=country:{country}");
        // Top, paged by fours with the cursor.
        let mut seen = Vec::new();
        let mut path = format!("{LB}/top?limit=4&{segment}");
        loop {
            let page = get_ok(service, &path).await;
            assert_eq!(page["board_version"], version, "{page}");
            assert_eq!(page["segment"], format!("country:{country}"));
            assert_eq!(page["total_players"], members.len(), "{page}");
            seen.extend(page["entries"].as_array().unwrap().iter().cloned());
            match page["next_cursor"].as_str() {
                Some(cursor) => path = format!("{LB}/top?limit=4&{segment}&cursor={cursor}"),
                None => break,
            }
        }
        assert_eq!(seen.len(), members.len(), "top of {country}");
        for (i, (got, want)) in seen.iter().zip(&members).enumerate() {
            let mut expected = want.clone();
            expected["rank"] = json!(i + 1);
            expected["global_rank"] = want["rank"].clone();
            assert_eq!(got, &expected, "top of {country} at {i}");
        }
        // Rank and nearby for every player, in the segment or not.
        for p in 0..PLAYERS {
            let id = player(p);
            let at = members.iter().position(|e| e["player_id"] == id.as_str());
            let (status, rank) = service
                .call(
                    Method::GET,
                    &format!("{LB}/players/{id}/rank?{segment}"),
                    Some(SERVICE),
                    None,
                )
                .await;
            let Some(i) = at else {
                assert_eq!(status, StatusCode::NOT_FOUND, "{id} is not in {country}: {rank}");
                assert_eq!(rank["code"], "PLAYER_NOT_RANKED");
                continue;
            };
            assert_eq!(status, StatusCode::OK, "{rank}");
            assert_eq!(rank["rank"], i + 1, "{rank}");
            assert_eq!(rank["global_rank"], members[i]["rank"], "{rank}");
            assert_eq!(rank["total_players"], members.len());
            assert_eq!(rank["value"], members[i]["value"]);
            let better = members
                .iter()
                .filter(|e| e["value"].as_i64() > members[i]["value"].as_i64())
                .count();
            assert_eq!(rank["competition_rank"], better + 1, "{rank}");
            let nearby = get_ok(service, &format!("{LB}/players/{id}/nearby?radius=2&{segment}")).await;
            let window: Vec<Value> = members
                .iter()
                .enumerate()
                .skip(i.saturating_sub(2))
                .take(i + 3 - i.saturating_sub(2))
                .map(|(j, e)| {
                    let mut e = e.clone();
                    e["global_rank"] = e["rank"].clone();
                    e["rank"] = json!(j + 1);
                    e
                })
                .collect();
            assert_eq!(nearby["entries"], json!(window), "nearby {id} in {country}");
        }
        // Rank-players: the first half of the players, those in the segment among themselves.
        let asked: Vec<String> = (0..PLAYERS / 2).map(player).collect();
        let (status, among) = service
            .call(
                Method::POST,
                &format!("{LB}/rank-players?{segment}"),
                Some(SERVICE),
                Some(&json!({ "player_ids": asked })),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{among}");
        let expected: Vec<(Value, usize, Value)> = members
            .iter()
            .enumerate()
            .filter(|(_, e)| asked.iter().any(|a| e["player_id"] == a.as_str()))
            .map(|(j, e)| (e["player_id"].clone(), j + 1, e["rank"].clone()))
            .collect();
        let got: Vec<(Value, usize, Value)> = among["entries"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, e)| {
                assert_eq!(e["rank"], i + 1);
                (
                    e["player_id"].clone(),
                    e["segment_rank"].as_u64().unwrap() as usize,
                    e["global_rank"].clone(),
                )
            })
            .collect();
        assert_eq!(got, expected, "rank-players in {country}");
        assert_eq!(
            got.len() + among["unranked"].as_array().unwrap().len(),
            asked.len()
        );
    }
    held
}

/// A deterministic sequence of changes: events, profiles with countries, anonymity, renames,
/// and invalidations; the segments answer as the model after each round and after a restart.
async fn segment_reads_match_the_board_filtered_through_changes_and_a_restart(db: Db) {
    let mut service = TestService::start(db).await;
    let (status, answer) = define(
        &service,
        json!({"score_mode": "highest", "segments": {"country": "profile"}}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["segments"], json!({"country": "profile"}));
    let mut seed: u64 = 41;
    let mut next = |n: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % n
    };
    let mut events = 0;
    let mut profiles: std::collections::HashMap<String, Value> = std::collections::HashMap::new();
    // Most players start with a country; the last few have none.
    for i in 0..PLAYERS - 6 {
        let held = json!({"country": COUNTRIES[i % 3]});
        put_profile(&service, &player(i), held.clone()).await;
        profiles.insert(player(i), held);
    }
    for round in 0..4 {
        for _ in 0..40 {
            let p = player(next(PLAYERS as u64) as usize);
            // A profile is put whole: the country, anonymity or name changes, the rest stays.
            let held = profiles.entry(p.clone()).or_insert_with(|| json!({}));
            match next(6) {
                0 => {
                    held["country"] = json!(COUNTRIES[next(3) as usize]);
                    put_profile(&service, &p, held.clone()).await;
                }
                1 => {
                    held["anonymous"] = json!(next(3) == 0);
                    put_profile(&service, &p, held.clone()).await;
                }
                2 => {
                    held["display_name"] = json!(format!("Name {}", next(100)));
                    put_profile(&service, &p, held.clone()).await;
                }
                _ => {
                    events += 1;
                    let at = format!("2026-10-13T10:{:02}:00Z", next(60));
                    let (status, body) = service
                        .submit(&event(&format!("e{events}"), &p, next(50) as i64, &at))
                        .await;
                    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
                }
            }
        }
        // One invalidation a round: a player leaves or drops in every segment they are in.
        let target = format!("e{}", 1 + next(events));
        let (status, answer) = service
            .call(
                Method::POST,
                "/v1/moderation-actions",
                Some(MODERATOR),
                Some(
                    &json!({"moderation_id": format!("inv-{round}"), "action_type": "INVALIDATE",
                             "reason": "segment test", "game": "arena-clash", "target_event_id": target}),
                ),
            )
            .await;
        assert!(status.is_success() || status == StatusCode::CONFLICT, "{answer}");
        let held = check(&service).await;
        assert!(round == 0 || held > 8, "the segments hold players: {held}");
    }
    // A restart without a checkpoint rebuilds the segments from the log.
    let before = get_ok(&service, &format!("{LB}/top?limit=1000&segment=country:DE")).await;
    let db = service.stop().await;
    service = TestService::start_on(db).await;
    let after = get_ok(&service, &format!("{LB}/top?limit=1000&segment=country:DE")).await;
    assert_eq!(before, after);
    let boards = get_ok(&service, "/v1/games/arena-clash/boards").await;
    assert_eq!(
        boards["boards"][0]["segments"],
        json!({"country": "profile"}),
        "{boards}"
    );
    check(&service).await;
}

/// Each refusal answers its code and words; nothing is defined by a refused definition.
async fn segment_refusals_answer_their_codes(db: Db) {
    let service = TestService::start(db).await;
    for (body, words) in [
        (
            json!({"score_mode": "highest", "segments": {"platform": ["ios", "pc"]}}),
            "not a dimension",
        ),
        (
            json!({"score_mode": "highest", "segments": {"country": "event"}}),
            "\"profile\"",
        ),
        (
            json!({"score_mode": "highest", "segments": ["country"]}),
            "bad board definition",
        ),
    ] {
        let (status, answer) = define(&service, body.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {answer}");
        assert_eq!(answer["code"], "INVALID_BOARD");
        assert!(answer["detail"].as_str().unwrap().contains(words), "{answer}");
    }
    let (status, _) = define(&service, json!({"score_mode": "highest"})).await;
    assert_eq!(status, StatusCode::CREATED);
    // The same board with segments is another definition: a conflict that names both.
    let (status, answer) = define(
        &service,
        json!({"score_mode": "highest", "segments": {"country": "profile"}}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert!(
        answer["detail"].as_str().unwrap().contains("segments {}"),
        "{answer}"
    );
    let (status, body) = service
        .submit(&event("e1", "p1", 5, "2026-10-13T10:00:00Z"))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    for (query, words) in [
        ("segment=country:DE", "ranks no segments by \"country\""),
        ("segment=DE", "expected dimension:value"),
    ] {
        let (status, answer) = service
            .call(Method::GET, &format!("{LB}/top?{query}"), Some(SERVICE), None)
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {answer}");
        assert_eq!(answer["code"], "INVALID_REQUEST");
        assert!(answer["detail"].as_str().unwrap().contains(words), "{answer}");
    }
    let seg = "/v1/boards/arena-clash/solo/S7/by-country";
    let (status, answer) = service
        .call(
            Method::PUT,
            seg,
            Some(ADMIN),
            Some(&json!({"score_mode": "highest", "segments": {"country": "profile"}})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let lb = "/v1/leaderboards/arena-clash/solo/S7/by-country";
    for (path, words) in [
        (format!("{lb}/top?segment=country:de"), "two capital letters"),
        (
            format!("{lb}/top?segment=platform:ios"),
            "ranks no segments by \"platform\"",
        ),
        (
            format!("{lb}/players/p1/rank?segment=country:DE&approximate=interval"),
            "not answered within a segment",
        ),
    ] {
        let (status, answer) = service.call(Method::GET, &path, Some(SERVICE), None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {answer}");
        assert!(answer["detail"].as_str().unwrap().contains(words), "{answer}");
    }
    // An empty segment is an empty answer, not an error.
    let empty = get_ok(&service, &format!("{lb}/top?segment=country:JP")).await;
    assert_eq!(empty["total_players"], 0);
    assert_eq!(empty["entries"], json!([]));
}
