//! The command line: `serve`, `rebuild`, `import`, `export`, `cluster` and `viewer-link`, one
//! file each, with what they share
//! here (the clap definition, the config and its overrides, redaction, the log subscriber).
//!
//! Every option can also be set in the environment (`STANDINGS_CONFIG`, `STANDINGS_LISTEN`,
//! `STANDINGS_DATABASE`, `STANDINGS_LOG_FORMAT`); an option given on the command line wins. A bad
//! option or argument exits 2 with clap's message, which names it. The logs go to stderr (text or
//! JSON lines, levels by `RUST_LOG`); reports meant for a person or a script (the rebuild's
//! verdicts, the import's totals) go to stdout, and `export` writes its NDJSON there.
//!
//! `serve` stops on Ctrl-C or SIGTERM and writes a checkpoint once the last request is answered.
//! `rebuild` is the proof that the boards are derived state: it replays the log, prints the time
//! and digest per board and compares them with the running service's `/digest`; without `--board`
//! it also rebuilds every sealed run of the player index from the log and compares it. `import`
//! reads NDJSON through the same validation as the batch endpoint, and is refused while a service
//! held by a service (or listens on the configured address), because two writers would break the
//! one-writer rule: `serve` and `import` take the log's lock (`store::LogOwner`) before they
//! open the store and hold it until they exit, while `rebuild` and `export` only read and may
//! run beside a service; `export` writes the log in the
//! format `import` reads (the format lives in `export.rs`, so the two cannot drift).

mod cluster;
mod export;
mod import;
mod progress;
mod rebuild;
mod serve;
mod viewer_link;

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::Config;

/// The Standings origin service and its operator tools.
#[derive(Debug, Parser)]
#[command(name = "standings", version, about, long_about = None)]
#[command(after_help = "With no --config, the embedded default is used: \
./standings-data/standings.toml, written with fresh random tokens on first start, and SQLite in \
./standings-data/.")]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

/// The options every subcommand takes.
#[derive(Debug, Args)]
struct Global {
    /// The config file (TOML).
    #[arg(long, global = true, env = "STANDINGS_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// The address to listen on (or, for rebuild and import, where the service listens),
    /// instead of the config file's `listen`.
    #[arg(long, global = true, env = "STANDINGS_LISTEN", value_name = "ADDR")]
    listen: Option<String>,
    /// The database URL (sqlite://PATH or postgres://...), instead of the config file's
    /// `database`.
    #[arg(
        long,
        global = true,
        env = "STANDINGS_DATABASE",
        value_name = "URL",
        hide_env_values = true
    )]
    database: Option<String>,
    /// How log lines are written to stderr; their level is set by RUST_LOG (default info).
    #[arg(
        long,
        global = true,
        env = "STANDINGS_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Text
    )]
    log_format: LogFormat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    /// One human-readable line per event.
    Text,
    /// One JSON object per line, with the event's fields.
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the API until SIGTERM or Ctrl-C, then write a checkpoint and stop.
    Serve,
    /// Replay the event log, compare every board with the running service and the stored
    /// results; exits 3 when anything differs.
    Rebuild(rebuild::RebuildArgs),
    /// Load an NDJSON file (score events as submitted, or what `export` wrote) through the
    /// writer, with the API's validation and idempotency; the service must be stopped.
    Import(import::ImportArgs),
    /// Write the event log as NDJSON on stdout, in the format `import` reads.
    #[command(long_about = export::LONG_ABOUT)]
    Export(export::ExportArgs),
    /// The cluster of origins over the database (PostgreSQL, with [cluster]).
    Cluster(cluster::ClusterArgs),
    /// Print a link to the board viewer that reads with a short-lived player token (needs
    /// player_jwt_hs256_secret, which a first start writes).
    ViewerLink(viewer_link::ViewerLinkArgs),
}

/// Runs the command line (`args` starts with the program's name) and returns the process's
/// exit code.
pub fn main(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version are answered on stdout with 0; a mistake on stderr with 2.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    init_logs(cli.global.log_format);
    // Before any thread allocates: see `rest` for why.
    if !crate::writer::rest::fix_trim_threshold() {
        tracing::warn!("could not set the allocator's trim threshold; memory at rest may be higher");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the runtime");
            return ExitCode::FAILURE;
        }
    };
    let global = &cli.global;
    let result = match &cli.command {
        Command::Serve => runtime.block_on(serve::serve(global)),
        Command::Rebuild(args) => runtime.block_on(rebuild::rebuild(global, args)),
        Command::Import(args) => runtime.block_on(import::import(global, args)),
        Command::Export(args) => runtime.block_on(export::export(global, args)),
        Command::Cluster(args) => runtime.block_on(cluster::cluster(global, args)),
        Command::ViewerLink(args) => viewer_link::viewer_link(global, args),
    };
    match result {
        Ok(code) => code,
        Err(why) => {
            tracing::error!("{why}");
            ExitCode::FAILURE
        }
    }
}

/// Installs the subscriber: `RUST_LOG` (default `info`), on stderr, as text or JSON lines.
fn init_logs(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only for a person at a terminal; a file or a collector gets plain text.
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// The config file (or the embedded default), with `--listen` and `--database` applied.
/// Returns it with its path and whether it was written just now.
fn load_config(global: &Global) -> Result<(Config, PathBuf, bool), String> {
    // Before anything is written: a first start would otherwise write a config and print fresh
    // tokens for a service that then cannot start.
    if let Some(listen) = &global.listen {
        crate::config::check_listen(listen).map_err(|e| format!("--listen: {e}"))?;
    }
    if let Some(database) = &global.database {
        crate::config::check_database(database).map_err(|e| format!("--database: {e}"))?;
    }
    let (mut config, path, fresh) =
        Config::load_or_init(global.config.as_deref()).map_err(|e| crate::chain::Chain(&e).to_string())?;
    if let Some(listen) = &global.listen {
        config.listen = listen.clone();
    }
    if let Some(database) = &global.database {
        config.database = database.clone();
    }
    Ok((config, path, fresh))
}

/// The database URL as it may be shown: no password, no query string (which may carry one,
/// `?password=`).
fn redact(url: &str) -> String {
    let url = match url.split_once('?') {
        Some((base, _)) => format!("{base}?***"),
        None => url.to_string(),
    };
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url,
            }
        }
        _ => url,
    }
}

/// Takes the log of the configured database for this process (`role` says what it does), or
/// says who holds it: the one-writer rule (`store::LogOwner`).
async fn claim_log(config: &Config, role: &str) -> Result<crate::store::LogOwner, String> {
    let node = crate::store::Node {
        role: role.to_string(),
        host: host_name(),
        pid: std::process::id(),
        listen: None,
        since_ms: crate::clock::now_ms(),
    };
    crate::store::LogOwner::claim(&config.database, &redact(&config.database), node)
        .await
        .map_err(|e| crate::chain::Chain(&e).to_string())
}

/// This machine's name, for the record of who holds a log; Linux keeps it in /proc.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

/// The database's kind, from its URL's scheme (`sqlite:/path` has no `//`).
fn backend(url: &str) -> &str {
    url.split_once(':').map_or("unknown", |(scheme, _)| scheme)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every URL form the config takes names its backend, `sqlite:/path` included.
    #[test]
    fn the_backend_is_the_scheme() {
        assert_eq!(backend("sqlite:/var/lib/standings.db"), "sqlite");
        assert_eq!(backend("sqlite://./data/standings.db"), "sqlite");
        assert_eq!(backend("postgres://db/standings"), "postgres");
        assert_eq!(backend("postgresql://db/standings"), "postgresql");
    }

    #[test]
    fn a_shown_database_url_has_no_password() {
        assert_eq!(
            redact("postgres://app:hunter2@db:5432/standings"),
            "postgres://app:***@db:5432/standings"
        );
        assert_eq!(
            redact("postgres://db/standings?user=app&password=hunter2"),
            "postgres://db/standings?***"
        );
        assert_eq!(
            redact("sqlite://./data/standings.db"),
            "sqlite://./data/standings.db"
        );
        assert_eq!(backend("postgres://db/x"), "postgres");
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn the_old_invocations_still_parse() {
        for args in [
            &["standings", "serve", "--config", "a.toml"][..],
            &["standings", "rebuild", "--config", "a.toml", "--board", "g/m/s/x"],
            &["standings", "rebuild", "--board", "g/m/s/x", "--config", "a.toml"],
            &["standings", "import", "--config", "a.toml", "events.ndjson"],
            &["standings", "serve"],
        ] {
            Cli::try_parse_from(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        }
    }
}
