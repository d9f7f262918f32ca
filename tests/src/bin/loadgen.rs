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
#![forbid(unsafe_code)]

// A binary's root looks for modules beside it; ours live in `loadgen/`.
#[path = "loadgen/bench.rs"]
mod bench;
#[path = "loadgen/closed.rs"]
mod closed;
#[path = "loadgen/cpu.rs"]
mod cpu;
#[path = "loadgen/edge.rs"]
mod edge;
#[path = "loadgen/live.rs"]
mod live;
#[path = "loadgen/pubsub.rs"]
mod pubsub;
#[path = "loadgen/resp.rs"]
mod resp;
#[path = "loadgen/scrape.rs"]
mod scrape;
#[path = "loadgen/subscribe.rs"]
mod subscribe;
#[path = "loadgen/writes.rs"]
mod writes;

// The HTTP client, the service under test, the latency histogram and the workload are shared
// with the other harnesses, so they live in the library.
use standings_tests::{http, latency, service, workload};

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bench::{BOARD_PATH, EventIds, Measured, Plan, Side, Workload};
use service::{Database, SERVICE_TOKEN, Service};

const USAGE: &str = "\
usage: loadgen [options]
       loadgen live [options]   live subscriptions under load beside Redis pub/sub
                                (`loadgen live --help`)
       loadgen edge [options]   reads through the edge worker in local workerd beside the
                                origin (`loadgen edge --help`)
       loadgen closed [options] reads of a closed day that left memory beside the live day
                                (`loadgen closed --help`)
  --members N               players loaded on both sides (default 100000)
  --connections N           keep-alive connections per measurement (default 64)
  --seconds S               measured seconds per workload and side (default 10)
  --warmup-seconds S        unmeasured seconds before each measurement (default 1)
  --load-connections N      concurrent batch uploads while loading (default 8)
  --batch N                 events per batch request and members per ZADD (default 1000)
  --event-ids member|uuid4|uuid7
                            the event ids of the load: in member order (load-0, load-1, ...;
                            the default), random UUIDv4s as many game servers send them, or
                            UUIDv7s (time first, so roughly in order)
  --standings-bin PATH      the service binary (default target/release/standings)
  --database sqlite|postgres  the service's database (default sqlite, in a fresh temp folder)
  --postgres-url URL        an existing database to create ours from
                            (default postgres://postgres@127.0.0.1:5432/test)
  --redis ADDR              the Redis peer (default 127.0.0.1:6379)
  --client-threads N        the generator's threads; 1 = a current-thread runtime (default 1)
  --samples N               random players checked on both sides before measuring (default 200)
  --seed N                  the seed of every draw (default 1)
  --ready-timeout-seconds S how long a start may take (default 600)
  --load-timeout-seconds S  how long loading the service may take (default 7200)
  --quiet-wait-seconds S    before each measurement, wait up to S seconds for the machine to be
                            quiet (< 0.2 cores busy outside the generator); 0 = do not wait
                            (default 120)
  --crash-tail N            after the restart, submit N more events (batches of --batch over
                            --load-connections), kill the service with SIGKILL and time the
                            start, which loads the checkpoint and replays those N log entries;
                            0 = skip (default 999000: the longest tail the service's default
                            checkpoint_every_events of 1,000,000 leaves)
  --keep                    keep the temp folder (config, log, SQLite file)";

/// The command line.
struct Args {
    members: u64,
    connections: usize,
    seconds: f64,
    warmup_seconds: f64,
    load_connections: usize,
    batch: u64,
    standings_bin: PathBuf,
    database: String,
    postgres_url: String,
    redis: String,
    client_threads: usize,
    samples: u64,
    seed: u64,
    ready_timeout: Duration,
    load_timeout: Duration,
    quiet_wait: Duration,
    keep: bool,
    event_ids: EventIds,
    crash_tail: u64,
}

fn parse_args(raw: Vec<String>) -> Result<Args, String> {
    let mut args = Args {
        members: 100_000,
        connections: 64,
        seconds: 10.0,
        warmup_seconds: 1.0,
        load_connections: 8,
        batch: 1_000,
        standings_bin: PathBuf::from("target/release/standings"),
        database: "sqlite".into(),
        postgres_url: "postgres://postgres@127.0.0.1:5432/test".into(),
        redis: "127.0.0.1:6379".into(),
        client_threads: 1,
        samples: 200,
        seed: 1,
        ready_timeout: Duration::from_secs(600),
        load_timeout: Duration::from_secs(7200),
        quiet_wait: Duration::from_secs(120),
        keep: false,
        event_ids: EventIds::Member,
        crash_tail: 999_000,
    };
    let mut iter = raw.into_iter();
    while let Some(flag) = iter.next() {
        if flag == "--keep" {
            args.keep = true;
            continue;
        }
        if flag == "-h" || flag == "--help" {
            return Err(String::new());
        }
        let value = iter.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag} {v:?} is not a number"))
        };
        let seconds = |v: &str| {
            v.parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .ok_or_else(|| format!("{flag} {v:?} is not a number of seconds"))
        };
        match flag.as_str() {
            "--members" => args.members = number(&value)?,
            "--connections" => args.connections = number(&value)? as usize,
            "--seconds" => args.seconds = seconds(&value)?,
            "--warmup-seconds" => args.warmup_seconds = seconds(&value)?,
            "--load-connections" => args.load_connections = number(&value)? as usize,
            "--batch" => args.batch = number(&value)?,
            "--event-ids" => {
                args.event_ids = EventIds::parse(&value)
                    .ok_or_else(|| format!("--event-ids {value:?} must be member, uuid4 or uuid7"))?
            }
            "--standings-bin" => args.standings_bin = value.into(),
            "--database" => args.database = value,
            "--postgres-url" => args.postgres_url = value,
            "--redis" => args.redis = value,
            "--client-threads" => args.client_threads = number(&value)? as usize,
            "--samples" => args.samples = number(&value)?,
            "--crash-tail" => args.crash_tail = number(&value)?,
            "--seed" => args.seed = number(&value)?,
            "--ready-timeout-seconds" => args.ready_timeout = Duration::from_secs_f64(seconds(&value)?),
            "--load-timeout-seconds" => args.load_timeout = Duration::from_secs_f64(seconds(&value)?),
            "--quiet-wait-seconds" => args.quiet_wait = Duration::from_secs_f64(seconds(&value)?),
            other => return Err(format!("unknown option {other}")),
        }
    }
    if args.members == 0 || args.connections == 0 || args.load_connections == 0 || args.client_threads == 0 {
        return Err(
            "--members, --connections, --load-connections and --client-threads must be at least 1".into(),
        );
    }
    if args.seconds <= 0.0 {
        return Err("--seconds must be more than zero".into());
    }
    if !(1..=1_000).contains(&args.batch) {
        return Err("--batch must be 1 to 1000 (the service's batch limit)".into());
    }
    if args.database != "sqlite" && args.database != "postgres" {
        return Err(format!(
            "--database {:?} must be sqlite or postgres",
            args.database
        ));
    }
    for addr in [&args.redis] {
        if !addr.starts_with("127.0.0.1:") {
            return Err(format!("{addr}: the generator only talks to 127.0.0.1"));
        }
    }
    if !args.postgres_url.contains("@127.0.0.1") {
        return Err("--postgres-url must point at 127.0.0.1".into());
    }
    Ok(args)
}

fn main() -> ExitCode {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if raw.first().is_some_and(|a| a == "live") {
        let Some(args) = or_usage("loadgen live", live::USAGE, live::parse_args(raw[1..].to_vec())) else {
            return ExitCode::from(2);
        };
        return block_on("loadgen live", args.client_threads, live::run(&args));
    }
    if raw.first().is_some_and(|a| a == "edge") {
        let Some(args) = or_usage("loadgen edge", edge::USAGE, edge::parse_args(raw[1..].to_vec())) else {
            return ExitCode::from(2);
        };
        return block_on("loadgen edge", args.client_threads, edge::run(&args));
    }
    if raw.first().is_some_and(|a| a == "closed") {
        let Some(args) = or_usage(
            "loadgen closed",
            closed::USAGE,
            closed::parse_args(raw[1..].to_vec()),
        ) else {
            return ExitCode::from(2);
        };
        return block_on("loadgen closed", args.client_threads, closed::run(&args));
    }
    let Some(args) = or_usage("loadgen", USAGE, parse_args(raw)) else {
        return ExitCode::from(2);
    };
    block_on("loadgen", args.client_threads, run(&args))
}

/// The parsed options, or `None` after printing why they were refused and the usage.
fn or_usage<A>(name: &str, usage: &str, parsed: Result<A, String>) -> Option<A> {
    match parsed {
        Ok(args) => Some(args),
        Err(why) => {
            if !why.is_empty() {
                eprintln!("{name}: {why}");
            }
            eprintln!("{usage}");
            None
        }
    }
}

/// Runs a benchmark on a runtime of `client_threads` threads (1: a current-thread runtime),
/// its outcome the exit code.
fn block_on(
    name: &str,
    client_threads: usize,
    benchmark: impl Future<Output = Result<(), String>>,
) -> ExitCode {
    let runtime = match client_threads {
        1 => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        threads => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build(),
    };
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("{name}: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(benchmark) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("{name}: FAILED: {why}");
            ExitCode::FAILURE
        }
    }
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
    let population = workload::Population::new(args.members, args.seed)?;
    // One key per run, so two generators on one machine never delete each other's set.
    let redis_key = format!("standings-loadgen:{}:loadgen/bench/s1/global", std::process::id()).into_bytes();
    let database = if args.database == "postgres" {
        Database::Postgres {
            admin_url: args.postgres_url.clone(),
            name: format!("standings_loadgen_{}", std::process::id()),
        }
    } else {
        Database::Sqlite
    };
    let mut service = Service::prepare(&args.standings_bin, database, args.keep)?;
    eprintln!(
        "loadgen: {} members, {} connections, {}s per measurement; service on {} ({}), Redis on {}",
        args.members,
        args.connections,
        args.seconds,
        service.addr,
        service.database_url(),
        args.redis
    );
    let plan = Arc::new(Plan {
        population,
        standings_addr: service.addr.clone(),
        redis_addr: args.redis.clone(),
        redis_key,
        connections: args.connections,
        warmup: Duration::from_secs_f64(args.warmup_seconds),
        measure: Duration::from_secs_f64(args.seconds),
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
    let members = args.members;
    bench::redis_delete(&plan.redis_addr, &plan.redis_key).await?;
    let redis_used_before = bench::redis_used_memory(&plan.redis_addr).await?;

    let first_ready = service.start(args.ready_timeout).await?;
    bench::define_board(&service.addr).await?;
    let (rss_empty, _) = service.resident()?;
    let watched = cpu::Watched {
        standings: service.pid().ok_or("the service is not running")?,
        redis: bench::redis_pid(&plan.redis_addr).await?,
    };

    eprintln!(
        "loadgen: loading {members} members into Standings (batches of {})",
        args.batch
    );
    let load_from = cpu::Snapshot::take(watched);
    let load = bench::load_standings(plan, args.batch, args.load_connections, args.load_timeout).await?;
    let load_cpu = load_from.until(&cpu::Snapshot::take(watched));
    let (rss_loaded, hwm_loaded) = service.resident()?;
    let loaded_at = Instant::now();
    eprintln!(
        "loadgen: Standings loaded in {load:.2?} = {:.0} events/s; VmRSS {} MiB",
        members as f64 / load.as_secs_f64(),
        rss_loaded >> 20
    );

    eprintln!(
        "loadgen: loading {members} members into Redis (pipelined ZADD of {})",
        args.batch
    );
    let redis_load = bench::load_redis(plan, args.batch).await?;
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
        if !args.quiet_wait.is_zero() {
            let (waited, busy) = cpu::wait_quiet(watched, 0.2, args.quiet_wait).await;
            eprintln!(
                "loadgen: {workload:?}: waited {waited:.1?} for a quiet machine ({busy:.2} cores busy outside the generator)"
            );
        }
        let standings = bench::measure(plan, Side::Standings, workload, watched).await?;
        let redis = bench::measure(plan, Side::Redis, workload, watched).await?;
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
    if !args.quiet_wait.is_zero() {
        let (waited, busy) = cpu::wait_quiet(watched, 0.2, args.quiet_wait).await;
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
    let restart_ready = service.start(args.ready_timeout).await?;
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
        args.batch,
        args.load_connections,
        args.load_timeout,
    )
    .await?;
    let before = board_digest(&service.addr).await?;
    service.kill()?;
    let ready = service.start(args.ready_timeout).await?;
    let after = board_digest(&service.addr).await?;
    if before.digest != after.digest || before.total_players != after.total_players {
        return Err(format!(
            "the board changed across the crash: before {} players, digest {}; after {} players, digest {}",
            before.total_players, before.digest, after.total_players, after.digest
        ));
    }
    // The service's line for this start: "... boards ready in 1.2s, from the checkpoint at seq
    // N and K log entries after it; config ...".
    let restored = service
        .log()
        .lines()
        .rev()
        .find_map(|line| line.split_once(" ready in ").map(|(_, rest)| rest.to_string()))
        .and_then(|rest| rest.split_once("; config").map(|(how, _)| how.to_string()))
        .unwrap_or_else(|| "(not in the service log)".into());
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
        args.connections,
        args.seconds,
        args.warmup_seconds,
        args.client_threads,
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
        args.batch,
        args.load_connections,
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
