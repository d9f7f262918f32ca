//! Reading the service's `/metrics`: samples by name and labels, and quantiles of a histogram
//! over the observations between two scrapes.

use std::collections::HashMap;

use crate::http::HttpConn;
use crate::service::SERVICE_TOKEN;

/// A scrape of `/metrics`: every sample line, by its name and labels.
pub(crate) struct Scrape(pub(crate) HashMap<String, f64>);

pub(crate) const LAG_METRIC: &str = "standings_live_notify_lag_seconds";
/// How long each window's work took: the part of the lag that grows with the views watched.
pub(crate) const WINDOW_METRIC: &str = "standings_live_window_seconds";

impl Scrape {
    pub(crate) async fn take(addr: &str) -> Result<Scrape, String> {
        let mut conn = HttpConn::connect(addr, SERVICE_TOKEN).await?;
        let answer = conn.get("/metrics").await?;
        if answer.status != 200 {
            return Err(format!("/metrics answered {}", answer.status));
        }
        let text = String::from_utf8_lossy(conn.body(&answer)).into_owned();
        Ok(Scrape(
            text.lines()
                .filter(|l| !l.starts_with('#'))
                .filter_map(|l| {
                    let (key, value) = l.rsplit_once(' ')?;
                    Some((key.to_string(), value.parse().ok()?))
                })
                .collect(),
        ))
    }

    /// The histogram's cumulative buckets, by upper bound (`+Inf` last).
    pub(crate) fn buckets(&self, name: &str) -> Vec<(f64, f64)> {
        self.buckets_labelled(name, "")
    }

    /// [`Scrape::buckets`] of the series whose labels hold `label` (`kind="rank"`).
    pub(crate) fn buckets_labelled(&self, name: &str, label: &str) -> Vec<(f64, f64)> {
        let prefix = format!("{name}_bucket{{");
        let mut buckets: Vec<(f64, f64)> = self
            .0
            .iter()
            .filter_map(|(key, &count)| {
                let labels = key.strip_prefix(&prefix)?;
                if !labels.contains(label) {
                    return None;
                }
                let le = labels.split("le=\"").nth(1)?.split('"').next()?;
                let bound = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().ok()?
                };
                Some((bound, count))
            })
            .collect();
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        // Labelled series of one histogram add up bound by bound.
        buckets.dedup_by(|later, earlier| {
            if later.0 == earlier.0 {
                earlier.1 += later.1;
                true
            } else {
                false
            }
        });
        buckets
    }

    /// The live counters (every `standings_live_` sample but the histogram), for the report.
    pub(crate) fn live_counters(&self) -> Vec<(String, f64)> {
        let mut counters: Vec<(String, f64)> = self
            .0
            .iter()
            .filter(|(k, _)| {
                k.starts_with("standings_live_")
                    && !k.starts_with(LAG_METRIC)
                    && !k.starts_with(WINDOW_METRIC)
            })
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        counters.sort_by(|a, b| a.0.cmp(&b.0));
        counters
    }
}

/// The `q` quantile of the observations between two scrapes of a histogram, interpolated
/// linearly inside its bucket, with how many there were; `None` when there were none.
/// Infinite when it falls above the last finite bound.
pub(crate) fn quantile_between(before: &[(f64, f64)], after: &[(f64, f64)], q: f64) -> Option<(f64, f64)> {
    let earlier = |bound: f64| before.iter().find(|(b, _)| *b == bound).map_or(0.0, |(_, c)| *c);
    let deltas: Vec<(f64, f64)> = after.iter().map(|&(b, c)| (b, c - earlier(b))).collect();
    let total = deltas.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let (mut lower, mut below) = (0.0, 0.0);
    for &(bound, cumulative) in &deltas {
        if cumulative >= rank {
            if bound.is_infinite() {
                return Some((f64::INFINITY, total));
            }
            let inside = cumulative - below;
            let share = if inside > 0.0 {
                (rank - below) / inside
            } else {
                1.0
            };
            return Some((lower + (bound - lower) * share, total));
        }
        lower = bound;
        below = cumulative;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Quantiles come from the observations between the scrapes, interpolated in their bucket.
    #[test]
    fn quantiles_between_scrapes() {
        let text = |counts: [u64; 4]| {
            let mut lines = HashMap::new();
            for (le, c) in ["0.1", "0.25", "0.5", "+Inf"].iter().zip(counts) {
                lines.insert(format!("{LAG_METRIC}_bucket{{le=\"{le}\"}}"), c as f64);
            }
            Scrape(lines)
        };
        let before = text([10, 10, 10, 10]).buckets(LAG_METRIC);
        let after = text([10, 110, 210, 210]).buckets(LAG_METRIC);
        let (p50, n) = quantile_between(&before, &after, 0.5).unwrap();
        assert_eq!(n, 200.0);
        assert!((p50 - 0.25).abs() < 1e-9, "{p50}");
        let (p99, _) = quantile_between(&before, &after, 0.99).unwrap();
        assert!((p99 - (0.25 + 0.25 * 98.0 / 100.0)).abs() < 1e-9, "{p99}");
        assert_eq!(quantile_between(&before, &before, 0.5), None);
        let over = text([10, 10, 10, 20]).buckets(LAG_METRIC);
        assert_eq!(quantile_between(&before, &over, 0.99).unwrap().0, f64::INFINITY);
    }
}
