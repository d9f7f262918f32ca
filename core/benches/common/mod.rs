//! Shared bench workload: a deterministic, skewed score distribution over many players.

#![allow(dead_code, unreachable_pub)]

use standings_core::Standing;

/// 2025-10-13T00:00:00Z in ms.
pub const T0: i64 = 1_760_313_600_000;

/// A small deterministic PRNG (splitmix64); the benches must not depend on `rand`'s versions.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform float in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A skewed score: most players low, few high (u^4 over 0..1,000,000), so low values tie
    /// often, as real boards do.
    pub fn skewed_standing(&mut self) -> Standing {
        let u = self.unit();
        Standing {
            value: (u * u * u * u * 1_000_000.0) as i64,
            achieved_at: T0 + (self.next_u64() % (7 * 86_400_000)) as i64,
        }
    }
}

/// The player id of player `i`: 23 bytes, in no particular order.
pub fn player_id(i: u64) -> String {
    let mut rng = Rng(i);
    format!("player-{:016x}", rng.next_u64())
}

/// How many members the benches use: `STANDINGS_BENCH_MEMBERS`, 10 million by default.
pub fn members_from_env(default: usize) -> Vec<usize> {
    match std::env::var("STANDINGS_BENCH_MEMBERS") {
        Ok(list) => list.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
        Err(_) => vec![default],
    }
}

/// Resident memory of this process in bytes (Linux), for side-by-side memory figures.
pub fn rss_bytes() -> usize {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|p| p.parse::<usize>().ok()))
        .map_or(0, |pages| pages * 4096)
}

/// A fixed criterion configuration: short enough to run three 10M-member structures in minutes.
pub fn criterion() -> criterion::Criterion {
    criterion::Criterion::default()
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3))
        .sample_size(30)
        .configure_from_args()
}

/// CPU seconds this process has used, user and system, from `/proc/self/stat` (Linux; 0 where
/// it cannot be read). Ticks of 10 ms, so read it around runs of seconds.
#[allow(dead_code)]
pub fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or_default();
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i)?.parse::<f64>().ok())
        .sum();
    ticks / 100.0
}
