//! What refusing repeated keys costs a batch body of 1,000 events: the typed read the batch
//! endpoint takes (unchanged: derived structs refuse a repeated field themselves), the general
//! path's `Value` as `serde_json` builds it and as `parse_json` builds it (refusing repeats in
//! the same pass), and the typed read followed by a separate checking pass, which is what
//! checking every body before its typed read would cost.
//!
//! `cargo bench -p standings-origin --bench json_body`

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use serde::Deserialize;
use serde_json::value::RawValue;
use standings_origin::http::parse_json;

/// The shape of `api::write`'s `EventBody` (private there).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct EventBody {
    event_id: String,
    player_id: String,
    game: String,
    mode: String,
    season: String,
    #[serde(default)]
    scopes: Option<Vec<String>>,
    value: i64,
    achieved_at: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBatch<'a> {
    #[serde(borrow)]
    events: Vec<&'a RawValue>,
}

fn typed(body: &[u8]) -> usize {
    let batch: RawBatch = serde_json::from_slice(body).unwrap();
    batch
        .events
        .iter()
        .map(|raw| serde_json::from_str::<EventBody>(raw.get()).unwrap().value as usize)
        .sum()
}

fn main() {
    let events: Vec<String> = (0..1_000)
        .map(|i| {
            format!(
                r#"{{"event_id": "evt-{i:08}", "player_id": "p-{:06}", "game": "arena-clash", "mode": "solo", "season": "S7", "scopes": ["global", "eu"], "value": {}, "achieved_at": "2026-10-13T10:00:00.123Z"}}"#,
                i * 7919 % 100_000,
                i * 104_729 % 1_000_000
            )
        })
        .collect();
    let body = format!(r#"{{"events": [{}]}}"#, events.join(", ")).into_bytes();
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let mut group = c.benchmark_group(format!("batch of 1,000 events ({} bytes)", body.len()));
    group.throughput(Throughput::Elements(1_000));
    group.bench_function("typed read (the batch endpoint's path)", |b| {
        b.iter(|| typed(black_box(&body)))
    });
    group.bench_function("serde_json Value (last key wins)", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Value>(black_box(&body)).unwrap())
    });
    group.bench_function("parse_json Value (repeats refused)", |b| {
        b.iter(|| parse_json(black_box(&body)).unwrap())
    });
    group.bench_function("typed read after a separate check", |b| {
        b.iter(|| {
            parse_json(black_box(&body)).unwrap();
            typed(black_box(&body))
        })
    });
    group.finish();
    c.final_summary();
}
