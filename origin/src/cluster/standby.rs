//! Warm standbys: a copy of each partition owned elsewhere, restored as a start restores (the
//! newest checkpoint and the log after it) and then kept up by replaying the log's new entries
//! through the same `log/` code, a few times a second. A takeover then only replays what the
//! copy has not seen. The copy never writes: its store proves no lease.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::error::TakeoverError;
use super::{Node, SlotState};
use crate::boards::Registry;
use crate::chain::Chain;
use crate::domain::Moderation;
use crate::log::LiveInstances;
use crate::store::Store;
use crate::writer::checkpoint::Restored;

/// How often the copies read the logs' new entries.
const FOLLOW_EVERY: Duration = Duration::from_millis(200);

/// How often the copies' positions are recorded for `GET /v1/cluster`.
const RECORD_EVERY: Duration = Duration::from_secs(1);

/// A partition's warm copy.
pub(super) struct Follower {
    store: Store,
    registry: Registry,
    domain: Moderation,
    restored: Restored,
    /// The last `seq` applied.
    applied: i64,
}

impl Follower {
    /// A copy of the partition of `store` as of its log's end now.
    async fn restore(store: Store, now_ms: i64) -> Result<Follower, TakeoverError> {
        let end = store.next_seq().await? - 1;
        let (registry, domain, restored) =
            crate::writer::checkpoint::restore_until(&store, now_ms, end).await?;
        Ok(Follower {
            store,
            registry,
            domain,
            restored,
            applied: end,
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
        let behind = end - self.applied;
        self.applied = end;
        Ok(behind)
    }
}

/// The copy caught up to the end of the log under the lease just taken (nothing more can be
/// appended by anyone else), handed to the engine.
pub(super) async fn promote(
    mut follower: Follower,
    store: &Store,
    _now_ms: i64,
) -> Result<(Registry, Moderation, Restored), TakeoverError> {
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
    match Follower::restore(node.store.partition(p), node.clock.now_ms()).await {
        Ok(follower) => *standby = Some(follower),
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
        // One statement for every log's end; only the copies behind read their log.
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
                    drop(standby);
                    warm(&node, p).await;
                    continue;
                }
            }
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
