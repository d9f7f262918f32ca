//! The tree's nodes: leaves (entries as parallel arrays) and inner nodes (per child, its count,
//! distinct count, first key and last order), and how each is changed in place.

use alloc::vec::Vec;
use core::cmp::Ordering;

use super::{INNER_CAP, Key, LEAF_CAP, NIL, Probe, cmp_probe, corrupt};
use crate::interner::{Interner, MemberId};

#[derive(Clone)]
pub(super) struct Leaf {
    pub(super) parent: u32,
    pub(super) prev: u32,
    pub(super) next: u32,
    pub(super) len: u32,
    pub(super) orders: [i64; LEAF_CAP],
    pub(super) times: [i64; LEAF_CAP],
    pub(super) members: [MemberId; LEAF_CAP],
}

impl Leaf {
    pub(super) fn empty(parent: u32) -> Leaf {
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
    pub(super) fn key(&self, slot: usize) -> Key {
        Key {
            order: self.orders[slot],
            time: self.times[slot],
            member: self.members[slot],
        }
    }

    #[inline]
    pub(super) fn insert_at(&mut self, slot: usize, key: Key) {
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

    #[inline]
    pub(super) fn remove_at(&mut self, slot: usize) {
        let len = self.len as usize;
        self.orders.copy_within(slot + 1..len, slot);
        self.times.copy_within(slot + 1..len, slot);
        self.members.copy_within(slot + 1..len, slot);
        self.len -= 1;
    }

    /// The slot of `member`, scanning the members array (four cache lines at most).
    #[inline]
    pub(super) fn slot_of(&self, member: MemberId) -> usize {
        let len = self.len as usize;
        match self.members[..len].iter().position(|&m| m == member) {
            Some(slot) => slot,
            None => corrupt("member missing from its located leaf"),
        }
    }

    #[inline]
    pub(super) fn summary(&self) -> Summary {
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
pub(super) struct Inner {
    pub(super) parent: u32,
    pub(super) len: u32,
    /// Whether the children are leaves (else inner nodes).
    pub(super) leaf_children: bool,
    pub(super) children: [u32; INNER_CAP],
    pub(super) counts: [u32; INNER_CAP],
    pub(super) distinct: [u32; INNER_CAP],
    pub(super) first_orders: [i64; INNER_CAP],
    pub(super) first_times: [i64; INNER_CAP],
    pub(super) first_members: [MemberId; INNER_CAP],
    pub(super) last_orders: [i64; INNER_CAP],
}

/// What a parent keeps about one child subtree.
#[derive(Clone, Copy)]
pub(super) struct Summary {
    pub(super) count: u32,
    pub(super) distinct: u32,
    pub(super) first: Key,
    pub(super) last_order: i64,
}

pub(super) const EMPTY_KEY: Key = Key {
    order: 0,
    time: 0,
    member: NIL,
};

impl Inner {
    pub(super) fn empty(parent: u32, leaf_children: bool) -> Inner {
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
    pub(super) fn position_of(&self, child: u32) -> usize {
        match self.children[..self.len as usize]
            .iter()
            .position(|&c| c == child)
        {
            Some(pos) => pos,
            None => corrupt("child missing from its parent"),
        }
    }

    #[inline]
    pub(super) fn set_summary(&mut self, pos: usize, s: Summary) {
        self.counts[pos] = s.count;
        self.distinct[pos] = s.distinct;
        self.first_orders[pos] = s.first.order;
        self.first_times[pos] = s.first.time;
        self.first_members[pos] = s.first.member;
        self.last_orders[pos] = s.last_order;
    }

    #[inline]
    pub(super) fn insert_child(&mut self, pos: usize, child: u32, s: Summary) {
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

    #[inline]
    pub(super) fn remove_child(&mut self, pos: usize) {
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
    pub(super) fn move_tail_to(&mut self, from: usize, other: &mut Inner) {
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

    #[inline]
    pub(super) fn summary(&self) -> Summary {
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
pub(super) enum NodeRef {
    Leaf(u32),
    Inner(u32),
}

impl Leaf {
    pub(super) fn clone_entries(&self) -> Vec<Key> {
        (0..self.len as usize).map(|s| self.key(s)).collect()
    }
}

impl Inner {
    #[inline]
    pub(super) fn child_ref(&self, pos: usize) -> NodeRef {
        if self.leaf_children {
            NodeRef::Leaf(self.children[pos])
        } else {
            NodeRef::Inner(self.children[pos])
        }
    }

    /// The position of the last child whose first key sorts before `probe` (or at it, with
    /// `inclusive`); 0 when none does. Binary search over the separators.
    #[inline]
    pub(super) fn last_child_starting_before(
        &self,
        names: &Interner,
        probe: &Probe<'_>,
        inclusive: bool,
    ) -> usize {
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
    #[inline]
    pub(super) fn id(self) -> u32 {
        match self {
            NodeRef::Leaf(id) | NodeRef::Inner(id) => id,
        }
    }
}
