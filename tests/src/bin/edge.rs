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
//! The scenarios (module `scenarios`): a seeded board with a daily period, friend lists,
//! players' profiles (display names, not all ASCII, countries, one player anonymous) and event
//! metadata, whose every read kind answers byte for byte as the origin does at the same
//! `board_version` (read with player tokens and without one: the edge answers the public form);
//! the edge catching up after new events and after a rename; the anonymous player's fields
//! shown to the game's service token only (its reads through the edge are handed to the
//! origin), and by no answer the edge makes itself; writes
//! through the edge; a repeated top page is a cache HIT; the read auth cases (player JWT, public
//! reads on a second worker, a static token through introspection, a bad token, another game's);
//! `/edge/stats` against what the run did; live subscriptions through the edge's live objects
//! against direct ones (module `live`); with `--fanout-sockets N`, N subscribers of one view
//! through the edge and then directly, measured side by side (module `fanout`); and last the
//! origin stopped (stale reads, 503 writes) and started again (fresh again).
#![forbid(unsafe_code)]

#[path = "edge/fanout.rs"]
mod fanout;
#[path = "edge/live.rs"]
mod live;
#[path = "edge/scenarios.rs"]
mod scenarios;
#[path = "edge/stack.rs"]
mod stack;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use standings_tests::harness::{self, Options};

/// The edge harness: a real origin and the edge worker under `wrangler dev --local` in front of
/// it, and the end-to-end scenarios through them.
#[derive(clap::Parser, Debug)]
#[command(name = "edge")]
pub(crate) struct Args {
    /// The origin binary.
    #[arg(long, value_name = "PATH", default_value = "target/debug/standings")]
    pub(crate) standings_bin: PathBuf,
    /// The worker's crate, holding node_modules/.bin/wrangler after `npm ci`.
    #[arg(long, value_name = "DIR", default_value = "edge-worker")]
    pub(crate) worker_dir: PathBuf,
    /// The worker's wrangler.toml [default: beside --worker-dir].
    #[arg(long, value_name = "PATH")]
    pub(crate) wrangler_config: Option<PathBuf>,
    /// Players seeded on the board (at least 100: friend lists and pages draw from them).
    #[arg(long, value_name = "N", default_value = "3000", value_parser = clap::value_parser!(u64).range(100..))]
    pub(crate) players: u64,
    /// Random reads compared, edge against origin.
    #[arg(long, value_name = "N", default_value = "300")]
    pub(crate) queries: u64,
    /// The origin's [snapshots] interval_ms.
    #[arg(long, value_name = "MS", default_value = "200", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) interval_ms: u64,
    /// What catching up may take beyond interval_ms plus the head lifetime, for a shared debug
    /// build.
    #[arg(long, value_name = "MS", default_value = "1500")]
    pub(crate) slack_ms: u64,
    /// The seed of every draw.
    #[arg(long, value_name = "N", default_value = "1")]
    pub(crate) seed: u64,
    /// Only start both, check that the worker answers /edge/stats, stop.
    #[arg(long)]
    pub(crate) smoke: bool,
    /// The whole run's deadline.
    #[arg(long = "timeout-seconds", value_name = "S", default_value = "900", value_parser = harness::seconds)]
    pub(crate) timeout: Duration,
    /// Subscribers of one view in the fan-out measurement, through the edge and then directly
    /// (0: no fan-out measurement).
    #[arg(long, value_name = "N", default_value = "0")]
    pub(crate) fanout_sockets: usize,
    /// How long each side of the fan-out writes.
    #[arg(long, value_name = "S", default_value = "10", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) fanout_seconds: u64,
    /// New bests a second during the fan-out.
    #[arg(long, value_name = "N", default_value = "20", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) fanout_rate: u64,
    /// Keep the temp folder (configs, logs, SQLite file).
    #[arg(long)]
    pub(crate) keep: bool,
}

impl Options for Args {}

fn main() -> ExitCode {
    let args: Args = harness::options();
    // One thread: the harness mostly waits on the two servers, which need the cores more.
    harness::block_on("edge", 1, async {
        let (passed, failed) = tokio::time::timeout(args.timeout, scenarios::run(&args))
            .await
            .map_err(|_| format!("the run passed its deadline of {:?}", args.timeout))??;
        let counts = format!("{passed} scenarios passed, {failed} failed");
        if failed == 0 {
            Ok(Some(counts))
        } else {
            Err(counts)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command line tests/run and the module doc run parse, with their meanings, and the
    /// limits the scenarios need are refused below them.
    #[test]
    fn the_documented_command_lines_parse() {
        let parse = |line: &str| harness::try_options::<Args, _, _>(line.split_whitespace());
        let args = parse("edge --standings-bin target/debug/standings --worker-dir edge-worker").unwrap();
        assert_eq!(args.worker_dir, PathBuf::from("edge-worker"));
        assert_eq!(
            (
                args.players,
                args.queries,
                args.interval_ms,
                args.slack_ms,
                args.smoke
            ),
            (3000, 300, 200, 1500, false)
        );
        assert_eq!(
            (args.wrangler_config, args.timeout),
            (None, Duration::from_secs(900))
        );
        let args = parse("edge --smoke --keep --wrangler-config w.toml").unwrap();
        assert!(args.smoke && args.keep);
        assert!(parse("edge --players 99").is_err());
        assert!(parse("edge --interval-ms 0").is_err());
    }
}
