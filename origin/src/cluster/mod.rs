//! Standings as a cluster of origins over one PostgreSQL database (`docs/cluster.md`).
//!
//! Games are hashed to a fixed number of partitions ([`lease::partition_of`]); each partition is
//! a single node's whole log in a schema of its own (`store::cluster`), served by the node that
//! holds its lease, through the same engine a single node runs (`crate::serve_restored`). A
//! [`Node`] keeps one [`PartitionSlot`] per partition: owned (an engine answers), elsewhere (requests are
//! forwarded to the owner), or moving (requests wait briefly, then 503 `PARTITION_MOVING`).
//!
//! The parts, one job each: `lease` decides (pure), `lease_loop.rs` runs the decisions against the
//! database once per tick and moves partitions in and out (`takeover`, `release`); `standby`
//! keeps the partitions owned elsewhere warm by following their logs; `route` tells where a
//! request goes (pure), `app` is the service that sends it there, `forward` the client to the
//! other nodes; `status` is `GET /v1/cluster` and `standings cluster status`.

mod app;
mod error;
mod forward;
pub mod lease;
mod lease_loop;
mod members;
mod route;
mod slot;
mod standby;
pub mod status;
mod step;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use self::app::ClusterApp;
use self::forward::Forwarder;
use crate::clock::Clock;
use crate::config::{ClusterConfig, Config};
use crate::http::auth::Auth;
use crate::http::{App, Shared};
use crate::metrics::instruments::{family, sample};
use crate::metrics::{Counter, Metrics, SlowHistogram};
use crate::store::cluster::{ClusterStore, JoinError};
use crate::sync::RwLockUnpoisoned;

/// A node that owns a partition, as the others reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    /// Its id.
    pub node: String,
    /// Where it listens.
    pub url: String,
}

/// A partition's engine on this node: the single-node service over its schema.
pub struct Engine {
    state: Shared,
    app: App,
    evictor: JoinHandle<()>,
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.evictor.abort();
    }
}

/// A partition as this node sees it, with this node's engine (`slot.rs` has its transitions).
pub type SlotState = slot::SlotState<Arc<Engine>>;

/// One partition's place on this node.
pub struct PartitionSlot {
    state: std::sync::RwLock<SlotState>,
    /// Requests its engine is answering now (a hand-over waits for them).
    inflight: AtomicUsize,
    /// A hand-over of it is under way (the lease loop and a drain may both ask for one).
    handing_over: AtomicBool,
    /// Its copy kept warm while another node owns it (standby), if this node keeps one.
    standby: tokio::sync::Mutex<Option<standby::Follower>>,
    /// That copy's reads, reached without waiting for the copy to finish following its log.
    copy: std::sync::RwLock<Option<Arc<standby::Copy>>>,
}

impl PartitionSlot {
    /// Reads of the partition may be answered by `copy` from now on (none: not here).
    fn set_copy(&self, copy: Option<Arc<standby::Copy>>) {
        *self.copy.write_unpoisoned() = copy;
    }
}

/// The cluster's figures, beside the engines' own in `/metrics`.
#[derive(Default)]
pub struct ClusterMetrics {
    renewals: Counter,
    renewal_failures: Counter,
    leases_lost: Counter,
    takeovers: Counter,
    takeover_seconds: SlowHistogram,
    releases: Counter,
    forwarded_ok: Counter,
    forwarded_moving: Counter,
    forwarded_unreachable: Counter,
    copy_reads: Counter,
    standby_lag: AtomicU64,
}

/// This node of the cluster.
pub struct Node {
    id: String,
    config: Config,
    cluster: ClusterConfig,
    store: ClusterStore,
    clock: Clock,
    metrics: Arc<Metrics>,
    stats: ClusterMetrics,
    auth: Auth,
    slots: Vec<PartitionSlot>,
    /// The origin of this node's monotonic milliseconds.
    born: Instant,
    /// Moves whenever a slot changes, for the requests waiting on a moving partition.
    changes: watch::Sender<u64>,
    draining: AtomicBool,
    ready: AtomicBool,
    forwarder: Forwarder,
    /// This process among the processes that ever ran as this node, as its row records it.
    incarnation: String,
    /// How the other nodes looked at the last tick, to log what changed (`None` before the
    /// first).
    seen: std::sync::Mutex<Option<members::Seens>>,
    /// Turns true when another process took this node's id over (this one was paused past its
    /// heartbeat and a new one started): this process must serve nothing more.
    superseded: watch::Sender<bool>,
}

/// How long a request for a moving partition waits for an owner before it is answered 503.
fn hold_for(ttl_ms: u64) -> Duration {
    Duration::from_millis(ttl_ms.saturating_mul(2).saturating_add(1_000).min(15_000))
}

impl Node {
    /// Joins the cluster of `config.database`: creates or checks its tables, registers this
    /// node (refused when another live process has its id) and starts following every
    /// partition (with `standby`). The node owns nothing until [`Node::start`]'s first ticks.
    pub async fn join(config: &Config, clock: Clock, shown: &str) -> Result<Arc<Node>, JoinError> {
        let cluster = config
            .cluster
            .clone()
            .expect("a node joins with a [cluster] table");
        let ttl = Duration::from_millis(cluster.lease_ttl_ms);
        let store =
            ClusterStore::open(&config.database, shown, &cluster.node_id, cluster.partitions, ttl).await?;
        let incarnation = format!("{}-{}", std::process::id(), crate::clock::now_ms());
        store
            .register(
                &cluster.advertise_url,
                &incarnation,
                lease::live_within_ms(cluster.lease_ttl_ms as i64) * 2,
            )
            .await?;
        let slots = (0..cluster.partitions)
            .map(|_| PartitionSlot {
                state: std::sync::RwLock::new(SlotState::Elsewhere(None)),
                inflight: AtomicUsize::new(0),
                handing_over: AtomicBool::new(false),
                standby: tokio::sync::Mutex::new(None),
                copy: std::sync::RwLock::new(None),
            })
            .collect();
        let node = Arc::new(Node {
            id: cluster.node_id.clone(),
            forwarder: Forwarder::new(&cluster.node_id, &cluster.secret),
            config: config.clone(),
            cluster,
            store,
            clock,
            metrics: Arc::new(Metrics::default()),
            stats: ClusterMetrics::default(),
            auth: Auth::from_config(config),
            slots,
            born: Instant::now(),
            changes: watch::channel(0).0,
            draining: AtomicBool::new(false),
            ready: AtomicBool::new(false),
            incarnation,
            seen: std::sync::Mutex::new(None),
            superseded: watch::channel(false).0,
        });
        if node.cluster.standby {
            standby::warm_all(&node).await;
        }
        Ok(node)
    }

    /// Starts the lease loop and the standbys' loop; the node takes its share within a tick or
    /// two of the leases being free.
    pub fn start(self: &Arc<Node>) {
        tokio::spawn(lease_loop::run(self.clone()));
        if self.cluster.standby {
            tokio::spawn(standby::run(self.clone()));
        }
    }

    /// This node's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Waits until another process has taken this node's id over; this one then serves
    /// nothing and should exit.
    pub async fn superseded(&self) {
        let mut told = self.superseded.subscribe();
        let _ = told.wait_for(|superseded| *superseded).await;
    }

    /// The service that answers this node's requests.
    pub fn app(self: &Arc<Node>) -> ClusterApp {
        ClusterApp::new(self.clone())
    }

    /// The metrics every engine of this node records into.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// How long a stop waits for the streams still open.
    pub fn stop_grace_seconds(&self) -> u64 {
        self.config.live.stop_grace_seconds
    }

    /// This node's monotonic milliseconds.
    fn now(&self) -> i64 {
        i64::try_from(self.born.elapsed().as_millis()).unwrap_or(i64::MAX)
    }

    fn ttl_ms(&self) -> i64 {
        i64::try_from(self.cluster.lease_ttl_ms).unwrap_or(i64::MAX)
    }

    /// The partition of `game`.
    fn partition_of(&self, game: &str) -> u32 {
        lease::partition_of(game, self.cluster.partitions)
    }

    fn slot(&self, p: u32) -> &PartitionSlot {
        &self.slots[p as usize]
    }

    fn state_of(&self, p: u32) -> SlotState {
        self.slot(p).state.read_unpoisoned().clone()
    }

    /// Applies `transition` to partition `p`'s slot under its lock and, when it changed the
    /// slot, wakes the requests waiting on a moving partition. Returns whether it changed.
    fn update(&self, p: u32, transition: slot::Transition<Arc<Engine>>) -> bool {
        let changed = {
            let mut state = self.slot(p).state.write_unpoisoned();
            match slot::next(&state, transition) {
                Some(next) => {
                    *state = next;
                    true
                }
                None => false,
            }
        };
        if changed {
            self.changes.send_modify(|n| *n += 1);
        }
        changed
    }

    /// The partitions this node owns and serves now.
    fn owned(&self) -> Vec<u32> {
        let now = self.now();
        (0..self.cluster.partitions)
            .filter(|p| matches!(self.state_of(*p), SlotState::Owned(h, _) if h.serving(now)))
            .collect()
    }

    /// The engines of the partitions this node owns.
    fn engines(&self) -> Vec<(u32, Arc<Engine>)> {
        (0..self.cluster.partitions)
            .filter_map(|p| match self.state_of(p) {
                SlotState::Owned(_, e) | SlotState::Releasing(_, e) => Some((p, e)),
                _ => None,
            })
            .collect()
    }

    /// The partitions this node keeps warm.
    async fn warm(&self) -> BTreeSet<u32> {
        let mut warm = BTreeSet::new();
        for p in 0..self.cluster.partitions {
            if self.slot(p).standby.lock().await.is_some() {
                warm.insert(p);
            }
        }
        warm
    }

    /// Hands every partition this node owns to the others and waits (a lease time at most)
    /// until each has a new owner, so that requests held here meanwhile are forwarded to it.
    /// Called on `SIGTERM`, before the server stops taking requests.
    pub async fn drain(self: &Arc<Node>) {
        self.draining.store(true, Ordering::Release);
        let _ = self.store.heartbeat(&self.incarnation, true).await;
        let owned: Vec<u32> = (0..self.cluster.partitions)
            .filter(|p| self.state_of(*p).held().is_some())
            .collect();
        tracing::info!(
            partitions = ?owned,
            "draining: handing {} over before stopping",
            crate::words::counted(owned.len() as u64, "partition", "partitions")
        );
        let began = Instant::now();
        let releases: Vec<_> = owned
            .iter()
            .map(|p| tokio::spawn(lease_loop::release(self.clone(), *p)))
            .collect();
        for r in releases {
            let _ = r.await;
        }
        tracing::info!(
            took_ms = began.elapsed().as_millis() as u64,
            "handed {} over",
            crate::words::counted(owned.len() as u64, "partition", "partitions")
        );
        let deadline = Instant::now() + hold_for(self.cluster.lease_ttl_ms);
        let mut changes = self.changes.subscribe();
        while Instant::now() < deadline {
            let moved = owned
                .iter()
                .all(|p| matches!(self.state_of(*p), SlotState::Elsewhere(Some(_))));
            if moved {
                break;
            }
            let _ = tokio::time::timeout(Duration::from_millis(100), changes.changed()).await;
        }
        self.ready.store(false, Ordering::Release);
    }

    /// Stops: every engine writes its checkpoint (a drained node has none left).
    pub async fn stop(&self) {
        for (p, engine) in self.engines() {
            if let Err(e) = engine.state.ingest.checkpoint().await {
                tracing::warn!(partition = p, "the stop's checkpoint failed: {e}");
            }
        }
        self.store.close().await;
    }
}

/// The time since `began`, for the takeover histogram.
fn took(began: Instant) -> Duration {
    began.elapsed()
}

/// Renders the cluster's lines of `/metrics`.
fn render_metrics(node: &Node, out: &mut String) {
    use std::fmt::Write as _;
    let owned = node.owned().len();
    let followed = (0..node.cluster.partitions)
        .filter(|p| matches!(node.state_of(*p), SlotState::Elsewhere(_)))
        .count();
    let lines: [(&str, &str, &str, u64); 9] = [
        (
            "standings_cluster_partitions_owned",
            "gauge",
            "Partitions this node owns and serves.",
            owned as u64,
        ),
        (
            "standings_cluster_partitions_followed",
            "gauge",
            "Partitions owned elsewhere (kept warm when standby is on).",
            if node.cluster.standby { followed as u64 } else { 0 },
        ),
        (
            "standings_cluster_lease_renewals_total",
            "counter",
            "Lease renewals that held.",
            node.stats.renewals.get(),
        ),
        (
            "standings_cluster_lease_renewal_failures_total",
            "counter",
            "Lease renewals that failed (the database did not answer).",
            node.stats.renewal_failures.get(),
        ),
        (
            "standings_cluster_leases_lost_total",
            "counter",
            "Leases found taken by another node or expired before renewal.",
            node.stats.leases_lost.get(),
        ),
        (
            "standings_cluster_takeovers_total",
            "counter",
            "Partitions this node took over.",
            node.stats.takeovers.get(),
        ),
        (
            "standings_cluster_releases_total",
            "counter",
            "Partitions this node handed over.",
            node.stats.releases.get(),
        ),
        (
            "standings_cluster_copy_reads_total",
            "counter",
            "Reads of partitions owned elsewhere answered from this node's warm copies.",
            node.stats.copy_reads.get(),
        ),
        (
            "standings_cluster_standby_lag_entries",
            "gauge",
            "Log entries the standbys of this node are behind, summed over the partitions.",
            node.stats.standby_lag.load(Ordering::Relaxed),
        ),
    ];
    for (name, kind, help, value) in lines {
        sample(out, name, help, kind, value);
    }
    family(
        out,
        "standings_cluster_forwarded_total",
        "Requests forwarded to the owner of their partition, by outcome.",
        "counter",
    );
    for (outcome, counter) in [
        ("answered", &node.stats.forwarded_ok),
        ("moving", &node.stats.forwarded_moving),
        ("unreachable", &node.stats.forwarded_unreachable),
    ] {
        let _ = writeln!(
            out,
            "standings_cluster_forwarded_total{{outcome=\"{outcome}\"}} {}",
            counter.get()
        );
    }
    family(
        out,
        "standings_cluster_takeover_seconds",
        "A lease taken to the partition served.",
        "histogram",
    );
    node.stats
        .takeover_seconds
        .render(out, "standings_cluster_takeover_seconds", "");
}

#[cfg(test)]
mod model_tests;
