//! Live views: what one subscriber watches on a board, the view's entries at one version, and
//! the net change of those entries between two versions.
//!
//! A [`View`] is parsed once from the subscribe query (`top:N`, `around:PLAYER:R`,
//! `player:PLAYER`). [`ViewState::read`] reads it from a [`Board`] with the same calls the read
//! API makes, so its entries are exactly what a fresh read returns at that `board_version`.
//! [`ViewDelta::between`] gives the net change from one state to a later one, and
//! [`ViewState::apply`] follows it, refusing a delta that does not start at the state's version.
//! A view is at most 101 entries (`top:100`, or `around:P:25` with 51), so every operation here
//! is O(k log k) in the view's size and never touches the rest of the board.
//!
//! Period instances. A board keeps one instance per period (all time, and each day, week or
//! month it keeps), each with its own versions from 1, so a version names a view's state only
//! together with its instance's `period_key`. A [`ViewState`] and every [`ViewDelta`] carry it,
//! and [`ViewState::apply`] refuses a delta of another instance: a client that held yesterday's
//! view at version 3 can never chain today's delta from 3. [`Position`] is the pair as it
//! travels (`PERIOD_KEY:VERSION`, the SSE `id:`).
//!
//! Versions with no net change. A delta is emitted only when the entries changed:
//! [`ViewDelta::between`] is `None` when both states hold the same entries, whatever their
//! versions, so a window in which players moved and came back sends nothing. A subscriber's
//! version is therefore the `board_version` of the last change *of its view*, which may lag the
//! board. That is enough for exactness: its entries equal a fresh read of the view at every
//! board version from its own up to (not including) the next delta's `board_version`, because
//! nothing in the view changed net in between. The driver keeps, per view, the state it last
//! sent and computes the next delta from it (not from the board's latest version), so the next
//! delta's `base_version` is exactly the version every subscriber holds; a new subscriber gets
//! that same last-sent state as its snapshot, so it chains with the shared deltas. A subscriber
//! coming back with `since_version = N` held the view as it was at N; [`ViewState::read_at`]
//! reads exactly that while the board still holds N, and one delta from it catches up.
//!
//! Rank shifts. Every entry whose rank, value or time differs is sent in full: when a player
//! enters `top:100` at rank 1, the 99 below it move down one and the delta carries 100 entries
//! (and one player who left), about as large as a snapshot. A compact "shift" encoding would need
//! the client to know the board's order; correctness and one simple apply rule were chosen
//! over it, and such deltas cost at most one snapshot's bytes.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::board::Board;
use crate::error::{IdError, QueryError};
use crate::event::PlayerId;
use crate::index::RankedEntry;
use crate::profile::{Audience, EntryInfo};
use crate::segments::{SegmentEntry, SegmentKey};

/// The period key of a board's all-time instance, the one instance it never leaves.
pub const ALL_TIME_KEY: &str = "all_time";

/// The most entries a `top` view holds.
pub const MAX_TOP_LIMIT: u16 = 100;

/// The widest radius of an `around` view.
pub const MAX_AROUND_RADIUS: u16 = 25;

/// What a live subscriber watches on one board.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum View {
    /// The first `limit` entries (1 to [`MAX_TOP_LIMIT`]).
    Top {
        /// How many entries.
        limit: u16,
    },
    /// The ranks `rank - radius ..= rank + radius` around a player, clipped at the ends; empty
    /// while the player is unranked.
    Around {
        /// The player in the middle.
        player: PlayerId,
        /// How many ranks on each side (0 to [`MAX_AROUND_RADIUS`]).
        radius: u16,
    },
    /// One player's entry, or none while the player is unranked.
    Player {
        /// The player.
        player: PlayerId,
    },
    /// One of the others within a segment of the board (`in:country:DE:top:10`): ranks
    /// counted among the segment's members, each entry with its rank on the whole board
    /// (`docs/segments.md`).
    In {
        /// The segment.
        segment: Segment,
        /// The view within it: `Top`, `Around` or `Player`.
        view: alloc::boxed::Box<View>,
    },
}

/// A segment a view is within, owned: `country:DE`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Segment {
    /// The dimension (`country`).
    pub dimension: String,
    /// The value (`DE`).
    pub value: String,
}

impl Segment {
    /// The segment as the board's reads name it. O(1).
    pub fn key(&self) -> SegmentKey<'_> {
        SegmentKey {
            dimension: &self.dimension,
            value: &self.value,
        }
    }
}

impl View {
    /// This view within `segment` (a view already within one stays within its own). O(1).
    pub fn within(self, segment: Segment) -> View {
        match self {
            View::In { .. } => self,
            view => View::In {
                segment,
                view: alloc::boxed::Box::new(view),
            },
        }
    }

    /// The segment the view is within, if any. O(1).
    pub fn segment(&self) -> Option<&Segment> {
        match self {
            View::In { segment, .. } => Some(segment),
            _ => None,
        }
    }
}

/// A view query that cannot be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ViewError {
    /// The text does not start with `top:`, `around:` or `player:`.
    UnknownKind,
    /// A part of the view is missing (e.g. `around:P` without a radius).
    Missing {
        /// Which part.
        what: &'static str,
    },
    /// A number is not plain decimal digits.
    NotANumber {
        /// Which number.
        what: &'static str,
    },
    /// A number is outside its range.
    OutOfRange {
        /// Which number.
        what: &'static str,
        /// The least allowed.
        min: u16,
        /// The greatest allowed.
        max: u16,
    },
    /// The player id is not valid.
    Player(IdError),
}

impl fmt::Display for ViewError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ViewError::UnknownKind => f.write_str("the view must be top:N, around:PLAYER:R or player:PLAYER"),
            ViewError::Missing { what } => write!(f, "the view is missing its {what}"),
            ViewError::NotANumber { what } => write!(f, "the view's {what} must be a decimal number"),
            ViewError::OutOfRange { what, min, max } => {
                write!(f, "the view's {what} must be from {min} to {max}")
            }
            ViewError::Player(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl core::error::Error for ViewError {}

/// Parses plain decimal digits (no sign, no spaces) within `min..=max`.
fn parse_bounded(what: &'static str, text: &str, min: u16, max: u16) -> Result<u16, ViewError> {
    if text.is_empty() {
        return Err(ViewError::Missing { what });
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ViewError::NotANumber { what });
    }
    // Digits only, so a parse failure is an overflow: out of range like any too-large number.
    match text.parse::<u16>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(ViewError::OutOfRange { what, min, max }),
    }
}

fn parse_player(text: &str) -> Result<PlayerId, ViewError> {
    if text.is_empty() {
        return Err(ViewError::Missing { what: "player" });
    }
    PlayerId::new(text).map_err(ViewError::Player)
}

impl FromStr for View {
    type Err = ViewError;

    /// Parses `top:N`, `around:PLAYER:R` or `player:PLAYER`, each optionally within a segment
    /// as `in:DIMENSION:VALUE:` before it. A player id may itself hold `:`, so the radius is
    /// what follows the last one; a segment's dimension and value never do. O(length).
    fn from_str(text: &str) -> Result<View, ViewError> {
        if let Some(rest) = text.strip_prefix("in:") {
            let mut parts = rest.splitn(3, ':');
            let (Some(dimension), Some(value), Some(view)) = (parts.next(), parts.next(), parts.next())
            else {
                return Err(ViewError::Missing { what: "segment" });
            };
            if dimension.is_empty() || value.is_empty() {
                return Err(ViewError::Missing { what: "segment" });
            }
            let view: View = view.parse()?;
            if view.segment().is_some() {
                return Err(ViewError::UnknownKind);
            }
            return Ok(view.within(Segment {
                dimension: dimension.into(),
                value: value.into(),
            }));
        }
        if let Some(limit) = text.strip_prefix("top:") {
            let limit = parse_bounded("top limit", limit, 1, MAX_TOP_LIMIT)?;
            Ok(View::Top { limit })
        } else if let Some(rest) = text.strip_prefix("around:") {
            let (player, radius) = rest
                .rsplit_once(':')
                .ok_or(ViewError::Missing { what: "radius" })?;
            let radius = parse_bounded("around radius", radius, 0, MAX_AROUND_RADIUS)?;
            Ok(View::Around {
                player: parse_player(player)?,
                radius,
            })
        } else if let Some(player) = text.strip_prefix("player:") {
            Ok(View::Player {
                player: parse_player(player)?,
            })
        } else {
            Err(ViewError::UnknownKind)
        }
    }
}

impl fmt::Display for View {
    /// The query form, which parses back to the same view.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            View::Top { limit } => write!(f, "top:{limit}"),
            View::Around { player, radius } => write!(f, "around:{player}:{radius}"),
            View::Player { player } => write!(f, "player:{player}"),
            View::In { segment, view } => write!(f, "in:{}:{}:{view}", segment.dimension, segment.value),
        }
    }
}

/// A view travels as its query text (`"top:10"`), parsed and checked on the way in.
impl Serialize for View {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for View {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = alloc::string::String::deserialize(deserializer)?;
        raw.parse().map_err(serde::de::Error::custom)
    }
}

/// One entry of a view, owned, in the read API's entry fields. `achieved_at` stays ms since the
/// Unix epoch here; the origin writes it as RFC 3339 text, as its reads do.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ViewEntry {
    /// Unique rank in the board's total order.
    pub rank: u64,
    /// The player.
    pub player_id: PlayerId,
    /// The aggregate value.
    pub value: i64,
    /// When it was achieved, in ms since the Unix epoch.
    pub achieved_at: i64,
    /// The display name, when set (public form: live views are public).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// The country, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    /// The metadata JSON object as text, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<String>,
    /// In a view within a segment, the rank on the whole board (`rank` is within the segment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global_rank: Option<u64>,
}

impl ViewEntry {
    fn of(entry: &RankedEntry<'_>) -> ViewEntry {
        let info = entry.info.for_audience(Audience::Public);
        ViewEntry {
            rank: entry.rank,
            player_id: PlayerId::held(entry.player),
            value: entry.value,
            achieved_at: entry.achieved_at,
            display_name: info.display_name.map(Into::into),
            country: info.country.map(Into::into),
            metadata: info.metadata.map(Into::into),
            global_rank: None,
        }
    }

    fn of_segment(entry: &SegmentEntry<'_>) -> ViewEntry {
        ViewEntry {
            global_rank: Some(entry.global_rank),
            ..ViewEntry::of(&entry.entry)
        }
    }

    /// The entry's extras, borrowed. O(1).
    pub fn info(&self) -> EntryInfo<'_> {
        EntryInfo {
            display_name: self.display_name.as_deref(),
            country: self.country.as_deref(),
            metadata: self.metadata.as_deref(),
            segments: None,
            anonymous: false,
        }
    }
}

/// A view's entries within a segment, with the segment reads the read API makes. O(log n + k)
/// for k entries.
fn read_within(board: &Board, segment: &SegmentKey<'_>, view: &View) -> Vec<ViewEntry> {
    match view {
        View::Top { limit } => match board.segment_top(segment, usize::from(*limit), None) {
            Ok(page) => page.entries.iter().map(ViewEntry::of_segment).collect(),
            Err(_) => Vec::new(),
        },
        View::Around { player, radius } => board
            .segment_nearby(segment, player.as_str(), u64::from(*radius))
            .map(|window| window.iter().map(ViewEntry::of_segment).collect())
            .unwrap_or_default(),
        View::Player { player } => board
            .segment_rank(segment, player.as_str())
            .map(|found| {
                alloc::vec![ViewEntry {
                    global_rank: Some(found.global_rank),
                    ..ViewEntry::of(&found.within.entry)
                }]
            })
            .unwrap_or_default(),
        // Parsing never nests segments.
        View::In { .. } => Vec::new(),
    }
}

/// A view's entries at one `board_version`, in rank order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewState {
    /// The period instance the view is of (`all_time`, `2026-10-13`, `2026-W42`, `2026-10`).
    pub period_key: String,
    /// The version the entries were read at (or, after [`ViewState::apply`], the version of the
    /// last delta: the entries equal a fresh read at every version until the next delta).
    pub board_version: u64,
    /// The entries, in rank order; empty when the view holds nothing (an empty board, or an
    /// unranked player's `around` or `player` view).
    pub entries: Vec<ViewEntry>,
}

impl ViewState {
    /// Reads the view from `board`, the instance `period_key`, at its current version, with the
    /// read API's own calls: [`Board::top`], [`Board::nearby`] and [`Board::player_rank`].
    /// O(log n + k) for k entries.
    pub fn read(board: &Board, view: &View, period_key: &str) -> ViewState {
        let entries = match view {
            View::In { segment, view } => read_within(board, &segment.key(), view),
            View::Top { limit } => match board.top(usize::from(*limit), None) {
                Ok(page) => page.entries.iter().map(ViewEntry::of).collect(),
                // Without a cursor the page is read at the current version, which is always held.
                Err(_) => Vec::new(),
            },
            View::Around { player, radius } => board
                .nearby(player.as_str(), u64::from(*radius))
                .map(|window| window.iter().map(ViewEntry::of).collect())
                .unwrap_or_default(),
            View::Player { player } => board
                .player_rank(player.as_str())
                .map(|found| alloc::vec![ViewEntry::of(&found.entry)])
                .unwrap_or_default(),
        };
        ViewState {
            period_key: period_key.into(),
            board_version: board.version(),
            entries,
        }
    }

    /// Reads the view as it was at `board_version`, which the board must still hold (from
    /// [`Board::oldest_held_version`] to [`Board::version`]; otherwise
    /// [`QueryError::StaleCursor`]): what a subscriber coming back with `since_version` held,
    /// so that one delta from it to the current state catches the subscriber up. Equal to
    /// [`ViewState::read`] at the current version. O(c log c + log n + k) for the c deltas since
    /// and k entries (see [`Board::top_at`] and [`Board::nearby_at`]).
    pub fn read_at(
        board: &Board,
        view: &View,
        period_key: &str,
        board_version: u64,
    ) -> Result<ViewState, QueryError> {
        let entries = match view {
            // A segment keeps no history: only its current version is read.
            View::In { .. } if board_version == board.version() => {
                return Ok(ViewState::read(board, view, period_key));
            }
            View::In { .. } => {
                return Err(QueryError::StaleCursor {
                    cursor_version: board_version,
                    oldest_held: board.version(),
                    board_version: board.version(),
                });
            }
            View::Top { limit } => board
                .top_at(board_version, usize::from(*limit))?
                .entries
                .iter()
                .map(ViewEntry::of)
                .collect(),
            View::Around { player, radius } => board
                .nearby_at(board_version, player.as_str(), u64::from(*radius))?
                .map(|window| window.iter().map(ViewEntry::of).collect())
                .unwrap_or_default(),
            View::Player { player } => board
                .nearby_at(board_version, player.as_str(), 0)?
                .map(|own| own.iter().map(ViewEntry::of).collect())
                .unwrap_or_default(),
        };
        Ok(ViewState {
            period_key: period_key.into(),
            board_version,
            entries,
        })
    }

    /// Applies a delta from [`ViewDelta::between`]. Refuses, changing nothing, a delta of another
    /// period instance, one whose `base_version` is not this state's version, whose `board_version` is not later, or that
    /// does not fit the entries held (a player who left but is not held, or entries whose ranks
    /// collide). Afterwards the state equals [`ViewState::read`] at the delta's version.
    /// An empty delta from this state's version to itself is accepted and changes nothing: it
    /// is how a subscriber coming back at the view's current version is told it is up to date.
    /// O(k log k) for k entries held and sent.
    pub fn apply(&mut self, delta: &ViewDelta) -> Result<(), ViewDeltaError> {
        if delta.period_key != self.period_key {
            return Err(ViewDeltaError::OtherInstance);
        }
        if delta.base_version != self.board_version {
            return Err(ViewDeltaError::VersionGap {
                view_version: self.board_version,
                delta_base: delta.base_version,
            });
        }
        if delta.board_version == delta.base_version && delta.changed.is_empty() && delta.left.is_empty() {
            return Ok(());
        }
        if delta.board_version <= delta.base_version {
            return Err(ViewDeltaError::NotForward {
                base_version: delta.base_version,
                board_version: delta.board_version,
            });
        }
        // A view holds at most 101 entries, so plain scans beat a map, and keep the browser
        // package's WebAssembly, which applies deltas with this, small.
        let mut entries: Vec<ViewEntry> = self.entries.clone();
        for player in &delta.left {
            let Some(at) = entries.iter().position(|e| e.player_id == *player) else {
                return Err(ViewDeltaError::Inconsistent(
                    "a player who left is not in the view",
                ));
            };
            entries.swap_remove(at);
        }
        for entry in &delta.changed {
            if delta.left.contains(&entry.player_id) {
                return Err(ViewDeltaError::Inconsistent("a player both left and changed"));
            }
            match entries.iter_mut().find(|e| e.player_id == entry.player_id) {
                Some(held) => *held = entry.clone(),
                None => entries.push(entry.clone()),
            }
        }
        entries.sort_unstable_by_key(|e| e.rank);
        if entries.windows(2).any(|pair| pair[0].rank == pair[1].rank) {
            return Err(ViewDeltaError::Inconsistent("two entries hold the same rank"));
        }
        self.entries = entries;
        self.board_version = delta.board_version;
        Ok(())
    }
}

/// The net change of a view from `base_version` to `board_version`: every entry that entered,
/// moved (its rank changed, also when only others moved around it) or changed value or time,
/// in full and in rank order, and the players who left. Entries that did not change are not sent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewDelta {
    /// The period instance of the view it changes.
    pub period_key: String,
    /// The version the delta applies to.
    pub base_version: u64,
    /// The version it brings the view to.
    pub board_version: u64,
    /// The new entries of players who entered or changed, in rank order.
    pub changed: Vec<ViewEntry>,
    /// The players who were in the view at `base_version` and are not at `board_version`, in
    /// id order.
    pub left: Vec<PlayerId>,
}

impl ViewDelta {
    /// The net change from `base` to the later state `next` of the same view of the same
    /// instance, or `None` when both hold the same entries (whatever their versions; see the
    /// module doc for why a subscriber need not follow versions that changed nothing).
    /// O(k log k).
    pub fn between(base: &ViewState, next: &ViewState) -> Option<ViewDelta> {
        debug_assert_eq!(base.period_key, next.period_key, "a delta within one instance");
        let before: BTreeMap<&PlayerId, &ViewEntry> =
            base.entries.iter().map(|e| (&e.player_id, e)).collect();
        let after: BTreeMap<&PlayerId, &ViewEntry> = next.entries.iter().map(|e| (&e.player_id, e)).collect();
        let changed: Vec<ViewEntry> = next
            .entries
            .iter()
            .filter(|e| before.get(&e.player_id) != Some(e))
            .cloned()
            .collect();
        let left: Vec<PlayerId> = before
            .keys()
            .filter(|p| !after.contains_key(*p))
            .map(|p| (*p).clone())
            .collect();
        if changed.is_empty() && left.is_empty() {
            return None;
        }
        Some(ViewDelta {
            period_key: next.period_key.clone(),
            base_version: base.board_version,
            board_version: next.board_version,
            changed,
            left,
        })
    }

    /// A delta that changes no entry and only moves a view held at `base` to `board_version`:
    /// what brings subscribers whose view did not change to the version a newer state was read
    /// at, so that they and that state chain with the same next delta. O(1) but for the key.
    pub fn advance(base: &ViewState, board_version: u64) -> ViewDelta {
        ViewDelta {
            period_key: base.period_key.clone(),
            base_version: base.board_version,
            board_version,
            changed: Vec::new(),
            left: Vec::new(),
        }
    }
}

/// What a new subscriber is sent first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum First {
    /// The whole view at `last`.
    Snapshot,
    /// One delta from the subscriber's version to `last` (empty when the view did not change).
    Delta(ViewDelta),
}

/// The first message for a subscriber holding the view at `since_version` (or nothing), given
/// the state last sent to the topic and a reader of the view at an older version (`None` when
/// the board no longer holds it). The retained history decides, never the time away:
/// - no `since_version`, or one the topic has not reached (`N > last`): a snapshot;
/// - `N == last`: an empty delta from `N` to `N`, as nothing is owed;
/// - `N < last` and the board still holds `N`: one delta from the view at `N` to `last`
///   (empty when nothing in the view changed);
/// - `N < last` and the history is gone: a snapshot.
///
/// O(one read of the view at N) when a delta is possible.
pub fn first_message(
    last: &ViewState,
    since_version: Option<u64>,
    read_at: impl FnOnce(u64) -> Option<ViewState>,
) -> First {
    let Some(since) = since_version else {
        return First::Snapshot;
    };
    let empty = |base_version| {
        First::Delta(ViewDelta {
            period_key: last.period_key.clone(),
            base_version,
            board_version: last.board_version,
            changed: Vec::new(),
            left: Vec::new(),
        })
    };
    if since == last.board_version {
        return empty(since);
    }
    if since > last.board_version {
        return First::Snapshot;
    }
    match read_at(since) {
        Some(held) => match ViewDelta::between(&held, last) {
            Some(delta) => First::Delta(delta),
            None => empty(since),
        },
        None => First::Snapshot,
    }
}

/// Where a live view stands: its period instance and version, as it travels in an SSE `id:`
/// and comes back as `Last-Event-ID` or `since_version` (`PERIOD_KEY:VERSION`). A bare
/// `VERSION` names no instance ([`Position::period_key`] is `None`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Position {
    /// The instance, when given.
    pub period_key: Option<String>,
    /// The version held.
    pub board_version: u64,
}

/// A position that cannot be parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PositionError {
    /// The version is not plain decimal digits within 64 bits.
    Version,
    /// The period key before the `:` is empty or holds a character no key holds.
    PeriodKey,
}

impl fmt::Display for PositionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PositionError::Version => {
                "expected PERIOD_KEY:VERSION (as the SSE id: gives it) or a bare board_version, the version a whole number"
            }
            PositionError::PeriodKey => {
                "the period key before the ':' must be one of the board's period keys (all_time, 2026-10-13, 2026-W42, 2026-10)"
            }
        })
    }
}

impl core::error::Error for PositionError {}

impl Position {
    /// Whether this position is of the instance `period_key`. A bare version is taken as of the
    /// instance only for `all_time`, the one instance a board never leaves; for a day, week or
    /// month it might be another instance's, so it is not. O(length of the key).
    pub fn is_of(&self, period_key: &str) -> bool {
        match &self.period_key {
            Some(key) => key == period_key,
            None => period_key == ALL_TIME_KEY,
        }
    }
}

impl FromStr for Position {
    type Err = PositionError;

    /// Parses `PERIOD_KEY:VERSION` or `VERSION`. O(length).
    fn from_str(text: &str) -> Result<Position, PositionError> {
        let (period_key, version) = match text.rsplit_once(':') {
            Some((key, version)) => (Some(key), version),
            None => (None, text),
        };
        if version.is_empty() || !version.bytes().all(|b| b.is_ascii_digit()) {
            return Err(PositionError::Version);
        }
        let board_version = version.parse().map_err(|_| PositionError::Version)?;
        if let Some(key) = period_key
            && (key.is_empty()
                || key.len() > 32
                || !key
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
        {
            return Err(PositionError::PeriodKey);
        }
        Ok(Position {
            period_key: period_key.map(Into::into),
            board_version,
        })
    }
}

impl fmt::Display for Position {
    /// `PERIOD_KEY:VERSION`, or the bare version when no key is known.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.period_key {
            Some(key) => write!(f, "{key}:{}", self.board_version),
            None => write!(f, "{}", self.board_version),
        }
    }
}

/// A view delta that a view state refuses; the subscriber must start over from a snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ViewDeltaError {
    /// The delta is of another period instance than the view (yesterday's, say).
    OtherInstance,
    /// The delta does not start at the state's version.
    VersionGap {
        /// The state's version.
        view_version: u64,
        /// The version the delta starts from.
        delta_base: u64,
    },
    /// The delta's `board_version` is not after its `base_version`.
    NotForward {
        /// The version the delta starts from.
        base_version: u64,
        /// The version it claims to reach.
        board_version: u64,
    },
    /// The delta does not fit the entries held.
    Inconsistent(&'static str),
}

impl fmt::Display for ViewDeltaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ViewDeltaError::OtherInstance => {
                f.write_str("the delta is of another period instance than the view; resync from a snapshot")
            }
            ViewDeltaError::VersionGap {
                view_version,
                delta_base,
            } => write!(
                f,
                "the delta starts at board_version {delta_base} but the view is at {view_version}; resync from a snapshot"
            ),
            ViewDeltaError::NotForward {
                base_version,
                board_version,
            } => write!(
                f,
                "the delta goes from board_version {base_version} to {board_version}, not forward"
            ),
            ViewDeltaError::Inconsistent(what) => {
                write!(
                    f,
                    "the delta does not fit the view ({what}); resync from a snapshot"
                )
            }
        }
    }
}

impl core::error::Error for ViewDeltaError {}

#[cfg(test)]
mod tests {
    use alloc::string::ToString;

    use super::*;
    use crate::event::ScoreEvent;
    use crate::rules::{BoardRules, ScoreMode};

    fn view(text: &str) -> View {
        text.parse().unwrap()
    }

    fn board_with(scores: &[(&str, i64)]) -> Board {
        let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
        for (i, (player, value)) in scores.iter().enumerate() {
            let e = ScoreEvent::new(&alloc::format!("e{i}"), player, *value, i as i64).unwrap();
            board.apply(&e).unwrap();
        }
        board
    }

    fn players(state: &ViewState) -> Vec<&str> {
        state.entries.iter().map(|e| e.player_id.as_str()).collect()
    }

    #[test]
    fn views_parse_and_print_back() {
        for text in [
            "top:1",
            "top:100",
            "around:p1:0",
            "around:p1:25",
            "player:p1",
            "around:a:b:3",
            "player:a:b",
        ] {
            assert_eq!(view(text).to_string(), text);
        }
        assert_eq!(
            view("around:a:b:3"),
            View::Around {
                player: PlayerId::new("a:b").unwrap(),
                radius: 3
            }
        );
    }

    #[test]
    fn bad_views_name_the_limit() {
        let err = |text: &str| text.parse::<View>().unwrap_err();
        let top = ViewError::OutOfRange {
            what: "top limit",
            min: 1,
            max: 100,
        };
        assert_eq!(err("top:0"), top);
        assert_eq!(err("top:101"), top);
        assert_eq!(err("top:99999999999"), top);
        assert_eq!(err("top:+5"), ViewError::NotANumber { what: "top limit" });
        assert_eq!(err("top:"), ViewError::Missing { what: "top limit" });
        assert_eq!(
            err("around:p:26"),
            ViewError::OutOfRange {
                what: "around radius",
                min: 0,
                max: 25
            }
        );
        assert_eq!(err("around:p"), ViewError::Missing { what: "radius" });
        assert_eq!(err("around::3"), ViewError::Missing { what: "player" });
        assert_eq!(err("player:"), ViewError::Missing { what: "player" });
        assert!(matches!(
            err("player:a\u{7}"),
            ViewError::Player(IdError::ControlCharacter { .. })
        ));
        assert_eq!(err("bottom:3"), ViewError::UnknownKind);
        assert_eq!(err(""), ViewError::UnknownKind);
        assert_eq!(
            err("top:101").to_string(),
            "the view's top limit must be from 1 to 100"
        );
    }

    #[test]
    fn an_empty_board_gives_empty_views() {
        let board = board_with(&[]);
        for text in ["top:10", "around:p:3", "player:p"] {
            let state = ViewState::read(&board, &view(text), "all_time");
            assert_eq!(state.board_version, 0);
            assert!(state.entries.is_empty());
        }
    }

    #[test]
    fn edges_clip_and_absent_players_are_empty() {
        let board = board_with(&[("a", 50), ("b", 40), ("c", 30), ("d", 20), ("e", 10)]);
        assert_eq!(
            players(&ViewState::read(&board, &view("top:100"), "all_time")),
            ["a", "b", "c", "d", "e"]
        );
        assert_eq!(
            players(&ViewState::read(&board, &view("around:a:2"), "all_time")),
            ["a", "b", "c"]
        );
        assert_eq!(
            players(&ViewState::read(&board, &view("around:e:2"), "all_time")),
            ["c", "d", "e"]
        );
        assert_eq!(
            players(&ViewState::read(&board, &view("around:c:0"), "all_time")),
            ["c"]
        );
        assert!(
            ViewState::read(&board, &view("around:zz:2"), "all_time")
                .entries
                .is_empty()
        );
        assert!(
            ViewState::read(&board, &view("player:zz"), "all_time")
                .entries
                .is_empty()
        );
        let one = ViewState::read(&board, &view("player:d"), "all_time");
        assert_eq!(one.entries.len(), 1);
        assert_eq!(one.entries[0].rank, 4);
        assert_eq!(one.entries[0].value, 20);
    }

    #[test]
    fn an_entry_at_the_top_shifts_every_rank_below() {
        let mut board = board_with(&[("a", 50), ("b", 40), ("c", 30)]);
        let base = ViewState::read(&board, &view("top:2"), "all_time");
        board.apply(&ScoreEvent::new("e9", "z", 99, 9).unwrap()).unwrap();
        let next = ViewState::read(&board, &view("top:2"), "all_time");
        let delta = ViewDelta::between(&base, &next).unwrap();
        let ranks: Vec<_> = delta
            .changed
            .iter()
            .map(|e| (e.player_id.as_str(), e.rank))
            .collect();
        assert_eq!(ranks, [("z", 1), ("a", 2)]);
        assert_eq!(delta.left, [PlayerId::new("b").unwrap()]);
        let mut client = base.clone();
        client.apply(&delta).unwrap();
        assert_eq!(client, next);
    }

    #[test]
    fn a_move_and_back_is_no_change_and_stale_deltas_are_refused() {
        let mut board = board_with(&[("a", 50), ("b", 40), ("c", 30)]);
        let top = view("top:2");
        let base = ViewState::read(&board, &top, "all_time");
        // z enters at the top, pushing a and b down, then its only score is invalidated.
        let z = ScoreEvent::new("x1", "z", 99, 10).unwrap();
        board.apply(&z).unwrap();
        let moved = ViewState::read(&board, &top, "all_time");
        board.recompute_player(&z.player, &[]).unwrap();
        let back = ViewState::read(&board, &top, "all_time");
        assert_eq!(back.board_version, base.board_version + 2);
        assert!(ViewDelta::between(&base, &back).is_none());
        assert!(ViewDelta::between(&back, &back).is_none());
        // The driver keeps `base` as the last state sent, so the next delta starts there.
        let delta = ViewDelta::between(&base, &moved).unwrap();
        let mut stale = back.clone();
        assert_eq!(
            stale.apply(&delta),
            Err(ViewDeltaError::VersionGap {
                view_version: back.board_version,
                delta_base: base.board_version,
            })
        );
        assert_eq!(stale, back);
    }

    #[test]
    fn inconsistent_deltas_change_nothing() {
        let board = board_with(&[("a", 50), ("b", 40)]);
        let mut state = ViewState::read(&board, &view("top:2"), "all_time");
        let held = state.clone();
        let ghost = ViewDelta {
            period_key: "all_time".into(),
            base_version: state.board_version,
            board_version: state.board_version + 1,
            changed: Vec::new(),
            left: alloc::vec![PlayerId::new("zz").unwrap()],
        };
        assert!(matches!(
            state.apply(&ghost),
            Err(ViewDeltaError::Inconsistent(_))
        ));
        let collide = ViewDelta {
            changed: alloc::vec![ViewEntry {
                display_name: None,
                country: None,
                metadata: None,
                rank: 1,
                player_id: PlayerId::new("c").unwrap(),
                value: 60,
                achieved_at: 0,
                global_rank: None,
            }],
            left: Vec::new(),
            ..ghost.clone()
        };
        assert!(matches!(
            state.apply(&collide),
            Err(ViewDeltaError::Inconsistent(_))
        ));
        let backwards = ViewDelta {
            board_version: state.board_version - 1,
            left: Vec::new(),
            ..ghost.clone()
        };
        assert!(matches!(
            state.apply(&backwards),
            Err(ViewDeltaError::NotForward { .. })
        ));
        let standing_still = ViewDelta {
            board_version: state.board_version,
            ..collide
        };
        assert!(matches!(
            state.apply(&standing_still),
            Err(ViewDeltaError::NotForward { .. })
        ));
        assert_eq!(state, held);
    }

    /// The catch-up answer to a subscriber already at the view's version is an empty delta to
    /// that same version, which changes nothing; one that claims another version is refused.
    #[test]
    fn an_empty_delta_at_the_views_own_version_is_a_no_op() {
        let board = board_with(&[("a", 50), ("b", 40)]);
        let mut state = ViewState::read(&board, &view("top:2"), "all_time");
        let held = state.clone();
        let current = ViewDelta {
            period_key: "all_time".into(),
            base_version: state.board_version,
            board_version: state.board_version,
            changed: Vec::new(),
            left: Vec::new(),
        };
        state.apply(&current).unwrap();
        assert_eq!(state, held);
        let elsewhere = ViewDelta {
            base_version: state.board_version + 1,
            board_version: state.board_version + 1,
            ..current
        };
        assert!(matches!(
            state.apply(&elsewhere),
            Err(ViewDeltaError::VersionGap { .. })
        ));
        assert_eq!(state, held);
    }

    /// A delta of another period instance is refused, whatever its versions: yesterday's view
    /// at version 3 never chains today's delta from 3.
    #[test]
    fn a_delta_of_another_instance_is_refused() {
        let mut board = board_with(&[("a", 50)]);
        let mut yesterday = ViewState::read(&board, &view("top:2"), "2026-10-12");
        let today_base = ViewState::read(&board, &view("top:2"), "2026-10-13");
        board.apply(&ScoreEvent::new("e9", "b", 60, 9).unwrap()).unwrap();
        let today = ViewState::read(&board, &view("top:2"), "2026-10-13");
        let delta = ViewDelta::between(&today_base, &today).unwrap();
        assert_eq!(delta.period_key, "2026-10-13");
        let held = yesterday.clone();
        assert_eq!(yesterday.apply(&delta), Err(ViewDeltaError::OtherInstance));
        assert_eq!(yesterday, held);
        let mut following = today_base.clone();
        following.apply(&delta).unwrap();
        assert_eq!(following, today);
    }

    /// An advance moves a view to a later version and changes no entry; it applies like any
    /// delta and is refused like one.
    #[test]
    fn an_advance_moves_the_version_only() {
        let board = board_with(&[("a", 50), ("b", 40)]);
        let mut state = ViewState::read(&board, &view("top:2"), "all_time");
        let advance = ViewDelta::advance(&state, state.board_version + 5);
        let held = state.clone();
        state.apply(&advance).unwrap();
        assert_eq!(state.entries, held.entries);
        assert_eq!(state.board_version, held.board_version + 5);
        assert!(matches!(
            state.apply(&advance),
            Err(ViewDeltaError::VersionGap { .. })
        ));
    }

    /// A position is `KEY:VERSION` or a bare version, and a bare one is of the all-time
    /// instance only.
    #[test]
    fn positions_parse_print_and_name_their_instance() {
        let day: Position = "2026-10-13:46".parse().unwrap();
        assert_eq!(day.period_key.as_deref(), Some("2026-10-13"));
        assert_eq!(day.board_version, 46);
        assert_eq!(day.to_string(), "2026-10-13:46");
        assert!(day.is_of("2026-10-13") && !day.is_of("2026-10-14"));
        let bare: Position = "7".parse().unwrap();
        assert_eq!(bare.to_string(), "7");
        assert!(bare.is_of(ALL_TIME_KEY) && !bare.is_of("2026-W42"));
        for (bad, error) in [
            ("", PositionError::Version),
            ("x7", PositionError::Version),
            ("-1", PositionError::Version),
            ("2026-10-13:", PositionError::Version),
            ("18446744073709551616", PositionError::Version),
            (":5", PositionError::PeriodKey),
            ("a b:5", PositionError::PeriodKey),
            ("2026/10:5", PositionError::PeriodKey),
        ] {
            assert_eq!(bad.parse::<Position>(), Err(error), "{bad:?}");
        }
    }
}
