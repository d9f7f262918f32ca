//! Segment reads against a model: the whole board filtered to the segment's members, ranked
//! within, every entry's global rank the board's own. Through events carrying platforms,
//! country and anonymity changes, removals, erasures and groups, declared before or after the
//! changes. The model works out each player's platform from their events on its own: the
//! platform of the event behind their standing, chosen by the documented preference.

use std::collections::HashMap;
use std::sync::Arc;

use proptest::prelude::*;
use standings_core::{
    Board, BoardRules, COUNTRY, Cursor, EventDimension, PlayerId, Profile, QueryError, RankedEntry,
    ScoreEvent, ScoreMode, Segment, SegmentKey, SegmentSpec, Threads, View, ViewDelta, ViewEntry, ViewState,
};

use standings_core::Audience;
use standings_core::snapshot::read::{SegmentCounts, SnapshotReader, Step};
use standings_core::snapshot::{ChunkingOptions, Publisher, Snapshot};

mod common;
use common::{AllParts, mode_strategy, player};

const COUNTRIES: [&str; 3] = ["DE", "FR", "JP"];

/// The declared platforms, then one no definition declares (an event may still carry it into
/// the core: it places the entry in no segment), then none.
const PLATFORMS: [&str; 4] = ["ios", "android", "pc", "switch"];

fn spec() -> SegmentSpec {
    SegmentSpec {
        country: true,
        events: vec![EventDimension {
            name: "platform".into(),
            values: PLATFORMS[..3].iter().map(|p| (*p).into()).collect(),
        }],
    }
}

/// Each player's events since they were last removed: id, value, time, platform.
type Events = HashMap<String, Vec<(String, i64, i64, Option<&'static str>)>>;

/// The platform of the event behind a player's standing, by the preference `docs/segments.md`
/// states: the event that set the standing; among events tied on value and time, one carrying
/// values over one without, then the lowest id (the greatest for `latest` and `cumulative`,
/// which go by the latest time first).
fn platform_behind(
    mode: ScoreMode,
    events: &[(String, i64, i64, Option<&'static str>)],
) -> Option<&'static str> {
    let better = |a: &(String, i64, i64, Option<&str>), b: &(String, i64, i64, Option<&str>)| {
        let by_extras = |lower_wins: bool| {
            a.3.is_some() && (b.3.is_none() || if lower_wins { a.0 < b.0 } else { a.0 > b.0 })
        };
        let same = a.1 == b.1 && a.2 == b.2;
        match mode {
            ScoreMode::Highest => a.1 > b.1 || (a.1 == b.1 && a.2 < b.2) || (same && by_extras(true)),
            ScoreMode::Fastest => a.1 < b.1 || (a.1 == b.1 && a.2 < b.2) || (same && by_extras(true)),
            ScoreMode::Latest => a.2 > b.2 || (a.2 == b.2 && a.0 > b.0),
            ScoreMode::Cumulative => a.2 > b.2 || (a.2 == b.2 && by_extras(false)),
            other => unreachable!("no test draws {other:?}"),
        }
    };
    let mut best: Option<&(String, i64, i64, Option<&'static str>)> = None;
    for e in events {
        if best.is_none_or(|b| better(e, b)) {
            best = Some(e);
        }
    }
    best.and_then(|e| e.3).filter(|p| PLATFORMS[..3].contains(p))
}

#[derive(Clone, Debug)]
enum Op {
    /// An event; the player's profile is `country` (index into COUNTRIES, 3 for none) when the
    /// event ranks them.
    Apply {
        player: u16,
        value: i64,
        at: i64,
        country: u8,
        platform: u8,
    },
    /// The player's profile set: a country (3: none), anonymous or not.
    Profile {
        player: u16,
        country: u8,
        anonymous: bool,
    },
    /// The player's events all invalidated: they leave the board.
    Remove { player: u16 },
    /// The player's first event invalidated: the rest are recomputed, and the event behind
    /// their standing may change platform.
    Invalidate { player: u16 },
    /// What the entry shows besides its standing, erased.
    Erase { player: u16 },
    /// Events applied as one group (staged and settled on two threads when split).
    Group(Vec<(u16, i64, i64, u8)>),
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u16..24, -3i64..3, 0i64..3, 0u8..4, 0u8..5)
            .prop_map(|(player, value, at, country, platform)| Op::Apply { player, value, at, country, platform }),
        3 => (0u16..24, 0u8..4, proptest::bool::weighted(0.3))
            .prop_map(|(player, country, anonymous)| Op::Profile { player, country, anonymous }),
        1 => (0u16..24).prop_map(|player| Op::Remove { player }),
        2 => (0u16..24).prop_map(|player| Op::Invalidate { player }),
        1 => (0u16..24).prop_map(|player| Op::Erase { player }),
        1 => proptest::collection::vec((0u16..24, -3i64..3, 0i64..3, 0u8..5), 1..6).prop_map(Op::Group),
    ]
}

fn profile(country: u8, anonymous: bool) -> Option<Arc<Profile>> {
    let profile = Profile {
        display_name: None,
        country: COUNTRIES.get(country as usize).map(|c| (*c).into()),
        anonymous,
    };
    (!profile.is_empty()).then(|| Arc::new(profile))
}

/// An event carrying platform `platform` (4: none), remembered in `events` for the model.
fn event(events: &mut Events, id: String, p: u16, value: i64, at: i64, platform: u8) -> ScoreEvent {
    let platform = PLATFORMS.get(platform as usize).copied();
    events
        .entry(player(p))
        .or_default()
        .push((id.clone(), value, at, platform));
    ScoreEvent::new(&id, &player(p), value, at)
        .unwrap()
        .with_segments(platform.map(|p| format!("platform:{p}").into()))
}

fn run(board: &mut Board, op: &Op, serial: &mut u64, events: &mut Events) {
    *serial += 1;
    match op {
        Op::Apply {
            player: p,
            value,
            at,
            country,
            platform,
        } => {
            let event = event(events, format!("e{serial}"), *p, *value, *at, *platform);
            board.apply_as(&event, profile(*country, false).as_ref()).unwrap();
        }
        Op::Profile {
            player: p,
            country,
            anonymous,
        } => {
            board.set_profile(
                &PlayerId::new(&player(*p)).unwrap(),
                profile(*country, *anonymous),
            );
        }
        Op::Remove { player: p } => {
            board
                .recompute_player(&PlayerId::new(&player(*p)).unwrap(), [])
                .unwrap();
            events.remove(&player(*p));
        }
        Op::Invalidate { player: p } => {
            let kept: Vec<ScoreEvent> = match events.get_mut(&player(*p)) {
                Some(held) if !held.is_empty() => {
                    held.remove(0);
                    held.iter()
                        .map(|(id, value, at, platform)| {
                            ScoreEvent::new(id, &player(*p), *value, *at)
                                .unwrap()
                                .with_segments(platform.map(|p| format!("platform:{p}").into()))
                        })
                        .collect()
                }
                _ => return,
            };
            board
                .recompute_player(&PlayerId::new(&player(*p)).unwrap(), &kept)
                .unwrap();
        }
        Op::Erase { player: p } => {
            board.erase(&PlayerId::new(&player(*p)).unwrap());
        }
        Op::Group(group) => {
            let group: Vec<ScoreEvent> = group
                .iter()
                .enumerate()
                .map(|(i, (p, v, at, platform))| {
                    event(events, format!("e{serial}.{i}"), *p, *v, *at, *platform)
                })
                .collect();
            board.apply_group(group.iter().map(|e| (e, None)), &Threads(2));
        }
    }
}

/// The model: the board's entries in `segment`, in board order, with their global ranks. A
/// country segment holds those whose shown country it is and who are not anonymous; a platform
/// segment those whose event behind their standing carried it (anonymous or not).
fn model<'b>(board: &'b Board, segment: &SegmentKey<'_>, events: &Events) -> Vec<(u64, RankedEntry<'b>)> {
    let mode = board.rules().score_mode;
    board
        .ranked_range(1, board.total_players() as usize)
        .into_iter()
        .filter(|e| match segment.dimension {
            COUNTRY => !e.info.anonymous && e.info.country == Some(segment.value),
            _ => platform_behind(mode, &events[e.player]) == Some(segment.value),
        })
        .map(|e| (e.rank, e))
        .collect()
}

/// Every segment the tests read: each country, each platform, and one undeclared platform.
fn segments() -> impl Iterator<Item = SegmentKey<'static>> {
    COUNTRIES
        .iter()
        .map(|c| SegmentKey {
            dimension: COUNTRY,
            value: c,
        })
        .chain(PLATFORMS.iter().map(|p| SegmentKey {
            dimension: "platform",
            value: p,
        }))
}

fn better_value(mode: ScoreMode, a: i64, b: i64) -> bool {
    match mode {
        ScoreMode::Fastest => a < b,
        _ => a > b,
    }
}

fn check(board: &Board, events: &Events) {
    for segment in segments() {
        let expected = model(board, &segment, events);
        assert_eq!(board.segment_members(&segment), expected.len() as u64);
        // Top, paged by threes with cursors.
        let mut seen = Vec::new();
        let mut cursor: Option<Cursor> = None;
        loop {
            let page = board.segment_top(&segment, 3, cursor.as_ref()).unwrap();
            assert_eq!(page.board_version, board.version());
            assert_eq!(page.total_players, expected.len() as u64);
            seen.extend(page.entries.iter().map(|e| (e.global_rank, e.entry)));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        let model_ranked: Vec<_> = expected
            .iter()
            .enumerate()
            .map(|(i, (g, e))| {
                (
                    *g,
                    RankedEntry {
                        rank: i as u64 + 1,
                        ..*e
                    },
                )
            })
            .collect();
        assert_eq!(seen, model_ranked, "top of {segment:?}");
        // Rank, nearby and among for every player asked.
        let asked: Vec<String> = (0..24).map(player).collect();
        let asked: Vec<&str> = asked.iter().map(String::as_str).collect();
        for &p in &asked {
            let at = model_ranked.iter().position(|(_, e)| e.player == p);
            let rank = board.segment_rank(&segment, p);
            assert_eq!(
                rank.as_ref().map(|r| r.within.entry),
                at.map(|i| model_ranked[i].1)
            );
            if let (Some(r), Some(i)) = (rank, at) {
                let value = model_ranked[i].1.value;
                assert_eq!(r.global_rank, model_ranked[i].0);
                let better = model_ranked
                    .iter()
                    .filter(|(_, e)| better_value(board.rules().score_mode, e.value, value))
                    .count() as u64;
                assert_eq!(r.within.competition_rank, better + 1);
                assert_eq!(r.within.total_players, model_ranked.len() as u64);
            }
            let nearby = board.segment_nearby(&segment, p, 1);
            let window = at.map(|i| {
                model_ranked[i.saturating_sub(1)..(i + 2).min(model_ranked.len())]
                    .iter()
                    .map(|(g, e)| (*g, *e))
                    .collect::<Vec<_>>()
            });
            assert_eq!(
                nearby.map(|n| n
                    .into_iter()
                    .map(|e| (e.global_rank, e.entry))
                    .collect::<Vec<_>>()),
                window
            );
        }
        let among = board.segment_among(&segment, &asked[..12]);
        let expected_among: Vec<_> = model_ranked
            .iter()
            .filter(|(_, e)| asked[..12].contains(&e.player))
            .collect();
        assert_eq!(among.board.entries.len(), expected_among.len());
        for (i, (entry, (global, model_entry))) in among.board.entries.iter().zip(&expected_among).enumerate()
        {
            assert_eq!(entry.rank, i as u64 + 1);
            assert_eq!(entry.global_rank, *global);
            assert_eq!(entry.player, model_entry.player);
            assert_eq!(among.segment_ranks[i], model_entry.rank);
        }
        assert_eq!(among.board.entries.len() + among.board.unranked.len(), 12);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Declared first and kept through every change, or declared after them: both answer as
    /// the model after every step, and a cursor made at any older version pages on exactly as
    /// that version's board (kept aside) pages.
    #[test]
    fn segment_reads_match_the_model(
        mode in mode_strategy(),
        ops in proptest::collection::vec(op_strategy(), 1..60),
        declare_at in 0usize..60,
        shards in 1usize..4,
    ) {
        let mut board = Board::new(BoardRules::new(mode));
        // A split board stages a group's changes and settles its shards on threads.
        board.split(shards);
        let (mut serial, mut events) = (0, Events::new());
        if declare_at == 0 {
            board.declare_segments(spec());
        }
        let mut older: Vec<(Board, Vec<Cursor>)> = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            if board.segment_spec().country {
                let cursors = segments()
                    .filter_map(|s| board.segment_top(&s, 2, None).unwrap().next_cursor)
                    .collect();
                older.push((board.clone(), cursors));
            }
            run(&mut board, op, &mut serial, &mut events);
            for (then, cursors) in &older {
                for (segment, cursor) in segments().flat_map(|s| cursors.iter().map(move |c| (s, c))) {
                    prop_assert_eq!(
                        board.segment_top(&segment, 3, Some(cursor)),
                        then.segment_top(&segment, 3, Some(cursor)),
                        "{:?} after {:?} at {}", segment, cursor.player, cursor.board_version
                    );
                }
            }
            if i + 1 == declare_at {
                board.declare_segments(spec());
            }
            if board.segment_spec().country {
                check(&board, &events);
            }
        }
        board.declare_segments(spec());
        check(&board, &events);
        // A checkpoint carries what places each entry, so its board answers the same.
        let mut bytes = Vec::new();
        board.write_checkpoint(&mut bytes);
        let restored = Board::read_checkpoint(&bytes).unwrap();
        prop_assert_eq!(restored.segment_spec(), SegmentSpec::default());
        let mut restored = restored;
        restored.declare_segments(spec());
        check(&restored, &events);
    }
}

/// A live view within a segment, worked out from the model: the segment's entries with their
/// ranks within it and global ranks, cut as the view cuts.
fn model_view(board: &Board, segment: &SegmentKey<'_>, events: &Events, view: &View) -> Vec<ViewEntry> {
    let within: Vec<ViewEntry> = model(board, segment, events)
        .iter()
        .enumerate()
        .map(|(i, (global, e))| ViewEntry {
            rank: i as u64 + 1,
            player_id: PlayerId::new(e.player).unwrap(),
            value: e.value,
            achieved_at: e.achieved_at,
            display_name: None,
            country: e.info.country.filter(|_| !e.info.anonymous).map(Into::into),
            metadata: None,
            global_rank: Some(*global),
        })
        .collect();
    let at = |p: &PlayerId| within.iter().position(|e| e.player_id == *p);
    match view {
        View::Top { limit } => within.iter().take(usize::from(*limit)).cloned().collect(),
        View::Around { player, radius } => match at(player) {
            None => Vec::new(),
            Some(i) => {
                let r = usize::from(*radius);
                within[i.saturating_sub(r)..=(i + r).min(within.len() - 1)].to_vec()
            }
        },
        View::Player { player } => at(player).map(|i| vec![within[i].clone()]).unwrap_or_default(),
        View::In { .. } => unreachable!("views are within one segment at most"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// A live view within a segment reads what the model gives at every version, and the delta
    /// between any two of its states brings the older to the newer through the core's apply;
    /// its text parses back to the same view.
    #[test]
    fn live_views_within_a_segment_follow_the_model(
        mode in mode_strategy(),
        ops in proptest::collection::vec(op_strategy(), 1..50),
        segment in 0usize..6,
        inner in prop_oneof![
            (1u16..6).prop_map(|limit| View::Top { limit }),
            (0u16..24, 0u16..3).prop_map(|(p, radius)| View::Around { player: PlayerId::new(&player(p)).unwrap(), radius }),
            (0u16..24).prop_map(|p| View::Player { player: PlayerId::new(&player(p)).unwrap() }),
        ],
    ) {
        let mut board = Board::new(BoardRules::new(mode));
        board.declare_segments(spec());
        let key = segments().nth(segment).unwrap();
        let view = inner.clone().within(Segment { dimension: key.dimension.into(), value: key.value.into() });
        prop_assert_eq!(view.to_string().parse::<View>().unwrap(), view.clone());
        let mut states = vec![ViewState::read(&board, &view, "all_time")];
        let (mut serial, mut events) = (0, Events::new());
        for op in &ops {
            let version = board.version();
            run(&mut board, op, &mut serial, &mut events);
            if board.version() == version {
                continue;
            }
            let state = ViewState::read(&board, &view, "all_time");
            prop_assert_eq!(&state.entries, &model_view(&board, &key, &events, &inner), "{} at {}", view, board.version());
            // Only the current version is held for a segment.
            prop_assert!(ViewState::read_at(&board, &view, "all_time", version).is_err());
            prop_assert_eq!(ViewState::read_at(&board, &view, "all_time", board.version()).unwrap(), state.clone());
            states.push(state);
        }
        for (i, old) in states.iter().enumerate() {
            for new in &states[i + 1..] {
                let mut held = old.clone();
                match ViewDelta::between(old, new) {
                    Some(delta) => held.apply(&delta).unwrap(),
                    None => prop_assert_eq!(&old.entries, &new.entries),
                }
                prop_assert_eq!(&held.entries, &new.entries);
            }
        }
    }
}

/// A cursor made at a version the board no longer holds deltas for is refused.
#[test]
fn a_cursor_older_than_the_history_is_refused() {
    let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
    board.declare_segments(spec());
    let de = profile(0, false);
    for p in 0..5 {
        let event = ScoreEvent::new(&format!("e{p}"), &player(p), p as i64, 0).unwrap();
        board.apply_as(&event, de.as_ref()).unwrap();
    }
    let segment = SegmentKey {
        dimension: COUNTRY,
        value: "DE",
    };
    let page = board.segment_top(&segment, 2, None).unwrap();
    let cursor = page.next_cursor.unwrap();
    board.set_history_limit(1);
    for p in 10..13 {
        board
            .apply(&ScoreEvent::new(&format!("late{p}"), &player(p), 1, 0).unwrap())
            .unwrap();
    }
    assert!(matches!(
        board.segment_top(&segment, 2, Some(&cursor)),
        Err(QueryError::StaleCursor { .. })
    ));
}

const SMALL_CHUNKS: ChunkingOptions = ChunkingOptions {
    min_entries: 2,
    boundary_modulus: 4,
    max_entries: 6,
    lookup_target: 4,
};

fn public(entry: RankedEntry<'_>) -> RankedEntry<'_> {
    RankedEntry {
        info: entry.info.for_audience(Audience::Public),
        ..entry
    }
}

fn done<T>(step: Step<T>) -> T {
    match step {
        Step::Done(answer) => answer,
        Step::Need(parts) => panic!("needs {parts:?} though every part is held"),
    }
}

/// A snapshot's segment reads answer as the board's, in the public form a snapshot holds:
/// every page of every segment (cursors included), every player's rank and window, and the
/// whole board asked among itself. A publisher following the board cuts the same bytes.
fn check_snapshot(board: &Board, snapshot: &Snapshot) {
    let parts = AllParts::of(snapshot);
    let reader = SnapshotReader::new(&snapshot.manifest);
    let mut players: Vec<&str> = Vec::new();
    let ranked = board.ranked_range(1, board.total_players() as usize);
    players.extend(ranked.iter().map(|e| e.player));
    players.push("nobody");
    for segment in segments() {
        let counts = SegmentCounts::of(&snapshot.manifest, &segment).expect("a declared dimension");
        let within = reader.within(&counts).expect("a whole manifest");
        let mut cursor: Option<Cursor> = None;
        loop {
            let mut expected = board.segment_top(&segment, 3, cursor.as_ref()).unwrap();
            expected
                .entries
                .iter_mut()
                .for_each(|e| e.entry = public(e.entry));
            let page = done(within.top(&parts, 3, cursor.as_ref()).unwrap());
            assert_eq!(page, expected, "{segment:?}");
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        for &player in &players {
            let expected = board.segment_rank(&segment, player).map(|mut r| {
                r.within.entry = public(r.within.entry);
                r
            });
            assert_eq!(
                done(within.rank(&parts, player)),
                expected,
                "{segment:?} {player}"
            );
            let expected = board.segment_nearby(&segment, player, 2).map(|mut window| {
                window.iter_mut().for_each(|e| e.entry = public(e.entry));
                window
            });
            assert_eq!(
                done(within.nearby(&parts, player, 2)),
                expected,
                "{segment:?} {player}"
            );
        }
        let mut expected = board.segment_among(&segment, &players);
        for e in &mut expected.board.entries {
            e.info = e.info.for_audience(Audience::Public);
        }
        assert_eq!(done(within.among(&parts, &players)), expected, "{segment:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Through every change, a snapshot (cut whole, and by a publisher that follows the board)
    /// answers every segment read as the board does.
    #[test]
    fn snapshots_answer_segment_reads_as_the_board(
        mode in mode_strategy(),
        ops in proptest::collection::vec(op_strategy(), 1..60),
    ) {
        let mut board = Board::new(BoardRules::new(mode));
        board.declare_segments(spec());
        let (mut serial, mut events) = (0, Events::new());
        let mut publisher = Publisher::patching(SMALL_CHUNKS, 4096);
        for op in &ops {
            run(&mut board, op, &mut serial, &mut events);
            let published = publisher.publish(&board);
            // Segments are counted through whole manifests: never a patch.
            prop_assert!(published.patches.is_empty());
            let snapshot = Snapshot::build_with(&board, SMALL_CHUNKS);
            prop_assert_eq!(&published.manifest_bytes, &snapshot.manifest_bytes);
            check_snapshot(&board, &snapshot);
        }
    }
}

/// A board with segments past the publisher's size for whole publication is patched like any
/// board, and a reader over the patch refuses to read a segment (the driver asks the origin);
/// at or under the size, every version is whole.
#[test]
fn a_large_segment_board_is_patched_and_its_segments_are_not_read_from_patches() {
    let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
    board.declare_segments(spec());
    let (mut serial, mut events) = (0, Events::new());
    for p in 0..40u16 {
        run(
            &mut board,
            &Op::Apply {
                player: p,
                value: i64::from(p),
                at: 1,
                country: (p % 4) as u8,
                platform: (p % 3) as u8,
            },
            &mut serial,
            &mut events,
        );
    }
    let mut whole = Publisher::patching(SMALL_CHUNKS, 4096).segments_whole_up_to(40);
    let mut patched = Publisher::patching(SMALL_CHUNKS, 4096).segments_whole_up_to(39);
    patched.publish(&board);
    whole.publish(&board);
    run(
        &mut board,
        &Op::Apply {
            player: 3,
            value: 100,
            at: 2,
            country: 0,
            platform: 0,
        },
        &mut serial,
        &mut events,
    );
    assert!(whole.publish(&board).patches.is_empty());
    let publication = patched.publish(&board);
    let patch = publication.patch().expect("a small change fits a patch");
    let reader = SnapshotReader::over(&publication.manifest, &[patch]).unwrap();
    let segment = SegmentKey {
        dimension: COUNTRY,
        value: "DE",
    };
    let counts = SegmentCounts::of(&publication.manifest, &segment).expect("declared");
    assert!(
        reader.within(&counts).is_none(),
        "a patch does not restate the segment counts"
    );
    assert!(
        SnapshotReader::new(&publication.manifest)
            .within(&counts)
            .is_some()
    );
}
