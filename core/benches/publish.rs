//! Publishing snapshots of a 1M-member board: the full build, and a version that moved 100
//! random players published as a whole manifest (cut incrementally) and as a patch (the
//! edge's target: at most 20 ms and 256 KB of new parts). Prints the new bytes per version of
//! both side by side on the same versions and the snapshot's shape, and times decoding the
//! manifest, a patch and a rank chunk (what the edge pays per version).
//!
//! `cargo bench -p standings-core --bench publish -- --sample-size 10`
//! (`STANDINGS_BENCH_MEMBERS` sets the board size, `STANDINGS_BENCH_CHUNKING=min,modulus,max,lookup`
//! tries other chunking than the default, `STANDINGS_BENCH_ROUNDS` sets how many versions the
//! printed figures average, 20 by default; a filter that matches no bench, e.g. `-- none`,
//! prints them alone.)

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use common::{Rng, criterion, player_id};
use standings_core::snapshot::DEFAULT_MAX_PATCH_BYTES;
use standings_core::{
    Board, BoardRules, ChunkingOptions, Manifest, Publisher, RankChunk, Root, ScoreEvent, ScoreMode,
    Snapshot, Standing,
};

/// Players moved per published version.
const MOVES: usize = 100;

fn main() {
    let options = match std::env::var("STANDINGS_BENCH_CHUNKING") {
        Ok(list) => {
            let n: Vec<u32> = list.split(',').filter_map(|n| n.trim().parse().ok()).collect();
            assert_eq!(n.len(), 4, "STANDINGS_BENCH_CHUNKING=min,modulus,max,lookup");
            ChunkingOptions {
                min_entries: n[0],
                boundary_modulus: n[1],
                max_entries: n[2],
                lookup_target: n[3],
            }
        }
        Err(_) => ChunkingOptions::default(),
    };
    for n in common::members_from_env(1_000_000) {
        run(n, options);
    }
}

/// A version's worth of events: `MOVES` distinct random players each gain a skewed amount.
fn moves(rng: &mut Rng, players: &[String], serial: &mut u64) -> Vec<ScoreEvent> {
    let mut picked = std::collections::HashSet::new();
    let mut events = Vec::with_capacity(MOVES);
    while events.len() < MOVES {
        let p = (rng.next_u64() % players.len() as u64) as usize;
        if !picked.insert(p) {
            continue;
        }
        *serial += 1;
        let s = rng.skewed_standing();
        let event = ScoreEvent::new(&format!("move-{serial}"), &players[p], s.value + 1, s.achieved_at)
            .expect("valid");
        events.push(event);
    }
    events
}

/// CPU time of this thread so far (Linux `schedstat`; zero elsewhere): the machine the
/// benches run on is shared, so wall time alone overstates the cost.
fn thread_cpu() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|ns| ns.parse().ok()))
        .map_or(Duration::ZERO, Duration::from_nanos)
}

/// What a run of publications wrote: bytes per version (the root and the parts new with it),
/// time, and how many versions stood on no, one and two patches.
#[derive(Default)]
struct Written {
    bytes: Vec<usize>,
    took: Duration,
    cpu: Vec<Duration>,
    levels: [u32; 3],
}

impl Written {
    fn publish(&mut self, publisher: &mut Publisher, board: &Board) {
        let started = Instant::now();
        let cpu_started = thread_cpu();
        let publication = publisher.publish(board);
        self.took += started.elapsed();
        self.cpu.push(thread_cpu() - cpu_started);
        self.bytes.push(
            publication.manifest_bytes.len()
                + publication.new_parts.iter().map(|(_, b)| b.len()).sum::<usize>(),
        );
        self.levels[publication.patches.len().min(2)] += 1;
    }

    fn print(&mut self, what: &str, rounds: u32) {
        self.bytes.sort_unstable();
        let mean = self.bytes.iter().sum::<usize>() / self.bytes.len().max(1);
        let at = |q: f64| self.bytes[((self.bytes.len() - 1) as f64 * q) as usize];
        self.cpu.sort_unstable();
        let cpu_mean = self.cpu.iter().sum::<Duration>() / rounds;
        let cpu_at = |q: f64| self.cpu[((self.cpu.len() - 1) as f64 * q) as usize];
        println!(
            "{what}, {rounds} versions: bytes per version mean {mean}, p50 {}, p90 {}, worst {}; {:?} a publication; on the CPU mean {cpu_mean:?}, p50 {:?}, p99 {:?}; whole / one patch / two patches: {:?}",
            at(0.5),
            at(0.9),
            at(1.0),
            self.took / rounds,
            cpu_at(0.5),
            cpu_at(0.99),
            self.levels,
        );
    }
}

fn run(n: usize, options: ChunkingOptions) {
    let mut rng = Rng(20);
    let players: Vec<String> = (0..n as u64).map(player_id).collect();
    let standings: Vec<Standing> = (0..n).map(|_| rng.skewed_standing()).collect();
    let aggregates = players.iter().zip(&standings).map(|(p, s)| (p.as_str(), *s, ""));
    // Cumulative: every event moves its player.
    let mut board =
        Board::from_aggregates(BoardRules::new(ScoreMode::Cumulative), 0, aggregates).expect("fits");
    let mut serial = 0;
    println!("chunking: {options:?}");

    let started = Instant::now();
    let mut publisher = Publisher::new(options);
    let first = publisher.publish(&board);
    let full_bytes: usize =
        first.new_parts.iter().map(|(_, b)| b.len()).sum::<usize>() + first.manifest_bytes.len();
    let rank_chunks = first.manifest.rank_chunks.len();
    println!(
        "first publication of {n} (full build): {:?}; manifest {} bytes, {rank_chunks} rank chunks, {} lookup chunks, {} parts, {full_bytes} bytes in all",
        started.elapsed(),
        first.manifest_bytes.len(),
        first.manifest.lookup_chunks.len(),
        first.new_parts.len(),
    );

    // What one publication writes, side by side on the same versions: every version a whole
    // manifest cut incrementally, and versions as patches over it (the origin's default).
    let rounds: u32 = std::env::var("STANDINGS_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    let mut patching = Publisher::patching(options, DEFAULT_MAX_PATCH_BYTES);
    patching.publish(&board);
    let mut whole = Written::default();
    let mut patched = Written::default();
    for _ in 0..rounds {
        for event in moves(&mut rng, &players, &mut serial) {
            board.apply(&event).expect("in range");
        }
        whole.publish(&mut publisher, &board);
        patched.publish(&mut patching, &board);
    }
    whole.print(&format!("whole manifests, {MOVES} moves on {n}"), rounds);
    patched.print(&format!("patches over a manifest, {MOVES} moves on {n}"), rounds);

    let mut c = criterion();
    {
        let mut group = c.benchmark_group(format!("publish/{n}"));
        group.sample_size(10);
        group.bench_function("full_build", |b| {
            b.iter(|| black_box(Snapshot::build_with(&board, options).rank_chunks.len()))
        });
        // Each sample moves players and times one publication, by the wall clock or by this
        // thread's CPU time (on a shared machine, wall time also counts other processes).
        let mut timed = |name: String, publisher: &mut Publisher, clock: fn() -> Duration| {
            group.bench_function(name, |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        for event in moves(&mut rng, &players, &mut serial) {
                            board.apply(&event).expect("in range");
                        }
                        let started = clock();
                        black_box(publisher.publish(&board).new_parts.len());
                        total += clock() - started;
                    }
                    total
                })
            });
        };
        let wall = || {
            static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
            START.get_or_init(Instant::now).elapsed()
        };
        timed(format!("patch_{MOVES}_moves"), &mut patching, wall);
        timed(format!("incremental_{MOVES}_moves"), &mut publisher, wall);
        timed(
            format!("incremental_{MOVES}_moves_cpu_time"),
            &mut publisher,
            thread_cpu,
        );
        group.finish();
    }
    {
        // What the edge pays to read a version: the manifest once, then a chunk per query.
        let snapshot = Snapshot::build_with(&board, options);
        let mut group = c.benchmark_group(format!("decode/{n}"));
        group.bench_function("manifest", |b| {
            b.iter(|| {
                black_box(
                    Manifest::decode(&snapshot.manifest_bytes)
                        .expect("valid")
                        .rank_chunks
                        .len(),
                )
            })
        });
        // A version's root after a patching publisher followed the board: the next patch.
        let root = loop {
            for event in moves(&mut rng, &players, &mut serial) {
                board.apply(&event).expect("in range");
            }
            let publication = patching.publish(&board);
            if !publication.patches.is_empty() {
                break publication.manifest_bytes;
            }
        };
        println!("the root of a patched version: {} bytes", root.len());
        group.bench_function("patch", |b| {
            b.iter(|| black_box(matches!(Root::decode(&root).expect("valid"), Root::Patch(_))))
        });
        let middle = snapshot.rank_chunks.len() / 2;
        let hash = snapshot.manifest.rank_chunks[middle].hash;
        group.bench_function("rank_chunk", |b| {
            b.iter(|| {
                black_box(
                    RankChunk::decode(&snapshot.rank_chunks[middle], &hash)
                        .expect("valid")
                        .entries
                        .len(),
                )
            })
        });
        group.finish();
    }
}
