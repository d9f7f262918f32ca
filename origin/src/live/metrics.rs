//! The live tier's metrics, rendered by the tier itself into `/metrics`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

use crate::metrics::instruments::{Counter, Histogram, family};
use crate::sync::LockUnpoisoned;

/// Upper bounds of the notification-lag histogram, in seconds: fine around the coalescing
/// window (250 ms by default), so a p99 can be read against the window plus 50 ms.
const LAG_BUCKETS: [f64; 17] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.275, 0.3, 0.35, 0.4, 0.5, 0.75, 1.0, 2.5,
];

/// The metrics of live subscriptions (see `live`).
pub struct LiveMetrics {
    /// Open subscriptions per board (`game/mode/season/scope`); boards with none are absent.
    subscribers: Mutex<BTreeMap<String, u64>>,
    /// Messages written, by kind, in the order of [`super::Kind::ALL`].
    pub messages: [Counter; 6],
    /// Bytes of messages written.
    pub bytes: Counter,
    /// Subscribers sent `resync` because their queue filled up.
    pub resyncs: Counter,
    /// Subscribers that went away (closed their end) before their stream ended.
    pub drops: Counter,
    /// A change's commit to its message written to the socket.
    pub notify_lag: Histogram,
    /// How long one window's work took (reading the moved views, encoding and queueing their
    /// deltas): the part of the lag that grows with the number of views watched.
    pub window: Histogram,
    /// Subscriptions refused 503 `LIVE_BUSY`: they would have added a view while the windows'
    /// work was past its share.
    pub busy_refusals: Counter,
}

impl Default for LiveMetrics {
    fn default() -> Self {
        LiveMetrics {
            subscribers: Mutex::default(),
            messages: Default::default(),
            bytes: Counter::default(),
            resyncs: Counter::default(),
            drops: Counter::default(),
            notify_lag: Histogram::with_bounds(&LAG_BUCKETS),
            window: Histogram::default(),
            busy_refusals: Counter::default(),
        }
    }
}

impl LiveMetrics {
    /// Sets a board's open subscriptions. O(log boards).
    pub fn set_subscribers(&self, board: &standings_core::BoardId, open: usize) {
        let mut map = self.subscribers.lock_unpoisoned();
        let label = board.to_string();
        if open == 0 {
            map.remove(&label);
        } else {
            map.insert(label, open as u64);
        }
    }

    /// Appends the live subscriptions' lines to the exposition.
    pub(crate) fn render(&self, out: &mut String) {
        family(
            out,
            "standings_live_subscribers",
            "Open live subscriptions per board.",
            "gauge",
        );
        for (board, n) in self.subscribers.lock_unpoisoned().iter() {
            let _ = writeln!(out, "standings_live_subscribers{{board=\"{board}\"}} {n}");
        }
        family(
            out,
            "standings_live_messages_total",
            "Live messages written, by type.",
            "counter",
        );
        for (kind, n) in super::Kind::ALL.iter().zip(&self.messages) {
            let _ = writeln!(
                out,
                "standings_live_messages_total{{type=\"{}\"}} {}",
                kind.as_str(),
                n.get()
            );
        }
        family(
            out,
            "standings_live_bytes_total",
            "Bytes of live messages written.",
            "counter",
        );
        let _ = writeln!(out, "standings_live_bytes_total {}", self.bytes.get());
        family(
            out,
            "standings_live_resyncs_total",
            "Subscribers sent resync because they fell a whole queue behind.",
            "counter",
        );
        let _ = writeln!(out, "standings_live_resyncs_total {}", self.resyncs.get());
        family(
            out,
            "standings_live_drops_total",
            "Subscribers that closed their end before their stream ended.",
            "counter",
        );
        let _ = writeln!(out, "standings_live_drops_total {}", self.drops.get());
        family(
            out,
            "standings_live_notify_lag_seconds",
            "A change's commit to its live message written to the socket.",
            "histogram",
        );
        self.notify_lag
            .render(out, "standings_live_notify_lag_seconds", "");
        family(
            out,
            "standings_live_window_seconds",
            "One coalescing window's work: reading the moved views and queueing their deltas.",
            "histogram",
        );
        self.window.render(out, "standings_live_window_seconds", "");
        family(
            out,
            "standings_live_busy_refusals_total",
            "Subscriptions refused LIVE_BUSY: a new view while the windows' work was past its share.",
            "counter",
        );
        let _ = writeln!(
            out,
            "standings_live_busy_refusals_total {}",
            self.busy_refusals.get()
        );
    }
}
