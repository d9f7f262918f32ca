//! Rebuilding from the event log gives exactly the live board.

mod common;

use proptest::prelude::*;
use standings_core::{Board, BoardRules, Replay, ScoreEvent};

use common::mode_strategy;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// A replay of the log in order equals applying it live: same entries, digest and version,
    /// and it reports a change exactly when the live board bumped its version.
    #[test]
    fn replay_equals_live(
        mode in mode_strategy(),
        events in prop::collection::vec((0u8..20, -30i64..30, 0i64..5, 0u8..4), 0..300),
    ) {
        let rules = BoardRules::new(mode);
        let mut live = Board::new(rules);
        let mut replay = Replay::new(rules);
        for (i, (player, value, at, id_salt)) in events.iter().enumerate() {
            // Event ids are not in arrival order, so `latest` ties exercise the id rule.
            let e = ScoreEvent::new(&format!("e{id_salt}-{i}"), &format!("p{player}"), *value, *at).unwrap();
            let before = live.version();
            live.apply(&e).unwrap();
            let changed = replay.push(&e).unwrap();
            prop_assert_eq!(changed, live.version() != before);
        }
        prop_assert_eq!(replay.version(), live.version());
        let rebuilt = replay.finish();
        prop_assert_eq!(rebuilt.version(), live.version());
        prop_assert_eq!(rebuilt.digest(), live.digest());
        prop_assert_eq!(rebuilt.top(1000, None).unwrap().entries, live.top(1000, None).unwrap().entries);
    }
}
