//! Snapshot publication's metrics, rendered by the snapshots themselves into `/metrics`.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::metrics::instruments::{Counter, Histogram, family, sample};

/// Upper bounds of the snapshot publication histogram, in seconds: from a small board's
/// microseconds to a million-member board published whole, with a bound at the 20 ms that
/// publishing a version of a large board that moved a few players should stay under.
const PUBLISH_BUCKETS: [f64; 15] = [
    0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// The metrics of snapshot publication (see `snapshots`).
pub struct SnapshotMetrics {
    /// Publications made (one board instance's version each).
    pub publications: Counter,
    /// How long one publication took (under the board's read lock, or from a copy of the
    /// board taken under it for a first publication of a large board).
    pub publish: Histogram,
    /// Bytes of the parts publications introduced (manifests included).
    pub new_bytes: Counter,
    /// Parts held now, named or within their retention.
    pub parts_held: AtomicU64,
    /// Bytes of the parts held now.
    pub bytes_held: AtomicU64,
    /// Board instances followed now (their head asked for within `idle_seconds`).
    pub instances: AtomicU64,
    /// Heads of instances that hold no events (none yet, or in the future), answered with the
    /// shared empty snapshot and not followed.
    pub empty_heads: Counter,
    /// Heads refused 503 `SNAPSHOT_INSTANCES_FULL`: a new closed instance while the caps on
    /// followed instances were reached.
    pub refused_heads: Counter,
    /// Followed closed instances given up to make room for an open one.
    pub displaced: Counter,
}

impl Default for SnapshotMetrics {
    fn default() -> Self {
        SnapshotMetrics {
            publications: Counter::default(),
            publish: Histogram::with_bounds(&PUBLISH_BUCKETS),
            new_bytes: Counter::default(),
            parts_held: AtomicU64::new(0),
            bytes_held: AtomicU64::new(0),
            instances: AtomicU64::new(0),
            empty_heads: Counter::default(),
            refused_heads: Counter::default(),
            displaced: Counter::default(),
        }
    }
}

impl SnapshotMetrics {
    /// Appends snapshot publication's lines to the exposition.
    pub(crate) fn render(&self, out: &mut String) {
        family(
            out,
            "standings_snapshot_publications_total",
            "Snapshot publications, one board instance's version each.",
            "counter",
        );
        let _ = writeln!(
            out,
            "standings_snapshot_publications_total {}",
            self.publications.get()
        );
        family(
            out,
            "standings_snapshot_publish_seconds",
            "One publication: reading the board (or a copy of it, for a first publication of a large board) and cutting the new parts.",
            "histogram",
        );
        self.publish.render(out, "standings_snapshot_publish_seconds", "");
        family(
            out,
            "standings_snapshot_new_bytes_total",
            "Bytes of the parts publications introduced, manifests included.",
            "counter",
        );
        let _ = writeln!(out, "standings_snapshot_new_bytes_total {}", self.new_bytes.get());
        for (name, help, counter) in [
            (
                "standings_snapshot_empty_heads_total",
                "Heads of instances that hold no events, answered with the shared empty snapshot and not followed.",
                &self.empty_heads,
            ),
            (
                "standings_snapshot_refused_heads_total",
                "Heads refused SNAPSHOT_INSTANCES_FULL: a new closed instance past the caps on followed instances.",
                &self.refused_heads,
            ),
            (
                "standings_snapshot_displaced_total",
                "Followed closed instances given up to make room for an open one.",
                &self.displaced,
            ),
        ] {
            sample(out, name, help, "counter", counter.get());
        }
        for (name, help, value) in [
            (
                "standings_snapshot_parts_held",
                "Snapshot parts held, named by a current head or within their retention.",
                &self.parts_held,
            ),
            (
                "standings_snapshot_bytes_held",
                "Bytes of the snapshot parts held.",
                &self.bytes_held,
            ),
            (
                "standings_snapshot_instances",
                "Board instances published for the edge (their head asked for within idle_seconds).",
                &self.instances,
            ),
        ] {
            sample(out, name, help, "gauge", value.load(Ordering::Relaxed));
        }
    }
}
