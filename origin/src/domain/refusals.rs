//! Why an event is refused, as a `Refusal` enum; the group commit's refusals are these values too
//! (an unknown board included). The domain decides refusals without knowing HTTP: `http/error.rs`
//! maps each case to its status and stable code. Nothing of a refused event is stored.

use standings_core::BoardId;

use crate::domain::seasons::SeasonState;

/// A domain rule that an event breaks.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The season takes no events achieved at this time (409 `SEASON_NOT_ACTIVE`).
    #[error("season {game}/{season} is {state}; it takes no events achieved at this time")]
    SeasonNotActive {
        /// The game.
        game: String,
        /// The season.
        season: String,
        /// Its state.
        state: SeasonState,
    },
    /// The player is disqualified from a board the event feeds (409 `PLAYER_DISQUALIFIED`).
    #[error("player {player:?} is disqualified from {board}")]
    PlayerDisqualified {
        /// The player.
        player: String,
        /// The board.
        board: BoardId,
    },
    /// The event names a board that is not defined (404 `UNKNOWN_BOARD`).
    #[error("no board {0}")]
    UnknownBoard(BoardId),
    /// The same id was stored with another payload (409 `EVENT_ID_CONFLICT`).
    #[error("event {0:?} was already submitted with a different payload")]
    EventIdConflict(String),
    /// The event was invalidated by a moderator (409 `EVENT_INVALIDATED`).
    #[error("event {0:?} was invalidated by a moderator; resubmitting it changes nothing")]
    EventInvalidated(String),
    /// A cumulative total would overflow (422 `VALUE_OUT_OF_RANGE`).
    #[error("the total on {board} ({period_key}) would overflow a 64-bit integer")]
    TotalOverflow {
        /// The board.
        board: BoardId,
        /// The period instance.
        period_key: String,
    },
}
