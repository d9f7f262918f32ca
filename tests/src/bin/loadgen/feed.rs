//! `loadgen feed`: what country segments, platform segments and the feed cost writes (issue
//! 41), and how fast the feed reaches a webhook receiver.
//!
//! One run starts two services in turn on fresh databases, the same in everything but the
//! board's definition: `off` is a plain `highest` board, `on` declares `"segments":
//! {"country": "profile"}` and `"feed": {"bands": [1, 10, 100, 1000, "1%"], "overtakes":
//! true}`. Each loads `--members` players through the batch endpoint, gives the first
//! `--profiled` of them a country (one of `--countries`, through the profile endpoint) and a
//! friend list of `--friends` others among them, then runs `--rounds` rounds of `--seconds` of
//! closed-loop durable single submissions over `--connections` connections, each for a random
//! profiled player with a fresh value: every write moves a player of a segment whose moves
//! `--friends` players follow. The `on` service also has a webhook endpoint on a receiver in
//! this process (every record kind); after each round the run waits until it delivered the
//! whole feed and times that. `--on platform` declares `"segments": {"platform": ["ios",
//! "android", "pc"]}` instead, and the `on` side's writes each carry one of them. Reported: each side's median rate and ack p99 over the rounds,
//! their ratios, and the feed's records made and delivered per second.

use std::sync::Arc;
use std::time::{Duration, Instant};

use standings_tests::harness;
use standings_tests::receiver::Receiver;

use crate::Run;
use crate::bench::{self, DEFINE_PATH, EventIds, Plan};
use crate::http::HttpConn;
use crate::latency::Histogram;
use crate::service::{ADMIN_TOKEN, SERVICE_TOKEN, Service};
use crate::workload::{Population, Rng, player_id};

/// Seeds the write draws apart from every other stream.
const WRITE_STREAM: u64 = 0x6665_6564;

/// The platform dimension `--on platform` declares.
const PLATFORM_SEGMENTS: &str = r#","segments":{"platform":["ios","android","pc"]}"#;

/// The platforms the `on` side's writes carry under `--on platform`, in turn.
const PLATFORMS: [&str; 3] = ["ios", "android", "pc"];

/// Countries handed out in turn.
const COUNTRIES: [&str; 22] = [
    "US", "DE", "FR", "GB", "BR", "JP", "KR", "CN", "IN", "RU", "CA", "AU", "ES", "IT", "MX", "PL", "NL",
    "SE", "TR", "AR", "ID", "UA",
];

/// Writes with and without segments and the feed.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Players loaded on the board.
    #[arg(long, value_name = "N", default_value = "1000000", value_parser = harness::at_least_one::<u64>)]
    members: u64,
    /// Players given a country and a friend list; the writes go to them.
    #[arg(long, value_name = "N", default_value = "20000", value_parser = harness::at_least_one::<u64>)]
    profiled: u64,
    /// Countries the profiled players are spread over (1 to 22).
    #[arg(long, value_name = "N", default_value = "22", value_parser = clap::value_parser!(u8).range(1..=22))]
    countries: u8,
    /// Friends on each profiled player's list.
    #[arg(long, value_name = "N", default_value = "20", value_parser = clap::value_parser!(u16).range(0..=1000))]
    friends: u16,
    /// What the `on` board declares beside the plain one.
    #[arg(long, value_name = "WHAT", default_value = "both", value_parser = ["segments", "platform", "feed", "both"])]
    on: String,
    /// Runs the `on` side without a webhook endpoint (the feed is stored, not delivered).
    #[arg(long)]
    no_webhook: bool,
    /// Measured rounds per side.
    #[arg(long, value_name = "N", default_value = "3", value_parser = harness::at_least_one::<usize>)]
    rounds: usize,
    /// Seconds per round.
    #[arg(long, value_name = "S", default_value = "10", value_parser = harness::positive)]
    seconds: f64,
    /// Keep-alive connections the writes are sent over (each waits for its answer).
    #[arg(long, value_name = "N", default_value = "32", value_parser = harness::at_least_one::<usize>)]
    connections: usize,
    #[command(flatten)]
    service: crate::Served,
    #[command(flatten)]
    pub(crate) run: Run,
}

/// One side's figures.
#[derive(Default)]
struct Side {
    /// Acknowledged writes per second, one per round.
    rates: Vec<f64>,
    /// Ack latency p99, one per round.
    p99s: Vec<Duration>,
    /// Ack latency over every round.
    latency: Histogram,
    load: Duration,
    profiles: Duration,
    /// The feed: records the rounds made, deliveries, the writing time and the time to drain
    /// after each round.
    records: u64,
    deliveries: usize,
    writing: Duration,
    draining: Vec<Duration>,
}

pub(crate) async fn run(args: &Args) -> Result<(), String> {
    if args.profiled > args.members {
        return Err(format!(
            "--profiled {} is more than --members {}",
            args.profiled, args.members
        ));
    }
    let population = Population::new(args.members, args.run.seed)?;
    let mut sides = Vec::new();
    for on in [false, true] {
        let mut service = Service::prepare_with(
            &args.service.standings_bin,
            args.service.database(&format!("feed_{on}")),
            args.run.keep,
            "loadgen-feed",
            "webhook_backoff_ms = 50\n",
        )?;
        eprintln!(
            "loadgen feed: {} ({}): {} members, {} profiled; service on {}",
            if on { "on" } else { "off" },
            args.service.database,
            args.members,
            args.profiled,
            service.addr
        );
        let measured = side(args, population, &mut service, on).await;
        let measured = measured.inspect_err(|_| eprintln!("loadgen feed: {}", service.log_tail()))?;
        if let Err(e) = service.stop(Duration::from_secs(60)) {
            eprintln!("loadgen feed: {e}");
        }
        sides.push(measured);
    }
    print_report(args, &sides[0], &sides[1]);
    Ok(())
}

async fn side(args: &Args, population: Population, service: &mut Service, on: bool) -> Result<Side, String> {
    service.start(args.run.ready_timeout).await?;
    let segments = r#","segments":{"country":"profile"}"#;
    let feed = r#","feed":{"bands":[1,10,100,1000,"1%"],"overtakes":true}"#;
    let declared = match (on, args.on.as_str()) {
        (false, _) => String::new(),
        (true, "segments") => segments.to_string(),
        (true, "platform") => PLATFORM_SEGMENTS.to_string(),
        (true, "feed") => feed.to_string(),
        (true, _) => format!("{segments}{feed}"),
    };
    let definition = format!(r#"{{"score_mode":"highest","value_min":0,"value_max":100000000{declared}}}"#);
    put(&service.addr, ADMIN_TOKEN, DEFINE_PATH, &definition).await?;
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
    let mut measured = Side {
        load: args.service.load(&plan, &args.run).await?,
        ..Side::default()
    };
    let started = Instant::now();
    profile(args, &service.addr).await?;
    measured.profiles = started.elapsed();
    eprintln!(
        "loadgen feed: loaded in {:.2?}, profiles and friend lists in {:.2?}",
        measured.load, measured.profiles
    );
    let feeds = on && !matches!(args.on.as_str(), "segments" | "platform");
    let receiver = if feeds && !args.no_webhook {
        let (url, receiver) = Receiver::start(0).await?;
        let body = format!(
            r#"{{"url":"{url}","secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw","kinds":["overtaken","band_entered","band_left","period_closed","season_finalized","reward","correction"]}}"#
        );
        put(
            &service.addr,
            ADMIN_TOKEN,
            "/v1/games/loadgen/webhooks/loadgen",
            &body,
        )
        .await?;
        Some(receiver)
    } else {
        None
    };
    // The records the load and the profiles made are not the rounds': counted apart.
    let before = if feeds { stored(&service.addr).await? } else { 0 };
    tokio::time::sleep(crate::REST_AFTER_LOAD).await;
    for round in 0..args.rounds {
        let began = Instant::now();
        let platforms = on && args.on == "platform";
        let (acked, latency) = write_round(args, &service.addr, round as u64, platforms).await?;
        let took = began.elapsed();
        measured.writing += took;
        measured.rates.push(acked as f64 / took.as_secs_f64());
        measured.p99s.push(latency.quantile(0.99));
        measured.latency.merge(&latency);
        if receiver.is_some() {
            let drained = Instant::now();
            measured.records = drain(&service.addr).await? - before;
            measured.draining.push(drained.elapsed());
        } else if feeds {
            measured.records = stored(&service.addr).await? - before;
        }
        eprintln!(
            "loadgen feed: {} round {round}: {:.0} writes/s, ack p99 {:.2?}",
            if on { "on" } else { "off" },
            measured.rates[round],
            measured.p99s[round]
        );
    }
    if let Some(receiver) = receiver {
        measured.deliveries = receiver.deliveries().len();
    }
    Ok(measured)
}

/// Gives the first `--profiled` players a country and a friend list, over eight connections.
async fn profile(args: &Args, addr: &str) -> Result<(), String> {
    const CONNECTIONS: u64 = 8;
    let mut tasks = Vec::new();
    for c in 0..CONNECTIONS {
        let addr = addr.to_string();
        let (profiled, countries, friends, seed) = (
            args.profiled,
            args.countries as usize,
            args.friends,
            args.run.seed,
        );
        tasks.push(tokio::spawn(async move {
            let mut conn = HttpConn::connect(&addr, SERVICE_TOKEN).await?;
            let mut rng = Rng::stream(seed ^ WRITE_STREAM, u64::MAX - c);
            for member in (c..profiled).step_by(CONNECTIONS as usize) {
                let id = String::from_utf8_lossy(&player_id(member)).into_owned();
                let body = format!(r#"{{"country":"{}"}}"#, COUNTRIES[member as usize % countries]);
                send(
                    &mut conn,
                    &format!("/v1/games/loadgen/players/{id}/profile"),
                    &body,
                )
                .await?;
                let list: Vec<String> = (0..friends)
                    .map(|_| format!("\"{}\"", String::from_utf8_lossy(&player_id(rng.below(profiled)))))
                    .collect();
                let body = format!(r#"{{"friends":[{}]}}"#, list.join(","));
                send(
                    &mut conn,
                    &format!("/v1/games/loadgen/players/{id}/friends"),
                    &body,
                )
                .await?;
            }
            Ok::<(), String>(())
        }));
    }
    for task in tasks {
        task.await.map_err(|e| format!("a profile task failed: {e}"))??;
    }
    Ok(())
}

/// One round of closed-loop single submissions: acknowledged writes and their latencies.
async fn write_round(
    args: &Args,
    addr: &str,
    round: u64,
    platforms: bool,
) -> Result<(u64, Histogram), String> {
    let until = Instant::now() + Duration::from_secs_f64(args.seconds);
    let population = Population::new(args.members, args.run.seed)?;
    let mut tasks = Vec::new();
    for c in 0..args.connections as u64 {
        let addr = addr.to_string();
        let profiled = args.profiled;
        let seed = args.run.seed;
        tasks.push(tokio::spawn(async move {
            let mut conn = HttpConn::connect(&addr, SERVICE_TOKEN).await?;
            let mut rng = Rng::stream(seed ^ WRITE_STREAM, round << 32 | c);
            let mut latency = Histogram::new();
            let mut body = Vec::with_capacity(512);
            let mut acked = 0u64;
            while Instant::now() < until {
                let member = rng.below(profiled);
                let id = format!("w-{round}-{c}-{acked}");
                body.clear();
                bench::push_event(
                    &mut body,
                    id.as_bytes(),
                    member,
                    population.fresh_standing(&mut rng),
                );
                if platforms && body.last() == Some(&b'}') {
                    body.pop();
                    let platform = PLATFORMS[(acked % 3) as usize];
                    body.extend_from_slice(
                        format!(r#","segments":{{"platform":"{platform}"}}}}"#).as_bytes(),
                    );
                }
                let sent = Instant::now();
                let answer = conn.post("/v1/score-events", &body).await?;
                latency.record(sent.elapsed());
                if answer.status != 202 {
                    return Err(format!(
                        "a write answered {}: {}",
                        answer.status,
                        conn.body_text(&answer)
                    ));
                }
                acked += 1;
            }
            Ok::<_, String>((acked, latency))
        }));
    }
    let mut acked = 0;
    let mut latency = Histogram::new();
    for task in tasks {
        let (n, h) = task.await.map_err(|e| format!("a write task failed: {e}"))??;
        acked += n;
        latency.merge(&h);
    }
    Ok((acked, latency))
}

/// Waits until the webhook delivered the feed's newest record; answers how many records the
/// feed holds.
async fn drain(addr: &str) -> Result<u64, String> {
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut conn = HttpConn::connect(addr, ADMIN_TOKEN).await?;
    loop {
        let (stored, pending) = feed_figures(&mut conn).await?;
        let answer = conn.get("/v1/games/loadgen/webhooks/loadgen").await?;
        let state: serde_json::Value = serde_json::from_slice(conn.body(&answer))
            .map_err(|e| format!("the webhook's state is not JSON: {e}"))?;
        let through = state["delivered_through"].as_i64().unwrap_or(-1);
        let newest = newest_seq(&mut conn, through).await?;
        if pending == 0 && newest <= through {
            return Ok(stored);
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the webhook did not deliver the feed within 10 minutes: {state}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Records stored since the service started, once none is pending.
async fn stored(addr: &str) -> Result<u64, String> {
    let mut conn = HttpConn::connect(addr, ADMIN_TOKEN).await?;
    loop {
        let (stored, pending) = feed_figures(&mut conn).await?;
        if pending == 0 {
            return Ok(stored);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The feed's records stored since the start and pending, from `/metrics`.
async fn feed_figures(conn: &mut HttpConn) -> Result<(u64, u64), String> {
    let metrics = conn.get("/metrics").await?;
    let text = String::from_utf8_lossy(conn.body(&metrics)).into_owned();
    let figure = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .ok_or_else(|| format!("/metrics has no {name}"))
    };
    Ok((
        figure("standings_feed_records_stored_total ")? as u64,
        figure("standings_feed_records_pending ")? as u64,
    ))
}

/// The newest record's seq, read from `after` on (the records before it are delivered).
async fn newest_seq(conn: &mut HttpConn, after: i64) -> Result<i64, String> {
    let mut since = after.max(0);
    loop {
        let answer = conn
            .get(&format!("/v1/games/loadgen/feed?since_seq={since}&limit=1000"))
            .await?;
        let page: serde_json::Value = serde_json::from_slice(conn.body(&answer))
            .map_err(|e| format!("a feed page is not JSON: {e}"))?;
        let next = page["next_seq"]
            .as_i64()
            .ok_or_else(|| format!("a feed page: {page}"))?;
        if next == since {
            return Ok(since);
        }
        since = next;
    }
}

async fn put(addr: &str, token: &str, path: &str, body: &str) -> Result<(), String> {
    let mut conn = HttpConn::connect(addr, token).await?;
    send(&mut conn, path, body).await
}

async fn send(conn: &mut HttpConn, path: &str, body: &str) -> Result<(), String> {
    let answer = conn.put(path, body.as_bytes()).await?;
    if !(200..300).contains(&answer.status) {
        return Err(format!(
            "PUT {path} answered {}: {}",
            answer.status,
            conn.body_text(&answer)
        ));
    }
    Ok(())
}

fn median<T: Copy + PartialOrd>(values: &[T]) -> T {
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    sorted[sorted.len() / 2]
}

fn print_report(args: &Args, off: &Side, on: &Side) {
    println!(
        "## Writes with {} on and off, on a board of {} members ({}, {} connections, {} rounds of {} s{})\n",
        match args.on.as_str() {
            "segments" => "country segments",
            "platform" => "platform segments, every write carrying its platform",
            "feed" => "the feed",
            _ => "country segments and the feed",
        },
        args.members,
        args.service.database,
        args.connections,
        args.rounds,
        args.seconds,
        if args.no_webhook { ", no webhook" } else { "" }
    );
    println!("| figure | off | on | on / off |\n| --- | --- | --- | --- |");
    let (off_rate, on_rate) = (median(&off.rates), median(&on.rates));
    println!(
        "| writes/s, median of rounds | {off_rate:.0} | {on_rate:.0} | {:.2} |",
        on_rate / off_rate.max(1e-9)
    );
    let (off_p99, on_p99) = (median(&off.p99s), median(&on.p99s));
    println!(
        "| ack p99, median of rounds | {off_p99:.2?} | {on_p99:.2?} | {:.2} |",
        on_p99.as_secs_f64() / off_p99.as_secs_f64().max(1e-9)
    );
    println!(
        "| ack p50 over all rounds | {:.2?} | {:.2?} | |",
        off.latency.quantile(0.5),
        on.latency.quantile(0.5)
    );
    println!(
        "| rates by round | {:?} | {:?} | |",
        off.rates.iter().map(|r| r.round()).collect::<Vec<_>>(),
        on.rates.iter().map(|r| r.round()).collect::<Vec<_>>()
    );
    println!(
        "| load / profiles and friend lists | {:.2?} / {:.2?} | {:.2?} / {:.2?} | |",
        off.load, off.profiles, on.load, on.profiles
    );
    let writing = on.writing.as_secs_f64().max(1e-9);
    let draining: Duration = on.draining.iter().sum();
    println!(
        "\nThe feed (on): {} records stored, {:.0} made per second of writing; {} webhook deliveries, \
         {:.0} per second of writing and draining ({:.2?} of writing, {:.2?} draining after the rounds: {:?}).",
        on.records,
        on.records as f64 / writing,
        on.deliveries,
        on.deliveries as f64 / (writing + draining.as_secs_f64()),
        on.writing,
        draining,
        on.draining
    );
}
