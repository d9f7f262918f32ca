//! `loadgen names`: what players' names cost a loaded board (issue 31).
//!
//! One run starts its own `standings serve` (SQLite), loads `--members` players through the batch
//! endpoint, reads VmRSS at rest, then renames `--renames` random players one after another
//! (`PUT /v1/games/loadgen/players/P/profile` with a 10-character name, each a new one) over
//! `--connections` keep-alive connections, timing each answer: a rename is logged before it is
//! answered and moves the version of every instance the player is ranked on, so its latency is
//! the cost of a rename on a board of that size. Then it checks the board's version moved by one
//! per rename, that a renamed player's rank answer carries the name, and reads VmRSS again.
//! Memory per named member at 1M members is measured without the service (the structures alone,
//! `cargo bench -p standings-origin --bench names`): naming a million players through the API
//! takes a million actions.

use std::sync::Arc;
use std::time::{Duration, Instant};

use standings_tests::harness;

use crate::Run;
use crate::bench::{self, BOARD_PATH, EventIds, Plan};
use crate::http::HttpConn;
use crate::latency::Histogram;
use crate::service::{SERVICE_TOKEN, Service};
use crate::workload::{Population, Rng, player_id};

/// Seeds the renamed players apart from every other stream.
const RENAME_STREAM: u64 = 0x6e61_6d65;

/// Renames on a loaded board.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Players loaded on the board.
    #[arg(long, value_name = "N", default_value = "1000000", value_parser = harness::at_least_one::<u64>)]
    members: u64,
    /// Renames to time.
    #[arg(long, value_name = "N", default_value = "500", value_parser = harness::at_least_one::<u64>)]
    renames: u64,
    /// Keep-alive connections the renames are sent over (each waits for its answer).
    #[arg(long, value_name = "N", default_value = "1", value_parser = harness::at_least_one::<usize>)]
    connections: usize,
    #[command(flatten)]
    service: crate::Served,
    #[command(flatten)]
    pub(crate) run: Run,
}

/// The figures of a run.
struct Report {
    load: Duration,
    rss_loaded: u64,
    rss_renamed: u64,
    renames: Histogram,
    renames_took: Duration,
    version_before: u64,
    version_after: u64,
}

pub(crate) async fn run(args: &Args) -> Result<(), String> {
    let population = Population::new(args.members, args.run.seed)?;
    let mut service = Service::prepare_with(
        &args.service.standings_bin,
        args.service.database("names"),
        args.run.keep,
        "loadgen-names",
        "",
    )?;
    eprintln!(
        "loadgen names: {} members, {} renames over {} connection(s); service on {}",
        args.members, args.renames, args.connections, service.addr
    );
    let result = measure(args, population, &mut service).await;
    let report = result.inspect_err(|_| eprintln!("loadgen names: {}", service.log_tail()))?;
    if let Err(e) = service.stop(Duration::from_secs(60)) {
        eprintln!("loadgen names: {e}");
    }
    print_report(args, &report);
    Ok(())
}

async fn measure(args: &Args, population: Population, service: &mut Service) -> Result<Report, String> {
    service.start(args.run.ready_timeout).await?;
    bench::define_board(&service.addr).await?;
    let plan = Arc::new(Plan {
        population,
        standings_addr: service.addr.clone(),
        redis_addr: String::new(),
        redis_key: Vec::new(),
        connections: args.connections,
        warmup: Duration::ZERO,
        measure: Duration::ZERO,
        event_ids: EventIds::Member,
        nonce: 1,
    });
    let load = args.service.load(&plan, &args.run).await?;
    eprintln!("loadgen names: loaded in {load:.2?}");
    tokio::time::sleep(crate::REST_AFTER_LOAD).await;
    let (rss_loaded, _) = service.resident()?;
    let version_before = board_version(&service.addr).await?;

    let per_connection = args.renames.div_ceil(args.connections as u64);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..args.connections as u64 {
        let addr = service.addr.clone();
        let members = args.members;
        let first = c * per_connection;
        let last = (first + per_connection).min(args.renames);
        let seed = args.run.seed;
        tasks.push(tokio::spawn(async move {
            let mut conn = HttpConn::connect(&addr, SERVICE_TOKEN).await?;
            let mut rng = Rng(seed ^ RENAME_STREAM ^ c);
            let mut histogram = Histogram::new();
            for i in first..last {
                let member = rng.below(members);
                let id = String::from_utf8_lossy(&player_id(member)).into_owned();
                // Ten characters, a new one every time, so each rename changes the name.
                let body = format!("{{\"display_name\":\"Name{i:06}\",\"country\":\"DE\"}}");
                let sent = Instant::now();
                let answer = conn
                    .put(
                        &format!("/v1/games/loadgen/players/{id}/profile"),
                        body.as_bytes(),
                    )
                    .await?;
                histogram.record(sent.elapsed());
                let text = conn.body_text(&answer);
                if answer.status != 200 || !text.contains("\"changed\":true") {
                    return Err(format!("renaming {id} answered {}: {text}", answer.status));
                }
            }
            Ok::<Histogram, String>(histogram)
        }));
    }
    let mut renames = Histogram::new();
    for task in tasks {
        renames.merge(&task.await.map_err(|e| format!("a rename task failed: {e}"))??);
    }
    let renames_took = started.elapsed();
    let version_after = board_version(&service.addr).await?;
    if version_after != version_before + args.renames {
        return Err(format!(
            "{} renames of ranked players moved the board from version {version_before} to {version_after}",
            args.renames
        ));
    }
    check_a_name(&service.addr, args).await?;
    tokio::time::sleep(crate::REST_AFTER_LOAD).await;
    let (rss_renamed, _) = service.resident()?;
    Ok(Report {
        load,
        rss_loaded,
        rss_renamed,
        renames,
        renames_took,
        version_before,
        version_after,
    })
}

/// The board's version, from its digest answer.
async fn board_version(addr: &str) -> Result<u64, String> {
    let mut conn = HttpConn::connect(addr, SERVICE_TOKEN).await?;
    let answer = conn.get(&format!("{BOARD_PATH}/top?limit=1")).await?;
    let body: serde_json::Value =
        serde_json::from_slice(conn.body(&answer)).map_err(|e| format!("a top answer is not JSON: {e}"))?;
    body["board_version"]
        .as_u64()
        .ok_or_else(|| format!("a top answer has no board_version: {body}"))
}

/// The last renamed player's rank answer carries its name.
async fn check_a_name(addr: &str, args: &Args) -> Result<(), String> {
    let mut rng = Rng(args.run.seed ^ RENAME_STREAM);
    let member = rng.below(args.members);
    let id = String::from_utf8_lossy(&player_id(member)).into_owned();
    let mut conn = HttpConn::connect(addr, SERVICE_TOKEN).await?;
    let answer = conn.get(&format!("{BOARD_PATH}/players/{id}/rank")).await?;
    let text = conn.body_text(&answer);
    if answer.status != 200
        || !text.contains("\"display_name\":\"Name")
        || !text.contains("\"country\":\"DE\"")
    {
        return Err(format!("a renamed player's rank answer has no name: {text}"));
    }
    Ok(())
}

fn print_report(args: &Args, r: &Report) {
    let n = r.renames.count().max(1) as f64;
    println!(
        "## Renames on a board of {} members ({}, {} connection(s))\n",
        args.members, args.service.database, args.connections
    );
    println!("| figure | value |\n| --- | --- |");
    println!("| load ({} events) | {:.2?} |", args.members, r.load);
    println!(
        "| rename latency p50 / p99 / max ({} renames) | {:.2?} / {:.2?} / {:.2?} |",
        r.renames.count(),
        r.renames.quantile(0.5),
        r.renames.quantile(0.99),
        r.renames.quantile(1.0)
    );
    println!(
        "| renames per second | {:.0} |",
        n / r.renames_took.as_secs_f64().max(1e-9)
    );
    println!(
        "| board_version before / after | {} / {} (+{}) |",
        r.version_before,
        r.version_after,
        r.version_after - r.version_before
    );
    println!(
        "| VmRSS at rest after loading / after the renames | {} / {} MiB |",
        r.rss_loaded >> 20,
        r.rss_renamed >> 20
    );
}
