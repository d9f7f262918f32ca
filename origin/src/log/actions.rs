//! What an action does: season transitions (with result snapshots), INVALIDATE / RESTORE /
//! DISQUALIFY / REINSTATE (each a recompute of the player from their valid events), late decisions
//! and numbered corrections.
//!
//! An action is decided before it is logged (`try_perform`): it is performed on a copy of the
//! domain state with instances that only fold each recompute, and refused with the error it would
//! meet (`VALUE_OUT_OF_RANGE` for a total that would overflow), so the log never holds an action
//! that cannot be carried out.

use std::sync::Arc;

use standings_core::{BoardId, PlayerId, Profile, ScoreEvent};

use super::instances::{Instances, Trial};
use super::{LogError, targets};
use crate::boards::Registry;
use crate::domain::periods::Period;
use crate::domain::profile_book::profile_of;
use crate::domain::rewards::{self, Award};
use crate::domain::seasons::SeasonState;
use crate::domain::{Action, ActionRefusal, ActionRow, BoardDef, Change, Moderation, ResultRow};
use crate::store::Store;

/// Decides whether an action can be carried out on the current state: performs it on a copy of
/// the domain with `Trial` instances, so every recompute it would run is folded and nothing
/// changes. `row` is the action as it would be logged (its `seq` the next one). A refusal is
/// the error the action would meet (`VALUE_OUT_OF_RANGE` for a total that would overflow).
/// O(what `perform` costs), on a copy of the domain (O(its state)).
pub async fn try_perform(
    store: &Store,
    registry: &Registry,
    domain: &Moderation,
    row: &ActionRow,
    action: &Action,
) -> Result<(), LogError> {
    if let Action::Disqualify { board, .. } | Action::Reinstate { board, .. } = action
        && let Some(entry) = registry.entry(board)
    {
        entry.check_not_broken()?;
    }
    let copy = Moderation::from_state(domain.state());
    perform(store, registry, &copy, &mut Trial { registry }, row, action).await?;
    Ok(())
}

/// A player's valid events on one instance as of `before_seq`, for a recompute.
async fn valid_events(
    store: &Store,
    registry: &Registry,
    domain: &Moderation,
    board: &BoardId,
    period: &Period,
    player: &str,
    before_seq: i64,
) -> Result<Vec<ScoreEvent>, LogError> {
    if domain.is_disqualified(board, player) {
        return Ok(Vec::new());
    }
    let entry = registry
        .entry(board)
        .ok_or_else(|| ActionRefusal::UnknownBoard(Box::new(board.clone())))?;
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
            valid.push(e.core_event()?);
        }
    }
    Ok(valid)
}

/// What performing an action did.
#[derive(Debug, Default)]
pub struct Performed {
    /// Every instance it changed.
    pub changes: Vec<Change>,
    /// Result snapshots it produced (finalization, or corrections), to be stored.
    pub results: Vec<ResultRow>,
    /// For each of `results`, the rewards it changed (all it awards, for the first).
    pub(crate) awards: Vec<Vec<Award>>,
    /// The period instance it closed.
    pub(crate) closed: Option<crate::domain::feed::Closed>,
}

impl Performed {
    /// Adds a result and the rewards it changes. O(rewarded players).
    fn add_result(&mut self, domain: &Moderation, result: ResultRow) {
        let bands = domain.rewards(&result.board.game, &result.board.season);
        let after = rewards::awards(&bands, &result.entries);
        let before = domain.replace_awarded(&result.board, after.clone());
        self.awards.push(rewards::changed(&before, &after));
        self.results.push(result);
    }
}

/// Performs a logged action on `instances`: the live boards or a rebuild's. `row.seq` bounds
/// which events exist. The action was validated when it was submitted.
/// O(players it touches x their events), read through the player index.
pub async fn perform(
    store: &Store,
    registry: &Registry,
    domain: &Moderation,
    instances: &mut impl Instances,
    row: &ActionRow,
    action: &Action,
) -> Result<Performed, LogError> {
    registry.feed.entry(row.seq, row.created_at);
    let mut performed = Performed::default();
    // The (board, player) pairs whose aggregates to recompute, and the periods to do it in.
    let mut recompute: Vec<(BoardId, Period, String)> = Vec::new();
    match action {
        Action::SeasonState { season, to, rewards } => {
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
                domain.set_rewards(&row.game, season, rewards.clone());
                for def in &boards {
                    let result = snapshot(instances, &def.id, domain.take_correction(&def.id), row)?;
                    performed.add_result(domain, result);
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
            for target in targets(registry, &e, e.received_at, season_late)? {
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
                    .ok_or_else(|| ActionRefusal::UnknownBoard(Box::new(board.clone())))?;
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
        Action::Profile { .. } | Action::Rename { .. } | Action::ClearName { .. } | Action::Erase { .. } => {
            set_profile(registry, domain, instances, row, action, &mut performed)?;
            return Ok(performed);
        }
        Action::PeriodClose {
            board,
            period,
            period_key,
        } => {
            if !domain.note_closed(board, period, period_key) {
                // Logged twice (an import of a log that holds it, beside the service's own):
                // the first made the record.
                return Ok(performed);
            }
            let named = registry.entry(board).and_then(|entry| {
                let kind = crate::domain::periods::PeriodKind::parse(period)?;
                entry.calendar.parse_key(kind, period_key).ok()
            });
            if let Some(named) = named {
                instances.prepare(board, &named).await?;
                if let Some((board_version, players)) = instances.standing(board, &named) {
                    performed.closed = Some(crate::domain::feed::Closed {
                        board: board.clone(),
                        period: named,
                        board_version,
                        players,
                    });
                }
            }
            return Ok(performed);
        }
        Action::LockName { .. } | Action::UnlockName { .. } => {
            note_profile(domain, &row.game, action);
            return Ok(performed);
        }
        Action::LateDecision { event_id, apply } => {
            let Some(e) = store.find_event(&row.game, event_id).await? else {
                return Ok(performed);
            };
            domain.set_decision(&row.game, event_id, *apply);
            if *apply && !domain.is_invalidated(&e.game, &e.event_id) {
                let season_late = domain.season_late(&e);
                for target in targets(registry, &e, e.received_at, season_late)? {
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
        let player_id = PlayerId::new(&player).map_err(|source| LogError::InvalidPlayer {
            player: player.clone(),
            source,
        })?;
        instances.prepare(&board, &period).await?;
        let profile = domain.profiles.shown(&board.game, &player);
        let (rank, board_version) =
            instances.recompute(&board, &period, &player_id, &events, profile.as_ref())?;
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
            let result = snapshot(instances, &board, domain.take_correction(&board), row)?;
            performed.add_result(domain, result);
        }
    }
    Ok(performed)
}

/// Carries out a change of a player's profile: the book, then every instance of the game where
/// the player is ranked (each one version up, whatever the profile says, so a rebuild from a log
/// an erasure rewrote counts the same). Results are not corrected: a result keeps the names it
/// was taken with. O(the game's instances x log n).
fn set_profile(
    registry: &Registry,
    domain: &Moderation,
    instances: &mut impl Instances,
    row: &ActionRow,
    action: &Action,
    performed: &mut Performed,
) -> Result<(), LogError> {
    let Some(player) = action.profile_target() else {
        return Ok(());
    };
    let profile = note_profile(domain, &row.game, action);
    let erase = matches!(action, Action::Erase { .. });
    let player_id = PlayerId::new(player).map_err(|source| LogError::InvalidPlayer {
        player: player.to_owned(),
        source,
    })?;
    for entry in registry.of_game(&row.game) {
        let board = &entry.def.id;
        for period in instances.periods(board) {
            if let Some((rank, board_version)) =
                instances.set_profile(board, &period, &player_id, profile.clone(), erase)
            {
                performed.changes.push(Change {
                    game: board.game.clone(),
                    mode: board.mode.clone(),
                    season: board.season.clone(),
                    scope: board.scope.clone(),
                    period_key: period.key.clone(),
                    player_id: player.to_owned(),
                    rank: Some(rank),
                    board_version,
                });
            }
        }
    }
    Ok(())
}

/// Writes a profile action into the profile book and answers the profile the player's entries
/// show after it: the book's part of the action, also what a restart from a checkpoint reads
/// the profiles with. O(1).
pub fn note_profile(domain: &Moderation, game: &str, action: &Action) -> Option<Arc<Profile>> {
    let player = action.profile_target()?;
    let held = domain.profiles.get(game, player);
    let profile = match action {
        Action::Profile {
            display_name,
            country,
            anonymous,
            ..
        } => profile_of(display_name.as_deref(), country.as_deref(), *anonymous),
        Action::Rename { display_name, .. } => {
            profile_of(display_name.as_deref(), held.country(), held.anonymous())
        }
        Action::ClearName { .. } => profile_of(None, held.country(), held.anonymous()),
        Action::LockName { .. } | Action::UnlockName { .. } => {
            domain
                .profiles
                .set_locked(game, player, matches!(action, Action::LockName { .. }));
            return held.profile;
        }
        _ => None,
    };
    domain.profiles.set_profile(game, player, profile.clone());
    profile
}

fn snapshot(
    instances: &mut impl Instances,
    board: &BoardId,
    correction: i64,
    row: &ActionRow,
) -> Result<ResultRow, LogError> {
    let (entries, board_version, digest) = instances.result(board)?;
    Ok(ResultRow {
        board: board.clone(),
        correction,
        board_version: board_version as i64,
        digest,
        finalized_at: row.created_at,
        action_seq: row.seq,
        entries,
    })
}
