//! One writer per log (issue 30, single-node modes): a second `standings serve` on a database
//! already served refuses to start and names who holds it, the first keeps serving untouched,
//! and a holder killed with SIGKILL never blocks the next start. On SQLite and PostgreSQL.

mod common;
mod process;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;
use process::*;
use serde_json::json;

on_both_databases!(a_second_origin_on_one_database_refuses_to_start);

/// Runs `standings ARGS --config CONFIG` to its end (with a deadline): a refused process exits
/// by itself.
fn run_to_end(args: &[&str], config: &Path) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .arg("--config")
        .arg(config)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("standings {args:?} did not exit: a second process on one database ran");
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    child.wait_with_output().unwrap()
}

/// A second origin on the same database exits non-zero with a message naming the database and
/// the first origin (its pid and address), and what to do; the first still answers reads and
/// writes. Once the first is killed with SIGKILL, the second starts at once and keeps every
/// acknowledged event. On SQLite `import` is refused the same way.
async fn a_second_origin_on_one_database_refuses_to_start(db: Db) {
    let db = TestDb::new(db).await;
    let first_addr = free_addr();
    let first_config = write_config(&db.dir, &db.url, &first_addr);
    let first = serve(&first_config, &first_addr).await;
    let board = "/v1/boards/arena-clash/solo/S7/global";
    let (status, _) = http(
        &first_addr,
        "PUT",
        board,
        Some(ADMIN),
        Some(&json!({"score_mode": "highest"})),
    )
    .await;
    assert_eq!(status, 201);

    // The second listens elsewhere: only the database is shared.
    let second_dir = db.dir.join("second");
    std::fs::create_dir_all(&second_dir).unwrap();
    let second_addr = free_addr();
    let second_config = write_config(&second_dir, &db.url, &second_addr);
    let refused = run_to_end(&["serve"], &second_config);
    let said = String::from_utf8_lossy(&refused.stderr).to_string();
    assert!(!refused.status.success(), "{said}");
    let pid = format!("pid {}", first.0.id());
    assert!(said.contains(&pid), "the holder's pid: {said}");
    assert!(said.contains(&format!("listening on {first_addr}")), "{said}");
    match db.url.strip_prefix("sqlite://") {
        Some(path) => {
            assert!(
                said.contains(&format!(
                    "the database {path} is held by another Standings process"
                )),
                "{said}"
            );
            assert!(said.contains("stop that one first"), "{said}");
        }
        None => {
            assert!(
                said.contains("is already served by another Standings origin"),
                "{said}"
            );
            assert!(
                said.contains("several origins over one database run as a cluster"),
                "{said}"
            );
        }
    }

    // The first is untouched: it answers writes and reads.
    let e = event("evt-1", "p-1", 700, "2026-10-13T10:00:00Z");
    let (status, _) = http(&first_addr, "POST", "/v1/score-events", Some(SERVICE), Some(&e)).await;
    assert_eq!(status, 202);
    let lb = "/v1/leaderboards/arena-clash/solo/S7/global/top";
    let (status, top) = http(&first_addr, "GET", lb, Some(SERVICE), None).await;
    assert_eq!(
        (status, top["entries"][0]["value"].clone()),
        (200, json!(700)),
        "{top}"
    );

    if db.url.starts_with("sqlite:") {
        // An import writes the log: refused while a service holds it, wherever it listens.
        let file = db.dir.join("events.ndjson");
        std::fs::write(&file, format!("{e}\n")).unwrap();
        let import = run_to_end(&["import", &file.to_string_lossy()], &second_config);
        let said = String::from_utf8_lossy(&import.stderr).to_string();
        assert!(!import.status.success(), "{said}");
        assert!(said.contains("is held by another Standings process"), "{said}");
    }

    drop(first); // SIGKILL: the lock dies with its holder.
    let second = serve(&second_config, &second_addr).await;
    let (status, top) = http(&second_addr, "GET", lb, Some(SERVICE), None).await;
    assert_eq!(
        (status, top["entries"][0]["value"].clone()),
        (200, json!(700)),
        "{top}"
    );
    let (status, body) = http(&second_addr, "POST", "/v1/score-events", Some(SERVICE), Some(&e)).await;
    assert_eq!((status, body["status"].clone()), (200, json!("DUPLICATE")));
    terminate(second);
}
