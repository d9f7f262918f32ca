//! What one change did that players care about: the bands a board declares that players
//! entered or left, and the players a mover passed. Read from the board just after the change,
//! with the change's delta: every other player stands where they stood one version before, so
//! their ranks then follow from the mover's two places. O(log n) per band and per follower.

use super::*;

/// A band a board declares: its top `k` players, or its top share of players.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Band {
    /// Ranks 1 to `k`.
    Top(u64),
    /// The best `basis_points` / 100 percent of ranked players, rounded up (1 % of 250 players
    /// is the top 3); at least the best player once anyone is ranked.
    Percent(u32),
}

impl Band {
    /// The last rank in the band on a board of `total` players. O(1).
    pub fn last_rank(&self, total: u64) -> u64 {
        match *self {
            Band::Top(k) => k,
            Band::Percent(bp) => (total as u128 * bp as u128).div_ceil(10_000) as u64,
        }
    }
}

/// A player who entered or left a band.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Crossing<'a> {
    /// The band's place in the list given.
    pub band: usize,
    /// The player.
    pub player: &'a str,
    /// Entered (else left).
    pub entered: bool,
    /// Their rank one version before (`None`: unranked).
    pub rank_before: Option<u64>,
    /// Their rank now (`None`: unranked).
    pub rank_after: Option<u64>,
}

/// A player passed by the mover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overtake<'a> {
    /// Who was passed.
    pub player: &'a str,
    /// Their rank one version before.
    pub rank_before: u64,
    /// Their rank now (one lower).
    pub rank_after: u64,
    /// The mover's rank one version before (`None`: unranked).
    pub by_rank_before: Option<u64>,
    /// The mover's rank now.
    pub by_rank_after: u64,
}

impl Board {
    /// Whether `a` sorts strictly before `b` in the total order. O(length of the ids).
    fn precedes(&self, a: (&Standing, &str), b: (&Standing, &str)) -> bool {
        self.rules.compare(a, b) == Ordering::Less
    }

    /// The mover's rank one version before, from its standing then. O(log n).
    fn mover_rank_before(&self, delta: &Delta) -> Option<u64> {
        let before = delta.before?;
        let player = delta.player.as_str();
        let counted = self.index.count_before(&before, player, false);
        // The mover's own entry now is among those counted when it sorts before its old place.
        let own = delta
            .after
            .is_some_and(|a| self.precedes((&a, player), (&before, player)));
        Some(counted - u64::from(own) + 1)
    }

    /// The rank one version before of a player the delta did not change, ranked now at `rank`
    /// with `standing`. O(length of the ids).
    fn other_rank_before(&self, delta: &Delta, standing: &Standing, player: &str, rank: u64) -> u64 {
        let mover = delta.player.as_str();
        let ahead_now = delta
            .after
            .is_some_and(|a| self.precedes((&a, mover), (standing, player)));
        let ahead_then = delta
            .before
            .is_some_and(|b| self.precedes((&b, mover), (standing, player)));
        rank - u64::from(ahead_now) + u64::from(ahead_then)
    }

    /// The players who entered or left each of `bands` through `delta`, the change that made
    /// this board's current version; empty for a delta of another version. At most the mover
    /// and two others per band: only they can cross a boundary that moves by at most one.
    /// O(bands x log n).
    pub fn band_crossings(&self, delta: &Delta, bands: &[Band]) -> Vec<Crossing<'_>> {
        let mut out = Vec::new();
        if delta.board_version != self.version {
            return out;
        }
        let mover = delta.player.as_str();
        let total_after = self.total_players();
        let total_before = total_after - u64::from(delta.after.is_some()) + u64::from(delta.before.is_some());
        let mover_before = self.mover_rank_before(delta);
        let mover_after = self.index.rank_of_player(mover);
        for (i, band) in bands.iter().enumerate() {
            let (last_before, last_after) = (band.last_rank(total_before), band.last_rank(total_after));
            let inside_before = mover_before.is_some_and(|r| r <= last_before);
            let inside_after = mover_after.is_some_and(|r| r <= last_after);
            // The delta's player is interned (the board changed them), so the id borrows the board.
            let own = self.index.member(mover).map(|m| self.index.player(m));
            if let (true, Some(player)) = (inside_before != inside_after, own) {
                out.push(Crossing {
                    band: i,
                    player,
                    entered: inside_after,
                    rank_before: mover_before,
                    rank_after: mover_after,
                });
            }
            // With the board's size unchanged, the others keep their places unless the mover
            // passed them: the players at the boundary did not move when the mover stayed on one
            // side of them.
            if let (Some(b), Some(a)) = (mover_before, mover_after)
                && last_before == last_after
                && (b.max(a) < last_after || b.min(a) > last_after.saturating_add(1))
            {
                continue;
            }
            // Only the players now at the band's last rank and the one after can have crossed:
            // the others moved by at most one place while the boundary moved by at most one,
            // and never both towards each other (the mover either joined or left the board).
            let first = last_after.max(1);
            let span = usize::try_from(last_after.saturating_add(1) - first + 1).unwrap_or(usize::MAX);
            for entry in self.index.range(first, span) {
                if entry.player == mover {
                    continue;
                }
                let then = self.other_rank_before(delta, &entry.standing(), entry.player, entry.rank);
                let (was, is) = (then <= last_before, entry.rank <= last_after);
                if was != is {
                    out.push(Crossing {
                        band: i,
                        player: entry.player,
                        entered: is,
                        rank_before: Some(then),
                        rank_after: Some(entry.rank),
                    });
                }
            }
        }
        out
    }

    /// The players among `watching` (those who follow the mover: the mover is on their friend
    /// list) whom `delta`, the change that made this board's current version, carried the
    /// mover past: behind them one version before, ahead of them now. Empty for a delta of
    /// another version or one that moved nobody up. O(followers x log n).
    pub fn overtakes<'q>(&'q self, delta: &Delta, watching: &[&'q str]) -> Vec<Overtake<'q>> {
        let mut out = Vec::new();
        let Some(after) = delta.after else {
            return out;
        };
        let mover = delta.player.as_str();
        if delta.board_version != self.version
            || delta
                .before
                .is_some_and(|b| !self.precedes((&after, mover), (&b, mover)))
        {
            return out;
        }
        let Some(by_rank_after) = self.index.rank_of_player(mover) else {
            return out;
        };
        let by_rank_before = self.mover_rank_before(delta);
        for &player in watching {
            if player == mover {
                continue;
            }
            let Some(member) = self.index.member(player) else {
                continue;
            };
            let Some(standing) = self.index.standing_of(member) else {
                continue;
            };
            // Decided on standings alone; a rank is looked up only for a player passed.
            let passed = self.precedes((&after, mover), (&standing, player))
                && delta
                    .before
                    .is_none_or(|b| self.precedes((&standing, player), (&b, mover)));
            if let Some(rank) = passed.then(|| self.index.rank_of(member)).flatten() {
                out.push(Overtake {
                    player,
                    rank_before: rank - 1,
                    rank_after: rank,
                    by_rank_before,
                    by_rank_after,
                });
            }
        }
        out
    }
}
