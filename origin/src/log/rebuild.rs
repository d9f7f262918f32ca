//! Replaying the log, through the code the live writer runs: the rebuild, and the tail after a
//! checkpoint.
//!
//! `rebuild` replays in two passes, the current instances first (so a service could serve them),
//! then the closed history. `replay_log` reads the log in pages packed by the database and reads
//! the next page while it applies the current one (the replay never writes to the log, so a page
//! read ahead holds what it would hold later). It drives its instances through `Tolerant`: an entry
//! that fails on a board marks that board broken (logged with its `seq`; it answers 503
//! `BOARD_BROKEN`, `/readyz` says `degraded`, `/metrics` counts it, no checkpoint is written
//! meanwhile) and the replay goes on with every other board, so one bad entry costs the boards it
//! touches, not the service.

use standings_core::BoardId;

use super::instances::{Instances, Phase, RebuildInstances, Tolerant};
use super::{LogError, apply_event, perform};
use crate::boards::Registry;
use crate::domain::{ActionRow, Moderation, ResultRow};
use crate::store::Store;

/// Rebuilds every board (or only `only`) and the season and moderation state from the log:
/// the definitions, then every event and action in `seq` order, through the same code the live
/// writer runs. The current instances (all time, and periods still open at `now`) come first,
/// then, in a second pass when any board keeps periods, the closed history. Returns the result
/// snapshots the actions produced, for comparing with the stored ones. Calls `progress` with
/// the number of log entries read so far.
/// O(the log), read once per pass.
pub async fn rebuild(
    store: &Store,
    only: Option<&BoardId>,
    now: i64,
    progress: impl FnMut(u64),
) -> Result<(Registry, Moderation, Vec<ResultRow>), LogError> {
    rebuild_until(store, only, now, i64::MAX, progress).await
}

/// [`rebuild`] from the log's entries up to `until` (a `seq`) only: a standby's copy is built
/// to a known position while the owner goes on writing.
pub async fn rebuild_until(
    store: &Store,
    only: Option<&BoardId>,
    now: i64,
    until: i64,
    mut progress: impl FnMut(u64),
) -> Result<(Registry, Moderation, Vec<ResultRow>), LogError> {
    let registry = Registry::default();
    for def in store.boards().await? {
        registry.add(&def).map_err(|why| LogError::InvalidStoredBoard {
            board: Box::new(def.id.clone()),
            why,
        })?;
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
        until,
        &mut progress,
    )
    .await?;
    if has_periods {
        // The history: the same log again, building only the closed periods. The season and
        // moderation state it derives is the same as the first pass's, which is kept.
        replay_pass(store, &registry, only, Phase::History(now), until, &mut progress).await?;
    }
    results.retain(|r| only.is_none_or(|o| r.board == *o));
    Ok((registry, domain, results))
}

async fn replay_pass(
    store: &Store,
    registry: &Registry,
    only: Option<&BoardId>,
    phase: Phase,
    until: i64,
    progress: &mut impl FnMut(u64),
) -> Result<(Moderation, Vec<ResultRow>), LogError> {
    let domain = Moderation::default();
    let mut instances = RebuildInstances::new(registry, only.cloned(), phase);
    let (results, _) = replay_log(store, registry, &domain, &mut instances, 0, until, progress).await?;
    instances.install();
    Ok((domain, results))
}

/// Events per page of a replay: 20,000 are about 2.7 MB of packed JSON.
const REPLAY_PAGE_EVENTS: i64 = 20_000;

/// Runs the log after `after` and up to `until` (events and actions in `seq` order) on
/// `instances`: the whole log for a rebuild, the part after a checkpoint on the live boards, or
/// what a standby has not applied yet. Returns the result
/// snapshots the actions produced and the number of log entries replayed; calls `progress`
/// with the number of events read so far.
/// O(log entries after `after`).
pub async fn replay_log(
    store: &Store,
    registry: &Registry,
    domain: &Moderation,
    instances: &mut (impl Instances + Send),
    after: i64,
    until: i64,
    progress: &mut impl FnMut(u64),
) -> Result<(Vec<ResultRow>, u64), LogError> {
    let mut actions = store.actions_after(after).await?;
    actions.retain(|a| a.seq <= until);
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
        let mut page = next.await.map_err(LogError::ReadTask)??;
        let whole = page.len();
        page.retain(|e| e.seq <= until);
        let Some(last) = page.last() else { break };
        after = last.seq;
        next = read_after(after);
        if page.len() < whole {
            // The entries past `until` are another reader's: this replay ends here.
            next.abort();
            next = tokio::spawn(async { Ok(Vec::new()) });
        }
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
    domain: &Moderation,
    instances: &mut Tolerant<'_, '_, I>,
    row: &ActionRow,
) -> Vec<ResultRow> {
    instances.seq = row.seq;
    let performed = async {
        let action = row
            .action
            .as_ref()
            .map_err(|e| LogError::UnreadableAction(e.clone()))?;
        perform(store, registry, domain, instances, row, action).await
    };
    match performed.await {
        Ok(performed) => {
            registry
                .feed
                .performed(&performed.results, &performed.awards, performed.closed.as_ref());
            performed.results
        }
        Err(why) => {
            for entry in registry.of_game(&row.game) {
                instances.break_board(&entry.def.id, &why);
            }
            Vec::new()
        }
    }
}
