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
