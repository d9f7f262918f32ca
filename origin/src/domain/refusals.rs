//! Why an event is refused, as a `Refusal` enum; the group commit's refusals are these values too
//! (an unknown board included). Why an action is refused, as an `ActionRefusal`. The domain decides
//! refusals without knowing HTTP: `http/error.rs` maps each case to its status and stable code.
//! Nothing of a refused event or action is stored.

use standings_core::BoardId;

use crate::domain::EventStatus;
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

/// Why an action (a season transition, a moderation, a late decision) cannot be performed on the
/// current state. Decided before anything is logged, so nothing of a refused action is stored;
/// `http/error.rs` maps each case to its status and stable code.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ActionRefusal {
    /// The moderation id was used before for another request (409 `MODERATION_ID_CONFLICT`).
    #[error("moderation_id {0:?} was already used for another action")]
    ModerationIdConflict(String),
    /// The season is in that state already (409 `INVALID_TRANSITION`).
    #[error("season {game}/{season} is already {to}")]
    AlreadyInState {
        /// The game.
        game: String,
        /// The season.
        season: String,
        /// The state asked for, which it has.
        to: SeasonState,
    },
    /// The season's lifecycle does not allow that move now (409 `INVALID_TRANSITION`).
    #[error("season {game}/{season}: {why}")]
    InvalidTransition {
        /// The game.
        game: String,
        /// The season.
        season: String,
        /// Why, in the lifecycle's words (`SeasonRecord::check_transition`).
        why: String,
    },
    /// The action names an event the game does not have (404 `UNKNOWN_EVENT`).
    #[error("no event {event_id:?} in game {game:?}")]
    UnknownEvent {
        /// The game.
        game: String,
        /// The event's id.
        event_id: String,
    },
    /// The action names a board that is not defined (404 `UNKNOWN_BOARD`).
    #[error("no board {0}")]
    UnknownBoard(Box<BoardId>),
    /// The season is archived: its results and events are final (409 `SEASON_ARCHIVED`).
    #[error("season {game}/{season} is archived; its results and events are final")]
    SeasonArchived {
        /// The game.
        game: String,
        /// The season.
        season: String,
    },
    /// A moderator locked the player's name against the game's service (409 `NAME_LOCKED`).
    #[error(
        "a moderator locked the name of player {player:?} in game {game:?}; only a moderator can change it"
    )]
    NameLocked {
        /// The game.
        game: String,
        /// The player.
        player: String,
    },
    /// The event is not waiting for a late decision (409 `NOT_LATE`).
    #[error("event {event_id:?} is not waiting for a late decision (status {status})")]
    NotLate {
        /// The event's id.
        event_id: String,
        /// Its status in the log.
        status: EventStatus,
    },
    /// A recompute the action needs would overflow a cumulative total (422
    /// `VALUE_OUT_OF_RANGE`).
    #[error("the total of {player:?} on {board} ({period_key}) would overflow a 64-bit integer")]
    TotalOverflow {
        /// The player recomputed.
        player: String,
        /// The board.
        board: Box<BoardId>,
        /// The period instance.
        period_key: String,
    },
}
