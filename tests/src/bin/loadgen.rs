//! The load generator: Standings and Redis side by side, on the same members.
//!
//! One command starts its own `standings serve` on a fresh database, loads N players with a
//! skewed score distribution through the batch endpoint and into a Redis sorted set, checks that
//! both hold the same order, then measures, each for a fixed time over the same keep-alive
//! connections and the same random players: rank vs `ZREVRANK`, top-100 vs `ZREVRANGE 0 99`,
//! nearby vs rank-then-range, durable single submissions vs `ZADD`. It reports resident memory
//! per member, restarts the service and times it until ready, checks that the board's digest
//! survived the restart, kills it after `--crash-tail` more events and times the start from the
//! checkpoint and that tail, and times `standings rebuild` (the whole log replayed, as a start
//! without a checkpoint does) against the live digests. It exits non-zero on any HTTP or Redis error or any mismatch; targets
//! missed are results, not errors.
//!
//! ```text
//! cargo build --release -p standings-origin --bin standings
//! cargo run --release -p standings-tests --bin loadgen -- --members 10000000 --connections 64 --seconds 10
//! ```
//!
//! The clients are hand-written (HTTP/1.1 keep-alive and RESP) and run on one thread by
//! default, so the generator takes as little as possible of the CPU it shares with the server.
//!
//! `loadgen live` (module `live`) measures live subscriptions instead: SSE and WebSocket
//! subscribers on one board under a paced write load, beside the same fan-out through Redis
//! pub/sub (`loadgen live --help`).
//!
//! `loadgen edge` (module `edge`) measures the edge tier: a read mix through the edge worker
//! under `wrangler dev --local`, beside the same mix straight to the origin, on a board that
//! changes every second (`loadgen edge --help`).
//!
//! `loadgen closed` (module `closed`) measures reads of a closed day that left memory beside the
//! same reads of the live day: top, rank and the snapshot head (`loadgen closed --help`).
//!
//! `loadgen cluster` (module `cluster`) measures what several origins over one PostgreSQL cost:
//! forwarding to a partition's owner, a takeover with and without a warm standby, and write
//! throughput on 1, 2 and 3 nodes with the CPU per event of each (`loadgen cluster --help`).
//!
//! `loadgen feed` (module `feed`) measures writes with country segments and the feed on and
//! off, side by side on the same players, and the feed's webhook deliveries (`loadgen feed
//! --help`).
//!
//! `loadgen seeds` (module `seeds`) holds one board to the design documents' load: a write
//! spike above capacity beside rank, top and nearby reads and live views, the backlog's drain,
//! the digest against a rebuild, memory at rest and the restart, with Redis beside it
//! (`loadgen seeds --help`).
#![forbid(unsafe_code)]

// A binary's root looks for modules beside it; ours live in `loadgen/`.
#[path = "loadgen/bench.rs"]
mod bench;
#[path = "loadgen/closed.rs"]
mod closed;
#[path = "loadgen/cluster.rs"]
mod cluster;
#[path = "loadgen/cpu.rs"]
mod cpu;
#[path = "loadgen/edge.rs"]
mod edge;
#[path = "loadgen/feed.rs"]
mod feed;
#[path = "loadgen/live.rs"]
mod live;
#[path = "loadgen/names.rs"]
mod names;
#[path = "loadgen/pubsub.rs"]
mod pubsub;
#[path = "loadgen/resp.rs"]
mod resp;
#[path = "loadgen/scrape.rs"]
mod scrape;
#[path = "loadgen/seeds.rs"]
mod seeds;
#[path = "loadgen/subscribe.rs"]
mod subscribe;
#[path = "loadgen/writes.rs"]
mod writes;

// The HTTP client, the service under test, the latency histogram and the workload are shared
// with the other harnesses, so they live in the library.
use standings_tests::harness::{self, Options};
use standings_tests::{http, latency, service, workload};

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bench::{BOARD_PATH, EventIds, Measured, Plan, Side, Workload};
use service::{Database, SERVICE_TOKEN, Service};

/// The load generator: Standings and Redis side by side, on the same members. Without a mode it
/// loads both, checks they hold the same order, measures rank, top-100, nearby and durable
/// submissions against their Redis peers, then restarts, crashes and rebuilds the service.
#[derive(clap::Parser, Debug)]
#[command(name = "loadgen", args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    mode: Option<Mode>,
    #[command(flatten)]
    bench: Args,
}

/// The modes beside the default comparison with Redis.
#[derive(clap::Subcommand, Debug)]
enum Mode {
    /// Live subscriptions under load beside Redis pub/sub.
    Live(live::Args),
    /// Reads through the edge worker in local workerd beside the origin.
    Edge(edge::Args),
    /// Reads of a closed day that left memory beside the live day.
    Closed(closed::Args),
    /// Several origins over one PostgreSQL: forwarding, takeover, write throughput.
    Cluster(cluster::Args),
    /// Renames of players on a loaded board: latency, rate, versions, memory.
    Names(names::Args),
    /// Writes with country segments and the feed on and off, and webhook deliveries.
    Feed(feed::Args),
    /// The design documents' load on one board: a write spike beside reads and live views.
    Seeds(seeds::Args),
}

impl Options for Cli {
    fn check(&self) -> Result<(), String> {
        match &self.mode {
            None => Ok(()),
            Some(Mode::Live(args)) => args.check(),
            Some(Mode::Edge(args)) => args.check(),
            Some(Mode::Closed(_))
            | Some(Mode::Cluster(_))
            | Some(Mode::Names(_))
            | Some(Mode::Feed(_))
            | Some(Mode::Seeds(_)) => Ok(()),
        }
    }
}

/// The options of the default mode.
#[derive(clap::Args, Debug)]
struct Args {
    #[command(flatten)]
    common: Common,
    /// The event ids of the load: in member order (load-0, load-1, ...), random UUIDv4s as many
    /// game servers send them, or UUIDv7s (time first, so roughly in order).
    #[arg(long, value_name = "member|uuid4|uuid7", default_value = "member", value_parser = event_ids)]
    event_ids: EventIds,
    /// The service's database (SQLite in a fresh temp folder).
    #[arg(long, value_name = "DB", default_value = "sqlite", value_parser = ["sqlite", "postgres"])]
    database: String,
    /// The Redis peer (on 127.0.0.1).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:6379", value_parser = local_addr)]
    redis: String,
    /// Random players checked on both sides before measuring.
    #[arg(long, value_name = "N", default_value = "200")]
    samples: u64,
    /// After the restart, submit N more events (batches of --batch over --load-connections),
    /// kill the service with SIGKILL and time the start, which loads the checkpoint and replays
    /// those N log entries; 0 = skip. The default is the longest tail the service's default
    /// checkpoint_every_events of 1,000,000 leaves.
    #[arg(long, value_name = "N", default_value = "999000")]
    crash_tail: u64,
}

/// The options of the modes that load one board and measure reads and writes of it (the
/// default mode and `cluster`): its size, the measurements' shape, the service and its loading.
#[derive(clap::Args, Debug)]
struct Common {
    /// Players loaded (on both sides in the default mode).
    #[arg(long, value_name = "N", default_value = "100000", value_parser = harness::at_least_one::<u64>)]
    members: u64,
    /// Keep-alive connections per measurement.
    #[arg(long, value_name = "N", default_value = "64", value_parser = harness::at_least_one::<usize>)]
    connections: usize,
    /// Measured seconds per workload and side.
    #[arg(long, value_name = "S", default_value = "10", value_parser = harness::positive)]
    seconds: f64,
    /// Unmeasured seconds before each measurement.
    #[arg(long, value_name = "S", default_value = "1", value_parser = harness::non_negative)]
    warmup_seconds: f64,
    /// The score-range shards the board under test is split into (1: whole; default and
    /// seeds modes).
    #[arg(long, value_name = "N", default_value = "1", value_parser = clap::value_parser!(u16).range(1..=64))]
    shards: u16,
    /// Concurrent batch uploads while loading.
    #[arg(long, value_name = "N", default_value = "8", value_parser = harness::at_least_one::<usize>)]
    load_connections: usize,
    /// Events per batch request and members per ZADD (1 to 1000, the service's batch limit).
    #[arg(long, value_name = "N", default_value = "1000", value_parser = batch_size)]
    batch: u64,
    /// The service binary.
    #[arg(long, value_name = "PATH", default_value = "target/release/standings")]
    standings_bin: PathBuf,
    /// An existing database to create ours from (on 127.0.0.1).
    #[arg(long, value_name = "URL", default_value = "postgres://postgres@127.0.0.1:5432/test", value_parser = local_postgres)]
    postgres_url: String,
    /// Before each measurement, wait up to S seconds for the machine to be quiet (< 0.2 cores
    /// busy outside the generator); 0 = do not wait.
    #[arg(long = "quiet-wait-seconds", value_name = "S", default_value = "120", value_parser = harness::seconds)]
    quiet_wait: Duration,
    #[command(flatten)]
    run: Run,
}

/// The options of every mode that starts its own service: the generator's runtime and draws,
/// and the service's time limits and temp folder.
#[derive(clap::Args, Debug)]
pub(crate) struct Run {
    /// The generator's threads; 1 = a current-thread runtime.
    #[arg(long, value_name = "N", default_value = "1", value_parser = harness::at_least_one::<usize>)]
    pub(crate) client_threads: usize,
    /// The seed of every draw.
    #[arg(long, value_name = "N", default_value = "1")]
    pub(crate) seed: u64,
    /// How long a start may take.
    #[arg(long = "ready-timeout-seconds", value_name = "S", default_value = "600", value_parser = harness::seconds)]
    pub(crate) ready_timeout: Duration,
    /// How long loading (or seeding) the service may take.
    #[arg(long = "load-timeout-seconds", value_name = "S", default_value = "7200", value_parser = harness::seconds)]
    pub(crate) load_timeout: Duration,
    /// Keep the temp folder (config, logs, database).
    #[arg(long)]
    pub(crate) keep: bool,
}

/// Where a mode's own service runs and how its board is loaded.
#[derive(clap::Args, Debug)]
pub(crate) struct Served {
    /// The service's database.
    #[arg(long, value_name = "DB", default_value = "sqlite", value_parser = ["sqlite", "postgres"])]
    pub(crate) database: String,
    /// A URL of an existing PostgreSQL database on 127.0.0.1, to create and drop the run's own
    /// from.
    #[arg(long, value_name = "URL", default_value = "postgres://postgres@127.0.0.1:5432/test", value_parser = local_postgres)]
    pub(crate) postgres_url: String,
    /// Concurrent batch uploads while loading.
    #[arg(long, value_name = "N", default_value = "8", value_parser = harness::at_least_one::<usize>)]
    pub(crate) load_connections: usize,
    /// Events per batch request (1 to 1000).
    #[arg(long, value_name = "N", default_value = "1000", value_parser = batch_size)]
    pub(crate) batch: u64,
    /// The service binary.
    #[arg(long, value_name = "PATH", default_value = "target/release/standings")]
    pub(crate) standings_bin: PathBuf,
}

impl Served {
    /// The database a run's service `tag` gets: SQLite in its folder, or a PostgreSQL database
    /// of its own.
    pub(crate) fn database(&self, tag: &str) -> service::Database {
        if self.database == "postgres" {
            service::Database::Postgres {
                admin_url: self.postgres_url.clone(),
                name: format!("standings_loadgen_{tag}_{}", std::process::id()),
            }
        } else {
            service::Database::Sqlite
        }
    }

    /// Loads every member of `plan` through the batch endpoint; the time it took.
    pub(crate) async fn load(&self, plan: &Arc<bench::Plan>, run: &Run) -> Result<Duration, String> {
        bench::load_standings(plan, self.batch, self.load_connections, run.load_timeout).await
    }
}

/// `--batch`: 1 to 1000, the service's batch limit.
pub(crate) fn batch_size(value: &str) -> Result<u64, String> {
    match value.parse::<u64>() {
        Ok(n) if (1..=1_000).contains(&n) => Ok(n),
        _ => Err("must be 1 to 1000 (the service's batch limit)".into()),
    }
}

/// `--event-ids`.
fn event_ids(value: &str) -> Result<EventIds, String> {
    EventIds::parse(value).ok_or_else(|| "must be member, uuid4 or uuid7".into())
}

/// An address on 127.0.0.1: the generator talks to nothing else.
pub(crate) fn local_addr(value: &str) -> Result<String, String> {
    if value.starts_with("127.0.0.1:") {
        Ok(value.to_string())
    } else {
        Err("the generator only talks to 127.0.0.1".into())
    }
}

/// `--postgres-url`, which must point at 127.0.0.1.
pub(crate) fn local_postgres(value: &str) -> Result<String, String> {
    if value.contains("@127.0.0.1") {
        Ok(value.to_string())
    } else {
        Err("must point at 127.0.0.1".into())
    }
}

fn main() -> ExitCode {
    let cli: Cli = harness::options();
    match &cli.mode {
        None => harness::block_on("loadgen", cli.bench.common.run.client_threads, async {
            run(&cli.bench).await.map(|()| None)
        }),
        Some(Mode::Live(args)) => harness::block_on("loadgen live", args.run.client_threads, async {
            live::run(args).await.map(|()| None)
        }),
        Some(Mode::Edge(args)) => harness::block_on("loadgen edge", args.run.client_threads, async {
            edge::run(args).await.map(|()| None)
        }),
        Some(Mode::Closed(args)) => harness::block_on("loadgen closed", args.run.client_threads, async {
            closed::run(args).await.map(|()| None)
        }),
        Some(Mode::Cluster(args)) => {
            harness::block_on("loadgen cluster", args.common.run.client_threads, async {
                cluster::run(args).await.map(|()| None)
            })
        }
        Some(Mode::Names(args)) => harness::block_on("loadgen names", args.run.client_threads, async {
            names::run(args).await.map(|()| None)
        }),
        Some(Mode::Feed(args)) => harness::block_on("loadgen feed", args.run.client_threads, async {
            feed::run(args).await.map(|()| None)
        }),
        Some(Mode::Seeds(args)) => {
            harness::block_on("loadgen seeds", args.common.run.client_threads, async {
                seeds::run(args).await.map(|()| None)
            })
        }
    }
}

/// [`harness::try_options`] for the unit tests: `argv` without the program's name.
#[cfg(test)]
fn parse_cli(argv: impl IntoIterator<Item = String>) -> Result<Cli, String> {
    harness::try_options(std::iter::once("loadgen".to_string()).chain(argv))
}

/// How long after the last batch resident memory is read "at rest": past the origin's 2 s of
/// writer idleness before it releases memory.
const REST_AFTER_LOAD: Duration = Duration::from_secs(4);

/// The figures of a whole run.
struct Report {
    members: u64,
    load: Duration,
    redis_load: Duration,
    pairs: Vec<(Workload, Measured, Measured)>,
    rss_empty: u64,
    rss_loaded: u64,
    rss_rested: u64,
    hwm_loaded: u64,
    rss_restarted: u64,
    redis_used: u64,
    load_cpu: cpu::Usage,
    first_ready: Duration,
    restart_ready: Duration,
    /// The start after a SIGKILL: the checkpoint, then the tail of the log after it.
    crash: Option<Crash>,
    /// `standings rebuild`: the whole log replayed, as a start without a checkpoint does.
    replay: Duration,
    stop_took: Duration,
    digest_took: Duration,
    digest: String,
    database_bytes: Option<u64>,
}

async fn run(args: &Args) -> Result<(), String> {
    let population = workload::Population::new(args.common.members, args.common.run.seed)?;
    // One key per run, so two generators on one machine never delete each other's set.
    let redis_key = format!("standings-loadgen:{}:loadgen/bench/s1/global", std::process::id()).into_bytes();
    let database = if args.database == "postgres" {
        Database::Postgres {
            admin_url: args.common.postgres_url.clone(),
            name: format!("standings_loadgen_{}", std::process::id()),
        }
    } else {
        Database::Sqlite
    };
    let mut service = Service::prepare(&args.common.standings_bin, database, args.common.run.keep)?;
    eprintln!(
        "loadgen: {} members, {} connections, {}s per measurement; service on {} ({}), Redis on {}",
        args.common.members,
        args.common.connections,
        args.common.seconds,
        service.addr,
        service.database_url(),
        args.redis
    );
    let plan = Arc::new(Plan {
        population,
        standings_addr: service.addr.clone(),
        redis_addr: args.redis.clone(),
        redis_key,
        connections: args.common.connections,
        warmup: Duration::from_secs_f64(args.common.warmup_seconds),
        measure: Duration::from_secs_f64(args.common.seconds),
        event_ids: args.event_ids,
        nonce: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
    });
    let result = measure_all(args, &plan, &mut service).await;
    // Leave Redis as we found it, whatever happened.
    if let Err(e) = bench::redis_delete(&plan.redis_addr, &plan.redis_key).await {
        eprintln!("loadgen: cannot delete the Redis key: {e}");
    }
    let report = result.inspect_err(|_| eprintln!("loadgen: {}", service.log_tail()))?;
    if let Err(e) = service.stop(Duration::from_secs(60)) {
        eprintln!("loadgen: {e}");
    }
    print_report(args, &report);
    Ok(())
}

async fn measure_all(args: &Args, plan: &Arc<Plan>, service: &mut Service) -> Result<Report, String> {
    let members = args.common.members;
    bench::redis_delete(&plan.redis_addr, &plan.redis_key).await?;
    let redis_used_before = bench::redis_used_memory(&plan.redis_addr).await?;

    let Loaded {
        first_ready,
        rss_empty,
        watched,
        load,
        load_cpu,
    } = start_and_load(&args.common, plan, service, "loadgen").await?;
    let (rss_loaded, hwm_loaded) = service.resident()?;
    let loaded_at = Instant::now();
    eprintln!(
        "loadgen: Standings loaded in {load:.2?} = {:.0} events/s; VmRSS {} MiB",
        members as f64 / load.as_secs_f64(),
        rss_loaded >> 20
    );

    eprintln!(
        "loadgen: loading {members} members into Redis (pipelined ZADD of {})",
        args.common.batch
    );
    let redis_load = bench::load_redis(plan, args.common.batch).await?;
    let redis_used_after = bench::redis_used_memory(&plan.redis_addr).await?;
    eprintln!(
        "loadgen: Redis loaded in {redis_load:.2?} = {:.0} members/s; used_memory +{} MiB",
        members as f64 / redis_load.as_secs_f64(),
        redis_used_after.saturating_sub(redis_used_before) >> 20
    );

    bench::verify_same_order(plan, args.samples).await?;
    eprintln!(
        "loadgen: both sides hold the same order (top 100, and rank, value and neighbours of {} random players)",
        args.samples
    );
    // At rest: the writer hands back its page cache and trims the heap 2 s after its last
    // write (origin `rest`); reads since then do not count as writes.
    tokio::time::sleep(REST_AFTER_LOAD.saturating_sub(loaded_at.elapsed())).await;
    let (rss_rested, _) = service.resident()?;
    eprintln!(
        "loadgen: VmRSS {} MiB at rest, {:.1?} after the last batch",
        rss_rested >> 20,
        loaded_at.elapsed()
    );

    let mut pairs = Vec::new();
    for workload in Workload::ALL {
        if !args.common.quiet_wait.is_zero() {
            let (waited, busy) = cpu::wait_quiet(watched, 0.2, args.common.quiet_wait).await;
            eprintln!(
                "loadgen: {workload:?}: waited {waited:.1?} for a quiet machine ({busy:.2} cores busy outside the generator)"
            );
        }
        let standings = bench::measure(plan, Side::Standings, workload, &watched).await?;
        let redis = bench::measure(plan, Side::Redis, workload, &watched).await?;
        eprintln!(
            "loadgen: {workload:?}: standings {:.0} ops/s (p50 {}, p99 {}; CPU: service {:.2}, other {:.2}), \
             redis {:.0} ops/s (p50 {}, p99 {}; CPU: redis {:.2}, other {:.2})",
            standings.throughput(),
            fmt_latency(standings.latency.quantile(0.5)),
            fmt_latency(standings.latency.quantile(0.99)),
            standings.cpu.standings,
            standings.cpu.other,
            redis.throughput(),
            fmt_latency(redis.latency.quantile(0.5)),
            fmt_latency(redis.latency.quantile(0.99)),
            redis.cpu.redis,
            redis.cpu.other,
        );
        pairs.push((workload, standings, redis));
    }

    let before = board_digest(&service.addr).await?;
    if !args.common.quiet_wait.is_zero() {
        let (waited, busy) = cpu::wait_quiet(watched, 0.2, args.common.quiet_wait).await;
        eprintln!(
            "loadgen: restart: waited {waited:.1?} for a quiet machine ({busy:.2} cores busy outside the generator)"
        );
    }
    eprintln!("loadgen: restarting the service (SIGINT, then start on the same database)");
    let stop_started = Instant::now();
    service.stop(Duration::from_secs(120))?;
    let stop_took = stop_started.elapsed();
    eprintln!("loadgen: the service stopped {stop_took:.2?} after SIGINT (it writes a checkpoint)");
    let database_bytes = service.database_bytes();
    let restart_ready = service.start(args.common.run.ready_timeout).await?;
    let digest_started = Instant::now();
    let after = board_digest(&service.addr).await?;
    let digest_took = digest_started.elapsed();
    let (rss_restarted, _) = service.resident()?;
    if before.digest != after.digest || before.total_players != after.total_players {
        return Err(format!(
            "the board changed across the restart: before {} players, digest {}; after {} players, digest {}",
            before.total_players, before.digest, after.total_players, after.digest
        ));
    }
    if before.version != after.version {
        eprintln!(
            "loadgen: note: board_version {} before the restart, {} after (the digest matches)",
            before.version, after.version
        );
    }
    eprintln!(
        "loadgen: ready {restart_ready:.2?} after the restart; digest {} matches ({} players)",
        after.digest, after.total_players
    );
    let crash = if args.crash_tail > 0 {
        Some(crash(args, plan, service).await?)
    } else {
        None
    };
    eprintln!("loadgen: replaying the whole log with `standings rebuild` beside the service");
    let replay = service.rebuild()?;
    eprintln!("loadgen: the rebuild took {replay:.2?}; every board matches the live one");
    Ok(Report {
        members,
        load,
        redis_load,
        pairs,
        rss_empty,
        rss_loaded,
        rss_rested,
        hwm_loaded,
        rss_restarted,
        redis_used: redis_used_after.saturating_sub(redis_used_before),
        load_cpu,
        first_ready,
        restart_ready,
        crash,
        replay,
        stop_took,
        digest_took,
        digest: after.digest,
        database_bytes,
    })
}

/// What starting the service on its fresh database and loading the population took.
struct Loaded {
    first_ready: Duration,
    /// VmRSS with the board defined and empty.
    rss_empty: u64,
    /// The processes whose CPU the measurements tell apart.
    watched: cpu::Watched,
    load: Duration,
    load_cpu: cpu::Usage,
}

/// Starts the service, defines the board under test and loads every member through the batch
/// endpoint (`who` names the mode in the progress lines).
async fn start_and_load(
    common: &Common,
    plan: &Arc<Plan>,
    service: &mut Service,
    who: &str,
) -> Result<Loaded, String> {
    let first_ready = service.start(common.run.ready_timeout).await?;
    bench::define_split_board(&service.addr, common.shards).await?;
    let (rss_empty, _) = service.resident()?;
    let watched = cpu::Watched {
        standings: service.pid().ok_or("the service is not running")?,
        redis: bench::redis_pid(&plan.redis_addr).await?,
    };
    eprintln!(
        "{who}: loading {} members into Standings (batches of {})",
        common.members, common.batch
    );
    let load_from = cpu::Snapshot::take(watched);
    let load = bench::load_standings(
        plan,
        common.batch,
        common.load_connections,
        common.run.load_timeout,
    )
    .await?;
    let load_cpu = load_from.until(&cpu::Snapshot::take(watched));
    Ok(Loaded {
        first_ready,
        rss_empty,
        watched,
        load,
        load_cpu,
    })
}

/// A crash with a known tail of the log after the checkpoint.
struct Crash {
    /// Events submitted after the restart, then left in the log for the start to replay.
    tail: u64,
    /// How long submitting them took.
    submitted_in: Duration,
    /// SIGKILL to ready.
    ready: Duration,
    /// How the service says it restored its boards.
    restored: String,
}

/// Submits `--crash-tail` events after the restart (which left a checkpoint as of the log's
/// end), kills the service with SIGKILL and times the start, which must reach the digest the
/// service had.
async fn crash(args: &Args, plan: &Arc<Plan>, service: &mut Service) -> Result<Crash, String> {
    let tail = args.crash_tail;
    eprintln!("loadgen: submitting {tail} more events, then SIGKILL");
    let submitted_in = bench::post_batches(
        plan,
        bench::Batches::Tail(tail),
        args.common.batch,
        args.common.load_connections,
        args.common.run.load_timeout,
    )
    .await?;
    let before = board_digest(&service.addr).await?;
    service.kill()?;
    let ready = service.start(args.common.run.ready_timeout).await?;
    let after = board_digest(&service.addr).await?;
    if before.digest != after.digest || before.total_players != after.total_players {
        return Err(format!(
            "the board changed across the crash: before {} players, digest {}; after {} players, digest {}",
            before.total_players, before.digest, after.total_players, after.digest
        ));
    }
    let restored = restored_line(service);
    eprintln!(
        "loadgen: ready {ready:.2?} after the SIGKILL ({restored}); digest {} matches ({} players)",
        after.digest, after.total_players
    );
    Ok(Crash {
        tail,
        submitted_in,
        ready,
        restored,
    })
}

/// How the service says its last start restored its boards, from its line "... boards ready in
/// 1.2s, from the checkpoint at seq N and K log entries after it; config ...".
fn restored_line(service: &Service) -> String {
    service
        .log()
        .lines()
        .rev()
        .find_map(|line| line.split_once(" ready in ").map(|(_, rest)| rest.to_string()))
        .and_then(|rest| rest.split_once("; config").map(|(how, _)| how.to_string()))
        .unwrap_or_else(|| "(not in the service log)".into())
}

/// The digest endpoint's answer.
struct BoardDigest {
    version: u64,
    total_players: u64,
    digest: String,
}

async fn board_digest(addr: &str) -> Result<BoardDigest, String> {
    let mut conn = http::HttpConn::connect(addr, SERVICE_TOKEN).await?;
    let answer = conn.get(&format!("{BOARD_PATH}/digest")).await?;
    if answer.status != 200 {
        return Err(format!(
            "digest answered {}: {}",
            answer.status,
            conn.body_text(&answer)
        ));
    }
    let value: serde_json::Value =
        serde_json::from_slice(conn.body(&answer)).map_err(|e| format!("digest is not JSON: {e}"))?;
    Ok(BoardDigest {
        version: value["board_version"]
            .as_u64()
            .ok_or("digest has no board_version")?,
        total_players: value["total_players"]
            .as_u64()
            .ok_or("digest has no total_players")?,
        digest: value["digest"]
            .as_str()
            .ok_or("digest has no digest")?
            .to_string(),
    })
}

fn fmt_latency(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1_000.0 {
        format!("{us:.0} us")
    } else {
        format!("{:.2} ms", us / 1_000.0)
    }
}

/// `12,345,678`.
fn thousands(n: f64) -> String {
    let digits = format!("{:.0}", n.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "NOT met" }
}

/// The verdict of a target stated for 10 million members.
fn verdict_at_scale(members: u64, met: bool) -> &'static str {
    if members < 10_000_000 {
        "n/a below 10M"
    } else {
        verdict(met)
    }
}

fn print_report(args: &Args, r: &Report) {
    let n = r.members as f64;
    println!();
    println!(
        "## Standings vs Redis: {} members, {} connections, {}s per measurement ({}s warm-up), {} client thread(s), {}",
        thousands(n),
        args.common.connections,
        args.common.seconds,
        args.common.warmup_seconds,
        args.common.run.client_threads,
        args.database
    );
    println!();
    println!(
        "| workload | standings ops/s | p50 | p99 | redis ops/s | p50 | p99 | standings/redis | target | verdict |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (workload, standings, redis) in &r.pairs {
        let ratio = standings.throughput() / redis.throughput();
        let p99 = standings.latency.quantile(0.99);
        let (target, met) = match workload {
            Workload::Rank => (
                ">= 1.5x, p99 <= 3 ms",
                ratio >= 1.5 && p99 <= Duration::from_millis(3),
            ),
            Workload::Top => (">= 2.5x", ratio >= 2.5),
            Workload::Nearby => (">= 3x", ratio >= 3.0),
            Workload::Submit => (">= 2x", ratio >= 2.0),
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {ratio:.2}x | {target} | {} |",
            workload_name(*workload),
            thousands(standings.throughput()),
            fmt_latency(standings.latency.quantile(0.5)),
            fmt_latency(p99),
            thousands(redis.throughput()),
            fmt_latency(redis.latency.quantile(0.5)),
            fmt_latency(redis.latency.quantile(0.99)),
            verdict(met),
        );
    }
    let ingest = n / r.load.as_secs_f64();
    let redis_ingest = n / r.redis_load.as_secs_f64();
    println!(
        "| batch ingest, {} per request, {} connections, {} (events/s) | {} | | | {} (pipelined ZADD, not durable) | | | {:.2}x | >= 200,000 events/s | {} |",
        args.common.batch,
        args.common.load_connections,
        args.event_ids.describe(),
        thousands(ingest),
        thousands(redis_ingest),
        ingest / redis_ingest,
        verdict(ingest >= 200_000.0),
    );
    let per_member = r.rss_rested as f64 / n;
    let redis_per_member = r.redis_used as f64 / n;
    println!(
        "| resident memory (bytes/member) | {per_member:.1} (VmRSS at rest after loading; {:.1} right after the last batch) | | | {redis_per_member:.1} (used_memory delta) | | | {:.2}x | <= 64 at 10M | {} |",
        r.rss_loaded as f64 / n,
        per_member / redis_per_member,
        verdict_at_scale(r.members, per_member <= 64.0),
    );
    println!(
        "| restart until ready | {:.2} s | | | | | | | <= 10 s at 10M | {} |",
        r.restart_ready.as_secs_f64(),
        verdict_at_scale(r.members, r.restart_ready <= Duration::from_secs(10)),
    );
    if let Some(c) = &r.crash {
        println!(
            "| start after a SIGKILL, {} log entries after the checkpoint | {:.2} s | | | | | | | (no target) | |",
            thousands(c.tail as f64),
            c.ready.as_secs_f64(),
        );
    }
    println!();
    println!(
        "CPU used during each measured window, in cores (the machine has {} logical CPUs):",
        cpus()
    );
    println!();
    println!("| measurement | standings | redis | loadgen | everything else |");
    println!("| --- | --- | --- | --- | --- |");
    let row = |name: &str, cpu: &cpu::Usage| {
        println!(
            "| {name} | {:.2} | {:.2} | {:.2} | {:.2} |",
            cpu.standings, cpu.redis, cpu.generator, cpu.other
        );
    };
    row("batch ingest (standings)", &r.load_cpu);
    for (workload, standings, redis) in &r.pairs {
        row(
            &format!("{} (standings side)", workload_name(*workload)),
            &standings.cpu,
        );
        row(&format!("{} (redis side)", workload_name(*workload)), &redis.cpu);
    }
    println!();
    println!(
        "Loading: Standings {:.2} s for {} events through the batch endpoint; Redis {:.2} s.",
        r.load.as_secs_f64(),
        thousands(n),
        r.redis_load.as_secs_f64()
    );
    println!(
        "Memory: Standings VmRSS {} MiB right after loading, {} MiB at rest (peak VmHWM {} MiB; {} MiB \
         with the empty board), {} MiB after the restart ({:.1} bytes/member); Redis used_memory +{} MiB.",
        r.rss_loaded >> 20,
        r.rss_rested >> 20,
        r.hwm_loaded >> 20,
        r.rss_empty >> 20,
        r.rss_restarted >> 20,
        r.rss_restarted as f64 / n,
        r.redis_used >> 20,
    );
    println!(
        "Restart: the stop took {:.2} s (finishing requests, writing the checkpoint); ready {:.2} s \
         after start on the loaded database (first start, empty: {:.2} s); the digest ({:.2} s to \
         compute) matches: {}.{}",
        r.stop_took.as_secs_f64(),
        r.restart_ready.as_secs_f64(),
        r.first_ready.as_secs_f64(),
        r.digest_took.as_secs_f64(),
        r.digest,
        r.database_bytes
            .map(|b| format!(" SQLite files: {} MiB.", b >> 20))
            .unwrap_or_default()
    );
    if let Some(c) = &r.crash {
        println!(
            "Crash: after the restart, {} more events (submitted in {:.2} s), then SIGKILL: ready {:.2} s after \
             the start (the service: \"ready in {}\"); the digest matches.",
            thousands(c.tail as f64),
            c.submitted_in.as_secs_f64(),
            c.ready.as_secs_f64(),
            c.restored,
        );
    }
    println!(
        "Replay: `standings rebuild` read and applied the whole log ({} loaded events, then the measured submissions and any crash tail) in {:.2} s \
         beside the running service, as a start without a checkpoint (after a crash) does; every \
         board's digest matches the live one.",
        thousands(n),
        r.replay.as_secs_f64(),
    );
}

fn workload_name(workload: Workload) -> &'static str {
    match workload {
        Workload::Rank => "rank vs ZREVRANK",
        Workload::Top => "top-100 vs ZREVRANGE 0 99 WITHSCORES",
        Workload::Nearby => "nearby r=5 vs ZREVRANK + ZREVRANGE",
        Workload::Submit => "durable single submission vs ZADD GT",
    }
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(0, usize::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Cli, String> {
        parse_cli(line.split_whitespace().map(String::from))
    }

    /// The command lines BENCHMARKS.md, docs/ and the module docs show parse, with their
    /// meanings, in the default mode and in each other mode.
    #[test]
    fn the_documented_command_lines_parse() {
        let bench = |line: &str| match parse(line).unwrap() {
            Cli { mode: None, bench } => bench,
            other => panic!("{line}: not the default mode: {other:?}"),
        };
        let args = bench("--members 10000000 --connections 64 --seconds 10");
        assert_eq!(
            (args.common.members, args.common.connections, args.common.seconds),
            (10_000_000, 64, 10.0)
        );
        assert_eq!(
            (args.crash_tail, args.event_ids, args.database.as_str()),
            (999_000, EventIds::Member, "sqlite")
        );
        let args = bench(
            "--members 3000000 --event-ids uuid4 --seconds 1 --warmup-seconds 0 --quiet-wait-seconds 0",
        );
        assert_eq!(
            (args.event_ids, args.common.warmup_seconds, args.common.quiet_wait),
            (EventIds::Uuid4, 0.0, Duration::ZERO)
        );
        let args =
            bench("--standings-bin BIN --members 1000000 --connections 64 --seconds 10 --crash-tail 0");
        assert_eq!(
            (args.common.standings_bin.to_str(), args.crash_tail),
            (Some("BIN"), 0)
        );
        assert_eq!(bench("--database postgres --keep").database, "postgres");
        let Some(Mode::Live(live)) = parse("live --standings-bin target/release/standings --seconds 20")
            .unwrap()
            .mode
        else {
            panic!("not the live mode");
        };
        assert_eq!(live.run.client_threads, 1);
        let Some(Mode::Edge(edge)) = parse(
            "edge --standings-bin target/release/standings --connections 1 --asking-players 100 --seconds 20",
        )
        .unwrap()
        .mode
        else {
            panic!("not the edge mode");
        };
        assert!(edge.check().is_ok());
        assert!(matches!(
            parse("closed --no-restart").unwrap().mode,
            Some(Mode::Closed(_))
        ));
        let Some(Mode::Names(names)) =
            parse("names --members 1000000 --renames 2000 --connections 8 --database postgres")
                .unwrap()
                .mode
        else {
            panic!("not the names mode");
        };
        assert_eq!((names.run.seed, names.run.keep), (1, false));
        let Some(Mode::Seeds(seeds)) = parse(
            "seeds --members 50000000 --spike-seconds 60 --offered-rate 300000 --around-views 2000 --top-watchers 2000",
        )
        .unwrap()
        .mode
        else {
            panic!("not the seeds mode");
        };
        assert_eq!(seeds.common.members, 50_000_000);
    }

    /// The hand-written parser's refusals stay refusals: a bad value, a flag of another mode, a
    /// default-mode flag before a mode, and the limits each mode checks across flags.
    #[test]
    fn refusals_stay() {
        for line in [
            "--members 0",
            "--batch 1001",
            "--event-ids uuid",
            "--database mysql",
            "--redis 10.0.0.1:6379",
            "--postgres-url postgres://postgres@db:5432/test",
            "--seconds 0",
            "--subscribers 5",
            "--members 5 live",
            "edge --members 10 --friend-lists 11",
            "closed --crash-tail 1",
            "names --postgres-url postgres://postgres@db:5432/test",
            "seeds --single-share 1.5",
            "seeds --spike-batch 1001",
        ] {
            assert!(parse(line).is_err(), "{line}");
        }
    }

    /// `--help` answers for the generator and for each mode, with the mode's own flags.
    #[test]
    fn help_names_each_modes_flags() {
        for (line, flag) in [
            ("--help", "--crash-tail"),
            ("live --help", "--live-config"),
            ("edge --help", "--asking-players"),
            ("closed --help", "--close-after-seconds"),
            ("cluster --help", "--takeover-tail"),
            ("names --help", "--renames"),
            ("seeds --help", "--offered-rate"),
        ] {
            let help = parse(line).unwrap_err();
            assert!(help.contains(flag), "{line}: {help}");
        }
        assert!(parse("--help").unwrap_err().contains("live"));
    }
}
