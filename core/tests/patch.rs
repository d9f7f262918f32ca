//! Versions published as patches over an earlier manifest: every query read through the patch
//! and the base's parts answers exactly as the board at the patch's version, through moves,
//! entries, removals and renames, and a patching publisher hands out every part it names.

mod common;

use std::collections::HashMap;

use proptest::prelude::*;
use standings_core::interval::RankSketch;
use standings_core::snapshot::PublishPath;
use standings_core::snapshot::read::{Parts, SnapshotReader, Step};
use standings_core::{
    Board, BoardDigest, BoardRules, ChunkHash, ChunkingOptions, Cursor, LookupChunk, Manifest, ManifestPatch,
    Publisher, RankChunk, Root, Snapshot,
};

use common::{Change, apply, mode_strategy, player};

fn change_strategy(players: u16) -> impl Strategy<Value = Change> {
    prop_oneof![
        8 => (0..players, -6i64..6, 0i64..4).prop_map(|(player, value, at)| Change::Apply { player, value, at }),
        1 => (0..players).prop_map(|player| Change::Remove { player }),
        1 => (0..players, 0u8..3).prop_map(|(player, name)| Change::Rename { player, name }),
    ]
}

/// Every part handed out so far, decoded for the root at hand.
struct Held {
    bytes: HashMap<ChunkHash, Vec<u8>>,
}

struct Decoded {
    rank: Vec<RankChunk>,
    lookup: Vec<LookupChunk>,
    sketch: RankSketch,
}

impl Parts for Decoded {
    fn rank(&self, i: usize) -> Option<&RankChunk> {
        self.rank.get(i)
    }
    fn lookup(&self, partition: usize) -> Option<&LookupChunk> {
        self.lookup.get(partition)
    }
    fn sketch(&self) -> Option<&RankSketch> {
        Some(&self.sketch)
    }
}

impl Held {
    fn get(&self, hash: &ChunkHash) -> &[u8] {
        self.bytes.get(hash).expect("a part named was handed out")
    }

    fn decode(&self, manifest: &Manifest, sketch: &ChunkHash) -> Decoded {
        Decoded {
            rank: manifest
                .rank_chunks
                .iter()
                .map(|r| RankChunk::decode(self.get(&r.hash), &r.hash).unwrap())
                .collect(),
            lookup: manifest
                .lookup_chunks
                .iter()
                .map(|r| LookupChunk::decode(self.get(&r.hash), &r.hash).unwrap())
                .collect(),
            sketch: RankSketch::decode(self.get(sketch), sketch).unwrap(),
        }
    }
}

fn done<T>(step: Step<T>) -> T {
    match step {
        Step::Done(answer) => answer,
        Step::Need(parts) => panic!("every part is held, yet the reader asks for {parts:?}"),
    }
}

/// Every read kind through `reader` equals the board's.
fn reads_equal(
    reader: &SnapshotReader<'_>,
    parts: &Decoded,
    board: &Board,
    players: u16,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(reader.board_version(), board.version());
    prop_assert_eq!(reader.total_players(), board.total_players());
    for limit in [1usize, 3, 7] {
        let mut cursor: Option<Cursor> = None;
        loop {
            let expected = board.top(limit, cursor.as_ref()).unwrap();
            prop_assert_eq!(
                &done(reader.top(parts, limit, cursor.as_ref()).unwrap()),
                &expected
            );
            match expected.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
    }
    for value in -7i64..7 {
        let cursor = Cursor {
            board_version: board.version(),
            value,
            achieved_at: 1,
            player: player(3),
        };
        let expected = board.top(4, Some(&cursor)).unwrap();
        prop_assert_eq!(&done(reader.top(parts, 4, Some(&cursor)).unwrap()), &expected);
    }
    let names: Vec<String> = (0..players + 2).map(player).collect();
    for name in &names {
        prop_assert_eq!(
            &done(reader.player_rank(parts, name)),
            &board.player_rank(name),
            "rank of {}",
            name
        );
        prop_assert_eq!(
            &done(reader.nearby(parts, name, 3)),
            &board.nearby(name, 3),
            "nearby {}",
            name
        );
        prop_assert_eq!(
            &done(reader.player_interval(parts, name)),
            &board.rank_interval(name)
        );
    }
    let asked: Vec<&str> = names.iter().step_by(3).map(String::as_str).collect();
    prop_assert_eq!(&done(reader.rank_among(parts, &asked)), &board.rank_among(&asked));
    Ok(())
}

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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    /// After every publication of a patching publisher, the root decodes to what was
    /// published, every part it names (the base, its chunks, the sketch) was handed out, and
    /// every read kind through the patch equals the board's at that version.
    #[test]
    fn patched_reads_equal_the_boards(
        mode in mode_strategy(),
        options in options_strategy(),
        players in 10u16..120,
        initial in prop::collection::vec(change_strategy(120), 0..200),
        batches in prop::collection::vec(prop::collection::vec(change_strategy(120), 0..10), 1..10),
        max_patch_bytes in prop_oneof![1 => Just(0usize), 4 => 200usize..4000],
        history in prop_oneof![3 => Just(4096usize), 1 => 0usize..12],
    ) {
        let mut board = Board::new(BoardRules::new(mode));
        // A short history: patches are made from what the publisher followed, not from the
        // board's deltas since their base.
        board.set_history_limit(history);
        let mut serial = 0;
        for change in &initial {
            apply(&mut board, &change.within(players), &mut serial);
        }
        let mut publisher = Publisher::patching(options, max_patch_bytes);
        let mut held = Held { bytes: HashMap::new() };
        for batch in std::iter::once(&Vec::new()).chain(&batches) {
            for change in batch {
                apply(&mut board, &change.within(players), &mut serial);
            }
            let publication = publisher.publish(&board);
            prop_assert_eq!(publication.manifest_hash, BoardDigest::of(&publication.manifest_bytes));
            prop_assert_eq!(publication.board_version(), board.version());
            prop_assert_eq!(publisher.published_version(), Some(board.version()));
            held.bytes.insert(publication.manifest_hash, publication.manifest_bytes.clone());
            for (hash, bytes) in &publication.new_parts {
                prop_assert_eq!(*hash, BoardDigest::of(bytes));
                held.bytes.insert(*hash, bytes.clone());
            }
            for hash in publication.part_hashes() {
                prop_assert!(held.bytes.contains_key(&hash), "a part named was never handed out");
            }
            // Follow the root down to its manifest, as a reader does.
            let mut patches: Vec<ManifestPatch> = Vec::new();
            let mut bytes = publication.manifest_bytes.clone();
            let base = loop {
                match Root::decode(&bytes).unwrap() {
                    Root::Manifest(m) => break m,
                    Root::Patch(p) => {
                        prop_assert!(patches.len() < standings_core::snapshot::MAX_PATCH_LEVELS);
                        bytes = held.get(&p.base).to_vec();
                        prop_assert_eq!(BoardDigest::of(&bytes), p.base);
                        patches.insert(0, p);
                    }
                }
            };
            prop_assert_eq!(&patches, &publication.patches);
            if let Some(top) = patches.last() {
                prop_assert_eq!(publisher.last_path(), Some(PublishPath::Patch));
                let limit = if patches.len() == 2 { max_patch_bytes } else { max_patch_bytes * standings_core::snapshot::MIDDLE_PATCH_FACTOR };
                prop_assert!(publication.manifest_bytes.len() <= limit);
                prop_assert_eq!(top.board_version, board.version());
            }
            prop_assert_eq!(&base, &publication.manifest);
            let sketch = patches.last().map_or(base.sketch, |p| p.sketch);
            let parts = held.decode(&base, &sketch);
            let refs: Vec<&ManifestPatch> = patches.iter().collect();
            let reader = SnapshotReader::over(&base, &refs).unwrap();
            reads_equal(&reader, &parts, &board, players)?;
            let restored = Snapshot::restore_patched(&base, &parts.rank, &refs).unwrap();
            prop_assert_eq!((restored.digest(), restored.version()), (board.digest(), board.version()));
        }
    }
}

/// A patch is refused against a base it was not made over, and never makes a reader panic.
#[test]
fn a_patch_over_another_base_is_refused() {
    let mut board = Board::new(BoardRules::new(standings_core::ScoreMode::Highest));
    let mut serial = 0;
    for p in 0..50 {
        apply(
            &mut board,
            &Change::Apply {
                player: p,
                value: i64::from(p % 7),
                at: 1,
            },
            &mut serial,
        );
    }
    let mut publisher = Publisher::patching(ChunkingOptions::default(), 64 * 1024);
    let first = publisher.publish(&board);
    for p in 0..5 {
        apply(
            &mut board,
            &Change::Apply {
                player: p,
                value: 40,
                at: 2,
            },
            &mut serial,
        );
    }
    let second = publisher.publish(&board);
    let patch = second.patch().expect("5 moves fit a patch").clone();
    assert_eq!(patch.removed.len(), 5);
    assert_eq!(patch.inserted.len(), 5);
    let mut other = first.manifest.clone();
    other.board_version += 1;
    assert!(SnapshotReader::over(&other, &[&patch]).is_err());
    let mut short = first.manifest.clone();
    short.total_players -= 1;
    assert!(SnapshotReader::over(&short, &[&patch]).is_err());
    assert!(
        SnapshotReader::over(&first.manifest, &[&patch, &patch]).is_err(),
        "a patch over itself"
    );
    // Five more moves stand on the first patch: two levels, read as the board.
    for p in 10..15 {
        apply(
            &mut board,
            &Change::Apply {
                player: p,
                value: 50,
                at: 3,
            },
            &mut serial,
        );
    }
    let third = publisher.publish(&board);
    assert_eq!(third.patches.len(), 2);
    assert_eq!(third.patches[0], patch);
    assert_eq!(third.patches[1].base, second.manifest_hash);
    let refs: Vec<&ManifestPatch> = third.patches.iter().collect();
    let reader = SnapshotReader::over(&first.manifest, &refs).unwrap();
    let chunks: Vec<RankChunk> = first
        .manifest
        .rank_chunks
        .iter()
        .map(|r| {
            let bytes = &first.new_parts.iter().find(|(h, _)| *h == r.hash).unwrap().1;
            RankChunk::decode(bytes, &r.hash).unwrap()
        })
        .collect();
    let restored = Snapshot::restore_patched(&first.manifest, &chunks, &refs).unwrap();
    assert_eq!(
        (restored.digest(), restored.version()),
        (board.digest(), board.version())
    );
    assert_eq!(reader.total_players(), board.total_players());
    let mut bytes = second.manifest_bytes.clone();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    // A flipped byte decodes to something else or nothing; it never panics.
    let _ = Root::decode(&bytes);
}
