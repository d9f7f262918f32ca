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
}

impl SegmentSpec {
    /// Whether the board declares any dimension. O(1).
    pub fn is_empty(&self) -> bool {
        !self.country
    }

    /// Whether `dimension` is declared. O(1).
    pub fn declares(&self, dimension: &str) -> bool {
        dimension == COUNTRY && self.country
    }
}

/// The dimension fed by the profile's country.
pub const COUNTRY: &str = "country";

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
    country: BTreeMap<Box<str>, Tree>,
}

impl Segments {
    /// No segments of `spec` yet; [`Segments::load`] fills them.
    pub(crate) fn new(spec: SegmentSpec) -> Segments {
        Segments {
            spec,
            country: BTreeMap::new(),
        }
    }

    pub(crate) fn spec(&self) -> &SegmentSpec {
        &self.spec
    }

    /// The country segment an entry showing `extras` belongs to, if any.
    fn country_of(extras: &Extras) -> Option<&str> {
        let profile = extras.profile.as_deref()?;
        if profile.anonymous {
            return None;
        }
        profile.country.as_deref()
    }

    /// Fills the segments from the ranked members with extras (`members`: member, standing,
    /// extras, in any order); no other member can be in a segment. O(m log m).
    pub(crate) fn load<'e>(
        &mut self,
        names: &Interner,
        mode: ScoreMode,
        members: impl Iterator<Item = (MemberId, Standing, &'e Extras)>,
    ) {
        self.country.clear();
        if !self.spec.country {
            return;
        }
        let mut keys: BTreeMap<&'e str, Vec<Key>> = BTreeMap::new();
        for (member, standing, extras) in members {
            if let Some(country) = Segments::country_of(extras) {
                keys.entry(country).or_default().push(key(mode, member, standing));
            }
        }
        for (country, mut keys) in keys {
            keys.sort_unstable_by(|a, b| cmp_keys(names, a, b));
            let mut tree = Tree::untracked();
            tree.bulk_load(keys.into_iter(), 0);
            self.country.insert(country.into(), tree);
        }
    }

    /// Moves a member from the segments of its entry before to those of its entry after (either
    /// `None` when unranked). O(log n) per segment left or joined.
    pub(crate) fn change(
        &mut self,
        names: &Interner,
        mode: ScoreMode,
        member: MemberId,
        before: Option<(Standing, &Extras)>,
        after: Option<(Standing, &Extras)>,
    ) {
        if !self.spec.country {
            return;
        }
        fn place(
            mode: ScoreMode,
            member: MemberId,
            side: Option<(Standing, &Extras)>,
        ) -> Option<(&str, Key)> {
            let (standing, extras) = side?;
            Some((Segments::country_of(extras)?, key(mode, member, standing)))
        }
        let (was, now) = (place(mode, member, before), place(mode, member, after));
        if was == now {
            return;
        }
        if let Some((country, key)) = was
            && let Some(tree) = self.country.get_mut(country)
        {
            let removed = tree.remove_key(names, key);
            debug_assert!(removed, "a member's segment entry is where its standing says");
            if tree.len() == 0 {
                self.country.remove(country);
            }
        }
        if let Some((country, key)) = now {
            match self.country.get_mut(country) {
                Some(tree) => tree.insert(names, key),
                None => {
                    let mut tree = Tree::untracked();
                    tree.insert(names, key);
                    self.country.insert(country.into(), tree);
                }
            }
        }
    }

    /// The tree of one segment; `None` when it has no members (or the dimension is not
    /// declared). O(log s) for s segments.
    pub(crate) fn tree(&self, segment: &SegmentKey<'_>) -> Option<&Tree> {
        if segment.dimension == COUNTRY && self.spec.country {
            return self.country.get(segment.value);
        }
        None
    }

    /// Whether a member whose entry shows `extras` is in `segment`. O(1).
    pub(crate) fn holds(&self, segment: &SegmentKey<'_>, extras: Option<&Extras>) -> bool {
        segment.dimension == COUNTRY
            && self.spec.country
            && extras.and_then(Segments::country_of) == Some(segment.value)
    }

    /// Each segment with members and its member count, by dimension then value. O(s).
    pub(crate) fn counts(&self) -> impl Iterator<Item = (SegmentKey<'_>, u64)> {
        self.country.iter().map(|(value, tree)| {
            (
                SegmentKey {
                    dimension: COUNTRY,
                    value,
                },
                tree.len() as u64,
            )
        })
    }

    /// Bytes the segment trees hold. O(s).
    pub(crate) fn memory(&self) -> usize {
        self.country.values().map(Tree::memory).sum()
    }

    /// Checks every segment tree's invariants against the board's interner. For tests. O(n).
    #[cfg(test)]
    pub(crate) fn check(&self, names: &Interner) {
        for tree in self.country.values() {
            tree.check(names);
        }
    }
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
