//! The command line: `serve`, `rebuild` and `import`, each taking `--config FILE`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use standings_core::BoardId;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::config::{Config, Role};
use crate::domain::periods::Period;
use crate::http::auth::Principal;
use crate::store::Store;

const USAGE: &str = "\
usage:
  standings serve   [--config FILE]
  standings rebuild [--config FILE] [--board GAME/MODE/SEASON/SCOPE]
  standings import  [--config FILE] FILE.ndjson

With no --config, the embedded default is used: ./standings-data/standings.toml, written with
fresh random tokens on first start, and SQLite in ./standings-data/.";

struct Args {
    command: String,
    config: Option<PathBuf>,
    board: Option<String>,
    file: Option<PathBuf>,
}

fn parse(args: Vec<String>) -> Result<Args, String> {
    let mut iter = args.into_iter();
    let command = iter.next().ok_or("no command given")?;
    let mut parsed = Args {
        command,
        config: None,
        board: None,
        file: None,
    };
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--config" => parsed.config = Some(iter.next().ok_or("--config needs a file")?.into()),
            "--board" if parsed.command == "rebuild" => {
                parsed.board = Some(iter.next().ok_or("--board needs GAME/MODE/SEASON/SCOPE")?)
            }
            "-h" | "--help" => return Err(String::new()),
            other if other.starts_with('-') => return Err(format!("unknown option {other}")),
            other if parsed.command == "import" && parsed.file.is_none() => parsed.file = Some(other.into()),
            other => return Err(format!("unexpected argument {other:?}")),
        }
    }
    Ok(parsed)
}

/// Runs the command line and returns the process's exit code.
pub fn main(args: Vec<String>) -> ExitCode {
    let args = match parse(args) {
        Ok(args) => args,
        Err(why) => {
            if !why.is_empty() {
                eprintln!("standings: {why}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    // Info and above unless RUST_LOG says otherwise, on stderr.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
    // Before any thread allocates: see `rest` for why.
    if !crate::writer::rest::fix_trim_threshold() {
        eprintln!("standings: could not set the allocator's trim threshold; memory at rest may be higher");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("standings: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match args.command.as_str() {
        "serve" => runtime.block_on(serve(&args)),
        "rebuild" => runtime.block_on(rebuild(&args)),
        "import" => runtime.block_on(import(&args)),
        other => Err(format!("unknown command {other:?}\n{USAGE}")),
    };
    match result {
        Ok(code) => code,
        Err(why) => {
            eprintln!("standings: {why}");
            ExitCode::FAILURE
        }
    }
}

fn load_config(args: &Args) -> Result<(Config, PathBuf, bool), String> {
    Config::load_or_init(args.config.as_deref()).map_err(|e| e.to_string())
}

async fn serve(args: &Args) -> Result<ExitCode, String> {
    let (config, path, fresh) = load_config(args)?;
    if fresh {
        println!(
            "standings: first start; wrote a config with fresh tokens to {} (mode 0600)",
            path.display()
        );
        for token in &config.tokens {
            println!(
                "standings:   {} token ({}): {}",
                token.name, token.role, token.secret
            );
        }
    }
    let started = Instant::now();
    let state = crate::start(&config).await.map_err(|e| e.to_string())?;
    let listener = tokio::net::TcpListener::bind(&config.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
    let boards = state.registry.all().len();
    let restored = match &state.restored {
        crate::writer::checkpoint::Restored::Checkpoint { seq, tail } => {
            format!("from the checkpoint at seq {seq} and {tail} log entries after it")
        }
        crate::writer::checkpoint::Restored::FullReplay { .. } => "by replaying the whole log".to_string(),
    };
    let threads = crate::http::serve::Threads {
        count: config.http_threads,
        pin: config.pin_http_threads,
    };
    // Derived after the store has opened its connections, so that they count as in use.
    let limits = config.connection_limits();
    println!(
        "standings: serving on http://{} with {} connection threads, at most {} connections ({boards} boards ready in {:.2?}, {restored}; config {}; database {})",
        listener.local_addr().map_err(|e| e.to_string())?,
        threads.resolved(),
        limits.max_connections,
        started.elapsed(),
        path.display(),
        redact(&config.database),
    );
    let shutdown = async {
        shutdown_signal().await;
        println!("standings: shutting down (finishing requests, writing a checkpoint)");
    };
    crate::run(listener, state, threads, limits, shutdown)
        .await
        .map_err(|e| e.to_string())?;
    println!("standings: stopped");
    Ok(ExitCode::SUCCESS)
}

/// Ctrl-C, or SIGTERM (what service managers and containers send to stop a process).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut terminate = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(signal) => signal,
            Err(e) => {
                eprintln!("standings: cannot watch for SIGTERM ({e}); stop with Ctrl-C");
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// The database URL without a password.
fn redact(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// A progress line on a terminal, nothing elsewhere.
struct Progress {
    on_terminal: bool,
    label: String,
}

impl Progress {
    fn new(label: &str) -> Progress {
        Progress {
            on_terminal: std::io::stderr().is_terminal(),
            label: label.into(),
        }
    }

    fn update(&self, done: u64) {
        if self.on_terminal {
            eprint!("\r{}: {done}", self.label);
            let _ = std::io::stderr().flush();
        }
    }

    fn finish(&self) {
        if self.on_terminal {
            eprintln!();
        }
    }
}

async fn rebuild(args: &Args) -> Result<ExitCode, String> {
    let (config, _, _) = load_config(args)?;
    let only = match &args.board {
        None => None,
        Some(spec) => {
            let parts: Vec<&str> = spec.split('/').collect();
            let [game, mode, season, scope] = parts[..] else {
                return Err(format!("--board {spec:?} must be GAME/MODE/SEASON/SCOPE"));
            };
            Some(BoardId::new(game, mode, season, scope).map_err(|e| format!("--board {spec:?}: {e}"))?)
        }
    };
    let store = Store::open(&config.database).await.map_err(|e| e.to_string())?;
    let progress = Progress::new("events replayed");
    let started = Instant::now();
    let (registry, _, results) = crate::log::rebuild(&store, only.as_ref(), crate::clock::now_ms(), |n| {
        progress.update(n)
    })
    .await
    .map_err(|e| e.to_string())?;
    progress.finish();
    let replayed = started.elapsed();
    let boards: Vec<_> = registry
        .all()
        .into_iter()
        .filter(|entry| only.as_ref().is_none_or(|o| *o == entry.def.id))
        .collect();
    if let Some(id) = &only
        && boards.is_empty()
    {
        return Err(format!("no board {id}"));
    }
    println!(
        "rebuilt {} boards from the event log in {replayed:.2?}",
        boards.len()
    );
    let token = config
        .tokens
        .iter()
        .find(|t| t.role != Role::Player && t.games.iter().any(|g| g == "*"))
        .map(|t| t.secret.clone());
    let mut mismatches = 0;
    // Results: every stored snapshot must be reproduced with the same digest.
    for entry in &boards {
        let stored = store.results(&entry.def.id).await.map_err(|e| e.to_string())?;
        for s in &stored {
            let rebuilt = results
                .iter()
                .find(|r| r.board == s.board && r.correction == s.correction);
            match rebuilt {
                Some(r) if r.digest == s.digest => {
                    println!(
                        "{} result correction {}: digest {} reproduced",
                        s.board, s.correction, s.digest
                    )
                }
                _ => {
                    mismatches += 1;
                    println!(
                        "{} result correction {}: NOT reproduced by the log",
                        s.board, s.correction
                    );
                }
            }
        }
    }
    // A board the log cannot be carried out on has no digest to compare: it is reported (the
    // replay printed why) and counts as a mismatch, and every other board is still checked.
    for entry in &boards {
        if let Some(broken) = entry.broken() {
            mismatches += 1;
            println!(
                "{}: BROKEN, the log entry at seq {} cannot be carried out on it: {}",
                entry.def.id, broken.seq, broken.why
            );
        }
    }
    let slots: Vec<_> = boards
        .iter()
        .filter(|entry| entry.broken().is_none())
        .flat_map(|entry| entry.instances())
        .collect();
    for slot in slots {
        let started = Instant::now();
        let (digest, players, version) = {
            let board = slot.read();
            (board.digest().to_string(), board.total_players(), board.version())
        };
        let took = started.elapsed();
        let live = live_digest(&config.listen, token.as_deref(), &slot.id, &slot.period).await;
        let verdict = match &live {
            Ok(live) if *live == digest => "matches the live board".to_string(),
            Ok(live) => {
                mismatches += 1;
                format!("DIFFERS from the live board ({live})")
            }
            Err(why) => format!("not compared: {why}"),
        };
        println!(
            "{} [{}]: {} players, board_version {}, digest {digest} ({took:.2?}); {verdict}",
            slot.id, slot.period.key, players, version,
        );
    }
    // The player index is derived from the log too: each sealed run's pages are rebuilt from
    // it and compared (the whole log, so not for one board).
    if only.is_none() {
        let started = Instant::now();
        let (runs, differ) = store.check_player_index().await.map_err(|e| e.to_string())?;
        let took = started.elapsed();
        if differ.is_empty() {
            println!("player index: the pages of {runs} sealed run(s) match the log ({took:.2?})");
        } else {
            mismatches += differ.len();
            println!(
                "player index: {} of {runs} sealed run(s) DIFFER from the log, the runs starting at seqs {differ:?} ({took:.2?})",
                differ.len()
            );
        }
    }
    Ok(if mismatches == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    })
}

/// The digest the running service reports for a board.
async fn live_digest(
    listen: &str,
    token: Option<&str>,
    id: &BoardId,
    period: &Period,
) -> Result<String, String> {
    let mut path = format!(
        "/v1/leaderboards/{}/{}/{}/{}/digest",
        id.game, id.mode, id.season, id.scope
    );
    if let Some(start) = period.start_ms {
        path.push_str(&format!(
            "?period={}&at={}",
            period.kind.as_str(),
            crate::clock::format_rfc3339(start)
        ));
    }
    let (status, body) = http_get(listen, &path, token).await?;
    if status != 200 {
        return Err(format!("the service answered {status} for {path}"));
    }
    let value: serde_json::Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
    value["digest"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| "the service's answer has no digest".into())
}

/// A minimal HTTP/1.1 GET against the local service.
async fn http_get(addr: &str, path: &str, token: Option<&str>) -> Result<(u16, Vec<u8>), String> {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("the service is not running at {addr} ({e})"))?;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .await
        .map_err(|e| e.to_string())?;
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("a malformed HTTP answer")?;
    let head = String::from_utf8_lossy(&response[..split]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("a malformed HTTP status line")?;
    Ok((status, response[split + 4..].to_vec()))
}

async fn import(args: &Args) -> Result<ExitCode, String> {
    let file = args.file.as_ref().ok_or("import needs a FILE.ndjson")?;
    let (config, _, _) = load_config(args)?;
    // The writer assigns commit order itself, so a second writer on the same log must not run.
    if tokio::net::TcpStream::connect(&config.listen).await.is_ok() {
        return Err(format!(
            "a service is listening on {}; stop it before importing, or submit through its batch endpoint",
            config.listen
        ));
    }
    let reader = std::io::BufReader::new(
        std::fs::File::open(file).map_err(|e| format!("cannot open {}: {e}", file.display()))?,
    );
    let state = crate::start(&config).await.map_err(|e| e.to_string())?;
    let principal = Principal {
        name: "import".into(),
        role: Role::Admin,
        games: vec!["*".into()],
        player_id: None,
    };
    let progress = Progress::new("events imported");
    let started = Instant::now();
    let (mut accepted, mut duplicates, mut rejected, mut read) = (0u64, 0u64, 0u64, 0u64);
    let mut batch = Vec::with_capacity(crate::http::write::MAX_BATCH);
    let mut lines = reader.lines();
    let mut line_no = 0u64;
    let state = Arc::clone(&state);
    loop {
        let line = lines.next();
        if let Some(line) = &line {
            line_no += 1;
            let line = line
                .as_ref()
                .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            if line.trim().is_empty() {
                continue;
            }
            // The same reader as a request body: a repeated key stops the import as it
            // refuses a batch.
            let value = crate::http::json_value::read_value(line.as_bytes())
                .map_err(|e| format!("{}:{line_no}: {e}", file.display()))?;
            batch.push(value);
            read += 1;
        }
        if batch.len() == crate::http::write::MAX_BATCH || (line.is_none() && !batch.is_empty()) {
            let answers = crate::http::write::submit_many(&state, &principal, std::mem::take(&mut batch))
                .await
                .map_err(|e| e.to_string())?;
            for answer in answers {
                match answer.status {
                    "ACCEPTED" => accepted += 1,
                    "DUPLICATE" => duplicates += 1,
                    _ => {
                        rejected += 1;
                        if rejected <= 20 {
                            eprintln!(
                                "standings: rejected {:?}: {} {}",
                                answer.event_id,
                                answer.code.unwrap_or_default(),
                                answer.detail.unwrap_or_default()
                            );
                        }
                    }
                }
            }
            progress.update(read);
        }
        if line.is_none() {
            break;
        }
    }
    progress.finish();
    let took = started.elapsed();
    println!(
        "imported {read} events in {took:.2?} ({:.0} events/s): {accepted} accepted, {duplicates} duplicates, {rejected} rejected",
        read as f64 / took.as_secs_f64().max(1e-9)
    );
    if let Err(e) = state.ingest.checkpoint().await {
        eprintln!("standings: the checkpoint after the import failed (the next start replays the log): {e}");
    }
    state.store.close().await;
    Ok(if rejected == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(4)
    })
}
