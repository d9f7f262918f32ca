//! The season lifecycle: `open -> active -> frozen -> finalized -> published -> archived`, one step
//! at a time. A season whose state was never set is `active`.
//!
//! The state is derived from the action log (transitions are actions with a `seq`), so a rebuild
//! reproduces it; the writer is the only one that changes it.
//!
//! Season lateness has one rule, `SeasonRecord::late_for_season`: the writer's decision (through
//! `route`) and every application (through `Moderation::season_late`) ask it, and a test checks that
//! they agree, so a rebuild decides lateness exactly as the live writer did.

use crate::sync::RwLockUnpoisoned;
use std::collections::HashMap;
use std::fmt;
use std::sync::RwLock;

use serde::{Deserialize, Serialize};

/// A season's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SeasonState {
    /// Defined but not started: every event is refused.
    Open,
    /// Events apply.
    Active,
    /// No new events; late arrivals (achieved before the freeze) are queued.
    Frozen,
    /// Results are computed and immutable (corrections are numbered).
    Finalized,
    /// Results are readable.
    Published,
    /// The live boards are freed; results and events stay.
    Archived,
}

impl SeasonState {
    /// The wire name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SeasonState::Open => "open",
            SeasonState::Active => "active",
            SeasonState::Frozen => "frozen",
            SeasonState::Finalized => "finalized",
            SeasonState::Published => "published",
            SeasonState::Archived => "archived",
        }
    }

    /// Parses a wire name.
    pub(crate) fn parse(name: &str) -> Option<SeasonState> {
        Some(match name {
            "open" => SeasonState::Open,
            "active" => SeasonState::Active,
            "frozen" => SeasonState::Frozen,
            "finalized" => SeasonState::Finalized,
            "published" => SeasonState::Published,
            "archived" => SeasonState::Archived,
            _ => return None,
        })
    }

    /// The one state that may follow this one.
    pub(crate) fn next(self) -> Option<SeasonState> {
        Some(match self {
            SeasonState::Open => SeasonState::Active,
            SeasonState::Active => SeasonState::Frozen,
            SeasonState::Frozen => SeasonState::Finalized,
            SeasonState::Finalized => SeasonState::Published,
            SeasonState::Published => SeasonState::Archived,
            SeasonState::Archived => return None,
        })
    }

    /// Whether results exist (finalized or later).
    pub(crate) fn has_results(self) -> bool {
        matches!(
            self,
            SeasonState::Finalized | SeasonState::Published | SeasonState::Archived
        )
    }
}

impl fmt::Display for SeasonState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the log says about one season.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SeasonRecord {
    /// The current state.
    pub(crate) state: SeasonState,
    /// Whether the state was ever set (a never-set season is `active`).
    pub(crate) explicit: bool,
    /// When the season left `active` (ms); events achieved before it arriving later are late.
    pub(crate) left_active_at: Option<i64>,
    /// The `seq` of the action that left `active`: every event stored after it was late.
    pub(crate) left_active_seq: Option<i64>,
}

impl Default for SeasonRecord {
    fn default() -> Self {
        SeasonRecord {
            state: SeasonState::Active,
            explicit: false,
            left_active_at: None,
            left_active_seq: None,
        }
    }
}

/// When an event enters the log, as far as whoever asks knows: at decide time it is not logged
/// yet, and it will be logged after every action so far; at apply time the log holds its `seq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// It is being decided: it enters the log after every action logged so far.
    Next,
    /// It is in the log at this `seq`.
    Logged(i64),
}

/// Where an event for a season goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Routing {
    /// Apply it.
    Apply,
    /// Queue it as late: the season left `active` after the event was achieved.
    Late,
    /// Refuse it: the season is not active and the event is not a late arrival.
    NotActive(SeasonState),
}

impl SeasonRecord {
    /// The season lateness rule, the one both the writer's decision and every application of
    /// the log use: an event is late for its season when it entered the log after the action
    /// that took the season out of `active`. Deciding, the event enters after every logged
    /// action, so it is late exactly when the season has left `active`; applying, its `seq` is
    /// compared with that action's. Both answer the same for the same event, which is why a
    /// replay puts it where the live writer did. (Whether a late event is taken at all depends
    /// on when it was achieved: see [`SeasonRecord::route`].)
    pub(crate) fn late_for_season(&self, arrival: Arrival) -> bool {
        self.left_active_seq.is_some_and(|left| match arrival {
            Arrival::Next => true,
            Arrival::Logged(seq) => seq > left,
        })
    }

    /// Routes an event achieved at `achieved_at` that is being decided: applied while the
    /// season is `active`; once it has left `active` ([`SeasonRecord::late_for_season`]),
    /// queued as late if it was achieved before it left, refused otherwise.
    pub(crate) fn route(&self, achieved_at: i64) -> Routing {
        match (self.state, self.late_for_season(Arrival::Next)) {
            (SeasonState::Active, _) => Routing::Apply,
            (_, true) if self.left_active_at.is_some_and(|left| achieved_at < left) => Routing::Late,
            (state, _) => Routing::NotActive(state),
        }
    }

    /// Checks a transition to `to`. `has_events` tells whether the season has stored events,
    /// which decides whether a never-set season may still be declared `open`.
    pub(crate) fn check_transition(&self, to: SeasonState, has_events: bool) -> Result<(), String> {
        if !self.explicit && self.state == SeasonState::Active && to == SeasonState::Open {
            return if has_events {
                Err("the season already has events; it can no longer be declared open".into())
            } else {
                Ok(())
            };
        }
        match self.state.next() {
            Some(next) if next == to => Ok(()),
            Some(next) => Err(format!(
                "a season moves one step at a time: from {} the next state is {next}, not {to}",
                self.state
            )),
            None => Err(format!(
                "an {} season is final; it cannot become {to}",
                self.state
            )),
        }
    }

    /// The record after moving to `to` at `at_ms` by the action `seq`.
    pub(crate) fn moved(&self, to: SeasonState, at_ms: i64, seq: i64) -> SeasonRecord {
        let (left_active_at, left_active_seq) = match (self.state, to) {
            (SeasonState::Active, SeasonState::Frozen) => (Some(at_ms), Some(seq)),
            _ => (self.left_active_at, self.left_active_seq),
        };
        SeasonRecord {
            state: to,
            explicit: true,
            left_active_at,
            left_active_seq,
        }
    }
}

/// Every season's record, by `(game, season)`.
#[derive(Default)]
pub(crate) struct SeasonBook {
    seasons: RwLock<HashMap<(String, String), SeasonRecord>>,
}

impl SeasonBook {
    /// A season's record (the default `active` one when never set).
    pub(crate) fn get(&self, game: &str, season: &str) -> SeasonRecord {
        self.seasons
            .read_unpoisoned()
            .get(&(game.to_string(), season.to_string()))
            .copied()
            .unwrap_or_default()
    }

    /// Every season with a record, sorted by game and season.
    pub(crate) fn records(&self) -> Vec<(String, String, SeasonRecord)> {
        let seasons = self.seasons.read_unpoisoned();
        let mut all: Vec<_> = seasons
            .iter()
            .map(|((game, season), record)| (game.clone(), season.clone(), *record))
            .collect();
        all.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        all
    }

    /// Records a season's new state.
    pub(crate) fn set(&self, game: &str, season: &str, record: SeasonRecord) {
        self.seasons
            .write_unpoisoned()
            .insert((game.to_string(), season.to_string()), record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every transition other than the next step is refused; open is only for a fresh season.
    #[test]
    fn transitions_go_one_step_at_a_time() {
        let fresh = SeasonRecord::default();
        assert!(fresh.check_transition(SeasonState::Frozen, true).is_ok());
        assert!(fresh.check_transition(SeasonState::Open, false).is_ok());
        assert!(fresh.check_transition(SeasonState::Open, true).is_err());
        assert!(fresh.check_transition(SeasonState::Finalized, false).is_err());
        let mut record = SeasonRecord::default().moved(SeasonState::Open, 0, 1);
        for (to, at) in [
            (SeasonState::Active, 10),
            (SeasonState::Frozen, 20),
            (SeasonState::Finalized, 30),
            (SeasonState::Published, 40),
            (SeasonState::Archived, 50),
        ] {
            for other in [
                SeasonState::Open,
                SeasonState::Active,
                SeasonState::Frozen,
                SeasonState::Finalized,
                SeasonState::Published,
                SeasonState::Archived,
            ] {
                assert_eq!(
                    record.check_transition(other, true).is_ok(),
                    other == to,
                    "{} -> {other}",
                    record.state
                );
            }
            record = record.moved(to, at, at);
        }
        assert_eq!(record.left_active_at, Some(20));
        assert!(record.check_transition(SeasonState::Open, true).is_err());
    }

    /// Events route by when they were achieved relative to the freeze.
    #[test]
    fn routing_by_achieved_at() {
        let open = SeasonRecord::default().moved(SeasonState::Open, 0, 1);
        assert_eq!(open.route(5), Routing::NotActive(SeasonState::Open));
        let active = open.moved(SeasonState::Active, 10, 2);
        assert_eq!(active.route(5), Routing::Apply);
        let frozen = active.moved(SeasonState::Frozen, 100, 3);
        assert_eq!(frozen.left_active_seq, Some(3));
        assert_eq!(frozen.route(99), Routing::Late);
        assert_eq!(frozen.route(100), Routing::NotActive(SeasonState::Frozen));
        let finalized = frozen.moved(SeasonState::Finalized, 200, 4);
        assert_eq!(finalized.route(50), Routing::Late);
    }

    /// The decision and the log's application agree on an event's season lateness: for an
    /// event achieved before or after the season left `active` (at 100, by the action at seq
    /// 10), arriving before or after that, the decision's `Late` is exactly the application's
    /// late, whether the log is applied with the season as it was at the event's `seq` (a
    /// replay) or as it is now (the live writer, once the freeze is logged).
    #[test]
    fn deciding_and_applying_agree_on_season_lateness() {
        let active = SeasonRecord::default();
        let frozen = active.moved(SeasonState::Frozen, 100, 10);
        for achieved_at in [50, 99, 100, 150] {
            for (arrives_after_the_freeze, seq) in [(false, 5), (true, 11)] {
                let decided_with = if arrives_after_the_freeze { frozen } else { active };
                let routing = decided_with.route(achieved_at);
                if matches!(routing, Routing::NotActive(_)) {
                    assert!(arrives_after_the_freeze && achieved_at >= 100);
                    continue;
                }
                let decided_late = routing == Routing::Late;
                assert_eq!(decided_late, decided_with.late_for_season(Arrival::Next));
                for applied_with in [decided_with, frozen] {
                    assert_eq!(
                        applied_with.late_for_season(Arrival::Logged(seq)),
                        decided_late,
                        "achieved at {achieved_at}, logged at seq {seq}"
                    );
                }
            }
        }
    }
}
