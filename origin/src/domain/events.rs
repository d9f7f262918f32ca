//! Events, before and after the log: a [`NewEvent`] is what a client submitted, validated, and has
//! no `seq`; the writer numbers it into a [`LoggedEvent`] (`seq`, `received_at`, an `EventStatus`),
//! which is what the log holds. Two types, not one record with placeholder values, so that code
//! that needs a `seq` cannot be handed an event without one.
//!
//! `received_at` is set once, by the writer when it numbers the event, because lateness is decided
//! from it. `EventStatus` is stored as text and parsed once, at the store's edge.

use std::fmt;

use standings_core::{BoardId, IdError, ScoreEvent};

/// A validated event that is not in the log yet: no `seq`, no status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewEvent {
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
    pub scopes: Vec<String>,
    /// The value.
    pub value: i64,
    /// When it was achieved (ms).
    pub achieved_at: i64,
    /// The name of the token that submitted it.
    pub source: String,
    /// The JSON object the game attached, as sent (checked against the boards' caps); empty
    /// once an erasure rewrote it.
    pub metadata: Option<Box<str>>,
    /// Its values of the boards' event dimensions, as the core holds them (`platform:ios`).
    pub segments: Option<Box<str>>,
}

/// Whether two events' metadata agree. Erased metadata (empty) agrees with any, so that a retry
/// after an erasure is still told a duplicate, not a conflict, and learns nothing of what was
/// erased.
fn same_metadata(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(""), Some(_)) | (Some(_), Some("")) => true,
        _ => a == b,
    }
}

impl NewEvent {
    /// Whether two events carry the same payload (everything but `source`, which may differ
    /// between a first submission and its retry).
    pub(crate) fn same_payload(&self, other: &NewEvent) -> bool {
        self.game == other.game
            && self.event_id == other.event_id
            && self.player_id == other.player_id
            && self.mode == other.mode
            && self.season == other.season
            && self.scopes == other.scopes
            && self.value == other.value
            && self.achieved_at == other.achieved_at
            && same_metadata(self.metadata.as_deref(), other.metadata.as_deref())
            && self.segments == other.segments
    }

    /// The boards this event feeds.
    /// O(scopes).
    pub(crate) fn boards(&self) -> impl Iterator<Item = BoardId> + '_ {
        self.scopes.iter().map(|scope| BoardId {
            game: self.game.clone(),
            mode: self.mode.clone(),
            season: self.season.clone(),
            scope: scope.clone(),
        })
    }
}

/// An event of the log: numbered by the writer, with its status there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedEvent {
    /// Commit order.
    pub seq: i64,
    /// Applied, or late (waiting for a decision, or decided).
    pub status: EventStatus,
    /// When the writer took it (ms): what tells whether a period had closed when it arrived.
    /// Set once, by the writer, when it numbers the event.
    pub(crate) received_at: i64,
    /// The event as it was submitted.
    pub(crate) event: NewEvent,
}

impl std::ops::Deref for LoggedEvent {
    type Target = NewEvent;

    /// A logged event reads as the event it logs (`e.game`, `e.boards()`).
    fn deref(&self) -> &NewEvent {
        &self.event
    }
}

impl LoggedEvent {
    /// The core's view of the event (its ids were validated before it was logged, so an error
    /// means the log holds what no version of the service wrote).
    pub(crate) fn core_event(&self) -> Result<ScoreEvent, InvalidLoggedEvent> {
        ScoreEvent::new(&self.event_id, &self.player_id, self.value, self.achieved_at)
            .map(|e| {
                e.with_metadata(self.metadata.clone())
                    .with_segments(self.segments.clone())
            })
            .map_err(|source| InvalidLoggedEvent {
                seq: self.seq,
                event_id: self.event_id.clone(),
                source,
            })
    }
}

/// A logged event the core refuses as an event.
#[derive(Debug, thiserror::Error)]
#[error("stored event {event_id} (seq {seq}) is invalid")]
pub struct InvalidLoggedEvent {
    /// Its `seq`.
    pub(crate) seq: i64,
    /// Its id.
    pub(crate) event_id: String,
    /// What the core found wrong.
    pub(crate) source: IdError,
}

/// Where an event stands in the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventStatus {
    /// Applied to every board it feeds.
    Applied,
    /// Late somewhere (a closed period, a season no longer active), waiting for a decision.
    Late,
    /// Late, and applied by a moderator's decision.
    LateApplied,
    /// Late, and rejected by a moderator's decision.
    LateRejected,
}

impl EventStatus {
    /// The stored (and answered) text: `APPLIED`, `LATE`, `LATE_APPLIED` or `LATE_REJECTED`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventStatus::Applied => "APPLIED",
            EventStatus::Late => "LATE",
            EventStatus::LateApplied => "LATE_APPLIED",
            EventStatus::LateRejected => "LATE_REJECTED",
        }
    }

    /// The status a stored text names, if any.
    pub(crate) fn parse(text: &str) -> Option<EventStatus> {
        Some(match text {
            "APPLIED" => EventStatus::Applied,
            "LATE" => EventStatus::Late,
            "LATE_APPLIED" => EventStatus::LateApplied,
            "LATE_REJECTED" => EventStatus::LateRejected,
            _ => return None,
        })
    }
}

impl fmt::Display for EventStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for EventStatus {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_reads_back_from_its_text() {
        for status in [
            EventStatus::Applied,
            EventStatus::Late,
            EventStatus::LateApplied,
            EventStatus::LateRejected,
        ] {
            assert_eq!(EventStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(EventStatus::parse("late"), None);
    }
}
