//! The feed (issue 41, `docs/feed.md`) through the real router on SQLite and PostgreSQL: its
//! records against a model of the same events (the board read whole before and after each
//! one: every band crossing, every overtake of a player by someone on their friend list,
//! nothing extra), paging, a restart that replays entries whose records were not stored, and
//! every refusal.

mod common;

use std::collections::BTreeMap;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{Value, json};
use standings_core::{Applied, Board, BoardRules, ScoreEvent, ScoreMode};

const BOARD: &str = "/v1/boards/arena-clash/solo/S7/global";
const FEED: &str = "/v1/games/arena-clash/feed";
const PLAYERS: u64 = 16;

on_both_databases!(
    feed_records_match_a_model_of_the_same_events,
    a_restart_makes_the_records_it_had_not_stored,
    feed_refusals_answer_their_codes,
);

fn player(i: u64) -> String {
    format!("p{i:02}")
}

/// Who follows whom: player i lists i+1 and i+3 (mod PLAYERS) as friends.
fn friend_lists() -> Vec<(String, Vec<String>)> {
    (0..PLAYERS)
        .map(|i| {
            (
                player(i),
                vec![player((i + 1) % PLAYERS), player((i + 3) % PLAYERS)],
            )
        })
        .collect()
}

async fn start(db: Db) -> TestService {
    let service = TestService::start(db).await;
    let (status, answer) = service
        .call(
            Method::PUT,
            BOARD,
            Some(ADMIN),
            Some(&json!({"score_mode": "highest", "feed": {"bands": [1, 3, "20%"], "overtakes": true}})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["feed"], json!({"bands": [1, 3, "20%"], "overtakes": true}));
    for (p, friends) in friend_lists() {
        let (status, answer) = service
            .call(
                Method::PUT,
                &format!("/v1/games/arena-clash/players/{p}/friends"),
                Some(SERVICE),
                Some(&json!({ "friends": friends })),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
    }
    service
}

/// The deterministic events of a run: (id, player, value, minute).
fn events(count: usize) -> Vec<(String, String, i64, u32)> {
    let mut seed: u64 = 7;
    let mut next = |n: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % n
    };
    (0..count)
        .map(|i| {
            (
                format!("e{i}"),
                player(next(PLAYERS)),
                next(100) as i64,
                next(60) as u32,
            )
        })
        .collect()
}

/// A band's last rank on a board of so many players.
type LastRank = fn(u64) -> u64;

/// The records a model of the board makes for `events`, in order: the board read whole before
/// and after each event, each band's members compared, each follower of the mover checked.
fn model(events: &[(String, String, i64, u32)]) -> Vec<Value> {
    // Each band's last rank on a board of `total` players.
    let bands: [(&str, LastRank); 3] = [
        ("top:1", |_| 1),
        ("top:3", |_| 3),
        ("top:20%", |total| (total * 20).div_ceil(100)),
    ];
    let mut followers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (p, friends) in friend_lists() {
        for f in friends {
            followers.entry(f).or_default().push(p.clone());
        }
    }
    let ranks = |board: &Board| -> BTreeMap<String, u64> {
        board
            .ranked_range(1, board.total_players() as usize)
            .into_iter()
            .map(|e| (e.player.to_string(), e.rank))
            .collect()
    };
    let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
    let mut records = Vec::new();
    for (id, p, value, minute) in events {
        let before = ranks(&board);
        let at = standings_origin::clock::parse_rfc3339(&format!("2026-10-13T10:{minute:02}:00Z")).unwrap();
        let Applied::Changed(delta) = board.apply(&ScoreEvent::new(id, p, *value, at).unwrap()).unwrap()
        else {
            continue;
        };
        let after = ranks(&board);
        let (total_before, total_after) = (before.len() as u64, after.len() as u64);
        let mut made = Vec::new();
        for (band, last) in &bands {
            let players: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
            let mut crossed: Vec<(u64, Value)> = Vec::new();
            for q in players {
                let was = before.get(q).is_some_and(|&r| r <= last(total_before));
                let is = after.get(q).is_some_and(|&r| r <= last(total_after));
                if was != is {
                    let kind = if is { "band_entered" } else { "band_left" };
                    crossed.push((
                        u64::from(q != p),
                        json!({"kind": kind, "player_id": q, "band": band,
                               "rank_before": before.get(q), "rank_after": after.get(q),
                               "board_version": delta.board_version}),
                    ));
                }
            }
            // The mover's crossing comes first, as the service makes them.
            crossed.sort_by_key(|(other, record)| (*other, record["rank_after"].as_u64()));
            made.extend(crossed.into_iter().map(|(_, r)| r));
        }
        let mover_after = after[p];
        let mover_before = before.get(p).copied();
        for follower in followers.get(p).into_iter().flatten() {
            let (Some(&fb), Some(&fa)) = (before.get(follower), after.get(follower)) else {
                continue;
            };
            if mover_before.is_none_or(|mb| mb > fb) && mover_after < fa {
                made.push(json!({"kind": "overtaken", "player_id": follower, "by": p,
                                 "rank_before": fb, "rank_after": fa,
                                 "by_rank_before": mover_before, "by_rank_after": mover_after,
                                 "board_version": delta.board_version}));
            }
        }
        records.extend(made);
    }
    records
}

/// Every record of the feed, paged by `limit`, with the fields the model knows.
async fn read_all(service: &TestService, limit: usize) -> Vec<Value> {
    let mut all = Vec::new();
    for r in &feed_records(service, "arena-clash", limit).await {
        assert_eq!(r["game"], "arena-clash");
        assert_eq!(r["board"], "arena-clash/solo/S7/global");
        assert_eq!(r["period"], "all_time");
        let mut known = json!({});
        for field in [
            "kind",
            "player_id",
            "band",
            "by",
            "rank_before",
            "rank_after",
            "by_rank_before",
            "by_rank_after",
            "board_version",
        ] {
            if let Some(v) = r.get(field) {
                known[field] = v.clone();
            }
        }
        all.push(known);
    }
    all
}

async fn submit_all(service: &TestService, events: &[(String, String, i64, u32)]) {
    for (id, p, value, minute) in events {
        let (status, body) = service
            .submit(&event(id, p, *value, &format!("2026-10-13T10:{minute:02}:00Z")))
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    }
}

async fn feed_records_match_a_model_of_the_same_events(db: Db) {
    let service = start(db).await;
    let events = events(120);
    submit_all(&service, &events).await;
    flush_feed(&service).await;
    let expected = model(&events);
    assert!(
        expected.len() > 40,
        "the run crosses bands and passes friends: {}",
        expected.len()
    );
    assert!(expected.iter().any(|r| r["kind"] == "overtaken"));
    assert!(expected.iter().any(|r| r["kind"] == "band_left"));
    assert_eq!(read_all(&service, 7).await, expected);
    assert_eq!(read_all(&service, 1000).await, expected);
}

async fn a_restart_makes_the_records_it_had_not_stored(db: Db) {
    let service = start(db).await;
    let events = events(60);
    // A crash before any checkpoint: the start replays the whole log, the entries whose
    // records were not stored through the live code.
    submit_all(&service, &events[..10]).await;
    let service = TestService::start_on(service.stop().await).await;
    flush_feed(&service).await;
    assert_eq!(read_all(&service, 50).await, model(&events[..10]));
    submit_all(&service, &events[10..30]).await;
    flush_feed(&service).await;
    // A checkpoint stores every record made before it; the next start replays what follows.
    service.state.ingest().checkpoint().await.unwrap();
    submit_all(&service, &events[30..]).await;
    // A crash: the records of the last events were never stored.
    let db = service.stop().await;
    let service = TestService::start_on(db).await;
    flush_feed(&service).await;
    assert_eq!(read_all(&service, 50).await, model(&events));
}

async fn feed_refusals_answer_their_codes(db: Db) {
    let service = start(db).await;
    for (query, words) in [
        ("since_seq=-1", "since_seq"),
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("since_seq=x", "since_seq"),
    ] {
        let (status, answer) = service
            .call(Method::GET, &format!("{FEED}?{query}"), Some(SERVICE), None)
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {answer}");
        assert!(answer["detail"].as_str().unwrap().contains(words), "{answer}");
    }
    for (token, status) in [
        (None, StatusCode::UNAUTHORIZED),
        (Some(OTHER_GAME), StatusCode::FORBIDDEN),
        (Some(PLAYER), StatusCode::FORBIDDEN),
    ] {
        let (got, answer) = service.call(Method::GET, FEED, token, None).await;
        assert_eq!(got, status, "{token:?}: {answer}");
    }
    for (feed, words) in [
        (json!({"bands": [0]}), "not a band"),
        (json!({"bands": ["101%"]}), "not a band"),
        (json!({"bands": ["0.001%"]}), "not a band"),
        (json!({"bands": [10, 10]}), "twice"),
        (json!({"bands": [1, 2, 3, 4, 5, 6, 7, 8, 9]}), "at most 8"),
        (json!({"overtakes": "yes"}), "true or false"),
        (json!({"rewards": []}), "not a field"),
        (json!([10]), "expected an object"),
    ] {
        let (status, answer) = service
            .call(
                Method::PUT,
                "/v1/boards/arena-clash/solo/S7/other",
                Some(ADMIN),
                Some(&json!({"score_mode": "highest", "feed": feed})),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{feed}: {answer}");
        assert!(
            answer["detail"].as_str().unwrap().contains(words),
            "{feed}: {answer}"
        );
    }
}
