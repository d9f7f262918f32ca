//! Publishing a board's versions as snapshots, one after another, cutting again only the chunks
//! that changed.
//!
//! A [`Publisher`] follows one board instance. Each [`Publisher::publish`] takes the board's
//! current version and answers a [`Publication`]: the manifest and only the parts the previous
//! manifest did not name; every other part the manifest names was handed out by an earlier
//! publication of the same publisher.
//!
//! ## Incremental publication
//! The players that changed since the last publication come from [`Board::deltas_since`]: for
//! each, its standing then (the first delta's `before`) and now (the last delta's `after`).
//! - **Lookup chunks**: only the partitions of changed players are decoded (from the encoded
//!   chunks the publisher keeps), patched (insert, replace, remove; kept sorted by id bytes)
//!   and encoded again. Each old standing is checked against the partition on the way, which is
//!   how a different board behind the same publisher is caught.
//! - **Rank chunks**: a chunk is dirty when its key range held an old key of a changed player or
//!   receives a new one (a key past the last chunk falls to the last chunk). Clean chunks are
//!   kept as they are. From the start of each dirty chunk, the current board is read in rank
//!   order (the chunk before it is clean or was just cut again to end on that same boundary, so
//!   the full build cuts there too, and the rank after it is known by counting) and cut by the
//!   same rule as
//!   [`Snapshot::build_with`], until a cut lands on an old boundary (the same last entry) that is
//!   not the board's last: the rule looks only at entries since the last cut, so from such a
//!   boundary the old chunks are what a full build would cut again, and reading stops. A re-cut
//!   that runs into the next dirty chunk simply goes on. The result is byte for byte the full
//!   build's (the property test in `core/tests/publish.rs` holds it to that).
//! - **The manifest** is encoded in full each time (O(chunks)), with its digest over the rank
//!   chunk hashes (see the module doc of [`crate::snapshot`]).
//!
//! A version that moved c players costs O(c log c) to gather the changes, O(c (log n + k)) for
//! the re-cut chunks of k entries and the patched partitions, and O(chunks) for the manifest.
//! It falls back to a full build (O(n)) on the first publication, when the deltas since the
//! last one are no longer held, when the version went back or the rules differ (another board),
//! when the partition count changes (the board doubled or halved), and when a changed player's
//! old standing is not the one published (another board at a later version).

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;

use super::patch::{Inserted, ManifestPatch, Removed};
use super::{
    ChunkingOptions, EncodedManifest, EntryRef, LookupChunkRef, Manifest, ManifestSegments, RankChunkRef,
    RankCutter, Snapshot, TAG_LOOKUP_CHUNK, chunk_digest, decode_entries, seal_lookup,
};
use crate::board::{Board, Delta};
use crate::digest::{BoardDigest, ChunkHash, fnv1a};
use crate::profile::{Audience, EntryInfo, Extras};
use crate::rules::{BoardRules, Standing};

/// Sets of part hashes; a fixed-seed hasher, as the core draws no randomness.
type HashSet<T> = hashbrown::HashSet<T, foldhash::fast::FixedState>;

/// One published version: what its head names (a manifest, or a patch over one) and the parts
/// that are new with it.
#[derive(Clone, Debug)]
pub struct Publication {
    /// The decoded manifest: the version's own, or, with `patches`, their base.
    pub manifest: Manifest,
    /// The version as changes over `manifest`, when published so: the patches it stands on,
    /// the lowest first, each over the view below it; the last is the root.
    pub patches: Vec<ManifestPatch>,
    /// The encoded root the head names: the manifest, or the highest patch.
    pub manifest_bytes: Vec<u8>,
    /// The hash of `manifest_bytes`, which names the root.
    pub manifest_hash: ChunkHash,
    /// The parts (rank and lookup chunks, the sketch) the previous manifest did not name, by
    /// hash, each once. A part
    /// an older manifest named that comes back (a player returning to where they were) is
    /// handed out again: a store may have let it go once no manifest named it.
    pub new_parts: Vec<(ChunkHash, Vec<u8>)>,
    /// The manifest's chunk entries (rank and lookup, counted by place) whose part the
    /// previous manifest already named.
    pub reused_parts: usize,
}

impl Publication {
    /// The version published. O(1).
    pub fn board_version(&self) -> u64 {
        self.patches
            .last()
            .map_or(self.manifest.board_version, |p| p.board_version)
    }

    /// The highest patch, the root, when the version was published as a patch. O(1).
    pub fn patch(&self) -> Option<&ManifestPatch> {
        self.patches.last()
    }

    /// Every part the root names besides itself: the manifest's parts, each patch's base, and
    /// the version's sketch. O(chunks).
    pub fn part_hashes(&self) -> impl Iterator<Item = ChunkHash> + '_ {
        self.manifest
            .part_hashes()
            .chain(self.patches.iter().map(|p| p.base))
            .chain(self.patches.last().map(|p| p.sketch))
    }
}

/// How the last publication was built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PublishPath {
    /// A patch over the last manifest: no chunk was cut.
    Patch,
    /// Only the chunks holding changed players were cut again.
    Incremental,
    /// The whole board was cut again, for this reason.
    Full(FullBuildReason),
}

/// Why a publication was a full build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FullBuildReason {
    /// Nothing was published before.
    FirstPublication,
    /// The board no longer holds the deltas since the last publication.
    HistoryGone,
    /// The board's version is older than the last publication's: another board.
    VersionWentBack,
    /// The board's rules differ from the last publication's: another board.
    OtherRules,
    /// The board declares other segment dimensions than at the last publication, which every
    /// rank chunk's segment members count by.
    OtherSegments,
    /// The lookup partition count changed (the board doubled or halved).
    PartitionsChanged,
    /// The last publication ranked nobody, so it has no boundary to cut from.
    NothingRankedBefore,
    /// A changed player's old standing, or the total, disagrees with the last publication:
    /// another board at a later version.
    Inconsistent,
}

/// The most ranked players of a board that declares segments for which every version is
/// published whole, so that the edge answers its segment reads; a larger one is patched like
/// any board and its segment reads go to the origin (a whole manifest is about 1.7 MB a
/// million players with segments, BENCHMARKS.md).
pub const SEGMENTS_WHOLE_MAX_PLAYERS: u64 = 2_000_000;

/// What the publisher keeps of its last publication.
#[derive(Clone, Debug)]
struct Published {
    manifest: Manifest,
    /// The encoded manifest, with where each ref lies in it.
    encoded: EncodedManifest,
    /// The encoded lookup chunks, in partition order.
    lookup_chunks: Vec<Vec<u8>>,
}

/// A publication computed from the last one, not yet committed to the publisher.
struct Patch {
    /// The new manifest, its rank chunk list still empty: see `rank_slots`.
    manifest: Manifest,
    /// The new rank chunk list, naming the old refs it keeps so they are moved, not copied.
    rank_slots: Vec<RankSlot>,
    /// The parts to hand out: those the last manifest did not name.
    new_parts: Vec<(ChunkHash, Vec<u8>)>,
    /// See [`Publication::reused_parts`].
    reused_parts: usize,
    /// The patched partitions and their new bytes.
    lookup_updates: Vec<(usize, Vec<u8>)>,
}

/// Follows one board instance and publishes its versions. Keep one publisher per board
/// instance: another board is told apart by its rules, a version that went back, or a changed
/// player's old standing, but another board at the very version last published, with the same
/// rules, looks unchanged.
///
/// Memory: the encoded lookup chunks of the last publication, which hold every entry once
/// (about 33 bytes per player with 23-byte ids: some 33 MB for a 1M-player board), and its
/// manifest decoded and encoded (about 130 + 70 bytes per rank chunk and 36 + 40 per lookup
/// chunk: about 2 MB at 1M players with the default chunking). No decoded copy of the board,
/// no rank chunk.
#[derive(Clone, Debug)]
pub struct Publisher {
    options: ChunkingOptions,
    last: Option<Published>,
    path: Option<PublishPath>,
    /// The most bytes a patch may take before a whole manifest is published instead; 0: never.
    max_patch_bytes: usize,
    /// The most ranked players of a board with segments that is published whole.
    segments_whole_max: u64,
    /// The hash of the last manifest, the base of patches.
    base_hash: Option<ChunkHash>,
    /// The patch over the last manifest that later versions are patched over, and its hash.
    middle: Option<(ManifestPatch, ChunkHash)>,
    /// The last publication, when it was a patch: its version and sketch.
    patched: Option<(u64, ChunkHash)>,
    /// The players changed since the last manifest and since the middle patch, each with their
    /// standing and extras then, complete through version `seen`: what a patch is made of, so
    /// that it needs only the board's deltas since the last publication, not since its base.
    ledgers: Option<Ledgers>,
}

/// See [`Publisher::ledgers`].
#[derive(Clone, Debug, Default)]
struct Ledgers {
    seen: u64,
    since_manifest: Ledger,
    since_middle: Ledger,
}

/// Changed players by id: their standing and extras at the ledger's start.
type Ledger = BTreeMap<String, (Option<Standing>, Extras)>;

impl Ledgers {
    /// Takes in the board's deltas since `seen`; `false` when the board no longer holds them.
    /// O(d log c) for d deltas.
    fn follow(&mut self, board: &Board) -> bool {
        let Some(deltas) = board.deltas_since(self.seen) else {
            return false;
        };
        for delta in deltas {
            for ledger in [&mut self.since_manifest, &mut self.since_middle] {
                if !ledger.contains_key(delta.player.as_str()) {
                    ledger.insert(
                        delta.player.as_str().into(),
                        (delta.before, delta.extras_before.clone()),
                    );
                }
            }
        }
        self.seen = board.version();
        true
    }
}

/// The patch size a patching publisher stays within by default: with the sketch (66 KB at 1M
/// players, 79 KB at 50M) a version costs at most about 240 KB.
pub const DEFAULT_MAX_PATCH_BYTES: usize = 160 * 1024;

/// How many times `max_patch_bytes` the patch over the manifest that later patches stand on
/// may take: it carries every change since the manifest, and is rewritten only when a patch
/// over it would not fit, so a manifest (which rewrites the moved players' chunks) is cut
/// once per this many patches' worth of changes.
pub const MIDDLE_PATCH_FACTOR: usize = 16;

impl Publisher {
    /// A publisher that has published nothing, cutting chunks with `options`, and publishing
    /// every version as a whole manifest. O(1).
    pub fn new(options: ChunkingOptions) -> Publisher {
        Publisher {
            options,
            last: None,
            path: None,
            max_patch_bytes: 0,
            segments_whole_max: SEGMENTS_WHOLE_MAX_PLAYERS,
            base_hash: None,
            middle: None,
            patched: None,
            ledgers: None,
        }
    }

    /// A publisher that publishes a version as a patch while it fits `max_patch_bytes`: over
    /// the patch that the versions since the last manifest stand on, or, when that would not
    /// fit, as a new such patch over the manifest (up to [`MIDDLE_PATCH_FACTOR`] times larger);
    /// past both, a whole manifest, cut incrementally. O(1).
    pub fn patching(options: ChunkingOptions, max_patch_bytes: usize) -> Publisher {
        Publisher {
            max_patch_bytes,
            ..Publisher::new(options)
        }
    }

    /// The same publisher with a board that declares segments published whole only while it
    /// ranks at most `players` ([`SEGMENTS_WHOLE_MAX_PLAYERS`] by default). O(1).
    pub fn segments_whole_up_to(self, players: u64) -> Publisher {
        Publisher {
            segments_whole_max: players,
            ..self
        }
    }

    /// The version last published, if any. O(1).
    pub fn published_version(&self) -> Option<u64> {
        match self.patched {
            Some((version, _)) => Some(version),
            None => self.manifest_version(),
        }
    }

    /// The version of the last whole manifest, which the next publication starts from: its
    /// deltas since are what a patch or an incremental cut needs. O(1).
    pub fn manifest_version(&self) -> Option<u64> {
        self.last.as_ref().map(|s| s.manifest.board_version)
    }

    /// The last whole manifest published, if any. O(1).
    pub fn manifest(&self) -> Option<&Manifest> {
        self.last.as_ref().map(|s| &s.manifest)
    }

    /// How the last publication was built, if any. O(1).
    pub fn last_path(&self) -> Option<PublishPath> {
        self.path
    }

    /// Publishes the board's current version, byte for byte as [`Snapshot::build_with`] cuts
    /// it. Incremental when it can be: O(c log c + c (log n + k) + chunks) for c changed players
    /// and chunks of about k entries; otherwise a full build, O(n) (see the module doc).
    pub fn publish(&mut self, board: &Board) -> Publication {
        // A segment read counts members through the manifest's rank chunks, which a patch
        // does not restate, so a board that declares segments is published whole, up to a
        // size past which a whole manifest a version costs more than serving its segment reads
        // from the origin.
        if board.declares_segments() && board.total_players() <= self.segments_whole_max {
            return self.publish_whole(board);
        }
        if let Some(publication) = self.publish_patch(board) {
            self.path = Some(PublishPath::Patch);
            return publication;
        }
        self.publish_whole(board)
    }

    /// Publishes the board's current version as a whole manifest, never a patch: cut
    /// incrementally from the last one when it can be, else in full. A driver calls it when
    /// the base has been named long enough: a base keeps serving what the versions after it
    /// changed (an old score, a name since changed), so its age is bounded as a replaced
    /// manifest's retention is.
    pub fn publish_whole(&mut self, board: &Board) -> Publication {
        // The changes since the last manifest, when the ledger followed them; else its deltas.
        let mut ledgers = self.ledgers.take();
        let followed = ledgers.as_mut().is_some_and(|l| l.follow(board));
        let held = ledgers
            .as_ref()
            .filter(|_| followed)
            .map(|l| held_changes(&l.since_manifest, board));
        let publication = self.publish_manifest(board, held.as_deref());
        self.base_hash = Some(publication.manifest_hash);
        self.middle = None;
        self.patched = None;
        self.ledgers = (self.max_patch_bytes > 0).then(|| Ledgers {
            seen: board.version(),
            ..Ledgers::default()
        });
        publication
    }

    /// The board's current version as a patch, when this publisher patches, the board is the
    /// last manifest's later, and a patch fits: over the middle patch when the top fits
    /// `max_patch_bytes`, else as a new middle over the manifest. O(c log c + c log n) for c
    /// changed players.
    fn publish_patch(&mut self, board: &Board) -> Option<Publication> {
        let last = self.last.as_ref()?;
        let base_hash = self.base_hash?;
        let rules = last.manifest.rules;
        let max = self.max_patch_bytes;
        if max == 0 || board.rules() != &rules || board.version() <= last.manifest.board_version {
            return None;
        }
        let ledgers = self.ledgers.as_mut()?;
        if !ledgers.follow(board) {
            return None;
        }
        let ledgers = self.ledgers.as_ref()?;
        let sketch = board.rank_sketch().encode();
        let sketch_hash = BoardDigest::of(&sketch);
        let over_middle = self
            .middle
            .as_ref()
            .filter(|(middle, _)| board.version() > middle.board_version)
            .and_then(|(middle, middle_hash)| {
                let held = held_changes(&ledgers.since_middle, board);
                let top = patch_over(
                    &rules,
                    middle.board_version,
                    *middle_hash,
                    board,
                    &changes_of(board, &held),
                    max,
                )?;
                let top = ManifestPatch {
                    sketch: sketch_hash,
                    ..top
                };
                let bytes = top.encode();
                (bytes.len() <= max).then(|| (alloc::vec![middle.clone(), top], bytes))
            });
        let (patches, bytes) = match over_middle {
            Some(found) => found,
            None => {
                let limit = max.saturating_mul(MIDDLE_PATCH_FACTOR);
                let held = held_changes(&ledgers.since_manifest, board);
                let middle = patch_over(
                    &rules,
                    last.manifest.board_version,
                    base_hash,
                    board,
                    &changes_of(board, &held),
                    limit,
                )?;
                let middle = ManifestPatch {
                    sketch: sketch_hash,
                    ..middle
                };
                let bytes = middle.encode();
                if bytes.len() > limit {
                    return None;
                }
                self.middle = Some((middle.clone(), BoardDigest::of(&bytes)));
                if let Some(ledgers) = self.ledgers.as_mut() {
                    ledgers.since_middle.clear();
                }
                (alloc::vec![middle], bytes)
            }
        };
        let mut new_parts = Vec::new();
        // The parts the previous root named: the manifest's, and its own sketch when a patch.
        let named_before =
            sketch_hash == last.manifest.sketch || self.patched.is_some_and(|(_, s)| s == sketch_hash);
        if !named_before {
            new_parts.push((sketch_hash, sketch));
        }
        self.patched = Some((board.version(), sketch_hash));
        Some(Publication {
            manifest: last.manifest.clone(),
            manifest_hash: BoardDigest::of(&bytes),
            manifest_bytes: bytes,
            patches,
            new_parts,
            reused_parts: last.manifest.rank_chunks.len() + last.manifest.lookup_chunks.len(),
        })
    }

    /// The board's current version as a whole manifest: cut incrementally from the last one
    /// when it can be, else in full.
    fn publish_manifest(&mut self, board: &Board, held: Option<&[Held<'_>]>) -> Publication {
        let reason = match self.last.as_mut() {
            None => FullBuildReason::FirstPublication,
            Some(last) => match patch(&self.options, last, board, held) {
                Ok(patch) => {
                    self.path = Some(PublishPath::Incremental);
                    return commit_patch(last, patch);
                }
                Err(reason) => reason,
            },
        };
        self.path = Some(PublishPath::Full(reason));
        let snapshot = Snapshot::build_with(board, self.options);
        let candidates = snapshot
            .manifest
            .rank_chunks
            .iter()
            .map(|c| c.hash)
            .zip(snapshot.rank_chunks)
            .chain(
                snapshot
                    .manifest
                    .lookup_chunks
                    .iter()
                    .map(|c| c.hash)
                    .zip(snapshot.lookup_chunks.iter().cloned()),
            )
            .chain(core::iter::once((snapshot.manifest.sketch, snapshot.sketch)));
        let previous = self.last.as_ref().map(|l| &l.manifest);
        let (new_parts, reused_parts) = hand_out(previous, &snapshot.manifest, candidates);
        self.last = Some(Published {
            encoded: EncodedManifest::write(&snapshot.manifest, |_| None, |_| None),
            manifest: snapshot.manifest.clone(),
            lookup_chunks: snapshot.lookup_chunks,
        });
        Publication {
            manifest_hash: BoardDigest::of(&snapshot.manifest_bytes),
            manifest: snapshot.manifest,
            patches: Vec::new(),
            manifest_bytes: snapshot.manifest_bytes,
            new_parts,
            reused_parts,
        }
    }
}

/// Makes a computed patch the last publication and answers it. O(chunks + new bytes).
fn commit_patch(last: &mut Published, patch: Patch) -> Publication {
    let Patch {
        mut manifest,
        rank_slots,
        new_parts,
        reused_parts,
        lookup_updates,
    } = patch;
    let mut patched = alloc::vec![false; manifest.lookup_chunks.len()];
    for (p, bytes) in lookup_updates {
        last.lookup_chunks[p] = bytes;
        patched[p] = true;
    }
    let mut old: Vec<Option<RankChunkRef>> = core::mem::take(&mut last.manifest.rank_chunks)
        .into_iter()
        .map(Some)
        .collect();
    // Where each new rank ref came from, so its encoding is copied from the last manifest.
    let mut kept_from: Vec<Option<usize>> = Vec::with_capacity(rank_slots.len());
    // Each old ref is kept at most once (a re-cut only moves forward), so each `take` finds it.
    manifest.rank_chunks = rank_slots
        .into_iter()
        .filter_map(|slot| match slot {
            RankSlot::Kept(j) => {
                kept_from.push(Some(j));
                old.get_mut(j).and_then(Option::take)
            }
            RankSlot::Cut(chunk_ref) => {
                kept_from.push(None);
                Some(chunk_ref)
            }
        })
        .collect();
    let encoded = EncodedManifest::write(
        &manifest,
        |i| {
            kept_from
                .get(i)
                .copied()
                .flatten()
                .and_then(|j| last.encoded.rank_ref(j))
        },
        |p| (!patched[p]).then(|| last.encoded.lookup_ref(p)).flatten(),
    );
    let manifest_bytes = encoded.bytes.clone();
    last.encoded = encoded;
    last.manifest = manifest.clone();
    Publication {
        manifest_hash: BoardDigest::of(&manifest_bytes),
        manifest,
        patches: Vec::new(),
        manifest_bytes,
        new_parts,
        reused_parts,
    }
}

/// Splits a full build's parts into those to hand out (not named by the previous manifest,
/// each once) and counts the manifest's entries whose part the previous one named. O(chunks)
/// to collect the names, O(1) per part. (A patch knows which parts are old without this.)
fn hand_out(
    previous: Option<&Manifest>,
    manifest: &Manifest,
    candidates: impl Iterator<Item = (ChunkHash, Vec<u8>)>,
) -> (Vec<(ChunkHash, Vec<u8>)>, usize) {
    let known: HashSet<ChunkHash> = previous.map(|m| m.part_hashes().collect()).unwrap_or_default();
    let mut handed: HashSet<ChunkHash> = HashSet::default();
    let mut new_parts = Vec::new();
    for (hash, bytes) in candidates {
        if !known.contains(&hash) && handed.insert(hash) {
            new_parts.push((hash, bytes));
        }
    }
    let reused_parts = manifest
        .rank_chunks
        .iter()
        .map(|c| &c.hash)
        .chain(manifest.lookup_chunks.iter().map(|c| &c.hash))
        .filter(|h| known.contains(*h))
        .count();
    (new_parts, reused_parts)
}

/// One changed player: their standing at the last publication and now.
struct Change<'a> {
    player: &'a str,
    partition: usize,
    then: Option<Standing>,
    now: Option<Standing>,
    /// What the entry shows now besides its standing.
    info: EntryInfo<'a>,
    /// What it showed at the last publication.
    then_info: EntryInfo<'a>,
}

/// Each player the deltas change, once, sorted by id bytes: their standing before the first
/// delta and after the last, when the two differ or the public extras did. O(d log d).
fn changed_players<'a>(board: &Board, deltas: impl Iterator<Item = &'a Delta>) -> Vec<Change<'a>> {
    // A stable sort keeps each player's deltas oldest first, so the first one's `before` is
    // their standing at the last publication and the last one's `after` now.
    let mut named: Vec<_> = deltas.collect();
    named.sort_by(|a, b| a.player.as_str().as_bytes().cmp(b.player.as_str().as_bytes()));
    let mut changes: Vec<Change<'_>> = Vec::new();
    for run in named.chunk_by(|a, b| a.player == b.player) {
        let (Some(first), Some(latest)) = (run.first(), run.last()) else {
            continue;
        };
        let (info, then_info) = (
            board.shown(&latest.extras_after),
            board.shown(&first.extras_before),
        );
        // A rename moves nobody, but its entry's bytes change wherever the public sees them.
        let renamed = info.for_audience(Audience::Public) != then_info.for_audience(Audience::Public);
        if first.before != latest.after || renamed {
            let player = first.player.as_str();
            changes.push(Change {
                player,
                partition: 0,
                then: first.before,
                now: latest.after,
                info,
                then_info,
            });
        }
    }
    changes
}

/// A player of a ledger: their standing and extras when it started, and now.
pub(crate) struct Held<'l> {
    player: &'l str,
    then: Option<Standing>,
    then_extras: &'l Extras,
    now: Option<Standing>,
    now_extras: Extras,
}

/// The players of a ledger, in its (id) order, with their standing and extras now. O(c log n).
fn held_changes<'l>(ledger: &'l Ledger, board: &Board) -> Vec<Held<'l>> {
    let index = board.index();
    ledger
        .iter()
        .map(|(player, (then, then_extras))| Held {
            player,
            then: *then,
            then_extras,
            now: index.standing_of_player(player),
            now_extras: board.extras_of(player),
        })
        .collect()
}

/// The changes of a ledger's players, as [`changed_players`] makes them from deltas: those
/// whose standing or public extras differ now. O(c).
fn changes_of<'a>(board: &Board, held: &'a [Held<'a>]) -> Vec<Change<'a>> {
    held.iter()
        .filter_map(|h| {
            let (then_info, info) = (board.shown(h.then_extras), board.shown(&h.now_extras));
            let renamed = info.for_audience(Audience::Public) != then_info.for_audience(Audience::Public);
            (h.then != h.now || renamed).then_some(Change {
                player: h.player,
                partition: 0,
                then: h.then,
                now: h.now,
                info,
                then_info,
            })
        })
        .collect()
}

/// The board's current version as a patch over the view at `base_version` under `rules` (a
/// manifest, or a patch over one) named `base_hash` (its sketch left for the caller to fill), or `None` when the deltas since are not held or the patch would not fit
/// `max_bytes`. Base positions come from the current board: the entries before a key in the
/// base are those before it now, less the changed players' new keys before it, plus their
/// old ones. O(c log c + c log n) for c changed players.
fn patch_over(
    rules: &BoardRules,
    base_version: u64,
    base_hash: ChunkHash,
    board: &Board,
    changes: &[Change<'_>],
    max_bytes: usize,
) -> Option<ManifestPatch> {
    // An entry in a patch takes at least 24 bytes: fail early on what cannot fit.
    let base_rules = *rules;
    if changes.len().saturating_mul(24) > max_bytes {
        return None;
    }
    // A name or country taken back (a rename, a player gone anonymous, a player removed) must
    // leave the parts served, and the base would keep showing it: such a version is published
    // whole. A better standing's metadata replacing the old is not taken back: it is history,
    // like the old score; metadata that changes with a standing no better (an event
    // invalidated) is.
    let better = |c: &Change<'_>| match (c.then, c.now) {
        // On a `latest` board every event replaces the standing, better or not.
        (Some(_), Some(_)) if base_rules.score_mode == crate::rules::ScoreMode::Latest => true,
        (Some(then), Some(now)) => base_rules.compare((&now, c.player), (&then, c.player)) == Ordering::Less,
        _ => false,
    };
    let taken_back = |c: &Change<'_>| {
        let (then, now) = (
            c.then_info.for_audience(Audience::Public),
            c.info.for_audience(Audience::Public),
        );
        let changed = |was: Option<&str>, is: Option<&str>| was.is_some() && was != is;
        changed(then.display_name, now.display_name)
            || changed(then.country, now.country)
            || (c.info.anonymous && !then.is_empty())
            || (changed(then.metadata, now.metadata) && !better(c))
    };
    if changes.iter().any(taken_back) {
        return None;
    }
    let rules = *rules;
    let order = |a: &(Standing, &str), b: &(Standing, &str)| rules.compare((&a.0, a.1), (&b.0, b.1));
    let mut old: Vec<(Standing, &str)> = changes.iter().filter_map(|c| Some((c.then?, c.player))).collect();
    let mut new: Vec<(Standing, &str, EntryInfo<'_>)> = changes
        .iter()
        .filter_map(|c| Some((c.now?, c.player, c.info)))
        .collect();
    old.sort_unstable_by(order);
    new.sort_unstable_by(|a, b| order(&(a.0, a.1), &(b.0, b.1)));
    let index = board.index();
    let base_before = |key: &(Standing, &str)| {
        let now_before = index.count_before(&key.0, key.1, false);
        let new_before = new.partition_point(|n| order(&(n.0, n.1), key) == Ordering::Less) as u64;
        let old_before = old.partition_point(|o| order(o, key) == Ordering::Less) as u64;
        (now_before + old_before).checked_sub(new_before)
    };
    let mut removed = Vec::with_capacity(old.len());
    for key in &old {
        removed.push(Removed {
            rank: base_before(key)? + 1,
            value: key.0.value,
        });
    }
    let mut inserted = Vec::with_capacity(new.len());
    for &(standing, player, info) in &new {
        inserted.push(Inserted {
            base_before: base_before(&(standing, player))?,
            entry: EntryRef::new(player, standing, info).to_owned(),
        });
    }
    // The values whose presence changed: held now by `count_now`, in the base by that less the
    // changed players' new keys at it, plus their old ones.
    let mode = rules.score_mode;
    let better_than = |value: i64| index.value_ranks(value).competition_rank - 1;
    let count_now = |value: i64| {
        let next_worse = match mode {
            crate::rules::ScoreMode::Fastest => value.checked_add(1),
            _ => value.checked_sub(1),
        };
        next_worse.map_or(board.total_players(), better_than) - better_than(value)
    };
    let mut values: Vec<i64> = old
        .iter()
        .map(|o| o.0.value)
        .chain(new.iter().map(|n| n.0.value))
        .collect();
    values.sort_unstable_by(|&a, &b| {
        if mode.better_value(a, b) {
            Ordering::Less
        } else if a == b {
            Ordering::Equal
        } else {
            Ordering::Greater
        }
    });
    values.dedup();
    // Keys in rank order hold their values best first, so each value is a run in each list.
    let old_values: Vec<i64> = old.iter().map(|o| o.0.value).collect();
    let new_values: Vec<i64> = new.iter().map(|n| n.0.value).collect();
    let run = |values: &[i64], value: i64| {
        let from = values.partition_point(|&v| mode.better_value(v, value));
        let to = values.partition_point(|&v| !mode.better_value(value, v));
        to.saturating_sub(from) as u64
    };
    let (mut values_appeared, mut values_gone) = (Vec::new(), Vec::new());
    for value in values {
        let now = count_now(value);
        let then = (now + run(&old_values, value)).checked_sub(run(&new_values, value))?;
        match (then > 0, now > 0) {
            (false, true) => values_appeared.push(value),
            (true, false) => values_gone.push(value),
            _ => {}
        }
    }
    let unranked = changes
        .iter()
        .filter(|c| c.then.is_some() && c.now.is_none())
        .map(|c| c.player.into())
        .collect();
    Some(ManifestPatch {
        base: base_hash,
        base_version,
        board_version: board.version(),
        total_players: board.total_players(),
        // The caller names the version's sketch.
        sketch: base_hash,
        removed,
        inserted,
        unranked,
        values_appeared,
        values_gone,
    })
}

/// Computes the next publication from the last one and the deltas since, or says why it
/// cannot. Pure: nothing is committed until it succeeds.
#[allow(clippy::type_complexity)]
fn patch(
    options: &ChunkingOptions,
    last: &Published,
    board: &Board,
    held: Option<&[Held<'_>]>,
) -> Result<Patch, FullBuildReason> {
    let old = &last.manifest;
    if board.rules() != &old.rules {
        return Err(FullBuildReason::OtherRules);
    }
    if ManifestSegments::of(&board.segment_spec()) != old.segments {
        return Err(FullBuildReason::OtherSegments);
    }
    if board.version() < old.board_version {
        return Err(FullBuildReason::VersionWentBack);
    }
    let partitions = options.partitions(board.total_players());
    if partitions != old.lookup_chunks.len() {
        return Err(FullBuildReason::PartitionsChanged);
    }
    if old.rank_chunks.is_empty() {
        return Err(FullBuildReason::NothingRankedBefore);
    }

    let mut changes = match held {
        Some(held) => changes_of(board, held),
        None => changed_players(
            board,
            board
                .deltas_since(old.board_version)
                .ok_or(FullBuildReason::HistoryGone)?,
        ),
    };
    for change in &mut changes {
        change.partition = (fnv1a(change.player.as_bytes()) & (partitions as u64 - 1)) as usize;
    }

    let lookup_parts = patch_lookups(last, &mut changes)?;
    let (rank_slots, mut new_parts, rank_reused) = recut_rank_chunks(options, old, board, &changes)?;
    let mut reused_parts = rank_reused + (old.lookup_chunks.len() - lookup_parts.len());
    let mut lookup_refs = old.lookup_chunks.clone();
    let mut lookup_updates = Vec::with_capacity(lookup_parts.len());
    // Partitions hold disjoint players, so two lookup chunks share bytes only when both are
    // empty: a patched partition's part is known when it is unchanged, or empty while the last
    // manifest named an empty one; and only one empty part is handed out.
    let mut empty_named = None;
    let mut empty_handed_out = false;
    for (p, chunk_ref, bytes) in lookup_parts {
        let empty = chunk_ref.count == 0;
        let known = chunk_ref.hash == old.lookup_chunks[p].hash
            || (empty && *empty_named.get_or_insert_with(|| old.lookup_chunks.iter().any(|c| c.count == 0)));
        if known {
            reused_parts += 1;
        } else if !(empty && empty_handed_out) {
            empty_handed_out |= empty;
            new_parts.push((chunk_ref.hash, bytes.clone()));
        }
        lookup_refs[p] = chunk_ref;
        lookup_updates.push((p, bytes));
    }
    let counted: u64 = rank_slots
        .iter()
        .map(|s| u64::from(s.get(&old.rank_chunks).count))
        .sum();
    let looked_up: u64 = lookup_refs.iter().map(|c| u64::from(c.count)).sum();
    if counted != board.total_players() || looked_up != board.total_players() {
        return Err(FullBuildReason::Inconsistent);
    }
    let sketch = board.rank_sketch().encode();
    let sketch_hash = BoardDigest::of(&sketch);
    if sketch_hash != old.sketch {
        new_parts.push((sketch_hash, sketch));
    }
    let manifest = Manifest {
        rules: old.rules,
        board_version: board.version(),
        total_players: board.total_players(),
        digest: chunk_digest(
            old.rules.score_mode,
            rank_slots.iter().map(|s| &s.get(&old.rank_chunks).hash),
        ),
        sketch: sketch_hash,
        segments: old.segments.clone(),
        rank_chunks: Vec::new(),
        lookup_chunks: lookup_refs,
    };
    Ok(Patch {
        manifest,
        rank_slots,
        new_parts,
        reused_parts,
        lookup_updates,
    })
}

/// Patches the partitions of the changed players: decode, insert / replace / remove, encode.
/// Answers each patched partition with its new manifest entry and bytes. Sorts `changes` by
/// partition. O(c log c + the patched partitions' entries).
fn patch_lookups(
    last: &Published,
    changes: &mut [Change<'_>],
) -> Result<Vec<(usize, LookupChunkRef, Vec<u8>)>, FullBuildReason> {
    changes.sort_unstable_by_key(|c| c.partition);
    let mut parts = Vec::new();
    for group in changes.chunk_by(|a, b| a.partition == b.partition) {
        let p = group[0].partition;
        let bytes = last.lookup_chunks.get(p).ok_or(FullBuildReason::Inconsistent)?;
        // The publisher encoded these bytes itself; a failure here means they were not its own.
        // The ids are borrowed from the bytes: no id is copied but into the new encoding.
        let mut entries =
            decode_entries(TAG_LOOKUP_CHUNK, bytes).map_err(|_| FullBuildReason::Inconsistent)?;
        for change in group {
            let found = entries.binary_search_by(|e| e.player.as_bytes().cmp(change.player.as_bytes()));
            let held = found.ok().map(|i| entries[i].standing());
            if held != change.then {
                return Err(FullBuildReason::Inconsistent);
            }
            match (found, change.now) {
                (Ok(i), Some(now)) => entries[i] = EntryRef::new(change.player, now, change.info),
                (Ok(i), None) => {
                    entries.remove(i);
                }
                (Err(i), Some(now)) => entries.insert(i, EntryRef::new(change.player, now, change.info)),
                (Err(_), None) => {}
            }
        }
        let (chunk_ref, bytes) = seal_lookup(&entries);
        parts.push((p, chunk_ref, bytes));
    }
    Ok(parts)
}

/// One place in the new rank chunk list.
enum RankSlot {
    /// Old chunk `j`, unchanged.
    Kept(usize),
    /// A chunk cut again.
    Cut(RankChunkRef),
}

impl RankSlot {
    /// The ref this slot names, given the old chunk list. O(1).
    fn get<'a>(&'a self, old: &'a [RankChunkRef]) -> &'a RankChunkRef {
        match self {
            RankSlot::Kept(j) => &old[*j],
            RankSlot::Cut(chunk_ref) => chunk_ref,
        }
    }
}

/// The new rank chunk list as it is made: slots in order, the parts to hand out, and how many
/// slots name a part the last manifest named.
struct RankChunks<'m> {
    old: &'m [RankChunkRef],
    refs: Vec<RankSlot>,
    parts: Vec<(ChunkHash, Vec<u8>)>,
    reused: usize,
}

impl RankChunks<'_> {
    /// Keeps old chunk `j` as it is. O(1).
    fn keep(&mut self, j: usize) {
        self.reused += 1;
        self.refs.push(RankSlot::Kept(j));
    }

    /// The last chunk placed or kept, if any. O(1).
    fn last(&self) -> Option<&RankChunkRef> {
        self.refs.last().map(|slot| slot.get(self.old))
    }

    /// Places a chunk just cut; `ptr` is the first old chunk whose last entry does not sort
    /// before the previous cut, and moves to the first one not before this cut. Answers whether
    /// the cut is on an old boundary (the same last entry). O(old chunks passed).
    fn place(
        &mut self,
        rules: &BoardRules,
        ptr: &mut usize,
        chunk_ref: RankChunkRef,
        bytes: Vec<u8>,
    ) -> bool {
        let at = (&chunk_ref.last.standing(), chunk_ref.last.player.as_str());
        while *ptr < self.old.len()
            && rules.compare((&self.old[*ptr].last.standing(), &self.old[*ptr].last.player), at)
                == Ordering::Less
        {
            *ptr += 1;
        }
        let on_boundary = self.old.get(*ptr).is_some_and(|c| c.last == chunk_ref.last);
        // Chunks with the same last entry are the only ones that can share bytes.
        if on_boundary && self.old[*ptr].hash == chunk_ref.hash {
            self.reused += 1;
        } else {
            self.parts.push((chunk_ref.hash, bytes));
        }
        self.refs.push(RankSlot::Cut(chunk_ref));
        on_boundary
    }
}

/// The new rank chunk list: the old clean chunks kept, the dirty ones cut again from the
/// current board (see the module doc). Answers the refs, the re-cut chunks the last manifest did
/// not name (by hash, with their bytes), and how many refs it did name.
/// O(c log chunks + chunks + re-cut entries + runs log n).
#[allow(clippy::type_complexity)]
fn recut_rank_chunks(
    options: &ChunkingOptions,
    old: &Manifest,
    board: &Board,
    changes: &[Change<'_>],
) -> Result<(Vec<RankSlot>, Vec<(ChunkHash, Vec<u8>)>, usize), FullBuildReason> {
    let chunks = &old.rank_chunks;
    let last_chunk = chunks.len() - 1;
    let mut dirty = alloc::vec![false; chunks.len()];
    for change in changes {
        if let Some(then) = change.then {
            // An old key always sits in some chunk's range; past the end means another board.
            let i = old
                .rank_chunk_of(&then, change.player)
                .ok_or(FullBuildReason::Inconsistent)?;
            dirty[i] = true;
        }
        if let Some(now) = change.now {
            dirty[old.rank_chunk_of(&now, change.player).unwrap_or(last_chunk)] = true;
        }
    }
    let rules = old.rules;
    // A re-cut usually ends at or near the end of the old chunk it starts in, so it first reads
    // that chunk's count and a few more, then small steps: reading the board is most of the
    // cost (each entry's id is a cache miss), and what is read past the cut is thrown away.
    let step = (options.boundary_modulus as usize).clamp(16, 1024);
    let mut out = RankChunks {
        old: chunks,
        refs: Vec::with_capacity(chunks.len() + 8),
        parts: Vec::new(),
        reused: 0,
    };
    // The rank, in the current board, of the first entry not yet placed in a chunk.
    let mut next_rank: u64 = 1;
    let mut j = 0;
    while j < chunks.len() {
        if !dirty[j] {
            next_rank += u64::from(chunks[j].count);
            out.keep(j);
            j += 1;
            continue;
        }
        // Cut again from the boundary before chunk j, which the full build also cuts at.
        let mut cutter = RankCutter::new(options, old.segments.clone());
        let mut ptr = j;
        let mut want = chunks[j].count as usize + 8;
        let resume = 'scan: loop {
            let entries = board.ranked_range(next_rank, want);
            want = step;
            if entries.is_empty() {
                if let Some((chunk_ref, bytes)) = cutter.finish() {
                    out.place(&rules, &mut ptr, chunk_ref, bytes);
                }
                break 'scan None;
            }
            for entry in &entries {
                next_rank += 1;
                if let Some((chunk_ref, bytes)) =
                    cutter.push(EntryRef::of(entry), fnv1a(entry.player.as_bytes()))
                {
                    // The last old chunk ends where the old board ended, not necessarily at a
                    // cut, and entries past it are new: never resume after it.
                    if out.place(&rules, &mut ptr, chunk_ref, bytes) && ptr < last_chunk {
                        break 'scan Some(ptr + 1);
                    }
                }
            }
        };
        match resume {
            Some(next) => j = next,
            None => {
                // The board ended: every old chunk not passed must have lost all its entries.
                let passed = out.last().map_or(0, |r| {
                    let at = (&r.last.standing(), r.last.player.as_str());
                    chunks.partition_point(|c| {
                        rules.compare((&c.last.standing(), &c.last.player), at) != Ordering::Greater
                    })
                });
                if dirty[passed.min(chunks.len())..].iter().any(|d| !d) {
                    return Err(FullBuildReason::Inconsistent);
                }
                j = chunks.len();
            }
        }
    }
    Ok((out.refs, out.parts, out.reused))
}
