//! The decisions of one view's topic, without locks, clocks or IO: what a new subscriber is
//! sent first, and what a window sends.
//!
//! A topic keeps the state it last sent (`last`). Every settled subscriber holds the view at
//! `last.board_version`, and each window sends the net change from `last` to the board's
//! current view, then takes that as `last`. A window whose view changed nothing net sends
//! nothing and keeps `last`, so the next delta still starts at the version every subscriber
//! holds (see the core's `live` module doc).
//!
//! A new subscriber is brought to the board's version when it subscribes, not to `last`, which
//! may be a window (or, for a view that held still, thousands of versions) behind. When the
//! board moved past `last`, the newcomer's first message is the view read then, and it waits
//! among the *joining* until the next window ([`settle`]) brings it and the settled subscribers
//! to that window's version, with an empty delta that only moves the version where nothing
//! changed. So the first message is never behind the board, settled subscribers get at most one
//! extra message per window however many join, and every delta after it chains for everyone.

pub(crate) use standings_core::{First, first_message};
use standings_core::{Position, ViewDelta, ViewState};

/// The version a client coming back at `since` holds the view of the instance `period_key` at:
/// its version when the position is of that instance, none otherwise (a position of another
/// day, or a bare version of a day, week or month), which is answered with a snapshot. O(1).
pub(crate) fn held_version(since: Option<&Position>, period_key: &str) -> Option<u64> {
    since
        .filter(|position| position.is_of(period_key))
        .map(|position| position.board_version)
}

/// What a window sends when subscribers joined: to the settled ones holding `last`, and to each
/// group that joined at a version the window's read `now` has reached (each holding the view
/// it was sent then), so that all of them hold `now` afterwards and `last` is `now`. Each gets
/// the net change to `now`, or where its view did not change but its version is behind, an
/// empty delta that only moves it to `now`'s version; nothing where it is at `now` already.
/// O(groups x k log k).
pub(crate) fn settle(
    last: &mut ViewState,
    joined: &[&ViewState],
    now: ViewState,
) -> (Option<ViewDelta>, Vec<Option<ViewDelta>>) {
    let catch_up = |held: &ViewState| {
        ViewDelta::between(held, &now).or_else(|| {
            (now.board_version > held.board_version).then(|| ViewDelta::advance(held, now.board_version))
        })
    };
    let to_joined = joined.iter().map(|held| catch_up(held)).collect();
    let to_last = catch_up(last);
    *last = now;
    (to_last, to_joined)
}

/// The net change a window sends a topic whose view now reads `now`, updating `last` when
/// there is one. `None` when the view holds the same entries as `last`, whatever the versions
/// between: `last` is kept, so the next delta starts where subscribers are. O(k) when nothing
/// changed, O(k log k) otherwise.
pub(crate) fn window(last: &mut ViewState, now: ViewState) -> Option<ViewDelta> {
    // A view that held still (a large board's top, most windows) is settled by comparing the
    // entries in order, without building the per-player maps of `between`.
    if now.entries == last.entries {
        return None;
    }
    let delta = ViewDelta::between(last, &now)?;
    *last = now;
    Some(delta)
}

#[cfg(test)]
mod tests {
    use standings_core::{Board, BoardRules, ScoreEvent, ScoreMode, View};

    use super::*;

    fn view(text: &str) -> View {
        text.parse().unwrap()
    }

    fn score(board: &mut Board, id: &str, player: &str, value: i64) {
        let at = board.version() as i64;
        board
            .apply(&ScoreEvent::new(id, player, value, at).unwrap())
            .unwrap();
    }

    fn board_with(scores: &[(&str, i64)]) -> Board {
        let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
        for (i, (player, value)) in scores.iter().enumerate() {
            score(&mut board, &format!("e{i}"), player, *value);
        }
        board
    }

    fn held(board: &Board, top: &View) -> impl FnOnce(u64) -> Option<ViewState> {
        move |n| ViewState::read_at(board, top, "all_time", n).ok()
    }

    /// Without since_version, or with one the topic has not reached, a snapshot; with the
    /// topic's own version, an empty delta.
    #[test]
    fn the_first_message_without_history_to_follow() {
        let board = board_with(&[("a", 50), ("b", 40)]);
        let top = view("top:2");
        let last = ViewState::read(&board, &top, "all_time");
        assert_eq!(first_message(&last, None, held(&board, &top)), First::Snapshot);
        assert_eq!(
            first_message(&last, Some(last.board_version + 1), held(&board, &top)),
            First::Snapshot
        );
        assert_eq!(
            first_message(&last, Some(last.board_version), held(&board, &top)),
            First::Delta(ViewDelta {
                period_key: "all_time".into(),
                base_version: last.board_version,
                board_version: last.board_version,
                changed: Vec::new(),
                left: Vec::new(),
            })
        );
    }

    /// A client at an older version the board still holds gets one delta that brings its
    /// view exactly to `last`; one whose version the board no longer holds gets a snapshot.
    #[test]
    fn the_first_message_catches_up_exactly_or_starts_over() {
        let mut board = board_with(&[("a", 50), ("b", 40), ("c", 30)]);
        let top = view("top:2");
        let old = ViewState::read(&board, &top, "all_time");
        score(&mut board, "x1", "z", 99);
        score(&mut board, "x2", "c", 45);
        let last = ViewState::read(&board, &top, "all_time");
        let First::Delta(delta) = first_message(&last, Some(old.board_version), held(&board, &top)) else {
            panic!("the board holds the old version");
        };
        let mut client = old.clone();
        client.apply(&delta).unwrap();
        assert_eq!(client, last);
        // A history that is gone (the reader finds nothing) means a snapshot.
        assert_eq!(
            first_message(&last, Some(old.board_version), |_| None),
            First::Snapshot
        );
        // The view at an older version, equal to `last`: an empty delta up to `last`.
        score(&mut board, "x3", "c", 46);
        let unchanged = ViewState::read(&board, &top, "all_time");
        let First::Delta(empty) = first_message(&unchanged, Some(last.board_version), held(&board, &top))
        else {
            panic!("the board holds the version");
        };
        assert!(empty.changed.is_empty() && empty.left.is_empty());
        assert_eq!(
            (empty.base_version, empty.board_version),
            (last.board_version, unchanged.board_version)
        );
    }

    /// A player who moves 5 -> 4 -> 5 within one window (a better score, then its
    /// invalidation) changes nothing net on a top view: nothing is sent and `last` is kept, and
    /// the next real change starts from it.
    #[test]
    fn a_window_with_no_net_change_sends_nothing() {
        let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
        let mut e_events = Vec::new();
        for (i, (player, value)) in [("a", 90), ("b", 80), ("c", 70), ("d", 60), ("e", 50)]
            .iter()
            .enumerate()
        {
            let event = ScoreEvent::new(&format!("e{i}"), player, *value, i as i64).unwrap();
            board.apply(&event).unwrap();
            if *player == "e" {
                e_events.push(event);
            }
        }
        let top = view("top:5");
        let mut last = ViewState::read(&board, &top, "all_time");
        let sent = last.clone();
        assert_eq!(sent.entries[4].player_id.as_str(), "e");
        let better = ScoreEvent::new("x1", "e", 65, 10).unwrap();
        board.apply(&better).unwrap();
        assert_eq!(board.player_rank("e").unwrap().entry.rank, 4);
        board.recompute_player(&better.player, &e_events).unwrap();
        assert_eq!(board.player_rank("e").unwrap().entry.rank, 5);
        let now = ViewState::read(&board, &top, "all_time");
        assert_eq!(now.board_version, sent.board_version + 2);
        assert!(window(&mut last, now).is_none());
        assert_eq!(last, sent);
        // The next change's delta starts at the version the subscribers hold.
        score(&mut board, "x2", "y", 95);
        let next = ViewState::read(&board, &top, "all_time");
        let delta = window(&mut last, next.clone()).expect("y entered");
        assert_eq!(delta.base_version, sent.board_version);
        let mut client = sent;
        client.apply(&delta).unwrap();
        assert_eq!(client, next);
        assert_eq!(last, next);
    }
}
