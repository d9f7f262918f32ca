//! Segments at 1M members (`docs/segments.md`): the bytes a country segment costs per member,
//! and with a second, event dimension (`platform`, three values) the bytes of its segments and
//! of holding each entry's value (the event behind its standing, as metadata is held),
//! applying events to a `cumulative` board (each one moves its player) with its segments
//! declared against the same board without them (side by side, the same events), the same with
//! the feed's reads of each change (five bands, ten followers) against without, and a rank
//! within a segment against a board-wide rank. Snapshots of a board with both dimensions
//! declared against the same board without: the manifest's bytes and decode time, the bytes and
//! time of publishing a version of 100 moves (whole, as a board with segments is, against a
//! patch), and a segment rank read from the snapshot against a board-wide one.
//!
//! `cargo bench -p standings-core --bench segments` (`STANDINGS_BENCH_MEMBERS=1000000` is the
//! default).

mod common;
#[path = "common/counting.rs"]
mod counting;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use common::{Rng, criterion, player_id};
use criterion::Throughput;
use standings_core::interval::RankSketch;
use standings_core::profile::Metadata;
use standings_core::snapshot::read::{Parts, SegmentCounts, SnapshotReader, Step};
use standings_core::snapshot::{ChunkingOptions, DEFAULT_MAX_PATCH_BYTES, Publisher, Snapshot};
use standings_core::{
    Applied, Band, Board, BoardRules, COUNTRY, DEFAULT_HISTORY_LIMIT, EventDimension, Extras, PlayerId,
    Profile, ScoreEvent, ScoreMode, SegmentKey, SegmentSpec, Standing,
};
use standings_core::{LookupChunk, Manifest, RankChunk};

/// How many countries players are spread over: a game's long tail, most in a few.
const COUNTRIES: usize = 60;

fn main() {
    let sizes = match std::env::var("STANDINGS_BENCH_MEMBERS") {
        Ok(_) => common::members_from_env(0),
        Err(_) => vec![1_000_000],
    };
    for n in sizes {
        run(n);
    }
}

/// A second dimension: every member's event behind their standing carries one of three
/// platforms. Prints the bytes of holding those values (the board without segments, before and
/// after) and of the platform segments (both dimensions declared, less the country's).
fn two_dimensions(
    plain: &Board,
    players: &[String],
    countries: &[Arc<Profile>],
    homes: &[usize],
    country: usize,
) -> Board {
    const PLATFORMS: [&str; 3] = ["platform:ios", "platform:android", "platform:pc"];
    let n = players.len();
    let mut board = plain.clone();
    let before = counting::held();
    for (i, (p, home)) in players.iter().zip(homes).enumerate() {
        let extras = Extras {
            profile: Some(countries[*home].clone()),
            metadata: Some(Arc::new(Metadata {
                event_id: format!("bench-{i}").into(),
                json: "".into(),
                segments: Some(PLATFORMS[i % 3].into()),
            })),
        };
        board.restore_extras(p, extras);
    }
    let values = counting::held() - before;
    board.declare_segments(SegmentSpec {
        country: true,
        events: vec![EventDimension {
            name: "platform".into(),
            values: ["ios", "android", "pc"].into_iter().map(Into::into).collect(),
        }],
    });
    let both = board.segment_memory();
    println!(
        "a platform on each of {n} members: its value held {:.1} B a member; segments of both dimensions \
         {:.1} B a member, of the platform alone {:.1} B a member",
        values as f64 / n as f64,
        both as f64 / n as f64,
        (both - country) as f64 / n as f64
    );
    board
}

/// The median of `samples`, sorted in place.
fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Snapshots of `plain` and of `segmented` (the same entries, both dimensions declared), side by
/// side: manifest bytes and decode time, then 15 versions of 100 moves each published by a
/// patching publisher (a board with segments is published whole), bytes and time per version.
fn snapshots(plain: &Board, segmented: &Board, events: &[ScoreEvent]) {
    let mut round = 0;
    for (name, board) in [("no segments", plain), ("country + platform", segmented)] {
        let snapshot = Snapshot::build(board);
        let mut decode = Vec::new();
        for _ in 0..9 {
            let started = Instant::now();
            black_box(Manifest::decode(&snapshot.manifest_bytes).expect("decodes"));
            decode.push(started.elapsed().as_secs_f64() * 1e3);
        }
        let chunk_bytes: usize = snapshot.rank_chunks.iter().map(Vec::len).sum();
        let mut board = board.clone();
        let mut publisher = Publisher::patching(ChunkingOptions::default(), DEFAULT_MAX_PATCH_BYTES);
        publisher.publish(&board);
        let (mut bytes, mut took) = (Vec::new(), Vec::new());
        for _ in 0..15 {
            for _ in 0..100 {
                round = (round + 1) % events.len();
                let _ = board.apply(&events[round]);
            }
            let started = Instant::now();
            let publication = publisher.publish(&board);
            took.push(started.elapsed().as_secs_f64() * 1e3);
            let new: usize = publication.new_parts.iter().map(|(_, b)| b.len()).sum();
            bytes.push((publication.manifest_bytes.len() + new) as f64);
        }
        println!(
            "snapshot, {name}: manifest {} B ({} rank chunks, {} B of rank chunks), decoded in {:.2} ms (median of 9); \
             a version of 100 moves published in {:.2} ms, {:.0} B new (medians of 15)",
            snapshot.manifest_bytes.len(),
            snapshot.manifest.rank_chunks.len(),
            chunk_bytes,
            median(&mut decode),
            median(&mut took),
            median(&mut bytes),
        );
    }
    // A rank read from the snapshot, every part held: board-wide against within a segment
    // (the segment's counts summed over the manifest on each read, as the edge does).
    let snapshot = Snapshot::build(segmented);
    let manifest = &snapshot.manifest;
    let rank: Vec<RankChunk> = snapshot
        .rank_chunks
        .iter()
        .zip(&manifest.rank_chunks)
        .map(|(b, r)| RankChunk::decode(b, &r.hash).expect("decodes"))
        .collect();
    let lookup: Vec<LookupChunk> = snapshot
        .lookup_chunks
        .iter()
        .zip(&manifest.lookup_chunks)
        .map(|(b, r)| LookupChunk::decode(b, &r.hash).expect("decodes"))
        .collect();
    let parts = Held { rank, lookup };
    let reader = SnapshotReader::new(manifest);
    let ranked = segmented.ranked_range(1, 200);
    let players: Vec<&str> = ranked.iter().map(|e| e.player).collect();
    let mut c = criterion();
    let mut group = c.benchmark_group(format!("snapshot_rank/{}", segmented.total_players()));
    let mut i = 0;
    group.bench_function("board", |b| {
        b.iter(|| {
            i = (i + 1) % players.len();
            black_box(matches!(
                reader.player_rank(&parts, players[i]),
                Step::Done(Some(_))
            ))
        })
    });
    let ios = SegmentKey {
        dimension: "platform",
        value: "ios",
    };
    group.bench_function("segment_counted_each_read", |b| {
        b.iter(|| {
            i = (i + 1) % players.len();
            let counts = SegmentCounts::of(manifest, &ios).expect("declared");
            let within = reader.within(&counts).expect("whole");
            black_box(matches!(within.rank(&parts, players[i]), Step::Done(_)))
        })
    });
    // As the edge reads it: the counts kept with the manifest.
    let counts = SegmentCounts::of(manifest, &ios).expect("declared");
    let within = reader.within(&counts).expect("whole");
    group.bench_function("segment", |b| {
        b.iter(|| {
            i = (i + 1) % players.len();
            black_box(matches!(within.rank(&parts, players[i]), Step::Done(_)))
        })
    });
    group.finish();
}

/// Every part of a snapshot, decoded.
struct Held {
    rank: Vec<RankChunk>,
    lookup: Vec<LookupChunk>,
}

impl Parts for Held {
    fn rank(&self, i: usize) -> Option<&RankChunk> {
        self.rank.get(i)
    }
    fn lookup(&self, partition: usize) -> Option<&LookupChunk> {
        self.lookup.get(partition)
    }
    fn sketch(&self) -> Option<&RankSketch> {
        None
    }
}

fn run(n: usize) {
    let mut rng = Rng(41);
    let countries: Vec<Arc<Profile>> = (0..COUNTRIES)
        .map(|i| {
            Arc::new(Profile {
                display_name: None,
                country: Some(
                    format!(
                        "{}{}",
                        (b'A' + (i / 26) as u8) as char,
                        (b'A' + (i % 26) as u8) as char
                    )
                    .into(),
                ),
                anonymous: false,
            })
        })
        .collect();
    // Skewed: country i holds about twice as many players as country i + 1, down to a floor.
    let country_of = |rng: &mut Rng| {
        let mut i = 0;
        while i + 1 < COUNTRIES && rng.next_u64().is_multiple_of(2) {
            i += 1;
        }
        i
    };
    let players: Vec<String> = (0..n as u64).map(player_id).collect();
    let standings: Vec<Standing> = (0..n).map(|_| rng.skewed_standing()).collect();
    let homes: Vec<usize> = (0..n).map(|_| country_of(&mut rng)).collect();
    let build = || {
        let aggregates = players.iter().zip(&standings).map(|(p, s)| (p.as_str(), *s, ""));
        let mut board =
            Board::from_aggregates(BoardRules::new(ScoreMode::Cumulative), 0, aggregates).expect("fits");
        board.set_history_limit(0);
        for (p, home) in players.iter().zip(&homes) {
            board.set_profile(&PlayerId::new(p).expect("valid"), Some(countries[*home].clone()));
        }
        board.set_history_limit(DEFAULT_HISTORY_LIMIT);
        board
    };
    let plain = build();
    let mut segmented = plain.clone();
    segmented.declare_segments(SegmentSpec {
        country: true,
        events: Vec::new(),
    });
    let memory = segmented.segment_memory();
    println!(
        "segments of {n} members in {} countries: {memory} bytes, {:.1} B a member",
        segmented.segment_counts().len(),
        memory as f64 / n as f64
    );
    let both = two_dimensions(&plain, &players, &countries, &homes, memory);

    let events: Vec<ScoreEvent> = (0..1 << 17)
        .map(|i| {
            let player = &players[(rng.next_u64() % n as u64) as usize];
            let s = rng.skewed_standing();
            ScoreEvent::new(&format!("bench-{i}"), player, s.value, s.achieved_at).expect("valid")
        })
        .collect();
    snapshots(&plain, &both, &events);
    drop(both);
    let mut c = criterion();
    {
        let mut group = c.benchmark_group(format!("segments_apply/{n}"));
        group.throughput(Throughput::Elements(1));
        for (name, mut board) in [("off", plain.clone()), ("country", segmented.clone())] {
            let mut i = 0;
            group.bench_function(name, |b| {
                b.iter(|| {
                    i = (i + 1) & ((1 << 17) - 1);
                    black_box(board.apply(&events[i]).is_ok())
                })
            });
        }
        group.finish();
    }
    {
        // The feed's reads of each change (docs/feed.md): five bands and ten followers a mover.
        let bands = [
            Band::Top(1),
            Band::Top(10),
            Band::Top(100),
            Band::Top(1000),
            Band::Percent(100),
        ];
        let followers: Vec<&str> = players[..10].iter().map(String::as_str).collect();
        let mut group = c.benchmark_group(format!("feed_apply/{n}"));
        group.throughput(Throughput::Elements(1));
        for (name, with_feed) in [("off", false), ("bands_and_overtakes", true)] {
            let mut board = plain.clone();
            let mut i = 0;
            group.bench_function(name, |b| {
                b.iter(|| {
                    i = (i + 1) & ((1 << 17) - 1);
                    if let Ok(Applied::Changed(delta)) = board.apply(&events[i])
                        && with_feed
                    {
                        black_box(board.band_crossings(&delta, &bands).len());
                        black_box(board.overtakes(&delta, &followers).len());
                    }
                })
            });
        }
        group.finish();
    }
    {
        let mut group = c.benchmark_group(format!("segments_rank/{n}"));
        let mut i = 0;
        group.bench_function("board", |b| {
            b.iter(|| {
                i = (i + 7919) % n;
                black_box(segmented.player_rank(&players[i]).map(|r| r.entry.rank))
            })
        });
        group.bench_function("segment", |b| {
            b.iter(|| {
                i = (i + 7919) % n;
                let segment = SegmentKey {
                    dimension: COUNTRY,
                    value: countries[homes[i]].country.as_deref().unwrap_or_default(),
                };
                black_box(
                    segmented
                        .segment_rank(&segment, &players[i])
                        .map(|r| r.within.entry.rank),
                )
            })
        });
        let top = SegmentKey {
            dimension: COUNTRY,
            value: countries[1].country.as_deref().unwrap_or_default(),
        };
        group.bench_function("segment_top_100", |b| {
            b.iter(|| black_box(segmented.segment_top(&top, 100, None).map(|p| p.entries.len())))
        });
        group.finish();
    }
}
