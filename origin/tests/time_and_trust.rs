//! Period boards, the season lifecycle, late events, moderation and corrections over HTTP, on
//! SQLite and PostgreSQL, with a manual clock so closes are deterministic.

mod common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{Value, json};
use standings_origin::clock::{Clock, format_rfc3339, parse_rfc3339};

const LB: &str = "/v1/leaderboards/arena-clash/solo/S7";

fn ms(rfc3339: &str) -> i64 {
    parse_rfc3339(rfc3339).unwrap()
}

async fn service_at(db: Db, now: &str) -> (TestService, Clock) {
    let clock = Clock::manual(ms(now));
    let service = TestService::start_with_clock(TestDb::new(db).await, clock.clone()).await;
    (service, clock)
}

async fn define(service: &TestService, scope: &str, body: Value) {
    service.define_scope(scope, &body).await;
}

/// A cumulative board with daily and weekly periods (5 minutes' grace), and a `highest` one.
async fn define_daily_and_global(service: &TestService) {
    define(
        service,
        "daily",
        json!({"score_mode": "cumulative", "periods": ["all_time", "daily", "weekly"], "grace_seconds": 300}),
    )
    .await;
    define(service, "global", json!({"score_mode": "highest"})).await;
}

fn at(id: &str, player: &str, value: i64, when: &str) -> Value {
    event(id, player, value, when)
}

fn players(body: &Value) -> Vec<(String, i64)> {
    body["entries"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|e| {
            (
                e["player_id"].as_str().unwrap().to_string(),
                e["value"].as_i64().unwrap(),
            )
        })
        .collect()
}

async fn set_state(service: &TestService, season: &str, state: &str) -> (StatusCode, Value) {
    service
        .call(
            Method::PUT,
            &format!("/v1/seasons/arena-clash/{season}/state"),
            Some(ADMIN),
            Some(&json!({ "state": state })),
        )
        .await
}

async fn moderate(service: &TestService, body: Value) -> (StatusCode, Value) {
    service
        .call(
            Method::POST,
            "/v1/moderation-actions",
            Some(MODERATOR),
            Some(&body),
        )
        .await
}

on_both_databases!(
    periods_route_by_achieved_at_across_midnight_dst_and_weeks,
    periods_close_deterministically_after_grace,
    the_season_walk_refuses_every_invalid_transition,
    a_season_with_events_can_no_longer_be_declared_open,
    late_events_after_a_freeze_are_queued_and_decided,
    moderation_on_every_score_mode,
    corrections_after_finalization_keep_the_original,
    rebuild_equals_live_after_all_of_it,
    closed_periods_leave_memory_and_read_the_same,
    a_restart_from_a_checkpoint_equals_a_full_replay,
    periodic_checkpoints_are_stored_while_writes_go_on,
    a_stop_stores_a_checkpoint_only_when_replaying_would_cost_more,
    a_periodic_checkpoint_waits_until_its_size_is_worth_storing,
    writes_are_answered_while_a_checkpoint_encodes,
    moderation_finds_a_players_events_in_sealed_runs_and_the_tail,
);

/// A service on a manual clock that begins a checkpoint every 10 log entries, and its config.
async fn checkpointing_every_10(db: Db) -> (TestService, standings_origin::config::Config, Clock) {
    let clock = Clock::manual(ms("2026-10-14T00:02:00Z"));
    let db = TestDb::new(db).await;
    let mut config = config(&db.url);
    config.checkpoint_every_events = 10;
    let service = TestService::start_with_config(db, &config, clock.clone()).await;
    (service, config, clock)
}

/// Waits (10 s at most) until the checkpoint in use is the one as of `seq`: a periodic one is
/// stored by a task of its own.
async fn wait_for_checkpoint(store: &standings_origin::store::Store, seq: i64) {
    for _ in 0..1_000 {
        if store.checkpoint_head().await.unwrap().map(|(s, _)| s) == Some(seq) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("no checkpoint as of seq {seq} was stored");
}

/// Stops the service without a checkpoint (as a crash does) and starts it again: the start must
/// use the checkpoint at `expected.0` and replay `expected.1` log entries after it, and reach
/// the `live` instances.
async fn restart_from_checkpoint(
    service: TestService,
    config: &standings_origin::config::Config,
    clock: &Clock,
    expected: (i64, u64),
    live: &[(String, String, u64, String)],
) -> TestService {
    use standings_origin::writer::checkpoint::Restored;
    let db = service.stop().await;
    let service = TestService::start_with_config(db, config, clock.clone()).await;
    match service.state.restored() {
        Restored::Checkpoint { seq, tail, .. } => assert_eq!((*seq, *tail), expected),
        other => panic!("the checkpoint was not used: {other:?}"),
    }
    assert_eq!(instances(service.state.registry()), live);
    service
}

/// Submits events `from..to` to the daily and global boards one at a time, so that each is a
/// group of its own and its seq is known.
async fn submit_one_by_one(service: &TestService, from: i64, to: i64) {
    for i in from..to {
        let mut e = at(
            &format!("e{i}"),
            &format!("p-{}", i % 7),
            10 + i,
            "2026-10-13T20:00:00Z",
        );
        e["scopes"] = json!(["daily", "global"]);
        assert_eq!(service.submit(&e).await.0, StatusCode::ACCEPTED);
    }
}

/// With `checkpoint_every_events`, the writer begins a checkpoint each time the log has grown
/// by that many entries, and a task of its own stores it while writes go on; after a crash the
/// start uses it and the log after it. Asked for a checkpoint when the stored one is as of the
/// last `seq` already, the writer writes none.
async fn periodic_checkpoints_are_stored_while_writes_go_on(db: Db) {
    let (service, config, clock) = checkpointing_every_10(db).await;
    define_daily_and_global(&service).await;
    let submit = |from: i64, to: i64| submit_one_by_one(&service, from, to);
    submit(0, 10).await;
    // The group with seq 10 began one; it is stored beside the writes, so wait for it.
    wait_for_checkpoint(service.state.store(), 10).await;
    // Five more entries do not begin another.
    submit(10, 15).await;
    let live = instances(service.state.registry());
    let metrics = service.get("/metrics").await.1.as_str().unwrap().to_string();
    assert!(
        metrics.contains("standings_checkpoint_encode_seconds_count 1"),
        "{metrics}"
    );
    // Checkpoints take seconds: their histograms have buckets up to a minute.
    assert!(
        metrics.contains("standings_checkpoint_encode_seconds_bucket{le=\"60\"} 1"),
        "{metrics}"
    );

    // A crash: no checkpoint at the stop.
    let service = restart_from_checkpoint(service, &config, &clock, (10, 5), &live).await;
    let written = service.state.ingest().checkpoint().await.unwrap().unwrap();
    assert_eq!(written.seq, 15);
    assert!(service.state.ingest().checkpoint().await.unwrap().is_none());
    restart_from_checkpoint(service, &config, &clock, (15, 0), &live).await;
}

/// At a stop the writer stores a checkpoint only when replaying the log after the newest one
/// would cost more than storing it (256 bytes of checkpoint an entry): a few entries after a
/// periodic checkpoint are left to the next start, more are stored.
async fn a_stop_stores_a_checkpoint_only_when_replaying_would_cost_more(db: Db) {
    let (service, _config, _clock) = checkpointing_every_10(db).await;
    define_daily_and_global(&service).await;
    let submit = |from: i64, to: i64| submit_one_by_one(&service, from, to);
    submit(0, 10).await;
    wait_for_checkpoint(service.state.store(), 10).await;
    let (_, parts) = service.state.store().checkpoint().await.unwrap().unwrap();
    let size: usize = parts[1..].iter().map(Vec::len).sum();
    assert!((256..256 * 8).contains(&size), "{size} bytes of boards");
    submit(10, 11).await;
    let ingest = service.state.ingest();
    assert!(
        ingest.checkpoint_at_stop().await.unwrap().is_none(),
        "one entry after {size} bytes"
    );
    assert_eq!(
        service
            .state
            .store()
            .checkpoint_head()
            .await
            .unwrap()
            .map(|(seq, _)| seq),
        Some(10)
    );
    submit(11, 18).await;
    let written = ingest
        .checkpoint_at_stop()
        .await
        .unwrap()
        .expect("eight entries after it");
    assert_eq!(written.seq, 18);
}

/// A periodic checkpoint comes once the log grew by the interval and by enough entries to
/// weigh as much as the newest checkpoint (256 bytes an entry): after one of 400 players, the
/// next waits past the interval of 10 until the tail is worth storing, and comes exactly then.
async fn a_periodic_checkpoint_waits_until_its_size_is_worth_storing(db: Db) {
    let (service, _config, _clock) = checkpointing_every_10(db).await;
    define(&service, "global", json!({"score_mode": "highest"})).await;
    let when = "2026-10-13T20:00:00Z";
    let batch: Vec<Value> = (0..400)
        .map(|i| at(&format!("b{i}"), &format!("player-{i:05}"), i, when))
        .collect();
    assert_eq!(service.submit_batch(&batch).await.0, StatusCode::OK);
    let store = service.state.store();
    let mut first = None;
    for _ in 0..1_000 {
        first = store.checkpoint_head().await.unwrap().map(|(seq, _)| seq);
        if first.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let first = first.expect("the batch began a checkpoint");
    let (_, parts) = store.checkpoint().await.unwrap().unwrap();
    let size: usize = parts[1..].iter().map(Vec::len).sum();
    let due_after = size.div_ceil(256) as i64;
    assert!(due_after > 10, "{size} bytes: more than the interval's worth");
    for i in 0..due_after + 3 {
        let e = at(&format!("t{i}"), &format!("player-{:05}", i % 7), 1_000 + i, when);
        assert_eq!(service.submit(&e).await.0, StatusCode::ACCEPTED);
    }
    wait_for_checkpoint(store, first + due_after).await;
    let metrics = service.get("/metrics").await.1.as_str().unwrap().to_string();
    assert!(
        metrics.contains("standings_checkpoint_encode_seconds_count 2"),
        "one checkpoint between, none at the interval: {metrics}"
    );
}

/// While a periodic checkpoint encodes the boards, writes are committed and answered but not
/// applied: the boards stay at the checkpoint's `seq` until the encoding is done, then show
/// everything. Cumulative totals answered meanwhile count for what comes next (an overflow is
/// still refused), and after a crash the start reaches the same state.
#[expect(
    clippy::await_holding_lock,
    reason = "the test holds a board's lock across requests on purpose, to keep a checkpoint encoding"
)]
async fn writes_are_answered_while_a_checkpoint_encodes(db: Db) {
    let (service, config, clock) = checkpointing_every_10(db).await;
    define(&service, "global", json!({"score_mode": "highest"})).await;
    define(
        &service,
        "sum",
        json!({"score_mode": "cumulative", "value_max": 4_000_000_000_000_000_000i64}),
    )
    .await;
    let when = "2026-10-13T20:00:00Z";
    let submit = |id: &str, scope: &str, player: &str, value: i64| {
        let mut e = at(id, player, value, when);
        e["scopes"] = json!([scope]);
        let service = &service;
        async move { service.submit(&e).await }
    };
    assert_eq!(submit("g1", "global", "p-a", 5).await.0, StatusCode::ACCEPTED);
    // Holding the global board keeps the encoding from finishing: it waits for its read lock.
    let global = standings_core::BoardId::new("arena-clash", "solo", "S7", "global").unwrap();
    let slot = service
        .state
        .registry()
        .entry(&global)
        .unwrap()
        .instance("all_time")
        .unwrap();
    let held = slot.write();
    assert_eq!(
        submit("s0", "sum", "p-x", 4_000_000_000_000_000_000).await.0,
        StatusCode::ACCEPTED
    );
    for i in 1..9 {
        assert_eq!(
            submit(&format!("s{i}"), "sum", &format!("p-{i}"), 1).await.0,
            StatusCode::ACCEPTED
        );
    }
    // seq 10 began the checkpoint. These are durable and answered, but not visible yet.
    assert_eq!(
        submit("s9", "sum", "p-x", 4_000_000_000_000_000_000).await.0,
        StatusCode::ACCEPTED
    );
    let (status, body) = submit("s10", "sum", "p-x", 4_000_000_000_000_000_000).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("VALUE_OUT_OF_RANGE")),
        "{body}"
    );
    assert_eq!(submit("s11", "sum", "p-y", 7).await.0, StatusCode::ACCEPTED);
    let rank = |player: &str| {
        let service = &service;
        let path = format!("{LB}/sum/players/{player}/rank");
        async move { service.get(&path).await }
    };
    assert_eq!(
        rank("p-x").await.1["value"],
        4_000_000_000_000_000_000i64,
        "not visible yet"
    );
    assert_eq!(rank("p-y").await.0, StatusCode::NOT_FOUND);
    drop(held);
    let mut polls = 0;
    while rank("p-y").await.0 != StatusCode::OK {
        assert!(polls < 1_000, "the backlog was never applied");
        polls += 1;
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(rank("p-x").await.1["value"], 8_000_000_000_000_000_000i64);
    wait_for_checkpoint(service.state.store(), 10).await;
    let live = instances(service.state.registry());
    restart_from_checkpoint(service, &config, &clock, (10, 2), &live).await;
}

/// Stores a checkpoint's parts (the manifest first) as they are, in place of the one at `seq`.
async fn store_parts(store: &standings_origin::store::Store, seq: i64, parts: Vec<Vec<u8>>) {
    store.discard_checkpoint(seq).await.unwrap();
    let mut parts = parts.into_iter();
    let manifest = parts.next().unwrap();
    for (part, body) in parts.enumerate() {
        store
            .put_checkpoint_part(seq, part as i64 + 1, body)
            .await
            .unwrap();
    }
    store.finish_checkpoint(seq, manifest).await.unwrap();
}

/// A start from a checkpoint taken between events and actions, then the log after it, reaches
/// exactly the state of a full replay: every instance's version and digest (periods, a
/// `latest` board), the season and moderation state, and the stored results. A damaged
/// checkpoint is reported and ignored: the start replays the whole log.
async fn a_restart_from_a_checkpoint_equals_a_full_replay(db: Db) {
    use standings_origin::writer::checkpoint::Restored;
    let (service, clock) = service_at(db, "2026-10-14T00:02:00Z").await;
    define_daily_and_global(&service).await;
    define(&service, "last", json!({"score_mode": "latest"})).await;
    let all = |id: &str, player: &str, value: i64, when: &str| {
        let mut e = at(id, player, value, when);
        e["scopes"] = json!(["daily", "global", "last"]);
        e
    };
    let submit_many = |from: i64, to: i64| {
        let service = &service;
        async move {
            for i in from..to {
                // Equal times on purpose: `latest` then breaks ties by event id.
                let when = format_rfc3339(ms("2026-10-13T20:00:00Z") + (i % 5) * 600_000);
                let (status, body) = service
                    .submit(&all(&format!("e{i}"), &format!("p-{}", i % 4), 10 + i, &when))
                    .await;
                // p-2 is disqualified from one of the boards halfway through.
                assert!(
                    status == StatusCode::ACCEPTED || body["code"] == "PLAYER_DISQUALIFIED",
                    "{body}"
                );
            }
        }
    };
    submit_many(0, 12).await;
    clock.set(ms("2026-10-14T01:00:00Z"));
    for id in ["late-1", "late-2"] {
        assert_eq!(
            service
                .submit(&all(id, "p-0", 1_000, "2026-10-13T23:00:00Z"))
                .await
                .1["status"],
            "LATE"
        );
    }
    moderate(&service, json!({"moderation_id": "r1", "action_type": "INVALIDATE", "reason": "x", "game": "arena-clash", "target_event_id": "e5"})).await;
    moderate(&service, json!({"moderation_id": "r2", "action_type": "DISQUALIFY", "reason": "x", "game": "arena-clash", "mode": "solo",
                              "season": "S7", "scope": "daily", "target_player_id": "p-2"})).await;

    let written = service.state.ingest().checkpoint().await.unwrap().unwrap();
    assert!(written.instances >= 5, "{written:?}");

    // After the checkpoint: events, a late decision, a restore, a reinstatement, and the
    // season walk with a result and a correction.
    submit_many(12, 20).await;
    // p-2's `latest` aggregate is e2's (20:20), from before the checkpoint: this event ties on
    // time and loses on id, which the replay after the checkpoint must know.
    let mut tie = all("e0-after", "p-2", 5, "2026-10-13T20:20:00Z");
    tie["scopes"] = json!(["global", "last"]);
    assert_eq!(service.submit(&tie).await.1["status"], "ACCEPTED");
    service
        .call(
            Method::POST,
            "/v1/late-events/late-1/decision?game=arena-clash",
            Some(MODERATOR),
            Some(&json!({"decision": "apply", "reason": "ok"})),
        )
        .await;
    moderate(&service, json!({"moderation_id": "r3", "action_type": "RESTORE", "reason": "x", "game": "arena-clash", "target_event_id": "e5"})).await;
    for state in ["frozen", "finalized", "published"] {
        clock.advance(1_000);
        assert_eq!(set_state(&service, "S7", state).await.0, StatusCode::OK);
    }
    moderate(&service, json!({"moderation_id": "r4", "action_type": "REINSTATE", "reason": "x", "game": "arena-clash", "mode": "solo",
                              "season": "S7", "scope": "daily", "target_player_id": "p-2"})).await;
    let live = instances(service.state.registry());
    let live_domain = service.state.domain().state();
    let (_, results_live) = service.get(&format!("{LB}/results?scope=daily")).await;
    assert_eq!(results_live["correction"], 1);

    // A crash: no checkpoint at the stop, so the start takes the one above and the log after.
    let db = service.stop().await;
    let service = TestService::start_with_clock(db, clock.clone()).await;
    match service.state.restored() {
        Restored::Checkpoint { seq, tail, .. } => {
            assert_eq!(*seq, written.seq);
            // 7 events (p-2's two are refused) and 6 actions.
            assert_eq!(*tail, 13);
        }
        other => panic!("the checkpoint was not used: {other:?}"),
    }
    assert_eq!(instances(service.state.registry()), live);
    assert_eq!(service.state.domain().state(), live_domain);
    assert_eq!(
        service.get(&format!("{LB}/results?scope=daily")).await.1,
        results_live
    );
    let (rebuilt, rebuilt_domain, _) =
        standings_origin::log::rebuild(service.state.store(), None, clock.now_ms(), |_| {})
            .await
            .unwrap();
    assert_eq!(instances(&rebuilt), live, "a full replay agrees");
    assert_eq!(rebuilt_domain.state(), live_domain);
    let after = instances(service.state.registry());
    let (_, p2) = service.get(&format!("{LB}/last/players/p-2/rank")).await;
    assert_eq!(p2["value"], 12, "e2 (10 + 2) kept the tie: {p2}");

    // A damaged checkpoint is not used; the whole log gives the same state.
    let store = service.state.store();
    let (seq, mut parts) = store.checkpoint().await.unwrap().unwrap();
    parts[1][0] ^= 0xff; // the first board's magic bytes
    store_parts(store, seq, parts).await;
    let db = service.stop().await;
    let service = TestService::start_with_clock(db, clock.clone()).await;
    match service.state.restored() {
        Restored::FullReplay { unusable: Some(why) } => {
            assert!(why.contains("cannot be read"), "{why}")
        }
        other => panic!("a damaged checkpoint was used: {other:?}"),
    }
    assert_eq!(instances(service.state.registry()), after);

    // A manifest claiming absurd sizes is refused before anything is sized by it.
    let store = service.state.store();
    service.state.ingest().checkpoint().await.unwrap();
    let (seq, parts) = store.checkpoint().await.unwrap().unwrap();
    for claimed in [u64::MAX, 1 << 50] {
        let mut manifest: Value = serde_json::from_slice(&parts[0]).unwrap();
        manifest["instances"][0]["bytes"] = json!(claimed);
        let mut lying = parts.clone();
        lying[0] = serde_json::to_vec(&manifest).unwrap();
        store_parts(store, seq, lying).await;
        let (_, _, restored) = standings_origin::writer::checkpoint::restore(store, clock.now_ms())
            .await
            .unwrap();
        match restored {
            Restored::FullReplay { unusable: Some(why) } => {
                assert!(why.contains("overflow") || why.contains("holds"), "{why}")
            }
            other => panic!("a lying manifest was used: {other:?}"),
        }
    }
}

/// Events land in the day, ISO week and month of their `achieved_at` in the board's time zone,
/// whatever their arrival time: across local midnight, a 25-hour DST day and a week boundary.
async fn periods_route_by_achieved_at_across_midnight_dst_and_weeks(db: Db) {
    let (service, _clock) = service_at(db, "2026-10-26T12:00:00Z").await;
    define(
        &service,
        "berlin",
        json!({"score_mode": "highest", "periods": ["daily", "weekly", "monthly", "all_time"],
               "timezone": "Europe/Berlin", "grace_seconds": 86400 * 30}),
    )
    .await;
    let submit = |id: &str, player: &str, value: i64, when: &str| {
        let mut e = at(id, player, value, when);
        e["scopes"] = json!(["berlin"]);
        e
    };
    // 2026-10-24T21:59:59Z is 23:59:59 on Saturday the 24th in Berlin (UTC+2); a millisecond
    // later it is Sunday the 25th, the 25-hour day when clocks go back at 03:00.
    for e in [
        submit("e1", "p-ava", 100, "2026-10-24T21:59:59.999Z"),
        submit("e2", "p-ben", 200, "2026-10-24T22:00:00Z"),
        submit("e3", "p-chloe", 300, "2026-10-25T00:30:00Z"), // 02:30 CEST, the first pass
        submit("e4", "p-dev", 400, "2026-10-25T01:30:00Z"),   // 02:30 CET, the repeated hour
        submit("e5", "p-eli", 500, "2026-10-25T22:59:59Z"),   // 23:59:59 CET, still the 25th
        submit("e6", "p-fay", 600, "2026-10-25T23:00:00Z"),   // Monday the 26th: a new week
    ] {
        assert_eq!(service.submit(&e).await.0, StatusCode::ACCEPTED);
    }
    let (_, saturday) = service
        .get(&format!("{LB}/berlin/top?period=daily&at=2026-10-24T12:00:00Z"))
        .await;
    assert_eq!(players(&saturday), [("p-ava".to_string(), 100)]);
    assert_eq!(saturday["period_key"], "2026-10-24");
    let (_, sunday) = service
        .get(&format!("{LB}/berlin/top?period=daily&at=2026-10-25T12:00:00Z"))
        .await;
    assert_eq!(sunday["period_key"], "2026-10-25");
    assert_eq!(sunday["period_start"], "2026-10-24T22:00:00Z");
    assert_eq!(sunday["period_end"], "2026-10-25T23:00:00Z", "a 25-hour day");
    let names: Vec<String> = players(&sunday).into_iter().map(|(p, _)| p).collect();
    assert_eq!(
        names,
        ["p-eli", "p-dev", "p-chloe", "p-ben"],
        "both passes of the repeated hour, no more"
    );
    let (_, week43) = service
        .get(&format!("{LB}/berlin/top?period=weekly&at=2026-10-25T12:00:00Z"))
        .await;
    assert_eq!(week43["period_key"], "2026-W43");
    assert_eq!(week43["total_players"], 5);
    let (_, week44) = service
        .get(&format!("{LB}/berlin/top?period=weekly&at=2026-10-26T12:00:00Z"))
        .await;
    assert_eq!(week44["period_key"], "2026-W44");
    assert_eq!(players(&week44), [("p-fay".to_string(), 600)]);
    let (_, month) = service
        .get(&format!("{LB}/berlin/top?period=monthly&at=2026-10-01T12:00:00Z"))
        .await;
    assert_eq!(
        (month["period_key"].clone(), month["total_players"].clone()),
        (json!("2026-10"), json!(6))
    );
    let (_, all) = service.get(&format!("{LB}/berlin/top")).await;
    assert_eq!(
        (all["period"].clone(), all["period_key"].clone()),
        (json!("all_time"), json!("all_time"))
    );
    assert_eq!(all["period_start"], Value::Null);
    // Rank reads carry the period too; a period the board does not keep is a 400.
    let (_, rank) = service
        .get(&format!(
            "{LB}/berlin/players/p-dev/rank?period=daily&at=2026-10-25T01:30:00Z"
        ))
        .await;
    assert_eq!(
        (rank["rank"].clone(), rank["period_key"].clone()),
        (json!(2), json!("2026-10-25"))
    );
    define(&service, "plain", json!({"score_mode": "highest"})).await;
    let (status, body) = service.get(&format!("{LB}/plain/top?period=daily")).await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::BAD_REQUEST, json!("INVALID_REQUEST"))
    );
    // Bad calendars are refused with specific errors.
    for (bad, why) in [
        (json!({"score_mode": "highest", "periods": ["hourly"]}), "hourly"),
        (
            json!({"score_mode": "highest", "timezone": "Mars/Olympus"}),
            "Mars/Olympus",
        ),
        (json!({"score_mode": "highest", "grace_seconds": -1}), "grace"),
    ] {
        let (status, body) = service
            .call(
                Method::PUT,
                "/v1/boards/arena-clash/solo/S7/bad",
                Some(ADMIN),
                Some(&bad),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert!(body["detail"].as_str().unwrap().contains(why), "{body}");
    }
}

/// A daily period takes events until `end + grace` and not after: later arrivals for it are
/// queued as LATE while the all-time board still applies them.
async fn periods_close_deterministically_after_grace(db: Db) {
    let (service, clock) = service_at(db, "2026-10-13T23:00:00Z").await;
    define(
        &service,
        "daily",
        json!({"score_mode": "highest", "periods": ["all_time", "daily"], "grace_seconds": 300}),
    )
    .await;
    let scoped = |id: &str, player: &str, value: i64| {
        let mut e = at(id, player, value, "2026-10-13T23:59:00Z");
        e["scopes"] = json!(["daily"]);
        e
    };
    clock.set(ms("2026-10-14T00:04:59.999Z"));
    let (status, body) = service.submit(&scoped("in-grace", "p-ava", 10)).await;
    assert_eq!(
        (status, body["status"].clone()),
        (StatusCode::ACCEPTED, json!("ACCEPTED"))
    );
    clock.set(ms("2026-10-14T00:05:00Z"));
    let (status, body) = service.submit(&scoped("after-grace", "p-ben", 20)).await;
    assert_eq!(
        (status, body["status"].clone()),
        (StatusCode::ACCEPTED, json!("LATE"))
    );
    let day = format!("{LB}/daily/top?period=daily&at=2026-10-13T12:00:00Z");
    let (_, daily) = service.get(&day).await;
    assert_eq!(
        players(&daily),
        [("p-ava".to_string(), 10)],
        "the closed day is unchanged"
    );
    let (_, all) = service.get(&format!("{LB}/daily/top")).await;
    assert_eq!(
        players(&all),
        [("p-ben".to_string(), 20), ("p-ava".to_string(), 10)],
        "all-time applies it"
    );
    // The late part waits for a moderator.
    let (status, queue) = service
        .call(
            Method::GET,
            "/v1/late-events?game=arena-clash",
            Some(MODERATOR),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(queue["late_events"][0]["event_id"], "after-grace");
    let (status, decided) = service
        .call(
            Method::POST,
            "/v1/late-events/after-grace/decision",
            Some(MODERATOR),
            Some(&json!({"decision": "apply", "reason": "server clock drift", "game": "arena-clash"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{decided}");
    assert_eq!(decided["boards"][0]["period_key"], "2026-10-13");
    let (_, daily) = service.get(&day).await;
    assert_eq!(
        players(&daily),
        [("p-ben".to_string(), 20), ("p-ava".to_string(), 10)]
    );
    let (_, all) = service.get(&format!("{LB}/daily/top")).await;
    assert_eq!(all["total_players"], 2, "all-time is not applied twice");
    // Deciding again is refused.
    let (status, body) = service
        .call(
            Method::POST,
            "/v1/late-events/after-grace/decision",
            Some(MODERATOR),
            Some(&json!({"decision": "reject", "reason": "again", "game": "arena-clash"})),
        )
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::CONFLICT, json!("NOT_LATE"))
    );
}

/// The season moves one step at a time; every other transition is 409 INVALID_TRANSITION, and
/// only `active` applies events.
async fn the_season_walk_refuses_every_invalid_transition(db: Db) {
    let (service, clock) = service_at(db, "2026-10-13T10:00:00Z").await;
    define(&service, "global", json!({"score_mode": "highest"})).await;
    let order = ["open", "active", "frozen", "finalized", "published", "archived"];
    // A fresh season may be declared open; an open season refuses every event.
    assert_eq!(set_state(&service, "S7", "open").await.0, StatusCode::OK);
    let (status, body) = service
        .submit(&at("e1", "p-ava", 1, "2026-10-13T09:00:00Z"))
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::CONFLICT, json!("SEASON_NOT_ACTIVE"))
    );
    for (i, current) in order.iter().enumerate() {
        for (j, target) in order.iter().enumerate() {
            if j == i + 1 {
                continue;
            }
            let (status, body) = set_state(&service, "S7", target).await;
            assert_eq!(
                (status, body["code"].clone()),
                (StatusCode::CONFLICT, json!("INVALID_TRANSITION")),
                "{current} -> {target}"
            );
        }
        if let Some(next) = order.get(i + 1) {
            clock.advance(1_000);
            let (status, body) = set_state(&service, "S7", next).await;
            assert_eq!(status, StatusCode::OK, "{current} -> {next}: {body}");
            assert_eq!(body["previous"], *current);
            if *next == "active" {
                assert_eq!(
                    service
                        .submit(&at("e2", "p-ava", 5, "2026-10-13T09:00:00Z"))
                        .await
                        .0,
                    StatusCode::ACCEPTED
                );
            }
        }
    }
    let (status, body) = service
        .call(
            Method::PUT,
            "/v1/seasons/arena-clash/S7/state",
            Some(ADMIN),
            Some(&json!({"state": "sleeping"})),
        )
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::BAD_REQUEST, json!("INVALID_REQUEST"))
    );
    let (status, _) = service
        .call(
            Method::PUT,
            "/v1/seasons/arena-clash/S7/state",
            Some(MODERATOR),
            Some(&json!({"state": "open"})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // Archived: nothing changes any more.
    let (status, body) = moderate(
        &service,
        json!({"moderation_id": "late-fix", "action_type": "INVALIDATE", "reason": "x",
               "game": "arena-clash", "target_event_id": "e2"}),
    )
    .await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::CONFLICT, json!("SEASON_ARCHIVED"))
    );
    // Archived: the live board is gone, the results stay.
    let (status, body) = service.get(&format!("{LB}/global/top")).await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::NOT_FOUND, json!("UNKNOWN_BOARD"))
    );
    let (status, results) = service.get(&format!("{LB}/results?scope=global")).await;
    assert_eq!(status, StatusCode::OK, "{results}");
    assert_eq!(players(&results), [("p-ava".to_string(), 5)]);
    // An event for a season without boards is refused.
    assert_eq!(
        service
            .submit(
                &json!({"event_id": "s8-1", "player_id": "p-ava", "game": "arena-clash", "mode": "solo",
        "season": "S8", "value": 1, "achieved_at": "2026-10-13T09:00:00Z"})
            )
            .await
            .0,
        StatusCode::NOT_FOUND
    );
}

/// A never-set season may be declared open only while it has no events. Which seasons have
/// events is stored with them: a single event (one statement), a batch with the first events of
/// two seasons, and a restart all count.
async fn a_season_with_events_can_no_longer_be_declared_open(db: Db) {
    let (service, clock) = service_at(db, "2026-10-13T10:00:00Z").await;
    for season in ["S7", "S8", "S9", "S10"] {
        let (status, answer) = service
            .call(
                Method::PUT,
                &format!("/v1/boards/arena-clash/solo/{season}/global"),
                Some(ADMIN),
                Some(&json!({"score_mode": "highest"})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }
    let in_season = |id: &str, season: &str| {
        let mut e = at(id, "p-ava", 1, "2026-10-13T09:00:00Z");
        e["season"] = json!(season);
        e
    };
    assert_eq!(
        service.submit(&in_season("e1", "S7")).await.0,
        StatusCode::ACCEPTED
    );
    let (status, body) = service
        .submit_batch(&[
            in_season("e2", "S8"),
            in_season("e3", "S9"),
            in_season("e4", "S8"),
        ])
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let refused = |season: &'static str, (status, body): (StatusCode, Value)| {
        assert_eq!(
            (status, body["code"].clone()),
            (StatusCode::CONFLICT, json!("INVALID_TRANSITION")),
            "{season}: {body}"
        );
        let detail = body["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("already has events"), "{season}: {body}");
    };
    for season in ["S7", "S8", "S9"] {
        refused(season, set_state(&service, season, "open").await);
    }
    let service = TestService::start_with_clock(service.stop().await, clock.clone()).await;
    for season in ["S7", "S8", "S9"] {
        refused(season, set_state(&service, season, "open").await);
    }
    let (status, body) = set_state(&service, "S10", "open").await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// After a freeze, an event achieved before it is queued as LATE (never applied on arrival,
/// never in the next season) and one achieved after it is refused; a moderator applies or
/// rejects the queued ones.
async fn late_events_after_a_freeze_are_queued_and_decided(db: Db) {
    let (service, clock) = service_at(db, "2026-10-13T10:00:00Z").await;
    define(&service, "global", json!({"score_mode": "highest"})).await;
    let (status, _) = service
        .call(
            Method::PUT,
            "/v1/boards/arena-clash/solo/S8/global",
            Some(ADMIN),
            Some(&json!({"score_mode": "highest"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(
        service
            .submit(&at("e1", "p-ava", 100, "2026-10-13T09:00:00Z"))
            .await
            .0,
        StatusCode::ACCEPTED
    );
    assert_eq!(
        service
            .submit(&at("e2", "p-chloe", 50, "2026-10-13T09:30:00Z"))
            .await
            .0,
        StatusCode::ACCEPTED
    );
    clock.set(ms("2026-10-13T12:00:00Z"));
    assert_eq!(set_state(&service, "S7", "frozen").await.0, StatusCode::OK);
    clock.set(ms("2026-10-13T12:30:00Z"));
    let (status, body) = service
        .submit(&at("late-1", "p-ben", 900, "2026-10-13T11:59:00Z"))
        .await;
    assert_eq!(
        (status, body["status"].clone()),
        (StatusCode::ACCEPTED, json!("LATE"))
    );
    let (status, body) = service
        .submit(&at("late-2", "p-chloe", 800, "2026-10-13T11:00:00Z"))
        .await;
    assert_eq!(
        (status, body["status"].clone()),
        (StatusCode::ACCEPTED, json!("LATE"))
    );
    let (status, body) = service
        .submit(&at("too-late", "p-dev", 700, "2026-10-13T12:10:00Z"))
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::CONFLICT, json!("SEASON_NOT_ACTIVE"))
    );
    // A retry of a late event is a duplicate.
    let (status, body) = service
        .submit(&at("late-1", "p-ben", 900, "2026-10-13T11:59:00Z"))
        .await;
    assert_eq!(
        (status, body["status"].clone()),
        (StatusCode::OK, json!("DUPLICATE"))
    );
    let (_, top) = service.get(&format!("{LB}/global/top")).await;
    assert_eq!(
        players(&top),
        [("p-ava".to_string(), 100), ("p-chloe".to_string(), 50)],
        "late events are not applied on arrival"
    );
    let (_, next_season) = service
        .get("/v1/leaderboards/arena-clash/solo/S8/global/top")
        .await;
    assert_eq!(next_season["total_players"], 0, "never in the next season");
    let (_, queue) = service
        .call(
            Method::GET,
            "/v1/late-events?game=arena-clash",
            Some(MODERATOR),
            None,
        )
        .await;
    let ids: Vec<&str> = queue["late_events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["late-1", "late-2"]);
    let decide = |id: &str, decision: &str| {
        let service = &service;
        let path = format!("/v1/late-events/{id}/decision?game=arena-clash");
        let body = json!({"decision": decision, "reason": "reviewed replay"});
        async move {
            service
                .call(Method::POST, &path, Some(MODERATOR), Some(&body))
                .await
        }
    };
    assert_eq!(decide("late-1", "apply").await.0, StatusCode::OK);
    assert_eq!(decide("late-2", "reject").await.0, StatusCode::OK);
    let (status, body) = decide("nope", "apply").await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::NOT_FOUND, json!("UNKNOWN_EVENT"))
    );
    let (status, _) = service
        .call(
            Method::POST,
            "/v1/late-events/late-1/decision?game=arena-clash",
            Some(SERVICE),
            Some(&json!({"decision": "apply", "reason": "x"})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a service token cannot decide");
    let (_, top) = service.get(&format!("{LB}/global/top")).await;
    let expected = [
        ("p-ben".to_string(), 900),
        ("p-ava".to_string(), 100),
        ("p-chloe".to_string(), 50),
    ];
    assert_eq!(players(&top), expected);
    // A recompute of Chloe (invalidate and restore her on-time event) never brings back the
    // rejected late one.
    for (id, action) in [("m1", "INVALIDATE"), ("m2", "RESTORE")] {
        let body = json!({"moderation_id": id, "action_type": action, "reason": "check",
                          "game": "arena-clash", "target_event_id": "e2"});
        assert_eq!(moderate(&service, body).await.0, StatusCode::CREATED);
    }
    let (_, top) = service.get(&format!("{LB}/global/top")).await;
    assert_eq!(players(&top), expected);
    let (_, queue) = service
        .call(
            Method::GET,
            "/v1/late-events?game=arena-clash",
            Some(MODERATOR),
            None,
        )
        .await;
    assert_eq!(queue["late_events"], json!([]));
    let (_, audit) = service
        .call(Method::GET, "/v1/audit?game=arena-clash", Some(MODERATOR), None)
        .await;
    let kinds: Vec<&str> = audit["audit"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "SEASON_STATE",
            "LATE_DECISION",
            "LATE_DECISION",
            "INVALIDATE",
            "RESTORE"
        ]
    );
    assert_eq!(audit["audit"][1]["actor"], "mod");
    assert_eq!(audit["audit"][1]["reason"], "reviewed replay");
}

/// The four moderation actions on every score mode: invalidating an only event unranks, an
/// invalidated best restores the earlier best, a cumulative total drops by exactly the event;
/// retries answer the same; disqualified players' events are refused; resubmitting an
/// invalidated event is 409 EVENT_INVALIDATED.
async fn moderation_on_every_score_mode(db: Db) {
    let (service, _clock) = service_at(db, "2026-10-14T10:00:00Z").await;
    for (scope, mode) in [
        ("high", "highest"),
        ("sum", "cumulative"),
        ("fast", "fastest"),
        ("last", "latest"),
    ] {
        define(&service, scope, json!({"score_mode": mode})).await;
    }
    let all = ["high", "sum", "fast", "last"];
    let e = |id: &str, player: &str, value: i64, when: &str| {
        let mut e = at(id, player, value, when);
        e["scopes"] = json!(all);
        e
    };
    for ev in [
        e("a1", "p-ava", 100, "2026-10-13T10:00:00Z"),
        e("b1", "p-ben", 300, "2026-10-13T10:01:00Z"),
        e("b2", "p-ben", 500, "2026-10-13T10:02:00Z"),
        e("c1", "p-chloe", 200, "2026-10-13T10:03:00Z"),
    ] {
        assert_eq!(service.submit(&ev).await.0, StatusCode::ACCEPTED);
    }
    let value = |scope: &'static str, player: &'static str| {
        let service = &service;
        async move {
            let (status, body) = service.get(&format!("{LB}/{scope}/players/{player}/rank")).await;
            (status == StatusCode::OK).then(|| body["value"].as_i64().unwrap())
        }
    };
    assert_eq!(
        (value("high", "p-ben").await, value("sum", "p-ben").await),
        (Some(500), Some(800))
    );
    assert_eq!(
        (value("fast", "p-ben").await, value("last", "p-ben").await),
        (Some(300), Some(500))
    );

    // INVALIDATE Ava's only event: unranked everywhere. The answer names each board.
    let invalidate_ava = json!({"moderation_id": "mod-1", "action_type": "INVALIDATE", "reason": "cheat",
                                "game": "arena-clash", "target_event_id": "a1"});
    let (status, answer) = moderate(&service, invalidate_ava.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["boards"].as_array().unwrap().len(), 4);
    assert!(
        answer["boards"]
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b["rank"].is_null() && b["player_id"] == "p-ava")
    );
    for scope in all {
        assert_eq!(value(scope, "p-ava").await, None, "{scope}");
    }
    // A retry answers the same and changes nothing; the same id for another action is refused.
    let (status, retry) = moderate(&service, invalidate_ava.clone()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(retry["boards"], answer["boards"]);
    assert_eq!(retry["replayed"], true);
    let (status, body) = moderate(
        &service,
        json!({"moderation_id": "mod-1", "action_type": "INVALIDATE", "reason": "cheat",
                                                   "game": "arena-clash", "target_event_id": "b1"}),
    )
    .await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::CONFLICT, json!("MODERATION_ID_CONFLICT"))
    );
    // Resubmitting an invalidated event.
    let (status, body) = service
        .submit(&e("a1", "p-ava", 100, "2026-10-13T10:00:00Z"))
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::CONFLICT, json!("EVENT_INVALIDATED"))
    );

    // INVALIDATE Ben's best (b2): highest falls back to 300, cumulative drops by exactly 500,
    // fastest keeps 300, latest falls back to b1's 300.
    let (status, answer) = moderate(
        &service,
        json!({"moderation_id": "mod-2", "action_type": "INVALIDATE", "reason": "exploit",
                                                   "game": "arena-clash", "target_event_id": "b2"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(value("high", "p-ben").await, Some(300));
    assert_eq!(value("sum", "p-ben").await, Some(300));
    assert_eq!(value("fast", "p-ben").await, Some(300));
    assert_eq!(value("last", "p-ben").await, Some(300));
    let high = answer["boards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["scope"] == "high")
        .unwrap()
        .clone();
    assert_eq!(high["rank"], 1, "Ben's 300 still beats Chloe's 200");
    // RESTORE it: everything comes back.
    let (status, _) = moderate(
        &service,
        json!({"moderation_id": "mod-3", "action_type": "RESTORE", "reason": "appeal won",
                                                "game": "arena-clash", "target_event_id": "b2"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(
        (value("high", "p-ben").await, value("sum", "p-ben").await),
        (Some(500), Some(800))
    );

    // DISQUALIFY Chloe from each board in turn: gone from that board, kept on the others until
    // their turn; a retry answers the same.
    for (i, scope) in all.iter().enumerate() {
        let dq = json!({"moderation_id": format!("dq-{scope}"), "action_type": "DISQUALIFY", "reason": "smurfing",
                        "game": "arena-clash", "mode": "solo", "season": "S7", "scope": scope,
                        "target_player_id": "p-chloe"});
        let (status, answer) = moderate(&service, dq.clone()).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
        assert_eq!(answer["boards"][0]["rank"], Value::Null);
        assert_eq!(value(scope, "p-chloe").await, None, "{scope}");
        if let Some(next) = all.get(i + 1) {
            assert_eq!(value(next, "p-chloe").await, Some(200), "other boards keep her");
        }
        let (status, retry) = moderate(&service, dq).await;
        assert_eq!((status, retry["replayed"].clone()), (StatusCode::OK, json!(true)));
        assert_eq!(retry["boards"], answer["boards"]);
    }
    let (status, body) = service
        .submit(&e("c2", "p-chloe", 50, "2026-10-13T11:00:00Z"))
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::CONFLICT, json!("PLAYER_DISQUALIFIED"))
    );
    // REINSTATE on each board: back with her valid history (one event of 200), whatever the mode.
    for scope in all {
        let back = json!({"moderation_id": format!("back-{scope}"), "action_type": "REINSTATE", "reason": "cleared",
                          "game": "arena-clash", "mode": "solo", "season": "S7", "scope": scope,
                          "target_player_id": "p-chloe"});
        let (status, answer) = moderate(&service, back.clone()).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
        assert_eq!(value(scope, "p-chloe").await, Some(200), "{scope}");
        let (status, retry) = moderate(&service, back).await;
        assert_eq!(
            (status, retry["boards"].clone()),
            (StatusCode::OK, answer["boards"].clone())
        );
    }
    // A retried RESTORE changes nothing either.
    let (status, retry) = moderate(
        &service,
        json!({"moderation_id": "mod-3", "action_type": "RESTORE", "reason": "appeal won",
                                                   "game": "arena-clash", "target_event_id": "b2"}),
    )
    .await;
    assert_eq!((status, retry["replayed"].clone()), (StatusCode::OK, json!(true)));
    assert_eq!(
        (value("high", "p-ben").await, value("sum", "p-ben").await),
        (Some(500), Some(800))
    );
    // Bad requests get specific errors and change nothing.
    for (bad, code) in [
        (
            json!({"moderation_id": "m", "action_type": "BAN", "reason": "x", "game": "arena-clash"}),
            "INVALID_REQUEST",
        ),
        (
            json!({"moderation_id": "m", "action_type": "INVALIDATE", "reason": "", "game": "arena-clash", "target_event_id": "b1"}),
            "INVALID_REQUEST",
        ),
        (
            json!({"moderation_id": "m", "action_type": "INVALIDATE", "reason": "x", "game": "arena-clash", "target_event_id": "zz"}),
            "UNKNOWN_EVENT",
        ),
        (
            json!({"moderation_id": "m", "action_type": "DISQUALIFY", "reason": "x", "game": "arena-clash", "mode": "solo",
                "season": "S7", "scope": "nope", "target_player_id": "p-ben"}),
            "UNKNOWN_BOARD",
        ),
    ] {
        let (_, body) = moderate(&service, bad).await;
        assert_eq!(body["code"], code, "{body}");
    }
    let (status, _) = service
        .call(
            Method::POST,
            "/v1/moderation-actions",
            Some(SERVICE),
            Some(&json!({"moderation_id": "m", "action_type": "INVALIDATE",
              "reason": "x", "game": "arena-clash", "target_event_id": "b1"})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (_, audit) = service
        .call(Method::GET, "/v1/audit?game=arena-clash", Some(MODERATOR), None)
        .await;
    assert_eq!(
        audit["audit"].as_array().unwrap().len(),
        11,
        "one record per action, none for the retries"
    );
    assert_eq!(audit["audit"][0]["moderation_id"], "mod-1");
    assert_eq!(audit["audit"][0]["result"]["boards"].as_array().unwrap().len(), 4);
}

/// Moderation after finalization writes a numbered correction; the original stays readable,
/// and results are 404 RESULTS_NOT_PUBLISHED until the season is published.
async fn corrections_after_finalization_keep_the_original(db: Db) {
    let (service, clock) = service_at(db, "2026-10-14T10:00:00Z").await;
    define(&service, "global", json!({"score_mode": "highest"})).await;
    for (id, player, value) in [("e1", "p-ava", 900), ("e2", "p-ben", 800), ("e3", "p-chloe", 700)] {
        assert_eq!(
            service
                .submit(&at(id, player, value, "2026-10-13T10:00:00Z"))
                .await
                .0,
            StatusCode::ACCEPTED
        );
    }
    clock.advance(60_000);
    assert_eq!(set_state(&service, "S7", "frozen").await.0, StatusCode::OK);
    // A late arrival after the freeze, achieved before it, waits for a decision.
    let (_, body) = service
        .submit(&at("late", "p-dev", 850, "2026-10-14T10:00:30Z"))
        .await;
    assert_eq!(body["status"], "LATE");
    clock.advance(60_000);
    assert_eq!(set_state(&service, "S7", "finalized").await.0, StatusCode::OK);
    let (status, body) = service.get(&format!("{LB}/results?scope=global")).await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::NOT_FOUND, json!("RESULTS_NOT_PUBLISHED"))
    );
    assert_eq!(set_state(&service, "S7", "published").await.0, StatusCode::OK);
    let (_, original) = service.get(&format!("{LB}/results?scope=global")).await;
    assert_eq!(original["correction"], 0);
    assert_eq!(players(&original).len(), 3);
    // Ava cheated: the correction removes her; #2 becomes #1 for reward purposes.
    let (status, answer) = moderate(
        &service,
        json!({"moderation_id": "post-1", "action_type": "INVALIDATE", "reason": "cheat",
                                                   "game": "arena-clash", "target_event_id": "e1"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["corrections"][0]["correction"], 1);
    let (_, latest) = service.get(&format!("{LB}/results?scope=global")).await;
    assert_eq!(
        (latest["correction"].clone(), latest["latest_correction"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(
        players(&latest),
        [("p-ben".to_string(), 800), ("p-chloe".to_string(), 700)]
    );
    assert_eq!(latest["entries"][0]["rank"], 1);
    let (_, mut again) = service
        .get(&format!("{LB}/results?scope=global&correction=0"))
        .await;
    assert_eq!(again["latest_correction"], 1, "it says a newer correction exists");
    again["latest_correction"] = original["latest_correction"].clone();
    assert_eq!(again, original, "the original snapshot is intact");
    assert_ne!(latest["digest"], original["digest"]);
    // Applying the late event after finalization is correction 2; 0 and 1 stay as they were.
    let (status, decided) = service
        .call(
            Method::POST,
            "/v1/late-events/late/decision?game=arena-clash",
            Some(MODERATOR),
            Some(&json!({"decision": "apply", "reason": "verified replay"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{decided}");
    assert_eq!(decided["corrections"][0]["correction"], 2);
    let (_, second) = service.get(&format!("{LB}/results?scope=global")).await;
    assert_eq!(second["correction"], 2);
    assert_eq!(
        players(&second),
        [
            ("p-dev".to_string(), 850),
            ("p-ben".to_string(), 800),
            ("p-chloe".to_string(), 700)
        ]
    );
    let (_, first) = service
        .get(&format!("{LB}/results?scope=global&correction=1"))
        .await;
    assert_eq!(first["entries"], latest["entries"]);
}

/// After periods, late decisions, moderation, a finalization and a correction, a restart
/// (a rebuild from the log) gives the same boards, versions and results.
async fn rebuild_equals_live_after_all_of_it(db: Db) {
    let (service, clock) = service_at(db, "2026-10-14T00:02:00Z").await;
    define_daily_and_global(&service).await;
    let both = |id: &str, player: &str, value: i64, when: &str| {
        let mut e = at(id, player, value, when);
        e["scopes"] = json!(["daily", "global"]);
        e
    };
    for i in 0..12 {
        let when = format_rfc3339(ms("2026-10-13T20:00:00Z") + i * 600_000);
        assert_eq!(
            service
                .submit(&both(&format!("e{i}"), &format!("p-{}", i % 4), 10 + i, &when))
                .await
                .0,
            StatusCode::ACCEPTED
        );
    }
    clock.set(ms("2026-10-14T01:00:00Z"));
    assert_eq!(
        service
            .submit(&both("late-day", "p-0", 1_000, "2026-10-13T23:00:00Z"))
            .await
            .1["status"],
        "LATE"
    );
    service
        .call(
            Method::POST,
            "/v1/late-events/late-day/decision?game=arena-clash",
            Some(MODERATOR),
            Some(&json!({"decision": "apply", "reason": "ok"})),
        )
        .await;
    moderate(&service, json!({"moderation_id": "r1", "action_type": "INVALIDATE", "reason": "x", "game": "arena-clash", "target_event_id": "e5"})).await;
    moderate(&service, json!({"moderation_id": "r2", "action_type": "DISQUALIFY", "reason": "x", "game": "arena-clash", "mode": "solo",
                              "season": "S7", "scope": "daily", "target_player_id": "p-2"})).await;
    for state in ["frozen", "finalized", "published"] {
        clock.advance(1_000);
        assert_eq!(set_state(&service, "S7", state).await.0, StatusCode::OK);
    }
    moderate(&service, json!({"moderation_id": "r3", "action_type": "REINSTATE", "reason": "x", "game": "arena-clash", "mode": "solo",
                              "season": "S7", "scope": "daily", "target_player_id": "p-2"})).await;
    let reads = [
        format!("{LB}/daily/digest"),
        format!("{LB}/daily/digest?period=daily&at=2026-10-13T12:00:00Z"),
        format!("{LB}/daily/digest?period=weekly&at=2026-10-13T12:00:00Z"),
        format!("{LB}/global/digest"),
    ];
    let mut before = Vec::new();
    for path in &reads {
        before.push(service.get(path).await.1);
    }
    let (_, results_before) = service.get(&format!("{LB}/results?scope=daily")).await;
    assert_eq!(
        results_before["correction"], 1,
        "the reinstatement corrected the daily board"
    );
    let db = service.stop().await;
    let service = TestService::start_with_clock(db, clock.clone()).await;
    for (path, expected) in reads.iter().zip(&before) {
        assert_eq!(&service.get(path).await.1, expected, "{path}");
    }
    let (_, results_after) = service.get(&format!("{LB}/results?scope=daily")).await;
    assert_eq!(results_after, results_before);
    // And the rebuild reproduces every stored result's digest.
    let (_, _, rebuilt) = standings_origin::log::rebuild(service.state.store(), None, clock.now_ms(), |_| {})
        .await
        .unwrap();
    let stored = service
        .state
        .store()
        .results(&standings_core::BoardId::new("arena-clash", "solo", "S7", "daily").unwrap())
        .await
        .unwrap();
    assert_eq!(stored.len(), 2);
    for s in stored {
        assert!(
            rebuilt
                .iter()
                .any(|r| r.board == s.board && r.correction == s.correction && r.digest == s.digest)
        );
    }
}

/// A closed period past the retention (a day in the tests' config) leaves memory and is read
/// from storage with the same answers and board_version; a late decision brings it back.
async fn closed_periods_leave_memory_and_read_the_same(db: Db) {
    let (service, clock) = service_at(db, "2026-10-13T10:00:00Z").await;
    define(
        &service,
        "daily",
        json!({"score_mode": "highest", "periods": ["all_time", "daily"], "grace_seconds": 300}),
    )
    .await;
    let daily = |id: &str, player: &str, value: i64, when: &str| {
        let mut e = at(id, player, value, when);
        e["scopes"] = json!(["daily"]);
        e
    };
    for (id, player, value) in [("d1", "p-ava", 30), ("d2", "p-ben", 20), ("d3", "p-ava", 40)] {
        assert_eq!(
            service
                .submit(&daily(id, player, value, "2026-10-13T09:00:00Z"))
                .await
                .0,
            StatusCode::ACCEPTED
        );
    }
    let day = format!("{LB}/daily/top?period=daily&at=2026-10-13T12:00:00Z");
    let rank = format!("{LB}/daily/players/p-ben/rank?period=daily&at=2026-10-13T12:00:00Z");
    let (_, top_before) = service.get(&day).await;
    let (_, rank_before) = service.get(&rank).await;
    assert_eq!(top_before["board_version"], 3);
    let entry = || {
        service
            .state
            .registry()
            .entry(&standings_core::BoardId::new("arena-clash", "solo", "S7", "daily").unwrap())
            .unwrap()
    };
    // Closed (end + grace) but within the retention: stays.
    clock.set(ms("2026-10-14T12:00:00Z"));
    assert_eq!(service.state.ingest().evict_closed().await.unwrap(), 0);
    assert!(entry().instance("2026-10-13").is_some());
    // Past the retention: leaves memory, reads the same from storage. The minute's ticker
    // follows the service's clock, so moving it takes the period out without being asked.
    clock.set(ms("2026-10-15T00:05:00Z"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while entry().instance("2026-10-13").is_some() {
        assert!(std::time::Instant::now() < deadline, "the ticker did not evict");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(service.state.ingest().evict_closed().await.unwrap(), 0);
    assert!(entry().instance("all_time").is_some(), "all time never closes");
    assert_eq!(service.get(&day).await.1, top_before);
    assert_eq!(service.get(&rank).await.1, rank_before);
    // A late event for that day, applied by a moderator, reloads it and moves it on.
    let (status, body) = service
        .submit(&daily("late", "p-chloe", 99, "2026-10-13T23:00:00Z"))
        .await;
    assert_eq!(
        (status, body["status"].clone()),
        (StatusCode::ACCEPTED, json!("LATE"))
    );
    let (status, _) = service
        .call(
            Method::POST,
            "/v1/late-events/late/decision?game=arena-clash",
            Some(MODERATOR),
            Some(&json!({"decision": "apply", "reason": "ok"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, top_after) = service.get(&day).await;
    assert_eq!(top_after["board_version"], 4);
    assert_eq!(players(&top_after)[0], ("p-chloe".to_string(), 99));
}

/// The log is indexed by player in sealed runs of `RUN_SEQS` seqs plus an unsealed tail. A
/// player whose events lie in a sealed run and the tail is recomputed from all of them: a
/// cumulative total survives DISQUALIFY then REINSTATE, and INVALIDATE takes away exactly the
/// event it names, as a rebuild from the log agrees. The service restarts halfway through the
/// run, so the run's index holds keys the writer read back from the log at start as well as
/// keys it kept from its own commits.
async fn moderation_finds_a_players_events_in_sealed_runs_and_the_tail(db: Db) {
    use standings_origin::store::RUN_SEQS;
    let (mut service, clock) = service_at(db, "2026-10-14T10:00:00Z").await;
    define(&service, "sum", json!({"score_mode": "cumulative"})).await;
    let sum = |id: &str, player: &str, value: i64| {
        let mut e = at(id, player, value, "2026-10-13T10:00:00Z");
        e["scopes"] = json!(["sum"]);
        e
    };
    // Ava's events at seqs 1, ~RUN_SEQS / 2, ~RUN_SEQS + 1,000 and in the tail; filler between.
    let ava = [("ava-0", 1i64), ("ava-1", 20), ("ava-2", 300), ("ava-3", 4_000)];
    assert_eq!(
        service.submit(&sum(ava[0].0, "p-ava", ava[0].1)).await.0,
        StatusCode::ACCEPTED
    );
    let batches = (RUN_SEQS as usize + 2_000) / 1_000;
    for b in 0..batches {
        let mut events: Vec<Value> = (0..1_000)
            .map(|i| {
                sum(
                    &format!("f-{b}-{i}"),
                    &format!("p-{}", (b * 1_000 + i) % 5_000),
                    1,
                )
            })
            .collect();
        if b == batches / 2 {
            events[500] = sum(ava[1].0, "p-ava", ava[1].1);
        }
        if b == batches - 1 {
            events[999] = sum(ava[2].0, "p-ava", ava[2].1);
        }
        let (status, answer) = service.submit_batch(&events).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        if b == batches / 2 {
            let db = service.stop().await;
            service = TestService::start_with_clock(db, clock.clone()).await;
        }
    }
    assert_eq!(
        service.submit(&sum(ava[3].0, "p-ava", ava[3].1)).await.0,
        StatusCode::ACCEPTED
    );
    let sealed = service.state.store().sealed_below().await.unwrap();
    assert!(
        sealed > RUN_SEQS,
        "a run was sealed (the tail starts at {sealed})"
    );
    async fn ava_total(service: &TestService) -> Option<i64> {
        let path = format!("{LB}/sum/players/p-ava/rank");
        service.get(&path).await.1["value"].as_i64()
    }
    assert_eq!(ava_total(&service).await, Some(4_321));

    let target = json!({"game": "arena-clash", "mode": "solo", "season": "S7", "scope": "sum",
                        "target_player_id": "p-ava", "reason": "review"});
    let mut out = target.clone();
    out["moderation_id"] = json!("runs-1");
    out["action_type"] = json!("DISQUALIFY");
    assert_eq!(moderate(&service, out).await.0, StatusCode::CREATED);
    assert_eq!(ava_total(&service).await, None);
    let mut back = target.clone();
    back["moderation_id"] = json!("runs-2");
    back["action_type"] = json!("REINSTATE");
    assert_eq!(moderate(&service, back).await.0, StatusCode::CREATED);
    assert_eq!(
        ava_total(&service).await,
        Some(4_321),
        "every run and the tail were found"
    );
    for (n, (id, value)) in ava.iter().enumerate() {
        let (status, answer) = moderate(
            &service,
            json!({"moderation_id": format!("runs-inv-{n}"), "action_type": "INVALIDATE",
                   "reason": "review", "game": "arena-clash", "target_event_id": id}),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
        let left: i64 = ava[n + 1..].iter().map(|(_, v)| v).sum();
        assert_eq!(
            ava_total(&service).await,
            (left > 0).then_some(left),
            "after invalidating {id} ({value})"
        );
    }
    let (rebuilt, _, _) = standings_origin::log::rebuild(service.state.store(), None, clock.now_ms(), |_| {})
        .await
        .unwrap();
    let digests = |registry| {
        instances(registry)
            .into_iter()
            .map(|(board, period, _, digest)| (board, period, digest))
            .collect::<Vec<_>>()
    };
    assert_eq!(digests(&rebuilt), digests(service.state.registry()));
}
