//! What the lease loop tells the operator about the other nodes, decided without IO: which nodes
//! joined, started draining, or stopped heartbeating since the last tick, and where a partition
//! this node takes comes from. Each is one log line naming the nodes and partitions.

use std::collections::BTreeMap;
use std::fmt;

use crate::store::cluster::{LeaseRow, NodeRow};

/// How a node looked at a tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Seen {
    /// Heartbeating and serving.
    Live,
    /// Heartbeating and handing its partitions over to stop.
    Draining,
    /// Not heartbeating within the live window.
    Silent,
}

impl Seen {
    fn of(row: &NodeRow, live_within_ms: i64) -> Seen {
        match (row.heartbeat_age_ms < live_within_ms, row.draining) {
            (false, _) => Seen::Silent,
            (true, true) => Seen::Draining,
            (true, false) => Seen::Live,
        }
    }
}

/// How the nodes looked at each node's last tick, by id.
pub(super) type Seens = BTreeMap<String, Seen>;

/// A change worth a log line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Change {
    /// The node heartbeats (it started, or came back).
    Joined { node: String, url: String },
    /// The node is handing its partitions over to stop.
    Draining { node: String },
    /// The node stopped heartbeating without draining: dead, paused or cut off. Its partitions
    /// move once their leases expire.
    Silent { node: String, last_beat_ms: i64 },
    /// The node stopped heartbeating after it drained: a clean stop.
    Left { node: String },
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Joined { node, url } => write!(f, "node {node} joined the cluster ({url})"),
            Change::Draining { node } => {
                write!(f, "node {node} is handing its partitions over to stop")
            }
            Change::Silent { node, last_beat_ms } => write!(
                f,
                "node {node} stopped heartbeating ({last_beat_ms} ms since its last beat) without handing over: dead, paused or cut off; its partitions move once their leases expire"
            ),
            Change::Left { node } => write!(f, "node {node} stopped after handing its partitions over"),
        }
    }
}

/// The changes from `before` (`None` at this node's first tick, when every node is new to it but
/// none is news) to the node table `now`, leaving this node (`me`) out, and the table as now
/// seen. O(nodes).
pub(super) fn changes(
    before: Option<&Seens>,
    now: &[NodeRow],
    live_within_ms: i64,
    me: &str,
) -> (Vec<Change>, Seens) {
    let seen: Seens = now
        .iter()
        .map(|row| (row.node_id.clone(), Seen::of(row, live_within_ms)))
        .collect();
    let Some(before) = before else {
        return (Vec::new(), seen);
    };
    let mut out = Vec::new();
    for row in now.iter().filter(|row| row.node_id != me) {
        let was = before.get(&row.node_id).copied().unwrap_or(Seen::Silent);
        let node = row.node_id.clone();
        match (was, seen[&row.node_id]) {
            (Seen::Silent, Seen::Live) => out.push(Change::Joined {
                node,
                url: row.advertise_url.clone(),
            }),
            (Seen::Live, Seen::Draining) | (Seen::Silent, Seen::Draining) => {
                out.push(Change::Draining { node })
            }
            (Seen::Live, Seen::Silent) => out.push(Change::Silent {
                node,
                last_beat_ms: row.heartbeat_age_ms,
            }),
            (Seen::Draining, Seen::Silent) => out.push(Change::Left { node }),
            _ => {}
        }
    }
    (out, seen)
}

/// Where a partition this node takes comes from, for the takeover's log line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum TakenFrom {
    /// Nobody held it: never owned, or given back by a hand-over.
    Free,
    /// Another node held it and its lease expired: that node died, paused or was cut off.
    Expired { node: String },
}

impl TakenFrom {
    /// From the lease row as read before the take. O(1).
    pub(super) fn of(lease: Option<&LeaseRow>, me: &str) -> TakenFrom {
        match lease.and_then(|l| l.node.as_deref()) {
            Some(node) if node != me => TakenFrom::Expired {
                node: node.to_string(),
            },
            _ => TakenFrom::Free,
        }
    }
}

impl fmt::Display for TakenFrom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TakenFrom::Free => f.write_str("free (never owned, or handed over)"),
            TakenFrom::Expired { node } => write!(f, "from {node}, whose lease expired"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(node: &str, age: i64, draining: bool) -> NodeRow {
        NodeRow {
            node_id: node.into(),
            advertise_url: format!("http://{node}:7400"),
            heartbeat_age_ms: age,
            draining,
        }
    }

    /// The first tick tells nothing; then a node that joins, drains, stops after draining, or
    /// goes silent without draining is each one change, and this node never is.
    #[test]
    fn each_change_of_another_node_is_told_once() {
        let (first, seen) = changes(None, &[row("a", 10, false), row("b", 10, false)], 1_000, "a");
        assert_eq!(first, vec![]);
        let (none, seen) = changes(
            Some(&seen),
            &[row("a", 10, false), row("b", 20, false)],
            1_000,
            "a",
        );
        assert_eq!(none, vec![]);
        let (c, seen) = changes(
            Some(&seen),
            &[row("a", 5_000, false), row("b", 2_000, false), row("c", 0, false)],
            1_000,
            "a",
        );
        assert_eq!(
            c,
            vec![
                Change::Silent {
                    node: "b".into(),
                    last_beat_ms: 2_000
                },
                Change::Joined {
                    node: "c".into(),
                    url: "http://c:7400".into()
                },
            ]
        );
        assert_eq!(
            c[0].to_string(),
            "node b stopped heartbeating (2000 ms since its last beat) without handing over: dead, paused or cut off; its partitions move once their leases expire"
        );
        let (c, seen) = changes(
            Some(&seen),
            &[row("b", 3_000, false), row("c", 0, true)],
            1_000,
            "a",
        );
        assert_eq!(c, vec![Change::Draining { node: "c".into() }]);
        let (c, seen) = changes(
            Some(&seen),
            &[row("b", 0, false), row("c", 5_000, true)],
            1_000,
            "a",
        );
        assert_eq!(
            c,
            vec![
                Change::Joined {
                    node: "b".into(),
                    url: "http://b:7400".into()
                },
                Change::Left { node: "c".into() },
            ]
        );
        let (c, _) = changes(
            Some(&seen),
            &[row("b", 0, false), row("c", 6_000, true)],
            1_000,
            "a",
        );
        assert_eq!(c, vec![]);
    }

    /// A take names the node whose lease expired, or says the lease was free.
    #[test]
    fn a_take_says_where_the_partition_comes_from() {
        let lease = |node: Option<&str>| LeaseRow {
            partition: 3,
            epoch: 4,
            node: node.map(str::to_string),
            expires_in_ms: -5,
        };
        assert_eq!(
            TakenFrom::of(Some(&lease(Some("b"))), "a").to_string(),
            "from b, whose lease expired"
        );
        assert_eq!(TakenFrom::of(Some(&lease(None)), "a"), TakenFrom::Free);
        assert_eq!(TakenFrom::of(Some(&lease(Some("a"))), "a"), TakenFrom::Free);
        assert_eq!(TakenFrom::of(None, "a"), TakenFrom::Free);
    }
}
