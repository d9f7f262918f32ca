//! The order-statistic B+tree behind every board.
//!
//! Entries are `(order, time, member)` triples kept in ascending total order, where `order` is the
//! value already mapped so that ascending means better (`ScoreMode::order_key` in `rules.rs`),
//! `time` is `achieved_at`, and ties on both fall to the player id's bytes. The tree never
//! compares member ids numerically: a member id is only an arena index, so the last tie-break
//! always reads the interned bytes.
//!
//! Layout, chosen for a machine where a cache miss costs far more than scanning a few lines:
//! - Leaves hold up to [`LEAF_CAP`] entries as three parallel arrays (structure of arrays), so a
//!   binary search touches only the `order` array and a member scan only the `members` array.
//! - Inner nodes keep, per child, the subtree's entry count, its count of distinct `order` keys,
//!   its first full key (the separator) and its last `order` key. Counts give rank and select in
//!   O(log n); distinct counts and boundary keys give dense ranks in O(log n).
//! - `locator[member]` names the leaf holding the member, so the rank of a member is found bottom
//!   up: one miss for the locator, one for the leaf, then the parent chain, whose upper levels stay
//!   in cache. Nothing is searched by key.
//!
//! Every node stores its parent, so a change is repaired bottom up along one path.
//!
//! Nodes live in blocks that double in size (`Arena`), so growth never copies a node. A bulk load
//! fills leaves to 15/16, leaving room for the writes that follow it; a repack fills them full,
//! because it runs when writes have paused.

use alloc::vec::Vec;
use core::cmp::Ordering;

use self::arena::Arena;
#[cfg(test)]
use self::node::Summary;
use self::node::{Inner, Leaf, NodeRef};
use crate::interner::{Interner, MemberId};

mod arena;
mod load;
mod mutate;
mod node;

/// Entries per leaf. 64 keeps a member scan at four cache lines.
pub(crate) const LEAF_CAP: usize = 64;
/// Children per inner node.
const INNER_CAP: usize = 64;
/// A leaf or inner node below this many entries merges into a sibling when it can.
const LEAF_MIN: usize = LEAF_CAP / 4;
const INNER_MIN: usize = INNER_CAP / 4;
/// How full bulk loading packs leaves: room for a few inserts before the first split.
const BULK_FILL: usize = LEAF_CAP * 15 / 16;
const BULK_FILL_INNER: usize = INNER_CAP * 15 / 16;
/// "No node" in parent, sibling and locator slots.
pub(crate) const NIL: u32 = u32::MAX;

/// One ranked entry: the mapped order key, the time it was achieved, and the member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Key {
    pub(crate) order: i64,
    pub(crate) time: i64,
    pub(crate) member: MemberId,
}

/// A position in the total order named by value rather than by member, e.g. a cursor's key,
/// whose player may have left the board or never been interned.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Probe<'a> {
    pub(crate) order: i64,
    pub(crate) time: i64,
    pub(crate) player: &'a str,
}

/// The total order: order key, then time, then player id bytes. This is the only comparator the
/// tree uses; all score modes share it because their difference lives in the order key mapping.
#[inline]
pub(crate) fn cmp_probe(
    names: &Interner,
    probe: &Probe<'_>,
    order: i64,
    time: i64,
    member: MemberId,
) -> Ordering {
    probe
        .order
        .cmp(&order)
        .then(probe.time.cmp(&time))
        .then_with(|| probe.player.as_bytes().cmp(names.get(member).as_bytes()))
}

/// [`cmp_probe`] of two keys.
#[inline]
pub(crate) fn cmp_keys(names: &Interner, a: &Key, b: &Key) -> Ordering {
    let probe = Probe {
        order: a.order,
        time: a.time,
        player: names.get(a.member),
    };
    cmp_probe(names, &probe, b.order, b.time, b.member)
}

/// The order-statistic B+tree. See the module documentation for its layout.
#[derive(Clone)]
pub(crate) struct Tree {
    leaves: Arena<Leaf>,
    inners: Arena<Inner>,
    free_leaves: Vec<u32>,
    free_inners: Vec<u32>,
    root: NodeRef,
    /// `locator[member]` is the leaf holding `member`, or [`NIL`] when it is unranked. Empty
    /// and never written in an untracked tree ([`Tree::untracked`]).
    locator: Vec<u32>,
    /// Whether the locator is kept. A segment's tree holds a few members of a large interner,
    /// where a locator indexed by member would cost 4 bytes for every member of the game.
    tracked: bool,
    len: usize,
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            leaves: Arena::with_first(Leaf::empty(NIL)),
            inners: Arena::default(),
            free_leaves: Vec::new(),
            free_inners: Vec::new(),
            root: NodeRef::Leaf(0),
            locator: Vec::new(),
            tracked: true,
            len: 0,
        }
    }
}

#[cold]
#[track_caller]
fn corrupt(what: &str) -> ! {
    panic!("ranked index invariant broken: {what}")
}

impl Tree {
    /// An empty tree without a locator: members are found by key ([`Tree::remove_key`],
    /// [`Tree::count_before`]), never by member.
    pub(crate) fn untracked() -> Tree {
        Tree {
            tracked: false,
            ..Tree::default()
        }
    }

    /// Records that `member` sits in leaf `leaf`, when the tree keeps a locator. O(1).
    #[inline]
    pub(super) fn locate(&mut self, member: MemberId, leaf: u32) {
        if self.tracked {
            self.locator[member as usize] = leaf;
        }
    }

    /// The number of ranked entries. O(1).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether `member` is ranked. O(1).
    #[inline]
    pub(crate) fn contains(&self, member: MemberId) -> bool {
        self.locator.get(member as usize).is_some_and(|&l| l != NIL)
    }

    /// The key of a ranked member. O(1): one locator read and a scan of one leaf.
    pub(crate) fn key_of(&self, member: MemberId) -> Option<Key> {
        let leaf_id = *self.locator.get(member as usize)?;
        if leaf_id == NIL {
            return None;
        }
        let leaf = &self.leaves[leaf_id as usize];
        Some(leaf.key(leaf.slot_of(member)))
    }

    /// The 0-based position of a ranked member in the total order. O(log n), bottom up.
    pub(crate) fn position_of(&self, member: MemberId) -> Option<usize> {
        let leaf_id = *self.locator.get(member as usize)?;
        if leaf_id == NIL {
            return None;
        }
        let leaf = &self.leaves[leaf_id as usize];
        let mut position = leaf.slot_of(member);
        let mut child = leaf_id;
        let mut parent = leaf.parent;
        while parent != NIL {
            let node = &self.inners[parent as usize];
            let pos = node.position_of(child);
            position += node.counts[..pos].iter().map(|&c| c as usize).sum::<usize>();
            child = parent;
            parent = node.parent;
        }
        Some(position)
    }

    /// The leaf and slot at 0-based `position`. O(log n), top down by counts.
    fn locate_position(&self, mut position: usize) -> Option<(u32, usize)> {
        if position >= self.len {
            return None;
        }
        let mut node = self.root;
        loop {
            match node {
                NodeRef::Leaf(id) => return Some((id, position)),
                NodeRef::Inner(id) => {
                    let inner = &self.inners[id as usize];
                    let mut pos = 0;
                    while position >= inner.counts[pos] as usize {
                        position -= inner.counts[pos] as usize;
                        pos += 1;
                    }
                    node = inner.child_ref(pos);
                }
            }
        }
    }

    /// The entry at 0-based `position`. O(log n).
    pub(crate) fn key_at(&self, position: usize) -> Option<Key> {
        let (leaf, slot) = self.locate_position(position)?;
        Some(self.leaves[leaf as usize].key(slot))
    }

    /// Up to `limit` entries from 0-based `start`, in order. O(log n + limit).
    pub(crate) fn range(&self, start: usize, limit: usize, out: &mut Vec<Key>) {
        let Some((mut leaf_id, mut slot)) = self.locate_position(start) else {
            return;
        };
        let mut remaining = limit;
        while remaining > 0 && leaf_id != NIL {
            let leaf = &self.leaves[leaf_id as usize];
            let take = remaining.min(leaf.len as usize - slot);
            out.extend((slot..slot + take).map(|s| leaf.key(s)));
            remaining -= take;
            slot = 0;
            leaf_id = leaf.next;
        }
    }

    /// How many entries sort strictly before `probe` (with `inclusive`, at or before). O(log n).
    pub(crate) fn count_before(&self, names: &Interner, probe: &Probe<'_>, inclusive: bool) -> usize {
        let before = |ord: Ordering| match ord {
            // The entry is before the probe when the probe compares greater.
            Ordering::Greater => true,
            Ordering::Equal => inclusive,
            Ordering::Less => false,
        };
        let mut node = self.root;
        let mut count = 0usize;
        loop {
            match node {
                NodeRef::Leaf(id) => {
                    let leaf = &self.leaves[id as usize];
                    let len = leaf.len as usize;
                    // Entries are sorted, so the ones before the probe are a prefix.
                    let (mut lo, mut hi) = (0usize, len);
                    while lo < hi {
                        let mid = (lo + hi) / 2;
                        let ord =
                            cmp_probe(names, probe, leaf.orders[mid], leaf.times[mid], leaf.members[mid]);
                        if before(ord) {
                            lo = mid + 1;
                        } else {
                            hi = mid;
                        }
                    }
                    return count + lo;
                }
                NodeRef::Inner(id) => {
                    let inner = &self.inners[id as usize];
                    // The child to descend into is the last whose first key is before the probe;
                    // every child before it lies wholly before the probe.
                    let pos = inner.last_child_starting_before(names, probe, inclusive);
                    count += inner.counts[..pos].iter().map(|&c| c as usize).sum::<usize>();
                    node = inner.child_ref(pos);
                }
            }
        }
    }

    /// How many entries have an order key strictly below `order`, and how many distinct order
    /// keys they hold. O(log n): whole subtrees are counted from their summaries.
    pub(crate) fn count_below_order(&self, order: i64) -> (usize, usize) {
        let mut node = self.root;
        let mut count = 0usize;
        let mut distinct = 0usize;
        let mut prev_last: Option<i64> = None;
        loop {
            match node {
                NodeRef::Leaf(id) => {
                    let leaf = &self.leaves[id as usize];
                    let len = leaf.len as usize;
                    let end = leaf.orders[..len].partition_point(|&o| o < order);
                    for i in 0..end {
                        let previous = if i == 0 {
                            prev_last
                        } else {
                            Some(leaf.orders[i - 1])
                        };
                        if previous != Some(leaf.orders[i]) {
                            distinct += 1;
                        }
                    }
                    return (count + end, distinct);
                }
                NodeRef::Inner(id) => {
                    let inner = &self.inners[id as usize];
                    let len = inner.len as usize;
                    let mut pos = 0;
                    // A child lies wholly below `order` when its last key is below it.
                    while pos + 1 < len && inner.last_orders[pos] < order {
                        count += inner.counts[pos] as usize;
                        distinct += inner.distinct[pos] as usize;
                        if prev_last == Some(inner.first_orders[pos]) {
                            distinct -= 1;
                        }
                        prev_last = Some(inner.last_orders[pos]);
                        pos += 1;
                    }
                    node = inner.child_ref(pos);
                }
            }
        }
    }

    /// Bytes held by the tree and its locator: the nodes held, and the allocated capacity of
    /// the other tables.
    pub(crate) fn memory(&self) -> usize {
        self.leaves.memory()
            + self.inners.memory()
            + (self.free_leaves.capacity() + self.free_inners.capacity() + self.locator.capacity())
                * core::mem::size_of::<u32>()
    }

    /// Checks every structural invariant; used by tests. O(n).
    #[cfg(test)]
    pub(crate) fn check(&self, names: &Interner) {
        let mut keys = Vec::new();
        self.range(0, self.len, &mut keys);
        assert_eq!(keys.len(), self.len, "leaf chain length");
        for pair in keys.windows(2) {
            let probe = Probe {
                order: pair[1].order,
                time: pair[1].time,
                player: names.get(pair[1].member),
            };
            assert_eq!(
                cmp_probe(names, &probe, pair[0].order, pair[0].time, pair[0].member),
                Ordering::Greater,
                "entries out of order"
            );
        }
        for (pos, key) in keys.iter().enumerate() {
            let expected = self.tracked.then_some(pos);
            assert_eq!(self.position_of(key.member), expected, "position of member");
        }
        if self.tracked {
            let ranked = self.locator.iter().filter(|&&l| l != NIL).count();
            assert_eq!(ranked, self.len, "locator count");
        }
        self.check_node(self.root, NIL);
    }

    #[cfg(test)]
    fn check_node(&self, node: NodeRef, parent: u32) -> Summary {
        assert_eq!(self.parent_of(node), parent, "parent pointer");
        match node {
            NodeRef::Leaf(id) => self.leaves[id as usize].summary(),
            NodeRef::Inner(id) => {
                let inner = &self.inners[id as usize];
                assert!(inner.len > 0, "empty inner node");
                if parent == NIL {
                    assert!(inner.len > 1, "root with one child");
                }
                for pos in 0..inner.len as usize {
                    let s = self.check_node(inner.child_ref(pos), id);
                    assert_eq!(inner.counts[pos], s.count, "count summary");
                    assert!(s.count > 0, "empty subtree");
                    assert_eq!(inner.distinct[pos], s.distinct, "distinct summary");
                    assert_eq!(inner.first_orders[pos], s.first.order, "first order");
                    assert_eq!(inner.first_times[pos], s.first.time, "first time");
                    assert_eq!(inner.first_members[pos], s.first.member, "first member");
                    assert_eq!(inner.last_orders[pos], s.last_order, "last order");
                }
                inner.summary()
            }
        }
    }
}
