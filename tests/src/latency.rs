//! Latency recording: a log-linear histogram (64 sub-buckets per power of two, so every
//! quantile is within 1.6% of the truth) that costs one increment per request.

use std::time::Duration;

const SUB_BITS: u32 = 6;
const SUB: usize = 1 << SUB_BITS;
const BUCKETS: usize = (64 - SUB_BITS as usize) * SUB + SUB;

/// Request durations in nanoseconds.
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
}

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram::new()
    }
}

impl Histogram {
    /// An empty histogram (30 KB, allocated once per connection).
    pub fn new() -> Histogram {
        Histogram {
            counts: vec![0; BUCKETS],
            total: 0,
        }
    }

    fn index(ns: u64) -> usize {
        if ns < 2 * SUB as u64 {
            return ns as usize;
        }
        let exponent = 63 - ns.leading_zeros();
        let shift = exponent - SUB_BITS;
        (shift as usize + 1) * SUB + ((ns >> shift) as usize - SUB)
    }

    /// The middle of bucket `index`, in ns.
    fn middle(index: usize) -> u64 {
        if index < 2 * SUB {
            return index as u64;
        }
        let shift = (index / SUB - 1) as u32;
        let mantissa = (index % SUB + SUB) as u64;
        (mantissa << shift) + ((1u64 << shift) >> 1)
    }

    /// Records one request. O(1).
    pub fn record(&mut self, took: Duration) {
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.counts[Self::index(ns)] += 1;
        self.total += 1;
    }

    /// How many durations were recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// Adds another histogram's counts.
    pub fn merge(&mut self, other: &Histogram) {
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
        self.total += other.total;
    }

    /// The `q` quantile (0 < q <= 1), or zero when nothing was recorded.
    pub fn quantile(&self, q: f64) -> Duration {
        if self.total == 0 {
            return Duration::ZERO;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (index, count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Duration::from_nanos(Self::middle(index));
            }
        }
        Duration::from_nanos(Self::middle(BUCKETS - 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Quantiles land within the histogram's 1.6% precision, for small and large durations.
    #[test]
    fn quantiles_are_close() {
        let mut histogram = Histogram::new();
        for us in 1..=10_000u64 {
            histogram.record(Duration::from_micros(us));
        }
        let p50 = histogram.quantile(0.5).as_nanos() as f64;
        let p99 = histogram.quantile(0.99).as_nanos() as f64;
        assert!((p50 / 5_000_000.0 - 1.0).abs() < 0.016, "{p50}");
        assert!((p99 / 9_900_000.0 - 1.0).abs() < 0.016, "{p99}");
        let mut tiny = Histogram::new();
        tiny.record(Duration::from_nanos(100));
        assert_eq!(tiny.quantile(0.5), Duration::from_nanos(100));
        let mut huge = Histogram::new();
        huge.record(Duration::from_secs(100_000));
        assert!(huge.quantile(1.0) > Duration::from_secs(99_000));
    }
}
