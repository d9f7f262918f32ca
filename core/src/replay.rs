//! Rebuilding a board from its event log without the cost of ranking every step.

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::board::Board;
use crate::error::ApplyError;
use crate::event::ScoreEvent;
use crate::index::RankedIndex;
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
            changes: 0,
        }
    }

    /// Folds one event; returns whether the live board would have changed. O(1) expected.
    pub fn push(&mut self, event: &ScoreEvent) -> Result<bool, ApplyError> {
        // Range and overflow are checked by the fold before anything is recorded.
        let member = self.index.intern(event.player.as_str())? as usize;
        if self.aggregates.len() <= member {
            self.aggregates.resize(member + 1, None);
        }
        let latest = self.rules.score_mode == ScoreMode::Latest;
        if latest && self.latest_event.len() <= member {
            self.latest_event.resize(member + 1, None);
        }
        let current = self.aggregates[member];
        let current_id = if latest {
            self.latest_event[member].as_deref()
        } else {
            None
        };
        let Some(after) = self.rules.fold(current, current_id, event)? else {
            return Ok(false);
        };
        if latest {
            self.latest_event[member] = Some(event.event_id.as_str().into());
        }
        let changed = current != Some(after);
        self.aggregates[member] = Some(after);
        self.changes += u64::from(changed);
        Ok(changed)
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
            changes,
        } = self;
        index.load_members(&aggregates);
        Board::from_index(rules, changes, index, latest_event)
    }
}
