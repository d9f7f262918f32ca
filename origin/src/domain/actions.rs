//! Actions and finalized results, as logged.

use serde::{Deserialize, Serialize};
use standings_core::BoardId;

use crate::domain::seasons::SeasonState;

/// One action of the log: a season transition, a moderation action or a late decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionRow {
    /// Commit order, shared with the event log.
    pub(crate) seq: i64,
    /// The game it concerns.
    pub(crate) game: String,
    /// What to do, as a rebuild performs it; an error when the log holds an action this version
    /// cannot read (it breaks the boards of its game rather than the whole log).
    pub(crate) action: Result<Action, UnreadableAction>,
    /// The client's moderation id, for idempotent retries.
    pub(crate) action_id: Option<String>,
    /// The request as the client sent it (kept for the audit log and idempotent retries).
    pub(crate) request: serde_json::Value,
    /// What it changed, once recorded (`None` until the action was performed).
    pub(crate) result: Option<ActionResult>,
    /// The token that asked for it.
    pub(crate) actor: String,
    /// Why.
    pub(crate) reason: String,
    /// When (ms).
    pub(crate) created_at: i64,
}

/// One finalized result of a board: the ranked entries at one correction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResultRow {
    /// The board.
    pub board: BoardId,
    /// 0 for the original, then 1, 2, ... for each correction.
    pub correction: i64,
    /// The board version the result was taken at.
    pub(crate) board_version: i64,
    /// The board digest.
    pub digest: String,
    /// When it was taken (ms).
    pub(crate) finalized_at: i64,
    /// The action that produced it.
    pub(crate) action_seq: i64,
    /// The ranked entries.
    pub(crate) entries: Vec<RankedEntry>,
}

impl ActionRow {
    /// The kind's name in the log: `SEASON_STATE`, `INVALIDATE`, `RESTORE`, `DISQUALIFY`,
    /// `REINSTATE` or `LATE_DECISION`.
    pub(crate) fn kind(&self) -> &str {
        match &self.action {
            Ok(action) => action.kind(),
            Err(unreadable) => &unreadable.kind,
        }
    }
}

/// A logged action that cannot be read as an [`Action`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("action {seq} cannot be read: {why}")]
pub struct UnreadableAction {
    /// Its `seq`.
    pub(crate) seq: i64,
    /// The kind the log names.
    pub(crate) kind: String,
    /// What is wrong with it.
    pub(crate) why: String,
}

/// One ranked entry of a result, or of a closed period's snapshot. The fields are declared in
/// the order of their names, which is the order the stored text and the answers have them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankedEntry {
    /// When the player's standing was achieved (ms; RFC 3339 in JSON).
    #[serde(with = "rfc3339")]
    pub(crate) achieved_at: i64,
    /// The player.
    pub(crate) player_id: String,
    /// 1-based rank.
    pub(crate) rank: u64,
    /// The aggregate value.
    pub(crate) value: i64,
}

/// A time in ms written as RFC 3339 text.
mod rfc3339 {
    pub(super) fn serialize<S: serde::Serializer>(ms: &i64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&crate::clock::format_rfc3339(*ms))
    }

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
        let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(deserializer)?;
        crate::clock::parse_rfc3339(&text).map_err(serde::de::Error::custom)
    }
}

/// What an action changed: the instances it recomputed and the result snapshots it stored.
/// Fields in name order, as recorded and answered.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionResult {
    /// Every instance it changed.
    pub(crate) boards: Vec<Change>,
    /// The result snapshots (finalization or corrections) it produced.
    pub(crate) results: Vec<Correction>,
}

/// What an action changed on one instance. Fields in name order, as recorded and answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The instance's version after.
    pub(crate) board_version: u64,
    /// The board.
    pub(crate) game: String,
    /// The board.
    pub(crate) mode: String,
    /// The period instance.
    pub(crate) period_key: String,
    /// The player whose aggregate was recomputed.
    pub(crate) player_id: String,
    /// Their rank after, or `None` when unranked.
    pub(crate) rank: Option<u64>,
    /// The board.
    pub(crate) scope: String,
    /// The board.
    pub(crate) season: String,
}

/// A result snapshot an action produced, as its answer names it. Fields in name order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Correction {
    /// The board version the result was taken at.
    pub(crate) board_version: i64,
    /// 0 for the original, then 1, 2, ...
    pub(crate) correction: i64,
    /// The board digest.
    pub(crate) digest: String,
    /// The board.
    pub(crate) game: String,
    /// The board.
    pub(crate) mode: String,
    /// The board.
    pub(crate) scope: String,
    /// The board.
    pub(crate) season: String,
}

impl Correction {
    /// How an answer names a stored result.
    pub(crate) fn of(result: &ResultRow) -> Correction {
        Correction {
            board_version: result.board_version,
            correction: result.correction,
            digest: result.digest.clone(),
            game: result.board.game.clone(),
            mode: result.board.mode.clone(),
            scope: result.board.scope.clone(),
            season: result.board.season.clone(),
        }
    }
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
    pub(crate) fn kind(&self) -> &'static str {
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
