//! Answering at a version other than the current one: a top page at the version a cursor was
//! made at, and a nearby window then, from the deltas the board still holds (the module
//! documentation of `board` says how).

use super::*;

impl Board {
    /// A page of the top: `limit` entries after the cursor's position (from the top at the
    /// current version without one), all from the cursor's version.
    ///
    /// A cursor made at the current version pages the board as it is: O(log n + limit). A
    /// cursor made at an older version that is still held (at least
    /// [`Board::oldest_held_version`]) pages in that version's order, exactly as if the board
    /// were still there: the same entries, ranks and `total_players`, `board_version` set to the
    /// cursor's and a `next_cursor` at that same version. That costs O(c log c + log n + limit)
    /// for the c deltas since the cursor's version, plus O(log n) per changed player that sits
    /// among the entries read. Any other cursor is refused with [`QueryError::StaleCursor`], so a
    /// page never silently skips or repeats.
    pub fn top(&self, limit: usize, cursor: Option<&Cursor>) -> Result<Page<'_>, QueryError> {
        match cursor {
            None => self.page_at(self.version, limit, None),
            Some(c) => self.page_at(c.board_version, limit, Some((c.standing(), c.player.as_str()))),
        }
    }

    /// The first page of the top as of `board_version`, which must be held (from
    /// [`Board::oldest_held_version`] to [`Board::version`]); otherwise
    /// [`QueryError::StaleCursor`]. Its `next_cursor` continues at that version through
    /// [`Board::top`]. Costs as [`Board::top`].
    pub fn top_at(&self, board_version: u64, limit: usize) -> Result<Page<'_>, QueryError> {
        self.page_at(board_version, limit, None)
    }

    /// Up to `limit` entries after the position `after` (from the top without one) in the order
    /// of `version`.
    fn page_at(
        &self,
        version: u64,
        limit: usize,
        after: Option<(Standing, &str)>,
    ) -> Result<Page<'_>, QueryError> {
        if version == self.version {
            let first = match after {
                None => 1,
                Some((at, player)) => self.index.count_before(&at, player, true) + 1,
            };
            let mut entries = self.index.range(first, limit);
            self.dress(&mut entries);
            return Ok(Page::of(version, self.total_players(), entries));
        }
        let Some(deltas) = self.deltas_since(version) else {
            return Err(QueryError::StaleCursor {
                cursor_version: version,
                oldest_held: self.oldest_held_version(),
                board_version: self.version,
            });
        };
        let changed = ChangedSince::new(self, deltas);
        let rules = &self.rules;
        // Where the page starts: `ranked_through` players sit at or before the position at
        // `version`; `first_current` is the first current rank after it; `now_next` and
        // `then_next` index the first changed players after it, by their standing now and then.
        let (ranked_through, first_current, mut now_next, then_next) = match after {
            None => (0, 1, 0, 0),
            Some((at, player)) => {
                let current_through = self.index.count_before(&at, player, true);
                let now_through = changed.now_through(rules, &at, player);
                let then_through = changed.then_through(rules, &at, player);
                // At `version`, the players at or before the position are the current ones that
                // did not change since, plus the changed ones by their standing back then.
                let unchanged_through = current_through - now_through as u64;
                (
                    unchanged_through + then_through as u64,
                    current_through + 1,
                    now_through,
                    then_through,
                )
            }
        };
        // The current entries after the position whose player did not change since `version`
        // are exactly where they were at `version`. Read `limit` of them, skipping the changed
        // players, which sit among the current entries in the same order as in `changed.now`.
        let mut unchanged: Vec<RankedEntry<'_>> = Vec::with_capacity(limit.min(self.index.len()));
        let mut next_current = first_current;
        while unchanged.len() < limit {
            let mut batch = self.index.range(next_current, limit - unchanged.len());
            self.dress(&mut batch);
            if batch.is_empty() {
                break;
            }
            next_current += batch.len() as u64;
            for entry in batch {
                if changed.now.get(now_next).is_some_and(|&(_, p)| p == entry.player) {
                    now_next += 1;
                } else {
                    unchanged.push(entry);
                }
            }
        }
        // Merge them with the changed players ranked at `version`, in the board's order. The
        // page is a contiguous run of that order, so ranks count on from the position.
        let mut then = changed.then[then_next..]
            .iter()
            .zip(&changed.then_info[then_next..])
            .peekable();
        let mut current = unchanged.into_iter().peekable();
        let mut entries = Vec::with_capacity(limit.min(self.index.len() + changed.then.len()));
        while entries.len() < limit {
            let from_then = match (current.peek(), then.peek()) {
                (Some(c), Some(&(&(at, player), _))) => {
                    rules.compare((&at, player), (&c.standing(), c.player)) == Ordering::Less
                }
                (None, Some(_)) => true,
                (Some(_), None) => false,
                (None, None) => break,
            };
            let rank = ranked_through + entries.len() as u64 + 1;
            let entry = if from_then {
                let Some((&(at, player), &info)) = then.next() else {
                    break;
                };
                RankedEntry {
                    rank,
                    player,
                    value: at.value,
                    achieved_at: at.achieved_at,
                    info,
                }
            } else {
                let Some(c) = current.next() else {
                    break;
                };
                RankedEntry { rank, ..c }
            };
            entries.push(entry);
        }
        let total = self.total_players() - changed.now.len() as u64 + changed.then.len() as u64;
        Ok(Page::of(version, total, entries))
    }

    /// A player's rank, value and value-ranks, or `None` when unranked. O(log n).
    pub fn player_rank(&self, player: &str) -> Option<PlayerRank<'_>> {
        let member = self.index.member(player)?;
        let rank = self.index.rank_of(member)?;
        let standing = self.index.standing_of(member)?;
        let value_ranks = self.index.value_ranks(standing.value);
        Some(self.rank_answer(member, standing, rank, value_ranks, self.total_players()))
    }

    /// A member's rank answer at the current version: `rank` and `value_ranks` counted among
    /// `total` players (the board's, or a segment's). O(log m) for its extras.
    pub(super) fn rank_answer(
        &self,
        member: MemberId,
        standing: Standing,
        rank: u64,
        value_ranks: crate::index::ValueRanks,
        total: u64,
    ) -> PlayerRank<'_> {
        PlayerRank {
            board_version: self.version,
            entry: RankedEntry {
                rank,
                player: self.index.player(member),
                value: standing.value,
                achieved_at: standing.achieved_at,
                info: self.info_of(member),
            },
            competition_rank: value_ranks.competition_rank,
            dense_rank: value_ranks.dense_rank,
            percentile: value_ranks.percentile,
            total_players: total,
        }
    }

    /// The window of ranks `rank - radius ..= rank + radius` around a player, clipped at the
    /// ends, or `None` when the player is unranked. O(log n + radius).
    pub fn nearby(&self, player: &str, radius: u64) -> Option<Vec<RankedEntry<'_>>> {
        let rank = self.index.rank_of_player(player)?;
        let first = rank.saturating_sub(radius).max(1);
        let last = rank.saturating_add(radius).min(self.total_players());
        let limit = usize::try_from(last - first + 1).unwrap_or(usize::MAX);
        let mut entries = self.index.range(first, limit);
        self.dress(&mut entries);
        Some(entries)
    }

    /// The window around a player as [`Board::nearby`] gave it at `board_version`, which must be
    /// held (from [`Board::oldest_held_version`] to [`Board::version`]; otherwise
    /// [`QueryError::StaleCursor`]); `Ok(None)` when the player was unranked then. Radius 0 is the
    /// player's own entry. At the current version it is [`Board::nearby`]; at an older one it
    /// costs O(c log c + log n + radius + c) for the c deltas since, like [`Board::top_at`].
    pub fn nearby_at(
        &self,
        board_version: u64,
        player: &str,
        radius: u64,
    ) -> Result<Option<Vec<RankedEntry<'_>>>, QueryError> {
        if board_version == self.version {
            return Ok(self.nearby(player, radius));
        }
        let Some(deltas) = self.deltas_since(board_version) else {
            return Err(QueryError::StaleCursor {
                cursor_version: board_version,
                oldest_held: self.oldest_held_version(),
                board_version: self.version,
            });
        };
        // The player's standing then: the `before` of the first delta naming them, or their
        // current one when no delta since names them.
        let (own, then, own_info) = match deltas.clone().find(|d| d.player.as_str() == player) {
            Some(first) => (
                first.player.as_str(),
                first.before,
                self.shown(&first.extras_before),
            ),
            None => match self.index.member(player) {
                Some(member) => (
                    self.index.player(member),
                    self.index.standing_of(member),
                    self.info_of(member),
                ),
                None => return Ok(None),
            },
        };
        let Some(at) = then else {
            return Ok(None);
        };
        let changed = ChangedSince::new(self, deltas);
        let rules = &self.rules;
        let strictly_before = |sorted: &[(Standing, &str)]| {
            sorted.partition_point(|(s, p)| rules.compare((s, p), (&at, own)) == Ordering::Less)
        };
        // At that version, the players before the position are the current ones that did not
        // change since, plus the changed ones by their standing back then.
        let current_before = self.index.count_before(&at, own, false);
        let now_before = strictly_before(&changed.now);
        let then_before = strictly_before(&changed.then);
        let rank = current_before - now_before as u64 + then_before as u64 + 1;
        let want = usize::try_from(radius.min(rank - 1)).unwrap_or(usize::MAX);
        // The `want` entries just before it: among the last unchanged current entries before the
        // position (at most `now_before` of those read are changed players, skipped) and the
        // last changed players before it by their standing then.
        let is_changed = |e: &RankedEntry<'_>| {
            let s = e.standing();
            changed
                .now
                .binary_search_by(|(cs, cp)| rules.compare((cs, cp), (&s, e.player)))
                .is_ok()
        };
        let span = (want + now_before) as u64;
        let first_read = current_before.saturating_sub(span) + 1;
        let read = usize::try_from(current_before + 1 - first_read).unwrap_or(usize::MAX);
        let mut before: Vec<RankedEntry<'_>> = self
            .index
            .range(first_read, read)
            .into_iter()
            .filter(|e| !is_changed(e))
            .collect();
        self.dress(&mut before);
        before.extend(
            changed.then[..then_before]
                .iter()
                .zip(&changed.then_info[..then_before])
                .map(|(&(s, p), &info)| RankedEntry {
                    rank: 0,
                    player: p,
                    value: s.value,
                    achieved_at: s.achieved_at,
                    info,
                }),
        );
        before.sort_unstable_by(|a, b| rules.compare((&a.standing(), a.player), (&b.standing(), b.player)));
        let mut window: Vec<RankedEntry<'_>> = before.split_off(before.len() - want);
        for (i, entry) in window.iter_mut().enumerate() {
            entry.rank = rank - want as u64 + i as u64;
        }
        window.push(RankedEntry {
            rank,
            player: own,
            value: at.value,
            achieved_at: at.achieved_at,
            info: own_info,
        });
        let after = usize::try_from(radius).unwrap_or(usize::MAX);
        window.extend(self.page_at(board_version, after, Some((at, own)))?.entries);
        Ok(Some(window))
    }
}

/// The players named in the deltas after some version: where they stood then and where they
/// stand now, each list sorted by the board's order. Borrows the ids from the deltas.
pub(super) struct ChangedSince<'a> {
    /// Changed players ranked at that version, by their standing then.
    pub(super) then: Vec<(Standing, &'a str)>,
    /// What each of `then` showed at that version, in the same order.
    then_info: Vec<EntryInfo<'a>>,
    /// Changed players ranked now, by their current standing.
    pub(super) now: Vec<(Standing, &'a str)>,
}

impl<'a> ChangedSince<'a> {
    /// Collects the changed players from consecutive deltas, oldest first. O(c log c).
    pub(super) fn new(board: &'a Board, deltas: impl Iterator<Item = &'a Delta>) -> ChangedSince<'a> {
        let rules = &board.rules;
        let mut named: Vec<&'a Delta> = deltas.collect();
        // A stable sort keeps each player's deltas oldest first: the first one's `before` is
        // their standing back then, the last one's `after` their standing now.
        named.sort_by(|a, b| a.player.as_str().as_bytes().cmp(b.player.as_str().as_bytes()));
        let mut then_with_info = Vec::new();
        let mut now = Vec::new();
        for run in named.chunk_by(|a, b| a.player == b.player) {
            let (Some(first), Some(last)) = (run.first(), run.last()) else {
                continue;
            };
            if let Some(at) = first.before {
                then_with_info.push((at, first.player.as_str(), board.shown(&first.extras_before)));
            }
            if let Some(at) = last.after {
                now.push((at, last.player.as_str()));
            }
        }
        let by_order = |a: &(Standing, &str), b: &(Standing, &str)| rules.compare((&a.0, a.1), (&b.0, b.1));
        then_with_info.sort_unstable_by(|a, b| by_order(&(a.0, a.1), &(b.0, b.1)));
        now.sort_unstable_by(by_order);
        let (then, then_info) = then_with_info.into_iter().map(|(s, p, i)| ((s, p), i)).unzip();
        ChangedSince { then, now, then_info }
    }

    /// How many changed players sit at or before the position, by their standing then.
    /// O(log c).
    fn then_through(&self, rules: &BoardRules, at: &Standing, player: &str) -> usize {
        Self::through(&self.then, rules, at, player)
    }

    /// How many changed players sit at or before the position, by their standing now.
    /// O(log c).
    fn now_through(&self, rules: &BoardRules, at: &Standing, player: &str) -> usize {
        Self::through(&self.now, rules, at, player)
    }

    fn through(sorted: &[(Standing, &str)], rules: &BoardRules, at: &Standing, player: &str) -> usize {
        sorted.partition_point(|(s, p)| rules.compare((s, p), (at, player)) != Ordering::Greater)
    }

    /// How many changed players sit strictly before the position, then and now. O(log c).
    pub(super) fn before(&self, rules: &BoardRules, at: &Standing, player: &str) -> (usize, usize) {
        let strictly = |sorted: &[(Standing, &str)]| {
            sorted.partition_point(|(s, p)| rules.compare((s, p), (at, player)) == Ordering::Less)
        };
        (strictly(&self.then), strictly(&self.now))
    }
}
