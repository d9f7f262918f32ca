//! Band crossings and overtakes against a model: the board before and after each change, read
//! whole, every band's members compared and every follower's place before and after the mover.

use proptest::prelude::*;
use standings_core::{Applied, Band, Board, BoardRules, PlayerId, ScoreEvent};

mod common;
use common::{mode_strategy, player};

const PLAYERS: u16 = 30;

#[derive(Clone, Debug)]
enum Op {
    Apply { player: u16, value: i64, at: i64 },
    Remove { player: u16 },
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0..PLAYERS, -20i64..20, 0i64..5).prop_map(|(player, value, at)| Op::Apply { player, value, at }),
        1 => (0..PLAYERS).prop_map(|player| Op::Remove { player }),
    ]
}

fn bands() -> Vec<Band> {
    vec![
        Band::Top(1),
        Band::Top(3),
        Band::Top(10),
        Band::Percent(1_000),
        Band::Percent(3_333),
    ]
}

/// Each ranked player's rank, by id.
fn ranks(board: &Board) -> std::collections::BTreeMap<String, u64> {
    board
        .ranked_range(1, board.total_players() as usize)
        .into_iter()
        .map(|e| (e.player.to_string(), e.rank))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn crossings_and_overtakes_match_the_model(
        mode in mode_strategy(),
        ops in proptest::collection::vec(op_strategy(), 1..120),
        watchers in proptest::collection::vec(0..PLAYERS, 0..12),
    ) {
        let mut board = Board::new(BoardRules::new(mode));
        let watching: Vec<String> = watchers.iter().map(|&p| player(p)).collect();
        let watching: Vec<&str> = watching.iter().map(String::as_str).collect();
        for (serial, op) in ops.iter().enumerate() {
            let before = ranks(&board);
            let total_before = board.total_players();
            let applied = match op {
                Op::Apply { player: p, value, at } => {
                    board.apply(&ScoreEvent::new(&format!("e{serial}"), &player(*p), *value, *at).unwrap()).unwrap()
                }
                Op::Remove { player: p } => board.recompute_player(&PlayerId::new(&player(*p)).unwrap(), []).unwrap(),
            };
            let Applied::Changed(delta) = applied else { continue };
            let after = ranks(&board);
            let total_after = board.total_players();
            // Band crossings: every player whose membership differs, nothing else.
            let mut expected = Vec::new();
            for (i, band) in bands().iter().enumerate() {
                let players: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
                for p in players {
                    let was = before.get(p).is_some_and(|&r| r <= band.last_rank(total_before));
                    let is = after.get(p).is_some_and(|&r| r <= band.last_rank(total_after));
                    if was != is {
                        expected.push((i, p.clone(), is, before.get(p).copied(), after.get(p).copied()));
                    }
                }
            }
            let mut got: Vec<_> = board
                .band_crossings(&delta, &bands())
                .into_iter()
                .map(|c| (c.band, c.player.to_string(), c.entered, c.rank_before, c.rank_after))
                .collect();
            got.sort();
            expected.sort();
            prop_assert_eq!(got, expected);
            // Overtakes: each watcher the mover was behind and is now ahead of.
            let mover = delta.player.as_str().to_string();
            let mut expected = Vec::new();
            let mut seen = std::collections::BTreeSet::new();
            for &w in &watching {
                if w == mover || !seen.insert(w) {
                    continue;
                }
                let (Some(&wb), Some(&wa)) = (before.get(w), after.get(w)) else { continue };
                let Some(&ma) = after.get(&mover) else { continue };
                let behind_then = before.get(&mover).is_none_or(|&mb| mb > wb);
                if behind_then && ma < wa {
                    expected.push((w.to_string(), wb, wa, before.get(&mover).copied(), ma));
                }
            }
            let mut dedup: Vec<&str> = watching.clone();
            dedup.sort();
            dedup.dedup();
            let got: Vec<_> = board
                .overtakes(&delta, &dedup)
                .into_iter()
                .map(|o| (o.player.to_string(), o.rank_before, o.rank_after, o.by_rank_before, o.by_rank_after))
                .collect();
            let mut expected_sorted = expected;
            expected_sorted.sort();
            let mut got_sorted = got;
            got_sorted.sort();
            prop_assert_eq!(got_sorted, expected_sorted);
        }
    }
}
