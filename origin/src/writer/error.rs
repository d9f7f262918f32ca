//! The writer's errors (`WriterError`). Each keeps its source (the store's error is logged with its
//! chain, not flattened into a string, or the refusal an action met), and `group_answer` turns one
//! into the answer every submitter of a failed group gets: 503 `DATABASE_UNAVAILABLE` when the
//! database is absent, 500 otherwise. The mapping to HTTP sits in `http/error.rs`, because only the
//! HTTP edge knows statuses.

use std::sync::Arc;

use crate::http::error::AppError;
use crate::store::StoreError;

/// What went wrong in the writer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum WriterError {
    /// The store failed. Shared, so that every submitter of a failed group hears it.
    #[error(transparent)]
    Store(Arc<StoreError>),
    /// An action was refused by the current state, or failed (its error as the log and the
    /// store gave it).
    #[error(transparent)]
    Action(AppError),
    /// A checkpoint asked for could not be written.
    #[error(transparent)]
    Checkpoint(AppError),
    /// The task that inserts and commits a group failed (it panicked).
    #[error("the commit task failed: {0}")]
    CommitTask(String),
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

impl WriterError {
    /// What each submitter of a group that failed hears: the database's absence stays a 503
    /// (a retry is safe), anything else is a 500.
    pub(crate) fn group_answer(&self) -> AppError {
        match self {
            WriterError::Store(e) => AppError::Store(e.clone()),
            WriterError::CommitDidNotTake => {
                AppError::DatabaseUnavailable(format!("group commit failed: {self}"))
            }
            WriterError::Action(e) | WriterError::Checkpoint(e) => {
                AppError::Internal(format!("group commit failed: {e}"))
            }
            other => AppError::Internal(format!("group commit failed: INTERNAL: {other}")),
        }
    }
}
