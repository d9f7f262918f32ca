//! The group commit's decisions, with no IO: a state machine that the writer's driver
//! (`writer/driver.rs`) feeds with the queued submissions and with what the store found and did,
//! and that answers with the outcome of every event and what to write.
//!
//! Why it is cut this way: deciding a group is the writer's one subtle job (new, duplicate, id
//! conflict, value refused, cumulative overflow, and every one of them again after a rollback), and
//! decisions interleaved with IO can only be tested with a database that fails on cue. Here the
//! decisions are a value: it never touches the database, a task or a clock (the instant a group is
//! received is an argument, and the live boards' cumulative totals are read through [`Totals`]), so
//! the property tests below drive it against a plain model of stored ids with no database.
//!
//! The call order for one group, as the driver makes it:
//! 1. The driver reads the moment it takes the group (`received_at`), once: deciding reads it
//!    to tell whether a period had closed, and numbering writes it into every logged event.
//! 2. If [`GroupCommit::blocked`], resolve the unknown outcome first (`resolve`, then
//!    `committed` or `rolled_back`): nothing is decided after a group that may or may not be in
//!    the log.
//! 3. [`GroupCommit::decide`], either optimistically (`found: None`, as if no id were stored,
//!    which under load they are not) or with the ids looked up ([`ids_to_look_up`]) when
//!    [`GroupCommit::should_look_up`]. An optimistic decision that does not store every event
//!    ([`Decided::stores_all`]) is thrown away and the group decided again, looked up: a
//!    refusal or a repeat within the group is when a look-up could have decided otherwise.
//! 4. [`GroupCommit::write`] numbers the accepted events and says what to write (the events,
//!    the seal, the new seasons); the group is then in flight. At most one is: a group decided
//!    while another is in flight counts on that one's totals and `seq`s, and is decided again
//!    if that one is not committed (`write` refuses a decision made on a group that failed).
//! 5. The store's answer comes back as [`GroupCommit::committed`], [`GroupCommit::rolled_back`],
//!    [`GroupCommit::resubmitted`] (an optimistic insert met stored ids: the events go back to
//!    their submissions, to be decided again, looked up) or [`GroupCommit::unknown`].
//!
//! The optimistic insert is `ON CONFLICT (game, event_id) DO NOTHING`, counting the rows stored: a
//! short count is a resubmission, and deciding again with the ids looked up gives the same answers
//! as looking up first. A group with a refusal or a repeat, and every group after one that met
//! stored ids, looks up first; most groups hold no resubmission, so most pay one probe of the
//! unique index, not two. A commit whose answer was lost keeps its `seq`s, and nothing is decided
//! until the log's next free `seq`, read once the database answers, says whether it took.
//!
//! The totals a committed group reaches stay pending ([`GroupCommit::pend`]) until the boards are
//! known to show them ([`GroupCommit::boards_caught_up`]), so a cumulative total that would
//! overflow is refused before it is stored, whatever the applying thread has done yet.

use std::collections::{HashMap, HashSet};

use standings_core::{BoardId, ScoreMode};

use crate::boards::{BoardEntry, Registry};
use crate::domain::Moderation;
use crate::domain::player_pages;
use crate::domain::{EventStatus, LoggedEvent, NewEvent, Refusal};
use crate::fast_hash::FastHash;
use crate::log::targets;

/// What became of one submitted event.
#[derive(Clone, Debug)]
pub(crate) enum Outcome {
    /// Durably stored and applied.
    Accepted,
    /// Durably stored and queued as late for some or all of its boards (applied to the rest).
    Late,
    /// The same event was already stored; nothing changed.
    Duplicate,
    /// Refused; nothing changed.
    Refused(Refusal),
}

impl Outcome {
    /// Whether the event is to be stored, and then whether late: `Some(late)`. O(1).
    pub(crate) fn stored(&self) -> Option<bool> {
        match self {
            Outcome::Accepted => Some(false),
            Outcome::Late => Some(true),
            Outcome::Duplicate | Outcome::Refused(_) => None,
        }
    }
}

/// Cumulative totals a group's accepted events leave, by (board, period key, player), before
/// the boards show them.
pub(crate) type PendingTotals = HashMap<(BoardId, String, String), i64, FastHash>;

/// A run sealed by a group: its first and end `seq`, and its `(player key, seq)` entries.
pub(crate) type Seal = (i64, i64, Vec<(i64, i64)>);

/// `(game, season)` pairs.
pub(crate) type Seasons = Vec<(String, String)>;

/// The live boards' cumulative totals, as far as they show them. The driver reads the boards;
/// the tests read a map.
pub(crate) trait Totals {
    /// The total of `player` on `entry`'s instance of period `period_key`, if it has one. O(log
    /// n) on the boards.
    fn current(&self, entry: &BoardEntry, period_key: &str, player: &str) -> Option<i64>;
}

/// A submission's events, as the machine reads and numbers them: the driver's submissions
/// carry their reply beside them, the tests' are plain vectors.
pub(crate) trait Events {
    /// The events, in the order submitted.
    fn events(&self) -> &[NewEvent];
    /// The events, to be numbered (drained) or handed back.
    fn events_mut(&mut self) -> &mut Vec<NewEvent>;
}

impl Events for Vec<NewEvent> {
    fn events(&self) -> &[NewEvent] {
        self
    }
    fn events_mut(&mut self) -> &mut Vec<NewEvent> {
        self
    }
}

/// A decided group, not numbered yet.
pub(crate) struct Decided {
    /// The outcome of every event, per submission.
    outcomes: Vec<Vec<Outcome>>,
    /// The cumulative totals it leaves.
    totals: PendingTotals,
    /// When the writer took it.
    received_at: i64,
    /// Whether its ids were looked up, and whether any was found stored.
    lookup: bool,
    found_stored: bool,
    /// The machine's [`GroupCommit::failures`] when it was decided.
    basis: u64,
}

impl Decided {
    /// Whether every event is to be stored: only then would looking its ids up have decided
    /// the same as not. O(events).
    pub(crate) fn stores_all(&self) -> bool {
        self.outcomes.iter().flatten().all(|o| o.stored().is_some())
    }
}

/// What to write for a group, as [`GroupCommit::write`] numbered it.
pub(crate) struct Write {
    /// The accepted events, numbered in order.
    pub(crate) fresh: Vec<LoggedEvent>,
    /// The run it completes, if it does.
    pub(crate) seal: Option<Seal>,
    /// The seasons whose first events it holds.
    pub(crate) new_seasons: Seasons,
    /// Whether its ids were looked up (then a short insert count is a bug, not a resubmission).
    pub(crate) lookup: bool,
    /// The outcome of every event, per submission, to answer once it is committed.
    pub(crate) outcomes: Vec<Vec<Outcome>>,
}

/// The group written and not yet known committed.
struct Flight {
    /// When the writer took it.
    received_at: i64,
    first_seq: i64,
    sealed_before: i64,
    lookup: bool,
    found_stored: bool,
    /// Events per submission, to hand them back if the insert meets a stored id.
    lengths: Vec<usize>,
    totals: PendingTotals,
    /// The commit was sent and its answer lost.
    unknown: bool,
}

/// The group commit's state: the log's next `seq`, its unsealed tail, the seasons with
/// events, the group in flight and the totals the boards may not show yet.
pub(crate) struct GroupCommit {
    next_seq: i64,
    /// Where the log's unsealed tail starts: once it holds `run_seqs` seqs, the group that
    /// completes it seals it as a run.
    sealed_below: i64,
    run_seqs: i64,
    /// The `(player key, seq)` of the committed events from `sealed_below` on.
    unsealed: Vec<(i64, i64)>,
    /// The seasons with committed events, by game.
    event_seasons: HashMap<String, HashSet<String>>,
    /// Whether the last looked-up group met stored events (or an optimistic one was
    /// resubmitted): under a wave of retries every group looks up first rather than trying
    /// twice.
    lookup_first: bool,
    flight: Option<Flight>,
    /// The totals of committed groups the boards may not show yet.
    backlog: PendingTotals,
    /// Groups written and not committed: a decision made before one of them is stale.
    failures: u64,
}

/// The ids of a group by game, to look up among stored events. O(events).
pub(crate) fn ids_to_look_up<G: Events>(group: &[G]) -> HashMap<&str, Vec<&str>> {
    let mut ids_by_game: HashMap<&str, Vec<&str>> = HashMap::new();
    for submission in group {
        for e in submission.events() {
            ids_by_game
                .entry(e.game.as_str())
                .or_default()
                .push(e.event_id.as_str());
        }
    }
    ids_by_game
}

/// Whether a group whose commit's outcome was unknown is in the log, given the log's next free
/// `seq` once the database answers again. The writer is the log's only writer and decided
/// nothing after the group, so the group is in the log exactly when its first `seq` is below
/// that; a group that stored no event has nothing to find, and its answers stand either way.
pub(super) fn unknown_commit_landed(first_seq: Option<i64>, log_next_seq: i64) -> bool {
    first_seq.is_none_or(|first| first < log_next_seq)
}

/// An event's key in the player index.
pub(crate) fn index_key(e: &NewEvent) -> i64 {
    player_pages::player_key(&e.game, &e.player_id, &e.mode, &e.season)
}

impl GroupCommit {
    /// The machine as the log leaves it: its next `seq`, where its unsealed tail starts and
    /// that tail's index entries, and the seasons with events. Runs are sealed every
    /// `run_seqs` seqs.
    pub(crate) fn new(
        next_seq: i64,
        sealed_below: i64,
        run_seqs: i64,
        unsealed: Vec<(i64, i64)>,
        event_seasons: HashMap<String, HashSet<String>>,
    ) -> GroupCommit {
        GroupCommit {
            next_seq,
            sealed_below,
            run_seqs,
            unsealed,
            event_seasons,
            lookup_first: false,
            flight: None,
            backlog: PendingTotals::default(),
            failures: 0,
        }
    }

    /// The next free `seq`: what the next entry of the log gets.
    pub(crate) fn next_seq(&self) -> i64 {
        self.next_seq
    }

    /// Takes the next `seq` for an action, logged with nothing in flight.
    pub(crate) fn take_action_seq(&mut self) {
        debug_assert!(self.flight.is_none(), "an action is logged between groups");
        self.next_seq += 1;
    }

    /// Whether a group's commit has an unknown outcome: nothing may be decided until
    /// [`GroupCommit::resolve`] says whether it took.
    pub(crate) fn blocked(&self) -> bool {
        self.flight.as_ref().is_some_and(|f| f.unknown)
    }

    /// Whether the next group should be looked up before it is decided.
    pub(crate) fn should_look_up(&self) -> bool {
        self.lookup_first
    }

    /// Decides each event of a group in order, with its ids looked up among stored events
    /// (`found`) or, with `found: None`, as if none were stored. Cumulative totals are checked
    /// against an overlay of this group's pending sums, then the group in flight's (counted on
    /// as committed), then the backlog's, then the boards (`boards`), so that an event that
    /// would overflow is refused before it is stored. O(events x targets), one hash lookup per
    /// event and per cumulative target.
    pub(crate) fn decide<G: Events>(
        &self,
        group: &[G],
        received_at: i64,
        found: Option<&[LoggedEvent]>,
        registry: &Registry,
        domain: &Moderation,
        boards: &impl Totals,
    ) -> Decided {
        debug_assert!(!self.blocked(), "nothing is decided after an unknown commit");
        let stored = found.unwrap_or(&[]);
        // Everything already stored, or accepted earlier in this group, by (game, event id).
        let events = group.iter().map(|s| s.events().len()).sum::<usize>() + stored.len();
        let mut known: HashMap<(&str, &str), &NewEvent, FastHash> =
            HashMap::with_capacity_and_hasher(events, FastHash::default());
        known.extend(
            stored
                .iter()
                .map(|stored| ((stored.game.as_str(), stored.event_id.as_str()), &stored.event)),
        );
        let no_totals = PendingTotals::default();
        let prior = self.flight.as_ref().map_or(&no_totals, |f| &f.totals);
        let mut totals = PendingTotals::default();
        let mut outcomes: Vec<Vec<Outcome>> = Vec::with_capacity(group.len());
        for submission in group {
            let submitted = submission.events();
            let mut these = Vec::with_capacity(submitted.len());
            for e in submitted {
                let key = (e.game.as_str(), e.event_id.as_str());
                if let Some(stored) = known.get(&key) {
                    these.push(if !stored.same_payload(e) {
                        Outcome::Refused(Refusal::EventIdConflict(e.event_id.clone()))
                    } else if domain.is_invalidated(&e.game, &e.event_id) {
                        Outcome::Refused(Refusal::EventInvalidated(e.event_id.clone()))
                    } else {
                        Outcome::Duplicate
                    });
                    continue;
                }
                match decide_event(
                    registry,
                    domain,
                    boards,
                    e,
                    received_at,
                    &mut totals,
                    [prior, &self.backlog],
                ) {
                    Ok(late) => {
                        known.insert(key, e);
                        these.push(if late { Outcome::Late } else { Outcome::Accepted });
                    }
                    Err(refusal) => {
                        these.push(Outcome::Refused(refusal));
                    }
                }
            }
            outcomes.push(these);
        }
        Decided {
            outcomes,
            totals,
            received_at,
            lookup: found.is_some(),
            found_stored: !stored.is_empty(),
            basis: self.failures,
        }
    }

    /// Numbers a decided group's accepted events (they leave their submissions, no copy) and
    /// says what to write; the group is in flight until its outcome comes back. O(events),
    /// plus the run's entries when it seals one.
    ///
    /// Panics if a group is in flight or if the decision counted on a group that was not
    /// committed: the driver lands the one before and decides again.
    pub(crate) fn write<G: Events>(&mut self, group: &mut [G], decided: Decided) -> Write {
        assert!(self.flight.is_none(), "one group in flight at a time");
        assert_eq!(
            decided.basis, self.failures,
            "a group decided on a group that was not committed is decided again"
        );
        let Decided {
            outcomes,
            totals,
            received_at,
            lookup,
            found_stored,
            basis: _,
        } = decided;
        let lengths: Vec<usize> = group.iter().map(|s| s.events().len()).collect();
        let first_seq = self.next_seq;
        let mut seq = first_seq;
        let mut fresh = Vec::with_capacity(outcomes.iter().map(Vec::len).sum());
        for (submission, outcomes) in group.iter_mut().zip(&outcomes) {
            for (e, outcome) in submission.events_mut().drain(..).zip(outcomes) {
                let Some(late) = outcome.stored() else { continue };
                fresh.push(numbered(e, seq, late, received_at));
                seq += 1;
            }
        }
        let sealed_before = self.sealed_below;
        let seal = (seq - sealed_before >= self.run_seqs).then_some((sealed_before, seq));
        self.next_seq = seq;
        if let Some((_, end)) = seal {
            self.sealed_below = end;
        }
        let mut new_seasons: Seasons = Vec::new();
        let mut last: Option<&LoggedEvent> = None;
        for e in &fresh {
            // Events of one season come in runs: most of them are the one before them.
            if last.is_some_and(|last| last.game == e.game && last.season == e.season) {
                continue;
            }
            last = Some(e);
            let recorded = self
                .event_seasons
                .get(e.game.as_str())
                .is_some_and(|seasons| seasons.contains(e.season.as_str()));
            if !recorded && !new_seasons.iter().any(|(g, s)| *g == e.game && *s == e.season) {
                new_seasons.push((e.game.clone(), e.season.clone()));
            }
        }
        // The sealed run's index entries: those of the committed tail, then this group's.
        let seal = seal.map(|(start, end)| {
            let mut entries = Vec::with_capacity(self.unsealed.len() + fresh.len());
            entries.extend_from_slice(&self.unsealed);
            entries.extend(fresh.iter().map(|e| (index_key(e), e.seq)));
            (start, end, entries)
        });
        self.flight = Some(Flight {
            received_at,
            first_seq,
            sealed_before,
            lookup,
            found_stored,
            lengths,
            totals,
            unknown: false,
        });
        Write {
            fresh,
            seal,
            new_seasons,
            lookup,
            outcomes,
        }
    }

    /// The group in flight is durably committed, with its events (`fresh`) and the seasons
    /// they are the first of. Returns the totals it reaches, pending until the boards show
    /// them ([`GroupCommit::pend`]). O(events).
    pub(crate) fn committed(&mut self, fresh: &[LoggedEvent], new_seasons: Seasons) -> PendingTotals {
        let flight = self.flight.take().expect("a group in flight");
        if flight.lookup {
            self.lookup_first = flight.found_stored;
        }
        for (game, season) in new_seasons {
            self.event_seasons.entry(game).or_default().insert(season);
        }
        if self.sealed_below == flight.sealed_before {
            self.unsealed.extend(fresh.iter().map(|e| (index_key(e), e.seq)));
        } else {
            // This group sealed the run, its own events included.
            self.unsealed.clear();
        }
        flight.totals
    }

    /// The group in flight is known not committed: its `seq`s are free again.
    pub(crate) fn rolled_back(&mut self) {
        let flight = self.flight.take().expect("a group in flight");
        self.next_seq = flight.first_seq;
        self.sealed_below = flight.sealed_before;
        self.failures += 1;
    }

    /// The group in flight met stored ids, so nothing of it was stored: its `seq`s are free
    /// again and its events (`fresh`, every one of them was to be stored) go back to their
    /// submissions in order, to be decided again, looked up. O(events).
    ///
    /// Returns when the writer took the group, which its next decision reads again.
    pub(crate) fn resubmitted<G: Events>(&mut self, group: &mut [G], fresh: Vec<LoggedEvent>) -> i64 {
        let flight = self.flight.take().expect("a group in flight");
        self.next_seq = flight.first_seq;
        self.sealed_below = flight.sealed_before;
        self.failures += 1;
        self.lookup_first = true;
        let lengths = flight.lengths;
        let mut events = fresh.into_iter();
        for (submission, length) in group.iter_mut().zip(lengths) {
            submission
                .events_mut()
                .extend(events.by_ref().take(length).map(|e| e.event));
        }
        flight.received_at
    }

    /// The group in flight's commit was sent and its answer lost: its `seq`s stay taken and
    /// nothing is decided until [`GroupCommit::resolve`]. A decision made on it is stale.
    pub(crate) fn unknown(&mut self) {
        let flight = self.flight.as_mut().expect("a group in flight");
        flight.unknown = true;
        self.failures += 1;
    }

    /// The first `seq` of the group whose outcome is unknown, if one is.
    pub(crate) fn unresolved_seq(&self) -> Option<i64> {
        self.flight.as_ref().filter(|f| f.unknown).map(|f| f.first_seq)
    }

    /// Whether the group with the unknown outcome is in the log, given the log's next free
    /// `seq` once the database answers: the driver then calls [`GroupCommit::committed`] or
    /// [`GroupCommit::rolled_back`]. O(1).
    pub(crate) fn resolve(&self, log_next_seq: i64) -> bool {
        let flight = self.flight.as_ref().expect("a group with an unknown outcome");
        debug_assert!(flight.unknown);
        let first_seq = (self.next_seq > flight.first_seq).then_some(flight.first_seq);
        unknown_commit_landed(first_seq, log_next_seq)
    }

    /// Holds a committed group's totals until the boards show them. O(totals).
    pub(crate) fn pend(&mut self, totals: PendingTotals) {
        // Later groups' totals build on earlier ones, so they replace them.
        self.backlog.extend(totals);
    }

    /// The boards show every committed group: their totals are read there again.
    pub(crate) fn boards_caught_up(&mut self) {
        self.backlog.clear();
    }

    /// How many totals are pending.
    pub(crate) fn pending_totals(&self) -> usize {
        self.backlog.len()
    }
}

/// A new event numbered into the log.
fn numbered(event: NewEvent, seq: i64, late: bool, received_at: i64) -> LoggedEvent {
    let status = if late {
        EventStatus::Late
    } else {
        EventStatus::Applied
    };
    LoggedEvent {
        seq,
        status,
        received_at,
        event,
    }
}

/// Decides a new event against the season, disqualifications and cumulative totals. Returns
/// whether it is late anywhere; records its contribution to pending totals when it passes.
/// A total not in `pending` is looked up in `earlier` (the group in flight, then the backlog),
/// then on the boards.
fn decide_event(
    registry: &Registry,
    domain: &Moderation,
    boards: &impl Totals,
    e: &NewEvent,
    received_at: i64,
    pending: &mut PendingTotals,
    earlier: [&PendingTotals; 2],
) -> Result<bool, Refusal> {
    let season_late = domain.season_late_on_arrival(e)?;
    for board in e.boards().filter(|_| domain.disqualifies_anyone()) {
        if domain.is_disqualified(&board, &e.player_id) {
            return Err(Refusal::PlayerDisqualified {
                player: e.player_id.clone(),
                board,
            });
        }
    }
    let targets = targets(registry, e, received_at, season_late)?;
    let mut updates = Vec::new();
    for target in &targets {
        if target.late {
            continue;
        }
        let Some(entry) = registry.entry(&target.board) else {
            continue;
        };
        if entry.def.rules.score_mode != ScoreMode::Cumulative {
            continue;
        }
        let key = (
            target.board.clone(),
            target.period.key.clone(),
            e.player_id.clone(),
        );
        let earlier_total = earlier.iter().find_map(|totals| totals.get(&key));
        let current = match pending.get(&key).or(earlier_total) {
            Some(total) => Some(*total),
            None => boards.current(&entry, &target.period.key, &e.player_id),
        };
        let total = match current {
            Some(c) => c.checked_add(e.value).ok_or_else(|| Refusal::TotalOverflow {
                board: target.board.clone(),
                period_key: target.period.key.clone(),
            })?,
            None => e.value,
        };
        updates.push((key, total));
    }
    pending.extend(updates);
    Ok(targets.iter().any(|t| t.late))
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use proptest::prelude::*;
    use standings_core::BoardRules;

    use super::*;
    use crate::domain::BoardDef;
    use crate::domain::seasons::{SeasonRecord, SeasonState};

    /// The seasons: `s` is active; `f` left `active` at 1000, so what was achieved before is
    /// late and what was achieved after is refused.
    const LEFT_ACTIVE_AT: i64 = 1_000;

    fn board(season: &str) -> BoardDef {
        BoardDef {
            metadata_max_bytes: 256,
            shards: 1,
            segments: Default::default(),
            feed: Default::default(),
            id: BoardId {
                game: "g".into(),
                mode: "m".into(),
                season: season.into(),
                scope: "global".into(),
            },
            rules: BoardRules::new(ScoreMode::Cumulative),
            periods: vec!["all_time".into()],
            grace_seconds: 0,
            timezone: "UTC".into(),
        }
    }

    fn world() -> (Registry, Moderation) {
        let registry = Registry::default();
        registry.add(&board("s")).unwrap();
        registry.add(&board("f")).unwrap();
        let domain = Moderation::default();
        let frozen = SeasonRecord {
            state: SeasonState::Frozen,
            explicit: true,
            left_active_at: Some(LEFT_ACTIVE_AT),
            left_active_seq: Some(0),
        };
        domain.seasons.set("g", "f", frozen);
        (registry, domain)
    }

    const VALUES: [i64; 4] = [1, 7, i64::MAX / 2, i64::MAX - 3];

    /// The event with id `id` and payload `variant`: a retry repeats both, a conflict changes
    /// the variant. Some go to no board, some are late, some arrive for a frozen season, and
    /// the values run up to overflowing totals.
    fn event(id: u8, variant: u8) -> NewEvent {
        let h = usize::from(id) * 2 + usize::from(variant);
        let (season, scope, achieved_at) = match h % 7 {
            0 => ("s", "nowhere", 0),
            1 => ("f", "global", LEFT_ACTIVE_AT - 500),
            2 => ("f", "global", LEFT_ACTIVE_AT + 1_000),
            _ => ("s", "global", 0),
        };
        NewEvent {
            metadata: None,
            segments: None,
            game: "g".into(),
            event_id: format!("e{id}"),
            player_id: ["a", "b", "c"][h % 3].into(),
            mode: "m".into(),
            season: season.into(),
            scopes: vec![scope.into()],
            value: VALUES[h % 4],
            achieved_at,
            source: "test".into(),
        }
    }

    /// An outcome as compared: its kind and, for a refusal, which one.
    fn kind(outcome: &Outcome) -> String {
        match outcome {
            Outcome::Accepted => "accepted".into(),
            Outcome::Late => "late".into(),
            Outcome::Duplicate => "duplicate".into(),
            Outcome::Refused(refusal) => match refusal {
                Refusal::SeasonNotActive { .. } => "season not active",
                Refusal::PlayerDisqualified { .. } => "player disqualified",
                Refusal::UnknownBoard(_) => "unknown board",
                Refusal::EventIdConflict(_) => "event id conflict",
                Refusal::EventInvalidated(_) => "event invalidated",
                Refusal::TotalOverflow { .. } => "total overflow",
            }
            .into(),
        }
    }

    /// The boards as applied: one total per player (every board has one period).
    #[derive(Default)]
    struct Applied(HashMap<(BoardId, String), i64>);

    impl Totals for Applied {
        fn current(&self, entry: &BoardEntry, _period: &str, player: &str) -> Option<i64> {
            self.0.get(&(entry.def.id.clone(), player.to_string())).copied()
        }
    }

    /// What the store does with a written group.
    #[derive(Clone, Copy, Debug)]
    enum Fate {
        Commit,
        Fail,
        /// The answer is lost; the commit took or not.
        Unknown(bool),
    }

    fn fate() -> impl Strategy<Value = Fate> {
        prop_oneof![
            6 => Just(Fate::Commit),
            1 => Just(Fate::Fail),
            1 => Just(Fate::Unknown(true)),
            1 => Just(Fate::Unknown(false)),
        ]
    }

    type Group = Vec<Vec<NewEvent>>;

    struct InFlight {
        index: usize,
        group: Group,
        write: Write,
        fate: Fate,
    }

    /// A driver with the store, the applying thread and the boards as plain data: it makes the
    /// machine's calls in the order the real driver makes them.
    struct Harness {
        machine: GroupCommit,
        registry: Registry,
        domain: Moderation,
        /// The log: every stored event, in `seq` order.
        log: Vec<LoggedEvent>,
        stored: HashMap<String, LoggedEvent>,
        applied: Applied,
        /// Committed groups not applied yet.
        unapplied: VecDeque<Vec<LoggedEvent>>,
        flight: Option<InFlight>,
        unresolved: Option<InFlight>,
        fates: Vec<Fate>,
        next_fate: usize,
        /// Per group, its outcomes once committed, `Err` once failed.
        answers: Vec<Option<Result<Vec<Vec<Outcome>>, ()>>>,
        /// The groups in the order they were committed.
        committed: Vec<usize>,
    }

    enum Landed {
        Committed,
        Resubmitted(usize, Group),
        Failed,
    }

    impl Harness {
        fn new(fates: Vec<Fate>, groups: usize) -> Harness {
            let (registry, domain) = world();
            Harness {
                machine: GroupCommit::new(1, 1, 8, Vec::new(), HashMap::new()),
                registry,
                domain,
                log: Vec::new(),
                stored: HashMap::new(),
                applied: Applied::default(),
                unapplied: VecDeque::new(),
                flight: None,
                unresolved: None,
                fates,
                next_fate: 0,
                answers: (0..groups).map(|_| None).collect(),
                committed: Vec::new(),
            }
        }

        fn decide(&self, group: &Group, lookup: bool) -> Decided {
            let found: Option<Vec<LoggedEvent>> = lookup.then(|| {
                ids_to_look_up(group)
                    .values()
                    .flatten()
                    .filter_map(|id| self.stored.get(*id).cloned())
                    .collect()
            });
            self.machine.decide(
                group,
                5,
                found.as_deref(),
                &self.registry,
                &self.domain,
                &self.applied,
            )
        }

        fn take(&mut self, index: usize, group: Group, pipelined: bool) {
            if !pipelined {
                self.settle();
            }
            let mut look_up = false;
            loop {
                let lookup = self.machine.should_look_up() || look_up;
                if lookup {
                    self.settle();
                }
                self.resolve();
                let decided = self.decide(&group, lookup);
                if !lookup && !decided.stores_all() {
                    look_up = true;
                    continue;
                }
                let Some(flight) = self.flight.take() else {
                    self.launch(index, group, decided);
                    return;
                };
                match self.land(flight) {
                    Landed::Committed => {
                        self.launch(index, group, decided);
                        return;
                    }
                    Landed::Resubmitted(earlier, events) => self.redo(earlier, events),
                    Landed::Failed => {}
                }
            }
        }

        fn launch(&mut self, index: usize, mut group: Group, decided: Decided) {
            let write = self.machine.write(&mut group, decided);
            let fate = self.fates[self.next_fate % self.fates.len()];
            self.next_fate += 1;
            self.flight = Some(InFlight {
                index,
                group,
                write,
                fate,
            });
        }

        /// Stores a group's events, checking they are numbered from the log's next `seq` on.
        fn store(&mut self, fresh: &[LoggedEvent]) {
            for (i, e) in fresh.iter().enumerate() {
                assert_eq!(
                    e.seq,
                    self.log.len() as i64 + 1,
                    "seqs are dense and in order ({i})"
                );
                assert!(
                    self.stored.insert(e.event_id.clone(), e.clone()).is_none(),
                    "stored twice"
                );
                self.log.push(e.clone());
            }
        }

        fn land(&mut self, flight: InFlight) -> Landed {
            let resubmitted = !flight.write.lookup
                && flight
                    .write
                    .fresh
                    .iter()
                    .any(|e| self.stored.contains_key(&e.event_id));
            if resubmitted {
                let InFlight {
                    index,
                    mut group,
                    write,
                    ..
                } = flight;
                let lengths: Vec<usize> = write.outcomes.iter().map(Vec::len).collect();
                self.machine.resubmitted(&mut group, write.fresh);
                let back: Vec<usize> = group.iter().map(Vec::len).collect();
                assert_eq!(back, lengths, "every event goes back to its submission");
                return Landed::Resubmitted(index, group);
            }
            match flight.fate {
                Fate::Commit => {
                    self.store(&flight.write.fresh);
                    self.commit(flight);
                    Landed::Committed
                }
                Fate::Fail => {
                    self.machine.rolled_back();
                    self.answers[flight.index] = Some(Err(()));
                    Landed::Failed
                }
                Fate::Unknown(took) => {
                    if took {
                        self.store(&flight.write.fresh);
                    }
                    self.machine.unknown();
                    assert!(self.machine.blocked());
                    self.unresolved = Some(flight);
                    Landed::Failed
                }
            }
        }

        fn commit(&mut self, flight: InFlight) {
            let InFlight { index, write, .. } = flight;
            let totals = self.machine.committed(&write.fresh, write.new_seasons);
            if self.unapplied.is_empty() {
                self.machine.boards_caught_up();
            }
            self.machine.pend(totals);
            self.unapplied.push_back(write.fresh);
            self.answers[index] = Some(Ok(write.outcomes));
            self.committed.push(index);
        }

        fn resolve(&mut self) {
            let Some(flight) = self.unresolved.take() else {
                return;
            };
            let Fate::Unknown(took) = flight.fate else {
                unreachable!()
            };
            let landed = self.machine.resolve(self.log.len() as i64 + 1);
            assert_eq!(landed, took || flight.write.fresh.is_empty(), "the log tells");
            if landed {
                self.commit(flight);
            } else {
                self.machine.rolled_back();
                self.answers[flight.index] = Some(Err(()));
            }
            assert!(!self.machine.blocked());
        }

        fn settle(&mut self) {
            let Some(flight) = self.flight.take() else {
                return;
            };
            if let Landed::Resubmitted(index, group) = self.land(flight) {
                self.redo(index, group);
            }
        }

        fn redo(&mut self, index: usize, group: Group) {
            let decided = self.decide(&group, true);
            self.launch(index, group, decided);
            let flight = self.flight.take().unwrap();
            assert!(!matches!(self.land(flight), Landed::Resubmitted(..)));
        }

        /// The applying thread catches up with `groups` committed groups.
        fn apply(&mut self, groups: usize) {
            for _ in 0..groups {
                let Some(fresh) = self.unapplied.pop_front() else {
                    break;
                };
                for e in fresh.iter().filter(|e| e.status == EventStatus::Applied) {
                    let key = (e.boards().next().unwrap(), e.player_id.clone());
                    let total = self.applied.0.entry(key).or_default();
                    *total = total.checked_add(e.value).expect("a total never overflows");
                }
            }
        }

        fn finish(&mut self) {
            self.settle();
            self.resolve();
            self.apply(usize::MAX);
            self.machine.boards_caught_up();
        }
    }

    /// The plain model: each committed group's events decided in order against the ids stored
    /// before them and the totals they reached.
    fn model(groups: &[Group], order: &[usize]) -> (HashMap<usize, Vec<Vec<String>>>, Vec<String>) {
        let mut stored: HashMap<String, NewEvent> = HashMap::new();
        let mut totals: HashMap<(String, String), i64> = HashMap::new();
        let mut log = Vec::new();
        let mut answers = HashMap::new();
        for &index in order {
            let mut these = Vec::new();
            for submission in &groups[index] {
                let mut outcomes = Vec::new();
                for e in submission {
                    let outcome = if let Some(earlier) = stored.get(&e.event_id) {
                        if earlier.same_payload(e) {
                            "duplicate"
                        } else {
                            "event id conflict"
                        }
                    } else if e.season == "f" && e.achieved_at >= LEFT_ACTIVE_AT {
                        "season not active"
                    } else if e.scopes[0] != "global" {
                        "unknown board"
                    } else if e.season == "f" {
                        "late"
                    } else {
                        let key = (e.season.clone(), e.player_id.clone());
                        let total = totals.get(&key).copied().unwrap_or(0);
                        match total.checked_add(e.value) {
                            Some(total) => {
                                totals.insert(key, total);
                                "accepted"
                            }
                            None => "total overflow",
                        }
                    };
                    if matches!(outcome, "accepted" | "late") {
                        stored.insert(e.event_id.clone(), e.clone());
                        log.push(e.event_id.clone());
                    }
                    outcomes.push(outcome.to_string());
                }
                these.push(outcomes);
            }
            answers.insert(index, these);
        }
        (answers, log)
    }

    /// Submissions of events out of a small pool of ids and payloads, so that retries and
    /// conflicts are frequent, within and across groups.
    fn groups() -> impl Strategy<Value = Vec<(Group, bool, usize)>> {
        let submission = prop::collection::vec((0u8..12, 0u8..2), 0..5)
            .prop_map(|events| events.into_iter().map(|(id, v)| event(id, v)).collect::<Vec<_>>());
        let group = prop::collection::vec(submission, 1..4);
        prop::collection::vec((group, any::<bool>(), 0usize..3), 1..12)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Whatever the store does (commits, failures, resubmissions, lost answers either way)
        /// and however far the applying thread lags, every committed event gets the outcome
        /// the plain model gives it, the log is numbered densely with nothing twice, and no
        /// total overflows.
        #[test]
        fn the_group_commit_decides_as_the_plain_model(
            groups in groups(),
            fates in prop::collection::vec(fate(), 1..16),
        ) {
            let mut harness = Harness::new(fates, groups.len());
            for (index, (group, pipelined, apply)) in groups.iter().enumerate() {
                harness.take(index, group.clone(), *pipelined);
                harness.apply(*apply);
            }
            harness.finish();
            let plain: Vec<Group> = groups.iter().map(|(g, _, _)| g.clone()).collect();
            // Groups commit in the order they were taken.
            prop_assert!(harness.committed.windows(2).all(|w| w[0] < w[1]));
            let (expected, log) = model(&plain, &harness.committed);
            for (index, answer) in harness.answers.iter().enumerate() {
                match answer {
                    Some(Ok(outcomes)) => {
                        let got: Vec<Vec<String>> =
                            outcomes.iter().map(|o| o.iter().map(kind).collect()).collect();
                        prop_assert_eq!(&got, &expected[&index], "group {}", index);
                    }
                    Some(Err(())) => prop_assert!(!expected.contains_key(&index)),
                    None => prop_assert!(false, "group {} was never answered", index),
                }
            }
            let stored: Vec<String> = harness.log.iter().map(|e| e.event_id.clone()).collect();
            prop_assert_eq!(stored, log);
            prop_assert_eq!(harness.machine.next_seq(), harness.log.len() as i64 + 1);
            for e in &harness.log {
                let late = e.season == "f";
                prop_assert_eq!(e.status, if late { EventStatus::Late } else { EventStatus::Applied });
                prop_assert_eq!(e.received_at, 5);
            }
        }
    }

    fn one(events: &[(u8, u8)]) -> Group {
        vec![events.iter().map(|&(id, v)| event(id, v)).collect()]
    }

    /// A group whose events are all new stores every one of them without a look-up; a repeat
    /// within the group or a refusal means it must be looked up.
    #[test]
    fn an_optimistic_decision_stands_only_when_it_stores_every_event() {
        let (registry, domain) = world();
        let machine = GroupCommit::new(1, 1, 8, Vec::new(), HashMap::new());
        let new = machine.decide(
            &one(&[(3, 0), (4, 0)]),
            5,
            None,
            &registry,
            &domain,
            &Applied::default(),
        );
        assert!(new.stores_all());
        let repeat = machine.decide(
            &one(&[(3, 0), (3, 0)]),
            5,
            None,
            &registry,
            &domain,
            &Applied::default(),
        );
        assert!(!repeat.stores_all());
        let refused = machine.decide(&one(&[(0, 0)]), 5, None, &registry, &domain, &Applied::default());
        assert_eq!(kind(&refused.outcomes[0][0]), "unknown board");
        assert!(!refused.stores_all());
    }

    /// Written groups are numbered from the next seq on; a rolled-back one frees its seqs.
    #[test]
    fn a_rolled_back_group_frees_its_seqs() {
        let (registry, domain) = world();
        let mut machine = GroupCommit::new(41, 1, 1_000, Vec::new(), HashMap::new());
        let mut group = one(&[(3, 0), (4, 0)]);
        let decided = machine.decide(&group, 5, None, &registry, &domain, &Applied::default());
        let write = machine.write(&mut group, decided);
        let seqs: Vec<i64> = write.fresh.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [41, 42]);
        assert_eq!(machine.next_seq(), 43);
        machine.rolled_back();
        assert_eq!(machine.next_seq(), 41);
    }

    /// A group decided while another was in flight counts on it; if that one is not
    /// committed, the decision cannot be written.
    #[test]
    #[should_panic(expected = "decided again")]
    fn a_decision_on_a_group_that_failed_is_not_written() {
        let (registry, domain) = world();
        let mut machine = GroupCommit::new(1, 1, 1_000, Vec::new(), HashMap::new());
        let mut first = one(&[(3, 0)]);
        let decided = machine.decide(&first, 5, None, &registry, &domain, &Applied::default());
        machine.write(&mut first, decided);
        let mut second = one(&[(4, 0)]);
        let stale = machine.decide(&second, 5, None, &registry, &domain, &Applied::default());
        machine.rolled_back();
        machine.write(&mut second, stale);
    }

    /// A total in flight counts: an event that would overflow it is refused before it is
    /// stored, though the boards show nothing yet.
    #[test]
    fn totals_in_flight_and_pending_refuse_an_overflow() {
        let (registry, domain) = world();
        let mut machine = GroupCommit::new(1, 1, 1_000, Vec::new(), HashMap::new());
        // Events 1 and 5 carry i64::MAX - 3 for player b... (see `event`): find two big ones.
        let big = |id: u8| event(id, 1);
        assert_eq!(big(1).value, i64::MAX - 3);
        let mut first: Group = vec![vec![big(1)]];
        let decided = machine.decide(&first, 5, None, &registry, &domain, &Applied::default());
        let write = machine.write(&mut first, decided);
        let mut again = big(1);
        again.event_id = "other".into();
        let second: Group = vec![vec![again]];
        let in_flight = machine.decide(&second, 5, None, &registry, &domain, &Applied::default());
        assert_eq!(kind(&in_flight.outcomes[0][0]), "total overflow");
        let totals = machine.committed(&write.fresh, write.new_seasons);
        machine.pend(totals);
        let pending = machine.decide(&second, 5, None, &registry, &domain, &Applied::default());
        assert_eq!(kind(&pending.outcomes[0][0]), "total overflow");
        machine.boards_caught_up();
        let forgotten = machine.decide(&second, 5, None, &registry, &domain, &Applied::default());
        assert_eq!(
            kind(&forgotten.outcomes[0][0]),
            "accepted",
            "the boards show nothing"
        );
    }

    /// A resubmitted group's events go back to their submissions, and the next group looks up
    /// first until a looked-up group finds nothing stored.
    #[test]
    fn a_resubmission_hands_the_events_back_and_looks_up_next() {
        let (registry, domain) = world();
        let mut machine = GroupCommit::new(1, 1, 1_000, Vec::new(), HashMap::new());
        let mut group: Group = vec![vec![event(3, 0)], vec![event(4, 0), event(5, 0)]];
        let decided = machine.decide(&group, 5, None, &registry, &domain, &Applied::default());
        let write = machine.write(&mut group, decided);
        assert!(group.iter().all(Vec::is_empty));
        machine.resubmitted(&mut group, write.fresh);
        assert_eq!(group.iter().map(Vec::len).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(group[1][1].event_id, "e5");
        assert!(machine.should_look_up());
        assert_eq!(machine.next_seq(), 1);
        let decided = machine.decide(&group, 5, Some(&[]), &registry, &domain, &Applied::default());
        let write = machine.write(&mut group, decided);
        machine.committed(&write.fresh, write.new_seasons);
        assert!(!machine.should_look_up(), "a look-up that found nothing");
    }

    /// An unknown outcome blocks deciding until the log's next seq says whether the group is
    /// in it: taken when the log holds its first seq, free again when not.
    #[test]
    fn an_unknown_commit_is_resolved_by_whether_the_log_holds_its_first_seq() {
        let (registry, domain) = world();
        let mut machine = GroupCommit::new(41, 1, 1_000, Vec::new(), HashMap::new());
        let mut group = one(&[(3, 0), (4, 0)]);
        let decided = machine.decide(&group, 5, None, &registry, &domain, &Applied::default());
        machine.write(&mut group, decided);
        machine.unknown();
        assert!(machine.blocked());
        assert_eq!(machine.unresolved_seq(), Some(41));
        assert!(machine.resolve(43));
        assert!(!machine.resolve(41));
        machine.rolled_back();
        assert!(!machine.blocked());
        assert_eq!(machine.next_seq(), 41);
        assert!(
            unknown_commit_landed(None, 41),
            "a group that stored nothing stands"
        );
    }

    /// The group that completes a run seals it with the tail's entries and its own; a season's
    /// first events record it once.
    #[test]
    fn the_group_that_completes_a_run_seals_it() {
        let (registry, domain) = world();
        let mut machine = GroupCommit::new(3, 1, 4, vec![(7, 1), (8, 2)], HashMap::new());
        let mut group = one(&[(3, 0), (5, 0)]);
        let decided = machine.decide(&group, 5, None, &registry, &domain, &Applied::default());
        let write = machine.write(&mut group, decided);
        let (start, end, entries) = write.seal.clone().expect("seqs 1 to 4 make a run");
        assert_eq!((start, end), (1, 5));
        assert_eq!(entries.len(), 4);
        assert_eq!(&entries[..2], &[(7, 1), (8, 2)]);
        assert_eq!(write.new_seasons, [("g".to_string(), "s".to_string())]);
        machine.committed(&write.fresh, write.new_seasons);
        let mut next = one(&[(6, 0)]);
        let decided = machine.decide(&next, 5, None, &registry, &domain, &Applied::default());
        let write = machine.write(&mut next, decided);
        assert!(write.seal.is_none());
        assert!(write.new_seasons.is_empty(), "the season is recorded");
        machine.committed(&write.fresh, write.new_seasons);
        assert_eq!(
            machine.unsealed.len(),
            1,
            "the sealed run's entries left the tail"
        );
    }
}
