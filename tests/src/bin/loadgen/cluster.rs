//! `loadgen cluster`: what running several origins over one PostgreSQL costs (issue 30). Each
//! part starts its own nodes (`standings serve` with a `[cluster]` table) on a fresh database at
//! `--postgres-url`'s server, waits until every node owns its fair share of the partitions, and
//! measures:
//!
//! - **forwarding**: two nodes and one board of `--members` players, loaded through its owner
//!   (the nodes write a checkpoint every `--members` log entries, so the load writes one as it
//!   ends; it is awaited, so that none is written while measured); then rank, top-100 and single durable submissions, closed-loop on `--connections`
//!   connections, sent to the partition's owner and then to the other node, which answers the
//!   reads from its warm copy (or, with `--standby-reads-max-lag-ms 0`, forwards them) and
//!   forwards the submissions (the same players on both sides): rate, p50, p99, and the CPU of
//!   each node per request;
//! - **takeover**: two nodes, with warm standbys (`standby = true`) and without, and one board of
//!   `--takeover-members` players in one partition. The nodes write a checkpoint every
//!   `--takeover-members` log entries, so the load leaves one as it ends. Before each of
//!   `--kills` kills, `--takeover-tail` more events go into the log after the newest checkpoint;
//!   then the owner is killed (SIGKILL) and the partition's first 2xx read through the survivor
//!   is timed from the kill. The killed node is started again and the shares settle (the
//!   hand-over that moves the partition back writes the next kill's checkpoint);
//! - **writes**: `--nodes` nodes (1, 2 and 3, and 0 for one origin without a `[cluster]` table,
//!   the single-node mode, for reference), each count on a fresh database, `--games` games
//!   with a board each, and `--writers` clients sending batches of `--write-batch` events of one
//!   game at a time, closed-loop, to the nodes in turn (as behind a load balancer) or to each
//!   game's owner (`--send-to owner`): events per second, a batch's p50 and p99, and the CPU per
//!   event of each node, of PostgreSQL's backends of the database and of its shared processes,
//!   beside what the idle nodes and database used just before (the part that does not grow
//!   with the events).
//!
//! Before each measurement it waits, up to `--quiet-wait-seconds`, until less than 0.2 cores
//! are busy outside the generator, the nodes and the database, and it reports the most it saw.
//! A failed or wrong answer fails the run; a partition that moves while measured fails it too.

use std::sync::Arc;
use std::time::{Duration, Instant};

use standings_tests::cluster::{partition_of, schema_of};
use standings_tests::harness;
use standings_tests::http::{Client, HttpConn, count};

use crate::bench::{self, BOARD_PATH, Batches, EventIds, Measured, Plan, Side, Workload};
use crate::cpu::{self, Account, Process, Processes, Shares};
use crate::latency::Histogram;
use crate::scrape::Scrape;
use crate::service::{ADMIN_TOKEN, Database, SERVICE_TOKEN, Service, psql, psql_text};
use crate::workload::{Population, Rng, player_id, push_int};
use crate::{Common, fmt_latency, thousands};

/// The game of the forwarding and takeover boards (`BOARD_PATH`'s).
const GAME: &str = "loadgen";
/// The secret the nodes show each other.
const SECRET: &str = "loadgen-cluster-secret-0000000";
/// Seeds the write measurement's draws apart from every other stream.
const WRITE_STREAM: u64 = 0x7772_6974;
/// How long the write measurement first reads the CPU of the idle nodes and database.
const IDLE: Duration = Duration::from_secs(5);
/// The takeover's metric: a lease taken to the partition served.
const TAKEOVER_METRIC: &str = "standings_cluster_takeover_seconds";

/// What running several origins costs: forwarding to the owner, a takeover with and without a
/// standby, and write throughput on 1, 2 and 3 nodes over one PostgreSQL.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) common: Common,
    /// The parts to measure, in this order.
    #[arg(
        long,
        value_name = "PART,...",
        value_delimiter = ',',
        default_value = "forwarding,takeover,writes"
    )]
    measure: Vec<Part>,
    /// The cluster's partitions.
    #[arg(long, value_name = "N", default_value = "64", value_parser = harness::at_least_one::<u32>)]
    partitions: u32,
    /// The nodes' lease time.
    #[arg(long, value_name = "MS", default_value = "3000")]
    lease_ttl_ms: u64,
    /// Players in the moving partition's board.
    #[arg(long, value_name = "N", default_value = "1000000", value_parser = harness::at_least_one::<u64>)]
    takeover_members: u64,
    /// Events submitted after the newest checkpoint before each kill.
    #[arg(long, value_name = "N", default_value = "100000")]
    takeover_tail: u64,
    /// Kills of the owner with and without a standby each.
    #[arg(long, value_name = "N", default_value = "3", value_parser = harness::at_least_one::<usize>)]
    kills: usize,
    /// The node counts the writes are measured on, each on a fresh database; 0 is one origin
    /// without a `[cluster]` table (the single-node mode), for reference.
    #[arg(long, value_name = "N,...", value_delimiter = ',', default_value = "0,1,2,3")]
    nodes: Vec<usize>,
    /// Games written to, one board each.
    #[arg(long, value_name = "N", default_value = "64", value_parser = harness::at_least_one::<u64>)]
    games: u64,
    /// Events per batch of the writes (all of one game).
    #[arg(long, value_name = "N", default_value = "100", value_parser = crate::batch_size)]
    write_batch: u64,
    /// Concurrent clients of the writes.
    #[arg(long, value_name = "N", default_value = "32", value_parser = harness::at_least_one::<usize>)]
    writers: usize,
    /// Players per game the writes draw from.
    #[arg(long, value_name = "N", default_value = "10000", value_parser = harness::at_least_one::<u64>)]
    players_per_game: u64,
    /// Where a client sends a batch: the nodes in turn (a load balancer) or the game's owner.
    #[arg(long, value_name = "any|owner", default_value = "any", value_parser = ["any", "owner"])]
    send_to: String,
    /// Whether the nodes keep warm standbys while the writes are measured (each then applies
    /// every other node's events too).
    #[arg(long, value_name = "BOOL", default_value = "true", action = clap::ArgAction::Set)]
    writes_standby: bool,
    /// The nodes' `standby_reads_max_lag_ms`: above 0, the other node of the forwarding part
    /// answers reads from its warm copy; 0 forwards them to the owner.
    #[arg(long, value_name = "MS", default_value = "1000")]
    standby_reads_max_lag_ms: u64,
}

/// A part of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Part {
    /// Reads and submissions to the owner and through the other node.
    Forwarding,
    /// The owner killed, with and without a standby.
    Takeover,
    /// Write throughput and CPU per event on each node count.
    Writes,
}

pub(crate) async fn run(args: &Args) -> Result<(), String> {
    let mut json = serde_json::Map::new();
    for part in &args.measure {
        match part {
            Part::Forwarding => {
                let figures = forwarding(args).await?;
                print_forwarding(args, &figures);
                json.insert("forwarding".into(), figures.json());
            }
            Part::Takeover => {
                let mut variants = Vec::new();
                for standby in [true, false] {
                    variants.push(takeover(args, standby).await?);
                }
                print_takeovers(args, &variants);
                json.insert("takeover".into(), variants.iter().map(Takeovers::json).collect());
            }
            Part::Writes => {
                let mut runs = Vec::new();
                for &nodes in &args.nodes {
                    runs.push(writes(args, nodes).await?);
                }
                print_writes(args, &runs);
                json.insert("writes".into(), runs.iter().map(Writes::json).collect());
            }
        }
    }
    println!();
    println!("loadgen-cluster: {}", serde_json::Value::Object(json));
    Ok(())
}

/// The connections a node keeps open to the database (docs/cluster.md: 8 pooled, 4 for the
/// writers, 1 for its membership).
const CONNECTIONS_PER_NODE: i64 = 13;

/// Waits until the server has room for `nodes` more nodes' connections and a few to spare: it
/// is shared, and its `max_connections` may be less than every harness on it wants at once.
async fn wait_for_room(admin_url: &str, nodes: usize, timeout: Duration) -> Result<(), String> {
    let wanted = CONNECTIONS_PER_NODE * nodes as i64 + 5;
    let sql = "SELECT current_setting('max_connections')::int - (SELECT count(*) FROM pg_stat_activity)";
    let deadline = Instant::now() + timeout;
    let mut said = false;
    loop {
        let free: i64 = psql_text(admin_url, sql)?
            .trim()
            .parse()
            .map_err(|e| format!("free connections: {e}"))?;
        if free >= wanted {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the PostgreSQL server has {free} free connections, not the {wanted} {nodes} node(s) need"
            ));
        }
        if !said {
            eprintln!(
                "loadgen cluster: waiting for {wanted} free connections on the PostgreSQL server (it has {free})"
            );
            said = true;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// A database made for one part, dropped at its end (its nodes gone first).
struct FreshDatabase {
    admin_url: String,
    name: String,
    url: String,
}

impl FreshDatabase {
    fn create(admin_url: &str, label: &str) -> Result<FreshDatabase, String> {
        let name = format!("standings_cluster_{label}_{}", std::process::id());
        psql(admin_url, &format!("DROP DATABASE IF EXISTS {name}"))?;
        psql(admin_url, &format!("CREATE DATABASE {name}"))?;
        let base = admin_url
            .rsplit_once('/')
            .map(|(base, _)| base)
            .ok_or("the PostgreSQL URL has no database part")?;
        Ok(FreshDatabase {
            url: format!("{base}/{name}"),
            admin_url: admin_url.to_string(),
            name,
        })
    }
}

impl Drop for FreshDatabase {
    fn drop(&mut self) {
        let drop = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        if let Err(e) = psql(&self.admin_url, &drop) {
            eprintln!("loadgen cluster: {e}");
        }
    }
}

/// One node: its id and its process.
struct Node {
    id: String,
    service: Service,
}

/// The nodes over one fresh database. The nodes are declared first, so they are dropped
/// (killed) before the database.
struct Cluster {
    nodes: Vec<Node>,
    database: FreshDatabase,
    partitions: u32,
    ready_timeout: Duration,
    /// How many partitions each node owned once the shares settled at the start; empty for a
    /// single-node origin.
    owns: Vec<usize>,
}

/// One partition in `GET /v1/cluster`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Lease {
    owner: Option<String>,
    epoch: i64,
    log_end: i64,
    /// Each standby's node and the log entries it is behind.
    lags: Vec<(String, i64)>,
}

impl Cluster {
    /// Starts `count` nodes on a fresh database, one after the other, and waits until each owns
    /// its share; with `count` 0, one origin without a `[cluster]` table (the single-node mode).
    /// `checkpoint_every` sets `checkpoint_every_events` (the origin's default when `None`).
    async fn start(
        args: &Args,
        label: &str,
        count: usize,
        standby: bool,
        checkpoint_every: Option<u64>,
    ) -> Result<Cluster, String> {
        let common = &args.common;
        wait_for_room(&common.postgres_url, count.max(1), common.run.load_timeout).await?;
        let database = FreshDatabase::create(&common.postgres_url, label)?;
        // Several processes share the machine's cores, so none pins its threads.
        let mut settings = String::from("pin_http_threads = false\n");
        if let Some(every) = checkpoint_every {
            settings.push_str(&format!("checkpoint_every_events = {every}\n"));
        }
        let mut cluster = Cluster {
            nodes: Vec::with_capacity(count),
            database,
            partitions: args.partitions,
            ready_timeout: common.run.ready_timeout,
            owns: Vec::new(),
        };
        for i in 0..count.max(1) {
            let id = format!("node-{}", (b'a' + i as u8) as char);
            let service = Service::prepare_with(
                &common.standings_bin,
                Database::Shared(cluster.database.url.clone()),
                common.run.keep,
                &format!("loadgen-cluster-{id}"),
                &settings,
            )?;
            if count > 0 {
                service.append_config(&format!(
                    "\n[cluster]\nnode_id = \"{id}\"\nadvertise_url = \"http://{}\"\npartitions = {}\n\
                     lease_ttl_ms = {}\nstandby = {standby}\nstandby_reads_max_lag_ms = {}\nsecret = \"{SECRET}\"\n",
                    service.addr, args.partitions, args.lease_ttl_ms, args.standby_reads_max_lag_ms
                ))?;
            }
            let mut node = Node { id, service };
            node.service.start(common.run.ready_timeout).await?;
            cluster.nodes.push(node);
        }
        if count == 0 {
            eprintln!(
                "loadgen cluster: {label}: one single-node origin on {}",
                cluster.database.name
            );
            return Ok(cluster);
        }
        cluster.owns = cluster.settle().await?;
        eprintln!(
            "loadgen cluster: {label}: {count} node(s) on {}, standby {standby}, owning {:?} of {} partitions",
            cluster.database.name, cluster.owns, args.partitions
        );
        Ok(cluster)
    }

    /// Waits until every partition has an owner and no running node owns more than its fair
    /// share (the origin's: the partitions over the nodes, rounded up), the same at two reads
    /// half a lease tick apart. Returns how many each running node owns.
    async fn settle(&self) -> Result<Vec<usize>, String> {
        let running: Vec<&Node> = self.nodes.iter().filter(|n| n.service.pid().is_some()).collect();
        let tick = Duration::from_millis(500);
        // A node gives back one partition per tick (a third of the lease time) when one joins.
        let deadline =
            Instant::now() + self.ready_timeout + Duration::from_secs(u64::from(self.partitions) * 2);
        let mut last = Vec::new();
        loop {
            let leases = self.leases().await?;
            let owns: Vec<usize> = running
                .iter()
                .map(|n| {
                    leases
                        .iter()
                        .filter(|l| l.owner.as_deref() == Some(&n.id))
                        .count()
                })
                .collect();
            let share = leases.len().div_ceil(running.len().max(1));
            let fair = owns.iter().all(|o| *o <= share) && owns.iter().sum::<usize>() == leases.len();
            let held: Vec<(Option<String>, i64)> =
                leases.iter().map(|l| (l.owner.clone(), l.epoch)).collect();
            if fair && held == last {
                return Ok(owns);
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "the shares did not settle: the running nodes own {owns:?}"
                ));
            }
            last = held;
            tokio::time::sleep(tick).await;
        }
    }

    /// Every partition's lease, as the first running node answers `GET /v1/cluster`.
    async fn leases(&self) -> Result<Vec<Lease>, String> {
        let node = self
            .nodes
            .iter()
            .find(|n| n.service.pid().is_some())
            .ok_or("no node is running")?;
        let reply = Client::new(&node.service.addr)
            .get("/v1/cluster", Some(ADMIN_TOKEN))
            .await?;
        if reply.status != 200 {
            return Err(format!("/v1/cluster answered {}: {}", reply.status, reply.text()));
        }
        let status = reply.json()?;
        let leases = status["leases"].as_array().ok_or("/v1/cluster has no leases")?;
        Ok(leases
            .iter()
            .map(|l| Lease {
                owner: l["owner"].as_str().map(str::to_string),
                epoch: l["epoch"].as_i64().unwrap_or(-1),
                log_end: l["log_end"].as_i64().unwrap_or(-1),
                lags: l["standbys"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|s| {
                        (
                            s["node_id"].as_str().unwrap_or_default().to_string(),
                            s["lag"].as_i64().unwrap_or(-1),
                        )
                    })
                    .collect(),
            })
            .collect())
    }

    /// The lease of partition `p`.
    async fn lease(&self, p: u32) -> Result<Lease, String> {
        self.leases()
            .await?
            .into_iter()
            .nth(p as usize)
            .ok_or_else(|| format!("/v1/cluster has no partition {p}"))
    }

    /// The index of the node that owns partition `p`.
    async fn owner_of(&self, p: u32) -> Result<usize, String> {
        let lease = self.lease(p).await?;
        self.nodes
            .iter()
            .position(|n| lease.owner.as_deref() == Some(&n.id))
            .ok_or_else(|| format!("partition {p} is owned by {:?}, none of ours", lease.owner))
    }

    /// The processes of the nodes `order` names, in that order, then PostgreSQL's backends of
    /// the database and its shared processes, for the CPU accounting.
    fn processes(&self, order: &[usize]) -> Result<Processes, String> {
        let mut watched = Vec::with_capacity(order.len() + 2);
        for node in order.iter().map(|i| &self.nodes[*i]) {
            let pid = node
                .service
                .pid()
                .ok_or_else(|| format!("{} is not running", node.id))?;
            watched.push(Process::Pid(pid));
        }
        watched.push(Process::PostgresBackends(self.database.name.clone()));
        watched.push(Process::PostgresShared);
        Ok(Processes(watched))
    }

    /// The newest checkpoint's `seq` of partition `p` and the log's end, read from the database.
    /// The server is shared and its connections few, so a refused connection is tried again.
    async fn checkpoint_and_end(&self, p: u32) -> Result<(i64, i64), String> {
        let schema = schema_of(p);
        let sql = format!(
            "SELECT COALESCE((SELECT MAX(seq) FROM {schema}.checkpoint_parts WHERE part = 0), 0), \
             COALESCE((SELECT MAX(seq) FROM {schema}.score_events), 0)"
        );
        let mut attempts = 0;
        let text = loop {
            match psql_text(&self.database.url, &sql) {
                Err(e) if e.contains("too many clients") && attempts < 20 => attempts += 1,
                answer => break answer?,
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        let (checkpoint, end) = text
            .trim()
            .split_once('|')
            .ok_or_else(|| format!("an unreadable checkpoint row: {text:?}"))?;
        let number = |s: &str| s.parse::<i64>().map_err(|e| format!("{s:?}: {e}"));
        Ok((number(checkpoint)?, number(end)?))
    }

    /// Checks `partition_of` against the running nodes: after `games` were written to, exactly
    /// their partitions' logs have entries.
    async fn check_partitions(&self, games: &[String]) -> Result<(), String> {
        let leases = self.leases().await?;
        for (p, lease) in leases.iter().enumerate() {
            let ours = games.iter().any(|g| partition_of(g, self.partitions) == p as u32);
            if ours != (lease.log_end > 0) {
                return Err(format!(
                    "partition {p}'s log ends at {} but partition_of says it holds {} of our games",
                    lease.log_end,
                    if ours { "one" } else { "none" }
                ));
            }
        }
        Ok(())
    }
}

/// Waits, up to `--quiet-wait-seconds`, until less than 0.2 cores are busy outside the
/// generator, the nodes and the database; returns the last sample's figure.
async fn quiet(args: &Args, processes: &Processes, what: &str) -> f64 {
    if args.common.quiet_wait.is_zero() {
        return 0.0;
    }
    let (waited, busy) = cpu::wait_quiet_for(
        processes,
        |shares: &Shares| shares.other,
        0.2,
        args.common.quiet_wait,
    )
    .await;
    eprintln!(
        "loadgen cluster: {what}: waited {waited:.1?} for a quiet machine ({busy:.2} cores busy outside the generator, the nodes and the database)"
    );
    busy
}

/// A plan of the board under test, sent to `addr`. `nonce` keeps each side's event ids apart.
fn plan(common: &Common, members: u64, addr: &str, nonce: u64) -> Result<Arc<Plan>, String> {
    Ok(Arc::new(Plan {
        population: Population::new(members, common.run.seed)?,
        standings_addr: addr.to_string(),
        redis_addr: String::new(),
        redis_key: Vec::new(),
        connections: common.connections,
        warmup: Duration::from_secs_f64(common.warmup_seconds),
        measure: Duration::from_secs_f64(common.seconds),
        event_ids: EventIds::Member,
        nonce,
    }))
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The node that answered a read of the board through `addr`.
async fn served_by(addr: &str) -> Result<String, String> {
    let mut conn = HttpConn::connect(addr, SERVICE_TOKEN).await?;
    let answer = conn.get(&format!("{BOARD_PATH}/top?limit=1")).await?;
    if answer.status != 200 {
        return Err(format!(
            "a top read answered {}: {}",
            answer.status,
            conn.body_text(&answer)
        ));
    }
    conn.headers(&answer)
        .into_iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("x-standings-served-by"))
        .map(|(_, value)| String::from_utf8_lossy(value).into_owned())
        .ok_or_else(|| "an answer without x-standings-served-by".into())
}

/// Defines the board under test and loads `members` players into it through node `via`. The
/// nodes write a checkpoint every `members` log entries, so the load's last group writes one:
/// this waits until it is stored whole, so that none is written while anything is measured.
async fn load_board(args: &Args, cluster: &Cluster, via: usize, members: u64) -> Result<Duration, String> {
    let common = &args.common;
    let addr = &cluster.nodes[via].service.addr;
    bench::define_board(addr).await?;
    eprintln!(
        "loadgen cluster: loading {members} members through {} (batches of {})",
        cluster.nodes[via].id, common.batch
    );
    let load = bench::load_standings(
        &plan(common, members, addr, now_ms())?,
        common.batch,
        common.load_connections,
        common.run.load_timeout,
    )
    .await?;
    cluster.check_partitions(&[GAME.to_string()]).await?;
    eprintln!(
        "loadgen cluster: loaded in {load:.2?} = {:.0} events/s",
        members as f64 / load.as_secs_f64()
    );
    let p = partition_of(GAME, args.partitions);
    let deadline = Instant::now() + common.run.load_timeout;
    while cluster.checkpoint_and_end(p).await?.0 < members as i64 {
        if Instant::now() > deadline {
            return Err(format!("no checkpoint of partition {p} after the load"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(load)
}

/// The forwarding figures: per workload, the owner's side and the forwarding node's.
struct Forwarding {
    owner: String,
    other: String,
    load: Duration,
    pairs: Vec<(Workload, Measured<Shares>, Measured<Shares>)>,
    /// The most cores busy outside the generator, the nodes and the database before a
    /// measurement, after the quiet wait.
    busy: f64,
}

async fn forwarding(args: &Args) -> Result<Forwarding, String> {
    let common = &args.common;
    let cluster = Cluster::start(args, "forwarding", 2, true, Some(common.members)).await?;
    let p = partition_of(GAME, args.partitions);
    let owner = cluster.owner_of(p).await?;
    let other = 1 - owner;
    let load = load_board(args, &cluster, owner, common.members).await?;
    // Reads through the other node are the owner's, or its warm copy's when copies answer.
    let copies = args.standby_reads_max_lag_ms > 0;
    for (i, node) in cluster.nodes.iter().enumerate() {
        let expected = if i == other && copies { other } else { owner };
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let by = served_by(&node.service.addr).await?;
            if by == cluster.nodes[expected].id {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "a read through {} was served by {by}, not by {}",
                    node.id, cluster.nodes[expected].id
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // The owner's CPU first, then the other node's, then the database's.
    let processes = cluster.processes(&[owner, other])?;
    let nonce = now_ms();
    let sides = [
        (
            "the owner",
            plan(common, common.members, &cluster.nodes[owner].service.addr, nonce)?,
        ),
        (
            "the other node",
            plan(
                common,
                common.members,
                &cluster.nodes[other].service.addr,
                nonce + 1,
            )?,
        ),
    ];
    let mut pairs = Vec::new();
    let mut busy: f64 = 0.0;
    for workload in [Workload::Rank, Workload::Top, Workload::Submit] {
        let mut measured = Vec::with_capacity(2);
        for (side, plan) in &sides {
            busy = busy.max(quiet(args, &processes, &format!("{workload:?} to {side}")).await);
            let before = cluster.lease(p).await?;
            let m = bench::measure(plan, Side::Standings, workload, &processes).await?;
            let after = cluster.lease(p).await?;
            if (&before.owner, before.epoch) != (&after.owner, after.epoch) {
                return Err(format!(
                    "partition {p} moved while {workload:?} was measured: {before:?} then {after:?}"
                ));
            }
            eprintln!(
                "loadgen cluster: {workload:?} to {side}: {:.0}/s, p50 {}, p99 {}; cores: owner {:.2}, other {:.2}, database {:.2}, generator {:.2}, else {:.2}",
                m.throughput(),
                fmt_latency(m.latency.quantile(0.5)),
                fmt_latency(m.latency.quantile(0.99)),
                m.cpu.each[0],
                m.cpu.each[1],
                m.cpu.each[2] + m.cpu.each[3],
                m.cpu.generator,
                m.cpu.other
            );
            measured.push(m);
        }
        let forwarded = measured.pop().ok_or("no forwarded side")?;
        let direct = measured.pop().ok_or("no owner's side")?;
        pairs.push((workload, direct, forwarded));
    }
    Ok(Forwarding {
        owner: cluster.nodes[owner].id.clone(),
        other: cluster.nodes[other].id.clone(),
        load,
        pairs,
        busy,
    })
}

impl Forwarding {
    fn json(&self) -> serde_json::Value {
        let side = |m: &Measured<Shares>| {
            serde_json::json!({
                "rate": m.throughput(),
                "p50_ms": m.latency.quantile(0.5).as_secs_f64() * 1e3,
                "p99_ms": m.latency.quantile(0.99).as_secs_f64() * 1e3,
                "owner_cores": m.cpu.each[0],
                "other_cores": m.cpu.each[1],
                "database_cores": m.cpu.each[2] + m.cpu.each[3],
                "generator_cores": m.cpu.generator,
                "else_cores": m.cpu.other,
            })
        };
        serde_json::json!({
            "owner": self.owner,
            "other": self.other,
            "load_seconds": self.load.as_secs_f64(),
            "busy_cores": self.busy,
            "pairs": self.pairs.iter().map(|(w, d, f)| serde_json::json!({
                "workload": format!("{w:?}"), "owner": side(d), "forwarded": side(f),
            })).collect::<Vec<_>>(),
        })
    }
}

/// Microseconds of CPU per operation: `cores` busy at `rate` operations per second.
fn us_per(cores: f64, rate: f64) -> f64 {
    cores / rate.max(1e-9) * 1e6
}

fn print_forwarding(args: &Args, f: &Forwarding) {
    let common = &args.common;
    println!();
    println!(
        "## Forwarding: {} members in one board, 2 nodes ({} owns its partition), {} connections, {}s per side ({}s warm-up)",
        thousands(common.members as f64),
        f.owner,
        common.connections,
        common.seconds,
        common.warmup_seconds
    );
    println!();
    println!(
        "| workload | to the owner: rate, p50, p99 | through the other node: rate, p50, p99 | rate forwarded/owner | p50 added | CPU per request, owner + other node: to the owner | forwarded |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for (workload, direct, forwarded) in &f.pairs {
        let side = |m: &Measured<Shares>| {
            format!(
                "{}/s, {}, {}",
                thousands(m.throughput()),
                fmt_latency(m.latency.quantile(0.5)),
                fmt_latency(m.latency.quantile(0.99))
            )
        };
        let cost = |m: &Measured<Shares>| {
            format!(
                "{:.1} + {:.1} us",
                us_per(m.cpu.each[0], m.throughput()),
                us_per(m.cpu.each[1], m.throughput())
            )
        };
        let added = forwarded
            .latency
            .quantile(0.5)
            .saturating_sub(direct.latency.quantile(0.5));
        println!(
            "| {} | {} | {} | {:.2}x | {} | {} | {} |",
            workload_name(*workload),
            side(direct),
            side(forwarded),
            forwarded.throughput() / direct.throughput().max(1e-9),
            fmt_latency(added),
            cost(direct),
            cost(forwarded),
        );
    }
    println!();
    println!(
        "Loading {} members through the owner took {:.2} s. The most cores busy outside the generator, the nodes and the database before a measurement: {:.2}.",
        thousands(common.members as f64),
        f.load.as_secs_f64(),
        f.busy
    );
    println!();
    println!(
        "| measurement | owner cores | other node cores | database cores | generator cores | everything else |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    for (workload, direct, forwarded) in &f.pairs {
        for (side, m) in [("to the owner", direct), ("forwarded", forwarded)] {
            println!(
                "| {} {side} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
                workload_name(*workload),
                m.cpu.each[0],
                m.cpu.each[1],
                m.cpu.each[2] + m.cpu.each[3],
                m.cpu.generator,
                m.cpu.other
            );
        }
    }
}

fn workload_name(workload: Workload) -> &'static str {
    match workload {
        Workload::Rank => "rank",
        Workload::Top => "top-100",
        Workload::Nearby => "nearby r=5",
        Workload::Submit => "single durable submission",
    }
}

/// One kill of the partition's owner.
struct Kill {
    /// The log entries after the checkpoint the survivor could restore.
    tail: i64,
    /// The checkpoint's `seq`.
    checkpoint: i64,
    /// The kill to the first 2xx read through the survivor.
    took: Duration,
    /// The survivor's own figure: its lease taken to the partition served.
    brought_up: Duration,
    /// Reads answered otherwise (503 `PARTITION_MOVING`) before the first 2xx.
    refused: u64,
}

/// The kills of one standby setting.
struct Takeovers {
    standby: bool,
    load: Duration,
    kills: Vec<Kill>,
    busy: f64,
}

impl Takeovers {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "standby": self.standby,
            "load_seconds": self.load.as_secs_f64(),
            "busy_cores": self.busy,
            "kills": self.kills.iter().map(|k| serde_json::json!({
                "tail": k.tail,
                "checkpoint_seq": k.checkpoint,
                "seconds": k.took.as_secs_f64(),
                "brought_up_seconds": k.brought_up.as_secs_f64(),
                "refused": k.refused,
            })).collect::<Vec<_>>(),
        })
    }
}

async fn takeover(args: &Args, standby: bool) -> Result<Takeovers, String> {
    let common = &args.common;
    let members = args.takeover_members;
    let label = if standby {
        "takeover_standby"
    } else {
        "takeover_restore"
    };
    let mut cluster = Cluster::start(args, label, 2, standby, Some(members)).await?;
    let p = partition_of(GAME, args.partitions);
    let owner = cluster.owner_of(p).await?;
    let load = load_board(args, &cluster, owner, members).await?;
    let mut kills = Vec::with_capacity(args.kills);
    let mut busy: f64 = 0.0;
    for k in 0..args.kills {
        let owner = cluster.owner_of(p).await?;
        let survivor = 1 - owner;
        let owner_addr = cluster.nodes[owner].service.addr.clone();
        let survivor_addr = cluster.nodes[survivor].service.addr.clone();
        if args.takeover_tail > 0 {
            bench::post_batches(
                &plan(common, members, &owner_addr, now_ms() + k as u64)?,
                Batches::Tail(args.takeover_tail),
                common.batch,
                common.load_connections,
                common.run.load_timeout,
            )
            .await?;
        }
        if standby {
            wait_standby_caught_up(&cluster, p, &cluster.nodes[survivor].id).await?;
        }
        let (checkpoint, end) = cluster.checkpoint_and_end(p).await?;
        let before = crate::board_digest(&owner_addr).await?;
        let metric_before = takeover_seconds(&survivor_addr).await?;
        busy = busy.max(quiet(args, &cluster.processes(&[0, 1])?, &format!("kill {}", k + 1)).await);
        let killed_at = Instant::now();
        cluster.nodes[owner].service.kill()?;
        let (took, refused) = first_read(&survivor_addr, members, killed_at).await?;
        let after = crate::board_digest(&survivor_addr).await?;
        if (before.digest.as_str(), before.total_players) != (after.digest.as_str(), after.total_players) {
            return Err(format!(
                "the board changed across the takeover: {} players, digest {} before; {} players, digest {} after",
                before.total_players, before.digest, after.total_players, after.digest
            ));
        }
        let brought_up = takeover_seconds(&survivor_addr).await? - metric_before;
        eprintln!(
            "loadgen cluster: standby {standby}, kill {}: {} killed; the first 2xx read through {} came {took:.2?} after the kill \
             ({refused} refused before it; the survivor brought the partition up in {brought_up:.2}s, from the checkpoint at seq {checkpoint} and {} entries after it); \
             the digest matches",
            k + 1,
            cluster.nodes[owner].id,
            cluster.nodes[survivor].id,
            end - checkpoint,
        );
        kills.push(Kill {
            tail: end - checkpoint,
            checkpoint,
            took,
            brought_up: Duration::from_secs_f64(brought_up.max(0.0)),
            refused,
        });
        cluster.nodes[owner]
            .service
            .start(common.run.ready_timeout)
            .await?;
        cluster.settle().await?;
    }
    Ok(Takeovers {
        standby,
        load,
        kills,
        busy,
    })
}

/// Waits until `node`'s standby of partition `p` has applied the log's end.
async fn wait_standby_caught_up(cluster: &Cluster, p: u32, node: &str) -> Result<(), String> {
    let deadline = Instant::now() + cluster.ready_timeout;
    loop {
        let lease = cluster.lease(p).await?;
        if lease.lags.iter().any(|(n, lag)| n == node && *lag == 0) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{node}'s standby of partition {p} did not catch up: {lease:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The sum of the survivor's takeover durations so far, in seconds.
async fn takeover_seconds(addr: &str) -> Result<f64, String> {
    let scrape = Scrape::take(addr).await?;
    Ok(scrape
        .0
        .get(&format!("{TAKEOVER_METRIC}_sum"))
        .copied()
        .unwrap_or(0.0))
}

/// Reads a player's rank through `addr` until one answers 2xx; returns the time from `started`
/// to that answer and how many were answered otherwise before it. Each read may be held by the
/// node while the partition moves.
async fn first_read(addr: &str, members: u64, started: Instant) -> Result<(Duration, u64), String> {
    let id = player_id(members / 2);
    let path = format!("{BOARD_PATH}/players/{}/rank", String::from_utf8_lossy(&id));
    let mut client = Client::new(addr);
    let mut refused = 0;
    loop {
        let reply = client.get(&path, Some(SERVICE_TOKEN)).await?;
        if (200..300).contains(&reply.status) {
            return Ok((started.elapsed(), refused));
        }
        if reply.status != 503 || started.elapsed() > Duration::from_secs(120) {
            return Err(format!(
                "a read through the survivor answered {}: {}",
                reply.status,
                reply.text()
            ));
        }
        refused += 1;
    }
}

fn print_takeovers(args: &Args, variants: &[Takeovers]) {
    println!();
    println!(
        "## Takeover: {} members in the moving partition, 2 nodes, lease_ttl_ms {}, {} partitions; SIGKILL of the owner to the first 2xx read through the survivor",
        thousands(args.takeover_members as f64),
        args.lease_ttl_ms,
        args.partitions
    );
    println!();
    println!(
        "| standby | kills | kill to first 2xx: p50, max | each | of which brought up by the survivor (lease taken to served) | the rest (the lease running out, the survivor's tick) | log entries after the checkpoint | 503s before the first 2xx |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for v in variants {
        let mut took: Vec<Duration> = v.kills.iter().map(|k| k.took).collect();
        took.sort();
        let each = |f: &dyn Fn(&Kill) -> String| v.kills.iter().map(f).collect::<Vec<_>>().join(", ");
        println!(
            "| {} | {} | {:.2} s, {:.2} s | {} | {} | {} | {} | {} |",
            if v.standby {
                "true (catch-up only)"
            } else {
                "false (checkpoint + log tail)"
            },
            v.kills.len(),
            took[(took.len() - 1) / 2].as_secs_f64(),
            took[took.len() - 1].as_secs_f64(),
            each(&|k| format!("{:.2} s", k.took.as_secs_f64())),
            each(&|k| format!("{:.2} s", k.brought_up.as_secs_f64())),
            each(&|k| format!("{:.2} s", k.took.saturating_sub(k.brought_up).as_secs_f64())),
            each(&|k| thousands(k.tail as f64)),
            each(&|k| k.refused.to_string()),
        );
    }
    println!();
    for v in variants {
        println!(
            "standby {}: loading took {:.2} s; the checkpoints restored were at seq {}; the most cores busy outside the generator, the nodes and the database before a kill: {:.2}.",
            v.standby,
            v.load.as_secs_f64(),
            v.kills
                .iter()
                .map(|k| k.checkpoint.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            v.busy
        );
    }
}

/// One node count's write figures.
struct Writes {
    /// The nodes; 0 for a single-node origin (no `[cluster]` table).
    nodes: usize,
    /// How many partitions each node owned.
    owns: Vec<usize>,
    events: u64,
    window: Duration,
    latency: Histogram,
    /// Batches sent to a node that does not own their game.
    forwarded: u64,
    batches: u64,
    cpu: Shares,
    /// The nodes' and the database's CPU before the writes, with nothing to do.
    idle: Shares,
    busy: f64,
}

impl Writes {
    fn rate(&self) -> f64 {
        self.events as f64 / self.window.as_secs_f64()
    }

    /// Microseconds of CPU per event of each node, then the database's backends and its
    /// shared processes.
    fn per_event(&self) -> Vec<f64> {
        self.cpu.each.iter().map(|c| us_per(*c, self.rate())).collect()
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "nodes": self.nodes,
            "owns": self.owns,
            "events_per_second": self.rate(),
            "batch_p50_ms": self.latency.quantile(0.5).as_secs_f64() * 1e3,
            "batch_p99_ms": self.latency.quantile(0.99).as_secs_f64() * 1e3,
            "forwarded_share": self.forwarded as f64 / self.batches.max(1) as f64,
            "cores": self.cpu.each,
            "idle_cores": self.idle.each,
            "generator_cores": self.cpu.generator,
            "else_cores": self.cpu.other,
            "us_per_event": self.per_event(),
            "busy_cores": self.busy,
        })
    }
}

async fn writes(args: &Args, count: usize) -> Result<Writes, String> {
    let common = &args.common;
    let cluster = Cluster::start(args, &format!("writes{count}"), count, args.writes_standby, None).await?;
    let processes_of_nodes = count.max(1);
    let games: Vec<String> = (0..args.games).map(|g| format!("game-{g:03}")).collect();
    for game in &games {
        bench::define_board_at(
            &cluster.nodes[0].service.addr,
            &format!("/v1/boards/{game}/bench/s1/global"),
        )
        .await?;
    }
    // Each game's owner; a single-node origin owns them all.
    let leases = if count > 0 {
        cluster.leases().await?
    } else {
        Vec::new()
    };
    let owners: Vec<usize> = games
        .iter()
        .map(|g| match leases.get(partition_of(g, args.partitions) as usize) {
            None => Ok(0),
            Some(lease) => cluster
                .nodes
                .iter()
                .position(|n| lease.owner.as_deref() == Some(&n.id))
                .ok_or_else(|| format!("{g}'s partition has no owner of ours")),
        })
        .collect::<Result<_, _>>()?;
    let processes = cluster.processes(&(0..processes_of_nodes).collect::<Vec<_>>())?;
    let what = if count == 0 {
        "a single-node origin".to_string()
    } else {
        format!("{count} node(s)")
    };
    let busy = quiet(args, &processes, &format!("writes on {what}")).await;
    // What the nodes and the database cost with nothing to do (leases renewed, the standbys
    // reading the logs' ends), a part of each measured figure that does not grow with events.
    let idle_from = processes.read();
    tokio::time::sleep(IDLE).await;
    let idle = processes.between(&idle_from, &processes.read());
    let load = Arc::new(WriteLoad {
        addrs: cluster.nodes.iter().map(|n| n.service.addr.clone()).collect(),
        games,
        owners,
        to_owner: args.send_to == "owner",
        batch: args.write_batch,
        population: Population::new(args.players_per_game, common.run.seed)?,
        nonce: now_ms(),
    });
    let measured_from = Instant::now() + Duration::from_secs_f64(common.warmup_seconds);
    let until = measured_from + Duration::from_secs_f64(common.seconds);
    let mut tasks = Vec::with_capacity(args.writers);
    for writer in 0..args.writers {
        let load = load.clone();
        tasks.push(tokio::spawn(async move {
            load.write(writer, measured_from, until).await
        }));
    }
    tokio::time::sleep_until(measured_from.into()).await;
    let from = processes.read();
    tokio::time::sleep_until(until.into()).await;
    let cpu = processes.between(&from, &processes.read());
    let mut figures = Writes {
        nodes: count,
        owns: cluster.owns.clone(),
        events: 0,
        window: until - measured_from,
        latency: Histogram::new(),
        forwarded: 0,
        batches: 0,
        cpu,
        idle,
        busy,
    };
    for task in tasks {
        let (batches, forwarded, latency) = task.await.map_err(|e| format!("a writer failed: {e}"))??;
        figures.batches += batches;
        figures.forwarded += forwarded;
        figures.latency.merge(&latency);
    }
    figures.events = figures.batches * args.write_batch;
    if count > 0 {
        cluster.check_partitions(&load.games).await?;
        let moved = cluster
            .leases()
            .await?
            .iter()
            .map(|l| (&l.owner, l.epoch))
            .ne(leases.iter().map(|l| (&l.owner, l.epoch)));
        if moved {
            return Err(format!(
                "a partition moved while the writes on {what} were measured"
            ));
        }
    }
    let n = processes_of_nodes;
    eprintln!(
        "loadgen cluster: writes on {what}: {:.0} events/s, batch p50 {}, p99 {}; cores: nodes {:.2?}, database backends {:.2}, shared {:.2}, generator {:.2}, else {:.2}; idle before: nodes {:.2?}, database {:.2}",
        figures.rate(),
        fmt_latency(figures.latency.quantile(0.5)),
        fmt_latency(figures.latency.quantile(0.99)),
        &figures.cpu.each[..n],
        figures.cpu.each[n],
        figures.cpu.each[n + 1],
        figures.cpu.generator,
        figures.cpu.other,
        &figures.idle.each[..n],
        figures.idle.each[n] + figures.idle.each[n + 1],
    );
    Ok(figures)
}

/// What every writer of the write measurement shares.
struct WriteLoad {
    /// Each node's address.
    addrs: Vec<String>,
    games: Vec<String>,
    /// Each game's owner, an index into `addrs`.
    owners: Vec<usize>,
    /// Whether a batch goes to its game's owner rather than to the writer's node.
    to_owner: bool,
    batch: u64,
    /// The players of each game and their fresh scores.
    population: Population,
    /// Makes event ids unique to the run.
    nonce: u64,
}

impl WriteLoad {
    /// One writer: batches of one random game, closed-loop, until `until`; those begun from
    /// `measured_from` are counted. Writer `w` sends to node `w mod nodes`, or to the owner.
    /// Returns the batches counted, how many of them went to a node that does not own their
    /// game, and their latencies.
    async fn write(
        &self,
        writer: usize,
        measured_from: Instant,
        until: Instant,
    ) -> Result<(u64, u64, Histogram), String> {
        let mut conns = Vec::with_capacity(self.addrs.len());
        for addr in &self.addrs {
            conns.push(HttpConn::connect(addr, SERVICE_TOKEN).await?);
        }
        let mut rng = Rng::stream(self.population.seed ^ WRITE_STREAM, writer as u64);
        let (mut batches, mut forwarded, mut latency) = (0, 0, Histogram::new());
        let mut body = Vec::with_capacity(self.batch as usize * 200 + 16);
        let mut event_id = Vec::with_capacity(64);
        for sent in 0u64.. {
            let begun = Instant::now();
            if begun >= until {
                break;
            }
            let game = rng.below(self.games.len() as u64) as usize;
            body.clear();
            body.extend_from_slice(b"{\"events\":[");
            for i in 0..self.batch {
                if i > 0 {
                    body.push(b',');
                }
                event_id.clear();
                event_id.extend_from_slice(b"w-");
                for part in [self.nonce, writer as u64, sent, i] {
                    push_int(&mut event_id, part as i64);
                    event_id.push(b'-');
                }
                let member = rng.below(self.population.members);
                let standing = self.population.fresh_standing(&mut rng);
                bench::push_event_of(
                    &mut body,
                    self.games[game].as_bytes(),
                    &event_id,
                    member,
                    standing,
                );
            }
            body.extend_from_slice(b"]}");
            let node = if self.to_owner {
                self.owners[game]
            } else {
                writer % self.addrs.len()
            };
            let conn = &mut conns[node];
            let answer = conn.post("/v1/score-events/batch", &body).await?;
            let accepted = count(conn.body(&answer), b"\"ACCEPTED\"") as u64;
            if answer.status != 200 || accepted != self.batch {
                return Err(format!(
                    "a batch of {} answered {} with {accepted} of {} accepted: {}",
                    self.games[game],
                    answer.status,
                    self.batch,
                    conn.body_text(&answer)
                ));
            }
            if begun >= measured_from {
                latency.record(begun.elapsed());
                batches += 1;
                forwarded += u64::from(node != self.owners[game]);
            }
        }
        Ok((batches, forwarded, latency))
    }
}

fn print_writes(args: &Args, runs: &[Writes]) {
    println!();
    println!(
        "## Writes over one PostgreSQL: {} games, batches of {} events of one game, {} writers closed-loop, sent {}, standby {}, {}s ({}s warm-up); the machine has {} logical CPUs",
        args.games,
        args.write_batch,
        args.writers,
        if args.send_to == "owner" {
            "to the game's owner"
        } else {
            "to the nodes in turn"
        },
        args.writes_standby,
        args.common.seconds,
        args.common.warmup_seconds,
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    println!();
    println!(
        "| nodes (partitions owned) | events/s | ratio to 1 node | batch p50, p99 | forwarded | cores: each node | database backends, shared | generator, else | CPU per event: nodes (each) | database | all | idle cores before: nodes, database |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let one = runs.iter().find(|r| r.nodes == 1).map(Writes::rate);
    for r in runs {
        let n = r.nodes.max(1);
        let per = r.per_event();
        let nodes_us: f64 = per[..n].iter().sum();
        let database_us = per[n] + per[n + 1];
        let nodes = if r.nodes == 0 {
            "1, single-node mode (no `[cluster]`)".to_string()
        } else {
            format!(
                "{} ({})",
                r.nodes,
                r.owns.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
            )
        };
        println!(
            "| {nodes} | {} | {} | {}, {} | {:.0} % | {} | {:.2}, {:.2} | {:.2}, {:.2} | {nodes_us:.1} us ({}) | {database_us:.1} us | {:.1} us | {:.2}, {:.2} |",
            thousands(r.rate()),
            one.map_or_else(|| "".into(), |one| format!("{:.2}x", r.rate() / one)),
            fmt_latency(r.latency.quantile(0.5)),
            fmt_latency(r.latency.quantile(0.99)),
            100.0 * r.forwarded as f64 / r.batches.max(1) as f64,
            r.cpu.each[..n]
                .iter()
                .map(|c| format!("{c:.2}"))
                .collect::<Vec<_>>()
                .join(" + "),
            r.cpu.each[n],
            r.cpu.each[n + 1],
            r.cpu.generator,
            r.cpu.other,
            per[..n]
                .iter()
                .map(|us| format!("{us:.1}"))
                .collect::<Vec<_>>()
                .join(" + "),
            nodes_us + database_us,
            r.idle.each[..n].iter().sum::<f64>(),
            r.idle.each[n] + r.idle.each[n + 1],
        );
    }
    println!();
    println!(
        "The most cores busy outside the generator, the nodes and the database before a measurement: {:.2}.",
        runs.iter().map(|r| r.busy).fold(0.0, f64::max)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `loadgen cluster` followed by `line`, through the binary's whole command line.
    fn parse(line: &str) -> Result<Args, String> {
        let argv = std::iter::once("cluster".to_string()).chain(line.split_whitespace().map(String::from));
        match crate::parse_cli(argv)?.mode {
            Some(crate::Mode::Cluster(args)) => Ok(args),
            other => Err(format!("not the cluster mode: {other:?}")),
        }
    }

    /// The defaults are the figures, and the parts and node counts read as lists.
    #[test]
    fn defaults_and_lists() {
        let args = parse("").unwrap();
        assert_eq!(args.measure, [Part::Forwarding, Part::Takeover, Part::Writes]);
        assert_eq!(
            (args.partitions, args.lease_ttl_ms, args.takeover_members),
            (64, 3_000, 1_000_000)
        );
        assert_eq!(
            (args.nodes.as_slice(), args.games, args.write_batch),
            (&[0, 1, 2, 3][..], 64, 100)
        );
        assert!(args.writes_standby);
        let args =
            parse("--measure writes --nodes 2,3 --send-to owner --writes-standby false --members 5").unwrap();
        assert_eq!(
            (args.measure.as_slice(), args.nodes.as_slice()),
            (&[Part::Writes][..], &[2, 3][..])
        );
        assert_eq!(
            (args.send_to.as_str(), args.writes_standby, args.common.members),
            ("owner", false, 5)
        );
        for bad in [
            "--measure everything",
            "--nodes x",
            "--send-to edge",
            "--write-batch 1001",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    /// The copy of `partition_of` gives the origin's answers: its unit test's, and the
    /// partition of the board under test (41 of 64, which the runs check against the nodes).
    #[test]
    fn partitions_are_the_origins() {
        assert_eq!(partition_of("anything", 1), 0);
        assert_eq!(partition_of(GAME, 64), 41);
        let used: std::collections::BTreeSet<u32> =
            (0..1_000).map(|i| partition_of(&format!("g-{i}"), 64)).collect();
        assert_eq!(used.len(), 64);
        assert_eq!(schema_of(7), "standings_p0007");
    }
}
