//! Standings as a cluster (issue 30), with the real binary: several nodes over one PostgreSQL
//! database answer every read and write alike, whichever node is asked (the owner's answer,
//! byte for byte, with `x-standings-served-by`); a batch across partitions comes back in order;
//! subscriptions and snapshot heads work through a node that does not own the board; a killed
//! owner's partitions are taken over; a paused owner is fenced (nothing of its old epoch after
//! the takeover); a node stopped with SIGTERM hands over with no 5xx; and the refusals that
//! keep a single node's database single.

mod common;
mod process;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use process::*;
use serde_json::{Value, json};
use standings_origin::cluster::lease::partition_of;
use standings_tests::http::{Client, Reply};

const SECRET: &str = "cluster-secret-for-the-tests";
const PARTITIONS: u32 = 4;
const TTL_MS: u64 = 1_500;

/// One node: its folder, address, config and process.
struct TestNode {
    id: String,
    addr: String,
    config: PathBuf,
    running: Option<Running>,
}

/// Nodes over one fresh database (the nodes are stopped before the database is dropped).
struct Cluster {
    nodes: Vec<TestNode>,
    db: TestDb,
}

fn node_config(db: &TestDb, id: &str, addr: &str, standby: bool) -> PathBuf {
    let dir = db.dir.join(id);
    std::fs::create_dir_all(&dir).unwrap();
    let mut config = config(&db.url);
    config.listen = addr.into();
    config.http_threads = 1;
    config.pin_http_threads = false;
    config.cluster = Some(standings_origin::config::ClusterConfig {
        node_id: id.into(),
        advertise_url: format!("http://{addr}"),
        partitions: PARTITIONS,
        lease_ttl_ms: TTL_MS,
        standby,
        standby_reads_max_lag_ms: 1_000,
        secret: SECRET.into(),
    });
    let path = dir.join("standings.toml");
    std::fs::write(&path, toml::to_string(&config).unwrap()).unwrap();
    path
}

fn spawn(config: &PathBuf) -> std::process::Child {
    Command::new(BIN)
        .args(["serve", "--config"])
        .arg(config)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

impl Cluster {
    async fn start(count: usize) -> Cluster {
        let db = TestDb::new(Db::Postgres).await;
        let mut nodes = Vec::new();
        for i in 0..count {
            let id = format!("node-{}", (b'a' + i as u8) as char);
            let addr = free_addr();
            let config = node_config(&db, &id, &addr, true);
            let mut child = spawn(&config);
            wait_ready(&addr, &mut child).await;
            nodes.push(TestNode {
                id,
                addr,
                config,
                running: Some(Running(child)),
            });
        }
        let cluster = Cluster { nodes, db };
        cluster.settled().await;
        cluster
    }

    /// The table as node `i` answers it.
    async fn status(&self, i: usize) -> Value {
        let (status, body) = http(&self.nodes[i].addr, "GET", "/v1/cluster", Some(ADMIN), None).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// Waits until every partition has a live owner and every running node owns its share.
    async fn settled(&self) {
        let running: Vec<&TestNode> = self.nodes.iter().filter(|n| n.running.is_some()).collect();
        let first = self.nodes.iter().position(|n| n.running.is_some()).unwrap();
        let share = (PARTITIONS as usize).div_ceil(running.len());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let status = self.status(first).await;
            let leases = status["leases"].as_array().unwrap();
            let owned = |id: &str| leases.iter().filter(|l| l["owner"] == id).count();
            let all_owned = leases.iter().all(|l| {
                l["owner"]
                    .as_str()
                    .is_some_and(|o| running.iter().any(|n| n.id == o))
            });
            if all_owned && running.iter().all(|n| owned(&n.id) <= share && owned(&n.id) >= 1) {
                return;
            }
            assert!(Instant::now() < deadline, "the cluster did not settle: {status}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The owner of `game`'s partition now.
    async fn owner_of(&self, game: &str) -> String {
        let first = self.nodes.iter().position(|n| n.running.is_some()).unwrap();
        let status = self.status(first).await;
        let p = partition_of(game, PARTITIONS) as usize;
        status["leases"][p]["owner"].as_str().unwrap_or("").to_string()
    }

    fn index_of(&self, id: &str) -> usize {
        self.nodes.iter().position(|n| n.id == id).unwrap()
    }

    fn signal(&self, i: usize, signal: &str) {
        let pid = self.nodes[i].running.as_ref().unwrap().0.id().to_string();
        assert!(
            Command::new("kill")
                .args([signal, &pid])
                .status()
                .unwrap()
                .success()
        );
    }
}

/// A game of each partition, named `g-N`.
fn games() -> Vec<String> {
    let mut found: Vec<Option<String>> = vec![None; PARTITIONS as usize];
    for n in 0.. {
        let game = format!("g-{n}");
        let p = partition_of(&game, PARTITIONS) as usize;
        if found[p].is_none() {
            found[p] = Some(game);
        }
        if found.iter().all(Option::is_some) {
            break;
        }
    }
    found.into_iter().flatten().collect()
}

fn event(game: &str, id: &str, player: &str, value: i64) -> Value {
    json!({"game": game, "event_id": id, "player_id": player, "mode": "solo", "season": "S1",
           "scopes": ["global"], "value": value, "achieved_at": "2026-12-01T10:00:00Z"})
}

/// Defines `game`'s board `solo/S1/global` (highest) through the node at `addr`.
async fn define(addr: &str, game: &str) {
    let defined = call(
        addr,
        "PUT",
        &format!("/v1/boards/{game}/solo/S1/global"),
        Some(ADMIN),
        Some(&json!({"score_mode": "highest"})),
    )
    .await;
    assert!(
        defined.status == 201 || defined.status == 200,
        "{}",
        defined.text()
    );
}

async fn call(addr: &str, method: &str, path: &str, token: Option<&str>, body: Option<&Value>) -> Reply {
    let body = body.map(|b| b.to_string());
    Client::new(addr)
        .request(method, path, token, body.as_deref().map(str::as_bytes))
        .await
        .unwrap_or_else(|why| panic!("{why}"))
}

/// Reads answered from a warm copy, byte for byte the owner's, counted by [`same_everywhere`].
static COPY_ANSWERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The same request through every node: the same status, body and `x-standings-served-by` (the
/// owner), and the answer the owner gives itself; or, for a read a node's warm copy answers,
/// the owner's bytes once the copy has followed the log. Returns the owner's answer.
async fn same_everywhere(
    cluster: &Cluster,
    owner: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&Value>,
) -> Reply {
    let direct = call(
        &cluster.nodes[cluster.index_of(owner)].addr,
        method,
        path,
        token,
        body,
    )
    .await;
    assert_eq!(
        direct.header("x-standings-served-by"),
        Some(owner),
        "{method} {path}"
    );
    for node in cluster.nodes.iter().filter(|n| n.id != owner) {
        let mut through = call(&node.addr, method, path, token, body).await;
        // A read a node answers from its warm copy of the partition names that node and how
        // old the copy may be; once the copy has followed the log it is the owner's bytes.
        let deadline = Instant::now() + Duration::from_secs(5);
        while through.header("x-standings-copy-lag-ms").is_some() {
            assert_eq!(through.header("x-standings-served-by"), Some(node.id.as_str()));
            if (through.status, &through.body) == (direct.status, &direct.body) {
                COPY_ANSWERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{method} {path}: the copy on {} never caught up",
                node.id
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
            through = call(&node.addr, method, path, token, body).await;
        }
        if through.header("x-standings-copy-lag-ms").is_some() {
            assert_eq!(through.header("content-type"), direct.header("content-type"));
            continue;
        }
        assert_eq!(
            (
                through.status,
                through.header("x-standings-served-by"),
                through.text()
            ),
            (direct.status, Some(owner), direct.text()),
            "{method} {path} through {}",
            node.id
        );
        assert_eq!(through.body, direct.body, "{method} {path} through {}", node.id);
        assert_eq!(through.header("content-type"), direct.header("content-type"));
    }
    direct
}

/// Every read and write kind answers the same through a node that does not own the game as
/// from its owner; writes sent to a non-owner are the owner's (a retry at the owner is a
/// DUPLICATE); a batch across partitions is split and its answers come back in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_answers_the_same_through_any_node() {
    let cluster = Cluster::start(2).await;
    let games = games();
    for (i, game) in games.iter().enumerate() {
        let owner = cluster.owner_of(game).await;
        let other = cluster.nodes.iter().find(|n| n.id != owner).unwrap();
        let board = format!("/v1/boards/{game}/solo/S1/global");
        let defined = call(
            &other.addr,
            "PUT",
            &board,
            Some(ADMIN),
            Some(&json!({"score_mode": "highest"})),
        )
        .await;
        assert_eq!(
            (defined.status, defined.header("x-standings-served-by")),
            (201, Some(owner.as_str()))
        );
        // A single event through the other node is the owner's; the retry at the owner is a
        // DUPLICATE of it.
        let e = event(game, &format!("e-{i}"), "p-ava", 100);
        let sent = call(&other.addr, "POST", "/v1/score-events", Some(ADMIN), Some(&e)).await;
        assert_eq!(
            (sent.status, sent.header("x-standings-served-by")),
            (202, Some(owner.as_str())),
            "{}",
            sent.text()
        );
        let again = call(
            &cluster.nodes[cluster.index_of(&owner)].addr,
            "POST",
            "/v1/score-events",
            Some(ADMIN),
            Some(&e),
        )
        .await;
        assert_eq!(again.json().unwrap()["status"], "DUPLICATE");
        for (n, player) in ["p-ben", "p-eli", "p-dev"].iter().enumerate() {
            let e = event(game, &format!("e-{i}-{n}"), player, 50 + n as i64);
            assert_eq!(
                call(&other.addr, "POST", "/v1/score-events", Some(ADMIN), Some(&e))
                    .await
                    .status,
                202
            );
        }
        let friends = json!({"friends": ["p-ben", "p-eli"]});
        same_everywhere(
            &cluster,
            &owner,
            "PUT",
            &format!("/v1/games/{game}/players/p-ava/friends"),
            Some(ADMIN),
            Some(&friends),
        )
        .await;
        let lb = format!("/v1/leaderboards/{game}/solo/S1/global");
        for path in [
            format!("{lb}/top?limit=3"),
            format!("{lb}/players/p-eli/rank"),
            format!("{lb}/players/p-eli/nearby?radius=1"),
            format!("{lb}/friends-of/p-ava"),
            format!("{lb}/digest"),
            format!("{lb}/players/p-nobody/rank"),
            format!("/v1/games/{game}/boards"),
            format!("/v1/games/{game}/players/p-ava/friends"),
            format!("/v1/seasons/{game}/S1/state"),
            format!("/v1/leaderboards/{game}/solo/S1/results"),
            format!("/v1/snapshots/{game}/solo/S1/global/head"),
            format!("/v1/late-events?game={game}"),
            format!("/v1/audit?game={game}"),
        ] {
            same_everywhere(&cluster, &owner, "GET", &path, Some(ADMIN), None).await;
        }
        same_everywhere(
            &cluster,
            &owner,
            "POST",
            &format!("{lb}/rank-players"),
            Some(ADMIN),
            Some(&json!({"player_ids": ["p-eli", "p-zoe"]})),
        )
        .await;
        // A moderation action names its game in the body.
        let action = json!({"moderation_id": format!("m-{i}"), "action_type": "INVALIDATE", "reason": "cheat",
                            "game": game, "target_event_id": format!("e-{i}-0")});
        let moderated = call(
            &other.addr,
            "POST",
            "/v1/moderation-actions",
            Some(MODERATOR),
            Some(&action),
        )
        .await;
        assert_eq!(
            moderated.header("x-standings-served-by"),
            Some(owner.as_str()),
            "{}",
            moderated.text()
        );
        assert!(moderated.status < 300, "{}", moderated.text());
        same_everywhere(&cluster, &owner, "GET", &format!("{lb}/top?limit=3"), None, None).await;
    }
    // Reads of the boards were answered by copies (the owner's bytes, checked above).
    assert!(
        COPY_ANSWERS.load(std::sync::atomic::Ordering::Relaxed) >= games.len(),
        "{} reads answered by copies",
        COPY_ANSWERS.load(std::sync::atomic::Ordering::Relaxed)
    );
    // Read-your-writes through another node: a read with the write's position is never older
    // than the write, whether that node's copy has followed the log (it answers) or not yet
    // (the owner does).
    for (i, game) in games.iter().enumerate() {
        let owner = cluster.owner_of(game).await;
        let other = cluster.nodes.iter().find(|n| n.id != owner).unwrap();
        let lb = format!("/v1/leaderboards/{game}/solo/S1/global");
        let (mut copies, mut owners) = (0, 0);
        for n in 0..6 {
            let e = event(game, &format!("ryw-{i}-{n}"), "p-ryw", 1_000 + n);
            let sent = call(
                &cluster.nodes[(n % 2) as usize].addr,
                "POST",
                "/v1/score-events",
                Some(ADMIN),
                Some(&e),
            )
            .await;
            assert_eq!(sent.status, 202, "{}", sent.text());
            let token = sent.header("x-standings-position").unwrap().to_string();
            // At once (the copy is most likely behind: the owner answers), and once the copy
            // has had time to follow (it answers).
            for wait in [0, 600] {
                tokio::time::sleep(Duration::from_millis(wait)).await;
                let read = call(
                    &other.addr,
                    "GET",
                    &format!("{lb}/players/p-ryw/rank?min_position={token}"),
                    Some(ADMIN),
                    None,
                )
                .await;
                assert_eq!(read.status, 200, "{}", read.text());
                assert_eq!(read.json().unwrap()["value"], 1_000 + n, "{}", read.text());
                if read.header("x-standings-served-by") == Some(other.id.as_str()) {
                    copies += 1;
                } else {
                    owners += 1;
                }
            }
        }
        assert!(
            copies > 0 && owners > 0,
            "{game}: {copies} reads by the copy, {owners} by the owner"
        );
    }
    // A batch over every partition, with an event naming no game, answered in order.
    let mut events: Vec<Value> = games.iter().map(|g| event(g, "b-1", "p-zoe", 7)).collect();
    events.insert(1, json!({"event_id": "no-game", "player_id": "p", "value": 1}));
    events.push(event(&games[0], "e-0", "p-ava", 100));
    let batch = call(
        &cluster.nodes[0].addr,
        "POST",
        "/v1/score-events/batch",
        Some(ADMIN),
        Some(&json!({ "events": events })),
    )
    .await;
    assert_eq!(batch.status, 200, "{}", batch.text());
    let results = batch.json().unwrap()["results"].as_array().unwrap().clone();
    assert_eq!(results.len(), events.len());
    assert_eq!(results[1]["status"], "REJECTED");
    assert_eq!(results.last().unwrap()["status"], "DUPLICATE");
    for r in results
        .iter()
        .take(events.len() - 1)
        .filter(|r| r["event_id"] == "b-1")
    {
        assert_eq!(r["status"], "ACCEPTED");
    }
    assert_eq!(
        results.iter().filter(|r| r["event_id"] == "b-1").count(),
        games.len()
    );
    // It names each game's position; a read through another node handed one answers with the
    // write in it.
    let positions = batch.json().unwrap()["positions"].clone();
    for game in &games {
        let token = positions[game.as_str()]
            .as_str()
            .unwrap_or_else(|| panic!("{game}: {positions}"));
        let rank = call(
            &cluster.nodes[1].addr,
            "GET",
            &format!("/v1/leaderboards/{game}/solo/S1/global/players/p-zoe/rank?min_position={token}"),
            Some(ADMIN),
            None,
        )
        .await;
        assert_eq!(rank.status, 200, "{}", rank.text());
        assert_eq!(rank.json().unwrap()["value"], 7, "{}", rank.text());
    }
    // `export` of a clustered database writes every partition's log.
    let export = Command::new(BIN)
        .args(["export", "--config"])
        .arg(&cluster.nodes[0].config)
        .output()
        .unwrap();
    assert!(
        export.status.success(),
        "{}",
        String::from_utf8_lossy(&export.stderr)
    );
    let lines = String::from_utf8(export.stdout).unwrap();
    assert_eq!(
        lines.matches("\"event_id\":\"b-1\"").count(),
        games.len(),
        "{lines}"
    );
    assert_eq!(lines.matches("\"board\":").count(), games.len());
    // The node's own routes: its table, readiness, metrics with the cluster's lines.
    let metrics = call(&cluster.nodes[1].addr, "GET", "/metrics", None, None).await;
    let text = metrics.text();
    assert!(
        String::from_utf8_lossy(&metrics.body)
            .contains("standings_cluster_forwarded_total{outcome=\"answered\"}"),
        "{text}"
    );
    let refused = call(&cluster.nodes[0].addr, "GET", "/v1/cluster", Some(SERVICE), None).await;
    assert_eq!(refused.status, 403);
    for node in &cluster.nodes {
        let alive = call(&node.addr, "GET", "/healthz", None, None).await;
        assert_eq!(
            (alive.status, alive.text()),
            (200, r#"{"status":"ok"}"#.to_string())
        );
        let ready = call(&node.addr, "GET", "/readyz", None, None).await;
        assert_eq!(ready.status, 200, "{}", ready.text());
        assert!(
            ready.text().contains(&format!("\"node_id\":\"{}\"", node.id)),
            "{}",
            ready.text()
        );
        assert_eq!(ready.header("x-standings-served-by"), Some(node.id.as_str()));
    }
}

/// A live subscription (SSE and WebSocket) and a snapshot head through a node that does not own
/// the board: the stream is the owner's, deltas included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_and_a_head_work_through_a_non_owner() {
    let cluster = Cluster::start(2).await;
    let game = &games()[0];
    let owner = cluster.owner_of(game).await;
    let other = cluster.nodes.iter().find(|n| n.id != owner).unwrap();
    let owner_addr = &cluster.nodes[cluster.index_of(&owner)].addr;
    define(owner_addr, game).await;
    call(
        owner_addr,
        "POST",
        "/v1/score-events",
        Some(ADMIN),
        Some(&event(game, "s-1", "p-ava", 10)),
    )
    .await;
    let lb = format!("/v1/leaderboards/{game}/solo/S1/global");

    // SSE: the first event is the view at the board's version, then a delta for a new score.
    let mut stream = subscribe(&other.addr, &format!("{lb}/subscribe?view=top:10"), None).await;
    let mut seen = String::new();
    read_until(&mut stream, &mut seen, "\"p-ava\"").await;
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
    assert!(
        seen.to_ascii_lowercase()
            .contains(&format!("x-standings-served-by: {owner}")),
        "{seen}"
    );
    call(
        &other.addr,
        "POST",
        "/v1/score-events",
        Some(ADMIN),
        Some(&event(game, "s-2", "p-ben", 20)),
    )
    .await;
    read_until(&mut stream, &mut seen, "\"p-ben\"").await;

    // WebSocket: upgraded through the non-owner, joined to the owner's.
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut request = format!("ws://{}{lb}/subscribe?view=top:10", other.addr)
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {ADMIN}").parse().unwrap());
    let tcp = tokio::net::TcpStream::connect(&other.addr).await.unwrap();
    let (mut ws, answer) = tokio_tungstenite::client_async(request, tcp)
        .await
        .expect("a WebSocket through the non-owner");
    assert_eq!(answer.headers()["x-standings-served-by"], owner.as_str());
    use futures_util::StreamExt;
    let first = tokio::time::timeout(Duration::from_secs(10), ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(first.to_text().unwrap().contains("p-ben"), "{first}");

    // A head and its manifest through the non-owner are the owner's.
    let head = same_everywhere(
        &cluster,
        &owner,
        "GET",
        &format!("/v1/snapshots/{game}/solo/S1/global/head"),
        Some(ADMIN),
        None,
    )
    .await;
    let manifest = head.json().unwrap()["manifest"].as_str().map(str::to_string);
    if let Some(hash) = manifest {
        let through = call(
            &other.addr,
            "GET",
            &format!("/v1/snapshots/manifests/{hash}"),
            Some(ADMIN),
            None,
        )
        .await;
        assert_eq!(through.status, 200, "{}", through.text());
    }
}

/// SIGKILL of an owner: the other node takes its partitions within a few lease times and
/// answers with everything acknowledged. SIGSTOP of an owner past its lease: the other takes
/// over; once resumed, the paused node acknowledges nothing for those partitions itself, and
/// no row of its old epoch follows the takeover in the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_owner_is_taken_over_and_a_paused_one_is_fenced() {
    let mut cluster = Cluster::start(2).await;
    let games = games();
    for (i, game) in games.iter().enumerate() {
        define(&cluster.nodes[0].addr, game).await;
        let e = event(game, &format!("k-{i}"), "p-ava", 10);
        assert_eq!(
            call(
                &cluster.nodes[0].addr,
                "POST",
                "/v1/score-events",
                Some(ADMIN),
                Some(&e)
            )
            .await
            .status,
            202
        );
    }
    // Kill the owner of the first game; the survivor answers for it.
    let victim = cluster.owner_of(&games[0]).await;
    let v = cluster.index_of(&victim);
    let survivor = cluster.nodes[1 - v].addr.clone();
    cluster.signal(v, "-KILL");
    let killed_at = Instant::now();
    let lb = format!("/v1/leaderboards/{}/solo/S1/global/top", games[0]);
    loop {
        let top = call(&survivor, "GET", &lb, Some(ADMIN), None).await;
        if top.status == 200 {
            assert_eq!(top.json().unwrap()["entries"][0]["player_id"], "p-ava");
            break;
        }
        assert_eq!(
            (top.status, top.json().unwrap()["code"].clone()),
            (503, json!("PARTITION_MOVING"))
        );
        // A node's own refusal names it too, as every answer does.
        assert_eq!(
            top.header("x-standings-served-by"),
            Some(cluster.nodes[1 - v].id.as_str())
        );
        assert!(killed_at.elapsed() < Duration::from_secs(15), "no takeover");
    }
    // The killed node comes back and takes its share again.
    let _ = cluster.nodes[v].running.take();
    let mut child = spawn(&cluster.nodes[v].config);
    wait_ready(&cluster.nodes[v].addr, &mut child).await;
    cluster.nodes[v].running = Some(Running(child));
    cluster.settled().await;

    // Pause the owner of the first game past its lease.
    let zombie = cluster.owner_of(&games[0]).await;
    let z = cluster.index_of(&zombie);
    let other = cluster.nodes[1 - z].addr.clone();
    let p = partition_of(&games[0], PARTITIONS);
    let old_epoch = cluster.status(1 - z).await["leases"][p as usize]["epoch"]
        .as_i64()
        .unwrap();
    cluster.signal(z, "-STOP");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let status = cluster.status(1 - z).await;
        let lease = &status["leases"][p as usize];
        if lease["owner"] == cluster.nodes[1 - z].id.as_str() && lease["epoch"].as_i64() > Some(old_epoch) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the paused owner's partition was not taken: {status}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let e = event(&games[0], "after-takeover", "p-ben", 20);
    let sent = call(&other, "POST", "/v1/score-events", Some(ADMIN), Some(&e)).await;
    assert_eq!(sent.status, 202, "{}", sent.text());
    cluster.signal(z, "-CONT");
    // Straight to the resumed node: it answers nothing for the partition itself.
    for n in 0..20 {
        let e = event(&games[0], &format!("to-zombie-{n}"), "p-eli", 30 + n);
        let answer = call(
            &cluster.nodes[z].addr,
            "POST",
            "/v1/score-events",
            Some(ADMIN),
            Some(&e),
        )
        .await;
        if answer.status < 300 {
            assert_ne!(
                answer.header("x-standings-served-by"),
                Some(zombie.as_str()),
                "the deposed owner acknowledged {}",
                answer.text()
            );
        } else {
            assert_eq!(
                answer.json().unwrap()["code"],
                "PARTITION_MOVING",
                "{}",
                answer.text()
            );
        }
    }
    // In the log, epochs never go back.
    for table in ["score_events", "actions"] {
        let schema = format!("standings_p{p:04}");
        let rows = epochs(
            &cluster.db.url,
            &format!("SELECT epoch FROM {schema}.{table} ORDER BY seq"),
        )
        .await;
        assert!(rows.iter().all(|e| *e >= 1), "{table}: {rows:?}");
        assert!(
            rows.windows(2).all(|w| w[0] <= w[1]),
            "{table}: an older epoch after a newer: {rows:?}"
        );
    }
}

async fn epochs(url: &str, sql: &str) -> Vec<i64> {
    use sqlx::{Connection, Row};
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(url).await.unwrap();
    let rows = sqlx::query(sql).fetch_all(&mut conn).await.unwrap();
    rows.iter()
        .map(|r| r.try_get::<i64, _>("epoch").unwrap())
        .collect()
}

impl Cluster {
    /// Waits until node `standby`'s copy of partition `p` has applied its log's end.
    async fn followed(&self, standby: usize, p: u32) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let status = self.status(standby).await;
            let lease = &status["leases"][p as usize];
            let caught_up =
                lease["standbys"].as_array().unwrap().iter().any(|s| {
                    s["node_id"] == self.nodes[standby].id.as_str() && s["applied"] == lease["log_end"]
                });
            if caught_up {
                return;
            }
            assert!(Instant::now() < deadline, "the standby did not follow: {status}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Polls `path` on `addr` through a takeover by node `new_owner`: `503 PARTITION_MOVING` while
/// it moves, and the old owner's answers while it hands over; returns the first answer of any
/// other kind.
async fn after_takeover(addr: &str, path: &str, token: &str, new_owner: &str) -> Reply {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let answer = call(addr, "GET", path, Some(token), None).await;
        let moving = answer.status == 503 && answer.json().is_ok_and(|j| j["code"] == "PARTITION_MOVING");
        let old_owner = answer.status == 200 && answer.header("x-standings-served-by") != Some(new_owner);
        if !moving && !old_owner {
            return answer;
        }
        assert!(Instant::now() < deadline, "no takeover of {path}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What an owner acknowledged outside its event log after the standby last moved (a board
/// definition, a friend list) is served by the node that takes its partition over, after a
/// SIGKILL and after a SIGTERM hand-over alike: reads and events of the new board are answered,
/// not refused as `UNKNOWN_BOARD`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn definitions_acknowledged_after_the_last_log_entry_survive_a_takeover() {
    let mut cluster = Cluster::start(2).await;
    let game = games()[0].clone();
    let p = partition_of(&game, PARTITIONS);
    for (round, signal) in ["-KILL", "-TERM"].into_iter().enumerate() {
        let owner = cluster.index_of(&cluster.owner_of(&game).await);
        let standby = 1 - owner;
        let addr = cluster.nodes[owner].addr.clone();
        define(&addr, &game).await;
        let e = event(&game, &format!("first-{round}"), "p-ava", 10);
        let sent = call(&addr, "POST", "/v1/score-events", Some(ADMIN), Some(&e)).await;
        assert_eq!(sent.status, 202, "{}", sent.text());
        cluster.followed(standby, p).await;
        // Acknowledged now, with no log entry after them.
        let season = format!("S-next-{round}");
        let board = format!("/v1/boards/{game}/solo/{season}/global");
        let defined = call(
            &addr,
            "PUT",
            &board,
            Some(ADMIN),
            Some(&json!({"score_mode": "fastest"})),
        )
        .await;
        assert_eq!(defined.status, 201, "{}", defined.text());
        let friends = format!("/v1/games/{game}/players/p-ava/friends");
        let put = call(
            &addr,
            "PUT",
            &friends,
            Some(ADMIN),
            Some(&json!({"friends": ["p-ben"]})),
        )
        .await;
        assert!(put.status < 300, "{}", put.text());

        cluster.signal(owner, signal);
        let survivor = cluster.nodes[standby].addr.clone();
        let new_owner = cluster.nodes[standby].id.clone();
        let top = after_takeover(
            &survivor,
            &format!("/v1/leaderboards/{game}/solo/{season}/global/top"),
            ADMIN,
            &new_owner,
        )
        .await;
        assert_eq!(top.status, 200, "after {signal}: {}", top.text());
        assert_eq!(
            top.header("x-standings-served-by"),
            Some(cluster.nodes[standby].id.as_str())
        );
        let again = call(
            &survivor,
            "PUT",
            &board,
            Some(ADMIN),
            Some(&json!({"score_mode": "fastest"})),
        )
        .await;
        assert_eq!(again.status, 200, "the definition is known: {}", again.text());
        let mut e = event(&game, &format!("next-{round}"), "p-ben", 7);
        e["season"] = json!(season);
        let sent = call(&survivor, "POST", "/v1/score-events", Some(ADMIN), Some(&e)).await;
        assert_eq!(sent.status, 202, "after {signal}: {}", sent.text());
        let friends_of = after_takeover(
            &survivor,
            &format!("/v1/leaderboards/{game}/solo/{season}/global/friends-of/p-ava"),
            ADMIN,
            &new_owner,
        )
        .await;
        assert_eq!(friends_of.status, 200, "{}", friends_of.text());
        assert_eq!(friends_of.json().unwrap()["entries"][0]["player_id"], "p-ben");

        // The stopped node comes back for the next round.
        if let Some(running) = cluster.nodes[owner].running.take() {
            drop(running);
        }
        let mut child = spawn(&cluster.nodes[owner].config);
        wait_ready(&cluster.nodes[owner].addr, &mut child).await;
        cluster.nodes[owner].running = Some(Running(child));
        cluster.settled().await;
    }
}

/// SIGTERM on a node while writes flow through both: its partitions are handed over and every
/// write is answered 2xx, none 5xx.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_stopped_with_sigterm_hands_over_with_no_5xx() {
    let mut cluster = Cluster::start(2).await;
    let games = games();
    for game in &games {
        define(&cluster.nodes[0].addr, game).await;
    }
    let addrs: Vec<String> = cluster.nodes.iter().map(|n| n.addr.clone()).collect();
    let survivor = addrs[1].clone();
    let writer = tokio::spawn(async move {
        let mut statuses = Vec::new();
        for n in 0..400 {
            let game = &games[n % games.len()];
            let e = event(game, &format!("w-{n}"), &format!("p-{n}"), n as i64);
            statuses.push(
                call(&survivor, "POST", "/v1/score-events", Some(ADMIN), Some(&e))
                    .await
                    .status,
            );
        }
        statuses
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    terminate(cluster.nodes[0].running.take().unwrap());
    let statuses = writer.await.unwrap();
    assert!(statuses.iter().all(|s| *s == 202), "{statuses:?}");
    let status = cluster.status(1).await;
    assert!(
        status["leases"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["owner"] == "node-b"),
        "{status}"
    );
}

/// SIGTERM on a node while writes are sent straight to it: until it stops listening, every
/// request it takes is answered 2xx (served by it, or by the next owner once a partition moved),
/// never 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_sent_to_a_draining_node_are_answered_by_the_next_owner() {
    let mut cluster = Cluster::start(2).await;
    let games = games();
    for game in &games {
        define(&cluster.nodes[0].addr, game).await;
    }
    // Several clients at once, single events and batches across every partition.
    let writers: Vec<_> = (0..6)
        .map(|w| {
            let stopping = cluster.nodes[0].addr.clone();
            let games = games.clone();
            tokio::spawn(async move {
                let mut answers = Vec::new();
                for n in 0.. {
                    let (path, body) = if w % 2 == 0 {
                        let game = &games[n % games.len()];
                        (
                            "/v1/score-events",
                            event(game, &format!("d-{w}-{n}"), &format!("p-{n}"), n as i64),
                        )
                    } else {
                        let events: Vec<Value> = games
                            .iter()
                            .map(|g| event(g, &format!("b-{w}-{n}-{g}"), &format!("p-{n}"), n as i64))
                            .collect();
                        ("/v1/score-events/batch", json!({ "events": events }))
                    };
                    let body = body.to_string();
                    match Client::new(&stopping)
                        .request("POST", path, Some(ADMIN), Some(body.as_bytes()))
                        .await
                    {
                        Ok(reply) => answers.push((reply.status, reply.text())),
                        // It stopped listening: the load balancer's cue.
                        Err(_) => break,
                    }
                }
                answers
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    terminate(cluster.nodes[0].running.take().unwrap());
    let mut answers = Vec::new();
    for writer in writers {
        answers.extend(writer.await.unwrap());
    }
    let refused: Vec<_> = answers
        .iter()
        .filter(|(status, _)| *status != 202 && *status != 200)
        .collect();
    assert!(answers.len() > 10, "{answers:?}");
    assert!(
        refused.is_empty(),
        "{} of {}: {refused:?}",
        refused.len(),
        answers.len()
    );
}

/// The single-node modes refuse what would be unsafe: `[cluster]` on SQLite; a single-node
/// origin on a clustered database (naming its nodes); a node on a database a single-node origin
/// serves (naming it); a node whose partition count differs from the database's; a second live
/// process with a node's id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_unsafe_starts_are_refused_with_what_to_do() {
    let refused = |config: &PathBuf| {
        let out = Command::new(BIN)
            .args(["serve", "--config"])
            .arg(config)
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    // [cluster] on SQLite.
    let sqlite = TestDb::new(Db::Sqlite).await;
    let mut config = config(&sqlite.url);
    config.cluster = Some(standings_origin::config::ClusterConfig {
        node_id: "a".into(),
        advertise_url: "http://127.0.0.1:1".into(),
        partitions: 4,
        lease_ttl_ms: 1_000,
        standby: true,
        standby_reads_max_lag_ms: 1_000,
        secret: SECRET.into(),
    });
    let path = sqlite.dir.join("c.toml");
    std::fs::write(&path, toml::to_string(&config).unwrap()).unwrap();
    let said = refused(&path);
    assert!(said.contains("[cluster] needs PostgreSQL"), "{said}");

    // A single-node origin on a clustered database.
    let cluster = Cluster::start(1).await;
    let single = write_config(&cluster.db.dir, &cluster.db.url, &free_addr());
    let said = refused(&single);
    assert!(said.contains("is clustered (nodes: node-a at http://"), "{said}");
    assert!(said.contains("add the [cluster] section"), "{said}");

    // A second live process with node-a's id.
    let said = refused(&cluster.nodes[0].config);
    assert!(
        said.contains("node_id \"node-a\" is in use by a running node"),
        "{said}"
    );

    // Another live node's address.
    let twin = node_config(&cluster.db, "node-t", &free_addr(), true);
    let text = std::fs::read_to_string(&twin).unwrap();
    let own = text
        .lines()
        .find(|l| l.starts_with("advertise_url"))
        .unwrap()
        .to_string();
    let text = text.replace(
        &own,
        &format!("advertise_url = \"http://{}\"", cluster.nodes[0].addr),
    );
    std::fs::write(&twin, text).unwrap();
    let said = refused(&twin);
    assert!(
        said.contains(&format!(
            "cluster.advertise_url \"http://{}\" is the address of the running node \"node-a\"",
            cluster.nodes[0].addr
        )),
        "{said}"
    );

    // Another partition count.
    let other = node_config(&cluster.db, "node-x", &free_addr(), true);
    let text = std::fs::read_to_string(&other)
        .unwrap()
        .replace("partitions = 4", "partitions = 8");
    std::fs::write(&other, text).unwrap();
    let said = refused(&other);
    assert!(
        said.contains("was clustered with 4 partitions and this node's [cluster] says 8"),
        "{said}"
    );

    // A node on a database a single-node origin serves.
    let plain = TestDb::new(Db::Postgres).await;
    let addr = free_addr();
    let single = write_config(&plain.dir, &plain.url, &addr);
    let _serving = serve(&single, &addr).await;
    let node = node_config(&plain, "node-y", &free_addr(), true);
    let said = refused(&node);
    assert!(
        said.contains("is served by a single-node Standings origin"),
        "{said}"
    );
    assert!(said.contains(&format!("listening on {addr}")), "{said}");
}

/// A node paused past its heartbeat while an orchestrator starts a new process under its id: the
/// new process is the node (its row, its address), and the paused one, once resumed, finds its
/// id taken over and exits rather than answering for partitions it no longer holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_node_whose_id_was_taken_over_exits_when_it_resumes() {
    let mut cluster = Cluster::start(2).await;
    cluster.signal(0, "-STOP");
    let addr = free_addr();
    let config = node_config(&cluster.db, "node-a", &addr, true);
    let mut child = spawn(&config);
    wait_ready(&addr, &mut child).await;
    let replacement = Running(child);
    let status = cluster.status(1).await;
    let node_a = status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["node_id"] == "node-a")
        .unwrap()
        .clone();
    assert_eq!(node_a["advertise_url"], format!("http://{addr}"), "{status}");
    cluster.signal(0, "-CONT");
    let paused = &mut cluster.nodes[0].running.as_mut().unwrap().0;
    let deadline = Instant::now() + Duration::from_secs(20);
    let exited = loop {
        if let Some(exited) = paused.try_wait().unwrap() {
            break exited;
        }
        assert!(Instant::now() < deadline, "the resumed process did not exit");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(exited.code(), Some(1));
    // The new process serves as node-a, and the cluster settles on it.
    cluster.nodes[0].addr = addr;
    cluster.nodes[0].running = Some(replacement);
    cluster.settled().await;
}

/// A read forwarded to an owner that is paused as it arrives is answered by the node that takes
/// the partition over, once the paused owner's lease expired, not refused after the forward's
/// timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_forwarded_to_a_paused_owner_is_answered_by_the_next_one() {
    let mut cluster = Cluster::start(2).await;
    let games = games();
    let owner = cluster.owner_of(&games[0]).await;
    let o = cluster.index_of(&owner);
    define(&cluster.nodes[o].addr, &games[0]).await;
    let e = event(&games[0], "before-pause", "p-ava", 10);
    let sent = call(
        &cluster.nodes[o].addr,
        "POST",
        "/v1/score-events",
        Some(ADMIN),
        Some(&e),
    )
    .await;
    assert_eq!(sent.status, 202, "{}", sent.text());
    let other = cluster.nodes[1 - o].addr.clone();
    let other_id = cluster.nodes[1 - o].id.clone();
    cluster.followed(1 - o, partition_of(&games[0], PARTITIONS)).await;
    cluster.signal(o, "-STOP");
    let top = call(
        &other,
        "GET",
        &format!("/v1/leaderboards/{}/solo/S1/global/top", games[0]),
        Some(ADMIN),
        None,
    )
    .await;
    cluster.signal(o, "-CONT");
    assert_eq!(top.status, 200, "{}", top.text());
    assert_eq!(top.header("x-standings-served-by"), Some(other_id.as_str()));
    assert_eq!(top.json().unwrap()["entries"][0]["player_id"], "p-ava");
    let _ = cluster.nodes[o].running.take();
}

/// A `game` given twice in a query is refused by whichever node is asked, so no node routes by
/// one value while the engine answers for the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_given_twice_is_refused_by_every_node() {
    let cluster = Cluster::start(2).await;
    let games = games();
    for node in &cluster.nodes {
        let path = format!("/v1/audit?game={}&game={}", games[0], games[1]);
        let answer = call(&node.addr, "GET", &path, Some(ADMIN), None).await;
        assert_eq!(answer.status, 400, "{}", answer.text());
        let body = answer.json().unwrap();
        assert_eq!(body["code"], "INVALID_REQUEST");
        assert_eq!(
            body["detail"],
            "the query parameter \"game\" is given more than once; give it once"
        );
    }
}

/// Reads an SSE stream until its text holds `needle`, within a deadline; returns all read.
async fn read_until(stream: &mut tokio::net::TcpStream, seen: &mut String, needle: &str) {
    use tokio::io::AsyncReadExt;
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut buf = [0u8; 4096];
    while !seen.contains(needle) {
        assert!(Instant::now() < deadline, "no {needle:?} in: {seen}");
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "the stream ended before {needle:?}: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
}

async fn subscribe(addr: &str, path: &str, last_event_id: Option<&str>) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let resume = last_event_id.map_or(String::new(), |id| format!("last-event-id: {id}\r\n"));
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {ADMIN}\r\naccept: text/event-stream\r\n{resume}\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
    stream
}

/// A subscriber of a partition whose owner stops with SIGTERM is told `going_away`, and,
/// reconnecting to another node with its last position, catches up exactly: the first message
/// there is one delta from where it was (board versions are the log's, the same on every node).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_of_a_moved_partition_catches_up_exactly_on_the_new_owner() {
    let mut cluster = Cluster::start(2).await;
    let game = &games()[0];
    let owner = cluster.owner_of(game).await;
    let o = cluster.index_of(&owner);
    let (owner_addr, other_addr) = (cluster.nodes[o].addr.clone(), cluster.nodes[1 - o].addr.clone());
    define(&owner_addr, game).await;
    for n in 0..3 {
        call(
            &owner_addr,
            "POST",
            "/v1/score-events",
            Some(ADMIN),
            Some(&event(game, &format!("l-{n}"), &format!("p-{n}"), 10 + n)),
        )
        .await;
    }
    let path = format!("/v1/leaderboards/{game}/solo/S1/global/subscribe?view=top:10");
    let mut stream = subscribe(&owner_addr, &path, None).await;
    let mut seen = String::new();
    read_until(&mut stream, &mut seen, "\"p-2\"").await;
    let last_id = seen
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("id: ").or_else(|| l.strip_prefix("id:")))
        .expect("an id")
        .trim()
        .to_string();
    terminate(cluster.nodes[o].running.take().unwrap());
    read_until(&mut stream, &mut seen, "going_away").await;
    // A write the subscriber has not seen, on the new owner.
    let e = event(game, "l-after", "p-late", 99);
    assert_eq!(
        call(&other_addr, "POST", "/v1/score-events", Some(ADMIN), Some(&e))
            .await
            .status,
        202
    );
    let mut again = subscribe(&other_addr, &path, Some(&last_id)).await;
    let mut resumed = String::new();
    read_until(&mut again, &mut resumed, "\"p-late\"").await;
    let first_event = resumed
        .lines()
        .find_map(|l| l.strip_prefix("event: ").or_else(|| l.strip_prefix("event:")))
        .unwrap_or("")
        .trim()
        .to_string();
    assert_eq!(
        first_event, "delta",
        "the first message after {last_id} on the new owner: {resumed}"
    );
}

/// The subscribers of a paused owner's partition, on the owner itself and through the other
/// node, are told `going_away` once it resumes and finds its lease taken, rather than kept on
/// a stream whose view no longer moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_subscribers_of_a_paused_owner_are_told_to_go_away_once_it_resumes() {
    let cluster = Cluster::start(2).await;
    let game = &games()[0];
    let zombie = cluster.owner_of(game).await;
    let z = cluster.index_of(&zombie);
    let (zombie_addr, other_addr) = (cluster.nodes[z].addr.clone(), cluster.nodes[1 - z].addr.clone());
    define(&zombie_addr, game).await;
    let e = event(game, "z-0", "p-0", 10);
    assert_eq!(
        call(&zombie_addr, "POST", "/v1/score-events", Some(ADMIN), Some(&e))
            .await
            .status,
        202
    );
    let path = format!("/v1/leaderboards/{game}/solo/S1/global/subscribe?view=top:10");
    let (mut direct, mut through) = (
        subscribe(&zombie_addr, &path, None).await,
        subscribe(&other_addr, &path, None).await,
    );
    let (mut seen_direct, mut seen_through) = (String::new(), String::new());
    read_until(&mut direct, &mut seen_direct, "\"p-0\"").await;
    read_until(&mut through, &mut seen_through, "\"p-0\"").await;
    let p = partition_of(game, PARTITIONS) as usize;
    let old_epoch = cluster.status(1 - z).await["leases"][p]["epoch"].as_i64();
    cluster.signal(z, "-STOP");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let status = cluster.status(1 - z).await;
        let lease = &status["leases"][p];
        if lease["owner"] == cluster.nodes[1 - z].id.as_str() && lease["epoch"].as_i64() > old_epoch {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the paused owner's partition was not taken: {status}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    cluster.signal(z, "-CONT");
    read_until(&mut direct, &mut seen_direct, "going_away").await;
    read_until(&mut through, &mut seen_through, "going_away").await;
}

/// `standings rebuild` on a clustered database replays each partition's log and finds every
/// board equal to the live one, asking the node of its config (which forwards to the owners);
/// with `--board` it replays that game's partition alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rebuild_replays_every_partition_and_matches_the_live_boards() {
    let cluster = Cluster::start(2).await;
    let games = games();
    for (i, game) in games.iter().enumerate() {
        let node = &cluster.nodes[i % 2].addr;
        define(node, game).await;
        let e = event(game, &format!("r-{i}"), "p-ava", 10 + i as i64);
        assert_eq!(
            call(node, "POST", "/v1/score-events", Some(ADMIN), Some(&e))
                .await
                .status,
            202
        );
    }
    let rebuild = |more: &[&str]| {
        let out = Command::new(BIN)
            .arg("rebuild")
            .args(more)
            .arg("--config")
            .arg(&cluster.nodes[0].config)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let all = rebuild(&[]);
    let partitions = all.lines().filter(|l| l.starts_with("partition ")).count();
    let boards: Vec<&str> = all
        .lines()
        .filter(|l| l.contains(" players, board_version "))
        .collect();
    assert_eq!(
        (partitions, boards.len()),
        (PARTITIONS as usize, games.len()),
        "{all}"
    );
    assert!(
        boards.iter().all(|l| l.ends_with("matches the live board")),
        "{all}"
    );
    let one = rebuild(&["--board", &format!("{}/solo/S1/global", games[1])]);
    let p = partition_of(&games[1], PARTITIONS);
    assert_eq!(
        one.lines()
            .filter(|l| l.starts_with("partition "))
            .collect::<Vec<_>>(),
        [format!("partition {p}:")],
        "{one}"
    );
    assert!(one.contains("matches the live board"), "{one}");
}
