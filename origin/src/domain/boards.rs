//! Board definitions as the origin keeps them.

use standings_core::{BoardId, BoardRules};

/// A board as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardDef {
    /// The board.
    pub id: BoardId,
    /// Its fixed rules.
    pub(crate) rules: BoardRules,
    /// Its period kinds (`all_time`, `daily`, `weekly`, `monthly`), in canonical order.
    pub(crate) periods: Vec<String>,
    /// How long after a period's end it still takes events.
    pub(crate) grace_seconds: i64,
    /// The IANA time zone its periods follow.
    pub(crate) timezone: String,
    /// The largest metadata its events may carry, 0 (none) to 256 bytes.
    pub(crate) metadata_max_bytes: i64,
}
