//! Reads within one segment (`country:DE`) from a snapshot, as [`crate::Board`]'s segment reads
//! answer them at the snapshot's version.
//!
//! Each rank chunk's ref counts its members of each segment ([`SegmentStats`]), so the members
//! before any chunk, and the distinct values among them, are prefix sums over the manifest: a
//! segment rank is the members before the player's chunk plus those before them in it, read
//! from the same chunk the board-wide rank reads. A page of segment ranks needs only the
//! chunks holding its members (the refs say which), at most one per entry. A patch does not
//! restate the chunks' members, so a segment is read from a whole manifest only (a board that
//! declares segments is published whole).

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;

use super::{Found, Needs, Parts, Pending, SnapshotReader, Step};
use crate::board::{FriendsBoard, Page, PlayerRank, SegmentFriends, SegmentPage, SegmentRank};
use crate::cursor::Cursor;
use crate::error::QueryError;
use crate::index::{RankedEntry, ValueRanks};
use crate::profile::EntryInfo;
use crate::rules::Standing;
use crate::segments::{SegmentEntry, SegmentKey};
use crate::snapshot::{Manifest, SegmentStats, SnapshotEntry};

use super::Part;

/// One segment's members counted over a manifest's rank chunks: what a segment read sums, once
/// per manifest and segment (a driver may keep it while it keeps the manifest).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentCounts {
    dimension: u8,
    value: String,
    /// Each rank chunk's place of the segment in its `segments`, if it has members.
    stats: Vec<Option<u32>>,
    /// `members_before[i]`: the members in rank chunks `0..i` (one more element than chunks).
    members_before: Vec<u64>,
    /// `values_before[i]`: the distinct values among them.
    values_before: Vec<u64>,
    /// `last_before[i]`: the value of the last of them.
    last_before: Vec<Option<i64>>,
}

impl SegmentCounts {
    /// The counts of `segment` over `manifest`'s rank chunks, or `None` when the manifest does
    /// not declare its dimension. O(chunks log s) for s segments per chunk.
    pub fn of(manifest: &Manifest, segment: &SegmentKey<'_>) -> Option<SegmentCounts> {
        let dimension = manifest.segments.dimension_of(segment.dimension)?;
        let chunks = &manifest.rank_chunks;
        let mut counts = SegmentCounts {
            dimension,
            value: segment.value.into(),
            stats: Vec::with_capacity(chunks.len()),
            members_before: Vec::with_capacity(chunks.len() + 1),
            values_before: Vec::with_capacity(chunks.len() + 1),
            last_before: Vec::with_capacity(chunks.len() + 1),
        };
        let (mut members, mut values, mut last) = (0u64, 0u64, None);
        for chunk in chunks {
            counts.members_before.push(members);
            counts.values_before.push(values);
            counts.last_before.push(last);
            let at = chunk
                .segments
                .binary_search_by(|s| (s.dimension, s.value.as_str()).cmp(&(dimension, segment.value)))
                .ok();
            if let Some(s) = at.map(|at| &chunk.segments[at]) {
                members += u64::from(s.count);
                // A value that runs on from the previous member was counted there already.
                values += u64::from(s.distinct_values) - u64::from(last == Some(s.first_value));
                last = Some(s.last_value);
            }
            counts.stats.push(at.map(|at| at as u32));
        }
        counts.members_before.push(members);
        counts.values_before.push(values);
        counts.last_before.push(last);
        Some(counts)
    }

    /// About the bytes held. O(1).
    pub fn memory(&self) -> usize {
        size_of::<SegmentCounts>()
            + self.value.capacity()
            + self.stats.capacity() * size_of::<Option<u32>>()
            + self.members_before.capacity() * 8
            + self.values_before.capacity() * 8
            + self.last_before.capacity() * size_of::<Option<i64>>()
    }
}

/// One segment of the manifest a [`SnapshotReader`] reads, through its [`SegmentCounts`].
#[derive(Clone, Copy, Debug)]
pub struct SegmentReader<'r, 'm> {
    reader: &'r SnapshotReader<'m>,
    counts: &'r SegmentCounts,
}

impl<'m> SnapshotReader<'m> {
    /// A reader of the segment `counts` counts, or `None` when this reader cannot answer it: a
    /// patch over the manifest (whose chunk counts it does not restate), or counts of another
    /// manifest. O(1).
    pub fn within<'r>(&'r self, counts: &'r SegmentCounts) -> Option<SegmentReader<'r, 'm>> {
        (self.layers.is_empty() && counts.stats.len() == self.manifest.rank_chunks.len())
            .then_some(SegmentReader { reader: self, counts })
    }
}

impl<'r, 'm> SegmentReader<'r, 'm> {
    /// The segment's members. O(1).
    pub fn total(&self) -> u64 {
        self.counts.members_before.last().copied().unwrap_or(0)
    }

    /// The members of chunk `i`, if it has any. O(1).
    fn stats(&self, i: usize) -> Option<&'m SegmentStats> {
        let at = self.counts.stats.get(i).copied().flatten()?;
        self.reader.manifest.rank_chunks.get(i)?.segments.get(at as usize)
    }

    /// Whether an entry (in public form, as snapshots hold them) is in the segment. O(length).
    fn holds(&self, entry: &SnapshotEntry) -> bool {
        let extras = entry.extras.as_ref();
        let value = self.reader.manifest.segments.value_in(
            self.counts.dimension,
            extras.and_then(|e| e.country.as_deref()),
            extras.and_then(|e| e.segments.as_deref()),
        );
        value == Some(self.counts.value.as_str())
    }

    /// [`crate::Board::segment_top`]: `limit` members from the segment's top, or after the
    /// cursor's position. A cursor made at another version is [`QueryError::StaleCursor`].
    /// Needs the chunk holding the cursor's position (not when it is that chunk's last entry),
    /// then the chunks holding the page's members: at most 2 rounds. O(log chunks + k per
    /// chunk read).
    pub fn top<'c>(
        &self,
        parts: &'c impl Parts,
        limit: usize,
        cursor: Option<&Cursor>,
    ) -> Result<Step<SegmentPage<'c>>, QueryError>
    where
        'm: 'c,
    {
        let version = self.reader.board_version();
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
        let entries = match cursor {
            None => Ok(0),
            Some(c) => self.members_through(parts, &c.standing(), &c.player, &mut needs),
        }
        .and_then(|start| self.members_from(parts, start, limit, &mut needs));
        let total = self.total();
        Ok(needs.step(|| {
            let entries = entries.unwrap_or_default();
            let next_cursor = Page::of(version, total, entries.iter().map(|e| e.entry).collect()).next_cursor;
            SegmentPage {
                board_version: version,
                total_players: total,
                entries,
                next_cursor,
            }
        }))
    }

    /// [`crate::Board::segment_rank`]: the player's rank, value ranks and percentile among the
    /// segment's members and their board-wide rank; `None` when unranked or not in the segment.
    /// Needs the player's lookup chunk, then their rank chunk and the chunk where their value's
    /// run starts: at most 2 rounds and 3 parts.
    pub fn rank<'c>(&self, parts: &'c impl Parts, player: &str) -> Step<Option<SegmentRank<'c>>>
    where
        'm: 'c,
    {
        let mut needs = Needs(Vec::new());
        let found = self.place_of(parts, player, &mut needs).and_then(|place| {
            let Some((entry, global, position)) = place else {
                return Ok(None);
            };
            Ok(Some((
                entry,
                global,
                position,
                self.value_ranks(parts, entry.value, &mut needs)?,
            )))
        });
        let total = self.total();
        needs.step(|| {
            let (entry, global_rank, position, (better, distinct)) = found.ok()??;
            let ranks = ValueRanks::of(better as usize, distinct as usize, total as usize);
            Some(SegmentRank {
                within: PlayerRank {
                    board_version: self.reader.board_version(),
                    entry: ranked(entry, position + 1),
                    competition_rank: ranks.competition_rank,
                    dense_rank: ranks.dense_rank,
                    percentile: ranks.percentile,
                    total_players: total,
                },
                global_rank,
            })
        })
    }

    /// [`crate::Board::segment_nearby`]: the segment ranks within `radius` of the player's,
    /// clipped at the segment's ends; `None` when unranked or not in the segment. Needs the
    /// player's lookup chunk, then their rank chunk, then the chunks holding the window's
    /// members: at most 3 rounds.
    pub fn nearby<'c>(
        &self,
        parts: &'c impl Parts,
        player: &str,
        radius: u64,
    ) -> Step<Option<Vec<SegmentEntry<'c>>>>
    where
        'm: 'c,
    {
        let mut needs = Needs(Vec::new());
        let window = self.place_of(parts, player, &mut needs).and_then(|place| {
            let Some((_, _, position)) = place else {
                return Ok(None);
            };
            let first = position.saturating_sub(radius);
            // Saturating: counts that disagree with the chunks answer wrongly, never panic.
            let last = position
                .saturating_add(radius)
                .min(self.total().saturating_sub(1));
            let limit = usize::try_from(last.saturating_sub(first) + 1).unwrap_or(usize::MAX);
            self.members_from(parts, first, limit, &mut needs).map(Some)
        });
        needs.step(|| window.ok().flatten())
    }

    /// [`crate::Board::segment_among`]: the asked players in the segment ranked among
    /// themselves, each with its segment rank and board-wide rank, the others unranked in the
    /// order asked. Needs each asked player's lookup chunk, then each member's rank chunk: at
    /// most 2 rounds.
    pub fn among<'q>(&self, parts: &'q impl Parts, players: &[&'q str]) -> Step<SegmentFriends<'q>>
    where
        'm: 'q,
    {
        let mut needs = Needs(Vec::new());
        let mut ranked: Vec<(u64, &'q str, Standing, EntryInfo<'q>)> = Vec::with_capacity(players.len());
        let mut unranked = Vec::new();
        let mut positions: BTreeMap<u64, u64> = BTreeMap::new();
        for (asked_at, &player) in players.iter().enumerate() {
            // A missing part is recorded in `needs`; the other players still say what they need.
            let Ok(place) = self.place_of(parts, player, &mut needs) else {
                continue;
            };
            match place {
                Some((entry, global, position)) => {
                    positions.insert(global, position + 1);
                    ranked.push((global, player, entry.standing(), entry.info()));
                }
                None => unranked.push((asked_at, player)),
            }
        }
        needs.step(|| {
            let board = FriendsBoard::of(self.reader.board_version(), ranked, unranked);
            let segment_ranks = board
                .entries
                .iter()
                .map(|e| positions.get(&e.global_rank).copied().unwrap_or(0))
                .collect();
            SegmentFriends { board, segment_ranks }
        })
    }

    /// A member's entry, board-wide rank and 0-based place among the segment's members; `None`
    /// when unranked or not in the segment. O(log chunks + k).
    fn place_of<'c>(
        &self,
        parts: &'c impl Parts,
        player: &str,
        needs: &mut Needs,
    ) -> Result<Option<(&'c SnapshotEntry, u64, u64)>, Pending>
    where
        'm: 'c,
    {
        let entry = match self.reader.entry_of(parts, player, needs)? {
            Some(Found::Base(entry)) if self.holds(entry) => entry,
            _ => return Ok(None),
        };
        let manifest = self.reader.manifest;
        let standing = entry.standing();
        let Some(i) = manifest.rank_chunk_of(&standing, &entry.player) else {
            return Ok(None);
        };
        let Some(chunk) = parts.rank(i) else {
            return needs.missing(Part::Rank(i));
        };
        let rules = &manifest.rules;
        let Ok(offset) = chunk
            .entries
            .binary_search_by(|e| rules.compare((&e.standing(), &e.player), (&standing, &entry.player)))
        else {
            return Ok(None);
        };
        let before = chunk.entries[..offset].iter().filter(|e| self.holds(e)).count() as u64;
        Ok(Some((
            entry,
            self.reader.entries_before[i] + offset as u64 + 1,
            self.counts.members_before[i] + before,
        )))
    }

    /// The members at or before the position `(at, player)`. Needs the chunk holding it,
    /// unless it is that chunk's last entry. O(log chunks + k).
    fn members_through(
        &self,
        parts: &impl Parts,
        at: &Standing,
        player: &str,
        needs: &mut Needs,
    ) -> Result<u64, Pending> {
        let manifest = self.reader.manifest;
        let rules = &manifest.rules;
        let Some(i) = manifest.rank_chunk_of(at, player) else {
            return Ok(self.total());
        };
        let last = &manifest.rank_chunks[i].last;
        if rules.compare((&last.standing(), &last.player), (at, player)) == Ordering::Equal {
            return Ok(self.counts.members_before[i + 1]);
        }
        if self.stats(i).is_none() {
            return Ok(self.counts.members_before[i]);
        }
        let Some(chunk) = parts.rank(i) else {
            return needs.missing(Part::Rank(i));
        };
        let through = chunk
            .entries
            .iter()
            .take_while(|e| rules.compare((&e.standing(), &e.player), (at, player)) != Ordering::Greater)
            .filter(|e| self.holds(e))
            .count();
        Ok(self.counts.members_before[i] + through as u64)
    }

    /// Up to `limit` members from the 0-based place `start`, each with its segment rank and
    /// board-wide rank, asking for every chunk holding one that is not held. O(log chunks +
    /// k per chunk read).
    fn members_from<'c>(
        &self,
        parts: &'c impl Parts,
        start: u64,
        limit: usize,
        needs: &mut Needs,
    ) -> Result<Vec<SegmentEntry<'c>>, Pending>
    where
        'm: 'c,
    {
        let total = self.total();
        if limit == 0 || start >= total {
            return Ok(Vec::new());
        }
        let end = start.saturating_add(limit as u64).min(total);
        // The chunks holding places `start` and `end - 1`, and those between with members.
        let through = &self.counts.members_before[1..];
        let (first, last) = (
            through.partition_point(|&m| m <= start),
            through.partition_point(|&m| m < end),
        );
        let chunks: Vec<usize> = (first..=last).filter(|&i| self.stats(i).is_some()).collect();
        let mut missing = false;
        for &i in &chunks {
            if parts.rank(i).is_none() {
                needs.0.push(Part::Rank(i));
                missing = true;
            }
        }
        if missing {
            return Err(Pending);
        }
        let mut entries = Vec::with_capacity((end - start) as usize);
        for i in chunks {
            let Some(chunk) = parts.rank(i) else {
                return Err(Pending);
            };
            let mut place = self.counts.members_before[i];
            for (offset, e) in chunk.entries.iter().enumerate() {
                if place >= end {
                    break;
                }
                if !self.holds(e) {
                    continue;
                }
                if place >= start {
                    entries.push(SegmentEntry {
                        entry: ranked(e, place + 1),
                        global_rank: self.reader.entries_before[i] + offset as u64 + 1,
                    });
                }
                place += 1;
            }
        }
        Ok(entries)
    }

    /// The members with a value strictly better than `value`, and the distinct values among
    /// them: the members before the chunk where a run of `value` would start, plus those
    /// before it in that chunk (read only when its first member is better). O(log chunks + k).
    fn value_ranks(&self, parts: &impl Parts, value: i64, needs: &mut Needs) -> Result<(u64, u64), Pending> {
        let manifest = self.reader.manifest;
        let mode = manifest.rules.score_mode;
        let start = manifest
            .rank_chunks
            .partition_point(|c| mode.better_value(c.last.value, value));
        let (members, values) = (
            self.counts.members_before[start],
            self.counts.values_before[start],
        );
        let Some(stats) = self.stats(start) else {
            return Ok((members, values));
        };
        if !mode.better_value(stats.first_value, value) {
            return Ok((members, values));
        }
        let Some(chunk) = parts.rank(start) else {
            return needs.missing(Part::Rank(start));
        };
        let better: Vec<i64> = chunk
            .entries
            .iter()
            .take_while(|e| mode.better_value(e.value, value))
            .filter(|e| self.holds(e))
            .map(|e| e.value)
            .collect();
        let runs = better.chunk_by(|a, b| a == b).count() as u64;
        // The first better value may run on from the members before the chunk.
        let shared = !better.is_empty() && better.first().copied() == self.counts.last_before[start];
        Ok((members + better.len() as u64, values + runs - u64::from(shared)))
    }
}

/// A snapshot entry ranked `rank`. O(1).
fn ranked(entry: &SnapshotEntry, rank: u64) -> RankedEntry<'_> {
    RankedEntry {
        rank,
        player: &entry.player,
        value: entry.value,
        achieved_at: entry.achieved_at,
        info: entry.info(),
    }
}
