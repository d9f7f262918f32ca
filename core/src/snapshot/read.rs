//! Answering the read API's queries from a snapshot's parts, as a board would answer them.
//!
//! The reader does no IO: a query either answers ([`Step::Done`]) from the parts it is given,
//! or says which parts it needs first ([`Step::Need`]); the driver (the edge worker) fetches
//! those and asks again. Every query needs few parts, and says so before it reads any, so a
//! driver can refuse a query that would need too many.
//!
//! How each query finds its answer, and the most rounds (calls that answer `Need`) it takes:
//! - a player's entry is in their lookup chunk ([`Manifest::partition_of`]); their rank is the
//!   entries of the rank chunks before theirs ([`Manifest::rank_chunk_of`]) plus their place in
//!   it. So a rank needs the lookup chunk first, then the rank chunk.
//! - the value ranks count the entries and distinct values before the first entry holding the
//!   player's value. Whole chunks are counted from the manifest (`count`, `distinct_values`,
//!   and `first_value` against the previous chunk's last value, for a value that spans the
//!   boundary); only the chunk where the player's value starts is read, and only when that
//!   chunk starts with a better value. It is found in the same round as the player's chunk.
//! - a page or a window is a run of ranks; the chunks covering it follow from the prefix sums
//!   of the chunk counts. A cursor's place needs the chunk holding it (unless it is that
//!   chunk's last entry), a window's place the player's lookup and rank chunks.
//!
//! So `top` takes at most 2 rounds, `player_rank` 2 (at most 3 parts), `nearby` 3, and
//! `rank_among` 2 (one lookup chunk per distinct non-empty partition, then one rank chunk per
//! distinct chunk of the ranked players). A player whose partition is empty in the manifest is
//! unranked without any part.
//!
//! The parts must be the manifest's (decoded against the hashes it names); parts that are not
//! never make a query panic, but may answer wrongly.

use alloc::vec::Vec;
use core::cmp::Ordering;

use super::patch::ManifestPatch;
use super::{LookupChunk, Manifest, RankChunk, SnapshotEntry};
use crate::board::{FriendsBoard, Page, PlayerInterval, PlayerRank};
use crate::cursor::Cursor;
use crate::digest::ChunkHash;
use crate::error::DecodeError;
use crate::error::QueryError;
use crate::index::RankedEntry;
use crate::interval::RankSketch;
use crate::profile::EntryInfo;
use crate::rules::Standing;

mod segments;
pub use segments::{SegmentCounts, SegmentReader};

/// A part of a snapshot, by its place in the manifest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Part {
    /// Rank chunk `i` of `manifest.rank_chunks`.
    Rank(usize),
    /// Lookup chunk `p` of `manifest.lookup_chunks` (a player's partition).
    Lookup(usize),
    /// The rank sketch `manifest.sketch` names.
    Sketch,
}

/// The decoded parts a driver holds for one manifest.
pub trait Parts {
    /// Rank chunk `i`, if held.
    fn rank(&self, i: usize) -> Option<&RankChunk>;
    /// Lookup chunk `partition`, if held.
    fn lookup(&self, partition: usize) -> Option<&LookupChunk>;
    /// The rank sketch, if held.
    fn sketch(&self) -> Option<&RankSketch>;
}

/// What a query answers: the answer, or the parts to fetch before asking again.
#[derive(Clone, Debug, PartialEq)]
pub enum Step<T> {
    /// The answer.
    Done(T),
    /// Fetch these (none of them held yet, no repeats), then ask again.
    Need(Vec<Part>),
}

/// Answers queries from one manifest at its `board_version`, or from a patch over it at the
/// patch's version, exactly as [`crate::Board`] answers them at that version.
#[derive(Clone, Debug)]
pub struct SnapshotReader<'m> {
    manifest: &'m Manifest,
    /// The patches read over the manifest, the lowest first: each is over the view below it.
    layers: Vec<Layer<'m>>,
    /// `entries_before[i]`: the entries of rank chunks `0..i`, for every `i` up to the chunk
    /// count (one more element than chunks). The rank of chunk `i`'s first entry is one more.
    entries_before: Vec<u64>,
    /// `values_before[i]`: the distinct values among the entries of rank chunks `0..i`.
    values_before: Vec<u64>,
}

/// A patch and what its reader computes once from it.
#[derive(Clone, Debug)]
struct Layer<'m> {
    patch: &'m ManifestPatch,
    /// The rank at the patch's version of each inserted entry, ascending.
    ranks: Vec<u64>,
    /// The inserted entries' places in `patch.inserted`, sorted by player id bytes.
    by_player: Vec<u32>,
}

impl Layer<'_> {
    /// Removed base entries at base ranks `..= b`. O(log removed).
    fn removed_through(&self, b: u64) -> u64 {
        self.patch.removed.partition_point(|r| r.rank <= b) as u64
    }

    /// Inserted entries ranked before base rank `b`. O(log inserted).
    fn inserted_before_base(&self, b: u64) -> u64 {
        self.patch.inserted.partition_point(|i| i.base_before < b) as u64
    }

    /// The rank now of the unchanged base entry at base rank `b`. O(log patch).
    fn rank_of_base(&self, b: u64) -> u64 {
        b - self.removed_through(b) + self.inserted_before_base(b)
    }

    /// The base rank of the `k`-th (1-based) base entry that is not removed: `k` plus the
    /// removed entries before it. O(log removed).
    fn kept_base_rank(&self, k: u64) -> u64 {
        let removed = &self.patch.removed;
        // Kept entries before removed entry `i` number `rank - 1 - i`, non-decreasing in `i`.
        let (mut low, mut high) = (0usize, removed.len());
        while low < high {
            let mid = low + (high - low) / 2;
            if removed[mid].rank - 1 - (mid as u64) < k {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        k + low as u64
    }
}

/// Where a player's entry was found: in a base lookup chunk, or among the entries of the
/// patch at a level.
#[derive(Clone, Copy)]
enum Found<'a> {
    Base(&'a SnapshotEntry),
    Inserted(&'a SnapshotEntry, usize, usize),
}

impl<'a> Found<'a> {
    fn entry(self) -> &'a SnapshotEntry {
        match self {
            Found::Base(entry) | Found::Inserted(entry, _, _) => entry,
        }
    }
}

/// A query stopped because a part it needs is not held; the part is in the [`Needs`].
struct Pending;

/// The parts a query found missing so far.
struct Needs(Vec<Part>);

impl Needs {
    /// Records a missing part and stops this line of the query.
    fn missing<T>(&mut self, part: Part) -> Result<T, Pending> {
        self.0.push(part);
        Err(Pending)
    }

    /// The answer, or the missing parts, sorted and without repeats. O(m log m) for m parts.
    fn step<T>(mut self, answer: impl FnOnce() -> T) -> Step<T> {
        if self.0.is_empty() {
            return Step::Done(answer());
        }
        self.0.sort_unstable();
        self.0.dedup();
        Step::Need(self.0)
    }
}

impl<'m> SnapshotReader<'m> {
    /// A reader of `manifest`. O(chunks): it sums the rank chunks' entries and distinct values
    /// once, so that every query finds ranks and value ranks in O(log chunks).
    pub fn new(manifest: &'m Manifest) -> SnapshotReader<'m> {
        let chunks = &manifest.rank_chunks;
        let mut entries_before = Vec::with_capacity(chunks.len() + 1);
        let mut values_before = Vec::with_capacity(chunks.len() + 1);
        let (mut entries, mut values) = (0u64, 0u64);
        entries_before.push(0);
        values_before.push(0);
        let mut previous_last: Option<i64> = None;
        for chunk in chunks {
            entries += u64::from(chunk.count);
            // A value that runs on from the previous chunk was counted there already.
            let shared = previous_last == Some(chunk.first_value);
            values += u64::from(chunk.distinct_values).saturating_sub(u64::from(shared));
            entries_before.push(entries);
            values_before.push(values);
            previous_last = Some(chunk.last.value);
        }
        SnapshotReader {
            manifest,
            layers: Vec::new(),
            entries_before,
            values_before,
        }
    }

    /// A reader of `patches` over the manifest `base`, the lowest first (each over the view
    /// below it; none: `base` alone). Checks each patch against the view below it
    /// ([`ManifestPatch::check_over`]). O(chunks + p log p) for patches of p entries.
    pub fn over(
        base: &'m Manifest,
        patches: &[&'m ManifestPatch],
    ) -> Result<SnapshotReader<'m>, DecodeError> {
        let mut reader = SnapshotReader::new(base);
        let (mut version, mut total) = (base.board_version, base.total_players);
        for &patch in patches {
            patch.check_over(&base.rules, version, total)?;
            (version, total) = (patch.board_version, patch.total_players);
            let mut layer = Layer {
                patch,
                ranks: Vec::new(),
                by_player: (0..patch.inserted.len() as u32).collect(),
            };
            layer.ranks = patch
                .inserted
                .iter()
                .enumerate()
                .map(|(j, i)| i.base_before - layer.removed_through(i.base_before) + j as u64 + 1)
                .collect();
            layer.by_player.sort_unstable_by(|&a, &b| {
                let id = |j: u32| patch.inserted[j as usize].entry.player.as_bytes();
                id(a).cmp(id(b))
            });
            let repeated = layer.by_player.windows(2).any(|w| {
                patch.inserted[w[0] as usize].entry.player == patch.inserted[w[1] as usize].entry.player
            });
            if repeated {
                return Err(DecodeError::Inconsistent("a player inserted twice"));
            }
            reader.layers.push(layer);
        }
        Ok(reader)
    }

    /// The manifest read: with a patch, its base, whose version is not the one read
    /// ([`SnapshotReader::board_version`]). O(1).
    pub fn base(&self) -> &'m Manifest {
        self.manifest
    }

    /// Whether the reader reads patches over its manifest. O(1).
    pub fn patched(&self) -> bool {
        !self.layers.is_empty()
    }

    /// The version read: the highest patch's, else the manifest's. O(1).
    pub fn board_version(&self) -> u64 {
        self.layers
            .last()
            .map_or(self.manifest.board_version, |l| l.patch.board_version)
    }

    /// Ranked players at the version read. O(1).
    pub fn total_players(&self) -> u64 {
        self.total_at(self.layers.len())
    }

    /// Ranked players in the view of the lowest `level` patches. O(1).
    fn total_at(&self, level: usize) -> u64 {
        level
            .checked_sub(1)
            .and_then(|l| self.layers.get(l))
            .map_or(self.manifest.total_players, |l| l.patch.total_players)
    }

    /// The hash of a part this reader may ask for; `None` for a place the manifest does not
    /// have. O(1).
    pub fn part_hash(&self, part: Part) -> Option<ChunkHash> {
        match part {
            Part::Rank(i) => self.manifest.rank_chunks.get(i).map(|c| c.hash),
            Part::Lookup(p) => self.manifest.lookup_chunks.get(p).map(|c| c.hash),
            Part::Sketch => Some(
                self.layers
                    .last()
                    .map_or(self.manifest.sketch, |l| l.patch.sketch),
            ),
        }
    }

    /// [`crate::Board::top`]: `limit` entries from the top, or after the cursor's position.
    /// A cursor made at another version is [`QueryError::StaleCursor`] (a snapshot holds one
    /// version; the driver asks the origin, which holds more).
    ///
    /// Needs the rank chunk holding the cursor's position (not when it is that chunk's last
    /// entry), then the chunks the page covers: at most 2 rounds. O(log chunks + log k +
    /// limit) for chunks of k entries.
    pub fn top<'c>(
        &self,
        parts: &'c impl Parts,
        limit: usize,
        cursor: Option<&Cursor>,
    ) -> Result<Step<Page<'c>>, QueryError>
    where
        'm: 'c,
    {
        let version = self.board_version();
        if let Some(c) = cursor
            && c.board_version != version
        {
            return Err(QueryError::StaleCursor {
                cursor_version: c.board_version,
                oldest_held: version,
                board_version: version,
            });
        }
        let mut needs = Needs(Vec::new());
        let total = self.total_players();
        // An empty page names no position, so it needs no part (and has no next cursor).
        let entries = if limit == 0 {
            Ok(Vec::new())
        } else {
            let first = match cursor {
                None => Ok(1),
                Some(c) => {
                    let at = Standing {
                        value: c.value,
                        achieved_at: c.achieved_at,
                    };
                    self.first_rank_after(parts, &at, &c.player, &mut needs)
                }
            };
            first.and_then(|first| self.range(parts, first, limit, &mut needs))
        };
        Ok(needs.step(|| Page::of(version, total, entries.unwrap_or_default())))
    }

    /// [`crate::Board::player_rank`]: the player's rank, value ranks and percentile, or `None`
    /// when unranked.
    ///
    /// Needs the player's lookup chunk, then their rank chunk and the chunk where their value
    /// starts (when that is another chunk and starts with a better value): at most 2 rounds and
    /// 3 parts. O(log chunks + log k), plus a scan of the shorter side of the player's value
    /// run when that run ends inside the chunk where it starts (at most k/2 values).
    pub fn player_rank<'c>(&self, parts: &'c impl Parts, player: &str) -> Step<Option<PlayerRank<'c>>>
    where
        'm: 'c,
    {
        let mut needs = Needs(Vec::new());
        let found = self.entry_of(parts, player, &mut needs).and_then(|found| {
            let Some(found) = found else {
                return Ok(None);
            };
            // Ask for both chunks in one round, whichever of them is missing.
            let rank = self.rank_of(parts, found, &mut needs);
            let value_ranks = self.value_ranks(parts, found.entry().value, &mut needs);
            Ok(rank?.map(|rank| (found.entry(), rank, value_ranks)))
        });
        let total = self.total_players();
        needs.step(|| {
            let (entry, rank, value_ranks) = found.ok()??;
            let (better, distinct_better) = value_ranks.ok()?;
            let percentile = if total == 0 {
                0.0
            } else {
                // As `RankedIndex::value_ranks` computes it, operation for operation.
                total.saturating_sub(better) as f64 * 100.0 / total as f64
            };
            Some(PlayerRank {
                board_version: self.board_version(),
                entry: RankedEntry {
                    rank,
                    player: &entry.player,
                    value: entry.value,
                    achieved_at: entry.achieved_at,
                    info: entry.info(),
                },
                competition_rank: better + 1,
                dense_rank: distinct_better + 1,
                percentile,
                total_players: total,
            })
        })
    }

    /// [`crate::Board::rank_interval`]: the player's rank interval, or `None` when unranked.
    ///
    /// Needs the player's lookup chunk and the sketch, in one round, and no rank chunk.
    /// O(log bounds) once held.
    pub fn player_interval<'c>(&self, parts: &'c impl Parts, player: &str) -> Step<Option<PlayerInterval<'c>>>
    where
        'm: 'c,
    {
        let mut needs = Needs(Vec::new());
        let found = match self.entry_of(parts, player, &mut needs) {
            Ok(None) => return Step::Done(None),
            found => found,
        };
        let sketch = match parts.sketch() {
            Some(sketch) => Ok(sketch),
            None => needs.missing(Part::Sketch),
        };
        needs.step(|| {
            let (entry, sketch) = (found.ok()??.entry(), sketch.ok()?);
            let standing = entry.standing();
            Some(PlayerInterval {
                board_version: self.board_version(),
                player: &entry.player,
                standing,
                info: entry.info(),
                interval: sketch.interval(&self.manifest.rules, &standing, &entry.player),
                total_players: self.total_players(),
            })
        })
    }

    /// [`crate::Board::nearby`]: the window of ranks around the player, or `None` when
    /// unranked.
    ///
    /// Needs the player's lookup chunk, then their rank chunk, then the other chunks the window
    /// covers: at most 3 rounds. O(log chunks + log k + radius).
    pub fn nearby<'c>(
        &self,
        parts: &'c impl Parts,
        player: &str,
        radius: u64,
    ) -> Step<Option<Vec<RankedEntry<'c>>>>
    where
        'm: 'c,
    {
        let mut needs = Needs(Vec::new());
        let total = self.total_players();
        let window = self.entry_of(parts, player, &mut needs).and_then(|found| {
            let Some(found) = found else {
                return Ok(None);
            };
            let Some(rank) = self.rank_of(parts, found, &mut needs)? else {
                return Ok(None);
            };
            let first = rank.saturating_sub(radius).max(1);
            let last = rank.saturating_add(radius).min(total);
            let limit = usize::try_from(last.saturating_sub(first) + 1).unwrap_or(usize::MAX);
            self.range(parts, first, limit, &mut needs).map(Some)
        });
        needs.step(|| window.ok().flatten())
    }

    /// [`crate::Board::rank_among`]: the players ranked among themselves.
    ///
    /// Needs the lookup chunk of each asked player's partition, then the rank chunk of each
    /// ranked one: at most 2 rounds, and at most one part of each kind per distinct player.
    /// O(p (log chunks + log k) + p log p) for p players.
    pub fn rank_among<'q>(&self, parts: &'q impl Parts, players: &[&'q str]) -> Step<FriendsBoard<'q>>
    where
        'm: 'q,
    {
        let mut needs = Needs(Vec::new());
        let mut ranked: Vec<(u64, &'q str, Standing, EntryInfo<'q>)> = Vec::with_capacity(players.len());
        let mut unranked: Vec<(usize, &'q str)> = Vec::new();
        for (asked_at, &player) in players.iter().enumerate() {
            // A missing part is recorded in `needs`; the other players still say what they need.
            let Ok(found) = self.entry_of(parts, player, &mut needs) else {
                continue;
            };
            let rank = match found {
                Some(found) => match self.rank_of(parts, found, &mut needs) {
                    Ok(rank) => rank.map(|rank| (rank, found.entry().standing(), found.entry().info())),
                    Err(Pending) => continue,
                },
                None => None,
            };
            match rank {
                Some((global_rank, standing, info)) => ranked.push((global_rank, player, standing, info)),
                None => unranked.push((asked_at, player)),
            }
        }
        needs.step(|| FriendsBoard::of(self.board_version(), ranked, unranked))
    }

    /// The player's entry, from the patch when it names them, else from their lookup chunk;
    /// `None` when unranked (without fetching the chunk when the manifest says it is empty).
    /// O(log k + log p).
    fn entry_of<'c>(
        &self,
        parts: &'c impl Parts,
        player: &str,
        needs: &mut Needs,
    ) -> Result<Option<Found<'c>>, Pending>
    where
        'm: 'c,
    {
        // The highest patch that names the player has their entry at the version read.
        for (level, layer) in self.layers.iter().enumerate().rev() {
            let patch: &'m ManifestPatch = layer.patch;
            let id = |j: u32| patch.inserted[j as usize].entry.player.as_bytes();
            if let Ok(k) = layer
                .by_player
                .binary_search_by(|&j| id(j).cmp(player.as_bytes()))
            {
                let j = layer.by_player[k] as usize;
                return Ok(Some(Found::Inserted(&patch.inserted[j].entry, level, j)));
            }
            if patch
                .unranked
                .binary_search_by(|p| p.as_bytes().cmp(player.as_bytes()))
                .is_ok()
            {
                return Ok(None);
            }
        }
        let partition = self.manifest.partition_of(player);
        // An empty partition holds nobody: no need to fetch it to know.
        match self.manifest.lookup_chunks.get(partition) {
            Some(chunk_ref) if chunk_ref.count > 0 => {}
            _ => return Ok(None),
        }
        match parts.lookup(partition) {
            Some(chunk) => Ok(chunk.find(player).map(Found::Base)),
            None => needs.missing(Part::Lookup(partition)),
        }
    }

    /// The rank of a found entry: a patched one's from the patch, a base one's from its rank
    /// chunk; `None` only when the parts disagree. O(log chunks + log k + log p).
    fn rank_of(
        &self,
        parts: &impl Parts,
        found: Found<'_>,
        needs: &mut Needs,
    ) -> Result<Option<u64>, Pending> {
        let entry = match found {
            Found::Inserted(_, level, j) => {
                // Its rank in its patch's view, carried up through the patches above, which
                // leave it where it is.
                let rank = self.layers.get(level).and_then(|l| l.ranks.get(j).copied());
                return Ok(rank.map(|r| self.carried_up(r, level + 1)));
            }
            Found::Base(entry) => entry,
        };
        let standing = entry.standing();
        let Some(i) = self.manifest.rank_chunk_of(&standing, &entry.player) else {
            return Ok(None);
        };
        let Some(chunk) = parts.rank(i) else {
            return needs.missing(Part::Rank(i));
        };
        let rules = &self.manifest.rules;
        let place = chunk
            .entries
            .binary_search_by(|e| rules.compare((&e.standing(), &e.player), (&standing, &entry.player)))
            .ok();
        // A place past the chunk's count in the manifest can only come from a wrong chunk.
        let count = self.manifest.rank_chunks[i].count as usize;
        let base_rank = place
            .filter(|&offset| offset < count)
            .map(|offset| self.entries_before[i] + offset as u64 + 1);
        Ok(base_rank.map(|b| self.carried_up(b, 0)))
    }

    /// The rank at the version read of an entry that ranks `rank` in the view of the lowest
    /// `level` patches and that no patch above changes. O(layers log p).
    fn carried_up(&self, rank: u64, level: usize) -> u64 {
        self.layers
            .iter()
            .skip(level)
            .fold(rank, |rank, layer| layer.rank_of_base(rank))
    }

    /// The entries and the distinct values strictly better than `value` at the version read:
    /// the base's, less what the patch took away, plus what it put in. O(log chunks + log k +
    /// log p), plus the scan described at [`SnapshotReader::player_rank`].
    fn value_ranks(&self, parts: &impl Parts, value: i64, needs: &mut Needs) -> Result<(u64, u64), Pending> {
        let base = self.base_value_ranks(parts, value, needs)?;
        let mode = self.manifest.rules.score_mode;
        let count = |n: usize| n as u64;
        Ok(self.layers.iter().fold(base, |(better, distinct), layer| {
            let patch = layer.patch;
            let removed = count(
                patch
                    .removed
                    .partition_point(|r| mode.better_value(r.value, value)),
            );
            let inserted = count(
                patch
                    .inserted
                    .partition_point(|i| mode.better_value(i.entry.value, value)),
            );
            let gone = count(
                patch
                    .values_gone
                    .partition_point(|&v| mode.better_value(v, value)),
            );
            let appeared = count(
                patch
                    .values_appeared
                    .partition_point(|&v| mode.better_value(v, value)),
            );
            (
                (better + inserted).saturating_sub(removed),
                (distinct + appeared).saturating_sub(gone),
            )
        }))
    }

    /// The base entries and distinct base values strictly better than `value`, which no base
    /// entry need hold. O(log chunks + log k), plus the scan described at
    /// [`SnapshotReader::player_rank`].
    fn base_value_ranks(
        &self,
        parts: &impl Parts,
        value: i64,
        needs: &mut Needs,
    ) -> Result<(u64, u64), Pending> {
        let chunks = &self.manifest.rank_chunks;
        let mode = self.manifest.rules.score_mode;
        // The first chunk whose last value is not better: where a run of `value` would start.
        let start = chunks.partition_point(|c| mode.better_value(c.last.value, value));
        let Some(chunk_ref) = chunks.get(start) else {
            // Every base value is better.
            return Ok((self.entries_before[start], self.values_before[start]));
        };
        let (better_entries, better_values) = if !mode.better_value(chunk_ref.first_value, value) {
            // The run starts the chunk: nothing in it is better.
            (0, 0)
        } else {
            let Some(chunk) = parts.rank(start) else {
                return needs.missing(Part::Rank(start));
            };
            let entries = &chunk.entries;
            let split = entries.partition_point(|e| mode.better_value(e.value, value));
            let distinct = u64::from(chunk_ref.distinct_values);
            let better_values = if chunk_ref.last.value == value {
                // The run ends the chunk, so every value but the last is better.
                distinct.saturating_sub(1)
            } else if split <= entries.len() - split {
                super::distinct_values(&entries[..split]).into()
            } else {
                distinct.saturating_sub(super::distinct_values(&entries[split..]).into())
            };
            (split as u64, better_values)
        };
        // The chunk's first value, when better, may run on from the previous chunk, which
        // counted it already.
        let shared = better_values > 0
            && start
                .checked_sub(1)
                .and_then(|p| chunks.get(p))
                .is_some_and(|previous| previous.last.value == chunk_ref.first_value);
        Ok((
            self.entries_before[start] + better_entries,
            (self.values_before[start] + better_values).saturating_sub(u64::from(shared)),
        ))
    }

    /// The rank at the version read of the first entry after the position `(at, player)` (one
    /// past the last rank when none is). Needs the chunk holding the position, unless the
    /// position is that chunk's last entry. O(log chunks + log k + log p).
    fn first_rank_after(
        &self,
        parts: &impl Parts,
        at: &Standing,
        player: &str,
        needs: &mut Needs,
    ) -> Result<u64, Pending> {
        let rules = &self.manifest.rules;
        let base = self.base_through(parts, at, player, needs)?;
        let through = self.layers.iter().fold(base, |through, layer| {
            let inserted = layer.patch.inserted.partition_point(|i| {
                rules.compare((&i.entry.standing(), &i.entry.player), (at, player)) != Ordering::Greater
            }) as u64;
            through - layer.removed_through(through) + inserted
        });
        Ok(through + 1)
    }

    /// The base entries at or before the position `(at, player)`. O(log chunks + log k).
    fn base_through(
        &self,
        parts: &impl Parts,
        at: &Standing,
        player: &str,
        needs: &mut Needs,
    ) -> Result<u64, Pending> {
        let rules = &self.manifest.rules;
        let Some(i) = self.manifest.rank_chunk_of(at, player) else {
            return Ok(self.manifest.total_players);
        };
        let last = &self.manifest.rank_chunks[i].last;
        if rules.compare((&last.standing(), &last.player), (at, player)) == Ordering::Equal {
            return Ok(self.entries_before[i + 1]);
        }
        let Some(chunk) = parts.rank(i) else {
            return needs.missing(Part::Rank(i));
        };
        let through = chunk.entries.partition_point(|e| {
            rules.compare((&e.standing(), &e.player), (at, player)) != Ordering::Greater
        });
        Ok(self.entries_before[i] + through as u64)
    }

    /// The entries of ranks `first ..` at the version read (at most `limit`, clipped at the
    /// last rank), asking for every base chunk they span that is not held. O(log chunks +
    /// entries (+ log p each with a patch)).
    fn range<'c>(
        &self,
        parts: &'c impl Parts,
        first: u64,
        limit: usize,
        needs: &mut Needs,
    ) -> Result<Vec<RankedEntry<'c>>, Pending>
    where
        'm: 'c,
    {
        let total = self.total_players();
        if limit == 0 || first == 0 || first > total {
            return Ok(Vec::new());
        }
        let last = first.saturating_add(limit as u64 - 1).min(total);
        self.range_at(self.layers.len(), parts, first, last, needs)
    }

    /// The entries of ranks `first ..= last` in the view of the lowest `level` patches (within
    /// it): the entries of that patch merged with the range of the view below that it keeps.
    fn range_at<'c>(
        &self,
        level: usize,
        parts: &'c impl Parts,
        first: u64,
        last: u64,
        needs: &mut Needs,
    ) -> Result<Vec<RankedEntry<'c>>, Pending>
    where
        'm: 'c,
    {
        let Some(layer) = level.checked_sub(1).and_then(|l| self.layers.get(l)) else {
            return self.base_range(parts, first, last, needs);
        };
        let ranks = &layer.ranks;
        let (j_first, j_end) = (
            ranks.partition_point(|&r| r < first),
            ranks.partition_point(|&r| r <= last),
        );
        // Kept entries of the view below ranked before `first`, and how many the window shows.
        let kept_before = first - 1 - j_first as u64;
        let kept = (last - first + 1) - (j_end - j_first) as u64;
        let below = if kept == 0 {
            Vec::new()
        } else {
            let (from, to) = (
                layer.kept_base_rank(kept_before + 1),
                layer.kept_base_rank(kept_before + kept),
            );
            if to > self.total_at(level - 1) {
                // Only a patch that is not over this view counts this past it.
                return Ok(Vec::new());
            }
            self.range_at(level - 1, parts, from, to, needs)?
        };
        // Merge the entries below (with the removed ones among them dropped) and the inserted.
        let removed = &layer.patch.removed;
        let mut removed_at = removed.partition_point(|r| below.first().is_none_or(|e| r.rank < e.rank));
        let mut below = below.into_iter().filter(move |e| {
            while removed_at < removed.len() && removed[removed_at].rank < e.rank {
                removed_at += 1;
            }
            removed.get(removed_at).is_none_or(|r| r.rank != e.rank)
        });
        let mut entries = Vec::with_capacity((last - first + 1) as usize);
        let mut j = j_first;
        for rank in first..=last {
            if j < j_end && ranks[j] == rank {
                let e = &layer.patch.inserted[j].entry;
                entries.push(RankedEntry {
                    rank,
                    player: &e.player,
                    value: e.value,
                    achieved_at: e.achieved_at,
                    info: e.info(),
                });
                j += 1;
            } else if let Some(e) = below.next() {
                entries.push(RankedEntry { rank, ..e });
            } else {
                break;
            }
        }
        Ok(entries)
    }

    /// The base entries of base ranks `first ..= last` (within the base), asking for every
    /// chunk they span that is not held. O(log chunks + entries).
    fn base_range<'c>(
        &self,
        parts: &'c impl Parts,
        first: u64,
        last: u64,
        needs: &mut Needs,
    ) -> Result<Vec<RankedEntry<'c>>, Pending> {
        let chunks = self.chunk_of_rank(first)..=self.chunk_of_rank(last);
        let mut missing = false;
        for i in chunks.clone() {
            if parts.rank(i).is_none() {
                needs.0.push(Part::Rank(i));
                missing = true;
            }
        }
        if missing {
            return Err(Pending);
        }
        let mut entries = Vec::with_capacity((last - first + 1) as usize);
        for i in chunks {
            let Some(chunk) = parts.rank(i) else {
                return Err(Pending);
            };
            let before = self.entries_before[i];
            // Offsets within the chunk of the ranks wanted, clipped to what it holds.
            let from = first.saturating_sub(before + 1) as usize;
            let to = ((last - before) as usize).min(chunk.entries.len());
            let held = chunk.entries.get(from..to).unwrap_or_default();
            entries.extend(held.iter().enumerate().map(|(k, e)| RankedEntry {
                rank: before + (from + k) as u64 + 1,
                player: &e.player,
                value: e.value,
                achieved_at: e.achieved_at,
                info: e.info(),
            }));
        }
        Ok(entries)
    }

    /// The base chunk holding base rank `rank` (1 ..= base total). O(log chunks).
    fn chunk_of_rank(&self, rank: u64) -> usize {
        // `entries_before[i + 1]` is the last rank of chunk `i`.
        self.entries_before[1..].partition_point(|&through| through < rank)
    }
}
