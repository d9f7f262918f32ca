//! Decoded snapshot parts held in the isolate: manifests, chunks and top pages by hash, least
//! recently used evicted past a byte budget, and the set of parts one query reads.
//!
//! Parts are immutable and named by their hash, so a held part is never stale; the budget only
//! bounds memory (an isolate has 128 MB). Entries are shared (`Rc`) with the queries reading
//! them, so an eviction never pulls a part from under a query: it only stops the next one from
//! finding it here.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use standings_core::interval::RankSketch;
use standings_core::snapshot::read::{Parts, SegmentCounts};
use standings_core::{ChunkHash, LookupChunk, Manifest, ManifestPatch, RankChunk, SnapshotEntry};

/// One decoded part.
#[derive(Clone, Debug)]
pub enum Decoded {
    /// A manifest.
    Manifest(Rc<Manifest>),
    /// A patch over a manifest.
    Patch(Rc<ManifestPatch>),
    /// A rank chunk.
    Rank(Rc<RankChunk>),
    /// A lookup chunk.
    Lookup(Rc<LookupChunk>),
    /// A rank sketch.
    Sketch(Rc<RankSketch>),
    /// A top page's answer, named by the hash of its cache key (board, period instance,
    /// version, limit, cursor): immutable like a part, so it shares the parts' budget.
    Page(Rc<Vec<u8>>),
    /// One segment's members counted over a manifest's rank chunks, named by the hash of the
    /// manifest's hash and the segment: what every read within the segment sums.
    Segment(Rc<SegmentCounts>),
}

impl Decoded {
    /// About how many bytes the decoded part holds in memory. O(entries).
    pub fn size(&self) -> usize {
        let entries = |entries: &[SnapshotEntry]| {
            entries
                .iter()
                .map(|e| size_of::<SnapshotEntry>() + e.player.capacity())
                .sum::<usize>()
        };
        match self {
            Decoded::Manifest(m) => {
                size_of::<Manifest>()
                    + m.rank_chunks
                        .iter()
                        .map(|c| size_of_val(c) + c.last.player.capacity())
                        .sum::<usize>()
                    + size_of_val(m.lookup_chunks.as_slice())
                    + m.rank_chunks
                        .iter()
                        .flat_map(|c| &c.segments)
                        .map(|s| size_of_val(s) + s.value.capacity())
                        .sum::<usize>()
            }
            Decoded::Patch(p) => {
                size_of::<ManifestPatch>()
                    + size_of_val(p.removed.as_slice())
                    + p.inserted
                        .iter()
                        .map(|i| size_of_val(i) + i.entry.player.capacity())
                        .sum::<usize>()
                    + p.unranked
                        .iter()
                        .map(|u| size_of_val(u) + u.capacity())
                        .sum::<usize>()
            }
            Decoded::Rank(c) => size_of::<RankChunk>() + entries(&c.entries),
            Decoded::Lookup(c) => size_of::<LookupChunk>() + entries(&c.entries),
            Decoded::Sketch(s) => s.memory(),
            Decoded::Page(bytes) => size_of::<Vec<u8>>() + bytes.capacity(),
            Decoded::Segment(counts) => counts.memory(),
        }
    }
}

/// Decoded parts by hash, within a byte budget, least recently used first out.
#[derive(Debug)]
pub struct DecodedCache {
    budget: usize,
    used: usize,
    clock: u64,
    entries: HashMap<[u8; 32], (Decoded, usize, u64)>,
    by_use: BTreeMap<u64, [u8; 32]>,
}

impl DecodedCache {
    /// An empty cache of `budget` bytes.
    pub fn new(budget: usize) -> DecodedCache {
        DecodedCache {
            budget,
            used: 0,
            clock: 0,
            entries: HashMap::new(),
            by_use: BTreeMap::new(),
        }
    }

    /// Bytes held now (at most the budget after every insert).
    pub fn used(&self) -> usize {
        self.used
    }

    /// Parts held now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The part named `hash`, marked as just used. O(log n).
    pub fn get(&mut self, hash: &ChunkHash) -> Option<Decoded> {
        self.clock += 1;
        let (part, _, last_use) = self.entries.get_mut(&hash.0)?;
        self.by_use.remove(last_use);
        *last_use = self.clock;
        self.by_use.insert(self.clock, hash.0);
        Some(part.clone())
    }

    /// Holds `part` under `hash`, then evicts the least recently used parts until the budget
    /// holds (the new part too, when it alone is larger). O(log n) per part evicted.
    pub fn insert(&mut self, hash: &ChunkHash, part: Decoded) {
        self.clock += 1;
        let size = part.size();
        if let Some((_, old_size, old_use)) = self.entries.insert(hash.0, (part, size, self.clock)) {
            self.used -= old_size;
            self.by_use.remove(&old_use);
        }
        self.used += size;
        self.by_use.insert(self.clock, hash.0);
        while self.used > self.budget {
            let Some((_, oldest)) = self.by_use.pop_first() else {
                break;
            };
            if let Some((_, size, _)) = self.entries.remove(&oldest) {
                self.used -= size;
            }
        }
    }
}

/// The decoded parts one query reads, by their place in its manifest.
#[derive(Debug, Default)]
pub struct QueryParts {
    /// Rank chunks by index.
    pub rank: HashMap<usize, Rc<RankChunk>>,
    /// Lookup chunks by partition.
    pub lookup: HashMap<usize, Rc<LookupChunk>>,
    /// The rank sketch, once read.
    pub sketch: Option<Rc<RankSketch>>,
}

impl Parts for QueryParts {
    fn rank(&self, i: usize) -> Option<&RankChunk> {
        self.rank.get(&i).map(|c| c.as_ref())
    }

    fn lookup(&self, partition: usize) -> Option<&LookupChunk> {
        self.lookup.get(&partition).map(|c| c.as_ref())
    }

    fn sketch(&self) -> Option<&RankSketch> {
        self.sketch.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use standings_core::BoardDigest;

    use super::*;

    fn chunk(players: usize) -> Decoded {
        Decoded::Rank(Rc::new(RankChunk {
            entries: (0..players)
                .map(|i| SnapshotEntry {
                    extras: None,
                    player: format!("p{i:04}"),
                    value: i as i64,
                    achieved_at: 0,
                })
                .collect(),
        }))
    }

    /// Past the budget the least recently used part goes first; a use refreshes a part.
    #[test]
    fn the_budget_evicts_the_least_recently_used() {
        let size = chunk(100).size();
        let mut cache = DecodedCache::new(size * 3);
        let hash = |i: u8| BoardDigest([i; 32]);
        for i in 0..3 {
            cache.insert(&hash(i), chunk(100));
        }
        assert_eq!((cache.len(), cache.used()), (3, size * 3));
        assert!(cache.get(&hash(0)).is_some());
        cache.insert(&hash(3), chunk(100));
        assert!(cache.get(&hash(1)).is_none(), "1 was the least recently used");
        assert!(cache.get(&hash(0)).is_some() && cache.get(&hash(2)).is_some());
        cache.insert(&hash(9), chunk(1000));
        assert!(cache.used() <= size * 3);
        assert!(
            cache.is_empty(),
            "a part larger than the budget is not kept either"
        );
    }
}
