//! The `[snapshots]` table (`docs/snapshots.md`).

use serde::{Deserialize, Serialize};

/// The `[snapshots]` table: how board instances are published for the edge (`docs/snapshots.md`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SnapshotsConfig {
    /// The shortest time between two publications of one board instance; a changing board is
    /// published about this often (its head says so as `interval_ms`).
    pub interval_ms: u64,
    /// How long a part (manifest or chunk) stays fetchable after no current head names it, so
    /// an edge in the middle of a read of the version before can finish it.
    pub retention_seconds: u64,
    /// The `max-age` of a head answer.
    pub head_max_age_seconds: u64,
    /// A board instance whose head nobody asked for this long stops being published, and its
    /// parts go on their retention.
    pub idle_seconds: u64,
    /// The most board instances followed at once, in all. A head that would follow one more
    /// closed period is answered 503 `SNAPSHOT_INSTANCES_FULL`; one of a current period takes
    /// the place of the closed instance asked for least recently.
    pub max_instances: usize,
    /// The most instances of one board followed at once (its current periods and the closed
    /// ones edges read), under the same rule.
    pub max_instances_per_board: usize,
    /// The most bytes a version published as a patch over the last whole manifest may take;
    /// past it a whole manifest is published, which later patches build on. 0 publishes every
    /// version whole.
    pub max_patch_bytes: usize,
    /// The longest a whole manifest stays the base of the versions patched over it: it keeps
    /// serving what they changed (old scores, and the metadata they replaced), so past this
    /// age the next version is published whole.
    pub max_base_age_seconds: u64,
}

impl Default for SnapshotsConfig {
    fn default() -> Self {
        SnapshotsConfig {
            interval_ms: 1_000,
            retention_seconds: 60,
            head_max_age_seconds: 1,
            idle_seconds: 600,
            max_instances: 1_024,
            max_instances_per_board: 16,
            max_patch_bytes: standings_core::snapshot::DEFAULT_MAX_PATCH_BYTES,
            max_base_age_seconds: 600,
        }
    }
}

impl SnapshotsConfig {
    pub(super) fn is_default(&self) -> bool {
        *self == SnapshotsConfig::default()
    }

    pub(super) fn check(&self) -> Result<(), String> {
        if !(10..=600_000).contains(&self.interval_ms) {
            return Err(format!(
                "snapshots.interval_ms = {} must be from 10 to 600000",
                self.interval_ms
            ));
        }
        if self.head_max_age_seconds > 3_600 {
            return Err(format!(
                "snapshots.head_max_age_seconds = {} must be at most 3600",
                self.head_max_age_seconds
            ));
        }
        // An edge may hold a head for its max-age and then fetch the parts it names; a
        // retention shorter than that would answer 404 to a read begun on a valid head.
        if self.retention_seconds < self.head_max_age_seconds.max(1) {
            return Err(format!(
                "snapshots.retention_seconds = {} must be at least 1 and at least head_max_age_seconds ({}), so that a part named by a cached head is still fetchable",
                self.retention_seconds, self.head_max_age_seconds
            ));
        }
        if self.retention_seconds > 86_400 {
            return Err(format!(
                "snapshots.retention_seconds = {} must be at most 86400",
                self.retention_seconds
            ));
        }
        if self.max_patch_bytes != 0 && !(1_024..=16 * 1_024 * 1_024).contains(&self.max_patch_bytes) {
            return Err(format!(
                "snapshots.max_patch_bytes = {} must be 0 (every version whole) or from 1024 to 16777216",
                self.max_patch_bytes
            ));
        }
        if !(self.retention_seconds..=86_400).contains(&self.max_base_age_seconds) {
            return Err(format!(
                "snapshots.max_base_age_seconds = {} must be from retention_seconds ({}) to 86400",
                self.max_base_age_seconds, self.retention_seconds
            ));
        }
        if self.max_instances == 0 || self.max_instances_per_board == 0 {
            return Err(format!(
                "snapshots.max_instances = {} and snapshots.max_instances_per_board = {} must each be at least 1",
                self.max_instances, self.max_instances_per_board
            ));
        }
        if self.idle_seconds == 0 || self.idle_seconds > 30 * 86_400 {
            return Err(format!(
                "snapshots.idle_seconds = {} must be from 1 to 2592000",
                self.idle_seconds
            ));
        }
        Ok(())
    }
}
