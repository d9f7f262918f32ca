//! Building a tree whole: a bulk load from sorted keys, and a repacked copy.

use alloc::vec::Vec;

use super::arena::Arena;
use super::node::{Inner, Leaf, NodeRef};
use super::{BULK_FILL, BULK_FILL_INNER, Key, LEAF_CAP, NIL, Tree};

impl Tree {
    /// Replaces the whole tree with `keys`, which must come sorted in the total order and name
    /// distinct members, in leaves filled to [`BULK_FILL`]: a loaded board takes writes next.
    /// O(n), and nothing beyond the new tree is allocated.
    pub(crate) fn bulk_load(&mut self, keys: impl Iterator<Item = Key>, members: usize) {
        self.load_filled(keys, members, BULK_FILL);
    }

    /// [`Tree::bulk_load`] with `fill` entries per leaf (1 to [`LEAF_CAP`]).
    pub(super) fn load_filled(&mut self, keys: impl Iterator<Item = Key>, members: usize, fill: usize) {
        debug_assert!((1..=LEAF_CAP).contains(&fill));
        let tracked = self.tracked;
        *self = Tree {
            tracked,
            ..Tree::default()
        };
        if tracked {
            self.locator = alloc::vec![NIL; members];
        }
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
                self.locate(key.member, i);
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
}
