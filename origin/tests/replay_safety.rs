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

/// Every instance's (board, period, board_version, digest), sorted.
fn instances(registry: &standings_origin::boards::Registry) -> Vec<(String, String, u64, String)> {
    let mut all: Vec<_> = registry
        .all_instances()
        .iter()
        .map(|slot| {
            let board = slot.read();
            (
                slot.id.to_string(),
                slot.period.key.clone(),
                board.version(),
                board.digest().to_string(),
            )
        })
        .collect();
    all.sort();
    all
}

/// Stops the service without a checkpoint (as a crash does), starts it again on the same
/// database and rebuilds from the log: both must succeed and reach the live instances exactly.
async fn restart_and_rebuild(service: TestService, clock: &Clock) -> TestService {
    let live = instances(&service.state.registry);
    let db = service.stop().await;
    let service = TestService::start_with_clock(db, clock.clone()).await;
    assert_eq!(instances(&service.state.registry), live, "restart");
    assert!(service.state.registry.broken().is_empty());
    let (rebuilt, _, _) =
        standings_origin::timeline::rebuild(&service.state.store, None, clock.now_ms(), |_| {})
            .await
            .unwrap();
    assert_eq!(instances(&rebuilt), live, "rebuild");
    service
}

on_both_databases!(
    an_invalidation_that_would_overflow_the_total_is_refused,
    a_restore_that_would_overflow_the_total_is_refused,
    a_late_decision_that_would_overflow_the_total_is_refused,
    a_log_entry_that_cannot_be_carried_out_breaks_only_its_boards,
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

/// Runs one statement on the test's database, around the service.
async fn execute(url: &str, sql: &str) {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(url).await.unwrap();
    sqlx::Executor::execute(&mut conn, sql).await.unwrap();
    conn.close().await.unwrap();
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
    assert!(service.state.ingest.checkpoint().await.unwrap().is_some());
    accept(&service, &on_high("h2", "p-chloe", 200)).await;
    let seq = service.state.store.next_seq().await.unwrap();
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
        service.state.restored,
        standings_origin::checkpoint::Restored::Checkpoint { .. }
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
        service.state.ingest.checkpoint().await.unwrap().is_none(),
        "no checkpoint holds a broken board"
    );
    let high_digest = service.get(&format!("{LB}/high/digest")).await.1;

    let (rebuilt, _, _) =
        standings_origin::timeline::rebuild(&service.state.store, None, clock.now_ms(), |_| {})
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
    assert_eq!(high(&rebuilt), high(&service.state.registry));

    // A restart meets the same entry again and comes up the same way.
    let db = service.stop().await;
    let service = TestService::start_with_clock(db, clock.clone()).await;
    assert_eq!(service.state.registry.broken().len(), 1);
    assert_eq!(service.get(&format!("{LB}/high/digest")).await.1, high_digest);
}
