//! A rank interval that always holds a player's exact rank at a version, answered from a
//! [`RankSketch`]: the entry at every `step`-th rank, as much of its key as tells it from the
//! entries beside it. The sketch is small enough for the edge (a few bytes to a few dozen a
//! bound, at most [`MAX_BOUNDS`] bounds) and needs nothing but the player's own entry, so an
//! interval needs no rank chunk.
//!
//! Why it is always right: the bounds are entries of the board at that version, in rank order,
//! and bound `k` has rank `k * step + 1`. A bound that ranks strictly above the player puts the
//! player below its rank, one strictly below puts them above. A bound keeps its value, then its
//! time only when a neighbour shares the value, then only as many id bytes as tell it from a
//! neighbour that shares both: the order is sorted, so an entry that matches a bound in what it
//! keeps is that bound. So, for an entry of the same version, a bound always says above, below
//! or equal, and the interval runs from just below the last bound above to just above the first
//! bound below: `step - 1` ranks (`step` at most `total / 10,000 + 1`), or the exact rank.
//! Only ids sharing more than [`MAX_HEAD`] bytes with a tied neighbour leave a bound unable to
//! tell, which widens an interval and never makes it miss.
//!
//! One rule, two sources: the origin asks its live index for the bounds it visits ([`interval`]
//! with [`Bound::of`] each entry and its neighbours), the edge its decoded sketch, and both
//! search them the same way, so they answer with the same interval at the same version.

use alloc::vec::Vec;
use core::cmp::Ordering;

use serde::{Deserialize, Serialize};

use crate::rules::{BoardRules, ScoreMode, Standing};

/// An interval is at most `total / WIDTH_DIVISOR` ranks wide (0.01 % of the board), or 1.
pub const WIDTH_DIVISOR: u64 = 10_000;

/// The most bounds a sketch holds: one per [`step`] ranks.
pub const MAX_BOUNDS: u64 = WIDTH_DIVISOR + 1;

/// The most id bytes a bound keeps to tell it from a tied neighbour.
pub const MAX_HEAD: usize = 32;

/// Ranks between two bounds of a board of `total` players: `total / 10,000 + 1`, so that the
/// ranks strictly between them are at most 0.01 % of the board.
pub fn step(total: u64) -> u64 {
    total / WIDTH_DIVISOR + 1
}

/// The number of bounds of a board of `total` players: one at rank `k * step + 1` for each `k`
/// that stays within the board.
pub fn bounds(total: u64) -> u64 {
    total.div_ceil(step(total))
}

/// The ranks a player's exact rank lies within, both ends included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RankInterval {
    /// The best rank the player may hold.
    pub low: u64,
    /// The worst rank the player may hold.
    pub high: u64,
}

impl RankInterval {
    /// The number of ranks the interval allows (1 when exact).
    pub fn width(&self) -> u64 {
        self.high - self.low + 1
    }

    /// Whether `rank` lies within the interval.
    pub fn contains(&self, rank: u64) -> bool {
        (self.low..=self.high).contains(&rank)
    }
}

/// One bound: an entry's order key and as much of the rest of its key as tells it from the
/// entries beside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    order: i64,
    /// The time, kept when a neighbour shares the order key.
    time: Option<i64>,
    /// The id's first bytes, kept when a neighbour shares the order key and the time.
    head: Option<Head>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Head {
    bytes: [u8; MAX_HEAD],
    len: u8,
    /// The id goes on past the bytes kept.
    cut: bool,
    /// No other entry starts with the bytes kept (false only when capped at [`MAX_HEAD`]).
    distinct: bool,
}

impl Head {
    fn bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len).min(MAX_HEAD)]
    }
}

impl Bound {
    /// The bound of the entry `(standing, player)`, whose neighbours in the board's order are
    /// `before` and `after` (`None` at an end). O(id length).
    pub fn of(
        mode: ScoreMode,
        (standing, player): (Standing, &str),
        before: Option<(Standing, &str)>,
        after: Option<(Standing, &str)>,
    ) -> Bound {
        let order = mode.order_key(standing.value);
        let neighbours = || before.into_iter().chain(after);
        let same_order = |(s, _): &(Standing, &str)| mode.order_key(s.value) == order;
        if !neighbours().any(|n| same_order(&n)) {
            return Bound {
                order,
                time: None,
                head: None,
            };
        }
        let time = Some(standing.achieved_at);
        let tied = neighbours().filter(|n| same_order(n) && n.0.achieved_at == standing.achieved_at);
        let Some(shared) = tied
            .map(|(_, id)| common_prefix(id.as_bytes(), player.as_bytes()))
            .max()
        else {
            return Bound {
                order,
                time,
                head: None,
            };
        };
        let id = player.as_bytes();
        // One byte past the longest prefix shared with a tied neighbour tells them apart.
        let needed = (shared + 1).min(id.len());
        let len = needed.min(MAX_HEAD);
        let mut bytes = [0; MAX_HEAD];
        bytes[..len].copy_from_slice(&id[..len]);
        Bound {
            order,
            time,
            head: Some(Head {
                bytes,
                len: len as u8,
                cut: id.len() > len,
                distinct: needed <= MAX_HEAD,
            }),
        }
    }

    /// Where the entry `(standing, player)` of the same version stands against this bound in
    /// the board's order (`Less`: it ranks above), or `None` when the bytes kept cannot tell.
    fn order_of(&self, mode: ScoreMode, standing: &Standing, player: &str) -> Option<Ordering> {
        let by_order = mode.order_key(standing.value).cmp(&self.order);
        let Some(time) = self.time else {
            return Some(by_order);
        };
        let by_time = by_order.then(standing.achieved_at.cmp(&time));
        let Some(head) = &self.head else {
            return Some(by_time);
        };
        if by_time != Ordering::Equal {
            return Some(by_time);
        }
        let (id, kept) = (player.as_bytes(), head.bytes());
        if !head.cut {
            return Some(id.cmp(kept));
        }
        let shared = id.len().min(kept.len());
        match id[..shared].cmp(&kept[..shared]) {
            // A proper prefix of the bound's id sorts before it.
            Ordering::Equal if id.len() < kept.len() => Some(Ordering::Less),
            Ordering::Equal if head.distinct => Some(Ordering::Equal),
            Ordering::Equal => None,
            decided => Some(decided),
        }
    }
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The interval of the ranked entry `(standing, player)` on a board of `total` players whose
/// bound `k` is `bound(k)`. Visits O(log bounds) bounds. When the bounds are not the board's
/// (a damaged sketch), the answer may be wrong but is still an interval within `1..=total`.
pub fn interval(
    rules: &BoardRules,
    total: u64,
    bound: impl Fn(u64) -> Bound,
    standing: &Standing,
    player: &str,
) -> RankInterval {
    let step = step(total);
    let count = bounds(total);
    let order = |k| bound(k).order_of(rules.score_mode, standing, player);
    let above = partition_point(count, |k| order(k) == Some(Ordering::Greater));
    if above < count && order(above) == Some(Ordering::Equal) {
        let rank = above * step + 1;
        return RankInterval {
            low: rank,
            high: rank,
        };
    }
    let not_below = partition_point(count, |k| order(k) != Some(Ordering::Less));
    // Saturating: a damaged sketch may claim a total near the largest integer.
    let low = if above == 0 {
        1
    } else {
        ((above - 1) * step).saturating_add(2)
    };
    let high = if not_below < count {
        not_below * step
    } else {
        total
    };
    let high = high.clamp(1, total.max(1));
    RankInterval {
        low: low.min(high),
        high,
    }
}

/// [`interval`] for an entry whose exact rank the caller knows: it looks at the two bounds
/// around that rank first and answers from them when they decide it, as the search would,
/// searching only when they do not (ids tied past a capped head). The hint never changes the
/// answer, only how many bounds are visited. Visits 2 bounds, or O(log bounds).
pub fn interval_at(
    rules: &BoardRules,
    total: u64,
    bound: impl Fn(u64) -> Bound,
    standing: &Standing,
    player: &str,
    rank: u64,
) -> RankInterval {
    let (step, count) = (step(total), bounds(total));
    let order = |k| bound(k).order_of(rules.score_mode, standing, player);
    if (1..=total).contains(&rank) {
        let k = (rank - 1) / step;
        if (rank - 1).is_multiple_of(step) && order(k) == Some(Ordering::Equal) {
            return RankInterval {
                low: rank,
                high: rank,
            };
        }
        if order(k) == Some(Ordering::Greater) && (k + 1 >= count || order(k + 1) == Some(Ordering::Less)) {
            let high = if k + 1 < count { (k + 1) * step } else { total };
            return RankInterval {
                low: (k * step).saturating_add(2),
                high,
            };
        }
    }
    interval(rules, total, bound, standing, player)
}

/// The first `k` in `0..count` for which `before(k)` is false, `before` being true on a prefix.
fn partition_point(count: u64, before: impl Fn(u64) -> bool) -> u64 {
    let (mut low, mut high) = (0, count);
    while low < high {
        let mid = low + (high - low) / 2;
        if before(mid) {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    low
}

/// Every bound of one board version, for a reader that does not hold the board.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankSketch {
    /// Ranked players at the version the bounds were taken at (which the manifest naming the
    /// sketch holds).
    pub total_players: u64,
    bounds: Vec<Bound>,
}

impl RankSketch {
    /// The sketch of `total_players` entries whose bound `k` is `bound(k)`. O(bounds) calls.
    pub fn of(total_players: u64, bound: impl Fn(u64) -> Bound) -> RankSketch {
        RankSketch {
            total_players,
            bounds: (0..bounds(total_players)).map(bound).collect(),
        }
    }

    /// The interval of the ranked entry `(standing, player)`. O(log bounds).
    pub fn interval(&self, rules: &BoardRules, standing: &Standing, player: &str) -> RankInterval {
        let last = self.bounds.len().saturating_sub(1);
        let bound = |k: u64| self.bounds[usize::try_from(k).unwrap_or(last).min(last)];
        interval(rules, self.total_players, bound, standing, player)
    }

    /// The number of bounds held.
    pub fn len(&self) -> usize {
        self.bounds.len()
    }

    /// About how many bytes the decoded sketch holds in memory. O(1).
    pub fn memory(&self) -> usize {
        core::mem::size_of::<RankSketch>() + self.bounds.capacity() * core::mem::size_of::<Bound>()
    }

    /// Whether the sketch holds no bound (an empty board).
    pub fn is_empty(&self) -> bool {
        self.bounds.is_empty()
    }

    /// The sketch on the wire: the order keys as differences from the previous bound's (small,
    /// since bounds are sorted), times as differences from the previous time kept (none within
    /// a tie), then the id bytes kept.
    pub(crate) fn to_wire(&self) -> SketchWire {
        let (mut previous, mut previous_time) = (0i64, 0i64);
        let bounds = self
            .bounds
            .iter()
            .map(|b| {
                let step = b.order.wrapping_sub(previous) as u64;
                previous = b.order;
                let time = b.time.map(|t| {
                    let since = t.wrapping_sub(previous_time);
                    previous_time = t;
                    since
                });
                WireBound {
                    order_step: step,
                    time_step: time,
                    head: b.head.map(|h| WireHead {
                        bytes: h.bytes().to_vec(),
                        cut: h.cut,
                        distinct: h.distinct,
                    }),
                }
            })
            .collect();
        SketchWire {
            total_players: self.total_players,
            bounds,
        }
    }

    /// The sketch a wire form holds, or `None` when its bounds cannot be a board's: not one per
    /// step of its total, or an id head no bound keeps. O(bounds).
    pub(crate) fn from_wire(wire: SketchWire) -> Option<RankSketch> {
        if wire.bounds.len() as u64 != bounds(wire.total_players) {
            return None;
        }
        let (mut order, mut time) = (0i64, 0i64);
        let mut out = Vec::with_capacity(wire.bounds.len());
        for b in wire.bounds {
            order = order.wrapping_add(b.order_step as i64);
            let kept_time = b.time_step.map(|since| {
                time = time.wrapping_add(since);
                time
            });
            let head = match b.head {
                None => None,
                Some(h) if h.bytes.is_empty() || h.bytes.len() > MAX_HEAD || kept_time.is_none() => {
                    return None;
                }
                Some(h) => {
                    let mut bytes = [0; MAX_HEAD];
                    bytes[..h.bytes.len()].copy_from_slice(&h.bytes);
                    Some(Head {
                        bytes,
                        len: h.bytes.len() as u8,
                        cut: h.cut,
                        distinct: h.distinct,
                    })
                }
            };
            out.push(Bound {
                order,
                time: kept_time,
                head,
            });
        }
        Some(RankSketch {
            total_players: wire.total_players,
            bounds: out,
        })
    }
}

/// A sketch as postcard writes it.
#[derive(Serialize, Deserialize)]
pub(crate) struct SketchWire {
    total_players: u64,
    bounds: Vec<WireBound>,
}

#[derive(Serialize, Deserialize)]
struct WireBound {
    order_step: u64,
    time_step: Option<i64>,
    head: Option<WireHead>,
}

#[derive(Serialize, Deserialize)]
struct WireHead {
    bytes: Vec<u8>,
    cut: bool,
    distinct: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::string::String;
    use proptest::prelude::*;

    use crate::rules::mode_strategy;

    /// Sorted entries, as a board holds them.
    fn sorted(rules: &BoardRules, mut entries: Vec<(Standing, String)>) -> Vec<(Standing, String)> {
        entries.sort_by(|a, b| a.1.cmp(&b.1));
        entries.dedup_by(|a, b| a.1 == b.1);
        entries.sort_by(|a, b| rules.compare((&a.0, &a.1), (&b.0, &b.1)));
        entries
    }

    fn bound_at(mode: ScoreMode, entries: &[(Standing, String)], i: usize) -> Bound {
        fn key(e: &(Standing, String)) -> (Standing, &str) {
            (e.0, e.1.as_str())
        }
        let before = i.checked_sub(1).map(|b| key(&entries[b]));
        Bound::of(mode, key(&entries[i]), before, entries.get(i + 1).map(key))
    }

    fn sketch_of(mode: ScoreMode, entries: &[(Standing, String)]) -> RankSketch {
        let step = step(entries.len() as u64);
        RankSketch::of(entries.len() as u64, |k| {
            bound_at(mode, entries, (k * step) as usize)
        })
    }

    #[test]
    fn the_step_keeps_the_width_within_a_ten_thousandth() {
        for (total, step_, count) in [
            (0, 1, 0),
            (1, 1, 1),
            (9_999, 1, 9_999),
            (10_000, 2, 5_000),
            (19_999, 2, 10_000),
            (1_000_000, 101, 9_901),
            (50_000_000, 5_001, 9_999),
        ] {
            assert_eq!((step(total), bounds(total)), (step_, count), "{total}");
            assert!(bounds(total) <= MAX_BOUNDS);
            assert!(step(total) - 1 <= (total / WIDTH_DIVISOR).max(1));
        }
    }

    /// A bound keeps the time only beside a tied value, id bytes only beside a tied value and
    /// time, and no more of them than tell it from that neighbour.
    #[test]
    fn a_bound_keeps_what_tells_it_from_its_neighbours() {
        let mode = ScoreMode::Highest;
        let at = Standing {
            value: 5,
            achieved_at: 1,
        };
        let other_value = Standing { value: 9, ..at };
        let other_time = Standing { achieved_at: 0, ..at };
        let alone = Bound::of(mode, (at, "player-0042"), Some((other_value, "a")), None);
        assert_eq!((alone.time, alone.head), (None, None));
        let timed = Bound::of(mode, (at, "player-0042"), Some((other_time, "a")), None);
        assert_eq!((timed.time, timed.head), (Some(1), None));
        let named = Bound::of(
            mode,
            (at, "player-0042"),
            Some((at, "player-0041")),
            Some((at, "player-1")),
        );
        let head = named.head.unwrap();
        assert_eq!(
            (head.bytes(), head.cut, head.distinct),
            (&b"player-0042"[..], false, true)
        );
        let long = Bound::of(mode, (at, "player-0042-long"), Some((at, "player-0041")), None);
        let head = long.head.unwrap();
        assert_eq!(
            (head.bytes(), head.cut, head.distinct),
            (&b"player-0042"[..], true, true)
        );
        let prefix = Bound::of(mode, (at, "ab"), None, Some((at, "abc")));
        assert_eq!(prefix.head.unwrap().bytes(), b"ab");
        let shared = [b'x'; 40];
        let mut twin = shared;
        twin[39] = b'y';
        let capped = Bound::of(
            mode,
            (at, core::str::from_utf8(&shared).unwrap()),
            None,
            Some((at, core::str::from_utf8(&twin).unwrap())),
        );
        let head = capped.head.unwrap();
        assert_eq!(
            (head.bytes().len(), head.cut, head.distinct),
            (MAX_HEAD, true, false)
        );
    }

    /// What a bound answers about entries of its version: above, below, itself, and "cannot
    /// tell" only past a capped head.
    #[test]
    fn a_bound_orders_the_entries_of_its_version() {
        let mode = ScoreMode::Highest;
        let at = Standing {
            value: 5,
            achieved_at: 1,
        };
        let long = Bound::of(
            mode,
            (at, "abcdefgh-long"),
            Some((at, "abcdefg")),
            Some((at, "abcdefgi")),
        );
        let shared = "y".repeat(40);
        let capped = Bound::of(mode, (at, &shared), None, Some((at, &format!("{shared}z"))));
        let cases = [
            (&long, Standing { value: 6, ..at }, "zzz", Some(Ordering::Less)),
            (&long, Standing { value: 4, ..at }, "a", Some(Ordering::Greater)),
            (
                &long,
                Standing { achieved_at: 0, ..at },
                "zzz",
                Some(Ordering::Less),
            ),
            (&long, at, "abcdefg", Some(Ordering::Less)),
            (&long, at, "abcdefgh-long", Some(Ordering::Equal)),
            (&long, at, "abcdefgi", Some(Ordering::Greater)),
            (&capped, at, &shared, None),
            (&capped, at, "x", Some(Ordering::Less)),
        ];
        for (bound, standing, player, expected) in cases {
            assert_eq!(
                bound.order_of(mode, &standing, player),
                expected,
                "{player} {standing:?}"
            );
        }
    }

    #[test]
    fn the_wire_form_round_trips_and_refuses_what_no_board_makes() {
        let mode = ScoreMode::Fastest;
        let entries = sorted(
            &BoardRules::new(mode),
            (0..25_000)
                .map(|i| {
                    let s = Standing {
                        value: (i * 7919) % 1_000,
                        achieved_at: i % 3,
                    };
                    (s, format!("player-{i}"))
                })
                .collect(),
        );
        let sketch = sketch_of(mode, &entries);
        let back = RankSketch::from_wire(sketch.to_wire()).unwrap();
        assert_eq!(back, sketch);
        let mut short = sketch.to_wire();
        short.bounds.pop();
        assert!(RankSketch::from_wire(short).is_none());
        let mut long_head = sketch.to_wire();
        long_head.bounds[0].head = Some(WireHead {
            bytes: alloc::vec![b'x'; MAX_HEAD + 1],
            cut: true,
            distinct: true,
        });
        long_head.bounds[0].time_step = Some(0);
        assert!(RankSketch::from_wire(long_head).is_none());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Every entry's interval holds its exact rank and is no wider than a step, on boards
        /// with heavy ties and ids sharing long prefixes; ids sharing more than a head may only
        /// widen it.
        #[test]
        fn every_interval_holds_the_exact_rank(
            mode in mode_strategy(),
            raw in proptest::collection::vec((0i64..40, 0i64..3, 0u32..60_000, 0u8..3), 1..30_000),
        ) {
            let r = BoardRules::new(mode);
            let entries = sorted(&r, raw.into_iter().map(|(v, t, id, kind)| {
                let player = match kind {
                    0 => format!("{id}"),
                    1 => format!("shared-prefix-{id}"),
                    _ => format!("{}-{id}", "z".repeat(MAX_HEAD)),
                };
                (Standing { value: v, achieved_at: t }, player)
            }).collect());
            let sketch = sketch_of(mode, &entries);
            let step = step(entries.len() as u64);
            for (i, (s, p)) in entries.iter().enumerate() {
                let found = sketch.interval(&r, s, p);
                let rank = i as u64 + 1;
                let bound = |k: u64| bound_at(mode, &entries, (k * step) as usize);
                prop_assert_eq!(interval_at(&r, entries.len() as u64, bound, s, p, rank), found);
                prop_assert!(found.contains(rank), "{p} rank {rank} not in {found:?}");
                if !p.starts_with('z') {
                    prop_assert!(found.width() <= step, "{p}: {found:?} wider than {step}");
                }
            }
        }
    }
}
