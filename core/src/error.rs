//! The core's errors: small enums, each case specific enough to become a precise API error.

use core::fmt;

/// An id (player, event, or a part of a board id) that is not acceptable.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdError {
    /// The id is empty.
    Empty {
        /// Which id.
        what: &'static str,
    },
    /// The id is longer than allowed.
    TooLong {
        /// Which id.
        what: &'static str,
        /// Its length in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// The id holds a control character.
    ControlCharacter {
        /// Which id.
        what: &'static str,
        /// The byte offset of the character.
        position: usize,
    },
    /// The id holds a character outside its alphabet.
    InvalidCharacter {
        /// Which id.
        what: &'static str,
        /// The byte offset of the character.
        position: usize,
    },
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdError::Empty { what } => write!(f, "{what} must not be empty"),
            IdError::TooLong { what, len, max } => {
                write!(f, "{what} is {len} bytes long; at most {max} are allowed")
            }
            IdError::ControlCharacter { what, position } => {
                write!(f, "{what} holds a control character at byte {position}")
            }
            IdError::InvalidCharacter { what, position } => write!(
                f,
                "{what} holds a character outside letters, digits and -_.: at byte {position}"
            ),
        }
    }
}

impl core::error::Error for IdError {}

/// The board cannot hold more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CapacityError {
    /// More than `u32::MAX - 1` distinct players.
    Players,
    /// More than 4 GiB of player id bytes.
    PlayerIdBytes,
}

impl fmt::Display for CapacityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CapacityError::Players => f.write_str("the board holds the most players one board can hold"),
            CapacityError::PlayerIdBytes => {
                f.write_str("the board holds 4 GiB of player ids, the most it can hold")
            }
        }
    }
}

impl core::error::Error for CapacityError {}

/// An event that a board refuses. Nothing changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApplyError {
    /// The value is outside the board's range.
    ValueOutOfRange {
        /// The event's value.
        value: i64,
        /// The board's least value.
        min: i64,
        /// The board's greatest value.
        max: i64,
    },
    /// A cumulative total would leave the `i64` range.
    ValueOverflow,
    /// The board is full.
    Capacity(CapacityError),
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApplyError::ValueOutOfRange { value, min, max } => {
                write!(f, "value {value} is outside the board's range {min}..={max}")
            }
            ApplyError::ValueOverflow => f.write_str("the cumulative total would overflow a 64-bit integer"),
            ApplyError::Capacity(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl core::error::Error for ApplyError {}

impl From<CapacityError> for ApplyError {
    fn from(e: CapacityError) -> Self {
        ApplyError::Capacity(e)
    }
}

/// A query that cannot be answered as asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum QueryError {
    /// The cursor names a `board_version` the board no longer holds (older than its delta
    /// history) or does not hold yet (newer than the board). Paging must restart from the top;
    /// the origin answers 410 `STALE_CURSOR`.
    StaleCursor {
        /// The version the cursor (or the query) names.
        cursor_version: u64,
        /// The oldest version the board can still answer.
        oldest_held: u64,
        /// The board's current version.
        board_version: u64,
    },
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryError::StaleCursor {
                cursor_version,
                oldest_held,
                board_version,
            } => write!(
                f,
                "the cursor was made at board_version {cursor_version}; this board holds versions {oldest_held} to {board_version} only"
            ),
        }
    }
}

impl core::error::Error for QueryError {}

/// A delta that a client view refuses; it must resync from a snapshot instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeltaError {
    /// The delta does not follow the view's current version.
    VersionGap {
        /// The view's current version.
        view_version: u64,
        /// The version the delta starts from.
        delta_base: u64,
    },
    /// The delta's `before` does not match what the view holds for the player.
    BeforeMismatch,
    /// The view is full.
    Capacity(CapacityError),
}

impl fmt::Display for DeltaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeltaError::VersionGap {
                view_version,
                delta_base,
            } => write!(
                f,
                "the delta starts at board_version {delta_base} but the view is at {view_version}; resync from a snapshot"
            ),
            DeltaError::BeforeMismatch => {
                f.write_str("the delta's previous standing does not match the view; resync from a snapshot")
            }
            DeltaError::Capacity(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl core::error::Error for DeltaError {}

/// Bytes that are not a valid snapshot part, cursor or delta. Decoding never panics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The bytes do not start with a known format version.
    UnsupportedFormat {
        /// The version found, if one could be read.
        found: Option<u16>,
    },
    /// The bytes are not a well-formed encoding.
    Malformed,
    /// Bytes follow the encoded value.
    TrailingBytes,
    /// A chunk's content hash is not the one its manifest names.
    HashMismatch,
    /// The content is well-formed but inconsistent (out of order, wrong counts, bad ids).
    Inconsistent(&'static str),
    /// A well-formed cursor made for another board or another period of it.
    OtherBoard,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::UnsupportedFormat { found: Some(v) } => write!(f, "unsupported format version {v}"),
            DecodeError::UnsupportedFormat { found: None } => f.write_str("no format version found"),
            DecodeError::Malformed => f.write_str("malformed encoding"),
            DecodeError::TrailingBytes => f.write_str("unexpected bytes after the encoded value"),
            DecodeError::HashMismatch => f.write_str("content hash does not match the manifest"),
            DecodeError::Inconsistent(what) => write!(f, "inconsistent content: {what}"),
            DecodeError::OtherBoard => f.write_str("the cursor was made for another board or period"),
        }
    }
}

impl core::error::Error for DecodeError {}
