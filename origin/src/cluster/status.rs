//! The cluster's table: the nodes, and every partition's owner, epoch, standbys, log end and the
//! standbys' lag, as `GET /v1/cluster` answers it and `standings cluster status` prints it.

use serde::Serialize;

use crate::store::StoreError;
use crate::store::cluster::ClusterStore;

/// The whole table.
#[derive(Debug, Serialize)]
pub struct Status {
    /// The node answering, when a node answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    /// How many partitions the games are hashed to.
    pub partitions: u32,
    /// Where the game asked about lives, when one was asked about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub game: Option<GamePlacement>,
    /// The nodes registered.
    pub nodes: Vec<NodeStatus>,
    /// Every partition.
    pub leases: Vec<PartitionStatus>,
}

/// A game's partition and that partition's owner now.
#[derive(Debug, Serialize)]
pub struct GamePlacement {
    /// The game.
    pub game: String,
    /// Its partition (the games' hash, fixed for the cluster's life).
    pub partition: u32,
    /// The partition's owner, when its lease is held.
    pub owner: Option<String>,
}

/// A node.
#[derive(Debug, Serialize)]
pub struct NodeStatus {
    /// Its id.
    pub node_id: String,
    /// Where the others reach it.
    pub advertise_url: String,
    /// Whether its heartbeat is recent.
    pub live: bool,
    /// Its heartbeat's age.
    pub heartbeat_age_ms: i64,
    /// Whether it is handing its partitions over to stop.
    pub draining: bool,
    /// How many partitions it owns.
    pub owns: usize,
}

/// A partition.
#[derive(Debug, Serialize)]
pub struct PartitionStatus {
    /// Its number.
    pub partition: u32,
    /// Its owner, when its lease is held.
    pub owner: Option<String>,
    /// Its lease's epoch.
    pub epoch: i64,
    /// Time left on its lease (negative: expired).
    pub lease_left_ms: i64,
    /// The last `seq` of its log.
    pub log_end: i64,
    /// The nodes keeping it warm, with their positions.
    pub standbys: Vec<StandbyStatus>,
}

/// A standby's position.
#[derive(Debug, Serialize)]
pub struct StandbyStatus {
    /// The node.
    pub node_id: String,
    /// The last `seq` it applied.
    pub applied: i64,
    /// Log entries it is behind.
    pub lag: i64,
    /// How long ago it said so.
    pub age_ms: i64,
}

/// Reads the table from the database; with `game`, where that game lives too.
pub async fn read(
    store: &ClusterStore,
    node_id: Option<&str>,
    game: Option<&str>,
) -> Result<Status, StoreError> {
    let leases = store.leases().await?;
    let nodes = store.nodes().await?;
    let followers = store.followers().await?;
    let ends = store.log_ends().await?;
    // Ten lease times without a heartbeat: the node is gone (a live node beats three times per
    // lease time); the exact lease time is each node's own setting.
    let live_within = 10_000;
    let held = |l: &crate::store::cluster::LeaseRow| l.expires_in_ms > 0;
    let game = game.map(|game| {
        let partition = super::lease::partition_of(game, store.partitions());
        GamePlacement {
            game: game.to_string(),
            partition,
            owner: leases
                .iter()
                .find(|l| l.partition == partition && held(l))
                .and_then(|l| l.node.clone()),
        }
    });
    Ok(Status {
        node_id: node_id.map(str::to_string),
        partitions: store.partitions(),
        game,
        nodes: nodes
            .iter()
            .map(|n| NodeStatus {
                node_id: n.node_id.clone(),
                advertise_url: n.advertise_url.clone(),
                live: n.heartbeat_age_ms < live_within,
                heartbeat_age_ms: n.heartbeat_age_ms,
                draining: n.draining,
                owns: leases
                    .iter()
                    .filter(|l| held(l) && l.node.as_deref() == Some(n.node_id.as_str()))
                    .count(),
            })
            .collect(),
        leases: leases
            .iter()
            .map(|l| {
                let end = ends.get(l.partition as usize).copied().unwrap_or(0);
                PartitionStatus {
                    partition: l.partition,
                    owner: l.node.clone().filter(|_| held(l)),
                    epoch: l.epoch,
                    lease_left_ms: l.expires_in_ms,
                    log_end: end,
                    standbys: followers
                        .iter()
                        .filter(|f| f.partition == l.partition && Some(&f.node_id) != l.node.as_ref())
                        .map(|f| StandbyStatus {
                            node_id: f.node_id.clone(),
                            applied: f.applied,
                            lag: (end - f.applied).max(0),
                            age_ms: f.age_ms,
                        })
                        .collect(),
                }
            })
            .collect(),
    })
}

/// The table for a terminal.
pub fn table(status: &Status) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}, {}",
        crate::words::counted(status.partitions, "partition", "partitions"),
        crate::words::counted(status.nodes.len() as u64, "node", "nodes")
    );
    if let Some(placed) = &status.game {
        let _ = writeln!(
            out,
            "game {:?} is in partition {}, owned by {}",
            placed.game,
            placed.partition,
            placed.owner.as_deref().unwrap_or("no node now (it is moving)")
        );
    }
    let _ = writeln!(
        out,
        "\n{:<20} {:<32} {:>5} {:>10} {:>6}",
        "NODE", "ADVERTISE_URL", "LIVE", "HEARTBEAT", "OWNS"
    );
    for n in &status.nodes {
        let _ = writeln!(
            out,
            "{:<20} {:<32} {:>5} {:>8}ms {:>6}{}",
            n.node_id,
            n.advertise_url,
            if n.live { "yes" } else { "no" },
            n.heartbeat_age_ms,
            n.owns,
            if n.draining { "  (draining)" } else { "" }
        );
    }
    let _ = writeln!(
        out,
        "\n{:>9} {:<20} {:>6} {:>10} {:>10}  STANDBYS (applied, lag)",
        "PARTITION", "OWNER", "EPOCH", "LEASE", "LOG_END"
    );
    for p in &status.leases {
        let standbys: Vec<String> = p
            .standbys
            .iter()
            .map(|s| format!("{} ({}, {})", s.node_id, s.applied, s.lag))
            .collect();
        let _ = writeln!(
            out,
            "{:>9} {:<20} {:>6} {:>8}ms {:>10}  {}",
            p.partition,
            p.owner.as_deref().unwrap_or("-"),
            p.epoch,
            p.lease_left_ms,
            p.log_end,
            standbys.join(", ")
        );
    }
    out
}
