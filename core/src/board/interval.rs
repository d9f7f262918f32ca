//! A player's rank as a guaranteed interval, and the sketch the edge answers it from: both
//! search the same bounds ([`crate::interval`]), the board's taken from its index as visited.

use super::*;
use crate::interval::{self, Bound, RankInterval, RankSketch};

/// One player's standing with a rank interval in place of the exact rank.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlayerInterval<'a> {
    /// The version of the answer.
    pub board_version: u64,
    /// The player.
    pub player: &'a str,
    /// The player's aggregate.
    pub standing: Standing,
    /// The player's name, country and metadata, when set.
    pub info: EntryInfo<'a>,
    /// The ranks the player's exact rank lies within, at `board_version`.
    pub interval: RankInterval,
    /// Ranked players on the board.
    pub total_players: u64,
}

impl Board {
    /// A player's rank interval at the current version, or `None` when unranked: exactly the
    /// interval [`Board::rank_sketch`] gives at this version. O(log n), from the two bounds
    /// around the player's rank (the search, O(log bounds × log n), only when they cannot
    /// tell).
    pub fn rank_interval(&self, player: &str) -> Option<PlayerInterval<'_>> {
        let member = self.index.member(player)?;
        let standing = self.index.standing_of(member)?;
        let rank = self.index.rank_of(member)?;
        let total = self.total_players();
        let bound = |k| self.bound(k, interval::step(total));
        Some(PlayerInterval {
            board_version: self.version,
            player: self.index.player(member),
            standing,
            info: self.info_of(member),
            interval: interval::interval_at(&self.rules, total, bound, &standing, player, rank),
            total_players: total,
        })
    }

    /// Every bound of the current version, for readers without the board. O(bounds × log n).
    pub fn rank_sketch(&self) -> RankSketch {
        let total = self.total_players();
        let step = interval::step(total);
        RankSketch::of(total, |k| self.bound(k, step))
    }

    /// Bound `k`: the entry at rank `k * step + 1` told from its neighbours, `k` being within
    /// the board's bounds. O(log n).
    fn bound(&self, k: u64, step: u64) -> Bound {
        let rank = k * step + 1;
        let around = self
            .index
            .range(rank.saturating_sub(1).max(1), if rank > 1 { 3 } else { 2 });
        fn key<'e>(e: &RankedEntry<'e>) -> (Standing, &'e str) {
            (e.standing(), e.player)
        }
        let at = around.iter().position(|e| e.rank == rank);
        let Some(at) = at else {
            // Past the board, which the callers never ask: a bound below every entry.
            return Bound::of(
                self.rules.score_mode,
                (worst(self.rules.score_mode), ""),
                None,
                None,
            );
        };
        let before = at.checked_sub(1).and_then(|i| around.get(i)).map(key);
        Bound::of(
            self.rules.score_mode,
            key(&around[at]),
            before,
            around.get(at + 1).map(key),
        )
    }
}

/// A standing below every other in `mode`'s order.
fn worst(mode: ScoreMode) -> Standing {
    Standing {
        value: mode.value_of(i64::MAX),
        achieved_at: i64::MAX,
    }
}
