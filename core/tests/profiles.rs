//! What an entry shows besides its standing: the player's profile and the metadata of the event
//! behind the aggregate. The metadata shown does not depend on arrival order, a replay and a
//! checkpoint keep it, snapshots and live views carry only the public form, renames and
//! erasures are versioned changes like any other, and an erasure leaves no trace of the text.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use proptest::prelude::*;
use standings_core::snapshot::read::{SnapshotReader, Step};
use standings_core::snapshot::{FullBuildReason, PublishPath};
use standings_core::{
    ALL_TIME_KEY, Applied, Board, BoardDigest, BoardRules, ChunkHash, ChunkingOptions, EntryInfo, Extras,
    LookupChunk, PlayerId, Profile, Publication, Publisher, RankChunk, RankedEntry, Replay, ScoreEvent,
    ScoreMode, Snapshot, Standing, View, ViewDelta, ViewState,
};

use common::{AllParts, mode_strategy};

const T0: i64 = 1_760_349_600_000; // 2025-10-13T10:00:00Z

const MODES: [ScoreMode; 4] = [
    ScoreMode::Highest,
    ScoreMode::Cumulative,
    ScoreMode::Fastest,
    ScoreMode::Latest,
];

fn event(id: &str, player: &str, value: i64, achieved_at: i64, metadata: Option<&str>) -> ScoreEvent {
    ScoreEvent::new(id, player, value, achieved_at)
        .unwrap()
        .with_metadata(metadata.map(Into::into))
}

fn profile(display_name: Option<&str>, country: Option<&str>, anonymous: bool) -> Arc<Profile> {
    Arc::new(Profile {
        display_name: display_name.map(Into::into),
        country: country.map(Into::into),
        anonymous,
    })
}

fn pid(player: &str) -> PlayerId {
    PlayerId::new(player).unwrap()
}

/// Every entry of the board, in rank order, with what a trusted caller sees of it.
fn entries(board: &Board) -> Vec<RankedEntry<'_>> {
    board.ranked_range(1, usize::MAX)
}

/// Every held extras of the board by player, with the event ids behind the metadata, which
/// decide later versions though no answer shows them.
fn held_extras(board: &Board) -> BTreeMap<String, Extras> {
    let mut held = BTreeMap::new();
    board.for_each_extras(|player, extras| {
        held.insert(player.to_string(), extras.clone());
    });
    held
}

fn changed(applied: Applied) -> standings_core::Delta {
    match applied {
        Applied::Changed(delta) => delta,
        Applied::Unchanged => panic!("expected a change"),
    }
}

/// A deterministic shuffle (xorshift), seeded by proptest.
fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed | 1;
    for i in (1..items.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        items.swap(i, (state % (i as u64 + 1)) as usize);
    }
}

/// The metadata the documented rule puts behind a player's aggregate, written out plainly per
/// mode, independent of the core's fold.
fn model_metadata(mode: ScoreMode, events: &[&ScoreEvent]) -> Option<String> {
    let id = |e: &&&ScoreEvent| e.event_id.as_str().as_bytes().to_vec();
    let with_metadata = |e: &&&ScoreEvent| e.metadata.is_some();
    let behind = match mode {
        ScoreMode::Highest | ScoreMode::Fastest => {
            let best = if mode == ScoreMode::Highest {
                events.iter().map(|e| e.value).max()?
            } else {
                events.iter().map(|e| e.value).min()?
            };
            let at = events
                .iter()
                .filter(|e| e.value == best)
                .map(|e| e.achieved_at)
                .min()?;
            let tied: Vec<&&ScoreEvent> = events
                .iter()
                .filter(|e| e.value == best && e.achieved_at == at)
                .collect();
            tied.into_iter().filter(with_metadata).min_by_key(id)
        }
        ScoreMode::Latest => events
            .iter()
            .max_by_key(|e| (e.achieved_at, e.event_id.as_str().as_bytes().to_vec())),
        _ => {
            let at = events.iter().map(|e| e.achieved_at).max()?;
            events
                .iter()
                .filter(|e| e.achieved_at == at)
                .filter(with_metadata)
                .max_by_key(id)
        }
    };
    behind.and_then(|e| e.metadata.as_deref().map(String::from))
}

/// A fixed profile per test player: none, a name and country, an anonymous one, a country only.
fn profile_of(player: u8) -> Option<Arc<Profile>> {
    match player % 4 {
        0 => None,
        1 => Some(profile(Some("Ava"), Some("DE"), false)),
        2 => Some(profile(Some("Ben"), Some("FR"), true)),
        _ => Some(profile(None, Some("JP"), false)),
    }
}

fn metadata_text(n: u8) -> String {
    format!(r#"{{"car":"c{n}"}}"#)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The same events in two arrival orders leave the same entries with the same info in every
    /// mode, equal to a recompute from all the events, and the metadata shown is the one the
    /// documented rule names.
    #[test]
    fn metadata_does_not_depend_on_arrival_order(
        mode in mode_strategy(),
        raw in prop::collection::vec((0u8..4, 0i64..3, 0i64..3, 0u8..4, prop::option::of(0u8..3)), 0..40),
        seeds in (any::<u64>(), any::<u64>()),
    ) {
        // Few players, values and times, so that ties are common; the id salt puts event ids
        // out of arrival order.
        let events: Vec<(u8, ScoreEvent)> = raw
            .iter()
            .enumerate()
            .map(|(i, &(p, value, at, salt, metadata))| {
                let metadata = metadata.map(metadata_text);
                (p, event(&format!("e{salt}-{i}"), &format!("p{p}"), value, at, metadata.as_deref()))
            })
            .collect();
        let rules = BoardRules::new(mode);
        let mut orders = [events.clone(), events.clone()];
        shuffle(&mut orders[0], seeds.0);
        shuffle(&mut orders[1], seeds.1);
        let [a, b] = orders.map(|order| {
            let mut board = Board::new(rules);
            for (p, e) in &order {
                board.apply_as(e, profile_of(*p).as_ref()).unwrap();
            }
            board
        });
        prop_assert_eq!(entries(&a), entries(&b));
        prop_assert_eq!(held_extras(&a), held_extras(&b));

        let mut recomputed = Board::new(rules);
        let all: Vec<ScoreEvent> = events.iter().map(|(_, e)| e.clone()).collect();
        for p in 0..4u8 {
            recomputed
                .recompute_player_as(&pid(&format!("p{p}")), &all, profile_of(p).as_ref())
                .unwrap();
        }
        prop_assert_eq!(entries(&a), entries(&recomputed));
        prop_assert_eq!(held_extras(&a), held_extras(&recomputed));

        for entry in entries(&a) {
            let own: Vec<&ScoreEvent> = all.iter().filter(|e| e.player.as_str() == entry.player).collect();
            prop_assert_eq!(entry.info.metadata.map(String::from), model_metadata(mode, &own), "{}", entry.player);
        }
    }
}

/// One step of a game's life on a board, for the replay test.
#[derive(Clone, Debug)]
enum Op {
    /// An event of the player, with their current profile.
    Apply {
        player: u8,
        value: i64,
        at: i64,
        salt: u8,
        metadata: Option<u8>,
    },
    /// A new profile (see `profile_choice`), or a clear.
    SetProfile { player: u8, choice: u8 },
    /// The player's profile and the entry's metadata text erased.
    Erase { player: u8 },
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..6, 0i64..4, 0i64..4, 0u8..4, prop::option::of(0u8..3))
            .prop_map(|(player, value, at, salt, metadata)| Op::Apply { player, value, at, salt, metadata }),
        2 => (0u8..7, 0u8..5).prop_map(|(player, choice)| Op::SetProfile { player, choice }),
        1 => (0u8..7).prop_map(|player| Op::Erase { player }),
    ]
}

/// A profile to set: cleared, a name, a name and country, anonymous, or one that says nothing.
fn profile_choice(choice: u8) -> Option<Arc<Profile>> {
    match choice {
        0 => None,
        1 => Some(profile(Some("Ava"), None, false)),
        2 => Some(profile(Some("Zoë"), Some("DE"), false)),
        3 => Some(profile(Some("Ben"), Some("FR"), true)),
        _ => Some(Arc::new(Profile::default())),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A replay of events, profile changes and erasures equals the live board: it reports a
    /// change exactly when the live board bumped its version, and ends at the same version,
    /// digest, entries with info and held extras.
    #[test]
    fn replay_with_profiles_equals_live(
        mode in mode_strategy(),
        ops in prop::collection::vec(op_strategy(), 0..120),
    ) {
        let rules = BoardRules::new(mode);
        let mut live = Board::new(rules);
        let mut replay = Replay::new(rules);
        // The model of the game's profiles: what each player's next event carries.
        let mut profiles: BTreeMap<u8, Arc<Profile>> = BTreeMap::new();
        for (i, op) in ops.iter().enumerate() {
            let before = live.version();
            let reported = match op {
                Op::Apply { player, value, at, salt, metadata } => {
                    let metadata = metadata.map(metadata_text);
                    let e = event(&format!("e{salt}-{i}"), &format!("p{player}"), *value, *at, metadata.as_deref());
                    live.apply_as(&e, profiles.get(player)).unwrap();
                    replay.push_as(&e, profiles.get(player)).unwrap()
                }
                Op::SetProfile { player, choice } => {
                    let new = profile_choice(*choice);
                    match &new {
                        Some(p) => profiles.insert(*player, p.clone()),
                        None => profiles.remove(player),
                    };
                    let id = pid(&format!("p{player}"));
                    live.set_profile(&id, new.clone());
                    replay.set_profile(&id, new)
                }
                Op::Erase { player } => {
                    profiles.remove(player);
                    let id = pid(&format!("p{player}"));
                    live.erase(&id);
                    replay.erase(&id)
                }
            };
            prop_assert_eq!(reported, live.version() != before, "op {} {:?}", i, op);
        }
        prop_assert_eq!(replay.version(), live.version());
        let rebuilt = replay.finish();
        prop_assert_eq!(rebuilt.version(), live.version());
        prop_assert_eq!(rebuilt.digest(), live.digest());
        prop_assert_eq!(entries(&rebuilt), entries(&live));
        prop_assert_eq!(held_extras(&rebuilt), held_extras(&live));
    }
}

/// A board of each kind of extras: a name and country with metadata, an anonymous player, a
/// country alone, erased metadata, a player with nothing, and one whose profile says nothing.
fn board_with_extras(mode: ScoreMode) -> Board {
    let mut board = Board::new(BoardRules::new(mode));
    let ava = profile(Some("Ava"), Some("DE"), false);
    let ben = profile(Some("Benedikt"), Some("FR"), true);
    let chloe = profile(None, Some("JP"), false);
    let nobody = Arc::new(Profile::default());
    let steps: [(ScoreEvent, Option<&Arc<Profile>>); 6] = [
        (
            event("e-1", "p-ava", 9_800, T0, Some(r#"{"car":"R8"}"#)),
            Some(&ava),
        ),
        (
            event("e-2", "p-ben", 9_500, T0 + 1_000, Some(r#"{"car":"GT3"}"#)),
            Some(&ben),
        ),
        (event("e-3", "p-chloe", 9_500, T0 + 2_000, None), Some(&chloe)),
        (
            event("e-4", "p-dev", 9_100, T0 + 3_000, Some(r#"{"car":"old"}"#)),
            None,
        ),
        (event("e-5", "p-eli", 8_700, T0 + 4_000, None), None),
        (event("e-6", "p-fay", 8_000, T0 + 5_000, None), Some(&nobody)),
    ];
    for (e, p) in &steps {
        changed(board.apply_as(e, *p).unwrap());
    }
    changed(board.erase(&pid("p-dev")));
    board
}

fn round_trip(board: &Board) -> Board {
    let mut bytes = Vec::new();
    board.write_checkpoint(&mut bytes);
    Board::read_checkpoint(&bytes).unwrap()
}

/// A checkpoint keeps every entry's info in trusted form (names, countries, the anonymous flag,
/// metadata, an erased metadata and the event behind each), the version and the digest, and
/// the next events land on the read-back board exactly as on the live one, in every mode.
#[test]
fn a_checkpoint_keeps_profiles_and_metadata() {
    for mode in MODES {
        let mut live = board_with_extras(mode);
        // A profile that says nothing is held as none, so the checkpoint can write every member.
        assert!(live.extras_of("p-fay").is_empty(), "{mode}");
        let mut back = round_trip(&live);
        assert_eq!(back.version(), live.version(), "{mode}");
        assert_eq!(back.digest(), live.digest(), "{mode}");
        assert_eq!(entries(&back), entries(&live), "{mode}");
        assert_eq!(held_extras(&back), held_extras(&live), "{mode}");
        let ben = back.player_rank("p-ben").unwrap().entry.info;
        assert_eq!(
            ben,
            EntryInfo {
                display_name: Some("Benedikt"),
                country: Some("FR"),
                metadata: Some(r#"{"car":"GT3"}"#),
                segments: None,
                anonymous: true,
            },
            "{mode}"
        );
        assert_eq!(
            back.player_rank("p-dev").unwrap().entry.info,
            EntryInfo::NONE,
            "{mode}"
        );

        // Ties with the erased event on either side of its id, a better event, a profile for a
        // player with nothing, and a newcomer with a profile.
        let next = [
            event("e-0", "p-dev", 9_100, T0 + 3_000, Some(r#"{"car":"tie-low"}"#)),
            event("e-9", "p-dev", 9_100, T0 + 3_000, Some(r#"{"car":"tie-high"}"#)),
            event("e-7", "p-ava", 9_900, T0 + 6_000, Some(r#"{"car":"RS6"}"#)),
            event("e-8", "p-ben", 100, T0 + 7_000, None),
        ];
        for e in &next {
            assert_eq!(
                back.apply(e).unwrap(),
                live.apply(e).unwrap(),
                "{mode} {}",
                e.event_id.as_str()
            );
        }
        let eli = profile(Some("Eli"), None, false);
        assert_eq!(
            back.set_profile(&pid("p-eli"), Some(eli.clone())),
            live.set_profile(&pid("p-eli"), Some(eli)),
            "{mode}"
        );
        let gus = profile(Some("Gus"), Some("SE"), false);
        let newcomer = event("e-10", "p-gus", 1, T0, Some(r#"{"car":"kart"}"#));
        assert_eq!(
            back.apply_as(&newcomer, Some(&gus)).unwrap(),
            live.apply_as(&newcomer, Some(&gus)).unwrap(),
            "{mode}"
        );
        assert_eq!(back.version(), live.version(), "{mode}");
        assert_eq!(entries(&back), entries(&live), "{mode}");
        assert_eq!(held_extras(&back), held_extras(&live), "{mode}");
        assert_eq!(entries(&round_trip(&live)), entries(&live), "{mode}");
    }
}

/// A board with no extras writes an extras count of zero and reads back the same, and the same
/// bytes as format 2 wrote them (no extras section) still load to the same board.
#[test]
fn a_board_without_extras_round_trips_and_formats_2_and_3_still_load() {
    for mode in MODES {
        let mut live = Board::new(BoardRules::new(mode));
        for (i, (player, value)) in [("p-a", 5), ("p-b", 7), ("p-c", 7), ("p-a", 9)]
            .iter()
            .enumerate()
        {
            live.apply(&event(&format!("e-{i}"), player, *value, T0 + i as i64, None))
                .unwrap();
        }
        let mut bytes = Vec::new();
        live.write_checkpoint(&mut bytes);
        assert_eq!(&bytes[4..6], &4u16.to_le_bytes());
        assert_eq!(
            &bytes[bytes.len() - 8..],
            &0u64.to_le_bytes(),
            "{mode}: no extras"
        );
        let mut format_2 = bytes[..bytes.len() - 8].to_vec();
        format_2[4..6].copy_from_slice(&2u16.to_le_bytes());
        let mut format_3 = bytes.clone();
        format_3[4..6].copy_from_slice(&3u16.to_le_bytes());
        for bytes in [&bytes, &format_3, &format_2] {
            let mut back = Board::read_checkpoint(bytes).unwrap();
            assert_eq!(back.version(), live.version(), "{mode}");
            assert_eq!(back.digest(), live.digest(), "{mode}");
            assert_eq!(entries(&back), entries(&live), "{mode}");
            assert_eq!(back.players_with_extras(), 0, "{mode}");
            let mut copy = live.clone();
            let next = event("e-9", "p-b", 8, T0 + 9, Some(r#"{"k":1}"#));
            assert_eq!(back.apply(&next).unwrap(), copy.apply(&next).unwrap(), "{mode}");
            assert_eq!(entries(&back), entries(&copy), "{mode}");
        }
    }
}

/// Small chunks, so that a few hundred players make many chunks of each kind.
const SMALL_CHUNKS: ChunkingOptions = ChunkingOptions {
    min_entries: 4,
    boundary_modulus: 8,
    max_entries: 24,
    lookup_target: 16,
};

/// Checks a publication against the full build of the same board: the same manifest bytes,
/// every part handed out now or earlier (`held`) with the full build's bytes, and no part
/// handed out that the previous manifest named. Returns the names of this manifest.
fn check_publication(
    publication: &Publication,
    board: &Board,
    options: ChunkingOptions,
    held: &mut HashMap<ChunkHash, Vec<u8>>,
    previous: &HashSet<ChunkHash>,
) -> HashSet<ChunkHash> {
    let full = Snapshot::build_with(board, options);
    assert_eq!(publication.manifest_bytes, full.manifest_bytes);
    assert_eq!(publication.manifest, full.manifest);
    for (hash, bytes) in &publication.new_parts {
        assert!(
            !previous.contains(hash),
            "a part the previous manifest named was handed out again"
        );
        assert_eq!(*hash, BoardDigest::of(bytes));
        held.insert(*hash, bytes.clone());
    }
    let named: Vec<ChunkHash> = full
        .manifest
        .rank_chunks
        .iter()
        .map(|c| c.hash)
        .chain(full.manifest.lookup_chunks.iter().map(|c| c.hash))
        .collect();
    for (hash, bytes) in named
        .iter()
        .zip(full.rank_chunks.iter().chain(&full.lookup_chunks))
    {
        assert_eq!(held.get(hash), Some(bytes), "a named part was never handed out");
    }
    named.into_iter().collect()
}

/// Whether `needle` occurs in `haystack`.
fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// The entry of `player` in the new parts of a publication, by kind: (in a rank chunk, in a
/// lookup chunk).
fn published_entries(
    publication: &Publication,
    player: &str,
) -> (
    Vec<standings_core::SnapshotEntry>,
    Vec<standings_core::SnapshotEntry>,
) {
    let mut ranked = Vec::new();
    let mut looked_up = Vec::new();
    for (hash, bytes) in &publication.new_parts {
        if let Ok(chunk) = RankChunk::decode(bytes, hash) {
            ranked.extend(chunk.entries.into_iter().filter(|e| e.player == player));
        } else {
            let chunk = LookupChunk::decode(bytes, hash).unwrap();
            looked_up.extend(chunk.entries.into_iter().filter(|e| e.player == player));
        }
    }
    (ranked, looked_up)
}

/// After a rename, a clear, anonymity toggled on and off, metadata changes and an erasure,
/// every publication is incremental and byte for byte the full build of the same board; a
/// rename of a ranked player re-cuts its chunks and hands out parts with the new name, while
/// a rename nobody can see hands out none.
#[test]
fn publications_with_profile_changes_equal_full_builds() {
    for mode in MODES {
        let mut board = Board::new(BoardRules::new(mode));
        for p in 0..300u32 {
            let player = format!("p-{p:03}");
            let shown = (p % 3 == 0).then(|| profile(Some(&format!("Name {p}")), Some("NL"), p % 9 == 0));
            let metadata = (p % 2 == 0).then(|| format!(r#"{{"lap":{p}}}"#));
            let e = event(
                &format!("e-{p}"),
                &player,
                i64::from(p % 41),
                T0 + i64::from(p % 7),
                metadata.as_deref(),
            );
            board.apply_as(&e, shown.as_ref()).unwrap();
        }
        let mut publisher = Publisher::new(SMALL_CHUNKS);
        let mut held = HashMap::new();
        let first = publisher.publish(&board);
        assert_eq!(
            publisher.last_path(),
            Some(PublishPath::Full(FullBuildReason::FirstPublication))
        );
        let mut previous = check_publication(&first, &board, SMALL_CHUNKS, &mut held, &HashSet::new());

        let mut publish = |board: &Board, publisher: &mut Publisher| {
            let publication = publisher.publish(board);
            assert_eq!(publisher.last_path(), Some(PublishPath::Incremental), "{mode}");
            previous = check_publication(&publication, board, SMALL_CHUNKS, &mut held, &previous);
            publication
        };

        // A rename of a ranked player, who moves nowhere.
        changed(board.set_profile(
            &pid("p-003"),
            Some(profile(Some("Renamed Rita"), Some("NL"), false)),
        ));
        let renamed = publish(&board, &mut publisher);
        assert!(!renamed.new_parts.is_empty(), "{mode}: a rename re-cuts");
        let (ranked, looked_up) = published_entries(&renamed, "p-003");
        assert_eq!(ranked.len(), 1, "{mode}: the rank chunk holding p-003 is new");
        assert_eq!(
            looked_up.len(),
            1,
            "{mode}: the lookup chunk holding p-003 is new"
        );
        for entry in ranked.iter().chain(&looked_up) {
            assert_eq!(entry.info().display_name, Some("Renamed Rita"), "{mode}");
        }

        // A clear; anonymity on, then off again.
        changed(board.set_profile(&pid("p-006"), None));
        publish(&board, &mut publisher);
        changed(board.set_profile(
            &pid("p-012"),
            Some(profile(Some("Hidden Hugo"), Some("NL"), true)),
        ));
        let hidden = publish(&board, &mut publisher);
        let (ranked, looked_up) = published_entries(&hidden, "p-012");
        assert_eq!(
            ranked.len() + looked_up.len(),
            2,
            "{mode}: p-012's chunks are new"
        );
        assert!(
            ranked.iter().chain(&looked_up).all(|e| e.extras.is_none()),
            "{mode}"
        );
        assert!(
            !hidden.new_parts.iter().any(|(_, b)| contains(b, "Hidden Hugo")),
            "{mode}"
        );
        changed(board.set_profile(
            &pid("p-012"),
            Some(profile(Some("Hidden Hugo"), Some("NL"), false)),
        ));
        let shown = publish(&board, &mut publisher);
        let (ranked, looked_up) = published_entries(&shown, "p-012");
        assert_eq!(
            ranked.len() + looked_up.len(),
            2,
            "{mode}: p-012's chunks are new"
        );
        for entry in ranked.iter().chain(&looked_up) {
            assert_eq!(entry.info().display_name, Some("Hidden Hugo"), "{mode}");
            assert_eq!(entry.info().metadata, Some(r#"{"lap":12}"#), "{mode}");
        }

        // A rename of an anonymous player changes no public byte: only the manifest is new.
        changed(board.set_profile(&pid("p-009"), Some(profile(Some("Still Hidden"), None, true))));
        let unseen = publish(&board, &mut publisher);
        assert!(
            unseen.new_parts.is_empty(),
            "{mode}: {} parts",
            unseen.new_parts.len()
        );

        // Metadata: events that count in every mode (the best value, the latest time), one
        // bringing metadata and one taking it away, a tie that brings metadata to p-021 (a
        // change of metadata alone in `highest`, `fastest` and `latest`), and an erasure.
        let best = if mode == ScoreMode::Fastest { -1 } else { 40 };
        changed(
            board
                .apply(&event("e-m1", "p-021", best, T0 + 100, Some(r#"{"lap":"best"}"#)))
                .unwrap(),
        );
        changed(
            board
                .apply(&event("e-m2", "p-022", best, T0 + 101, None))
                .unwrap(),
        );
        publish(&board, &mut publisher);
        changed(
            board
                .apply(&event("e-tie", "p-023", 23, T0 + 2, Some(r#"{"lap":"tie"}"#)))
                .unwrap(),
        );
        publish(&board, &mut publisher);
        assert_eq!(
            board.player_rank("p-023").unwrap().entry.info.metadata,
            Some(r#"{"lap":"tie"}"#)
        );
        changed(board.erase(&pid("p-030")));
        let erased = publish(&board, &mut publisher);
        let (ranked, looked_up) = published_entries(&erased, "p-030");
        assert_eq!(
            ranked.len() + looked_up.len(),
            2,
            "{mode}: p-030's chunks are new"
        );
        assert!(
            ranked.iter().chain(&looked_up).all(|e| e.extras.is_none()),
            "{mode}"
        );
        assert!(!contains(&erased.manifest_bytes, "Name 30"), "{mode}");
    }
}

/// The answer of a step that must be done, every part being held.
fn done<T: std::fmt::Debug>(step: Step<T>) -> T {
    match step {
        Step::Done(answer) => answer,
        Step::Need(parts) => panic!("needs {parts:?} though every part is held"),
    }
}

/// Ava's info as anyone sees it.
const AVA: EntryInfo<'static> = EntryInfo {
    display_name: Some("Ava"),
    country: Some("DE"),
    metadata: Some(r#"{"car":"R8"}"#),
    segments: None,
    anonymous: false,
};

/// A snapshot carries the public form: the reader's top, player rank and friends answers show
/// an anonymous player with no name, country or metadata and the others with theirs, and no
/// byte of the snapshot holds the anonymous player's name or metadata.
#[test]
fn snapshots_carry_the_public_form() {
    let board = board_with_extras(ScoreMode::Highest);
    let snapshot = Snapshot::build_with(&board, SMALL_CHUNKS);
    let parts = AllParts::of(&snapshot);
    let reader = SnapshotReader::new(&snapshot.manifest);
    let chloe = EntryInfo {
        country: Some("JP"),
        ..EntryInfo::NONE
    };

    let page = done(reader.top(&parts, 10, None).unwrap());
    let shown: Vec<(&str, EntryInfo<'_>)> = page.entries.iter().map(|e| (e.player, e.info)).collect();
    assert_eq!(
        shown,
        [
            ("p-ava", AVA),
            ("p-ben", EntryInfo::NONE),
            ("p-chloe", chloe),
            ("p-dev", EntryInfo::NONE),
            ("p-eli", EntryInfo::NONE),
            ("p-fay", EntryInfo::NONE),
        ]
    );
    assert_eq!(
        done(reader.player_rank(&parts, "p-ben")).unwrap().entry.info,
        EntryInfo::NONE
    );
    assert_eq!(done(reader.player_rank(&parts, "p-ava")).unwrap().entry.info, AVA);
    let friends = done(reader.rank_among(&parts, &["p-ben", "p-chloe", "p-ava"]));
    let shown: Vec<(&str, EntryInfo<'_>)> = friends.entries.iter().map(|e| (e.player, e.info)).collect();
    assert_eq!(
        shown,
        [("p-ava", AVA), ("p-ben", EntryInfo::NONE), ("p-chloe", chloe)]
    );

    let every_byte = snapshot
        .rank_chunks
        .iter()
        .chain(&snapshot.lookup_chunks)
        .chain([&snapshot.manifest_bytes]);
    for bytes in every_byte {
        for secret in ["Benedikt", "GT3", r#""car":"old""#] {
            assert!(!contains(bytes, secret), "a snapshot holds {secret}");
        }
    }
}

/// The read API's entry JSON prints the fields that are set, byte for byte: a trusted entry its
/// name, country and metadata object as sent, an anonymous one `"anonymous":true` as well (and
/// nothing in public form), a plain entry nothing extra.
#[cfg(feature = "json")]
#[test]
fn entry_json_prints_the_fields_that_are_set() {
    use standings_core::Audience;
    use standings_core::json::write_entry;

    let board = board_with_extras(ScoreMode::Highest);
    let json = |entry: &RankedEntry<'_>| {
        let mut out = Vec::new();
        write_entry(&mut out, entry);
        String::from_utf8(out).unwrap()
    };
    let all = entries(&board);
    assert_eq!(
        json(&all[0]),
        concat!(
            r#"{"rank":1,"player_id":"p-ava","value":9800,"achieved_at":"2025-10-13T10:00:00Z","#,
            r#""display_name":"Ava","country":"DE","metadata":{"car":"R8"}}"#
        )
    );
    assert_eq!(
        json(&all[1]),
        concat!(
            r#"{"rank":2,"player_id":"p-ben","value":9500,"achieved_at":"2025-10-13T10:00:01Z","#,
            r#""display_name":"Benedikt","country":"FR","metadata":{"car":"GT3"},"anonymous":true}"#
        )
    );
    let public = RankedEntry {
        info: all[1].info.for_audience(Audience::Public),
        ..all[1]
    };
    assert_eq!(
        json(&public),
        r#"{"rank":2,"player_id":"p-ben","value":9500,"achieved_at":"2025-10-13T10:00:01Z"}"#
    );
    assert_eq!(
        json(&all[4]),
        r#"{"rank":5,"player_id":"p-eli","value":8700,"achieved_at":"2025-10-13T10:00:04Z"}"#
    );
}

/// `set_profile` on a ranked player is one change (+1, even with the same profile) whose delta
/// keeps the standing and carries the new extras; on an unranked player it changes nothing.
#[test]
fn a_profile_change_is_one_version() {
    let mut board = board_with_extras(ScoreMode::Highest);
    let before = board.extras_of("p-ava");
    let standing = Some(Standing {
        value: 9_800,
        achieved_at: T0,
    });
    let renamed = profile(Some("Ava Prime"), Some("AT"), false);
    let version = board.version();
    let delta = changed(board.set_profile(&pid("p-ava"), Some(renamed.clone())));
    assert_eq!(board.version(), version + 1);
    assert_eq!(delta.board_version, version + 1);
    assert_eq!(delta.player, pid("p-ava"));
    assert_eq!((delta.before, delta.after), (standing, standing));
    assert_eq!(delta.extras_before, before);
    assert_eq!(
        delta.extras_after,
        Extras {
            profile: Some(renamed.clone()),
            metadata: before.metadata.clone(),
        }
    );
    assert_eq!(board.extras_of("p-ava"), delta.extras_after);
    // The same profile again is still a change: versions never look at the text.
    changed(board.set_profile(&pid("p-ava"), Some(renamed)));
    assert_eq!(board.version(), version + 2);

    // Never seen, and seen but unranked by a recompute: nothing to change.
    assert_eq!(
        board.set_profile(&pid("p-nobody"), Some(profile(Some("X"), None, false))),
        Applied::Unchanged
    );
    changed(board.recompute_player(&pid("p-eli"), []).unwrap());
    let version = board.version();
    assert_eq!(
        board.set_profile(&pid("p-eli"), Some(profile(Some("Eli"), None, false))),
        Applied::Unchanged
    );
    assert_eq!(board.version(), version);
    assert!(board.extras_of("p-eli").is_empty());
}

/// A page read before a rename goes on in the names it was read with: `top_at`, the next page
/// through its cursor and `nearby_at` at the older version show the old name, the current
/// version the new one.
#[test]
fn an_older_version_shows_the_names_it_had() {
    let mut board = board_with_extras(ScoreMode::Highest);
    let then = board.version();
    let cursor = board.top(1, None).unwrap().next_cursor.unwrap();
    let whole: Vec<_> = entries(&board)
        .iter()
        .map(|e| (e.player.to_string(), e.info.display_name.map(String::from)))
        .collect();
    changed(board.set_profile(
        &pid("p-ben"),
        Some(profile(Some("Ben Renamed"), Some("FR"), false)),
    ));
    changed(board.set_profile(&pid("p-ava"), Some(profile(Some("Ava Renamed"), None, false))));

    let at_then = board.top_at(then, 10).unwrap();
    assert_eq!(at_then.board_version, then);
    let shown: Vec<_> = at_then
        .entries
        .iter()
        .map(|e| (e.player.to_string(), e.info.display_name.map(String::from)))
        .collect();
    assert_eq!(shown, whole);
    assert_eq!(at_then.entries[0].info, AVA);
    let second = board.top(1, Some(&cursor)).unwrap();
    assert_eq!(second.board_version, then);
    assert_eq!(second.entries[0].player, "p-ben");
    assert_eq!(second.entries[0].info.display_name, Some("Benedikt"));
    assert!(second.entries[0].info.anonymous);
    let window = board.nearby_at(then, "p-ben", 1).unwrap().unwrap();
    let names: Vec<_> = window.iter().map(|e| e.info.display_name).collect();
    assert_eq!(names, [Some("Ava"), Some("Benedikt"), None]);

    let now = board.top(2, None).unwrap();
    assert_eq!(now.entries[0].info.display_name, Some("Ava Renamed"));
    assert_eq!(now.entries[1].info.display_name, Some("Ben Renamed"));
}

/// A live view after a rename: one changed entry with the new name, and applying that delta
/// lands on what a fresh read gives.
#[test]
fn a_live_view_follows_a_rename() {
    let mut board = board_with_extras(ScoreMode::Highest);
    let view: View = "top:10".parse().unwrap();
    let mut state = ViewState::read(&board, &view, ALL_TIME_KEY);
    assert_eq!(state.entries[0].display_name.as_deref(), Some("Ava"));
    // Live views are public: the anonymous player shows nothing.
    assert_eq!(state.entries[1].info(), EntryInfo::NONE);

    changed(board.set_profile(&pid("p-ava"), Some(profile(Some("Ava Prime"), Some("DE"), false))));
    let next = ViewState::read(&board, &view, ALL_TIME_KEY);
    let delta = ViewDelta::between(&state, &next).unwrap();
    assert_eq!(delta.changed.len(), 1);
    assert!(delta.left.is_empty());
    let entry = &delta.changed[0];
    assert_eq!(entry.player_id, pid("p-ava"));
    assert_eq!(entry.display_name.as_deref(), Some("Ava Prime"));
    assert_eq!(entry.metadata.as_deref(), Some(r#"{"car":"R8"}"#));
    state.apply(&delta).unwrap();
    assert_eq!(state, next);
}

/// After an erasure no answer, snapshot or checkpoint holds the name or the metadata text, the
/// version moved by one, and a later event with metadata that counts shows its metadata.
#[test]
fn an_erasure_leaves_no_text() {
    for mode in MODES {
        let mut board = Board::new(BoardRules::new(mode));
        let secret = profile(Some("Secret Sam"), Some("DE"), false);
        board
            .apply_as(
                &event("e-1", "p-sam", 50, T0, Some(r#"{"note":"secret-text"}"#)),
                Some(&secret),
            )
            .unwrap();
        board.apply(&event("e-2", "p-kim", 40, T0, None)).unwrap();
        let version = board.version();
        let delta = changed(board.erase(&pid("p-sam")));
        assert_eq!(board.version(), version + 1, "{mode}");
        assert_eq!(delta.before, delta.after, "{mode}");
        assert_eq!(delta.extras_after.info(), EntryInfo::NONE, "{mode}");
        assert_eq!(board.erase(&pid("p-nobody")), Applied::Unchanged, "{mode}");

        let leaks = |text: &str| ["Secret Sam", "secret-text"].iter().any(|s| text.contains(s));
        let info_leaks =
            |info: EntryInfo<'_>| info.display_name.is_some_and(leaks) || info.metadata.is_some_and(leaks);
        for entry in entries(&board) {
            assert!(!info_leaks(entry.info), "{mode}: {entry:?}");
        }
        assert!(
            !info_leaks(board.player_rank("p-sam").unwrap().entry.info),
            "{mode}"
        );
        assert!(
            !info_leaks(board.rank_among(&["p-sam"]).entries[0].info),
            "{mode}"
        );
        let snapshot = Snapshot::build(&board);
        let mut checkpoint = Vec::new();
        board.write_checkpoint(&mut checkpoint);
        for bytes in snapshot
            .rank_chunks
            .iter()
            .chain(&snapshot.lookup_chunks)
            .chain([&checkpoint])
        {
            assert!(
                !contains(bytes, "Secret Sam") && !contains(bytes, "secret-text"),
                "{mode}"
            );
        }

        // A later event whose metadata counts in every mode: the best value, the latest time.
        let value = if mode == ScoreMode::Fastest { 10 } else { 60 };
        let later = event("e-3", "p-sam", value, T0 + 10, Some(r#"{"note":"new"}"#));
        let version = board.version();
        changed(board.apply(&later).unwrap());
        assert_eq!(board.version(), version + 1, "{mode}");
        let info = board.player_rank("p-sam").unwrap().entry.info;
        assert_eq!(info.metadata, Some(r#"{"note":"new"}"#), "{mode}");
        assert_eq!(info.display_name, None, "{mode}");
    }
}

/// A board read back from its checkpoint holds copies of its players' profiles; sharing them
/// with the game's own makes them the same allocations, and changes nothing a query sees.
#[test]
fn shared_profiles_replace_a_checkpoints_copies() {
    let ava = profile(Some("Ava"), Some("DE"), false);
    let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
    board
        .apply_as(&event("e1", "p-ava", 10, 1_000, None), Some(&ava))
        .unwrap();
    board.apply(&event("e2", "p-bo", 5, 1_000, None)).unwrap();
    let mut bytes = Vec::new();
    board.write_checkpoint(&mut bytes);
    let mut back = Board::read_checkpoint(&bytes).unwrap();
    let copy = back.extras_of("p-ava").profile.unwrap();
    assert!(!Arc::ptr_eq(&copy, &ava), "read back as a copy");
    let other = profile(Some("Other"), None, false);
    back.share_profiles(|player| match player {
        "p-ava" => Some(ava.clone()),
        // A profile that differs from the held one is not taken.
        _ => Some(other.clone()),
    });
    assert!(Arc::ptr_eq(&back.extras_of("p-ava").profile.unwrap(), &ava));
    assert_eq!(back.extras_of("p-bo").profile, None);
    assert_eq!(entries(&back), entries(&board));
    assert_eq!(back.version(), board.version());
}
