//! The Standings origin service: durable ingestion with idempotency, aggregates, and the read
//! API, over embedded SQLite or PostgreSQL.
//!
//! [`start`] opens the store and restores the live boards (from the newest checkpoint and the
//! log after it, or from the whole event log); [`run`] serves the API on a listener until
//! `shutdown` resolves, then writes a checkpoint. Tests start it on `127.0.0.1:0`, or call
//! [`http::app`] directly.

pub mod boards;
mod chain;
pub mod cli;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod domain;
mod fast_hash;
pub mod feed;
pub mod http;
mod intake;
mod json_value;
mod live;
pub mod log;
mod metrics;
pub mod snapshots;
pub mod store;
mod sync;
mod turns;
mod words;
pub mod writer;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::net::TcpListener;

use crate::chain::Chain;
use crate::clock::Clock;
use crate::config::Config;
use crate::http::auth::Auth;
use crate::http::{AppState, Shared};
use crate::log::LogError;
use crate::metrics::Metrics;
use crate::store::{Store, StoreError};
use crate::writer::{Ingest, WriterError, WriterParts};

/// How often closed periods past their retention are moved out of memory (ms).
const EVICT_EVERY_MS: i64 = 60_000;

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The store could not be opened, migrated or read.
    #[error("cannot start: the store failed")]
    Store(#[from] StoreError),
    /// The live boards could not be restored from the log.
    #[error("cannot start: the boards cannot be restored from the log")]
    Restore(#[from] LogError),
    /// `webhook_ca_file` cannot be read as CA certificates.
    #[error("cannot start: {0}")]
    WebhookRoots(String),
}

/// Opens the store (migrating it), restores every board (see [`writer::checkpoint::restore`]), and
/// starts the writer, on the system clock. The service is ready when this returns.
pub async fn start(config: &Config) -> Result<Shared, StartError> {
    start_with_clock(config, Clock::System).await
}

/// [`start`] with a given clock (tests use a manual one).
pub async fn start_with_clock(config: &Config, clock: Clock) -> Result<Shared, StartError> {
    let store = Store::open(&config.database).await?;
    let (registry, domain, restored) = writer::checkpoint::restore(&store, clock.now_ms()).await?;
    let (state, _evictor) = serve_restored(
        config,
        store,
        clock,
        Arc::new(Metrics::default()),
        Arc::new(registry),
        Arc::new(domain),
        restored,
    )
    .await?;
    Ok(state)
}

/// The service over a store whose boards are restored: the writer (from the log's end), the
/// live hub, the publication of snapshots, and the task that moves closed periods out of memory
/// (returned, for a cluster node to stop when it gives the partition away; the other tasks end
/// with the state). A single node runs one; a cluster node one per partition it owns.
pub(crate) async fn serve_restored(
    config: &Config,
    store: Store,
    clock: Clock,
    metrics: Arc<Metrics>,
    registry: Arc<boards::Registry>,
    domain: Arc<domain::Moderation>,
    restored: writer::checkpoint::Restored,
) -> Result<(Shared, tokio::task::JoinHandle<()>), StartError> {
    let (checkpoint_seq, checkpoint_bytes) = match &restored {
        writer::checkpoint::Restored::Checkpoint { seq, bytes, .. } => (*seq, *bytes as usize),
        writer::checkpoint::Restored::FullReplay { unusable } => {
            if let Some(why) = unusable {
                tracing::warn!("the checkpoint was not used ({why}); replayed the whole log instead");
            }
            (0, 0)
        }
    };
    let broken = registry.broken();
    if !broken.is_empty() {
        tracing::warn!(
            "serving every board but {} broken one(s), which answer 503 BOARD_BROKEN (see /readyz)",
            broken.len()
        );
    }
    registry.closed.set_capacity(config.closed_periods_cached);
    // Friend lists are read again (set_friends keeps them since) and every change from here on
    // makes its feed records.
    registry.feed.load_friends(&store).await?;
    registry.feed.start_making(&store).await?;
    let next_seq = store.next_seq().await?;
    let sealed_below = store.sealed_below().await?;
    let unsealed = store.tail_keys(sealed_below).await?;
    let live = live::Hub::new(
        config.live.clone(),
        registry.clone(),
        clock.clone(),
        metrics.clone(),
    );
    live.start();
    let snapshots = snapshots::Snapshots::new(
        config.snapshots.clone(),
        registry.clone(),
        clock.clone(),
        metrics.clone(),
    );
    snapshots.start();
    let ingest = Ingest::start(WriterParts {
        store: store.clone(),
        registry: registry.clone(),
        domain: domain.clone(),
        metrics: metrics.clone(),
        live: live.clone(),
        clock: clock.clone(),
        next_seq,
        retention_ms: config.closed_period_retention_seconds.saturating_mul(1000),
        checkpoint_every: config.checkpoint_every_events,
        shard_threads: config.shard_threads,
        checkpoint_seq,
        checkpoint_bytes,
        sealed_below,
        unsealed,
        event_seasons: store.event_seasons().await?,
    });
    // Closed periods past their retention leave memory once a minute (on the injected clock),
    // the first time at the start.
    let (evictor, ticker) = (ingest.clone(), clock.clone());
    let evicting = tokio::spawn(async move {
        loop {
            let tick = ticker.now_ms().saturating_add(EVICT_EVERY_MS);
            match evictor.evict_closed().await {
                Ok(_) => {}
                Err(WriterError::Stopped) => return,
                Err(e) => tracing::warn!("moving closed periods to storage failed: {}", Chain(&e)),
            }
            ticker.sleep_until(tick).await;
        }
    });
    let extra_roots = match &config.webhook_ca_file {
        Some(path) => feed::delivery::extra_roots(path).map_err(StartError::WebhookRoots)?,
        None => Vec::new(),
    };
    tokio::spawn(feed::delivery::deliver(
        Arc::downgrade(&registry.feed),
        store.clone(),
        clock.clone(),
        domain::webhooks::Retries {
            max_attempts: config.webhook_max_attempts,
            backoff_ms: config.webhook_backoff_ms,
            timeout: std::time::Duration::from_millis(config.webhook_timeout_ms),
        },
        extra_roots,
    ));
    tokio::spawn(feed::keep(
        Arc::downgrade(&registry.feed),
        store.clone(),
        clock.clone(),
        config.feed_retention_seconds,
    ));
    let state = Arc::new(AppState {
        store,
        registry,
        ingest,
        auth: Auth::from_config(config),
        metrics,
        live,
        snapshots,
        domain,
        clock,
        ready: AtomicBool::new(true),
        restored,
        min_position_wait: std::time::Duration::from_millis(config.min_position_wait_ms),
    });
    Ok((state, evicting))
}

/// Serves the API on `listener` with `threads` connection threads and the connection `limits`
/// until `shutdown` resolves, then stops taking requests, finishes the ones in flight, writes a
/// checkpoint and closes the store.
pub async fn run(
    listener: TcpListener,
    state: Shared,
    threads: http::serve::Threads,
    limits: http::serve::Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = http::app(state.clone());
    let flag = state.clone();
    http::serve::serve(
        listener,
        app,
        http::stream_routes(),
        threads,
        limits,
        state.metrics.clone(),
        async move {
            shutdown.await;
            flag.ready.store(false, Ordering::Release);
            // Streams never end by themselves: each subscriber is told to reconnect elsewhere
            // before the connections are asked to finish, and a stream that has not ended
            // by the end of the grace (a client that does not read) is dropped then.
            let grace = Duration::from_secs(flag.live.config().stop_grace_seconds);
            let streams_end = tokio::time::Instant::now() + grace;
            flag.live.going_away(streams_end).await;
            streams_end
        },
    )
    .await?;
    // Every request has been answered: the writer is idle, so the next start can load this
    // state instead of replaying the log (unless replaying is the cheaper of the two).
    if let Err(e) = state.ingest.checkpoint_at_stop().await {
        tracing::warn!(
            "the shutdown checkpoint failed (the next start replays the log): {}",
            Chain(&e)
        );
    }
    state.store.close().await;
    Ok(())
}
