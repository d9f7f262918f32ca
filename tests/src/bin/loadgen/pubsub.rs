//! The Redis peer of the live benchmark: the same fan-out through pub/sub. N connections
//! `SUBSCRIBE` to one channel and a publisher sends one `PUBLISH` per window, each message of
//! the same size as a Standings delta with its send time in its first bytes; every subscriber
//! reads every message and the lag runs from just before the `PUBLISH` to its receipt.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::latency::Histogram;
use crate::resp::{Reply, RespConn};

/// The send time's digits at the front of every message: nanoseconds since the run's start.
const STAMP: usize = 20;

/// What the fan-out delivered.
pub(crate) struct FanOut {
    /// Connections subscribed.
    pub(crate) subscribers: usize,
    /// `PUBLISH`es in the measured window.
    pub(crate) published: u64,
    /// Receivers Redis reported for them (the sum of `PUBLISH`'s answers).
    pub(crate) receivers: u64,
    /// Messages of the measured window read by the subscribers.
    pub(crate) delivered: u64,
    /// The measured window.
    pub(crate) window: Duration,
    /// Publish to receipt, per delivered message.
    pub(crate) lag: Histogram,
    /// Subscribers whose connection broke (Redis drops a subscriber over its output limit).
    pub(crate) broken: u64,
    /// The message size.
    pub(crate) message_bytes: usize,
    /// `maxclients` before the run, when the run had to raise it (and set it back after).
    pub(crate) raised_maxclients: Option<u64>,
}

impl FanOut {
    /// Messages delivered per second, all subscribers together.
    pub(crate) fn delivered_per_second(&self) -> f64 {
        self.delivered as f64 / self.window.as_secs_f64()
    }
}

/// How the fan-out runs.
pub(crate) struct Plan<'a> {
    pub(crate) addr: &'a str,
    pub(crate) channel: Vec<u8>,
    pub(crate) subscribers: usize,
    /// A message as Standings sent it; its first [`STAMP`] bytes carry the send time instead.
    pub(crate) message: Vec<u8>,
    /// One `PUBLISH` every this long.
    pub(crate) every: Duration,
    pub(crate) warmup: Duration,
    pub(crate) measure: Duration,
    /// Connections opened at once.
    pub(crate) connecting: usize,
}

/// Runs the fan-out; `maxclients` is raised for it when it is too low and set back after.
pub(crate) async fn fan_out(plan: &Plan<'_>) -> Result<FanOut, String> {
    let mut admin = RespConn::connect(plan.addr).await?;
    let reply = admin.call(&[b"CONFIG", b"GET", b"maxclients"]).await?;
    let items = admin.bulk_items(&reply)?;
    let maxclients: u64 = items
        .get(1)
        .and_then(|v| std::str::from_utf8(v).ok()?.parse().ok())
        .ok_or("CONFIG GET maxclients gave no number")?;
    let needed = plan.subscribers as u64 + 64;
    let raised = if maxclients < needed {
        admin
            .call(&[b"CONFIG", b"SET", b"maxclients", needed.to_string().as_bytes()])
            .await
            .map_err(|e| {
                format!(
                    "Redis's maxclients is {maxclients}, under the {needed} needed, and cannot be raised: {e}"
                )
            })?;
        Some(maxclients)
    } else {
        None
    };
    let result = run(plan).await;
    if let Some(old) = raised {
        admin
            .call(&[b"CONFIG", b"SET", b"maxclients", old.to_string().as_bytes()])
            .await?;
    }
    let mut fan_out = result?;
    fan_out.raised_maxclients = raised;
    Ok(fan_out)
}

async fn run(plan: &Plan<'_>) -> Result<FanOut, String> {
    if plan.message.len() < STAMP + 2 {
        return Err(format!(
            "a {}-byte message has no room for the send time",
            plan.message.len()
        ));
    }
    let started = Instant::now();
    let shared = Arc::new(Shared {
        started,
        measured_from_ns: AtomicU64::new(u64::MAX),
        delivered: AtomicU64::new(0),
        broken: AtomicU64::new(0),
        lag: Mutex::new(Histogram::new()),
    });
    let mut tasks = Vec::with_capacity(plan.subscribers);
    let mut opened = 0;
    while opened < plan.subscribers {
        let wave = plan.connecting.min(plan.subscribers - opened);
        let mut connecting = Vec::with_capacity(wave);
        for _ in 0..wave {
            let addr = plan.addr.to_string();
            let channel = plan.channel.clone();
            connecting.push(tokio::spawn(async move {
                let mut conn = RespConn::connect_with_buffer(&addr, 512).await?;
                let reply = conn.call(&[b"SUBSCRIBE", &channel]).await?;
                let kind = conn.bulk_item(&reply, 0)?;
                if conn.bytes(&kind) != b"subscribe" {
                    return Err("SUBSCRIBE did not answer subscribe".to_string());
                }
                Ok(conn)
            }));
        }
        for task in connecting {
            let conn = task
                .await
                .map_err(|e| format!("a subscribing task failed: {e}"))??;
            let shared = shared.clone();
            tasks.push(tokio::spawn(receive(conn, shared)));
        }
        opened += wave;
    }
    eprintln!(
        "loadgen:   redis: {} subscribers in {:.1?}",
        plan.subscribers,
        started.elapsed()
    );

    let mut publisher = RespConn::connect(plan.addr).await?;
    let mut message = plan.message.clone();
    let begun = Instant::now();
    let measure_at = begun + plan.warmup;
    shared.measured_from_ns.store(
        measure_at.duration_since(started).as_nanos() as u64,
        Ordering::Relaxed,
    );
    let until = measure_at + plan.measure;
    let mut ticker = tokio::time::interval(plan.every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (mut published, mut receivers) = (0u64, 0u64);
    loop {
        ticker.tick().await;
        let now = Instant::now();
        if now >= until {
            break;
        }
        let stamp = format!(
            "{:0width$}",
            now.duration_since(started).as_nanos(),
            width = STAMP
        );
        message[..STAMP].copy_from_slice(stamp.as_bytes());
        match publisher.call(&[b"PUBLISH", &plan.channel, &message]).await? {
            Reply::Int(n) if now >= measure_at => {
                published += 1;
                receivers += n as u64;
            }
            Reply::Int(_) => {}
            other => return Err(format!("PUBLISH answered {other:?}")),
        }
    }
    // The last message's deliveries are still on their way.
    tokio::time::sleep(plan.every.max(Duration::from_millis(500))).await;
    for task in &tasks {
        task.abort();
    }
    let lag = std::mem::take(&mut *shared.lag.lock().unwrap_or_else(|e| e.into_inner()));
    Ok(FanOut {
        subscribers: plan.subscribers,
        published,
        receivers,
        delivered: shared.delivered.load(Ordering::Relaxed),
        window: plan.measure,
        lag,
        broken: shared.broken.load(Ordering::Relaxed),
        message_bytes: message.len(),
        raised_maxclients: None,
    })
}

struct Shared {
    started: Instant,
    /// Messages sent from here on are measured.
    measured_from_ns: AtomicU64,
    delivered: AtomicU64,
    broken: AtomicU64,
    lag: Mutex<Histogram>,
}

/// One subscriber: reads pushes until aborted, timing each measured message.
async fn receive(mut conn: RespConn, shared: Arc<Shared>) {
    loop {
        let reply = match conn.reply().await {
            Ok(reply) => reply,
            Err(_) => {
                shared.broken.fetch_add(1, Ordering::Relaxed);
                return;
            }
        };
        let received = shared.started.elapsed().as_nanos() as u64;
        let Ok(payload) = conn.bulk_item(&reply, 2) else {
            continue;
        };
        let sent = std::str::from_utf8(&conn.bytes(&payload)[..STAMP.min(payload.len())])
            .ok()
            .and_then(|s| s.parse::<u64>().ok());
        if let Some(sent) = sent
            && sent >= shared.measured_from_ns.load(Ordering::Relaxed)
        {
            shared.delivered.fetch_add(1, Ordering::Relaxed);
            shared
                .lag
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .record(Duration::from_nanos(received.saturating_sub(sent)));
        }
    }
}
