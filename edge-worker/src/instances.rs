//! The period instances an isolate has learned from the origin's heads, so that a read's `at`
//! is placed in the instance that holds it without asking the origin.
//!
//! A head names its instance's range, `[period_start, period_end)`. The edge keeps those
//! ranges per board and period kind (named by the head path without `at`) and asks for a placed
//! read's head in one canonical form, so every `at` of one instance shares one held head, one
//! Cache API entry and one instance followed at the origin. The calendar (time zones, ISO weeks,
//! months) stays the origin's: the edge only remembers ranges it was told, never computes one.
//!
//! The ranges of one period kind never overlap: learning a range drops every known range it
//! overlaps (the origin's newer word wins). Past the capacity, the range placed or learned
//! least recently goes, so readers naming ever new days cannot grow an isolate. The edge drops
//! the held heads of the ranges that go, so the two stay in step.

use std::collections::{BTreeMap, HashMap};

use standings_core::contract::head::Head;

/// One period instance's range, as a head gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    /// Its first ms, `None` when unbounded (all time).
    pub start_ms: Option<i64>,
    /// Its end (exclusive) in ms, `None` when unbounded.
    pub end_ms: Option<i64>,
}

impl Range {
    /// The range of the instance `head` names. O(1).
    pub fn of(head: &Head) -> Range {
        Range {
            start_ms: head.period_start_ms,
            end_ms: head.period_end_ms,
        }
    }

    /// Whether `at_ms` falls in the range. O(1).
    pub fn holds(&self, at_ms: i64) -> bool {
        self.start_ms.is_none_or(|start| start <= at_ms) && self.end_ms.is_none_or(|end| at_ms < end)
    }

    /// The key of the range among its period's: its start, `i64::MIN` for an unbounded one
    /// (no parsed time is that early).
    fn from(&self) -> i64 {
        self.start_ms.unwrap_or(i64::MIN)
    }

    /// Its end, `i64::MAX` for an unbounded one.
    fn to(&self) -> i64 {
        self.end_ms.unwrap_or(i64::MAX)
    }
}

/// A known range and when it was last placed or learned.
#[derive(Debug)]
struct Known {
    range: Range,
    last_use: u64,
}

/// The ranges learned, by period (a head path without `at`), least recently used first out.
#[derive(Debug)]
pub struct KnownInstances {
    capacity: usize,
    /// Counts uses, so that each use has its own place in `by_use`.
    clock: u64,
    /// Per period, its ranges by start.
    by_period: HashMap<String, BTreeMap<i64, Known>>,
    /// Every range by its last use: the period and the range's start.
    by_use: BTreeMap<u64, (String, i64)>,
}

impl KnownInstances {
    /// Nothing known, room for `capacity` ranges (at least one).
    pub fn new(capacity: usize) -> KnownInstances {
        KnownInstances {
            capacity: capacity.max(1),
            clock: 0,
            by_period: HashMap::new(),
            by_use: BTreeMap::new(),
        }
    }

    /// Ranges known now, of every period.
    pub fn len(&self) -> usize {
        self.by_use.len()
    }

    /// Whether nothing is known.
    pub fn is_empty(&self) -> bool {
        self.by_use.is_empty()
    }

    /// The known range of `period` that holds `at_ms`, marked as just used. O(log n).
    pub fn place(&mut self, period: &str, at_ms: i64) -> Option<Range> {
        let ranges = self.by_period.get_mut(period)?;
        let (_, known) = ranges.range_mut(..=at_ms).next_back()?;
        if !known.range.holds(at_ms) {
            return None;
        }
        self.clock += 1;
        self.by_use.remove(&known.last_use);
        known.last_use = self.clock;
        self.by_use
            .insert(self.clock, (period.to_string(), known.range.from()));
        Some(known.range)
    }

    /// Learns that `range` is an instance of `period`, marked as just used. Returns the ranges
    /// that went: those of `period` it overlaps (the same range learned again is not among
    /// them), then the least recently used past the capacity, each with its period. An empty
    /// range is not learned. O(log n) per range, plus one per range that goes.
    pub fn learn(&mut self, period: &str, range: Range) -> Vec<(String, Range)> {
        let mut gone = Vec::new();
        if range.from() >= range.to() {
            // No time falls in it, so nothing would be placed there; a head never names one.
            return gone;
        }
        self.clock += 1;
        let ranges = self.by_period.entry(period.to_string()).or_default();
        // The known ranges are disjoint, so those `range` overlaps start before its end and
        // are the last ones to do so, walking back while they end after its start.
        let overlapping: Vec<i64> = ranges
            .range(..range.to())
            .rev()
            .take_while(|(_, known)| known.range.to() > range.from())
            .map(|(from, _)| *from)
            .collect();
        for from in overlapping {
            if let Some(known) = ranges.remove(&from) {
                self.by_use.remove(&known.last_use);
                if known.range != range {
                    gone.push((period.to_string(), known.range));
                }
            }
        }
        ranges.insert(
            range.from(),
            Known {
                range,
                last_use: self.clock,
            },
        );
        self.by_use.insert(self.clock, (period.to_string(), range.from()));
        while self.by_use.len() > self.capacity {
            let Some((_, (oldest_period, from))) = self.by_use.pop_first() else {
                break;
            };
            if let Some(ranges) = self.by_period.get_mut(&oldest_period) {
                if let Some(known) = ranges.remove(&from) {
                    gone.push((oldest_period.clone(), known.range));
                }
                if ranges.is_empty() {
                    self.by_period.remove(&oldest_period);
                }
            }
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(start: i64, end: i64) -> Range {
        Range {
            start_ms: Some(start),
            end_ms: Some(end),
        }
    }

    /// Placing finds the range that holds the time (its start in, its end out), per period;
    /// learning an overlapping range replaces the ones it overlaps; past the capacity the
    /// least recently used range goes, a placement counting as a use.
    #[test]
    fn ranges_are_placed_replaced_and_evicted() {
        let mut known = KnownInstances::new(3);
        assert!(known.learn("daily", day(0, 10)).is_empty());
        assert!(known.learn("daily", day(10, 20)).is_empty());
        assert_eq!(known.place("daily", 0), Some(day(0, 10)));
        assert_eq!(known.place("daily", 10), Some(day(10, 20)));
        assert_eq!(known.place("daily", 20), None);
        assert_eq!(known.place("daily", -1), None);
        assert_eq!(known.place("weekly", 5), None, "another period knows nothing");
        assert!(
            known.learn("daily", day(0, 10)).is_empty(),
            "the same range again"
        );
        assert_eq!(
            known.learn("daily", day(5, 15)),
            vec![
                ("daily".to_string(), day(10, 20)),
                ("daily".to_string(), day(0, 10))
            ]
        );
        assert_eq!(known.place("daily", 4), None);
        assert_eq!(known.len(), 1);
        let all_time = Range {
            start_ms: None,
            end_ms: None,
        };
        known.learn("all", all_time);
        assert_eq!(known.place("all", i64::MIN), Some(all_time));
        assert_eq!(known.place("all", 253_402_207_200_000), Some(all_time));
        known.learn("daily", day(30, 40));
        assert_eq!(known.place("daily", 7), Some(day(5, 15)));
        assert_eq!(
            known.learn("daily", day(50, 60)),
            vec![("all".to_string(), all_time)],
            "the least recently used goes"
        );
        assert_eq!(known.len(), 3);
        assert_eq!(known.place("all", 0), None);
    }

    /// A plain model: every range in a list, scanned.
    #[derive(Default)]
    struct Model {
        clock: u64,
        ranges: Vec<(String, Range, u64)>,
    }

    impl Model {
        fn place(&mut self, period: &str, at: i64) -> Option<Range> {
            self.clock += 1;
            let clock = self.clock;
            let found = self
                .ranges
                .iter_mut()
                .find(|(p, r, _)| p == period && r.holds(at))?;
            found.2 = clock;
            Some(found.1)
        }

        fn learn(&mut self, period: &str, range: Range, capacity: usize) -> Vec<(String, Range)> {
            self.clock += 1;
            let overlaps = |r: &Range| r.from() < range.to() && range.from() < r.to();
            let mut gone: Vec<(String, Range)> = self
                .ranges
                .iter()
                .filter(|(p, r, _)| p == period && overlaps(r) && *r != range)
                .map(|(p, r, _)| (p.clone(), *r))
                .collect();
            self.ranges.retain(|(p, r, _)| !(p == period && overlaps(r)));
            self.ranges.push((period.to_string(), range, self.clock));
            while self.ranges.len() > capacity {
                let oldest = (0..self.ranges.len())
                    .min_by_key(|&i| self.ranges[i].2)
                    .unwrap_or_default();
                let (p, r, _) = self.ranges.remove(oldest);
                gone.push((p, r));
            }
            gone
        }
    }

    /// The same random placements and learnings, applied to the structure and to the model,
    /// give the same answers and drop the same ranges.
    #[test]
    fn agrees_with_a_plain_model() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |below: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % below
        };
        for capacity in [1, 2, 5, 16] {
            let mut known = KnownInstances::new(capacity);
            let mut model = Model::default();
            for _ in 0..4_000 {
                let period = ["daily", "weekly", "all"][next(3) as usize];
                if next(3) == 0 {
                    let range = match next(12) {
                        0 => Range {
                            start_ms: None,
                            end_ms: None,
                        },
                        _ => {
                            let start = next(200) as i64 - 100;
                            day(start, start + 1 + next(30) as i64)
                        }
                    };
                    let mut ours = known.learn(period, range);
                    let mut theirs = model.learn(period, range, capacity);
                    ours.sort_by_key(|(p, r)| (p.clone(), r.from()));
                    theirs.sort_by_key(|(p, r)| (p.clone(), r.from()));
                    assert_eq!(ours, theirs, "learning {range:?} in {period}");
                } else {
                    let at = next(260) as i64 - 130;
                    // The model ticks its clock on every placement, found or not, and the
                    // structure only on those found: both keep the same order of uses.
                    assert_eq!(known.place(period, at), model.place(period, at), "{period} {at}");
                }
                assert_eq!(known.len(), model.ranges.len());
            }
        }
    }
}
