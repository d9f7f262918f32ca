//! The soak: mixed load (rank, top-100, nearby reads and durable single submissions) at half the
//! measured maximum for a long time, sampling the service's resident memory and the requests'
//! p99 every 10 s. It fails on any error, on a rising memory trend, or on a p99 that worsens.
//!
//! ```text
//! cargo build --release -p standings-origin --bin standings
//! cargo run --release -p standings-tests --bin soak -- --seconds 1800
//! ```
//!
//! First the board is loaded with `--members` players; then the maximum is measured for
//! `--measure-seconds` with every connection sending as fast as it is answered; then each
//! connection sends on a fixed schedule so that all together offer half that rate. The trend
//! checks, and why they are set where they are:
//! - memory: the least-squares slope of VmRSS over the samples, times the sampled span, must be
//!   under 80 MiB + 5% of the mean. The writer's SQLite page cache (up to 64 MiB) fills as the
//!   log grows, for minutes at this rate, and the rest (top pages cached per version, freed
//!   heap that glibc keeps) is bounded too: that is the 64 MiB, and 16 MiB more for noise. A
//!   leak of 200 bytes per request at a few thousand requests per second grows by more than
//!   that in two minutes, and a leak of 20 bytes per request does in thirty;
//! - latency: the median of the last third's p99s must be at most 2x the first third's, or
//!   both under 5 ms. The machine is shared, so one slow sample is noise; a service that
//!   degrades shows in the median of many. A shared machine also has slow spells of half a
//!   minute or more (a neighbour's disk): when only this check fails, the soak goes on for a
//!   third of its length more and judges again with the last third ending there, so a spell
//!   that passes is not taken for a service that degrades, which stays slow.
#![forbid(unsafe_code)]

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

use standings_tests::harness::{self, Options};
use standings_tests::http::HttpConn;
use standings_tests::latency::Histogram;
use standings_tests::service::{ADMIN_TOKEN, Database, SERVICE_TOKEN, Service};
use standings_tests::workload::{Rng, push_int, push_rfc3339};

const BOARD: &str = "/v1/leaderboards/soak/mixed/s1/global";
/// 2025-10-13T00:00:00Z: every event is achieved after it and long before now.
const T0: i64 = 1_760_313_600_000;
/// How long one request may take before it counts as an error.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The soak: mixed load at half the measured maximum for a long time; it fails on any error, a
/// rising memory trend or a worsening p99.
#[derive(clap::Parser, Debug)]
#[command(name = "soak")]
struct Args {
    /// The soak's length after the warm-up, in seconds.
    #[arg(long, value_name = "S", default_value = "120")]
    seconds: u64,
    /// How often memory and p99 are sampled, in seconds.
    #[arg(long, value_name = "S", default_value = "10", value_parser = harness::zero_as_one)]
    sample_seconds: u64,
    /// Seconds at the soak rate before the first sample.
    #[arg(long, value_name = "S", default_value = "20")]
    warmup_seconds: u64,
    /// How long the maximum is measured, in seconds.
    #[arg(long, value_name = "S", default_value = "5", value_parser = harness::zero_as_one)]
    measure_seconds: u64,
    /// Keep-alive connections.
    #[arg(long, value_name = "N", default_value = "16", value_parser = harness::zero_as_one)]
    connections: u64,
    /// Players loaded before the measurement.
    #[arg(long, value_name = "N", default_value = "20000", value_parser = harness::zero_as_one)]
    members: u64,
    /// The service binary.
    #[arg(long, value_name = "PATH", default_value = "target/release/standings")]
    standings_bin: PathBuf,
    /// The service's database: sqlite or postgres.
    #[arg(long, value_name = "DB", default_value = "sqlite")]
    database: String,
    /// An existing database to create ours from.
    #[arg(
        long,
        value_name = "URL",
        default_value = "postgres://postgres@127.0.0.1:5432/test"
    )]
    postgres_url: String,
    /// The seed of every draw.
    #[arg(long, value_name = "N", default_value = "1")]
    seed: u64,
}

impl Options for Args {}

fn main() -> ExitCode {
    let args: Args = harness::options();
    // One thread drives every connection, so the generator takes as little as possible of the
    // CPU it shares with the service.
    harness::block_on("soak", 1, async { run(&args).await.map(Some) })
}

/// What the connections share (one thread, so `RefCell` is enough): the current window's
/// latencies and the counts.
#[derive(Default)]
struct Window {
    latency: Histogram,
    requests: u64,
    errors: Vec<String>,
    /// Scheduled requests sent more than one interval late (the generator fell behind).
    behind: u64,
}

/// One sample row.
struct Sample {
    at: f64,
    requests: u64,
    p50: Duration,
    p99: Duration,
    rss: u64,
}

async fn run(args: &Args) -> Result<String, String> {
    let database = match args.database.as_str() {
        "sqlite" => Database::Sqlite,
        "postgres" => Database::Postgres {
            admin_url: args.postgres_url.clone(),
            name: format!("standings_soak_{}", std::process::id()),
        },
        other => return Err(format!("--database {other:?} is not sqlite or postgres")),
    };
    let mut service = Service::prepare_with(
        &args.standings_bin,
        database,
        false,
        "soak",
        "pin_http_threads = false\n",
    )?;
    service.start(Duration::from_secs(120)).await?;
    let addr = service.addr.clone();
    load(&addr, args.members).await?;

    // The maximum: every connection closed-loop.
    let window = Rc::new(RefCell::new(Window::default()));
    let params = DriveParams {
        connections: args.connections,
        seed: args.seed,
        members: args.members,
    };
    let measure_end = Rc::new(Cell::new(
        Instant::now() + Duration::from_secs(args.measure_seconds),
    ));
    let measured = drive_with(params, &addr, &window, None, &measure_end, 0).await;
    let max_rate = measured.requests as f64 / args.measure_seconds as f64;
    if let Some(e) = measured.errors.first() {
        return Err(format!(
            "measuring the maximum: {} errors, the first: {e}",
            measured.errors.len()
        ));
    }
    if measured.requests == 0 {
        return Err("no request was answered while measuring the maximum".into());
    }
    let rate = max_rate / 2.0;
    eprintln!(
        "soak: the maximum mixed rate is {max_rate:.0} requests/s over {} connections; soaking at {rate:.0}/s for {} s (after {} s of warm-up)",
        args.connections, args.seconds, args.warmup_seconds
    );

    // The soak: warm-up, then sampled windows, all on one schedule; the end moves once if a
    // worse p99 needs confirming. The load goes on a little past the last sample, so that it is
    // still running when that sample decides to go on.
    let started = Instant::now();
    let mut end = started + Duration::from_secs(args.warmup_seconds + args.seconds);
    let drive_margin = Duration::from_secs(1);
    let drive_end = Rc::new(Cell::new(end + drive_margin));
    let extension = Duration::from_secs(args.seconds.div_ceil(3));
    let mut extended = false;
    let window = Rc::new(RefCell::new(Window::default()));
    let soak = tokio::task::spawn_local({
        let window = window.clone();
        let addr = addr.clone();
        let drive_end = drive_end.clone();
        async move { drive_with(params, &addr, &window, Some(rate), &drive_end, 1).await }
    });
    tokio::time::sleep(Duration::from_secs(args.warmup_seconds)).await;
    window.replace(Window::default());
    let mut samples: Vec<Sample> = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    let mut behind = 0;
    eprintln!("soak:      t   requests      p50       p99   VmRSS MiB");
    let sample_every = Duration::from_secs(args.sample_seconds);
    let mut next = Instant::now() + sample_every;
    while next <= end + Duration::from_millis(1) {
        tokio::time::sleep_until(next.into()).await;
        let taken = window.replace(Window::default());
        let (rss, _) = service.resident()?;
        let sample = Sample {
            at: started.elapsed().as_secs_f64() - args.warmup_seconds as f64,
            requests: taken.requests,
            p50: taken.latency.quantile(0.50),
            p99: taken.latency.quantile(0.99),
            rss,
        };
        eprintln!(
            "soak: {:6.0} {:10} {:>8} {:>9} {:11.1}",
            sample.at,
            sample.requests,
            fmt_latency(sample.p50),
            fmt_latency(sample.p99),
            sample.rss as f64 / 1048576.0
        );
        errors.extend(taken.errors);
        behind += taken.behind;
        samples.push(sample);
        next += sample_every;
        let last_sample = next > end + Duration::from_millis(1);
        if last_sample && !extended && judge(&samples).is_err_and(|why| why.latency_only) {
            extended = true;
            end += extension;
            drive_end.set(end + drive_margin);
            eprintln!(
                "soak: the p99 looks worse; going on for {} s to tell a slow spell of the machine from a service that degrades",
                extension.as_secs()
            );
        }
    }
    let tail = soak.await.map_err(|e| format!("the load task failed: {e}"))?;
    errors.extend(tail.errors);
    service.stop(Duration::from_secs(60))?;

    let requests: u64 = samples.iter().map(|s| s.requests).sum();
    let verdict = judge(&samples).map_err(|why| why.message);
    let summary = format!(
        "{} samples of {} s at {rate:.0} requests/s (half of the measured {max_rate:.0}){}: {requests} requests, {} errors, {behind} sent late; {}",
        samples.len(),
        args.sample_seconds,
        if extended {
            format!(", {} s of them to confirm a worse p99", extension.as_secs())
        } else {
            String::new()
        },
        errors.len(),
        verdict.as_ref().unwrap_or_else(|why| why)
    );
    if let Some(first) = errors.first() {
        return Err(format!("{summary}; the first error: {first}"));
    }
    verdict.map(|_| summary.clone()).map_err(|_| summary)
}

/// Why the trend checks failed.
#[derive(Debug)]
struct Failure {
    /// What failed, with the figures.
    message: String,
    /// Only the p99 worsened: worth confirming over more samples.
    latency_only: bool,
}

/// The trend checks (see the module doc for the thresholds). `Ok` and `Err` both carry the
/// figures.
fn judge(samples: &[Sample]) -> Result<String, Failure> {
    if samples.len() < 3 {
        return Err(Failure {
            message: format!(
                "only {} samples; at least 3 are needed for a trend",
                samples.len()
            ),
            latency_only: false,
        });
    }
    let n = samples.len() as f64;
    let mean_t = samples.iter().map(|s| s.at).sum::<f64>() / n;
    let mib = |s: &Sample| s.rss as f64 / 1048576.0;
    let mean_rss = samples.iter().map(mib).sum::<f64>() / n;
    let covariance: f64 = samples
        .iter()
        .map(|s| (s.at - mean_t) * (mib(s) - mean_rss))
        .sum();
    let variance: f64 = samples.iter().map(|s| (s.at - mean_t).powi(2)).sum();
    let slope = covariance / variance; // MiB per second
    let span = samples[samples.len() - 1].at - samples[0].at;
    let rise = slope * span;
    let allowed = 80.0 + 0.05 * mean_rss;
    let third = samples.len() / 3;
    let median = |part: &[Sample]| {
        let mut p99s: Vec<Duration> = part.iter().map(|s| s.p99).collect();
        p99s.sort();
        p99s[p99s.len() / 2]
    };
    let half = &samples[samples.len() / 2..];
    let half_slope = {
        let n = half.len() as f64;
        let mean_t = half.iter().map(|s| s.at).sum::<f64>() / n;
        let mean_rss = half.iter().map(mib).sum::<f64>() / n;
        let covariance: f64 = half.iter().map(|s| (s.at - mean_t) * (mib(s) - mean_rss)).sum();
        let variance: f64 = half.iter().map(|s| (s.at - mean_t).powi(2)).sum();
        covariance / variance
    };
    let first = median(&samples[..third.max(1)]);
    let last = median(&samples[samples.len() - third.max(1)..]);
    let floor = Duration::from_millis(5);
    let figures = format!(
        "VmRSS mean {mean_rss:.1} MiB, slope {:.3} MiB/min ({rise:+.1} MiB over {span:.0} s, allowed {allowed:.1}; {:.3} MiB/min over the second half); p99 median first third {}, last third {} (allowed 2x, or both under 5 ms)",
        slope * 60.0,
        half_slope * 60.0,
        fmt_latency(first),
        fmt_latency(last)
    );
    let memory_ok = rise < allowed;
    let latency_ok = last <= first * 2 || (first < floor && last < floor);
    if memory_ok && latency_ok {
        Ok(figures)
    } else {
        Err(Failure {
            message: format!(
                "{}{}{figures}",
                if memory_ok { "" } else { "memory trends upward; " },
                if latency_ok { "" } else { "p99 worsened; " }
            ),
            latency_only: memory_ok,
        })
    }
}

/// Defines the board and loads `members` players through the batch endpoint.
async fn load(addr: &str, members: u64) -> Result<(), String> {
    let mut admin = HttpConn::connect(addr, ADMIN_TOKEN).await?;
    let answer = admin
        .put("/v1/boards/soak/mixed/s1/global", br#"{"score_mode":"highest"}"#)
        .await?;
    if answer.status != 201 && answer.status != 200 {
        return Err(format!(
            "defining the board answered {}: {}",
            answer.status,
            admin.body_text(&answer)
        ));
    }
    let mut conn = HttpConn::connect(addr, SERVICE_TOKEN).await?;
    let mut rng = Rng::stream(0, 0);
    let mut first = 0;
    while first < members {
        let last = (first + 1000).min(members);
        let mut body = b"{\"events\":[".to_vec();
        for i in first..last {
            if i > first {
                body.push(b',');
            }
            push_event(
                &mut body,
                b"load-",
                i,
                i,
                rng.below(1_000_000) as i64,
                T0 + i as i64,
            );
        }
        body.extend_from_slice(b"]}");
        let answer = conn.post("/v1/score-events/batch", &body).await?;
        if answer.status != 200 || conn.body(&answer).windows(10).any(|w| w == b"\"REJECTED\"") {
            return Err(format!(
                "loading answered {}: {}",
                answer.status,
                conn.body_text(&answer)
            ));
        }
        first = last;
    }
    Ok(())
}

fn push_event(out: &mut Vec<u8>, prefix: &[u8], id: u64, player: u64, value: i64, achieved_at: i64) {
    out.extend_from_slice(b"{\"event_id\":\"");
    out.extend_from_slice(prefix);
    push_int(out, id as i64);
    out.extend_from_slice(b"\",\"player_id\":\"p");
    push_int(out, player as i64);
    out.extend_from_slice(b"\",\"game\":\"soak\",\"mode\":\"mixed\",\"season\":\"s1\",\"value\":");
    push_int(out, value);
    out.extend_from_slice(b",\"achieved_at\":\"");
    push_rfc3339(out, achieved_at);
    out.extend_from_slice(b"\"}");
}

/// What every connection of a phase needs to know.
#[derive(Clone, Copy)]
struct DriveParams {
    connections: u64,
    seed: u64,
    /// Players loaded: every read and submission names one of them.
    members: u64,
}

/// Runs every connection for `length`: closed-loop without a `rate`, else each on a fixed
/// schedule of `connections / rate` seconds between requests. Returns what is left in the
/// window at the end.
async fn drive_with(
    params: DriveParams,
    addr: &str,
    window: &Rc<RefCell<Window>>,
    rate: Option<f64>,
    end: &Rc<Cell<Instant>>,
    phase: u64,
) -> Window {
    let mut tasks = Vec::new();
    for c in 0..params.connections {
        let window = window.clone();
        let end = end.clone();
        let addr = addr.to_string();
        let interval = rate.map(|r| Duration::from_secs_f64(params.connections as f64 / r));
        let mut rng = Rng::stream(params.seed, phase * 1_000_000 + c);
        tasks.push(tokio::task::spawn_local(async move {
            let mut conn = match HttpConn::connect(&addr, SERVICE_TOKEN).await {
                Ok(conn) => conn,
                Err(e) => {
                    window.borrow_mut().errors.push(e);
                    return;
                }
            };
            let mut next = Instant::now();
            let mut sequence = 0u64;
            let mut body = Vec::new();
            while Instant::now() < end.get() {
                if let Some(interval) = interval {
                    next += interval;
                    let now = Instant::now();
                    if next > now {
                        tokio::time::sleep_until(next.into()).await;
                    } else if now - next > interval {
                        // Fell behind (the machine is busy): start again from now rather
                        // than send a burst.
                        window.borrow_mut().behind += 1;
                        next = now;
                    }
                }
                sequence += 1;
                let sent = Instant::now();
                match tokio::time::timeout(
                    REQUEST_TIMEOUT,
                    one_request(
                        &mut conn,
                        &mut rng,
                        &mut body,
                        params.members,
                        (phase, c, sequence),
                    ),
                )
                .await
                {
                    Ok(Ok(())) => {
                        let mut w = window.borrow_mut();
                        w.latency.record(sent.elapsed());
                        w.requests += 1;
                    }
                    Ok(Err(e)) => {
                        window.borrow_mut().errors.push(e);
                        return;
                    }
                    Err(_) => {
                        window
                            .borrow_mut()
                            .errors
                            .push(format!("a request took over {REQUEST_TIMEOUT:?}"));
                        return;
                    }
                }
            }
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
    window.replace(Window::default())
}

/// One request of the mix: 60% rank, 10% top-100, 10% nearby, 20% durable single submissions
/// (new events for existing players, so the board's size stays the same and memory can be
/// flat). Any answer but the expected status is an error.
async fn one_request(
    conn: &mut HttpConn,
    rng: &mut Rng,
    body: &mut Vec<u8>,
    members: u64,
    (phase, connection, sequence): (u64, u64, u64),
) -> Result<(), String> {
    let roll = rng.below(10);
    let player = rng.below(members);
    let (what, answer, expected) = match roll {
        0..=5 => {
            let path = format!("{BOARD}/players/p{player}/rank");
            ("rank", conn.get(&path).await?, 200)
        }
        6 => ("top", conn.get(&format!("{BOARD}/top?limit=100")).await?, 200),
        7 => {
            let path = format!("{BOARD}/players/p{player}/nearby?radius=5");
            ("nearby", conn.get(&path).await?, 200)
        }
        _ => {
            body.clear();
            let id = (phase * 1_000 + connection) * 1_000_000_000 + sequence;
            push_event(
                body,
                b"soak-",
                id,
                player,
                rng.below(1_000_000) as i64,
                T0 + rng.below(86_400_000) as i64,
            );
            ("submission", conn.post("/v1/score-events", body).await?, 202)
        }
    };
    if answer.status != expected {
        return Err(format!(
            "a {what} answered {}: {}",
            answer.status,
            conn.body_text(&answer)
        ));
    }
    Ok(())
}

fn fmt_latency(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1_000.0 {
        format!("{us:.0} us")
    } else {
        format!("{:.2} ms", us / 1_000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command lines tests/run and BENCHMARKS.md run parse, with their meanings.
    #[test]
    fn the_documented_command_lines_parse() {
        let parse = |line: &str| harness::try_options::<Args, _, _>(line.split_whitespace());
        let args = parse("soak --seconds 120 --standings-bin target/debug/standings").unwrap();
        assert_eq!(
            (args.seconds, args.standings_bin.to_str()),
            (120, Some("target/debug/standings"))
        );
        let args = parse("soak --seconds 1800 --standings-bin target/release/standings").unwrap();
        assert_eq!(args.seconds, 1800);
        let args = parse("soak").unwrap();
        assert_eq!(
            (
                args.sample_seconds,
                args.warmup_seconds,
                args.connections,
                args.members,
                args.database.as_str()
            ),
            (10, 20, 16, 20_000, "sqlite")
        );
        assert_eq!(parse("soak --connections 0").unwrap().connections, 1);
        assert!(parse("soak --keep").is_err());
    }

    fn samples(p99_ms: &[u64], rss_mib: impl Fn(usize) -> u64) -> Vec<Sample> {
        p99_ms
            .iter()
            .enumerate()
            .map(|(i, &ms)| Sample {
                at: 10.0 * (i + 1) as f64,
                requests: 1,
                p50: Duration::from_millis(1),
                p99: Duration::from_millis(ms),
                rss: rss_mib(i) << 20,
            })
            .collect()
    }

    /// A slow spell at the end fails the first judgement as a latency failure alone; the spell
    /// passing passes the second, and a p99 that stays worse fails it.
    #[test]
    fn a_worse_p99_is_confirmed_before_it_fails() {
        let flat = |_| 40;
        let spell = [5, 5, 5, 6, 6, 9, 8, 12, 16, 16, 16];
        let first = judge(&samples(&spell, flat)).unwrap_err();
        assert!(first.latency_only, "{}", first.message);
        assert!(first.message.starts_with("p99 worsened; "), "{}", first.message);

        let passed: Vec<u64> = spell.iter().chain(&[6, 5, 6, 5]).copied().collect();
        assert!(judge(&samples(&passed, flat)).is_ok());
        let stayed: Vec<u64> = spell.iter().chain(&[15, 16, 17, 15]).copied().collect();
        assert!(judge(&samples(&stayed, flat)).is_err());
    }

    /// A memory trend is not worth confirming: it fails at once, with the latency or not.
    #[test]
    fn a_memory_trend_is_not_a_latency_failure() {
        let leak = |i: usize| 40 + 20 * i as u64;
        let failure = judge(&samples(&[5; 11], leak)).unwrap_err();
        assert!(!failure.latency_only);
        assert!(
            failure.message.starts_with("memory trends upward; "),
            "{}",
            failure.message
        );
        assert!(judge(&samples(&[5; 11], |_| 40)).is_ok());
        assert!(!judge(&samples(&[5, 5], |_| 40)).unwrap_err().latency_only);
    }
}
