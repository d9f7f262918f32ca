//! Strategies shared by the core's property tests.

use proptest::prelude::*;
use standings_core::ScoreMode;

/// Any of the four score modes.
pub(crate) fn mode_strategy() -> impl Strategy<Value = ScoreMode> {
    prop_oneof![
        Just(ScoreMode::Highest),
        Just(ScoreMode::Cumulative),
        Just(ScoreMode::Fastest),
        Just(ScoreMode::Latest),
    ]
}

/// One step of a random history: an event, or the invalidation of an earlier one (`pick` is
/// taken modulo the events so far).
#[derive(Clone, Debug)]
// Not every test binary that includes this module replays histories.
#[allow(dead_code)]
pub(crate) enum Op {
    Apply { player: u8, value: i64, at: i64 },
    Invalidate { pick: usize },
}

/// Steps over `players` players, values in `values` and times in `times`, four events to one
/// invalidation. Narrow ranges make ties, moves, leaves and returns common.
#[allow(dead_code)]
pub(crate) fn op_strategy(
    players: u8,
    values: std::ops::Range<i64>,
    times: std::ops::Range<i64>,
) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..players, values, times).prop_map(|(player, value, at)| Op::Apply { player, value, at }),
        1 => any::<usize>().prop_map(|pick| Op::Invalidate { pick }),
    ]
}
