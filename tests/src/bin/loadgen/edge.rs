//! `loadgen edge`: the read mix through the edge worker in local workerd, and the same mix
//! straight to the origin, side by side, on a large board that changes every second.
//!
//! One run starts its own `standings serve` (release build) with an edge token and a
//! `[snapshots]` table, seeds `--members` players through the batch endpoint and friend lists
//! for `--friend-lists` of them, starts the worker under `wrangler dev --local` in front of it
//! (the worker must be built: `edge-worker/build`), waits until the edge serves the origin's
//! version, and then keeps the board changing: every second a batch moving `--moves-per-second`
//! random players. Under that, for `--seconds` after `--warmup-seconds`, `--connections`
//! closed-loop connections send the mix (90 % top pages of a few popular limits, 10 % rank,
//! nearby and friends-of of random players) through the edge, then the same mix to the origin.
//!
//! It reports, per kind and side, p50 and p99 latency and throughput (the edge's split too by
//! `x-standings-cache`: answered from what it held, or after fetching from the origin); the
//! share of the edge run's reads that the origin served (its `standings_query_seconds` counts
//! over the window against the reads the edge answered); what `/edge/stats` counted over the
//! window; and the origin's snapshot figures from `/metrics` (every `standings_snapshot*` series). Targets are
//! results, not errors; an HTTP error or a refused read fails the run.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use standings_tests::edge::{Worker, WorkerSpec, numbers};
use standings_tests::harness;
use standings_tests::http::Client;

use crate::Run;
use crate::bench::{self, BOARD_PATH, EventIds, Plan};
use crate::latency::Histogram;
use crate::scrape::Scrape;
use crate::service::{ADMIN_TOKEN, Database, SERVICE_TOKEN, Service};
use crate::workload::{Population, Rng, player_id};

/// The edge worker's token at the origin.
const EDGE_TOKEN: &str = "loadgen-edge-secret-0000000000";
/// The popular top pages: limits, each as likely as the others.
const TOP_LIMITS: [u64; 4] = [10, 25, 50, 100];

/// The read mix through the edge worker under `wrangler dev --local`, beside the same mix straight
/// to the origin, on a large board that changes every second. The worker must be built
/// (`edge-worker/build`).
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Players seeded on the board.
    #[arg(long, value_name = "N", default_value = "1000000", value_parser = harness::at_least_one::<u64>)]
    members: u64,
    /// Players given a friend list (at most --members).
    #[arg(long, value_name = "N", default_value = "1000")]
    friend_lists: u64,
    /// Friends per list (at most 1000, the service's limit).
    #[arg(long, value_name = "N", default_value = "30", value_parser = clap::value_parser!(u64).range(..=1_000))]
    friends: u64,
    /// Players moved each second while measuring (at most 1000, the service's batch limit).
    #[arg(long, value_name = "N", default_value = "100", value_parser = clap::value_parser!(u64).range(..=1_000))]
    moves_per_second: u64,
    /// Rank and nearby ask about N players spread over the board, as players asking about
    /// themselves again would; 0: any player, each ask most likely a player not asked before.
    #[arg(long, value_name = "N", default_value = "0")]
    asking_players: u64,
    /// Closed-loop reading connections per side; 1 shows a read's own latency, more the
    /// queueing of one workerd isolate.
    #[arg(long, value_name = "N", default_value = "4", value_parser = harness::at_least_one::<usize>)]
    connections: usize,
    /// Measured seconds per side.
    #[arg(long, value_name = "S", default_value = "10", value_parser = harness::positive)]
    seconds: f64,
    /// Unmeasured seconds before each side.
    #[arg(long, value_name = "S", default_value = "2", value_parser = harness::non_negative)]
    warmup_seconds: f64,
    /// The origin's [snapshots] interval_ms.
    #[arg(long, value_name = "MS", default_value = "1000")]
    interval_ms: u64,
    /// Concurrent batch uploads while seeding.
    #[arg(long, value_name = "N", default_value = "8", value_parser = harness::at_least_one::<usize>)]
    load_connections: usize,
    /// Events per seeding batch (1 to 1000, the service's batch limit).
    #[arg(long, value_name = "N", default_value = "1000", value_parser = crate::batch_size)]
    batch: u64,
    /// The origin binary.
    #[arg(long, value_name = "PATH", default_value = "target/release/standings")]
    standings_bin: PathBuf,
    /// The worker's crate, with node_modules/.bin/wrangler.
    #[arg(long, value_name = "DIR", default_value = "edge-worker")]
    worker_dir: PathBuf,
    /// The worker's wrangler.toml [default: beside --worker-dir].
    #[arg(long, value_name = "PATH")]
    wrangler_config: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) run: Run,
}

impl Args {
    /// Refuses what spans several flags.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.friend_lists > self.members || self.asking_players > self.members {
            return Err("--friend-lists and --asking-players cannot exceed --members".into());
        }
        Ok(())
    }
}

/// A read of the mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Top,
    Rank,
    Nearby,
    Friends,
}

impl Kind {
    const ALL: [Kind; 4] = [Kind::Top, Kind::Rank, Kind::Nearby, Kind::Friends];

    fn name(self) -> &'static str {
        match self {
            Kind::Top => "top page (limit 10/25/50/100)",
            Kind::Rank => "rank",
            Kind::Nearby => "nearby r=5",
            Kind::Friends => "friends-of (30 friends)",
        }
    }

    /// The next read of the mix: 90 % top pages, the rest rank, nearby and friends alike.
    fn draw(rng: &mut Rng) -> Kind {
        match rng.below(30) {
            0..=26 => Kind::Top,
            27 => Kind::Rank,
            28 => Kind::Nearby,
            _ => Kind::Friends,
        }
    }
}

/// One side's figures: a histogram and a count per kind over the measured window, and on the
/// edge's side the same split by `x-standings-cache` (HIT: answered from what the isolate or
/// the data centre held; MISS: it fetched from the origin).
struct Side {
    latency: Vec<Histogram>,
    hit: Vec<Histogram>,
    miss: Vec<Histogram>,
    window: Duration,
}

impl Side {
    fn of(&self, kind: Kind) -> &Histogram {
        &self.latency[kind as usize]
    }
}

/// Runs the benchmark.
pub(crate) async fn run(args: &Args) -> Result<(), String> {
    let population = Population::new(args.members, args.run.seed)?;
    let extra = format!(
        "pin_http_threads = false\n\n[snapshots]\ninterval_ms = {}\n\n\
         [[tokens]]\nname = \"loadgen-edge\"\nsecret = \"{EDGE_TOKEN}\"\nrole = \"edge\"\ngames = [\"loadgen\"]\n",
        args.interval_ms
    );
    let (wrangler, config) = WorkerSpec::paths(&args.worker_dir, args.wrangler_config.as_deref());
    let mut spec = WorkerSpec {
        wrangler,
        config,
        vars: Vec::new(),
        secrets: vec![("EDGE_TOKEN".into(), EDGE_TOKEN.into())],
        dir: std::env::temp_dir(),
    };
    // Before minutes of seeding: is there a worker to run?
    spec.check()?;
    let mut service = Service::prepare_with(
        &args.standings_bin,
        Database::Sqlite,
        args.run.keep,
        "loadgen-edge",
        &extra,
    )?;
    service.start(args.run.ready_timeout).await?;
    bench::define_board(&service.addr).await?;
    let plan = Arc::new(Plan {
        population,
        standings_addr: service.addr.clone(),
        redis_addr: String::new(),
        redis_key: Vec::new(),
        connections: args.connections,
        warmup: Duration::from_secs_f64(args.warmup_seconds),
        measure: Duration::from_secs_f64(args.seconds),
        event_ids: EventIds::Member,
        nonce: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
    });
    eprintln!(
        "loadgen edge: seeding {} members on {}",
        args.members, service.addr
    );
    let seeded =
        bench::load_standings(&plan, args.batch, args.load_connections, args.run.load_timeout).await?;
    eprintln!("loadgen edge: seeded in {seeded:.1?}");
    let owners = set_friends(args, &service.addr).await?;

    spec.vars = vec![
        ("ORIGIN_URL".into(), format!("http://{}", service.addr)),
        ("PUBLIC_READS".into(), "false".into()),
    ];
    spec.dir = service.dir.join("worker");
    let worker = Worker::start(&spec, args.run.ready_timeout).await?;
    eprintln!("loadgen edge: worker on {}", worker.addr);
    let result = measure(args, &plan, &service, &worker, &owners).await;
    if result.is_err() {
        eprintln!("loadgen edge: {}\n{}", service.log_tail(), worker.log_tail());
    }
    drop(worker);
    if let Err(e) = service.stop(Duration::from_secs(60)) {
        eprintln!("loadgen edge: {e}");
    }
    result
}

/// Gives `--friend-lists` random members `--friends` random friends each. Returns the owners.
async fn set_friends(args: &Args, addr: &str) -> Result<Vec<String>, String> {
    let mut rng = Rng::stream(args.run.seed, 0x0066_7269);
    let mut client = Client::new(addr);
    let mut owners = Vec::with_capacity(args.friend_lists as usize);
    for _ in 0..args.friend_lists {
        let owner = String::from_utf8_lossy(&player_id(rng.below(args.members))).into_owned();
        let friends: Vec<String> = (0..args.friends)
            .map(|_| String::from_utf8_lossy(&player_id(rng.below(args.members))).into_owned())
            .collect();
        let body = serde_json::json!({ "friends": friends }).to_string();
        let path = format!("/v1/games/loadgen/players/{owner}/friends");
        let reply = client.put(&path, Some(SERVICE_TOKEN), body.as_bytes()).await?;
        if reply.status != 200 {
            return Err(format!("PUT {path} answered {}: {}", reply.status, reply.text()));
        }
        owners.push(owner);
    }
    Ok(owners)
}

/// The board's version at the origin.
async fn origin_version(client: &mut Client) -> Result<u64, String> {
    let reply = client
        .get(&format!("{BOARD_PATH}/top?limit=1"), Some(ADMIN_TOKEN))
        .await?;
    reply.json()?["board_version"]
        .as_u64()
        .ok_or_else(|| format!("the origin's top has no board_version: {}", reply.text()))
}

/// Waits until the edge serves the origin's version, then measures both sides under the
/// moving board and prints the report.
async fn measure(
    args: &Args,
    plan: &Arc<Plan>,
    service: &Service,
    worker: &Worker,
    owners: &[String],
) -> Result<(), String> {
    let mut origin = Client::new(&service.addr);
    let mut edge = Client::new(&worker.addr);
    let version = origin_version(&mut origin).await?;
    let started = Instant::now();
    loop {
        let reply = edge
            .get(&format!("{BOARD_PATH}/top?limit=10"), Some(SERVICE_TOKEN))
            .await?;
        let at = reply
            .header("x-standings-board-version")
            .and_then(|v| v.parse::<u64>().ok());
        if reply.status == 200 && at >= Some(version) {
            break;
        }
        if started.elapsed() > args.run.ready_timeout {
            return Err(format!(
                "the edge did not reach version {version} within {:?}: {} {:?}",
                args.run.ready_timeout,
                reply.status,
                reply.text()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!(
        "loadgen edge: the edge serves version {version} {:.1?} after it started",
        started.elapsed()
    );
    let stop = Arc::new(AtomicBool::new(false));
    let moved = Arc::new(AtomicU64::new(0));
    let mover = tokio::spawn(move_players(
        plan.clone(),
        args.moves_per_second,
        stop.clone(),
        moved.clone(),
    ));

    let metrics_before = Scrape::take(&service.addr).await?;
    let stats_before = edge_stats(&mut edge).await?;
    let edge_side = drive(args, &worker.addr, owners, plan.population.members).await?;
    let stats_after = edge_stats(&mut edge).await?;
    let metrics_mid = Scrape::take(&service.addr).await?;
    let origin_side = drive(args, &service.addr, owners, plan.population.members).await?;
    let metrics_after = Scrape::take(&service.addr).await?;
    stop.store(true, Ordering::Relaxed);
    mover.await.map_err(|e| format!("the mover failed: {e}"))??;

    let origin_reads_during_edge = query_count(&metrics_mid) - query_count(&metrics_before);
    print_report(
        args,
        &edge_side,
        &origin_side,
        origin_reads_during_edge,
        moved.load(Ordering::Relaxed),
        &stats_before,
        &stats_after,
        &metrics_before,
        &metrics_after,
    );
    Ok(())
}

/// Every second, one batch moving `moves` random players to fresh standings, until `stop`.
async fn move_players(
    plan: Arc<Plan>,
    moves: u64,
    stop: Arc<AtomicBool>,
    moved: Arc<AtomicU64>,
) -> Result<(), String> {
    let mut client = Client::new(&plan.standings_addr);
    let mut rng = Rng::stream(plan.population.seed, 0x006d_6f76);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut sent = 0u64;
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        if moves == 0 {
            continue;
        }
        let mut body = b"{\"events\":[".to_vec();
        for i in 0..moves {
            if i > 0 {
                body.push(b',');
            }
            let member = rng.below(plan.population.members);
            let standing = plan.population.fresh_standing(&mut rng);
            let id = format!("move-{}-{sent}", plan.nonce);
            sent += 1;
            bench::push_event(&mut body, id.as_bytes(), member, standing);
        }
        body.extend_from_slice(b"]}");
        let reply = client
            .post("/v1/score-events/batch", Some(SERVICE_TOKEN), &body)
            .await?;
        if reply.status != 200 {
            return Err(format!(
                "a move batch answered {}: {}",
                reply.status,
                reply.text()
            ));
        }
        moved.fetch_add(moves, Ordering::Relaxed);
    }
    Ok(())
}

/// `/edge/stats` flattened.
async fn edge_stats(edge: &mut Client) -> Result<Vec<(String, f64)>, String> {
    let reply = edge.get("/edge/stats", None).await?;
    if reply.status != 200 {
        return Err(format!("/edge/stats answered {}: {}", reply.status, reply.text()));
    }
    Ok(numbers(&reply.json()?))
}

/// Reads the origin served, by its query histogram's counts.
fn query_count(scrape: &Scrape) -> f64 {
    scrape
        .0
        .iter()
        .filter(|(k, _)| k.starts_with("standings_query_seconds_count"))
        .map(|(_, v)| v)
        .sum()
}

/// `--connections` closed-loop connections sending the mix to `addr` for the warm-up and the
/// measured window; what was answered within the window is counted.
async fn drive(args: &Args, addr: &str, owners: &[String], members: u64) -> Result<Side, String> {
    let started = Instant::now();
    let opens = started + Duration::from_secs_f64(args.warmup_seconds);
    let closes = opens + Duration::from_secs_f64(args.seconds);
    let owners: Arc<Vec<String>> = Arc::new(owners.to_vec());
    let mut tasks = Vec::with_capacity(args.connections);
    for connection in 0..args.connections {
        let addr = addr.to_string();
        let owners = owners.clone();
        let mut rng = Rng::stream(args.run.seed, 0x0065_0000 + connection as u64);
        let asking = args.asking_players;
        tasks.push(tokio::spawn(async move {
            let mut client = Client::new(&addr);
            let mut latency: Vec<Histogram> = Kind::ALL.iter().map(|_| Histogram::new()).collect();
            let mut hit: Vec<Histogram> = Kind::ALL.iter().map(|_| Histogram::new()).collect();
            let mut miss: Vec<Histogram> = Kind::ALL.iter().map(|_| Histogram::new()).collect();
            loop {
                let kind = match Kind::draw(&mut rng) {
                    Kind::Friends if owners.is_empty() => Kind::Rank,
                    kind => kind,
                };
                let member = match asking {
                    0 => rng.below(members),
                    n => rng.below(n) * (members / n),
                };
                let player = String::from_utf8_lossy(&player_id(member)).into_owned();
                let path = match kind {
                    Kind::Top => format!(
                        "{BOARD_PATH}/top?limit={}",
                        TOP_LIMITS[rng.below(TOP_LIMITS.len() as u64) as usize]
                    ),
                    Kind::Rank => format!("{BOARD_PATH}/players/{player}/rank"),
                    Kind::Nearby => format!("{BOARD_PATH}/players/{player}/nearby?radius=5"),
                    Kind::Friends => format!(
                        "{BOARD_PATH}/friends-of/{}",
                        owners[rng.below(owners.len() as u64) as usize]
                    ),
                };
                let sent = Instant::now();
                if sent >= closes {
                    return Ok::<_, String>((latency, hit, miss));
                }
                let reply = client.get(&path, Some(SERVICE_TOKEN)).await?;
                let took = sent.elapsed();
                if reply.status != 200 {
                    return Err(format!("{path} answered {}: {}", reply.status, reply.text()));
                }
                if sent >= opens && sent + took <= closes {
                    latency[kind as usize].record(took);
                    match reply.header("x-standings-cache") {
                        Some("HIT") => hit[kind as usize].record(took),
                        Some(_) => miss[kind as usize].record(took),
                        None => {}
                    }
                }
            }
        }));
    }
    let fresh = || -> Vec<Histogram> { Kind::ALL.iter().map(|_| Histogram::new()).collect() };
    let (mut latency, mut hit, mut miss) = (fresh(), fresh(), fresh());
    for task in tasks {
        let theirs = task
            .await
            .map_err(|e| format!("a reading connection failed: {e}"))??;
        for (mine, theirs) in [
            (&mut latency, &theirs.0),
            (&mut hit, &theirs.1),
            (&mut miss, &theirs.2),
        ] {
            for (m, t) in mine.iter_mut().zip(theirs) {
                m.merge(t);
            }
        }
    }
    Ok(Side {
        latency,
        hit,
        miss,
        window: Duration::from_secs_f64(args.seconds),
    })
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

#[allow(clippy::too_many_arguments)]
fn print_report(
    args: &Args,
    edge: &Side,
    origin: &Side,
    origin_reads_during_edge: f64,
    moved: u64,
    stats_before: &[(String, f64)],
    stats_after: &[(String, f64)],
    metrics_before: &Scrape,
    metrics_after: &Scrape,
) {
    println!();
    println!(
        "## Edge (wrangler dev --local) vs origin: {} members moving {} per second, {} connections, {}s per side ({}s warm-up), rank and nearby of {}",
        args.members,
        args.moves_per_second,
        args.connections,
        args.seconds,
        args.warmup_seconds,
        match args.asking_players {
            0 => "any player".to_string(),
            n => format!("{n} players"),
        }
    );
    println!();
    println!("| read | edge reads/s | edge p50 | edge p99 | origin reads/s | origin p50 | origin p99 |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let rate = |side: &Side, h: &Histogram| h.count() as f64 / side.window.as_secs_f64();
    for kind in Kind::ALL {
        let (e, o) = (edge.of(kind), origin.of(kind));
        println!(
            "| {} | {:.0} | {} | {} | {:.0} | {} | {} |",
            kind.name(),
            rate(edge, e),
            ms(e.quantile(0.5)),
            ms(e.quantile(0.99)),
            rate(origin, o),
            ms(o.quantile(0.5)),
            ms(o.quantile(0.99)),
        );
    }
    let mut all_edge = Histogram::new();
    let mut all_origin = Histogram::new();
    for kind in Kind::ALL {
        all_edge.merge(edge.of(kind));
        all_origin.merge(origin.of(kind));
    }
    println!(
        "| the whole mix | {:.0} | {} | {} | {:.0} | {} | {} |",
        rate(edge, &all_edge),
        ms(all_edge.quantile(0.5)),
        ms(all_edge.quantile(0.99)),
        rate(origin, &all_origin),
        ms(all_origin.quantile(0.5)),
        ms(all_origin.quantile(0.99)),
    );
    println!();
    println!(
        "Edge reads by `x-standings-cache` (HIT: from parts or a page already held; MISS: fetched from the origin):"
    );
    println!();
    println!("| read | HIT reads | HIT p50 | HIT p99 | MISS reads | MISS p50 | MISS p99 |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for kind in Kind::ALL {
        let (h, m) = (&edge.hit[kind as usize], &edge.miss[kind as usize]);
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            kind.name(),
            h.count(),
            ms(h.quantile(0.5)),
            ms(h.quantile(0.99)),
            m.count(),
            ms(m.quantile(0.5)),
            ms(m.quantile(0.99)),
        );
    }
    println!();
    // Counted over the whole edge run, warm-up included, on both sides of the ratio: the
    // edge's own read counts, the origin's query counts and the edge's fetches from it.
    let delta = |name: &str| {
        let after = stats_after
            .iter()
            .find(|(k, _)| k == name)
            .map_or(0.0, |(_, v)| *v);
        let before = stats_before
            .iter()
            .find(|(k, _)| k == name)
            .map_or(0.0, |(_, v)| *v);
        after - before
    };
    let edge_reads: f64 = ["top", "rank", "nearby", "friends_of", "rank_players", "boards"]
        .iter()
        .map(|k| delta(&format!("requests.{k}")))
        .sum();
    let fetches: f64 = stats_after
        .iter()
        .filter(|(k, _)| k.starts_with("origin_fetches.") && k != "origin_fetches.unreachable")
        .map(|(k, _)| delta(k))
        .sum();
    println!(
        "Origin share of the edge run's {edge_reads:.0} reads: the origin answered {origin_reads_during_edge:.0} reads \
         ({:.2} %; target <= 1 %); the edge sent it {fetches:.0} requests of every kind (heads, manifests, chunks, \
         friend lists, introspections, forwards: {:.2} % of the reads). {moved} players moved.",
        100.0 * origin_reads_during_edge / edge_reads.max(1.0),
        100.0 * fetches / edge_reads.max(1.0)
    );
    let changed: Vec<String> = stats_after
        .iter()
        .map(|(k, _)| (k, delta(k)))
        .filter(|(_, d)| *d != 0.0)
        .map(|(k, d)| format!("{k} {d:+.0}"))
        .collect();
    println!("/edge/stats over the edge run: {}", changed.join(", "));
    let mut snapshot: Vec<(&String, f64)> = metrics_after
        .0
        .iter()
        .filter(|(k, _)| k.starts_with("standings_snapshot") && !k.contains("_bucket"))
        .map(|(k, v)| (k, v - metrics_before.0.get(k).copied().unwrap_or(0.0)))
        .collect();
    snapshot.sort_by(|a, b| a.0.cmp(b.0));
    if snapshot.is_empty() {
        println!("The origin's /metrics has no standings_snapshot* series.");
    } else {
        println!("The origin's snapshot series over both runs (deltas):");
        for (k, v) in &snapshot {
            println!("  {k} {v}");
        }
        // Histograms: the mean of each `_sum` over its `_count`.
        for (k, sum) in &snapshot {
            if let Some(name) = k.strip_suffix("_sum")
                && let Some((_, count)) = snapshot.iter().find(|(c, _)| **c == format!("{name}_count"))
                && *count > 0.0
            {
                println!("  mean {name}: {:.6} over {count} observations", sum / count);
            }
        }
    }
}
