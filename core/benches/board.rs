//! Board-level throughput: applying events (events/s), loading a board from aggregates (what a
//! rebuild does), writing and reading a restart checkpoint, and building a snapshot, at 1 and 10
//! million members, the live view's read and delta for `top:100` when a player enters at
//! rank 1 (the worst case: every rank below shifts), and the reads of `around:P:5` and
//! `player:P` views that a live window makes once per distinct watched player, and the board's
//! digest (a walk of every entry in rank order).
//!
//! `cargo bench -p standings-core --bench board` (`STANDINGS_BENCH_MEMBERS=1000000,10000000`
//! is the default list).

mod common;

use std::hint::black_box;

use common::{Rng, criterion, player_id};
use criterion::Throughput;
use standings_core::{
    Board, BoardRules, ScoreEvent, ScoreMode, Snapshot, Standing, View, ViewDelta, ViewState,
};

fn main() {
    let sizes = match std::env::var("STANDINGS_BENCH_MEMBERS") {
        Ok(_) => common::members_from_env(0),
        Err(_) => vec![1_000_000, 10_000_000],
    };
    for n in sizes {
        run(n);
    }
}

fn run(n: usize) {
    let mut rng = Rng(11);
    let players: Vec<String> = (0..n as u64).map(player_id).collect();
    let standings: Vec<Standing> = (0..n).map(|_| rng.skewed_standing()).collect();
    let aggregates = || players.iter().zip(&standings).map(|(p, s)| (p.as_str(), *s, ""));

    // Events for random existing players (and a few new ones), with fresh skewed values.
    let events: Vec<ScoreEvent> = (0..1 << 17)
        .map(|i| {
            let player = if i % 16 == 0 {
                player_id(n as u64 + i)
            } else {
                players[(rng.next_u64() % n as u64) as usize].clone()
            };
            let s = rng.skewed_standing();
            ScoreEvent::new(&format!("bench-{i}"), &player, s.value, s.achieved_at).expect("valid")
        })
        .collect();

    let mut c = criterion();
    {
        let mut group = c.benchmark_group(format!("load_from_aggregates/{n}"));
        group.sample_size(10);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function("highest", |b| {
            b.iter(|| {
                black_box(Board::from_aggregates(
                    BoardRules::new(ScoreMode::Highest),
                    0,
                    aggregates(),
                ))
            })
        });
        group.finish();
    }
    for mode in [ScoreMode::Highest, ScoreMode::Cumulative] {
        let mut board = Board::from_aggregates(BoardRules::new(mode), 0, aggregates()).expect("fits");
        let mut group = c.benchmark_group(format!("apply/{n}"));
        group.throughput(Throughput::Elements(1));
        let mut i = 0;
        group.bench_function(mode.as_str(), |b| {
            b.iter(|| {
                i = (i + 1) & ((1 << 17) - 1);
                black_box(board.apply(&events[i]).is_ok())
            })
        });
        group.finish();
    }
    {
        // What a restart from a checkpoint costs: writing the board's bytes at shutdown, and
        // reading them back into a board at start-up.
        let board =
            Board::from_aggregates(BoardRules::new(ScoreMode::Highest), 0, aggregates()).expect("fits");
        let mut bytes = Vec::new();
        board.write_checkpoint(&mut bytes);
        println!("checkpoint of {n}: {} bytes", bytes.len());
        let mut group = c.benchmark_group(format!("checkpoint/{n}"));
        group.sample_size(10);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function("write", |b| {
            b.iter(|| {
                let mut out = Vec::new();
                board.write_checkpoint(&mut out);
                black_box(out.len())
            })
        });
        // What a checkpoint encoded from a copy would hold the applying thread for: the copy.
        group.bench_function("clone", |b| {
            b.iter_with_large_drop(|| {
                let copy = board.clone();
                black_box(copy.total_players());
                copy
            })
        });
        group.bench_function("read", |b| {
            b.iter(|| black_box(Board::read_checkpoint(&bytes).expect("valid").total_players()))
        });
        group.finish();
    }
    {
        let board =
            Board::from_aggregates(BoardRules::new(ScoreMode::Highest), 0, aggregates()).expect("fits");
        let mut group = c.benchmark_group(format!("snapshot_build/{n}"));
        group.sample_size(10);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function("highest", |b| {
            b.iter(|| black_box(Snapshot::build(&board).rank_chunks.len()))
        });
        group.finish();
        // The board digest (`GET .../digest`, `standings rebuild`'s comparison): a walk of every
        // entry in rank order under the board's read lock, so the writer waits for it.
        let mut group = c.benchmark_group(format!("digest/{n}"));
        group.sample_size(10);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function("highest", |b| b.iter(|| black_box(board.digest())));
        group.finish();
        let snapshot = Snapshot::build(&board);
        let chunk_bytes: usize = snapshot.rank_chunks.iter().map(Vec::len).sum();
        let lookup_bytes: usize = snapshot.lookup_chunks.iter().map(Vec::len).sum();
        println!(
            "snapshot of {n}: manifest {} bytes, {} rank chunks ({chunk_bytes} bytes), {} lookup chunks ({lookup_bytes} bytes)",
            snapshot.manifest_bytes.len(),
            snapshot.rank_chunks.len(),
            snapshot.lookup_chunks.len(),
        );
    }
    {
        let mut board =
            Board::from_aggregates(BoardRules::new(ScoreMode::Highest), 0, aggregates()).expect("fits");
        let view = View::Top { limit: 100 };
        let base = ViewState::read(&board, &view, "all_time");
        let best = base.entries.first().map_or(0, |e| e.value);
        let entering =
            ScoreEvent::new("bench-live", &player_id(n as u64 + (1 << 20)), best + 1, 0).expect("valid");
        board.apply(&entering).expect("in range");
        let next = ViewState::read(&board, &view, "all_time");
        let delta = ViewDelta::between(&base, &next).expect("the top changed");
        println!(
            "top:100 delta when one player enters at rank 1: {} changed, {} left",
            delta.changed.len(),
            delta.left.len()
        );
        let mut group = c.benchmark_group(format!("live_top100/{n}"));
        group.throughput(Throughput::Elements(1));
        group.bench_function("read", |b| {
            b.iter(|| black_box(ViewState::read(&board, &view, "all_time").entries.len()))
        });
        group.bench_function("between_all_shifted", |b| {
            b.iter(|| black_box(ViewDelta::between(&base, &next).map(|d| d.changed.len())))
        });
        group.finish();
        // The views a live window reads once per distinct watched player: their cost times the
        // distinct views is the window's work.
        let mut group = c.benchmark_group(format!("live_views/{n}"));
        group.throughput(Throughput::Elements(1));
        let watched: Vec<View> = (0..1024u64)
            .map(|i| View::Around {
                player: standings_core::PlayerId::new(&player_id(i * (n as u64 / 1024))).expect("valid"),
                radius: 5,
            })
            .collect();
        let mut next_view = 0;
        group.bench_function("read_around_5", |b| {
            b.iter(|| {
                next_view = (next_view + 1) % watched.len();
                black_box(
                    ViewState::read(&board, &watched[next_view], "all_time")
                        .entries
                        .len(),
                )
            })
        });
        let players: Vec<View> = watched
            .iter()
            .map(|v| match v {
                View::Around { player, .. } => View::Player {
                    player: player.clone(),
                },
                other => other.clone(),
            })
            .collect();
        group.bench_function("read_player", |b| {
            b.iter(|| {
                next_view = (next_view + 1) % players.len();
                black_box(
                    ViewState::read(&board, &players[next_view], "all_time")
                        .entries
                        .len(),
                )
            })
        });
        group.finish();
    }
    c.final_summary();
}
