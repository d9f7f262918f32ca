//! A client-side view of a board that follows it by deltas.

use crate::board::{Board, Delta};
use crate::error::DeltaError;

/// A read-only copy of a board that advances by applying the origin's deltas in order. It is
/// ranked by the very same index and comparator as the origin's board, so it answers the same
/// queries identically at the same version.
///
/// A delta must start at the view's current version; any other is refused and the view stays as
/// it was, so a gap (a lost or reordered message) shows up as an error, never as a wrong board.
///
/// Like the origin's board, the view keeps its most recent deltas (the board's
/// [`Board::history_limit`]), so it pages cursors from older held versions the same way.
#[derive(Clone)]
pub struct ClientView {
    board: Board,
}

impl ClientView {
    /// A view starting from a board, typically one restored from a snapshot.
    pub fn new(board: Board) -> ClientView {
        ClientView { board }
    }

    /// The board as of the view's version, for queries.
    pub fn board(&self) -> &Board {
        &self.board
    }

    /// The view's current `board_version`.
    pub fn version(&self) -> u64 {
        self.board.version()
    }

    /// Applies one delta. O(log n). Refuses (and changes nothing) when the delta does not start
    /// at the view's version, or when its `before` disagrees with what the view holds.
    pub fn apply(&mut self, delta: &Delta) -> Result<(), DeltaError> {
        self.board.apply_delta(delta)
    }

    /// Sets how many recent deltas the view keeps; see [`Board::set_history_limit`] for the
    /// memory it costs (0 keeps none, for a view that only reads its current version).
    /// O(dropped).
    pub fn set_history_limit(&mut self, limit: usize) {
        self.board.set_history_limit(limit);
    }
}
