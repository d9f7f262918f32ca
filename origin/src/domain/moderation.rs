//! The moderation and late-decision state the action log derives: season states, invalidated
//! events, disqualified players, late decisions and the next correction of each board with results.
//! Pure: the log's actions change it (`log::actions`), the writer reads it to decide.
//!
//! It is derived, so a rebuild reproduces it, and it is plain data (sorted lists) for a checkpoint,
//! so equal states encode equally.

use std::collections::{HashMap, HashSet};
use std::sync::RwLock;

use serde::{Deserialize, Serialize};
use standings_core::BoardId;

use crate::domain::seasons::{Arrival, Routing, SeasonBook, SeasonRecord};
use crate::domain::{LoggedEvent, NewEvent, Refusal};
use crate::sync::RwLockUnpoisoned;

/// What the action log decided: seasons' states, invalidations, disqualifications, late
/// decisions, result corrections and profiles.
#[derive(Default)]
pub struct Moderation {
    /// Every season's state.
    pub(crate) seasons: SeasonBook,
    invalidated: RwLock<HashSet<(String, String)>>,
    disqualified: RwLock<HashSet<(BoardId, String)>>,
    /// Late events decided so far: `true` applied, `false` rejected.
    decisions: RwLock<HashMap<(String, String), bool>>,
    /// The next correction number of each board with results.
    next_correction: RwLock<HashMap<BoardId, i64>>,
    /// Players' profiles. Not part of [`ModerationState`]: a checkpoint's restart reads them from
    /// the log's profile actions up to its `seq` (they can be many, and a trial of an action
    /// must not copy them).
    pub(crate) profiles: crate::domain::profile_book::ProfileBook,
}

/// [`Moderation`] as plain data, for a checkpoint. Every list is sorted, so equal states encode
/// equally.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModerationState {
    seasons: Vec<(String, String, SeasonRecord)>,
    invalidated: Vec<(String, String)>,
    disqualified: Vec<(BoardId, String)>,
    decisions: Vec<(String, String, bool)>,
    next_correction: Vec<(BoardId, i64)>,
}

impl Moderation {
    /// The state as plain data.
    /// O(the state), sorted.
    pub fn state(&self) -> ModerationState {
        fn sorted<T: Ord>(mut items: Vec<T>) -> Vec<T> {
            items.sort();
            items
        }
        ModerationState {
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
    /// O(the state).
    pub(crate) fn from_state(state: ModerationState) -> Moderation {
        let domain = Moderation::default();
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
    pub(crate) fn is_invalidated(&self, game: &str, event_id: &str) -> bool {
        let invalidated = self.invalidated.read_unpoisoned();
        // Asked for every event applied: with no invalidations, no key is built.
        !invalidated.is_empty() && invalidated.contains(&(game.to_string(), event_id.to_string()))
    }

    /// Whether any player is disqualified from any board (one check per event submitted
    /// instead of one per board it feeds).
    pub(crate) fn disqualifies_anyone(&self) -> bool {
        !self.disqualified.read_unpoisoned().is_empty()
    }

    /// Whether a player is disqualified from a board.
    pub(crate) fn is_disqualified(&self, board: &BoardId, player: &str) -> bool {
        self.disqualified
            .read_unpoisoned()
            .contains(&(board.clone(), player.to_string()))
    }

    /// The late decision taken on an event, if any.
    pub(crate) fn decision(&self, game: &str, event_id: &str) -> Option<bool> {
        self.decisions
            .read_unpoisoned()
            .get(&(game.to_string(), event_id.to_string()))
            .copied()
    }

    /// The next correction number of a board (0 is the finalized original), counted up.
    pub(crate) fn take_correction(&self, board: &BoardId) -> i64 {
        let mut next = self.next_correction.write_unpoisoned();
        let slot = next.entry(board.clone()).or_insert(0);
        *slot += 1;
        *slot - 1
    }

    /// Marks an event invalidated (or restores it); whether that changed anything.
    pub(crate) fn set_invalidated(&self, game: &str, event_id: &str, invalid: bool) -> bool {
        let key = (game.to_string(), event_id.to_string());
        let mut set = self.invalidated.write_unpoisoned();
        if invalid {
            set.insert(key)
        } else {
            set.remove(&key)
        }
    }

    /// Disqualifies a player from a board (or reinstates them); whether that changed anything.
    pub(crate) fn set_disqualified(&self, board: &BoardId, player: &str, out: bool) -> bool {
        let key = (board.clone(), player.to_string());
        let mut set = self.disqualified.write_unpoisoned();
        if out { set.insert(key) } else { set.remove(&key) }
    }

    /// Records the late decision taken on an event.
    pub(crate) fn set_decision(&self, game: &str, event_id: &str, apply: bool) {
        self.decisions
            .write_unpoisoned()
            .insert((game.to_string(), event_id.to_string()), apply);
    }

    /// Whether a logged event is late for its season ([`SeasonRecord::late_for_season`]): it
    /// was logged after its season left `active`, so it was late everywhere.
    pub(crate) fn season_late(&self, e: &LoggedEvent) -> bool {
        self.seasons
            .get(&e.game, &e.season)
            .late_for_season(Arrival::Logged(e.seq))
    }

    /// Decides an event against its season's state ([`SeasonRecord::route`]): whether it is
    /// late for the season, or why it is refused.
    pub(crate) fn season_late_on_arrival(&self, e: &NewEvent) -> Result<bool, Refusal> {
        match self.seasons.get(&e.game, &e.season).route(e.achieved_at) {
            Routing::Apply => Ok(false),
            Routing::Late => Ok(true),
            Routing::NotActive(state) => Err(Refusal::SeasonNotActive {
                game: e.game.clone(),
                season: e.season.clone(),
                state,
            }),
        }
    }

    /// Whether a stored event counts on an instance where it is (or is not) late: not
    /// invalidated, and either on time there or applied by a late decision.
    pub(crate) fn counts(&self, e: &LoggedEvent, late_there: bool) -> bool {
        !self.is_invalidated(&e.game, &e.event_id)
            && (!late_there || self.decision(&e.game, &e.event_id) == Some(true))
    }
}
