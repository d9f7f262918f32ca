//! Rebuilding a board from its event log without the cost of ranking every step.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::board::Board;
use crate::error::ApplyError;
use crate::event::PlayerId;
use crate::event::ScoreEvent;
use crate::index::RankedIndex;
use crate::interner::MemberId;
use crate::profile::{Extras, Profile, step};
use crate::rules::{BoardRules, ScoreMode, Standing};

/// Folds a board's events, in log order, into per-player aggregates and counts the changes
/// exactly as [`Board::apply`] would have, then builds the board in one bulk load.
///
/// The result equals applying the same events one by one to a new board: the same entries, the
/// same digest and the same `board_version`, because a change is counted exactly when the live
/// board would have bumped its version. Players are interned straight into the final index and
/// aggregates kept in a plain vector by member id, so a replay costs O(1) expected per event
/// and about 16 bytes per player beyond the index itself, plus one O(n log n) load.
pub struct Replay {
    rules: BoardRules,
    index: RankedIndex,
    /// `aggregates[m]` is member `m`'s aggregate so far.
    aggregates: Vec<Option<Standing>>,
    /// For `latest` boards only: the id of the event behind each aggregate.
    latest_event: Vec<Option<Box<str>>>,
    /// Profiles and metadata of the ranked members that have any.
    extras: BTreeMap<MemberId, Extras>,
    changes: u64,
}

impl Replay {
    /// An empty replay for a board with these rules.
    pub fn new(rules: BoardRules) -> Replay {
        Replay {
            rules,
            index: RankedIndex::new(rules.score_mode),
            aggregates: Vec::new(),
            latest_event: Vec::new(),
            extras: BTreeMap::new(),
            changes: 0,
        }
    }

    /// Folds one event of a player with no profile; see [`Replay::push_as`].
    pub fn push(&mut self, event: &ScoreEvent) -> Result<bool, ApplyError> {
        self.push_as(event, None)
    }

    /// Folds one event of a player whose profile in the game is `profile`; returns whether
    /// the live board ([`Board::apply_as`]) would have changed. O(1) expected, plus O(log m)
    /// for the m members with extras when there are any.
    pub fn push_as(
        &mut self,
        event: &ScoreEvent,
        profile: Option<&Arc<Profile>>,
    ) -> Result<bool, ApplyError> {
        // Range and overflow are checked by the fold before anything is recorded.
        let member = self.index.intern(event.player.as_str())?;
        let m = member as usize;
        if self.aggregates.len() <= m {
            self.aggregates.resize(m + 1, None);
        }
        let latest = self.rules.score_mode == ScoreMode::Latest;
        if latest && self.latest_event.len() <= m {
            self.latest_event.resize(m + 1, None);
        }
        let current = self.aggregates[m];
        let current_id = if latest {
            self.latest_event[m].as_deref()
        } else {
            None
        };
        let Some(step) = step(
            &self.rules,
            current,
            current_id,
            self.extras.get(&member),
            event,
            profile,
        )?
        else {
            return Ok(false);
        };
        if latest && step.replaced {
            self.latest_event[m] = Some(event.event_id.as_str().into());
        }
        let (after, extras, changed) = (step.after, step.extras, step.changed);
        self.aggregates[m] = after;
        self.keep(member, extras);
        self.changes += u64::from(changed);
        Ok(changed)
    }

    /// Sets a player's profile as [`Board::set_profile`] does; returns whether the board
    /// changed (whether the player is ranked). O(1) expected + O(log m).
    pub fn set_profile(&mut self, player: &PlayerId, profile: Option<Arc<Profile>>) -> bool {
        let Some(member) = self.ranked_member(player) else {
            return false;
        };
        let mut extras = self.extras.get(&member).cloned().unwrap_or_default();
        extras.profile = profile.filter(|p| !p.is_empty());
        self.keep(member, extras);
        self.changes += 1;
        true
    }

    /// Erases a player's extras as [`Board::erase`] does; returns whether the board changed.
    /// O(1) expected + O(log m).
    pub fn erase(&mut self, player: &PlayerId) -> bool {
        let Some(member) = self.ranked_member(player) else {
            return false;
        };
        let extras = self.extras.get(&member).map(Extras::erased).unwrap_or_default();
        self.keep(member, extras);
        self.changes += 1;
        true
    }

    fn ranked_member(&self, player: &PlayerId) -> Option<MemberId> {
        let member = self.index.member(player.as_str())?;
        self.aggregates.get(member as usize)?.as_ref()?;
        Some(member)
    }

    fn keep(&mut self, member: MemberId, extras: Extras) {
        if extras.is_empty() {
            self.extras.remove(&member);
        } else {
            self.extras.insert(member, extras);
        }
    }

    /// The number of changes so far: the `board_version` the board will have.
    pub fn version(&self) -> u64 {
        self.changes
    }

    /// Builds the board. O(n log n).
    pub fn finish(self) -> Board {
        let Replay {
            rules,
            mut index,
            aggregates,
            latest_event,
            extras,
            changes,
        } = self;
        index.load_members(&aggregates);
        Board::from_index(rules, changes, index, latest_event, extras)
    }
}
