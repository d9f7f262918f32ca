//! The canonical board and the core scenarios, through the public API.

use standings_core::{
    Applied, ApplyError, Board, BoardId, BoardRules, ClientView, Cursor, CursorBinding, DecodeError, Delta,
    DeltaError, PlayerId, QueryError, ScoreEvent, ScoreMode, Snapshot, Standing,
};

const T0: i64 = 1_760_349_600_000; // 2025-10-13T10:00:00Z

fn event(id: &str, player: &str, value: i64, achieved_at: i64) -> ScoreEvent {
    ScoreEvent::new(id, player, value, achieved_at).unwrap()
}

/// Ava 9,800; Ben 9,500 (earlier); Chloe 9,500 (later); Dev 9,100; Eli 8,700.
fn canonical_events() -> Vec<ScoreEvent> {
    vec![
        event("evt-1", "p-ava", 9_800, T0),
        event("evt-2", "p-ben", 9_500, T0 + 1_000),
        event("evt-3", "p-chloe", 9_500, T0 + 2_000),
        event("evt-4", "p-dev", 9_100, T0 + 3_000),
        event("evt-5", "p-eli", 8_700, T0 + 4_000),
    ]
}

fn canonical_board() -> Board {
    let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
    for e in canonical_events() {
        assert!(matches!(board.apply(&e).unwrap(), Applied::Changed(_)));
    }
    board
}

fn order(board: &Board) -> Vec<(u64, String, i64)> {
    board
        .top(100, None)
        .unwrap()
        .entries
        .iter()
        .map(|e| (e.rank, e.player.to_string(), e.value))
        .collect()
}

/// A page with its borrowed ids copied, so it outlives changes to the board.
type OwnedPage = (u64, u64, Vec<(u64, String, i64, i64)>, Option<Cursor>);

fn owned(page: standings_core::Page<'_>) -> OwnedPage {
    let entries = page
        .entries
        .iter()
        .map(|e| (e.rank, e.player.to_string(), e.value, e.achieved_at))
        .collect();
    (page.board_version, page.total_players, entries, page.next_cursor)
}

fn players(board: &Board) -> Vec<String> {
    order(board).into_iter().map(|(_, p, _)| p).collect()
}

/// Equal values are broken by the earlier time: Ben above Chloe; ranks are unique.
#[test]
fn canonical_board_ranks_in_total_order() {
    let board = canonical_board();
    assert_eq!(
        order(&board),
        vec![
            (1, "p-ava".into(), 9_800),
            (2, "p-ben".into(), 9_500),
            (3, "p-chloe".into(), 9_500),
            (4, "p-dev".into(), 9_100),
            (5, "p-eli".into(), 8_700),
        ]
    );
    assert_eq!(board.version(), 5);
    let chloe = board.player_rank("p-chloe").unwrap();
    assert_eq!(chloe.entry.rank, 3);
    assert_eq!(chloe.competition_rank, 2, "Ben and Chloe share 9,500");
    assert_eq!(chloe.dense_rank, 2);
    let dev = board.player_rank("p-dev").unwrap();
    assert_eq!((dev.entry.rank, dev.competition_rank, dev.dense_rank), (4, 4, 3));
    assert_eq!(
        dev.percentile, 40.0,
        "Dev's 9,100 is no better than 2 of 5 values"
    );
    assert_eq!(board.player_rank("p-ava").unwrap().percentile, 100.0);
    assert!(board.player_rank("p-nobody").is_none());
}

/// The same order comes out whatever order the events arrive in, with the same digest.
#[test]
fn arrival_order_does_not_matter() {
    let reference = canonical_board();
    let mut events = canonical_events();
    events.reverse();
    let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
    for e in &events {
        board.apply(e).unwrap();
    }
    assert_eq!(order(&board), order(&reference));
    assert_eq!(board.digest(), reference.digest());
}

/// Dev's verified 9,700 moves him to #2; a late, lower 9,200 is a no-op that keeps the version.
#[test]
fn a_better_score_moves_up_and_a_lower_late_one_is_a_no_op() {
    let mut board = canonical_board();
    let applied = board
        .apply(&event("evt-101", "p-dev", 9_700, T0 + 10_000))
        .unwrap();
    let Applied::Changed(delta) = applied else {
        panic!("expected a change")
    };
    assert_eq!(delta.board_version, 6);
    assert_eq!(
        delta.before,
        Some(Standing {
            value: 9_100,
            achieved_at: T0 + 3_000
        })
    );
    assert_eq!(
        delta.after,
        Some(Standing {
            value: 9_700,
            achieved_at: T0 + 10_000
        })
    );
    assert_eq!(board.player_rank("p-dev").unwrap().entry.rank, 2);
    assert_eq!(players(&board), ["p-ava", "p-dev", "p-ben", "p-chloe", "p-eli"]);

    let late = board
        .apply(&event("evt-102", "p-dev", 9_200, T0 + 5_000))
        .unwrap();
    assert_eq!(late, Applied::Unchanged);
    assert_eq!(board.version(), 6, "a no-op never bumps the version");
    assert_eq!(board.player_rank("p-dev").unwrap().entry.value, 9_700);
}

/// Nearby Chloe with radius 1 is Ben #2, Chloe #3, Dev #4; the window clips at the ends.
#[test]
fn nearby_is_a_window_of_ranks() {
    let board = canonical_board();
    let window: Vec<_> = board
        .nearby("p-chloe", 1)
        .unwrap()
        .iter()
        .map(|e| (e.rank, e.player))
        .collect();
    assert_eq!(window, [(2, "p-ben"), (3, "p-chloe"), (4, "p-dev")]);
    let top: Vec<_> = board.nearby("p-ava", 2).unwrap().iter().map(|e| e.rank).collect();
    assert_eq!(top, [1, 2, 3]);
    let bottom: Vec<_> = board.nearby("p-eli", 3).unwrap().iter().map(|e| e.rank).collect();
    assert_eq!(bottom, [2, 3, 4, 5]);
    assert!(board.nearby("p-nobody", 1).is_none());
}

/// Ava's friends Ben, Dev and Eli rank #1, #2, #3 among themselves; strangers stay unranked.
#[test]
fn friends_rank_among_themselves() {
    let board = canonical_board();
    let friends = board.rank_among(&["p-eli", "p-dev", "p-ben", "p-zoe", "p-ben"]);
    let ranked: Vec<_> = friends
        .entries
        .iter()
        .map(|e| (e.rank, e.global_rank, e.player))
        .collect();
    assert_eq!(ranked, [(1, 2, "p-ben"), (2, 4, "p-dev"), (3, 5, "p-eli")]);
    assert_eq!(
        friends.unranked,
        ["p-zoe"],
        "no made-up rank for a player with no score"
    );
    assert_eq!(friends.board_version, 5);
}

/// Invalidating Ava's only event leaves her unranked; invalidating a best restores the earlier.
#[test]
fn invalidation_recomputes_from_the_remaining_events() {
    let mut board = canonical_board();
    let ava = PlayerId::new("p-ava").unwrap();
    let applied = board.recompute_player(&ava, []).unwrap();
    let Applied::Changed(delta) = applied else {
        panic!("expected a change")
    };
    assert_eq!(delta.after, None);
    assert!(board.player_rank("p-ava").is_none());
    assert_eq!(players(&board), ["p-ben", "p-chloe", "p-dev", "p-eli"]);

    let dev_events = [
        event("evt-4", "p-dev", 9_100, T0 + 3_000),
        event("evt-101", "p-dev", 9_700, T0 + 10_000),
    ];
    board.apply(&dev_events[1]).unwrap();
    assert_eq!(board.player_rank("p-dev").unwrap().entry.rank, 1);
    let dev = PlayerId::new("p-dev").unwrap();
    // evt-101 is invalidated: only evt-4 remains valid.
    board.recompute_player(&dev, &dev_events[..1]).unwrap();
    let dev_rank = board.player_rank("p-dev").unwrap();
    assert_eq!((dev_rank.entry.value, dev_rank.entry.rank), (9_100, 3));
    // Recomputing to the same aggregate is a no-op.
    let version = board.version();
    assert_eq!(
        board.recompute_player(&dev, &dev_events[..1]).unwrap(),
        Applied::Unchanged
    );
    assert_eq!(board.version(), version);
}

/// Cumulative boards sum: +100 then +50 is 150, timed at the latest event.
#[test]
fn cumulative_sums_events() {
    let mut board = Board::new(BoardRules::new(ScoreMode::Cumulative));
    board.apply(&event("c1", "p-ava", 100, T0 + 5_000)).unwrap();
    board.apply(&event("c2", "p-ava", 50, T0)).unwrap();
    let ava = board.player_rank("p-ava").unwrap();
    assert_eq!((ava.entry.value, ava.entry.achieved_at), (150, T0 + 5_000));
    // Invalidating one event drops the total by exactly that event.
    let remaining = [event("c2", "p-ava", 50, T0)];
    board
        .recompute_player(&PlayerId::new("p-ava").unwrap(), &remaining)
        .unwrap();
    assert_eq!(board.player_rank("p-ava").unwrap().entry.value, 50);
    // A total that would overflow is refused and changes nothing.
    let version = board.version();
    board.apply(&event("c3", "p-ava", i64::MAX, T0)).unwrap_err();
    assert_eq!(board.version(), version);
    assert_eq!(board.player_rank("p-ava").unwrap().entry.value, 50);
}

/// A cumulative recompute sums the set exactly: a total that fits is reached whatever the
/// order (a running sum of `MAX, +5, -10` would overflow on the way), and one that does not fit
/// is refused and changes nothing.
#[test]
fn cumulative_recompute_sums_the_set_exactly() {
    let mut board = Board::new(BoardRules::new(ScoreMode::Cumulative));
    board.apply(&event("c1", "p-ava", i64::MAX, T0)).unwrap();
    let ava = PlayerId::new("p-ava").unwrap();
    let remaining = [
        event("c1", "p-ava", i64::MAX, T0),
        event("c3", "p-ava", 5, T0 + 2_000),
        event("c4", "p-ava", -10, T0 + 1_000),
    ];
    board.recompute_player(&ava, &remaining).unwrap();
    let standing = board.player_rank("p-ava").unwrap().entry;
    assert_eq!((standing.value, standing.achieved_at), (i64::MAX - 5, T0 + 2_000));
    let version = board.version();
    assert_eq!(
        board.recompute_player(&ava, &remaining[..2]).unwrap_err(),
        ApplyError::ValueOverflow
    );
    assert_eq!(board.version(), version);
    assert_eq!(board.player_rank("p-ava").unwrap().entry.value, i64::MAX - 5);
    let lowest = [event("c5", "p-ava", i64::MIN, T0), event("c6", "p-ava", -1, T0)];
    assert_eq!(
        board.recompute_player(&ava, &lowest).unwrap_err(),
        ApplyError::ValueOverflow
    );
}

/// Fastest ranks 61,200 ms above 64,000 ms, and a later 62,000 ms does not replace 61,200.
#[test]
fn fastest_ranks_ascending_and_keeps_the_best_time() {
    let mut board = Board::new(BoardRules::new(ScoreMode::Fastest));
    board.apply(&event("f1", "p-ava", 64_000, T0)).unwrap();
    board.apply(&event("f2", "p-ben", 61_200, T0 + 1_000)).unwrap();
    assert_eq!(players(&board), ["p-ben", "p-ava"]);
    assert_eq!(
        board.apply(&event("f3", "p-ben", 62_000, T0 + 2_000)).unwrap(),
        Applied::Unchanged
    );
    assert_eq!(board.player_rank("p-ben").unwrap().entry.value, 61_200);
    // An equal time achieved earlier takes over the tie-break time.
    board.apply(&event("f4", "p-ben", 61_200, T0 - 1_000)).unwrap();
    assert_eq!(board.player_rank("p-ben").unwrap().entry.achieved_at, T0 - 1_000);
    // Extreme values do not overflow or flip the order.
    board.apply(&event("f5", "p-min", i64::MIN, T0)).unwrap();
    board.apply(&event("f6", "p-max", i64::MAX, T0)).unwrap();
    assert_eq!(players(&board), ["p-min", "p-ben", "p-ava", "p-max"]);
}

/// Highest keeps an equal value achieved earlier; extremes order correctly.
#[test]
fn highest_prefers_the_earlier_equal_value_and_handles_extremes() {
    let mut board = Board::new(BoardRules::new(ScoreMode::Highest));
    board.apply(&event("h1", "p-ava", 500, T0 + 10)).unwrap();
    assert!(matches!(
        board.apply(&event("h2", "p-ava", 500, T0)).unwrap(),
        Applied::Changed(_)
    ));
    assert_eq!(board.player_rank("p-ava").unwrap().entry.achieved_at, T0);
    assert_eq!(
        board.apply(&event("h3", "p-ava", 500, T0 + 5)).unwrap(),
        Applied::Unchanged
    );
    board.apply(&event("h4", "p-min", i64::MIN, T0)).unwrap();
    board.apply(&event("h5", "p-max", i64::MAX, T0)).unwrap();
    board.apply(&event("h6", "p-neg", -1, T0)).unwrap();
    assert_eq!(players(&board), ["p-max", "p-ava", "p-neg", "p-min"]);
}

/// Latest keeps the value with the latest time whatever the arrival order; equal times go to
/// the greater event id.
#[test]
fn latest_follows_achieved_at_not_arrival() {
    let mut board = Board::new(BoardRules::new(ScoreMode::Latest));
    board.apply(&event("l2", "p-ava", 20, T0 + 2_000)).unwrap();
    assert_eq!(
        board.apply(&event("l1", "p-ava", 10, T0 + 1_000)).unwrap(),
        Applied::Unchanged
    );
    assert_eq!(board.player_rank("p-ava").unwrap().entry.value, 20);
    board.apply(&event("l3a", "p-ava", 5, T0 + 3_000)).unwrap();
    board.apply(&event("l3b", "p-ava", 7, T0 + 3_000)).unwrap();
    assert_eq!(board.player_rank("p-ava").unwrap().entry.value, 7, "l3b > l3a");
    assert_eq!(
        board.apply(&event("l3", "p-ava", 9, T0 + 3_000)).unwrap(),
        Applied::Unchanged,
        "l3 < l3b"
    );
    // The reverse arrival order gives the same aggregate.
    let mut other = Board::new(BoardRules::new(ScoreMode::Latest));
    for id in ["l3", "l3b", "l3a", "l1", "l2"] {
        let (value, at) = match id {
            "l1" => (10, T0 + 1_000),
            "l2" => (20, T0 + 2_000),
            "l3a" => (5, T0 + 3_000),
            "l3b" => (7, T0 + 3_000),
            _ => (9, T0 + 3_000),
        };
        other.apply(&event(id, "p-ava", value, at)).unwrap();
    }
    assert_eq!(other.digest(), board.digest());
}

/// A value outside the board's range is refused with the range named, and changes nothing.
#[test]
fn out_of_range_values_are_refused() {
    let mut board = Board::new(BoardRules::with_range(ScoreMode::Highest, 0, 100_000_000).unwrap());
    let err = board.apply(&event("x1", "p-ava", -1, T0)).unwrap_err();
    assert_eq!(
        err,
        ApplyError::ValueOutOfRange {
            value: -1,
            min: 0,
            max: 100_000_000
        }
    );
    assert_eq!(board.version(), 0);
    assert_eq!(board.total_players(), 0);
    assert!(BoardRules::with_range(ScoreMode::Highest, 5, 4).is_none());
}

/// Bad ids get specific errors.
#[test]
fn ids_are_validated() {
    assert!(PlayerId::new("").is_err());
    assert!(PlayerId::new(&"x".repeat(129)).is_err());
    assert!(PlayerId::new(&"x".repeat(128)).is_ok());
    assert!(PlayerId::new("bad\u{7}id").is_err());
    assert!(PlayerId::new("émile").is_ok());
    assert!(ScoreEvent::new("", "p-ava", 1, T0).is_err());
}

/// Pages follow a cursor without skipping or repeating; a cursor from an older held version
/// still pages in that version's order, and one the board no longer holds is refused as stale.
#[test]
fn cursors_page_within_one_version() {
    let mut board = canonical_board();
    let first = board.top(2, None).unwrap();
    assert_eq!(
        first.entries.iter().map(|e| e.player).collect::<Vec<_>>(),
        ["p-ava", "p-ben"]
    );
    let cursor = first.next_cursor.clone().unwrap();
    let binding = CursorBinding::of(
        &BoardId::new("arena-clash", "solo", "S7", "global").unwrap(),
        "all_time",
    );
    let cursor = Cursor::decode(&cursor.encode(binding), binding).unwrap();
    let second = owned(board.top(2, Some(&cursor)).unwrap());
    assert_eq!(second.2.iter().map(|e| e.0).collect::<Vec<_>>(), [3, 4]);
    let third = owned(board.top(2, second.3.as_ref()).unwrap());
    assert_eq!(
        third.2.iter().map(|e| e.1.as_str()).collect::<Vec<_>>(),
        ["p-eli"]
    );
    assert!(third.3.is_none());

    // Fay jumps to the top and Chloe leaves: version 5's order still pages as it was.
    board.apply(&event("evt-200", "p-fay", 9_900, T0)).unwrap();
    board
        .recompute_player(&PlayerId::new("p-chloe").unwrap(), [])
        .unwrap();
    assert_eq!(players(&board), ["p-fay", "p-ava", "p-ben", "p-dev", "p-eli"]);
    let old_second = owned(board.top(2, Some(&cursor)).unwrap());
    assert_eq!(
        old_second, second,
        "the same page as when the board was at version 5"
    );
    assert_eq!((old_second.0, old_second.1), (5, 5));
    assert_eq!(old_second.3.as_ref().unwrap().board_version, 5);
    assert_eq!(owned(board.top(2, old_second.3.as_ref()).unwrap()), third);

    board.set_history_limit(1);
    assert_eq!(board.oldest_held_version(), 6);
    let stale = board.top(2, Some(&cursor)).unwrap_err();
    assert_eq!(
        stale,
        QueryError::StaleCursor {
            cursor_version: 5,
            oldest_held: 6,
            board_version: 7
        }
    );
    assert_eq!(
        stale.to_string(),
        "the cursor was made at board_version 5; this board holds versions 6 to 7 only"
    );
    assert!(matches!(
        Cursor::decode(&[9, 1, 2], binding),
        Err(DecodeError::UnsupportedFormat { .. })
    ));
    assert!(Cursor::decode(&[], binding).is_err());
    assert!(Cursor::decode(&[2, 0xff], binding).is_err());
}

/// A cursor is bound to the board and period it was made for: sent to another board, or to
/// another period of the same board, it is refused before it is read; the format without a
/// binding is refused too.
#[test]
fn a_cursor_pages_only_the_board_and_period_it_was_made_for() {
    let board = canonical_board();
    let cursor = board.top(2, None).unwrap().next_cursor.unwrap();
    let id = |scope| BoardId::new("arena-clash", "solo", "S7", scope).unwrap();
    let made_for = CursorBinding::of(&id("global"), "2026-10-13");
    let bytes = cursor.encode(made_for);
    assert_eq!(Cursor::decode(&bytes, made_for), Ok(cursor.clone()));
    for other in [
        CursorBinding::of(&id("coins"), "2026-10-13"),
        CursorBinding::of(&id("global"), "2026-10-14"),
        CursorBinding::of(&id("global"), "all_time"),
        CursorBinding::of(
            &BoardId::new("other-game", "solo", "S7", "global").unwrap(),
            "2026-10-13",
        ),
    ] {
        assert_ne!(other, made_for);
        assert_eq!(Cursor::decode(&bytes, other), Err(DecodeError::OtherBoard));
    }
    // Parts do not run together: ("ab", "c") and ("a", "bc") are other boards.
    assert_ne!(
        CursorBinding::of(&BoardId::new("ab", "c", "s", "x").unwrap(), "k"),
        CursorBinding::of(&BoardId::new("a", "bc", "s", "x").unwrap(), "k")
    );
    let mut unbound = vec![1];
    unbound.extend_from_slice(&bytes[9..]);
    assert_eq!(
        Cursor::decode(&unbound, made_for),
        Err(DecodeError::UnsupportedFormat { found: Some(1) })
    );
    assert_eq!(Cursor::decode(&bytes[..5], made_for), Err(DecodeError::Malformed));
}

/// A client view applies a chain of deltas and refuses one that does not follow its version.
#[test]
fn client_view_follows_deltas_and_refuses_gaps() {
    let mut origin = canonical_board();
    let snapshot = Snapshot::build(&origin);
    let chunks: Vec<_> = snapshot
        .rank_chunks
        .iter()
        .zip(&snapshot.manifest.rank_chunks)
        .map(|(bytes, r)| standings_core::RankChunk::decode(bytes, &r.hash).unwrap())
        .collect();
    let mut view = ClientView::new(Snapshot::restore(&snapshot.manifest, &chunks).unwrap());
    assert_eq!(view.version(), 5);

    let mut deltas: Vec<Delta> = Vec::new();
    for e in [
        event("evt-101", "p-dev", 9_700, T0 + 10_000),
        event("evt-102", "p-fay", 9_900, T0 + 11_000),
        event("evt-103", "p-eli", 8_800, T0 + 12_000),
    ] {
        if let Applied::Changed(d) = origin.apply(&e).unwrap() {
            deltas.push(d);
        }
    }
    assert_eq!(
        view.apply(&deltas[1]),
        Err(DeltaError::VersionGap {
            view_version: 5,
            delta_base: 6
        })
    );
    assert_eq!(view.version(), 5, "a refused delta changes nothing");
    for d in &deltas {
        view.apply(d).unwrap();
    }
    assert_eq!(view.version(), origin.version());
    assert_eq!(view.board().digest(), origin.digest());
    assert_eq!(order(view.board()), order(&origin));
    assert!(
        view.apply(&deltas[2]).is_err(),
        "replaying an old delta is refused"
    );
}
