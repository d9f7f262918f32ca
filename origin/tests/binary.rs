//! End-to-end tests of the real `standings` binary: first start, restart after a kill, rebuild
//! and import, on SQLite and PostgreSQL.

mod common;
mod process;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use process::*;
use serde_json::json;
const LB: &str = "/v1/leaderboards/arena-clash/solo/S7/global";

/// Defines the `highest` board the tests here use.
async fn define_global(addr: &str) {
    let (status, _) = http(
        addr,
        "PUT",
        "/v1/boards/arena-clash/solo/S7/global",
        Some(ADMIN),
        Some(&json!({"score_mode": "highest"})),
    )
    .await;
    assert_eq!(status, 201);
}

/// Submits events `evt-{i}` for 37 players, each answered 202.
async fn submit_events(addr: &str, ids: std::ops::Range<usize>) {
    for i in ids {
        let e = event(
            &format!("evt-{i}"),
            &format!("p-{}", i % 37),
            (i * 7919 % 1000) as i64,
            "2026-10-13T10:00:00Z",
        );
        assert_eq!(
            http(addr, "POST", "/v1/score-events", Some(SERVICE), Some(&e))
                .await
                .0,
            202
        );
    }
}

on_both_databases!(
    restart_after_a_kill_keeps_everything,
    rebuild_and_import,
    a_clean_stop_leaves_a_checkpoint_the_next_start_uses,
    an_action_that_cannot_be_carried_out_never_stops_a_start,
);

/// SIGTERM stops the binary cleanly with a checkpoint; the next start loads it (replaying no
/// log), and after more events and a SIGKILL, a start loads it and replays just those events.
/// Each time the board's digest is the one before the stop, and `standings rebuild` (the whole
/// log) agrees with the running service.
async fn a_clean_stop_leaves_a_checkpoint_the_next_start_uses(db: Db) {
    let db = TestDb::new(db).await;
    let addr = free_addr();
    let config = write_config(&db.dir, &db.url, &addr);
    let (running, first) = serve_logged(&config, &addr).await;
    assert!(first.contains("by replaying the whole log"), "{first}");
    define_global(&addr).await;
    submit_events(&addr, 0..100).await;
    let (_, before) = http(&addr, "GET", &format!("{LB}/digest"), Some(SERVICE), None).await;
    terminate(running);

    let (running, second) = serve_logged(&config, &addr).await;
    // Board definitions are not log entries: the 100 events are seq 1..=100.
    assert!(
        second.contains("from the checkpoint at seq 100 and 0 log entries after it"),
        "{second}"
    );
    let (_, after) = http(&addr, "GET", &format!("{LB}/digest"), Some(SERVICE), None).await;
    assert_eq!(after, before);
    submit_events(&addr, 100..130).await;
    let (_, before) = http(&addr, "GET", &format!("{LB}/digest"), Some(SERVICE), None).await;
    drop(running); // SIGKILL: the checkpoint stays the one from the clean stop.

    let (_running, third) = serve_logged(&config, &addr).await;
    assert!(
        third.contains("from the checkpoint at seq 100 and 30 log entries after it"),
        "{third}"
    );
    let (_, after) = http(&addr, "GET", &format!("{LB}/digest"), Some(SERVICE), None).await;
    assert_eq!(after, before);
    let rebuild = Command::new(BIN)
        .args(["rebuild", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&rebuild.stdout);
    assert!(rebuild.status.success(), "{report}");
    assert!(report.contains("matches the live board"), "{report}");
}

/// The issue's case through the binary: MAX, -10, +5, then INVALIDATE of the -10 is refused
/// (422 VALUE_OUT_OF_RANGE, nothing logged), so after a SIGKILL the binary is ready again with
/// the same total and `standings rebuild` succeeds. An entry that cannot be carried out,
/// written into the log around the service, leaves it ready but `degraded`, and the rebuild
/// names the board and the `seq` and exits 3.
async fn an_action_that_cannot_be_carried_out_never_stops_a_start(db: Db) {
    let db = TestDb::new(db).await;
    let addr = free_addr();
    let config = write_config(&db.dir, &db.url, &addr);
    let running = serve(&config, &addr).await;
    let (status, _) = http(
        &addr,
        "PUT",
        "/v1/boards/arena-clash/solo/S7/coins",
        Some(ADMIN),
        Some(&json!({"score_mode": "cumulative"})),
    )
    .await;
    assert_eq!(status, 201);
    for (id, value) in [("c1", i64::MAX), ("c2", -10), ("c3", 5)] {
        let mut e = event(id, "p-ava", value, "2026-10-13T10:00:00Z");
        e["scopes"] = json!(["coins"]);
        let (status, body) = http(&addr, "POST", "/v1/score-events", Some(SERVICE), Some(&e)).await;
        assert_eq!(status, 202, "{body}");
    }
    let invalidate = json!({"moderation_id": "m1", "action_type": "INVALIDATE", "reason": "review",
                            "game": "arena-clash", "target_event_id": "c2"});
    let (status, body) = http(
        &addr,
        "POST",
        "/v1/moderation-actions",
        Some(MODERATOR),
        Some(&invalidate),
    )
    .await;
    assert_eq!((status, body["code"].clone()), (422, json!("VALUE_OUT_OF_RANGE")));
    drop(running); // SIGKILL.

    let running = serve(&config, &addr).await;
    let rank = "/v1/leaderboards/arena-clash/solo/S7/coins/players/p-ava/rank";
    let (_, body) = http(&addr, "GET", rank, Some(SERVICE), None).await;
    assert_eq!(body["value"], i64::MAX - 5);
    let rebuild = || {
        Command::new(BIN)
            .args(["rebuild", "--config"])
            .arg(&config)
            .output()
            .unwrap()
    };
    let output = rebuild();
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{report}");
    assert!(report.contains("matches the live board"), "{report}");
    drop(running);

    // The three events are seq 1 to 3; nothing else was logged.
    let body = r#"{"action":{"kind":"INVALIDATE","target_event_id":"c2"},"request":{}}"#;
    execute(
        &db.url,
        &format!(
            "INSERT INTO actions (seq, game, kind, action_id, body, result, actor, reason, created_at) \
             VALUES (4, 'arena-clash', 'INVALIDATE', 'planted', '{body}', '{{}}', 'sql', 'planted', 0)"
        ),
    )
    .await;
    let _running = serve(&config, &addr).await;
    let (status, ready) = http(&addr, "GET", "/readyz", None, None).await;
    assert_eq!((status, ready["status"].clone()), (200, json!("degraded")));
    assert_eq!(ready["broken_boards"][0]["seq"], 4, "{ready}");
    let (status, body) = http(&addr, "GET", rank, Some(SERVICE), None).await;
    assert_eq!((status, body["code"].clone()), (503, json!("BOARD_BROKEN")));
    let output = rebuild();
    let report = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(3), "{report}");
    assert!(
        report.contains("arena-clash/solo/S7/coins: BROKEN, the log entry at seq 4"),
        "{report}"
    );
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("the log entry at seq 4 cannot be carried out on board arena-clash/solo/S7/coins"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Everything acknowledged survives a SIGKILL: after a restart the board has the same digest,
/// version and entries, and retries are still recognised as duplicates.
async fn restart_after_a_kill_keeps_everything(db: Db) {
    let db = TestDb::new(db).await;
    let addr = free_addr();
    let config = write_config(&db.dir, &db.url, &addr);
    let running = serve(&config, &addr).await;
    define_global(&addr).await;
    submit_events(&addr, 0..200).await;
    let (_, before) = http(&addr, "GET", &format!("{LB}/digest"), Some(SERVICE), None).await;
    let (_, top_before) = http(&addr, "GET", &format!("{LB}/top?limit=100"), Some(SERVICE), None).await;
    drop(running); // SIGKILL: no graceful shutdown.

    let _running = serve(&config, &addr).await;
    let (_, after) = http(&addr, "GET", &format!("{LB}/digest"), Some(SERVICE), None).await;
    assert_eq!(after, before, "same digest, version and size after a restart");
    let (_, top_after) = http(&addr, "GET", &format!("{LB}/top?limit=100"), Some(SERVICE), None).await;
    assert_eq!(top_after["entries"], top_before["entries"]);
    let retry = event("evt-3", "p-3", 3 * 7919 % 1000, "2026-10-13T10:00:00Z");
    let (status, body) = http(&addr, "POST", "/v1/score-events", Some(SERVICE), Some(&retry)).await;
    assert_eq!((status, body["status"].clone()), (200, json!("DUPLICATE")));
}

/// `standings rebuild` replays the log and matches the live digests; `standings import` loads
/// NDJSON with the same validation and idempotency, refusing to run beside a live service.
async fn rebuild_and_import(db: Db) {
    let db = TestDb::new(db).await;
    let addr = free_addr();
    let config = write_config(&db.dir, &db.url, &addr);
    let running = serve(&config, &addr).await;
    for scope in ["global", "coins"] {
        let mode = if scope == "coins" { "cumulative" } else { "highest" };
        let path = format!("/v1/boards/arena-clash/solo/S7/{scope}");
        assert_eq!(
            http(
                &addr,
                "PUT",
                &path,
                Some(ADMIN),
                Some(&json!({"score_mode": mode}))
            )
            .await
            .0,
            201
        );
    }
    for i in 0..50 {
        let mut e = event(
            &format!("evt-{i}"),
            &format!("p-{}", i % 9),
            i as i64 * 10,
            "2026-10-13T10:00:00Z",
        );
        e["scopes"] = json!(["global", "coins"]);
        assert_eq!(
            http(&addr, "POST", "/v1/score-events", Some(SERVICE), Some(&e))
                .await
                .0,
            202
        );
    }
    let output = Command::new(BIN)
        .args(["rebuild", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(stdout.matches("matches the live board").count(), 2, "{stdout}");
    assert!(
        stdout.contains("player index: the pages of 1 sealed run(s) match the log"),
        "{stdout}"
    );
    let output = Command::new(BIN)
        .args(["rebuild", "--board", "arena-clash/solo/S7/coins", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("rebuilt 1 board from the event log"),
        "{stdout}"
    );

    // Import refuses while the service runs.
    let ndjson = db.dir.join("events.ndjson");
    let mut lines: Vec<String> = (50..80)
        .map(|i| {
            event(
                &format!("evt-{i}"),
                &format!("p-{}", i % 9),
                i as i64 * 10,
                "2026-10-13T10:00:00Z",
            )
            .to_string()
        })
        .collect();
    let mut duplicate = event("evt-0", "p-0", 0, "2026-10-13T10:00:00Z");
    duplicate["scopes"] = json!(["global", "coins"]);
    lines.push(duplicate.to_string());
    lines.push(event("evt-bad", "p-\u{1}", 1, "2026-10-13T10:00:00Z").to_string()); // rejected
    std::fs::write(&ndjson, lines.join("\n")).unwrap();
    let refused = Command::new(BIN)
        .args(["import", "--config"])
        .arg(&config)
        .arg(&ndjson)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("stop it before importing"));
    drop(running);

    // With the service stopped nothing can be compared: the rebuild says so, and exits 4 only
    // when the comparison was required.
    for (flags, code) in [(&[][..], 0), (&["--require-live"][..], 4)] {
        let output = Command::new(BIN)
            .arg("rebuild")
            .args(flags)
            .arg("--config")
            .arg(&config)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(code), "{flags:?}: {stdout}");
        assert!(
            stdout.contains("2 boards were not compared with a running service"),
            "{stdout}"
        );
    }

    let output = Command::new(BIN)
        .args(["import", "--config"])
        .arg(&config)
        .arg(&ndjson)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(4), "one rejected line: {stdout}");
    assert!(
        stdout.contains("30 accepted, 1 duplicates, 1 rejected"),
        "{stdout}"
    );
    let _running = serve(&config, &addr).await;
    let (_, top) = http(&addr, "GET", &format!("{LB}/top?limit=100"), Some(SERVICE), None).await;
    assert_eq!(top["entries"][0]["value"], 790, "the imported evt-79 leads");
}

/// On first start with no config, the binary writes one with fresh random tokens, readable by
/// its owner only, and serves on the embedded default.
#[tokio::test]
async fn first_start_writes_a_private_config() {
    let db = TestDb::new(Db::Sqlite).await;
    let mut child = Command::new(BIN)
        .arg("serve")
        .current_dir(&db.dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let path = db.dir.join("standings-data/standings.toml");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !path.exists() {
        assert!(Instant::now() < deadline, "no config written");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let config = standings_origin::config::Config::load(&path).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(config.listen, "127.0.0.1:7400");
    assert!(config.database.starts_with("sqlite://"));
    assert_eq!(config.tokens.len(), 2);
    assert!(config.tokens.iter().all(|t| t.secret.len() == 64));
    assert_ne!(config.tokens[0].secret, config.tokens[1].secret);
    wait_ready("127.0.0.1:7400", &mut child).await;
    let running = Running(child);
    let (status, body) = http(
        "127.0.0.1:7400",
        "GET",
        "/v1/games/arena-clash/boards",
        Some(&config.tokens[0].secret),
        None,
    )
    .await;
    assert_eq!((status, body["boards"].clone()), (200, json!([])));
    assert!(db.dir.join("standings-data/standings.db").exists());
    // The first start prints a viewer link that reads with a player token, never writes.
    assert!(
        config
            .player_jwt_hs256_secret
            .as_ref()
            .is_some_and(|s| s.len() == 64)
    );
    let mut running = running;
    let stdout = std::io::BufReader::new(running.0.stdout.take().unwrap());
    let printed: Vec<String> = std::io::BufRead::lines(stdout)
        .map_while(Result::ok)
        .take_while(|line| !line.starts_with("standings: serving"))
        .collect();
    let link = printed
        .iter()
        .find_map(|line| line.strip_prefix("standings: the board viewer, reading for an hour: "))
        .unwrap_or_else(|| panic!("no viewer link in {printed:?}"));
    let token = link.strip_prefix("http://127.0.0.1:7400/#token=").unwrap();
    let (status, _) = http(
        "127.0.0.1:7400",
        "GET",
        "/v1/games/arena-clash/boards",
        Some(token),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let (status, body) = http(
        "127.0.0.1:7400",
        "PUT",
        "/v1/boards/arena-clash/solo/S1/global",
        Some(token),
        Some(&json!({"score_mode": "highest"})),
    )
    .await;
    assert_eq!((status, body["code"].as_str()), (403, Some("FORBIDDEN")));
    drop(running);
}

/// A `--listen` or `--database` the service cannot use is refused before a first start writes
/// anything: no config with fresh tokens printed for a service that never ran, no database.
#[tokio::test]
async fn a_bad_listen_address_is_refused_before_anything_is_written() {
    let db = TestDb::new(Db::Sqlite).await;
    for (flag, value, says) in [
        (
            "--listen",
            "localhost",
            "--listen: listen = \"localhost\" is not an address with a port",
        ),
        (
            "--database",
            "mysql://db/x",
            "--database: database = \"mysql://db/x\" must start with",
        ),
    ] {
        let output = Command::new(BIN)
            .args(["serve", flag, value])
            .current_dir(&db.dir)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{flag}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{flag}: {stderr}");
        assert!(
            output.stdout.is_empty(),
            "{flag}: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        assert!(
            !db.dir.join("standings-data").exists(),
            "{flag}: something was written"
        );
    }
}

/// A `postgresql://` URL (the scheme libpq documents first) is served like a `postgres://` one.
#[tokio::test]
async fn a_postgresql_url_is_served() {
    let db = TestDb::new(Db::Postgres).await;
    let url = db.url.replacen("postgres://", "postgresql://", 1);
    assert!(url.starts_with("postgresql://"), "{url}");
    let addr = free_addr();
    let config = write_config(&db.dir, &url, &addr);
    let running = serve(&config, &addr).await;
    define_global(&addr).await;
    submit_events(&addr, 0..3).await;
    terminate(running);
}

/// First starts on a fresh SQLite file log no error: the pool opens its connections at once,
/// and they used to race for the switch to WAL ("database is locked" in `after_connect`, on
/// about one start in six).
#[tokio::test]
async fn first_starts_on_a_fresh_sqlite_file_log_no_error() {
    for start in 0..12 {
        let db = TestDb::new(Db::Sqlite).await;
        let addr = free_addr();
        let config = write_config(&db.dir, &db.url, &addr);
        let mut child = Command::new(BIN)
            .args(["serve", "--config"])
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let lines = std::thread::spawn(move || {
            use std::io::Read;
            let mut text = String::new();
            let _ = std::io::BufReader::new(stderr).read_to_string(&mut text);
            text
        });
        wait_ready(&addr, &mut child).await;
        terminate(Running(child));
        let logged = lines.join().unwrap();
        assert!(
            !logged.contains("ERROR") && !logged.contains("database is locked"),
            "start {start} logged an error:\n{logged}"
        );
    }
}
