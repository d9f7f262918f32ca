//! A board split by score range: order-statistic trees, each holding one range of the total
//! order, composed into one order. A rank is the entries of every better shard (each tree's
//! count, O(1)) plus the place within its own, so answers are exactly the whole board's.
//!
//! Each shard is its own tree over the one interner, so a shard can be changed without
//! touching another. Boundaries follow the population: all entries start in the first shard
//! (the other boundaries open, past every key). The last shard with a range hands half of it to
//! the next once it holds more than its share; once every shard has a range, a shard holding
//! more than one and a half times its share (and more than [`MIN_SHARD`]) moves its boundary
//! with its smaller neighbour towards their middle. A boundary moves in steps of
//! [`MOVE_STEP`] entries, one with each insert, so a move of a million entries never holds the
//! board for more than a step; every step leaves an exact board.
//! The cut depends only on the entries, so the same changes in the same order give the same
//! shards; a bulk load cuts evenly.

use alloc::vec::Vec;
use core::cmp::Ordering;

use crate::interner::{Interner, MemberId};
use crate::join::Join;
use crate::tree::{Key, Probe, Tree, cmp_keys, cmp_probe};

/// The most shards a board may be split into.
pub const MAX_SHARDS: usize = 64;

/// A shard is cut again only past this many entries, so that small boards stay whole.
pub(crate) const MIN_SHARD: usize = 64;

/// The most entries one step of a boundary move carries across, so that a move of any size
/// holds the board for a few milliseconds at a time.
pub(crate) const MOVE_STEP: usize = 2_048;

/// The most steps of boundary moves after a group of changes ([`Shards::apply_group`]): a
/// step per entry the group inserted, as one by one, but never more than this many, so that
/// a large group is held for a few steps at most.
const GROUP_STEPS: usize = 4;

/// Score-range shards composed into one order.
#[derive(Clone)]
pub(crate) struct Shards {
    trees: Vec<Tree>,
    /// `bounds[i]` is the least key shard `i + 1` may hold; `None` is past every key (a shard
    /// that has not taken a range yet). Non-decreasing, `None`s last.
    bounds: Vec<Option<Key>>,
    /// The boundary being moved, by its left shard: it moves by [`MOVE_STEP`] entries with each
    /// insert until the two shards hold the same.
    moving: Option<usize>,
    /// [`MOVE_STEP`], smaller in tests so that small boards move in many steps.
    move_step: usize,
}

impl Default for Shards {
    fn default() -> Self {
        Shards::new(1)
    }
}

/// How many entries each shard holds and where it begins, for the definition read and metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardInfo {
    /// Entries in the shard.
    pub entries: u64,
    /// The 1-based rank of its first entry (one past the entries of better shards).
    pub first_rank: u64,
}

impl Shards {
    /// `count` empty shards (at least 1, at most [`MAX_SHARDS`]).
    pub(crate) fn new(count: usize) -> Shards {
        let count = count.clamp(1, MAX_SHARDS);
        Shards {
            trees: (0..count).map(|_| Tree::default()).collect(),
            bounds: alloc::vec![None; count - 1],
            moving: None,
            move_step: MOVE_STEP,
        }
    }

    /// Moves boundaries `entries` at a time. For tests.
    #[cfg(test)]
    pub(crate) fn set_move_step(&mut self, entries: usize) {
        self.move_step = entries.max(1);
    }

    /// The number of shards.
    pub(crate) fn count(&self) -> usize {
        self.trees.len()
    }

    /// Every shard's entries and first rank, best range first. O(shards).
    pub(crate) fn info(&self) -> Vec<ShardInfo> {
        let mut first = 1;
        self.trees
            .iter()
            .map(|t| {
                let info = ShardInfo {
                    entries: t.len() as u64,
                    first_rank: first,
                };
                first += t.len() as u64;
                info
            })
            .collect()
    }

    /// Ranked entries. O(shards).
    pub(crate) fn len(&self) -> usize {
        self.trees.iter().map(Tree::len).sum()
    }

    /// Entries of the shards before `shard`. O(shards).
    fn before(&self, shard: usize) -> usize {
        self.trees[..shard].iter().map(Tree::len).sum()
    }

    /// A ranked member's key. O(shards) locator reads, then one leaf.
    pub(crate) fn key_of(&self, member: MemberId) -> Option<Key> {
        self.trees.iter().find_map(|t| t.key_of(member))
    }

    /// A ranked member's 0-based position in the whole order. O(shards + log n).
    pub(crate) fn position_of(&self, member: MemberId) -> Option<usize> {
        let shard = self.trees.iter().position(|t| t.contains(member))?;
        Some(self.before(shard) + self.trees[shard].position_of(member)?)
    }

    /// The key at a 0-based position of the whole order. O(shards + log n).
    pub(crate) fn key_at(&self, mut position: usize) -> Option<Key> {
        for tree in &self.trees {
            if position < tree.len() {
                return tree.key_at(position);
            }
            position -= tree.len();
        }
        None
    }

    /// Up to `limit` keys from the 0-based position `start` on, across shards. O(shards +
    /// log n + limit).
    pub(crate) fn range(&self, mut start: usize, limit: usize, out: &mut Vec<Key>) {
        let goal = out.len() + limit;
        for tree in &self.trees {
            if out.len() >= goal {
                return;
            }
            if start >= tree.len() {
                start -= tree.len();
                continue;
            }
            tree.range(start, goal - out.len(), out);
            start = 0;
        }
    }

    /// The shard whose range holds the position `probe` names. O(log shards).
    fn shard_of_probe(&self, names: &Interner, probe: &Probe<'_>) -> usize {
        self.bounds.partition_point(|b| {
            b.is_some_and(|b| cmp_probe(names, probe, b.order, b.time, b.member) != Ordering::Less)
        })
    }

    /// The shard whose range holds `key`. O(log shards).
    fn shard_of_key(&self, names: &Interner, key: &Key) -> usize {
        self.bounds
            .partition_point(|b| b.is_some_and(|b| cmp_keys(names, key, &b) != Ordering::Less))
    }

    /// Entries strictly before (with `inclusive`, at or before) `probe`. O(shards + log n).
    pub(crate) fn count_before(&self, names: &Interner, probe: &Probe<'_>, inclusive: bool) -> usize {
        let shard = self.shard_of_probe(names, probe);
        self.before(shard) + self.trees[shard].count_before(names, probe, inclusive)
    }

    /// Entries with an order key below `order`, and how many distinct order keys they hold: a
    /// key that runs across a boundary is counted once. O(shards × log n).
    pub(crate) fn count_below_order(&self, order: i64) -> (usize, usize) {
        let (mut below, mut distinct) = (0, 0);
        let mut previous_last: Option<i64> = None;
        for tree in self.trees.iter().filter(|t| t.len() > 0) {
            let (b, d) = tree.count_below_order(order);
            below += b;
            distinct += d;
            let first = tree.key_at(0).map(|k| k.order);
            if b > 0 && previous_last.is_some() && previous_last == first {
                distinct -= 1;
            }
            if b < tree.len() {
                break;
            }
            previous_last = tree.key_at(tree.len() - 1).map(|k| k.order);
        }
        (below, distinct)
    }

    /// Inserts an unranked member; moves a boundary by one step when one is moving, or starts
    /// a move when the member's shard has grown past its share. O(shards + log n), plus
    /// O([`MOVE_STEP`] log n) for a step.
    pub(crate) fn insert(&mut self, names: &Interner, key: Key) {
        let shard = self.shard_of_key(names, &key);
        self.trees[shard].insert(names, key);
        match self.moving {
            Some(left) => {
                self.step(names, left);
            }
            None => self.rebalance(shard),
        }
    }

    /// Removes a member, answering its key. O(shards + log n).
    pub(crate) fn remove(&mut self, member: MemberId) -> Option<Key> {
        self.trees.iter_mut().find_map(|t| t.remove(member))
    }

    /// Applies a group of changes at once, each shard changed on a thread of `join`'s while
    /// the others change theirs: `changes` names each member at most once, with its key in
    /// these shards and its key now (`None`: unranked). A member leaves the shard its key was
    /// in and enters the one its key now falls in, so it is in exactly one shard once the
    /// group is applied; then boundaries move as after as many inserts, up to
    /// [`GROUP_STEPS`] steps. O(k log shards + k log n spread over the shards, for k changes).
    pub(crate) fn apply_group(&mut self, names: &Interner, changes: &[Staged], join: &(dyn Join + Sync)) {
        let mut work: Vec<ShardWork> = (0..self.trees.len()).map(|_| ShardWork::default()).collect();
        let mut entered = 0;
        for change in changes {
            let from = change.was.map(|was| (self.shard_of_key(names, &was), was.member));
            let to = change.now.map(|now| (self.shard_of_key(names, &now), now));
            entered += usize::from(to.is_some());
            match (from, to) {
                // Within one shard, removed and inserted together, while its locator is at hand.
                (Some((a, member)), Some((b, key))) if a == b => work[a].0.push((Some(member), Some(key))),
                _ => {
                    if let Some((a, member)) = from {
                        work[a].0.push((Some(member), None));
                    }
                    if let Some((b, key)) = to {
                        work[b].0.push((None, Some(key)));
                    }
                }
            }
        }
        spread(join, join.threads(), names, &mut self.trees, &mut work);
        for _ in 0..entered.min(GROUP_STEPS) {
            if !self.move_a_step(names) {
                break;
            }
        }
    }

    /// One step of the boundary being moved, or of the first move a shard calls for (see
    /// [`Shards::rebalance`]) that carries any entry; `false` when none does. O(shards +
    /// [`MOVE_STEP`] log n).
    fn move_a_step(&mut self, names: &Interner) -> bool {
        if let Some(left) = self.moving
            && self.step(names, left)
        {
            return true;
        }
        for shard in 0..self.trees.len() {
            self.rebalance(shard);
            if let Some(left) = self.moving
                && self.step(names, left)
            {
                return true;
            }
        }
        false
    }

    /// Starts moving the boundary between `shard` and its smaller neighbour towards their
    /// middle when `shard` holds more than one and a half times its share of the board and more
    /// than [`MIN_SHARD`].
    fn rebalance(&mut self, shard: usize) {
        let count = self.trees.len();
        let held = self.trees[shard].len();
        if count == 1 || held <= MIN_SHARD {
            return;
        }
        // The first shard after the ranges taken so far takes one as soon as its left
        // neighbour holds more than its share; after that, a shard waits until it holds half
        // as much again.
        let opens_next = shard + 1 < count && self.bounds[shard].is_none();
        let share = self.len().div_ceil(count);
        if held <= share || (!opens_next && held * 2 <= share * 3) {
            return;
        }
        if opens_next {
            self.moving = Some(shard);
            return;
        }
        let left = match (shard.checked_sub(1), shard + 1 < count) {
            (Some(before), true) if self.trees[before].len() < self.trees[shard + 1].len() => before,
            (Some(before), false) => before,
            _ => shard,
        };
        self.moving = Some(left);
    }

    /// One step of the boundary move between shards `left` and `left + 1`: up to
    /// [`MOVE_STEP`] entries carried from the fuller one's edge into the other, the boundary
    /// set to the right shard's new least key; the move ends when they hold the same (within
    /// one). Every answer is the same after each step. Answers whether it carried any entry.
    /// O(`MOVE_STEP` log n).
    fn step(&mut self, names: &Interner, left: usize) -> bool {
        let (held_left, held_right) = (self.trees[left].len(), self.trees[left + 1].len());
        let middle = (held_left + held_right) / 2;
        let mut keys = Vec::new();
        if held_left > middle {
            let moving = (held_left - middle).min(self.move_step);
            self.trees[left].range(held_left - moving, moving, &mut keys);
            for key in &keys {
                self.trees[left].remove(key.member);
                self.trees[left + 1].insert(names, *key);
            }
        } else if held_left + 1 < middle {
            // Never the right shard's last entry, whose key the boundary becomes.
            let moving = (middle - held_left)
                .min(self.move_step)
                .min(held_right.saturating_sub(1));
            self.trees[left + 1].range(0, moving, &mut keys);
            for key in &keys {
                self.trees[left + 1].remove(key.member);
                self.trees[left].insert(names, *key);
            }
        }
        if let Some(first) = self.trees[left + 1].key_at(0) {
            self.bounds[left] = Some(first);
        }
        let (held_left, held_right) = (self.trees[left].len(), self.trees[left + 1].len());
        if keys.is_empty() || held_left.abs_diff(held_right) <= 1 {
            self.moving = None;
        }
        !keys.is_empty()
    }

    /// Moves the boundary between shards `left` and `left + 1` to the middle of their entries
    /// at once, step by step. O(the entries moved × log n).
    pub(crate) fn recut(&mut self, names: &Interner, left: usize) {
        self.moving = Some(left);
        while self.moving == Some(left) {
            self.step(names, left);
        }
    }

    /// Replaces every shard with `keys` (distinct, sorted in the total order) cut evenly, or
    /// all in the first shard while each would hold less than [`MIN_SHARD`]. `members` is the
    /// locators' length. O(n).
    pub(crate) fn bulk_load(&mut self, keys: Vec<Key>, members: usize) {
        let count = self.trees.len();
        self.moving = None;
        let cuts = if keys.len() >= count * MIN_SHARD { count } else { 1 };
        self.bounds = alloc::vec![None; count - 1];
        for (i, tree) in self.trees.iter_mut().enumerate() {
            let (start, end) = (keys.len() * i / cuts, keys.len() * (i + 1) / cuts);
            let mut fresh = Tree::default();
            if i < cuts {
                fresh.bulk_load(keys[start..end].iter().copied(), members);
                if i > 0 {
                    self.bounds[i - 1] = keys.get(start).copied();
                }
            } else {
                fresh.bulk_load(core::iter::empty(), members);
            }
            *tree = fresh;
        }
    }

    /// Splits into `count` shards (1 to [`MAX_SHARDS`]), re-cutting the entries evenly when
    /// the count changes. O(n) then, O(1) otherwise.
    pub(crate) fn split(&mut self, names: &Interner, count: usize) {
        let count = count.clamp(1, MAX_SHARDS);
        if count == self.trees.len() {
            return;
        }
        let mut keys = Vec::with_capacity(self.len());
        self.range(0, self.len(), &mut keys);
        let move_step = self.move_step;
        *self = Shards::new(count);
        self.move_step = move_step;
        self.bulk_load(keys, names.len());
    }

    /// Packed copies of the shards worth packing ([`Tree::packed`]), `None` when none is.
    /// O(n).
    pub(crate) fn packed(&self, members: usize) -> Option<Vec<Option<Tree>>> {
        let packed: Vec<Option<Tree>> = self.trees.iter().map(|t| t.packed(members)).collect();
        packed.iter().any(Option::is_some).then_some(packed)
    }

    /// Swaps in the packed copies [`Shards::packed`] made of these very shards.
    pub(crate) fn replace(&mut self, packed: Vec<Option<Tree>>) {
        for (tree, copy) in self.trees.iter_mut().zip(packed) {
            if let Some(copy) = copy {
                *tree = copy;
            }
        }
    }

    /// Bytes held by every shard. O(shards).
    pub(crate) fn memory(&self) -> usize {
        self.trees.iter().map(Tree::memory).sum::<usize>() + self.bounds.capacity() * size_of::<Option<Key>>()
    }

    /// Checks every tree, and that each holds only keys of its range. O(n). For tests.
    #[cfg(test)]
    pub(crate) fn check(&self, names: &Interner) {
        for (i, tree) in self.trees.iter().enumerate() {
            tree.check(names);
            let mut keys = Vec::new();
            tree.range(0, tree.len(), &mut keys);
            let low = i.checked_sub(1).and_then(|b| self.bounds[b]);
            let high = self.bounds.get(i).copied().flatten();
            for k in &keys {
                assert!(
                    low.is_none_or(|l| cmp_keys(names, k, &l) != Ordering::Less),
                    "below shard {i}"
                );
                assert!(
                    high.is_none_or(|h| cmp_keys(names, k, &h) == Ordering::Less),
                    "above shard {i}"
                );
            }
        }
        assert!(
            self.bounds.windows(2).all(|w| match (w[0], w[1]) {
                (Some(a), Some(b)) => cmp_keys(names, &a, &b) != Ordering::Greater,
                (None, Some(_)) => false,
                _ => true,
            }),
            "bounds out of order"
        );
    }

    /// Leaves in use over every shard. For tests.
    #[cfg(test)]
    pub(crate) fn leaves_in_use(&self) -> usize {
        self.trees.iter().map(Tree::leaves_in_use).sum()
    }
}

/// A member's change staged in a group: its key in the shards (the bounds stay put while a
/// group is staged, so the key tells its shard) and its key now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Staged {
    pub(crate) was: Option<Key>,
    pub(crate) now: Option<Key>,
}

/// What a group does to one shard, member by member: a member that leaves it, a key that
/// enters it, or both (a member moving within it).
#[derive(Default)]
struct ShardWork(Vec<(Option<MemberId>, Option<Key>)>);

impl ShardWork {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn run(&self, names: &Interner, tree: &mut Tree) {
        for &(leaving, entering) in &self.0 {
            if let Some(member) = leaving {
                tree.remove(member);
            }
            if let Some(key) = entering {
                tree.insert(names, key);
            }
        }
    }
}

/// Runs each shard's work on up to `threads` threads: the shards that have any are halved
/// between `join`'s two sides, each side with half the threads, until a side has one thread
/// (it runs its shards in turn) or one busy shard.
fn spread(
    join: &(dyn Join + Sync),
    threads: usize,
    names: &Interner,
    trees: &mut [Tree],
    work: &mut [ShardWork],
) {
    let busy = work.iter().filter(|w| !w.is_empty()).count();
    if busy <= 1 || threads <= 1 {
        for (tree, work) in trees.iter_mut().zip(work.iter()) {
            work.run(names, tree);
        }
        return;
    }
    // Cut where half of the busy shards lie on each side.
    let mut seen = 0;
    let cut = work
        .iter()
        .position(|w| {
            seen += usize::from(!w.is_empty());
            seen > busy / 2
        })
        .unwrap_or(work.len());
    let (trees_a, trees_b) = trees.split_at_mut(cut);
    let (work_a, work_b) = work.split_at_mut(cut);
    let (threads_a, threads_b) = (threads / 2, threads - threads / 2);
    join.join(
        &mut || spread(join, threads_a, names, trees_a, work_a),
        &mut || spread(join, threads_b, names, trees_b, work_b),
    );
}
