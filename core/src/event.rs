//! Verified score events and the ids they carry.

use alloc::boxed::Box;
use alloc::string::String;
use core::fmt;

use serde::{Deserialize, Serialize};

use crate::error::IdError;

/// The longest player id or event id accepted, in bytes.
pub const MAX_ID_BYTES: usize = 128;

/// Checks a player or event id: 1 to [`MAX_ID_BYTES`] bytes of UTF-8 with no control
/// characters. Ids compare as byte strings.
pub fn check_id(what: &'static str, id: &str) -> Result<(), IdError> {
    if id.is_empty() {
        return Err(IdError::Empty { what });
    }
    if id.len() > MAX_ID_BYTES {
        return Err(IdError::TooLong {
            what,
            len: id.len(),
            max: MAX_ID_BYTES,
        });
    }
    // Most ids are ASCII: one pass over the bytes instead of decoding characters.
    if id.is_ascii() {
        return match id.bytes().position(|b| b < 0x20 || b == 0x7f) {
            Some(position) => Err(IdError::ControlCharacter { what, position }),
            None => Ok(()),
        };
    }
    if let Some((position, _)) = id.char_indices().find(|(_, c)| c.is_control()) {
        return Err(IdError::ControlCharacter { what, position });
    }
    Ok(())
}

/// A player id: 1 to 128 bytes of UTF-8 with no control characters.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct PlayerId(String);

// Written out rather than derived so that `clone_from` reuses the id's buffer (the derive only
// writes `clone`); a board's full delta history recycles its oldest entry that way.
impl Clone for PlayerId {
    fn clone(&self) -> Self {
        PlayerId(self.0.clone())
    }

    fn clone_from(&mut self, source: &Self) {
        self.0.clone_from(&source.0);
    }
}

impl PlayerId {
    /// Validates and wraps a player id.
    pub fn new(id: &str) -> Result<PlayerId, IdError> {
        check_id("player_id", id)?;
        Ok(PlayerId(id.into()))
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Wraps an id a board already holds: every id it holds passed [`check_id`] on the way
    /// in, so it is not checked again.
    pub(crate) fn held(id: &str) -> PlayerId {
        PlayerId(id.into())
    }
}

impl fmt::Display for PlayerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for PlayerId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        check_id("player_id", &raw).map_err(serde::de::Error::custom)?;
        Ok(PlayerId(raw))
    }
}

/// An event id, unique per game. Uniqueness is the caller's duty: the core applies whatever it
/// is given, so the origin enforces it durably before an event reaches a board.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct EventId(String);

impl EventId {
    /// Validates and wraps an event id.
    pub fn new(id: &str) -> Result<EventId, IdError> {
        check_id("event_id", id)?;
        Ok(EventId(id.into()))
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for EventId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        check_id("event_id", &raw).map_err(serde::de::Error::custom)?;
        Ok(EventId(raw))
    }
}

/// A verified score event for one board: a game server's word that `player` achieved `value`
/// at `achieved_at` (ms since the Unix epoch).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ScoreEvent {
    /// Unique per game; a retry carries the same id.
    pub event_id: EventId,
    /// Who achieved it.
    pub player: PlayerId,
    /// The value, in the board's units (points, or milliseconds for `fastest`).
    pub value: i64,
    /// When it was achieved, in ms since the Unix epoch.
    pub achieved_at: i64,
    /// A JSON object the game attached (a character, a car, a replay id), as sent; the origin
    /// checked it. Empty once erased: the event still had metadata, which no answer shows.
    #[serde(default)]
    pub metadata: Option<Box<str>>,
    /// The event's values of the board's event dimensions, as `platform:ios` pairs sorted by
    /// dimension and joined by `,`; the origin checked them against the definition.
    #[serde(default)]
    pub segments: Option<Box<str>>,
}

impl ScoreEvent {
    /// Builds an event, validating both ids.
    pub fn new(event_id: &str, player: &str, value: i64, achieved_at: i64) -> Result<ScoreEvent, IdError> {
        Ok(ScoreEvent {
            event_id: EventId::new(event_id)?,
            player: PlayerId::new(player)?,
            value,
            achieved_at,
            metadata: None,
            segments: None,
        })
    }

    /// The same event carrying `metadata`, a JSON object the caller has checked. O(1).
    pub fn with_metadata(mut self, metadata: Option<Box<str>>) -> ScoreEvent {
        self.metadata = metadata;
        self
    }

    /// The same event carrying event dimension values (`platform:ios`, as
    /// [`ScoreEvent::segments`] says), checked by the caller. O(1).
    pub fn with_segments(mut self, segments: Option<Box<str>>) -> ScoreEvent {
        self.segments = segments;
        self
    }

    /// Whether the event brings anything an entry holds besides its standing. O(1).
    pub(crate) fn has_extras(&self) -> bool {
        self.metadata.is_some() || self.segments.is_some()
    }
}
