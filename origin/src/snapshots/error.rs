//! The snapshots' errors (`SnapshotsError`): a head refused under the caps, or a publication that
//! failed. `http/error.rs` maps them to their statuses and codes.

use standings_core::BoardId;

/// Why a head cannot be answered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotsError {
    /// As many instances are followed as the caps allow and this one is a closed period, which
    /// takes no one's place (503 `SNAPSHOT_INSTANCES_FULL`).
    #[error(
        "the origin follows as many board instances for the edge as it may ({total} in all, {per_board} per board) and {board} {period_key} is a closed period; read it from the origin's API, or retry once fewer are read"
    )]
    InstancesFull {
        /// The cap in all.
        total: usize,
        /// The cap of one board.
        per_board: usize,
        /// The board.
        board: Box<BoardId>,
        /// The closed period instance.
        period_key: String,
    },
    /// The publication on the blocking pool failed (it panicked).
    #[error("publishing {board} {period_key} failed")]
    Publish {
        /// The board.
        board: Box<BoardId>,
        /// The period instance.
        period_key: String,
        /// The task's failure.
        #[source]
        source: tokio::task::JoinError,
    },
}
