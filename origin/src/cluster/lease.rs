//! The lease decisions, pure: when an owner renews, until when it may serve, which partitions a
//! node takes or gives back. Times are milliseconds on the node's monotonic clock, except the
//! leases' time left, which the database measures on its own clock; the two are never compared
//! as readings, only as durations.
//!
//! Why an owner's own deadline is safe: the database sets a lease's expiry at its clock's time
//! of the renewal plus the lease time, and the renewal is carried out after the node sent it. So
//! counted from the moment the renewal was sent, the lease time (less a margin for the two
//! clocks' rates) always ends before the database's expiry: the owner stops serving before any
//! other node can take the partition. Writes do not rely on it: each one proves the lease in
//! its own transaction (`store::cluster`).

use std::collections::BTreeSet;

/// The share of the lease time an owner keeps in hand: it stops serving this much before the
/// lease could expire, for clock rates that differ and a loop that runs late.
const MARGIN_DIVISOR: i64 = 5;

/// A lease this node holds, as it sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Held {
    /// The lease's epoch, proved by every write.
    pub epoch: i64,
    /// Until when (monotonic ms) this node may answer for the partition.
    pub serve_until: i64,
}

impl Held {
    /// A lease taken or renewed by a statement sent at `sent_at`.
    pub fn renewed(epoch: i64, sent_at: i64, ttl_ms: i64) -> Held {
        Held {
            epoch,
            serve_until: sent_at + ttl_ms - ttl_ms / MARGIN_DIVISOR,
        }
    }

    /// Whether this node may still answer for the partition at `now`.
    pub fn serving(&self, now: i64) -> bool {
        now < self.serve_until
    }
}

/// How often the leases are renewed and the table read: three times per lease time, so that
/// two renewals in a row may fail before the owner stops serving.
pub fn tick_ms(ttl_ms: i64) -> i64 {
    (ttl_ms / 3).max(50)
}

/// Nodes whose heartbeat is older than this are not counted in the fair share.
pub fn live_within_ms(ttl_ms: i64) -> i64 {
    ttl_ms
}

/// The most partitions a node should own: an even split among the live nodes, rounded up.
pub fn fair_share(partitions: u32, live_nodes: usize) -> usize {
    let nodes = live_nodes.max(1);
    (partitions as usize).div_ceil(nodes)
}

/// What one partition's lease looks like to the planner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The partition.
    pub partition: u32,
    /// The holder, if any.
    pub node: Option<String>,
    /// Time left on the database's clock (≤ 0: expired).
    pub expires_in_ms: i64,
}

impl Lease {
    /// Whether any node may take it now.
    pub fn free(&self) -> bool {
        self.node.is_none() || self.expires_in_ms <= 0
    }
}

/// What a node does with the leases at one tick.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Partitions to take, best first.
    pub take: Vec<u32>,
    /// Partitions to hand back (after finishing what is in flight on them).
    pub release: Vec<u32>,
}

/// Decides which partitions `me` takes or gives back: a draining node gives everything back;
/// a node past its fair share gives one back per tick (the newest-numbered), so shares move
/// gradually when a node joins; a node under it takes free partitions, those it keeps warm
/// first. `live` counts the live nodes that are not draining, this one included unless it is.
pub fn plan(me: &str, leases: &[Lease], live: usize, draining: bool, warm: &BTreeSet<u32>) -> Plan {
    let partitions = u32::try_from(leases.len()).unwrap_or(u32::MAX);
    let owned: Vec<u32> = leases
        .iter()
        .filter(|l| l.node.as_deref() == Some(me) && l.expires_in_ms > 0)
        .map(|l| l.partition)
        .collect();
    if draining {
        return Plan {
            take: Vec::new(),
            release: owned,
        };
    }
    let share = fair_share(partitions, live);
    if owned.len() > share {
        return Plan {
            take: Vec::new(),
            release: owned.iter().rev().take(1).copied().collect(),
        };
    }
    let mut free: Vec<u32> = leases.iter().filter(|l| l.free()).map(|l| l.partition).collect();
    // Warm ones first, then by number; stable, so that nodes under their share pick alike and
    // the database's single winner settles the rest.
    free.sort_by_key(|p| (!warm.contains(p), *p));
    free.truncate(share - owned.len());
    Plan {
        take: free,
        release: Vec::new(),
    }
}

/// The partition of a game, the core's rule (`standings_core::partition`), which every node and
/// every tool shares.
pub use standings_core::partition::partition_of;

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(p: u32, node: Option<&str>, left: i64) -> Lease {
        Lease {
            partition: p,
            node: node.map(str::to_string),
            expires_in_ms: left,
        }
    }

    #[test]
    fn an_owner_stops_serving_before_the_database_could_expire_its_lease() {
        let held = Held::renewed(3, 1_000, 3_000);
        assert!(held.serving(3_399));
        assert!(!held.serving(3_400));
        // The database's expiry is at least sent_at + ttl on its clock.
        assert!(held.serve_until < 1_000 + 3_000);
    }

    #[test]
    fn a_node_takes_up_to_its_share_warm_ones_first() {
        let leases: Vec<Lease> = (0..6).map(|p| lease(p, None, 0)).collect();
        let warm = BTreeSet::from([4, 5]);
        let plan = plan("a", &leases, 2, false, &warm);
        assert_eq!(plan.take, vec![4, 5, 0]);
        assert!(plan.release.is_empty());
    }

    #[test]
    fn a_node_past_its_share_gives_one_back_per_tick_and_a_draining_one_all() {
        let leases: Vec<Lease> = (0..4).map(|p| lease(p, Some("a"), 1_000)).collect();
        let warm = BTreeSet::new();
        assert_eq!(plan("a", &leases, 2, false, &warm).release, vec![3]);
        assert_eq!(plan("a", &leases, 1, false, &warm), Plan::default());
        assert_eq!(plan("a", &leases, 1, true, &warm).release, vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_lease_held_elsewhere_is_taken_only_once_expired() {
        let leases = vec![lease(0, Some("b"), 500), lease(1, Some("b"), 0)];
        let plan = plan("a", &leases, 1, false, &BTreeSet::new());
        assert_eq!(plan.take, vec![1]);
    }

    /// A thousand games reach every one of 64 partitions (the core pins where each goes).
    #[test]
    fn games_spread_over_the_partitions() {
        let used: BTreeSet<u32> = (0..1_000).map(|i| partition_of(&format!("g-{i}"), 64)).collect();
        assert_eq!(used.len(), 64);
    }
}
