//! The feed's records of results (issue 41, `docs/feed.md`) through the real router on SQLite
//! and PostgreSQL: a season finalized with reward bands (one `season_finalized` per board, one
//! `reward` per rewarded player, against a model of the ranking), a correction with exactly the
//! rewards it changes, a period's close logged once and recorded with its final version, each
//! made again by a start after a crash that lost them, and the refusals of reward bands.

mod common;

use std::collections::BTreeMap;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{Value, json};
use standings_origin::clock::{Clock, parse_rfc3339};

const BOARD: &str = "/v1/boards/arena-clash/solo/S7/global";
const STATE: &str = "/v1/seasons/arena-clash/S7/state";

on_both_databases!(
    a_finalized_season_awards_its_bands_and_a_correction_changes_exactly_those_it_moves,
    a_period_close_is_recorded_once_at_its_final_version,
    reward_bands_are_refused_with_words,
);

fn ms(rfc3339: &str) -> i64 {
    parse_rfc3339(rfc3339).unwrap()
}

async fn define(service: &TestService, path: &str, body: Value) {
    let (status, answer) = service.call(Method::PUT, path, Some(ADMIN), Some(&body)).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
}

async fn submit_all(service: &TestService, events: &[(String, String, i64)], at: &str) {
    for (id, p, value) in events {
        let (status, body) = service.submit(&event(id, p, *value, at)).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    }
}

/// Every record of the feed of `kinds`, whole.
async fn records(service: &TestService, kinds: &[&str]) -> Vec<Value> {
    feed_records(service, "arena-clash", 1000)
        .await
        .into_iter()
        .filter(|r| kinds.contains(&r["kind"].as_str().unwrap()))
        .collect()
}

async fn move_season(service: &TestService, body: Value) -> Value {
    let (status, answer) = service.call(Method::PUT, STATE, Some(ADMIN), Some(&body)).await;
    assert_eq!(status, StatusCode::OK, "{body}: {answer}");
    answer
}

const BANDS: [(u64, u64, &str); 3] = [(1, 1, "gold"), (2, 3, "silver"), (4, 5, "bronze")];

/// What a ranking (players best first) awards: player to (reward, rank).
fn awards(ranking: &[&str]) -> BTreeMap<String, (String, u64)> {
    let mut out = BTreeMap::new();
    for (from, to, reward) in BANDS {
        for rank in from..=to {
            if let Some(p) = ranking.get(rank as usize - 1) {
                out.insert(p.to_string(), (reward.to_string(), rank));
            }
        }
    }
    out
}

/// The `reward` records a model expects between two rankings' awards, in player order:
/// (player, rank, reward, previous reward).
fn reward_changes(
    before: &BTreeMap<String, (String, u64)>,
    after: &BTreeMap<String, (String, u64)>,
) -> Vec<Value> {
    let mut players: Vec<&String> = before.keys().chain(after.keys()).collect();
    players.sort();
    players.dedup();
    players
        .into_iter()
        .filter(|p| before.get(*p) != after.get(*p))
        .map(|p| {
            json!({
                "player_id": p,
                "rank": after.get(p).map(|a| a.1),
                "reward": after.get(p).map(|a| a.0.clone()),
                "previous_reward": before.get(p).map(|a| a.0.clone()),
            })
        })
        .collect()
}

fn reward_fields(records: &[Value]) -> Vec<Value> {
    records
        .iter()
        .filter(|r| r["kind"] == "reward")
        .map(|r| {
            json!({"player_id": r["player_id"], "rank": r["rank"], "reward": r["reward"],
                   "previous_reward": r["previous_reward"]})
        })
        .collect()
}

async fn a_finalized_season_awards_its_bands_and_a_correction_changes_exactly_those_it_moves(db: Db) {
    let service = TestService::start(db).await;
    define(&service, BOARD, json!({"score_mode": "highest"})).await;
    // p00 scores best, p07 worst.
    let events: Vec<(String, String, i64)> = (0..8)
        .map(|i| (format!("e{i}"), format!("p{i:02}"), 100 - i as i64 * 10))
        .collect();
    submit_all(&service, &events, "2026-10-13T10:00:00Z").await;
    move_season(&service, json!({"state": "frozen"})).await;
    // A checkpoint before the finalization, and a crash before its records are stored: the
    // start performs the action again and makes them.
    service.state.ingest().checkpoint().await.unwrap();
    let rewards: Vec<Value> = BANDS
        .iter()
        .rev()
        .map(|(from, to, reward)| json!({"ranks": [from, to], "reward": reward}))
        .collect();
    let moved = move_season(&service, json!({"state": "finalized", "rewards": rewards})).await;
    // Declared in rank order, whatever order they were sent in, on the answer and the state.
    let declared = json!([{"ranks": [1, 1], "reward": "gold"}, {"ranks": [2, 3], "reward": "silver"},
                          {"ranks": [4, 5], "reward": "bronze"}]);
    assert_eq!(moved["rewards"], declared);
    let (_, state) = service.call(Method::GET, STATE, Some(SERVICE), None).await;
    assert_eq!(state["rewards"], declared);
    let version = moved["results"][0]["board_version"].clone();
    let service = TestService::start_on(service.stop().await).await;
    flush_feed(&service).await;

    let kinds = ["season_finalized", "reward", "correction"];
    let made = records(&service, &kinds).await;
    let finalized = &made[0];
    assert_eq!(finalized["kind"], "season_finalized", "{made:?}");
    assert_eq!(finalized["board"], "arena-clash/solo/S7/global");
    assert_eq!(finalized["season"], "S7");
    assert_eq!(finalized["correction"], 0);
    assert_eq!(finalized["players"], 8);
    assert_eq!(finalized["rewards_changed"], 5);
    assert_eq!(finalized["board_version"], version);
    let ranking = ["p00", "p01", "p02", "p03", "p04", "p05", "p06", "p07"];
    let first = awards(&ranking);
    assert_eq!(reward_fields(&made), reward_changes(&BTreeMap::new(), &first));
    assert!(
        made[1..]
            .iter()
            .all(|r| r["correction"] == 0 && r["board_version"] == version)
    );

    // The winner's event is invalidated: everyone moves up one, a correction of the result.
    let (status, answer) = service
        .call(
            Method::POST,
            "/v1/moderation-actions",
            Some(MODERATOR),
            Some(
                &json!({"moderation_id": "m1", "action_type": "INVALIDATE", "reason": "cheat",
                         "game": "arena-clash", "target_event_id": "e0"}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    flush_feed(&service).await;
    let after = records(&service, &kinds).await;
    let corrected = &after[made.len()..];
    assert_eq!(corrected[0]["kind"], "correction", "{corrected:?}");
    assert_eq!(corrected[0]["correction"], 1);
    assert_eq!(corrected[0]["players"], 7);
    let second = awards(&ranking[1..]);
    let expected = reward_changes(&first, &second);
    assert_eq!(
        expected.len(),
        6,
        "the winner loses gold, five move within or into a band"
    );
    assert_eq!(corrected[0]["rewards_changed"], 6);
    assert_eq!(reward_fields(corrected), expected);
    assert!(corrected[1..].iter().all(|r| r["correction"] == 1));
    // Numbered in the log's order, the correction's records after the original's.
    let seqs: Vec<i64> = after.iter().map(|r| r["seq"].as_i64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");

    // A restart from a checkpoint after both keeps them as they are, and makes none again.
    service.state.ingest().checkpoint().await.unwrap();
    let service = TestService::start_on(service.stop().await).await;
    flush_feed(&service).await;
    assert_eq!(records(&service, &kinds).await, after);
    let (_, state) = service.call(Method::GET, STATE, Some(SERVICE), None).await;
    assert_eq!(
        state["rewards"], declared,
        "the bands come back from the checkpoint"
    );
}

async fn a_period_close_is_recorded_once_at_its_final_version(db: Db) {
    let db = TestDb::new(db).await;
    let clock = Clock::manual(ms("2026-10-13T12:00:00Z"));
    let config = config(&db.url);
    let service = TestService::start_with_config(db, &config, clock.clone()).await;
    define(
        &service,
        BOARD,
        json!({"score_mode": "highest", "periods": ["all_time", "daily"], "grace_seconds": 300,
               "feed": {"bands": [1]}}),
    )
    .await;
    // A board without a feed logs no close.
    define(
        &service,
        "/v1/boards/arena-clash/solo/S7/quiet",
        json!({"score_mode": "highest", "periods": ["all_time", "daily"]}),
    )
    .await;
    let events: Vec<(String, String, i64)> = (0..3)
        .map(|i| (format!("e{i}"), format!("p{i}"), 10 + i as i64))
        .collect();
    submit_all(&service, &events, "2026-10-13T11:00:00Z").await;
    let day_version = {
        let board = standings_core::BoardId::new("arena-clash", "solo", "S7", "global").unwrap();
        let entry = service.state.registry().entry(&board).unwrap();
        entry.instance("2026-10-13").unwrap().read().version()
    };
    // Before the close (the day's end plus the grace), nothing.
    clock.set(ms("2026-10-14T00:04:00Z"));
    service.state.ingest().evict_closed().await.unwrap();
    flush_feed(&service).await;
    assert!(records(&service, &["period_closed"]).await.is_empty());
    // After it, one record, however often the writer looks.
    clock.set(ms("2026-10-14T00:06:00Z"));
    service.state.ingest().evict_closed().await.unwrap();
    service.state.ingest().evict_closed().await.unwrap();
    // A late event does not change the closed day.
    submit_all(
        &service,
        &[("late".into(), "p9".into(), 99)],
        "2026-10-13T23:00:00Z",
    )
    .await;
    let service = TestService::start_with_config(service.stop().await, &config, clock.clone()).await;
    service.state.ingest().evict_closed().await.unwrap();
    flush_feed(&service).await;
    let closed = records(&service, &["period_closed"]).await;
    assert_eq!(closed.len(), 1, "{closed:?}");
    let record = &closed[0];
    assert_eq!(record["board"], "arena-clash/solo/S7/global");
    assert_eq!(record["period"], "daily");
    assert_eq!(record["period_key"], "2026-10-13");
    assert_eq!(record["players"], 3);
    assert_eq!(record["board_version"], day_version);
    // The close is in the audit log, by the service itself.
    let (status, log) = service
        .call(Method::GET, "/v1/audit?game=arena-clash", Some(ADMIN), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{log}");
    let closes: Vec<&Value> = log["audit"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a.to_string().contains("PERIOD_CLOSE"))
        .collect();
    assert_eq!(closes.len(), 1, "{log}");
}

async fn reward_bands_are_refused_with_words(db: Db) {
    let service = TestService::start(db).await;
    define(&service, BOARD, json!({"score_mode": "highest"})).await;
    move_season(&service, json!({"state": "frozen"})).await;
    for (body, words) in [
        (
            json!({"state": "finalized", "rewards": [{"ranks": [1, 5], "reward": "a"}, {"ranks": [5, 9], "reward": "b"}]}),
            "overlap",
        ),
        (
            json!({"state": "finalized", "rewards": [{"ranks": [0, 1], "reward": "a"}]}),
            "1 <= from",
        ),
        (
            json!({"state": "finalized", "rewards": [{"ranks": [1, 1], "reward": "a b"}]}),
            "reward id",
        ),
        (
            json!({"state": "finalized", "rewards": [{"ranks": [1], "reward": "a"}]}),
            "the body must be",
        ),
        (
            json!({"state": "published", "rewards": [{"ranks": [1, 1], "reward": "a"}]}),
            "as the season is finalized",
        ),
    ] {
        let (status, answer) = service.call(Method::PUT, STATE, Some(ADMIN), Some(&body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        assert!(
            answer["detail"].as_str().unwrap().contains(words),
            "{body}: {answer}"
        );
    }
    // Nothing moved: the season is still frozen.
    let (_, state) = service.call(Method::GET, STATE, Some(ADMIN), None).await;
    assert_eq!(state["state"], "frozen");
}
