//! The log's errors (`LogError`): what carrying out a log entry, or deciding an action, can meet.
//! Each keeps its source (the store's error, the core's refusal of an event, the task that read a
//! page), so the chain is printed once where it is reported; `http/error.rs` maps the refusals to
//! their statuses and codes and everything else to a logged 500.
//!
//! A `Result` carries its error's size on every call, and the replay returns one per event per
//! board, so the large payloads (a refusal, a board id) are boxed: the error path allocates, the
//! path that succeeds stays small.

use standings_core::{ApplyError, BoardId, IdError, PlayerId, ScoreEvent};

use crate::boards::{BoardBroken, SnapshotUnreadable};
use crate::domain::periods::Period;
use crate::domain::{ActionRefusal, InvalidLoggedEvent, Refusal, UnreadableAction};
use crate::store::StoreError;

/// What went wrong carrying out the log, or deciding an action on it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An event names what the domain refuses (a board that is not defined).
    #[error(transparent)]
    Refused(Box<Refusal>),
    /// An action cannot be performed on the current state.
    #[error(transparent)]
    ActionRefused(#[from] ActionRefusal),
    /// A board the action needs is broken and not served.
    #[error(transparent)]
    NotServed(#[from] BoardBroken),
    /// A closed period's stored snapshot cannot be restored to be changed.
    #[error(transparent)]
    Restore(#[from] SnapshotUnreadable),
    /// A board refuses a logged event.
    #[error("board {board} refuses event {event_id}")]
    Apply {
        /// The board.
        board: Box<BoardId>,
        /// The event's id.
        event_id: String,
        /// What the core refused.
        #[source]
        source: ApplyError,
    },
    /// A player's aggregate cannot be recomputed from their valid events.
    #[error("a recompute of {player:?} on {board} ({period_key}) fails")]
    Recompute {
        /// The player.
        player: String,
        /// The board.
        board: Box<BoardId>,
        /// The period instance.
        period_key: String,
        /// What the core refused.
        #[source]
        source: ApplyError,
    },
    /// A stored board definition cannot be made a board (its calendar is invalid).
    #[error("stored board {board} is invalid: {why}")]
    InvalidStoredBoard {
        /// The board.
        board: Box<BoardId>,
        /// What the calendar refused.
        why: String,
    },
    /// A logged event the core refuses as an event.
    #[error(transparent)]
    InvalidEvent(#[from] InvalidLoggedEvent),
    /// A logged action that cannot be read as one.
    #[error(transparent)]
    UnreadableAction(#[from] UnreadableAction),
    /// A logged event names a player id the core refuses.
    #[error("the logged player id {player:?} is invalid")]
    InvalidPlayer {
        /// The player id.
        player: String,
        /// What the core refused.
        #[source]
        source: IdError,
    },
    /// The task that reads the next page of the log failed (it panicked).
    #[error("reading the event log failed")]
    ReadTask(#[source] tokio::task::JoinError),
}

impl From<Refusal> for LogError {
    fn from(refusal: Refusal) -> LogError {
        LogError::Refused(Box::new(refusal))
    }
}

impl LogError {
    /// `board` refuses `event`.
    pub(super) fn apply(board: &BoardId, event: &ScoreEvent, source: ApplyError) -> LogError {
        LogError::Apply {
            board: Box::new(board.clone()),
            event_id: event.event_id.as_str().to_owned(),
            source,
        }
    }

    /// `player`'s aggregate on `board` in `period` cannot be recomputed.
    pub(super) fn recompute(
        player: &PlayerId,
        board: &BoardId,
        period: &Period,
        source: ApplyError,
    ) -> LogError {
        LogError::Recompute {
            player: player.as_str().to_owned(),
            board: Box::new(board.clone()),
            period_key: period.key.clone(),
            source,
        }
    }
}
