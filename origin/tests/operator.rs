//! The operator's tools through the real binary: the command line's help and errors, options
//! from the environment, JSON logs that never carry a secret, and `export` then `import`
//! reproducing every board.

mod common;
mod process;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::*;
use process::*;
use serde_json::{Value, json};

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `--help`, `serve --help` and `--version` answer 0 on stdout with what they should say; a
/// bad option or value exits 2 and names it, whether it came from the command line or the
/// environment.
#[test]
fn the_command_line_helps_and_names_what_is_wrong() {
    let help = run(&["--help"]);
    assert_eq!(help.status.code(), Some(0));
    let stdout = text(&help.stdout);
    for needle in [
        "Usage: standings",
        "serve",
        "rebuild",
        "import",
        "export",
        "--config",
        "STANDINGS_CONFIG",
    ] {
        assert!(stdout.contains(needle), "--help names {needle}: {stdout}");
    }
    let serve = run(&["serve", "--help"]);
    assert_eq!(serve.status.code(), Some(0));
    let stdout = text(&serve.stdout);
    for needle in [
        "Usage: standings serve",
        "--listen",
        "STANDINGS_LISTEN",
        "--database",
        "STANDINGS_DATABASE",
        "--log-format",
    ] {
        assert!(stdout.contains(needle), "serve --help names {needle}: {stdout}");
    }
    let version = run(&["--version"]);
    assert_eq!(version.status.code(), Some(0));
    assert_eq!(
        text(&version.stdout).trim(),
        format!("standings {}", env!("CARGO_PKG_VERSION"))
    );
    let export = run(&["export", "--help"]);
    assert!(
        text(&export.stdout).contains("the same digest"),
        "export says what it guarantees"
    );

    for (args, named) in [
        (&["serve", "--bogus"][..], "--bogus"),
        (&["rebuild", "--board", "not-a-board"], "--board"),
        (&["export", "--since-seq=-3"], "--since-seq"),
        (&["serve", "--log-format", "yaml"], "--log-format"),
        (&["import"], "FILE.ndjson"),
        (&["unknown-command"], "unknown-command"),
    ] {
        let output = run(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            text(&output.stderr).contains(named),
            "{args:?}: {}",
            text(&output.stderr)
        );
    }
    let output = Command::new(BIN)
        .arg("serve")
        .env("STANDINGS_LOG_FORMAT", "yaml")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("--log-format"),
        "{}",
        text(&output.stderr)
    );
}

on_both_databases!(
    the_logs_are_json_lines_without_secrets,
    an_export_imported_into_an_empty_database_gives_the_same_boards,
);

/// With `RUST_LOG=debug` and `--log-format json`, and its config, address and database given
/// only through the environment, the binary logs every request (method, path, status,
/// latency) and its startup summary as JSON lines with fields, while neither a valid token, an
/// invalid one, a token in a query string nor the database's password ever appears.
async fn the_logs_are_json_lines_without_secrets(db: Db) {
    let db = TestDb::new(db).await;
    // PostgreSQL trusts the test user, so a password in the URL is accepted and ignored.
    let url = match db.url.split_once("://") {
        Some(("postgres", rest)) => format!("postgres://{}", rest.replacen('@', ":db-password-hunter2@", 1)),
        _ => db.url.clone(),
    };
    let addr = free_addr();
    // The file names another address and no database that works: the environment wins.
    let config = write_config(&db.dir, "sqlite:///nonexistent/dir/standings.db", "127.0.0.1:1");
    let log = db.dir.join("standings.log");
    let mut child = Command::new(BIN)
        .args(["serve", "--log-format", "json"])
        .env("RUST_LOG", "debug")
        .env("STANDINGS_CONFIG", &config)
        .env("STANDINGS_LISTEN", &addr)
        .env("STANDINGS_DATABASE", &url)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    wait_ready(&addr, &mut child).await;
    let running = Running(child);
    let board = "/v1/boards/arena-clash/solo/S7/global";
    let (status, _) = http(
        &addr,
        "PUT",
        board,
        Some(ADMIN),
        Some(&json!({"score_mode": "highest"})),
    )
    .await;
    assert_eq!(status, 201);
    let e = event("e1", "p-ava", 10, "2026-10-13T10:00:00Z");
    assert_eq!(
        http(&addr, "POST", "/v1/score-events", Some(SERVICE), Some(&e))
            .await
            .0,
        202
    );
    let lb = "/v1/leaderboards/arena-clash/solo/S7/global";
    let invalid = "not-a-token-but-secret-anyway-4242";
    let in_query = "query-token-secret-7777";
    assert_eq!(
        http(&addr, "GET", &format!("{lb}/top"), Some(invalid), None)
            .await
            .0,
        401
    );
    let with_query = format!("{lb}/top?limit=5&access_token={in_query}&cursor=abc");
    http(&addr, "GET", &with_query, Some(MODERATOR), None).await;
    assert_eq!(
        http(&addr, "GET", &format!("{lb}/digest"), Some(SERVICE), None)
            .await
            .0,
        200
    );
    terminate(running);

    let output = std::fs::read_to_string(&log).unwrap();
    for secret in [
        ADMIN, SERVICE, MODERATOR, OTHER_GAME, PLAYER, JWT_SECRET, invalid, in_query, "hunter2",
    ] {
        assert!(!output.contains(secret), "{secret:?} is in the log:\n{output}");
    }
    let lines: Vec<Value> = output
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect();
    let requests: Vec<&Value> = lines
        .iter()
        .filter(|l| l["fields"]["message"] == "request")
        .map(|l| &l["fields"])
        .collect();
    let find = |method: &str, path: &str, status: u16| {
        requests
            .iter()
            .find(|r| r["method"] == method && r["path"] == path && r["status"] == status)
            .unwrap_or_else(|| panic!("no request line for {method} {path} {status}:\n{output}"))
    };
    assert!(find("PUT", board, 201)["latency_us"].is_u64());
    find("POST", "/v1/score-events", 202);
    find("GET", &format!("{lb}/top"), 401);
    find("GET", &format!("{lb}/digest"), 200);
    let serving = lines
        .iter()
        .find(|l| l["fields"]["message"] == "serving")
        .unwrap_or_else(|| panic!("no startup summary:\n{output}"));
    assert_eq!(serving["level"], "INFO");
    assert_eq!(serving["fields"]["listen"], addr.as_str());
    assert_eq!(serving["fields"]["restored"], "replay");
    assert_eq!(serving["fields"]["seq"], 0);
    let backend = if db.url.starts_with("postgres") {
        "postgres"
    } else {
        "sqlite"
    };
    assert_eq!(serving["fields"]["backend"], backend);
}

/// Builds a log with what an export must carry: two games, four boards (one with daily
/// periods), late events applied and rejected, a disqualification and a reinstatement, season
/// transitions through publication and a correction after it.
async fn build_a_log(addr: &str) {
    // Ten minutes ago: inside today's daily period, before the freeze below.
    let achieved = standings_origin::clock::format_rfc3339(standings_origin::clock::now_ms() - 600_000);
    let achieved = achieved.as_str();
    for (game, scope, body) in [
        ("arena-clash", "global", json!({"score_mode": "highest"})),
        ("arena-clash", "coins", json!({"score_mode": "cumulative"})),
        (
            "arena-clash",
            "daily",
            json!({"score_mode": "highest", "periods": ["all_time", "daily"]}),
        ),
        ("other-game", "global", json!({"score_mode": "latest"})),
    ] {
        let (status, body) = http(
            addr,
            "PUT",
            &format!("/v1/boards/{game}/solo/S7/{scope}"),
            Some(ADMIN),
            Some(&body),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
    let (status, _) = http(
        addr,
        "PUT",
        "/v1/boards/arena-clash/solo/S8/global",
        Some(ADMIN),
        Some(&json!({"score_mode": "highest"})),
    )
    .await;
    assert_eq!(status, 201);
    let mut batch = Vec::new();
    for i in 0..60 {
        let mut e = event(
            &format!("e{i}"),
            &format!("p-{}", i % 7),
            (i * 37 % 100) as i64,
            achieved,
        );
        e["scopes"] = json!(["global", "coins", "daily"]);
        batch.push(e);
    }
    let (status, _) = http(
        addr,
        "POST",
        "/v1/score-events/batch",
        Some(SERVICE),
        Some(&json!({"events": batch})),
    )
    .await;
    assert_eq!(status, 200);
    for i in 0..10 {
        let mut e = event(&format!("o{i}"), &format!("q-{}", i % 3), i, achieved);
        e["game"] = json!("other-game");
        assert_eq!(
            http(addr, "POST", "/v1/score-events", Some(OTHER_GAME), Some(&e))
                .await
                .0,
            202
        );
    }
    let mut next = event("n1", "p-ava", 5, achieved);
    next["season"] = json!("S8");
    assert_eq!(
        http(addr, "POST", "/v1/score-events", Some(SERVICE), Some(&next))
            .await
            .0,
        202
    );
    let moderate = |body: Value| async move {
        let (status, answer) = http(
            addr,
            "POST",
            "/v1/moderation-actions",
            Some(MODERATOR),
            Some(&body),
        )
        .await;
        assert_eq!(status, 201, "{answer}");
    };
    moderate(
        json!({"moderation_id": "dq-1", "action_type": "DISQUALIFY", "reason": "bot", "game": "arena-clash",
                    "mode": "solo", "season": "S7", "scope": "coins", "target_player_id": "p-3"}),
    )
    .await;
    moderate(
        json!({"moderation_id": "inv-1", "action_type": "INVALIDATE", "reason": "exploit",
                    "game": "arena-clash", "target_event_id": "e5"}),
    )
    .await;
    moderate(
        json!({"moderation_id": "rs-1", "action_type": "REINSTATE", "reason": "appeal", "game": "arena-clash",
                    "mode": "solo", "season": "S7", "scope": "coins", "target_player_id": "p-3"}),
    )
    .await;
    let season = |to: &'static str| async move {
        let (status, body) = http(
            addr,
            "PUT",
            "/v1/seasons/arena-clash/S7/state",
            Some(ADMIN),
            Some(&json!({"state": to})),
        )
        .await;
        assert_eq!(status, 200, "{to}: {body}");
    };
    season("frozen").await;
    // Achieved before the freeze, received after it: late.
    for id in ["late-a", "late-r"] {
        let mut e = event(id, "p-late", 99, achieved);
        e["scopes"] = json!(["global", "coins"]);
        let (_, body) = http(addr, "POST", "/v1/score-events", Some(SERVICE), Some(&e)).await;
        assert_eq!(body["status"], "LATE");
    }
    for (id, decision) in [("late-a", "apply"), ("late-r", "reject")] {
        let (status, body) = http(
            addr,
            "POST",
            &format!("/v1/late-events/{id}/decision?game=arena-clash"),
            Some(MODERATOR),
            Some(&json!({"decision": decision, "reason": "reviewed"})),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }
    season("finalized").await;
    season("published").await;
    // A correction after publication.
    moderate(
        json!({"moderation_id": "post-1", "action_type": "INVALIDATE", "reason": "cheat",
                    "game": "arena-clash", "target_event_id": "e9"}),
    )
    .await;
}

/// What a service shows of every board: its digest answer (digest, board_version, players)
/// and its published results with their corrections.
async fn boards_as_shown(addr: &str) -> Vec<(String, Value)> {
    let mut shown = Vec::new();
    for board in [
        "arena-clash/solo/S7/global",
        "arena-clash/solo/S7/coins",
        "arena-clash/solo/S7/daily",
        "arena-clash/solo/S8/global",
        "other-game/solo/S7/global",
    ] {
        let (status, digest) = http(
            addr,
            "GET",
            &format!("/v1/leaderboards/{board}/digest"),
            Some(ADMIN),
            None,
        )
        .await;
        assert_eq!(status, 200, "{board}: {digest}");
        shown.push((board.to_string(), digest));
    }
    for scope in ["global", "coins", "daily"] {
        let path = format!("/v1/leaderboards/arena-clash/solo/S7/results?scope={scope}");
        let (status, results) = http(addr, "GET", &path, Some(ADMIN), None).await;
        assert_eq!(status, 200, "{path}: {results}");
        shown.push((path, results));
    }
    shown
}

fn export(config: &Path, args: &[&str]) -> Vec<Value> {
    let output = Command::new(BIN)
        .arg("export")
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    text(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The game a line of an export concerns.
fn game_of(line: &Value) -> &Value {
    if line.get("board").is_some() {
        &line["board"]["game"]
    } else if line.get("event").is_some() {
        &line["event"]["game"]
    } else {
        &line["game"]
    }
}

/// `standings export` then `standings import` into an empty database: every board has the
/// same digest and board_version, and the results the same corrections; the import decides
/// every event as the log did. `--game` keeps one game's lines and `--since-seq` the entries
/// after a seq, in seq order; the head of a log then its `--since-seq` rest import to the same
/// boards too.
async fn an_export_imported_into_an_empty_database_gives_the_same_boards(db: Db) {
    let source = TestDb::new(db).await;
    let addr = free_addr();
    let source_config = write_config(&source.dir, &source.url, &addr);
    let running = serve(&source_config, &addr).await;
    build_a_log(&addr).await;
    let before = boards_as_shown(&addr).await;
    // The export may run beside the service.
    let lines = export(&source_config, &[]);
    terminate(running);

    let seqs: Vec<i64> = lines.iter().filter_map(|l| l["seq"].as_i64()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in seq order: {seqs:?}");
    let count = |key: &str| lines.iter().filter(|l| l.get(key).is_some()).count();
    assert_eq!((count("board"), count("event"), count("action")), (5, 73, 9));
    let statuses: Vec<&Value> = lines
        .iter()
        .filter(|l| l.get("event").is_some())
        .map(|l| &l["status"])
        .collect();
    assert!(statuses.contains(&&json!("LATE_APPLIED")) && statuses.contains(&&json!("LATE_REJECTED")));
    let file = source.dir.join("export.ndjson");
    let text_of = |lines: &[Value]| lines.iter().map(|l| format!("{l}\n")).collect::<String>();
    std::fs::write(&file, text_of(&lines)).unwrap();

    let target = TestDb::new(db).await;
    let target_config = write_config(&target.dir, &target.url, &addr);
    let output = import(&target_config, &file);
    let report = text(&output.stdout);
    assert!(output.status.success(), "{report}{}", text(&output.stderr));
    assert!(
        report.contains("73 accepted, 0 duplicates, 0 rejected; 5 boards defined, 9 actions"),
        "{report}"
    );
    let running = serve(&target_config, &addr).await;
    for ((board, after), (_, before)) in boards_as_shown(&addr).await.into_iter().zip(&before) {
        assert_eq!(&after, before, "{board}");
    }
    // The imported log exports as the original did, but for the receipt times of events that
    // shared a group commit in the import and not in the original.
    let again = export(&target_config, &[]);
    drop(running);
    let without_times = |lines: &[Value]| -> Vec<Value> {
        lines
            .iter()
            .cloned()
            .map(|mut l| {
                if let Some(l) = l.as_object_mut() {
                    l.remove("received_at");
                }
                l
            })
            .collect()
    };
    assert_eq!(without_times(&again), without_times(&lines));

    let other = export(&source_config, &["--game", "other-game"]);
    assert_eq!(other.len(), 1 + 10, "one board and ten events");
    assert!(other.iter().all(|l| game_of(l) == "other-game"), "{other:?}");
    let since = seqs[seqs.len() / 2];
    let tail = export(&source_config, &["--since-seq", &since.to_string()]);
    let tail_seqs: Vec<i64> = tail.iter().filter_map(|l| l["seq"].as_i64()).collect();
    assert_eq!(
        tail_seqs,
        seqs.iter().copied().filter(|s| *s > since).collect::<Vec<_>>()
    );
    assert_eq!(tail.iter().filter(|l| l.get("board").is_some()).count(), 5);

    // The head of the log, then the rest through `--since-seq`: the same boards again.
    let head: Vec<Value> = lines
        .iter()
        .filter(|l| l["seq"].as_i64().is_none_or(|seq| seq <= since))
        .cloned()
        .collect();
    let stepwise = TestDb::new(db).await;
    let stepwise_config = write_config(&stepwise.dir, &stepwise.url, &addr);
    for (name, part) in [("head", &head), ("tail", &tail)] {
        let file = stepwise.dir.join(format!("{name}.ndjson"));
        std::fs::write(&file, text_of(part)).unwrap();
        let output = import(&stepwise_config, &file);
        assert!(
            output.status.success(),
            "{name}: {}{}",
            text(&output.stdout),
            text(&output.stderr)
        );
    }
    let _running = serve(&stepwise_config, &addr).await;
    for ((board, after), (_, before)) in boards_as_shown(&addr).await.into_iter().zip(&before) {
        assert_eq!(&after, before, "{board}, imported in two steps");
    }
}

fn import(config: &Path, file: &Path) -> Output {
    Command::new(BIN)
        .arg("import")
        .arg("--config")
        .arg(config)
        .arg(file)
        .output()
        .unwrap()
}

/// An exported event that came in before its daily period closed is imported as it was, on
/// time, though the period has closed since; one that came after the close stays late.
#[tokio::test]
async fn an_import_receives_each_event_when_it_was_first_received() {
    let db = TestDb::new(Db::Sqlite).await;
    let config = write_config(&db.dir, &db.url, &free_addr());
    let day = 86_400_000;
    let today = standings_origin::clock::now_ms() / day * day;
    let time = |ms: i64| standings_origin::clock::format_rfc3339(ms);
    let board = json!({"board": {"game": "arena-clash", "mode": "solo", "season": "S7", "scope": "daily",
        "score_mode": "highest", "value_min": 0, "value_max": 1000, "periods": ["all_time", "daily"],
        "grace_seconds": 300, "timezone": "UTC"}});
    // Two days ago at noon, received a minute later; and the same day, received the next day.
    let achieved = today - 2 * day + day / 2;
    let line = |seq: i64, id: &str, status: &str, received_at: i64| {
        let mut e = event(id, "p-ava", 10 * seq, &time(achieved));
        e["scopes"] = json!(["daily"]);
        json!({"seq": seq, "status": status, "source": "game-server-07", "received_at": time(received_at), "event": e})
    };
    let lines = [
        board,
        line(1, "on-time", "APPLIED", achieved + 60_000),
        line(2, "after-close", "LATE", achieved + day),
    ];
    let file = db.dir.join("export.ndjson");
    std::fs::write(&file, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    let output = import(&config, &file);
    let report = text(&output.stdout);
    assert!(output.status.success(), "{report}{}", text(&output.stderr));
    assert!(
        report.contains("2 accepted, 0 duplicates, 0 rejected"),
        "{report}"
    );
    let exported = export(&config, &[]);
    let statuses: Vec<(&Value, &Value)> = exported[1..]
        .iter()
        .map(|l| (&l["event"]["event_id"], &l["status"]))
        .collect();
    assert_eq!(
        statuses,
        [
            (&json!("on-time"), &json!("APPLIED")),
            (&json!("after-close"), &json!("LATE"))
        ]
    );
    assert_eq!(exported[1]["received_at"], json!(time(achieved + 60_000)));
}
