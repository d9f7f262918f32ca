//! Webhooks of the feed (issue 41, `docs/feed.md`) to a real receiver process
//! (`tests/webhooks/receiver.py`, which checks the Standard Webhooks signature with its own
//! code), on SQLite and PostgreSQL: every record delivered at least once and in seq order
//! through a receiver that fails and hangs, a kind filter, parking and resuming, a rotated
//! secret signing beside the new one, and https to a receiver a configured CA vouches for
//! (and to one it does not).

mod common;

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{Value, json};

const BOARD: &str = "/v1/boards/arena-clash/solo/S7/global";
const FEED: &str = "/v1/games/arena-clash/feed";
const HOOK: &str = "/v1/games/arena-clash/webhooks/studio-backend";
/// A guard against a hang, never a wait for state.
const GUARD: Duration = Duration::from_secs(30);
/// 32 bytes of 7, and of 9.
const SECRET: &str = "whsec_BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";
const ROTATED: &str = "whsec_CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk=";

on_both_databases!(
    every_record_arrives_signed_and_in_order_through_failures_and_hangs,
    an_endpoint_takes_only_its_kinds,
    a_failing_endpoint_parks_then_resumes_where_it_stopped,
    a_rotated_secret_signs_beside_the_new_one,
    https_delivers_to_a_trusted_receiver_and_tells_why_not_to_another,
);

/// The receiver process, its port and its log.
struct Receiver {
    child: Child,
    port: u16,
    https: bool,
    log: PathBuf,
    _dir: TempDir,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    fn start(secrets: &[&str], args: &[&str]) -> Receiver {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "standings-webhooks-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let (port_file, log) = (dir.join("port"), dir.join("log"));
        let child = Command::new("python3")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/webhooks/receiver.py"))
            .arg("--port-file")
            .arg(&port_file)
            .arg("--log")
            .arg(&log)
            .arg("--secrets")
            .arg(secrets.join(","))
            .args(args)
            .spawn()
            .expect("python3 runs the receiver");
        let began = Instant::now();
        let port = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                break text.trim().parse().unwrap();
            }
            assert!(began.elapsed() < GUARD, "the receiver did not start");
            std::thread::sleep(Duration::from_millis(20));
        };
        Receiver {
            child,
            port,
            https: args.contains(&"--tls"),
            log,
            _dir: TempDir(dir),
        }
    }

    fn url(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}/hook", self.port)
    }

    /// Every request the receiver took, in the order it took them.
    fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Sets the receiver's mode (`ok`, `fail`, `hang`) and its secrets.
    async fn control(&self, body: Value) {
        let mut client = standings_tests::http::Client::new(&format!("127.0.0.1:{}", self.port));
        let answer = client
            .post("/control", None, body.to_string().as_bytes())
            .await
            .unwrap();
        assert_eq!(answer.status, 204);
    }
}

async fn start(db: Db) -> TestService {
    start_with(TestService::start(db).await).await
}

/// The board with a feed and the friend lists, on `service`.
async fn start_with(service: TestService) -> TestService {
    let (status, answer) = service
        .call(
            Method::PUT,
            BOARD,
            Some(ADMIN),
            Some(&json!({"score_mode": "highest", "feed": {"bands": [1, 3], "overtakes": true}})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    for i in 0..10 {
        let (status, answer) = service
            .call(
                Method::PUT,
                &format!("/v1/games/arena-clash/players/p{i}/friends"),
                Some(SERVICE),
                Some(&json!({"friends": [format!("p{}", (i + 1) % 10), format!("p{}", (i + 2) % 10)]})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
    }
    service
}

async fn define(
    service: &TestService,
    receiver: &Receiver,
    secret: &str,
    kinds: &[&str],
) -> (StatusCode, Value) {
    service
        .call(
            Method::PUT,
            HOOK,
            Some(ADMIN),
            Some(&json!({"url": receiver.url(), "secret": secret, "kinds": kinds})),
        )
        .await
}

const ALL: [&str; 3] = ["overtaken", "band_entered", "band_left"];

/// Submits `count` events from `first` on, each a new best of a player among ten.
async fn submit(service: &TestService, first: usize, count: usize) {
    for i in first..first + count {
        let (status, body) = service
            .submit(&event(
                &format!("e{i}"),
                &format!("p{}", i % 10),
                (i * 7 % 50) as i64 + i as i64,
                "2026-10-13T10:00:00Z",
            ))
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    }
}

/// Every record of the feed: (seq, kind).
async fn feed(service: &TestService) -> Vec<(i64, String)> {
    let (status, page) = service
        .call(Method::GET, &format!("{FEED}?limit=1000"), Some(SERVICE), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["seq"].as_i64().unwrap(),
                r["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

async fn endpoint(service: &TestService) -> Value {
    let (status, answer) = service.call(Method::GET, HOOK, Some(ADMIN), None).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    answer
}

/// The service's `/metrics`.
async fn metrics(service: &TestService) -> String {
    let (status, _, body) = service.get_raw("/metrics", None, &[]).await;
    assert_eq!(status, StatusCode::OK);
    String::from_utf8(body.to_vec()).unwrap()
}

/// Waits until the endpoint has delivered through `seq` (the receiver acknowledged it).
async fn delivered_through(service: &TestService, seq: i64) -> Value {
    let began = Instant::now();
    loop {
        let state = endpoint(service).await;
        if state["delivered_through"].as_i64() >= Some(seq) {
            return state;
        }
        assert!(began.elapsed() < GUARD, "not delivered through {seq}: {state}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The seqs the receiver acknowledged, in the order it took them.
fn acknowledged(receiver: &Receiver) -> Vec<i64> {
    receiver
        .requests()
        .iter()
        .filter(|r| r["status"] == 204 && r["mode"] == "ok")
        .map(|r| r["seq"].as_i64().unwrap())
        .collect()
}

/// The feed's records once every record made so far is stored (the events submitted are
/// applied when answered), at least `at_least` of them.
async fn stored(service: &TestService, at_least: usize) -> Vec<(i64, String)> {
    flush_feed(service).await;
    let records = feed(service).await;
    assert!(
        records.len() >= at_least,
        "the feed holds {} records",
        records.len()
    );
    records
}

async fn every_record_arrives_signed_and_in_order_through_failures_and_hangs(db: Db) {
    let service = start(db).await;
    // Two 500s, then a request left unanswered past the service's 500 ms, then answers.
    let receiver = Receiver::start(&[SECRET], &["--fail", "2", "--hang", "1", "--hang-seconds", "1"]);
    let (status, answer) = define(&service, &receiver, SECRET, &ALL).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["state"], "active");
    submit(&service, 0, 40).await;
    let records = stored(&service, 10).await;
    let last = records.last().unwrap().0;
    let state = delivered_through(&service, last).await;
    assert_eq!(state["attempts"], 0, "{state}");
    let requests = receiver.requests();
    assert!(
        requests.iter().all(|r| r["verified"] == true),
        "every delivery is signed: {requests:?}"
    );
    assert_eq!(requests.iter().filter(|r| r["mode"] == "fail").count(), 2);
    assert_eq!(requests.iter().filter(|r| r["mode"] == "hang").count(), 1);
    // In seq order, each record once among the acknowledged: a retry re-sends only the record
    // that failed, and the next is not sent before it is acknowledged.
    let seqs: Vec<i64> = records.iter().map(|(s, _)| *s).collect();
    assert_eq!(acknowledged(&receiver), seqs);
    let metrics = metrics(&service).await;
    let labels = "{game=\"arena-clash\",endpoint=\"studio-backend\"}";
    for line in [
        format!("standings_webhook_deliveries_total{labels} {}", seqs.len()),
        format!("standings_webhook_failures_total{labels} 3"),
        format!("standings_webhook_parked{labels} 0"),
        format!("standings_webhook_delivered_through{labels} {last}"),
    ] {
        assert!(metrics.contains(&line), "{line} in {metrics}");
    }
    // Every request was for the next record: the failed ones repeat it, never skip ahead.
    let mut at = 0;
    for r in &requests {
        let seq = r["seq"].as_i64().unwrap();
        assert!(
            seq == seqs[at] || (at + 1 < seqs.len() && seq == seqs[at + 1]),
            "{r}"
        );
        if seq != seqs[at] {
            at += 1;
        }
    }
}

async fn an_endpoint_takes_only_its_kinds(db: Db) {
    let service = start(db).await;
    let receiver = Receiver::start(&[SECRET], &[]);
    let (status, answer) = define(&service, &receiver, SECRET, &["band_entered"]).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    submit(&service, 0, 30).await;
    let records = stored(&service, 10).await;
    delivered_through(&service, records.last().unwrap().0).await;
    let wanted: Vec<i64> = records
        .iter()
        .filter(|(_, kind)| kind == "band_entered")
        .map(|(s, _)| *s)
        .collect();
    assert!(!wanted.is_empty() && wanted.len() < records.len());
    assert_eq!(acknowledged(&receiver), wanted);
}

async fn a_failing_endpoint_parks_then_resumes_where_it_stopped(db: Db) {
    let service = start(db).await;
    let receiver = Receiver::start(&[SECRET], &["--mode", "fail"]);
    define(&service, &receiver, SECRET, &ALL).await;
    submit(&service, 0, 20).await;
    let records = stored(&service, 5).await;
    // The test's config parks after 4 attempts, 50 ms apart and doubling.
    let began = Instant::now();
    let parked = loop {
        let state = endpoint(&service).await;
        if state["state"] == "parked" {
            break state;
        }
        assert!(began.elapsed() < GUARD, "never parked: {state}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let metrics = metrics(&service).await;
    assert!(
        metrics.contains("standings_webhook_parked{game=\"arena-clash\",endpoint=\"studio-backend\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics
            .contains("standings_webhook_failures_total{game=\"arena-clash\",endpoint=\"studio-backend\"} 4"),
        "{metrics}"
    );
    let reason = parked["parked_reason"].as_str().unwrap();
    assert!(
        reason.contains("4 attempts") && reason.contains("500"),
        "{parked}"
    );
    assert!(
        parked["delivered_through"].as_i64().unwrap() < records[0].0,
        "{parked}"
    );
    // Parked, nothing more is tried.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.requests().len(), 4);
    receiver.control(json!({"mode": "ok"})).await;
    let (status, resumed) = service
        .call(Method::POST, &format!("{HOOK}/resume"), Some(ADMIN), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{resumed}");
    assert_eq!(resumed["state"], "active");
    let records = stored(&service, records.len()).await;
    delivered_through(&service, records.last().unwrap().0).await;
    let seqs: Vec<i64> = records.iter().map(|(s, _)| *s).collect();
    assert_eq!(acknowledged(&receiver), seqs);
}

async fn a_rotated_secret_signs_beside_the_new_one(db: Db) {
    let service = start(db).await;
    // The receiver knows only the old secret: deliveries after the rotation still verify.
    let receiver = Receiver::start(&[SECRET], &[]);
    define(&service, &receiver, SECRET, &ALL).await;
    submit(&service, 0, 10).await;
    let first = stored(&service, 3).await;
    delivered_through(&service, first.last().unwrap().0).await;
    let (status, answer) = define(&service, &receiver, ROTATED, &ALL).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert!(answer["rotating_until"].is_string(), "{answer}");
    submit(&service, 10, 10).await;
    let all = stored(&service, first.len() + 1).await;
    delivered_through(&service, all.last().unwrap().0).await;
    let requests = receiver.requests();
    assert!(requests.iter().all(|r| r["verified"] == true), "{requests:?}");
    let after: Vec<&Value> = requests
        .iter()
        .filter(|r| r["seq"].as_i64() > Some(first.last().unwrap().0))
        .collect();
    assert!(!after.is_empty());
    assert!(after.iter().all(|r| r["signatures"] == 2), "{after:?}");
    // A receiver that knows only the new secret verifies them too.
    receiver.control(json!({"secrets": [ROTATED]})).await;
    submit(&service, 20, 10).await;
    let more = stored(&service, all.len() + 1).await;
    delivered_through(&service, more.last().unwrap().0).await;
    assert!(receiver.requests().iter().all(|r| r["verified"] == true));
}

/// A CA and a certificate for 127.0.0.1 it signed, made with the openssl command line:
/// (the CA's PEM, the leaf's PEM, the leaf's key), in `dir`.
fn certificates(dir: &std::path::Path, name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let path = |file: &str| dir.join(format!("{name}-{file}"));
    let run = |args: &[&str]| {
        let out = Command::new("openssl").args(args).output().expect("openssl runs");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let (ca_key, ca, key, csr, ext, leaf) = (
        path("ca.key"),
        path("ca.pem"),
        path("leaf.key"),
        path("leaf.csr"),
        path("leaf.ext"),
        path("leaf.pem"),
    );
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    run(&[
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        &s(&ca_key),
        "-out",
        &s(&ca),
        "-days",
        "2",
        "-subj",
        &format!("/CN={name} test CA"),
    ]);
    run(&[
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        &s(&key),
        "-out",
        &s(&csr),
        "-subj",
        "/CN=127.0.0.1",
    ]);
    std::fs::write(
        &ext,
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        &s(&csr),
        "-CA",
        &s(&ca),
        "-CAkey",
        &s(&ca_key),
        "-CAcreateserial",
        "-out",
        &s(&leaf),
        "-days",
        "2",
        "-extfile",
        &s(&ext),
    ]);
    (ca, leaf, key)
}

/// Over https: a receiver whose certificate a CA of `webhook_ca_file` signed gets every record,
/// signed; one whose CA the service does not trust gets nothing, and its endpoint's state says
/// why (the certificate), as the delivery's error.
async fn https_delivers_to_a_trusted_receiver_and_tells_why_not_to_another(db: Db) {
    let dir = std::env::temp_dir().join(format!("standings-webhooks-tls-{}-{:?}", std::process::id(), db));
    std::fs::create_dir_all(&dir).unwrap();
    let _cleanup = TempDir(dir.clone());
    let (ca, leaf, key) = certificates(&dir, "trusted");
    let (_, other_leaf, other_key) = certificates(&dir, "other");
    let db = TestDb::new(db).await;
    let mut config = config(&db.url);
    config.webhook_ca_file = Some(ca.to_str().unwrap().into());
    let service =
        start_with(TestService::start_with_config(db, &config, standings_origin::clock::Clock::System).await)
            .await;
    let trusted = Receiver::start(
        &[SECRET],
        &["--tls", leaf.to_str().unwrap(), key.to_str().unwrap()],
    );
    let untrusted = Receiver::start(
        &[SECRET],
        &["--tls", other_leaf.to_str().unwrap(), other_key.to_str().unwrap()],
    );
    assert!(trusted.url().starts_with("https://127.0.0.1:"));
    let (status, answer) = define(&service, &trusted, SECRET, &ALL).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let (status, answer) = service
        .call(
            Method::PUT,
            "/v1/games/arena-clash/webhooks/elsewhere",
            Some(ADMIN),
            Some(&json!({"url": untrusted.url(), "secret": SECRET, "kinds": ALL})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    submit(&service, 0, 20).await;
    let records = stored(&service, 5).await;
    let last = records.last().unwrap().0;
    delivered_through(&service, last).await;
    let requests = trusted.requests();
    assert!(requests.iter().all(|r| r["verified"] == true), "{requests:?}");
    assert_eq!(
        acknowledged(&trusted),
        records.iter().map(|(s, _)| *s).collect::<Vec<_>>()
    );
    let began = Instant::now();
    let state = loop {
        let (status, state) = service
            .call(
                Method::GET,
                "/v1/games/arena-clash/webhooks/elsewhere",
                Some(ADMIN),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{state}");
        if state["attempts"].as_i64() >= Some(1) {
            break state;
        }
        assert!(
            began.elapsed() < GUARD,
            "no attempt at the untrusted receiver: {state}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        untrusted.requests().is_empty(),
        "nothing reached a receiver the service does not trust"
    );
    assert!(
        state["last_error"]
            .as_str()
            .unwrap_or_default()
            .to_lowercase()
            .contains("certificate"),
        "{state}"
    );
}
