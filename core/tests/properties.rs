//! Model-based and property tests of boards, snapshots and decoding.

mod common;

use std::collections::BTreeMap;

use proptest::prelude::*;
use standings_core::{
    Applied, Board, BoardId, BoardRules, ChunkingOptions, Cursor, CursorBinding, LookupChunk, Manifest,
    PlayerId, RankChunk, ScoreEvent, ScoreMode, Snapshot, Standing,
};

use common::{Op, mode_strategy};

/// The aggregate of a player's valid events, written out plainly per mode, independent of the
/// core's fold.
fn model_aggregate(mode: ScoreMode, events: &[&ScoreEvent]) -> Option<Standing> {
    if events.is_empty() {
        return None;
    }
    let s = |e: &ScoreEvent| Standing {
        value: e.value,
        achieved_at: e.achieved_at,
    };
    Some(match mode {
        ScoreMode::Highest => {
            let best = events.iter().map(|e| e.value).max()?;
            let at = events
                .iter()
                .filter(|e| e.value == best)
                .map(|e| e.achieved_at)
                .min()?;
            Standing {
                value: best,
                achieved_at: at,
            }
        }
        ScoreMode::Fastest => {
            let best = events.iter().map(|e| e.value).min()?;
            let at = events
                .iter()
                .filter(|e| e.value == best)
                .map(|e| e.achieved_at)
                .min()?;
            Standing {
                value: best,
                achieved_at: at,
            }
        }
        ScoreMode::Cumulative => Standing {
            value: events.iter().map(|e| e.value).sum(),
            achieved_at: events.iter().map(|e| e.achieved_at).max()?,
        },
        _ => s(events
            .iter()
            .max_by(|a, b| {
                a.achieved_at
                    .cmp(&b.achieved_at)
                    .then(a.event_id.as_str().as_bytes().cmp(b.event_id.as_str().as_bytes()))
            })
            .copied()?),
    })
}

/// The ranked order, written out plainly: value (descending, or ascending for fastest), then
/// the earlier time, then the player id bytes.
fn model_order(mode: ScoreMode, aggregates: &BTreeMap<String, Standing>) -> Vec<(String, Standing)> {
    let mut entries: Vec<_> = aggregates.iter().map(|(p, s)| (p.clone(), *s)).collect();
    entries.sort_by(|a, b| {
        let by_value = if mode == ScoreMode::Fastest {
            a.1.value.cmp(&b.1.value)
        } else {
            b.1.value.cmp(&a.1.value)
        };
        by_value
            .then(a.1.achieved_at.cmp(&b.1.achieved_at))
            .then(a.0.as_bytes().cmp(b.0.as_bytes()))
    });
    entries
}

fn op_strategy() -> impl Strategy<Value = Op> {
    common::op_strategy(24, -20..20, 0..6)
}

fn check_board(board: &Board, mode: ScoreMode, aggregates: &BTreeMap<String, Standing>) {
    let expected = model_order(mode, aggregates);
    let page = board.top(1_000, None).unwrap();
    let got: Vec<_> = page
        .entries
        .iter()
        .map(|e| {
            (
                e.player.to_string(),
                Standing {
                    value: e.value,
                    achieved_at: e.achieved_at,
                },
            )
        })
        .collect();
    assert_eq!(got, expected);
    for (i, (player, _)) in expected.iter().enumerate() {
        let rank = board.player_rank(player).unwrap();
        assert_eq!(rank.entry.rank, i as u64 + 1);
        let window = board.nearby(player, 2).unwrap();
        let lo = i.saturating_sub(2);
        let hi = (i + 2).min(expected.len() - 1);
        let names: Vec<_> = window.iter().map(|e| e.player.to_string()).collect();
        let want: Vec<_> = expected[lo..=hi].iter().map(|(p, _)| p.clone()).collect();
        assert_eq!(names, want);
    }
    // Friends: every third player plus one who never scored.
    let asked: Vec<String> = expected.iter().step_by(3).map(|(p, _)| p.clone()).collect();
    let mut asked_refs: Vec<&str> = asked.iter().map(String::as_str).rev().collect();
    asked_refs.push("p-never");
    let friends = board.rank_among(&asked_refs);
    let got: Vec<_> = friends.entries.iter().map(|e| e.player.to_string()).collect();
    assert_eq!(got, asked);
    assert_eq!(friends.unranked, ["p-never"]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Random applies and invalidations agree with a plain model on every query, and the
    /// version moves by exactly one per change.
    #[test]
    fn board_matches_model(mode in mode_strategy(), ops in prop::collection::vec(op_strategy(), 1..200)) {
        let mut board = Board::new(BoardRules::new(mode));
        let mut valid: Vec<ScoreEvent> = Vec::new();
        let mut next_id = 0u32;
        for op in ops {
            let version = board.version();
            let applied = match op {
                Op::Apply { player, value, at } => {
                    next_id += 1;
                    let e = ScoreEvent::new(&format!("e{next_id:04}"), &format!("p{player:02}"), value, at).unwrap();
                    valid.push(e.clone());
                    board.apply(&e).unwrap()
                }
                Op::Invalidate { pick } => {
                    if valid.is_empty() { continue; }
                    let gone = valid.remove(pick % valid.len());
                    board.recompute_player(&gone.player, &valid).unwrap()
                }
            };
            match applied {
                Applied::Unchanged => prop_assert_eq!(board.version(), version),
                Applied::Changed(d) => {
                    prop_assert_eq!(board.version(), version + 1);
                    prop_assert_eq!(d.board_version, version + 1);
                    prop_assert_ne!(d.before, d.after);
                }
            }
        }
        let mut by_player: BTreeMap<String, Vec<&ScoreEvent>> = BTreeMap::new();
        for e in &valid {
            by_player.entry(e.player.as_str().to_string()).or_default().push(e);
        }
        let aggregates: BTreeMap<String, Standing> = by_player
            .iter()
            .filter_map(|(p, events)| Some((p.clone(), model_aggregate(mode, events)?)))
            .collect();
        check_board(&board, mode, &aggregates);
    }

    /// Any permutation of the same events gives the same digest and the same entries.
    #[test]
    fn permutations_give_the_same_digest(
        mode in mode_strategy(),
        events in prop::collection::vec((0u8..16, -50i64..50, 0i64..4), 1..120),
        seed in any::<u64>(),
    ) {
        let events: Vec<ScoreEvent> = events
            .iter()
            .enumerate()
            .map(|(i, (p, v, at))| ScoreEvent::new(&format!("e{i}"), &format!("p{p}"), *v, *at).unwrap())
            .collect();
        let mut shuffled = events.clone();
        let mut state = seed | 1;
        for i in (1..shuffled.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            shuffled.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let mut a = Board::new(BoardRules::new(mode));
        let mut b = Board::new(BoardRules::new(mode));
        for e in &events { a.apply(e).unwrap(); }
        for e in &shuffled { b.apply(e).unwrap(); }
        prop_assert_eq!(a.digest(), b.digest());
        prop_assert_eq!(a.top(1000, None).unwrap().entries, b.top(1000, None).unwrap().entries);
    }

    /// A snapshot decodes back to the same board, and every player is found through its lookup
    /// chunk with the right rank.
    #[test]
    fn snapshot_round_trips(
        mode in mode_strategy(),
        events in prop::collection::vec((0u16..2000, -1000i64..1000, 0i64..10), 0..600),
    ) {
        let mut board = Board::new(BoardRules::new(mode));
        for (i, (p, v, at)) in events.iter().enumerate() {
            board.apply(&ScoreEvent::new(&format!("e{i}"), &format!("player-{p}"), *v, *at).unwrap()).unwrap();
        }
        let options = ChunkingOptions { min_entries: 8, boundary_modulus: 16, max_entries: 64, lookup_target: 32 };
        let snapshot = Snapshot::build_with(&board, options);
        let manifest = Manifest::decode(&snapshot.manifest_bytes).unwrap();
        prop_assert_eq!(&manifest, &snapshot.manifest);
        let chunks: Vec<RankChunk> = snapshot.rank_chunks.iter().zip(&manifest.rank_chunks)
            .map(|(bytes, r)| RankChunk::decode(bytes, &r.hash).unwrap())
            .collect();
        let restored = Snapshot::restore(&manifest, &chunks).unwrap();
        prop_assert_eq!(restored.digest(), board.digest());
        prop_assert_eq!(restored.version(), board.version());
        prop_assert_eq!(restored.top(10_000, None).unwrap().entries, board.top(10_000, None).unwrap().entries);
        for entry in board.top(10_000, None).unwrap().entries {
            let partition = manifest.partition_of(entry.player);
            let lookup = LookupChunk::decode(&snapshot.lookup_chunks[partition], &manifest.lookup_chunks[partition].hash).unwrap();
            let found = lookup.find(entry.player).unwrap();
            let standing = Standing { value: found.value, achieved_at: found.achieved_at };
            let chunk = manifest.rank_chunk_of(&standing, &found.player).unwrap();
            let position = chunks[chunk].entries.iter().position(|e| e.player == entry.player).unwrap();
            prop_assert_eq!(manifest.first_rank_of_chunk(chunk) + position as u64, entry.rank);
        }
    }

    /// Decoding arbitrary bytes never panics: it returns an error (or, rarely, a valid value).
    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = Manifest::decode(&bytes);
        let hash = standings_core::BoardDigest::of(&bytes);
        let _ = RankChunk::decode(&bytes, &hash);
        let _ = LookupChunk::decode(&bytes, &hash);
        let binding = CursorBinding::of(&BoardId::new("g", "m", "s", "global").unwrap(), "all_time");
        let _ = Cursor::decode(&bytes, binding);
        // Behind the current tag and the right binding, the bytes reach the postcard body.
        let made = Cursor { board_version: 0, value: 0, achieved_at: 0, player: String::new() };
        let mut bound = made.encode(binding)[..9].to_vec();
        bound.extend_from_slice(&bytes);
        let _ = Cursor::decode(&bound, binding);
        // The same bytes behind a valid header reach the postcard bodies.
        for tag in [b'M', b'R', b'L'] {
            let mut framed = standings_core::SNAPSHOT_FORMAT_VERSION.to_le_bytes().to_vec();
            framed.push(tag);
            framed.extend_from_slice(&bytes);
            let hash = standings_core::BoardDigest::of(&framed);
            let _ = Manifest::decode(&framed);
            let _ = RankChunk::decode(&framed, &hash);
            let _ = LookupChunk::decode(&framed, &hash);
        }
    }

    /// Corrupting any byte of a valid snapshot is caught: decoding, hash checks or restore
    /// refuse it, and nothing panics.
    #[test]
    fn corrupted_snapshots_are_refused(flip in any::<prop::sample::Index>(), bit in 0u8..8) {
        let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
        for i in 0..40 {
            board.apply(&ScoreEvent::new(&format!("e{i}"), &format!("p{i}"), i * 7 % 13, i).unwrap()).unwrap();
        }
        let snapshot = Snapshot::build_with(&board, ChunkingOptions { min_entries: 4, boundary_modulus: 8, max_entries: 16, lookup_target: 8 });
        let mut manifest_bytes = snapshot.manifest_bytes.clone();
        let i = flip.index(manifest_bytes.len());
        manifest_bytes[i] ^= 1 << bit;
        if let Ok(manifest) = Manifest::decode(&manifest_bytes) {
            // A manifest that still decodes must fail later: its chunks or digest no longer match.
            let chunks: Result<Vec<RankChunk>, _> = snapshot.rank_chunks.iter().zip(&manifest.rank_chunks)
                .map(|(bytes, r)| RankChunk::decode(bytes, &r.hash))
                .collect();
            let restored = chunks.and_then(|c| Snapshot::restore(&manifest, &c));
            if let Ok(restored) = restored {
                // Only fields outside the entries can have changed (e.g. the version or rules'
                // range); the ranked content is intact.
                prop_assert_eq!(restored.digest(), board.digest());
            }
        }
        let mut chunk = snapshot.rank_chunks[0].clone();
        let i = flip.index(chunk.len());
        chunk[i] ^= 1 << bit;
        prop_assert!(RankChunk::decode(&chunk, &snapshot.manifest.rank_chunks[0].hash).is_err());
    }
}

/// One player's move rewrites O(1) rank chunks (the one left and the one joined), not every
/// chunk between the two positions, and one lookup chunk.
#[test]
fn a_move_rewrites_few_chunks() {
    let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
    for i in 0..20_000i64 {
        let e = ScoreEvent::new(&format!("e{i}"), &format!("player-{i}"), (i * 7_919) % 100_000, i).unwrap();
        board.apply(&e).unwrap();
    }
    let options = ChunkingOptions {
        min_entries: 64,
        boundary_modulus: 128,
        max_entries: 1024,
        lookup_target: 512,
    };
    let before = Snapshot::build_with(&board, options);
    assert!(before.manifest.rank_chunks.len() > 50, "enough chunks to matter");
    // The last-placed player jumps to first place, crossing every chunk.
    let last = board.top(1, None).unwrap().total_players;
    let bottom = board.index().entry_at(last).unwrap().player.to_string();
    board
        .apply(&ScoreEvent::new("jump", &bottom, 1_000_000, 0).unwrap())
        .unwrap();
    let after = Snapshot::build_with(&board, options);
    let old: std::collections::HashSet<_> = before.manifest.rank_chunks.iter().map(|c| c.hash).collect();
    let new_rank_chunks = after
        .manifest
        .rank_chunks
        .iter()
        .filter(|c| !old.contains(&c.hash))
        .count();
    assert!(new_rank_chunks <= 4, "{new_rank_chunks} rank chunks rewritten");
    let old_lookup: std::collections::HashSet<_> =
        before.manifest.lookup_chunks.iter().map(|c| c.hash).collect();
    let new_lookup = after
        .manifest
        .lookup_chunks
        .iter()
        .filter(|c| !old_lookup.contains(&c.hash))
        .count();
    assert_eq!(new_lookup, 1);
    assert_ne!(before.manifest.digest, after.manifest.digest);
}

/// Removing a player by recomputation with no events is visible in snapshots and deltas alike.
#[test]
fn disqualifying_by_recompute_leaves_the_player_unranked() {
    let mut board = Board::new(BoardRules::new(ScoreMode::Cumulative));
    board
        .apply(&ScoreEvent::new("a", "p-ava", 10, 1).unwrap())
        .unwrap();
    board
        .apply(&ScoreEvent::new("b", "p-ben", 5, 1).unwrap())
        .unwrap();
    let applied = board
        .recompute_player(&PlayerId::new("p-ava").unwrap(), [])
        .unwrap();
    assert!(matches!(applied, Applied::Changed(ref d) if d.after.is_none()));
    let snapshot = Snapshot::build(&board);
    assert_eq!(snapshot.manifest.total_players, 1);
}
