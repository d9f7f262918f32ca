//! Actions and finalized results, as logged.

use serde::{Deserialize, Serialize};
use standings_core::BoardId;

use crate::domain::seasons::SeasonState;

/// One action of the log: a season transition, a moderation action or a late decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionRow {
    /// Commit order, shared with the event log.
    pub seq: i64,
    /// The game it concerns.
    pub game: String,
    /// `SEASON_STATE`, `INVALIDATE`, `RESTORE`, `DISQUALIFY`, `REINSTATE` or `LATE_DECISION`.
    pub kind: String,
    /// The client's moderation id, for idempotent retries.
    pub action_id: Option<String>,
    /// The request, as JSON.
    pub body: String,
    /// What it changed, as JSON.
    pub result: String,
    /// The token that asked for it.
    pub actor: String,
    /// Why.
    pub reason: String,
    /// When (ms).
    pub created_at: i64,
}

/// One finalized result of a board: the ranked entries at one correction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResultRow {
    /// The board.
    pub board: BoardId,
    /// 0 for the original, then 1, 2, ... for each correction.
    pub correction: i64,
    /// The board version the result was taken at.
    pub board_version: i64,
    /// The board digest.
    pub digest: String,
    /// When it was taken (ms).
    pub finalized_at: i64,
    /// The action that produced it.
    pub action_seq: i64,
    /// The ranked entries, as a JSON array.
    pub entries: String,
}

/// An action request as the log stores it (`ActionRow::body`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Action {
    /// A season transition.
    SeasonState {
        /// The season.
        season: String,
        /// The state it moves to.
        to: SeasonState,
    },
    /// Invalidate one event on every board it fed.
    Invalidate {
        /// The event.
        target_event_id: String,
    },
    /// Restore an invalidated event.
    Restore {
        /// The event.
        target_event_id: String,
    },
    /// Remove a player from a board.
    Disqualify {
        /// The board.
        board: BoardId,
        /// The player.
        target_player_id: String,
    },
    /// Let a player back onto a board with their valid history.
    Reinstate {
        /// The board.
        board: BoardId,
        /// The player.
        target_player_id: String,
    },
    /// Decide a late event.
    LateDecision {
        /// The event.
        event_id: String,
        /// Apply it (true) or reject it (false).
        apply: bool,
    },
}

impl Action {
    /// The kind's name in the log.
    pub fn kind(&self) -> &'static str {
        match self {
            Action::SeasonState { .. } => "SEASON_STATE",
            Action::Invalidate { .. } => "INVALIDATE",
            Action::Restore { .. } => "RESTORE",
            Action::Disqualify { .. } => "DISQUALIFY",
            Action::Reinstate { .. } => "REINSTATE",
            Action::LateDecision { .. } => "LATE_DECISION",
        }
    }
}
