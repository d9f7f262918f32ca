//! Model-based tests of the delta history: pages at older held versions read exactly as the
//! board did at that version, stale versions are refused, and `deltas_since` is exact.

mod common;

use std::cmp::Ordering;

use proptest::prelude::*;
use standings_core::{
    Applied, Board, BoardId, BoardRules, ClientView, Cursor, CursorBinding, DEFAULT_HISTORY_LIMIT, Delta,
    PlayerId, QueryError, ScoreEvent, ScoreMode, Snapshot, Standing,
};

use common::{Op, mode_strategy};

fn op_strategy() -> impl Strategy<Value = Op> {
    common::op_strategy(14, -8..8, 0..4)
}

/// One entry as recorded: rank, player, value, achieved_at.
type Entry = (u64, String, i64, i64);

/// The whole board at one version, read at that version through the current-version path.
#[derive(Clone, Debug, PartialEq)]
struct Recorded {
    total: u64,
    entries: Vec<Entry>,
}

fn record(board: &Board) -> Recorded {
    let page = board.top(usize::MAX, None).unwrap();
    assert_eq!(page.board_version, board.version());
    Recorded {
        total: page.total_players,
        entries: page
            .entries
            .iter()
            .map(|e| (e.rank, e.player.to_string(), e.value, e.achieved_at))
            .collect(),
    }
}

/// A deterministic xorshift stream for page sizes and picks, seeded by proptest.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Drives a board through random changes and keeps the model: every version's full order and
/// every delta, by version.
struct Run {
    board: Board,
    valid: Vec<ScoreEvent>,
    next_id: u32,
    /// `recorded[v]` is the board at version v.
    recorded: Vec<Recorded>,
    /// `deltas[v - 1]` produced version v.
    deltas: Vec<Delta>,
}

impl Run {
    fn new(mode: ScoreMode, history_limit: usize) -> Run {
        let mut board = Board::new(BoardRules::new(mode));
        board.set_history_limit(history_limit);
        let recorded = vec![record(&board)];
        Run {
            board,
            valid: Vec::new(),
            next_id: 0,
            recorded,
            deltas: Vec::new(),
        }
    }

    /// Applies one op; returns the delta when the board changed.
    fn step(&mut self, op: &Op) -> Option<Delta> {
        let applied = match *op {
            Op::Apply { player, value, at } => {
                self.next_id += 1;
                let e = ScoreEvent::new(
                    &format!("e{:04}", self.next_id),
                    &format!("p{player:02}"),
                    value,
                    at,
                )
                .unwrap();
                self.valid.push(e.clone());
                self.board.apply(&e).unwrap()
            }
            Op::Invalidate { pick } => {
                if self.valid.is_empty() {
                    return None;
                }
                let gone = self.valid.remove(pick % self.valid.len());
                self.board.recompute_player(&gone.player, &self.valid).unwrap()
            }
        };
        match applied {
            Applied::Unchanged => None,
            Applied::Changed(delta) => {
                assert_eq!(delta.board_version, self.recorded.len() as u64);
                self.recorded.push(record(&self.board));
                self.deltas.push(delta.clone());
                Some(delta)
            }
        }
    }
}

/// Pages through the whole board at version `v`, from the top, with random page sizes, checking
/// every page's version, total and cursor; returns the concatenated entries.
fn page_through(board: &Board, v: u64, total: u64, rng: &mut Rng) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut page = board.top_at(v, 1 + rng.below(5) as usize).unwrap();
    loop {
        assert_eq!(page.board_version, v, "every page comes from the asked version");
        assert_eq!(page.total_players, total);
        out.extend(
            page.entries
                .iter()
                .map(|e| (e.rank, e.player.to_string(), e.value, e.achieved_at)),
        );
        let Some(cursor) = page.next_cursor else {
            break;
        };
        assert_eq!(
            cursor.board_version, v,
            "the next cursor stays at the asked version"
        );
        assert!(
            (out.len() as u64) < total,
            "a cursor only when more entries follow"
        );
        // Through the encoding, as a client would send it back.
        let binding = CursorBinding::of(&BoardId::new("g", "m", "s", "global").unwrap(), "all_time");
        let cursor = Cursor::decode(&cursor.encode(binding), binding).unwrap();
        page = board.top(1 + rng.below(5) as usize, Some(&cursor)).unwrap();
    }
    out
}

/// Checks everything the board answers about version `v`, which must be held, against the model.
fn check_held_version(run: &Run, v: u64, rng: &mut Rng) {
    let board = &run.board;
    let want = &run.recorded[v as usize];
    assert_eq!(
        page_through(board, v, want.total, rng),
        want.entries,
        "paging version {v} at version {}",
        board.version()
    );
    // Starting after a recorded entry gives the rest of that version's order.
    if !want.entries.is_empty() {
        let at = rng.below(want.entries.len() as u64) as usize;
        let (_, player, value, achieved_at) = want.entries[at].clone();
        let cursor = Cursor {
            board_version: v,
            value,
            achieved_at,
            player,
        };
        let page = board.top(usize::MAX, Some(&cursor)).unwrap();
        let got: Vec<Entry> = page
            .entries
            .iter()
            .map(|e| (e.rank, e.player.to_string(), e.value, e.achieved_at))
            .collect();
        assert_eq!(
            got,
            want.entries[at + 1..],
            "after rank {} at version {v}",
            at + 1
        );
        assert_eq!(page.next_cursor, None);
    }
    // Starting after any position, an entry or not, gives exactly the entries after it.
    let probe = (
        Standing {
            value: rng.below(18) as i64 - 9,
            achieved_at: rng.below(5) as i64 - 1,
        },
        format!("p{:02}", rng.below(15)),
    );
    let cursor = Cursor {
        board_version: v,
        value: probe.0.value,
        achieved_at: probe.0.achieved_at,
        player: probe.1.clone(),
    };
    let rules = board.rules();
    let after: Vec<&Entry> = want
        .entries
        .iter()
        .filter(|e| {
            let s = Standing {
                value: e.2,
                achieved_at: e.3,
            };
            rules.compare((&s, &e.1), (&probe.0, &probe.1)) == Ordering::Greater
        })
        .collect();
    let limit = 1 + rng.below(4) as usize;
    let page = board.top(limit, Some(&cursor)).unwrap();
    let got: Vec<Entry> = page
        .entries
        .iter()
        .map(|e| (e.rank, e.player.to_string(), e.value, e.achieved_at))
        .collect();
    let expected: Vec<Entry> = after.iter().take(limit).map(|e| (*e).clone()).collect();
    assert_eq!(got, expected, "after {probe:?} at version {v}");
    assert_eq!(page.total_players, want.total);
    // The deltas since `v` are exactly the ones that produced the later versions.
    let since: Vec<&Delta> = board.deltas_since(v).unwrap().collect();
    assert_eq!(since, run.deltas[v as usize..].iter().collect::<Vec<_>>());
}

/// Checks that versions the board does not hold are refused as stale, by `top`, `top_at` and
/// `deltas_since`.
fn check_not_held(board: &Board, v: u64) {
    let stale = QueryError::StaleCursor {
        cursor_version: v,
        oldest_held: board.oldest_held_version(),
        board_version: board.version(),
    };
    assert_eq!(board.top_at(v, 3).unwrap_err(), stale);
    let cursor = Cursor {
        board_version: v,
        value: 0,
        achieved_at: 0,
        player: "p00".into(),
    };
    assert_eq!(board.top(3, Some(&cursor)).unwrap_err(), stale);
    assert!(board.deltas_since(v).is_none());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// After every change, random held older versions page exactly as recorded at that version
    /// (same entries, ranks and total, no skip, no repeat), and older ones are stale.
    #[test]
    fn held_versions_page_exactly_as_recorded(
        mode in mode_strategy(),
        history_limit in 0usize..12,
        ops in prop::collection::vec(op_strategy(), 1..120),
        seed in any::<u64>(),
    ) {
        let mut rng = Rng(seed | 1);
        let mut run = Run::new(mode, history_limit);
        for op in &ops {
            if run.step(op).is_none() {
                continue;
            }
            let version = run.board.version();
            let oldest = version.saturating_sub(history_limit as u64);
            prop_assert_eq!(run.board.oldest_held_version(), oldest);
            // The oldest held, the current, and one at random in between.
            let mid = oldest + rng.below(version - oldest + 1);
            for v in [oldest, mid, version] {
                check_held_version(&run, v, &mut rng);
            }
            if oldest > 0 {
                check_not_held(&run.board, oldest - 1);
                check_not_held(&run.board, rng.below(oldest));
            }
            check_not_held(&run.board, version + 1);
        }
        // At the end, every held version pages as recorded.
        let version = run.board.version();
        for v in run.board.oldest_held_version()..=version {
            check_held_version(&run, v, &mut rng);
        }
    }

    /// A client view that follows the origin by deltas holds the same history and answers
    /// every held older version with the same pages as the origin.
    #[test]
    fn client_view_keeps_history_like_the_origin(
        mode in mode_strategy(),
        history_limit in 1usize..10,
        ops in prop::collection::vec(op_strategy(), 1..80),
        seed in any::<u64>(),
    ) {
        let mut rng = Rng(seed | 1);
        let mut run = Run::new(mode, history_limit);
        let mut view = ClientView::new(Board::new(BoardRules::new(mode)));
        view.set_history_limit(history_limit);
        for op in &ops {
            let Some(delta) = run.step(op) else { continue };
            view.apply(&delta).unwrap();
            let (origin, mirror) = (&run.board, view.board());
            prop_assert_eq!(mirror.oldest_held_version(), origin.oldest_held_version());
            let oldest = origin.oldest_held_version();
            prop_assert_eq!(
                mirror.deltas_since(oldest).unwrap().collect::<Vec<_>>(),
                origin.deltas_since(oldest).unwrap().collect::<Vec<_>>()
            );
            for v in oldest..=origin.version() {
                let want = &run.recorded[v as usize];
                prop_assert_eq!(&page_through(mirror, v, want.total, &mut rng), &want.entries);
            }
            if oldest > 0 {
                check_not_held(mirror, oldest - 1);
            }
        }
    }
}

/// The limit bounds the history, dropping the oldest first; 0 keeps none; a rebuilt or
/// restored board starts with an empty history; `deltas_since` is exact at the edges.
#[test]
fn history_limit_bounds_what_is_held() {
    let mut run = Run::new(ScoreMode::Highest, DEFAULT_HISTORY_LIMIT);
    assert_eq!(run.board.history_limit(), DEFAULT_HISTORY_LIMIT);
    assert_eq!(run.board.oldest_held_version(), 0);
    assert_eq!(run.board.deltas_since(0).unwrap().len(), 0);
    for i in 0..30u8 {
        run.step(&Op::Apply {
            player: i % 7,
            value: i64::from(i),
            at: 0,
        });
    }
    let board = &mut run.board;
    assert_eq!(board.version(), 30);
    assert_eq!(
        board.oldest_held_version(),
        0,
        "30 deltas fit in the default history"
    );
    assert_eq!(board.deltas_since(0).unwrap().len(), 30);
    assert_eq!(board.deltas_since(30).unwrap().len(), 0);
    assert!(board.deltas_since(31).is_none());

    board.set_history_limit(10);
    assert_eq!(board.oldest_held_version(), 20);
    let since: Vec<u64> = board.deltas_since(20).unwrap().map(|d| d.board_version).collect();
    assert_eq!(since, (21..=30).collect::<Vec<_>>(), "the newest ten are kept");
    assert!(board.deltas_since(19).is_none());
    assert_eq!(board.top_at(20, 100).unwrap().entries.len(), 7);

    board
        .apply(&ScoreEvent::new("late", "p-new", 99, 0).unwrap())
        .unwrap();
    assert_eq!(
        board.oldest_held_version(),
        21,
        "the oldest falls off at the limit"
    );
    assert_eq!(board.deltas_since(21).unwrap().len(), 10);

    board.set_history_limit(0);
    assert_eq!(board.oldest_held_version(), 31);
    assert_eq!(board.deltas_since(31).unwrap().len(), 0);
    board
        .apply(&ScoreEvent::new("later", "p-new", 100, 0).unwrap())
        .unwrap();
    assert_eq!(
        board.oldest_held_version(),
        32,
        "no history: only the current version"
    );
    check_not_held(board, 31);
    assert_eq!(board.top_at(32, 100).unwrap().entries.len(), 8);

    let rebuilt = Board::from_aggregates(
        BoardRules::new(ScoreMode::Highest),
        32,
        [(
            "p-ava",
            Standing {
                value: 1,
                achieved_at: 0,
            },
            "e1",
        )],
    )
    .unwrap();
    assert_eq!(rebuilt.oldest_held_version(), 32);
    assert_eq!(rebuilt.history_limit(), DEFAULT_HISTORY_LIMIT);
    check_not_held(&rebuilt, 31);

    let snapshot = Snapshot::build(board);
    let chunks: Vec<_> = snapshot
        .rank_chunks
        .iter()
        .zip(&snapshot.manifest.rank_chunks)
        .map(|(bytes, r)| standings_core::RankChunk::decode(bytes, &r.hash).unwrap())
        .collect();
    let restored = Snapshot::restore(&snapshot.manifest, &chunks).unwrap();
    assert_eq!(restored.oldest_held_version(), restored.version());
}

/// A player who leaves and comes back with the same standing is still paged at their old rank,
/// and a page of limit 0 is empty with no cursor, as at the current version.
#[test]
fn a_round_trip_and_an_empty_page_read_as_at_the_version() {
    let mut run = Run::new(ScoreMode::Highest, 8);
    for (player, value) in [(0, 5), (1, 4), (2, 3)] {
        run.step(&Op::Apply { player, value, at: 0 });
    }
    let ben = PlayerId::new("p01").unwrap();
    let ben_events: Vec<ScoreEvent> = run.valid.iter().filter(|e| e.player == ben).cloned().collect();
    run.board.recompute_player(&ben, []).unwrap();
    run.board.recompute_player(&ben, &ben_events).unwrap();
    assert_eq!(run.board.version(), 5);
    let page = run.board.top_at(3, 10).unwrap();
    let got: Vec<(u64, &str)> = page.entries.iter().map(|e| (e.rank, e.player)).collect();
    assert_eq!(got, [(1, "p00"), (2, "p01"), (3, "p02")]);
    let at_4 = run.board.top_at(4, 10).unwrap();
    assert_eq!(at_4.total_players, 2, "Ben was unranked at version 4");
    let empty = run.board.top_at(3, 0).unwrap();
    assert_eq!(
        (empty.entries.len(), empty.total_players, empty.next_cursor),
        (0, 3, None)
    );
}

/// The memory the history documents per delta: 112 bytes inline on 64-bit targets (the
/// extras before and after are two shared pointers each).
#[cfg(target_pointer_width = "64")]
#[test]
fn a_held_delta_is_112_bytes_inline() {
    assert_eq!(std::mem::size_of::<Delta>(), 112);
}
