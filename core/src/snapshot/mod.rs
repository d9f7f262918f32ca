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
//!
//! The manifest's `digest` is a SHA-256 over the score mode and the rank chunks' hashes in rank
//! order ([`Manifest::chunk_digest`]), not the board digest ([`Board::digest`], a SHA-256 over
//! every entry). Each chunk hash already covers its entries, so the chain still pins every
//! entry, and a publisher that rewrites a few chunks computes it in O(chunks) hashes of 32 bytes
//! rather than O(n) entries: a plain SHA-256 stream cannot be updated in the middle.
//! [`Snapshot::restore`] checks the chain: each chunk against its hash, the hashes against the
//! digest.
//!
//! [`Snapshot::build_with`] cuts a whole board; a [`Publisher`] follows one board and cuts again
//! only where players changed, to the same bytes.

use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::board::Board;
use crate::codec::decode_exact;
use sha2::{Digest as _, Sha256};

use crate::digest::{BoardDigest, ChunkHash, fnv1a};
use crate::error::DecodeError;
use crate::event::check_id;
use crate::index::RankedEntry;
use crate::interval::RankSketch;
use crate::profile::{Audience, EntryInfo};
use crate::rules::{BoardRules, ScoreMode, Standing};

mod patch;
mod publish;
pub mod read;

pub use patch::{Inserted, MAX_PATCH_LEVELS, ManifestPatch, Removed, Root};
pub use publish::{
    DEFAULT_MAX_PATCH_BYTES, FullBuildReason, MIDDLE_PATCH_FACTOR, Publication, PublishPath, Publisher,
    SEGMENTS_WHOLE_MAX_PLAYERS,
};

/// The snapshot format version this build writes and reads. Format 1 named each rank chunk's
/// first entry; format 2 names its first value and its distinct values instead, which is what
/// the dense rank needs. Format 3 adds each entry's public extras (name, country, metadata).
/// Format 4 names a rank sketch ([`RankSketch`]), a part of its own. Format 5 adds the
/// [`ManifestPatch`], a version as its changes over an earlier manifest. Format 6 adds the
/// board's segment dimensions to the manifest, each rank chunk's members of each segment
/// ([`SegmentStats`]) and each entry's event dimension values, so segment reads answer from a
/// snapshot.
pub const SNAPSHOT_FORMAT_VERSION: u16 = 6;

const TAG_MANIFEST: u8 = b'M';
const TAG_RANK_CHUNK: u8 = b'R';
const TAG_LOOKUP_CHUNK: u8 = b'L';
const TAG_SKETCH: u8 = b'S';

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

/// The chunking the origin publishes with, chosen for the edge: rank chunks of 128 to 512
/// entries (about 160 on average, 5 KB), so a window of w entries spans at most
/// `(w - 2) / 128 + 2` chunks (9 for a 1,000-entry page, 3 for a radius-100 window) and a chunk
/// decodes in microseconds; lookup chunks of about 64 to 128 players (8,192 partitions at 1M
/// players). A version that moves a few players rewrites about two rank chunks and one lookup
/// chunk per player, plus the manifest, which grows by about 70 bytes per rank chunk and 35 per
/// lookup chunk: smaller chunks would write fewer chunk bytes but a larger manifest.
impl Default for ChunkingOptions {
    fn default() -> Self {
        ChunkingOptions {
            min_entries: 128,
            boundary_modulus: 32,
            max_entries: 512,
            lookup_target: 128,
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
    /// What the entry shows besides its standing, in public form; `None` when nothing.
    pub extras: Option<SnapshotExtras>,
}

/// An entry's name, country and metadata as a snapshot stores them: the public form (an
/// anonymous player has none).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotExtras {
    /// The display name.
    pub display_name: Option<String>,
    /// The ISO 3166-1 alpha-2 country.
    pub country: Option<String>,
    /// The metadata JSON object, as sent.
    pub metadata: Option<String>,
    /// The event dimension values of the event behind the standing (`platform:ios`), on a
    /// board that declares event dimensions; an anonymous player's too (they hide nothing).
    pub segments: Option<String>,
}

impl SnapshotExtras {
    /// The fields, borrowed. O(1).
    pub fn info(&self) -> EntryInfo<'_> {
        EntryInfo {
            display_name: self.display_name.as_deref(),
            country: self.country.as_deref(),
            metadata: self.metadata.as_deref(),
            segments: self.segments.as_deref(),
            anonymous: false,
        }
    }
}

impl SnapshotEntry {
    /// The entry's fields besides its standing. O(1).
    pub fn info(&self) -> EntryInfo<'_> {
        self.extras.as_ref().map(SnapshotExtras::info).unwrap_or_default()
    }

    /// Checks the extras as the origin let them in, for entries read from untrusted bytes.
    /// O(their bytes).
    pub(crate) fn check_extras(&self) -> Result<(), DecodeError> {
        let Some(extras) = &self.extras else {
            return Ok(());
        };
        if extras.display_name.is_none()
            && extras.country.is_none()
            && extras.metadata.is_none()
            && extras.segments.is_none()
        {
            return Err(DecodeError::Inconsistent("empty extras"));
        }
        if let Some(name) = &extras.display_name {
            if name.is_empty() || name.len() > crate::profile::MAX_DISPLAY_NAME_BYTES {
                return Err(DecodeError::Inconsistent("a display name of a bad length"));
            }
            crate::codec::text(name.as_bytes())?;
        }
        if let Some(country) = &extras.country {
            crate::codec::country(country.as_bytes())?;
        }
        if let Some(metadata) = &extras.metadata {
            if metadata.is_empty() || metadata.len() > crate::profile::MAX_METADATA_BYTES {
                return Err(DecodeError::Inconsistent("metadata of a bad length"));
            }
            crate::codec::text(metadata.as_bytes())?;
        }
        if let Some(segments) = &extras.segments {
            if segments.is_empty() || segments.len() > crate::profile::MAX_EVENT_SEGMENTS_BYTES {
                return Err(DecodeError::Inconsistent(
                    "event dimension values of a bad length",
                ));
            }
            crate::codec::text(segments.as_bytes())?;
        }
        Ok(())
    }

    /// The entry's aggregate. O(1).
    pub(crate) fn standing(&self) -> Standing {
        Standing {
            value: self.value,
            achieved_at: self.achieved_at,
        }
    }
}

/// What the manifest says about one rank chunk. Its key range runs from just after the previous
/// chunk's `last` to its own `last`, so a reader finds the chunk of any position by a binary
/// search over the `last`s, and counts values across chunks with no chunk in hand.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankChunkRef {
    /// Entries in the chunk.
    pub count: u32,
    /// Distinct values among its entries.
    pub distinct_values: u32,
    /// The value of its first entry.
    pub first_value: i64,
    /// Its last entry (the key range ends here).
    pub last: SnapshotEntry,
    /// The SHA-256 of the chunk's encoded bytes.
    pub hash: ChunkHash,
    /// Its members of each segment that has any, by dimension then value: what lets a reader
    /// count a segment's members before any chunk with no chunk in hand.
    pub segments: Vec<SegmentStats>,
}

/// A rank chunk's members of one segment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentStats {
    /// The dimension, by its place in [`ManifestSegments::names`] (0 is `country` when the
    /// board declares it).
    pub dimension: u8,
    /// The value (`DE`, `ios`).
    pub value: String,
    /// The chunk's entries in the segment (at least one).
    pub count: u32,
    /// Distinct values among them.
    pub distinct_values: u32,
    /// The value of the first of them.
    pub first_value: i64,
    /// The value of the last of them.
    pub last_value: i64,
}

/// The segment dimensions a snapshot's board declares.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestSegments {
    /// Segments by the country of each player's profile.
    pub country: bool,
    /// Event dimensions: each one's name and declared values.
    pub events: Vec<(String, Vec<String>)>,
}

impl ManifestSegments {
    /// The declared dimensions of `spec`. O(declared values).
    pub fn of(spec: &crate::segments::SegmentSpec) -> ManifestSegments {
        ManifestSegments {
            country: spec.country,
            events: spec
                .events
                .iter()
                .map(|d| {
                    (
                        d.name.as_ref().into(),
                        d.values.iter().map(|v| v.as_ref().into()).collect(),
                    )
                })
                .collect(),
        }
    }

    /// The declared dimensions as a spec, to check a read's `segment=` against. O(declared
    /// values).
    pub fn spec(&self) -> crate::segments::SegmentSpec {
        crate::segments::SegmentSpec {
            country: self.country,
            events: self
                .events
                .iter()
                .map(|(name, values)| crate::segments::EventDimension {
                    name: name.as_str().into(),
                    values: values.iter().map(|v| v.as_str().into()).collect(),
                })
                .collect(),
        }
    }

    /// Whether no dimension is declared. O(1).
    pub fn is_empty(&self) -> bool {
        !self.country && self.events.is_empty()
    }

    /// The dimensions' names, in the order [`SegmentStats::dimension`] numbers them. O(d).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.country
            .then_some(crate::segments::COUNTRY)
            .into_iter()
            .chain(self.events.iter().map(|(name, _)| name.as_str()))
    }

    /// The number of `dimension`, if declared. O(d).
    pub fn dimension_of(&self, dimension: &str) -> Option<u8> {
        self.names().position(|n| n == dimension).map(|i| i as u8)
    }

    /// The segment value an entry showing `country` and event dimension values `segments`
    /// (its public form) has in dimension number `dimension`: its country, or its event's
    /// value when declared. O(length).
    pub(crate) fn value_in<'e>(
        &self,
        dimension: u8,
        country: Option<&'e str>,
        segments: Option<&'e str>,
    ) -> Option<&'e str> {
        let mut events_from = 0;
        if self.country {
            if dimension == 0 {
                return country;
            }
            events_from = 1;
        }
        let (name, values) = self
            .events
            .get(usize::from(dimension).checked_sub(events_from)?)?;
        let value = crate::profile::segment_value(segments?, name)?;
        values.iter().any(|v| v == value).then_some(value)
    }

    /// Checks what untrusted bytes declare: at most the dimensions and values a board may.
    /// O(declared values).
    fn check(&self) -> Result<(), DecodeError> {
        use crate::segments::{MAX_DIMENSION_TEXT, MAX_DIMENSION_VALUES, MAX_EVENT_DIMENSIONS};
        let sane = |text: &str| !text.is_empty() && text.len() <= MAX_DIMENSION_TEXT;
        let fits = self.events.len() <= MAX_EVENT_DIMENSIONS
            && self.events.iter().all(|(name, values)| {
                sane(name)
                    && !values.is_empty()
                    && values.len() <= MAX_DIMENSION_VALUES
                    && values.iter().all(|v| sane(v))
            });
        if fits {
            Ok(())
        } else {
            Err(DecodeError::Inconsistent(
                "segment dimensions past a board's limits",
            ))
        }
    }
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
    /// The SHA-256 over the score mode and the rank chunks' hashes in order
    /// ([`Manifest::chunk_digest`]); not the board digest.
    pub digest: BoardDigest,
    /// The SHA-256 of the encoded rank sketch of this version, the part a rank interval reads.
    pub sketch: ChunkHash,
    /// The segment dimensions the board declares.
    pub segments: ManifestSegments,
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
    /// The encoded rank sketch.
    pub sketch: Vec<u8>,
}

/// Encodes a part: the header, then the postcard body written straight after it. `capacity`
/// is a guess of the encoded size, to spare regrowing.
fn encode_part<T: Serialize + ?Sized>(tag: u8, value: &T, capacity: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(capacity);
    out.extend_from_slice(&SNAPSHOT_FORMAT_VERSION.to_le_bytes());
    out.push(tag);
    // Serializing strings and integers into a Vec cannot fail; were it to, the empty part
    // would not decode, so nothing wrong could be served.
    postcard::to_extend(value, out).unwrap_or_default()
}

/// An entry borrowed from a board or from encoded bytes, encoded exactly as a
/// [`SnapshotEntry`] (same fields, same order), so chunks are written and patched without
/// copying every id into a `String`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(crate) struct EntryRef<'a> {
    player: &'a str,
    value: i64,
    achieved_at: i64,
    #[serde(borrow)]
    extras: Option<ExtrasRef<'a>>,
}

/// [`SnapshotExtras`], borrowed, encoded the same.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(crate) struct ExtrasRef<'a> {
    #[serde(borrow)]
    display_name: Option<&'a str>,
    #[serde(borrow)]
    country: Option<&'a str>,
    #[serde(borrow)]
    metadata: Option<&'a str>,
    #[serde(borrow)]
    segments: Option<&'a str>,
}

impl<'a> ExtrasRef<'a> {
    /// What a snapshot stores of an entry's fields: the public form, `None` when empty. O(1).
    pub(crate) fn of(info: EntryInfo<'a>) -> Option<ExtrasRef<'a>> {
        let public = info.for_audience(Audience::Public);
        (!public.is_empty()).then_some(ExtrasRef {
            display_name: public.display_name,
            country: public.country,
            metadata: public.metadata,
            segments: public.segments,
        })
    }
}

impl<'a> EntryRef<'a> {
    /// The entry of a player at a standing, showing `info` in public form. O(1).
    pub(crate) fn new(player: &'a str, standing: Standing, info: EntryInfo<'a>) -> EntryRef<'a> {
        EntryRef {
            player,
            value: standing.value,
            achieved_at: standing.achieved_at,
            extras: ExtrasRef::of(info),
        }
    }

    /// The entry's aggregate. O(1).
    pub(crate) fn standing(&self) -> Standing {
        Standing {
            value: self.value,
            achieved_at: self.achieved_at,
        }
    }

    /// The entry of a ranked entry. O(1).
    pub(crate) fn of(entry: &RankedEntry<'a>) -> EntryRef<'a> {
        EntryRef {
            player: entry.player,
            value: entry.value,
            achieved_at: entry.achieved_at,
            extras: ExtrasRef::of(entry.info),
        }
    }

    fn to_owned(self) -> SnapshotEntry {
        SnapshotEntry {
            player: self.player.into(),
            value: self.value,
            achieved_at: self.achieved_at,
            extras: self.extras.map(|e| SnapshotExtras {
                display_name: e.display_name.map(Into::into),
                country: e.country.map(Into::into),
                metadata: e.metadata.map(Into::into),
                segments: e.segments.map(Into::into),
            }),
        }
    }
}

/// Borrowed entries, encoded exactly as a [`RankChunk`] or a [`LookupChunk`] (one field, a
/// sequence of entries).
#[derive(Serialize)]
struct EntriesRef<'e, 'a> {
    entries: &'e [EntryRef<'a>],
}

/// The same, decoded with the ids borrowed from the bytes.
#[derive(Deserialize)]
struct EntriesBorrowed<'a> {
    #[serde(borrow)]
    entries: Vec<EntryRef<'a>>,
}

/// Decodes a rank or lookup chunk's entries, borrowing the ids from `bytes`. For bytes this
/// crate wrote: the hash is not checked. O(bytes).
pub(crate) fn decode_entries(tag: u8, bytes: &[u8]) -> Result<Vec<EntryRef<'_>>, DecodeError> {
    let body = part_body(tag, bytes)?;
    let (decoded, rest) =
        postcard::take_from_bytes::<EntriesBorrowed<'_>>(body).map_err(|_| DecodeError::Malformed)?;
    if !rest.is_empty() {
        return Err(DecodeError::TrailingBytes);
    }
    Ok(decoded.entries)
}

/// An encoded manifest and where each chunk ref's bytes lie in it (fence posts: ref `i` is
/// `spans[i]..spans[i + 1]`), so the next manifest can copy the refs it keeps.
#[derive(Clone, Debug)]
pub(crate) struct EncodedManifest {
    pub(crate) bytes: Vec<u8>,
    rank_spans: Vec<u32>,
    lookup_spans: Vec<u32>,
}

/// The manifest's fields before its chunk lists, encoded exactly as the manifest encodes them.
#[derive(Serialize)]
struct ManifestHead<'m> {
    rules: &'m BoardRules,
    board_version: u64,
    total_players: u64,
    digest: &'m BoardDigest,
    sketch: &'m ChunkHash,
    segments: &'m ManifestSegments,
}

impl EncodedManifest {
    /// Encodes `manifest` exactly as [`Manifest::encode`] does (postcard: the fields in order, a
    /// sequence as its length then its items), taking each rank ref's bytes from `rank_bytes(i)`
    /// and each lookup ref's from `lookup_bytes(p)` when they answer, encoding it otherwise.
    /// O(manifest bytes).
    pub(crate) fn write<'b>(
        manifest: &Manifest,
        rank_bytes: impl Fn(usize) -> Option<&'b [u8]>,
        lookup_bytes: impl Fn(usize) -> Option<&'b [u8]>,
    ) -> EncodedManifest {
        let head = ManifestHead {
            rules: &manifest.rules,
            board_version: manifest.board_version,
            total_players: manifest.total_players,
            digest: &manifest.digest,
            sketch: &manifest.sketch,
            segments: &manifest.segments,
        };
        let guess =
            64 + manifest.rank_chunks.len() * (48 + entry_size_guess("")) + manifest.lookup_chunks.len() * 36;
        let mut bytes = encode_part(TAG_MANIFEST, &head, guess);
        push_varint(&mut bytes, manifest.rank_chunks.len() as u64);
        let mut rank_spans = Vec::with_capacity(manifest.rank_chunks.len() + 1);
        rank_spans.push(bytes.len() as u32);
        for (i, chunk_ref) in manifest.rank_chunks.iter().enumerate() {
            bytes = append(bytes, rank_bytes(i), chunk_ref);
            rank_spans.push(bytes.len() as u32);
        }
        push_varint(&mut bytes, manifest.lookup_chunks.len() as u64);
        let mut lookup_spans = Vec::with_capacity(manifest.lookup_chunks.len() + 1);
        lookup_spans.push(bytes.len() as u32);
        for (p, chunk_ref) in manifest.lookup_chunks.iter().enumerate() {
            bytes = append(bytes, lookup_bytes(p), chunk_ref);
            lookup_spans.push(bytes.len() as u32);
        }
        EncodedManifest {
            bytes,
            rank_spans,
            lookup_spans,
        }
    }

    /// The encoded bytes of rank ref `i`. O(1).
    pub(crate) fn rank_ref(&self, i: usize) -> Option<&[u8]> {
        span(&self.bytes, &self.rank_spans, i)
    }

    /// The encoded bytes of lookup ref `p`. O(1).
    pub(crate) fn lookup_ref(&self, p: usize) -> Option<&[u8]> {
        span(&self.bytes, &self.lookup_spans, p)
    }
}

fn span<'b>(bytes: &'b [u8], spans: &[u32], i: usize) -> Option<&'b [u8]> {
    let (&start, &end) = (spans.get(i)?, spans.get(i + 1)?);
    bytes.get(start as usize..end as usize)
}

/// Appends `copied` if given, else the postcard encoding of `value`.
fn append<T: Serialize>(mut bytes: Vec<u8>, copied: Option<&[u8]>, value: &T) -> Vec<u8> {
    match copied {
        Some(copied) => {
            bytes.extend_from_slice(copied);
            bytes
        }
        // Serializing strings and integers into a Vec cannot fail.
        None => postcard::to_extend(value, bytes).unwrap_or_default(),
    }
}

/// Appends an unsigned LEB128 varint, as postcard writes a sequence's length.
fn push_varint(bytes: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        bytes.push((n as u8) | 0x80);
        n >>= 7;
    }
    bytes.push(n as u8);
}

/// A guess of an encoded entry's size: the id, its length byte and two varints.
fn entry_size_guess(player: &str) -> usize {
    player.len() + 12
}

fn decode_part<T: DeserializeOwned>(tag: u8, bytes: &[u8]) -> Result<T, DecodeError> {
    decode_exact(part_body(tag, bytes)?)
}

/// The postcard body of a part, after checking its format version and tag. O(1).
fn part_body(tag: u8, bytes: &[u8]) -> Result<&[u8], DecodeError> {
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
    Ok(&bytes[3..])
}

impl Manifest {
    /// Decodes untrusted manifest bytes and checks their inner consistency. Never panics.
    /// O(bytes).
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
        if manifest
            .rank_chunks
            .iter()
            .any(|c| c.count == 0 || c.distinct_values == 0 || c.distinct_values > c.count)
        {
            return Err(DecodeError::Inconsistent(
                "a rank chunk with no entries or more distinct values than entries",
            ));
        }
        manifest.segments.check()?;
        let dimensions = manifest.segments.names().count();
        let stats_fit = |c: &RankChunkRef| {
            let ordered = c
                .segments
                .windows(2)
                .all(|w| (w[0].dimension, &w[0].value) < (w[1].dimension, &w[1].value));
            // Country, then the event dimensions.
            let mut per_dimension = [0u64; 1 + crate::segments::MAX_EVENT_DIMENSIONS];
            let each = c.segments.iter().all(|s| {
                let d = usize::from(s.dimension);
                if d >= dimensions || s.count == 0 || s.distinct_values == 0 || s.distinct_values > s.count {
                    return false;
                }
                per_dimension[d] += u64::from(s.count);
                true
            });
            ordered && each && per_dimension.iter().all(|&n| n <= u64::from(c.count))
        };
        if !manifest.rank_chunks.iter().all(stats_fit) {
            return Err(DecodeError::Inconsistent(
                "a rank chunk's segment members do not fit it",
            ));
        }
        Ok(manifest)
    }

    /// The encoded manifest. O(chunks).
    pub fn encode(&self) -> Vec<u8> {
        let guess = 64 + self.rank_chunks.len() * (48 + entry_size_guess("")) + self.lookup_chunks.len() * 36;
        encode_part(TAG_MANIFEST, self, guess)
    }

    /// The digest the rank chunks' hashes give: a SHA-256 over a domain tag, the score mode and
    /// each rank chunk's hash in rank order. Equal to `digest` in a manifest this crate wrote.
    /// O(chunks).
    pub fn chunk_digest(&self) -> BoardDigest {
        chunk_digest(self.rules.score_mode, self.rank_chunks.iter().map(|c| &c.hash))
    }

    /// The hash of every part the manifest names: rank chunks, lookup chunks, the sketch.
    /// O(chunks).
    pub fn part_hashes(&self) -> impl Iterator<Item = ChunkHash> + '_ {
        self.rank_chunks
            .iter()
            .map(|c| c.hash)
            .chain(self.lookup_chunks.iter().map(|c| c.hash))
            .chain(core::iter::once(self.sketch))
    }

    /// The lookup partition that holds `player`. O(1).
    pub fn partition_of(&self, player: &str) -> usize {
        let partitions = self.lookup_chunks.len().max(1) as u64;
        (fnv1a(player.as_bytes()) & (partitions - 1)) as usize
    }

    /// The rank chunk whose key range holds the position `(standing, player)`: the first chunk
    /// whose last entry does not sort before it, or `None` past the last entry. The player need
    /// not be in it; the chunk says. O(log chunks).
    pub fn rank_chunk_of(&self, standing: &Standing, player: &str) -> Option<usize> {
        let probe = (standing, player);
        let i = self.rank_chunks.partition_point(|c| {
            self.rules.compare((&c.last.standing(), &c.last.player), probe) == Ordering::Less
        });
        (i < self.rank_chunks.len()).then_some(i)
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

impl RankSketch {
    /// The encoded sketch. O(bounds).
    pub fn encode(&self) -> Vec<u8> {
        encode_part(TAG_SKETCH, &self.to_wire(), 8 + self.len() * 20)
    }

    /// Decodes untrusted sketch bytes, checking them against the hash the manifest names.
    /// O(bytes).
    pub fn decode(bytes: &[u8], expected: &ChunkHash) -> Result<RankSketch, DecodeError> {
        if BoardDigest::of(bytes) != *expected {
            return Err(DecodeError::HashMismatch);
        }
        RankSketch::from_wire(decode_part(TAG_SKETCH, bytes)?).ok_or(DecodeError::Inconsistent(
            "a sketch's bounds do not fit its total",
        ))
    }
}

impl RankChunk {
    /// The encoded chunk. O(entries).
    pub fn encode(&self) -> Vec<u8> {
        let guess: usize = self.entries.iter().map(|e| entry_size_guess(&e.player)).sum();
        encode_part(TAG_RANK_CHUNK, self, 8 + guess)
    }

    /// Decodes untrusted chunk bytes, checking them against the hash the manifest names.
    /// O(bytes).
    pub fn decode(bytes: &[u8], expected: &ChunkHash) -> Result<RankChunk, DecodeError> {
        if BoardDigest::of(bytes) != *expected {
            return Err(DecodeError::HashMismatch);
        }
        decode_part(TAG_RANK_CHUNK, bytes)
    }
}

impl LookupChunk {
    /// The encoded chunk. O(entries).
    pub fn encode(&self) -> Vec<u8> {
        let guess: usize = self.entries.iter().map(|e| entry_size_guess(&e.player)).sum();
        encode_part(TAG_LOOKUP_CHUNK, self, 8 + guess)
    }

    /// Decodes untrusted chunk bytes, checking them against the hash the manifest names.
    /// O(bytes).
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

impl ChunkingOptions {
    /// The lookup partition count for `total` ranked players: the next power of two of
    /// `total / lookup_target`, at least 1. O(1).
    pub fn partitions(&self, total: u64) -> usize {
        total
            .div_ceil(u64::from(self.lookup_target.max(1)))
            .max(1)
            .next_power_of_two() as usize
    }
}

/// Cuts entries, fed in rank order, into rank chunks by the content-defined rule. The rule
/// looks only at the entries since the last cut, so two cutters fed the same entries after a
/// cut cut them the same way: what lets a publisher cut again from any old boundary.
pub(crate) struct RankCutter<'a> {
    min: usize,
    max: usize,
    modulus: u64,
    current: Vec<EntryRef<'a>>,
    /// The dimensions whose members each chunk counts.
    segments: ManifestSegments,
}

impl<'a> RankCutter<'a> {
    /// A cutter at a boundary (nothing pending), counting the members of the segments of
    /// `segments` in each chunk.
    pub(crate) fn new(options: &ChunkingOptions, segments: ManifestSegments) -> RankCutter<'a> {
        let min = options.min_entries.max(1) as usize;
        RankCutter {
            min,
            max: (options.max_entries as usize).max(min),
            modulus: u64::from(options.boundary_modulus.max(1).next_power_of_two()),
            current: Vec::new(),
            segments,
        }
    }

    /// Adds the next entry (its player's FNV-1a hash given); answers the chunk it completes, if
    /// it is a cut. O(1), or O(entries of the chunk) when it seals one.
    pub(crate) fn push(&mut self, entry: EntryRef<'a>, player_hash: u64) -> Option<(RankChunkRef, Vec<u8>)> {
        self.current.push(entry);
        let mark = boundary_bits(player_hash).is_multiple_of(self.modulus);
        if self.current.len() >= self.max || (self.current.len() >= self.min && mark) {
            return self.finish();
        }
        None
    }

    /// Seals what is pending (at a cut, or at the end of the board), if anything.
    /// O(entries pending).
    pub(crate) fn finish(&mut self) -> Option<(RankChunkRef, Vec<u8>)> {
        let sealed = seal(&self.current, &self.segments);
        // The buffer is kept for the next chunk.
        self.current.clear();
        sealed
    }
}

/// The bits a rank chunk boundary is marked by, from a player's FNV-1a hash: the hash through
/// murmur3's 64-bit finalizer, high half. FNV-1a's high bits barely depend on an id's last bytes,
/// so sequential ids (`p-00001`, `p-00002`, ...) would share marks, leave chunks to be cut at
/// `max_entries` by position, and make one move rewrite every chunk it crosses. Only the writer
/// uses this: a reader takes the boundaries from the manifest. O(1).
fn boundary_bits(player_hash: u64) -> u64 {
    let mut k = player_hash;
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k >> 32
}

/// The manifest digest over rank chunk hashes in order; see [`Manifest::chunk_digest`].
pub(crate) fn chunk_digest<'h>(
    mode: ScoreMode,
    hashes: impl IntoIterator<Item = &'h ChunkHash>,
) -> BoardDigest {
    let mut hasher = Sha256::new();
    hasher.update(b"standings-snapshot-chunks-v2\0");
    hasher.update(mode.as_str().as_bytes());
    hasher.update([0]);
    for hash in hashes {
        hasher.update(hash.0);
    }
    BoardDigest(hasher.finalize().into())
}

/// Encodes one lookup partition (entries sorted by player id bytes) with its manifest entry.
/// O(entries).
pub(crate) fn seal_lookup(entries: &[EntryRef<'_>]) -> (LookupChunkRef, Vec<u8>) {
    let guess: usize = entries.iter().map(|e| entry_size_guess(e.player)).sum();
    let bytes = encode_part(TAG_LOOKUP_CHUNK, &EntriesRef { entries }, 8 + guess);
    let chunk_ref = LookupChunkRef {
        count: entries.len() as u32,
        hash: BoardDigest::of(&bytes),
    };
    (chunk_ref, bytes)
}

impl Snapshot {
    /// Takes a snapshot of a board with the default chunking. O(n).
    pub fn build(board: &Board) -> Snapshot {
        Snapshot::build_with(board, ChunkingOptions::default())
    }

    /// Takes a snapshot of a board. O(n): one pass in rank order for the rank chunks, one sort
    /// per lookup partition, one hash per chunk.
    pub fn build_with(board: &Board, options: ChunkingOptions) -> Snapshot {
        let rules = *board.rules();
        let total = board.total_players();
        let partitions = options.partitions(total);

        let segments = ManifestSegments::of(&board.segment_spec());
        let mut cutter = RankCutter::new(&options, segments.clone());
        let mut rank_refs = Vec::new();
        let mut rank_chunks = Vec::new();
        // Borrowed from the board: no id is copied but into the encodings.
        let mut lookups: Vec<Vec<EntryRef<'_>>> = (0..partitions).map(|_| Vec::new()).collect();
        let page = 4096;
        let mut next_rank = 1;
        while next_rank <= total {
            for entry in board.ranked_range(next_rank, page) {
                let hash = fnv1a(entry.player.as_bytes());
                let entry = EntryRef::of(&entry);
                lookups[(hash & (partitions as u64 - 1)) as usize].push(entry);
                if let Some((chunk_ref, bytes)) = cutter.push(entry, hash) {
                    rank_refs.push(chunk_ref);
                    rank_chunks.push(bytes);
                }
            }
            next_rank += page as u64;
        }
        if let Some((chunk_ref, bytes)) = cutter.finish() {
            rank_refs.push(chunk_ref);
            rank_chunks.push(bytes);
        }
        let mut lookup_refs = Vec::with_capacity(partitions);
        let mut lookup_chunks = Vec::with_capacity(partitions);
        for mut entries in lookups {
            entries.sort_unstable_by(|a, b| a.player.as_bytes().cmp(b.player.as_bytes()));
            let (chunk_ref, bytes) = seal_lookup(&entries);
            lookup_refs.push(chunk_ref);
            lookup_chunks.push(bytes);
        }
        let sketch = board.rank_sketch().encode();
        let manifest = Manifest {
            rules,
            board_version: board.version(),
            total_players: total,
            digest: chunk_digest(rules.score_mode, rank_refs.iter().map(|c| &c.hash)),
            sketch: BoardDigest::of(&sketch),
            segments,
            rank_chunks: rank_refs,
            lookup_chunks: lookup_refs,
        };
        Snapshot {
            manifest_bytes: manifest.encode(),
            manifest,
            rank_chunks,
            lookup_chunks,
            sketch,
        }
    }

    /// Rebuilds a read-only board from a manifest and its decoded rank chunks, checking that
    /// the entries are valid, in strict total order, match the manifest's entry of their chunk,
    /// encode to the hash it names, and that those hashes give the manifest's digest. O(n).
    /// The board answers every query at the manifest's version; for `latest` boards it does not
    /// know which event is behind each aggregate, so it is for reading, not for applying events.
    pub fn restore(manifest: &Manifest, chunks: &[RankChunk]) -> Result<Board, DecodeError> {
        if chunks.len() != manifest.rank_chunks.len() {
            return Err(DecodeError::Inconsistent(
                "rank chunk count differs from the manifest",
            ));
        }
        if manifest.chunk_digest() != manifest.digest {
            return Err(DecodeError::Inconsistent(
                "rank chunk hashes do not match the manifest digest",
            ));
        }
        let mut previous: Option<&SnapshotEntry> = None;
        for (chunk, chunk_ref) in chunks.iter().zip(&manifest.rank_chunks) {
            if chunk.entries.len() != chunk_ref.count as usize
                || chunk.entries.first().map(|e| e.value) != Some(chunk_ref.first_value)
                || chunk.entries.last() != Some(&chunk_ref.last)
                || distinct_values(&chunk.entries) != chunk_ref.distinct_values
            {
                return Err(DecodeError::Inconsistent(
                    "rank chunk differs from its manifest entry",
                ));
            }
            // The chunks come decoded, so the hash is checked on their encoding, which is
            // canonical: a chunk decoded from the bytes the manifest names encodes to them.
            if BoardDigest::of(&chunk.encode()) != chunk_ref.hash {
                return Err(DecodeError::HashMismatch);
            }
            for entry in &chunk.entries {
                check_id("player_id", &entry.player)
                    .map_err(|_| DecodeError::Inconsistent("invalid player id"))?;
                entry.check_extras()?;
                if let Some(prev) = previous {
                    let order = manifest.rules.compare(
                        (&prev.standing(), &prev.player),
                        (&entry.standing(), &entry.player),
                    );
                    if order != Ordering::Less {
                        return Err(DecodeError::Inconsistent("entries out of rank order"));
                    }
                }
                previous = Some(entry);
            }
        }
        let entries = chunks
            .iter()
            .flat_map(|c| c.entries.iter())
            .map(|e| (e.player.as_str(), e.standing(), ""));
        let mut board = Board::from_aggregates(manifest.rules, manifest.board_version, entries)
            .map_err(|_| DecodeError::Inconsistent("snapshot larger than a board can hold"))?;
        for entry in chunks.iter().flat_map(|c| c.entries.iter()) {
            if let Some(extras) = &entry.extras {
                board.hold_extras(&entry.player, extras.info());
            }
        }
        if board.total_players() != manifest.total_players {
            return Err(DecodeError::Inconsistent("a player is listed twice"));
        }
        Ok(board)
    }
}

impl Snapshot {
    /// Rebuilds a read-only board at the version of the highest of `patches` (the lowest first,
    /// each over the view below it) from their base manifest and its rank chunks: the base is
    /// checked as [`Snapshot::restore`] checks it, and each patch against the view below it,
    /// down to each removed value and each inserted entry's place. O(n + p log p).
    pub fn restore_patched(
        base: &Manifest,
        chunks: &[RankChunk],
        patches: &[&ManifestPatch],
    ) -> Result<Board, DecodeError> {
        Snapshot::restore(base, chunks)?;
        let rules = base.rules;
        let mut entries: Vec<&SnapshotEntry> = chunks.iter().flat_map(|c| c.entries.iter()).collect();
        let (mut version, mut total) = (base.board_version, base.total_players);
        for &patch in patches {
            patch.check_over(&rules, version, total)?;
            entries = patched(&rules, entries, patch)?;
            (version, total) = (patch.board_version, patch.total_players);
        }
        let board_entries = entries.iter().map(|e| (e.player.as_str(), e.standing(), ""));
        let mut board = Board::from_aggregates(rules, version, board_entries)
            .map_err(|_| DecodeError::Inconsistent("snapshot larger than a board can hold"))?;
        for entry in &entries {
            if let Some(extras) = &entry.extras {
                board.hold_extras(&entry.player, extras.info());
            }
        }
        if board.total_players() != total {
            return Err(DecodeError::Inconsistent("a player is listed twice"));
        }
        Ok(board)
    }
}

/// The entries of a view in rank order with `patch` applied, checked: each removed value is
/// its entry's, each inserted entry lands where its position says, every removed player is
/// unranked or inserted again and nobody else is, and the result is in strict rank order.
/// O(n + p log p).
fn patched<'e>(
    rules: &BoardRules,
    below: Vec<&'e SnapshotEntry>,
    patch: &'e ManifestPatch,
) -> Result<Vec<&'e SnapshotEntry>, DecodeError> {
    let mut removed = patch.removed.iter().peekable();
    let mut removed_players: Vec<&str> = Vec::with_capacity(patch.removed.len());
    let mut inserted = patch.inserted.iter().peekable();
    let mut merged: Vec<&SnapshotEntry> = Vec::with_capacity(patch.total_players as usize);
    let mut passed = 0u64;
    let out_of_place = DecodeError::Inconsistent("an inserted entry out of its base place");
    for entry in below {
        while let Some(next) = inserted.next_if(|i| {
            // A renamed entry keeps its key: it goes before the entry it replaces.
            rules.compare(
                (&i.entry.standing(), &i.entry.player),
                (&entry.standing(), &entry.player),
            ) != Ordering::Greater
        }) {
            if next.base_before != passed {
                return Err(out_of_place);
            }
            merged.push(&next.entry);
        }
        passed += 1;
        if let Some(gone) = removed.next_if(|r| r.rank == passed) {
            if gone.value != entry.value {
                return Err(DecodeError::Inconsistent(
                    "a removed value differs from its base entry",
                ));
            }
            removed_players.push(&entry.player);
            continue;
        }
        merged.push(entry);
    }
    for next in inserted {
        if next.base_before != passed {
            return Err(out_of_place);
        }
        merged.push(&next.entry);
    }
    removed_players.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    let mut moved: Vec<&str> = patch.inserted.iter().map(|i| i.entry.player.as_str()).collect();
    moved.extend(patch.unranked.iter().map(String::as_str));
    moved.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    let holds = |list: &[&str], p: &str| list.binary_search_by(|m| m.as_bytes().cmp(p.as_bytes())).is_ok();
    if removed_players.iter().any(|p| !holds(&moved, p))
        || patch.unranked.iter().any(|u| !holds(&removed_players, u))
    {
        return Err(DecodeError::Inconsistent(
            "the patch's players disagree with its base",
        ));
    }
    if merged.windows(2).any(|w| {
        rules.compare((&w[0].standing(), &w[0].player), (&w[1].standing(), &w[1].player)) != Ordering::Less
    }) {
        return Err(DecodeError::Inconsistent("patched entries out of rank order"));
    }
    Ok(merged)
}

/// Encodes a run of entries in rank order as a rank chunk, with the manifest's entry for it;
/// `None` for an empty run. O(entries).
fn seal(entries: &[EntryRef<'_>], segments: &ManifestSegments) -> Option<(RankChunkRef, Vec<u8>)> {
    let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
        return None;
    };
    let guess: usize = entries.iter().map(|e| entry_size_guess(e.player)).sum();
    let bytes = encode_part(TAG_RANK_CHUNK, &EntriesRef { entries }, 8 + guess);
    let chunk_ref = RankChunkRef {
        count: entries.len() as u32,
        distinct_values: distinct_runs(entries.iter().map(|e| e.value)),
        first_value: first.value,
        last: last.to_owned(),
        hash: BoardDigest::of(&bytes),
        segments: segment_stats(entries, segments),
    };
    Some((chunk_ref, bytes))
}

/// The members of each segment among entries in rank order, by dimension then value. Free
/// when no dimension is declared; O(entries (d + log s)) for d dimensions and s segments.
fn segment_stats(entries: &[EntryRef<'_>], segments: &ManifestSegments) -> Vec<SegmentStats> {
    if segments.is_empty() {
        return Vec::new();
    }
    let dimensions = segments.names().count() as u8;
    let mut found: alloc::collections::BTreeMap<(u8, &str), SegmentStats> =
        alloc::collections::BTreeMap::new();
    for entry in entries {
        for dimension in 0..dimensions {
            let extras = entry.extras.as_ref();
            let Some(value) = segments.value_in(
                dimension,
                extras.and_then(|e| e.country),
                extras.and_then(|e| e.segments),
            ) else {
                continue;
            };
            found
                .entry((dimension, value))
                .and_modify(|s| {
                    s.count += 1;
                    s.distinct_values += u32::from(s.last_value != entry.value);
                    s.last_value = entry.value;
                })
                .or_insert_with(|| SegmentStats {
                    dimension,
                    value: value.into(),
                    count: 1,
                    distinct_values: 1,
                    first_value: entry.value,
                    last_value: entry.value,
                });
        }
    }
    found.into_values().collect()
}

/// Distinct values among entries in rank order (equal values are adjacent). O(entries).
pub(crate) fn distinct_values(entries: &[SnapshotEntry]) -> u32 {
    distinct_runs(entries.iter().map(|e| e.value))
}

/// Runs of equal values in a sequence. O(values).
fn distinct_runs(values: impl Iterator<Item = i64>) -> u32 {
    let mut count = 0;
    let mut previous = None;
    for value in values {
        if previous != Some(value) {
            count += 1;
            previous = Some(value);
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Boundary marks fire at about the expected rate for sequential, decimal and random-looking
    /// ids alike, so chunks are cut by content, not by position, whatever the ids look like.
    #[test]
    fn boundary_marks_are_spread_for_any_id_shape() {
        // A modulus of 256 shows the plain FNV-1a high bits failing (0 marks for the decimal
        // ids, 90 or 1,000 for the others); the default 32 hides it.
        let modulus = 256u64;
        let shapes: [fn(u64) -> String; 4] = [
            |i| alloc::format!("p-{i:05}"),
            |i| alloc::format!("player-{i}"),
            |i| alloc::format!("{}", 1_000_000_000 + i),
            |i| alloc::format!("user-{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        ];
        for shape in shapes {
            let marks = (0..100_000u64)
                .filter(|&i| boundary_bits(fnv1a(shape(i).as_bytes())).is_multiple_of(modulus))
                .count();
            // Expected 390; a spread this wide still cuts by content.
            assert!(
                (300..480).contains(&marks),
                "{} marks for ids like {}",
                marks,
                shape(7)
            );
        }
    }
}
