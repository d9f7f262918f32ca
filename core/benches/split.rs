//! A board split into score-range shards beside the whole board, in one run: rank, update,
//! top-100 and a nearby window, memory per member, and a boundary move's stall with more than a
//! million members in the moving range; then the rank interval beside the exact rank, with the
//! sketch's bytes and widths; then groups of updates applied one by one and settled with each
//! shard on a thread, whole and in 2 and 4 shards, with the CPU they take.
//!
//! `cargo bench -p standings-core --bench split` (`STANDINGS_BENCH_MEMBERS=1000000,10000000`
//! sets the sizes; 4,000,000 by default, the smallest that moves a million in one cut;
//! `STANDINGS_BENCH_PARTS=interval` runs only some of `layouts,move,interval,groups`).

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use common::{Rng, cpu_seconds, criterion, members_from_env, player_id, rss_bytes};
use standings_core::interval;
use standings_core::{Board, BoardRules, MemberId, RankedIndex, ScoreEvent, ScoreMode, Standing, Threads};

fn main() {
    let parts =
        std::env::var("STANDINGS_BENCH_PARTS").unwrap_or_else(|_| "layouts,move,interval,groups".into());
    for n in members_from_env(4_000_000) {
        if parts.contains("layouts") {
            layouts(n);
        }
        if parts.contains("move") {
            boundary_move(n);
        }
        if parts.contains("interval") {
            intervals(n);
        }
        if parts.contains("groups") {
            groups(n);
        }
    }
}

/// Updates (random members, random scores) in groups of 1,000, applied one by one and staged
/// then settled with each shard on a thread, on the board whole and in 2 and 4 shards (one at
/// a time, so that 50M fits), each way twice in turn: wall time and process CPU per update,
/// and the slowest group.
fn groups(n: usize) {
    const GROUP: usize = 1_000;
    let updates = 1_000_000;
    let mut rng = Rng(13);
    let players: Vec<String> = (0..n as u64).map(player_id).collect();
    let standings: Vec<Standing> = (0..n).map(|_| rng.skewed_standing()).collect();
    for shards in [1, 2, 4] {
        let mut index = RankedIndex::new(ScoreMode::Highest);
        index.split(shards);
        index
            .load(players.iter().map(String::as_str).zip(standings.iter().copied()))
            .expect("fits");
        let members: Vec<MemberId> = players
            .iter()
            .map(|p| index.member(p).expect("interned"))
            .collect();
        // Twice each, alternating, so that a drift of the machine shows.
        for grouped in [false, true, false, true] {
            let (cpu, started) = (cpu_seconds(), Instant::now());
            let (mut slowest, mut settled) = (Duration::ZERO, Duration::ZERO);
            for _ in 0..updates / GROUP {
                let group_started = Instant::now();
                if grouped {
                    index.stage();
                }
                for _ in 0..GROUP {
                    let member = members[(rng.next_u64() % n as u64) as usize];
                    index.set(member, Some(rng.skewed_standing()));
                }
                if grouped {
                    let settling = Instant::now();
                    index.settle(&Threads(2));
                    settled += settling.elapsed();
                }
                slowest = slowest.max(group_started.elapsed());
            }
            let (wall, cpu) = (started.elapsed().as_secs_f64(), cpu_seconds() - cpu);
            println!(
                "groups at {n}, {shards} shard(s), {}: {:.2} us wall and {:.2} us CPU per update ({:.0} updates/s, {:.2} cores); \
                 the slowest group of {GROUP} {:.2} ms; settling {:.2} us per update; entries by shard {:?}",
                if grouped {
                    "staged and settled on threads"
                } else {
                    "one by one"
                },
                wall * 1e6 / updates as f64,
                cpu * 1e6 / updates as f64,
                updates as f64 / wall,
                cpu / wall,
                slowest.as_secs_f64() * 1e3,
                settled.as_secs_f64() * 1e6 / updates as f64,
                index.shards().iter().map(|s| s.entries).collect::<Vec<_>>()
            );
        }
    }
}

/// The index loaded whole and split into 2 and 4 shards, queried side by side.
fn layouts(n: usize) {
    let mut rng = Rng(7);
    let players: Vec<String> = (0..n as u64).map(player_id).collect();
    let standings: Vec<Standing> = (0..n).map(|_| rng.skewed_standing()).collect();
    let mut indexes = Vec::new();
    for shards in [1, 2, 4] {
        let rss = rss_bytes();
        let mut index = RankedIndex::new(ScoreMode::Highest);
        index.split(shards);
        index
            .load(players.iter().map(String::as_str).zip(standings.iter().copied()))
            .expect("fits");
        let grown = rss_bytes() - rss;
        let memory = index.memory();
        println!(
            "== {n} members in {shards} shard(s): index {:.1} B/member, RSS growth {:.1} B/member, entries by shard {:?}",
            memory.index_bytes as f64 / n as f64,
            grown as f64 / n as f64,
            index.shards().iter().map(|s| s.entries).collect::<Vec<_>>()
        );
        indexes.push((shards, index));
    }
    let members: Vec<MemberId> = players
        .iter()
        .map(|p| indexes[0].1.member(p).expect("interned"))
        .collect();
    let queries: Vec<usize> = (0..1 << 16)
        .map(|_| (rng.next_u64() % n as u64) as usize)
        .collect();
    let updates: Vec<Standing> = (0..1 << 16).map(|_| rng.skewed_standing()).collect();
    let mut c = criterion();
    for (what, sample) in [
        ("rank_of", 30),
        ("update", 30),
        ("top_100", 30),
        ("nearby_r100", 30),
    ] {
        let mut group = c.benchmark_group(format!("split/{what}/{n}"));
        group.sample_size(sample);
        for (shards, index) in &mut indexes {
            let mut i = 0;
            group.bench_function(format!("{shards}_shards"), |b| {
                b.iter(|| {
                    i = (i + 1) & 0xffff;
                    let member = members[queries[i]];
                    match what {
                        "rank_of" => {
                            black_box(index.rank_of(member));
                        }
                        "update" => {
                            black_box(index.set(member, Some(updates[i])));
                        }
                        "top_100" => {
                            black_box(index.range(1, 100));
                        }
                        _ => {
                            let rank = index.rank_of(member).unwrap_or(1);
                            black_box(index.range(rank.saturating_sub(100).max(1), 201));
                        }
                    }
                })
            });
        }
        group.finish();
    }
}

/// A boundary moved by the index itself: a 2-shard board of `n` members; members of the lower
/// shard lifted into the upper one until the upper holds 1.5 times its share, which starts a
/// move of about `n / 4` members back; then ordinary updates (random members, random scores)
/// until the two shards hold the same: one by one, each carrying the move one step, and again
/// on a fresh board in groups of 1,000 settled on threads, each group carrying it up to four
/// steps. The slowest update (or group) during the move is its stall, beside the slowest group
/// once the move is over.
fn boundary_move(n: usize) {
    for grouped in [false, true] {
        boundary_move_in(n, grouped);
    }
}

fn boundary_move_in(n: usize, grouped: bool) {
    const GROUP: usize = 1_000;
    let mut rng = Rng(11);
    let players: Vec<String> = (0..n as u64).map(player_id).collect();
    let mut index = RankedIndex::new(ScoreMode::Highest);
    index.split(2);
    index
        .load(
            players
                .iter()
                .map(String::as_str)
                .zip((0..n).map(|_| rng.skewed_standing())),
        )
        .expect("fits");
    let members: Vec<MemberId> = players
        .iter()
        .map(|p| index.member(p).expect("interned"))
        .collect();
    let lower_first = index.shards()[1].first_rank;
    let lower: Vec<MemberId> = index
        .range(lower_first, n)
        .iter()
        .map(|e| index.member(e.player).expect("interned"))
        .collect();
    // Lift until the upper shard holds more than 1.5 times its share.
    let mut lifted = 0;
    while index.shards()[0].entries * 4 <= n as u64 * 3 {
        let top = Standing {
            value: 2_000_000 + lifted as i64,
            achieved_at: common::T0,
        };
        index.set(lower[lifted], Some(top));
        lifted += 1;
    }
    let peak = index.shards()[0].entries;
    let batch = if grouped { GROUP } else { 1 };
    let mut batch_of = |index: &mut RankedIndex| {
        let started = Instant::now();
        if grouped {
            index.stage();
        }
        for _ in 0..batch {
            let member = members[(rng.next_u64() % n as u64) as usize];
            index.set(member, Some(rng.skewed_standing()));
        }
        if grouped {
            index.settle(&Threads(2));
        }
        started.elapsed()
    };
    let (mut total, mut batches) = (Duration::ZERO, 0u64);
    let mut times = Vec::new();
    loop {
        let shards = index.shards();
        if shards[0].entries.abs_diff(shards[1].entries) <= 1 || batches > n as u64 {
            break;
        }
        let took = batch_of(&mut index);
        times.push(took);
        total += took;
        batches += 1;
    }
    times.sort_unstable();
    let slowest = times.last().copied().unwrap_or_default();
    let after = (0..200).map(|_| batch_of(&mut index)).max().unwrap_or_default();
    let moved = peak.saturating_sub(index.shards()[0].entries);
    println!(
        "boundary move at {n}, {}: {lifted} members lifted into the upper shard ({peak} of {n}), then {batches} ordinary \
         {} carried about {moved} members back; the slowest (the stall) {:.2} ms, p50 {:.1} us, {:.2} s in all; \
         the slowest of 200 after the move {:.2} ms",
        if grouped {
            "groups of 1,000 settled on threads"
        } else {
            "updates one by one"
        },
        if grouped { "groups" } else { "updates" },
        slowest.as_secs_f64() * 1e3,
        times
            .get(times.len() / 2)
            .copied()
            .unwrap_or_default()
            .as_secs_f64()
            * 1e6,
        total.as_secs_f64(),
        after.as_secs_f64() * 1e3,
    );
}

/// The rank interval beside the exact rank on a board of `n` players, and the sketch's bytes.
fn intervals(n: usize) {
    let mut rng = Rng(13);
    let players: Vec<String> = (0..n as u64).map(player_id).collect();
    let rules = BoardRules::new(ScoreMode::Highest);
    let mut board = Board::from_aggregates(
        rules,
        1,
        players.iter().map(|p| (p.as_str(), rng.skewed_standing(), "")),
    )
    .expect("fits");
    // One more event so the board holds one version past its load.
    board
        .apply(&ScoreEvent::new("e", &players[0], 1, common::T0).expect("valid"))
        .expect("applies");
    let started = Instant::now();
    let sketch = board.rank_sketch();
    let built = started.elapsed();
    let bytes = sketch.encode();
    let (mut widest, mut widths) = (0u64, 0u64);
    let sample: Vec<&String> = (0..100_000)
        .map(|_| &players[(rng.next_u64() % n as u64) as usize])
        .collect();
    for p in &sample {
        let found = board.rank_interval(p).expect("ranked");
        let exact = board.index().rank_of_player(p).expect("ranked");
        assert!(found.interval.contains(exact));
        widest = widest.max(found.interval.width());
        widths += found.interval.width();
    }
    println!(
        "interval at {n}: sketch {} bytes ({} bounds, step {}), built in {:.1} ms; widths over 100,000 players: \
         widest {widest} ({:.4} % of the board), mean {:.1}",
        bytes.len(),
        sketch.len(),
        interval::step(n as u64),
        built.as_secs_f64() * 1e3,
        widest as f64 * 100.0 / n as f64,
        widths as f64 / sample.len() as f64
    );
    let mut c = criterion();
    let mut group = c.benchmark_group(format!("interval/{n}"));
    let mut i = 0;
    group.bench_function("exact_rank", |b| {
        b.iter(|| {
            i = (i + 1) % sample.len();
            black_box(board.player_rank(sample[i]))
        })
    });
    group.bench_function("rank_interval_at_origin", |b| {
        b.iter(|| {
            i = (i + 1) % sample.len();
            black_box(board.rank_interval(sample[i]))
        })
    });
    let standings: Vec<Standing> = sample
        .iter()
        .map(|p| board.index().standing_of_player(p).expect("ranked"))
        .collect();
    group.bench_function("rank_interval_from_sketch", |b| {
        b.iter(|| {
            i = (i + 1) % sample.len();
            black_box(sketch.interval(&rules, &standings[i], sample[i]))
        })
    });
    group.finish();
}
