//! A board: its rules, its `board_version`, and its ranked index. Events go in through
//! [`Board::apply`] and [`Board::recompute_player`]; every change comes out as a [`Delta`].
//!
//! Call order: build with [`Board::new`] (or [`Board::from_aggregates`] for a rebuild), then any
//! sequence of `apply` / `recompute_player` and queries. Each change bumps `board_version` by
//! exactly one; a no-op never does.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use serde::{Deserialize, Serialize};

use crate::digest::{BoardDigest, DigestWriter};
use crate::error::{ApplyError, CapacityError, DecodeError, DeltaError, QueryError};
use crate::event::{PlayerId, ScoreEvent};
use crate::index::{RankedEntry, RankedIndex};
use crate::interner::MemberId;
use crate::rules::{BoardRules, ScoreMode, Standing};

/// What applying an event did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applied {
    /// Nothing changed (e.g. a lower late score on a `highest` board); the version stays.
    Unchanged,
    /// The ranked state changed; the delta names the new version.
    Changed(Delta),
}

/// One change to a board: a player's aggregate before and after, at the version it produced.
/// `before: None` means the player was unranked; `after: None` that they are now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delta {
    /// The version this change produced; it applies on top of `board_version - 1`.
    pub board_version: u64,
    /// Whose aggregate changed.
    pub player: PlayerId,
    /// The aggregate before, if ranked.
    pub before: Option<Standing>,
    /// The aggregate after, if ranked.
    pub after: Option<Standing>,
}

impl Delta {
    /// The version the delta applies to.
    pub fn base_version(&self) -> u64 {
        self.board_version - 1
    }
}

/// A position in a board's total order, and the version it was made at. Opaque to clients.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// The version whose order the cursor pages through.
    pub board_version: u64,
    /// The value of the last entry returned.
    pub value: i64,
    /// The time of the last entry returned.
    pub achieved_at: i64,
    /// The player of the last entry returned.
    pub player: String,
}

/// The format tag that starts an encoded cursor.
const CURSOR_FORMAT: u8 = 1;

impl Cursor {
    /// Encodes the cursor as bytes (a format tag, then postcard).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = alloc::vec![CURSOR_FORMAT];
        // Serializing plain integers and a string into a Vec cannot fail.
        if let Ok(body) = postcard::to_allocvec(self) {
            out.extend_from_slice(&body);
        }
        out
    }

    /// Decodes untrusted cursor bytes. Never panics.
    pub fn decode(bytes: &[u8]) -> Result<Cursor, DecodeError> {
        match bytes.split_first() {
            Some((&CURSOR_FORMAT, body)) => crate::snapshot::decode_exact(body),
            Some((&other, _)) => Err(DecodeError::UnsupportedFormat {
                found: Some(u16::from(other)),
            }),
            None => Err(DecodeError::UnsupportedFormat { found: None }),
        }
    }
}

/// A page of the top of a board, all from one version.
#[derive(Clone, Debug, PartialEq)]
pub struct Page<'a> {
    /// The version every entry comes from.
    pub board_version: u64,
    /// Ranked players on the board.
    pub total_players: u64,
    /// The entries, in rank order.
    pub entries: Vec<RankedEntry<'a>>,
    /// Where the next page starts, when there is one.
    pub next_cursor: Option<Cursor>,
}

/// One player's standing with every way of counting their place.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerRank<'a> {
    /// The version of the answer.
    pub board_version: u64,
    /// The player's entry, with the unique rank of the total order.
    pub entry: RankedEntry<'a>,
    /// 1 + players with a strictly better value.
    pub competition_rank: u64,
    /// 1 + distinct strictly better values.
    pub dense_rank: u64,
    /// Share of ranked players whose value is no better, in percent.
    pub percentile: f64,
    /// Ranked players on the board.
    pub total_players: u64,
}

/// One entry of a friends board.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FriendEntry<'q> {
    /// Rank among the asked players only.
    pub rank: u64,
    /// Rank on the whole board.
    pub global_rank: u64,
    /// The player.
    pub player: &'q str,
    /// The aggregate value.
    pub value: i64,
    /// When it was achieved.
    pub achieved_at: i64,
}

/// A friends board: the asked players ranked among themselves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FriendsBoard<'q> {
    /// The version of the answer.
    pub board_version: u64,
    /// The ranked players, by the board's total order.
    pub entries: Vec<FriendEntry<'q>>,
    /// The asked players with no score on this board, in the order asked. Never given a rank.
    pub unranked: Vec<&'q str>,
}

/// One board: rules, version and ranked index.
#[derive(Clone)]
pub struct Board {
    rules: BoardRules,
    version: u64,
    index: RankedIndex,
    /// For `latest` boards only: the id of the event behind each member's aggregate, which
    /// breaks equal times. Empty for other modes, so they pay nothing for it.
    latest_event: Vec<Option<Box<str>>>,
}

impl Board {
    /// An empty board at version 0.
    pub fn new(rules: BoardRules) -> Board {
        Board {
            rules,
            version: 0,
            index: RankedIndex::new(rules.score_mode),
            latest_event: Vec::new(),
        }
    }

    /// A board holding the given aggregates at the given version: what a rebuild produces
    /// after folding the event log. `event_id` is the id behind each aggregate (only `latest`
    /// keeps it). A player listed twice keeps the first. O(n log n).
    pub fn from_aggregates<'p>(
        rules: BoardRules,
        board_version: u64,
        aggregates: impl IntoIterator<Item = (&'p str, Standing, &'p str)>,
    ) -> Result<Board, CapacityError> {
        let mut board = Board::new(rules);
        board.version = board_version;
        let keep_ids = rules.score_mode == ScoreMode::Latest;
        let mut ids: Vec<(&'p str, &'p str)> = Vec::new();
        let entries = aggregates.into_iter().map(|(player, standing, event_id)| {
            if keep_ids {
                ids.push((player, event_id));
            }
            (player, standing)
        });
        board.index.load(entries)?;
        for (player, event_id) in ids {
            if let Some(member) = board.index.member(player) {
                let slot = board.latest_slot(member);
                if slot.is_none() {
                    *slot = Some(event_id.into());
                }
            }
        }
        Ok(board)
    }

    /// The board's rules.
    pub fn rules(&self) -> &BoardRules {
        &self.rules
    }

    /// The current `board_version`: 0 when new, +1 per change.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The ranked index, for queries this type does not wrap.
    pub fn index(&self) -> &RankedIndex {
        &self.index
    }

    /// Ranked players. O(1).
    pub fn total_players(&self) -> u64 {
        self.index.len() as u64
    }

    /// Applies one verified event. O(log n).
    ///
    /// The caller guarantees that each event id is applied at most once (the origin enforces it
    /// durably); the core cannot tell a retry from a new event.
    pub fn apply(&mut self, event: &ScoreEvent) -> Result<Applied, ApplyError> {
        self.rules.check_value(event.value)?;
        let member = self.index.intern(event.player.as_str())?;
        let current = self.index.standing_of(member);
        let current_id = self
            .latest_event
            .get(member as usize)
            .and_then(|id| id.as_deref());
        match self.rules.fold(current, current_id, event)? {
            None => Ok(Applied::Unchanged),
            Some(after) => {
                if self.rules.score_mode == ScoreMode::Latest {
                    *self.latest_slot(member) = Some(event.event_id.as_str().into());
                }
                if current == Some(after) {
                    // A `latest` event with the same time and value but a greater id takes over
                    // the aggregate without changing anything a query can see.
                    return Ok(Applied::Unchanged);
                }
                Ok(self.commit(member, &event.player, Some(after)))
            }
        }
    }

    /// Recomputes a player's aggregate from their remaining valid events (after an
    /// invalidation, a restore, a disqualification), which may leave them unranked. Events
    /// of other players are ignored. O(k + log n) for k events.
    pub fn recompute_player<'e>(
        &mut self,
        player: &PlayerId,
        valid_events: impl IntoIterator<Item = &'e ScoreEvent>,
    ) -> Result<Applied, ApplyError> {
        let own = valid_events.into_iter().filter(|e| e.player == *player);
        let aggregate = self.rules.recompute(own)?;
        let member = self.index.intern(player.as_str())?;
        let current = self.index.standing_of(member);
        let after = aggregate.map(|(s, _)| s);
        if self.rules.score_mode == ScoreMode::Latest {
            *self.latest_slot(member) = aggregate.map(|(_, id)| id.into());
        }
        if current == after {
            // The ranked state is the same; at most the event behind a `latest` aggregate
            // changed, which no query can see, so the version stays.
            return Ok(Applied::Unchanged);
        }
        Ok(self.commit(member, player, after))
    }

    fn commit(&mut self, member: MemberId, player: &PlayerId, after: Option<Standing>) -> Applied {
        let before = self.index.set(member, after);
        self.version += 1;
        Applied::Changed(Delta {
            board_version: self.version,
            player: player.clone(),
            before,
            after,
        })
    }

    fn latest_slot(&mut self, member: MemberId) -> &mut Option<Box<str>> {
        let m = member as usize;
        if self.latest_event.len() <= m {
            self.latest_event.resize(m + 1, None);
        }
        &mut self.latest_event[m]
    }

    /// A page of the top: `limit` entries after the cursor's position (from the top without
    /// one). A cursor made at another version is refused, so a page never silently skips or
    /// repeats; whoever holds older versions answers for them. O(log n + limit).
    pub fn top(&self, limit: usize, cursor: Option<&Cursor>) -> Result<Page<'_>, QueryError> {
        let first = match cursor {
            None => 1,
            Some(c) if c.board_version != self.version => {
                return Err(QueryError::CursorVersionMismatch {
                    cursor_version: c.board_version,
                    board_version: self.version,
                });
            }
            Some(c) => {
                let at = Standing {
                    value: c.value,
                    achieved_at: c.achieved_at,
                };
                self.index.count_before(&at, &c.player, true) + 1
            }
        };
        let entries = self.index.range(first, limit);
        let total = self.total_players();
        let next_cursor = match entries.last() {
            Some(last) if last.rank < total => Some(Cursor {
                board_version: self.version,
                value: last.value,
                achieved_at: last.achieved_at,
                player: last.player.into(),
            }),
            _ => None,
        };
        Ok(Page {
            board_version: self.version,
            total_players: total,
            entries,
            next_cursor,
        })
    }

    /// A player's rank, value and value-ranks, or `None` when unranked. O(log n).
    pub fn player_rank(&self, player: &str) -> Option<PlayerRank<'_>> {
        let member = self.index.member(player)?;
        let rank = self.index.rank_of(member)?;
        let standing = self.index.standing_of(member)?;
        let value_ranks = self.index.value_ranks(standing.value);
        Some(PlayerRank {
            board_version: self.version,
            entry: RankedEntry {
                rank,
                player: self.index.player(member),
                value: standing.value,
                achieved_at: standing.achieved_at,
            },
            competition_rank: value_ranks.competition_rank,
            dense_rank: value_ranks.dense_rank,
            percentile: value_ranks.percentile,
            total_players: self.total_players(),
        })
    }

    /// The window of ranks `rank - radius ..= rank + radius` around a player, clipped at the
    /// ends, or `None` when the player is unranked. O(log n + radius).
    pub fn nearby(&self, player: &str, radius: u64) -> Option<Vec<RankedEntry<'_>>> {
        let rank = self.index.rank_of_player(player)?;
        let first = rank.saturating_sub(radius).max(1);
        let last = rank.saturating_add(radius).min(self.total_players());
        let limit = usize::try_from(last - first + 1).unwrap_or(usize::MAX);
        Some(self.index.range(first, limit))
    }

    /// Ranks only the given players among themselves, in the board's total order. Players with
    /// no score are listed as unranked; a player asked twice is answered once.
    /// O(k log n + k log k) for k players.
    pub fn rank_among<'q>(&self, players: &[&'q str]) -> FriendsBoard<'q> {
        let mut ranked: Vec<(u64, &'q str, Standing)> = Vec::with_capacity(players.len());
        let mut unranked: Vec<(usize, &'q str)> = Vec::new();
        for (asked_at, &player) in players.iter().enumerate() {
            let found = self
                .index
                .member(player)
                .and_then(|m| Some((self.index.rank_of(m)?, self.index.standing_of(m)?)));
            match found {
                Some((global_rank, standing)) => ranked.push((global_rank, player, standing)),
                None => unranked.push((asked_at, player)),
            }
        }
        // Global ranks are unique positions in the total order, so sorting by them is sorting
        // by the board's comparator; equal ranks can only be the same player asked twice.
        ranked.sort_unstable_by_key(|&(global_rank, _, _)| global_rank);
        ranked.dedup_by_key(|&mut (global_rank, _, _)| global_rank);
        // Keep each unranked player once, at the place it was first asked.
        unranked.sort_unstable_by(|a, b| a.1.cmp(b.1).then(a.0.cmp(&b.0)));
        unranked.dedup_by(|a, b| a.1 == b.1);
        unranked.sort_unstable_by_key(|&(asked_at, _)| asked_at);
        let unranked = unranked.into_iter().map(|(_, p)| p).collect();
        let entries = ranked
            .into_iter()
            .enumerate()
            .map(|(i, (global_rank, player, s))| FriendEntry {
                rank: i as u64 + 1,
                global_rank,
                player,
                value: s.value,
                achieved_at: s.achieved_at,
            })
            .collect();
        FriendsBoard {
            board_version: self.version,
            entries,
            unranked,
        }
    }

    /// The board digest: a SHA-256 over the score mode and the entries in rank order. Two boards
    /// with the same digest rank the same players the same way with the same aggregates. The
    /// version is left out: replaying the same events in another order can take another number
    /// of steps to reach the same board. O(n).
    pub fn digest(&self) -> BoardDigest {
        let mut writer = DigestWriter::new(self.rules.score_mode);
        for entry in self.index.range(1, self.index.len()) {
            writer.entry(entry.player, entry.value, entry.achieved_at);
        }
        writer.finish()
    }
}

impl Board {
    /// Applies an origin delta to a copy of the board; see [`crate::ClientView::apply`].
    pub(crate) fn apply_delta(&mut self, delta: &Delta) -> Result<(), DeltaError> {
        if delta.board_version == 0 || delta.base_version() != self.version {
            return Err(DeltaError::VersionGap {
                view_version: self.version,
                delta_base: delta.board_version.saturating_sub(1),
            });
        }
        let member = match self.index.member(delta.player.as_str()) {
            Some(m) => m,
            None if delta.before.is_none() => self
                .index
                .intern(delta.player.as_str())
                .map_err(DeltaError::Capacity)?,
            None => return Err(DeltaError::BeforeMismatch),
        };
        if self.index.standing_of(member) != delta.before {
            return Err(DeltaError::BeforeMismatch);
        }
        self.index.set(member, delta.after);
        self.version = delta.board_version;
        Ok(())
    }
}
