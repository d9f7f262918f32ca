//! Warm standbys: a copy of each partition owned elsewhere, restored as a start restores (the
//! newest checkpoint and the log after it) and then kept up by replaying the log's new entries
//! through the same `log/` code, a few times a second. A takeover then only replays what the
//! copy has not seen. The copy never writes: its store proves no lease.
//!
//! A copy also answers the partition's reads on this node ([`Copy`]): the engine's own router
//! over the copy's boards, with a writer that refuses everything (the cluster sends it reads
//! only), so its answers are the owner's bytes at the same `board_version`. The cluster serves
//! a read from it while it followed the log recently enough and reached the position the read
//! asks for (`step::copy_answers`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use axum::http::HeaderName;

use super::error::TakeoverError;
use super::{Node, SlotState};
use crate::boards::Registry;
use crate::chain::Chain;
use crate::domain::Moderation;
use crate::http::auth::Auth;
use crate::http::{App, AppState};
use crate::log::LiveInstances;
use crate::store::Store;
use crate::sync::RwLockUnpoisoned;
use crate::writer::Ingest;
use crate::writer::checkpoint::Restored;

/// The header of an answer from a warm copy: how long ago (ms) the copy last held the whole
/// log, so at most how much newer the owner's answer could be.
pub(super) const COPY_LAG: HeaderName = HeaderName::from_static("x-standings-copy-lag-ms");

/// How often the copies read the logs' new entries.
const FOLLOW_EVERY: Duration = Duration::from_millis(200);

/// How often the copies' positions are recorded for `GET /v1/cluster`.
const RECORD_EVERY: Duration = Duration::from_secs(1);

/// A partition's warm copy.
pub(super) struct Follower {
    store: Store,
    registry: Arc<Registry>,
    domain: Arc<Moderation>,
    restored: Restored,
    /// The last `seq` applied.
    applied: i64,
    /// Its reads, as the cluster reaches them.
    copy: Arc<Copy>,
}

/// A warm copy as its reads see it: the service over its boards, and how fresh it is.
pub(super) struct Copy {
    pub(super) app: App,
    /// The last `seq` applied.
    pub(super) applied: AtomicI64,
    /// When (the node's monotonic ms) the copy last held the whole log as its end was then.
    pub(super) synced_at: AtomicI64,
}

impl Follower {
    /// A copy of the partition of `store` as of its log's end now.
    async fn restore(node: &Node, store: Store) -> Result<Follower, TakeoverError> {
        let asked_at = node.now();
        let end = store.next_seq().await? - 1;
        let (registry, domain, restored) =
            crate::writer::checkpoint::restore_until(&store, node.clock.now_ms(), end).await?;
        let (registry, domain) = (Arc::new(registry), Arc::new(domain));
        registry.positions.visible_through(end);
        // The copy makes the owner's feed records too, keeping those the owner has not stored,
        // so that a takeover stores what the old owner made and lost.
        registry.feed.load_friends(&store).await?;
        registry.feed.start_making(&store).await?;
        let state = Arc::new(AppState {
            store: store.clone(),
            registry: registry.clone(),
            ingest: Ingest::closed(),
            auth: Auth::from_config(&node.config),
            metrics: node.metrics.clone(),
            live: crate::live::Hub::new(
                node.config.live.clone(),
                registry.clone(),
                node.clock.clone(),
                node.metrics.clone(),
            ),
            snapshots: crate::snapshots::Snapshots::new(
                node.config.snapshots.clone(),
                registry.clone(),
                node.clock.clone(),
                node.metrics.clone(),
            ),
            domain: domain.clone(),
            clock: node.clock.clone(),
            ready: AtomicBool::new(true),
            restored: restored.clone(),
            min_position_wait: Duration::from_millis(node.config.min_position_wait_ms),
        });
        let copy = Arc::new(Copy {
            app: crate::http::app(state),
            applied: AtomicI64::new(end),
            synced_at: AtomicI64::new(asked_at),
        });
        Ok(Follower {
            store,
            registry,
            domain,
            restored,
            applied: end,
            copy,
        })
    }

    /// Applies the log's entries after the last applied, up to its end now (new boards first,
    /// as their events may follow). Returns how many entries the copy was behind.
    async fn catch_up(&mut self) -> Result<i64, TakeoverError> {
        let end = self.store.next_seq().await? - 1;
        self.catch_up_to(end).await
    }

    /// Registers every board defined in the partition's store that the copy does not know. A
    /// definition is a row, not a log entry, so a copy whose log has not moved since would
    /// otherwise never learn it.
    async fn learn_boards(&mut self) -> Result<(), TakeoverError> {
        for def in self.store.boards().await? {
            if self.registry.entry(&def.id).is_none() {
                self.registry.add(&def).map_err(|why| TakeoverError::Board {
                    board: def.id.to_string(),
                    why,
                })?;
            }
        }
        Ok(())
    }

    /// [`Follower::catch_up`] to `end`, a `seq` the log is known to reach.
    async fn catch_up_to(&mut self, end: i64) -> Result<i64, TakeoverError> {
        if end <= self.applied {
            return Ok(0);
        }
        self.learn_boards().await?;
        let mut live = LiveInstances {
            registry: &self.registry,
            store: &self.store,
        };
        crate::log::replay_log(
            &self.store,
            &self.registry,
            &self.domain,
            &mut live,
            self.applied,
            end,
            &mut |_| {},
        )
        .await?;
        self.registry.feed.forget_stored(self.store.feed_last().await?);
        let behind = end - self.applied;
        self.applied = end;
        self.registry.positions.visible_through(end);
        self.copy.applied.store(end, Ordering::Release);
        Ok(behind)
    }
}

/// The copy caught up to the end of the log under the lease just taken (nothing more can be
/// appended by anyone else), handed to the engine.
pub(super) async fn promote(
    mut follower: Follower,
    store: &Store,
    _now_ms: i64,
) -> Result<(Arc<Registry>, Arc<Moderation>, Restored), TakeoverError> {
    // The engine's store proves the lease; the copy's read with none.
    follower.store = store.clone();
    // Definitions acknowledged after the copy's last log entry are in the store only.
    follower.learn_boards().await?;
    follower.catch_up().await?;
    Ok((follower.registry, follower.domain, follower.restored))
}

/// Builds a copy of every partition this node does not own, at start.
pub(super) async fn warm_all(node: &Arc<Node>) {
    for p in 0..node.cluster.partitions {
        warm(node, p).await;
    }
}

/// Builds a copy of partition `p` unless it has one or this node owns it.
pub(super) async fn warm(node: &Arc<Node>, p: u32) {
    let mut standby = node.slot(p).standby.lock().await;
    if standby.is_some() || !matches!(node.state_of(p), SlotState::Elsewhere(_)) {
        return;
    }
    match Follower::restore(node, node.store.partition(p)).await {
        Ok(follower) => {
            node.slot(p).set_copy(Some(follower.copy.clone()));
            *standby = Some(follower);
        }
        Err(why) => tracing::warn!(
            partition = p,
            "a standby copy could not be built ({}); a takeover will restore instead",
            Chain(&why)
        ),
    }
}

/// Keeps every copy up with its log until the process ends.
pub(super) async fn run(node: Arc<Node>) {
    let mut recorded = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(FOLLOW_EVERY).await;
        // One statement for every log's end; only the copies behind read their log. A copy that
        // reaches the end read is as fresh as the moment it was asked for.
        let asked_at = node.now();
        // A node that keeps no copy (it owns every partition) has no log to read.
        if !node
            .slots
            .iter()
            .any(|slot| slot.copy.read_unpoisoned().is_some())
        {
            node.stats.standby_lag.store(0, Ordering::Relaxed);
            continue;
        }
        let ends = match node.store.log_ends().await {
            Ok(ends) => ends,
            Err(e) => {
                tracing::warn!("the standbys cannot read the logs' ends: {}", Chain(&e));
                continue;
            }
        };
        let mut lag = 0i64;
        let mut positions = Vec::new();
        for p in 0..node.cluster.partitions {
            let mut standby = node.slot(p).standby.lock().await;
            let Some(follower) = standby.as_mut() else {
                continue;
            };
            let end = ends.get(p as usize).copied().unwrap_or(0);
            match follower.catch_up_to(end).await {
                Ok(behind) => lag += behind,
                Err(why) => {
                    tracing::warn!(
                        partition = p,
                        "a standby copy could not follow its log ({}); it is rebuilt",
                        Chain(&why)
                    );
                    *standby = None;
                    node.slot(p).set_copy(None);
                    drop(standby);
                    warm(&node, p).await;
                    continue;
                }
            }
            follower.copy.synced_at.store(asked_at, Ordering::Release);
            positions.push((p, follower.applied));
        }
        node.stats
            .standby_lag
            .store(u64::try_from(lag).unwrap_or(0), Ordering::Relaxed);
        if recorded.elapsed() >= RECORD_EVERY {
            recorded = tokio::time::Instant::now();
            if let Err(e) = node.store.record_followed(&positions).await {
                tracing::warn!("recording the standbys' positions failed: {}", Chain(&e));
            }
        }
    }
}
