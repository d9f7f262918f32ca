//! Incremental publication: every publication is byte for byte the full build of the same
//! board, hands out only parts the previous manifest did not name, and falls back to a full
//! build exactly when it must.

mod common;

use std::collections::HashSet;

use proptest::prelude::*;
use standings_core::snapshot::{FullBuildReason, PublishPath};
use standings_core::{
    Board, BoardRules, ChunkHash, ChunkingOptions, DecodeError, Manifest, Publication, Publisher, RankChunk,
    ScoreEvent, ScoreMode, Snapshot,
};

use common::{Change as Step, apply, mode_strategy};

fn step_strategy(players: u16) -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0..players, -40i64..40, 0i64..6).prop_map(|(player, value, at)| Step::Apply { player, value, at }),
        1 => (0..players).prop_map(|player| Step::Remove { player }),
    ]
}

/// Small chunking options, so that a board of a few hundred players has many chunks of
/// each kind, including the degenerate ones (a mark on every entry, min = max).
fn options_strategy() -> impl Strategy<Value = ChunkingOptions> {
    (1u32..6, 1u32..9, 0u32..12, 1u32..24).prop_map(
        |(min_entries, boundary_modulus, extra, lookup_target)| ChunkingOptions {
            min_entries,
            boundary_modulus,
            max_entries: min_entries + extra,
            lookup_target,
        },
    )
}

/// Checks one publication against the full build and the parts handed out so far (`held`:
/// every part any publication handed out, with its bytes; `previous`: what the previous
/// manifest named).
fn check(
    publication: &Publication,
    board: &Board,
    options: ChunkingOptions,
    held: &mut std::collections::HashMap<ChunkHash, Vec<u8>>,
    previous: &HashSet<ChunkHash>,
) -> Result<(), TestCaseError> {
    let full = Snapshot::build_with(board, options);
    prop_assert_eq!(&publication.manifest_bytes, &full.manifest_bytes);
    prop_assert_eq!(&publication.manifest, &full.manifest);
    prop_assert_eq!(
        publication.manifest_hash,
        standings_core::BoardDigest::of(&full.manifest_bytes)
    );
    let mut this_time = HashSet::new();
    for (hash, bytes) in &publication.new_parts {
        prop_assert!(
            !previous.contains(hash),
            "a part the previous manifest named was handed out again"
        );
        prop_assert!(
            this_time.insert(*hash),
            "a part handed out twice in one publication"
        );
        prop_assert_eq!(*hash, standings_core::BoardDigest::of(bytes));
        held.insert(*hash, bytes.clone());
    }
    let named: Vec<ChunkHash> = full
        .manifest
        .rank_chunks
        .iter()
        .map(|c| c.hash)
        .chain(full.manifest.lookup_chunks.iter().map(|c| c.hash))
        .collect();
    let bytes = full.rank_chunks.iter().chain(&full.lookup_chunks);
    for (hash, bytes) in named.iter().zip(bytes) {
        prop_assert_eq!(held.get(hash), Some(bytes), "a named part was never handed out");
    }
    let reused = named.iter().filter(|h| previous.contains(h)).count();
    prop_assert_eq!(publication.reused_parts, reused);
    Ok(())
}

fn names(manifest: &Manifest) -> HashSet<ChunkHash> {
    manifest
        .rank_chunks
        .iter()
        .map(|c| c.hash)
        .chain(manifest.lookup_chunks.iter().map(|c| c.hash))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// After every publication of a board changing by random events, entries and removals, the
    /// manifest equals the full build's byte for byte, every part it names was handed out by
    /// this or an earlier publication, and no part is handed out that the previous manifest
    /// named; most publications are incremental.
    #[test]
    fn publications_equal_full_builds(
        mode in mode_strategy(),
        options in options_strategy(),
        players in 20u16..300,
        initial in prop::collection::vec(step_strategy(300), 0..400),
        batches in prop::collection::vec(prop::collection::vec(step_strategy(300), 0..12), 1..12),
        history in prop_oneof![3 => Just(4096usize), 1 => 0usize..6],
    ) {
        let mut board = Board::new(BoardRules::new(mode));
        board.set_history_limit(history);
        let mut serial = 0;
        for step in &initial {
            apply(&mut board, &step.within(players), &mut serial);
        }
        let mut publisher = Publisher::new(options);
        let mut held = std::collections::HashMap::new();
        let first = publisher.publish(&board);
        prop_assert_eq!(publisher.last_path(), Some(PublishPath::Full(FullBuildReason::FirstPublication)));
        check(&first, &board, options, &mut held, &HashSet::new())?;
        let mut previous = names(&first.manifest);
        for batch in &batches {
            for step in batch {
                apply(&mut board, step, &mut serial);
            }
            let publication = publisher.publish(&board);
            check(&publication, &board, options, &mut held, &previous)?;
            prop_assert_eq!(publisher.published_version(), Some(board.version()));
            prop_assert_eq!(publisher.manifest(), Some(&publication.manifest));
            previous = names(&publication.manifest);
        }
    }
}

/// A board that played through a few thousand publications with real moves: most are
/// incremental, and each stays equal to the full build (a longer run than the property test's).
#[test]
fn a_long_run_is_mostly_incremental() {
    let options = ChunkingOptions {
        min_entries: 8,
        boundary_modulus: 8,
        max_entries: 40,
        lookup_target: 20,
    };
    for mode in [
        ScoreMode::Highest,
        ScoreMode::Cumulative,
        ScoreMode::Fastest,
        ScoreMode::Latest,
    ] {
        let mut board = Board::new(BoardRules::new(mode));
        let mut serial = 0;
        for p in 0..500 {
            apply(
                &mut board,
                &Step::Apply {
                    player: p,
                    value: i64::from(p % 37),
                    at: 1,
                },
                &mut serial,
            );
        }
        let mut publisher = Publisher::new(options);
        let mut held = std::collections::HashMap::new();
        let mut previous = HashSet::new();
        let mut incremental = 0;
        let mut x: u64 = 7;
        for round in 0..300 {
            for _ in 0..3 {
                // A small LCG: deterministic, spread over the players, values and times.
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let p = ((x >> 33) % 520) as u16;
                let step = if (x >> 20).is_multiple_of(11) {
                    Step::Remove { player: p }
                } else {
                    Step::Apply {
                        player: p,
                        value: ((x >> 40) % 60) as i64 - 10,
                        at: 2 + (round % 5),
                    }
                };
                apply(&mut board, &step, &mut serial);
            }
            let publication = publisher.publish(&board);
            if round > 0 && publisher.last_path() == Some(PublishPath::Incremental) {
                incremental += 1;
            }
            check(&publication, &board, options, &mut held, &previous).unwrap();
            previous = names(&publication.manifest);
        }
        // The board stays between 321 and 640 players, so its 32 partitions never change and
        // every publication after the first is incremental.
        assert_eq!(incremental, 299, "{mode}");
    }
}

/// When the board no longer holds the deltas since the last publication, the next one is a
/// full build, still equal to the full build and handing out only what changed.
#[test]
fn a_lost_history_falls_back_to_a_full_build() {
    let options = ChunkingOptions {
        min_entries: 4,
        boundary_modulus: 4,
        max_entries: 16,
        lookup_target: 64,
    };
    let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
    let mut serial = 0;
    for p in 0..200 {
        apply(
            &mut board,
            &Step::Apply {
                player: p,
                value: i64::from(p),
                at: 1,
            },
            &mut serial,
        );
    }
    board.set_history_limit(4);
    let mut publisher = Publisher::new(options);
    let first = publisher.publish(&board);
    for p in 0..3 {
        apply(
            &mut board,
            &Step::Apply {
                player: p,
                value: 1000 + i64::from(p),
                at: 2,
            },
            &mut serial,
        );
    }
    publisher.publish(&board);
    assert_eq!(publisher.last_path(), Some(PublishPath::Incremental));
    for p in 10..20 {
        apply(
            &mut board,
            &Step::Apply {
                player: p,
                value: 2000 + i64::from(p),
                at: 3,
            },
            &mut serial,
        );
    }
    let publication = publisher.publish(&board);
    assert_eq!(
        publisher.last_path(),
        Some(PublishPath::Full(FullBuildReason::HistoryGone))
    );
    assert_eq!(
        publication.manifest_bytes,
        Snapshot::build_with(&board, options).manifest_bytes
    );
    // The full build still hands out only the parts the previous manifest did not name.
    let total = publication.manifest.rank_chunks.len() + publication.manifest.lookup_chunks.len();
    assert!(
        publication.new_parts.len() < total / 2,
        "{} of {total} parts handed out",
        publication.new_parts.len()
    );
    assert!(publication.reused_parts > 0);
    assert_ne!(first.manifest_hash, publication.manifest_hash);
}

/// A board whose version went back, a board with other rules, and another board at a later
/// version with other players are each published in full, never patched onto the last one.
#[test]
fn another_board_is_built_in_full() {
    let options = ChunkingOptions {
        min_entries: 4,
        boundary_modulus: 4,
        max_entries: 16,
        lookup_target: 64,
    };
    let build = |mode: ScoreMode, prefix: &str, n: u16| {
        let mut board = Board::new(BoardRules::new(mode));
        for p in 0..n {
            let event = ScoreEvent::new(&format!("e{p}"), &format!("{prefix}-{p}"), i64::from(p), 1).unwrap();
            board.apply(&event).unwrap();
        }
        board
    };
    let mut publisher = Publisher::new(options);
    publisher.publish(&build(ScoreMode::Highest, "a", 100));
    let older = build(ScoreMode::Highest, "a", 90);
    let publication = publisher.publish(&older);
    assert_eq!(
        publisher.last_path(),
        Some(PublishPath::Full(FullBuildReason::VersionWentBack))
    );
    assert_eq!(
        publication.manifest_bytes,
        Snapshot::build_with(&older, options).manifest_bytes
    );

    let other_rules = build(ScoreMode::Fastest, "a", 95);
    publisher.publish(&other_rules);
    assert_eq!(
        publisher.last_path(),
        Some(PublishPath::Full(FullBuildReason::OtherRules))
    );

    // Another board of the same mode whose history reaches back past the published version:
    // its deltas name players the last publication never ranked as the deltas say.
    let mut other = build(ScoreMode::Fastest, "b", 95);
    for p in 0..5 {
        let event = ScoreEvent::new(&format!("x{p}"), &format!("b-{p}"), -1 - i64::from(p), 2).unwrap();
        other.apply(&event).unwrap();
    }
    let publication = publisher.publish(&other);
    assert_eq!(
        publisher.last_path(),
        Some(PublishPath::Full(FullBuildReason::Inconsistent))
    );
    assert_eq!(
        publication.manifest_bytes,
        Snapshot::build_with(&other, options).manifest_bytes
    );
}

/// A board that doubles changes its partition count, which is a full build; a version with no
/// change publishes the same manifest and hands out nothing.
#[test]
fn growth_and_no_change() {
    let options = ChunkingOptions {
        min_entries: 4,
        boundary_modulus: 4,
        max_entries: 16,
        lookup_target: 8,
    };
    let mut board = Board::new(BoardRules::new(ScoreMode::Cumulative));
    let mut serial = 0;
    for p in 0..30 {
        apply(
            &mut board,
            &Step::Apply {
                player: p,
                value: 5,
                at: 1,
            },
            &mut serial,
        );
    }
    let mut publisher = Publisher::new(options);
    let first = publisher.publish(&board);
    let again = publisher.publish(&board);
    assert_eq!(publisher.last_path(), Some(PublishPath::Incremental));
    assert_eq!(again.manifest_bytes, first.manifest_bytes);
    assert!(again.new_parts.is_empty());
    for p in 30..70 {
        apply(
            &mut board,
            &Step::Apply {
                player: p,
                value: 5,
                at: 1,
            },
            &mut serial,
        );
    }
    let grown = publisher.publish(&board);
    assert_eq!(
        publisher.last_path(),
        Some(PublishPath::Full(FullBuildReason::PartitionsChanged))
    );
    assert_eq!(
        grown.manifest_bytes,
        Snapshot::build_with(&board, options).manifest_bytes
    );
}

/// A snapshot restores only when its chunks hash to what the manifest names and those hashes
/// give its digest: a manifest whose digest was changed is refused.
#[test]
fn restore_checks_the_chunk_digest() {
    let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
    let mut serial = 0;
    for p in 0..50 {
        apply(
            &mut board,
            &Step::Apply {
                player: p,
                value: i64::from(p % 7),
                at: 1,
            },
            &mut serial,
        );
    }
    let snapshot = Snapshot::build_with(
        &board,
        ChunkingOptions {
            min_entries: 4,
            boundary_modulus: 4,
            max_entries: 16,
            lookup_target: 8,
        },
    );
    let chunks: Vec<RankChunk> = snapshot
        .rank_chunks
        .iter()
        .zip(&snapshot.manifest.rank_chunks)
        .map(|(bytes, r)| RankChunk::decode(bytes, &r.hash).unwrap())
        .collect();
    assert_eq!(snapshot.manifest.digest, snapshot.manifest.chunk_digest());
    let restored = Snapshot::restore(&snapshot.manifest, &chunks).unwrap();
    assert_eq!(restored.digest(), board.digest());
    let mut tampered = snapshot.manifest.clone();
    tampered.digest.0[0] ^= 1;
    assert!(Snapshot::restore(&tampered, &chunks).is_err());
    // A chunk that matches its manifest entry (count, first value, last entry, distinct values)
    // but not its hash is refused before its entries are read.
    let mut forged = chunks.clone();
    forged[0].entries[0].achieved_at += 1;
    assert_eq!(
        Snapshot::restore(&snapshot.manifest, &forged).err(),
        Some(DecodeError::HashMismatch)
    );
}
