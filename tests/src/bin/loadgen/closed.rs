//! `loadgen closed`: reads of a closed day that left memory, beside the same reads of the
//! current day (issue 28's first defect: a closed day rebuilt from storage on every read).
//!
//! One run starts its own `standings serve` with `closed_period_retention_seconds = 0`, defines
//! a board that keeps `all_time` and `daily` periods in UTC, and loads `--members` players
//! through the batch endpoint twice: once achieved yesterday, once today. A day closes at its
//! end plus the board's grace, and an event that arrives after that is `LATE` (kept out of the
//! day), so the board's grace is chosen to end `--close-after-seconds` after the definition:
//! yesterday takes its events, then closes, and the writer's evictor (once a minute) moves it
//! out of memory. Once `/metrics` shows it held in the closed cache, each read below is measured
//! for `--seconds` after `--warmup-seconds`, closed-loop over `--connections` keep-alive
//! connections, on yesterday and then on today:
//!
//! - `top?limit=100&period=daily&at=...` (yesterday at noon; today at noon, or now if earlier);
//! - a random player's `rank` (every player holds a score on both days);
//! - the snapshot head (`GET /v1/snapshots/.../head?period=daily&at=...`, admin token).
//!
//! Then the service is restarted, so that yesterday, no longer in memory, is restored from
//! storage by its first read (timed), and the same reads are measured again. Before each
//! measurement it waits, up to `--quiet-wait-seconds`, for a quiet machine, and it reports the
//! CPU used beside it. It prints p50, p99 and rate of each read, the ratios closed/live, and
//! `standings_closed_period_restores_total` and `standings_closed_periods_cached` before and
//! after: restores must not grow with reads. A failed or wrong answer fails the run; targets
//! missed are results.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use standings_tests::harness;

use crate::Run;
use crate::bench::{self, BOARD_PATH, Batches, DEFINE_PATH, EventIds, Measured, Plan};
use crate::cpu;
use crate::http::HttpConn;
use crate::latency::Histogram;
use crate::scrape::Scrape;
use crate::service::{ADMIN_TOKEN, Database, SERVICE_TOKEN, Service};
use crate::workload::{Population, Rng, player_id, push_rfc3339};

/// The head of the board's snapshots, for the edge (`docs/snapshots.md`).
const HEAD_PATH: &str = "/v1/snapshots/loadgen/bench/s1/global/head";
/// The service's metrics of the closed cache.
const RESTORES_METRIC: &str = "standings_closed_period_restores_total";
const CACHED_METRIC: &str = "standings_closed_periods_cached";
const DAY_MS: i64 = 86_400_000;
/// Seeds the random players of the rank reads apart from every other stream.
const READ_STREAM: u64 = 0x636c_6f73;

/// Reads of a closed day that left memory, beside the same reads of the current day: top, rank
/// and the snapshot head, before and after a restart.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Players loaded on each of the two days.
    #[arg(long, value_name = "N", default_value = "200000", value_parser = harness::at_least_one::<u64>)]
    members: u64,
    /// Closed-loop keep-alive connections per measurement.
    #[arg(long, value_name = "N", default_value = "4", value_parser = harness::at_least_one::<usize>)]
    connections: usize,
    /// Measured seconds per read and day.
    #[arg(long, value_name = "S", default_value = "5", value_parser = harness::positive)]
    seconds: f64,
    /// Unmeasured seconds before each measurement.
    #[arg(long, value_name = "S", default_value = "1", value_parser = harness::non_negative)]
    warmup_seconds: f64,
    /// Yesterday closes S seconds after the board is defined (its grace is chosen so); loading
    /// yesterday must finish by then. 0: 10 + 1 per 20,000 members.
    #[arg(long = "close-after-seconds", value_name = "S", default_value = "0", value_parser = harness::seconds)]
    close_after: Duration,
    /// How long after the close the day may take to leave memory (the evictor runs once a
    /// minute).
    #[arg(long = "evict-timeout-seconds", value_name = "S", default_value = "90", value_parser = harness::seconds)]
    evict_timeout: Duration,
    /// Skip the second round (after a restart, yesterday restored from storage by its first
    /// read).
    #[arg(long = "no-restart", action = clap::ArgAction::SetFalse)]
    restart: bool,
    /// Before each measurement, wait up to S seconds for the machine to be quiet (< 0.2 cores
    /// busy outside the generator); 0 = do not wait.
    #[arg(long = "quiet-wait-seconds", value_name = "S", default_value = "60", value_parser = harness::seconds)]
    quiet_wait: Duration,
    /// Concurrent batch uploads while loading.
    #[arg(long, value_name = "N", default_value = "8", value_parser = harness::at_least_one::<usize>)]
    load_connections: usize,
    /// Events per batch request (1 to 1000, the service's batch limit).
    #[arg(long, value_name = "N", default_value = "1000", value_parser = crate::batch_size)]
    batch: u64,
    /// The service binary.
    #[arg(long, value_name = "PATH", default_value = "target/release/standings")]
    standings_bin: PathBuf,
    #[command(flatten)]
    pub(crate) run: Run,
}

impl Args {
    /// How long after the definition yesterday closes.
    fn close_after(&self) -> Duration {
        if self.close_after.is_zero() {
            Duration::from_secs(10 + self.members / 20_000)
        } else {
            self.close_after
        }
    }
}

/// A read measured on both days.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Read {
    /// `GET .../top?limit=100&period=daily&at=T`.
    Top,
    /// `GET .../players/P/rank?period=daily&at=T` of a random player.
    Rank,
    /// `GET /v1/snapshots/.../head?period=daily&at=T`, as the edge asks it.
    Head,
}

impl Read {
    const ALL: [Read; 3] = [Read::Top, Read::Rank, Read::Head];

    fn name(self) -> &'static str {
        match self {
            Read::Top => "top-100",
            Read::Rank => "rank of a random player",
            Read::Head => "snapshot head (admin token)",
        }
    }

    /// Appends the read's path and query for `day` (player `member` for a rank).
    fn push_path(self, out: &mut Vec<u8>, day: &Day, member: u64) {
        match self {
            Read::Top => {
                out.extend_from_slice(BOARD_PATH.as_bytes());
                out.extend_from_slice(b"/top?limit=100&period=daily&at=");
            }
            Read::Rank => {
                out.extend_from_slice(BOARD_PATH.as_bytes());
                out.extend_from_slice(b"/players/");
                out.extend_from_slice(&player_id(member));
                out.extend_from_slice(b"/rank?period=daily&at=");
            }
            Read::Head => {
                out.extend_from_slice(HEAD_PATH.as_bytes());
                out.extend_from_slice(b"?period=daily&at=");
            }
        }
        out.extend_from_slice(day.at.as_bytes());
    }

    /// Heads are for the edge: the admin token may ask them; reads take the service token.
    fn token(self) -> &'static str {
        if self == Read::Head {
            ADMIN_TOKEN
        } else {
            SERVICE_TOKEN
        }
    }
}

/// One day of the board, as the reads name it.
struct Day {
    /// Its period key, `YYYY-MM-DD`.
    key: String,
    /// The `at` of its reads, RFC 3339.
    at: String,
}

impl Day {
    fn new(at_ms: i64) -> Day {
        let mut at = Vec::new();
        push_rfc3339(&mut at, at_ms);
        let at = String::from_utf8_lossy(&at).into_owned();
        Day {
            key: at[..10].to_string(),
            at,
        }
    }
}

/// The closed cache's counters at one moment.
#[derive(Clone, Copy, Debug)]
struct Cache {
    restores: f64,
    cached: f64,
}

impl Cache {
    async fn take(addr: &str) -> Result<Cache, String> {
        let scrape = Scrape::take(addr).await?;
        let metric = |name: &str| {
            scrape
                .0
                .get(name)
                .copied()
                .ok_or_else(|| format!("/metrics has no {name}"))
        };
        Ok(Cache {
            restores: metric(RESTORES_METRIC)?,
            cached: metric(CACHED_METRIC)?,
        })
    }
}

/// One round: every read on both days, and the counters around it.
struct Round {
    /// How the closed day came to be in the cache this round.
    how: &'static str,
    /// The first read of the closed day in this round (a top page) and its counters after.
    first_closed: Duration,
    after_first: Cache,
    /// The first head of each day (it publishes the instance): closed, live.
    first_heads: (Duration, Duration),
    /// Per read: closed, live.
    pairs: Vec<(Read, Measured, Measured)>,
    /// Reads of the closed day this round, the first included.
    closed_reads: u64,
    before: Cache,
    after: Cache,
    /// The most cores busy outside the generator before a measurement (the service idle), after
    /// the quiet wait.
    busy: f64,
}

pub(crate) async fn run(args: &Args) -> Result<(), String> {
    let population = Population::new(args.members, args.run.seed)?;
    let mut service = Service::prepare_with(
        &args.standings_bin,
        Database::Sqlite,
        args.run.keep,
        "loadgen-closed",
        "closed_period_retention_seconds = 0\n",
    )?;
    eprintln!(
        "loadgen closed: {} members a day, {} connections, {}s per measurement; service on {}",
        args.members, args.connections, args.seconds, service.addr
    );
    let result = measure(args, population, &mut service).await;
    let report = result.inspect_err(|_| eprintln!("loadgen closed: {}", service.log_tail()))?;
    if let Err(e) = service.stop(Duration::from_secs(60)) {
        eprintln!("loadgen closed: {e}");
    }
    print_report(args, &report);
    Ok(())
}

/// The figures of a run.
struct Report {
    yesterday: Day,
    today: Day,
    grace_seconds: i64,
    loaded: (Duration, Duration),
    /// From yesterday's close to `/metrics` showing it in the closed cache.
    evicted_after_close: Duration,
    rounds: Vec<Round>,
}

async fn measure(args: &Args, population: Population, service: &mut Service) -> Result<Report, String> {
    service.start(args.run.ready_timeout).await?;
    let now = now_ms();
    let today_start = now - now.rem_euclid(DAY_MS);
    let yesterday_start = today_start - DAY_MS;
    // Yesterday closes at its end (today's start) plus the grace: `close_after` from now.
    let close_after = args.close_after();
    let grace_seconds = (now - today_start) / 1000 + close_after.as_secs().max(1) as i64;
    let closes_at = Instant::now() + Duration::from_millis((today_start + grace_seconds * 1000 - now) as u64);
    define_board(&service.addr, grace_seconds).await?;
    let yesterday = Day::new(yesterday_start + DAY_MS / 2);
    let today = Day::new((today_start + DAY_MS / 2).min(now));
    let plan = Arc::new(Plan {
        population,
        standings_addr: service.addr.clone(),
        redis_addr: String::new(),
        redis_key: Vec::new(),
        connections: args.connections,
        warmup: Duration::from_secs_f64(args.warmup_seconds),
        measure: Duration::from_secs_f64(args.seconds),
        event_ids: EventIds::Member,
        nonce: now as u64,
    });
    eprintln!(
        "loadgen closed: the board's grace is {grace_seconds} s, so {} closes in {close_after:?}; loading {} members on it",
        yesterday.key, args.members
    );
    let yesterday_load = bench::post_batches(
        &plan,
        Batches::Day {
            start_ms: yesterday_start,
            span_ms: DAY_MS,
        },
        args.batch,
        args.load_connections,
        args.run.load_timeout,
    )
    .await
    .map_err(|e| {
        format!("loading yesterday: {e} (an event answered LATE arrived after the close: raise --close-after-seconds)")
    })?;
    eprintln!(
        "loadgen closed: {} loaded in {yesterday_load:.2?}; loading {} members on {}",
        yesterday.key, args.members, today.key
    );
    let today_load = bench::post_batches(
        &plan,
        Batches::Day {
            start_ms: today_start,
            span_ms: (now_ms() - today_start).max(1),
        },
        args.batch,
        args.load_connections,
        args.run.load_timeout,
    )
    .await?;
    eprintln!(
        "loadgen closed: {} loaded in {today_load:.2?}; waiting for {} to close and leave memory",
        today.key, yesterday.key
    );
    tokio::time::sleep_until(closes_at.into()).await;
    let deadline = closes_at + args.evict_timeout;
    loop {
        let cache = Cache::take(&service.addr).await?;
        if cache.cached >= 1.0 {
            break;
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{} did not leave memory within {:?} of its close ({CACHED_METRIC} {})",
                yesterday.key, args.evict_timeout, cache.cached
            ));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let evicted_after_close = closes_at.elapsed();
    eprintln!(
        "loadgen closed: {} left memory {evicted_after_close:.1?} after its close",
        yesterday.key
    );
    let mut rounds = vec![
        round(
            args,
            &plan,
            service,
            &yesterday,
            &today,
            "handed to the closed cache by the evictor as it left memory",
        )
        .await?,
    ];
    if args.restart {
        eprintln!("loadgen closed: restarting the service (SIGINT, then start on the same database)");
        service.stop(Duration::from_secs(120))?;
        service.start(args.run.ready_timeout).await?;
        rounds.push(
            round(
                args,
                &plan,
                service,
                &yesterday,
                &today,
                "after a restart: restored from storage by the first read (unless the start put it in the cache)",
            )
            .await?,
        );
    }
    Ok(Report {
        yesterday,
        today,
        grace_seconds,
        loaded: (yesterday_load, today_load),
        evicted_after_close,
        rounds,
    })
}

/// Defines the board: `highest`, all time and daily (UTC), with `grace_seconds`.
async fn define_board(addr: &str, grace_seconds: i64) -> Result<(), String> {
    let mut conn = HttpConn::connect(addr, ADMIN_TOKEN).await?;
    let body = format!(
        r#"{{"score_mode":"highest","periods":["all_time","daily"],"grace_seconds":{grace_seconds}}}"#
    );
    let answer = conn.put(DEFINE_PATH, body.as_bytes()).await?;
    if answer.status != 201 {
        return Err(format!(
            "defining the board answered {}: {}",
            answer.status,
            conn.body_text(&answer)
        ));
    }
    Ok(())
}

/// Every read on both days, closed first, with the counters around them.
async fn round(
    args: &Args,
    plan: &Arc<Plan>,
    service: &Service,
    yesterday: &Day,
    today: &Day,
    how: &'static str,
) -> Result<Round, String> {
    let addr = service.addr.as_str();
    let watched = cpu::Watched {
        standings: service.pid().ok_or("the service is not running")?,
        // No Redis in this benchmark: pid 0 is never a process, so it counts as zero.
        redis: 0,
    };
    let before = Cache::take(addr).await?;
    let first_closed = checked_read(addr, Read::Top, yesterday, plan).await?;
    let after_first = Cache::take(addr).await?;
    eprintln!(
        "loadgen closed: {how}: the first top-100 of {} took {first_closed:.2?}; {RESTORES_METRIC} {} -> {}, {CACHED_METRIC} {}",
        yesterday.key, before.restores, after_first.restores, after_first.cached
    );
    let first_heads = (
        checked_read(addr, Read::Head, yesterday, plan).await?,
        checked_read(addr, Read::Head, today, plan).await?,
    );
    let mut closed_reads = 2;
    for read in [Read::Rank, Read::Top] {
        checked_read(addr, read, today, plan).await?;
        closed_reads += 1;
        checked_read(addr, read, yesterday, plan).await?;
    }
    let mut pairs = Vec::new();
    let mut busy: f64 = 0.0;
    for read in Read::ALL {
        let mut sides = Vec::with_capacity(2);
        for (is_closed, day) in [(true, yesterday), (false, today)] {
            if !args.quiet_wait.is_zero() {
                let (waited, load) = cpu::wait_quiet(watched, 0.2, args.quiet_wait).await;
                busy = busy.max(load);
                eprintln!(
                    "loadgen closed: {} of {}: waited {waited:.1?} for a quiet machine ({load:.2} cores busy outside the generator)",
                    read.name(),
                    day.key
                );
            }
            let (measured, sent) = timed(plan, read, day, watched).await?;
            if is_closed {
                closed_reads += sent;
            }
            eprintln!(
                "loadgen closed: {} of {}: {:.0}/s, p50 {}, p99 {}; CPU: service {:.2}, other {:.2}",
                read.name(),
                day.key,
                measured.throughput(),
                fmt_latency(measured.latency.quantile(0.5)),
                fmt_latency(measured.latency.quantile(0.99)),
                measured.cpu.standings,
                measured.cpu.other
            );
            sides.push(measured);
        }
        let live = sides.pop().ok_or("no live side")?;
        let closed = sides.pop().ok_or("no closed side")?;
        pairs.push((read, closed, live));
    }
    let after = Cache::take(addr).await?;
    eprintln!(
        "loadgen closed: after {closed_reads} reads of {} this round: {RESTORES_METRIC} {}, {CACHED_METRIC} {}",
        yesterday.key, after.restores, after.cached
    );
    Ok(Round {
        how,
        first_closed,
        after_first,
        first_heads,
        pairs,
        closed_reads,
        before,
        after,
        busy,
    })
}

/// One read, timed, whose answer must be of `day` and hold what was loaded: a full top page,
/// the player's entry, a head of a published version (not the empty snapshot).
async fn checked_read(addr: &str, read: Read, day: &Day, plan: &Plan) -> Result<Duration, String> {
    let mut conn = HttpConn::connect(addr, read.token()).await?;
    let member = plan.population.members / 2;
    read.push_path(conn.start("GET"), day, member);
    let started = Instant::now();
    let answer = conn.send(&[]).await?;
    let took = started.elapsed();
    let what = format!("the first {} of {}", read.name(), day.key);
    if answer.status != 200 {
        return Err(format!(
            "{what} answered {}: {}",
            answer.status,
            conn.body_text(&answer)
        ));
    }
    let value: serde_json::Value =
        serde_json::from_slice(conn.body(&answer)).map_err(|e| format!("{what} is not JSON: {e}"))?;
    let key = value["period_key"].as_str().unwrap_or_default();
    let holds = match read {
        Read::Top => value["entries"]
            .as_array()
            .is_some_and(|e| e.len() as u64 == plan.population.members.min(100)),
        Read::Rank => {
            value["player_id"].as_str().map(str::as_bytes) == Some(&player_id(member)[..])
                && value["rank"].as_u64().is_some()
                && value["total_players"].as_u64() == Some(plan.population.members)
        }
        Read::Head => value["board_version"].as_u64().is_some_and(|v| v > 0),
    };
    if key != day.key || !holds {
        return Err(format!(
            "{what} does not hold the loaded day: {}",
            conn.body_text(&answer)
        ));
    }
    Ok(took)
}

/// Measures `read` of `day` on the plan's connections, closed-loop: a warm-up, then the
/// measured window. Connection `i` asks about the same players on both days. Returns the
/// figures of the window and how many reads were sent in all, the warm-up's included.
async fn timed(
    plan: &Arc<Plan>,
    read: Read,
    day: &Day,
    watched: cpu::Watched,
) -> Result<(Measured, u64), String> {
    let mut conns = Vec::with_capacity(plan.connections);
    for _ in 0..plan.connections {
        conns.push(HttpConn::connect(&plan.standings_addr, read.token()).await?);
    }
    let measured_from = Instant::now() + plan.warmup;
    let until = measured_from + plan.measure;
    let mut tasks = Vec::with_capacity(conns.len());
    for (index, mut conn) in conns.into_iter().enumerate() {
        let plan = plan.clone();
        let at = Day {
            key: day.key.clone(),
            at: day.at.clone(),
        };
        tasks.push(tokio::spawn(async move {
            let mut rng = Rng::stream(plan.population.seed ^ READ_STREAM, index as u64);
            let mut latency = Histogram::new();
            let (mut ops, mut sent) = (0u64, 0u64);
            loop {
                let begun = Instant::now();
                if begun >= until {
                    break;
                }
                sent += 1;
                let member = rng.below(plan.population.members);
                read.push_path(conn.start("GET"), &at, member);
                let answer = conn.send(&[]).await?;
                if answer.status != 200 {
                    return Err(format!(
                        "{} of {} answered {}: {}",
                        read.name(),
                        at.key,
                        answer.status,
                        conn.body_text(&answer)
                    ));
                }
                if begun >= measured_from {
                    latency.record(begun.elapsed());
                    ops += 1;
                }
            }
            Ok::<_, String>((ops, sent, latency))
        }));
    }
    tokio::time::sleep_until(measured_from.into()).await;
    let cpu_from = cpu::Snapshot::take(watched);
    tokio::time::sleep_until(until.into()).await;
    let cpu = cpu_from.until(&cpu::Snapshot::take(watched));
    let mut latency = Histogram::new();
    let (mut ops, mut sent) = (0, 0);
    for task in tasks {
        let (done, all, histogram) = task.await.map_err(|e| format!("a reading task failed: {e}"))??;
        ops += done;
        sent += all;
        latency.merge(&histogram);
    }
    let measured = Measured {
        ops,
        window: plan.measure,
        latency,
        cpu,
    };
    Ok((measured, sent))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn fmt_latency(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1_000.0 {
        format!("{us:.0} us")
    } else {
        format!("{:.2} ms", us / 1_000.0)
    }
}

fn print_report(args: &Args, r: &Report) {
    println!();
    println!(
        "## A closed day that left memory ({}) beside the live day ({}): {} members each, {} connections, {}s per measurement ({}s warm-up)",
        r.yesterday.key, r.today.key, args.members, args.connections, args.seconds, args.warmup_seconds
    );
    println!();
    println!(
        "Loading: {} in {:.2} s, {} in {:.2} s through the batch endpoint; the board's grace {} s; \
         the closed day left memory {:.1} s after its close (closed_period_retention_seconds = 0).",
        r.yesterday.key,
        r.loaded.0.as_secs_f64(),
        r.today.key,
        r.loaded.1.as_secs_f64(),
        r.grace_seconds,
        r.evicted_after_close.as_secs_f64()
    );
    let mut rounds = Vec::new();
    for round in &r.rounds {
        println!();
        println!("### {}", round.how);
        println!();
        println!(
            "| read | closed day: rate, p50, p99 | live day: rate, p50, p99 | closed/live p50 | closed/live rate | target | verdict |"
        );
        println!("| --- | --- | --- | --- | --- | --- | --- |");
        let mut pairs = Vec::new();
        for (read, closed, live) in &round.pairs {
            let p50 = |m: &Measured| m.latency.quantile(0.5);
            let ratio = p50(closed).as_secs_f64() / p50(live).as_secs_f64().max(1e-9);
            let rate = closed.throughput() / live.throughput().max(1e-9);
            let side = |m: &Measured| {
                format!(
                    "{:.0}/s, {}, {}",
                    m.throughput(),
                    fmt_latency(m.latency.quantile(0.5)),
                    fmt_latency(m.latency.quantile(0.99))
                )
            };
            println!(
                "| {} | {} | {} | {ratio:.2}x | {rate:.2}x | p50 within 3x | {} |",
                read.name(),
                side(closed),
                side(live),
                if ratio <= 3.0 { "met" } else { "NOT met" }
            );
            pairs.push(serde_json::json!({
                "read": format!("{read:?}"),
                "closed": { "rate": closed.throughput(), "p50_ms": p50(closed).as_secs_f64() * 1e3, "p99_ms": closed.latency.quantile(0.99).as_secs_f64() * 1e3, "service_cores": closed.cpu.standings, "other_cores": closed.cpu.other },
                "live": { "rate": live.throughput(), "p50_ms": p50(live).as_secs_f64() * 1e3, "p99_ms": live.latency.quantile(0.99).as_secs_f64() * 1e3, "service_cores": live.cpu.standings, "other_cores": live.cpu.other },
                "p50_ratio": ratio,
                "rate_ratio": rate,
            }));
        }
        let grew = round.after.restores - round.after_first.restores;
        println!(
            "| restores while measuring ({RESTORES_METRIC}) | +{grew:.0} over {} reads of the closed day (before the round {:.0}, after its first read {:.0}, after {:.0}) | | | | no more than the first read's | {} |",
            round.closed_reads,
            round.before.restores,
            round.after_first.restores,
            round.after.restores,
            if grew == 0.0 { "met" } else { "NOT met" }
        );
        println!(
            "| first read of the closed day (top-100) | {} | | | | | |",
            fmt_latency(round.first_closed)
        );
        println!(
            "| first head (publishes the instance) | {} | {} | | | | |",
            fmt_latency(round.first_heads.0),
            fmt_latency(round.first_heads.1)
        );
        println!();
        println!(
            "{CACHED_METRIC}: {:.0} before, {:.0} after. The most cores busy outside the generator just before a measurement (the service idle), after the quiet wait: {:.2}.",
            round.before.cached, round.after.cached, round.busy
        );
        println!();
        println!("| measurement | service cores | generator cores | everything else |");
        println!("| --- | --- | --- | --- |");
        for (read, closed, live) in &round.pairs {
            for (day, m) in [("closed", closed), ("live", live)] {
                println!(
                    "| {} of the {day} day | {:.2} | {:.2} | {:.2} |",
                    read.name(),
                    m.cpu.standings,
                    m.cpu.generator,
                    m.cpu.other
                );
            }
        }
        rounds.push(serde_json::json!({
            "how": round.how,
            "first_closed_ms": round.first_closed.as_secs_f64() * 1e3,
            "first_heads_ms": [round.first_heads.0.as_secs_f64() * 1e3, round.first_heads.1.as_secs_f64() * 1e3],
            "restores": [round.before.restores, round.after_first.restores, round.after.restores],
            "cached": [round.before.cached, round.after.cached],
            "closed_reads": round.closed_reads,
            "busy_cores": round.busy,
            "reads": pairs,
        }));
    }
    let line = serde_json::json!({
        "members": args.members,
        "connections": args.connections,
        "seconds": args.seconds,
        "closed_day": r.yesterday.key,
        "live_day": r.today.key,
        "load_seconds": [r.loaded.0.as_secs_f64(), r.loaded.1.as_secs_f64()],
        "evicted_after_close_seconds": r.evicted_after_close.as_secs_f64(),
        "rounds": rounds,
    });
    println!();
    println!("loadgen-closed: {line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `loadgen closed` followed by `raw`, through the binary's whole command line.
    fn parse_args(raw: Vec<String>) -> Result<Args, String> {
        match crate::parse_cli(std::iter::once("closed".to_string()).chain(raw))?.mode {
            Some(crate::Mode::Closed(args)) => Ok(args),
            other => Err(format!("not the closed mode: {other:?}")),
        }
    }

    /// The defaults are the issue's board size, and the close follows the size.
    #[test]
    fn defaults_and_flags() {
        let args = parse_args(Vec::new()).unwrap();
        assert_eq!((args.members, args.restart), (200_000, true));
        assert_eq!(args.close_after(), Duration::from_secs(20));
        let flags = "--members 1000 --close-after-seconds 3 --no-restart --seconds 2";
        let args = parse_args(flags.split(' ').map(String::from).collect()).unwrap();
        assert_eq!((args.members, args.restart), (1000, false));
        assert_eq!(args.close_after(), Duration::from_secs(3));
        assert!(parse_args(vec!["--batch".into(), "1001".into()]).is_err());
    }

    /// A day's reads name its key and an instant on it.
    #[test]
    fn days_and_paths() {
        // 2025-10-13T12:00:00Z.
        let day = Day::new(crate::workload::T0 + DAY_MS / 2);
        assert_eq!(
            (day.key.as_str(), day.at.as_str()),
            ("2025-10-13", "2025-10-13T12:00:00.000Z")
        );
        let mut path = Vec::new();
        Read::Head.push_path(&mut path, &day, 0);
        assert_eq!(
            String::from_utf8(path).unwrap(),
            format!("{HEAD_PATH}?period=daily&at=2025-10-13T12:00:00.000Z")
        );
    }
}
