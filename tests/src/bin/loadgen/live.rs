//! `loadgen live`: live subscriptions under load, and the same fan-out through Redis pub/sub.
//!
//! One run starts its own `standings serve` with a `[live]` table whose counts admit every
//! subscriber (and `--live-config`'s settings, such as admission's share of the window), seeds
//! one board through the batch endpoint, and then, each phase measured for `--seconds` after
//! `--warmup-seconds`:
//!
//! 1. writes with no subscribers: single durable submissions paced open-loop at
//!    `--events-per-second` (ack latency counted from each event's scheduled time, so a
//!    service that falls behind shows it), then the same submissions closed-loop at the
//!    highest rate `--connections` connections reach;
//! 2. resident memory before and after opening `--subscribers` subscribers (SSE and WebSocket,
//!    `top`, `around` and `player` views), idle for `--idle-seconds`; then, for comparison,
//!    with `--plain-connections` idle keep-alive connections beside them. With
//!    `--open-under-load` the paced writes run while they open, so that admission sees the
//!    windows' work grow view by view (their ack latency meanwhile is reported). A subscription
//!    the service refuses to protect itself (503 `LIVE_BUSY`, 429, 503 `SUBSCRIBERS_FULL`) is
//!    counted and reported, and the run goes on with those admitted;
//! 3. the same two write phases with every subscriber reading: the notification lag from the
//!    service's `standings_live_notify_lag_seconds` histogram (bucket deltas between scrapes,
//!    interpolated), and at the client from the 202 of an event that raised a watched player
//!    to the receipt of the first message showing that value (see `subscribe::Watched`);
//!    every delta must chain on the subscriber's version;
//! 4. Redis pub/sub: as many connections `SUBSCRIBE`d to one channel, one `PUBLISH` per window
//!    of the median-sized `top` delta received in phase 3 (its first bytes the send time).
//!
//! A share of the events (`--watched-share`) raises a player that a `player:P` view follows;
//! the rest go to random members no such view follows, so the generator knows every followed
//! player's value and can tie each of those events to the message that shows it.
//!
//! It prints a report and one `loadgen-live: {json}` line, and exits non-zero on any error, a
//! subscriber that failed (a refusal above is not a failure), or a delta that did not chain;
//! targets missed are results.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use standings_tests::harness;

use crate::Run;
use crate::bench::{self, BOARD_PATH, EventIds};
use crate::cpu;
use crate::http::HttpConn;
use crate::latency::Histogram;
use crate::pubsub;
use crate::scrape::{LAG_METRIC, Scrape, WINDOW_METRIC, quantile_between};
use crate::service::{Database, SERVICE_TOKEN, Service};
use crate::subscribe::{self, KINDS, REFUSALS, Shape, Spec, Tally, Target, Transport, Watched};
use crate::workload::{Population, Rng, player_id};
use crate::writes::{Load, write_phase};

/// Live subscriptions under load: SSE and WebSocket subscribers on one board under a paced write
/// load, beside the same fan-out through Redis pub/sub.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Players seeded on the board.
    #[arg(long, value_name = "N", default_value = "1000000", value_parser = harness::at_least_one::<u64>)]
    members: u64,
    /// Live subscribers, one connection each.
    #[arg(long, value_name = "N", default_value = "10000")]
    subscribers: usize,
    /// The subscribers' transports, as weights.
    #[arg(long, value_name = "SSE:WS", default_value = "1:1", value_parser = weights::<2>)]
    mix: [u64; 2],
    /// The subscribers' views, as weights.
    #[arg(long, value_name = "TOP:AROUND:PLAYER", default_value = "1:1:1", value_parser = weights::<3>)]
    views: [u64; 3],
    /// The top view's N (1 to 100, the service's limit).
    #[arg(long, value_name = "N", default_value = "100", value_parser = clap::value_parser!(u64).range(1..=100))]
    top: u64,
    /// The around view's R (0 to 25, the service's limit).
    #[arg(long, value_name = "R", default_value = "5", value_parser = clap::value_parser!(u64).range(..=25))]
    radius: u64,
    /// Draw the around and player views' players from N players (0 = from every member).
    #[arg(long, value_name = "N", default_value = "0")]
    view_players: u64,
    /// The paced write load, in events per second.
    #[arg(long, value_name = "R", default_value = "5000", value_parser = harness::positive)]
    events_per_second: f64,
    /// The share of events that raise a player some player view follows, which the
    /// client-side lag is measured on (0 to 1).
    #[arg(long, value_name = "F", default_value = "0.1", value_parser = share)]
    watched_share: f64,
    /// The share of the other events that set a new best of the whole board (a random member
    /// raised above every value so far), so that a top view changes with each: with
    /// `--views 1:0:0` and a paced rate of a few per window this is one hot view whose every
    /// window brings a delta to every subscriber (0 to 1).
    #[arg(long, value_name = "F", default_value = "0", value_parser = share)]
    record_share: f64,
    /// Measured seconds per phase.
    #[arg(long, value_name = "S", default_value = "10", value_parser = harness::positive)]
    seconds: f64,
    /// Unmeasured seconds before each phase.
    #[arg(long, value_name = "S", default_value = "1", value_parser = harness::non_negative)]
    warmup_seconds: f64,
    /// How long the subscribers sit idle before memory is read.
    #[arg(long, value_name = "S", default_value = "5", value_parser = harness::non_negative)]
    idle_seconds: f64,
    /// Then, for comparison, open N keep-alive connections that make one request each and sit
    /// idle as long [default: half --subscribers].
    #[arg(long, value_name = "N")]
    plain_connections: Option<usize>,
    /// Every Nth subscriber also applies each message to its view, which must equal a fresh
    /// read once the writes stop (0 = none).
    #[arg(long, value_name = "N", default_value = "100")]
    verify_every: u64,
    /// Writing connections, paced and closed-loop.
    #[arg(long, value_name = "N", default_value = "64", value_parser = harness::at_least_one::<usize>)]
    connections: usize,
    /// Subscriber connections opened at once.
    #[arg(long, value_name = "N", default_value = "200", value_parser = harness::at_least_one::<usize>)]
    connecting: usize,
    /// The service's [live] window_ms, and the Redis publisher's period (10 to 60000, the
    /// service's limits).
    #[arg(long, value_name = "MS", default_value = "250", value_parser = clap::value_parser!(u64).range(10..=60_000))]
    window_ms: u64,
    /// More [live] settings for the service, `key = value` lines (one flag each, or joined by
    /// newlines); they win over the generator's own, e.g. 'max_window_share_percent = 100'
    /// turns admission off [default: none, the service's defaults].
    #[arg(long, value_name = "TOML", value_parser = live_config)]
    live_config: Vec<String>,
    /// Open the subscribers while the paced writes run, so that admission sees the windows'
    /// work grow as views are added.
    #[arg(long)]
    open_under_load: bool,
    /// The Redis message size; 0 = a top delta received in the run.
    #[arg(long, value_name = "N", default_value = "0")]
    pubsub_bytes: usize,
    /// Before each measured phase, wait up to S seconds for the machine to be quiet (< 0.2
    /// cores busy outside the generator); 0 = do not wait.
    #[arg(long = "quiet-wait-seconds", value_name = "S", default_value = "60", value_parser = harness::seconds)]
    quiet_wait: Duration,
    /// Concurrent batch uploads while seeding.
    #[arg(long, value_name = "N", default_value = "8", value_parser = harness::at_least_one::<usize>)]
    load_connections: usize,
    /// Events per seeding batch (1 to 1000, the service's batch limit).
    #[arg(long, value_name = "N", default_value = "1000", value_parser = crate::batch_size)]
    batch: u64,
    /// The service binary.
    #[arg(long, value_name = "PATH", default_value = "target/release/standings")]
    standings_bin: PathBuf,
    /// The Redis peer (on 127.0.0.1).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:6379", value_parser = crate::local_addr)]
    redis: String,
    #[command(flatten)]
    pub(crate) run: Run,
}

impl Args {
    /// The idle keep-alive connections opened for comparison with the subscribers.
    fn plain(&self) -> usize {
        self.plain_connections.unwrap_or(self.subscribers / 2)
    }

    /// The `--live-config` settings, one `key = value` line each, in the order given.
    fn live_settings(&self) -> Vec<&str> {
        self.live_config
            .iter()
            .flat_map(|value| value.lines())
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .collect()
    }

    /// Refuses what spans several flags, or what the generator must own.
    pub(crate) fn check(&self) -> Result<(), String> {
        // The generator paces Redis and judges the lag by the window, so it must know it.
        if self.live_settings().iter().any(|line| {
            line.split_once('=')
                .is_some_and(|(key, _)| key.trim() == "window_ms")
        }) {
            return Err("set the window with --window-ms, not --live-config".into());
        }
        Ok(())
    }
}

/// Weights like `1:1:1`.
fn weights<const N: usize>(value: &str) -> Result<[u64; N], String> {
    let parts: Vec<u64> = value
        .split(':')
        .map(|p| p.parse::<u64>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("must be {N} whole numbers joined by ':'"))?;
    let parts: [u64; N] = parts.try_into().map_err(|_| format!("must have {N} parts"))?;
    if parts.iter().sum::<u64>() == 0 {
        return Err("must have a weight above zero".into());
    }
    Ok(parts)
}

/// `--watched-share`: from 0 to 1.
fn share(value: &str) -> Result<f64, String> {
    let share = harness::non_negative(value)?;
    if share > 1.0 {
        return Err("must be from 0 to 1".into());
    }
    Ok(share)
}

/// One `--live-config` value: every line that is not blank must be `key = value`.
fn live_config(value: &str) -> Result<String, String> {
    for line in value.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.split_once('=').is_none_or(|(key, _)| key.trim().is_empty()) {
            return Err(format!("{line:?} is not a `key = value` line"));
        }
    }
    Ok(value.to_string())
}

/// One write phase's figures.
struct Writes {
    /// Acknowledged (202) within the measured window.
    acked: u64,
    window: Duration,
    /// Paced: from each event's scheduled time to its 202; closed-loop: from its send.
    latency: Histogram,
    cpu: cpu::Usage,
}

impl Writes {
    fn rate(&self) -> f64 {
        self.acked as f64 / self.window.as_secs_f64()
    }
}

/// What the subscribers received in one window.
#[derive(Clone, Copy, Default)]
struct Received {
    messages: [u64; 6],
    socket_bytes: u64,
    delta_bytes: u64,
    violations: u64,
    ended: u64,
}

impl Received {
    fn take(tally: &Tally) -> Received {
        let mut messages = [0; 6];
        for (out, m) in messages.iter_mut().zip(&tally.messages) {
            *out = m.load(Ordering::Relaxed);
        }
        Received {
            messages,
            socket_bytes: tally.socket_bytes.load(Ordering::Relaxed),
            delta_bytes: tally.delta_bytes.load(Ordering::Relaxed),
            violations: tally.violations.load(Ordering::Relaxed),
            ended: tally.ended.load(Ordering::Relaxed),
        }
    }

    fn since(&self, earlier: &Received) -> Received {
        let mut messages = [0; 6];
        for (i, out) in messages.iter_mut().enumerate() {
            *out = self.messages[i] - earlier.messages[i];
        }
        Received {
            messages,
            socket_bytes: self.socket_bytes - earlier.socket_bytes,
            delta_bytes: self.delta_bytes - earlier.delta_bytes,
            violations: self.violations - earlier.violations,
            ended: self.ended - earlier.ended,
        }
    }

    fn all(&self) -> u64 {
        self.messages.iter().sum()
    }

    fn of(&self, kind: &str) -> u64 {
        KINDS
            .iter()
            .position(|k| *k == kind)
            .map_or(0, |i| self.messages[i])
    }
}

/// A phase with subscribers: the writes, what arrived, and both lags.
struct Live {
    writes: Writes,
    received: Received,
    /// The service's histogram over the window: (p50, p99, observations), in seconds.
    server_lag: Option<(f64, f64, f64)>,
    /// The service's window work over the window: (p50, p99, windows), in seconds.
    window_work: Option<(f64, f64, f64)>,
    /// The mean of a window's work over the window, in seconds: what admission's moving
    /// average follows.
    window_mean: Option<f64>,
    /// The client-side lag of watched players' events.
    client_lag: Histogram,
    /// Watched events acknowledged but never shown to their player's subscribers by the
    /// phase's end.
    unmatched: u64,
    /// What the service's live counters moved by.
    counters: Vec<(String, f64)>,
}

/// Makes sure this process (and so the service it starts) may open `needed` descriptors:
/// raises the soft `RLIMIT_NOFILE` to the hard one with `prlimit` (the crate forbids the
/// `unsafe` a direct `setrlimit` needs), or says how to.
pub(crate) fn descriptors(needed: u64) -> Result<u64, String> {
    let read = || -> Result<(u64, u64), String> {
        let text = std::fs::read_to_string("/proc/self/limits")
            .map_err(|e| format!("cannot read /proc/self/limits: {e}"))?;
        let line = text
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .ok_or("/proc/self/limits has no open files line")?;
        let mut fields = line["Max open files".len()..].split_whitespace();
        let mut limit = || -> u64 {
            match fields.next() {
                Some("unlimited") => u64::MAX,
                Some(n) => n.parse().unwrap_or(0),
                None => 0,
            }
        };
        Ok((limit(), limit()))
    };
    let (soft, hard) = read()?;
    if soft < needed && hard > soft {
        let hard_text = if hard == u64::MAX {
            "unlimited".to_string()
        } else {
            hard.to_string()
        };
        let status = std::process::Command::new("prlimit")
            .arg("--pid")
            .arg(std::process::id().to_string())
            .arg(format!("--nofile={hard_text}:{hard_text}"))
            .status();
        if !status.is_ok_and(|s| s.success()) {
            eprintln!("loadgen: could not raise the descriptor limit with prlimit");
        }
    }
    let (soft, hard) = read()?;
    if soft < needed {
        return Err(format!(
            "the descriptor limit is {soft} (hard {hard}) and the run needs {needed}: raise it (`ulimit -n`) or open fewer --subscribers"
        ));
    }
    Ok(soft)
}

/// The subscribers: transports and views spread by the weights, so every pairing occurs;
/// the players of `around` and `player` views drawn from the members (or a pool of them).
fn specs(args: &Args, population: &Population) -> Vec<Spec> {
    let mut rng = Rng::stream(args.run.seed, 0x0076_6965_7773);
    let pool: Vec<u64> = (0..args.view_players)
        .map(|_| rng.below(population.members))
        .collect();
    let pick = |weights: &[u64], n: u64| {
        let mut n = n % weights.iter().sum::<u64>();
        weights
            .iter()
            .position(|&w| {
                if n < w {
                    true
                } else {
                    n -= w;
                    false
                }
            })
            .unwrap_or(0)
    };
    let transports: u64 = args.mix.iter().sum();
    (0..args.subscribers as u64)
        .map(|i| {
            let transport = [Transport::Sse, Transport::WebSocket][pick(&args.mix, i)];
            let shape = [Shape::Top, Shape::Around, Shape::Player][pick(&args.views, i / transports)];
            let member = if pool.is_empty() {
                rng.below(population.members)
            } else {
                pool[rng.below(pool.len() as u64) as usize]
            };
            let id = String::from_utf8_lossy(&player_id(member)).into_owned();
            let view = match shape {
                Shape::Top => format!("top:{}", args.top),
                Shape::Around => format!("around:{id}:{}", args.radius),
                Shape::Player => format!("player:{id}"),
            };
            Spec {
                transport,
                shape,
                view,
                watched: (shape == Shape::Player).then_some(member),
                verify: args.verify_every > 0 && i.is_multiple_of(args.verify_every),
                index: i as usize,
            }
        })
        .collect()
}

/// Waits, up to `--quiet-wait-seconds`, for the machine to be quiet before a measured phase, so
/// that both sides of each comparison get the same chance of one; what load remains is in the
/// phase's CPU figures.
async fn quiet(args: &Args, watched_pids: cpu::Watched, phase: &str) {
    if args.quiet_wait.is_zero() {
        return;
    }
    let (waited, busy) = cpu::wait_quiet(watched_pids, 0.2, args.quiet_wait).await;
    eprintln!(
        "loadgen live: {phase}: waited {waited:.1?} for a quiet machine ({busy:.2} cores busy outside the generator)"
    );
}

/// Runs a write phase with CPU accounting, and scrapes `/metrics` at the edges of its window.
async fn measured_writes(
    args: &Args,
    load: &Arc<Load>,
    phase: u64,
    rate: Option<f64>,
    watched_pids: cpu::Watched,
    mut at_edges: Option<&mut Vec<Scrape>>,
) -> Result<Writes, String> {
    let started = Instant::now();
    let measured_from = started + Duration::from_secs_f64(args.warmup_seconds);
    let window = Duration::from_secs_f64(args.seconds);
    let until = measured_from + window;
    let writing = {
        let load = load.clone();
        let connections = args.connections;
        tokio::spawn(async move {
            write_phase(
                &load,
                phase,
                rate,
                connections,
                started,
                measured_from,
                until,
                None,
            )
            .await
        })
    };
    tokio::time::sleep_until(measured_from.into()).await;
    if let Some(scrapes) = at_edges.as_deref_mut() {
        scrapes.push(Scrape::take(&load.addr).await?);
    }
    let cpu_from = cpu::Snapshot::take(watched_pids);
    tokio::time::sleep_until(until.into()).await;
    let cpu = cpu_from.until(&cpu::Snapshot::take(watched_pids));
    if let Some(scrapes) = at_edges {
        scrapes.push(Scrape::take(&load.addr).await?);
    }
    let (acked, latency) = writing
        .await
        .map_err(|e| format!("a write phase failed: {e}"))??;
    Ok(Writes {
        acked,
        window,
        latency,
        cpu,
    })
}

/// A write phase with the subscribers reading.
async fn live_phase(
    args: &Args,
    load: &Arc<Load>,
    phase: u64,
    rate: Option<f64>,
    tally: &Arc<Tally>,
    watched_pids: cpu::Watched,
) -> Result<Live, String> {
    // The lag histogram is read from bucket deltas, and what arrives is counted, over the
    // measured window only; the client lags of the warm-up are dropped when the window opens.
    let mut scrapes = Vec::new();
    let started = Instant::now();
    let opens = started + Duration::from_secs_f64(args.warmup_seconds);
    let closes = opens + Duration::from_secs_f64(args.seconds);
    let counting = {
        let tally = tally.clone();
        let watched = load.watched.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(opens.into()).await;
            let _ = watched.take();
            if phase == PACED_LIVE {
                tally.capture_top.store(true, Ordering::Relaxed);
            }
            let from = Received::take(&tally);
            tokio::time::sleep_until(closes.into()).await;
            tally.capture_top.store(false, Ordering::Relaxed);
            Received::take(&tally).since(&from)
        })
    };
    let writes = measured_writes(args, load, phase, rate, watched_pids, Some(&mut scrapes)).await?;
    let received = counting.await.map_err(|e| e.to_string())?;
    // The events of the window's last moments are matched once their messages are out.
    tokio::time::sleep(Duration::from_millis(2 * args.window_ms + 100)).await;
    let (client_lag, unmatched) = load.watched.take();
    let [before, after] = <[Scrape; 2]>::try_from(scrapes).map_err(|_| "two scrapes expected")?;
    let median_and_p99 = |name: &str| {
        let (b, a) = (before.buckets(name), after.buckets(name));
        match (quantile_between(&b, &a, 0.5), quantile_between(&b, &a, 0.99)) {
            (Some((p50, n)), Some((p99, _))) => Some((p50, p99, n)),
            _ => None,
        }
    };
    let server_lag = median_and_p99(LAG_METRIC);
    let window_work = median_and_p99(WINDOW_METRIC);
    let moved = |suffix: &str| {
        let key = format!("{WINDOW_METRIC}_{suffix}");
        Some(after.0.get(&key)? - before.0.get(&key)?)
    };
    let window_mean = match (moved("sum"), moved("count")) {
        (Some(sum), Some(count)) if count > 0.0 => Some(sum / count),
        _ => None,
    };
    let earlier = before.live_counters();
    let counters = after
        .live_counters()
        .into_iter()
        .map(|(k, v)| {
            let was = earlier.iter().find(|(e, _)| *e == k).map_or(0.0, |(_, w)| *w);
            (k, v - was)
        })
        .collect();
    Ok(Live {
        writes,
        received,
        server_lag,
        window_work,
        window_mean,
        client_lag,
        unmatched,
        counters,
    })
}

/// Opens `--plain-connections` keep-alive connections beside the idle subscribers, each making
/// one request, and reads VmRSS after they sat idle as long as the subscribers did: what a
/// connection costs the service without a subscription. They are closed after.
async fn idle_connections(args: &Args, service: &Service) -> Result<Option<u64>, String> {
    let plain = args.plain();
    if plain == 0 {
        return Ok(None);
    }
    let mut conns = Vec::with_capacity(plain);
    for _ in 0..plain {
        let mut conn = HttpConn::connect(&service.addr, SERVICE_TOKEN).await?;
        let answer = conn.get("/readyz").await?;
        if answer.status != 200 {
            return Err(format!("/readyz answered {}", answer.status));
        }
        conns.push(conn);
    }
    tokio::time::sleep(Duration::from_secs_f64(args.idle_seconds)).await;
    let (rss, _) = service.resident()?;
    drop(conns);
    eprintln!(
        "loadgen live: VmRSS {} MiB with {plain} idle keep-alive connections beside the subscribers",
        rss >> 20
    );
    Ok(Some(rss))
}

/// Once the writes have stopped and their last window is out, compares every verifying
/// subscriber's view, applied from its messages, with a fresh read of the same view: they must
/// be equal entry for entry. A window that takes long may still be on its way, so a difference
/// is looked at again for a few seconds before it counts. Returns how many were checked and
/// differ, and the first difference.
async fn check_views(
    args: &Args,
    addr: &str,
    tally: &Tally,
) -> Result<(usize, usize, Option<String>), String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        tokio::time::sleep(Duration::from_millis(2 * args.window_ms + 200)).await;
        let checked = compare_views(args, addr, tally).await?;
        if checked.1 == 0 || Instant::now() >= deadline {
            return Ok(checked);
        }
    }
}

/// One pass of [`check_views`].
async fn compare_views(
    args: &Args,
    addr: &str,
    tally: &Tally,
) -> Result<(usize, usize, Option<String>), String> {
    let held: Vec<subscribe::Held> = tally
        .views
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .cloned()
        .collect();
    let mut conn = HttpConn::connect(addr, SERVICE_TOKEN).await?;
    let (mut differ, mut first) = (0, None);
    for view in &held {
        let player = view.spec.view.split(':').nth(1).unwrap_or_default();
        let (path, field) = match view.spec.shape {
            Shape::Top => (format!("{BOARD_PATH}/top?limit={}", args.top), "entries"),
            Shape::Around => (
                format!("{BOARD_PATH}/players/{player}/nearby?radius={}", args.radius),
                "entries",
            ),
            Shape::Player => (format!("{BOARD_PATH}/players/{player}/rank"), ""),
        };
        let answer = conn.get(&path).await?;
        let fresh = match answer.status {
            200 => {
                let value: serde_json::Value = serde_json::from_slice(conn.body(&answer))
                    .map_err(|e| format!("{path} is not JSON: {e}"))?;
                subscribe::entries_of(if field.is_empty() { &value } else { &value[field] })?
            }
            // A player with no score: the view is empty.
            404 if view.spec.shape != Shape::Top => Vec::new(),
            status => return Err(format!("{path} answered {status}: {}", conn.body_text(&answer))),
        };
        if fresh != view.entries {
            differ += 1;
            first.get_or_insert_with(|| {
                format!(
                    "{} at version {} holds {:?}, a fresh read {:?}",
                    view.spec.view, view.version, view.entries, fresh
                )
            });
        }
    }
    Ok((held.len(), differ, first))
}

/// The paced phase with subscribers, in which a top delta is kept for the Redis side.
const PACED_LIVE: u64 = 3;
/// The paced writes while the subscribers open (`--open-under-load`).
const OPENING: u64 = 5;

/// The service's `[live]` settings: the window, subscriber counts that admit every subscriber,
/// then `--live-config`'s lines, which take the place of the generator's of the same key.
fn live_table(args: &Args) -> String {
    let room = args.subscribers as u64 + 16;
    let ours = [
        ("window_ms", args.window_ms),
        ("max_subscribers_per_token", room),
        ("max_subscribers_per_board", room),
        ("max_subscribers", room),
    ];
    let settings = args.live_settings();
    let given = |key: &str| {
        settings
            .iter()
            .any(|line| line.split_once('=').is_some_and(|(k, _)| k.trim() == key))
    };
    let mut table = String::new();
    for (key, value) in ours {
        if !given(key) {
            table.push_str(&format!("{key} = {value}\n"));
        }
    }
    for line in &settings {
        table.push_str(line);
        table.push('\n');
    }
    table
}

/// How long after the last write resident memory is read: past the writer's 2 s of idleness
/// after which it hands back memory, as in the main benchmark.
const REST: Duration = Duration::from_secs(4);

pub(crate) async fn run(args: &Args) -> Result<(), String> {
    let plain = args.plain();
    let needed = (args.subscribers + plain + args.connections) as u64 + 512;
    let limit = descriptors(needed)?;
    let population = Population::new(args.members, args.run.seed)?;
    let extra = format!(
        "max_connections = {}\n\n[live]\n{}",
        args.subscribers + plain + args.connections + 256,
        live_table(args)
    );
    let mut service = Service::prepare_with(
        &args.standings_bin,
        Database::Sqlite,
        args.run.keep,
        "loadgen-live",
        &extra,
    )?;
    eprintln!(
        "loadgen live: {} members, {} subscribers, {} events/s, {}s per phase; service on {}, Redis on {}; descriptor limit {limit}",
        args.members, args.subscribers, args.events_per_second, args.seconds, service.addr, args.redis
    );
    let result = measure(args, population, &mut service).await;
    let report = result.inspect_err(|_| eprintln!("loadgen: {}", service.log_tail()))?;
    if let Err(e) = service.stop(Duration::from_secs(60)) {
        eprintln!("loadgen: {e}");
    }
    print_report(args, &report);
    report.check()
}

/// The figures of a whole run.
struct Report {
    specs: [usize; 6],
    followed: usize,
    load: Duration,
    quiet_paced: Writes,
    quiet_max: Writes,
    rss_before: u64,
    rss_idle: u64,
    /// VmRSS with the plain connections open beside the idle subscribers.
    rss_plain: Option<u64>,
    /// Views checked against a fresh read, how many differed, and the first difference.
    checked: (usize, usize, Option<String>),
    opened_in: Duration,
    /// Who was admitted and who refused.
    admission: Admission,
    /// The paced writes while the subscribers opened (`--open-under-load`).
    opening_writes: Option<Writes>,
    paced: Live,
    max: Live,
    failed: u64,
    before_ack: u64,
    errors: Vec<String>,
    message: MessageSource,
    redis: pubsub::FanOut,
}

/// What the service admitted of the subscribers.
struct Admission {
    /// Subscribers that had their snapshot.
    admitted: usize,
    /// The distinct views among them.
    distinct_views: usize,
    /// Refused subscriptions, by [`REFUSALS`].
    refused: [u64; 3],
    /// The service's `standings_live_busy_refusals_total` after the opening.
    busy_refusals: Option<f64>,
}

impl Admission {
    /// Once every subscriber is open or refused.
    fn of(specs: &[Spec], tally: &Tally, metrics: &Scrape) -> Admission {
        let refused_specs = tally.refused_specs.lock().unwrap_or_else(|e| e.into_inner());
        let refused: std::collections::HashSet<usize> = refused_specs.iter().copied().collect();
        let distinct_views = specs
            .iter()
            .filter(|s| !refused.contains(&s.index))
            .map(|s| s.view.as_str())
            .collect::<std::collections::HashSet<_>>()
            .len();
        Admission {
            admitted: tally.ready.load(Ordering::Relaxed) as usize,
            distinct_views,
            refused: std::array::from_fn(|i| tally.refused[i].load(Ordering::Relaxed)),
            busy_refusals: metrics.0.get("standings_live_busy_refusals_total").copied(),
        }
    }

    /// `N LIVE_BUSY, ...` for the refusals that occurred, or `none`.
    fn refusals(&self) -> String {
        let named: Vec<String> = REFUSALS
            .iter()
            .zip(self.refused)
            .filter(|(_, n)| *n > 0)
            .map(|((status, code), n)| format!("{n} {status} {code}"))
            .collect();
        if named.is_empty() {
            "none".into()
        } else {
            named.join(", ")
        }
    }
}

/// Where the Redis message came from.
enum MessageSource {
    /// A top delta received in the run.
    TopDelta,
    /// `--pubsub-bytes`, or the mean delta size when no top delta came.
    Sized(&'static str),
}

impl Report {
    fn check(&self) -> Result<(), String> {
        if self.failed > 0 {
            return Err(format!(
                "{} subscribers failed: {}",
                self.failed,
                self.errors.join("; ")
            ));
        }
        if let (_, differ, Some(first)) = &self.checked {
            return Err(format!(
                "{differ} views held by subscribers differ from a fresh read; the first: {first}"
            ));
        }
        let violations = self.paced.received.violations + self.max.received.violations;
        if violations > 0 {
            return Err(format!(
                "{violations} deltas did not chain on the subscriber's version"
            ));
        }
        Ok(())
    }
}

async fn measure(args: &Args, population: Population, service: &mut Service) -> Result<Report, String> {
    service.start(args.run.ready_timeout).await?;
    bench::define_board(&service.addr).await?;
    let watched_pids = cpu::Watched {
        standings: service.pid().ok_or("the service is not running")?,
        redis: bench::redis_pid(&args.redis).await?,
    };
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let plan = Arc::new(bench::Plan {
        population,
        standings_addr: service.addr.clone(),
        redis_addr: args.redis.clone(),
        redis_key: Vec::new(),
        connections: args.load_connections,
        warmup: Duration::ZERO,
        measure: Duration::ZERO,
        nonce,
        event_ids: EventIds::Member,
    });
    eprintln!(
        "loadgen live: seeding {} members (batches of {})",
        args.members, args.batch
    );
    let load_took =
        bench::load_standings(&plan, args.batch, args.load_connections, args.run.load_timeout).await?;
    eprintln!(
        "loadgen live: seeded in {load_took:.2?} = {:.0} events/s",
        args.members as f64 / load_took.as_secs_f64()
    );

    // The views are drawn first, so that no random event of any phase touches a player a
    // player view follows: the generator then knows each such player's value exactly.
    let specs = specs(args, &population);
    let watched = Arc::new(Watched::default());
    let mut followed = Vec::new();
    for spec in &specs {
        if let Some(member) = spec.watched {
            if !watched.is_followed(member) {
                followed.push(member);
            }
            // Once per subscriber: a refused one is taken off again.
            watched.follow(member, population.standing(member).value);
        }
    }
    let mut counts = [0usize; 6];
    for spec in &specs {
        let t = usize::from(spec.transport == Transport::WebSocket);
        let v = match spec.shape {
            Shape::Top => 0,
            Shape::Around => 1,
            Shape::Player => 2,
        };
        counts[t * 3 + v] += 1;
    }
    let load = Arc::new(Load {
        addr: service.addr.clone(),
        population,
        nonce,
        watched: watched.clone(),
        followed,
        share: args.watched_share,
        record_share: args.record_share,
        record: std::sync::atomic::AtomicI64::new(crate::workload::MAX_VALUE as i64 + 1),
    });

    eprintln!("loadgen live: writes with no subscribers");
    quiet(args, watched_pids, "paced, no subscribers").await;
    let quiet_paced =
        measured_writes(args, &load, 1, Some(args.events_per_second), watched_pids, None).await?;
    report_writes("paced, no subscribers", &quiet_paced);
    quiet(args, watched_pids, "closed-loop, no subscribers").await;
    let quiet_max = measured_writes(args, &load, 2, None, watched_pids, None).await?;
    report_writes("closed-loop, no subscribers", &quiet_max);

    tokio::time::sleep(REST).await;
    let (rss_before, _) = service.resident()?;
    let tally = Arc::new(Tally::default());
    let target = Arc::new(Target {
        addr: service.addr.clone(),
        board_path: BOARD_PATH.to_string(),
        token: SERVICE_TOKEN.to_string(),
    });
    eprintln!(
        "loadgen live: opening {} subscribers ({} at once); VmRSS {} MiB before",
        specs.len(),
        args.connecting,
        rss_before >> 20
    );
    if args.open_under_load {
        quiet(args, watched_pids, "opening under the paced writes").await;
    }
    let opening = Instant::now();
    let opening_cpu = cpu::Snapshot::take(watched_pids);
    // With `--open-under-load`, the paced writes run until every subscriber is open or refused.
    let opening_load = if args.open_under_load {
        let stop = Arc::new(AtomicBool::new(false));
        let (load, stopped) = (load.clone(), stop.clone());
        let (rate, connections) = (args.events_per_second, args.connections);
        let task = tokio::spawn(async move {
            let far = opening + Duration::from_secs(86_400);
            write_phase(
                &load,
                OPENING,
                Some(rate),
                connections,
                opening,
                opening,
                far,
                Some(stopped),
            )
            .await
        });
        Some((stop, task))
    } else {
        None
    };
    let mut subscribers = Vec::with_capacity(specs.len());
    for wave in specs.chunks(args.connecting) {
        for spec in wave {
            subscribers.push(tokio::spawn(subscribe::run(
                target.clone(),
                spec.clone(),
                tally.clone(),
                watched.clone(),
            )));
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        while tally.ready.load(Ordering::Relaxed)
            + tally.failed.load(Ordering::Relaxed)
            + tally.refused_total()
            < subscribers.len() as u64
        {
            if Instant::now() > deadline {
                return Err(format!(
                    "{} of {} subscribers had their snapshot after 60 s",
                    tally.ready.load(Ordering::Relaxed),
                    subscribers.len()
                ));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if tally.failed.load(Ordering::Relaxed) > 0 {
            let errors = tally.errors.lock().unwrap_or_else(|e| e.into_inner()).join("; ");
            return Err(format!("subscribing failed: {errors}"));
        }
    }
    let opened_in = opening.elapsed();
    let opening_writes = match opening_load {
        Some((stop, task)) => {
            stop.store(true, Ordering::Relaxed);
            let (acked, latency) = task
                .await
                .map_err(|e| format!("the writes while opening failed: {e}"))??;
            let writes = Writes {
                acked,
                window: opened_in,
                latency,
                cpu: opening_cpu.until(&cpu::Snapshot::take(watched_pids)),
            };
            report_writes("paced, while the subscribers opened", &writes);
            Some(writes)
        }
        None => None,
    };
    let admission = Admission::of(&specs, &tally, &Scrape::take(&service.addr).await?);
    watched.set_matching(true);
    eprintln!(
        "loadgen live: {} subscribers have their snapshot after {opened_in:.1?} ({} distinct views), {} refused ({}); idle for {}s",
        admission.admitted,
        admission.distinct_views,
        admission.refused.iter().sum::<u64>(),
        admission.refusals(),
        args.idle_seconds
    );
    tokio::time::sleep(Duration::from_secs_f64(args.idle_seconds)).await;
    let (rss_idle, _) = service.resident()?;
    eprintln!(
        "loadgen live: VmRSS {} MiB with the subscribers idle = {:.0} bytes per subscriber",
        rss_idle >> 20,
        rss_idle.saturating_sub(rss_before) as f64 / admission.admitted.max(1) as f64
    );

    let rss_plain = idle_connections(args, service).await?;

    eprintln!("loadgen live: writes with {} subscribers", admission.admitted);
    quiet(args, watched_pids, "paced, with subscribers").await;
    let paced = live_phase(
        args,
        &load,
        PACED_LIVE,
        Some(args.events_per_second),
        &tally,
        watched_pids,
    )
    .await?;
    report_live("paced, with subscribers", &paced);
    quiet(args, watched_pids, "closed-loop, with subscribers").await;
    let max = live_phase(args, &load, 4, None, &tally, watched_pids).await?;
    report_live("closed-loop, with subscribers", &max);

    let checked = check_views(args, &service.addr, &tally).await?;
    eprintln!(
        "loadgen live: {} views applied from their messages checked against a fresh read: {} differ",
        checked.0, checked.1
    );
    let failed = tally.failed.load(Ordering::Relaxed);
    let errors = tally.errors.lock().unwrap_or_else(|e| e.into_inner()).clone();
    // The median-sized top delta of the paced phase: a typical message, not the smallest
    // (one value changed in place) nor the largest (the whole view shifted).
    let top_delta = {
        let mut kept = std::mem::take(&mut *tally.top_deltas.lock().unwrap_or_else(|e| e.into_inner()));
        kept.sort_by_key(|(_, json)| json.len());
        let middle = kept.len() / 2;
        kept.into_iter().nth(middle).map(|(_, json)| json)
    };
    for subscriber in &subscribers {
        subscriber.abort();
    }
    drop(subscribers);
    // The service notices the closed connections; the Redis side gets a quiet machine.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let mean_delta = paced
        .received
        .delta_bytes
        .checked_div(paced.received.of("delta"))
        .unwrap_or(0) as usize;
    let (message, source) = match (args.pubsub_bytes, top_delta) {
        (0, Some(delta)) => (delta, MessageSource::TopDelta),
        (0, None) => (
            vec![b'x'; mean_delta.max(64)],
            MessageSource::Sized("the mean delta size (no top delta came)"),
        ),
        (n, _) => (vec![b'x'; n.max(64)], MessageSource::Sized("--pubsub-bytes")),
    };
    eprintln!(
        "loadgen live: Redis pub/sub, {} subscribers, one {}-byte PUBLISH every {} ms",
        admission.admitted,
        message.len(),
        args.window_ms
    );
    let channel = format!("standings-loadgen-live:{}", std::process::id()).into_bytes();
    quiet(args, watched_pids, "Redis pub/sub").await;
    let redis = pubsub::fan_out(&pubsub::Plan {
        addr: &args.redis,
        channel,
        subscribers: admission.admitted,
        message,
        every: Duration::from_millis(args.window_ms),
        warmup: Duration::from_secs_f64(args.warmup_seconds),
        measure: Duration::from_secs_f64(args.seconds),
        connecting: args.connecting,
    })
    .await?;
    eprintln!(
        "loadgen live: Redis delivered {:.0} messages/s, lag p50 {}, p99 {}",
        redis.delivered_per_second(),
        ms(redis.lag.quantile(0.5)),
        ms(redis.lag.quantile(0.99))
    );
    Ok(Report {
        specs: counts,
        followed: load.followed.len(),
        load: load_took,
        quiet_paced,
        quiet_max,
        rss_before,
        rss_idle,
        rss_plain,
        checked,
        opened_in,
        admission,
        opening_writes,
        paced,
        max,
        failed,
        before_ack: watched.before_ack.load(Ordering::Relaxed),
        errors,
        message: source,
        redis,
    })
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn seconds_as_ms(s: f64) -> String {
    if s.is_infinite() {
        "above the last bucket".into()
    } else {
        format!("{:.1} ms", s * 1e3)
    }
}

fn report_writes(name: &str, w: &Writes) {
    eprintln!(
        "loadgen live: {name}: {:.0} events/s, ack p50 {}, p99 {}; CPU: service {:.2}, generator {:.2}, other {:.2}",
        w.rate(),
        ms(w.latency.quantile(0.5)),
        ms(w.latency.quantile(0.99)),
        w.cpu.standings,
        w.cpu.generator,
        w.cpu.other
    );
}

fn report_live(name: &str, l: &Live) {
    report_writes(name, &l.writes);
    let window = l.writes.window.as_secs_f64();
    eprintln!(
        "loadgen live:   {:.0} messages/s received ({:.0} deltas/s, {:.1} MB/s on the sockets), {} not chaining; \
         lag at the service {}; at the client p50 {}, p99 {} ({} events, {} unmatched)",
        l.received.all() as f64 / window,
        l.received.of("delta") as f64 / window,
        l.received.socket_bytes as f64 / window / 1e6,
        l.received.violations,
        l.server_lag
            .map_or("(no observations)".into(), |(p50, p99, n)| format!(
                "p50 {}, p99 {} ({n:.0} observations)",
                seconds_as_ms(p50),
                seconds_as_ms(p99)
            )),
        ms(l.client_lag.quantile(0.5)),
        ms(l.client_lag.quantile(0.99)),
        l.client_lag.count(),
        l.unmatched
    );
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "NOT met" }
}

fn print_report(args: &Args, r: &Report) {
    let budget = args.window_ms as f64 / 1e3 + 0.05;
    let n = r.admission.admitted.max(1);
    let per_subscriber = r.rss_idle.saturating_sub(r.rss_before) as f64 / n as f64;
    let paced_ratio = r.paced.writes.rate() / r.quiet_paced.rate();
    let max_ratio = r.max.writes.rate() / r.quiet_max.rate();
    let window = r.paced.writes.window.as_secs_f64();
    let standings_delivered = r.paced.received.all() as f64 / window;
    let standings_p99 = r.paced.client_lag.quantile(0.99);
    let redis_p99 = r.redis.lag.quantile(0.99);
    let server_p99 = r.paced.server_lag.map(|(_, p99, _)| p99);
    println!();
    println!(
        "## Live subscriptions: {} members, {} subscribers asked for (SSE: {} top, {} around, {} player; WebSocket: {} top, {} around, {} player; {} players followed), {} events/s, {}s per phase, window {} ms",
        args.members,
        r.specs.iter().sum::<usize>(),
        r.specs[0],
        r.specs[1],
        r.specs[2],
        r.specs[3],
        r.specs[4],
        r.specs[5],
        r.followed,
        args.events_per_second,
        args.seconds,
        args.window_ms
    );
    println!();
    let settings = args.live_settings();
    let live_config = if settings.is_empty() {
        "none (the service's defaults)".to_string()
    } else {
        format!("`{}`", settings.join("`, `"))
    };
    println!(
        "Admitted: {} subscribers ({} distinct views); refused: {} (the service counted {} LIVE_BUSY). [live] settings given: {live_config}. Subscribers opened {}.",
        r.admission.admitted,
        r.admission.distinct_views,
        r.admission.refusals(),
        r.admission
            .busy_refusals
            .map_or("no".into(), |b| format!("{b:.0}")),
        if args.open_under_load {
            "under the paced writes"
        } else {
            "with no writes"
        }
    );
    println!();
    println!("| measure | no subscribers | with subscribers | ratio | target | verdict |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let writes = |w: &Writes| {
        format!(
            "{:.0}/s, ack p50 {}, p99 {}",
            w.rate(),
            ms(w.latency.quantile(0.5)),
            ms(w.latency.quantile(0.99))
        )
    };
    println!(
        "| single submissions paced at {}/s (ack from the scheduled time) | {} | {} | {paced_ratio:.3} | drop <= 10 % | {} |",
        args.events_per_second,
        writes(&r.quiet_paced),
        writes(&r.paced.writes),
        verdict(paced_ratio >= 0.9)
    );
    println!(
        "| single submissions closed-loop, {} connections | {} | {} | {max_ratio:.3} | drop <= 10 % | {} |",
        args.connections,
        writes(&r.quiet_max),
        writes(&r.max.writes),
        verdict(max_ratio >= 0.9)
    );
    if let Some(opening) = &r.opening_writes {
        println!(
            "| single submissions paced at {}/s while the subscribers opened ({:.1} s) | {} | {} | {:.3} | | |",
            args.events_per_second,
            opening.window.as_secs_f64(),
            writes(&r.quiet_paced),
            writes(opening),
            opening.rate() / r.quiet_paced.rate()
        );
    }
    println!();
    println!("| measure | standings | target | verdict |");
    println!("| --- | --- | --- | --- |");
    let lag_row = |name: &str, live: &Live| {
        if let Some((p50, p99, observations)) = live.server_lag {
            println!(
                "| notification lag at the service ({LAG_METRIC}), {name} | p50 {}, p99 {} ({observations:.0} messages) | p99 <= {:.0} ms | {} |",
                seconds_as_ms(p50),
                seconds_as_ms(p99),
                budget * 1e3,
                verdict(p99 <= budget)
            );
        } else {
            println!("| notification lag at the service, {name} | no observations | | |");
        }
        let p99 = live.client_lag.quantile(0.99);
        println!(
            "| notification lag at the client (202 to the message showing the value), {name} | p50 {}, p99 {} ({} events; {} unmatched at the end) | p99 <= {:.0} ms | {} |",
            ms(live.client_lag.quantile(0.5)),
            ms(p99),
            live.client_lag.count(),
            live.unmatched,
            budget * 1e3,
            if live.client_lag.count() == 0 {
                "n/a (no watched events)"
            } else {
                verdict(p99.as_secs_f64() <= budget)
            }
        );
    };
    lag_row("paced", &r.paced);
    lag_row("closed-loop", &r.max);
    for (name, live) in [("paced", &r.paced), ("closed-loop", &r.max)] {
        if let Some((p50, p99, windows)) = live.window_work {
            let mean = live.window_mean.map_or("n/a".into(), |mean| {
                format!(
                    "{}, {:.0} % of the window",
                    seconds_as_ms(mean),
                    mean * 1e3 / args.window_ms as f64 * 100.0
                )
            });
            println!(
                "| a window's work at the service ({WINDOW_METRIC}), {name} | p50 {}, p99 {}, mean {mean} ({windows:.0} windows) | | |",
                seconds_as_ms(p50),
                seconds_as_ms(p99)
            );
        }
    }
    println!(
        "| resident memory per idle subscriber | {per_subscriber:.0} B (VmRSS {} MiB before, {} MiB with {n} idle) | <= 8 KiB | {} |",
        r.rss_before >> 20,
        r.rss_idle >> 20,
        verdict(per_subscriber <= 8192.0)
    );
    let plain = args.plain();
    let per_plain = r
        .rss_plain
        .map(|rss| rss.saturating_sub(r.rss_idle) as f64 / plain.max(1) as f64);
    if let (Some(rss), Some(per_plain)) = (r.rss_plain, per_plain) {
        println!(
            "| for comparison: resident memory per idle keep-alive connection, no subscription | {per_plain:.0} B ({plain} connections, one request each; VmRSS {} MiB with them beside the subscribers) | | |",
            rss >> 20
        );
    }
    println!(
        "| views applied from their messages (1 subscriber in {}) that differ from a fresh read after the writes | {} of {} | 0 | {} |",
        args.verify_every,
        r.checked.1,
        r.checked.0,
        verdict(r.checked.1 == 0)
    );
    let violations = r.paced.received.violations + r.max.received.violations;
    println!(
        "| deltas not chaining on the subscriber's version | {violations} | 0 | {} |",
        verdict(violations == 0)
    );
    println!();
    println!("| fan-out, same run | standings | redis pub/sub | standings/redis |");
    println!("| --- | --- | --- | --- |");
    println!(
        "| messages delivered per second, all subscribers | {standings_delivered:.0} ({n} subscribers, paced phase) | {:.0} ({} subscribers, {} PUBLISH of {} B, {} receivers reported) | {:.2}x |",
        r.redis.delivered_per_second(),
        r.redis.subscribers,
        r.redis.published,
        r.redis.message_bytes,
        r.redis.receivers,
        standings_delivered / r.redis.delivered_per_second().max(1e-9)
    );
    println!(
        "| p99 lag | {} at the client (202 to receipt; {} at the service, commit to write) | {} (PUBLISH to receipt) | {:.2}x |",
        ms(standings_p99),
        server_p99.map_or("n/a".into(), seconds_as_ms),
        ms(redis_p99),
        standings_p99.as_secs_f64() / redis_p99.as_secs_f64().max(1e-9)
    );
    println!();
    let source = match r.message {
        MessageSource::TopDelta => "the median-sized top delta of the paced phase".to_string(),
        MessageSource::Sized(why) => why.to_string(),
    };
    println!(
        "The Redis message is {} bytes: {source}, its first 20 bytes overwritten with the send time. \
         Redis pub/sub is fire-and-forget: no versions, no catch-up, no coalescing; Standings' lag \
         includes the coalescing window ({} ms).{}",
        r.redis.message_bytes,
        args.window_ms,
        r.redis
            .raised_maxclients
            .map(|m| format!(" Redis's maxclients was raised from {m} for the run and set back."))
            .unwrap_or_default()
    );
    println!(
        "Subscribers: the {n} admitted had their snapshot {:.1} s after the first connect; {} broken Redis subscribers; {} watched events seen before their 202 was read (counted as 0).",
        r.opened_in.as_secs_f64(),
        r.redis.broken,
        r.before_ack
    );
    let received = |l: &Live| {
        let w = l.writes.window.as_secs_f64();
        format!(
            "{:.0} messages/s ({:.0} deltas/s, {:.0} heartbeats/s, {} resync, {} closed, {} going_away, {} streams ended), {:.1} MB/s on the sockets, mean delta {:.0} B",
            l.received.all() as f64 / w,
            l.received.of("delta") as f64 / w,
            l.received.of("heartbeat") as f64 / w,
            l.received.of("resync"),
            l.received.of("closed"),
            l.received.of("going_away"),
            l.received.ended,
            l.received.socket_bytes as f64 / w / 1e6,
            l.received.delta_bytes as f64 / l.received.of("delta").max(1) as f64
        )
    };
    println!("Received, paced: {}.", received(&r.paced));
    println!("Received, closed-loop: {}.", received(&r.max));
    for (name, live) in [("paced", &r.paced), ("closed-loop", &r.max)] {
        let counters: Vec<String> = live
            .counters
            .iter()
            .filter(|(_, v)| *v != 0.0)
            .map(|(k, v)| format!("{k} +{v:.0}"))
            .collect();
        println!("Service counters, {name}: {}.", counters.join(", "));
    }
    println!(
        "Seeding: {:.2} s for {} members through the batch endpoint.",
        r.load.as_secs_f64(),
        args.members
    );
    println!();
    println!("CPU during each measured window, in cores:");
    println!();
    println!("| phase | standings | loadgen | everything else |");
    println!("| --- | --- | --- | --- |");
    for (name, cpu) in [
        ("paced, no subscribers", &r.quiet_paced.cpu),
        ("closed-loop, no subscribers", &r.quiet_max.cpu),
        ("paced, with subscribers", &r.paced.writes.cpu),
        ("closed-loop, with subscribers", &r.max.writes.cpu),
    ] {
        println!(
            "| {name} | {:.2} | {:.2} | {:.2} |",
            cpu.standings, cpu.generator, cpu.other
        );
    }
    let line = serde_json::json!({
        "members": args.members,
        "subscribers": n,
        "events_per_second": args.events_per_second,
        "seconds": args.seconds,
        "window_ms": args.window_ms,
        "paced_no_subscribers": { "rate": r.quiet_paced.rate(), "ack_p50_ms": r.quiet_paced.latency.quantile(0.5).as_secs_f64() * 1e3, "ack_p99_ms": r.quiet_paced.latency.quantile(0.99).as_secs_f64() * 1e3 },
        "paced_with_subscribers": { "rate": r.paced.writes.rate(), "ack_p50_ms": r.paced.writes.latency.quantile(0.5).as_secs_f64() * 1e3, "ack_p99_ms": r.paced.writes.latency.quantile(0.99).as_secs_f64() * 1e3 },
        "max_no_subscribers": { "rate": r.quiet_max.rate(), "ack_p99_ms": r.quiet_max.latency.quantile(0.99).as_secs_f64() * 1e3 },
        "max_with_subscribers": { "rate": r.max.writes.rate(), "ack_p99_ms": r.max.writes.latency.quantile(0.99).as_secs_f64() * 1e3 },
        "max_ratio": max_ratio,
        "paced_ratio": paced_ratio,
        "server_lag_p50_ms": r.paced.server_lag.map(|(p50, _, _)| p50 * 1e3),
        "server_lag_p99_ms": server_p99.map(|p| p * 1e3),
        "client_lag_p50_ms": r.paced.client_lag.quantile(0.5).as_secs_f64() * 1e3,
        "client_lag_p99_ms": standings_p99.as_secs_f64() * 1e3,
        "client_lag_events": r.paced.client_lag.count(),
        "max_phase_server_lag_p99_ms": r.max.server_lag.map(|(_, p99, _)| p99 * 1e3),
        "window_work_p99_ms": r.paced.window_work.map(|(_, p99, _)| p99 * 1e3),
        "max_phase_client_lag_p99_ms": r.max.client_lag.quantile(0.99).as_secs_f64() * 1e3,
        "bytes_per_idle_subscriber": per_subscriber,
        "bytes_per_idle_connection": per_plain,
        "violations": violations,
        "admitted": r.admission.admitted,
        "distinct_views": r.admission.distinct_views,
        "refused": REFUSALS.iter().zip(r.admission.refused).map(|((_, code), n)| (code.to_string(), serde_json::json!(n))).collect::<serde_json::Map<_, _>>(),
        "live_config": args.live_settings(),
        "opening_writes": r.opening_writes.as_ref().map(|w| serde_json::json!({ "seconds": w.window.as_secs_f64(), "rate": w.rate(), "ack_p50_ms": w.latency.quantile(0.5).as_secs_f64() * 1e3, "ack_p99_ms": w.latency.quantile(0.99).as_secs_f64() * 1e3 })),
        "window_work_p50_ms": r.paced.window_work.map(|(p50, _, _)| p50 * 1e3),
        "window_work_mean_ms": r.paced.window_mean.map(|mean| mean * 1e3),
        "views_checked": r.checked.0,
        "views_differing": r.checked.1,
        "standings_messages_per_second": standings_delivered,
        "redis_messages_per_second": r.redis.delivered_per_second(),
        "redis_lag_p99_ms": redis_p99.as_secs_f64() * 1e3,
        "redis_message_bytes": r.redis.message_bytes,
    });
    println!();
    println!("loadgen-live: {line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `loadgen live` followed by `raw`, through the binary's whole command line.
    fn parse_args(raw: Vec<String>) -> Result<Args, String> {
        match crate::parse_cli(std::iter::once("live".to_string()).chain(raw))?.mode {
            Some(crate::Mode::Live(args)) => Ok(args),
            other => Err(format!("not the live mode: {other:?}")),
        }
    }

    /// The defaults are the scenario, and every size has a flag.
    #[test]
    fn defaults_and_flags() {
        let args = parse_args(Vec::new()).unwrap();
        assert_eq!(
            (args.members, args.subscribers, args.events_per_second),
            (1_000_000, 10_000, 5_000.0)
        );
        let flags =
            "--members 1000 --subscribers 30 --mix 2:1 --views 1:0:1 --seconds 2 --events-per-second 100";
        let args = parse_args(flags.split(' ').map(String::from).collect()).unwrap();
        let specs = specs(&args, &Population::new(1000, 1).unwrap());
        let sse = specs.iter().filter(|s| s.transport == Transport::Sse).count();
        assert_eq!(sse, 20);
        assert!(specs.iter().all(|s| s.shape != Shape::Around));
        assert_eq!(specs.iter().filter(|s| s.shape == Shape::Player).count(), 15);
        assert!(
            specs
                .iter()
                .all(|s| (s.shape == Shape::Player) == s.watched.is_some())
        );
        assert!(parse_args(vec!["--views".into(), "1:1".into()]).is_err());
        assert!(parse_args(vec!["--top".into(), "101".into()]).is_err());
        assert!(parse_args(vec!["--live-config".into(), "window_ms = 100".into()]).is_err());
        assert!(parse_args(vec!["--live-config".into(), "oops".into()]).is_err());
    }

    /// `--live-config` adds settings and takes the place of the generator's of the same key.
    #[test]
    fn live_config_joins_the_table() {
        let raw = [
            "--subscribers",
            "100",
            "--live-config",
            "max_window_share_percent = 100\nmax_subscribers = 50",
            "--open-under-load",
        ];
        let args = parse_args(raw.iter().map(|a| a.to_string()).collect()).unwrap();
        assert!(args.open_under_load);
        assert_eq!(
            live_table(&args),
            "window_ms = 250\nmax_subscribers_per_token = 116\nmax_subscribers_per_board = 116\n\
             max_window_share_percent = 100\nmax_subscribers = 50\n"
        );
    }
}
