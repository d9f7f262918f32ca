//! The snapshot reader answers every query exactly as the board it was taken from, with every
//! part held or with parts fetched only as it asks for them, and within the rounds and parts
//! its documentation promises.

mod common;

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use standings_core::interval::RankSketch;
use standings_core::snapshot::read::{Part, Parts, SnapshotReader, Step};
use standings_core::{
    Board, BoardRules, ChunkingOptions, Cursor, LookupChunk, Manifest, PlayerId, QueryError, RankChunk,
    ScoreEvent, Snapshot,
};

use common::{AllParts, mode_strategy};

/// Parts held only once fetched, as a driver holds them.
#[derive(Default)]
struct FetchedParts {
    rank: BTreeMap<usize, RankChunk>,
    lookup: BTreeMap<usize, LookupChunk>,
    sketch: Option<RankSketch>,
}

impl Parts for FetchedParts {
    fn rank(&self, i: usize) -> Option<&RankChunk> {
        self.rank.get(&i)
    }
    fn lookup(&self, partition: usize) -> Option<&LookupChunk> {
        self.lookup.get(&partition)
    }
    fn sketch(&self) -> Option<&RankSketch> {
        self.sketch.as_ref()
    }
}

/// How a query was answered from empty: the rounds that answered `Need`, and the parts fetched.
#[derive(Debug, Default)]
struct Cost {
    rounds: usize,
    parts: usize,
}

/// Feeds a query from empty parts until it answers, checking that every `Need` is sorted,
/// without repeats and names only parts not held, and that it ends within 4 calls. Returns the
/// filled parts, for the caller to ask the answer from, and what it cost.
fn fetch_until_done(
    snapshot: &Snapshot,
    mut ask: impl FnMut(&FetchedParts) -> Option<Vec<Part>>,
) -> (FetchedParts, Cost) {
    let mut fetched = FetchedParts::default();
    let mut cost = Cost::default();
    let manifest = &snapshot.manifest;
    while let Some(need) = ask(&fetched) {
        assert!(!need.is_empty(), "a Need names at least one part");
        assert!(
            need.windows(2).all(|w| w[0] < w[1]),
            "a Need is sorted, without repeats: {need:?}"
        );
        for part in need {
            match part {
                Part::Rank(i) => {
                    assert!(fetched.rank(i).is_none(), "{part:?} asked again");
                    let chunk = RankChunk::decode(&snapshot.rank_chunks[i], &manifest.rank_chunks[i].hash);
                    fetched.rank.insert(i, chunk.unwrap());
                }
                Part::Lookup(p) => {
                    assert!(fetched.lookup(p).is_none(), "{part:?} asked again");
                    let chunk =
                        LookupChunk::decode(&snapshot.lookup_chunks[p], &manifest.lookup_chunks[p].hash);
                    fetched.lookup.insert(p, chunk.unwrap());
                }
                Part::Sketch => {
                    assert!(fetched.sketch.is_none(), "the sketch asked again");
                    let sketch = RankSketch::decode(&snapshot.sketch, &manifest.sketch);
                    fetched.sketch = Some(sketch.unwrap());
                }
            }
            cost.parts += 1;
        }
        cost.rounds += 1;
        assert!(cost.rounds < 4, "a query answers within 4 calls");
    }
    (fetched, cost)
}

/// What a step needs, forgetting the answer (which borrows the parts).
fn need<T>(step: Step<T>) -> Option<Vec<Part>> {
    match step {
        Step::Done(_) => None,
        Step::Need(parts) => Some(parts),
    }
}

/// The answer of a step that must be done.
fn done<T: std::fmt::Debug>(step: Step<T>) -> T {
    match step {
        Step::Done(answer) => answer,
        Step::Need(parts) => panic!("needs {parts:?} though every part is held"),
    }
}

/// The rank chunk holding each rank, from the manifest's counts.
fn chunk_of_rank(manifest: &Manifest, rank: u64) -> usize {
    let mut through = 0;
    for (i, chunk) in manifest.rank_chunks.iter().enumerate() {
        through += u64::from(chunk.count);
        if rank <= through {
            return i;
        }
    }
    panic!("rank {rank} past the board");
}

/// The distinct rank chunks a run of ranks spans.
fn chunks_spanned(manifest: &Manifest, ranks: impl IntoIterator<Item = u64>) -> usize {
    ranks
        .into_iter()
        .map(|r| chunk_of_rank(manifest, r))
        .collect::<BTreeSet<_>>()
        .len()
}

/// The lookup chunks worth fetching to find these players: their distinct partitions that
/// hold anyone.
fn lookups_of<'p>(manifest: &Manifest, players: impl IntoIterator<Item = &'p str>) -> usize {
    players
        .into_iter()
        .map(|p| manifest.partition_of(p))
        .filter(|&p| manifest.lookup_chunks[p].count > 0)
        .collect::<BTreeSet<_>>()
        .len()
}

/// A board from random events over `players` players with few values and times (so ties are
/// common), some players then removed by recomputation, so that known players can be unranked.
fn board_from(mode: standings_core::ScoreMode, events: &[(u16, i64, i64)], removed: &[u16]) -> Board {
    let mut board = Board::new(BoardRules::new(mode));
    for (i, (p, v, at)) in events.iter().enumerate() {
        let event = ScoreEvent::new(&format!("e{i}"), &format!("player-{p}"), *v, *at).unwrap();
        board.apply(&event).unwrap();
    }
    for p in removed {
        let player = PlayerId::new(&format!("player-{p}")).unwrap();
        board.recompute_player(&player, []).unwrap();
    }
    board
}

fn options_strategy() -> impl Strategy<Value = ChunkingOptions> {
    (1u32..5, 0u32..4, 0u32..8, 1u32..24).prop_map(|(min, modulus, extra, lookup)| ChunkingOptions {
        min_entries: min,
        boundary_modulus: 1 << modulus,
        max_entries: min + extra,
        lookup_target: lookup,
    })
}

/// Names to ask about: every player that ever played (some now unranked) and a few never seen.
fn asked_names(players: u16) -> Vec<String> {
    (0..players + 3).map(|p| format!("player-{p}")).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Top pages, paged to the end through `next_cursor` with random limits, equal the board's,
    /// with every part held and fetched on demand, each page fetching exactly the chunks its
    /// entries come from in at most 2 rounds.
    #[test]
    fn top_pages_equal_the_boards(
        mode in mode_strategy(),
        events in prop::collection::vec((0u16..80, -4i64..4, 0i64..3), 0..300),
        removed in prop::collection::vec(0u16..80, 0..5),
        options in options_strategy(),
        limits in prop::collection::vec(0usize..12, 1..6),
    ) {
        let board = board_from(mode, &events, &removed);
        let snapshot = Snapshot::build_with(&board, options);
        let all = AllParts::of(&snapshot);
        let reader = SnapshotReader::new(&snapshot.manifest);
        for &limit in &limits {
            let mut cursor: Option<Cursor> = None;
            let mut pages = 0;
            loop {
                let expected = board.top(limit, cursor.as_ref()).unwrap();
                let held = done(reader.top(&all, limit, cursor.as_ref()).unwrap());
                prop_assert_eq!(&held, &expected);
                let (fetched, cost) = fetch_until_done(&snapshot, |parts| need(reader.top(parts, limit, cursor.as_ref()).unwrap()));
                prop_assert_eq!(&done(reader.top(&fetched, limit, cursor.as_ref()).unwrap()), &expected);
                let spanned = chunks_spanned(&snapshot.manifest, expected.entries.iter().map(|e| e.rank));
                prop_assert_eq!(cost.parts, spanned);
                prop_assert!(cost.rounds <= 2);
                pages += 1;
                match expected.next_cursor {
                    Some(next) if limit > 0 => cursor = Some(next),
                    _ => break,
                }
            }
            prop_assert!(pages <= board.total_players() as usize + 1);
        }
    }

    /// A cursor at any position, an entry or not, pages on as the board's does.
    #[test]
    fn pages_after_any_position_equal_the_boards(
        mode in mode_strategy(),
        events in prop::collection::vec((0u16..60, -4i64..4, 0i64..3), 0..200),
        options in options_strategy(),
        positions in prop::collection::vec((-5i64..5, -1i64..4, 0u16..64), 1..12),
        limit in 0usize..8,
    ) {
        let board = board_from(mode, &events, &[]);
        let snapshot = Snapshot::build_with(&board, options);
        let all = AllParts::of(&snapshot);
        let reader = SnapshotReader::new(&snapshot.manifest);
        for (value, achieved_at, p) in positions {
            let cursor = Cursor { board_version: board.version(), value, achieved_at, player: format!("player-{p}") };
            let expected = board.top(limit, Some(&cursor)).unwrap();
            prop_assert_eq!(&done(reader.top(&all, limit, Some(&cursor)).unwrap()), &expected);
            let (fetched, cost) = fetch_until_done(&snapshot, |parts| need(reader.top(parts, limit, Some(&cursor)).unwrap()));
            prop_assert_eq!(&done(reader.top(&fetched, limit, Some(&cursor)).unwrap()), &expected);
            prop_assert!(cost.rounds <= 2);
        }
    }

    /// Ranks, value ranks and percentiles equal the board's for ranked, unranked and unknown
    /// players; a rank takes at most 2 rounds and 3 parts, an unranked player at most their
/// lookup chunk.
    #[test]
    fn player_ranks_equal_the_boards(
        mode in mode_strategy(),
        events in prop::collection::vec((0u16..80, -4i64..4, 0i64..3), 0..300),
        removed in prop::collection::vec(0u16..80, 0..5),
        options in options_strategy(),
    ) {
        let board = board_from(mode, &events, &removed);
        let snapshot = Snapshot::build_with(&board, options);
        let all = AllParts::of(&snapshot);
        let reader = SnapshotReader::new(&snapshot.manifest);
        for name in asked_names(80) {
            let expected = board.player_rank(&name);
            prop_assert_eq!(&done(reader.player_rank(&all, &name)), &expected);
            let (fetched, cost) = fetch_until_done(&snapshot, |parts| need(reader.player_rank(parts, &name)));
            prop_assert_eq!(&done(reader.player_rank(&fetched, &name)), &expected);
            prop_assert!(cost.rounds <= 2 && cost.parts <= 3, "{} costs {:?}", name, cost);
            if expected.is_none() {
                prop_assert_eq!(cost.parts, lookups_of(&snapshot.manifest, [name.as_str()]), "an unranked player costs their lookup chunk");
            }
        }
    }

    /// Rank intervals equal the board's for ranked, unranked and unknown players, in one round
    /// of at most the lookup chunk and the sketch, never a rank chunk.
    #[test]
    fn rank_intervals_equal_the_boards(
        mode in mode_strategy(),
        events in prop::collection::vec((0u16..80, -4i64..4, 0i64..3), 0..300),
        removed in prop::collection::vec(0u16..80, 0..5),
        options in options_strategy(),
    ) {
        let board = board_from(mode, &events, &removed);
        let snapshot = Snapshot::build_with(&board, options);
        let all = AllParts::of(&snapshot);
        let reader = SnapshotReader::new(&snapshot.manifest);
        for name in asked_names(80) {
            let expected = board.rank_interval(&name);
            prop_assert_eq!(&done(reader.player_interval(&all, &name)), &expected);
            let (fetched, cost) = fetch_until_done(&snapshot, |parts| need(reader.player_interval(parts, &name)));
            prop_assert_eq!(&done(reader.player_interval(&fetched, &name)), &expected);
            prop_assert!(cost.rounds <= 1 && fetched.rank.is_empty(), "{} costs {:?}", name, cost);
        }
    }

    /// Nearby windows of random radii equal the board's; a window takes at most 3 rounds and
    /// fetches the player's lookup chunk (unless empty) plus exactly the rank chunks it spans.
    #[test]
    fn nearby_windows_equal_the_boards(
        mode in mode_strategy(),
        events in prop::collection::vec((0u16..60, -4i64..4, 0i64..3), 0..240),
        removed in prop::collection::vec(0u16..60, 0..5),
        options in options_strategy(),
        radii in prop::collection::vec(prop_oneof![0u64..12, Just(u64::MAX)], 1..4),
    ) {
        let board = board_from(mode, &events, &removed);
        let snapshot = Snapshot::build_with(&board, options);
        let all = AllParts::of(&snapshot);
        let reader = SnapshotReader::new(&snapshot.manifest);
        for name in asked_names(60) {
            for &radius in &radii {
                let expected = board.nearby(&name, radius);
                prop_assert_eq!(&done(reader.nearby(&all, &name, radius)), &expected);
                let (fetched, cost) = fetch_until_done(&snapshot, |parts| need(reader.nearby(parts, &name, radius)));
                prop_assert_eq!(&done(reader.nearby(&fetched, &name, radius)), &expected);
                prop_assert!(cost.rounds <= 3);
                let spanned = expected.as_ref().map_or(0, |w| chunks_spanned(&snapshot.manifest, w.iter().map(|e| e.rank)));
                prop_assert_eq!(cost.parts, lookups_of(&snapshot.manifest, [name.as_str()]) + spanned);
            }
        }
    }

    /// Friends boards of random players, with duplicates, unranked and unknown ones, equal the
    /// board's; one takes at most 2 rounds, one lookup chunk per distinct non-empty partition and
    /// one rank chunk per distinct chunk of the ranked players.
    #[test]
    fn friends_boards_equal_the_boards(
        mode in mode_strategy(),
        events in prop::collection::vec((0u16..60, -4i64..4, 0i64..3), 0..240),
        removed in prop::collection::vec(0u16..60, 0..5),
        options in options_strategy(),
        asked in prop::collection::vec(prop::collection::vec(0u16..66, 0..20), 1..6),
    ) {
        let board = board_from(mode, &events, &removed);
        let snapshot = Snapshot::build_with(&board, options);
        let manifest = &snapshot.manifest;
        let all = AllParts::of(&snapshot);
        let reader = SnapshotReader::new(manifest);
        for players in asked {
            let names: Vec<String> = players.iter().map(|p| format!("player-{p}")).collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let expected = board.rank_among(&names);
            prop_assert_eq!(&done(reader.rank_among(&all, &names)), &expected);
            let (fetched, cost) = fetch_until_done(&snapshot, |parts| need(reader.rank_among(parts, &names)));
            prop_assert_eq!(&done(reader.rank_among(&fetched, &names)), &expected);
            prop_assert!(cost.rounds <= 2);
            let chunks: BTreeSet<usize> = expected.entries.iter().map(|e| chunk_of_rank(manifest, e.global_rank)).collect();
            prop_assert_eq!(cost.parts, lookups_of(manifest, names.iter().copied()) + chunks.len());
        }
    }

    /// Parts of another snapshot (a driver's bug) never make a query panic, whatever they
    /// answer.
    #[test]
    fn parts_of_another_snapshot_never_panic(
        mode in mode_strategy(),
        events in prop::collection::vec((0u16..40, -4i64..4, 0i64..3), 0..120),
        others in prop::collection::vec((0u16..40, -4i64..4, 0i64..3), 0..120),
        options in options_strategy(),
        limit in 0usize..8,
        radius in 0u64..6,
    ) {
        let board = board_from(mode, &events, &[]);
        let snapshot = Snapshot::build_with(&board, options);
        let wrong = AllParts::of(&Snapshot::build_with(&board_from(mode, &others, &[]), options));
        let reader = SnapshotReader::new(&snapshot.manifest);
        let names = asked_names(40);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut cursor = None;
        for _ in 0..4 {
            match reader.top(&wrong, limit, cursor.as_ref()).unwrap() {
                Step::Done(page) => cursor = page.next_cursor,
                Step::Need(parts) => prop_assert!(!parts.is_empty()),
            }
        }
        for name in &names {
            let _ = reader.player_rank(&wrong, name);
            let _ = reader.nearby(&wrong, name, radius);
        }
        let _ = reader.rank_among(&wrong, &names);
    }

    /// A cursor made at any other version is refused as the board restored from the snapshot
    /// refuses it, and needs no part.
    #[test]
    fn stale_cursors_are_refused(
        mode in mode_strategy(),
        events in prop::collection::vec((0u16..30, -4i64..4, 0i64..3), 1..80),
        other in 0u64..400,
    ) {
        let board = board_from(mode, &events, &[]);
        let snapshot = Snapshot::build_with(&board, ChunkingOptions { min_entries: 2, boundary_modulus: 2, max_entries: 4, lookup_target: 4 });
        let all = AllParts::of(&snapshot);
        let restored = Snapshot::restore(&snapshot.manifest, &all.rank).unwrap();
        let reader = SnapshotReader::new(&snapshot.manifest);
        // Any version but the snapshot's: older ones, and newer ones the board does not hold yet.
        let version = if other >= board.version() { other + 1 } else { other };
        let cursor = Cursor { board_version: version, value: 0, achieved_at: 0, player: "player-0".into() };
        let expected = restored.top(3, Some(&cursor)).unwrap_err();
        prop_assert_eq!(expected, QueryError::StaleCursor { cursor_version: version, oldest_held: board.version(), board_version: board.version() });
        prop_assert_eq!(reader.top(&all, 3, Some(&cursor)).unwrap_err(), expected);
        prop_assert_eq!(reader.top(&FetchedParts::default(), 3, Some(&cursor)).unwrap_err(), expected);
    }
}

/// The reader's worst cases at the default chunking on a board larger than one chunk: how many
/// parts a rank, a 1,000-entry page after a cursor, a radius-100 window and a rank of 1,000
/// friends fetch. These are the figures the edge's subrequest budget is set from.
#[test]
fn default_chunking_worst_cases() {
    let mut board = Board::new(BoardRules::new(standings_core::ScoreMode::Highest));
    // Few values, so value runs span chunk boundaries.
    for p in 0..60_000u32 {
        let event = ScoreEvent::new(
            &format!("e{p}"),
            &format!("p{p}"),
            i64::from(p % 7),
            i64::from(p % 5),
        )
        .unwrap();
        board.apply(&event).unwrap();
    }
    let snapshot = Snapshot::build(&board);
    let manifest = &snapshot.manifest;
    assert!(manifest.rank_chunks.len() > 4, "the board spans several chunks");
    let reader = SnapshotReader::new(manifest);
    let worst = Cell::new(0usize);
    let track = |cost: Cost, max_rounds: usize| {
        assert!(cost.rounds <= max_rounds, "{cost:?}");
        worst.set(worst.get().max(cost.parts));
    };
    // Every chunk's first and last entries and one in the middle, for ranks and windows.
    let mut probes = Vec::new();
    let mut first = 1u64;
    for chunk in &manifest.rank_chunks {
        probes.extend([
            first,
            first + u64::from(chunk.count) / 2,
            first + u64::from(chunk.count) - 1,
        ]);
        first += u64::from(chunk.count);
    }
    let players: Vec<String> = probes
        .iter()
        .map(|&r| board.index().entry_at(r).unwrap().player.to_owned())
        .collect();
    for name in &players {
        let (fetched, cost) = fetch_until_done(&snapshot, |parts| need(reader.player_rank(parts, name)));
        assert_eq!(done(reader.player_rank(&fetched, name)), board.player_rank(name));
        track(cost, 2);
    }
    assert!(worst.get() <= 3, "a rank fetches at most 3 parts");
    worst.set(0);
    for name in &players {
        let (fetched, cost) = fetch_until_done(&snapshot, |parts| need(reader.nearby(parts, name, 100)));
        assert_eq!(done(reader.nearby(&fetched, name, 100)), board.nearby(name, 100));
        track(cost, 3);
    }
    // 201 consecutive entries span at most (201 - 2) / 128 + 2 = 3 rank chunks of at least 128.
    assert!(worst.get() <= 4, "a radius-100 window fetches at most 4 parts");
    worst.set(0);
    for &rank in &probes {
        let entry = board.index().entry_at(rank).unwrap();
        let cursor = Cursor {
            board_version: board.version(),
            value: entry.value,
            achieved_at: entry.achieved_at,
            player: entry.player.into(),
        };
        let (fetched, cost) = fetch_until_done(&snapshot, |parts| {
            need(reader.top(parts, 1000, Some(&cursor)).unwrap())
        });
        assert_eq!(
            done(reader.top(&fetched, 1000, Some(&cursor)).unwrap()),
            board.top(1000, Some(&cursor)).unwrap()
        );
        track(cost, 2);
    }
    // The cursor's own chunk, then 1,000 entries over at most (1000 - 2) / 128 + 2 = 9 chunks.
    assert!(worst.get() <= 10, "a 1,000-entry page fetches at most 10 parts");
    let friends: Vec<&str> = players.iter().map(String::as_str).cycle().take(1000).collect();
    let (fetched, cost) = fetch_until_done(&snapshot, |parts| need(reader.rank_among(parts, &friends)));
    assert_eq!(
        done(reader.rank_among(&fetched, &friends)),
        board.rank_among(&friends)
    );
    let bound = manifest.lookup_chunks.len() + manifest.rank_chunks.len();
    assert!(cost.rounds <= 2 && cost.parts <= bound, "{cost:?}");
}
