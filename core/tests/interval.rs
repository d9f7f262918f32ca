//! A rank interval always holds the exact rank: a million checks over boards of every score
//! mode, with heavy ties and ids that share their first bytes, each player's interval read from
//! the decoded sketch of a snapshot, as the edge reads it. The widths are printed, not asserted
//! beyond the documented bound (benchmarks report them).

mod common;

use common::Mix;
use standings_core::interval::{self, RankSketch};
use standings_core::{Board, BoardRules, ScoreEvent, ScoreMode, Snapshot};

#[test]
fn a_million_intervals_hold_their_exact_ranks() {
    let cases = [
        // (mode, players, distinct values, distinct times, ids sharing 8 bytes)
        (ScoreMode::Highest, 300_000, 1_000_000, 1_000, false),
        (ScoreMode::Fastest, 250_000, 50, 3, false),
        (ScoreMode::Cumulative, 200_000, 20, 1, true),
        (ScoreMode::Latest, 150_000, 5_000, 10, false),
        (ScoreMode::Highest, 100_000, 3, 1, true),
    ];
    let mut checks = 0u64;
    for (seed, (mode, players, values, times, shared)) in cases.into_iter().enumerate() {
        let mut mix = Mix(seed as u64);
        let mut board = Board::new(BoardRules::new(mode));
        for p in 0..players {
            let player = if shared {
                format!("shared-prefix-{p}")
            } else {
                format!("p{p}")
            };
            let value = (mix.next() % values) as i64 - (values / 2) as i64;
            let at = 1_800_000_000_000 + (mix.next() % times) as i64 * 1_000;
            board
                .apply(&ScoreEvent::new(&format!("e{p}"), &player, value, at).unwrap())
                .unwrap();
        }
        let snapshot = Snapshot::build(&board);
        let manifest = &snapshot.manifest;
        let sketch = RankSketch::decode(&snapshot.sketch, &manifest.sketch).unwrap();
        let total = board.total_players();
        let step = interval::step(total);
        let (mut widest, mut widths, mut exact) = (0, 0u64, 0u64);
        for entry in board.ranked_range(1, total as usize) {
            let found = sketch.interval(&manifest.rules, &entry.standing(), entry.player);
            assert!(
                found.contains(entry.rank),
                "{mode:?}: {} at {} not in {found:?}",
                entry.player,
                entry.rank
            );
            assert!(found.width() <= step, "{mode:?}: {found:?} wider than {step}");
            widest = widest.max(found.width());
            widths += found.width();
            exact += u64::from(found.width() == 1);
            checks += 1;
        }
        assert!(
            snapshot.sketch.len() <= 256 * 1024,
            "{mode:?}: {} bytes",
            snapshot.sketch.len()
        );
        println!(
            "{mode:?} {total} players: sketch {} bytes, {} bounds, step {step}, widest {widest}, mean width {:.1}, exact {exact}",
            snapshot.sketch.len(),
            sketch.len(),
            widths as f64 / total as f64,
        );
    }
    assert_eq!(checks, 1_000_000);
}
