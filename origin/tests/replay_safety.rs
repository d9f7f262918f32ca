//! Every action is decided against the current state before it is logged, so no sequence of
//! accepted requests leaves a log that fails to replay; and a log that fails anyway (written
//! around the service) brings up every board it does not touch. On SQLite and PostgreSQL.

mod common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{Value, json};
use standings_origin::clock::{Clock, parse_rfc3339};

const LB: &str = "/v1/leaderboards/arena-clash/solo/S7";

fn ms(rfc3339: &str) -> i64 {
    parse_rfc3339(rfc3339).unwrap()
}

async fn service_at(db: Db, now: &str) -> (TestService, Clock) {
    let clock = Clock::manual(ms(now));
    let service = TestService::start_with_clock(TestDb::new(db).await, clock.clone()).await;
    (service, clock)
}

/// Defines `arena-clash/solo/S7/{scope}` with the full `i64` value range.
async fn define(service: &TestService, scope: &str, score_mode: &str) {
    let (status, answer) = service
        .call(
            Method::PUT,
            &format!("/v1/boards/arena-clash/solo/S7/{scope}"),
            Some(ADMIN),
            Some(&json!({ "score_mode": score_mode })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
}

/// An event on the `sum` board.
fn on_sum(id: &str, player: &str, value: i64, when: &str) -> Value {
    let mut e = event(id, player, value, when);
    e["scopes"] = json!(["sum"]);
    e
}

async fn accept(service: &TestService, event: &Value) {
    let (status, body) = service.submit(event).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{event}: {body}");
}

async fn moderate(service: &TestService, body: &Value) -> (StatusCode, Value) {
    service
        .call(
            Method::POST,
            "/v1/moderation-actions",
            Some(MODERATOR),
            Some(body),
        )
        .await
}

fn moderation(id: &str, action: &str, event_id: &str) -> Value {
    json!({"moderation_id": id, "action_type": action, "reason": "review", "game": "arena-clash",
           "target_event_id": event_id})
}

async fn decide(service: &TestService, event_id: &str, decision: &str) -> (StatusCode, Value) {
    service
        .call(
            Method::POST,
            &format!("/v1/late-events/{event_id}/decision?game=arena-clash"),
            Some(MODERATOR),
            Some(&json!({"decision": decision, "reason": "review"})),
        )
        .await
}

/// A player's total on the `sum` board, `None` when unranked.
async fn total(service: &TestService, player: &str) -> Option<i64> {
    let (status, body) = service.get(&format!("{LB}/sum/players/{player}/rank")).await;
    (status == StatusCode::OK).then(|| body["value"].as_i64().unwrap())
}

async fn audit_len(service: &TestService) -> usize {
    let (_, audit) = service
        .call(Method::GET, "/v1/audit?game=arena-clash", Some(MODERATOR), None)
        .await;
    audit["audit"].as_array().unwrap().len()
}

/// Stops the service without a checkpoint (as a crash does), starts it again on the same
/// database and rebuilds from the log: both must succeed and reach the live instances exactly.
async fn restart_and_rebuild(service: TestService, clock: &Clock) -> TestService {
    let live = instances(service.state.registry());
    let db = service.stop().await;
    let service = TestService::start_with_clock(db, clock.clone()).await;
    assert_eq!(instances(service.state.registry()), live, "restart");
    assert!(service.state.registry().broken().is_empty());
    let (rebuilt, _, results) =
        standings_origin::log::rebuild(service.state.store(), None, clock.now_ms(), |_| {})
            .await
            .unwrap();
    assert_eq!(instances(&rebuilt), live, "rebuild");
    assert!(rebuilt.broken().is_empty());
    // Every stored result snapshot (finalization, corrections) is reproduced by the log.
    for entry in rebuilt.all() {
        for stored in service.state.store().results(&entry.def.id).await.unwrap() {
            assert!(
                results.iter().any(|r| r.board == stored.board
                    && r.correction == stored.correction
                    && r.digest == stored.digest),
                "result {} correction {} is not reproduced",
                stored.board,
                stored.correction
            );
        }
    }
    service
}

on_both_databases!(
    an_invalidation_that_would_overflow_the_total_is_refused,
    a_restore_that_would_overflow_the_total_is_refused,
    a_late_decision_that_would_overflow_the_total_is_refused,
    a_log_entry_that_cannot_be_carried_out_breaks_only_its_boards,
    random_requests_leave_a_log_that_replays,
);

/// `MAX`, `-10`, `+5`, then INVALIDATE the `-10`: the total would overflow, so the action is
/// 422 `VALUE_OUT_OF_RANGE` and nothing is logged: a retry is decided again, the event is still
/// counted (a resubmission is a plain duplicate), and a restart and a rebuild come up. Whether
/// an invalidation fits depends on the total, not on the order of the remaining events.
async fn an_invalidation_that_would_overflow_the_total_is_refused(db: Db) {
    let (service, clock) = service_at(db, "2026-10-14T10:00:00Z").await;
    define(&service, "sum", "cumulative").await;
    accept(&service, &on_sum("e1", "p-ava", i64::MAX, "2026-10-14T09:00:00Z")).await;
    accept(&service, &on_sum("e2", "p-ava", -10, "2026-10-14T09:01:00Z")).await;
    accept(&service, &on_sum("e3", "p-ava", 5, "2026-10-14T09:02:00Z")).await;
    assert_eq!(total(&service, "p-ava").await, Some(i64::MAX - 5));
    for _ in 0..2 {
        let (status, body) = moderate(&service, &moderation("m1", "INVALIDATE", "e2")).await;
        assert_eq!(
            (status, body["code"].clone()),
            (StatusCode::UNPROCESSABLE_ENTITY, json!("VALUE_OUT_OF_RANGE")),
            "{body}"
        );
    }
    assert_eq!(audit_len(&service).await, 0, "nothing is logged");
    assert_eq!(total(&service, "p-ava").await, Some(i64::MAX - 5));
    let (status, body) = service
        .submit(&on_sum("e2", "p-ava", -10, "2026-10-14T09:01:00Z"))
        .await;
    assert_eq!(
        (status, body["status"].clone()),
        (StatusCode::OK, json!("DUPLICATE"))
    );
    let service = restart_and_rebuild(service, &clock).await;

    // With one more -10 the same invalidation leaves MAX - 5, which fits, though a running sum
    // of MAX, +5, -10 in log order would overflow on the way.
    accept(&service, &on_sum("e4", "p-ava", -10, "2026-10-14T09:03:00Z")).await;
    let (status, body) = moderate(&service, &moderation("m2", "INVALIDATE", "e2")).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(total(&service, "p-ava").await, Some(i64::MAX - 5));
    let (status, body) = moderate(&service, &moderation("m2", "INVALIDATE", "e2")).await;
    assert_eq!((status, body["replayed"].clone()), (StatusCode::OK, json!(true)));
    assert_eq!(body["boards"].as_array().map(Vec::len), Some(1), "{body}");
    restart_and_rebuild(service, &clock).await;
}

/// `+5`, INVALIDATE it, then `MAX`: a RESTORE of the `+5` would overflow, so it is refused
/// and changes nothing; the restart and the rebuild agree.
async fn a_restore_that_would_overflow_the_total_is_refused(db: Db) {
    let (service, clock) = service_at(db, "2026-10-14T10:00:00Z").await;
    define(&service, "sum", "cumulative").await;
    accept(&service, &on_sum("e1", "p-ava", 5, "2026-10-14T09:00:00Z")).await;
    let (status, body) = moderate(&service, &moderation("m1", "INVALIDATE", "e1")).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    accept(&service, &on_sum("e2", "p-ava", i64::MAX, "2026-10-14T09:01:00Z")).await;
    let (status, body) = moderate(&service, &moderation("m2", "RESTORE", "e1")).await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("VALUE_OUT_OF_RANGE")),
        "{body}"
    );
    assert_eq!(audit_len(&service).await, 1);
    assert_eq!(total(&service, "p-ava").await, Some(i64::MAX));
    let (status, body) = service
        .submit(&on_sum("e1", "p-ava", 5, "2026-10-14T09:00:00Z"))
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::CONFLICT, json!("EVENT_INVALIDATED")),
        "still invalidated"
    );
    restart_and_rebuild(service, &clock).await;
}

/// A late event is stored as `LATE` whatever the total (it is not applied on arrival, and the
/// total may change before it is decided); deciding `apply` when the total would overflow is
/// refused, leaves it waiting, and a `reject` is still possible.
async fn a_late_decision_that_would_overflow_the_total_is_refused(db: Db) {
    let (service, clock) = service_at(db, "2026-10-13T10:00:00Z").await;
    define(&service, "sum", "cumulative").await;
    accept(&service, &on_sum("e1", "p-ava", i64::MAX, "2026-10-13T09:00:00Z")).await;
    clock.set(ms("2026-10-13T12:00:00Z"));
    let (status, _) = service
        .call(
            Method::PUT,
            "/v1/seasons/arena-clash/S7/state",
            Some(ADMIN),
            Some(&json!({"state": "frozen"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    clock.set(ms("2026-10-13T12:30:00Z"));
    let (status, body) = service
        .submit(&on_sum("late-1", "p-ava", 5, "2026-10-13T11:59:00Z"))
        .await;
    assert_eq!(
        (status, body["status"].clone()),
        (StatusCode::ACCEPTED, json!("LATE"))
    );
    let (status, body) = decide(&service, "late-1", "apply").await;
    assert_eq!(
        (status, body["code"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("VALUE_OUT_OF_RANGE")),
        "{body}"
    );
    assert_eq!(total(&service, "p-ava").await, Some(i64::MAX));
    let (_, queue) = service
        .call(
            Method::GET,
            "/v1/late-events?game=arena-clash",
            Some(MODERATOR),
            None,
        )
        .await;
    assert_eq!(queue["late_events"][0]["status"], "LATE", "{queue}");
    let service = restart_and_rebuild(service, &clock).await;
    let (status, body) = decide(&service, "late-1", "reject").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    restart_and_rebuild(service, &clock).await;
}

/// An INVALIDATE whose recompute overflows, written into the log with SQL (no accepted request
/// can write it): the start, from a checkpoint and the log after it, says which `seq` broke
/// which board and comes up for every other board; `/readyz` is 200 `degraded` and lists it,
/// `/metrics` counts it, its reads, writes and actions answer 503 `BOARD_BROKEN`, no checkpoint
/// is written over it, and the rebuild reports the same board and reproduces the others.
async fn a_log_entry_that_cannot_be_carried_out_breaks_only_its_boards(db: Db) {
    let (service, clock) = service_at(db, "2026-10-14T10:00:00Z").await;
    define(&service, "sum", "cumulative").await;
    define(&service, "high", "highest").await;
    accept(&service, &on_sum("e1", "p-ava", i64::MAX, "2026-10-14T09:00:00Z")).await;
    accept(&service, &on_sum("e2", "p-ava", -10, "2026-10-14T09:01:00Z")).await;
    accept(&service, &on_sum("e3", "p-ava", 5, "2026-10-14T09:02:00Z")).await;
    let on_high = |id: &str, player: &str, value: i64| {
        let mut e = event(id, player, value, "2026-10-14T09:03:00Z");
        e["scopes"] = json!(["high"]);
        e
    };
    accept(&service, &on_high("h1", "p-ben", 100)).await;
    assert!(service.state.ingest().checkpoint().await.unwrap().is_some());
    accept(&service, &on_high("h2", "p-chloe", 200)).await;
    let seq = service.state.store().next_seq().await.unwrap();
    let db = service.stop().await;
    let body = r#"{"action":{"kind":"INVALIDATE","target_event_id":"e2"},"request":{}}"#;
    execute(
        &db.url,
        &format!(
            "INSERT INTO actions (seq, game, kind, action_id, body, result, actor, reason, created_at) \
             VALUES ({seq}, 'arena-clash', 'INVALIDATE', 'planted', '{body}', '{{}}', 'sql', 'planted', {})",
            clock.now_ms()
        ),
    )
    .await;

    let service = TestService::start_with_clock(db, clock.clone()).await;
    assert!(matches!(
        service.state.restored(),
        standings_origin::writer::checkpoint::Restored::Checkpoint { .. }
    ));
    let (status, ready) = service.call(Method::GET, "/readyz", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        ready,
        json!({"status": "degraded", "broken_boards": [{"game": "arena-clash", "mode": "solo",
               "season": "S7", "scope": "sum", "code": "BOARD_BROKEN", "seq": seq}]})
    );
    let (_, metrics) = service.call(Method::GET, "/metrics", None, None).await;
    let metrics = metrics.as_str().unwrap().to_string();
    for line in [
        "standings_broken_boards 1".to_string(),
        format!(
            "standings_board_broken_seq{{game=\"arena-clash\",mode=\"solo\",season=\"S7\",scope=\"sum\"}} {seq}"
        ),
    ] {
        assert!(metrics.lines().any(|l| l == line), "missing {line} in\n{metrics}");
    }
    let broken = |(status, body): (StatusCode, Value)| {
        assert_eq!(
            (status, body["code"].clone()),
            (StatusCode::SERVICE_UNAVAILABLE, json!("BOARD_BROKEN")),
            "{body}"
        );
    };
    broken(service.get(&format!("{LB}/sum/top")).await);
    broken(service.get(&format!("{LB}/sum/players/p-ava/rank")).await);
    broken(
        service
            .submit(&on_sum("e4", "p-ava", 1, "2026-10-14T09:04:00Z"))
            .await,
    );
    broken(moderate(&service, &moderation("m1", "INVALIDATE", "e3")).await);
    // Every other board is served and takes writes.
    let (status, top) = service.get(&format!("{LB}/high/top")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(top["total_players"], 2, "{top}");
    accept(&service, &on_high("h3", "p-dev", 300)).await;
    assert!(
        service.state.ingest().checkpoint().await.unwrap().is_none(),
        "no checkpoint holds a broken board"
    );
    let high_digest = service.get(&format!("{LB}/high/digest")).await.1;

    let (rebuilt, _, _) = standings_origin::log::rebuild(service.state.store(), None, clock.now_ms(), |_| {})
        .await
        .unwrap();
    let broken_boards: Vec<(String, i64)> = rebuilt
        .broken()
        .iter()
        .map(|(id, b)| (id.to_string(), b.seq))
        .collect();
    assert_eq!(broken_boards, [("arena-clash/solo/S7/sum".to_string(), seq)]);
    let high = |registry: &standings_origin::boards::Registry| {
        instances(registry)
            .into_iter()
            .filter(|i| i.0.ends_with("/high"))
            .collect::<Vec<_>>()
    };
    assert_eq!(high(&rebuilt), high(service.state.registry()));

    // A restart meets the same entry again and comes up the same way.
    let db = service.stop().await;
    let service = TestService::start_with_clock(db, clock.clone()).await;
    assert_eq!(service.state.registry().broken().len(), 1);
    assert_eq!(service.get(&format!("{LB}/high/digest")).await.1, high_digest);
}

/// One request of a random run.
#[derive(Clone, Debug)]
enum Request {
    /// A new event of player `player` on the boards of `scopes` (0, 1: sum, 2: high, 3, 4:
    /// both),
    /// achieved yesterday (late on the daily instance, on time on all time) or today.
    Event {
        player: u8,
        value: i64,
        scopes: u8,
        yesterday: bool,
    },
    /// The `nth` submitted event again, as a retry.
    Resubmit {
        nth: usize,
    },
    Invalidate {
        nth: usize,
    },
    Restore {
        nth: usize,
    },
    Disqualify {
        player: u8,
        high: bool,
    },
    Reinstate {
        player: u8,
        high: bool,
    },
    /// A late decision on the `nth` submitted event (most are not late: 409 NOT_LATE).
    Decide {
        nth: usize,
        apply: bool,
    },
    /// A checkpoint, so that the restart replays only the log after it.
    Checkpoint,
    /// The season's next state (frozen, finalized, published; never archived, whose boards
    /// leave memory): later events are late or refused, and moderation writes corrections.
    AdvanceSeason,
}

fn value() -> impl proptest::strategy::Strategy<Value = i64> {
    use proptest::prelude::*;
    // Mostly the extremes and small steps around zero, so that totals reach the edge of the
    // range and invalidations and restores move them across it.
    prop_oneof![
        3 => Just(i64::MAX),
        3 => Just(i64::MIN),
        1 => Just(i64::MAX - 1),
        1 => Just(i64::MIN + 1),
        1 => Just(i64::MAX / 2 + 1),
        1 => Just(i64::MIN / 2),
        4 => -10i64..=10,
        1 => any::<i64>(),
    ]
}

fn request() -> impl proptest::strategy::Strategy<Value = Request> {
    use proptest::prelude::*;
    prop_oneof![
        12 => (0u8..2, value(), 0u8..5, any::<bool>()).prop_map(|(player, value, scopes, yesterday)| {
            Request::Event { player, value, scopes, yesterday }
        }),
        1 => any::<usize>().prop_map(|nth| Request::Resubmit { nth }),
        5 => any::<usize>().prop_map(|nth| Request::Invalidate { nth }),
        5 => any::<usize>().prop_map(|nth| Request::Restore { nth }),
        1 => (0u8..2, any::<bool>()).prop_map(|(player, high)| Request::Disqualify { player, high }),
        1 => (0u8..2, any::<bool>()).prop_map(|(player, high)| Request::Reinstate { player, high }),
        4 => (any::<usize>(), any::<bool>()).prop_map(|(nth, apply)| Request::Decide { nth, apply }),
        1 => Just(Request::Checkpoint),
        1 => Just(Request::AdvanceSeason),
    ]
}

/// Every board's `/digest`: all time, and the daily instances of yesterday and today.
async fn digests(service: &TestService) -> Vec<Value> {
    let mut all = Vec::new();
    for path in [
        format!("{LB}/high/digest"),
        format!("{LB}/sum/digest"),
        format!("{LB}/sum/digest?period=daily&at=2026-10-13T12:00:00Z"),
        format!("{LB}/sum/digest?period=daily"),
    ] {
        let (status, body) = service.get(&path).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        all.push(body);
    }
    all
}

/// Runs `requests` through the router on a fresh database: no answer is a 5xx; then a restart
/// (from the checkpoint, if one was taken, or the whole log) and a rebuild both reach exactly
/// the live instances and every board's `/digest`, with no board broken.
async fn run_requests(db: Db, requests: Vec<Request>) {
    let (service, clock) = service_at(db, "2026-10-14T10:00:00Z").await;
    let (status, answer) = service
        .call(
            Method::PUT,
            "/v1/boards/arena-clash/solo/S7/sum",
            Some(ADMIN),
            Some(
                &json!({"score_mode": "cumulative", "periods": ["all_time", "daily"], "grace_seconds": 300}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    define(&service, "high", "highest").await;
    let mut submitted: Vec<Value> = Vec::new();
    let mut next_states = ["frozen", "finalized", "published"].into_iter();
    for (i, request) in requests.iter().enumerate() {
        let nth = |n: usize| (!submitted.is_empty()).then(|| submitted[n % submitted.len()].clone());
        let answer = match request {
            Request::Event {
                player,
                value,
                scopes,
                yesterday,
            } => {
                let day = if *yesterday { "13" } else { "14" };
                let mut e = event(
                    &format!("e{i}"),
                    &format!("p-{player}"),
                    *value,
                    &format!("2026-10-{day}T09:{:02}:00Z", i % 60),
                );
                e["scopes"] = match scopes {
                    0 | 1 => json!(["sum"]),
                    2 => json!(["high"]),
                    _ => json!(["sum", "high"]),
                };
                submitted.push(e.clone());
                service.submit(&e).await
            }
            Request::Resubmit { nth: n } => match nth(*n) {
                Some(e) => service.submit(&e).await,
                None => continue,
            },
            Request::Invalidate { nth: n } | Request::Restore { nth: n } => {
                let Some(e) = nth(*n) else { continue };
                let kind = if matches!(request, Request::Invalidate { .. }) {
                    "INVALIDATE"
                } else {
                    "RESTORE"
                };
                let id = e["event_id"].as_str().unwrap();
                moderate(&service, &moderation(&format!("m{i}"), kind, id)).await
            }
            Request::Disqualify { player, high } | Request::Reinstate { player, high } => {
                let kind = if matches!(request, Request::Disqualify { .. }) {
                    "DISQUALIFY"
                } else {
                    "REINSTATE"
                };
                let body = json!({"moderation_id": format!("m{i}"), "action_type": kind, "reason": "review",
                                  "game": "arena-clash", "mode": "solo", "season": "S7",
                                  "scope": if *high { "high" } else { "sum" },
                                  "target_player_id": format!("p-{player}")});
                moderate(&service, &body).await
            }
            Request::Decide { nth: n, apply } => {
                let Some(e) = nth(*n) else { continue };
                let id = e["event_id"].as_str().unwrap();
                decide(&service, id, if *apply { "apply" } else { "reject" }).await
            }
            Request::Checkpoint => {
                service.state.ingest().checkpoint().await.unwrap();
                continue;
            }
            Request::AdvanceSeason => {
                let Some(state) = next_states.next() else { continue };
                clock.advance(1_000);
                let answer = service
                    .call(
                        Method::PUT,
                        "/v1/seasons/arena-clash/S7/state",
                        Some(ADMIN),
                        Some(&json!({ "state": state })),
                    )
                    .await;
                assert_eq!(answer.0, StatusCode::OK, "{state}: {}", answer.1);
                answer
            }
        };
        assert!(
            answer.0.as_u16() < 500,
            "request {i} {request:?} answered {}: {}",
            answer.0,
            answer.1
        );
    }
    let live = digests(&service).await;
    let service = restart_and_rebuild(service, &clock).await;
    assert_eq!(digests(&service).await, live);
}

/// Random runs of events with extreme values, retries, invalidations, restores,
/// disqualifications, reinstatements, late decisions, season transitions and checkpoints
/// through the real writer:
/// every accepted request leaves a log that a restart and a rebuild replay to the live boards.
/// From a fixed seed, 32 cases on SQLite and 16 on PostgreSQL, where a fresh database per
/// case (created and dropped on the shared server) is most of a case's time.
async fn random_requests_leave_a_log_that_replays(db: Db) {
    use proptest::collection::vec;
    use proptest::test_runner::{Config, RngAlgorithm, TestError, TestRng, TestRunner};
    {
        let config = Config {
            cases: if db == Db::Sqlite { 32 } else { 16 },
            failure_persistence: None,
            max_shrink_iters: 256,
            ..Config::default()
        };
        let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
        let runtime = tokio::runtime::Handle::current();
        // The runner calls a plain closure; each case drives the service on this runtime.
        let outcome = tokio::task::block_in_place(|| {
            runner.run(&vec(request(), 1..40), |requests| {
                runtime.block_on(run_requests(db, requests));
                Ok(())
            })
        });
        if let Err(e) = outcome {
            match e {
                TestError::Fail(why, requests) => panic!("{why}; minimal run: {requests:#?}"),
                TestError::Abort(why) => panic!("{why}"),
            }
        }
    }
}
