//! `RankSketch::decode` on untrusted bytes, given the hash of those very bytes: never a panic;
//! an accepted sketch reads back the same from its own encoding, and intervals of any entry
//! (its bounds' own standings and others) answer within the board without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use standings_core::interval::RankSketch;
use standings_core::{BoardDigest, BoardRules, ScoreMode, Standing};

fuzz_target!(|data: &[u8]| {
    if let Ok(sketch) = RankSketch::decode(data, &BoardDigest::of(data)) {
        let bytes = sketch.encode();
        let again = RankSketch::decode(&bytes, &BoardDigest::of(&bytes)).expect("an encoded sketch decodes");
        assert_eq!(again, sketch);
        if sketch.total_players == 0 {
            return;
        }
        for mode in [ScoreMode::Highest, ScoreMode::Fastest] {
            let rules = BoardRules::new(mode);
            for (value, at, player) in [(0, 0, "p"), (i64::MAX, i64::MIN, "zz"), (i64::MIN, i64::MAX, "")] {
                let found = sketch.interval(&rules, &Standing { value, achieved_at: at }, player);
                assert!(found.low >= 1 && found.low <= found.high && found.high <= sketch.total_players);
            }
        }
    }
});
