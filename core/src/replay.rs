//! Rebuilding a board from its event log without the cost of ranking every step.

use alloc::string::String;
use alloc::vec::Vec;

use hashbrown::HashMap;

use crate::board::Board;
use crate::error::{ApplyError, CapacityError};
use crate::event::ScoreEvent;
use crate::rules::{BoardRules, ScoreMode, Standing};

/// Folds a board's events, in log order, into per-player aggregates and counts the changes
/// exactly as [`Board::apply`] would have, then builds the board in one bulk load.
///
/// The result equals applying the same events one by one to a new board: the same entries, the
/// same digest and the same `board_version`, because a change is counted exactly when the live
/// board would have bumped its version. It costs O(1) expected per event plus one O(n log n)
/// load, instead of O(log n) ranked work per event.
pub struct Replay {
    rules: BoardRules,
    /// Player id to (aggregate, id of the event behind it).
    aggregates: HashMap<String, (Standing, String), foldhash::fast::FixedState>,
    changes: u64,
}

impl Replay {
    /// An empty replay for a board with these rules.
    pub fn new(rules: BoardRules) -> Replay {
        Replay {
            rules,
            aggregates: HashMap::with_hasher(foldhash::fast::FixedState::with_seed(0x5245_504c_4159)),
            changes: 0,
        }
    }

    /// Folds one event; returns whether the live board would have changed. O(1) expected.
    pub fn push(&mut self, event: &ScoreEvent) -> Result<bool, ApplyError> {
        if let Some((current, current_id)) = self.aggregates.get_mut(event.player.as_str()) {
            let Some(after) = self.rules.fold(Some(*current), Some(current_id), event)? else {
                return Ok(false);
            };
            if self.rules.score_mode == ScoreMode::Latest {
                current_id.clear();
                current_id.push_str(event.event_id.as_str());
            }
            let changed = after != *current;
            *current = after;
            self.changes += u64::from(changed);
            return Ok(changed);
        }
        // A first event always ranks the player (after the range check).
        let Some(after) = self.rules.fold(None, None, event)? else {
            return Ok(false);
        };
        self.aggregates.insert(
            event.player.as_str().into(),
            (after, event.event_id.as_str().into()),
        );
        self.changes += 1;
        Ok(true)
    }

    /// The number of changes so far: the `board_version` the board will have.
    pub fn version(&self) -> u64 {
        self.changes
    }

    /// Builds the board. O(n log n).
    pub fn finish(self) -> Result<Board, CapacityError> {
        let entries: Vec<(&str, Standing, &str)> = self
            .aggregates
            .iter()
            .map(|(player, (standing, id))| (player.as_str(), *standing, id.as_str()))
            .collect();
        Board::from_aggregates(self.rules, self.changes, entries)
    }
}
