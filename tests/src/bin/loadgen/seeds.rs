//! `loadgen seeds`: the design documents' load on one board, at once.
//!
//! One run loads `--members` players through the batch endpoint (and the same players into a
//! Redis sorted set), measures rank reads on both sides, subscribes live views, then for
//! `--spike-seconds` offers single and batched writes at `--offered-rate` (above what the
//! machine takes) while 64 connections read rank, top-100 and nearby and the subscribers
//! watch. The writes not yet sent when the spike ends are the backlog; the writers drain it
//! and the report says how fast. Then: every acknowledged event counted by the service, the
//! board's digest equal to `standings rebuild`'s, resident memory per member at rest, and the
//! time a restart takes until ready.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::bench::{self, BOARD_PATH, EventIds, Plan, Side, Workload};
use crate::cpu::{self, Usage};
use crate::http::{HttpConn, count};
use crate::latency::Histogram;
use crate::scrape::{LAG_METRIC, Scrape, quantile_between};
use crate::service::{Database, SERVICE_TOKEN, Service};
use crate::subscribe::{self, REFUSALS, Shape, Spec, Tally, Target, Transport, Watched};
use crate::workload::{Population, Rng, player_id, push_int};
use crate::{Common, fmt_latency, thousands};

/// The seeds' load on one board: a spike of writes beside reads and live views, with Redis.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) common: Common,
    /// The Redis peer (on 127.0.0.1).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:6379", value_parser = crate::local_addr)]
    redis: String,
    /// How long writes are offered at `--offered-rate`.
    #[arg(long, value_name = "S", default_value = "60", value_parser = crate::harness::positive)]
    spike_seconds: f64,
    /// Events a second offered during the spike, single and batched together; event `i` of
    /// each kind is due at `i / its rate` after the spike begins.
    #[arg(long, value_name = "N", default_value = "300000", value_parser = crate::harness::positive)]
    offered_rate: f64,
    /// The share of the offered events sent as single submissions (the rest in batches).
    #[arg(long, value_name = "F", default_value = "0.1", value_parser = share)]
    single_share: f64,
    /// Events per batched submission during the spike.
    #[arg(long, value_name = "N", default_value = "100", value_parser = crate::batch_size)]
    spike_batch: u64,
    /// Connections sending single submissions.
    #[arg(long, value_name = "N", default_value = "32", value_parser = crate::harness::at_least_one::<usize>)]
    single_connections: usize,
    /// Connections sending batched submissions.
    #[arg(long, value_name = "N", default_value = "8", value_parser = crate::harness::at_least_one::<usize>)]
    batch_connections: usize,
    /// `around:P:25` views subscribed before the spike (after the top watchers), each on a
    /// player of its own.
    #[arg(long, value_name = "N", default_value = "2000")]
    around_views: usize,
    /// Subscribers of one `top:100` view.
    #[arg(long, value_name = "N", default_value = "2000")]
    top_watchers: usize,
    /// How long the writers may take to send the backlog once the spike ends.
    #[arg(long = "drain-timeout-seconds", value_name = "S", default_value = "1800", value_parser = crate::harness::seconds)]
    drain_timeout: Duration,
}

/// `--single-share`: 0 to 1.
fn share(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err("must be from 0 to 1".into()),
    }
}

/// The read kinds of the spike, connection `i` reading kind `i % 3`.
const READS: [(&str, &str); 3] = [("rank", "/rank"), ("top", ""), ("nearby", "/nearby?radius=5")];

/// What the spike's writers did.
#[derive(Default)]
struct Writes {
    /// Events acknowledged (singles answered 202, batch items ACCEPTED), by second since the
    /// spike began.
    acked_by_second: Vec<u64>,
    /// Events sent as singles and as batch items.
    singles: u64,
    batched: u64,
    /// Requests the service turned away with a Retry-After (retried with the same ids).
    retried: u64,
    /// Ack time from the event's due time (what a game server with a queue sees) and from the
    /// request's send (what the service took).
    from_due: Histogram,
    from_send: Histogram,
    /// Events due but not yet sent when the spike ended.
    backlog_at_end: u64,
    /// From the spike's end until the last due event was acknowledged.
    drained_in: Duration,
}

/// One read kind's figures during the spike.
struct Reads {
    kind: &'static str,
    count: u64,
    /// At the client.
    latency: Histogram,
    /// The service's own p50 and p99, in seconds.
    server: Option<(f64, f64)>,
}

/// The figures of the run.
struct Report {
    members: u64,
    load: Duration,
    load_cpu: Usage,
    redis_load: Duration,
    redis_used: u64,
    rank_standings: bench::Measured,
    rank_redis: bench::Measured,
    subscribers: u64,
    /// Refused subscriptions, by [`REFUSALS`].
    refused: [u64; 3],
    per_subscriber: f64,
    writes: Writes,
    spike_cpu: Usage,
    reads: Vec<Reads>,
    durable_ack: Option<(f64, f64)>,
    visible_lag: Option<(f64, f64)>,
    notify_lag: Option<(f64, f64)>,
    messages: u64,
    violations: u64,
    counted: u64,
    digest_took: Duration,
    replay: Duration,
    rss_rested: u64,
    stop_took: Duration,
    restart_ready: Duration,
    restored: String,
}

pub(crate) async fn run(args: &Args) -> Result<(), String> {
    let population = Population::new(args.common.members, args.common.run.seed)?;
    let subscribers = args.around_views + args.top_watchers;
    crate::live::descriptors((subscribers + args.common.connections + 512) as u64)?;
    let redis_key = format!("standings-loadgen:{}:seeds", std::process::id()).into_bytes();
    let room = subscribers + 16;
    let extra = format!(
        "max_connections = {}\n\n[live]\nmax_subscribers_per_token = {room}\nmax_subscribers_per_board = {room}\nmax_subscribers = {room}\n",
        subscribers + args.common.connections + args.single_connections + args.batch_connections + 256,
    );
    let mut service = Service::prepare_with(
        &args.common.standings_bin,
        Database::Sqlite,
        args.common.run.keep,
        "loadgen-seeds",
        &extra,
    )?;
    let plan = Arc::new(Plan {
        population,
        standings_addr: service.addr.clone(),
        redis_addr: args.redis.clone(),
        redis_key,
        connections: args.common.connections,
        warmup: Duration::from_secs_f64(args.common.warmup_seconds),
        measure: Duration::from_secs_f64(args.common.seconds),
        event_ids: EventIds::Member,
        nonce: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
    });
    eprintln!(
        "loadgen seeds: {} members; spike {}s at {} events/s offered ({:.0} % single); {} around views, {} top watchers; service on {}",
        args.common.members,
        args.spike_seconds,
        args.offered_rate,
        args.single_share * 100.0,
        args.around_views,
        args.top_watchers,
        service.addr
    );
    let result = measure(args, &plan, &mut service).await;
    if let Err(e) = bench::redis_delete(&plan.redis_addr, &plan.redis_key).await {
        eprintln!("loadgen seeds: cannot delete the Redis key: {e}");
    }
    let report = result.inspect_err(|_| eprintln!("loadgen seeds: {}", service.log_tail()))?;
    if let Err(e) = service.stop(Duration::from_secs(120)) {
        eprintln!("loadgen seeds: {e}");
    }
    print_report(args, &report);
    Ok(())
}

async fn measure(args: &Args, plan: &Arc<Plan>, service: &mut Service) -> Result<Report, String> {
    let members = args.common.members;
    bench::redis_delete(&plan.redis_addr, &plan.redis_key).await?;
    let redis_before = bench::redis_used_memory(&plan.redis_addr).await?;
    let crate::Loaded {
        watched,
        load,
        load_cpu,
        ..
    } = crate::start_and_load(&args.common, plan, service, "loadgen seeds").await?;
    eprintln!(
        "loadgen seeds: loaded in {load:.1?} = {:.0} events/s ({:.2} cores)",
        members as f64 / load.as_secs_f64(),
        load_cpu.standings
    );
    let redis_load = bench::load_redis(plan, args.common.batch).await?;
    let redis_used = bench::redis_used_memory(&plan.redis_addr)
        .await?
        .saturating_sub(redis_before);
    eprintln!(
        "loadgen seeds: Redis loaded in {redis_load:.1?}; used_memory +{} MiB",
        redis_used >> 20
    );
    bench::verify_same_order(plan, 100).await?;

    quiet(args, watched, "rank reads").await;
    let rank_standings = bench::measure(plan, Side::Standings, Workload::Rank, &watched).await?;
    let rank_redis = bench::measure(plan, Side::Redis, Workload::Rank, &watched).await?;
    eprintln!(
        "loadgen seeds: rank {:.0}/s (p99 {}) vs ZREVRANK {:.0}/s (p99 {})",
        rank_standings.throughput(),
        fmt_latency(rank_standings.latency.quantile(0.99)),
        rank_redis.throughput(),
        fmt_latency(rank_redis.latency.quantile(0.99))
    );

    // The subscribers open on the loaded board before the spike, as players already watching.
    let (rss_before, _) = service.resident()?;
    let tally = Arc::new(Tally::default());
    let follows = Arc::new(Watched::default());
    let target = Arc::new(Target {
        addr: service.addr.clone(),
        board_path: BOARD_PATH.to_string(),
        token: SERVICE_TOKEN.to_string(),
    });
    let mut rng = Rng::stream(plan.population.seed ^ 0x7365_6564, 0);
    let mut held = Vec::new();
    // The shared view's watchers first: joining a watched view is always admitted, so once its
    // first watcher holds it the rest join whatever the `around` views cost afterwards.
    for index in 0..args.around_views + args.top_watchers {
        let (shape, view) = if index < args.top_watchers {
            (Shape::Top, "top:100".to_string())
        } else {
            let id = player_id(rng.below(members));
            (
                Shape::Around,
                format!("around:{}:25", String::from_utf8_lossy(&id)),
            )
        };
        let spec = Spec {
            transport: Transport::Sse,
            shape,
            view,
            watched: None,
            verify: false,
            index,
        };
        held.push(tokio::spawn(subscribe::run(
            target.clone(),
            spec,
            tally.clone(),
            follows.clone(),
        )));
        if index % 200 == 199 {
            wait_settled(&tally, held.len() as u64).await?;
        }
    }
    wait_settled(&tally, held.len() as u64).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (rss_after, _) = service.resident()?;
    let subscribers = tally.ready.load(Ordering::Relaxed);
    let refused = [0, 1, 2].map(|i| tally.refused[i].load(Ordering::Relaxed));
    let per_subscriber = rss_after.saturating_sub(rss_before) as f64 / subscribers.max(1) as f64;
    eprintln!(
        "loadgen seeds: {subscribers} subscribers hold their snapshot ({refused:?} refused), {per_subscriber:.0} B each"
    );

    // The spike: writes offered above capacity, reads and views at once.
    let before = Scrape::take(&service.addr).await?;
    let accepted_before = before
        .0
        .get("standings_events_accepted_total")
        .copied()
        .unwrap_or(0.0);
    let messages_before: u64 = tally.messages.iter().map(|m| m.load(Ordering::Relaxed)).sum();
    let started = Instant::now() + Duration::from_millis(200);
    let spike_end = started + Duration::from_secs_f64(args.spike_seconds);
    let spike_from = cpu::Snapshot::take(watched);
    let readers = spawn_readers(plan, started, spike_end).await?;
    let writes = spike_writes(args, plan, started, spike_end).await?;
    let mut reads = Vec::new();
    let mut read_kinds: Vec<(u64, Histogram)> = READS.iter().map(|_| (0, Histogram::new())).collect();
    for (index, reader) in readers.into_iter().enumerate() {
        let (n, h) = reader.await.map_err(|e| format!("a reader failed: {e}"))??;
        read_kinds[index % READS.len()].0 += n;
        read_kinds[index % READS.len()].1.merge(&h);
    }
    let spike_cpu = spike_from.until(&cpu::Snapshot::take(watched));
    let after = Scrape::take(&service.addr).await?;
    let quantiles = |name: &str, label: Option<&str>| {
        let (b, a) = match label {
            Some(l) => (before.buckets_labelled(name, l), after.buckets_labelled(name, l)),
            None => (before.buckets(name), after.buckets(name)),
        };
        quantile_between(&b, &a, 0.5)
            .zip(quantile_between(&b, &a, 0.99))
            .map(|((p50, _), (p99, _))| (p50, p99))
    };
    for ((kind, _), (n, h)) in READS.iter().zip(read_kinds) {
        let label = format!("kind=\"{kind}\"");
        reads.push(Reads {
            kind,
            count: n,
            latency: h,
            server: quantiles("standings_query_seconds", Some(&label)),
        });
    }
    let durable_ack = quantiles("standings_durable_ack_seconds", None);
    let visible_lag = quantiles("standings_event_visible_lag_seconds", None);
    let notify_lag = quantiles(LAG_METRIC, None);
    let messages = tally
        .messages
        .iter()
        .map(|m| m.load(Ordering::Relaxed))
        .sum::<u64>()
        - messages_before;
    let violations = tally.violations.load(Ordering::Relaxed);
    for h in held {
        h.abort();
    }
    let sent = writes.singles + writes.batched;
    let counted = (after
        .0
        .get("standings_events_accepted_total")
        .copied()
        .unwrap_or(0.0)
        - accepted_before) as u64;
    if counted != sent {
        return Err(format!(
            "the writers had {sent} events acknowledged, the service counted {counted} accepted"
        ));
    }

    eprintln!("loadgen seeds: digest, then `standings rebuild` beside the service");
    let digest_started = Instant::now();
    let digest = crate::board_digest(&service.addr).await?;
    let digest_took = digest_started.elapsed();
    let replay = service.rebuild()?;
    tokio::time::sleep(crate::REST_AFTER_LOAD).await;
    let (rss_rested, _) = service.resident()?;

    eprintln!("loadgen seeds: restarting (SIGINT, then start)");
    let stopping = Instant::now();
    service.stop(Duration::from_secs(600))?;
    let stop_took = stopping.elapsed();
    let restart_ready = service.start(args.common.run.ready_timeout).await?;
    let again = crate::board_digest(&service.addr).await?;
    if (again.digest.as_str(), again.total_players) != (digest.digest.as_str(), digest.total_players) {
        return Err(format!(
            "the board changed across the restart: digest {} of {} players, then {} of {}",
            digest.digest, digest.total_players, again.digest, again.total_players
        ));
    }
    let restored = crate::restored_line(service);
    Ok(Report {
        members,
        load,
        load_cpu,
        redis_load,
        redis_used,
        rank_standings,
        rank_redis,
        subscribers,
        refused,
        per_subscriber,
        writes,
        spike_cpu,
        reads,
        durable_ack,
        visible_lag,
        notify_lag,
        messages,
        violations,
        counted,
        digest_took,
        replay,
        rss_rested,
        stop_took,
        restart_ready,
        restored,
    })
}

async fn quiet(args: &Args, watched: cpu::Watched, what: &str) {
    if !args.common.quiet_wait.is_zero() {
        let (waited, busy) = cpu::wait_quiet(watched, 0.2, args.common.quiet_wait).await;
        eprintln!("loadgen seeds: {what}: waited {waited:.1?} for a quiet machine ({busy:.2} cores busy)");
    }
}

/// Waits until each of `opened` subscribers has its snapshot, was refused or failed; a failure
/// is an error.
async fn wait_settled(tally: &Tally, opened: u64) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(120);
    while tally.ready.load(Ordering::Relaxed) + tally.failed.load(Ordering::Relaxed) + tally.refused_total()
        < opened
    {
        if Instant::now() > deadline {
            return Err(format!(
                "{} of {opened} subscribers had their snapshot after 120 s",
                tally.ready.load(Ordering::Relaxed)
            ));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if tally.failed.load(Ordering::Relaxed) > 0 {
        let errors = tally.errors.lock().unwrap_or_else(|e| e.into_inner()).join("; ");
        return Err(format!("subscribing failed: {errors}"));
    }
    Ok(())
}

type Reader = tokio::task::JoinHandle<Result<(u64, Histogram), String>>;

/// The readers: the plan's connections, connection `i` reading kind `i % 3` back to back from
/// `from` until `until`.
async fn spawn_readers(plan: &Arc<Plan>, from: Instant, until: Instant) -> Result<Vec<Reader>, String> {
    let mut readers = Vec::with_capacity(plan.connections);
    for index in 0..plan.connections {
        let mut conn = HttpConn::connect(&plan.standings_addr, SERVICE_TOKEN).await?;
        let plan = plan.clone();
        readers.push(tokio::spawn(async move {
            let (_, suffix) = READS[index % READS.len()];
            let top = index % READS.len() == 1;
            let mut rng = Rng::stream(plan.population.seed ^ 0x7265_6164, index as u64);
            let mut latency = Histogram::new();
            let mut n = 0u64;
            tokio::time::sleep_until(from.into()).await;
            while Instant::now() < until {
                let path = conn.start("GET");
                path.extend_from_slice(BOARD_PATH.as_bytes());
                if top {
                    path.extend_from_slice(b"/top?limit=100");
                } else {
                    path.extend_from_slice(b"/players/");
                    path.extend_from_slice(&player_id(rng.below(plan.population.members)));
                    path.extend_from_slice(suffix.as_bytes());
                }
                let begun = Instant::now();
                let answer = conn.send(&[]).await?;
                if answer.status != 200 {
                    return Err(format!(
                        "a read answered {}: {}",
                        answer.status,
                        conn.body_text(&answer)
                    ));
                }
                latency.record(begun.elapsed());
                n += 1;
            }
            Ok((n, latency))
        }));
    }
    Ok(readers)
}

/// One stream of offered writes: singles, or batches of `batch`.
struct Stream {
    /// Requests a second.
    rate: f64,
    /// Events per request (1 = a single submission).
    batch: u64,
    /// The next request's index.
    next: AtomicU64,
    /// Requests due before the spike's end.
    due_total: u64,
}

/// The spike's writes: both streams open-loop from `started`, events due until `spike_end`,
/// then the backlog drained.
async fn spike_writes(
    args: &Args,
    plan: &Arc<Plan>,
    started: Instant,
    spike_end: Instant,
) -> Result<Writes, String> {
    let seconds = args.spike_seconds;
    let singles = args.offered_rate * args.single_share;
    let batches = args.offered_rate * (1.0 - args.single_share) / args.spike_batch as f64;
    let streams = [
        (
            Arc::new(Stream {
                rate: singles,
                batch: 1,
                next: AtomicU64::new(0),
                due_total: (singles * seconds) as u64,
            }),
            args.single_connections,
        ),
        (
            Arc::new(Stream {
                rate: batches,
                batch: args.spike_batch,
                next: AtomicU64::new(0),
                due_total: (batches * seconds) as u64,
            }),
            args.batch_connections,
        ),
    ];
    let horizon = seconds as usize + args.drain_timeout.as_secs() as usize + 2;
    let by_second: Arc<Vec<AtomicU64>> = Arc::new((0..horizon).map(|_| AtomicU64::new(0)).collect());
    let failed = Arc::new(AtomicBool::new(false));
    let deadline = spike_end + args.drain_timeout;
    let mut tasks = Vec::new();
    for (kind, (stream, connections)) in streams.iter().enumerate() {
        if stream.rate <= 0.0 {
            continue;
        }
        for index in 0..*connections {
            let mut conn = HttpConn::connect(&plan.standings_addr, SERVICE_TOKEN).await?;
            let (stream, plan, by_second, failed) =
                (stream.clone(), plan.clone(), by_second.clone(), failed.clone());
            tasks.push(tokio::spawn(async move {
                let mut out = Writes {
                    from_due: Histogram::new(),
                    from_send: Histogram::new(),
                    ..Writes::default()
                };
                let mut rng = Rng::stream(
                    plan.population.seed ^ 0x7370_696b,
                    ((kind as u64) << 32) | index as u64,
                );
                let mut body = Vec::with_capacity(stream.batch as usize * 200 + 16);
                let mut event_id = Vec::with_capacity(64);
                loop {
                    let i = stream.next.fetch_add(1, Ordering::Relaxed);
                    if i >= stream.due_total || failed.load(Ordering::Relaxed) {
                        break;
                    }
                    let due = started + Duration::from_secs_f64(i as f64 / stream.rate);
                    tokio::time::sleep_until(due.into()).await;
                    if Instant::now() > deadline {
                        failed.store(true, Ordering::Relaxed);
                        return Err(format!(
                            "the backlog did not drain within {:?} of the spike's end",
                            deadline - spike_end
                        ));
                    }
                    body.clear();
                    if stream.batch > 1 {
                        body.extend_from_slice(b"{\"events\":[");
                    }
                    for j in 0..stream.batch {
                        if j > 0 {
                            body.push(b',');
                        }
                        event_id.clear();
                        event_id.extend_from_slice(b"seed-");
                        push_int(&mut event_id, plan.nonce as i64);
                        for part in [kind as u64, i, j] {
                            event_id.push(b'-');
                            push_int(&mut event_id, part as i64);
                        }
                        let member = rng.below(plan.population.members);
                        bench::push_event(
                            &mut body,
                            &event_id,
                            member,
                            plan.population.fresh_standing(&mut rng),
                        );
                    }
                    if stream.batch > 1 {
                        body.extend_from_slice(b"]}");
                    }
                    let path = if stream.batch > 1 {
                        "/v1/score-events/batch"
                    } else {
                        "/v1/score-events"
                    };
                    loop {
                        let begun = Instant::now();
                        let answer = conn.post(path, &body).await?;
                        let done = Instant::now();
                        let accepted = if stream.batch > 1 {
                            count(conn.body(&answer), b"\"ACCEPTED\"") as u64
                                + count(conn.body(&answer), b"\"DUPLICATE\"") as u64
                        } else {
                            1
                        };
                        let ok = if stream.batch > 1 {
                            answer.status == 200
                        } else {
                            answer.status == 202
                        };
                        if ok && accepted == stream.batch {
                            out.from_due.record(done - due);
                            out.from_send.record(done - begun);
                            let second = (done.saturating_duration_since(started).as_secs() as usize)
                                .min(by_second.len() - 1);
                            by_second[second].fetch_add(stream.batch, Ordering::Relaxed);
                            if stream.batch > 1 {
                                out.batched += stream.batch;
                            } else {
                                out.singles += 1;
                            }
                            break;
                        }
                        let retry = conn
                            .headers(&answer)
                            .iter()
                            .any(|(name, _)| name.eq_ignore_ascii_case("retry-after"));
                        if matches!(answer.status, 429 | 503) && retry {
                            // Retried with the same ids: a retry is a no-op where the first landed.
                            out.retried += 1;
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            continue;
                        }
                        failed.store(true, Ordering::Relaxed);
                        return Err(format!(
                            "a spike write answered {} ({accepted} of {} accepted): {}",
                            answer.status,
                            stream.batch,
                            conn.body_text(&answer)
                        ));
                    }
                }
                Ok::<_, String>(out)
            }));
        }
    }
    // The backlog when the spike ends: requests due by then and not yet taken.
    tokio::time::sleep_until(spike_end.into()).await;
    let backlog_at_end: u64 = streams
        .iter()
        .map(|(s, _)| s.due_total.saturating_sub(s.next.load(Ordering::Relaxed)) * s.batch)
        .sum();
    eprintln!("loadgen seeds: the spike ended with {backlog_at_end} events not yet sent; draining");
    let mut writes = Writes {
        from_due: Histogram::new(),
        from_send: Histogram::new(),
        backlog_at_end,
        ..Writes::default()
    };
    for task in tasks {
        let out = task.await.map_err(|e| format!("a writer failed: {e}"))??;
        writes.singles += out.singles;
        writes.batched += out.batched;
        writes.retried += out.retried;
        writes.from_due.merge(&out.from_due);
        writes.from_send.merge(&out.from_send);
    }
    writes.drained_in = Instant::now().saturating_duration_since(spike_end);
    let mut acked: Vec<u64> = by_second.iter().map(|a| a.load(Ordering::Relaxed)).collect();
    while acked.last() == Some(&0) {
        acked.pop();
    }
    writes.acked_by_second = acked;
    Ok(writes)
}

fn ms(q: Option<(f64, f64)>) -> String {
    q.map_or("-".into(), |(p50, p99)| {
        format!("{:.2} / {:.2} ms", p50 * 1e3, p99 * 1e3)
    })
}

fn print_report(args: &Args, r: &Report) {
    let n = r.members as f64;
    let w = &r.writes;
    let spike = args.spike_seconds as usize;
    let during: u64 = w.acked_by_second.iter().take(spike).sum();
    let after: u64 = w.acked_by_second.iter().skip(spike).sum();
    println!();
    println!(
        "## The seeds' load on one board: {} members, spike of {} s at {} events/s offered ({:.0} % single, batches of {})",
        thousands(n),
        args.spike_seconds,
        thousands(args.offered_rate),
        args.single_share * 100.0,
        args.spike_batch
    );
    println!();
    println!("| figure | Standings | Redis | note |");
    println!("| --- | --- | --- | --- |");
    println!(
        "| load, batches of {} on {} connections | {} events/s ({:.2} cores) | {} members/s (pipelined ZADD, not durable) | |",
        args.common.batch,
        args.common.load_connections,
        thousands(n / r.load.as_secs_f64()),
        r.load_cpu.standings,
        thousands(n / r.redis_load.as_secs_f64()),
    );
    println!(
        "| rank alone, {} connections | {}/s, p50 {}, p99 {} ({:.2} cores) | ZREVRANK {}/s, p50 {}, p99 {} | quiet machine |",
        args.common.connections,
        thousands(r.rank_standings.throughput()),
        fmt_latency(r.rank_standings.latency.quantile(0.5)),
        fmt_latency(r.rank_standings.latency.quantile(0.99)),
        r.rank_standings.cpu.standings,
        thousands(r.rank_redis.throughput()),
        fmt_latency(r.rank_redis.latency.quantile(0.5)),
        fmt_latency(r.rank_redis.latency.quantile(0.99)),
    );
    println!(
        "| memory at rest | {:.1} B/member (VmRSS {} MiB, with {} subscribers) | {:.1} B/member (used_memory +{} MiB) | goal <= 48 B |",
        r.rss_rested as f64 / n,
        r.rss_rested >> 20,
        r.subscribers,
        r.redis_used as f64 / n,
        r.redis_used >> 20,
    );
    println!(
        "| writes acknowledged during the spike | {}/s ({} events; {} single, {} batched) | | offered {}/s |",
        thousands(during as f64 / args.spike_seconds),
        thousands(during as f64),
        thousands(w.singles as f64),
        thousands(w.batched as f64),
        thousands(args.offered_rate),
    );
    println!(
        "| ack from send, p50 / p99 | {} / {} (service: {}) | | durable ack measured by the service |",
        fmt_latency(w.from_send.quantile(0.5)),
        fmt_latency(w.from_send.quantile(0.99)),
        ms(r.durable_ack),
    );
    println!(
        "| ack from due, p50 / p99 | {} / {} | | includes the wait in the generator's queue |",
        fmt_latency(w.from_due.quantile(0.5)),
        fmt_latency(w.from_due.quantile(0.99)),
    );
    println!(
        "| backlog at the spike's end | {} events, sent and acknowledged {:.1} s later ({}/s while draining) | | {} requests retried after a Retry-After |",
        thousands(w.backlog_at_end as f64),
        w.drained_in.as_secs_f64(),
        thousands(after as f64 / w.drained_in.as_secs_f64().max(1e-9)),
        w.retried,
    );
    println!(
        "| commit to visible, p50 / p99 | {} | | the service's visible lag |",
        ms(r.visible_lag)
    );
    for Reads {
        kind,
        count,
        latency,
        server,
    } in &r.reads
    {
        println!(
            "| {kind} reads during the spike | {}/s, client p50 {} p99 {} (server {}) | | {} connections in all |",
            thousands(*count as f64 / args.spike_seconds),
            fmt_latency(latency.quantile(0.5)),
            fmt_latency(latency.quantile(0.99)),
            ms(*server),
            args.common.connections,
        );
    }
    println!(
        "| live subscribers during the spike | {} (refused: {}), {:.0} B each, {} messages, notify lag {} | | {} gaps |",
        r.subscribers,
        REFUSALS
            .iter()
            .zip(r.refused)
            .map(|((status, code), n)| format!("{n} {status} {code}"))
            .collect::<Vec<_>>()
            .join(", "),
        r.per_subscriber,
        thousands(r.messages as f64),
        ms(r.notify_lag),
        r.violations,
    );
    println!(
        "| CPU during the spike and drain | {:.2} cores (generator {:.2}, other {:.2}) | | |",
        r.spike_cpu.standings, r.spike_cpu.generator, r.spike_cpu.other
    );
    println!(
        "| nothing lost | {} acknowledged = {} counted by the service; digest ({:.1} s) = `standings rebuild` ({:.1} s) | | |",
        thousands((w.singles + w.batched) as f64),
        thousands(r.counted as f64),
        r.digest_took.as_secs_f64(),
        r.replay.as_secs_f64(),
    );
    println!(
        "| restart | stop {:.1} s, then ready {:.1} s ({}) | | goal <= 10 s |",
        r.stop_took.as_secs_f64(),
        r.restart_ready.as_secs_f64(),
        r.restored,
    );
    println!();
    println!(
        "Acknowledged per second: {}",
        w.acked_by_second
            .iter()
            .map(|a| thousands(*a as f64))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let per_event = r.load_cpu.standings / (n / r.load.as_secs_f64());
    let per_read = r.rank_standings.cpu.standings / r.rank_standings.throughput();
    println!(
        "CPU: {:.2} us per loaded event, {:.2} us per rank read: 300,000 events/s need {:.1} cores, 100,000 rank reads/s {:.1} cores.",
        per_event * 1e6,
        per_read * 1e6,
        per_event * 300_000.0,
        per_read * 100_000.0
    );
}
