//! The `[cluster]` table (`docs/cluster.md`).

use serde::{Deserialize, Serialize};

use super::default_true;

/// The `[cluster]` table: this origin is one node of several over one PostgreSQL database.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    /// This node's name: unique among the nodes and stable across its restarts.
    pub node_id: String,
    /// How the other nodes reach this one (`http://host:port`).
    pub advertise_url: String,
    /// How many partitions the games are hashed to; fixed when the database is first clustered.
    #[serde(default = "default_partitions")]
    pub partitions: u32,
    /// How long a partition's lease lasts unless its owner renews it (renewed every third).
    #[serde(default = "default_lease_ttl_ms")]
    pub lease_ttl_ms: u64,
    /// Keep the partitions owned elsewhere warm by following their logs, so that a takeover
    /// only catches up instead of restoring.
    #[serde(default = "default_true")]
    pub standby: bool,
    /// Reads of a partition owned elsewhere are answered from this node's warm copy while the
    /// copy was at the log's end this recently (ms); older, or a read asking for a position the
    /// copy has not reached, goes to the owner. 0 sends every read to the owner.
    #[serde(default = "default_standby_reads_max_lag_ms")]
    pub standby_reads_max_lag_ms: u64,
    /// The secret the nodes show each other on forwarded requests (at least 16 characters,
    /// the same on every node).
    pub secret: String,
}

fn default_partitions() -> u32 {
    64
}

fn default_standby_reads_max_lag_ms() -> u64 {
    1_000
}

fn default_lease_ttl_ms() -> u64 {
    3_000
}

impl ClusterConfig {
    pub(super) fn check(&self) -> Result<(), String> {
        let id_ok = !self.node_id.is_empty()
            && self.node_id.len() <= 64
            && self
                .node_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
        if !id_ok {
            return Err(format!(
                "cluster.node_id = {:?} must be 1 to 64 of A-Z a-z 0-9 . _ -",
                self.node_id
            ));
        }
        let uri = self.advertise_url.parse::<axum::http::Uri>();
        if !(self.advertise_url.starts_with("http://") || self.advertise_url.starts_with("https://"))
            || uri.is_err()
        {
            return Err(format!(
                "cluster.advertise_url = {:?} must be an http:// URL the other nodes can reach",
                self.advertise_url
            ));
        }
        // The other nodes append the request's path and query to it, so it names a host and
        // port and nothing else.
        if let Ok(uri) = uri
            && (uri.query().is_some() || !matches!(uri.path(), "" | "/"))
        {
            return Err(format!(
                "cluster.advertise_url = {:?} must be a scheme, host and port only (as http://10.0.0.5:7400), with no path or query",
                self.advertise_url
            ));
        }
        if !(1..=4_096).contains(&self.partitions) {
            return Err(format!(
                "cluster.partitions = {} must be from 1 to 4096",
                self.partitions
            ));
        }
        if !(300..=600_000).contains(&self.lease_ttl_ms) {
            return Err(format!(
                "cluster.lease_ttl_ms = {} must be from 300 to 600000",
                self.lease_ttl_ms
            ));
        }
        if self.standby_reads_max_lag_ms > 60_000 {
            return Err(format!(
                "cluster.standby_reads_max_lag_ms = {} must be from 0 to 60000",
                self.standby_reads_max_lag_ms
            ));
        }
        if self.secret.len() < 16 {
            return Err("cluster.secret must be at least 16 characters".into());
        }
        Ok(())
    }
}
