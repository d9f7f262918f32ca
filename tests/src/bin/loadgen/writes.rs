//! The live benchmark's write load: single durable submissions over keep-alive connections,
//! paced open-loop or closed-loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::bench;
use crate::http::HttpConn;
use crate::latency::Histogram;
use crate::service::SERVICE_TOKEN;
use crate::subscribe::Watched;
use crate::workload::{Population, Rng, Standing, push_int};

/// The write load: single durable submissions. A share of them raises a watched player to a
/// value it never held (one event per player in flight); the rest go to random members that
/// no player view follows, with the skewed values of the other benchmarks.
pub(crate) struct Load {
    /// The service's address.
    pub(crate) addr: String,
    /// The seeded players.
    pub(crate) population: Population,
    /// Makes event ids unique to the run.
    pub(crate) nonce: u64,
    /// The followed players' values and the events pending for them.
    pub(crate) watched: Arc<Watched>,
    /// The players `player:P` views follow.
    pub(crate) followed: Vec<u64>,
    /// The share of events that raise a followed player.
    pub(crate) share: f64,
    /// The share of the other events that set a new best of the whole board (so that a top
    /// view changes with each).
    pub(crate) record_share: f64,
    /// The next such best: above every seeded value, one higher each time.
    pub(crate) record: AtomicI64,
}

/// Runs one write phase on `connections` connections until `until`, or until `stop` is set,
/// measuring from `measured_from`: paced at `rate` events/s when given (event `i` is due at
/// `i / rate` after the start), closed-loop otherwise.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn write_phase(
    load: &Arc<Load>,
    phase: u64,
    rate: Option<f64>,
    connections: usize,
    started: Instant,
    measured_from: Instant,
    until: Instant,
    stop: Option<Arc<AtomicBool>>,
) -> Result<(u64, Histogram), String> {
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::with_capacity(connections);
    for index in 0..connections as u64 {
        let load = load.clone();
        let next = next.clone();
        let stop = stop.clone();
        let mut conn = HttpConn::connect(&load.addr, SERVICE_TOKEN).await?;
        tasks.push(tokio::spawn(async move {
            let mut rng = Rng::stream(load.population.seed ^ 0x6c69_7665, (phase << 32) | index);
            let mut latency = Histogram::new();
            let mut acked = 0u64;
            let mut body = Vec::with_capacity(512);
            let mut event_id = Vec::with_capacity(64);
            let mut sent = 0u64;
            loop {
                let now = Instant::now();
                let due = match rate {
                    Some(rate) => {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        started + Duration::from_secs_f64(i as f64 / rate)
                    }
                    None => now,
                };
                if due >= until || stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed)) {
                    break;
                }
                tokio::time::sleep_until(due.into()).await;
                let (member, standing, raised) = draw(&load, &mut rng);
                event_id.clear();
                event_id.extend_from_slice(b"live-");
                push_int(&mut event_id, load.nonce as i64);
                for part in [phase, index, sent] {
                    event_id.push(b'-');
                    push_int(&mut event_id, part as i64);
                }
                sent += 1;
                body.clear();
                bench::push_event(&mut body, &event_id, member, standing);
                let begun = Instant::now();
                let answer = conn.post("/v1/score-events", &body).await;
                let done = Instant::now();
                match answer {
                    Ok(answer) if answer.status == 202 => {}
                    failed => {
                        if raised {
                            load.watched.abandon(member, standing.value);
                        }
                        return Err(match failed {
                            Ok(answer) => format!(
                                "a submission answered {}: {}",
                                answer.status,
                                conn.body_text(&answer)
                            ),
                            Err(e) => e,
                        });
                    }
                }
                if raised {
                    load.watched.acked(member, standing.value, done);
                }
                if due >= measured_from {
                    latency.record(done - if rate.is_some() { due } else { begun });
                }
                if done >= measured_from && done <= until {
                    acked += 1;
                }
            }
            Ok::<_, String>((acked, latency))
        }));
    }
    let mut latency = Histogram::new();
    let mut acked = 0;
    for task in tasks {
        let (n, h) = task.await.map_err(|e| format!("a writing task failed: {e}"))??;
        acked += n;
        latency.merge(&h);
    }
    Ok((acked, latency))
}

/// The next event: a watched player raised, or a random member that no player view follows.
fn draw(load: &Load, rng: &mut Rng) -> (u64, Standing, bool) {
    let fresh = load.population.fresh_standing(rng);
    if !load.followed.is_empty() && rng.unit() < load.share {
        let member = load.followed[rng.below(load.followed.len() as u64) as usize];
        if let Some(value) = load.watched.raise(member, 1 + rng.below(100) as i64) {
            return (
                member,
                Standing {
                    value,
                    achieved_at: fresh.achieved_at,
                },
                true,
            );
        }
    }
    let record = load.record_share > 0.0 && rng.unit() < load.record_share;
    loop {
        let member = rng.below(load.population.members);
        if !load.watched.is_followed(member) {
            let value = if record {
                load.record.fetch_add(1, Ordering::Relaxed)
            } else {
                fresh.value
            };
            return (member, Standing { value, ..fresh }, false);
        }
    }
}
