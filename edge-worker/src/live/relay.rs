//! One view as a live object follows it: the state the origin last sent, the states before it
//! that the object saw one after another, and what brings a socket from where it stands to the
//! current state. The decisions are the origin's own (`standings_core::first_message`,
//! `ViewDelta::between`, printed by `live_message`), over the object's history instead of the
//! board's, so a socket gets the bytes a direct subscriber would.

use std::collections::VecDeque;

use standings_core::{
    First, Position, View, ViewDelta, ViewDeltaError, ViewState, first_message, live_message,
};

use super::upstream::Period;

/// A state of the view and the last version it is known to hold for: its own version when
/// the next state came after a gap (a new upstream's snapshot), the version before the next
/// state's otherwise.
#[derive(Clone, Debug)]
struct Held {
    state: ViewState,
    /// `None` for the current state: it holds until the next message.
    until: Option<u64>,
}

/// The view, its period instance and its recent states.
#[derive(Clone, Debug)]
pub struct Relay {
    view: View,
    period: Period,
    /// Oldest first; the last is the current state. Never empty.
    history: VecDeque<Held>,
    keep: usize,
}

/// Where a socket stands: the instance and version of the last message it was sent.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Standing {
    /// The period key.
    pub key: String,
    /// The version.
    pub version: u64,
}

impl Relay {
    /// A relay at the origin's first snapshot, keeping up to `keep` states (at least 1).
    pub fn new(view: View, period: Period, state: ViewState, keep: usize) -> Relay {
        let mut history = VecDeque::with_capacity(keep.clamp(1, 64));
        history.push_back(Held { state, until: None });
        Relay {
            view,
            period,
            history,
            keep: keep.max(1),
        }
    }

    /// The view.
    pub fn view(&self) -> &View {
        &self.view
    }

    /// The current state.
    pub fn current(&self) -> &ViewState {
        &self.history.back().expect("never empty").state
    }

    /// Where a socket sent the current state stands.
    pub fn standing(&self) -> Standing {
        let current = self.current();
        Standing {
            key: current.period_key.clone(),
            version: current.board_version,
        }
    }

    fn push(&mut self, state: ViewState, gap: bool) {
        if let Some(last) = self.history.back_mut() {
            last.until = Some(if gap {
                last.state.board_version
            } else {
                state.board_version.saturating_sub(1)
            });
        }
        self.history.push_back(Held { state, until: None });
        while self.history.len() > self.keep {
            self.history.pop_front();
        }
    }

    /// Follows a delta of the origin's. `Err` when it does not chain from the current state
    /// (another instance, or another base): the object then subscribes again. O(view).
    pub fn follow(&mut self, delta: &ViewDelta) -> Result<(), ViewDeltaError> {
        let mut next = self.current().clone();
        next.apply(delta)?;
        self.push(next, false);
        Ok(())
    }

    /// Takes a snapshot from a new upstream subscription. Of the same instance and not older,
    /// it becomes the current state after a gap: sockets at the old current state get the exact
    /// net change to it, and no version between the two is claimed. Otherwise (another
    /// instance, another view, an older version) the history starts again at it. O(view).
    pub fn restart(&mut self, view: View, period: Period, state: ViewState) {
        let current = self.current();
        if view == self.view
            && period == self.period
            && state.period_key == current.period_key
            && state.board_version >= current.board_version
        {
            if state != *current {
                self.push(state, true);
            }
            return;
        }
        *self = Relay::new(view, period, state, self.keep);
    }

    /// The view at version `n`, when the history still holds it. O(history).
    fn read_at(&self, n: u64) -> Option<ViewState> {
        self.history
            .iter()
            .find(|held| held.state.board_version <= n && held.until.is_none_or(|until| n <= until))
            .map(|held| held.state.clone())
    }

    /// The message that brings a socket to the current state: for a new one, the first
    /// message a direct subscriber would get with the same `since_version`; for one already
    /// following (`since` is where it stands), the delta from there, or a snapshot when the
    /// history no longer holds its version. O(view) plus the history's length.
    pub fn message_for(&self, since: Option<&Position>) -> Vec<u8> {
        let current = self.current();
        let held = since
            .filter(|p| p.is_of(&current.period_key))
            .map(|p| p.board_version);
        match first_message(current, held, |n| self.read_at(n)) {
            First::Snapshot => live_message::snapshot(&self.view, &self.period.fields(), current),
            First::Delta(delta) => live_message::delta(&delta),
        }
    }

    /// What a socket that stands at `at` is sent once the current state moved: nothing when it
    /// is there already, else [`Relay::message_for`] its position. O(view).
    pub fn catch_up(&self, at: &Standing) -> Option<Vec<u8>> {
        let current = self.current();
        if at.key == current.period_key && at.version == current.board_version {
            return None;
        }
        Some(self.message_for(Some(&Position {
            period_key: Some(at.key.clone()),
            board_version: at.version,
        })))
    }
}

#[cfg(test)]
mod tests {
    use standings_core::{PlayerId, ViewEntry};

    use super::*;

    fn entry(rank: u64, player: &str, value: i64) -> ViewEntry {
        ViewEntry {
            rank,
            player_id: PlayerId::new(player).unwrap(),
            value,
            achieved_at: 1_760_349_900_000 + value,
            display_name: None,
            country: None,
            metadata: None,
            global_rank: None,
        }
    }

    fn state(version: u64, entries: Vec<ViewEntry>) -> ViewState {
        ViewState {
            period_key: "all_time".into(),
            board_version: version,
            entries,
        }
    }

    fn all_time() -> Period {
        Period {
            kind: "all_time".into(),
            key: "all_time".into(),
            start_ms: None,
            end_ms: None,
        }
    }

    fn at(version: u64) -> Position {
        Position {
            period_key: Some("all_time".into()),
            board_version: version,
        }
    }

    fn text(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).unwrap()
    }

    /// The relay answers as the origin's topic does: a snapshot for a newcomer, one delta from a
    /// version it followed, a snapshot for one it never saw or no longer keeps.
    #[test]
    fn a_socket_is_sent_what_a_direct_subscriber_would_be() {
        let view: View = "top:2".parse().unwrap();
        let v1 = state(1, vec![entry(1, "a", 10)]);
        let v3 = state(3, vec![entry(1, "b", 20), entry(2, "a", 10)]);
        let v5 = state(5, vec![entry(1, "c", 30), entry(2, "b", 20)]);
        let mut relay = Relay::new(view.clone(), all_time(), v1.clone(), 2);
        relay.follow(&ViewDelta::between(&v1, &v3).unwrap()).unwrap();
        assert_eq!(
            text(relay.message_for(None)),
            text(live_message::snapshot(&view, &all_time().fields(), &v3))
        );
        // Version 2 lies between two states it followed: the view then was v1's.
        assert_eq!(
            text(relay.message_for(Some(&at(2)))),
            text(live_message::delta(&ViewDelta::between(&v1, &v3).unwrap()))
        );
        relay.follow(&ViewDelta::between(&v3, &v5).unwrap()).unwrap();
        assert_eq!(
            text(relay.message_for(Some(&at(4)))),
            text(live_message::delta(&ViewDelta::between(&v3, &v5).unwrap()))
        );
        assert!(
            relay
                .message_for(Some(&at(1)))
                .starts_with(b"{\"type\":\"snapshot\""),
            "v1 is no longer kept"
        );
        assert!(
            relay
                .message_for(Some(&at(9)))
                .starts_with(b"{\"type\":\"snapshot\""),
            "a version it never saw"
        );
        let other_day = Position {
            period_key: Some("2026-10-13".into()),
            board_version: 5,
        };
        assert!(
            relay
                .message_for(Some(&other_day))
                .starts_with(b"{\"type\":\"snapshot\"")
        );
        assert_eq!(
            text(relay.message_for(Some(&at(5)))),
            "{\"type\":\"delta\",\"period_key\":\"all_time\",\"base_version\":5,\"board_version\":5,\"changed\":[],\"left\":[]}"
        );
        assert_eq!(relay.catch_up(&relay.standing()), None);
    }

    /// After a new upstream, a socket at the old state gets the exact net change, and no version
    /// between the two is taken as known.
    #[test]
    fn a_new_upstream_snapshot_is_a_gap_not_a_history() {
        let view: View = "top:2".parse().unwrap();
        let v1 = state(1, vec![entry(1, "a", 10)]);
        let v7 = state(7, vec![entry(1, "b", 20), entry(2, "a", 10)]);
        let mut relay = Relay::new(view.clone(), all_time(), v1.clone(), 8);
        relay.restart(view.clone(), all_time(), v7.clone());
        let standing = Standing {
            key: "all_time".into(),
            version: 1,
        };
        assert_eq!(
            text(relay.catch_up(&standing).unwrap()),
            text(live_message::delta(&ViewDelta::between(&v1, &v7).unwrap()))
        );
        assert!(
            relay
                .message_for(Some(&at(4)))
                .starts_with(b"{\"type\":\"snapshot\""),
            "4 is inside the gap"
        );
        // A delta that does not chain is refused, and changes nothing.
        let stale = ViewDelta::between(&v1, &v7).unwrap();
        assert!(relay.follow(&stale).is_err());
        assert_eq!(relay.current(), &v7);
        // An older snapshot (an origin that lost its history) starts over.
        relay.restart(view, all_time(), v1.clone());
        assert_eq!(relay.current(), &v1);
        assert!(
            relay
                .message_for(Some(&at(7)))
                .starts_with(b"{\"type\":\"snapshot\"")
        );
    }
}
