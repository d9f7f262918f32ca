//! What the log means: where each event goes (season state, periods, lateness), and what each
//! action does (season transitions, moderation, late decisions). The live writer and the rebuild
//! run this same code over the same log in the same `seq` order, so they reach the same boards,
//! versions and results.

use std::collections::{HashMap, HashSet};
use std::sync::RwLock;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use standings_core::{ApplyError, Board, BoardId, PlayerId, Replay, ScoreEvent};

use crate::boards::{BoardEntry, BoardSlot, Registry, core_event};
use crate::clock::format_rfc3339;
use crate::domain::periods::Period;
use crate::domain::seasons::{SeasonBook, SeasonRecord, SeasonState};
use crate::domain::{ActionRow, BoardDef, LoggedEvent, NewEvent, ResultRow};
use crate::http::error::AppError;
use crate::store::Store;
use crate::sync::RwLockUnpoisoned;

/// Moderation and late-decision state derived from the action log.
#[derive(Default)]
pub struct Domain {
    /// Every season's state.
    pub seasons: SeasonBook,
    invalidated: RwLock<HashSet<(String, String)>>,
    disqualified: RwLock<HashSet<(BoardId, String)>>,
    /// Late events decided so far: `true` applied, `false` rejected.
    decisions: RwLock<HashMap<(String, String), bool>>,
    /// The next correction number of each board with results.
    next_correction: RwLock<HashMap<BoardId, i64>>,
}

/// [`Domain`] as plain data, for a checkpoint. Every list is sorted, so equal states encode
/// equally.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainState {
    seasons: Vec<(String, String, SeasonRecord)>,
    invalidated: Vec<(String, String)>,
    disqualified: Vec<(BoardId, String)>,
    decisions: Vec<(String, String, bool)>,
    next_correction: Vec<(BoardId, i64)>,
}

impl Domain {
    /// The state as plain data.
    pub fn state(&self) -> DomainState {
        fn sorted<T: Ord>(mut items: Vec<T>) -> Vec<T> {
            items.sort();
            items
        }
        DomainState {
            seasons: self.seasons.records(),
            invalidated: sorted(self.invalidated.read_unpoisoned().iter().cloned().collect()),
            disqualified: sorted(self.disqualified.read_unpoisoned().iter().cloned().collect()),
            decisions: sorted(
                self.decisions
                    .read_unpoisoned()
                    .iter()
                    .map(|((game, event), apply)| (game.clone(), event.clone(), *apply))
                    .collect(),
            ),
            next_correction: sorted(
                self.next_correction
                    .read_unpoisoned()
                    .iter()
                    .map(|(board, next)| (board.clone(), *next))
                    .collect(),
            ),
        }
    }

    /// A domain holding `state`.
    pub fn from_state(state: DomainState) -> Domain {
        let domain = Domain::default();
        for (game, season, record) in state.seasons {
            domain.seasons.set(&game, &season, record);
        }
        *domain.invalidated.write_unpoisoned() = state.invalidated.into_iter().collect();
        *domain.disqualified.write_unpoisoned() = state.disqualified.into_iter().collect();
        *domain.decisions.write_unpoisoned() = state
            .decisions
            .into_iter()
            .map(|(game, event, apply)| ((game, event), apply))
            .collect();
        *domain.next_correction.write_unpoisoned() = state.next_correction.into_iter().collect();
        domain
    }

    /// Whether an event is invalidated.
    pub fn is_invalidated(&self, game: &str, event_id: &str) -> bool {
        let invalidated = self.invalidated.read_unpoisoned();
        // Asked for every event applied: with no invalidations, no key is built.
        !invalidated.is_empty() && invalidated.contains(&(game.to_string(), event_id.to_string()))
    }

    /// Whether any player is disqualified from any board (one check per event submitted
    /// instead of one per board it feeds).
    pub fn disqualifies_anyone(&self) -> bool {
        !self.disqualified.read_unpoisoned().is_empty()
    }

    /// Whether a player is disqualified from a board.
    pub fn is_disqualified(&self, board: &BoardId, player: &str) -> bool {
        self.disqualified
            .read_unpoisoned()
            .contains(&(board.clone(), player.to_string()))
    }

    /// The late decision taken on an event, if any.
    pub fn decision(&self, game: &str, event_id: &str) -> Option<bool> {
        self.decisions
            .read_unpoisoned()
            .get(&(game.to_string(), event_id.to_string()))
            .copied()
    }

    /// The next correction number of a board (0 is the finalized original), counted up.
    fn take_correction(&self, board: &BoardId) -> i64 {
        let mut next = self.next_correction.write_unpoisoned();
        let slot = next.entry(board.clone()).or_insert(0);
        *slot += 1;
        *slot - 1
    }

    fn set_invalidated(&self, game: &str, event_id: &str, invalid: bool) -> bool {
        let key = (game.to_string(), event_id.to_string());
        let mut set = self.invalidated.write_unpoisoned();
        if invalid {
            set.insert(key)
        } else {
            set.remove(&key)
        }
    }

    fn set_disqualified(&self, board: &BoardId, player: &str, out: bool) -> bool {
        let key = (board.clone(), player.to_string());
        let mut set = self.disqualified.write_unpoisoned();
        if out { set.insert(key) } else { set.remove(&key) }
    }

    /// Whether a stored event arrived after its season left `active` (so it was late everywhere).
    pub fn season_late(&self, e: &LoggedEvent) -> bool {
        self.seasons
            .get(&e.game, &e.season)
            .left_active_seq
            .is_some_and(|left| e.seq > left)
    }

    /// Whether a stored event counts on an instance where it is (or is not) late: not
    /// invalidated, and either on time there or applied by a late decision.
    pub fn counts(&self, e: &LoggedEvent, late_there: bool) -> bool {
        !self.is_invalidated(&e.game, &e.event_id)
            && (!late_there || self.decision(&e.game, &e.event_id) == Some(true))
    }
}

/// One instance an event feeds, and whether the event is late there.
#[derive(Clone, Debug)]
pub struct Target {
    /// The board.
    pub board: BoardId,
    /// The period instance.
    pub period: Period,
    /// Late: the period had closed, or the season had left `active`, when it arrived.
    pub late: bool,
}

/// The instances an event feeds. Unknown boards are an error (events are validated against
/// the definitions before they are stored, and definitions are never removed).
pub fn targets(registry: &Registry, e: &NewEvent, season_late: bool) -> Result<Vec<Target>, AppError> {
    let mut found = Vec::new();
    for board in e.boards() {
        let entry = registry
            .entry(&board)
            .ok_or_else(|| AppError::UnknownBoard(format!("no board {board}")))?;
        for period in entry.calendar.periods_of(e.achieved_at) {
            let late = season_late || entry.calendar.is_closed(&period, e.received_at);
            found.push(Target {
                board: board.clone(),
                period,
                late,
            });
        }
    }
    Ok(found)
}

/// Access to the board instances being driven: the live registry, or a rebuild's.
pub trait Instances {
    /// Makes sure an instance that left memory is back before it is changed.
    fn prepare(
        &mut self,
        board: &BoardId,
        period: &Period,
    ) -> impl std::future::Future<Output = Result<(), AppError>> + Send;
    /// Applies an event to an instance, creating it when new.
    fn apply(&mut self, board: &BoardId, period: &Period, event: &ScoreEvent) -> Result<(), AppError>;
    /// Recomputes a player's aggregate on an instance from the given valid events; returns the
    /// player's rank after it (if ranked) and the instance's version.
    fn recompute(
        &mut self,
        board: &BoardId,
        period: &Period,
        player: &PlayerId,
        events: &[ScoreEvent],
    ) -> Result<(Option<u64>, u64), AppError>;
    /// The periods of a board that have an instance.
    fn periods(&self, board: &BoardId) -> Vec<Period>;
    /// The all-time instance's entries, version and digest, for a result snapshot.
    fn result(&mut self, board: &BoardId) -> Result<(Value, u64, String), AppError>;
    /// Frees a board's instances (the season was archived).
    fn archive(&mut self, board: &BoardId);
}

/// The ranked entries of a board, as results store them.
pub fn result_entries(board: &Board) -> Value {
    let entries: Vec<Value> = board
        .index()
        .range(1, board.index().len())
        .iter()
        .map(|e| {
            json!({"rank": e.rank, "player_id": e.player, "value": e.value, "achieved_at": format_rfc3339(e.achieved_at)})
        })
        .collect();
    Value::Array(entries)
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

    fn entry(&self, board: &BoardId) -> Result<std::sync::Arc<BoardEntry>, AppError> {
        self.registry
            .entry(board)
            .ok_or_else(|| AppError::UnknownBoard(format!("no board {board}")))
    }
}

impl Instances for LiveInstances<'_> {
    async fn prepare(&mut self, board: &BoardId, period: &Period) -> Result<(), AppError> {
        let entry = self.entry(board)?;
        if entry.instance(&period.key).is_none()
            && let Some((version, entries)) = self.store.period_snapshot(board, &period.key).await?
        {
            entry.install(entry.restored(period, version, &entries)?);
        }
        Ok(())
    }

    fn apply(&mut self, board: &BoardId, period: &Period, event: &ScoreEvent) -> Result<(), AppError> {
        let slot = self.entry(board)?.instance_or_create(period);
        let mut live = slot.write();
        live.apply(event).map_err(|e| {
            AppError::Internal(format!(
                "event {} refused by {board}: {e}",
                event.event_id.as_str()
            ))
        })?;
        Ok(())
    }

    fn recompute(
        &mut self,
        board: &BoardId,
        period: &Period,
        player: &PlayerId,
        events: &[ScoreEvent],
    ) -> Result<(Option<u64>, u64), AppError> {
        let slot = self.entry(board)?.instance_or_create(period);
        let mut live = slot.write();
        live.recompute_player(player, events)
            .map_err(|e| AppError::Internal(format!("recompute on {board} failed: {e}")))?;
        Ok((live.index().rank_of_player(player.as_str()), live.version()))
    }

    fn periods(&self, board: &BoardId) -> Vec<Period> {
        LiveInstances::periods_of(self.registry, board)
    }

    fn result(&mut self, board: &BoardId) -> Result<(Value, u64, String), AppError> {
        let slot: std::sync::Arc<BoardSlot> = self.entry(board)?.all_time();
        let live = slot.read();
        Ok((result_entries(&live), live.version(), live.digest().to_string()))
    }

    fn archive(&mut self, board: &BoardId) {
        if let Some(entry) = self.registry.entry(board) {
            entry.archive();
        }
    }
}

/// The instances of a trial run: an action performed against a copy of the domain, where each
/// recompute only folds the player's events by the board's rules and changes nothing. It needs
/// no board state (a recompute depends only on the events), so it is the same decision the
/// live writer and a replay reach, taken before the action is written.
struct Trial<'a> {
    registry: &'a Registry,
}

impl Instances for Trial<'_> {
    async fn prepare(&mut self, _board: &BoardId, _period: &Period) -> Result<(), AppError> {
        Ok(())
    }

    fn apply(&mut self, _board: &BoardId, _period: &Period, _event: &ScoreEvent) -> Result<(), AppError> {
        // `perform` never applies events; a trial has nothing to apply them to.
        Ok(())
    }

    fn recompute(
        &mut self,
        board: &BoardId,
        period: &Period,
        player: &PlayerId,
        events: &[ScoreEvent],
    ) -> Result<(Option<u64>, u64), AppError> {
        let entry = self
            .registry
            .entry(board)
            .ok_or_else(|| AppError::UnknownBoard(format!("no board {board}")))?;
        entry.check_not_broken()?;
        entry
            .def
            .rules
            .recompute(events.iter().filter(|e| e.player == *player))
            .map_err(|e| match e {
                ApplyError::ValueOverflow => AppError::ValueOutOfRange(format!(
                    "the total of {:?} on {board} ({}) would overflow a 64-bit integer",
                    player.as_str(),
                    period.key
                )),
                other => AppError::Internal(format!(
                    "a recompute of {:?} on {board} ({}) fails: {other}",
                    player.as_str(),
                    period.key
                )),
            })?;
        Ok((None, 0))
    }

    fn periods(&self, board: &BoardId) -> Vec<Period> {
        LiveInstances::periods_of(self.registry, board)
    }

    fn result(&mut self, board: &BoardId) -> Result<(Value, u64, String), AppError> {
        // A result snapshot of a broken board would record a board the log does not give.
        if let Some(entry) = self.registry.entry(board) {
            entry.check_not_broken()?;
        }
        Ok((Value::Null, 0, String::new()))
    }

    fn archive(&mut self, _board: &BoardId) {}
}

/// Decides whether an action can be carried out on the current state: performs it on a copy of
/// the domain with [`Trial`] instances, so every recompute it would run is folded and nothing
/// changes. `row` is the action as it would be logged (its `seq` the next one). A refusal is
/// the error the action would meet (`VALUE_OUT_OF_RANGE` for a total that would overflow).
pub async fn try_perform(
    store: &Store,
    registry: &Registry,
    domain: &Domain,
    row: &ActionRow,
    action: &Action,
) -> Result<(), AppError> {
    if let Action::Disqualify { board, .. } | Action::Reinstate { board, .. } = action
        && let Some(entry) = registry.entry(board)
    {
        entry.check_not_broken()?;
    }
    let copy = Domain::from_state(domain.state());
    perform(store, registry, &copy, &mut Trial { registry }, row, action).await?;
    Ok(())
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

    /// Marks `board` broken by the current entry and says why, once per board.
    pub fn break_board(&mut self, board: &BoardId, why: &AppError) {
        let Some(entry) = self.registry.entry(board) else {
            return;
        };
        if self.broken.insert(board.clone()) {
            tracing::error!(
                "the log entry at seq {} cannot be carried out on board {board}: {why}; the board is not served, every other board is",
                self.seq
            );
            entry.mark_broken(self.seq, why.to_string());
        }
    }
}

impl<I: Instances + Send> Instances for Tolerant<'_, '_, I> {
    async fn prepare(&mut self, board: &BoardId, period: &Period) -> Result<(), AppError> {
        if !self.is_broken(board)
            && let Err(e) = self.inner.prepare(board, period).await
        {
            self.break_board(board, &e);
        }
        Ok(())
    }

    fn apply(&mut self, board: &BoardId, period: &Period, event: &ScoreEvent) -> Result<(), AppError> {
        if !self.is_broken(board)
            && let Err(e) = self.inner.apply(board, period, event)
        {
            self.break_board(board, &e);
        }
        Ok(())
    }

    fn recompute(
        &mut self,
        board: &BoardId,
        period: &Period,
        player: &PlayerId,
        events: &[ScoreEvent],
    ) -> Result<(Option<u64>, u64), AppError> {
        if self.is_broken(board) {
            return Ok((None, 0));
        }
        self.inner.recompute(board, period, player, events).or_else(|e| {
            self.break_board(board, &e);
            Ok((None, 0))
        })
    }

    fn periods(&self, board: &BoardId) -> Vec<Period> {
        self.inner.periods(board)
    }

    fn result(&mut self, board: &BoardId) -> Result<(Value, u64, String), AppError> {
        if self.is_broken(board) {
            return Ok((Value::Null, 0, String::new()));
        }
        self.inner.result(board).or_else(|e| {
            self.break_board(board, &e);
            Ok((Value::Null, 0, String::new()))
        })
    }

    fn archive(&mut self, board: &BoardId) {
        self.inner.archive(board);
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

    fn slot(&mut self, board: &BoardId, period: &Period) -> Result<&mut Building, AppError> {
        let rules = self
            .registry
            .entry(board)
            .ok_or_else(|| AppError::UnknownBoard(format!("no board {board}")))?
            .def
            .rules;
        Ok(&mut self
            .building
            .entry((board.clone(), period.key.clone()))
            .or_insert_with(|| (period.clone(), Building::Fast(Replay::new(rules))))
            .1)
    }

    /// Installs every rebuilt instance into the registry's entries (archived boards stay empty).
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
    async fn prepare(&mut self, _board: &BoardId, _period: &Period) -> Result<(), AppError> {
        // A rebuild holds every instance in memory.
        Ok(())
    }

    fn apply(&mut self, board: &BoardId, period: &Period, event: &ScoreEvent) -> Result<(), AppError> {
        if self.skips(board, period) {
            return Ok(());
        }
        let result = match self.slot(board, period)? {
            Building::Fast(replay) => replay.push(event).map(|_| ()),
            Building::Full(full) => full.apply(event).map(|_| ()),
        };
        result.map_err(|e| {
            AppError::Internal(format!(
                "event {} cannot be replayed on {board}: {e}",
                event.event_id.as_str()
            ))
        })
    }

    fn recompute(
        &mut self,
        board: &BoardId,
        period: &Period,
        player: &PlayerId,
        events: &[ScoreEvent],
    ) -> Result<(Option<u64>, u64), AppError> {
        if self.skips(board, period) {
            return Ok((None, 0));
        }
        let full = self.slot(board, period)?.board();
        full.recompute_player(player, events)
            .map_err(|e| AppError::Internal(format!("recompute on {board} failed: {e}")))?;
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

    fn result(&mut self, board: &BoardId) -> Result<(Value, u64, String), AppError> {
        if self.skips(board, &Period::all_time()) {
            return Ok((Value::Null, 0, String::new()));
        }
        let full = self.slot(board, &Period::all_time())?.board();
        Ok((result_entries(full), full.version(), full.digest().to_string()))
    }

    fn archive(&mut self, board: &BoardId) {
        self.archived.insert(board.clone());
    }
}

/// Applies a stored event to the instances where it is on time. Returns whether it was late
/// anywhere.
pub fn apply_event(
    registry: &Registry,
    domain: &Domain,
    instances: &mut impl Instances,
    e: &LoggedEvent,
) -> Result<bool, AppError> {
    let season_late = domain.season_late(e);
    let event = core_event(e)?;
    let mut late_anywhere = false;
    for target in targets(registry, e, season_late)? {
        if target.late {
            late_anywhere = true;
            continue;
        }
        instances.apply(&target.board, &target.period, &event)?;
    }
    Ok(late_anywhere)
}

/// An action request as the log stores it (`ActionRow::body`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Action {
    /// A season transition.
    SeasonState {
        /// The season.
        season: String,
        /// The state it moves to.
        to: SeasonState,
    },
    /// Invalidate one event on every board it fed.
    Invalidate {
        /// The event.
        target_event_id: String,
    },
    /// Restore an invalidated event.
    Restore {
        /// The event.
        target_event_id: String,
    },
    /// Remove a player from a board.
    Disqualify {
        /// The board.
        board: BoardId,
        /// The player.
        target_player_id: String,
    },
    /// Let a player back onto a board with their valid history.
    Reinstate {
        /// The board.
        board: BoardId,
        /// The player.
        target_player_id: String,
    },
    /// Decide a late event.
    LateDecision {
        /// The event.
        event_id: String,
        /// Apply it (true) or reject it (false).
        apply: bool,
    },
}

impl Action {
    /// The kind's name in the log.
    pub fn kind(&self) -> &'static str {
        match self {
            Action::SeasonState { .. } => "SEASON_STATE",
            Action::Invalidate { .. } => "INVALIDATE",
            Action::Restore { .. } => "RESTORE",
            Action::Disqualify { .. } => "DISQUALIFY",
            Action::Reinstate { .. } => "REINSTATE",
            Action::LateDecision { .. } => "LATE_DECISION",
        }
    }
}

/// A player's valid events on one instance as of `before_seq`, for a recompute.
async fn valid_events(
    store: &Store,
    registry: &Registry,
    domain: &Domain,
    board: &BoardId,
    period: &Period,
    player: &str,
    before_seq: i64,
) -> Result<Vec<ScoreEvent>, AppError> {
    if domain.is_disqualified(board, player) {
        return Ok(Vec::new());
    }
    let entry = registry
        .entry(board)
        .ok_or_else(|| AppError::UnknownBoard(format!("no board {board}")))?;
    let mut valid = Vec::new();
    for e in store.player_events(board, player, before_seq).await? {
        if !e.scopes.contains(&board.scope) {
            continue;
        }
        let Ok(event_period) = entry.calendar.period_of(period.kind, e.achieved_at) else {
            continue;
        };
        if event_period.key != period.key {
            continue;
        }
        let late_there = domain.season_late(&e) || entry.calendar.is_closed(period, e.received_at);
        if domain.counts(&e, late_there) {
            valid.push(core_event(&e)?);
        }
    }
    Ok(valid)
}

/// What an action changed on one instance.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Change {
    /// The board.
    pub game: String,
    /// The board.
    pub mode: String,
    /// The board.
    pub season: String,
    /// The board.
    pub scope: String,
    /// The period instance.
    pub period_key: String,
    /// The player whose aggregate was recomputed.
    pub player_id: String,
    /// Their rank after, or `None` when unranked.
    pub rank: Option<u64>,
    /// The instance's version after.
    pub board_version: u64,
}

/// What performing an action did.
#[derive(Debug, Default)]
pub struct Performed {
    /// Every instance it changed.
    pub changes: Vec<Change>,
    /// Result snapshots it produced (finalization, or corrections), to be stored.
    pub results: Vec<ResultRow>,
}

/// Performs a logged action on `instances`: the live boards or a rebuild's. `row.seq` bounds
/// which events exist. The action was validated when it was submitted.
pub async fn perform(
    store: &Store,
    registry: &Registry,
    domain: &Domain,
    instances: &mut impl Instances,
    row: &ActionRow,
    action: &Action,
) -> Result<Performed, AppError> {
    let mut performed = Performed::default();
    // The (board, player) pairs whose aggregates to recompute, and the periods to do it in.
    let mut recompute: Vec<(BoardId, Period, String)> = Vec::new();
    match action {
        Action::SeasonState { season, to } => {
            let record = domain.seasons.get(&row.game, season);
            domain
                .seasons
                .set(&row.game, season, record.moved(*to, row.created_at, row.seq));
            let boards: Vec<BoardDef> = registry
                .of_season(&row.game, season)
                .iter()
                .map(|e| e.def.clone())
                .collect();
            if *to == SeasonState::Finalized {
                for def in &boards {
                    performed.results.push(snapshot(
                        instances,
                        &def.id,
                        domain.take_correction(&def.id),
                        row,
                    )?);
                }
            }
            if *to == SeasonState::Archived {
                for def in &boards {
                    instances.archive(&def.id);
                }
            }
            return Ok(performed);
        }
        Action::Invalidate { target_event_id } | Action::Restore { target_event_id } => {
            let invalid = matches!(action, Action::Invalidate { .. });
            let Some(e) = store.find_event(&row.game, target_event_id).await? else {
                return Ok(performed);
            };
            if e.seq > row.seq || !domain.set_invalidated(&row.game, target_event_id, invalid) {
                // Already in that state: nothing changes.
                return Ok(performed);
            }
            let season_late = domain.season_late(&e);
            for target in targets(registry, &e, season_late)? {
                let late_there = target.late;
                // The event mattered there only if it counted (ignoring the invalidation).
                let decided = domain.decision(&e.game, &e.event_id) == Some(true);
                if !late_there || decided {
                    recompute.push((target.board, target.period, e.player_id.clone()));
                }
            }
        }
        Action::Disqualify {
            board,
            target_player_id,
        }
        | Action::Reinstate {
            board,
            target_player_id,
        } => {
            let out = matches!(action, Action::Disqualify { .. });
            if !domain.set_disqualified(board, target_player_id, out) {
                return Ok(performed);
            }
            let mut periods = instances.periods(board);
            if !out {
                // The player's history may name periods that have no instance yet.
                let entry = registry
                    .entry(board)
                    .ok_or_else(|| AppError::UnknownBoard(format!("no board {board}")))?;
                for e in store.player_events(board, target_player_id, row.seq).await? {
                    for p in entry.calendar.periods_of(e.achieved_at) {
                        if !periods.iter().any(|q| q.key == p.key) {
                            periods.push(p);
                        }
                    }
                }
            }
            for period in periods {
                recompute.push((board.clone(), period, target_player_id.clone()));
            }
        }
        Action::LateDecision { event_id, apply } => {
            let Some(e) = store.find_event(&row.game, event_id).await? else {
                return Ok(performed);
            };
            domain
                .decisions
                .write_unpoisoned()
                .insert((row.game.clone(), event_id.clone()), *apply);
            if *apply && !domain.is_invalidated(&e.game, &e.event_id) {
                let season_late = domain.season_late(&e);
                for target in targets(registry, &e, season_late)? {
                    if target.late {
                        recompute.push((target.board, target.period, e.player_id.clone()));
                    }
                }
            }
        }
    }
    let mut touched_results: Vec<BoardId> = Vec::new();
    for (board, period, player) in recompute {
        let events = valid_events(store, registry, domain, &board, &period, &player, row.seq).await?;
        let player_id = PlayerId::new(&player).map_err(|e| AppError::Internal(e.to_string()))?;
        instances.prepare(&board, &period).await?;
        let (rank, board_version) = instances.recompute(&board, &period, &player_id, &events)?;
        if period.key == Period::all_time().key && !touched_results.contains(&board) {
            touched_results.push(board.clone());
        }
        performed.changes.push(Change {
            game: board.game.clone(),
            mode: board.mode.clone(),
            season: board.season.clone(),
            scope: board.scope.clone(),
            period_key: period.key.clone(),
            player_id: player,
            rank,
            board_version,
        });
    }
    // A change to a season that has results is a numbered correction of each board it touched.
    for board in touched_results {
        if domain.seasons.get(&board.game, &board.season).state.has_results() {
            performed
                .results
                .push(snapshot(instances, &board, domain.take_correction(&board), row)?);
        }
    }
    Ok(performed)
}

fn snapshot(
    instances: &mut impl Instances,
    board: &BoardId,
    correction: i64,
    row: &ActionRow,
) -> Result<ResultRow, AppError> {
    let (entries, board_version, digest) = instances.result(board)?;
    Ok(ResultRow {
        board: board.clone(),
        correction,
        board_version: board_version as i64,
        digest,
        finalized_at: row.created_at,
        action_seq: row.seq,
        entries: entries.to_string(),
    })
}

/// Rebuilds every board (or only `only`) and the season and moderation state from the log:
/// the definitions, then every event and action in `seq` order, through the same code the live
/// writer runs. The current instances (all time, and periods still open at `now`) come first,
/// then, in a second pass when any board keeps periods, the closed history. Returns the result
/// snapshots the actions produced, for comparing with the stored ones. Calls `progress` with
/// the number of log entries read so far.
pub async fn rebuild(
    store: &Store,
    only: Option<&BoardId>,
    now: i64,
    mut progress: impl FnMut(u64),
) -> Result<(Registry, Domain, Vec<ResultRow>), AppError> {
    let registry = Registry::default();
    for def in store.boards().await? {
        registry
            .add(&def)
            .map_err(|e| AppError::Internal(format!("stored board {} is invalid: {e}", def.id)))?;
    }
    let has_periods = registry
        .all()
        .iter()
        .any(|e| e.calendar.kinds().len() > 1 || !e.keeps(crate::domain::periods::PeriodKind::AllTime));
    let (domain, mut results) = replay_pass(
        store,
        &registry,
        only,
        if has_periods {
            Phase::Current(now)
        } else {
            Phase::All
        },
        &mut progress,
    )
    .await?;
    if has_periods {
        // The history: the same log again, building only the closed periods. The season and
        // moderation state it derives is the same as the first pass's, which is kept.
        replay_pass(store, &registry, only, Phase::History(now), &mut progress).await?;
    }
    results.retain(|r| only.is_none_or(|o| r.board == *o));
    Ok((registry, domain, results))
}

async fn replay_pass(
    store: &Store,
    registry: &Registry,
    only: Option<&BoardId>,
    phase: Phase,
    progress: &mut impl FnMut(u64),
) -> Result<(Domain, Vec<ResultRow>), AppError> {
    let domain = Domain::default();
    let mut instances = RebuildInstances::new(registry, only.cloned(), phase);
    let (results, _) = replay_log(store, registry, &domain, &mut instances, 0, progress).await?;
    instances.install();
    Ok((domain, results))
}

/// Events per page of a replay: 20,000 are about 2.7 MB of packed JSON.
const REPLAY_PAGE_EVENTS: i64 = 20_000;

/// Runs the log after `after` (events and actions in `seq` order) on `instances`: the whole
/// log for a rebuild, or the part after a checkpoint on the live boards. Returns the result
/// snapshots the actions produced and the number of log entries replayed; calls `progress`
/// with the number of events read so far.
pub async fn replay_log(
    store: &Store,
    registry: &Registry,
    domain: &Domain,
    instances: &mut (impl Instances + Send),
    after: i64,
    progress: &mut impl FnMut(u64),
) -> Result<(Vec<ResultRow>, u64), AppError> {
    let actions = store.actions_after(after).await?;
    let mut actions = actions.iter().peekable();
    let mut results = Vec::new();
    let mut after = after;
    let mut events = 0u64;
    let mut replayed = 0u64;
    // The next page is read and parsed, on another thread, while this one is applied. The
    // replay itself never writes to the log, so a page read ahead holds what it would hold read
    // later; only a live service beside `standings rebuild` changes the log meanwhile, and its
    // writes were a race for the rebuild before reading ahead too.
    let read_after = |after: i64| {
        let store = store.clone();
        tokio::spawn(async move { store.events_after(after, REPLAY_PAGE_EVENTS).await })
    };
    let mut next = read_after(after);
    // An entry that fails marks the boards it fails on broken and the replay goes on: every
    // other board still comes up (see `Tolerant`).
    let mut instances = Tolerant::new(instances, registry, 0);
    loop {
        let page = next
            .await
            .map_err(|e| AppError::Internal(format!("reading the event log failed: {e}")))??;
        let Some(last) = page.last() else { break };
        after = last.seq;
        next = read_after(after);
        for e in &page {
            while let Some(action) = actions.next_if(|a| a.seq < e.seq) {
                results.extend(replay_action(store, registry, domain, &mut instances, action).await);
                replayed += 1;
            }
            instances.seq = e.seq;
            if let Err(why) = apply_event(registry, domain, &mut instances, e) {
                // The event itself cannot be read as one (an invalid id, an unknown board).
                for board in e.boards() {
                    instances.break_board(&board, &why);
                }
            }
            replayed += 1;
        }
        events += page.len() as u64;
        progress(events);
    }
    for action in actions {
        results.extend(replay_action(store, registry, domain, &mut instances, action).await);
        replayed += 1;
    }
    Ok((results, replayed))
}

/// Performs a logged action again; returns the result snapshots it produces, which the log's
/// first performance already stored. An action that fails on a board has broken that board
/// (`Tolerant`); one that fails as a whole (it cannot be read, or an event it needs cannot be)
/// breaks every board of its game, as any of them may be one it changes.
async fn replay_action<I: Instances + Send>(
    store: &Store,
    registry: &Registry,
    domain: &Domain,
    instances: &mut Tolerant<'_, '_, I>,
    row: &ActionRow,
) -> Vec<ResultRow> {
    instances.seq = row.seq;
    let performed = async {
        let logged: Value = serde_json::from_str(&row.body)
            .map_err(|e| AppError::Internal(format!("action {} is not JSON: {e}", row.seq)))?;
        let action: Action = serde_json::from_value(logged["action"].clone())
            .map_err(|e| AppError::Internal(format!("action {} cannot be read: {e}", row.seq)))?;
        perform(store, registry, domain, instances, row, &action).await
    };
    match performed.await {
        Ok(performed) => performed.results,
        Err(why) => {
            for entry in registry.of_game(&row.game) {
                instances.break_board(&entry.def.id, &why);
            }
            Vec::new()
        }
    }
}
