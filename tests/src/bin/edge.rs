//! The edge harness: a real origin on 127.0.0.1 and the edge worker under `wrangler dev --local`
//! (real workerd) in front of it, both started by the run, and the issue's end-to-end scenarios
//! through them, each reported PASS or FAIL with a closing count; it exits non-zero on any
//! failure.
//!
//! ```text
//! cargo build -p standings-origin --bin standings -p standings-tests --bin edge
//! (cd edge-worker && npm ci) && edge-worker/build
//! target/debug/edge --standings-bin target/debug/standings --worker-dir edge-worker
//! ```
//!
//! It builds nothing: the worker must already be built (wrangler.toml's `main` must exist) and
//! wrangler installed in `edge-worker/node_modules`. The origin runs on SQLite in a temp folder,
//! publishing snapshots every `--interval-ms` with a head lifetime of one second; the worker
//! gets the origin's URL as a variable and its secrets (the edge token, the player JWT secret)
//! in an env file, and a fresh state folder, so its Cache API starts empty.
//!
//! The scenarios (module `scenarios`): a seeded board with a daily period and friend lists,
//! whose every read kind answers byte for byte as the origin does at the same `board_version`;
//! the edge catching up after new events; writes through the edge; a repeated top page is a
//! cache HIT; the read auth cases (player JWT, public reads on a second worker, a static token
//! through introspection, a bad token, another game's); `/edge/stats` against what the run did;
//! and last the origin stopped (stale reads, 503 writes) and started again (fresh again).
#![forbid(unsafe_code)]

#[path = "edge/scenarios.rs"]
mod scenarios;
#[path = "edge/stack.rs"]
mod stack;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const USAGE: &str = "\
usage: edge [options]
  --standings-bin PATH      the origin binary (default target/debug/standings)
  --worker-dir DIR          the worker's crate, holding node_modules/.bin/wrangler after
                            `npm ci` (default edge-worker)
  --wrangler-config PATH    the worker's wrangler.toml (default: beside --worker-dir)
  --players N               players seeded on the board (default 3000)
  --queries N               random reads compared, edge against origin (default 300)
  --interval-ms MS          the origin's [snapshots] interval_ms (default 200)
  --slack-ms MS             what catching up may take beyond interval_ms plus the head
                            lifetime, for a shared debug build (default 1500)
  --seed N                  the seed of every draw (default 1)
  --smoke                   only start both, check that the worker answers /edge/stats, stop
  --timeout-seconds S       the whole run's deadline (default 900)
  --keep                    keep the temp folder (configs, logs, SQLite file)";

/// The command line.
pub(crate) struct Args {
    pub(crate) standings_bin: PathBuf,
    pub(crate) worker_dir: PathBuf,
    pub(crate) wrangler_config: Option<PathBuf>,
    pub(crate) players: u64,
    pub(crate) queries: u64,
    pub(crate) interval_ms: u64,
    pub(crate) slack_ms: u64,
    pub(crate) seed: u64,
    pub(crate) smoke: bool,
    pub(crate) timeout: Duration,
    pub(crate) keep: bool,
}

fn parse_args(raw: Vec<String>) -> Result<Args, String> {
    let mut args = Args {
        standings_bin: PathBuf::from("target/debug/standings"),
        worker_dir: PathBuf::from("edge-worker"),
        wrangler_config: None,
        players: 3_000,
        queries: 300,
        interval_ms: 200,
        slack_ms: 1_500,
        seed: 1,
        smoke: false,
        timeout: Duration::from_secs(900),
        keep: false,
    };
    let mut iter = raw.into_iter();
    while let Some(flag) = iter.next() {
        match flag.as_str() {
            "--keep" => {
                args.keep = true;
                continue;
            }
            "--smoke" => {
                args.smoke = true;
                continue;
            }
            "-h" | "--help" => return Err(String::new()),
            _ => {}
        }
        let value = iter.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag} {v:?} is not a number"))
        };
        match flag.as_str() {
            "--standings-bin" => args.standings_bin = PathBuf::from(value),
            "--worker-dir" => args.worker_dir = PathBuf::from(value),
            "--wrangler-config" => args.wrangler_config = Some(PathBuf::from(value)),
            "--players" => args.players = number(&value)?,
            "--queries" => args.queries = number(&value)?,
            "--interval-ms" => args.interval_ms = number(&value)?,
            "--slack-ms" => args.slack_ms = number(&value)?,
            "--seed" => args.seed = number(&value)?,
            "--timeout-seconds" => args.timeout = Duration::from_secs(number(&value)?),
            other => return Err(format!("unknown option {other}")),
        }
    }
    if args.players < 100 {
        return Err("--players must be at least 100 (friend lists and pages draw from them)".into());
    }
    if args.interval_ms == 0 {
        return Err("--interval-ms must be at least 1".into());
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1).collect()) {
        Ok(args) => args,
        Err(why) => {
            if !why.is_empty() {
                eprintln!("edge: {why}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    // One thread: the harness mostly waits on the two servers, which need the cores more.
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("edge: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        match tokio::time::timeout(args.timeout, scenarios::run(&args)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!("the run passed its deadline of {:?}", args.timeout)),
        }
    });
    match outcome {
        Ok((passed, 0)) => {
            println!("edge: PASSED: {passed} scenarios passed, 0 failed");
            ExitCode::SUCCESS
        }
        Ok((passed, failed)) => {
            println!("edge: FAILED: {passed} scenarios passed, {failed} failed");
            ExitCode::FAILURE
        }
        Err(why) => {
            eprintln!("edge: FAILED: {why}");
            ExitCode::FAILURE
        }
    }
}
