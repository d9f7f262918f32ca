//! Admission of new views: whether the windows can take one more view to read.
//!
//! A window reads every watched view whose board moved, so its work grows with the distinct
//! views watched, not with the subscribers (a view's delta is computed once and its bytes
//! shared). While that work stays a share of the window, the window keeps its rhythm and the
//! applier, which waits at most one hold of a board's read lock per hold, keeps its latency.
//! Past the share, a subscription that would add a view nobody watches yet is refused with 503
//! `LIVE_BUSY` and `Retry-After`; joining a view already watched costs the window nothing and
//! is still taken. The work is a moving average over windows, so one slow window (a long
//! top page, a busy machine) does not turn subscribers away.

use std::time::Duration;

/// The weight of the newest window in the moving average of the work: about the last eight
/// windows count (two seconds at the default window).
const NEWEST_WEIGHT: u64 = 8;

/// The moving average of a window's work, in µs, after a window that took `work`. O(1).
pub(crate) fn average_work_us(previous_us: u64, work: Duration) -> u64 {
    let newest = u64::try_from(work.as_micros()).unwrap_or(u64::MAX);
    previous_us
        .saturating_mul(NEWEST_WEIGHT - 1)
        .saturating_add(newest)
        / NEWEST_WEIGHT
}

/// Whether a new view may be added while windows of `window_ms` take `work_us` on average: while
/// that work is under `share_percent` of the window. O(1).
pub(crate) fn admits_new_view(work_us: u64, window_ms: u64, share_percent: u8) -> bool {
    let budget_us = window_ms
        .saturating_mul(10)
        .saturating_mul(u64::from(share_percent));
    work_us < budget_us
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The average moves an eighth of the way to each window's work, so one slow window
    /// lifts it a little and a run of them lifts it to their level.
    #[test]
    fn the_work_is_a_moving_average() {
        assert_eq!(average_work_us(0, Duration::from_millis(80)), 10_000);
        let mut average = 0;
        for _ in 0..60 {
            average = average_work_us(average, Duration::from_millis(100));
        }
        assert!((99_000..=100_000).contains(&average), "{average}");
        assert_eq!(average_work_us(u64::MAX, Duration::MAX), u64::MAX / NEWEST_WEIGHT);
    }

    /// New views are admitted while the work is under the share of the window, and not from
    /// the share on.
    #[test]
    fn new_views_are_admitted_under_the_share_only() {
        // 50 % of a 250 ms window is 125 ms.
        assert!(admits_new_view(124_999, 250, 50));
        assert!(!admits_new_view(125_000, 250, 50));
        assert!(!admits_new_view(u64::MAX, 250, 50));
        assert!(admits_new_view(0, 10, 1));
        assert!(!admits_new_view(0, 250, 0));
    }
}
