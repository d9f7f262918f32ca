//! Changing the tree one entry at a time: insert (splitting, or rotating into a sibling first),
//! remove (merging or borrowing), each repaired bottom up along one path.

use alloc::vec::Vec;
use core::cmp::Ordering;

use super::node::{Inner, Leaf, NodeRef, Summary};
use super::{INNER_CAP, INNER_MIN, Key, LEAF_CAP, LEAF_MIN, NIL, Probe, Tree, cmp_probe};
use crate::interner::{Interner, MemberId};

/// The position `key` names. O(1).
fn probe_of<'n>(names: &'n Interner, key: &Key) -> Probe<'n> {
    Probe {
        order: key.order,
        time: key.time,
        player: names.get(key.member),
    }
}

impl Tree {
    /// The leaf whose range holds `probe` (with `inclusive`, one whose first key equals it
    /// counts as before it). O(log n).
    fn leaf_for(&self, names: &Interner, probe: &Probe<'_>, inclusive: bool) -> u32 {
        let mut node = self.root;
        loop {
            match node {
                NodeRef::Leaf(id) => return id,
                NodeRef::Inner(id) => {
                    let inner = &self.inners[id as usize];
                    node = inner.child_ref(inner.last_child_starting_before(names, probe, inclusive));
                }
            }
        }
    }

    /// Inserts an unranked member. O(log n). The caller guarantees `member` is not ranked.
    pub(crate) fn insert(&mut self, names: &Interner, key: Key) {
        debug_assert!(!self.contains(key.member));
        let probe = probe_of(names, &key);
        let leaf_id = self.leaf_for(names, &probe, false);
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
        if self.tracked && self.locator.len() <= key.member as usize {
            self.locator.resize(key.member as usize + 1, NIL);
        }
        self.len += 1;
        if len < LEAF_CAP {
            self.leaves[leaf_id as usize].insert_at(slot, key);
            self.locate(key.member, leaf_id);
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
        self.locate(key.member, target);
        self.refresh_path(NodeRef::Leaf(leaf_id));
        self.refresh_path(NodeRef::Leaf(right_id));
    }

    /// Inserts into a full leaf by moving its last entry to the right sibling, or its first to
    /// the left sibling, when that sibling shares the parent and has room.
    pub(super) fn insert_with_rotation(&mut self, leaf_id: u32, slot: usize, key: Key) -> bool {
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
            self.locate(key.member, leaf_id);
            self.locate(moved.member, next);
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
            self.locate(key.member, leaf_id);
            self.locate(moved.member, prev);
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
        self.locate(member, NIL);
        self.len -= 1;
        self.after_leaf_shrunk(leaf_id);
        Some(key)
    }

    /// Removes the entry `key` from a tree found by key, [`Tree::untracked`] or not; `false`
    /// when the tree does not hold it. O(log n).
    pub(crate) fn remove_key(&mut self, names: &Interner, key: Key) -> bool {
        let leaf_id = self.leaf_for(names, &probe_of(names, &key), true);
        let leaf = &mut self.leaves[leaf_id as usize];
        let len = leaf.len as usize;
        let Some(slot) = (0..len).find(|&s| leaf.members[s] == key.member) else {
            return false;
        };
        if leaf.orders[slot] != key.order || leaf.times[slot] != key.time {
            return false;
        }
        leaf.remove_at(slot);
        self.locate(key.member, NIL);
        self.len -= 1;
        self.after_leaf_shrunk(leaf_id);
        true
    }

    /// Restores the invariants after a leaf lost entries: an underfull leaf merges into a
    /// sibling under the same parent when they fit, an empty leaf always leaves the tree, and the
    /// summaries on the path to the root are refreshed.
    pub(super) fn after_leaf_shrunk(&mut self, leaf_id: u32) {
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
                self.locate(key.member, survivor);
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
    pub(super) fn after_inner_shrunk(&mut self, id: u32) {
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
    pub(super) fn collapse_root(&mut self) {
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

    pub(super) fn set_parent(&mut self, leaf_children: bool, child: u32, parent: u32) {
        if leaf_children {
            self.leaves[child as usize].parent = parent;
        } else {
            self.inners[child as usize].parent = parent;
        }
    }

    pub(super) fn alloc_leaf(&mut self, leaf: Leaf) -> u32 {
        if let Some(id) = self.free_leaves.pop() {
            self.leaves[id as usize] = leaf;
            id
        } else {
            self.leaves.push(leaf);
            (self.leaves.len() - 1) as u32
        }
    }

    pub(super) fn alloc_inner(&mut self, inner: Inner) -> u32 {
        if let Some(id) = self.free_inners.pop() {
            self.inners[id as usize] = inner;
            id
        } else {
            self.inners.push(inner);
            (self.inners.len() - 1) as u32
        }
    }

    /// Splits a full leaf in halves; the new right half is linked in after it. Returns its id.
    pub(super) fn split_leaf(&mut self, leaf_id: u32) -> u32 {
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
            self.locate(m, right_id);
        }
        self.attach_after(NodeRef::Leaf(leaf_id), NodeRef::Leaf(right_id));
        right_id
    }

    /// Puts `new` into the parent of `existing`, right after it, splitting upward as needed.
    pub(super) fn attach_after(&mut self, existing: NodeRef, new: NodeRef) {
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

    pub(super) fn parent_of(&self, node: NodeRef) -> u32 {
        match node {
            NodeRef::Leaf(id) => self.leaves[id as usize].parent,
            NodeRef::Inner(id) => self.inners[id as usize].parent,
        }
    }

    pub(super) fn set_parent_ref(&mut self, node: NodeRef, parent: u32) {
        match node {
            NodeRef::Leaf(id) => self.leaves[id as usize].parent = parent,
            NodeRef::Inner(id) => self.inners[id as usize].parent = parent,
        }
    }

    pub(super) fn summary_of(&self, node: NodeRef) -> Summary {
        match node {
            NodeRef::Leaf(id) => self.leaves[id as usize].summary(),
            NodeRef::Inner(id) => self.inners[id as usize].summary(),
        }
    }

    /// Recomputes the summaries on the path from `node` to the root. O(B log n).
    pub(super) fn refresh_path(&mut self, mut node: NodeRef) {
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
}
