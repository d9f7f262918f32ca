//! The writer's errors (`WriterError`). Each keeps its source: the store's error, the refusal an
//! action met or the log's error it failed on, a checkpoint's, the commit task's. A group that fails
//! fails for every submitter in it, so each hears the same error, shared ([`WriterError::Group`]).
//! The mapping to HTTP sits in `http/error.rs`, because only the HTTP edge knows statuses: the
//! database's absence stays a 503 there (a retry is safe), a stopped writer a 503 too, and anything
//! else is a 500.

use std::sync::Arc;

use crate::domain::ActionRefusal;
use crate::log::LogError;
use crate::store::StoreError;

/// What went wrong in the writer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriterError {
    /// The writer has stopped taking commands (the service is shutting down): nothing was done.
    #[error("the writer has stopped; the service is shutting down")]
    Stopped,
    /// The writer dropped a command without answering it (it panicked): whether it was carried
    /// out is not known.
    #[error("the writer dropped {0}")]
    Dropped(&'static str),
    /// The store failed. Shared, so that a failed group's error can be handed to each of its
    /// submitters.
    #[error(transparent)]
    Store(Arc<StoreError>),
    /// A group commit failed, and nothing of it was stored or applied: every submitter of the
    /// group hears this one error.
    #[error("group commit failed")]
    Group(#[source] Arc<WriterError>),
    /// An action was refused by the current state.
    #[error(transparent)]
    ActionRefused(#[from] ActionRefusal),
    /// Deciding or performing an action failed in the log.
    #[error(transparent)]
    Action(#[from] LogError),
    /// A checkpoint asked for could not be written.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The task that inserts and commits a group failed (it panicked).
    #[error("the commit task failed")]
    CommitTask(#[source] tokio::task::JoinError),
    /// A looked-up group met ids stored though not found: only a bug can do that.
    #[error("{0} of a group's events were stored already, though not found")]
    StoredThoughNotFound(u64),
    /// A commit's answer was lost, and the log says it did not take.
    #[error("the database went away during the commit, which did not take; nothing was stored")]
    CommitDidNotTake,
}

impl From<StoreError> for WriterError {
    fn from(e: StoreError) -> WriterError {
        WriterError::Store(Arc::new(e))
    }
}

/// Why a checkpoint could not be written. The log is intact either way: the next start replays
/// it from the checkpoint before, or from the start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The manifest cannot be encoded.
    #[error("cannot encode the checkpoint manifest")]
    Manifest(#[source] serde_json::Error),
    /// The store failed to take a part.
    #[error(transparent)]
    Store(#[from] StoreError),
}
