//! A board split into score-range shards answers exactly as the whole board fed the same
//! events: every read kind at every version compared, over all four score modes, with
//! invalidations (recomputes), late events, players crossing boundaries, boundaries moved
//! and the board split again during the run, and events applied one at a time and in groups
//! whose shards change on threads of their own. `STANDINGS_SPLIT_READS` raises the reads per kind
//! (the closing note's run used 1,000,000 in release).

mod common;

use common::Mix;
use standings_core::{Board, BoardRules, Cursor, PlayerId, ScoreEvent, ScoreMode, Snapshot, Threads};

/// The shard holding `rank` in a layout of first ranks.
fn shard_of(board: &Board, rank: u64) -> usize {
    let shards = board.index().shards();
    shards.iter().rposition(|s| s.first_rank <= rank).unwrap_or(0)
}

#[derive(Default, Debug)]
struct Reads {
    top: u64,
    rank: u64,
    nearby: u64,
    friends: u64,
    interval: u64,
}

/// Every read kind of `split` equals `whole`'s at their (equal) version.
fn compare(whole: &Board, split: &Board, mix: &mut Mix, players: u64, reads: &mut Reads, per_round: u64) {
    assert_eq!(whole.version(), split.version());
    assert_eq!(whole.total_players(), split.total_players());
    let name = |p: u64| format!("player-{p}");
    for _ in 0..per_round {
        let player = name(mix.below(players + 5));
        assert_eq!(whole.player_rank(&player), split.player_rank(&player), "{player}");
        assert_eq!(
            whole.rank_interval(&player),
            split.rank_interval(&player),
            "{player}"
        );
        let radius = mix.below(40);
        assert_eq!(
            whole.nearby(&player, radius),
            split.nearby(&player, radius),
            "{player}"
        );
        let friends: Vec<String> = (0..1 + mix.below(30))
            .map(|_| name(mix.below(players + 5)))
            .collect();
        let refs: Vec<&str> = friends.iter().map(String::as_str).collect();
        assert_eq!(whole.rank_among(&refs), split.rank_among(&refs));
        reads.rank += 1;
        reads.interval += 1;
        reads.nearby += 1;
        reads.friends += 1;
    }
    // Top pages from the first and from cursors at random places, walked over boundaries.
    let mut cursor: Option<Cursor> = None;
    for _ in 0..(per_round / 8).max(4) {
        let limit = 1 + mix.below(300) as usize;
        let (w, s) = (
            whole.top(limit, cursor.as_ref()).unwrap(),
            split.top(limit, cursor.as_ref()).unwrap(),
        );
        assert_eq!(w, s);
        reads.top += 1;
        cursor = w.next_cursor;
    }
}

fn run(mode: ScoreMode, shards: usize, seed: u64, rounds: u64, per_round: u64, reads: &mut Reads) {
    let mut mix = Mix(seed);
    let rules = BoardRules::new(mode);
    let (mut whole, mut split) = (Board::new(rules), Board::new(rules));
    split.split(shards);
    let players = 3_000;
    // Each player's events, for invalidations.
    let mut events: Vec<Vec<ScoreEvent>> = vec![Vec::new(); players as usize];
    let (mut updates, mut crossings) = (0u64, 0u64);
    let mut next_id = 0u64;
    for round in 0..rounds {
        // Half the rounds one event at a time, half in groups of random sizes, each group's
        // shards changed on threads of their own as the origin's applying thread does.
        let mut pending: Vec<(usize, ScoreEvent)> = Vec::new();
        let group_size = if round % 2 == 0 {
            1
        } else {
            1 + mix.below(200) as usize
        };
        for i in 0..500 {
            let p = mix.below(players);
            let player = format!("player-{p}");
            let value = mix.below(100_000) as i64 - 50_000;
            // Late events: achieved long before others that came first.
            let at =
                1_800_000_000_000 + mix.below(1_000) as i64 * if mix.below(10) == 0 { -1_000 } else { 1 };
            let event = ScoreEvent::new(&format!("e{next_id}"), &player, value, at).unwrap();
            next_id += 1;
            pending.push((p as usize, event));
            if pending.len() < group_size && i < 499 {
                continue;
            }
            let group = std::mem::take(&mut pending);
            let before: Vec<Option<usize>> = group
                .iter()
                .map(|(_, e)| {
                    split
                        .index()
                        .rank_of_player(e.player.as_str())
                        .map(|r| shard_of(&split, r))
                })
                .collect();
            let w: Vec<_> = group.iter().map(|(_, e)| whole.apply(e).unwrap()).collect();
            let s: Vec<_> = if group_size == 1 {
                group.iter().map(|(_, e)| split.apply(e).unwrap()).collect()
            } else {
                split
                    .apply_group(group.iter().map(|(_, e)| (e, None)), &Threads(2))
                    .into_iter()
                    .map(Result::unwrap)
                    .collect()
            };
            assert_eq!(w, s);
            for ((p, event), before) in group.into_iter().zip(before) {
                if let (Some(before), Some(rank)) =
                    (before, split.index().rank_of_player(event.player.as_str()))
                {
                    updates += 1;
                    crossings += u64::from(before != shard_of(&split, rank));
                }
                events[p].push(event);
            }
        }
        // An invalidation: one player's latest event dropped and the aggregate recomputed; a
        // disqualification: every event of another.
        let p = mix.below(players) as usize;
        events[p].pop();
        let id = PlayerId::new(&format!("player-{p}")).unwrap();
        assert_eq!(
            whole.recompute_player(&id, events[p].iter()).unwrap(),
            split.recompute_player(&id, events[p].iter()).unwrap()
        );
        let q = mix.below(players) as usize;
        let id = PlayerId::new(&format!("player-{q}")).unwrap();
        assert_eq!(
            whole.recompute_player(&id, []).unwrap(),
            split.recompute_player(&id, []).unwrap()
        );
        events[q].clear();
        // Boundaries moved by hand, and the board split again, mid-run.
        if round % 3 == 1 {
            assert!(split.recut(round as usize % (shards - 1)));
        }
        if round == rounds / 2 {
            split.split(shards + 1);
        }
        compare(&whole, &split, &mut mix, players, reads, per_round);
        assert_eq!(whole.digest(), split.digest());
    }
    let (a, b) = (Snapshot::build(&whole), Snapshot::build(&split));
    assert_eq!(a.manifest_bytes, b.manifest_bytes, "the same snapshot");
    let (mut a, mut b) = (Vec::new(), Vec::new());
    whole.write_checkpoint(&mut a);
    split.write_checkpoint(&mut b);
    assert_eq!(a, b, "the same checkpoint");
    assert!(
        crossings * 10 >= updates,
        "{mode:?}/{shards}: {crossings} of {updates} updates crossed a boundary"
    );
    let layout: Vec<u64> = split.index().shards().iter().map(|s| s.entries).collect();
    assert!(layout.iter().filter(|&&n| n > 0).count() > 1, "{layout:?}");
    println!(
        "{mode:?} in {shards} shards: {crossings} of {updates} updates crossed a boundary; entries by shard {layout:?}"
    );
}

#[test]
fn a_split_board_answers_as_the_whole_board() {
    let per_kind: u64 = std::env::var("STANDINGS_SPLIT_READS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(40_000);
    let runs = [
        (ScoreMode::Highest, 2),
        (ScoreMode::Fastest, 3),
        (ScoreMode::Cumulative, 4),
        (ScoreMode::Latest, 7),
    ];
    let rounds = 12;
    let per_round = per_kind.div_ceil(rounds * runs.len() as u64);
    let mut reads = Reads::default();
    for (seed, (mode, shards)) in runs.into_iter().enumerate() {
        run(mode, shards, seed as u64, rounds, per_round, &mut reads);
    }
    println!("reads compared: {reads:?}");
    assert!(reads.rank >= per_kind && reads.nearby >= per_kind && reads.friends >= per_kind);
}
