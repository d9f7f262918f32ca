//! The fan-out measurement: N WebSocket subscribers of one `top:10` view through the edge's
//! live object, then N direct subscribers of the same view at the origin, each side while one
//! player takes a new best score R times a second. Per side: messages delivered per second,
//! the lag from each write's `202` to its delta's receipt (p50/p99), version gaps (a delta
//! that does not chain), the origin's subscriber count and its CPU; through the edge, the
//! runtime's (workerd's) memory per socket.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use standings_tests::latency::Histogram;
use standings_tests::live::{LiveStream, Opened, Transport};

use crate::live::origin_subscribers;
use crate::scenarios::{Run, jwt};
use standings_tests::service::ADMIN_TOKEN;

use crate::stack::{GAME, WRITER_TOKEN};

/// The player whose new bests move the view.
const STAR: &str = "fanout-star";
/// The board the fan-out writes to and watches, of its own so the star is always first.
const SCOPE: &str = "fanout";
/// Sockets opened at once.
const OPENING: usize = 64;

/// What the subscribers of one side saw.
#[derive(Default)]
struct Seen {
    messages: u64,
    gaps: u64,
    /// The star's value each delta brought, and when it arrived.
    arrivals: Vec<(i64, Instant)>,
}

/// One side's figures.
struct Side {
    name: &'static str,
    sockets: usize,
    per_second: f64,
    lag: Histogram,
    gaps: u64,
    origin_subscribers: f64,
    origin_cpu_ms: f64,
}

fn cpu_ms(pid: Option<u32>) -> f64 {
    let Some(pid) = pid else { return 0.0 };
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime, the 14th and 15th fields (12th and 13th after the name); 100 ticks a second.
    (ticks(11) + ticks(12)) * 10.0
}

/// The resident memory of every workerd process, in bytes.
fn workerd_resident() -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(Result::ok)
        .filter(|e| std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == "workerd"))
        .filter_map(|e| std::fs::read_to_string(e.path().join("status")).ok())
        .filter_map(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .sum::<u64>()
        * 1024
}

/// Reads one subscriber's messages into `seen` until `until`.
async fn follow(mut live: LiveStream, seen: Rc<RefCell<Seen>>, until: Instant) {
    let mut version: Option<u64> = None;
    while let Ok(Ok(Some((_, text)))) = tokio::time::timeout_at(until.into(), live.next_text()).await {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let mut seen = seen.borrow_mut();
        seen.messages += 1;
        match message["type"].as_str() {
            Some("snapshot") => version = message["board_version"].as_u64(),
            Some("delta") => {
                if version.is_some() && message["base_version"].as_u64() != version {
                    seen.gaps += 1;
                }
                version = message["board_version"].as_u64();
                let now = Instant::now();
                for e in message["changed"].as_array().into_iter().flatten() {
                    if e["rank"] == 1
                        && e["player_id"] == STAR
                        && let Some(value) = e["value"].as_i64()
                    {
                        seen.arrivals.push((value, now));
                    }
                }
            }
            _ => {}
        }
    }
}

async fn side(
    run: &mut Run<'_>,
    name: &'static str,
    addr: &str,
    sockets: usize,
) -> Result<(Side, u64), String> {
    let args = run.args;
    let path = format!("/v1/leaderboards/{GAME}/solo/s1/{SCOPE}/subscribe?view=top:10");
    let resident_before = workerd_resident();
    let mut opened = Vec::with_capacity(sockets);
    while opened.len() < sockets {
        let batch = OPENING.min(sockets - opened.len());
        // A player each, as players subscribe (the origin limits subscriptions per player).
        let tokens: Vec<String> = (opened.len()..opened.len() + batch)
            .map(|i| jwt(&format!("fan-{i}"), &[GAME]))
            .collect();
        let opens = tokens
            .iter()
            .map(|token| LiveStream::open(addr, &path, token, Transport::WebSocket));
        for result in futures_util::future::join_all(opens).await {
            match result? {
                Opened::Stream(live) => opened.push(*live),
                Opened::Refused { status, body } => {
                    return Err(format!("{name}: a subscriber refused {status}: {body}"));
                }
            }
        }
    }
    let resident = workerd_resident().saturating_sub(resident_before);
    // The side before's may still be closing: only this board's are counted.
    let subscribers = origin_subscribers(&mut run.origin, &format!("/{SCOPE}")).await?;
    let seen = Rc::new(RefCell::new(Seen::default()));
    let seconds = args.fanout_seconds;
    let until = Instant::now() + Duration::from_secs(seconds) + Duration::from_secs(3);
    let followers: Vec<_> = opened
        .into_iter()
        .map(|live| follow(live, seen.clone(), until))
        .collect();
    let readers = futures_util::future::join_all(followers);
    let writes = async {
        let mut sent: HashMap<i64, Instant> = HashMap::new();
        let cpu_before = cpu_ms(run.stack.origin.pid());
        let started = Instant::now();
        let gap = Duration::from_secs_f64(1.0 / args.fanout_rate as f64);
        let mut n: i64 = 0;
        while started.elapsed() < Duration::from_secs(seconds) {
            n += 1;
            let value = 2_000_000 + run.fanout_values + n;
            let id = run.event_id();
            let body = serde_json::json!({
                "event_id": id, "player_id": STAR, "game": GAME, "mode": "solo", "season": "s1",
                "scopes": [SCOPE], "value": value, "achieved_at": crate::scenarios::rfc3339(crate::scenarios::now_ms()),
            })
            .to_string();
            let reply = run
                .origin
                .post("/v1/score-events", Some(WRITER_TOKEN), body.as_bytes())
                .await?;
            if reply.status != 202 {
                return Err(format!(
                    "{name}: a write answered {}: {}",
                    reply.status,
                    reply.text()
                ));
            }
            sent.insert(value, Instant::now());
            let next = started + gap * n as u32;
            tokio::time::sleep_until(next.into()).await;
        }
        run.fanout_values += n;
        Ok::<_, String>((
            sent,
            cpu_ms(run.stack.origin.pid()) - cpu_before,
            started.elapsed(),
        ))
    };
    let (written, _) = tokio::join!(writes, readers);
    let (sent, origin_cpu_ms, took) = written?;
    let seen = Rc::try_unwrap(seen)
        .map_err(|_| "the followers still hold the tally")?
        .into_inner();
    let mut lag = Histogram::new();
    for (value, at) in &seen.arrivals {
        if let Some(sent_at) = sent.get(value) {
            lag.record(at.saturating_duration_since(*sent_at));
        }
    }
    Ok((
        Side {
            name,
            sockets,
            per_second: seen.messages as f64 / took.as_secs_f64(),
            lag,
            gaps: seen.gaps,
            origin_subscribers: subscribers,
            origin_cpu_ms,
        },
        resident,
    ))
}

/// Both sides, the edge's first; `Err` on a version gap or a side that got no delta.
pub(crate) async fn fan_out(run: &mut Run<'_>) -> Result<String, String> {
    let sockets = run.args.fanout_sockets;
    let define = run
        .origin
        .put(
            &format!("/v1/boards/{GAME}/solo/s1/{SCOPE}"),
            Some(ADMIN_TOKEN),
            br#"{"score_mode":"highest"}"#,
        )
        .await?;
    if define.status != 201 && define.status != 200 {
        return Err(format!(
            "defining the fan-out's board answered {}: {}",
            define.status,
            define.text()
        ));
    }
    let edge_addr = run.stack.worker.addr.clone();
    let origin_addr = run.stack.origin.addr.clone();
    let (edge, resident) = side(run, "edge", &edge_addr, sockets).await?;
    let (direct, _) = side(run, "origin", &origin_addr, sockets).await?;
    let mut report = Vec::new();
    for s in [&edge, &direct] {
        if s.gaps > 0 || s.lag.count() == 0 {
            return Err(format!(
                "{}: {} version gaps, {} deltas timed",
                s.name,
                s.gaps,
                s.lag.count()
            ));
        }
        report.push(format!(
            "{}: {} sockets, {:.0} messages/s delivered, lag from the 202 p50 {:.1?} p99 {:.1?}, 0 gaps, \
             the origin's subscribers of the view {}, origin CPU {:.0} ms",
            s.name,
            s.sockets,
            s.per_second,
            s.lag.quantile(0.5),
            s.lag.quantile(0.99),
            s.origin_subscribers,
            s.origin_cpu_ms
        ));
    }
    if edge.origin_subscribers > 2.0 {
        return Err(format!(
            "the origin counted {} subscribers for the edge's one view",
            edge.origin_subscribers
        ));
    }
    report.push(format!(
        "workerd resident +{} B per edge socket",
        resident / sockets.max(1) as u64
    ));
    Ok(report.join("; "))
}
