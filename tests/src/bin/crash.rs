//! The crash harness: concurrent clients submit score events, with retries until answered, while
//! the service is SIGKILLed at random moments and restarted (and, on a private PostgreSQL
//! cluster, the database is stopped and started under it). At the end it proves that nothing
//! acknowledged was lost or counted twice and nothing refused was stored. In Patroni mode
//! (`crash/patroni.rs`, run by `tests/patroni/run`) the database is reached through HAProxy and
//! the chaos is failovers of PostgreSQL's primary. In cluster mode (`crash/cluster.rs`) the
//! service is several origins over one database, the events are for games over every partition
//! and sent to random nodes, and the chaos is kills of owners, zombies and rolling restarts.
//!
//! ```text
//! cargo build --release -p standings-origin --bin standings
//! cargo run --release -p standings-tests --bin crash -- --db sqlite --events 100000 --kills 20
//! cargo run --release -p standings-tests --bin crash -- --db postgres-private --kills 5 --outages 3
//! cargo run --release -p standings-tests --bin crash -- --db cluster --nodes 3 --games 8 \
//!     --events 100000 --kills 20 --zombies 3 --rolling-restarts 2 [--no-standby]
//! ```
//!
//! Each client sends single events and small batches: fresh events (achieved out of order over
//! the last hours), events for a closed day (answered LATE), resends of events it already had
//! acknowledged (20% of submissions, answered DUPLICATE), a few resends with another value
//! (answered EVENT_ID_CONFLICT) and a few invalid events. A connection error or a 503 is retried
//! with the same event ids; ACCEPTED, LATE or DUPLICATE acknowledges. The checks at the end,
//! after one more SIGKILL and restart: every acknowledged event is in the log exactly once with
//! its payload and nothing else is; resending them all answers DUPLICATE and changes no board;
//! both boards (cumulative and highest) equal a model folded from the acknowledged events with
//! the core's own `BoardRules`; `standings rebuild` equals the live digests.
//!
//! Live subscribers and a snapshot reader stay attached throughout. Six subscribers (SSE and
//! WebSocket, `top`, `around` and `player` views of both boards) follow their view with the
//! core's `ViewState::apply`; when a kill breaks their stream they come back with
//! `since_version` set to the position they hold (a `resync`, or a delta the core refuses,
//! starts them over without one). After the last restart, with the boards quiet, each must
//! reach the board's version and hold exactly what a fresh read of its view answers. The
//! snapshot reader asks for each board's head again and again, fetches the manifest and every
//! chunk it names (in bundles, or one by one) and decodes them with the core, restoring the
//! board; every head must name parts the same process serves, and a round a kill cut short
//! proves nothing either way.
#![forbid(unsafe_code)]

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use standings_core::interval::RankSketch;
use standings_core::{
    BoardDigest, BoardRules, LookupChunk, MAX_PATCH_LEVELS, ManifestPatch, Position, RankChunk, Root,
    ScoreEvent, ScoreMode, Snapshot, Standing, View, ViewState,
};
use standings_tests::harness::{self, Options};
use standings_tests::http::{Answer, HttpConn};
use standings_tests::live::{LiveStream, Message, Opened, Transport, read_path_of, view_of_read};
use standings_tests::service::{ADMIN_TOKEN, Database, SERVICE_TOKEN, Service};
use standings_tests::workload::{Rng, push_int, push_rfc3339};

#[path = "crash/cluster.rs"]
mod cluster;
#[path = "crash/feed.rs"]
mod feed;
#[path = "crash/patroni.rs"]
mod patroni;

/// The game of a single service's events; in cluster mode the first game.
const GAME: &str = "crash";
const SUM_BOARD: &str = "crash/duel/s1/sum";
const BEST_BOARD: &str = "crash/duel/s1/best";
/// Every event feeds both boards.
const SCOPES: &str = r#"["sum","best"]"#;
/// How long one request may take before it counts as unanswered and is retried. A request
/// that waits for a database that is down is answered 503 well within this.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the service may take to become ready after a restart, and to recover after the
/// database is back.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// The live subscribers: (board, view, transport). The players are ones the clients write
/// (`p{index * 64 + client}`, clients 0 to 31), so their views fill as the run goes.
const SUBSCRIBERS: [(&str, &str, Transport); 6] = [
    (SUM_BOARD, "top:10", Transport::Sse),
    (BEST_BOARD, "top:100", Transport::WebSocket),
    (SUM_BOARD, "around:p0003:3", Transport::Sse),
    (BEST_BOARD, "around:p0070:5", Transport::WebSocket),
    (BEST_BOARD, "player:p0003", Transport::Sse),
    (SUM_BOARD, "player:p0130", Transport::WebSocket),
];
/// How long the subscribers may take, after the last restart, to reach the boards' version.
const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(30);
/// The pause between two rounds of the snapshot reader (one head, its manifest and chunks).
const SNAPSHOT_PAUSE: Duration = Duration::from_millis(100);

/// The service's database.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
enum Db {
    /// A SQLite file.
    Sqlite,
    /// A fresh database on the PostgreSQL at --postgres-url.
    Postgres,
    /// A private PostgreSQL 15 cluster started for this run (needed for --outages).
    PostgresPrivate,
    /// Several origins (--nodes) as one cluster over a fresh database on the PostgreSQL at
    /// --postgres-url: the kills are of owners, with zombies and rolling restarts besides.
    Cluster,
    /// A fresh database through the HAProxy at --postgres-url, in front of a Patroni cluster
    /// whose primary --failover-command kills (tests/patroni/run starts the stack).
    Patroni,
}

/// The crash harness: clients submit score events while the service is SIGKILLed and
/// restarted; at the end nothing acknowledged may be lost or counted twice, and nothing refused
/// stored.
#[derive(clap::Parser, Debug)]
#[command(name = "crash")]
struct Args {
    /// The service's database.
    #[arg(long, value_enum, default_value = "sqlite")]
    db: Db,
    /// Event submissions in all, duplicates included.
    #[arg(long, value_name = "N", default_value = "10000")]
    events: u64,
    /// Concurrent clients.
    #[arg(long, value_name = "N", default_value = "32", value_parser = harness::zero_as_one)]
    clients: u64,
    /// SIGKILLs of the service at random moments, each followed by a restart.
    #[arg(long, value_name = "N", default_value = "5")]
    kills: u64,
    /// Stops (-m immediate) and starts of the private PostgreSQL cluster while the service runs
    /// (only with postgres-private).
    #[arg(long, value_name = "N", default_value = "0")]
    outages: u64,
    /// The seed of every draw.
    #[arg(long, value_name = "N", default_value = "1")]
    seed: u64,
    /// The service's checkpoint_every_events: small, so that kills land during and after
    /// checkpoints and restarts read a checkpoint and a tail (0 = no periodic checkpoints).
    #[arg(long = "checkpoint-every", value_name = "N", default_value = "2000")]
    checkpoint_every: u64,
    /// The service binary.
    #[arg(long, value_name = "PATH", default_value = "target/release/standings")]
    standings_bin: PathBuf,
    /// An existing database to create ours from, for --db postgres.
    #[arg(
        long,
        value_name = "URL",
        default_value = "postgres://postgres@127.0.0.1:5432/test"
    )]
    postgres_url: String,
    /// PostgreSQL's server binaries.
    #[arg(long, value_name = "DIR", default_value = "/usr/lib/postgresql/15/bin")]
    postgres_bin: PathBuf,
    /// The whole run's deadline.
    #[arg(long = "timeout-seconds", value_name = "S", default_value = "1800", value_parser = harness::seconds)]
    timeout: Duration,
    /// Keep the temp folder (config, service log, SQLite file).
    #[arg(long)]
    keep: bool,
    /// Cluster mode: the origins.
    #[arg(long, value_name = "N", default_value = "3")]
    nodes: usize,
    /// Cluster mode: the games the events are spread over (the first ones cover every
    /// partition).
    #[arg(long, value_name = "N", default_value = "8")]
    games: usize,
    /// Cluster mode: the partitions the games are hashed to (at most 64).
    #[arg(long, value_name = "N", default_value = "8")]
    partitions: u32,
    /// Cluster mode: each node's lease_ttl_ms.
    #[arg(long = "lease-ttl-ms", value_name = "MS", default_value = "2000")]
    lease_ttl_ms: u64,
    /// Cluster mode: owners stopped (SIGSTOP) past their lease until another node took their
    /// partitions over, then resumed (SIGCONT).
    #[arg(long, value_name = "N", default_value = "0")]
    zombies: u64,
    /// Cluster mode: SIGTERM, wait and restart of every node in turn, under load.
    #[arg(long = "rolling-restarts", value_name = "N", default_value = "0")]
    rolling_restarts: u64,
    /// Cluster mode: the nodes keep no warm standbys (`standby = false`), so a takeover
    /// restores from the newest checkpoint and the log after it.
    #[arg(long)]
    no_standby: bool,
    /// Patroni mode: kills of PostgreSQL's primary under load, each followed by the old
    /// primary's rejoining as the synchronous standby.
    #[arg(long, value_name = "N", default_value = "0")]
    failovers: u64,
    /// Patroni mode: the program run as `PATH kill-primary` and `PATH rejoin` (tests/patroni/run).
    #[arg(long = "failover-command", value_name = "PATH")]
    failover_command: Option<PathBuf>,
}

impl Options for Args {
    fn check(&self) -> Result<(), String> {
        if self.outages > 0 && self.db != Db::PostgresPrivate {
            return Err("--outages needs --db postgres-private (the shared server is never stopped)".into());
        }
        if self.db != Db::Cluster && (self.zombies > 0 || self.rolling_restarts > 0 || self.no_standby) {
            return Err("--zombies, --rolling-restarts and --no-standby need --db cluster".into());
        }
        if (self.failovers > 0) != (self.db == Db::Patroni && self.failover_command.is_some()) {
            return Err("--failovers needs --db patroni and --failover-command, which go with it".into());
        }
        if self.db == Db::Cluster {
            if self.nodes < 2 {
                return Err(
                    "--db cluster needs --nodes 2 or more (a partition moves to another node)".into(),
                );
            }
            if !(1..=64).contains(&self.partitions) || self.games < self.partitions as usize {
                return Err("--partitions must be from 1 to 64, and --games at least as many".into());
            }
        }
        Ok(())
    }
}

fn main() -> ExitCode {
    let args: Args = harness::options();
    // One thread drives every client: they mostly wait on the service, and the machine's cores
    // are better left to it.
    harness::block_on("crash", 1, async {
        match args.db {
            Db::Cluster => cluster::run(&args).await.map(Some),
            _ => run(&args).await.map(Some),
        }
    })
}

/// What a submitted event is meant to test, and so which answers are right for it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// A new id, achieved today: ACCEPTED (LATE near midnight), DUPLICATE only on a retry.
    Fresh,
    /// A new id achieved two days ago, for a closed daily period: LATE, DUPLICATE on a retry.
    Late,
    /// A resend of an acknowledged event: DUPLICATE, always.
    Duplicate,
    /// An acknowledged id with another value: EVENT_ID_CONFLICT, always.
    Conflict,
    /// A new id that is refused with this code.
    Invalid(&'static str),
}

/// One event as submitted.
#[derive(Clone, Debug)]
struct Event {
    id: String,
    game: Arc<str>,
    player: String,
    value: i64,
    achieved_at: i64,
    /// The scopes as JSON; an invalid event may name a board that does not exist.
    scopes: &'static str,
}

impl Event {
    fn push_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"event_id\":\"");
        out.extend_from_slice(self.id.as_bytes());
        out.extend_from_slice(b"\",\"player_id\":\"");
        out.extend_from_slice(self.player.as_bytes());
        out.extend_from_slice(b"\",\"game\":\"");
        out.extend_from_slice(self.game.as_bytes());
        out.extend_from_slice(b"\",\"mode\":\"duel\",\"season\":\"s1\",\"scopes\":");
        out.extend_from_slice(self.scopes.as_bytes());
        out.extend_from_slice(b",\"value\":");
        push_int(out, self.value);
        out.extend_from_slice(b",\"achieved_at\":\"");
        push_rfc3339(out, self.achieved_at);
        out.extend_from_slice(b"\"}");
    }
}

/// The figures of a run, shared by the clients and the chaos controller.
#[derive(Default)]
struct Tally {
    requests: AtomicU64,
    answered: AtomicU64,
    acknowledged: AtomicU64,
    /// Events answered ACCEPTED or LATE: stored by this very request, which shows that writes
    /// work (a retried event can be answered DUPLICATE from a look-up alone).
    stored: AtomicU64,
    duplicates: AtomicU64,
    conflicts: AtomicU64,
    invalid: AtomicU64,
    late: AtomicU64,
    connection_retries: AtomicU64,
    unavailable_retries: AtomicU64,
    /// The 503s whose code was `DATABASE_UNAVAILABLE`.
    database_unavailable: AtomicU64,
    server_errors: AtomicU64,
    /// When the latest request that stored an event was sent (ms since the epoch): a write
    /// sent after a failover's kill and stored shows that the service writes again.
    stored_sent_ms: AtomicI64,
    /// Set when the run cannot go on (the service did not come back): clients stop retrying.
    abandoned: std::sync::atomic::AtomicBool,
    /// SIGKILLs begun so far: which lifetime of the service a request may have reached (the
    /// snapshot reader trusts a round only within one).
    kills_begun: AtomicU64,
    /// In cluster mode, set from an action's start until the cluster settled after it: the
    /// partitions may move meanwhile, so a snapshot round that began then proves nothing.
    moving: std::sync::atomic::AtomicBool,
    /// In cluster mode, reads handed a write's position (`min_position`) that answered, and of
    /// those the ones a node answered for a partition it does not own (from its warm copy).
    position_reads: AtomicU64,
    position_reads_by_copies: AtomicU64,
    /// Such reads that could not answer then (a 503 with a code, a node down).
    position_reads_unanswered: AtomicU64,
}

/// What every client shares: the acknowledged events, the refused ids and the failures seen.
#[derive(Default)]
struct Ledger {
    acknowledged: HashMap<String, Event>,
    refused: HashSet<String>,
    failures: Vec<String>,
}

impl Ledger {
    fn fail(&mut self, why: String) {
        // The first few say what went wrong; the count says how often.
        if self.failures.len() < 50 {
            eprintln!("crash: {why}");
        }
        self.failures.push(why);
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

async fn run(args: &Args) -> Result<String, String> {
    let started = Instant::now();
    let deadline = started + args.timeout;
    let private = match args.db {
        Db::PostgresPrivate => Some(PrivatePostgres::create(&args.postgres_bin)?),
        _ => None,
    };
    let database = match (&args.db, &private) {
        (Db::Sqlite, _) => Database::Sqlite,
        (Db::Postgres, _) => Database::Postgres {
            admin_url: args.postgres_url.clone(),
            name: format!("standings_crash_{}", std::process::id()),
        },
        (Db::PostgresPrivate, Some(cluster)) => Database::Postgres {
            admin_url: cluster.url("postgres"),
            name: "standings_crash".into(),
        },
        (Db::PostgresPrivate, None) => unreachable!("the private cluster starts above"),
        (Db::Cluster, _) => unreachable!("the cluster mode runs cluster::run"),
        (Db::Patroni, _) => Database::Postgres {
            admin_url: args.postgres_url.clone(),
            name: "standings_patroni".into(),
        },
    };
    let mut service = Service::prepare_with(
        &args.standings_bin,
        database,
        args.keep,
        "crash",
        &format!(
            // The split board's shards on two threads, kills landing mid-settle.
            "checkpoint_every_events = {}\npin_http_threads = false\nshard_threads = 2\n{}",
            args.checkpoint_every,
            feed::CONFIG
        ),
    )?;
    service.start(READY_TIMEOUT).await?;
    let addr = service.addr.clone();
    define_boards(&addr, GAME).await?;
    let (hook_url, receiver) = standings_tests::receiver::Receiver::start(feed::FAIL_EVERY).await?;
    feed::register(&addr, GAME, &hook_url).await?;

    let tally = Arc::new(Tally::default());
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let watching = Arc::new(Watching::default());
    let mut subscribers = Vec::new();
    for (board, view, transport) in SUBSCRIBERS {
        let subscriber = Arc::new(Subscriber {
            board,
            view: view.parse().map_err(|e| format!("the view {view}: {e}"))?,
            transport,
            held: Mutex::new(None),
            seen: Mutex::new((None, None)),
        });
        let task = tokio::spawn(follow(
            addr.clone(),
            subscriber.clone(),
            watching.clone(),
            ledger.clone(),
        ));
        subscribers.push((subscriber, task));
    }
    let reader = tokio::spawn(read_snapshots(
        addr.clone(),
        tally.clone(),
        watching.clone(),
        ledger.clone(),
    ));
    let load = Arc::new(Load {
        addrs: vec![addr.clone()],
        games: vec![Arc::from(GAME)],
        cluster: None,
    });
    let clients = spawn_clients(args, &load, deadline, &tally, &ledger);
    let chaos = chaos(args, &mut service, private.as_ref(), &tally, deadline).await;
    let finished = finish_clients(clients, &tally, chaos.is_ok()).await;
    let chaos = chaos?;
    finished.map_err(|why| format!("{why}; {}", service.log_tail()))?;
    if Instant::now() >= deadline {
        return Err(format!("the run passed its deadline of {:?}", args.timeout));
    }
    let load_took = started.elapsed();

    // One more crash, so that the checks read what a restart restores, up to the last
    // acknowledgement; the subscribers come back once more, to quiet boards.
    tally.kills_begun.fetch_add(1, Ordering::Relaxed);
    service.kill()?;
    service.start(READY_TIMEOUT).await?;
    let live = check_subscribers(&addr, &subscribers).await;
    let snapshots = finish_snapshot_reader(&tally, &watching).await;
    watching.stop.store(true, Ordering::Relaxed);
    for (_, task) in &subscribers {
        task.abort();
    }
    reader.abort();

    let (acknowledged, refused, failures) = {
        let ledger = ledger
            .lock()
            .map_err(|_| "a client panicked holding the ledger")?;
        (
            ledger.acknowledged.clone(),
            ledger.refused.clone(),
            ledger.failures.clone(),
        )
    };
    let mut problems = failures;
    problems.extend(chaos.problems.iter().cloned());
    if let Err(why) = &live {
        problems.push(why.clone());
    }
    if let Err(why) = &snapshots {
        problems.push(why.clone());
    }
    let logged = service.logged_events()?;
    if let Err(why) = check_logged(&logged, &acknowledged, &refused) {
        problems.push(why);
    }
    let feed = match feed::settled(&addr, GAME).await {
        Ok(settled) => {
            let order = HashMap::from([(GAME.to_string(), logged_order(&logged, &acknowledged))]);
            let feeds = std::collections::BTreeMap::from([(GAME.to_string(), settled)]);
            feed::check(&feeds, &order, |game| boards_of(game).to_vec(), &receiver)
        }
        Err(why) => Err(why),
    };
    let feed = feed.unwrap_or_else(|why| {
        problems.push(why);
        "feed: FAILED".into()
    });
    let boards = [SUM_BOARD.to_string(), BEST_BOARD.to_string()];
    let before = digests(&addr, &boards).await?;
    if let Err(why) = resend_all(&addr, &acknowledged).await {
        problems.push(why);
    }
    let after = digests(&addr, &boards).await?;
    if before != after {
        problems.push(format!(
            "resending the acknowledged events changed the boards: {before:?} then {after:?}"
        ));
    }
    if let Err(why) = check_boards(&addr, GAME, &acknowledged).await {
        problems.push(why);
    }
    let rebuild = match service.rebuild() {
        Ok(took) => format!("{:.2} s", took.as_secs_f64()),
        Err(why) => {
            problems.push(why);
            "FAILED".into()
        }
    };
    let t = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let summary = format!(
        "{db:?}: {events} submissions by {clients} clients in {secs:.1} s ({requests} requests): \
         {acked} events acknowledged ({dups} duplicate resends answered DUPLICATE, {late} LATE), \
         {conflicts} conflicting resends and {invalid} invalid events refused; {kills} kills, \
         {outages} database outages{recovery}{failovers}; {conn} retries after a connection error, \
         {unavail} after a 503, {errors} other 5xx; log checked, resends changed nothing, \
         both boards equal the model, rebuild {rebuild}; {live}; {snapshots}; {feed}",
        live = watching.live_figures(live.is_ok()),
        snapshots = watching.snapshot_figures(&tally, snapshots.is_ok()),
        db = args.db,
        events = args.events,
        clients = args.clients,
        secs = load_took.as_secs_f64(),
        requests = t(&tally.requests),
        acked = acknowledged.len(),
        dups = t(&tally.duplicates),
        late = t(&tally.late),
        conflicts = t(&tally.conflicts),
        invalid = t(&tally.invalid),
        kills = chaos.kills,
        outages = chaos.outages,
        recovery = chaos.recovery,
        failovers = patroni::figures(&chaos.failovers),
        conn = t(&tally.connection_retries),
        unavail = t(&tally.unavailable_retries),
        errors = t(&tally.server_errors),
    );
    if problems.is_empty() {
        Ok(summary)
    } else {
        Err(format!(
            "{} problem(s); the first: {}\n(the run: {summary})\n{}",
            problems.len(),
            problems[0],
            service.log_tail()
        ))
    }
}

/// Waits for the clients to finish (when the chaos went as planned; otherwise they are told to
/// give up), unless they get no answer for [`READY_TIMEOUT`] (then they give up too).
async fn finish_clients(
    clients: Vec<tokio::task::JoinHandle<()>>,
    tally: &Tally,
    go_on: bool,
) -> Result<(), String> {
    let mut stall = Ok(());
    if !go_on {
        tally.abandoned.store(true, Ordering::Relaxed);
    } else {
        let mut progress = Progress::new(tally);
        while clients.iter().any(|c| !c.is_finished()) {
            if progress.stalled(tally) {
                tally.abandoned.store(true, Ordering::Relaxed);
                stall = Err(format!(
                    "after the last kill or outage no submission was answered for {READY_TIMEOUT:?}"
                ));
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    for client in clients {
        client.await.map_err(|e| format!("a client panicked: {e}"))?;
    }
    stall
}

/// The two boards of a game: a cumulative one, and a highest one with a daily period.
fn boards_of(game: &str) -> [(String, ScoreMode); 2] {
    [
        (format!("{game}/duel/s1/sum"), ScoreMode::Cumulative),
        (format!("{game}/duel/s1/best"), ScoreMode::Highest),
    ]
}

/// Defines a game's two boards (as admin): a cumulative one split into 3 score-range shards
/// (whose boundaries move as it grows, so kills land during moves), and a highest one with a
/// daily period and no grace, so that events for an earlier day are LATE.
async fn define_boards(addr: &str, game: &str) -> Result<(), String> {
    let mut conn = HttpConn::connect(addr, ADMIN_TOKEN).await?;
    for ((board, _), body) in boards_of(game).into_iter().zip([
        format!(
            r#"{{"score_mode":"cumulative","shards":3,{}}}"#,
            feed::declared(ScoreMode::Cumulative)
        ),
        format!(
            r#"{{"score_mode":"highest","periods":["all_time","daily"],"grace_seconds":0,{}}}"#,
            feed::declared(ScoreMode::Highest)
        ),
    ]) {
        let answer = conn.put(&format!("/v1/boards/{board}"), body.as_bytes()).await?;
        if answer.status != 201 && answer.status != 200 {
            return Err(format!(
                "defining {board} answered {}: {}",
                answer.status,
                conn.body_text(&answer)
            ));
        }
    }
    Ok(())
}

/// Where the clients send their events and for which games: one service and the game `crash`,
/// or the nodes of a cluster (a random one for each request) and games over every partition.
struct Load {
    addrs: Vec<String>,
    games: Vec<Arc<str>>,
    /// In cluster mode: what the clients record of each answer, and their pace.
    cluster: Option<Arc<cluster::Watch>>,
}

/// Starts `--clients` clients sharing `--events` submissions.
fn spawn_clients(
    args: &Args,
    load: &Arc<Load>,
    deadline: Instant,
    tally: &Arc<Tally>,
    ledger: &Arc<Mutex<Ledger>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..args.clients)
        .map(|client| {
            let submissions = args.events / args.clients + u64::from(client < args.events % args.clients);
            tokio::spawn(run_client(
                load.clone(),
                client,
                submissions,
                args.seed,
                deadline,
                tally.clone(),
                ledger.clone(),
            ))
        })
        .collect()
}

/// One client: `submissions` event submissions as single requests and small batches, each
/// retried until answered.
async fn run_client(
    load: Arc<Load>,
    client: u64,
    submissions: u64,
    seed: u64,
    deadline: Instant,
    tally: Arc<Tally>,
    ledger: Arc<Mutex<Ledger>>,
) {
    let mut rng = Rng::stream(seed, client);
    // The node each request goes to is drawn apart, so the events are the same whatever the
    // nodes.
    let mut picks = Rng::stream(seed, client | 1 << 32);
    let players = (submissions / 4).clamp(20, 500);
    let mut own_acked: Vec<Event> = Vec::new();
    let mut next_id = 0u64;
    let mut conns: Vec<Option<HttpConn>> = load.addrs.iter().map(|_| None).collect();
    let mut sent = 0u64;
    while sent < submissions {
        let size = if rng.below(10) < 3 { 2 + rng.below(15) } else { 1 };
        let size = size.min(submissions - sent);
        let mut unit: Vec<(Kind, Event)> = Vec::new();
        let mut ids_in_unit = HashSet::new();
        // With several games a unit is of one game, but a quarter of the batches mix them (a
        // node splits those by partition).
        let games = &load.games;
        let mixed = games.len() > 1 && size > 1 && rng.below(4) == 0;
        let mut game = if games.len() > 1 {
            rng.below(games.len() as u64) as usize
        } else {
            0
        };
        for _ in 0..size {
            if mixed {
                game = rng.below(games.len() as u64) as usize;
            }
            let (kind, event) = draw_event(
                &mut rng,
                client,
                &mut next_id,
                players,
                &games[game],
                &own_acked,
                &ids_in_unit,
            );
            ids_in_unit.insert(event.id.clone());
            unit.push((kind, event));
        }
        sent += size;
        if let Some(watch) = &load.cluster {
            watch.pace(size).await;
        }
        let partitions = load
            .cluster
            .as_ref()
            .map_or(0, |watch| watch.partitions_of(unit.iter().map(|(_, e)| &*e.game)));
        let mut body = Vec::with_capacity(256 * unit.len());
        let path = if unit.len() == 1 {
            unit[0].1.push_json(&mut body);
            "/v1/score-events"
        } else {
            body.extend_from_slice(b"{\"events\":[");
            for (i, (_, event)) in unit.iter().enumerate() {
                if i > 0 {
                    body.push(b',');
                }
                event.push_json(&mut body);
            }
            body.extend_from_slice(b"]}");
            "/v1/score-events/batch"
        };
        let mut attempts = 0u32;
        let mut sent_ms: i64;
        let mut position = None;
        let answers = loop {
            if tally.abandoned.load(Ordering::Relaxed) {
                return;
            }
            if Instant::now() >= deadline {
                fail(
                    &ledger,
                    format!("client {client}: the deadline passed with a submission unanswered"),
                );
                return;
            }
            attempts += 1;
            let node = if load.addrs.len() > 1 {
                picks.below(load.addrs.len() as u64) as usize
            } else {
                0
            };
            let conn = &mut conns[node];
            let Some(c) = connected(conn, &load.addrs[node], &tally).await else {
                continue;
            };
            tally.requests.fetch_add(1, Ordering::Relaxed);
            let asked = Instant::now();
            sent_ms = now_ms();
            let answer = match tokio::time::timeout(REQUEST_TIMEOUT, c.post(path, &body)).await {
                Ok(Ok(answer)) => answer,
                Ok(Err(_)) | Err(_) => {
                    *conn = None;
                    tally.connection_retries.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            };
            let status = answer.status;
            let text = c.body(&answer).to_vec();
            if let Some(watch) = &load.cluster {
                watch.answered(node, asked, partitions, status, c.headers(&answer), &text);
                position = header(c, &answer, "x-standings-position");
            }
            if status == 503 {
                tally.unavailable_retries.fetch_add(1, Ordering::Relaxed);
                if serde_json::from_slice::<serde_json::Value>(&text)
                    .is_ok_and(|problem| problem["code"] == "DATABASE_UNAVAILABLE")
                {
                    tally.database_unavailable.fetch_add(1, Ordering::Relaxed);
                }
                if !text.windows(6).any(|w| w == b"\"code\"") {
                    fail(
                        &ledger,
                        format!("a 503 without a code: {}", String::from_utf8_lossy(&text)),
                    );
                }
                // The service says it cannot take this now (restarting, or its database is
                // gone); ask again shortly rather than in a tight loop.
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
            if status >= 500 {
                tally.server_errors.fetch_add(1, Ordering::Relaxed);
                fail(
                    &ledger,
                    format!(
                        "POST {path} answered {status}: {}",
                        String::from_utf8_lossy(&text)
                    ),
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
            match parse_answers(status, &text, unit.len()) {
                Ok(answers) => break answers,
                Err(why) => {
                    fail(&ledger, format!("POST {path}: {why}"));
                    return;
                }
            }
        };
        tally.answered.fetch_add(unit.len() as u64, Ordering::Relaxed);
        // In a cluster, a tenth of the single events stored go on to a read through a random
        // node handed the write's position: never older than the write, whoever answers.
        if load.cluster.is_some()
            && unit.len() == 1
            && answers[0].0 == "ACCEPTED"
            && unit[0].0 == Kind::Fresh
            && picks.below(10) == 0
            && let Some(position) = &position
        {
            let node = picks.below(load.addrs.len() as u64) as usize;
            if let Some(c) = connected(&mut conns[node], &load.addrs[node], &tally).await
                && let Err(why) = read_at_position(c, &unit[0].1, position, &tally).await
            {
                fail(&ledger, format!("client {client}: {why}"));
            }
        }
        let mut ledger = match ledger.lock() {
            Ok(ledger) => ledger,
            Err(_) => return,
        };
        for ((kind, event), (status, code)) in unit.into_iter().zip(answers) {
            let verdict = judge(kind, &status, code.as_deref(), attempts > 1);
            match verdict {
                Ok(Verdict::Acknowledged) => {
                    tally.acknowledged.fetch_add(1, Ordering::Relaxed);
                    if status == "LATE" {
                        tally.late.fetch_add(1, Ordering::Relaxed);
                    }
                    if kind == Kind::Duplicate {
                        tally.duplicates.fetch_add(1, Ordering::Relaxed);
                    } else {
                        if status != "DUPLICATE" {
                            tally.stored.fetch_add(1, Ordering::Relaxed);
                            tally.stored_sent_ms.fetch_max(sent_ms, Ordering::Relaxed);
                        }
                        own_acked.push(event.clone());
                        ledger.acknowledged.insert(event.id.clone(), event);
                    }
                }
                Ok(Verdict::Refused) => {
                    if kind == Kind::Conflict {
                        tally.conflicts.fetch_add(1, Ordering::Relaxed);
                    } else {
                        tally.invalid.fetch_add(1, Ordering::Relaxed);
                        ledger.refused.insert(event.id.clone());
                    }
                }
                Err(why) => ledger.fail(format!("event {} ({kind:?}): {why}", event.id)),
            }
        }
    }
}

/// A header of an answer, as text.
fn header(conn: &HttpConn, answer: &Answer, name: &str) -> Option<String> {
    conn.headers(answer)
        .into_iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, value)| String::from_utf8_lossy(value).into_owned())
}

/// Reads `event`'s player on its `best` board (a `highest` board: a player's value never falls)
/// handed the write's `position`: the answer must show the event's value or more. A 503 with a
/// code (the position not reached in time, the partition moving) or a connection lost only
/// counts as unanswered; an answer older than the write is the failure.
async fn read_at_position(
    conn: &mut HttpConn,
    event: &Event,
    position: &str,
    tally: &Tally,
) -> Result<(), String> {
    let path = format!(
        "/v1/leaderboards/{}/duel/s1/best/players/{}/rank?min_position={position}",
        event.game, event.player
    );
    let Ok(Ok(answer)) = tokio::time::timeout(REQUEST_TIMEOUT, conn.get(&path)).await else {
        tally.position_reads_unanswered.fetch_add(1, Ordering::Relaxed);
        return Ok(());
    };
    let text = conn.body_text(&answer);
    if answer.status == 503 && text.contains("\"code\"") {
        tally.position_reads_unanswered.fetch_add(1, Ordering::Relaxed);
        return Ok(());
    }
    let value = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|rank| rank["value"].as_i64());
    match (answer.status, value) {
        (200, Some(value)) if value >= event.value => {
            tally.position_reads.fetch_add(1, Ordering::Relaxed);
            if header(conn, &answer, "x-standings-copy-lag-ms").is_some() {
                tally.position_reads_by_copies.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        }
        _ => Err(format!(
            "GET {path} after event {} (value {}) answered {}: {text}, older than the write",
            event.id, event.value, answer.status
        )),
    }
}

fn fail(ledger: &Mutex<Ledger>, why: String) {
    if let Ok(mut ledger) = ledger.lock() {
        ledger.fail(why);
    }
}

/// The client's connection, reconnecting if it has none; `None` (after a short pause) while the
/// service does not accept connections, as while it restarts.
async fn connected<'c>(
    conn: &'c mut Option<HttpConn>,
    addr: &str,
    tally: &Tally,
) -> Option<&'c mut HttpConn> {
    if conn.is_none() {
        match HttpConn::connect(addr, SERVICE_TOKEN).await {
            Ok(c) => *conn = Some(c),
            Err(_) => {
                tally.connection_retries.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
                return None;
            }
        }
    }
    conn.as_mut()
}

/// Draws the next event of a client: 20% resends of its acknowledged events, 0.5% conflicting
/// resends, 0.5% invalid events, 5% events for a closed day, the rest fresh.
fn draw_event(
    rng: &mut Rng,
    client: u64,
    next_id: &mut u64,
    players: u64,
    game: &Arc<str>,
    own_acked: &[Event],
    ids_in_unit: &HashSet<String>,
) -> (Kind, Event) {
    let roll = rng.below(1000);
    if !own_acked.is_empty() && roll < 210 {
        let earlier = &own_acked[rng.below(own_acked.len() as u64) as usize];
        if !ids_in_unit.contains(&earlier.id) {
            if roll < 200 {
                return (Kind::Duplicate, earlier.clone());
            }
            let mut changed = earlier.clone();
            changed.value += 1;
            return (Kind::Conflict, changed);
        }
    }
    let id = format!("c{client}-e{next_id}");
    *next_id += 1;
    let now = now_ms();
    let midnight = now - now.rem_euclid(86_400_000);
    let mut event = Event {
        id,
        game: game.clone(),
        player: format!("p{:04}", rng.below(players) * 64 + client % 64),
        value: rng.below(1_000) as i64,
        // Out of order: anywhere in the six hours before now, within today.
        achieved_at: (now - 1_000 - rng.below(6 * 3_600_000) as i64).max(midnight),
        scopes: SCOPES,
    };
    match roll {
        210..=214 => {
            event.achieved_at = now + 86_400_000;
            (Kind::Invalid("INVALID_EVENT"), event)
        }
        215..=219 => {
            event.scopes = r#"["sum","nowhere"]"#;
            (Kind::Invalid("UNKNOWN_BOARD"), event)
        }
        220..=269 => {
            event.achieved_at = midnight - 2 * 86_400_000 + rng.below(86_400_000) as i64;
            (Kind::Late, event)
        }
        _ => (Kind::Fresh, event),
    }
}

enum Verdict {
    Acknowledged,
    Refused,
}

/// Whether `status` (and `code`, for a refusal) is a right answer for an event of `kind`.
fn judge(kind: Kind, status: &str, code: Option<&str>, retried: bool) -> Result<Verdict, String> {
    let wrong = || Err(format!("answered {status} {}", code.unwrap_or("")));
    match (kind, status) {
        (Kind::Fresh, "ACCEPTED" | "LATE") | (Kind::Late, "LATE") => Ok(Verdict::Acknowledged),
        // A retry may find the first attempt committed just before the connection broke.
        (Kind::Fresh | Kind::Late, "DUPLICATE") if retried => Ok(Verdict::Acknowledged),
        (Kind::Duplicate, "DUPLICATE") => Ok(Verdict::Acknowledged),
        (Kind::Duplicate, "ACCEPTED" | "LATE") => Err(format!(
            "an acknowledged event was lost: its resend answered {status}"
        )),
        (Kind::Conflict, "REJECTED") if code == Some("EVENT_ID_CONFLICT") => Ok(Verdict::Refused),
        (Kind::Invalid(expected), "REJECTED") if code == Some(expected) => Ok(Verdict::Refused),
        _ => wrong(),
    }
}

/// The per-event `(status, code)` of an answer: a batch's results, or a single event's answer
/// (a 4xx problem document being its refusal).
fn parse_answers(status: u16, body: &[u8], events: usize) -> Result<Vec<(String, Option<String>)>, String> {
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| format!("answered {status} with a body that is not JSON ({e})"))?;
    let one = |v: &serde_json::Value| -> (String, Option<String>) {
        (
            v["status"].as_str().unwrap_or("").to_string(),
            v["code"].as_str().map(str::to_string),
        )
    };
    if events == 1 {
        return Ok(vec![if status >= 400 {
            ("REJECTED".into(), value["code"].as_str().map(str::to_string))
        } else {
            one(&value)
        }]);
    }
    if status != 200 {
        return Err(format!("a batch answered {status}: {value}"));
    }
    let results = value["results"]
        .as_array()
        .ok_or("a batch answer without results")?;
    if results.len() != events {
        return Err(format!("a batch of {events} answered {} results", results.len()));
    }
    Ok(results.iter().map(one).collect())
}

/// What the chaos controller did.
struct Chaos {
    kills: u64,
    outages: u64,
    /// For outages: the longest time from the database's start to the next acknowledgement.
    recovery: String,
    /// Failovers of PostgreSQL's primary (Patroni mode).
    failovers: Vec<patroni::Failover>,
    /// What went wrong without ending the run.
    problems: Vec<String>,
}

/// Whether the clients still get answers: a service that answers nothing (or only errors) for
/// [`READY_TIMEOUT`] will not finish the run, so the run ends instead of waiting for its
/// deadline.
struct Progress {
    answered: u64,
    since: Instant,
}

impl Progress {
    fn new(tally: &Tally) -> Progress {
        Progress {
            answered: tally.answered.load(Ordering::Relaxed),
            since: Instant::now(),
        }
    }

    fn stalled(&mut self, tally: &Tally) -> bool {
        let answered = tally.answered.load(Ordering::Relaxed);
        if answered != self.answered {
            *self = Progress::new(tally);
        }
        self.since.elapsed() > READY_TIMEOUT
    }
}

/// The 5xx answers so far: 503s and any other.
fn refusals(tally: &Tally) -> u64 {
    tally.unavailable_retries.load(Ordering::Relaxed) + tally.server_errors.load(Ordering::Relaxed)
}

/// What the chaos controller does at one moment of the load.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Disruption {
    /// SIGKILL the service and start it again.
    Kill,
    /// Stop the private PostgreSQL cluster and start it again.
    Outage,
    /// Kill PostgreSQL's primary and have it rejoin (Patroni mode).
    Failover,
}

/// Kills the service (and stops the database) at seeded random moments of the load: each at a
/// drawn share of the submissions answered, plus a drawn 0 to 20 ms, so that kills land at
/// every stage of a request and a group commit.
async fn chaos(
    args: &Args,
    service: &mut Service,
    cluster: Option<&PrivatePostgres>,
    tally: &Tally,
    deadline: Instant,
) -> Result<Chaos, String> {
    let mut rng = Rng::stream(args.seed, u64::MAX);
    let mut plan: Vec<(u64, Disruption)> = (0..args.kills + args.outages)
        .map(|i| {
            let disruption = if i < args.kills {
                Disruption::Kill
            } else {
                Disruption::Outage
            };
            (args.events * (30 + rng.below(940)) / 1000, disruption)
        })
        .collect();
    // Failovers are spread evenly (give or take 5% of the load), since each waits for the old
    // primary to rejoin while the load goes on, and the next must still come under load.
    plan.extend((1..=args.failovers).map(|i| {
        let share = 1000 * i / (args.failovers + 1) + rng.below(100);
        (
            args.events * share.saturating_sub(50) / 1000,
            Disruption::Failover,
        )
    }));
    plan.sort();
    let mut done = Chaos {
        kills: 0,
        outages: 0,
        recovery: String::new(),
        failovers: Vec::new(),
        problems: Vec::new(),
    };
    let mut longest_recovery = Duration::ZERO;
    for (at, disruption) in plan {
        let mut progress = Progress::new(tally);
        while tally.answered.load(Ordering::Relaxed) < at {
            if progress.stalled(tally) {
                return Err(format!(
                    "no submission was answered for {READY_TIMEOUT:?} ({} of {} answered); {}",
                    tally.answered.load(Ordering::Relaxed),
                    args.events,
                    service.log_tail()
                ));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the deadline passed before every kill was made ({} of {} submissions answered, the next kill due at {at})",
                    tally.answered.load(Ordering::Relaxed),
                    args.events
                ));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_micros(rng.below(20_000))).await;
        match disruption {
            Disruption::Kill => {
                tally.kills_begun.fetch_add(1, Ordering::Relaxed);
                service.kill()?;
                done.kills += 1;
                service.start(READY_TIMEOUT).await?;
                continue;
            }
            Disruption::Failover => {
                let command = args
                    .failover_command
                    .as_deref()
                    .ok_or("a failover without --failover-command")?;
                let failover =
                    patroni::fail_over(command, service, tally, args.events, &mut done.problems).await?;
                done.failovers.push(failover);
                continue;
            }
            Disruption::Outage => {}
        }
        let cluster = cluster.ok_or("an outage without a private cluster")?;
        let refusals_before = refusals(tally);
        cluster.stop_immediate()?;
        done.outages += 1;
        // While the database is gone, clients must be answered 503 with a code (the clients
        // check the code, and count any other 5xx as a failure): wait for the first 5xx answer.
        let stopped = Instant::now();
        while refusals(tally) == refusals_before && stopped.elapsed() < READY_TIMEOUT {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if refusals(tally) == refusals_before {
            done.problems.push(format!(
                "no client was answered a 5xx within {READY_TIMEOUT:?} of the database stopping"
            ));
        }
        // Keep it down a drawn 0.5 to 2 s, then bring it back: the service must recover alone.
        tokio::time::sleep(Duration::from_millis(500 + rng.below(1_500))).await;
        cluster.start()?;
        let back = Instant::now();
        let stored = tally.stored.load(Ordering::Relaxed);
        while tally.stored.load(Ordering::Relaxed) == stored
            && tally.answered.load(Ordering::Relaxed) < args.events
            && back.elapsed() < READY_TIMEOUT
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if tally.stored.load(Ordering::Relaxed) == stored
            && tally.answered.load(Ordering::Relaxed) < args.events
        {
            // Restarting the service would hide whether it recovers by itself, so the run
            // stops here.
            return Err(format!(
                "the service acknowledged nothing within {READY_TIMEOUT:?} of the database's restart; {}",
                service.log_tail()
            ));
        }
        longest_recovery = longest_recovery.max(back.elapsed());
    }
    if done.outages > 0 {
        done.recovery = format!(
            " (the longest from the database's start to the next acknowledgement: {:.2} s)",
            longest_recovery.as_secs_f64()
        );
    }
    Ok(done)
}

/// Every acknowledged event is in the log exactly once, with the payload acknowledged, and the
/// log holds nothing else (no refused id, no conflicting resend's payload).
/// The acknowledged events of the log's rows (as [`check_logged`] reads them), in `seq` order.
fn logged_order<'a>(
    rows: &[(String, String, i64)],
    acknowledged: &'a HashMap<String, Event>,
) -> Vec<&'a Event> {
    rows.iter()
        .filter_map(|(id, _, _)| acknowledged.get(id))
        .collect()
}

/// Checks the log's rows, `(event_id, player_id, value)` in `seq` order, against what the
/// clients were answered: every acknowledged event once, nothing else.
fn check_logged(
    rows: &[(String, String, i64)],
    acknowledged: &HashMap<String, Event>,
    refused: &HashSet<String>,
) -> Result<(), String> {
    let mut seen: HashMap<&str, u32> = HashMap::new();
    let mut problems = Vec::new();
    for (id, player, value) in rows {
        *seen.entry(id.as_str()).or_default() += 1;
        match acknowledged.get(id) {
            Some(event) if event.player == *player && event.value == *value => {}
            Some(event) => problems.push(format!(
                "{id} is logged as ({player}, {value}) but was acknowledged as ({}, {})",
                event.player, event.value
            )),
            None if refused.contains(id) => problems.push(format!("the refused event {id} is in the log")),
            None => problems.push(format!("{id} is in the log but was never acknowledged")),
        }
    }
    for id in acknowledged.keys() {
        match seen.get(id.as_str()) {
            Some(1) => {}
            Some(n) => problems.push(format!("the acknowledged event {id} is in the log {n} times")),
            None => problems.push(format!("the acknowledged event {id} is not in the log")),
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the log ({} rows, {} acknowledged) is wrong in {} ways, e.g. {}",
            rows.len(),
            acknowledged.len(),
            problems.len(),
            problems[..problems.len().min(5)].join("; ")
        ))
    }
}

/// Resends every acknowledged event in batches: each must answer DUPLICATE.
async fn resend_all(addr: &str, acknowledged: &HashMap<String, Event>) -> Result<(), String> {
    let mut conn = HttpConn::connect(addr, SERVICE_TOKEN).await?;
    let events: Vec<&Event> = acknowledged.values().collect();
    for chunk in events.chunks(1000) {
        let mut body = b"{\"events\":[".to_vec();
        for (i, event) in chunk.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            event.push_json(&mut body);
        }
        body.extend_from_slice(b"]}");
        let answer = conn.post("/v1/score-events/batch", &body).await?;
        let answers = parse_answers(answer.status, conn.body(&answer), chunk.len())?;
        for (event, (status, code)) in chunk.iter().zip(answers) {
            if status != "DUPLICATE" {
                return Err(format!(
                    "the acknowledged event {} answered {status} {} when resent at the end",
                    event.id,
                    code.unwrap_or_default()
                ));
            }
        }
    }
    Ok(())
}

/// `(board_version, digest)` of each board.
async fn digests(addr: &str, boards: &[String]) -> Result<Vec<(u64, String)>, String> {
    let mut conn = HttpConn::connect(addr, SERVICE_TOKEN).await?;
    let mut out = Vec::new();
    for board in boards {
        let answer = conn.get(&format!("/v1/leaderboards/{board}/digest")).await?;
        let value: serde_json::Value = serde_json::from_slice(conn.body(&answer))
            .map_err(|e| format!("the digest of {board} is not JSON: {e}"))?;
        match (
            answer.status,
            value["board_version"].as_u64(),
            value["digest"].as_str(),
        ) {
            (200, Some(version), Some(digest)) => out.push((version, digest.to_string())),
            _ => {
                return Err(format!(
                    "the digest of {board} answered {}: {value}",
                    answer.status
                ));
            }
        }
    }
    Ok(out)
}

/// Both boards of `game` equal the model ([`check_board`]).
async fn check_boards(addr: &str, game: &str, acknowledged: &HashMap<String, Event>) -> Result<(), String> {
    for (board, mode) in boards_of(game) {
        check_board(addr, &board, mode, game, acknowledged).await?;
    }
    Ok(())
}

/// The board's whole ranking, read page by page, equals the model: every player's aggregate
/// folded from their acknowledged events of `game` with the core's rules, in the core's total
/// order.
async fn check_board(
    addr: &str,
    board: &str,
    mode: ScoreMode,
    game: &str,
    acknowledged: &HashMap<String, Event>,
) -> Result<(), String> {
    let rules = BoardRules::new(mode);
    let mut by_player: HashMap<&str, Vec<ScoreEvent>> = HashMap::new();
    for event in acknowledged.values().filter(|e| &*e.game == game) {
        let scored = ScoreEvent::new(&event.id, &event.player, event.value, event.achieved_at)
            .map_err(|e| format!("the model cannot take {}: {e}", event.id))?;
        by_player.entry(event.player.as_str()).or_default().push(scored);
    }
    let mut model: Vec<(Standing, &str)> = Vec::new();
    for (player, events) in &by_player {
        let folded = rules
            .recompute(events.iter())
            .map_err(|e| format!("the model cannot fold {player}'s events: {e}"))?;
        if let Some((standing, _)) = folded {
            model.push((standing, player));
        }
    }
    model.sort_by(|a, b| rules.compare((&a.0, a.1), (&b.0, b.1)));

    let mut conn = HttpConn::connect(addr, SERVICE_TOKEN).await?;
    let mut live: Vec<(String, i64)> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut path = format!("/v1/leaderboards/{board}/top?limit=1000");
        if let Some(c) = &cursor {
            path.push_str("&cursor=");
            path.push_str(c);
        }
        let answer = conn.get(&path).await?;
        let value: serde_json::Value = serde_json::from_slice(conn.body(&answer))
            .map_err(|e| format!("the top of {board} is not JSON: {e}"))?;
        if answer.status != 200 {
            return Err(format!("the top of {board} answered {}: {value}", answer.status));
        }
        for entry in value["entries"].as_array().ok_or("a top page without entries")? {
            live.push((
                entry["player_id"].as_str().unwrap_or("").to_string(),
                entry["value"].as_i64().unwrap_or(i64::MIN),
            ));
        }
        match value["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    let expected: Vec<(String, i64)> = model.iter().map(|(s, p)| (p.to_string(), s.value)).collect();
    if live == expected {
        return Ok(());
    }
    let first = live
        .iter()
        .zip(&expected)
        .position(|(a, b)| a != b)
        .unwrap_or(live.len().min(expected.len()));
    Err(format!(
        "{board} differs from the model: {} live players, {} in the model; first difference at rank {}: live {:?}, model {:?}",
        live.len(),
        expected.len(),
        first + 1,
        live.get(first),
        expected.get(first)
    ))
}

/// A live subscriber: which view of which board, how it connects, and the view it holds.
struct Subscriber {
    board: &'static str,
    view: View,
    transport: Transport,
    /// The view as its last message left it; `None` while it holds none (before its first
    /// snapshot, and after a `resync` or a refused delta until the next snapshot).
    held: Mutex<Option<ViewState>>,
    /// When its stream was last opened and its last message came, for the message of one that
    /// falls behind.
    seen: Mutex<(Option<Instant>, Option<Instant>)>,
}

/// What the live subscribers and the snapshot reader saw.
#[derive(Default)]
struct Watching {
    /// Streams opened.
    opened: AtomicU64,
    /// Streams opened with `since_version` after the one before ended (a kill broke it).
    reconnects: AtomicU64,
    /// Of those, the ones whose first message was a delta from the position held, and a
    /// snapshot.
    caught_up_by_delta: AtomicU64,
    caught_up_by_snapshot: AtomicU64,
    /// `resync` messages (a slow consumer's queue filled).
    resyncs: AtomicU64,
    /// Deltas the core's `ViewState::apply` refused: a broken promise of the wire.
    refused_deltas: AtomicU64,
    /// Messages received.
    messages: AtomicU64,
    /// Subscriptions answered 503 (a service starting or stopping), made again.
    unavailable: AtomicU64,
    /// Heads whose manifest and every chunk were fetched and decoded within one lifetime.
    heads: AtomicU64,
    manifests: AtomicU64,
    chunks: AtomicU64,
    bundles: AtomicU64,
    /// Snapshot rounds a kill (or a 503) cut short: they prove nothing either way.
    rounds_cut: AtomicU64,
    /// The lifetimes of the service (the kills begun before each) in which a head was checked.
    lifetimes_checked: Mutex<HashSet<u64>>,
    /// Set when the run is over.
    stop: std::sync::atomic::AtomicBool,
}

impl Watching {
    fn live_figures(&self, equal: bool) -> String {
        let t = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let sse = SUBSCRIBERS.iter().filter(|s| s.2 == Transport::Sse).count();
        format!(
            "{subscribers} live subscribers ({sse} SSE, {ws} WebSocket) opened {opened} streams: \
             {reconnects} reconnects with since_version ({delta} caught up by one delta, {snapshot} \
             by a snapshot), {resyncs} resyncs, {refused} refused deltas, {messages} messages, \
             {unavailable} subscriptions answered 503; {verdict}",
            subscribers = SUBSCRIBERS.len(),
            ws = SUBSCRIBERS.len() - sse,
            opened = t(&self.opened),
            reconnects = t(&self.reconnects),
            delta = t(&self.caught_up_by_delta),
            snapshot = t(&self.caught_up_by_snapshot),
            resyncs = t(&self.resyncs),
            refused = t(&self.refused_deltas),
            messages = t(&self.messages),
            unavailable = t(&self.unavailable),
            verdict = if equal {
                "each equals a fresh read at the boards' final version"
            } else {
                "NOT each equal to a fresh read"
            },
        )
    }

    fn snapshot_figures(&self, tally: &Tally, served: bool) -> String {
        let t = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let lifetimes = self.lifetimes_checked.lock().map(|l| l.len()).unwrap_or_default();
        format!(
            "snapshot reader: {heads} heads checked in {lifetimes} of {all} lifetimes of the service, \
             {parts} parts fetched ({manifests} manifests, {chunks} chunks, {bundles} of them in \
             bundles), {verdict}; rounds cut short by a kill: {cut}",
            heads = t(&self.heads),
            all = t(&tally.kills_begun) + 1,
            parts = t(&self.manifests) + t(&self.chunks),
            manifests = t(&self.manifests),
            chunks = t(&self.chunks),
            bundles = t(&self.bundles),
            verdict = if served {
                "every part a head named served and decoded"
            } else {
                "NOT every part served"
            },
            cut = t(&self.rounds_cut),
        )
    }
}

/// Follows one view until the run stops: applies every message to the view held, and when a
/// stream ends (a kill breaks it) subscribes again with the position held, or without one
/// after a `resync` or a refused delta.
async fn follow(
    addr: String,
    subscriber: Arc<Subscriber>,
    watching: Arc<Watching>,
    ledger: Arc<Mutex<Ledger>>,
) {
    let name = format!(
        "the {:?} subscriber of {} {}",
        subscriber.transport, subscriber.board, subscriber.view
    );
    let mut held: Option<ViewState> = None;
    let mut opened_before = false;
    while !watching.stop.load(Ordering::Relaxed) {
        let since = held.as_ref().map(|state| Position {
            period_key: Some(state.period_key.clone()),
            board_version: state.board_version,
        });
        let mut path = format!(
            "/v1/leaderboards/{}/subscribe?view={}",
            subscriber.board, subscriber.view
        );
        if let Some(position) = &since {
            path.push_str(&format!("&since_version={position}"));
        }
        let mut stream = match LiveStream::open(&addr, &path, SERVICE_TOKEN, subscriber.transport).await {
            Ok(Opened::Stream(stream)) => stream,
            Ok(Opened::Refused { status: 503, .. }) => {
                watching.unavailable.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
            Ok(Opened::Refused { status, body }) => {
                fail(&ledger, format!("{name} was refused {status}: {body}"));
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
            // The service is down (killed, not yet restarted): try again shortly.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        watching.opened.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut seen) = subscriber.seen.lock() {
            seen.0 = Some(Instant::now());
        }
        let reconnect = since.is_some() && opened_before;
        if reconnect {
            watching.reconnects.fetch_add(1, Ordering::Relaxed);
        }
        opened_before = true;
        let mut first = true;
        // Ends at the stream's end or break (Ok or Err alike: come back with the position held).
        while let Ok(Some(message)) = stream.next().await {
            watching.messages.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut seen) = subscriber.seen.lock() {
                seen.1 = Some(Instant::now());
            }
            if first && reconnect {
                match message {
                    Message::Delta(_) => watching.caught_up_by_delta.fetch_add(1, Ordering::Relaxed),
                    _ => watching.caught_up_by_snapshot.fetch_add(1, Ordering::Relaxed),
                };
            }
            first = false;
            let go_on = match message {
                Message::Snapshot(state) => {
                    held = Some(state);
                    true
                }
                Message::Delta(delta) => match held.as_mut().map(|state| state.apply(&delta)) {
                    Some(Ok(())) => true,
                    Some(Err(why)) => {
                        watching.refused_deltas.fetch_add(1, Ordering::Relaxed);
                        fail(
                            &ledger,
                            format!(
                                "{name}: the core refused a delta from {} to {} ({why}); starting over",
                                delta.base_version, delta.board_version
                            ),
                        );
                        held = None;
                        false
                    }
                    None => {
                        fail(&ledger, format!("{name}: a delta came before any snapshot"));
                        false
                    }
                },
                Message::Heartbeat => true,
                Message::Resync => {
                    watching.resyncs.fetch_add(1, Ordering::Relaxed);
                    held = None;
                    false
                }
                Message::Closed => {
                    fail(&ledger, format!("{name}: an all-time view was closed"));
                    held = None;
                    false
                }
                Message::GoingAway => false,
            };
            if let Ok(mut shared) = subscriber.held.lock() {
                shared.clone_from(&held);
            }
            if !go_on {
                break;
            }
        }
    }
}

/// After the last restart, with the boards quiet: every subscriber reaches its board's version
/// (the first message after a subscription brings the view to it), and then holds exactly what
/// a fresh read of its view answers at that version.
async fn check_subscribers(
    addr: &str,
    subscribers: &[(Arc<Subscriber>, tokio::task::JoinHandle<()>)],
) -> Result<(), String> {
    let versions: HashMap<&str, u64> = [SUM_BOARD, BEST_BOARD]
        .into_iter()
        .zip(
            digests(addr, &[SUM_BOARD.into(), BEST_BOARD.into()])
                .await?
                .into_iter()
                .map(|(version, _)| version),
        )
        .collect();
    let held = |subscriber: &Subscriber| subscriber.held.lock().map(|h| h.clone()).unwrap_or(None);
    let deadline = Instant::now() + CATCH_UP_TIMEOUT;
    loop {
        let behind: Vec<String> = subscribers
            .iter()
            .filter_map(|(subscriber, _)| {
                let at = held(subscriber).map(|state| state.board_version);
                let version = versions[subscriber.board];
                let (opened, last) = subscriber.seen.lock().map(|s| *s).unwrap_or_default();
                let ago = |t: Option<Instant>| t.map(|t| format!("{:.1} s ago", t.elapsed().as_secs_f64()));
                (at != Some(version)).then(|| {
                    format!(
                        "{} {} at {at:?} of {version} (its stream opened {}, its last message {})",
                        subscriber.board,
                        subscriber.view,
                        ago(opened).unwrap_or_else(|| "never".into()),
                        ago(last).unwrap_or_else(|| "never".into())
                    )
                })
            })
            .collect();
        if behind.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{} subscribers did not reach their board's version within {CATCH_UP_TIMEOUT:?} of the last restart: {}",
                behind.len(),
                behind.join("; ")
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut conn = HttpConn::connect(addr, SERVICE_TOKEN).await?;
    let mut differences = Vec::new();
    for (subscriber, _) in subscribers {
        let answer = conn
            .get(&format!(
                "/v1/leaderboards/{}/{}",
                subscriber.board,
                read_path_of(&subscriber.view)
            ))
            .await?;
        let mut fresh = view_of_read(&subscriber.view, answer.status, conn.body(&answer))?;
        let version = versions[subscriber.board];
        if fresh.entries.is_empty() && fresh.period_key.is_empty() {
            // An unranked player's read names no version: the board is quiet, so it is the
            // version read above.
            fresh.period_key = "all_time".into();
            fresh.board_version = version;
        }
        let held = held(subscriber);
        if held.as_ref() != Some(&fresh) {
            differences.push(format!(
                "{} {} holds {held:?} but a fresh read answers {fresh:?}",
                subscriber.board, subscriber.view
            ));
        }
    }
    if digests(addr, &[SUM_BOARD.into(), BEST_BOARD.into()])
        .await?
        .into_iter()
        .map(|(version, _)| version)
        .collect::<Vec<_>>()
        != [versions[SUM_BOARD], versions[BEST_BOARD]]
    {
        return Err("the boards moved while the subscribers were compared".into());
    }
    if differences.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} subscribers differ from a fresh read: {}",
            differences.len(),
            differences.join("; ")
        ))
    }
}

/// Waits until the snapshot reader checked a head in the service's last lifetime.
async fn finish_snapshot_reader(tally: &Tally, watching: &Watching) -> Result<(), String> {
    let last = tally.kills_begun.load(Ordering::Relaxed);
    let deadline = Instant::now() + CATCH_UP_TIMEOUT;
    while Instant::now() < deadline {
        if watching
            .lifetimes_checked
            .lock()
            .map(|l| l.contains(&last))
            .unwrap_or(false)
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(format!(
        "the snapshot reader checked no head within {CATCH_UP_TIMEOUT:?} of the last restart"
    ))
}

/// Why a snapshot round did not check its head.
enum RoundError {
    /// The connection broke or the service answered 503: a kill or a start; try again.
    Broke,
    /// A head named something the service does not serve, or that does not decode.
    Wrong(String),
}

/// Reads each board's snapshot again and again across the kills (see [`snapshot_round`]). A
/// failure counts only when no kill began during its round.
async fn read_snapshots(
    addr: String,
    tally: Arc<Tally>,
    watching: Arc<Watching>,
    ledger: Arc<Mutex<Ledger>>,
) {
    let mut conn: Option<HttpConn> = None;
    let mut round = 0u64;
    while !watching.stop.load(Ordering::Relaxed) {
        let board = [SUM_BOARD, BEST_BOARD][(round % 2) as usize];
        let lifetime = tally.kills_begun.load(Ordering::Relaxed);
        let quiet = !tally.moving.load(Ordering::Relaxed);
        let result = match &mut conn {
            Some(c) => snapshot_round(c, board, round, &watching).await,
            None => match HttpConn::connect(&addr, ADMIN_TOKEN).await {
                Ok(c) => {
                    conn = Some(c);
                    tokio::task::yield_now().await;
                    continue;
                }
                Err(_) => Err(RoundError::Broke),
            },
        };
        let same_lifetime = quiet && tally.kills_begun.load(Ordering::Relaxed) == lifetime;
        match result {
            Ok(()) if same_lifetime => {
                watching.heads.fetch_add(1, Ordering::Relaxed);
                if let Ok(mut lifetimes) = watching.lifetimes_checked.lock() {
                    lifetimes.insert(lifetime);
                }
            }
            Err(RoundError::Wrong(why)) if same_lifetime => fail(
                &ledger,
                format!("snapshot reader (lifetime {lifetime}, round {round}): {why}"),
            ),
            Err(RoundError::Broke) => {
                conn = None;
                watching.rounds_cut.fetch_add(1, Ordering::Relaxed);
            }
            _ => {
                watching.rounds_cut.fetch_add(1, Ordering::Relaxed);
            }
        }
        round += 1;
        tokio::time::sleep(SNAPSHOT_PAUSE).await;
    }
}

/// One round: the board's head, the manifest it names and every chunk the manifest names (in
/// bundles of at most 200, or every third round one by one), each decoded by the core (the
/// chunks checked against their hashes) and the board restored from them at the head's version.
async fn snapshot_round(
    conn: &mut HttpConn,
    board: &str,
    round: u64,
    watching: &Watching,
) -> Result<(), RoundError> {
    let broke = |_| RoundError::Broke;
    let answer = conn
        .get(&format!("/v1/snapshots/{board}/head"))
        .await
        .map_err(broke)?;
    match answer.status {
        200 => {}
        503 => return Err(RoundError::Broke),
        status => {
            return Err(RoundError::Wrong(format!(
                "the head of {board} answered {status}: {}",
                conn.body_text(&answer)
            )));
        }
    }
    // In cluster mode, which node served each part of the round, for the message of a failure.
    let mut served = served_by(conn, &answer, "the head");
    let head: serde_json::Value = serde_json::from_slice(conn.body(&answer))
        .map_err(|e| RoundError::Wrong(format!("the head of {board} is not JSON: {e}")))?;
    let (Some(manifest_name), Some(version)) = (head["manifest"].as_str(), head["board_version"].as_u64())
    else {
        return Err(RoundError::Wrong(format!(
            "a head without a manifest or a version: {head}"
        )));
    };
    let manifest_name = manifest_name.to_string();
    let answer = conn
        .get(&format!("/v1/snapshots/manifests/{manifest_name}"))
        .await
        .map_err(broke)?;
    served.push_str(&served_by(conn, &answer, ", the manifest"));
    let wrong = |what: String| {
        RoundError::Wrong(format!(
            "the head of {board} at version {version}: {what}{}",
            if served.is_empty() {
                String::new()
            } else {
                format!(" ({served})")
            }
        ))
    };
    if answer.status != 200 {
        return Err(wrong(format!(
            "its manifest {manifest_name} answered {}: {}",
            answer.status,
            conn.body_text(&answer)
        )));
    }
    watching.manifests.fetch_add(1, Ordering::Relaxed);
    let bytes = conn.body(&answer);
    if BoardDigest::of(bytes).to_string() != manifest_name {
        return Err(wrong(format!("its manifest {manifest_name} is other bytes")));
    }
    let root = Root::decode(bytes).map_err(|e| wrong(format!("its manifest does not decode: {e}")))?;
    // A patch reads over its base (a manifest, or a patch over one): fetched the same way, and
    // checked against it below.
    let mut patches: Vec<ManifestPatch> = Vec::new();
    let mut root = root;
    let manifest = loop {
        let patch = match root {
            Root::Manifest(manifest) => break manifest,
            Root::Patch(patch) => patch,
        };
        if patches.len() == MAX_PATCH_LEVELS {
            return Err(wrong(format!(
                "it stands on more than {MAX_PATCH_LEVELS} patches"
            )));
        }
        let base = patch.base.to_string();
        let answer = conn
            .get(&format!("/v1/snapshots/manifests/{base}"))
            .await
            .map_err(broke)?;
        if answer.status != 200 {
            return Err(wrong(format!(
                "the base {base} of its patch answered {}{}",
                answer.status,
                served_by(conn, &answer, "; served")
            )));
        }
        let bytes = conn.body(&answer);
        if BoardDigest::of(bytes) != patch.base {
            return Err(wrong(format!("its patch's base {base} is other bytes")));
        }
        root = Root::decode(bytes).map_err(|e| wrong(format!("its patch's base does not decode: {e}")))?;
        patches.insert(0, patch);
    };
    let patch = patches.last();
    let (held_version, total, sketch_hash) = patch.map_or(
        (manifest.board_version, manifest.total_players, manifest.sketch),
        |p| (p.board_version, p.total_players, p.sketch),
    );
    if held_version != version {
        return Err(wrong(format!("its manifest is of version {held_version}")));
    }
    let names: Vec<BoardDigest> = manifest
        .rank_chunks
        .iter()
        .map(|c| c.hash)
        .chain(manifest.lookup_chunks.iter().map(|c| c.hash))
        .chain(std::iter::once(sketch_hash))
        .collect();
    let mut parts: Vec<Vec<u8>> = Vec::with_capacity(names.len());
    if round % 3 == 2 {
        for name in &names {
            let answer = conn
                .get(&format!("/v1/snapshots/chunks/{name}"))
                .await
                .map_err(broke)?;
            if answer.status != 200 {
                return Err(wrong(format!(
                    "its chunk {name} answered {}{}",
                    answer.status,
                    served_by(conn, &answer, "; served")
                )));
            }
            parts.push(conn.body(&answer).to_vec());
        }
    } else {
        for group in names.chunks(200) {
            let list: Vec<String> = group.iter().map(BoardDigest::to_string).collect();
            let answer = conn
                .get(&format!("/v1/snapshots/chunks?hashes={}", list.join(",")))
                .await
                .map_err(broke)?;
            if answer.status != 200 {
                return Err(wrong(format!(
                    "a bundle of {} of its chunks answered {}{}: {}",
                    group.len(),
                    answer.status,
                    served_by(conn, &answer, "; served"),
                    conn.body_text(&answer)
                )));
            }
            let mut body = conn.body(&answer);
            for name in group {
                let length = body
                    .get(..4)
                    .map(|l| u32::from_be_bytes([l[0], l[1], l[2], l[3]]) as usize)
                    .filter(|&l| body.len() >= 4 + l)
                    .ok_or_else(|| wrong(format!("a bundle is cut short before chunk {name}")))?;
                parts.push(body[4..4 + length].to_vec());
                body = &body[4 + length..];
            }
            if !body.is_empty() {
                return Err(wrong(format!(
                    "a bundle has {} bytes past its chunks",
                    body.len()
                )));
            }
            watching.bundles.fetch_add(group.len() as u64, Ordering::Relaxed);
        }
    }
    watching.chunks.fetch_add(parts.len() as u64, Ordering::Relaxed);
    let (rank_parts, rest) = parts.split_at(manifest.rank_chunks.len());
    let (lookup_parts, sketch) = rest.split_at(manifest.lookup_chunks.len());
    let sketch = RankSketch::decode(sketch.first().map_or(&[][..], Vec::as_slice), &sketch_hash)
        .map_err(|e| wrong(format!("its sketch {sketch_hash} does not decode: {e}")))?;
    if sketch.total_players != total {
        return Err(wrong(format!(
            "its sketch counts {} players, its manifest {total}",
            sketch.total_players
        )));
    }
    let mut rank_chunks = Vec::with_capacity(rank_parts.len());
    for (bytes, chunk_ref) in rank_parts.iter().zip(&manifest.rank_chunks) {
        rank_chunks.push(
            RankChunk::decode(bytes, &chunk_ref.hash)
                .map_err(|e| wrong(format!("its rank chunk {} does not decode: {e}", chunk_ref.hash)))?,
        );
    }
    let mut looked_up = 0u64;
    for (bytes, chunk_ref) in lookup_parts.iter().zip(&manifest.lookup_chunks) {
        looked_up += LookupChunk::decode(bytes, &chunk_ref.hash)
            .map_err(|e| {
                wrong(format!(
                    "its lookup chunk {} does not decode: {e}",
                    chunk_ref.hash
                ))
            })?
            .entries
            .len() as u64;
    }
    let refs: Vec<&ManifestPatch> = patches.iter().collect();
    let restored = Snapshot::restore_patched(&manifest, &rank_chunks, &refs)
        .map_err(|e| wrong(format!("its chunks do not restore the board: {e}")))?;
    if restored.version() != version || looked_up != manifest.total_players {
        return Err(wrong(format!(
            "restored at version {} with {looked_up} players looked up of {}",
            restored.version(),
            manifest.total_players
        )));
    }
    Ok(())
}

/// `" {what} by NODE"` when the answer names the cluster node that served it, else nothing.
fn served_by(conn: &HttpConn, answer: &Answer, what: &str) -> String {
    conn.headers(answer)
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("x-standings-served-by"))
        .map_or(String::new(), |(_, node)| {
            format!("{what} by {}", String::from_utf8_lossy(node))
        })
}

/// A PostgreSQL 15 cluster of our own, in a temp folder owned by the `postgres` user (initdb
/// refuses root), on a free port: the shared server is never stopped, this one may be.
struct PrivatePostgres {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
}

impl PrivatePostgres {
    fn create(bin: &std::path::Path) -> Result<PrivatePostgres, String> {
        let dir = std::env::temp_dir().join(format!("standings-crash-pg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        run_quietly(Command::new("chown").arg("postgres:postgres").arg(&dir))?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("cannot find a free port: {e}"))?
            .port();
        let cluster = PrivatePostgres {
            bin: bin.to_path_buf(),
            dir,
            port,
        };
        run_quietly(
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(cluster.bin.join("initdb"))
                .args(["-A", "trust", "-U", "postgres", "--no-sync", "-D"])
                .arg(cluster.dir.join("data")),
        )?;
        cluster.start()?;
        Ok(cluster)
    }

    fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    fn pg_ctl(&self, args: &[&str]) -> Result<(), String> {
        run_quietly(
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(self.bin.join("pg_ctl"))
                .arg("-D")
                .arg(self.dir.join("data"))
                .args(args),
        )
    }

    /// Starts the server and waits (`-w`) until it accepts connections.
    fn start(&self) -> Result<(), String> {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1",
            self.port,
            self.dir.display()
        );
        let log = self.dir.join("postgres.log");
        self.pg_ctl(&["-w", "-l", &log.to_string_lossy(), "-o", &options, "start"])
    }

    /// Stops the server as a crash would: no checkpoint, every connection cut.
    fn stop_immediate(&self) -> Result<(), String> {
        self.pg_ctl(&["-w", "-m", "immediate", "stop"])
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let _ = self.pg_ctl(&["-w", "-m", "fast", "stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn run_quietly(command: &mut Command) -> Result<(), String> {
    let output = command
        .output()
        .map_err(|e| format!("cannot run {command:?}: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{command:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout).trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command lines tests/run and the module doc run parse, with their meanings; `--outages`
    /// without the private cluster, and the cluster mode's flags without it, are refused.
    #[test]
    fn the_documented_command_lines_parse() {
        let parse = |line: &str| harness::try_options::<Args, _, _>(line.split_whitespace());
        let args = parse("crash --db sqlite --events 10000 --kills 5 --standings-bin target/debug/standings")
            .unwrap();
        assert_eq!((args.db, args.events, args.kills), (Db::Sqlite, 10_000, 5));
        assert_eq!(args.standings_bin, PathBuf::from("target/debug/standings"));
        let args = parse(
            "crash --db postgres --postgres-url postgres://postgres@127.0.0.1:5432/test --events 10000 --kills 5 \
             --standings-bin target/debug/standings",
        )
        .unwrap();
        assert_eq!(args.db, Db::Postgres);
        let args = parse(
            "crash --db postgres-private --events 10000 --kills 0 --outages 2 --standings-bin target/debug/standings",
        )
        .unwrap();
        assert_eq!((args.db, args.kills, args.outages), (Db::PostgresPrivate, 0, 2));
        let args = parse("crash").unwrap();
        assert_eq!(
            (args.clients, args.checkpoint_every, args.timeout, args.keep),
            (32, 2000, Duration::from_secs(1800), false)
        );
        assert_eq!(parse("crash --clients 0").unwrap().clients, 1);
        assert!(parse("crash --db sqlite --outages 1").is_err());
        let args = parse(
            "crash --db cluster --postgres-url postgres://postgres@127.0.0.1:5432/test --nodes 3 --games 8 \
             --events 10000 --kills 3 --zombies 1 --rolling-restarts 1 --standings-bin target/debug/standings",
        )
        .unwrap();
        assert_eq!(
            (
                args.db,
                args.nodes,
                args.games,
                args.zombies,
                args.rolling_restarts
            ),
            (Db::Cluster, 3, 8, 1, 1)
        );
        assert_eq!(
            (args.partitions, args.lease_ttl_ms, args.no_standby),
            (8, 2000, false)
        );
        assert!(parse("crash --db cluster --no-standby").unwrap().no_standby);
        assert!(parse("crash --db postgres --zombies 1").is_err());
        assert!(parse("crash --db postgres --no-standby").is_err());
        assert!(parse("crash --db cluster --nodes 1").is_err());
        assert!(parse("crash --db cluster --games 4").is_err());
        assert!(parse("crash --db cluster --partitions 65 --games 80").is_err());
        assert!(parse("crash --db mysql").is_err());
        // tests/patroni/run's line; failovers need the Patroni mode and its command.
        let args = parse(
            "crash --db patroni --postgres-url postgres://postgres@127.0.0.1:25400/postgres --events 6000 \
             --kills 0 --failovers 1 --failover-command tests/patroni/run --standings-bin target/debug/standings",
        )
        .unwrap();
        assert_eq!((args.db, args.kills, args.failovers), (Db::Patroni, 0, 1));
        assert_eq!(args.failover_command, Some(PathBuf::from("tests/patroni/run")));
        assert!(parse("crash --db postgres --failovers 1 --failover-command tests/patroni/run").is_err());
        assert!(parse("crash --db patroni --failovers 1").is_err());
    }
}
