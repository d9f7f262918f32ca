//! Admission of new views: whether the windows can take one more view to read.
//!
//! A window reads every watched view whose board moved, so its work grows with the distinct
//! views watched, not with the subscribers (a view's delta is computed once and its bytes
//! shared). Once writes flow, every board moves every window and every view is read: that is
//! what a view costs, whatever the windows did while the boards were still. So admission keeps
//! the cost of one view read and sent (a moving average over the windows that read any, and over
//! each new view's first read, so it is known before any window has run), and
//! projects the work of a window that reads every view, the new one included. While that stays
//! a share of the window, the applier (which gives the window its turns) keeps its pace and the
//! window its rhythm. Past the share, a subscription that would add a view nobody watches yet is
//! refused with 503 `LIVE_BUSY` and `Retry-After`; joining a view already watched costs the
//! window nothing and is still taken.

use std::time::Duration;

/// The weight of the newest window in the moving average of a view's cost: about the last eight
/// windows that read views count (two seconds at the default window).
const NEWEST_WEIGHT: u64 = 8;

/// The moving average of one view's cost in ns, after a window whose reading and sending of
/// `views` (at least one) took `work`. O(1).
pub(crate) fn average_view_cost_ns(previous_ns: u64, work: Duration, views: usize) -> u64 {
    let newest = u64::try_from(work.as_nanos()).unwrap_or(u64::MAX) / (views.max(1) as u64);
    previous_ns
        .saturating_mul(NEWEST_WEIGHT - 1)
        .saturating_add(newest)
        / NEWEST_WEIGHT
}

/// The work in µs of a window that reads each of `views` at `view_cost_ns`. O(1).
pub(crate) fn projected_work_us(view_cost_ns: u64, views: usize) -> u64 {
    view_cost_ns.saturating_mul(views as u64) / 1_000
}

/// Whether a new view may be added while windows of `window_ms` would take `work_us` with it:
/// while that work is under `share_percent` of the window. O(1).
pub(crate) fn admits_new_view(work_us: u64, window_ms: u64, share_percent: u8) -> bool {
    let budget_us = window_ms
        .saturating_mul(10)
        .saturating_mul(u64::from(share_percent));
    work_us < budget_us
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A view's cost is a window's work over the views it read; the average moves an eighth of
    /// the way to each window's, so one slow window lifts it a little and a run of them lifts it
    /// to their level.
    #[test]
    fn a_views_cost_is_a_moving_average() {
        assert_eq!(average_view_cost_ns(0, Duration::from_millis(80), 1_000), 10_000);
        let mut average = 0;
        for _ in 0..60 {
            average = average_view_cost_ns(average, Duration::from_millis(100), 10);
        }
        assert!((9_900_000..=10_000_000).contains(&average), "{average}");
        assert_eq!(
            average_view_cost_ns(u64::MAX, Duration::MAX, 0),
            u64::MAX / NEWEST_WEIGHT
        );
    }

    /// A window that read a few views of many (the boards were still) does not make the others
    /// look free: the projection counts every view watched.
    #[test]
    fn the_work_is_projected_over_every_view() {
        let cost = average_view_cost_ns(0, Duration::from_micros(80), 1) * NEWEST_WEIGHT;
        assert_eq!(projected_work_us(cost, 2_500), 200_000);
        assert!(!admits_new_view(projected_work_us(cost, 2_500), 250, 50));
        assert!(admits_new_view(projected_work_us(cost, 1_000), 250, 50));
        assert_eq!(projected_work_us(u64::MAX, usize::MAX), u64::MAX / 1_000);
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
