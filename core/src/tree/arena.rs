//! Node storage in blocks that double in size.

use alloc::vec::Vec;

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
pub(super) struct Arena<T> {
    blocks: Vec<Vec<T>>,
    len: usize,
}

/// The first block holds `1 << ARENA_FIRST_SHIFT` nodes.
pub(super) const ARENA_FIRST_SHIFT: u32 = 4;
pub(super) const ARENA_FIRST: usize = 1 << ARENA_FIRST_SHIFT;

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
    pub(super) fn with_first(first: T) -> Arena<T> {
        let mut arena = Arena::default();
        arena.push(first);
        arena
    }

    pub(super) fn push(&mut self, value: T) {
        let (block, slot) = arena_slot(self.len);
        if slot == 0 {
            debug_assert_eq!(block, self.blocks.len());
            self.blocks.push(Vec::with_capacity(ARENA_FIRST << block));
        }
        self.blocks[block].push(value);
        self.len += 1;
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The bytes of the nodes held and of the block table. A last block's capacity beyond its
    /// nodes is not counted: it is address space nothing has written yet.
    pub(super) fn memory(&self) -> usize {
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
