//! A board: its rules, its `board_version`, and its ranked index. Events go in through
//! [`Board::apply`] and [`Board::recompute_player`]; every change comes out as a [`Delta`].
//!
//! Call order: build with [`Board::new`] (or [`Board::from_aggregates`] for a rebuild), then any
//! sequence of `apply` / `recompute_player` and queries. Each change bumps `board_version` by
//! exactly one; a no-op never does.
//!
//! A board also keeps its most recent deltas (at most [`Board::history_limit`], by default
//! [`DEFAULT_HISTORY_LIMIT`]). They let [`Board::top`] answer a cursor made at an older version
//! that is still held, in that version's order, without copying the board: the players named in
//! the deltas since then are the only ones whose place differs, and each one's standing at that
//! version is the `before` of the first delta that names them. A cursor older than the history
//! (or newer than the board) is refused with [`QueryError::StaleCursor`], never re-read in
//! another order. [`Board::deltas_since`] hands the same deltas to whoever follows the board.

mod at_version;
mod feed;
mod interval;
mod segments;

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cmp::Ordering;

use crate::cursor::Cursor;
use crate::digest::{BoardDigest, DigestWriter};
use crate::error::{ApplyError, CapacityError, DeltaError, QueryError};
use crate::event::{PlayerId, ScoreEvent};
use crate::index::{RankedEntry, RankedIndex};
use crate::interner::MemberId;
use crate::join::Join;
use crate::profile::{EntryInfo, Extras, Profile, recompute_with_metadata, step};
use crate::rules::{BoardRules, ScoreMode, Standing};
use crate::segments::Segments;

pub use feed::{Band, Crossing, Overtake};
pub use interval::PlayerInterval;
pub use segments::{SegmentFriends, SegmentPage, SegmentRank};

/// How many deltas a board keeps by default: enough for a client paging a busy board for a
/// while, at about 0.55 MiB per board with 23-byte player ids (see [`Board::set_history_limit`]).
pub const DEFAULT_HISTORY_LIMIT: usize = 4096;

/// What applying an event did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applied {
    /// Nothing changed (e.g. a lower late score on a `highest` board); the version stays.
    Unchanged,
    /// The ranked state changed; the delta names the new version.
    Changed(Delta),
}

/// One change to a board: a player's aggregate before and after, at the version it produced.
/// `before: None` means the player was unranked; `after: None` that they are now. A rename
/// changes only the extras.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delta {
    /// The version this change produced; it applies on top of `board_version - 1`.
    pub board_version: u64,
    /// Whose aggregate changed.
    pub player: PlayerId,
    /// The aggregate before, if ranked.
    pub before: Option<Standing>,
    /// The aggregate after, if ranked.
    pub after: Option<Standing>,
    /// What the entry showed besides its standing before (empty when unranked).
    pub extras_before: Extras,
    /// What it shows after (empty when unranked).
    pub extras_after: Extras,
}

impl Delta {
    /// The version the delta applies to.
    pub fn base_version(&self) -> u64 {
        self.board_version - 1
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

impl<'a> Page<'a> {
    /// A page of `entries` at `version` of a board of `total` players, with a cursor at that
    /// version when more follow; a board and a snapshot of it make their pages alike. O(1).
    pub(crate) fn of(version: u64, total: u64, entries: Vec<RankedEntry<'a>>) -> Page<'a> {
        let next_cursor = match entries.last() {
            Some(last) if last.rank < total => Some(Cursor {
                board_version: version,
                value: last.value,
                achieved_at: last.achieved_at,
                player: last.player.into(),
            }),
            _ => None,
        };
        Page {
            board_version: version,
            total_players: total,
            entries,
            next_cursor,
        }
    }
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
    /// The player's name, country and metadata, when set.
    pub info: EntryInfo<'q>,
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

impl<'q> FriendsBoard<'q> {
    /// The board of the players found (global rank, player, standing, extras) and those not
    /// (the place they were asked at, player), as the board and a snapshot's reader answer it:
    /// ranked by global rank, unranked in the order first asked, each player once.
    /// O(k log k).
    pub(crate) fn of(
        board_version: u64,
        mut ranked: Vec<(u64, &'q str, Standing, EntryInfo<'q>)>,
        mut unranked: Vec<(usize, &'q str)>,
    ) -> FriendsBoard<'q> {
        // Global ranks are unique positions in the total order, so sorting by them is sorting
        // by the board's comparator; equal ranks can only be the same player asked twice.
        ranked.sort_unstable_by_key(|&(global_rank, _, _, _)| global_rank);
        ranked.dedup_by_key(|&mut (global_rank, _, _, _)| global_rank);
        // Keep each unranked player once, at the place it was first asked.
        unranked.sort_unstable_by(|a, b| a.1.cmp(b.1).then(a.0.cmp(&b.0)));
        unranked.dedup_by(|a, b| a.1 == b.1);
        unranked.sort_unstable_by_key(|&(asked_at, _)| asked_at);
        let entries = ranked
            .into_iter()
            .enumerate()
            .map(|(i, (global_rank, player, s, info))| FriendEntry {
                rank: i as u64 + 1,
                global_rank,
                player,
                value: s.value,
                achieved_at: s.achieved_at,
                info,
            })
            .collect();
        FriendsBoard {
            board_version,
            entries,
            unranked: unranked.into_iter().map(|(_, p)| p).collect(),
        }
    }
}

/// One board: rules, version, ranked index, and the most recent deltas.
#[derive(Clone)]
pub struct Board {
    rules: BoardRules,
    version: u64,
    index: RankedIndex,
    /// For `latest` boards only: the id of the event behind each member's aggregate, which
    /// breaks equal times. Empty for other modes, so they pay nothing for it.
    latest_event: Vec<Option<Box<str>>>,
    /// Profiles and metadata of the ranked members that have any; a member with neither is
    /// not in the map and costs nothing.
    extras: BTreeMap<MemberId, Extras>,
    /// The most recent deltas, oldest first, ending at `version` and consecutive: the one at
    /// position `i` produced version `version - history.len() + 1 + i`.
    history: VecDeque<Delta>,
    /// The most deltas `history` keeps.
    history_limit: usize,
    /// The segments the board ranks, when it declares any ([`Board::declare_segments`]).
    segments: Option<Box<Segments>>,
}

/// A packed copy of a board's ranked structure, from [`Board::repack`].
pub struct Repacked {
    version: u64,
    players: usize,
    shards: Vec<crate::index::ShardInfo>,
    trees: Vec<Option<crate::tree::Tree>>,
}

impl core::fmt::Debug for Repacked {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Repacked")
            .field("version", &self.version)
            .field("players", &self.players)
            .finish_non_exhaustive()
    }
}

impl Board {
    /// An empty board at version 0.
    pub fn new(rules: BoardRules) -> Board {
        Board {
            rules,
            version: 0,
            index: RankedIndex::new(rules.score_mode),
            latest_event: Vec::new(),
            extras: BTreeMap::new(),
            history: VecDeque::new(),
            history_limit: DEFAULT_HISTORY_LIMIT,
            segments: None,
        }
    }

    /// A board holding the given aggregates at the given version: what a rebuild produces
    /// after folding the event log. `event_id` is the id behind each aggregate (only `latest`
    /// keeps it). A player listed twice keeps the first. O(n log n).
    ///
    /// The history starts empty: only `board_version` itself can be paged until changes follow.
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

    /// A board from an index already loaded, as a replay builds it.
    pub(crate) fn from_index(
        rules: BoardRules,
        board_version: u64,
        index: RankedIndex,
        latest_event: Vec<Option<Box<str>>>,
        extras: BTreeMap<MemberId, Extras>,
    ) -> Board {
        let mut board = Board::new(rules);
        board.version = board_version;
        board.index = index;
        board.latest_event = latest_event;
        board.extras = extras;
        board
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

    /// A packed copy of the ranked structure, made under a shared borrow so that reads go on
    /// meanwhile, when it is worth making: random inserts split leaves in half and leave them
    /// part empty, where a packed structure (as [`Board::read_checkpoint`] builds it) fills
    /// them to 15/16. `None` when the structure is already within 1/16 of packed. The copy is
    /// built straight from the leaves: while it exists, the board's structure is held twice.
    /// Install it with [`Board::install_repacked`]. O(n).
    pub fn repack(&self) -> Option<Repacked> {
        Some(Repacked {
            version: self.version,
            players: self.index.len(),
            shards: self.index.shards(),
            trees: self.index.packed_shards()?,
        })
    }

    /// Swaps in a copy made by [`Board::repack`] if the board has not changed since (same
    /// `board_version` and players); returns whether it did. Answers, `board_version` and the
    /// digest stay the same: only memory changes. O(1), plus freeing the old structure.
    pub fn install_repacked(&mut self, repacked: Repacked) -> bool {
        if repacked.version != self.version
            || repacked.players != self.index.len()
            || repacked.shards != self.index.shards()
        {
            return false;
        }
        self.index.replace_packed(repacked.trees);
        true
    }

    /// Splits the board into `shards` score ranges (1 to [`crate::MAX_SHARDS`]; 1 is whole):
    /// every answer, the version and the digest stay the same. O(n) when the count changes.
    pub fn split(&mut self, shards: usize) {
        self.index.split(shards);
    }

    /// Moves the boundary between shards `left` and `left + 1` to the middle of their
    /// entries (the board moves boundaries itself as its population shifts): every answer, the
    /// version and the digest stay the same. `false` when there is no shard `left + 1`.
    /// O(the two shards' entries).
    pub fn recut(&mut self, left: usize) -> bool {
        self.index.recut(left)
    }

    /// Ranked players. O(1).
    pub fn total_players(&self) -> u64 {
        self.index.len() as u64
    }

    /// Applies one verified event to a player whose profile is `None` (see
    /// [`Board::apply_as`]). O(log n).
    pub fn apply(&mut self, event: &ScoreEvent) -> Result<Applied, ApplyError> {
        self.apply_as(event, None)
    }

    /// Applies one verified event. `profile` is the player's profile in the game, which the
    /// entry takes when the event ranks the player (a ranked player's profile follows
    /// [`Board::set_profile`]). The entry's metadata follows the event behind the aggregate
    /// (see [`crate::profile`]); a change of that event alone is a change. O(log n).
    ///
    /// The caller guarantees that each event id is applied at most once (the origin enforces it
    /// durably); the core cannot tell a retry from a new event.
    pub fn apply_as(
        &mut self,
        event: &ScoreEvent,
        profile: Option<&Arc<Profile>>,
    ) -> Result<Applied, ApplyError> {
        self.rules.check_value(event.value)?;
        let member = self.index.intern(event.player.as_str())?;
        let current = self.index.standing_of(member);
        let current_id = self
            .latest_event
            .get(member as usize)
            .and_then(|id| id.as_deref());
        let held = self.extras.get(&member);
        let Some(step) = step(&self.rules, current, current_id, held, event, profile)? else {
            return Ok(Applied::Unchanged);
        };
        let before_extras = held.cloned().unwrap_or_default();
        if self.rules.score_mode == ScoreMode::Latest && step.replaced {
            *self.latest_slot(member) = Some(event.event_id.as_str().into());
        }
        if !step.changed {
            return Ok(Applied::Unchanged);
        }
        Ok(self.commit(member, &event.player, step.after, before_extras, step.extras))
    }

    /// Applies events in order as one group, each decided as [`Board::apply_as`] decides it,
    /// with a version and a delta each as one by one; a split board's shards then change
    /// together, each on a thread of `join`'s, so its writes spread over as many threads as
    /// the group touches shards (with a `join` of one thread, they change event by event). A read holding the board sees it before the group or after
    /// it, as after the same events one by one. Answers each event's result, in order.
    /// O(k log n for k events, spread over the shards).
    pub fn apply_group<'e>(
        &mut self,
        events: impl IntoIterator<Item = (&'e ScoreEvent, Option<&'e Arc<Profile>>)>,
        join: &(dyn Join + Sync),
    ) -> Vec<Result<Applied, ApplyError>> {
        // Staging pays for itself only when the shards then change on more than one thread.
        let split = self.index.shard_count() > 1 && join.threads() > 1;
        if split {
            self.index.stage();
        }
        let applied = events
            .into_iter()
            .map(|(event, profile)| self.apply_as(event, profile))
            .collect();
        if split {
            self.index.settle(join);
        }
        applied
    }

    /// Recomputes a player's aggregate from their remaining valid events (after an
    /// invalidation, a restore, a disqualification), which may leave them unranked. Events
    /// of other players are ignored. The player's profile is taken as `None` (see
    /// [`Board::recompute_player_as`]). O(k + log n) for k events.
    pub fn recompute_player<'e>(
        &mut self,
        player: &PlayerId,
        valid_events: impl IntoIterator<Item = &'e ScoreEvent>,
    ) -> Result<Applied, ApplyError> {
        self.recompute_player_as(player, valid_events, None)
    }

    /// [`Board::recompute_player`] for a player whose profile in the game is `profile`, which
    /// the entry takes if the recompute ranks them again. O(k + log n) for k events.
    pub fn recompute_player_as<'e>(
        &mut self,
        player: &PlayerId,
        valid_events: impl IntoIterator<Item = &'e ScoreEvent>,
        profile: Option<&Arc<Profile>>,
    ) -> Result<Applied, ApplyError> {
        let own = valid_events.into_iter().filter(|e| e.player == *player);
        let (aggregate, metadata) = recompute_with_metadata(&self.rules, own)?;
        let member = self.index.intern(player.as_str())?;
        let current = self.index.standing_of(member);
        let after = aggregate.map(|(s, _)| s);
        if self.rules.score_mode == ScoreMode::Latest {
            *self.latest_slot(member) = aggregate.map(|(_, id)| id.into());
        }
        let before_extras = self.extras.get(&member).cloned().unwrap_or_default();
        let after_extras = match after {
            None => Extras::default(),
            Some(_) => Extras {
                profile: if current.is_some() {
                    before_extras.profile.clone()
                } else {
                    profile.filter(|p| !p.is_empty()).cloned()
                },
                metadata,
            },
        };
        if current == after && before_extras.metadata_event() == after_extras.metadata_event() {
            // The ranked state is the same; at most the event behind a `latest` aggregate
            // changed, which no query can see, so the version stays.
            return Ok(Applied::Unchanged);
        }
        Ok(self.commit(member, player, after, before_extras, after_extras))
    }

    /// Sets a ranked player's profile: a rename, a clear, a change of country or anonymity.
    /// Every call on a ranked player is a change, whatever the profile says, so versions do not
    /// depend on the text (an erasure may rewrite it later); the origin calls it only for a
    /// profile that did change. An unranked player is left alone: the profile comes with the
    /// event that ranks them. O(log n).
    pub fn set_profile(&mut self, player: &PlayerId, profile: Option<Arc<Profile>>) -> Applied {
        let Some(member) = self.index.member(player.as_str()) else {
            return Applied::Unchanged;
        };
        let Some(standing) = self.index.standing_of(member) else {
            return Applied::Unchanged;
        };
        let before_extras = self.extras.get(&member).cloned().unwrap_or_default();
        let after_extras = Extras {
            profile: profile.filter(|p| !p.is_empty()),
            metadata: before_extras.metadata.clone(),
        };
        self.commit(member, player, Some(standing), before_extras, after_extras)
    }

    /// Erases what a ranked player's entry shows besides its standing: the profile goes, and
    /// the metadata's text (the event behind it stays the same event). A change on a ranked
    /// player whatever it held, so that a rebuild from the rewritten log counts the same
    /// versions. O(log n).
    pub fn erase(&mut self, player: &PlayerId) -> Applied {
        let Some(member) = self.index.member(player.as_str()) else {
            return Applied::Unchanged;
        };
        let Some(standing) = self.index.standing_of(member) else {
            return Applied::Unchanged;
        };
        let before_extras = self.extras.get(&member).cloned().unwrap_or_default();
        let after_extras = before_extras.erased();
        self.commit(member, player, Some(standing), before_extras, after_extras)
    }

    /// What a member's entry shows besides its standing, as a trusted caller sees it. O(log m)
    /// for the m members with any.
    /// The event dimension values (`platform:ios`) of the event behind a player's standing,
    /// which place them in segments. O(log m).
    pub fn entry_segments(&self, player: &str) -> Option<&str> {
        let member = self.index.member(player)?;
        self.extras.get(&member)?.metadata.as_deref()?.segments.as_deref()
    }

    /// A member's fields; its event dimension values only on a board that declares event
    /// dimensions (an event names values for every board it counts on). O(log m).
    fn info_of(&self, member: MemberId) -> EntryInfo<'_> {
        self.extras
            .get(&member)
            .map(|extras| self.shown(extras))
            .unwrap_or_default()
    }

    /// The fields an entry with `extras` shows on this board: its event dimension values only
    /// when the board declares event dimensions. O(1).
    pub(crate) fn shown<'e>(&self, extras: &'e Extras) -> EntryInfo<'e> {
        let mut info = extras.info();
        if info.segments.is_some() && !self.segments.as_ref().is_some_and(|s| s.declares_events()) {
            info.segments = None;
        }
        info
    }

    /// Fills in the extras of entries the index produced. Free on a board where nobody has
    /// any; otherwise O(log m) per entry.
    fn dress<'b>(&'b self, entries: &mut [RankedEntry<'b>]) {
        if self.extras.is_empty() {
            return;
        }
        for entry in entries {
            if let Some(member) = self.index.member(entry.player) {
                entry.info = self.info_of(member);
            }
        }
    }

    /// A player's extras as held now, by id (empty when they have none). O(1) + O(log m).
    pub fn extras_of(&self, player: &str) -> Extras {
        self.index
            .member(player)
            .and_then(|m| self.extras.get(&m))
            .cloned()
            .unwrap_or_default()
    }

    /// Calls `visit` with every ranked player that has extras (in member order). O(m).
    pub fn for_each_extras(&self, mut visit: impl FnMut(&str, &Extras)) {
        for (member, extras) in &self.extras {
            visit(self.index.player(*member), extras);
        }
    }

    /// Calls `visit` with every ranked member that has extras, in member order. O(m).
    pub(crate) fn for_each_member_extras(&self, mut visit: impl FnMut(MemberId, &Extras)) {
        for (member, extras) in &self.extras {
            visit(*member, extras);
        }
    }

    /// Up to `limit` entries from the 1-based rank `first` on, with their extras as a trusted
    /// caller sees them. O(log n + limit), plus O(log m) per entry when anyone has extras.
    pub fn ranked_range(&self, first: u64, limit: usize) -> Vec<RankedEntry<'_>> {
        let mut entries = self.index.range(first, limit);
        self.dress(&mut entries);
        entries
    }

    /// Holds the extras a snapshot showed for a ranked player (a board restored from a
    /// snapshot). O(log m).
    pub(crate) fn hold_extras(&mut self, player: &str, extras: EntryInfo<'_>) {
        let Some(member) = self.index.member(player) else {
            return;
        };
        let profile = (extras.display_name.is_some() || extras.country.is_some()).then(|| {
            Arc::new(Profile {
                display_name: extras.display_name.map(Box::from),
                country: extras.country.map(Box::from),
                anonymous: false,
            })
        });
        // The event behind restored metadata is unknown: a restored board is for reading.
        let metadata = extras.metadata.map(|json| {
            Arc::new(crate::profile::Metadata {
                event_id: "".into(),
                json: json.into(),
                segments: None,
            })
        });
        let held = Extras { profile, metadata };
        if !held.is_empty() {
            self.extras.insert(member, held);
        }
    }

    /// Holds `extras` for a ranked player without a change: a board being restored from stored
    /// entries (a closed period's snapshot) gets back what they showed. Ignored for a player
    /// who is not ranked. O(log m).
    pub fn restore_extras(&mut self, player: &str, extras: Extras) {
        let Some(member) = self.index.member(player) else {
            return;
        };
        let Some(standing) = self.index.standing_of(member) else {
            return;
        };
        if let Some(segments) = self.segments.as_deref_mut() {
            let held = self.extras.get(&member).cloned().unwrap_or_default();
            segments.change(
                self.index.names(),
                self.rules.score_mode,
                member,
                Some((standing, &held)),
                Some((standing, &extras)),
            );
        }
        if extras.is_empty() {
            self.extras.remove(&member);
        } else {
            self.extras.insert(member, extras);
        }
    }

    /// Replaces each held profile by the equal one `shared` gives for the player, so that a
    /// board read back from a checkpoint shares its players' profiles with the rest of the game
    /// instead of holding copies. Nothing a query sees changes. O(m) look-ups for the m members
    /// with extras.
    pub fn share_profiles(&mut self, shared: impl Fn(&str) -> Option<Arc<Profile>>) {
        for (member, extras) in self.extras.iter_mut() {
            let Some(held) = &extras.profile else {
                continue;
            };
            if let Some(one) = shared(self.index.player(*member))
                && *one == **held
            {
                extras.profile = Some(one);
            }
        }
    }

    /// The ranked players that have a profile or metadata. O(1).
    pub fn players_with_extras(&self) -> usize {
        self.extras.len()
    }

    fn commit(
        &mut self,
        member: MemberId,
        player: &PlayerId,
        after: Option<Standing>,
        extras_before: Extras,
        extras_after: Extras,
    ) -> Applied {
        let before = self.index.set(member, after);
        let extras_after = if after.is_some() {
            extras_after
        } else {
            Extras::default()
        };
        if let Some(segments) = self.segments.as_deref_mut() {
            segments.change(
                self.index.names(),
                self.rules.score_mode,
                member,
                before.map(|s| (s, &extras_before)),
                after.map(|s| (s, &extras_after)),
            );
        }
        if extras_after.is_empty() {
            self.extras.remove(&member);
        } else {
            self.extras.insert(member, extras_after.clone());
        }
        self.version += 1;
        let delta = Delta {
            board_version: self.version,
            player: player.clone(),
            before,
            after,
            extras_before,
            extras_after,
        };
        self.remember(&delta);
        Applied::Changed(delta)
    }

    /// Keeps a copy of the delta that just produced `self.version`, dropping the oldest beyond
    /// the limit. O(1) amortized: once the history is full, the dropped delta's id buffer is
    /// reused for the new one, so a full history allocates nothing for ids it can reuse.
    fn remember(&mut self, delta: &Delta) {
        if self.history_limit == 0 {
            return;
        }
        let kept = if self.history.len() >= self.history_limit {
            self.history.pop_front().map(|mut oldest| {
                oldest.board_version = delta.board_version;
                oldest.player.clone_from(&delta.player);
                oldest.before = delta.before;
                oldest.after = delta.after;
                oldest.extras_before.clone_from(&delta.extras_before);
                oldest.extras_after.clone_from(&delta.extras_after);
                oldest
            })
        } else {
            None
        };
        if self.history.len() == self.history.capacity() {
            // Grow by doubling as usual, but never past the limit, so a limit that is not a
            // power of two does not leave up to half the buffer unused.
            let room = self.history_limit - self.history.len();
            self.history.reserve_exact(self.history.len().max(4).min(room));
        }
        self.history.push_back(kept.unwrap_or_else(|| delta.clone()));
    }

    /// The most deltas this board keeps; see [`Board::set_history_limit`]. O(1).
    pub fn history_limit(&self) -> usize {
        self.history_limit
    }

    /// Sets how many of the most recent deltas the board keeps (0 keeps none), dropping the
    /// oldest beyond the new limit. O(dropped).
    ///
    /// Memory: each delta held costs `size_of::<Delta>()` (112 bytes on 64-bit targets) plus
    /// its player id on the heap (the id's length plus the allocator's overhead). The default,
    /// [`DEFAULT_HISTORY_LIMIT`] = 4,096 deltas, is about 0.55 MiB per board with 23-byte ids.
    /// More history lets older cursors keep paging; each page at an older version costs more
    /// with the number of changes since it (see [`Board::top`]).
    pub fn set_history_limit(&mut self, limit: usize) {
        self.history_limit = limit;
        let excess = self.history.len().saturating_sub(limit);
        self.history.drain(..excess);
        self.history.shrink_to(limit);
    }

    /// Drops every delta held, keeping the limit: no version before the current one can be
    /// paged or caught up from any more. O(deltas held).
    pub fn forget_history(&mut self) {
        self.history.clear();
    }

    /// The oldest version whose pages this board can still answer: the current version minus
    /// the deltas held. Equal to [`Board::version`] when nothing is held. O(1).
    pub fn oldest_held_version(&self) -> u64 {
        // The history never holds more deltas than versions were produced.
        self.version - self.history.len() as u64
    }

    /// The deltas after `version` up to the current one, oldest first (empty when `version` is
    /// the current one); `None` when `version` is older than [`Board::oldest_held_version`] or
    /// newer than the board. Applying them in order to a copy at `version` (e.g. a
    /// [`crate::ClientView`]) brings it to the current version. O(1) to start, O(1) per delta.
    pub fn deltas_since(
        &self,
        version: u64,
    ) -> Option<impl ExactSizeIterator<Item = &Delta> + DoubleEndedIterator + Clone> {
        let oldest = self.oldest_held_version();
        if version < oldest || version > self.version {
            return None;
        }
        let skip = usize::try_from(version - oldest).ok()?;
        Some(self.history.range(skip..))
    }

    /// For `latest` boards, the id of the event behind a member's aggregate.
    pub(crate) fn latest_event_of(&self, member: MemberId) -> Option<&str> {
        self.latest_event.get(member as usize)?.as_deref()
    }

    fn latest_slot(&mut self, member: MemberId) -> &mut Option<Box<str>> {
        let m = member as usize;
        if self.latest_event.len() <= m {
            self.latest_event.resize(m + 1, None);
        }
        &mut self.latest_event[m]
    }

    /// Ranks only the given players among themselves, in the board's total order. Players with
    /// no score are listed as unranked; a player asked twice is answered once.
    /// O(k log n + k log k) for k players.
    pub fn rank_among<'q>(&'q self, players: &[&'q str]) -> FriendsBoard<'q> {
        let mut ranked: Vec<(u64, &'q str, Standing, EntryInfo<'q>)> = Vec::with_capacity(players.len());
        let mut unranked: Vec<(usize, &'q str)> = Vec::new();
        for (asked_at, &player) in players.iter().enumerate() {
            let found = self.index.member(player).and_then(|m| {
                Some((
                    self.index.rank_of(m)?,
                    self.index.standing_of(m)?,
                    self.info_of(m),
                ))
            });
            match found {
                Some((global_rank, standing, info)) => ranked.push((global_rank, player, standing, info)),
                None => unranked.push((asked_at, player)),
            }
        }
        FriendsBoard::of(self.version, ranked, unranked)
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
        if let Some(segments) = self.segments.as_deref_mut() {
            segments.change(
                self.index.names(),
                self.rules.score_mode,
                member,
                delta.before.map(|s| (s, &delta.extras_before)),
                delta.after.map(|s| (s, &delta.extras_after)),
            );
        }
        if delta.after.is_some() && !delta.extras_after.is_empty() {
            self.extras.insert(member, delta.extras_after.clone());
        } else {
            self.extras.remove(&member);
        }
        self.version = delta.board_version;
        self.remember(delta);
        Ok(())
    }
}
