//! The `Instances` trait, through which the log changes boards, and its four implementations: the
//! live registry (`LiveInstances`), a rebuild's fresh boards (`RebuildInstances`), copies that only
//! fold, to try an action before it is logged (`Trial`), and `Tolerant`, which wraps another and
//! marks a board broken at its first failing entry. One trait, so that the live writer, the rebuild
//! and the trial run one code path and cannot drift apart.

use std::collections::{HashMap, HashSet};

use std::sync::Arc;

use standings_core::{Applied, ApplyError, Board, BoardId, Join, PlayerId, Profile, Replay, ScoreEvent};

use super::LogError;
use crate::boards::{BoardEntry, BoardSlot, Registry};
use crate::chain::Chain;
use crate::domain::periods::Period;
use crate::domain::{ActionRefusal, RankedEntry, Refusal};
use crate::feed::Feed;
use crate::store::Store;

/// Access to the board instances being driven: the live registry, or a rebuild's.
pub trait Instances {
    /// Makes sure an instance that left memory is back before it is changed.
    fn prepare(
        &mut self,
        board: &BoardId,
        period: &Period,
    ) -> impl std::future::Future<Output = Result<(), LogError>> + Send;
    /// Applies an event to an instance, creating it when new; `profile` is the player's
    /// profile in the game, which a newly ranked entry takes.
    fn apply(
        &mut self,
        board: &BoardId,
        period: &Period,
        event: &ScoreEvent,
        profile: Option<&Arc<Profile>>,
    ) -> Result<(), LogError>;
    /// Recomputes a player's aggregate on an instance from the given valid events; returns the
    /// player's rank after it (if ranked) and the instance's version.
    fn recompute(
        &mut self,
        board: &BoardId,
        period: &Period,
        player: &PlayerId,
        events: &[ScoreEvent],
        profile: Option<&Arc<Profile>>,
    ) -> Result<(Option<u64>, u64), LogError>;
    /// Sets a player's profile on an instance where they are ranked (erasing their metadata
    /// too with `erase`); returns their rank and the instance's version when it changed.
    fn set_profile(
        &mut self,
        board: &BoardId,
        period: &Period,
        player: &PlayerId,
        profile: Option<Arc<Profile>>,
        erase: bool,
    ) -> Option<(u64, u64)>;
    /// The periods of a board that have an instance.
    fn periods(&self, board: &BoardId) -> Vec<Period>;
    /// The all-time instance's entries, version and digest, for a result snapshot.
    fn result(&mut self, board: &BoardId) -> Result<(Vec<RankedEntry>, u64, String), LogError>;
    /// Frees a board's instances (the season was archived).
    fn archive(&mut self, board: &BoardId);
    /// An instance's version and ranked players, for the feed's records: only the live
    /// instances make records, so the others answer `None`.
    fn standing(&mut self, _board: &BoardId, _period: &Period) -> Option<(u64, u64)> {
        None
    }
}

/// The ranked entries of a board, as results and period snapshots store them. O(n), and
/// O(n log n) on a board that declares event dimensions (each entry's values looked up).
pub fn result_entries(board: &Board) -> Vec<RankedEntry> {
    let with_segments = !board.segment_spec().events.is_empty();
    board
        .ranked_range(1, board.index().len())
        .iter()
        .map(|e| RankedEntry {
            segments: with_segments
                .then(|| board.entry_segments(e.player).map(Into::into))
                .flatten(),
            achieved_at: e.achieved_at,
            anonymous: e.info.anonymous,
            country: e.info.country.map(Into::into),
            display_name: e.info.display_name.map(Into::into),
            metadata: e.info.metadata.map(Into::into),
            player_id: e.player.to_string(),
            rank: e.rank,
            value: e.value,
        })
        .collect()
}

/// Sets (or erases) a player's profile on a board; their rank and the board's version when it
/// changed (the player is ranked there). O(log n).
fn changed_rank(
    board: &mut Board,
    player: &PlayerId,
    profile: Option<Arc<Profile>>,
    erase: bool,
) -> Option<(u64, u64)> {
    let applied = if erase {
        let applied = board.erase(player);
        if matches!(applied, Applied::Changed(_)) {
            // The board's recent deltas hold what the entry showed before, and a page or a
            // catch-up of an older version would show it again: they go, so such a read is
            // answered as of a version no longer held (410, a live snapshot, a whole publication).
            board.forget_history();
        }
        applied
    } else {
        board.set_profile(player, profile)
    };
    match applied {
        Applied::Unchanged => None,
        Applied::Changed(_) => Some((board.index().rank_of_player(player.as_str())?, board.version())),
    }
}

/// The live instances.
pub struct LiveInstances<'a> {
    /// The registry.
    pub registry: &'a Registry,
    /// Where closed periods that left memory are kept.
    pub store: &'a Store,
}

impl LiveInstances<'_> {
    /// The periods of a board with a live instance.
    fn periods_of(registry: &Registry, board: &BoardId) -> Vec<Period> {
        registry
            .entry(board)
            .map(|entry| entry.instances().iter().map(|s| s.period.clone()).collect())
            .unwrap_or_default()
    }

    /// Applies an event to `entry`'s instance for `period`, creating it when new.
    fn apply_to(
        feed: &Feed,
        entry: &BoardEntry,
        board: &BoardId,
        period: &Period,
        event: &ScoreEvent,
        profile: Option<&Arc<Profile>>,
    ) -> Result<(), LogError> {
        let slot = entry.instance_or_create(period);
        let mut live = slot.write();
        let applied = live
            .apply_as(event, profile)
            .map_err(|source| LogError::apply(board, event, source))?;
        if let Applied::Changed(delta) = &applied {
            feed.observe(&entry.def, period, &live, delta);
        }
        Ok(())
    }

    fn entry(&self, board: &BoardId) -> Result<std::sync::Arc<BoardEntry>, LogError> {
        self.registry
            .entry(board)
            .ok_or_else(|| Refusal::UnknownBoard(board.clone()).into())
    }
}

impl Instances for LiveInstances<'_> {
    async fn prepare(&mut self, board: &BoardId, period: &Period) -> Result<(), LogError> {
        let entry = self.entry(board)?;
        if entry.instance(&period.key).is_none()
            && let Some(snapshot) = self.store.period_snapshot(board, &period.key).await?
        {
            entry.install(entry.restored(period, snapshot.board_version, &snapshot.entries)?);
            // Back in the registry to change: a copy restored for reads would go stale.
            self.registry.closed.forget(board, &period.key);
        }
        Ok(())
    }

    fn apply(
        &mut self,
        board: &BoardId,
        period: &Period,
        event: &ScoreEvent,
        profile: Option<&Arc<Profile>>,
    ) -> Result<(), LogError> {
        LiveInstances::apply_to(
            &self.registry.feed,
            &*self.entry(board)?,
            board,
            period,
            event,
            profile,
        )
    }

    fn recompute(
        &mut self,
        board: &BoardId,
        period: &Period,
        player: &PlayerId,
        events: &[ScoreEvent],
        profile: Option<&Arc<Profile>>,
    ) -> Result<(Option<u64>, u64), LogError> {
        let entry = self.entry(board)?;
        let slot = entry.instance_or_create(period);
        let mut live = slot.write();
        let applied = live
            .recompute_player_as(player, events, profile)
            .map_err(|source| LogError::recompute(player, board, period, source))?;
        if let Applied::Changed(delta) = &applied {
            self.registry.feed.observe(&entry.def, period, &live, delta);
        }
        Ok((live.index().rank_of_player(player.as_str()), live.version()))
    }

    fn set_profile(
        &mut self,
        board: &BoardId,
        period: &Period,
        player: &PlayerId,
        profile: Option<Arc<Profile>>,
        erase: bool,
    ) -> Option<(u64, u64)> {
        let slot = self.registry.entry(board)?.instance(&period.key)?;
        let mut live = slot.write();
        changed_rank(&mut live, player, profile, erase)
    }

    fn periods(&self, board: &BoardId) -> Vec<Period> {
        LiveInstances::periods_of(self.registry, board)
    }

    fn result(&mut self, board: &BoardId) -> Result<(Vec<RankedEntry>, u64, String), LogError> {
        let slot: std::sync::Arc<BoardSlot> = self.entry(board)?.all_time();
        let live = slot.read();
        Ok((result_entries(&live), live.version(), live.digest().to_string()))
    }

    fn archive(&mut self, board: &BoardId) {
        if let Some(entry) = self.registry.entry(board) {
            entry.archive();
        }
    }

    fn standing(&mut self, board: &BoardId, period: &Period) -> Option<(u64, u64)> {
        let slot = self.registry.entry(board)?.instance(&period.key)?;
        let live = slot.read();
        Some((live.version(), live.index().len() as u64))
    }
}

/// The live instances, with the events for split boards held back and applied per instance
/// at once by [`Grouped::settle`], each board's shards changing on threads of their own: a
/// split board's writes spread over its shards. A whole board, or any board when `join` has
/// one thread, takes each event at once, as [`LiveInstances`] does. Instances are independent, so only the order within one matters:
/// anything but an event settles what is held first.
pub struct Grouped<'a> {
    live: LiveInstances<'a>,
    join: &'a (dyn Join + Sync),
    held: Vec<(Arc<BoardSlot>, Vec<HeldEvent>)>,
    refused: Vec<LogError>,
}

/// An event held for a split board, with the player's profile.
type HeldEvent = (ScoreEvent, Option<Arc<Profile>>);

impl<'a> Grouped<'a> {
    /// Holds back events for `live`'s split boards; `join` runs their shards.
    pub fn new(live: LiveInstances<'a>, join: &'a (dyn Join + Sync)) -> Grouped<'a> {
        Grouped {
            live,
            join,
            held: Vec::new(),
            refused: Vec::new(),
        }
    }

    /// Applies the events held, and returns every event a board refused since the start
    /// (checked before the commit, so a bug: the log stays the truth).
    pub fn finish(mut self) -> Vec<LogError> {
        self.settle();
        self.refused
    }

    /// Applies the events held, each instance under its write lock once, so a read sees it
    /// before them or after them.
    fn settle(&mut self) {
        for (slot, events) in std::mem::take(&mut self.held) {
            let mut board = slot.write();
            let results = board.apply_group(events.iter().map(|(e, p)| (e, p.as_ref())), self.join);
            for ((event, _), result) in events.iter().zip(results) {
                if let Err(source) = result {
                    self.refused.push(LogError::apply(&slot.id, event, source));
                }
            }
        }
    }
}

impl Instances for Grouped<'_> {
    async fn prepare(&mut self, board: &BoardId, period: &Period) -> Result<(), LogError> {
        self.settle();
        self.live.prepare(board, period).await
    }

    fn apply(
        &mut self,
        board: &BoardId,
        period: &Period,
        event: &ScoreEvent,
        profile: Option<&Arc<Profile>>,
    ) -> Result<(), LogError> {
        let entry = self.live.entry(board)?;
        // A board that feeds the feed reads each change's ranks right after it, so its events
        // are applied one by one.
        if entry.def.shard_count() == 1 || self.join.threads() <= 1 || !entry.def.feed.is_empty() {
            return LiveInstances::apply_to(&self.live.registry.feed, &entry, board, period, event, profile);
        }
        let slot = entry.instance_or_create(period);
        let held = match self.held.iter().position(|(s, _)| Arc::ptr_eq(s, &slot)) {
            Some(i) => &mut self.held[i].1,
            None => {
                self.held.push((slot, Vec::new()));
                &mut self.held.last_mut().expect("just pushed").1
            }
        };
        held.push((event.clone(), profile.cloned()));
        Ok(())
    }

    fn recompute(
        &mut self,
        board: &BoardId,
        period: &Period,
        player: &PlayerId,
        events: &[ScoreEvent],
        profile: Option<&Arc<Profile>>,
    ) -> Result<(Option<u64>, u64), LogError> {
        self.settle();
        self.live.recompute(board, period, player, events, profile)
    }

    fn set_profile(
        &mut self,
        board: &BoardId,
        period: &Period,
        player: &PlayerId,
        profile: Option<Arc<Profile>>,
        erase: bool,
    ) -> Option<(u64, u64)> {
        self.settle();
        self.live.set_profile(board, period, player, profile, erase)
    }

    fn periods(&self, board: &BoardId) -> Vec<Period> {
        self.live.periods(board)
    }

    fn result(&mut self, board: &BoardId) -> Result<(Vec<RankedEntry>, u64, String), LogError> {
        self.settle();
        self.live.result(board)
    }

    fn standing(&mut self, board: &BoardId, period: &Period) -> Option<(u64, u64)> {
        self.settle();
        self.live.standing(board, period)
    }

    fn archive(&mut self, board: &BoardId) {
        self.settle();
        self.live.archive(board);
    }
}

/// The instances of a trial run: an action performed against a copy of the domain, where each
/// recompute only folds the player's events by the board's rules and changes nothing. It needs
/// no board state (a recompute depends only on the events), so it is the same decision the
/// live writer and a replay reach, taken before the action is written.
pub(super) struct Trial<'a> {
    pub(super) registry: &'a Registry,
}

impl Instances for Trial<'_> {
    async fn prepare(&mut self, _board: &BoardId, _period: &Period) -> Result<(), LogError> {
        Ok(())
    }

    fn apply(
        &mut self,
        _board: &BoardId,
        _period: &Period,
        _event: &ScoreEvent,
        _profile: Option<&Arc<Profile>>,
    ) -> Result<(), LogError> {
        // `perform` never applies events; a trial has nothing to apply them to.
        Ok(())
    }

    fn set_profile(
        &mut self,
        _board: &BoardId,
        _period: &Period,
        _player: &PlayerId,
        _profile: Option<Arc<Profile>>,
        _erase: bool,
    ) -> Option<(u64, u64)> {
        // A profile change cannot fail on a board: there is nothing to try.
        None
    }

    fn recompute(
        &mut self,
        board: &BoardId,
        period: &Period,
        player: &PlayerId,
        events: &[ScoreEvent],
        _profile: Option<&Arc<Profile>>,
    ) -> Result<(Option<u64>, u64), LogError> {
        let entry = self
            .registry
            .entry(board)
            .ok_or_else(|| Refusal::UnknownBoard(board.clone()))?;
        entry.check_not_broken()?;
        entry
            .def
            .rules
            .recompute(events.iter().filter(|e| e.player == *player))
            .map_err(|source| match source {
                ApplyError::ValueOverflow => LogError::ActionRefused(ActionRefusal::TotalOverflow {
                    player: player.as_str().to_owned(),
                    board: Box::new(board.clone()),
                    period_key: period.key.clone(),
                }),
                source => LogError::recompute(player, board, period, source),
            })?;
        Ok((None, 0))
    }

    fn periods(&self, board: &BoardId) -> Vec<Period> {
        LiveInstances::periods_of(self.registry, board)
    }

    fn result(&mut self, board: &BoardId) -> Result<(Vec<RankedEntry>, u64, String), LogError> {
        // A result snapshot of a broken board would record a board the log does not give.
        if let Some(entry) = self.registry.entry(board) {
            entry.check_not_broken()?;
        }
        Ok((Vec::new(), 0, String::new()))
    }

    fn archive(&mut self, _board: &BoardId) {}
}

/// Instances driven through a log that may hold an entry that cannot be carried out: an entry
/// that fails on a board marks that board broken (its first failure is kept and printed) and
/// the entry goes on with its other boards; a broken board takes nothing more. So one bad
/// entry costs the boards it touches, not the whole service.
pub struct Tolerant<'r, 'i, I> {
    inner: &'i mut I,
    registry: &'r Registry,
    /// The boards marked broken, also kept here so that a replay with none asks nothing of
    /// the registry per event.
    broken: HashSet<BoardId>,
    /// The `seq` of the log entry being carried out.
    pub seq: i64,
}

impl<'r, 'i, I> Tolerant<'r, 'i, I> {
    /// Drives `inner`, marking broken boards in `registry` (the ones marked already stay so).
    pub fn new(inner: &'i mut I, registry: &'r Registry, seq: i64) -> Tolerant<'r, 'i, I> {
        let broken = registry.broken().into_iter().map(|(id, _)| id).collect();
        Tolerant {
            inner,
            registry,
            broken,
            seq,
        }
    }

    fn is_broken(&self, board: &BoardId) -> bool {
        !self.broken.is_empty() && self.broken.contains(board)
    }

    /// Marks `board` broken by the current entry and says why (the error and its sources), once
    /// per board.
    pub fn break_board(&mut self, board: &BoardId, why: &(dyn std::error::Error + 'static)) {
        let Some(entry) = self.registry.entry(board) else {
            return;
        };
        if self.broken.insert(board.clone()) {
            let why = Chain(why).to_string();
            tracing::error!(
                "the log entry at seq {} cannot be carried out on board {board}: {why}; the board is not served, every other board is",
                self.seq
            );
            entry.mark_broken(self.seq, why);
        }
    }
}

impl<I: Instances + Send> Instances for Tolerant<'_, '_, I> {
    async fn prepare(&mut self, board: &BoardId, period: &Period) -> Result<(), LogError> {
        if !self.is_broken(board)
            && let Err(e) = self.inner.prepare(board, period).await
        {
            self.break_board(board, &e);
        }
        Ok(())
    }

    fn apply(
        &mut self,
        board: &BoardId,
        period: &Period,
        event: &ScoreEvent,
        profile: Option<&Arc<Profile>>,
    ) -> Result<(), LogError> {
        if !self.is_broken(board)
            && let Err(e) = self.inner.apply(board, period, event, profile)
        {
            self.break_board(board, &e);
        }
        Ok(())
    }

    fn set_profile(
        &mut self,
        board: &BoardId,
        period: &Period,
        player: &PlayerId,
        profile: Option<Arc<Profile>>,
        erase: bool,
    ) -> Option<(u64, u64)> {
        if self.is_broken(board) {
            return None;
        }
        self.inner.set_profile(board, period, player, profile, erase)
    }

    fn recompute(
        &mut self,
        board: &BoardId,
        period: &Period,
        player: &PlayerId,
        events: &[ScoreEvent],
        profile: Option<&Arc<Profile>>,
    ) -> Result<(Option<u64>, u64), LogError> {
        if self.is_broken(board) {
            return Ok((None, 0));
        }
        self.inner
            .recompute(board, period, player, events, profile)
            .or_else(|e| {
                self.break_board(board, &e);
                Ok((None, 0))
            })
    }

    fn periods(&self, board: &BoardId) -> Vec<Period> {
        self.inner.periods(board)
    }

    fn result(&mut self, board: &BoardId) -> Result<(Vec<RankedEntry>, u64, String), LogError> {
        if self.is_broken(board) {
            return Ok((Vec::new(), 0, String::new()));
        }
        self.inner.result(board).or_else(|e| {
            self.break_board(board, &e);
            Ok((Vec::new(), 0, String::new()))
        })
    }

    fn archive(&mut self, board: &BoardId) {
        self.inner.archive(board);
    }

    fn standing(&mut self, board: &BoardId, period: &Period) -> Option<(u64, u64)> {
        if self.is_broken(board) {
            return None;
        }
        self.inner.standing(board, period)
    }
}

/// An instance being rebuilt: the fast fold until an action needs a full board.
enum Building {
    Fast(Replay),
    Full(Board),
}

impl Building {
    fn board(&mut self) -> &mut Board {
        if let Building::Fast(_) = self {
            let Building::Fast(replay) = std::mem::replace(
                self,
                Building::Full(Board::new(standings_core::BoardRules::new(
                    standings_core::ScoreMode::Highest,
                ))),
            ) else {
                unreachable!("checked above")
            };
            *self = Building::Full(replay.finish());
        }
        match self {
            Building::Full(board) => board,
            Building::Fast(_) => unreachable!("converted above"),
        }
    }
}

/// The instances of a rebuild.
pub struct RebuildInstances<'a> {
    registry: &'a Registry,
    building: HashMap<(BoardId, String), (Period, Building)>,
    archived: HashSet<BoardId>,
    only: Option<BoardId>,
    /// Which instances this pass builds: the current ones (all time and periods still open at
    /// `now`), or the history (closed periods).
    phase: Phase,
}

/// The two passes of a rebuild: the live boards first, then the history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Every instance in one pass.
    All,
    /// All time and the periods still open at this time (ms).
    Current(i64),
    /// The periods closed at this time (ms).
    History(i64),
}

impl<'a> RebuildInstances<'a> {
    /// Empty instances for the boards of `registry` (or only for one board).
    pub fn new(registry: &'a Registry, only: Option<BoardId>, phase: Phase) -> RebuildInstances<'a> {
        RebuildInstances {
            registry,
            building: HashMap::new(),
            archived: HashSet::new(),
            only,
            phase,
        }
    }

    fn skips(&self, board: &BoardId, period: &Period) -> bool {
        if self.only.as_ref().is_some_and(|only| only != board) {
            return true;
        }
        let closed = |now: i64| {
            self.registry
                .entry(board)
                .is_some_and(|entry| entry.calendar.is_closed(period, now))
        };
        match self.phase {
            Phase::All => false,
            Phase::Current(now) => closed(now),
            Phase::History(now) => !closed(now),
        }
    }

    fn slot(&mut self, board: &BoardId, period: &Period) -> Result<&mut Building, LogError> {
        let rules = self
            .registry
            .entry(board)
            .ok_or_else(|| Refusal::UnknownBoard(board.clone()))?
            .def
            .rules;
        Ok(&mut self
            .building
            .entry((board.clone(), period.key.clone()))
            .or_insert_with(|| (period.clone(), Building::Fast(Replay::new(rules))))
            .1)
    }

    /// Installs every rebuilt instance into the registry's entries (archived boards stay empty).
    /// O(instances built).
    pub fn install(self) {
        for ((board, _), (period, building)) in self.building {
            if self.archived.contains(&board) {
                continue;
            }
            let Some(entry) = self.registry.entry(&board) else {
                continue;
            };
            let built = match building {
                Building::Fast(replay) => replay.finish(),
                Building::Full(board) => board,
            };
            entry.install(BoardSlot::new(board, period, built));
        }
        for board in self.archived {
            if let Some(entry) = self.registry.entry(&board) {
                entry.archive();
            }
        }
    }
}

impl Instances for RebuildInstances<'_> {
    async fn prepare(&mut self, _board: &BoardId, _period: &Period) -> Result<(), LogError> {
        // A rebuild holds every instance in memory.
        Ok(())
    }

    fn apply(
        &mut self,
        board: &BoardId,
        period: &Period,
        event: &ScoreEvent,
        profile: Option<&Arc<Profile>>,
    ) -> Result<(), LogError> {
        if self.skips(board, period) {
            return Ok(());
        }
        let result = match self.slot(board, period)? {
            Building::Fast(replay) => replay.push_as(event, profile).map(|_| ()),
            Building::Full(full) => full.apply_as(event, profile).map(|_| ()),
        };
        result.map_err(|source| LogError::apply(board, event, source))
    }

    fn set_profile(
        &mut self,
        board: &BoardId,
        period: &Period,
        player: &PlayerId,
        profile: Option<Arc<Profile>>,
        erase: bool,
    ) -> Option<(u64, u64)> {
        if self.skips(board, period) {
            return None;
        }
        let key = (board.clone(), period.key.clone());
        match &mut self.building.get_mut(&key)?.1 {
            // The fast fold counts the change as the board would; a rank is not asked of it.
            Building::Fast(replay) => {
                let changed = if erase {
                    replay.erase(player)
                } else {
                    replay.set_profile(player, profile)
                };
                changed.then(|| (0, replay.version()))
            }
            Building::Full(full) => changed_rank(full, player, profile, erase),
        }
    }

    fn recompute(
        &mut self,
        board: &BoardId,
        period: &Period,
        player: &PlayerId,
        events: &[ScoreEvent],
        profile: Option<&Arc<Profile>>,
    ) -> Result<(Option<u64>, u64), LogError> {
        if self.skips(board, period) {
            return Ok((None, 0));
        }
        let full = self.slot(board, period)?.board();
        full.recompute_player_as(player, events, profile)
            .map_err(|source| LogError::recompute(player, board, period, source))?;
        Ok((full.index().rank_of_player(player.as_str()), full.version()))
    }

    fn periods(&self, board: &BoardId) -> Vec<Period> {
        let mut periods: Vec<Period> = self
            .building
            .iter()
            .filter(|((b, _), _)| b == board)
            .map(|(_, (period, _))| period.clone())
            .collect();
        periods.sort_by(|a, b| a.key.cmp(&b.key));
        periods
    }

    fn result(&mut self, board: &BoardId) -> Result<(Vec<RankedEntry>, u64, String), LogError> {
        if self.skips(board, &Period::all_time()) {
            return Ok((Vec::new(), 0, String::new()));
        }
        let full = self.slot(board, &Period::all_time())?.board();
        Ok((result_entries(full), full.version(), full.digest().to_string()))
    }

    fn archive(&mut self, board: &BoardId) {
        self.archived.insert(board.clone());
    }
}

#[cfg(test)]
mod tests {
    use standings_core::{BoardRules, ScoreMode};

    use super::*;
    use crate::domain::BoardDef;

    fn split_board() -> BoardDef {
        BoardDef {
            metadata_max_bytes: 256,
            shards: 4,
            segments: Default::default(),
            feed: Default::default(),
            id: BoardId {
                game: "g".into(),
                mode: "m".into(),
                season: "s".into(),
                scope: "global".into(),
            },
            rules: BoardRules::new(ScoreMode::Highest),
            periods: vec!["all_time".into()],
            grace_seconds: 0,
            timezone: "UTC".into(),
        }
    }

    /// A split board's events wait for the group's end, and anything else done to a board
    /// (here a disqualification's recompute) first applies what waits, so the board changes in
    /// the log's order: the player ends unranked, not ranked by the event held before it.
    #[tokio::test]
    async fn held_events_are_applied_before_anything_else_touches_a_board() {
        let registry = Registry::default();
        let def = split_board();
        registry.add(&def).unwrap();
        let (dir, url) = crate::store::tests::temp_sqlite("grouped");
        let store = Store::open(&url).await.unwrap();
        let period = Period::all_time();
        let mut grouped = Grouped::new(
            LiveInstances {
                registry: &registry,
                store: &store,
            },
            &standings_core::Threads(2),
        );
        for (i, player) in ["p-a", "p-b", "p-a"].iter().enumerate() {
            let event = ScoreEvent::new(&format!("e{i}"), player, 10 * (i as i64 + 1), 1_000).unwrap();
            grouped.apply(&def.id, &period, &event, None).unwrap();
        }
        let slot = registry.entry(&def.id).unwrap().all_time();
        assert_eq!(slot.read().version(), 0, "held until the group's end");
        let p_b = PlayerId::new("p-b").unwrap();
        let (rank, version) = grouped.recompute(&def.id, &period, &p_b, &[], None).unwrap();
        assert_eq!((rank, version), (None, 4), "three events, then the recompute");
        let late = ScoreEvent::new("e3", "p-c", 5, 1_000).unwrap();
        grouped.apply(&def.id, &period, &late, None).unwrap();
        assert!(grouped.finish().is_empty());
        {
            let board = slot.read();
            assert_eq!(board.version(), 5);
            assert_eq!(board.index().rank_of_player("p-a"), Some(1));
            assert_eq!(board.index().rank_of_player("p-b"), None);
            assert_eq!(board.index().rank_of_player("p-c"), Some(2));
        }
        store.close().await;
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
