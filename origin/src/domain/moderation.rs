//! The moderation and late-decision state the action log derives: season states, invalidated
//! events, disqualified players, late decisions and the next correction of each board with results.
//! Pure: the log's actions change it (`log::actions`), the writer reads it to decide.
//!
//! It is derived, so a rebuild reproduces it, and it is plain data (sorted lists) for a checkpoint,
//! so equal states encode equally.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::RwLock;

use serde::{Deserialize, Serialize};
use standings_core::BoardId;

use crate::domain::rewards::RewardBand;
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
    /// The reward bands each finalized season declared.
    rewards: RwLock<HashMap<(String, String), Vec<RewardBand>>>,
    /// What each board's latest result awards: player to reward and rank.
    awarded: RwLock<HashMap<BoardId, Awarded>>,
    /// The period instances whose close is logged: (board, period kind, period key).
    closed_periods: RwLock<HashSet<(BoardId, String, String)>>,
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
    #[serde(default)]
    rewards: Vec<(String, String, Vec<RewardBand>)>,
    #[serde(default)]
    awarded: Vec<(BoardId, Vec<AwardRow>)>,
    #[serde(default)]
    closed_periods: Vec<(BoardId, String, String)>,
}

/// One award as a checkpoint holds it: player, reward, rank.
type AwardRow = (String, String, u64);

/// A result's awards: player to reward and rank.
pub(crate) type Awarded = BTreeMap<String, (String, u64)>;

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
            rewards: sorted(
                self.rewards
                    .read_unpoisoned()
                    .iter()
                    .map(|((game, season), bands)| (game.clone(), season.clone(), bands.clone()))
                    .collect(),
            ),
            awarded: sorted(
                self.awarded
                    .read_unpoisoned()
                    .iter()
                    .map(|(board, awarded)| {
                        let list = awarded
                            .iter()
                            .map(|(player, (reward, rank))| (player.clone(), reward.clone(), *rank))
                            .collect();
                        (board.clone(), list)
                    })
                    .collect(),
            ),
            closed_periods: sorted(self.closed_periods.read_unpoisoned().iter().cloned().collect()),
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
        *domain.rewards.write_unpoisoned() = state
            .rewards
            .into_iter()
            .map(|(game, season, bands)| ((game, season), bands))
            .collect();
        *domain.awarded.write_unpoisoned() = state
            .awarded
            .into_iter()
            .map(|(board, list)| {
                let awarded = list
                    .into_iter()
                    .map(|(player, reward, rank)| (player, (reward, rank)))
                    .collect();
                (board, awarded)
            })
            .collect();
        *domain.closed_periods.write_unpoisoned() = state.closed_periods.into_iter().collect();
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

    /// Declares a season's reward bands (at its finalization).
    pub(crate) fn set_rewards(&self, game: &str, season: &str, bands: Vec<RewardBand>) {
        self.rewards
            .write_unpoisoned()
            .insert((game.to_string(), season.to_string()), bands);
    }

    /// The reward bands a season declared (none before it is finalized).
    pub(crate) fn rewards(&self, game: &str, season: &str) -> Vec<RewardBand> {
        self.rewards
            .read_unpoisoned()
            .get(&(game.to_string(), season.to_string()))
            .cloned()
            .unwrap_or_default()
    }

    /// Holds what `board`'s newest result awards and answers what the one before it awarded.
    pub(crate) fn replace_awarded(&self, board: &BoardId, awarded: Awarded) -> Awarded {
        self.awarded
            .write_unpoisoned()
            .insert(board.clone(), awarded)
            .unwrap_or_default()
    }

    /// Notes that a period instance's close is logged; whether it was not already.
    pub(crate) fn note_closed(&self, board: &BoardId, kind: &str, key: &str) -> bool {
        self.closed_periods
            .write_unpoisoned()
            .insert((board.clone(), kind.to_string(), key.to_string()))
    }

    /// Whether a period instance's close is logged.
    pub(crate) fn close_logged(&self, board: &BoardId, kind: &str, key: &str) -> bool {
        self.closed_periods
            .read_unpoisoned()
            .contains(&(board.clone(), kind.to_string(), key.to_string()))
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
