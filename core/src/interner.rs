//! Player ids interned to dense `u32` member ids.
//!
//! The ranked index stores small fixed records, so a player id string is stored exactly once, in
//! one contiguous byte arena, and everything else refers to it by its dense [`MemberId`]. The hash
//! table holds only the `u32` ids (it hashes the arena bytes on demand), which keeps the per-player
//! overhead near 10 bytes instead of the ~50 a `HashMap<String, u32>` spends.

use alloc::vec::Vec;
use core::hash::BuildHasher;

use hashbrown::HashTable;

use crate::error::CapacityError;

/// A dense index naming one player within one board (`0..players_seen`).
pub type MemberId = u32;

/// The fixed seed of the interner's hash. The table is never iterated, so its layout cannot leak
/// into any answer; a fixed seed keeps runs repeatable.
const HASH_SEED: u64 = 0x5354_414e_4449_4e47; // "STANDING"

/// Interns player ids: `&str` to [`MemberId`] in O(1) expected, and back in O(1).
#[derive(Clone)]
pub(crate) struct Interner {
    /// Every interned id's bytes, back to back.
    arena: Vec<u8>,
    /// `ends[m]` is the arena offset one past the end of member `m`'s bytes.
    ends: Vec<u32>,
    table: HashTable<MemberId>,
    hasher: foldhash::fast::FixedState,
}

impl Default for Interner {
    fn default() -> Self {
        Interner {
            arena: Vec::new(),
            ends: Vec::new(),
            table: HashTable::new(),
            hasher: foldhash::fast::FixedState::with_seed(HASH_SEED),
        }
    }
}

impl Interner {
    /// The number of interned ids. O(1).
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The bytes of member `m`. O(1). Panics if `m` was never interned (an internal bug).
    #[inline]
    pub(crate) fn get(&self, m: MemberId) -> &str {
        // Only `&str` values are ever interned, and each is stored whole, so every slice between
        // two ends is valid UTF-8.
        match core::str::from_utf8(member_bytes(&self.arena, &self.ends, m)) {
            Ok(s) => s,
            Err(_) => unreachable_utf8(),
        }
    }

    /// The member id of `player`, if it was interned. O(1) expected.
    pub(crate) fn lookup(&self, player: &str) -> Option<MemberId> {
        let hash = self.hasher.hash_one(player.as_bytes());
        // Compares bytes: going through `get` would check every candidate is UTF-8 first.
        self.table
            .find(hash, |&m| {
                member_bytes(&self.arena, &self.ends, m) == player.as_bytes()
            })
            .copied()
    }

    /// The member id of `player`, interning it first if it is new. O(1) expected (amortized).
    pub(crate) fn intern(&mut self, player: &str) -> Result<MemberId, CapacityError> {
        // One hash serves both the look-up and the insert.
        let hash = self.hasher.hash_one(player.as_bytes());
        let Interner {
            arena,
            ends,
            table,
            hasher,
        } = self;
        let entry = table.entry(
            hash,
            |&m| member_bytes(arena, ends, m) == player.as_bytes(),
            |&other| hasher.hash_one(member_bytes(arena, ends, other)),
        );
        let vacant = match entry {
            hashbrown::hash_table::Entry::Occupied(found) => return Ok(*found.get()),
            hashbrown::hash_table::Entry::Vacant(vacant) => vacant,
        };
        let next_end = arena
            .len()
            .checked_add(player.len())
            .filter(|&end| end <= u32::MAX as usize)
            .ok_or(CapacityError::PlayerIdBytes)?;
        if ends.len() >= (u32::MAX - 1) as usize {
            return Err(CapacityError::Players);
        }
        let m = ends.len() as MemberId;
        arena.extend_from_slice(player.as_bytes());
        ends.push(next_end as u32);
        vacant.insert(m);
        Ok(m)
    }

    /// The hash table of ids already laid out back to back (`ends[m]` is one past member `m`'s
    /// last byte; every slice must be UTF-8, which the caller checked). Returns the first
    /// member whose id repeats an earlier one as `Err`. The ids are borrowed, so that a caller
    /// can build the table beside other work on them ([`Interner::from_parts`] then owns both).
    ///
    /// O(n log n) but cache-friendly: the table is filled in bucket order rather than in member
    /// order, so at millions of ids each insert touches memory the previous one just touched,
    /// instead of missing the cache once or twice per id. This is what makes a restart from a
    /// checkpoint fast.
    pub(crate) fn table_of(arena: &[u8], ends: &[u32]) -> Result<HashTable<MemberId>, MemberId> {
        let hasher = foldhash::fast::FixedState::with_seed(HASH_SEED);
        let n = ends.len();
        let mut table = HashTable::with_capacity(n);
        // hashbrown's bucket count for this capacity (a power of two holding n at 7/8 load),
        // and the start of an id's probe is its hash masked to it. A wrong guess only costs
        // speed.
        let buckets = if n < 8 { 8 } else { (n * 8 / 7).next_power_of_two() };
        let mask = buckets as u64 - 1;
        let mut order: Vec<(u64, MemberId)> = (0..n as MemberId)
            .map(|m| (hasher.hash_one(member_bytes(arena, ends, m)), m))
            .collect();
        order.sort_unstable_by_key(|&(hash, _)| hash & mask);
        for (hash, m) in order {
            let entry = table.entry(
                hash,
                |&other| member_bytes(arena, ends, other) == member_bytes(arena, ends, m),
                |&other| hasher.hash_one(member_bytes(arena, ends, other)),
            );
            match entry {
                hashbrown::hash_table::Entry::Occupied(_) => return Err(m),
                hashbrown::hash_table::Entry::Vacant(vacant) => {
                    vacant.insert(m);
                }
            }
        }
        Ok(table)
    }

    /// An interner of the ids and the table [`Interner::table_of`] built of them. O(1).
    pub(crate) fn from_parts(arena: Vec<u8>, ends: Vec<u32>, table: HashTable<MemberId>) -> Interner {
        Interner {
            arena,
            ends,
            table,
            hasher: foldhash::fast::FixedState::with_seed(HASH_SEED),
        }
    }

    /// The arena and the ends, as [`Interner::table_of`] takes them back. O(1).
    pub(crate) fn laid_out(&self) -> (&[u8], &[u32]) {
        (&self.arena, &self.ends)
    }

    /// Releases spare capacity after a bulk load, when no more growth is expected soon.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.arena.shrink_to_fit();
        self.ends.shrink_to_fit();
        let Interner {
            arena,
            ends,
            table,
            hasher,
        } = self;
        table.shrink_to_fit(|&other| hasher.hash_one(member_bytes(arena, ends, other)));
    }

    /// Bytes held: the id strings themselves, and the bookkeeping around them.
    pub(crate) fn memory(&self) -> (usize, usize) {
        let strings = self.arena.capacity();
        let bookkeeping = self.ends.capacity() * core::mem::size_of::<u32>()
            + self.table.capacity() * (core::mem::size_of::<MemberId>() + 1);
        (strings, bookkeeping)
    }
}

/// The bytes of member `m` in the arena. O(1).
#[inline]
pub(crate) fn member_bytes<'a>(arena: &'a [u8], ends: &[u32], m: MemberId) -> &'a [u8] {
    let m = m as usize;
    let start = if m == 0 { 0 } else { ends[m - 1] as usize };
    &arena[start..ends[m] as usize]
}

#[cold]
fn unreachable_utf8() -> ! {
    panic!("interner arena holds a non-UTF-8 slice; only &str values are interned")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Interning is idempotent and ids are dense in first-seen order.
    #[test]
    fn interning_is_dense_and_idempotent() {
        let mut names = Interner::default();
        assert_eq!(names.intern("p-ava").unwrap(), 0);
        assert_eq!(names.intern("p-ben").unwrap(), 1);
        assert_eq!(names.intern("p-ava").unwrap(), 0);
        assert_eq!(names.intern("").unwrap(), 2);
        assert_eq!(names.get(1), "p-ben");
        assert_eq!(names.get(2), "");
        assert_eq!(names.lookup("p-chloe"), None);
        assert_eq!(names.len(), 3);
    }
}
