//! Events of the log.

use standings_core::BoardId;

/// One event as stored in the log. Its fields are in the order of `EVENT_COLUMNS` (the store's), which is
/// how the store's `events_after` reads a packed page: an array of the columns per event.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
pub struct StoredEvent {
    /// Commit order.
    pub seq: i64,
    /// The game.
    pub game: String,
    /// Unique per game.
    pub event_id: String,
    /// The player.
    pub player_id: String,
    /// The game mode.
    pub mode: String,
    /// The season.
    pub season: String,
    /// The scopes it feeds, in the order given (stored comma-separated).
    #[serde(deserialize_with = "scopes_from_text")]
    pub scopes: Vec<String>,
    /// The value.
    pub value: i64,
    /// When it was achieved (ms).
    pub achieved_at: i64,
    /// When it was received (ms).
    pub received_at: i64,
    /// The name of the token that submitted it.
    pub source: String,
    /// `APPLIED`, or `LATE` (waiting for a decision), `LATE_APPLIED`, `LATE_REJECTED`.
    pub status: String,
}

impl StoredEvent {
    /// Whether two events carry the same payload (everything but `seq`, `received_at` and
    /// `source`, which differ between a first submission and its retry).
    pub fn same_payload(&self, other: &StoredEvent) -> bool {
        self.game == other.game
            && self.event_id == other.event_id
            && self.player_id == other.player_id
            && self.mode == other.mode
            && self.season == other.season
            && self.scopes == other.scopes
            && self.value == other.value
            && self.achieved_at == other.achieved_at
    }

    /// The boards this event feeds.
    pub fn boards(&self) -> impl Iterator<Item = BoardId> + '_ {
        self.scopes.iter().map(|scope| BoardId {
            game: self.game.clone(),
            mode: self.mode.clone(),
            season: self.season.clone(),
            scope: scope.clone(),
        })
    }
}

pub(crate) fn scopes_from_text<'de, D: serde::Deserializer<'de>>(text: D) -> Result<Vec<String>, D::Error> {
    let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(text)?;
    Ok(text.split(',').map(str::to_string).collect())
}
