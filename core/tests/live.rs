//! Property tests of live views: states read at random versions of a randomly changing board,
//! the deltas between them, and a driver that sends only net changes.

mod common;

use proptest::prelude::*;
use standings_core::{
    Board, BoardRules, PlayerId, QueryError, ScoreEvent, View, ViewDelta, ViewDeltaError, ViewEntry,
    ViewState,
};

use common::{Op, mode_strategy};

fn op_strategy() -> impl Strategy<Value = Op> {
    common::op_strategy(12, -20..20, 0..6)
}

/// Player 12 never scores, so some views watch a player who is absent throughout.
fn player_strategy() -> impl Strategy<Value = PlayerId> {
    (0u8..13).prop_map(|p| PlayerId::new(&format!("p{p:02}")).unwrap())
}

fn view_strategy() -> impl Strategy<Value = View> {
    prop_oneof![
        prop_oneof![1u16..7, Just(100u16)].prop_map(|limit| View::Top { limit }),
        (player_strategy(), 0u16..4).prop_map(|(player, radius)| View::Around { player, radius }),
        player_strategy().prop_map(|player| View::Player { player }),
    ]
}

/// The view worked out plainly from the whole board in rank order, independent of the view
/// code's calls: a prefix, a clipped window around the player's position, or the one entry.
fn model_view(board: &Board, view: &View) -> Vec<ViewEntry> {
    let all: Vec<ViewEntry> = board
        .top(10_000, None)
        .unwrap()
        .entries
        .iter()
        .map(|e| ViewEntry {
            display_name: None,
            country: None,
            metadata: None,
            rank: e.rank,
            player_id: PlayerId::new(e.player).unwrap(),
            value: e.value,
            achieved_at: e.achieved_at,
            global_rank: None,
        })
        .collect();
    let at = |player: &PlayerId| all.iter().position(|e| e.player_id == *player);
    match view {
        View::Top { limit } => all.iter().take(usize::from(*limit)).cloned().collect(),
        View::Around { player, radius } => match at(player) {
            None => Vec::new(),
            Some(i) => {
                let r = usize::from(*radius);
                all[i.saturating_sub(r)..=(i + r).min(all.len() - 1)].to_vec()
            }
        },
        View::Player { player } => at(player).map(|i| vec![all[i].clone()]).unwrap_or_default(),
        View::In { .. } => unreachable!("segment views are tested in tests/segments.rs"),
    }
}

/// Applies the operations and returns, per view, its state at every version the board passed.
fn states_by_view(
    mode: standings_core::ScoreMode,
    ops: &[Op],
    views: &[View],
) -> (Board, Vec<Vec<ViewState>>) {
    let mut board = Board::new(BoardRules::new(mode));
    let mut valid: Vec<ScoreEvent> = Vec::new();
    let mut states: Vec<Vec<ViewState>> = views
        .iter()
        .map(|v| vec![ViewState::read(&board, v, "all_time")])
        .collect();
    for (n, op) in ops.iter().enumerate() {
        let version = board.version();
        match *op {
            Op::Apply { player, value, at } => {
                let e = ScoreEvent::new(&format!("e{n:04}"), &format!("p{player:02}"), value, at).unwrap();
                valid.push(e.clone());
                board.apply(&e).unwrap();
            }
            Op::Invalidate { pick } => {
                if valid.is_empty() {
                    continue;
                }
                let gone = valid.remove(pick % valid.len());
                board.recompute_player(&gone.player, &valid).unwrap();
            }
        }
        if board.version() == version {
            continue;
        }
        for (view, held) in views.iter().zip(&mut states) {
            let state = ViewState::read(&board, view, "all_time");
            assert_eq!(state.board_version, board.version());
            assert_eq!(
                state.entries,
                model_view(&board, view),
                "{view} at {}",
                board.version()
            );
            held.push(state);
        }
    }
    (board, states)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// For every pair of versions of every view, the delta between them brings the older state
    /// exactly to the newer one, is refused (changing nothing) by any state at another version,
    /// and is absent exactly when the entries are the same.
    #[test]
    fn deltas_bring_any_state_to_any_later_one(
        mode in mode_strategy(),
        ops in prop::collection::vec(op_strategy(), 1..50),
        views in prop::collection::vec(view_strategy(), 1..4),
    ) {
        for (view, states) in views.iter().zip(states_by_view(mode, &ops, &views).1) {
            for (i, base) in states.iter().enumerate() {
                prop_assert_eq!(ViewDelta::between(base, base), None);
                for next in &states[i + 1..] {
                    let Some(delta) = ViewDelta::between(base, next) else {
                        prop_assert_eq!(&base.entries, &next.entries, "{}", view);
                        continue;
                    };
                    prop_assert_eq!(delta.base_version, base.board_version);
                    prop_assert_eq!(delta.board_version, next.board_version);
                    // Small: only entries that differ are sent.
                    prop_assert!(delta.changed.iter().all(|e| !base.entries.contains(e)));
                    let mut client = base.clone();
                    prop_assert_eq!(client.apply(&delta), Ok(()));
                    prop_assert_eq!(&client, next);
                    for other in [i.checked_sub(1), Some(i + 1)].into_iter().flatten() {
                        let Some(held) = states.get(other) else { continue };
                        let mut stale = held.clone();
                        let refused = stale.apply(&delta);
                        prop_assert!(
                            matches!(refused, Err(ViewDeltaError::VersionGap { .. })),
                            "{:?}",
                            refused
                        );
                        prop_assert_eq!(&stale, held);
                    }
                }
            }
        }
    }

    /// A driver that keeps the last state it sent and sends only net changes keeps a client's
    /// entries equal to a fresh read at every version, and every delta it sends chains.
    #[test]
    fn a_driver_sending_net_changes_keeps_clients_exact(
        mode in mode_strategy(),
        ops in prop::collection::vec(op_strategy(), 1..80),
        views in prop::collection::vec(view_strategy(), 1..4),
        window in 1usize..5,
    ) {
        for states in states_by_view(mode, &ops, &views).1 {
            let mut last_sent = states[0].clone();
            let mut client = states[0].clone();
            // Coalesce `window` versions at a time, as the origin's window does.
            for fresh in states.iter().skip(1).step_by(window).chain(states.last()) {
                if let Some(delta) = ViewDelta::between(&last_sent, fresh) {
                    prop_assert_eq!(client.apply(&delta), Ok(()));
                    last_sent = fresh.clone();
                }
                prop_assert_eq!(&client, &last_sent);
                prop_assert_eq!(&client.entries, &fresh.entries);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// A view read at any older version the board still holds equals the state read back then,
    /// so a subscriber coming back with `since_version` is caught up by one delta; a version
    /// the board no longer holds is refused.
    #[test]
    fn views_read_at_held_versions_equal_what_was_read_then(
        mode in mode_strategy(),
        ops in prop::collection::vec(op_strategy(), 1..60),
        views in prop::collection::vec(view_strategy(), 1..4),
        keep in 0usize..70,
    ) {
        let (mut board, states) = states_by_view(mode, &ops, &views);
        board.set_history_limit(keep);
        for (view, states) in views.iter().zip(&states) {
            for state in states {
                let read = ViewState::read_at(&board, view, "all_time", state.board_version);
                if state.board_version >= board.oldest_held_version() {
                    prop_assert_eq!(read.as_ref(), Ok(state), "{} at {}", view, state.board_version);
                } else {
                    prop_assert!(matches!(read, Err(QueryError::StaleCursor { .. })), "{:?}", read);
                }
            }
        }
    }
}

/// The wire shape: entries in the read API's field names, a delta as a plain object the origin
/// wraps with its `type`, and both read back to the same value.
#[test]
fn states_and_deltas_round_trip_through_json() {
    let mut board = Board::new(BoardRules::new(standings_core::ScoreMode::Highest));
    board
        .apply(&ScoreEvent::new("e1", "ana", 10, 1_000).unwrap())
        .unwrap();
    let view: View = "top:2".parse().unwrap();
    let base = ViewState::read(&board, &view, "all_time");
    board
        .apply(&ScoreEvent::new("e2", "bo", 20, 2_000).unwrap())
        .unwrap();
    let next = ViewState::read(&board, &view, "all_time");
    let delta = ViewDelta::between(&base, &next).unwrap();
    let json = serde_json::to_string(&delta).unwrap();
    assert_eq!(
        json,
        r#"{"period_key":"all_time","base_version":1,"board_version":2,"changed":[{"rank":1,"player_id":"bo","value":20,"achieved_at":2000},{"rank":2,"player_id":"ana","value":10,"achieved_at":1000}],"left":[]}"#
    );
    assert_eq!(serde_json::from_str::<ViewDelta>(&json).unwrap(), delta);
    let state_json = serde_json::to_string(&next).unwrap();
    assert_eq!(serde_json::from_str::<ViewState>(&state_json).unwrap(), next);
    assert_eq!(serde_json::to_string(&view).unwrap(), r#""top:2""#);
    assert_eq!(
        serde_json::from_str::<View>(r#""around:a:b:3""#)
            .unwrap()
            .to_string(),
        "around:a:b:3"
    );
    let refused = serde_json::from_str::<View>(r#""top:101""#)
        .unwrap_err()
        .to_string();
    assert!(refused.contains("from 1 to 100"), "{refused}");
    // A player id is checked on the way in, as everywhere else.
    let bad = json.replace("\"bo\"", "\"\"");
    assert!(serde_json::from_str::<ViewDelta>(&bad).is_err());
}
