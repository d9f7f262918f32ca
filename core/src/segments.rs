//! Segments: a board's members ranked among those sharing one value of a dimension (everyone
//! in `country:DE`), exactly, at the board's own version.
//!
//! A segment is a tree of its own over the board's interner, keyed by the same total order, so
//! a segment rank is a count in that tree and the board-wide rank of the same entry is the
//! board's. The board changes its segments in the same step as its index (every change goes
//! through one delta), so a player who changes country leaves one segment and joins the other
//! at one version. Segment trees keep no locator (see [`Tree::untracked`]): a member is found by
//! its key, which the board knows, so a segment costs its entries and nothing per member of
//! the game.
//!
//! Membership is derived, never stored: `country` is the country of a player's profile, and a
//! player shown anonymously is in no country segment, so membership never tells anyone a
//! country the entry hides. A board rebuilds its segments from its entries when they are
//! declared ([`crate::Board::declare_segments`]).

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::index::RankedEntry;
use crate::interner::{Interner, MemberId};
use crate::profile::Extras;
use crate::rules::{ScoreMode, Standing};
use crate::tree::{Key, Probe, Tree, cmp_keys};

/// The dimensions a board ranks its segments by.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SegmentSpec {
    /// Segments by the country of each player's profile.
    pub country: bool,
    /// Event dimensions, by name: each event may carry one of the declared values, and an entry
    /// is in the segment of the value its event behind the standing carried.
    pub events: Vec<EventDimension>,
}

/// A dimension whose value each event carries (`platform`), within a declared set of values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventDimension {
    /// The dimension's name (`platform`).
    pub name: Box<str>,
    /// The values an event may carry (`ios`, `android`, `pc`), in declared order.
    pub values: Vec<Box<str>>,
}

impl SegmentSpec {
    /// Whether the board declares any dimension. O(1).
    pub fn is_empty(&self) -> bool {
        !self.country && self.events.is_empty()
    }

    /// Whether `dimension` is declared. O(d).
    pub fn declares(&self, dimension: &str) -> bool {
        (dimension == COUNTRY && self.country) || self.event_dimension(dimension).is_some()
    }

    /// The declared event dimension named `name`. O(d).
    pub fn event_dimension(&self, name: &str) -> Option<&EventDimension> {
        self.events.iter().find(|d| &*d.name == name)
    }

    /// The declared dimensions' names: `country` first, then the event ones. O(d).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.country
            .then_some(COUNTRY)
            .into_iter()
            .chain(self.events.iter().map(|d| &*d.name))
    }
}

/// The dimension fed by the profile's country.
pub const COUNTRY: &str = "country";

/// The most event dimensions a board declares.
pub const MAX_EVENT_DIMENSIONS: usize = 4;

/// The most values an event dimension declares.
pub const MAX_DIMENSION_VALUES: usize = 32;

/// The longest dimension name or value, in bytes.
pub const MAX_DIMENSION_TEXT: usize = 32;

/// One segment: a dimension and one of its values, as `segment=country:DE` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentKey<'a> {
    /// The dimension (`country`).
    pub dimension: &'a str,
    /// The value (`DE`).
    pub value: &'a str,
}

/// One entry of a segment answer: its rank within the segment and on the whole board.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SegmentEntry<'a> {
    /// The entry, `rank` counted within the segment.
    pub entry: RankedEntry<'a>,
    /// The rank on the whole board.
    pub global_rank: u64,
}

/// The segments of one board: for each declared dimension, a tree per value with members.
#[derive(Clone, Default)]
pub(crate) struct Segments {
    spec: SegmentSpec,
    trees: BTreeMap<Box<str>, BTreeMap<Box<str>, Tree>>,
}

impl Segments {
    /// No segments of `spec` yet; [`Segments::load`] fills them.
    pub(crate) fn new(spec: SegmentSpec) -> Segments {
        Segments {
            spec,
            trees: BTreeMap::new(),
        }
    }

    pub(crate) fn spec(&self) -> &SegmentSpec {
        &self.spec
    }

    /// Whether any event dimension is declared. O(1).
    pub(crate) fn declares_events(&self) -> bool {
        !self.spec.events.is_empty()
    }

    /// Each declared dimension's value for an entry showing `extras`. O(d).
    fn values_of<'s, 'e>(
        &'s self,
        extras: &'e Extras,
    ) -> impl Iterator<Item = (&'s str, &'e str)> + use<'s, 'e> {
        self.spec
            .names()
            .filter_map(move |dimension| Some((dimension, value_of(&self.spec, dimension, extras)?)))
    }

    /// Fills the segments from the ranked members with extras (`members`: member, standing,
    /// extras, in any order); no other member can be in a segment. O(m log m).
    pub(crate) fn load<'e>(
        &mut self,
        names: &Interner,
        mode: ScoreMode,
        members: impl Iterator<Item = (MemberId, Standing, &'e Extras)>,
    ) {
        let mut keys: BTreeMap<(&str, &'e str), Vec<Key>> = BTreeMap::new();
        for (member, standing, extras) in members {
            for (dimension, value) in self.values_of(extras) {
                keys.entry((dimension, value))
                    .or_default()
                    .push(key(mode, member, standing));
            }
        }
        let mut trees: BTreeMap<Box<str>, BTreeMap<Box<str>, Tree>> = BTreeMap::new();
        for ((dimension, value), mut keys) in keys {
            keys.sort_unstable_by(|a, b| cmp_keys(names, a, b));
            let mut tree = Tree::untracked();
            tree.bulk_load(keys.into_iter(), 0);
            trees
                .entry(dimension.into())
                .or_default()
                .insert(value.into(), tree);
        }
        self.trees = trees;
    }

    /// Moves a member from the segments of its entry before to those of its entry after (either
    /// `None` when unranked). O(log n) per segment left or joined.
    pub(crate) fn change<'a>(
        &mut self,
        names: &Interner,
        mode: ScoreMode,
        member: MemberId,
        before: Option<(Standing, &'a Extras)>,
        after: Option<(Standing, &'a Extras)>,
    ) {
        let Segments { spec, trees } = self;
        for dimension in spec.names() {
            let place = |side: Option<(Standing, &'a Extras)>| {
                let (standing, extras) = side?;
                Some((value_of(spec, dimension, extras)?, key(mode, member, standing)))
            };
            let (was, now) = (place(before), place(after));
            if was == now {
                continue;
            }
            if let Some((value, key)) = was
                && let Some(values) = trees.get_mut(dimension)
                && let Some(tree) = values.get_mut(value)
            {
                let removed = tree.remove_key(names, key);
                debug_assert!(removed, "a member's segment entry is where its standing says");
                if tree.len() == 0 {
                    values.remove(value);
                }
            }
            if let Some((value, key)) = now {
                let values = match trees.get_mut(dimension) {
                    Some(values) => values,
                    None => trees.entry(dimension.into()).or_default(),
                };
                match values.get_mut(value) {
                    Some(tree) => tree.insert(names, key),
                    None => {
                        let mut tree = Tree::untracked();
                        tree.insert(names, key);
                        values.insert(value.into(), tree);
                    }
                }
            }
        }
    }

    /// The tree of one segment; `None` when it has no members (or the dimension is not
    /// declared). O(log s) for s segments.
    pub(crate) fn tree(&self, segment: &SegmentKey<'_>) -> Option<&Tree> {
        self.trees.get(segment.dimension)?.get(segment.value)
    }

    /// Whether a member whose entry shows `extras` is in `segment`. O(d).
    pub(crate) fn holds(&self, segment: &SegmentKey<'_>, extras: Option<&Extras>) -> bool {
        extras.and_then(|e| value_of(&self.spec, segment.dimension, e)) == Some(segment.value)
    }

    /// Each segment with members and its member count, by dimension then value. O(s).
    pub(crate) fn counts(&self) -> impl Iterator<Item = (SegmentKey<'_>, u64)> {
        self.trees.iter().flat_map(|(dimension, values)| {
            values
                .iter()
                .map(move |(value, tree)| (SegmentKey { dimension, value }, tree.len() as u64))
        })
    }

    /// Bytes the segment trees hold. O(s).
    pub(crate) fn memory(&self) -> usize {
        self.trees
            .values()
            .flat_map(BTreeMap::values)
            .map(Tree::memory)
            .sum()
    }

    /// Checks every segment tree's invariants against the board's interner. For tests. O(n).
    #[cfg(test)]
    pub(crate) fn check(&self, names: &Interner) {
        for tree in self.trees.values().flat_map(BTreeMap::values) {
            tree.check(names);
        }
    }
}

/// The value of `dimension` an entry showing `extras` has under `spec`, if any: the profile's
/// country unless anonymous, or the value the event behind the standing carried when it is one
/// of the declared ones. O(length of the event's values).
fn value_of<'e>(spec: &SegmentSpec, dimension: &str, extras: &'e Extras) -> Option<&'e str> {
    if dimension == COUNTRY {
        let profile = extras.profile.as_deref()?;
        if profile.anonymous || !spec.country {
            return None;
        }
        return profile.country.as_deref();
    }
    let value = extras.metadata.as_deref()?.segment_value(dimension)?;
    let declared = spec.event_dimension(dimension)?;
    declared.values.iter().any(|v| &**v == value).then_some(value)
}

/// A member's key in the total order. O(1).
fn key(mode: ScoreMode, member: MemberId, standing: Standing) -> Key {
    Key {
        order: mode.order_key(standing.value),
        time: standing.achieved_at,
        member,
    }
}

/// A position in the total order named by a standing and a player. O(1).
pub(crate) fn probe<'p>(mode: ScoreMode, standing: &Standing, player: &'p str) -> Probe<'p> {
    Probe {
        order: mode.order_key(standing.value),
        time: standing.achieved_at,
        player,
    }
}
