//! What the log means: where each event goes (`targets`) and applying it; `actions` performs an
//! action, `instances` holds the `Instances` trait the log changes boards through, `rebuild`
//! replays the log, `error` holds `LogError`. The live writer, a restart after a checkpoint and `standings rebuild` run this
//! same code over the same log in the same `seq` order, so they reach the same boards, versions and
//! results. That is why it is a room of its own, apart from the writer: a rebuild must not need a
//! writer to be right.
//!
//! An event feeds every board its definition names, and on each board the period instances its
//! `achieved_at` falls in, never by arrival, so the same events give the same boards in any order.
//! `targets` stays here rather than in `domain/` because it needs the registry's calendars.

mod actions;
mod error;
mod instances;
mod rebuild;

use standings_core::BoardId;

pub use self::actions::{Performed, note_profile, perform, try_perform};
pub use self::error::LogError;
pub use self::instances::{
    Grouped, Instances, LiveInstances, Phase, RebuildInstances, Tolerant, result_entries,
};
pub use self::rebuild::{rebuild, rebuild_until, replay_log};
use crate::boards::Registry;
use crate::domain::periods::Period;
use crate::domain::{LoggedEvent, Moderation, NewEvent, Refusal};

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

/// The instances an event received at `received_at` feeds. Unknown boards are an error
/// (events are validated against the definitions before they are stored, and definitions are
/// never removed). O(scopes x period kinds).
pub fn targets(
    registry: &Registry,
    e: &NewEvent,
    received_at: i64,
    season_late: bool,
) -> Result<Vec<Target>, Refusal> {
    let mut found = Vec::new();
    for board in e.boards() {
        let entry = registry
            .entry(&board)
            .ok_or_else(|| Refusal::UnknownBoard(board.clone()))?;
        for period in entry.calendar.periods_of(e.achieved_at) {
            let late = season_late || entry.calendar.is_closed(&period, received_at);
            found.push(Target {
                board: board.clone(),
                period,
                late,
            });
        }
    }
    Ok(found)
}

/// Applies a stored event to the instances where it is on time. Returns whether it was late
/// anywhere.
/// O(targets x the board's update cost).
pub fn apply_event(
    registry: &Registry,
    domain: &Moderation,
    instances: &mut impl Instances,
    e: &LoggedEvent,
) -> Result<bool, LogError> {
    registry.feed.entry(e.seq, e.received_at);
    let season_late = domain.season_late(e);
    let event = e.core_event()?;
    let profile = domain.profiles.shown(&e.game, &e.player_id);
    let mut late_anywhere = false;
    for target in targets(registry, e, e.received_at, season_late)? {
        if target.late {
            late_anywhere = true;
            continue;
        }
        instances.apply(&target.board, &target.period, &event, profile.as_ref())?;
    }
    Ok(late_anywhere)
}
