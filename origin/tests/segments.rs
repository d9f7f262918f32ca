//! Segments (issue 41, `docs/segments.md`) through the real router on SQLite and PostgreSQL:
//! every read kind within `country:XX` and `platform:YY` against a model (the whole board,
//! filtered to the segment's members and ranked within), through events carrying platforms,
//! country and anonymity changes, renames, invalidations, a restart and a restart from a
//! checkpoint; and every refusal with its code.

mod common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{Value, json};

const BOARD: &str = "/v1/boards/arena-clash/solo/S7/global";
const LB: &str = "/v1/leaderboards/arena-clash/solo/S7/global";
const COUNTRIES: [&str; 3] = ["DE", "FR", "JP"];
const PLATFORMS: [&str; 3] = ["ios", "android", "pc"];
const PLAYERS: usize = 30;

/// Each player's valid events: id, value, minute achieved, platform.
type Events = std::collections::HashMap<String, Vec<(String, i64, u64, Option<&'static str>)>>;

/// The platform of the event behind a `highest` standing, as `docs/segments.md` states: the
/// best value, then the earliest time, then one carrying values over one without, then the
/// lowest event id.
fn platform_behind(events: &[(String, i64, u64, Option<&'static str>)]) -> Option<&'static str> {
    events
        .iter()
        .min_by(|a, b| {
            b.1.cmp(&a.1)
                .then(a.2.cmp(&b.2))
                .then(b.3.is_some().cmp(&a.3.is_some()))
                .then(a.0.cmp(&b.0))
        })
        .and_then(|e| e.3)
}

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
/// entries showing `country` and not anonymous, or to those whose event behind their standing
/// carried `platform` (anonymous or not), with their board-wide ranks.
fn model(board: &Value, dimension: &str, value: &str, events: &Events) -> Vec<Value> {
    board["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| match dimension {
            "country" => e["country"] == value && e.get("anonymous").is_none(),
            _ => platform_behind(&events[e["player_id"].as_str().unwrap()]) == Some(value),
        })
        .cloned()
        .collect()
}

/// Every read kind within each country and platform segment, against the model; answers how
/// many players the segments hold.
async fn check(service: &TestService, events: &Events) -> usize {
    let board = get_ok(service, &format!("{LB}/top?limit=1000")).await;
    let mut held = 0;
    let version = board["board_version"].clone();
    let segments = COUNTRIES
        .iter()
        .map(|c| ("country", *c))
        .chain(PLATFORMS.iter().map(|p| ("platform", *p)));
    for (dimension, country) in segments {
        let members = model(&board, dimension, country, events);
        held += members.len();
        let segment = format!("segment={dimension}:{country}");
        // Top, paged by fours with the cursor.
        let mut seen = Vec::new();
        let mut path = format!("{LB}/top?limit=4&{segment}");
        loop {
            let page = get_ok(service, &path).await;
            assert_eq!(page["board_version"], version, "{page}");
            assert_eq!(page["segment"], format!("{dimension}:{country}"));
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
    let segments = json!({"country": "profile", "platform": PLATFORMS});
    let (status, answer) = define(&service, json!({"score_mode": "highest", "segments": segments})).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["segments"], segments);
    let mut seed: u64 = 41;
    let mut next = |n: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % n
    };
    let mut events = 0;
    let mut valid = Events::new();
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
                    let (id, value, minute) = (format!("e{events}"), next(50) as i64, next(60));
                    // Few values and minutes, so that ties between events are common.
                    let platform = PLATFORMS.get(next(4) as usize).copied();
                    let mut sent = event(&id, &p, value, &format!("2026-10-13T10:{minute:02}:00Z"));
                    if let Some(platform) = platform {
                        sent["segments"] = json!({ "platform": platform });
                    }
                    let (status, body) = service.submit(&sent).await;
                    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
                    valid
                        .entry(p.clone())
                        .or_default()
                        .push((id, value, minute, platform));
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
        if status.is_success() {
            for held in valid.values_mut() {
                held.retain(|e| e.0 != target);
            }
        }
        let held = check(&service, &valid).await;
        assert!(round == 0 || held > 8, "the segments hold players: {held}");
    }
    // A page's cursor goes on at the version it was made at, however the board moved since:
    // the same pages as reading them all before the moves.
    let first = get_ok(&service, &format!("{LB}/top?limit=3&segment=platform:pc")).await;
    let whole = get_ok(&service, &format!("{LB}/top?limit=1000&segment=platform:pc")).await;
    for i in 0..6 {
        let mut sent = event(
            &format!("late-{i}"),
            &player(i),
            45 + i as i64,
            "2026-10-13T11:00:00Z",
        );
        sent["segments"] = json!({"platform": PLATFORMS[i % 3]});
        let (status, body) = service.submit(&sent).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        valid.entry(player(i)).or_default().push((
            format!("late-{i}"),
            45 + i as i64,
            60,
            Some(PLATFORMS[i % 3]),
        ));
    }
    let cursor = first["next_cursor"].as_str().expect("more than one page");
    let (status, second) = service
        .call(
            Method::GET,
            &format!("{LB}/top?limit=1000&segment=platform:pc&cursor={cursor}"),
            Some(SERVICE),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(second["board_version"], whole["board_version"], "{second}");
    assert_eq!(
        second["entries"].as_array().unwrap()[..],
        whole["entries"].as_array().unwrap()[3..]
    );
    assert_eq!(second["total_players"], whole["total_players"]);
    // A restart without a checkpoint rebuilds the segments from the log.
    let before = get_ok(&service, &format!("{LB}/top?limit=1000&segment=country:DE")).await;
    let ios = get_ok(&service, &format!("{LB}/top?limit=1000&segment=platform:ios")).await;
    let db = service.stop().await;
    service = TestService::start_on(db).await;
    let after = get_ok(&service, &format!("{LB}/top?limit=1000&segment=country:DE")).await;
    assert_eq!(before, after);
    assert_eq!(
        ios,
        get_ok(&service, &format!("{LB}/top?limit=1000&segment=platform:ios")).await
    );
    let boards = get_ok(&service, "/v1/games/arena-clash/boards").await;
    assert_eq!(boards["boards"][0]["segments"], segments, "{boards}");
    check(&service, &valid).await;
    // A start from a checkpoint reads each entry's platform back from it.
    service
        .state
        .ingest()
        .checkpoint()
        .await
        .unwrap()
        .expect("a checkpoint is written");
    let db = service.stop().await;
    service = TestService::start_on(db).await;
    assert_eq!(
        ios,
        get_ok(&service, &format!("{LB}/top?limit=1000&segment=platform:ios")).await
    );
    check(&service, &valid).await;
}

/// Each refusal answers its code and words; nothing is defined by a refused definition.
async fn segment_refusals_answer_their_codes(db: Db) {
    let service = TestService::start(db).await;
    for (body, words) in [
        (
            json!({"score_mode": "highest", "segments": {"platform": "ios"}}),
            "listing its values",
        ),
        (
            json!({"score_mode": "highest", "segments": {"platform": []}}),
            "1 to 32",
        ),
        (
            json!({"score_mode": "highest", "segments": {"platform": ["ios", "ios"]}}),
            "twice",
        ),
        (
            json!({"score_mode": "highest", "segments": {"platform": ["i os"]}}),
            "not a valid value",
        ),
        (
            json!({"score_mode": "highest", "segments": {"Platform": ["ios"]}}),
            "lowercase letter",
        ),
        (
            json!({"score_mode": "highest", "segments":
                {"a": ["x"], "b": ["x"], "c": ["x"], "d": ["x"], "e": ["x"]}}),
            "at most 4",
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
            Some(
                &json!({"score_mode": "highest", "segments": {"country": "profile", "platform": PLATFORMS}}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    // An event's values: each dimension declared by one of its boards, each value by every
    // board declaring it; refused whole, with words, and nothing stored.
    for (segments, words) in [
        (json!({"platform": "switch"}), "declares ios, android, pc"),
        (json!({"region": "eu"}), "none of the event's boards declares"),
        (json!({"country": "DE"}), "from their profile"),
        (json!({"platform": 3}), "invalid type"),
    ] {
        let mut sent = event("e-bad", "p1", 5, "2026-10-13T10:00:00Z");
        sent["scopes"] = json!(["global", "by-country"]);
        sent["segments"] = segments.clone();
        let (status, answer) = service.submit(&sent).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{segments}: {answer}");
        assert_eq!(answer["code"], "INVALID_EVENT", "{answer}");
        assert!(answer["detail"].as_str().unwrap().contains(words), "{answer}");
    }
    // Carried to one board that declares it and one that does not: accepted, and a retry
    // with another platform is a conflict, not a duplicate.
    let mut sent = event("e-ios", "p2", 5, "2026-10-13T10:00:00Z");
    sent["scopes"] = json!(["global", "by-country"]);
    sent["segments"] = json!({"platform": "ios"});
    let (status, answer) = service.submit(&sent).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let (status, answer) = service.submit(&sent).await;
    assert_eq!(status, StatusCode::OK, "a retry: {answer}");
    sent["segments"] = json!({"platform": "pc"});
    let (status, answer) = service.submit(&sent).await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    let lb = "/v1/leaderboards/arena-clash/solo/S7/by-country";
    for (path, words) in [
        (format!("{lb}/top?segment=country:de"), "two capital letters"),
        (
            format!("{LB}/top?segment=platform:ios"),
            "ranks no segments by \"platform\"",
        ),
        (
            format!("{lb}/top?segment=platform:switch"),
            "platform is one of ios, android, pc",
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
