//! `standings rebuild`: replays the log and compares the boards it builds with the stored
//! results and the running service's digests. On a clustered database (a `[cluster]` table) it
//! replays each partition's log in turn, and the node at `listen` answers for every board (it
//! forwards to the owners).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use standings_core::BoardId;

use super::progress::{Progress, Unit};
use super::{Global, load_config, redact};
use crate::config::Role;
use crate::domain::periods::Period;
use crate::store::Store;
use crate::store::cluster::ClusterStore;

/// The options of `standings rebuild`.
#[derive(Debug, clap::Args)]
pub(super) struct RebuildArgs {
    /// Rebuild one board only.
    #[arg(long, value_name = "GAME/MODE/SEASON/SCOPE", value_parser = parse_board)]
    board: Option<BoardId>,
    /// Exit 4 when a board could not be compared with the running service (it is stopped, or
    /// did not answer): for scripts that must know the comparison happened.
    #[arg(long)]
    require_live: bool,
}

fn parse_board(spec: &str) -> Result<BoardId, String> {
    let parts: Vec<&str> = spec.split('/').collect();
    let [game, mode, season, scope] = parts[..] else {
        return Err("must be GAME/MODE/SEASON/SCOPE".into());
    };
    BoardId::new(game, mode, season, scope).map_err(|e| e.to_string())
}

pub(super) async fn rebuild(global: &Global, args: &RebuildArgs) -> Result<ExitCode, String> {
    let (config, _, _) = load_config(global)?;
    let only = args.board.as_ref();
    let token = config
        .tokens
        .iter()
        .find(|t| t.role != Role::Player && t.games.iter().any(|g| g == "*"))
        .map(|t| t.secret.clone());
    let live = LiveService::new(&config.listen, token);
    let mut checked = Checked::default();
    match &config.cluster {
        None => {
            let store = Store::open(&config.database).await.map_err(|e| e.to_string())?;
            rebuild_store(&store, only, &live, &mut checked).await?;
        }
        Some(_) => {
            let cluster = ClusterStore::existing(&config.database, &redact(&config.database))
                .await
                .map_err(|e| crate::chain::Chain(&e).to_string())?;
            // One board's is in its game's partition alone.
            let of_board = only.map(|id| crate::cluster::lease::partition_of(&id.game, cluster.partitions()));
            for p in (0..cluster.partitions()).filter(|p| of_board.is_none_or(|b| b == *p)) {
                println!("partition {p}:");
                rebuild_store(&cluster.partition(p), only, &live, &mut checked).await?;
            }
            cluster.close().await;
        }
    }
    if let Some(id) = only
        && checked.boards == 0
    {
        return Err(format!("no board {id}"));
    }
    if checked.not_compared > 0 {
        println!(
            "{} not compared with a running service{}",
            crate::words::counted(checked.not_compared as u64, "board was", "boards were"),
            if args.require_live {
                "; exiting 4 (--require-live)"
            } else {
                " (--require-live makes this exit 4)"
            }
        );
    }
    Ok(if checked.mismatches > 0 {
        ExitCode::from(3)
    } else if args.require_live && checked.not_compared > 0 {
        ExitCode::from(4)
    } else {
        ExitCode::SUCCESS
    })
}

/// What the rebuild of every store checked.
#[derive(Default)]
struct Checked {
    /// Boards rebuilt.
    boards: usize,
    /// Results, boards and index runs that differ from the live service or the store.
    mismatches: usize,
    /// Boards not compared with the running service.
    not_compared: usize,
}

/// Rebuilds one log (a single node's, or a partition's) and compares what it builds.
async fn rebuild_store(
    store: &Store,
    only: Option<&BoardId>,
    live: &LiveService,
    checked: &mut Checked,
) -> Result<(), String> {
    let last_seq = store.next_seq().await.map_err(|e| e.to_string())? - 1;
    let mut progress = Progress::new("replaying the log", Unit::Entries, u64::try_from(last_seq).ok());
    let mut previous = 0;
    let started = Instant::now();
    let (registry, _, results) = crate::log::rebuild(store, only, crate::clock::now_ms(), |n| {
        // A board with periods is replayed twice (the current periods, then the closed ones).
        if n < previous {
            progress.restart("replaying the log for closed periods");
        }
        previous = n;
        progress.update(n)
    })
    .await
    .map_err(|e| crate::chain::Chain(&e).to_string())?;
    progress.finish();
    let replayed = started.elapsed();
    let boards: Vec<_> = registry
        .all()
        .into_iter()
        .filter(|entry| only.is_none_or(|o| *o == entry.def.id))
        .collect();
    checked.boards += boards.len();
    println!(
        "rebuilt {} from the event log in {replayed:.2?}",
        crate::words::counted(boards.len() as u64, "board", "boards")
    );
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
        let verdict = match live.digest(&slot.id, &slot.period, last_seq).await {
            Ok(live) if live == digest => "matches the live board".to_string(),
            Ok(live) => {
                mismatches += 1;
                format!("DIFFERS from the live board ({live})")
            }
            Err(why) => {
                checked.not_compared += 1;
                format!("not compared: {why}")
            }
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
    checked.mismatches += mismatches;
    Ok(())
}

/// How long connecting to the running service may take.
const LIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the live service may take to answer a digest: the first one of a version walks
/// the whole board (tens of seconds at tens of millions of players).
const DIGEST_TIMEOUT: Duration = Duration::from_secs(600);

/// The running service, asked for its digests over HTTP/1.1 with keep-alive.
struct LiveService {
    client: Client<HttpConnector, Empty<Bytes>>,
    listen: String,
    token: Option<String>,
}

impl LiveService {
    fn new(listen: &str, token: Option<String>) -> LiveService {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(LIVE_TIMEOUT));
        LiveService {
            client: Client::builder(TokioExecutor::new()).build(connector),
            listen: listen.to_string(),
            token,
        }
    }

    /// The digest the running service reports for a board's period, at or after the log's
    /// entry `through` (the end the rebuild replayed): a node answering from a warm copy that
    /// is behind it waits or asks the owner, so the two compare the same log.
    async fn digest(&self, id: &BoardId, period: &Period, through: i64) -> Result<String, String> {
        let position =
            standings_core::contract::position::Position::new(&id.game, u64::try_from(through).unwrap_or(0));
        let mut url = format!(
            "http://{}/v1/leaderboards/{}/{}/{}/{}/digest?min_position={}",
            self.listen,
            id.game,
            id.mode,
            id.season,
            id.scope,
            position.token()
        );
        if let Some(start) = period.start_ms {
            url.push_str(&format!(
                "&period={}&at={}",
                period.kind.as_str(),
                crate::clock::format_rfc3339(start)
            ));
        }
        let (status, body) = tokio::time::timeout(DIGEST_TIMEOUT, self.get(&url))
            .await
            .map_err(|_| format!("GET {url}: no answer within {DIGEST_TIMEOUT:?}"))??;
        if status != 200 {
            return Err(format!("GET {url}: the service answered {status}"));
        }
        #[derive(serde::Deserialize)]
        struct Digest {
            digest: String,
        }
        serde_json::from_slice::<Digest>(&body)
            .map(|d| d.digest)
            .map_err(|e| format!("GET {url}: the answer has no digest ({e})"))
    }

    async fn get(&self, url: &str) -> Result<(u16, Bytes), String> {
        let mut request = hyper::Request::get(url);
        if let Some(token) = &self.token {
            request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request
            .body(Empty::new())
            .map_err(|e| format!("GET {url}: {e}"))?;
        let response = self.client.request(request).await.map_err(|e| {
            if e.is_connect() {
                format!("the service is not running at {url} ({})", chain(&e))
            } else {
                format!("GET {url}: {}", chain(&e))
            }
        })?;
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("GET {url}: reading the answer: {e}"))?
            .to_bytes();
        Ok((status, body))
    }
}

/// An error with its sources, `outer: inner: ...`.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}
