//! Board identity and board rules: how a player's events fold into one aggregate, and how
//! aggregates are ordered.

use alloc::string::String;
use core::cmp::Ordering;
use core::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{ApplyError, IdError};
use crate::event::ScoreEvent;

/// Names one board: `(game, mode, season, scope)`, e.g. `arena-clash / solo / S7 / global`.
/// Two different tuples are two different boards.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BoardId {
    /// The game, e.g. `arena-clash`.
    pub game: String,
    /// The game mode, e.g. `solo`.
    pub mode: String,
    /// The season, e.g. `S7`.
    pub season: String,
    /// The scope within the season, e.g. `global` or `region:eu-west`.
    pub scope: String,
}

impl BoardId {
    /// Builds a board id, checking each part: 1 to 64 bytes of ASCII letters, digits and
    /// `-_.:`, so that ids are safe in URLs, cache keys and file names.
    pub fn new(game: &str, mode: &str, season: &str, scope: &str) -> Result<BoardId, IdError> {
        for (what, part) in [
            ("game", game),
            ("mode", mode),
            ("season", season),
            ("scope", scope),
        ] {
            check_board_part(what, part)?;
        }
        Ok(BoardId {
            game: game.into(),
            mode: mode.into(),
            season: season.into(),
            scope: scope.into(),
        })
    }
}

fn check_board_part(what: &'static str, part: &str) -> Result<(), IdError> {
    if part.is_empty() {
        return Err(IdError::Empty { what });
    }
    if part.len() > 64 {
        return Err(IdError::TooLong {
            what,
            len: part.len(),
            max: 64,
        });
    }
    if let Some(position) = part
        .bytes()
        .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':')))
    {
        return Err(IdError::InvalidCharacter { what, position });
    }
    Ok(())
}

impl fmt::Display for BoardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}/{}", self.game, self.mode, self.season, self.scope)
    }
}

/// How a board turns a player's events into one aggregate, and which way it ranks. Fixed when
/// the board is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ScoreMode {
    /// Keep the best (greatest) value; rank descending.
    Highest,
    /// Sum every event's value; rank descending.
    Cumulative,
    /// Keep the lowest value (a time); rank ascending.
    Fastest,
    /// Keep the value with the latest `achieved_at`, whatever the arrival order; rank descending.
    Latest,
}

impl ScoreMode {
    /// The mode's wire name: `highest`, `cumulative`, `fastest` or `latest`.
    pub fn as_str(self) -> &'static str {
        match self {
            ScoreMode::Highest => "highest",
            ScoreMode::Cumulative => "cumulative",
            ScoreMode::Fastest => "fastest",
            ScoreMode::Latest => "latest",
        }
    }

    /// Parses a wire name.
    pub fn parse(name: &str) -> Option<ScoreMode> {
        match name {
            "highest" => Some(ScoreMode::Highest),
            "cumulative" => Some(ScoreMode::Cumulative),
            "fastest" => Some(ScoreMode::Fastest),
            "latest" => Some(ScoreMode::Latest),
            _ => None,
        }
    }

    /// The key the ranked index sorts ascending, so that ascending means better.
    ///
    /// `fastest` ranks ascending by value, so its key is the value itself and nothing is
    /// inverted on its path. The descending modes map the value through bitwise NOT, which is
    /// strictly decreasing and total over all of `i64` (unlike negation, which overflows at
    /// `i64::MIN`).
    #[inline]
    pub(crate) fn order_key(self, value: i64) -> i64 {
        match self {
            ScoreMode::Fastest => value,
            ScoreMode::Highest | ScoreMode::Cumulative | ScoreMode::Latest => !value,
        }
    }

    /// The inverse of [`ScoreMode::order_key`].
    #[inline]
    pub(crate) fn value_of(self, order_key: i64) -> i64 {
        match self {
            ScoreMode::Fastest => order_key,
            ScoreMode::Highest | ScoreMode::Cumulative | ScoreMode::Latest => !order_key,
        }
    }

    /// Whether value `a` ranks strictly better than value `b` under this mode.
    pub fn better_value(self, a: i64, b: i64) -> bool {
        match self {
            ScoreMode::Fastest => a < b,
            ScoreMode::Highest | ScoreMode::Cumulative | ScoreMode::Latest => a > b,
        }
    }
}

impl fmt::Display for ScoreMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A board's fixed rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BoardRules {
    /// How events fold and which way the board ranks.
    pub score_mode: ScoreMode,
    /// The least value an event may carry.
    pub value_min: i64,
    /// The greatest value an event may carry.
    pub value_max: i64,
}

impl BoardRules {
    /// Rules with the full `i64` value range.
    pub fn new(score_mode: ScoreMode) -> BoardRules {
        BoardRules {
            score_mode,
            value_min: i64::MIN,
            value_max: i64::MAX,
        }
    }

    /// Rules with an inclusive value range; `None` when `value_min > value_max`.
    pub fn with_range(score_mode: ScoreMode, value_min: i64, value_max: i64) -> Option<BoardRules> {
        (value_min <= value_max).then_some(BoardRules {
            score_mode,
            value_min,
            value_max,
        })
    }

    /// Checks an event's value against the board's range.
    pub fn check_value(&self, value: i64) -> Result<(), ApplyError> {
        if value < self.value_min || value > self.value_max {
            return Err(ApplyError::ValueOutOfRange {
                value,
                min: self.value_min,
                max: self.value_max,
            });
        }
        Ok(())
    }

    /// Folds one more event into a player's aggregate and returns the new aggregate, or `None`
    /// when the event changes nothing (a guarded no-op). O(1).
    ///
    /// `current_event_id` is the id of the event behind the current aggregate; only `latest`
    /// needs it, to break equal times by the greater event id.
    ///
    /// The fold is commutative and associative over a set of events, so an aggregate is a pure
    /// function of the set of valid events, whatever their arrival order:
    /// - `highest`/`fastest`: the best value, and among equal best values the earliest time;
    /// - `cumulative`: the sum, timed at the latest `achieved_at` among the summed events;
    /// - `latest`: the value of the event with the latest time, ties to the greater event id.
    pub fn fold(
        &self,
        current: Option<Standing>,
        current_event_id: Option<&str>,
        event: &ScoreEvent,
    ) -> Result<Option<Standing>, ApplyError> {
        self.check_value(event.value)?;
        let candidate = Standing {
            value: event.value,
            achieved_at: event.achieved_at,
        };
        let Some(current) = current else {
            return Ok(Some(candidate));
        };
        let replaces = match self.score_mode {
            ScoreMode::Highest => {
                event.value > current.value
                    || (event.value == current.value && event.achieved_at < current.achieved_at)
            }
            ScoreMode::Fastest => {
                event.value < current.value
                    || (event.value == current.value && event.achieved_at < current.achieved_at)
            }
            ScoreMode::Latest => match event.achieved_at.cmp(&current.achieved_at) {
                Ordering::Greater => true,
                Ordering::Less => false,
                Ordering::Equal => {
                    Some(event.event_id.as_str().as_bytes()) > current_event_id.map(str::as_bytes)
                }
            },
            ScoreMode::Cumulative => {
                let value = current
                    .value
                    .checked_add(event.value)
                    .ok_or(ApplyError::ValueOverflow)?;
                let next = Standing {
                    value,
                    achieved_at: current.achieved_at.max(event.achieved_at),
                };
                return Ok((next != current).then_some(next));
            }
        };
        Ok(replaces.then_some(candidate))
    }

    /// The aggregate of a set of events, or `None` for no events: what [`BoardRules::fold`]
    /// gives over them in any order. Also returns the id of the event behind it (for `latest`).
    /// O(k) for k events.
    ///
    /// A `cumulative` total is summed exactly and fails with [`ApplyError::ValueOverflow`]
    /// only when the set's sum does not fit in an `i64`: a running sum in the given order
    /// could overflow on the way to a total that fits, and then whether an invalidation or a
    /// restore can be carried out would depend on the order of the remaining events.
    pub fn recompute<'e>(
        &self,
        events: impl IntoIterator<Item = &'e ScoreEvent>,
    ) -> Result<Option<(Standing, &'e str)>, ApplyError> {
        if self.score_mode == ScoreMode::Cumulative {
            return self.sum(events);
        }
        let mut current: Option<(Standing, &'e str)> = None;
        for event in events {
            let (standing, id) = match current {
                Some((s, id)) => (Some(s), Some(id)),
                None => (None, None),
            };
            match self.fold(standing, id, event)? {
                Some(next) => current = Some((next, event.event_id.as_str())),
                None if self.score_mode == ScoreMode::Cumulative => {
                    // A zero-valued event at an earlier time changes nothing, but it is still
                    // part of the sum; the aggregate stays as it was.
                }
                None => {}
            }
        }
        Ok(current)
    }

    /// The `cumulative` aggregate of a set of events: the exact sum, timed at the latest
    /// `achieved_at`, which is what folding them gives whenever no partial sum overflows.
    fn sum<'e>(
        &self,
        events: impl IntoIterator<Item = &'e ScoreEvent>,
    ) -> Result<Option<(Standing, &'e str)>, ApplyError> {
        let mut total: Option<(i128, i64, &'e str)> = None;
        for event in events {
            self.check_value(event.value)?;
            let (sum, achieved_at, _) = total.unwrap_or((0, i64::MIN, ""));
            // Fewer than 2^64 events of at most 2^63 each cannot overflow an i128.
            total = Some((
                sum + i128::from(event.value),
                achieved_at.max(event.achieved_at),
                event.event_id.as_str(),
            ));
        }
        let Some((sum, achieved_at, id)) = total else {
            return Ok(None);
        };
        let value = i64::try_from(sum).map_err(|_| ApplyError::ValueOverflow)?;
        Ok(Some((Standing { value, achieved_at }, id)))
    }

    /// Compares two aggregates in the board's total order: better value first, then the
    /// earlier time, then the lower player id (as bytes). `Less` means `a` ranks above `b`.
    /// This is the one comparator every tier uses (the index sorts by the same key).
    pub fn compare(&self, a: (&Standing, &str), b: (&Standing, &str)) -> Ordering {
        self.score_mode
            .order_key(a.0.value)
            .cmp(&self.score_mode.order_key(b.0.value))
            .then(a.0.achieved_at.cmp(&b.0.achieved_at))
            .then_with(|| a.1.as_bytes().cmp(b.1.as_bytes()))
    }
}

/// A player's aggregate on one board: the value that ranks, and when it was achieved
/// (milliseconds since the Unix epoch).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Standing {
    /// The aggregated value.
    pub value: i64,
    /// When the aggregate's current value was achieved, in ms since the Unix epoch.
    pub achieved_at: i64,
}

/// Any of the four score modes, for the crate's property tests.
#[cfg(test)]
pub(crate) fn mode_strategy() -> impl proptest::strategy::Strategy<Value = ScoreMode> {
    use proptest::prelude::*;
    prop_oneof![
        Just(ScoreMode::Highest),
        Just(ScoreMode::Cumulative),
        Just(ScoreMode::Fastest),
        Just(ScoreMode::Latest),
    ]
}
