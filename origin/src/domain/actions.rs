//! Actions and finalized results, as logged.

use standings_core::BoardId;

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
