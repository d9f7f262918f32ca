//! The ranked index: interned players in an order-statistic B+tree, sorted by one board's
//! total order. It knows nothing of events or versions; [`crate::Board`] drives it.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::error::CapacityError;
use crate::interner::{Interner, MemberId, member_bytes};
use crate::join::Join;
use crate::profile::EntryInfo;
use crate::rules::{ScoreMode, Standing};
pub(crate) use crate::shards::ShardInfo;
use crate::shards::{Shards, Staged};
use crate::tree::{Key, Probe, Tree};

/// One ranked entry, borrowed from the index that produced it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RankedEntry<'a> {
    /// 1-based rank in the total order; unique per player.
    pub rank: u64,
    /// The player.
    pub player: &'a str,
    /// The aggregate value.
    pub value: i64,
    /// When the aggregate's value was achieved (ms since the Unix epoch).
    pub achieved_at: i64,
    /// The player's name, country and metadata, when set (the index itself holds none).
    pub info: EntryInfo<'a>,
}

impl RankedEntry<'_> {
    /// The entry's place in the order, without its player. O(1).
    pub fn standing(&self) -> Standing {
        Standing {
            value: self.value,
            achieved_at: self.achieved_at,
        }
    }
}

/// Where a value sits by value alone, ignoring time and player: what "tied" means to a person.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ValueRanks {
    /// 1 + the number of players with a strictly better value (1, 2, 2, 4).
    pub competition_rank: u64,
    /// 1 + the number of distinct strictly better values (1, 2, 2, 3).
    pub dense_rank: u64,
    /// The share of ranked players, in percent, whose value is no better than this one
    /// (100 for the best, 100/n for a lone last); 0 on an empty board.
    pub percentile: f64,
}

impl ValueRanks {
    /// The ranks of a value `better` entries (of `distinct_better` values) are better than, among
    /// `total`. O(1).
    pub(crate) fn of(better: usize, distinct_better: usize, total: usize) -> ValueRanks {
        let percentile = if total == 0 {
            0.0
        } else {
            (total - better) as f64 * 100.0 / total as f64
        };
        ValueRanks {
            competition_rank: better as u64 + 1,
            dense_rank: distinct_better as u64 + 1,
            percentile,
        }
    }
}

/// Bytes the index holds, split the way the memory target counts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryUsage {
    /// The ranked structure: leaves, inner nodes and the member-to-leaf locator.
    pub index_bytes: usize,
    /// The player id strings themselves, in one arena.
    pub player_id_bytes: usize,
    /// The interner's table and offsets (string to member id and back).
    pub interner_bytes: usize,
}

/// Players ranked by one score mode's total order. Every operation states its cost.
#[derive(Clone)]
pub struct RankedIndex {
    mode: ScoreMode,
    names: Interner,
    tree: Shards,
    /// While a group is staged ([`RankedIndex::stage`]): each changed member's key in the
    /// shards and its key now, the shards untouched until [`RankedIndex::settle`].
    staged: Option<BTreeMap<MemberId, Staged>>,
}

impl RankedIndex {
    /// An empty index ranking by `mode`.
    pub fn new(mode: ScoreMode) -> RankedIndex {
        RankedIndex {
            mode,
            names: Interner::default(),
            tree: Shards::default(),
            staged: None,
        }
    }

    /// Splits the index into `shards` score ranges (1 to [`crate::shards::MAX_SHARDS`]; 1 is
    /// whole), re-cutting the entries evenly when the count changes. Every answer stays the
    /// same. O(n) when the count changes, O(1) otherwise.
    pub fn split(&mut self, shards: usize) {
        self.tree.split(&self.names, shards);
    }

    /// Each shard's entries and first rank, best range first. O(shards).
    pub fn shards(&self) -> Vec<ShardInfo> {
        self.tree.info()
    }

    /// The number of shards (1 for a whole board). O(1).
    pub fn shard_count(&self) -> usize {
        self.tree.count()
    }

    /// Cuts shards `left` and `left + 1` again at the middle of their entries: a boundary
    /// moved by hand (the index moves them itself as the population shifts). Every answer stays
    /// the same. O(the two shards' entries); `false` when there is no shard `left + 1`.
    pub fn recut(&mut self, left: usize) -> bool {
        if left + 1 >= self.tree.count() {
            return false;
        }
        self.tree.recut(&self.names, left);
        true
    }

    /// The score mode whose order this index keeps.
    pub fn mode(&self) -> ScoreMode {
        self.mode
    }

    /// The number of ranked players. O(1).
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    /// Whether no player is ranked. O(1).
    pub fn is_empty(&self) -> bool {
        self.tree.len() == 0
    }

    /// The number of distinct players ever seen, ranked or not. O(1).
    pub fn players_seen(&self) -> usize {
        self.names.len()
    }

    /// The member id of a player seen before. O(1) expected.
    pub fn member(&self, player: &str) -> Option<MemberId> {
        self.names.lookup(player)
    }

    /// The member id of a player, interning it if new. O(1) expected.
    pub fn intern(&mut self, player: &str) -> Result<MemberId, CapacityError> {
        self.names.intern(player)
    }

    /// The player id of a member. O(1).
    pub fn player(&self, member: MemberId) -> &str {
        self.names.get(member)
    }

    /// A ranked member's aggregate (while a group is staged, as the group left it). O(1): a
    /// locator read and one leaf scan.
    pub fn standing_of(&self, member: MemberId) -> Option<Standing> {
        self.key_now(member).map(|k| self.standing(k))
    }

    fn key_now(&self, member: MemberId) -> Option<Key> {
        match self.staged.as_ref().and_then(|s| s.get(&member)) {
            Some(staged) => staged.now,
            None => self.tree.key_of(member),
        }
    }

    /// Holds back the changes [`RankedIndex::set`] makes until [`RankedIndex::settle`], which
    /// applies them to every shard at once. Until then only `set`, `standing_of`, `intern`,
    /// `member` and `player` answer for the group; every other read answers as before it.
    pub fn stage(&mut self) {
        self.staged.get_or_insert_default();
    }

    /// Applies the changes staged since [`RankedIndex::stage`], each shard on a thread of
    /// `join`'s: a member whose key changed leaves its shard and enters its new one in the
    /// same settle, so it is ranked exactly once after it. O(k log k + k log n spread over
    /// the shards, for k members changed).
    pub fn settle(&mut self, join: &(dyn Join + Sync)) {
        let Some(staged) = self.staged.take() else {
            return;
        };
        let changes: Vec<Staged> = staged.into_values().filter(|s| s.was != s.now).collect();
        if !changes.is_empty() {
            self.tree.apply_group(&self.names, &changes, join);
        }
    }

    /// A player's aggregate, if ranked. O(1) expected.
    pub fn standing_of_player(&self, player: &str) -> Option<Standing> {
        self.standing_of(self.member(player)?)
    }

    /// Sets (or with `None`, clears) a member's aggregate and returns the previous one; while a
    /// group is staged, only records it. O(log n).
    pub fn set(&mut self, member: MemberId, standing: Option<Standing>) -> Option<Standing> {
        let key = standing.map(|s| Key {
            order: self.mode.order_key(s.value),
            time: s.achieved_at,
            member,
        });
        if let Some(staged) = self.staged.as_mut() {
            let change = staged.entry(member).or_insert_with(|| {
                let was = self.tree.key_of(member);
                Staged { was, now: was }
            });
            let before = change.now;
            change.now = key;
            return before.map(|k| self.standing(k));
        }
        let before = self.tree.remove(member).map(|k| self.standing(k));
        if let Some(key) = key {
            self.tree.insert(&self.names, key);
        }
        before
    }

    /// A member's 1-based rank. O(log n), bottom up from the member's leaf.
    #[inline]
    pub fn rank_of(&self, member: MemberId) -> Option<u64> {
        self.tree.position_of(member).map(|p| p as u64 + 1)
    }

    /// A player's 1-based rank. O(log n).
    pub fn rank_of_player(&self, player: &str) -> Option<u64> {
        self.rank_of(self.member(player)?)
    }

    /// The entry at a 1-based rank. O(log n).
    pub fn entry_at(&self, rank: u64) -> Option<RankedEntry<'_>> {
        let position = usize::try_from(rank.checked_sub(1)?).ok()?;
        let key = self.tree.key_at(position)?;
        Some(self.entry(position, key))
    }

    /// Up to `limit` entries from the 1-based rank `first` on, in rank order.
    /// O(log n + limit).
    pub fn range(&self, first: u64, limit: usize) -> Vec<RankedEntry<'_>> {
        let mut keys = Vec::with_capacity(limit.min(self.len()));
        let Some(start) = first.checked_sub(1).and_then(|p| usize::try_from(p).ok()) else {
            return Vec::new();
        };
        self.tree.range(start, limit, &mut keys);
        keys.iter()
            .enumerate()
            .map(|(i, k)| self.entry(start + i, *k))
            .collect()
    }

    /// Up to `limit` member ids from the top, in rank order, without resolving player ids.
    /// O(log n + limit). The building block of a top-N page.
    pub fn top_members(&self, limit: usize, out: &mut Vec<(MemberId, Standing)>) {
        let mut keys = Vec::with_capacity(limit.min(self.len()));
        self.tree.range(0, limit, &mut keys);
        out.extend(keys.iter().map(|k| (k.member, self.standing(*k))));
    }

    /// Calls `visit` with every ranked member and aggregate, in rank order. O(n), walking the
    /// leaves in order with a small buffer, so it allocates nothing in proportion to n.
    pub(crate) fn for_each_ranked(&self, mut visit: impl FnMut(MemberId, Standing)) {
        const STEP: usize = 4_096;
        let mut keys = Vec::with_capacity(STEP.min(self.len()));
        let mut start = 0;
        while start < self.len() {
            keys.clear();
            self.tree.range(start, STEP, &mut keys);
            for k in &keys {
                visit(k.member, self.standing(*k));
            }
            start += keys.len().max(1);
        }
    }

    /// How many ranked players sort strictly before the position `(standing, player)` names
    /// (with `inclusive`, at or before), whether or not that player is ranked. O(log n).
    pub fn count_before(&self, standing: &Standing, player: &str, inclusive: bool) -> u64 {
        let probe = Probe {
            order: self.mode.order_key(standing.value),
            time: standing.achieved_at,
            player,
        };
        self.tree.count_before(&self.names, &probe, inclusive) as u64
    }

    /// Competition rank, dense rank and percentile of a value. O(log n).
    pub fn value_ranks(&self, value: i64) -> ValueRanks {
        let (better, distinct_better) = self.tree.count_below_order(self.mode.order_key(value));
        ValueRanks::of(better, distinct_better, self.len())
    }

    /// Replaces the whole index with the given aggregates, in any order. A player listed twice
    /// keeps the first aggregate listed. O(n log n) for the sort, then O(n) to pack the tree;
    /// far faster than n inserts, and what a rebuild or a snapshot load uses.
    pub fn load<'p>(
        &mut self,
        entries: impl IntoIterator<Item = (&'p str, Standing)>,
    ) -> Result<(), CapacityError> {
        let mut keys = Vec::new();
        let mut seen = Vec::new();
        for (player, s) in entries {
            let member = self.names.intern(player)?;
            if seen.len() <= member as usize {
                seen.resize(member as usize + 1, false);
            }
            if core::mem::replace(&mut seen[member as usize], true) {
                continue;
            }
            keys.push(Key {
                order: self.mode.order_key(s.value),
                time: s.achieved_at,
                member,
            });
        }
        self.load_keys(keys);
        Ok(())
    }

    /// Replaces the whole index with the aggregates of interned members: `aggregates[m]` is
    /// member `m`'s, `None` for unranked. O(n log n); what a replay of the event log uses.
    pub fn load_members(&mut self, aggregates: &[Option<Standing>]) {
        let keys = aggregates
            .iter()
            .enumerate()
            .take(self.names.len())
            .filter_map(|(m, s)| {
                s.map(|s| Key {
                    order: self.mode.order_key(s.value),
                    time: s.achieved_at,
                    member: m as MemberId,
                })
            })
            .collect();
        self.load_keys(keys);
    }

    /// The tree of `ranked` (distinct members, in any order; already in rank order is O(n)),
    /// over ids laid out as the interner keeps them, which break ties, cut evenly into `shards`
    /// score ranges: everything of an index but the interner's table, so that a start builds
    /// the two at once.
    pub(crate) fn tree_of(
        mode: ScoreMode,
        ranked: Vec<(MemberId, Standing)>,
        arena: &[u8],
        ends: &[u32],
        shards: usize,
    ) -> Shards {
        let keys = ranked
            .into_iter()
            .map(|(member, s)| Key {
                order: mode.order_key(s.value),
                time: s.achieved_at,
                member,
            })
            .collect();
        let keys = sort_keys(keys, |m| member_bytes(arena, ends, m));
        let mut tree = Shards::new(shards);
        tree.bulk_load(keys, ends.len());
        tree
    }

    /// An index of `names` and the tree [`RankedIndex::tree_of`] built over its ids. O(1).
    pub(crate) fn from_parts(mode: ScoreMode, mut names: Interner, tree: Shards) -> RankedIndex {
        names.shrink_to_fit();
        RankedIndex {
            mode,
            names,
            tree,
            staged: None,
        }
    }

    /// The interned ids as the interner lays them out: every id's bytes back to back, and
    /// where each member's ends. O(1).
    pub(crate) fn names_laid_out(&self) -> (&[u8], &[u32]) {
        self.names.laid_out()
    }

    /// Sorts distinct members' keys into the total order and packs the tree.
    fn load_keys(&mut self, keys: Vec<Key>) {
        let names = &self.names;
        let keys = sort_keys(keys, |m| names.get(m).as_bytes());
        self.names.shrink_to_fit();
        self.tree.bulk_load(keys, self.names.len());
    }

    /// Packed copies of the shards worth packing ([`Tree::packed`]), when any is. O(n), under a
    /// shared borrow.
    pub(crate) fn packed_shards(&self) -> Option<Vec<Option<Tree>>> {
        self.tree.packed(self.names.len())
    }

    /// Swaps in packed copies of these very shards.
    pub(crate) fn replace_packed(&mut self, packed: Vec<Option<Tree>>) {
        self.tree.replace(packed);
    }

    /// The bytes held, by part. O(1).
    pub fn memory(&self) -> MemoryUsage {
        let (player_id_bytes, interner_bytes) = self.names.memory();
        MemoryUsage {
            index_bytes: self.tree.memory(),
            player_id_bytes,
            interner_bytes,
        }
    }

    #[inline]
    fn standing(&self, key: Key) -> Standing {
        Standing {
            value: self.mode.value_of(key.order),
            achieved_at: key.time,
        }
    }

    /// The interner every tree of the board compares by. O(1).
    pub(crate) fn names(&self) -> &Interner {
        &self.names
    }

    /// The entry at 0-based `position` holding `key`, without extras. O(1).
    pub(crate) fn entry(&self, position: usize, key: Key) -> RankedEntry<'_> {
        RankedEntry {
            rank: position as u64 + 1,
            player: self.names.get(key.member),
            value: self.mode.value_of(key.order),
            achieved_at: key.time,
            info: EntryInfo::NONE,
        }
    }

    /// Checks every structural invariant of the tree. O(n). For tests.
    #[cfg(test)]
    pub(crate) fn check(&self) {
        self.tree.check(&self.names);
    }

    /// Leaves in use. For tests.
    #[cfg(test)]
    pub(crate) fn leaves_in_use(&self) -> usize {
        self.tree.leaves_in_use()
    }
}

/// Sorts distinct members' keys into the total order. The sort runs on the integer part of the
/// key; only runs of equal value and time, rare in practice, are then ordered by the player id
/// bytes `id` gives.
fn sort_keys<'a>(mut keys: Vec<Key>, id: impl Fn(MemberId) -> &'a [u8]) -> Vec<Key> {
    keys.sort_unstable_by_key(|k| (k.order, k.time));
    let mut start = 0;
    while start < keys.len() {
        let (order, time) = (keys[start].order, keys[start].time);
        let end = start + keys[start..].partition_point(|k| k.order == order && k.time == time);
        if end - start > 1 {
            keys[start..end].sort_unstable_by(|a, b| id(a.member).cmp(id(b.member)));
        }
        start = end;
    }
    keys
}

#[cfg(test)]
mod tests {
    use alloc::string::{String, ToString};
    use alloc::vec::Vec;

    use proptest::prelude::*;

    use super::*;
    use crate::rules::{BoardRules, mode_strategy};

    /// The plain model: every ranked player in a Vec, sorted by the board comparator.
    struct Model {
        rules: BoardRules,
        entries: Vec<(String, Standing)>,
    }

    impl Model {
        fn set(&mut self, player: &str, standing: Option<Standing>) {
            self.entries.retain(|(p, _)| p != player);
            if let Some(s) = standing {
                self.entries.push((player.to_string(), s));
            }
            let rules = self.rules;
            self.entries
                .sort_by(|a, b| rules.compare((&a.1, &a.0), (&b.1, &b.0)));
        }

        fn value_ranks(&self, value: i64) -> (u64, u64) {
            let mode = self.rules.score_mode;
            let better: Vec<i64> = self
                .entries
                .iter()
                .map(|(_, s)| s.value)
                .filter(|&v| mode.better_value(v, value))
                .collect();
            let mut distinct = better.clone();
            distinct.dedup();
            (better.len() as u64 + 1, distinct.len() as u64 + 1)
        }
    }

    fn compare_all(index: &RankedIndex, model: &Model, probe_values: &[i64]) {
        index.check();
        assert_eq!(index.len(), model.entries.len());
        let all = index.range(1, usize::MAX);
        assert_eq!(all.len(), model.entries.len());
        for (i, (entry, (player, standing))) in all.iter().zip(&model.entries).enumerate() {
            assert_eq!(entry.rank, i as u64 + 1);
            assert_eq!(entry.player, player);
            assert_eq!(
                (entry.value, entry.achieved_at),
                (standing.value, standing.achieved_at)
            );
            assert_eq!(index.rank_of_player(player), Some(i as u64 + 1));
            assert_eq!(index.standing_of_player(player), Some(*standing));
            assert_eq!(index.entry_at(i as u64 + 1).as_ref(), Some(entry));
            assert_eq!(index.count_before(standing, player, false), i as u64);
            assert_eq!(index.count_before(standing, player, true), i as u64 + 1);
        }
        assert_eq!(index.entry_at(model.entries.len() as u64 + 1), None);
        assert_eq!(index.entry_at(0), None);
        for &v in probe_values {
            let ranks = index.value_ranks(v);
            let (competition, dense) = model.value_ranks(v);
            assert_eq!(
                (ranks.competition_rank, ranks.dense_rank),
                (competition, dense),
                "value {v}"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Random sets and clears agree with a sorted-Vec model on every query, ties included,
        /// whole or split into score-range shards, with boundaries moved and the board split
        /// again along the way.
        #[test]
        fn index_matches_sorted_vec_model(
            mode in mode_strategy(),
            shards in 1usize..6,
            ops in prop::collection::vec((0u32..400, prop::option::weighted(0.8, (-5i64..5, 0i64..4))), 1..1500),
        ) {
            let mut index = RankedIndex::new(mode);
            index.split(shards);
            // Boundaries move a few entries at a time, so moves span many changes.
            index.tree.set_move_step(1 + shards * 3);
            let mut model = Model { rules: BoardRules::new(mode), entries: Vec::new() };
            for (i, (player, standing)) in ops.iter().enumerate() {
                let name = alloc::format!("p{player}");
                let standing = standing.map(|(value, achieved_at)| Standing { value, achieved_at });
                let member = index.intern(&name).unwrap();
                let before = index.set(member, standing);
                let expected_before = model.entries.iter().find(|(p, _)| *p == name).map(|(_, s)| *s);
                prop_assert_eq!(before, expected_before);
                model.set(&name, standing);
                if i % 97 == 0 {
                    compare_all(&index, &model, &[-6, -5, 0, 3, 4, 5]);
                }
                if i % 211 == 210 {
                    index.recut(i % shards);
                }
                if i == 700 {
                    index.split(shards + 2);
                }
            }
            compare_all(&index, &model, &[-6, -5, -1, 0, 1, 4, 5]);
        }
    }

    /// A [`Join`] whose two sides run in an order a test chose, one bit per join, so that a
    /// property test walks the orders in which shards make progress.
    struct Interleaved(core::sync::atomic::AtomicU64);

    impl Join for Interleaved {
        fn join(&self, a: &mut (dyn FnMut() + Send), b: &mut (dyn FnMut() + Send)) {
            let bits = self.0.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
            if bits.count_ones().is_multiple_of(2) {
                a();
                b();
            } else {
                b();
                a();
            }
        }

        /// Cut down to single shards, so that every shard's progress is ordered.
        fn threads(&self) -> usize {
            crate::shards::MAX_SHARDS
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The cut: groups of changes settled with the shards progressing in any order (and on
        /// threads) leave every ranked player in exactly one shard, in its range, and the index
        /// equal to the model after every group, whatever the moves within a group (a player
        /// changed several times, across boundaries and back, cleared and ranked again).
        #[test]
        fn any_interleaving_of_shard_progress_ranks_each_player_once(
            mode in mode_strategy(),
            shards in 2usize..7,
            order in any::<u64>(),
            groups in prop::collection::vec(
                prop::collection::vec((0u32..300, prop::option::weighted(0.85, (-50i64..50, 0i64..3))), 1..120),
                1..30,
            ),
        ) {
            let mut index = RankedIndex::new(mode);
            index.split(shards);
            index.tree.set_move_step(1 + shards * 5);
            let mut model = Model { rules: BoardRules::new(mode), entries: Vec::new() };
            let interleaved = Interleaved(core::sync::atomic::AtomicU64::new(order));
            for (g, group) in groups.iter().enumerate() {
                index.stage();
                for (player, standing) in group {
                    let name = alloc::format!("p{player}");
                    let standing = standing.map(|(value, achieved_at)| Standing { value, achieved_at });
                    let member = index.intern(&name).unwrap();
                    let expected_before = model.entries.iter().find(|(p, _)| *p == name).map(|(_, s)| *s);
                    prop_assert_eq!(index.set(member, standing), expected_before);
                    prop_assert_eq!(index.standing_of(member), standing);
                    model.set(&name, standing);
                }
                if g % 2 == 0 {
                    index.settle(&interleaved);
                } else {
                    index.settle(&crate::Threads(2));
                }
                let held: usize = index.shards().iter().map(|s| s.entries as usize).sum();
                prop_assert_eq!(held, model.entries.len());
                compare_all(&index, &model, &[-51, 0, 49]);
            }
        }
    }

    /// A deep tree (three levels and more) survives long random churn, including emptying it,
    /// whole and split.
    #[test]
    fn deep_tree_survives_churn_and_emptying() {
        for shards in [1, 4] {
            deep_churn(shards);
        }
    }

    fn deep_churn(shards: usize) {
        let mut index = RankedIndex::new(ScoreMode::Highest);
        index.split(shards);
        let mut model = Model {
            rules: BoardRules::new(ScoreMode::Highest),
            entries: Vec::new(),
        };
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let players = 12_000u64;
        for round in 0..60_000u64 {
            let p = next() % players;
            let name = alloc::format!("player-{p:05}");
            let standing = if next() % 5 == 0 {
                None
            } else {
                Some(Standing {
                    value: (next() % 50) as i64,
                    achieved_at: (next() % 3) as i64,
                })
            };
            let member = index.intern(&name).unwrap();
            index.set(member, standing);
            model.set(&name, standing);
            if round % 20_000 == 0 {
                compare_all(&index, &model, &[0, 25, 49, 50]);
            }
        }
        compare_all(&index, &model, &[0, 25, 49, 50]);
        // Empty it completely, checking along the way.
        for p in 0..players {
            let name = alloc::format!("player-{p:05}");
            let member = index.intern(&name).unwrap();
            index.set(member, None);
            model.set(&name, None);
            if p % 3_000 == 0 {
                compare_all(&index, &model, &[10]);
            }
        }
        compare_all(&index, &model, &[10]);
        assert!(index.is_empty());
    }

    /// Bulk loading gives the same index as inserting one by one.
    #[test]
    fn bulk_load_equals_incremental_inserts() {
        let mut incremental = RankedIndex::new(ScoreMode::Fastest);
        let mut aggregates = Vec::new();
        for i in 0..10_000i64 {
            let name = alloc::format!("p{}", (i * 7919) % 10_007);
            let standing = Standing {
                value: (i * 31) % 97,
                achieved_at: i % 5,
            };
            let member = incremental.intern(&name).unwrap();
            if incremental.standing_of(member).is_none() {
                incremental.set(member, Some(standing));
                aggregates.push((name, standing));
            }
        }
        let mut loaded = RankedIndex::new(ScoreMode::Fastest);
        loaded
            .load(aggregates.iter().map(|(p, s)| (p.as_str(), *s)))
            .unwrap();
        loaded.check();
        assert_eq!(loaded.range(1, usize::MAX), incremental.range(1, usize::MAX));
        // And it keeps working after the load.
        let member = loaded.intern("newcomer").unwrap();
        loaded.set(
            member,
            Some(Standing {
                value: -1,
                achieved_at: 0,
            }),
        );
        loaded.check();
        assert_eq!(loaded.rank_of_player("newcomer"), Some(1));
    }

    /// Random inserts leave the leaves about three quarters full. A repacked board answers
    /// exactly the same (ranks, version, digest) from full leaves, keeps working (the next
    /// inserts split full leaves), and a copy made before a change is refused.
    #[test]
    fn a_repacked_board_answers_the_same_in_less_memory() {
        use crate::board::Board;
        use crate::event::ScoreEvent;
        let event = |i: u64| {
            let player = alloc::format!("p{}", (i * 7919) % 15_013);
            let value = ((i * 31) % 997) as i64;
            ScoreEvent::new(&alloc::format!("e{i}"), &player, value, (i % 13) as i64).unwrap()
        };
        let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
        for i in 0..20_000 {
            board.apply(&event(i)).unwrap();
        }
        let stale = board.repack().expect("random inserts leave room to pack");
        board.apply(&event(20_000)).unwrap();
        assert!(!board.install_repacked(stale), "made before a change");

        let entries = |board: &Board| -> Vec<(u64, String, i64, i64)> {
            board
                .index()
                .range(1, usize::MAX)
                .into_iter()
                .map(|e| (e.rank, e.player.to_string(), e.value, e.achieved_at))
                .collect()
        };
        let (before, digest, version) = (entries(&board), board.digest(), board.version());
        let leaves = board.index().leaves_in_use();
        let repacked = board.repack().expect("still room to pack");
        assert!(board.install_repacked(repacked));
        board.index().check();
        assert_eq!(entries(&board), before);
        assert_eq!((board.digest(), board.version()), (digest, version));
        let packed = board.index().leaves_in_use();
        assert!(
            packed * 10 < leaves * 9,
            "{packed} leaves packed against {leaves}"
        );
        assert_eq!(
            packed,
            before.len().div_ceil(crate::tree::LEAF_CAP),
            "a repacked board's leaves are full"
        );
        assert!(board.repack().is_none(), "already packed");
        let loaded = Board::from_aggregates(
            BoardRules::new(ScoreMode::Highest),
            board.version(),
            board.index().range(1, usize::MAX).into_iter().map(|e| {
                (
                    e.player,
                    Standing {
                        value: e.value,
                        achieved_at: e.achieved_at,
                    },
                    "",
                )
            }),
        )
        .unwrap();
        assert_eq!(loaded.digest(), board.digest());
        assert!(loaded.repack().is_none(), "a loaded board is not copied again");

        for i in 20_001..25_000 {
            board.apply(&event(i)).unwrap();
        }
        board.index().check();
    }
}
