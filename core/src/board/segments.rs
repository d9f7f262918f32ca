//! Reads within one segment (`country:DE`): the same answers as the board's own, ranked among
//! the segment's members, each entry with its board-wide rank too, all at the current version.

use super::at_version::ChangedSince;
use super::*;
use crate::index::ValueRanks;
use crate::segments::{SegmentEntry, SegmentKey, SegmentSpec, probe};
use crate::tree::Tree;

/// A page of a segment's top, all from one version.
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentPage<'a> {
    /// The version every entry comes from.
    pub board_version: u64,
    /// The segment's members.
    pub total_players: u64,
    /// The entries, in rank order, ranked within the segment.
    pub entries: Vec<SegmentEntry<'a>>,
    /// Where the next page starts, when there is one.
    pub next_cursor: Option<Cursor>,
}

/// A player's standing within a segment: every way of counting their place among its members,
/// and their board-wide rank.
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentRank<'a> {
    /// The rank answer counted within the segment (`total_players` its members).
    pub within: PlayerRank<'a>,
    /// The rank on the whole board.
    pub global_rank: u64,
}

/// Asked players ranked among themselves within a segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentFriends<'q> {
    /// The asked players in the segment: `rank` among them, `global_rank` board-wide.
    pub board: FriendsBoard<'q>,
    /// Each entry's rank within the whole segment, in the order of `board.entries`.
    pub segment_ranks: Vec<u64>,
}

impl Board {
    /// Declares the segments the board ranks and builds them from its entries (an empty spec
    /// drops them). Answers, versions and the digest stay the same. O(m log m) for the m
    /// ranked members with a profile or metadata.
    pub fn declare_segments(&mut self, spec: SegmentSpec) {
        if spec.is_empty() {
            self.segments = None;
            return;
        }
        let mut segments = Segments::new(spec);
        let index = &self.index;
        segments.load(
            index.names(),
            self.rules.score_mode,
            self.extras
                .iter()
                .filter_map(|(&member, extras)| Some((member, index.standing_of(member)?, extras))),
        );
        self.segments = Some(Box::new(segments));
    }

    /// Whether the board declares any segment dimension. O(1).
    pub fn declares_segments(&self) -> bool {
        self.segments.is_some()
    }

    /// The segments the board declares (empty when none). O(1).
    pub fn segment_spec(&self) -> SegmentSpec {
        self.segments
            .as_ref()
            .map(|s| s.spec().clone())
            .unwrap_or_default()
    }

    /// Each segment with members and how many, by dimension then value. O(s).
    pub fn segment_counts(&self) -> Vec<(SegmentKey<'_>, u64)> {
        self.segments.iter().flat_map(|s| s.counts()).collect()
    }

    /// Bytes the segments hold beyond the board. O(s).
    pub fn segment_memory(&self) -> usize {
        self.segments.as_ref().map_or(0, |s| s.memory())
    }

    fn segment_tree(&self, segment: &SegmentKey<'_>) -> Option<&Tree> {
        self.segments.as_ref()?.tree(segment)
    }

    /// The members of a segment (0 for a segment nobody is in). O(log s).
    pub fn segment_members(&self, segment: &SegmentKey<'_>) -> u64 {
        self.segment_tree(segment).map_or(0, |t| t.len() as u64)
    }

    /// Up to `limit` entries of a segment from its 0-based `start`, dressed, each with its
    /// board-wide rank. O(log n) per entry.
    fn segment_range(&self, tree: &Tree, start: usize, limit: usize) -> Vec<SegmentEntry<'_>> {
        let mut keys = Vec::with_capacity(limit.min(tree.len()));
        tree.range(start, limit, &mut keys);
        keys.into_iter()
            .enumerate()
            .map(|(i, key)| {
                let mut entry = self.index.entry(start + i, key);
                entry.info = self.info_of(key.member);
                SegmentEntry {
                    entry,
                    global_rank: self.index.rank_of(key.member).unwrap_or(0),
                }
            })
            .collect()
    }

    /// A page of a segment's top after the cursor's position (from its top without one), all
    /// from the cursor's version. At the current version O(log n + limit log n). A cursor made
    /// at an older version that is still held pages that version's segment exactly, as
    /// [`Board::top`] pages the board: membership, segment ranks and global ranks as they were
    /// (see [`Board::segment_page_at`]); any other is refused with [`QueryError::StaleCursor`].
    pub fn segment_top(
        &self,
        segment: &SegmentKey<'_>,
        limit: usize,
        cursor: Option<&Cursor>,
    ) -> Result<SegmentPage<'_>, QueryError> {
        if let Some(c) = cursor
            && c.board_version != self.version
        {
            return self.segment_page_at(segment, c.board_version, limit, (c.standing(), c.player.as_str()));
        }
        let Some(tree) = self.segment_tree(segment) else {
            return Ok(SegmentPage {
                board_version: self.version,
                total_players: 0,
                entries: Vec::new(),
                next_cursor: None,
            });
        };
        let start = cursor.map_or(0, |c| {
            let at = probe(self.rules.score_mode, &c.standing(), c.player.as_str());
            tree.count_before(self.index.names(), &at, true)
        });
        let entries = self.segment_range(tree, start, limit);
        let total = tree.len() as u64;
        let next_cursor =
            Page::of(self.version, total, entries.iter().map(|e| e.entry).collect()).next_cursor;
        Ok(SegmentPage {
            board_version: self.version,
            total_players: total,
            entries,
            next_cursor,
        })
    }

    /// Up to `limit` entries of a segment after the position `after`, in the order of the older
    /// `version`: the segment's current members who did not change since, merged with the
    /// changed players who were in it then (by their standing and extras then). Each segment
    /// rank counts on from the position's; each global rank is the entry's rank at `version`.
    /// O(c log c + log n + limit log n) for the c deltas since `version`.
    fn segment_page_at(
        &self,
        segment: &SegmentKey<'_>,
        version: u64,
        limit: usize,
        after: (Standing, &str),
    ) -> Result<SegmentPage<'_>, QueryError> {
        let Some(deltas) = self.deltas_since(version) else {
            return Err(QueryError::StaleCursor {
                cursor_version: version,
                oldest_held: self.oldest_held_version(),
                board_version: self.version,
            });
        };
        let rules = &self.rules;
        let changed = ChangedSince::new(self, deltas.clone());
        let tree = self.segment_tree(segment);
        let segments = self.segments.as_deref();
        let holds = |extras: &Extras| segments.is_some_and(|s| s.holds(segment, Some(extras)));
        // The changed players in the segment then (their first delta's `before`) and now
        // (their last delta's `after`), each by the board's order.
        let mut named: Vec<&Delta> = deltas.collect();
        named.sort_by(|a, b| a.player.as_str().as_bytes().cmp(b.player.as_str().as_bytes()));
        let (mut then, mut now) = (Vec::new(), Vec::new());
        for run in named.chunk_by(|a, b| a.player == b.player) {
            let (Some(first), Some(last)) = (run.first(), run.last()) else {
                continue;
            };
            if let Some(at) = first.before
                && holds(&first.extras_before)
            {
                then.push((at, first.player.as_str(), self.shown(&first.extras_before)));
            }
            if let Some(at) = last.after
                && holds(&last.extras_after)
            {
                now.push((at, last.player.as_str()));
            }
        }
        then.sort_unstable_by(|a, b| rules.compare((&a.0, a.1), (&b.0, b.1)));
        now.sort_unstable_by(|a, b| rules.compare((&a.0, a.1), (&b.0, b.1)));
        let (at, player) = after;
        let through =
            |standing: &Standing, p: &str| rules.compare((standing, p), (&at, player)) != Ordering::Greater;
        let now_through = now.partition_point(|(s, p)| through(s, p));
        let then_through = then.partition_point(|(s, p, _)| through(s, p));
        let current_through = tree.map_or(0, |t| {
            t.count_before(self.index.names(), &probe(rules.score_mode, &at, player), true)
        });
        let ranked_through = (current_through - now_through) as u64 + then_through as u64;
        // The segment's current members after the position, skipping the changed ones (which
        // sit among them in the order of `now`), then merged with those it held then.
        let mut unchanged: Vec<RankedEntry<'_>> = Vec::new();
        let (mut next, mut now_next) = (current_through, now_through);
        while let Some(tree) = tree
            && unchanged.len() < limit
        {
            let mut keys = Vec::new();
            tree.range(next, limit - unchanged.len(), &mut keys);
            if keys.is_empty() {
                break;
            }
            next += keys.len();
            for key in keys {
                let p = self.index.player(key.member);
                if now.get(now_next).is_some_and(|&(_, q)| q == p) {
                    now_next += 1;
                } else {
                    let mut entry = self.index.entry(0, key);
                    entry.info = self.info_of(key.member);
                    unchanged.push(entry);
                }
            }
        }
        let mut earlier = then[then_through..].iter().peekable();
        let mut current = unchanged.into_iter().peekable();
        let mut entries = Vec::with_capacity(limit.min(tree.map_or(0, Tree::len) + then.len()));
        while entries.len() < limit {
            let from_then = match (current.peek(), earlier.peek()) {
                (Some(c), Some(&&(s, p, _))) => {
                    rules.compare((&s, p), (&c.standing(), c.player)) == Ordering::Less
                }
                (None, Some(_)) => true,
                (Some(_), None) => false,
                (None, None) => break,
            };
            let mut entry = if from_then {
                let Some(&(s, p, info)) = earlier.next() else {
                    break;
                };
                RankedEntry {
                    rank: 0,
                    player: p,
                    value: s.value,
                    achieved_at: s.achieved_at,
                    info,
                }
            } else {
                let Some(c) = current.next() else {
                    break;
                };
                c
            };
            entry.rank = ranked_through + entries.len() as u64 + 1;
            let (then_before, now_before) = changed.before(rules, &entry.standing(), entry.player);
            let global_rank = self.index.count_before(&entry.standing(), entry.player, false)
                - now_before as u64
                + then_before as u64
                + 1;
            entries.push(SegmentEntry { entry, global_rank });
        }
        let total = tree.map_or(0, |t| t.len() as u64) - now.len() as u64 + then.len() as u64;
        let next_cursor = Page::of(version, total, entries.iter().map(|e| e.entry).collect()).next_cursor;
        Ok(SegmentPage {
            board_version: version,
            total_players: total,
            entries,
            next_cursor,
        })
    }

    /// A ranked member in `segment`, with its standing and segment tree. O(log m).
    fn in_segment(&self, segment: &SegmentKey<'_>, player: &str) -> Option<(MemberId, Standing, &Tree)> {
        let member = self.index.member(player)?;
        let standing = self.index.standing_of(member)?;
        let segments = self.segments.as_ref()?;
        if !segments.holds(segment, self.extras.get(&member)) {
            return None;
        }
        Some((member, standing, segments.tree(segment)?))
    }

    /// A member's 0-based position in a segment's tree. O(log n).
    fn segment_position(&self, tree: &Tree, member: MemberId, standing: &Standing) -> usize {
        let at = probe(self.rules.score_mode, standing, self.index.player(member));
        tree.count_before(self.index.names(), &at, false)
    }

    /// A player's rank within a segment, with value ranks among its members and their
    /// board-wide rank; `None` when unranked or not in the segment. O(log n).
    pub fn segment_rank(&self, segment: &SegmentKey<'_>, player: &str) -> Option<SegmentRank<'_>> {
        let (member, standing, tree) = self.in_segment(segment, player)?;
        let position = self.segment_position(tree, member, &standing);
        let (better, distinct) = tree.count_below_order(self.rules.score_mode.order_key(standing.value));
        let value_ranks = ValueRanks::of(better, distinct, tree.len());
        Some(SegmentRank {
            within: self.rank_answer(
                member,
                standing,
                position as u64 + 1,
                value_ranks,
                tree.len() as u64,
            ),
            global_rank: self.index.rank_of(member)?,
        })
    }

    /// The window of segment ranks `rank - radius ..= rank + radius` around a player, clipped
    /// at the segment's ends; `None` when unranked or not in the segment. O((radius + 1) log n).
    pub fn segment_nearby(
        &self,
        segment: &SegmentKey<'_>,
        player: &str,
        radius: u64,
    ) -> Option<Vec<SegmentEntry<'_>>> {
        let (member, standing, tree) = self.in_segment(segment, player)?;
        let position = self.segment_position(tree, member, &standing) as u64;
        let first = position.saturating_sub(radius);
        let last = position.saturating_add(radius).min(tree.len() as u64 - 1);
        let limit = usize::try_from(last - first + 1).unwrap_or(usize::MAX);
        Some(self.segment_range(tree, usize::try_from(first).ok()?, limit))
    }

    /// The asked players in a segment ranked among themselves, each with its segment rank and
    /// board-wide rank; the others (unranked, or not in the segment) are listed as unranked,
    /// in the order asked. O(k log n + k log k) for k players.
    pub fn segment_among<'q>(&'q self, segment: &SegmentKey<'_>, players: &[&'q str]) -> SegmentFriends<'q> {
        let mut ranked = Vec::with_capacity(players.len());
        let mut unranked = Vec::new();
        let mut positions: BTreeMap<u64, u64> = BTreeMap::new();
        for (asked_at, &player) in players.iter().enumerate() {
            let found = self
                .in_segment(segment, player)
                .and_then(|(member, standing, tree)| {
                    let global = self.index.rank_of(member)?;
                    positions.insert(global, self.segment_position(tree, member, &standing) as u64 + 1);
                    Some((global, player, standing, self.info_of(member)))
                });
            match found {
                Some(entry) => ranked.push(entry),
                None => unranked.push((asked_at, player)),
            }
        }
        let board = FriendsBoard::of(self.version, ranked, unranked);
        let segment_ranks = board
            .entries
            .iter()
            .map(|e| positions.get(&e.global_rank).copied().unwrap_or(0))
            .collect();
        SegmentFriends { board, segment_ranks }
    }

    /// Checks the segment trees' invariants and that they hold exactly the members the board's
    /// entries place in them. For tests. O(n log n).
    #[cfg(test)]
    pub(crate) fn check_segments(&self) {
        let Some(segments) = self.segments.as_ref() else {
            return;
        };
        segments.check(self.index.names());
        let mut rebuilt = Segments::new(segments.spec().clone());
        rebuilt.load(
            self.index.names(),
            self.rules.score_mode,
            self.extras
                .iter()
                .filter_map(|(&m, e)| Some((m, self.index.standing_of(m)?, e))),
        );
        let held: Vec<_> = segments.counts().collect();
        let expected: Vec<_> = rebuilt.counts().collect();
        assert_eq!(held, expected, "segment members");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segments::COUNTRY;

    /// Thousands of members moving between three countries, in and out of the board: the
    /// segment trees split and merge, stay sound, and rank as the board filtered.
    #[test]
    fn large_segments_stay_exact_through_moves() {
        let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
        board.declare_segments(SegmentSpec {
            country: true,
            events: Vec::new(),
        });
        let countries: Vec<Arc<Profile>> = ["DE", "FR", "JP"]
            .iter()
            .map(|c| {
                Arc::new(Profile {
                    display_name: None,
                    country: Some((*c).into()),
                    anonymous: false,
                })
            })
            .collect();
        let mut seed: u64 = 7;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % n
        };
        for i in 0..20_000u64 {
            let player = PlayerId::new(&alloc::format!("p{}", next(3_000))).unwrap();
            match next(10) {
                0 => {
                    board.set_profile(&player, Some(countries[next(3) as usize].clone()));
                }
                1 => {
                    board.recompute_player(&player, []).unwrap();
                }
                _ => {
                    let event = ScoreEvent {
                        event_id: crate::EventId::new(&alloc::format!("e{i}")).unwrap(),
                        player,
                        value: next(500) as i64,
                        achieved_at: next(50) as i64,
                        metadata: None,
                        segments: None,
                    };
                    board
                        .apply_as(&event, Some(&countries[next(3) as usize]))
                        .unwrap();
                }
            }
        }
        board.check_segments();
        let all = board.ranked_range(1, board.total_players() as usize);
        for country in ["DE", "FR", "JP"] {
            let segment = SegmentKey {
                dimension: COUNTRY,
                value: country,
            };
            let members: Vec<_> = all.iter().filter(|e| e.info.country == Some(country)).collect();
            assert!(members.len() > 500, "the segment's tree has split");
            assert_eq!(board.segment_members(&segment), members.len() as u64);
            for (i, entry) in members.iter().enumerate().step_by(37) {
                let found = board.segment_rank(&segment, entry.player).unwrap();
                assert_eq!(found.within.entry.rank, i as u64 + 1);
                assert_eq!(found.global_rank, entry.rank);
            }
        }
    }
}
