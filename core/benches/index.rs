//! The ranked index against `indexset::BTreeSet` and std's `BTreeSet`, side by side in one run:
//! rank-of-player, update (remove + insert), top-100 and memory, at 10 million members with a
//! skewed score distribution.
//!
//! `cargo bench -p standings-core --bench index` (set `STANDINGS_BENCH_MEMBERS=1000000` for a
//! quicker run).

mod common;

use std::collections::HashMap;
use std::hint::black_box;

use common::{Rng, criterion, members_from_env, player_id, rss_bytes};
use standings_core::{MemberId, RankedIndex, ScoreMode, Standing};

/// The key both comparison structures sort: the order key (NOT of the value, so ascending is
/// better, exactly as the core maps `highest`), the time, and the member id. Members tie-break
/// numerically here, which only flatters the peers (the core compares id bytes).
type PeerKey = (i64, i64, u32);

fn peer_key(member: u32, s: Standing) -> PeerKey {
    (!s.value, s.achieved_at, member)
}

fn main() {
    for n in members_from_env(10_000_000) {
        run(n);
    }
}

fn run(n: usize) {
    let mut rng = Rng(7);
    let players: Vec<String> = (0..n as u64).map(player_id).collect();
    let standings: Vec<Standing> = (0..n).map(|_| rng.skewed_standing()).collect();
    let string_bytes: usize = players.iter().map(String::len).sum();

    let rss = rss_bytes();
    let mut ours = RankedIndex::new(ScoreMode::Highest);
    ours.load(players.iter().map(String::as_str).zip(standings.iter().copied()))
        .expect("fits");
    let ours_rss = rss_bytes() - rss;
    let members: Vec<MemberId> = players
        .iter()
        .map(|p| ours.member(p).expect("interned"))
        .collect();

    let mut peer_keys: Vec<PeerKey> = members
        .iter()
        .zip(&standings)
        .map(|(&m, &s)| peer_key(m, s))
        .collect();
    let rss = rss_bytes();
    let mut iset: indexset::BTreeSet<PeerKey> = indexset::BTreeSet::new();
    for k in &peer_keys {
        iset.insert(*k);
    }
    let iset_rss = rss_bytes() - rss;
    let rss = rss_bytes();
    let mut std_set: std::collections::BTreeSet<PeerKey> = peer_keys.iter().copied().collect();
    let std_rss = rss_bytes() - rss;
    // For "rank by player id" the peers need a map from id to key; the core interns ids itself.
    let by_id: HashMap<&str, u32> = players
        .iter()
        .map(String::as_str)
        .zip(members.iter().copied())
        .collect();

    let memory = ours.memory();
    println!(
        "== {n} members, {string_bytes} bytes of player ids ({:.1} per member) ==",
        string_bytes as f64 / n as f64
    );
    println!(
        "memory standings (computed): index {:.1} B/member, interner {:.1} B/member, id strings {:.1} B/member",
        memory.index_bytes as f64 / n as f64,
        memory.interner_bytes as f64 / n as f64,
        memory.player_id_bytes as f64 / n as f64,
    );
    println!(
        "memory RSS growth while building: standings {:.1} B/member (all of it, strings included), \
         indexset {:.1} B/member, std BTreeSet {:.1} B/member (keys only, no strings, no id map)",
        ours_rss as f64 / n as f64,
        iset_rss as f64 / n as f64,
        std_rss as f64 / n as f64
    );

    // The same random members for every structure, in the same order.
    let queries: Vec<u32> = (0..1 << 16)
        .map(|_| members[(rng.next_u64() % n as u64) as usize])
        .collect();
    let updates: Vec<Standing> = (0..1 << 16).map(|_| rng.skewed_standing()).collect();
    let mut c = criterion();

    {
        let mut group = c.benchmark_group(format!("rank_of_player/{n}"));
        let mut i = 0;
        group.bench_function("standings", |b| {
            b.iter(|| {
                i = (i + 1) & 0xffff;
                black_box(ours.rank_of(queries[i]))
            })
        });
        group.bench_function("indexset", |b| {
            b.iter(|| {
                i = (i + 1) & 0xffff;
                black_box(iset.rank(&peer_keys[queries[i] as usize]))
            })
        });
        group.sample_size(10);
        group.bench_function("std_btreeset_range_count", |b| {
            b.iter(|| {
                i = (i + 1) & 0xffff;
                black_box(std_set.range(..peer_keys[queries[i] as usize]).count())
            })
        });
        group.finish();
    }
    {
        let mut group = c.benchmark_group(format!("rank_of_player_by_id/{n}"));
        let mut i = 0;
        group.bench_function("standings", |b| {
            b.iter(|| {
                i = (i + 1) & 0xffff;
                black_box(ours.rank_of_player(&players[queries[i] as usize]))
            })
        });
        group.bench_function("indexset_with_hashmap", |b| {
            b.iter(|| {
                i = (i + 1) & 0xffff;
                let member = by_id[players[queries[i] as usize].as_str()];
                black_box(iset.rank(&peer_keys[member as usize]))
            })
        });
        group.finish();
    }
    {
        let mut group = c.benchmark_group(format!("top_100/{n}"));
        let mut out = Vec::with_capacity(100);
        group.bench_function("standings", |b| {
            b.iter(|| {
                out.clear();
                ours.top_members(100, &mut out);
                black_box(out.len())
            })
        });
        let mut peer_out: Vec<PeerKey> = Vec::with_capacity(100);
        group.bench_function("indexset", |b| {
            b.iter(|| {
                peer_out.clear();
                peer_out.extend(iset.iter().take(100).copied());
                black_box(peer_out.len())
            })
        });
        group.bench_function("std_btreeset", |b| {
            b.iter(|| {
                peer_out.clear();
                peer_out.extend(std_set.iter().take(100).copied());
                black_box(peer_out.len())
            })
        });
        group.finish();
    }
    {
        let mut group = c.benchmark_group(format!("update/{n}"));
        let mut i = 0;
        group.bench_function("standings", |b| {
            b.iter(|| {
                i = (i + 1) & 0xffff;
                black_box(ours.set(queries[i], Some(updates[i])))
            })
        });
        group.bench_function("indexset_remove_insert", |b| {
            b.iter(|| {
                i = (i + 1) & 0xffff;
                let m = queries[i];
                let old = peer_keys[m as usize];
                let new = peer_key(m, updates[i]);
                iset.remove(&old);
                iset.insert(new);
                peer_keys[m as usize] = new;
            })
        });
        // std's set shares `peer_keys` with indexset, so it replays the same moves from a copy.
        let mut std_keys: Vec<PeerKey> = std_set.iter().copied().collect();
        std_keys.sort_by_key(|k| k.2);
        group.bench_function("std_btreeset_remove_insert", |b| {
            b.iter(|| {
                i = (i + 1) & 0xffff;
                let m = queries[i];
                let old = std_keys[m as usize];
                let new = peer_key(m, updates[i]);
                std_set.remove(&old);
                std_set.insert(new);
                std_keys[m as usize] = new;
            })
        });
        group.finish();
    }
    let memory = ours.memory();
    println!(
        "memory standings after the update churn: index {:.1} B/member, interner {:.1} B/member",
        memory.index_bytes as f64 / n as f64,
        memory.interner_bytes as f64 / n as f64,
    );
    c.final_summary();
}
