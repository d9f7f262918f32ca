//! What bringing a partition up on this node can fail with, each case keeping its source so a
//! log line shows the whole chain (`Chain`), as the writer's errors do.

use crate::log::LogError;
use crate::store::StoreError;

/// Why a partition's warm copy could not be built or kept up, or its engine not started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(super) enum TakeoverError {
    /// The partition's store failed.
    #[error("the partition's store failed")]
    Store(#[from] StoreError),
    /// Its log could not be restored or replayed.
    #[error("the partition's log could not be replayed")]
    Log(#[from] LogError),
    /// A board defined in it cannot be served (its definition is refused by this build).
    #[error("board {board} cannot be served: {why}")]
    Board {
        /// The board.
        board: String,
        /// The registry's words.
        why: String,
    },
    /// The engine over the restored state did not start.
    #[error("the partition's engine did not start")]
    Start(#[from] crate::StartError),
}
