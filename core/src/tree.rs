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

use crate::interner::{Interner, MemberId};

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
fn cmp_probe(names: &Interner, probe: &Probe<'_>, order: i64, time: i64, member: MemberId) -> Ordering {
    probe
        .order
        .cmp(&order)
        .then(probe.time.cmp(&time))
        .then_with(|| probe.player.as_bytes().cmp(names.get(member).as_bytes()))
}

#[derive(Clone)]
struct Leaf {
    parent: u32,
    prev: u32,
    next: u32,
    len: u32,
    orders: [i64; LEAF_CAP],
    times: [i64; LEAF_CAP],
    members: [MemberId; LEAF_CAP],
}

impl Leaf {
    fn empty(parent: u32) -> Leaf {
        Leaf {
            parent,
            prev: NIL,
            next: NIL,
            len: 0,
            orders: [0; LEAF_CAP],
            times: [0; LEAF_CAP],
            members: [0; LEAF_CAP],
        }
    }

    #[inline]
    fn key(&self, slot: usize) -> Key {
        Key {
            order: self.orders[slot],
            time: self.times[slot],
            member: self.members[slot],
        }
    }

    fn insert_at(&mut self, slot: usize, key: Key) {
        let len = self.len as usize;
        debug_assert!(len < LEAF_CAP && slot <= len);
        self.orders.copy_within(slot..len, slot + 1);
        self.times.copy_within(slot..len, slot + 1);
        self.members.copy_within(slot..len, slot + 1);
        self.orders[slot] = key.order;
        self.times[slot] = key.time;
        self.members[slot] = key.member;
        self.len += 1;
    }

    fn remove_at(&mut self, slot: usize) {
        let len = self.len as usize;
        self.orders.copy_within(slot + 1..len, slot);
        self.times.copy_within(slot + 1..len, slot);
        self.members.copy_within(slot + 1..len, slot);
        self.len -= 1;
    }

    /// The slot of `member`, scanning the members array (four cache lines at most).
    #[inline]
    fn slot_of(&self, member: MemberId) -> usize {
        let len = self.len as usize;
        match self.members[..len].iter().position(|&m| m == member) {
            Some(slot) => slot,
            None => corrupt("member missing from its located leaf"),
        }
    }

    fn summary(&self) -> Summary {
        let len = self.len as usize;
        let mut distinct = u32::from(len > 0);
        for i in 1..len {
            distinct += u32::from(self.orders[i] != self.orders[i - 1]);
        }
        Summary {
            count: len as u32,
            distinct,
            first: if len > 0 { self.key(0) } else { EMPTY_KEY },
            last_order: if len > 0 { self.orders[len - 1] } else { 0 },
        }
    }
}

#[derive(Clone)]
struct Inner {
    parent: u32,
    len: u32,
    /// Whether the children are leaves (else inner nodes).
    leaf_children: bool,
    children: [u32; INNER_CAP],
    counts: [u32; INNER_CAP],
    distinct: [u32; INNER_CAP],
    first_orders: [i64; INNER_CAP],
    first_times: [i64; INNER_CAP],
    first_members: [MemberId; INNER_CAP],
    last_orders: [i64; INNER_CAP],
}

/// What a parent keeps about one child subtree.
#[derive(Clone, Copy)]
struct Summary {
    count: u32,
    distinct: u32,
    first: Key,
    last_order: i64,
}

const EMPTY_KEY: Key = Key {
    order: 0,
    time: 0,
    member: NIL,
};

impl Inner {
    fn empty(parent: u32, leaf_children: bool) -> Inner {
        Inner {
            parent,
            len: 0,
            leaf_children,
            children: [NIL; INNER_CAP],
            counts: [0; INNER_CAP],
            distinct: [0; INNER_CAP],
            first_orders: [0; INNER_CAP],
            first_times: [0; INNER_CAP],
            first_members: [0; INNER_CAP],
            last_orders: [0; INNER_CAP],
        }
    }

    #[inline]
    fn position_of(&self, child: u32) -> usize {
        match self.children[..self.len as usize]
            .iter()
            .position(|&c| c == child)
        {
            Some(pos) => pos,
            None => corrupt("child missing from its parent"),
        }
    }

    fn set_summary(&mut self, pos: usize, s: Summary) {
        self.counts[pos] = s.count;
        self.distinct[pos] = s.distinct;
        self.first_orders[pos] = s.first.order;
        self.first_times[pos] = s.first.time;
        self.first_members[pos] = s.first.member;
        self.last_orders[pos] = s.last_order;
    }

    fn insert_child(&mut self, pos: usize, child: u32, s: Summary) {
        let len = self.len as usize;
        debug_assert!(len < INNER_CAP && pos <= len);
        self.children.copy_within(pos..len, pos + 1);
        self.counts.copy_within(pos..len, pos + 1);
        self.distinct.copy_within(pos..len, pos + 1);
        self.first_orders.copy_within(pos..len, pos + 1);
        self.first_times.copy_within(pos..len, pos + 1);
        self.first_members.copy_within(pos..len, pos + 1);
        self.last_orders.copy_within(pos..len, pos + 1);
        self.children[pos] = child;
        self.set_summary(pos, s);
        self.len += 1;
    }

    fn remove_child(&mut self, pos: usize) {
        let len = self.len as usize;
        self.children.copy_within(pos + 1..len, pos);
        self.counts.copy_within(pos + 1..len, pos);
        self.distinct.copy_within(pos + 1..len, pos);
        self.first_orders.copy_within(pos + 1..len, pos);
        self.first_times.copy_within(pos + 1..len, pos);
        self.first_members.copy_within(pos + 1..len, pos);
        self.last_orders.copy_within(pos + 1..len, pos);
        self.len -= 1;
    }

    /// Moves children `from..len` to the end of `other`.
    fn move_tail_to(&mut self, from: usize, other: &mut Inner) {
        let len = self.len as usize;
        let at = other.len as usize;
        let n = len - from;
        other.children[at..at + n].copy_from_slice(&self.children[from..len]);
        other.counts[at..at + n].copy_from_slice(&self.counts[from..len]);
        other.distinct[at..at + n].copy_from_slice(&self.distinct[from..len]);
        other.first_orders[at..at + n].copy_from_slice(&self.first_orders[from..len]);
        other.first_times[at..at + n].copy_from_slice(&self.first_times[from..len]);
        other.first_members[at..at + n].copy_from_slice(&self.first_members[from..len]);
        other.last_orders[at..at + n].copy_from_slice(&self.last_orders[from..len]);
        other.len += n as u32;
        self.len = from as u32;
    }

    fn summary(&self) -> Summary {
        let len = self.len as usize;
        let mut count = 0u32;
        let mut distinct = 0u32;
        for i in 0..len {
            count += self.counts[i];
            distinct += self.distinct[i];
            if i > 0 && self.first_orders[i] == self.last_orders[i - 1] {
                distinct -= 1;
            }
        }
        Summary {
            count,
            distinct,
            first: if len > 0 {
                Key {
                    order: self.first_orders[0],
                    time: self.first_times[0],
                    member: self.first_members[0],
                }
            } else {
                EMPTY_KEY
            },
            last_order: if len > 0 { self.last_orders[len - 1] } else { 0 },
        }
    }
}

/// Names a node: leaves and inner nodes live in separate arenas.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum NodeRef {
    Leaf(u32),
    Inner(u32),
}

/// The order-statistic B+tree. See the module documentation for its layout.
#[derive(Clone)]
pub(crate) struct Tree {
    leaves: Arena<Leaf>,
    inners: Arena<Inner>,
    free_leaves: Vec<u32>,
    free_inners: Vec<u32>,
    root: NodeRef,
    /// `locator[member]` is the leaf holding `member`, or [`NIL`] when it is unranked.
    locator: Vec<u32>,
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

    /// Inserts an unranked member. O(log n). The caller guarantees `member` is not ranked.
    pub(crate) fn insert(&mut self, names: &Interner, key: Key) {
        debug_assert!(!self.contains(key.member));
        let probe = Probe {
            order: key.order,
            time: key.time,
            player: names.get(key.member),
        };
        // Descend to the leaf whose range holds the key.
        let mut node = self.root;
        let leaf_id = loop {
            match node {
                NodeRef::Leaf(id) => break id,
                NodeRef::Inner(id) => {
                    let inner = &self.inners[id as usize];
                    node = inner.child_ref(inner.last_child_starting_before(names, &probe, false));
                }
            }
        };
        let leaf = &self.leaves[leaf_id as usize];
        let len = leaf.len as usize;
        let (mut lo, mut hi) = (0usize, len);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if cmp_probe(
                names,
                &probe,
                leaf.orders[mid],
                leaf.times[mid],
                leaf.members[mid],
            ) == Ordering::Greater
            {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let slot = lo;
        if self.locator.len() <= key.member as usize {
            self.locator.resize(key.member as usize + 1, NIL);
        }
        self.len += 1;
        if len < LEAF_CAP {
            self.leaves[leaf_id as usize].insert_at(slot, key);
            self.locator[key.member as usize] = leaf_id;
            self.refresh_path(NodeRef::Leaf(leaf_id));
            return;
        }
        // The leaf is full. Prefer handing one entry to a sibling with room (this keeps leaves
        // about 80% full instead of the 69% plain splitting gives), else split.
        if self.insert_with_rotation(leaf_id, slot, key) {
            return;
        }
        let right_id = self.split_leaf(leaf_id);
        let left_len = self.leaves[leaf_id as usize].len as usize;
        let target = if slot <= left_len {
            self.leaves[leaf_id as usize].insert_at(slot, key);
            leaf_id
        } else {
            self.leaves[right_id as usize].insert_at(slot - left_len, key);
            right_id
        };
        self.locator[key.member as usize] = target;
        self.refresh_path(NodeRef::Leaf(leaf_id));
        self.refresh_path(NodeRef::Leaf(right_id));
    }

    /// Inserts into a full leaf by moving its last entry to the right sibling, or its first to
    /// the left sibling, when that sibling shares the parent and has room.
    fn insert_with_rotation(&mut self, leaf_id: u32, slot: usize, key: Key) -> bool {
        let leaf = &self.leaves[leaf_id as usize];
        let parent = leaf.parent;
        if parent == NIL {
            return false;
        }
        let (next, prev) = (leaf.next, leaf.prev);
        let has_room = |tree: &Tree, id: u32| {
            id != NIL
                && tree.leaves[id as usize].parent == parent
                && (tree.leaves[id as usize].len as usize) < LEAF_CAP - 1
        };
        if has_room(self, next) && slot < LEAF_CAP {
            let leaf = &mut self.leaves[leaf_id as usize];
            let moved = leaf.key(LEAF_CAP - 1);
            leaf.remove_at(LEAF_CAP - 1);
            leaf.insert_at(slot, key);
            self.leaves[next as usize].insert_at(0, moved);
            self.locator[key.member as usize] = leaf_id;
            self.locator[moved.member as usize] = next;
            self.refresh_path(NodeRef::Leaf(leaf_id));
            self.refresh_path(NodeRef::Leaf(next));
            return true;
        }
        if has_room(self, prev) && slot > 0 {
            let leaf = &mut self.leaves[leaf_id as usize];
            let moved = leaf.key(0);
            leaf.remove_at(0);
            leaf.insert_at(slot - 1, key);
            let prev_leaf = &mut self.leaves[prev as usize];
            let at = prev_leaf.len as usize;
            prev_leaf.insert_at(at, moved);
            self.locator[key.member as usize] = leaf_id;
            self.locator[moved.member as usize] = prev;
            self.refresh_path(NodeRef::Leaf(prev));
            self.refresh_path(NodeRef::Leaf(leaf_id));
            return true;
        }
        false
    }

    /// Removes a ranked member and returns its key. O(log n).
    pub(crate) fn remove(&mut self, member: MemberId) -> Option<Key> {
        let leaf_id = *self.locator.get(member as usize)?;
        if leaf_id == NIL {
            return None;
        }
        let leaf = &mut self.leaves[leaf_id as usize];
        let slot = leaf.slot_of(member);
        let key = leaf.key(slot);
        leaf.remove_at(slot);
        self.locator[member as usize] = NIL;
        self.len -= 1;
        self.after_leaf_shrunk(leaf_id);
        Some(key)
    }

    /// Restores the invariants after a leaf lost entries: an underfull leaf merges into a
    /// sibling under the same parent when they fit, an empty leaf always leaves the tree, and the
    /// summaries on the path to the root are refreshed.
    fn after_leaf_shrunk(&mut self, leaf_id: u32) {
        let leaf = &self.leaves[leaf_id as usize];
        let (parent, prev, next, len) = (leaf.parent, leaf.prev, leaf.next, leaf.len as usize);
        if parent == NIL || len >= LEAF_MIN {
            self.refresh_path(NodeRef::Leaf(leaf_id));
            return;
        }
        let fits = |tree: &Tree, id: u32| {
            id != NIL
                && tree.leaves[id as usize].parent == parent
                && tree.leaves[id as usize].len as usize + len <= LEAF_CAP
        };
        let moved = self.leaves[leaf_id as usize].clone_entries();
        let survivor = if fits(self, prev) {
            let target = &mut self.leaves[prev as usize];
            for key in &moved {
                let at = target.len as usize;
                target.insert_at(at, *key);
            }
            Some(prev)
        } else if fits(self, next) {
            let target = &mut self.leaves[next as usize];
            for (i, key) in moved.iter().enumerate() {
                target.insert_at(i, *key);
            }
            Some(next)
        } else if len == 0 {
            None
        } else {
            self.refresh_path(NodeRef::Leaf(leaf_id));
            return;
        };
        if let Some(survivor) = survivor {
            for key in &moved {
                self.locator[key.member as usize] = survivor;
            }
        }
        // Unlink the emptied leaf from the leaf chain and from its parent.
        if prev != NIL {
            self.leaves[prev as usize].next = next;
        }
        if next != NIL {
            self.leaves[next as usize].prev = prev;
        }
        let parent_node = &mut self.inners[parent as usize];
        let pos = parent_node.position_of(leaf_id);
        parent_node.remove_child(pos);
        self.leaves[leaf_id as usize] = Leaf::empty(NIL);
        self.free_leaves.push(leaf_id);
        if let Some(survivor) = survivor {
            let summary = self.leaves[survivor as usize].summary();
            let parent_node = &mut self.inners[parent as usize];
            let pos = parent_node.position_of(survivor);
            parent_node.set_summary(pos, summary);
        }
        self.after_inner_shrunk(parent);
    }

    /// Restores the invariants after inner node `id` lost a child: an empty node leaves the
    /// tree, an underfull one merges into a sibling under the same parent when they fit, a root
    /// with one child hands the root to it, and the summaries up to the root are refreshed.
    fn after_inner_shrunk(&mut self, id: u32) {
        let node = &self.inners[id as usize];
        let (parent, len) = (node.parent, node.len as usize);
        if parent == NIL {
            self.collapse_root();
            return;
        }
        if len == 0 {
            let parent_node = &mut self.inners[parent as usize];
            let pos = parent_node.position_of(id);
            parent_node.remove_child(pos);
            self.inners[id as usize] = Inner::empty(NIL, false);
            self.free_inners.push(id);
            self.after_inner_shrunk(parent);
            return;
        }
        if len >= INNER_MIN {
            self.refresh_path(NodeRef::Inner(id));
            return;
        }
        let parent_node = &self.inners[parent as usize];
        let pos = parent_node.position_of(id);
        let sibling_fits = |sib_pos: usize| {
            let sib = parent_node.children[sib_pos];
            self.inners[sib as usize].len as usize + len <= INNER_CAP
        };
        let (left, right) = if pos > 0 && sibling_fits(pos - 1) {
            (parent_node.children[pos - 1], id)
        } else if pos + 1 < parent_node.len as usize && sibling_fits(pos + 1) {
            (id, parent_node.children[pos + 1])
        } else {
            self.refresh_path(NodeRef::Inner(id));
            return;
        };
        // Move every child of `right` to the end of `left`, then drop `right`.
        let mut right_node = core::mem::replace(&mut self.inners[right as usize], Inner::empty(NIL, false));
        let moved_from = self.inners[left as usize].len as usize;
        right_node.move_tail_to(0, &mut self.inners[left as usize]);
        let left_node = &self.inners[left as usize];
        let children: Vec<u32> = left_node.children[moved_from..left_node.len as usize].to_vec();
        let leaf_children = left_node.leaf_children;
        for child in children {
            self.set_parent(leaf_children, child, left);
        }
        self.free_inners.push(right);
        let summary = self.inners[left as usize].summary();
        let parent_node = &mut self.inners[parent as usize];
        let right_pos = parent_node.position_of(right);
        parent_node.remove_child(right_pos);
        let left_pos = parent_node.position_of(left);
        parent_node.set_summary(left_pos, summary);
        self.after_inner_shrunk(parent);
    }

    /// While the root is an inner node with one child, makes that child the root.
    fn collapse_root(&mut self) {
        while let NodeRef::Inner(id) = self.root {
            let node = &self.inners[id as usize];
            if node.len != 1 {
                return;
            }
            let child = node.child_ref(0);
            match child {
                NodeRef::Leaf(c) => self.leaves[c as usize].parent = NIL,
                NodeRef::Inner(c) => self.inners[c as usize].parent = NIL,
            }
            self.inners[id as usize] = Inner::empty(NIL, false);
            self.free_inners.push(id);
            self.root = child;
        }
    }

    fn set_parent(&mut self, leaf_children: bool, child: u32, parent: u32) {
        if leaf_children {
            self.leaves[child as usize].parent = parent;
        } else {
            self.inners[child as usize].parent = parent;
        }
    }

    fn alloc_leaf(&mut self, leaf: Leaf) -> u32 {
        if let Some(id) = self.free_leaves.pop() {
            self.leaves[id as usize] = leaf;
            id
        } else {
            self.leaves.push(leaf);
            (self.leaves.len() - 1) as u32
        }
    }

    fn alloc_inner(&mut self, inner: Inner) -> u32 {
        if let Some(id) = self.free_inners.pop() {
            self.inners[id as usize] = inner;
            id
        } else {
            self.inners.push(inner);
            (self.inners.len() - 1) as u32
        }
    }

    /// Splits a full leaf in halves; the new right half is linked in after it. Returns its id.
    fn split_leaf(&mut self, leaf_id: u32) -> u32 {
        let half = LEAF_CAP / 2;
        let old = &mut self.leaves[leaf_id as usize];
        let mut right = Leaf::empty(old.parent);
        let n = old.len as usize - half;
        right.orders[..n].copy_from_slice(&old.orders[half..half + n]);
        right.times[..n].copy_from_slice(&old.times[half..half + n]);
        right.members[..n].copy_from_slice(&old.members[half..half + n]);
        right.len = n as u32;
        right.prev = leaf_id;
        right.next = old.next;
        old.len = half as u32;
        let old_next = old.next;
        let right_id = self.alloc_leaf(right);
        self.leaves[leaf_id as usize].next = right_id;
        if old_next != NIL {
            self.leaves[old_next as usize].prev = right_id;
        }
        let moved: Vec<MemberId> = self.leaves[right_id as usize].members[..n].to_vec();
        for m in moved {
            self.locator[m as usize] = right_id;
        }
        self.attach_after(NodeRef::Leaf(leaf_id), NodeRef::Leaf(right_id));
        right_id
    }

    /// Puts `new` into the parent of `existing`, right after it, splitting upward as needed.
    fn attach_after(&mut self, existing: NodeRef, new: NodeRef) {
        let parent = self.parent_of(existing);
        let new_summary = self.summary_of(new);
        if parent == NIL {
            // `existing` was the root: grow a level.
            let mut root = Inner::empty(NIL, matches!(existing, NodeRef::Leaf(_)));
            root.insert_child(0, existing.id(), self.summary_of(existing));
            root.insert_child(1, new.id(), new_summary);
            let root_id = self.alloc_inner(root);
            self.set_parent_ref(existing, root_id);
            self.set_parent_ref(new, root_id);
            self.root = NodeRef::Inner(root_id);
            return;
        }
        let pos = self.inners[parent as usize].position_of(existing.id());
        if (self.inners[parent as usize].len as usize) < INNER_CAP {
            self.inners[parent as usize].insert_child(pos + 1, new.id(), new_summary);
            self.set_parent_ref(new, parent);
            let summary = self.summary_of(existing);
            self.inners[parent as usize].set_summary(pos, summary);
            return;
        }
        // The parent is full: split it, then place `new` in whichever half holds `existing`.
        let half = INNER_CAP / 2;
        let leaf_children = self.inners[parent as usize].leaf_children;
        let mut right = Inner::empty(self.inners[parent as usize].parent, leaf_children);
        self.inners[parent as usize].move_tail_to(half, &mut right);
        let right_id = self.alloc_inner(right);
        let moved: Vec<u32> = {
            let r = &self.inners[right_id as usize];
            r.children[..r.len as usize].to_vec()
        };
        for child in moved {
            self.set_parent(leaf_children, child, right_id);
        }
        let (host, host_pos) = if pos < half {
            (parent, pos)
        } else {
            (right_id, pos - half)
        };
        self.inners[host as usize].insert_child(host_pos + 1, new.id(), new_summary);
        self.set_parent_ref(new, host);
        let summary = self.summary_of(existing);
        self.inners[host as usize].set_summary(host_pos, summary);
        self.attach_after(NodeRef::Inner(parent), NodeRef::Inner(right_id));
    }

    fn parent_of(&self, node: NodeRef) -> u32 {
        match node {
            NodeRef::Leaf(id) => self.leaves[id as usize].parent,
            NodeRef::Inner(id) => self.inners[id as usize].parent,
        }
    }

    fn set_parent_ref(&mut self, node: NodeRef, parent: u32) {
        match node {
            NodeRef::Leaf(id) => self.leaves[id as usize].parent = parent,
            NodeRef::Inner(id) => self.inners[id as usize].parent = parent,
        }
    }

    fn summary_of(&self, node: NodeRef) -> Summary {
        match node {
            NodeRef::Leaf(id) => self.leaves[id as usize].summary(),
            NodeRef::Inner(id) => self.inners[id as usize].summary(),
        }
    }

    /// Recomputes the summaries on the path from `node` to the root. O(B log n).
    fn refresh_path(&mut self, mut node: NodeRef) {
        loop {
            let parent = self.parent_of(node);
            if parent == NIL {
                return;
            }
            let summary = self.summary_of(node);
            let p = &mut self.inners[parent as usize];
            let pos = p.position_of(node.id());
            p.set_summary(pos, summary);
            node = NodeRef::Inner(parent);
        }
    }

    /// Replaces the whole tree with `keys`, which must come sorted in the total order and name
    /// distinct members, in leaves filled to [`BULK_FILL`]: a loaded board takes writes next.
    /// O(n), and nothing beyond the new tree is allocated.
    pub(crate) fn bulk_load(&mut self, keys: impl Iterator<Item = Key>, members: usize) {
        self.load_filled(keys, members, BULK_FILL);
    }

    /// [`Tree::bulk_load`] with `fill` entries per leaf (1 to [`LEAF_CAP`]).
    fn load_filled(&mut self, keys: impl Iterator<Item = Key>, members: usize, fill: usize) {
        debug_assert!((1..=LEAF_CAP).contains(&fill));
        *self = Tree::default();
        self.locator = alloc::vec![NIL; members];
        let mut keys = keys.peekable();
        if keys.peek().is_none() {
            return;
        }
        self.leaves = Arena::default();
        let mut level: Vec<NodeRef> = Vec::new();
        let mut len = 0;
        while keys.peek().is_some() {
            let i = level.len() as u32;
            let mut leaf = Leaf::empty(NIL);
            let mut slot = 0;
            while slot < fill {
                let Some(key) = keys.next() else { break };
                leaf.orders[slot] = key.order;
                leaf.times[slot] = key.time;
                leaf.members[slot] = key.member;
                self.locator[key.member as usize] = i;
                slot += 1;
            }
            leaf.len = slot as u32;
            len += slot;
            leaf.prev = if i == 0 { NIL } else { i - 1 };
            leaf.next = NIL;
            if i > 0 {
                self.leaves[i as usize - 1].next = i;
            }
            self.leaves.push(leaf);
            level.push(NodeRef::Leaf(i));
        }
        while level.len() > 1 {
            let mut upper = Vec::with_capacity(level.len().div_ceil(BULK_FILL_INNER));
            for group in level.chunks(BULK_FILL_INNER) {
                let mut inner = Inner::empty(NIL, matches!(group[0], NodeRef::Leaf(_)));
                for (pos, child) in group.iter().enumerate() {
                    inner.insert_child(pos, child.id(), self.summary_of(*child));
                }
                let id = self.alloc_inner(inner);
                for child in group {
                    self.set_parent_ref(*child, id);
                }
                upper.push(NodeRef::Inner(id));
            }
            level = upper;
        }
        self.root = level[0];
        self.len = len;
    }

    /// Leaves in use (allocated and not freed). O(1).
    pub(crate) fn leaves_in_use(&self) -> usize {
        self.leaves.len() - self.free_leaves.len()
    }

    /// A copy with every leaf full, when this tree uses at least 1/16 more leaves than a load
    /// ([`Tree::bulk_load`], 15/16 full) would (random inserts split leaves in half and leave
    /// them about three quarters full); `None` otherwise, so a board just loaded from a
    /// checkpoint is not copied again. Full, not [`BULK_FILL`] as a load: a board is repacked
    /// when its writes pause, and the next write into a full leaf splits only that leaf.
    /// `members` is the locator's length. O(n).
    pub(crate) fn packed(&self, members: usize) -> Option<Tree> {
        let loaded = self.len.div_ceil(BULK_FILL);
        if self.leaves_in_use() * 16 < loaded * 17 {
            return None;
        }
        // Straight from this tree's leaf chain: the copy costs the new tree and nothing more.
        let first = self.locate_position(0).map_or(NIL, |(leaf, _)| leaf);
        let leaves = core::iter::successors((first != NIL).then_some(first), |&id| {
            let next = self.leaves[id as usize].next;
            (next != NIL).then_some(next)
        });
        let keys = leaves.flat_map(|id| {
            let leaf = &self.leaves[id as usize];
            (0..leaf.len as usize).map(move |slot| leaf.key(slot))
        });
        let mut tree = Tree::default();
        tree.load_filled(keys, members, LEAF_CAP);
        Some(tree)
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
            assert_eq!(self.position_of(key.member), Some(pos), "position of member");
        }
        let ranked = self.locator.iter().filter(|&&l| l != NIL).count();
        assert_eq!(ranked, self.len, "locator count");
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

impl Leaf {
    fn clone_entries(&self) -> Vec<Key> {
        (0..self.len as usize).map(|s| self.key(s)).collect()
    }
}

impl Inner {
    #[inline]
    fn child_ref(&self, pos: usize) -> NodeRef {
        if self.leaf_children {
            NodeRef::Leaf(self.children[pos])
        } else {
            NodeRef::Inner(self.children[pos])
        }
    }

    /// The position of the last child whose first key sorts before `probe` (or at it, with
    /// `inclusive`); 0 when none does. Binary search over the separators.
    #[inline]
    fn last_child_starting_before(&self, names: &Interner, probe: &Probe<'_>, inclusive: bool) -> usize {
        let (mut lo, mut hi) = (1usize, self.len as usize);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let ord = cmp_probe(
                names,
                probe,
                self.first_orders[mid],
                self.first_times[mid],
                self.first_members[mid],
            );
            let before = ord == Ordering::Greater || (inclusive && ord == Ordering::Equal);
            if before {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo - 1
    }
}

impl NodeRef {
    fn id(self) -> u32 {
        match self {
            NodeRef::Leaf(id) | NodeRef::Inner(id) => id,
        }
    }
}

/// Node storage in blocks that double in size: block `k` holds `ARENA_FIRST << k` nodes.
/// Growing never copies the nodes or doubles the memory in use the way one big `Vec` does, and
/// a small board holds one small block. A large board's nodes are mostly in blocks of tens of
/// megabytes, which a general-purpose allocator maps on their own (glibc maps every request of
/// 32 MiB and more) instead of mixing them with small allocations in its heaps: the memory comes
/// back whole when a tree is dropped (after a repack, say), instead of leaving holes that a
/// trim may or may not return. Fixed-size blocks fell in glibc's heaps or not depending on its
/// sliding mmap threshold, so the resident set at rest differed between identical loads.
/// Indexing costs one extra load from the block table
/// (at most 32 entries, in cache) and a leading-zeros count.
#[derive(Clone)]
struct Arena<T> {
    blocks: Vec<Vec<T>>,
    len: usize,
}

/// The first block holds `1 << ARENA_FIRST_SHIFT` nodes.
const ARENA_FIRST_SHIFT: u32 = 4;
const ARENA_FIRST: usize = 1 << ARENA_FIRST_SHIFT;

/// The block of node `i` and its slot in that block.
#[inline]
fn arena_slot(i: usize) -> (usize, usize) {
    // Block k starts at ARENA_FIRST * (2^k - 1), so i + ARENA_FIRST lies in
    // [ARENA_FIRST << k, ARENA_FIRST << (k + 1)).
    let shifted = i + ARENA_FIRST;
    let block = (usize::BITS - 1 - shifted.leading_zeros() - ARENA_FIRST_SHIFT) as usize;
    (block, shifted - (ARENA_FIRST << block))
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Arena {
            blocks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Arena<T> {
    fn with_first(first: T) -> Arena<T> {
        let mut arena = Arena::default();
        arena.push(first);
        arena
    }

    fn push(&mut self, value: T) {
        let (block, slot) = arena_slot(self.len);
        if slot == 0 {
            debug_assert_eq!(block, self.blocks.len());
            self.blocks.push(Vec::with_capacity(ARENA_FIRST << block));
        }
        self.blocks[block].push(value);
        self.len += 1;
    }

    fn len(&self) -> usize {
        self.len
    }

    /// The bytes of the nodes held and of the block table. A last block's capacity beyond its
    /// nodes is not counted: it is address space nothing has written yet.
    fn memory(&self) -> usize {
        self.len * core::mem::size_of::<T>() + self.blocks.capacity() * core::mem::size_of::<Vec<T>>()
    }
}

impl<T> core::ops::Index<usize> for Arena<T> {
    type Output = T;

    #[inline]
    fn index(&self, i: usize) -> &T {
        let (block, slot) = arena_slot(i);
        &self.blocks[block][slot]
    }
}

impl<T> core::ops::IndexMut<usize> for Arena<T> {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut T {
        let (block, slot) = arena_slot(i);
        &mut self.blocks[block][slot]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks double from `ARENA_FIRST` nodes, and every node keeps its own slot across
    /// block boundaries.
    #[test]
    fn arena_blocks_double_and_every_node_keeps_its_slot() {
        assert_eq!(arena_slot(0), (0, 0));
        assert_eq!(arena_slot(ARENA_FIRST - 1), (0, ARENA_FIRST - 1));
        assert_eq!(arena_slot(ARENA_FIRST), (1, 0));
        assert_eq!(arena_slot(3 * ARENA_FIRST - 1), (1, 2 * ARENA_FIRST - 1));
        assert_eq!(arena_slot(3 * ARENA_FIRST), (2, 0));
        assert_eq!(
            arena_slot(usize::MAX - ARENA_FIRST).0,
            (usize::BITS - 1 - ARENA_FIRST_SHIFT) as usize
        );

        let mut arena = Arena::default();
        let n = 100 * ARENA_FIRST + 3;
        for i in 0..n {
            arena.push(i * 3);
        }
        assert_eq!(arena.len(), n);
        for (k, block) in arena.blocks.iter().enumerate() {
            assert!(block.capacity() >= ARENA_FIRST << k);
            let last = k + 1 == arena.blocks.len();
            assert!(last || block.len() == ARENA_FIRST << k, "block {k} is full");
        }
        // Six blocks hold 16 + 32 + ... + 512 = 1,008 nodes; the seventh the rest of 1,603.
        assert_eq!(arena.blocks.len(), 7);
        for i in 0..n {
            assert_eq!(arena[i], i * 3);
        }
        arena[ARENA_FIRST] = 7;
        assert_eq!(arena[ARENA_FIRST], 7);
        assert_eq!(arena[ARENA_FIRST - 1], (ARENA_FIRST - 1) * 3);
    }
}
