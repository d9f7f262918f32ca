//! Actions (season transitions, moderation, late decisions) through the same writer as events,
//! between groups, each in a transaction of its own.
//!
//! An action changes derived state for many players at once, so it must sit at one point in the
//! log's order: it is decided on the current state (`log::actions::try_perform`, on a copy), logged
//! with the next `seq`, then performed on the live boards. A refusal is the error the action would
//! have met. An action's commit whose answer was lost is resolved at once; if the database does not
//! answer, its `seq` is skipped and its game's boards are marked broken, because their state can no
//! longer be known to match the log.

use super::commit::unknown_commit_landed;
use super::driver::Writer;
use super::{ActionAnswer, ActionRequest, WriterError};
use crate::boards::Registry;
use crate::domain::{Action, Moderation};
use crate::domain::{ActionRefusal, ActionResult, ActionRow, Correction, EventStatus};
use crate::log::{self, LiveInstances, perform};
use crate::store::{CommitFailed, Store};

impl Writer {
    /// Validates, logs and performs one action, with nothing in flight and every committed
    /// group applied.
    pub(super) async fn act(&mut self, request: ActionRequest) -> Result<ActionAnswer, WriterError> {
        let erased = match &request.action {
            Action::Erase { target_player_id } => Some((request.game.clone(), target_player_id.clone())),
            _ => None,
        };
        let answer = act(self, request).await?;
        if let Some((game, player)) = erased {
            self.erase_stored(&game, &player, answer.seq).await?;
        }
        Ok(answer)
    }

    /// The stored part of an erasure logged at `seq` (its boards are done): the rows before it
    /// rewritten, a checkpoint as of it and every older one deleted (they held the boards with
    /// the name), and on SQLite the WAL emptied into the file. O(the player's rows + a
    /// checkpoint).
    async fn erase_stored(&mut self, game: &str, player: &str, seq: i64) -> Result<(), WriterError> {
        let rows = self.store.erase_player(game, player, seq).await?;
        // Closed periods that left memory are held as restored from the rows before the
        // rewrite: they go, so the next read restores the erased ones.
        self.registry.closed.forget_game(game);
        self.write_checkpoint().await?;
        // With no checkpoint as of the erasure (a broken board rules one out), none is kept:
        // the next start replays the whole, rewritten log.
        let kept = if self.checkpoint_seq >= seq {
            self.checkpoint_seq
        } else {
            -1
        };
        for (old_seq, part) in self.store.other_checkpoint_parts(kept).await? {
            self.store.delete_checkpoint_part(old_seq, part).await?;
        }
        let scrubbed = self.store.scrub().await?;
        tracing::info!(
            game,
            seq,
            event_metadata = rows.event_metadata,
            actions = rows.actions,
            season_results = rows.season_results,
            period_snapshots = rows.period_snapshots,
            scrubbed,
            "erased a player's name, country and metadata"
        );
        Ok(())
    }
}

async fn act(writer: &mut Writer, mut request: ActionRequest) -> Result<ActionAnswer, WriterError> {
    let Writer {
        store,
        registry,
        domain,
        clock,
        machine,
        live: hub,
        ..
    } = writer;
    if let Some(id) = &request.action_id
        && let Some(existing) = store.find_action(&request.game, id).await?
    {
        if !crate::domain::same_request(&existing.request, &request.request) {
            return Err(ActionRefusal::ModerationIdConflict(id.clone()).into());
        }
        return Ok(ActionAnswer {
            replayed: true,
            seq: existing.seq,
            result: existing.result,
        });
    }
    if let Some(patch) = &request.profile_patch {
        let held = domain.profiles.get(&request.game, &patch.player);
        match patch.decide(&request.game, &held)? {
            Some(action) => request.action = action,
            // The profile is already what was asked: nothing is logged and no version moves.
            None => {
                return Ok(ActionAnswer {
                    replayed: true,
                    seq: 0,
                    result: None,
                });
            }
        }
    }
    validate(store, registry, domain, &request).await?;
    // The log keeps the typed action (what a rebuild performs) beside the request as sent.
    let logged = ActionRow {
        seq: machine.next_seq(),
        game: request.game.clone(),
        action: Ok(request.action.clone()),
        action_id: request.action_id.clone(),
        request: request.request.clone(),
        result: None,
        actor: request.actor.clone(),
        reason: request.reason.clone(),
        created_at: clock.now_ms(),
    };
    // Decided on the current state before it is written: a logged action is performed again
    // by every restart and rebuild, so one that cannot be carried out must never reach the log.
    log::try_perform(store, registry, domain, &logged, &request.action).await?;
    let mut tx = store.begin().await?;
    Store::insert_action(&mut tx, &logged).await?;
    if let Action::LateDecision { event_id, apply } = &request.action {
        let status = if *apply {
            EventStatus::LateApplied
        } else {
            EventStatus::LateRejected
        };
        Store::set_event_status(&mut tx, &request.game, event_id, status).await?;
    }
    if let Err(failed) = tx.commit("cannot commit an action").await {
        let error = match failed {
            CommitFailed::Failed(error) => return Err(error.into()),
            CommitFailed::Unknown(error) => WriterError::from(error),
        };
        // The commit's answer was lost: the log says whether it took, as for a group.
        match store.next_seq_landed().await {
            Ok(log_next_seq) if unknown_commit_landed(Some(logged.seq), log_next_seq) => {}
            Ok(_) => return Err(error),
            Err(_) => {
                // Nobody can tell yet. The seq is never reused, and the game's boards, which
                // may or may not owe the action, are marked broken rather than served wrong;
                // the next start reads what the log holds.
                machine.take_action_seq();
                let mut instances = LiveInstances { registry, store };
                let mut live = log::Tolerant::new(&mut instances, registry, logged.seq);
                for entry in registry.of_game(&request.game) {
                    live.break_board(&entry.def.id, &error);
                }
                return Err(error);
            }
        }
    }
    machine.take_action_seq();
    registry.positions.committed_through(logged.seq);

    // Decided above, it can fail now only on a failing database; then the boards it failed on
    // no longer show the log and are marked broken rather than served wrong (all of the game's
    // when it failed as a whole), and the next start carries it out again.
    let mut instances = LiveInstances { registry, store };
    let mut live = log::Tolerant::new(&mut instances, registry, logged.seq);
    let performed = match perform(store, registry, domain, &mut live, &logged, &request.action).await {
        Ok(performed) => performed,
        Err(e) => {
            for entry in registry.of_game(&request.game) {
                live.break_board(&entry.def.id, &e);
            }
            // The boards it broke answer BOARD_BROKEN; a reader of this position waits no more.
            registry.positions.visible_through(logged.seq);
            return Err(e.into());
        }
    };
    registry
        .feed
        .performed(&performed.results, &performed.awards, performed.closed.as_ref());
    registry.positions.visible_through(logged.seq);
    // Moderation, late decisions and season transitions reach subscribers like any change;
    // an action is rare, so every board of its game is marked rather than only those it moved.
    if hub.is_watched() {
        let boards: Vec<_> = registry
            .of_game(&request.game)
            .iter()
            .map(|e| e.def.id.clone())
            .collect();
        hub.changed(&boards, std::time::Instant::now());
    }
    let result = ActionResult {
        results: performed.results.iter().map(Correction::of).collect(),
        boards: performed.changes,
    };
    let mut tx = store.begin().await?;
    for r in &performed.results {
        Store::insert_result(&mut tx, r).await?;
    }
    tx.commit("cannot store results")
        .await
        .map_err(|failed| match failed {
            CommitFailed::Unknown(e) | CommitFailed::Failed(e) => WriterError::from(e),
        })?;
    store.set_action_result(logged.seq, &result).await?;
    Ok(ActionAnswer {
        replayed: false,
        seq: logged.seq,
        result: Some(result),
    })
}

/// Refuses an action that cannot be performed now, with a precise error.
async fn validate(
    store: &Store,
    registry: &Registry,
    domain: &Moderation,
    request: &ActionRequest,
) -> Result<(), WriterError> {
    let game = &request.game;
    match &request.action {
        Action::SeasonState { season, to, .. } => {
            let record = domain.seasons.get(game, season);
            if record.state == *to && record.explicit {
                return Err(ActionRefusal::AlreadyInState {
                    game: game.clone(),
                    season: season.clone(),
                    to: *to,
                }
                .into());
            }
            let has_events = store.season_has_events(game, season).await?;
            record.check_transition(*to, has_events).map_err(|why| {
                ActionRefusal::InvalidTransition {
                    game: game.clone(),
                    season: season.clone(),
                    why,
                }
                .into()
            })
        }
        Action::Invalidate { target_event_id } | Action::Restore { target_event_id } => {
            let Some(event) = store.find_event(game, target_event_id).await? else {
                return Err(unknown_event(game, target_event_id));
            };
            Ok(not_archived(domain, game, &event.season)?)
        }
        Action::Disqualify { board, .. } | Action::Reinstate { board, .. } => {
            if registry.entry(board).is_none() {
                return Err(ActionRefusal::UnknownBoard(Box::new(board.clone())).into());
            }
            Ok(not_archived(domain, &board.game, &board.season)?)
        }
        // Their fields were checked when they were asked; a profile applies to every board.
        Action::Profile { .. }
        | Action::Rename { .. }
        | Action::ClearName { .. }
        | Action::LockName { .. }
        | Action::UnlockName { .. }
        | Action::Erase { .. } => Ok(()),
        // The writer logs it itself, for an instance it holds.
        Action::PeriodClose { .. } => Ok(()),
        Action::LateDecision { event_id, .. } => {
            let Some(event) = store.find_event(game, event_id).await? else {
                return Err(unknown_event(game, event_id));
            };
            not_archived(domain, game, &event.season)?;
            if event.status != EventStatus::Late || domain.decision(game, event_id).is_some() {
                return Err(ActionRefusal::NotLate {
                    event_id: event_id.clone(),
                    status: event.status,
                }
                .into());
            }
            Ok(())
        }
    }
}

/// The refusal of an action on an event the game does not have.
fn unknown_event(game: &str, event_id: &str) -> WriterError {
    ActionRefusal::UnknownEvent {
        game: game.to_owned(),
        event_id: event_id.to_owned(),
    }
    .into()
}

/// An archived season's live boards are freed, so nothing may change them: a correction would
/// be computed from an empty board.
fn not_archived(domain: &Moderation, game: &str, season: &str) -> Result<(), ActionRefusal> {
    if domain.seasons.get(game, season).state == crate::domain::seasons::SeasonState::Archived {
        return Err(ActionRefusal::SeasonArchived {
            game: game.to_owned(),
            season: season.to_owned(),
        });
    }
    Ok(())
}
