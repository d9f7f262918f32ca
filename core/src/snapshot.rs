//! Versioned, immutable board snapshots, chunked for reuse across versions.
//!
//! A snapshot is a small [`Manifest`] plus content-addressed chunks:
//! - **rank chunks** hold the entries in rank order. Their boundaries are content-defined: a
//!   chunk ends after an entry whose player id hashes to a boundary mark (within minimum and
//!   maximum sizes). Boundaries therefore travel with the players, so one player's move rewrites
//!   the chunk they left and the chunk they joined, not every chunk between the two positions.
//! - **lookup chunks** hold the same entries partitioned by a hash of the player id and sorted by
//!   id, so a reader finds one player's entry by fetching one small chunk, then their rank from
//!   the manifest's key ranges and one rank chunk.
//!
//! Every part is encoded as a two-byte little-endian format version, a one-byte part tag, and a
//! postcard body. Decoding untrusted bytes never panics: it returns a [`DecodeError`].

use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::board::Board;
use crate::digest::{BoardDigest, ChunkHash, DigestWriter, fnv1a};
use crate::error::DecodeError;
use crate::event::check_id;
use crate::rules::{BoardRules, Standing};

/// The snapshot format version this build writes and reads.
pub const SNAPSHOT_FORMAT_VERSION: u16 = 1;

const TAG_MANIFEST: u8 = b'M';
const TAG_RANK_CHUNK: u8 = b'R';
const TAG_LOOKUP_CHUNK: u8 = b'L';

/// How a snapshot is cut into chunks. The reader needs none of this: the manifest says it all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkingOptions {
    /// A rank chunk never ends before this many entries (unless the board does).
    pub min_entries: u32,
    /// After the minimum, a chunk ends at a player whose id hash is 0 modulo this power of two,
    /// so the expected chunk holds `min_entries + boundary_modulus` entries.
    pub boundary_modulus: u32,
    /// A rank chunk always ends at this many entries.
    pub max_entries: u32,
    /// The target number of players per lookup chunk; the partition count is the next power of
    /// two of `total / lookup_target`, so it changes only when the board doubles or halves.
    pub lookup_target: u32,
}

impl Default for ChunkingOptions {
    fn default() -> Self {
        ChunkingOptions {
            min_entries: 1024,
            boundary_modulus: 4096,
            max_entries: 16384,
            lookup_target: 4096,
        }
    }
}

/// One ranked entry as a snapshot stores it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotEntry {
    /// The player.
    pub player: String,
    /// The aggregate value.
    pub value: i64,
    /// When it was achieved (ms since the Unix epoch).
    pub achieved_at: i64,
}

impl SnapshotEntry {
    fn standing(&self) -> Standing {
        Standing {
            value: self.value,
            achieved_at: self.achieved_at,
        }
    }
}

/// What the manifest says about one rank chunk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankChunkRef {
    /// Entries in the chunk.
    pub count: u32,
    /// Its first entry (the key range starts here).
    pub first: SnapshotEntry,
    /// Its last entry (the key range ends here).
    pub last: SnapshotEntry,
    /// The SHA-256 of the chunk's encoded bytes.
    pub hash: ChunkHash,
}

/// What the manifest says about one lookup chunk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LookupChunkRef {
    /// Entries in the chunk.
    pub count: u32,
    /// The SHA-256 of the chunk's encoded bytes.
    pub hash: ChunkHash,
}

/// The small part of a snapshot that names everything else.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The board's rules.
    pub rules: BoardRules,
    /// The version the snapshot was taken at.
    pub board_version: u64,
    /// Ranked players.
    pub total_players: u64,
    /// The board digest of the entries.
    pub digest: BoardDigest,
    /// The rank chunks, in rank order.
    pub rank_chunks: Vec<RankChunkRef>,
    /// The lookup chunks; a player's partition is `fnv1a(player) mod len`, `len` a power of two.
    pub lookup_chunks: Vec<LookupChunkRef>,
}

/// A rank chunk: consecutive entries in rank order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankChunk {
    /// The entries.
    pub entries: Vec<SnapshotEntry>,
}

/// A lookup chunk: one hash partition of the players, sorted by player id bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LookupChunk {
    /// The entries.
    pub entries: Vec<SnapshotEntry>,
}

/// A whole snapshot: the manifest and every chunk, encoded.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The decoded manifest.
    pub manifest: Manifest,
    /// The encoded manifest.
    pub manifest_bytes: Vec<u8>,
    /// The encoded rank chunks, in manifest order.
    pub rank_chunks: Vec<Vec<u8>>,
    /// The encoded lookup chunks, in partition order.
    pub lookup_chunks: Vec<Vec<u8>>,
}

fn encode_part<T: Serialize>(tag: u8, value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&SNAPSHOT_FORMAT_VERSION.to_le_bytes());
    out.push(tag);
    // Serializing owned strings and integers into a Vec cannot fail.
    if let Ok(body) = postcard::to_allocvec(value) {
        out.extend_from_slice(&body);
    }
    out
}

/// Decodes a postcard body that must fill `bytes` exactly.
pub(crate) fn decode_exact<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    let (value, rest) = postcard::take_from_bytes::<T>(bytes).map_err(|_| DecodeError::Malformed)?;
    if !rest.is_empty() {
        return Err(DecodeError::TrailingBytes);
    }
    Ok(value)
}

fn decode_part<T: DeserializeOwned>(tag: u8, bytes: &[u8]) -> Result<T, DecodeError> {
    let (Some(version), Some(&found_tag)) = (bytes.get(..2), bytes.get(2)) else {
        return Err(DecodeError::UnsupportedFormat { found: None });
    };
    let version = u16::from_le_bytes([version[0], version[1]]);
    if version != SNAPSHOT_FORMAT_VERSION {
        return Err(DecodeError::UnsupportedFormat { found: Some(version) });
    }
    if found_tag != tag {
        return Err(DecodeError::Inconsistent("wrong part tag"));
    }
    decode_exact(&bytes[3..])
}

impl Manifest {
    /// Decodes untrusted manifest bytes and checks their inner consistency. Never panics.
    pub fn decode(bytes: &[u8]) -> Result<Manifest, DecodeError> {
        let manifest: Manifest = decode_part(TAG_MANIFEST, bytes)?;
        let sum: u64 = manifest.rank_chunks.iter().map(|c| u64::from(c.count)).sum();
        if sum != manifest.total_players {
            return Err(DecodeError::Inconsistent("rank chunk counts do not add up"));
        }
        let lookup_sum: u64 = manifest.lookup_chunks.iter().map(|c| u64::from(c.count)).sum();
        if lookup_sum != manifest.total_players {
            return Err(DecodeError::Inconsistent("lookup chunk counts do not add up"));
        }
        if !manifest.lookup_chunks.len().is_power_of_two() {
            return Err(DecodeError::Inconsistent(
                "lookup partitions are not a power of two",
            ));
        }
        if manifest.rank_chunks.iter().any(|c| c.count == 0) {
            return Err(DecodeError::Inconsistent("empty rank chunk"));
        }
        Ok(manifest)
    }

    /// The encoded manifest.
    pub fn encode(&self) -> Vec<u8> {
        encode_part(TAG_MANIFEST, self)
    }

    /// The lookup partition that holds `player`. O(1).
    pub fn partition_of(&self, player: &str) -> usize {
        let partitions = self.lookup_chunks.len().max(1) as u64;
        (fnv1a(player.as_bytes()) & (partitions - 1)) as usize
    }

    /// The rank chunk whose key range holds `(standing, player)`, if any. O(log chunks).
    pub fn rank_chunk_of(&self, standing: &Standing, player: &str) -> Option<usize> {
        let probe = (standing, player);
        let i = self.rank_chunks.partition_point(|c| {
            self.rules.compare((&c.last.standing(), &c.last.player), probe) == Ordering::Less
        });
        let chunk = self.rank_chunks.get(i)?;
        (self
            .rules
            .compare((&chunk.first.standing(), &chunk.first.player), probe)
            != Ordering::Greater)
            .then_some(i)
    }

    /// The 1-based rank of the first entry of rank chunk `i`. O(i).
    pub fn first_rank_of_chunk(&self, i: usize) -> u64 {
        1 + self
            .rank_chunks
            .iter()
            .take(i)
            .map(|c| u64::from(c.count))
            .sum::<u64>()
    }
}

impl RankChunk {
    /// The encoded chunk.
    pub fn encode(&self) -> Vec<u8> {
        encode_part(TAG_RANK_CHUNK, self)
    }

    /// Decodes untrusted chunk bytes, checking them against the hash the manifest names.
    pub fn decode(bytes: &[u8], expected: &ChunkHash) -> Result<RankChunk, DecodeError> {
        if BoardDigest::of(bytes) != *expected {
            return Err(DecodeError::HashMismatch);
        }
        decode_part(TAG_RANK_CHUNK, bytes)
    }
}

impl LookupChunk {
    /// The encoded chunk.
    pub fn encode(&self) -> Vec<u8> {
        encode_part(TAG_LOOKUP_CHUNK, self)
    }

    /// Decodes untrusted chunk bytes, checking them against the hash the manifest names.
    pub fn decode(bytes: &[u8], expected: &ChunkHash) -> Result<LookupChunk, DecodeError> {
        if BoardDigest::of(bytes) != *expected {
            return Err(DecodeError::HashMismatch);
        }
        decode_part(TAG_LOOKUP_CHUNK, bytes)
    }

    /// The entry of `player`, if this chunk holds it. O(log k).
    pub fn find(&self, player: &str) -> Option<&SnapshotEntry> {
        let i = self
            .entries
            .binary_search_by(|e| e.player.as_bytes().cmp(player.as_bytes()))
            .ok()?;
        self.entries.get(i)
    }
}

impl Snapshot {
    /// Takes a snapshot of a board with the default chunking. O(n).
    pub fn build(board: &Board) -> Snapshot {
        Snapshot::build_with(board, ChunkingOptions::default())
    }

    /// Takes a snapshot of a board. O(n): one pass in rank order for the rank chunks and the
    /// digest, one sort per lookup partition.
    pub fn build_with(board: &Board, options: ChunkingOptions) -> Snapshot {
        let rules = *board.rules();
        let total = board.total_players();
        let index = board.index();
        let min = options.min_entries.max(1) as usize;
        let max = (options.max_entries as usize).max(min);
        let modulus = u64::from(options.boundary_modulus.max(1).next_power_of_two());
        let partitions = total
            .div_ceil(u64::from(options.lookup_target.max(1)))
            .max(1)
            .next_power_of_two() as usize;

        let mut digest = DigestWriter::new(rules.score_mode);
        let mut rank_refs = Vec::new();
        let mut rank_chunks = Vec::new();
        let mut lookups: Vec<Vec<SnapshotEntry>> = (0..partitions).map(|_| Vec::new()).collect();
        let mut current: Vec<SnapshotEntry> = Vec::new();
        let page = 4096;
        let mut next_rank = 1;
        while next_rank <= total {
            for entry in index.range(next_rank, page) {
                digest.entry(entry.player, entry.value, entry.achieved_at);
                let hash = fnv1a(entry.player.as_bytes());
                let snap = SnapshotEntry {
                    player: entry.player.into(),
                    value: entry.value,
                    achieved_at: entry.achieved_at,
                };
                lookups[(hash & (partitions as u64 - 1)) as usize].push(snap.clone());
                current.push(snap);
                // The boundary test uses the high bits, which the partition does not use.
                let mark = (hash >> 32).is_multiple_of(modulus);
                if current.len() >= max || (current.len() >= min && mark) {
                    seal_rank_chunk(&mut current, &mut rank_refs, &mut rank_chunks);
                }
            }
            next_rank += page as u64;
        }
        if !current.is_empty() {
            seal_rank_chunk(&mut current, &mut rank_refs, &mut rank_chunks);
        }
        let mut lookup_refs = Vec::with_capacity(partitions);
        let mut lookup_chunks = Vec::with_capacity(partitions);
        for mut entries in lookups {
            entries.sort_unstable_by(|a, b| a.player.as_bytes().cmp(b.player.as_bytes()));
            let count = entries.len() as u32;
            let bytes = LookupChunk { entries }.encode();
            lookup_refs.push(LookupChunkRef {
                count,
                hash: BoardDigest::of(&bytes),
            });
            lookup_chunks.push(bytes);
        }
        let manifest = Manifest {
            rules,
            board_version: board.version(),
            total_players: total,
            digest: digest.finish(),
            rank_chunks: rank_refs,
            lookup_chunks: lookup_refs,
        };
        Snapshot {
            manifest_bytes: manifest.encode(),
            manifest,
            rank_chunks,
            lookup_chunks,
        }
    }

    /// Rebuilds a read-only board from a manifest and its decoded rank chunks, checking that
    /// the entries are valid, in strict total order, match the manifest and hash to its digest.
    /// The board answers every query at the manifest's version; for `latest` boards it does not
    /// know which event is behind each aggregate, so it is for reading, not for applying events.
    pub fn restore(manifest: &Manifest, chunks: &[RankChunk]) -> Result<Board, DecodeError> {
        if chunks.len() != manifest.rank_chunks.len() {
            return Err(DecodeError::Inconsistent(
                "rank chunk count differs from the manifest",
            ));
        }
        let mut digest = DigestWriter::new(manifest.rules.score_mode);
        let mut previous: Option<&SnapshotEntry> = None;
        for (chunk, chunk_ref) in chunks.iter().zip(&manifest.rank_chunks) {
            if chunk.entries.len() != chunk_ref.count as usize
                || chunk.entries.first() != Some(&chunk_ref.first)
                || chunk.entries.last() != Some(&chunk_ref.last)
            {
                return Err(DecodeError::Inconsistent(
                    "rank chunk differs from its manifest entry",
                ));
            }
            for entry in &chunk.entries {
                check_id("player_id", &entry.player)
                    .map_err(|_| DecodeError::Inconsistent("invalid player id"))?;
                if let Some(prev) = previous {
                    let order = manifest.rules.compare(
                        (&prev.standing(), &prev.player),
                        (&entry.standing(), &entry.player),
                    );
                    if order != Ordering::Less {
                        return Err(DecodeError::Inconsistent("entries out of rank order"));
                    }
                }
                digest.entry(&entry.player, entry.value, entry.achieved_at);
                previous = Some(entry);
            }
        }
        if digest.finish() != manifest.digest {
            return Err(DecodeError::Inconsistent("entries do not match the board digest"));
        }
        let entries = chunks
            .iter()
            .flat_map(|c| c.entries.iter())
            .map(|e| (e.player.as_str(), e.standing(), ""));
        let board = Board::from_aggregates(manifest.rules, manifest.board_version, entries)
            .map_err(|_| DecodeError::Inconsistent("snapshot larger than a board can hold"))?;
        if board.total_players() != manifest.total_players {
            return Err(DecodeError::Inconsistent("a player is listed twice"));
        }
        Ok(board)
    }
}

fn seal_rank_chunk(
    current: &mut Vec<SnapshotEntry>,
    refs: &mut Vec<RankChunkRef>,
    chunks: &mut Vec<Vec<u8>>,
) {
    let entries = core::mem::take(current);
    let (Some(first), Some(last)) = (entries.first().cloned(), entries.last().cloned()) else {
        return;
    };
    let count = entries.len() as u32;
    let bytes = RankChunk { entries }.encode();
    refs.push(RankChunkRef {
        count,
        first,
        last,
        hash: BoardDigest::of(&bytes),
    });
    chunks.push(bytes);
}
