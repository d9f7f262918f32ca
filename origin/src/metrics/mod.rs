//! Prometheus metrics, kept with atomics and rendered as text at `/metrics`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::boards::Registry;
use crate::sync::LockUnpoisoned;

/// Upper bounds of the latency histograms, in seconds.
const BUCKETS: [f64; 14] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
];

/// Upper bounds of the histograms of work that takes seconds (checkpoints), in seconds.
const SLOW_BUCKETS: [f64; 12] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

/// Upper bounds of the notification-lag histogram, in seconds: fine around the coalescing
/// window (250 ms by default), so a p99 can be read against the window plus 50 ms.
const LAG_BUCKETS: [f64; 17] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.275, 0.3, 0.35, 0.4, 0.5, 0.75, 1.0, 2.5,
];

/// Upper bounds of the snapshot publication histogram, in seconds: from a small board's
/// microseconds to a million-member board published whole, with a bound at the 20 ms that
/// publishing a version of a large board that moved a few players should stay under.
const PUBLISH_BUCKETS: [f64; 15] = [
    0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// A monotonically increasing counter.
#[derive(Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// The current count.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A latency histogram with fixed buckets ([`BUCKETS`] by default).
pub struct Histogram {
    bounds: &'static [f64],
    /// One count per bound, then the count above the last.
    counts: Box<[AtomicU64]>,
    sum_ns: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::with_bounds(&BUCKETS)
    }
}

/// A histogram of work that takes seconds, with [`SLOW_BUCKETS`].
pub struct SlowHistogram(Histogram);

impl Default for SlowHistogram {
    fn default() -> Self {
        SlowHistogram(Histogram::with_bounds(&SLOW_BUCKETS))
    }
}

impl std::ops::Deref for SlowHistogram {
    type Target = Histogram;

    fn deref(&self) -> &Histogram {
        &self.0
    }
}

impl Histogram {
    fn with_bounds(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_ns: AtomicU64::new(0),
        }
    }

    /// Records one observation.
    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let bucket = self
            .bounds
            .iter()
            .position(|&b| secs <= b)
            .unwrap_or(self.bounds.len());
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }

    pub(crate) fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        let sep = if labels.is_empty() { "" } else { "," };
        for (i, bound) in self.bounds.iter().enumerate() {
            cumulative += self.counts[i].load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {cumulative}");
        }
        cumulative += self.counts[self.bounds.len()].load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {cumulative}");
        let sum = self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
        let braces = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(out, "{name}_sum{braces} {sum}");
        let _ = writeln!(out, "{name}_count{braces} {cumulative}");
    }
}

/// The metrics of live subscriptions (see `live`).
pub struct LiveMetrics {
    /// Open subscriptions per board (`game/mode/season/scope`); boards with none are absent.
    subscribers: Mutex<BTreeMap<String, u64>>,
    /// Messages written, by kind, in the order of [`crate::live::Kind::ALL`].
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

    fn render(&self, out: &mut String) {
        out.push_str("# HELP standings_live_subscribers Open live subscriptions per board.\n");
        out.push_str("# TYPE standings_live_subscribers gauge\n");
        for (board, n) in self.subscribers.lock_unpoisoned().iter() {
            let _ = writeln!(out, "standings_live_subscribers{{board=\"{board}\"}} {n}");
        }
        out.push_str("# HELP standings_live_messages_total Live messages written, by type.\n");
        out.push_str("# TYPE standings_live_messages_total counter\n");
        for (kind, n) in crate::live::Kind::ALL.iter().zip(&self.messages) {
            let _ = writeln!(
                out,
                "standings_live_messages_total{{type=\"{}\"}} {}",
                kind.as_str(),
                n.get()
            );
        }
        out.push_str("# HELP standings_live_bytes_total Bytes of live messages written.\n");
        out.push_str("# TYPE standings_live_bytes_total counter\n");
        let _ = writeln!(out, "standings_live_bytes_total {}", self.bytes.get());
        out.push_str(
            "# HELP standings_live_resyncs_total Subscribers sent resync because they fell a whole queue behind.\n",
        );
        out.push_str("# TYPE standings_live_resyncs_total counter\n");
        let _ = writeln!(out, "standings_live_resyncs_total {}", self.resyncs.get());
        out.push_str(
            "# HELP standings_live_drops_total Subscribers that closed their end before their stream ended.\n",
        );
        out.push_str("# TYPE standings_live_drops_total counter\n");
        let _ = writeln!(out, "standings_live_drops_total {}", self.drops.get());
        out.push_str(
            "# HELP standings_live_notify_lag_seconds A change's commit to its live message written to the socket.\n",
        );
        out.push_str("# TYPE standings_live_notify_lag_seconds histogram\n");
        self.notify_lag
            .render(out, "standings_live_notify_lag_seconds", "");
        out.push_str(
            "# HELP standings_live_window_seconds One coalescing window's work: reading the moved views and queueing their deltas.\n",
        );
        out.push_str("# TYPE standings_live_window_seconds histogram\n");
        self.window.render(out, "standings_live_window_seconds", "");
        out.push_str(
            "# HELP standings_live_busy_refusals_total Subscriptions refused LIVE_BUSY: a new view while the windows' work was past its share.\n",
        );
        out.push_str("# TYPE standings_live_busy_refusals_total counter\n");
        let _ = writeln!(
            out,
            "standings_live_busy_refusals_total {}",
            self.busy_refusals.get()
        );
    }
}

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
    fn render(&self, out: &mut String) {
        out.push_str(
            "# HELP standings_snapshot_publications_total Snapshot publications, one board instance's version each.\n",
        );
        out.push_str("# TYPE standings_snapshot_publications_total counter\n");
        let _ = writeln!(
            out,
            "standings_snapshot_publications_total {}",
            self.publications.get()
        );
        out.push_str(
            "# HELP standings_snapshot_publish_seconds One publication: reading the board (or a copy of it, for a first publication of a large board) and cutting the new parts.\n",
        );
        out.push_str("# TYPE standings_snapshot_publish_seconds histogram\n");
        self.publish.render(out, "standings_snapshot_publish_seconds", "");
        out.push_str(
            "# HELP standings_snapshot_new_bytes_total Bytes of the parts publications introduced, manifests included.\n",
        );
        out.push_str("# TYPE standings_snapshot_new_bytes_total counter\n");
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
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} counter");
            let _ = writeln!(out, "{name} {}", counter.get());
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
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} gauge");
            let _ = writeln!(out, "{name} {}", value.load(Ordering::Relaxed));
        }
    }
}

/// The kinds of read the query-latency histogram tells apart.
pub(crate) const QUERY_KINDS: [&str; 5] = ["top", "rank", "nearby", "friends", "boards"];

/// Every metric of the service.
#[derive(Default)]
pub struct Metrics {
    /// Submission to durable commit.
    pub durable_ack: Histogram,
    /// Commit to visible in the index.
    pub visible_lag: Histogram,
    /// How long a checkpoint took to encode the boards: the boards show no change meanwhile.
    pub checkpoint_encode: SlowHistogram,
    /// Checkpoint begun to stored.
    pub checkpoint_stored: SlowHistogram,
    /// Read latency, by kind (see [`QUERY_KINDS`]).
    pub queries: [Histogram; 5],
    /// Events stored.
    pub events_accepted: Counter,
    /// Retried events answered `DUPLICATE`.
    pub duplicates: Counter,
    /// Times the writer released memory after a pause (see `rest`).
    pub rests: Counter,
    /// Board instances repacked at those times.
    pub boards_repacked: Counter,
    /// Connections open now (see `http.rs`).
    pub connections_open: AtomicU64,
    /// Connections closed at once because `max_connections` were open.
    pub connections_refused: Counter,
    /// Connections closed because a request's header or the next request did not come in time.
    pub connections_timed_out: Counter,
    /// Closed periods that left memory restored from storage for reads (once per instance
    /// while the registry's cache of them keeps it).
    pub closed_restores: Counter,
    /// Live subscriptions.
    pub live: LiveMetrics,
    /// Snapshot publication.
    pub snapshots: SnapshotMetrics,
    /// Error answers by code.
    rejections: Mutex<BTreeMap<&'static str, u64>>,
}

impl Metrics {
    /// Counts one error answer.
    pub fn rejection(&self, code: &'static str) {
        let mut map = self.rejections.lock_unpoisoned();
        *map.entry(code).or_insert(0) += 1;
    }

    /// Records a read's latency.
    pub fn query(&self, kind: &str, d: Duration) {
        if let Some(i) = QUERY_KINDS.iter().position(|k| *k == kind) {
            self.queries[i].observe(d);
        }
    }

    /// The Prometheus text exposition.
    pub fn render(&self, registry: &Registry) -> String {
        self.render_all(&[registry])
    }

    /// [`Metrics::render`] over several registries (a cluster node's partitions), whose boards
    /// are distinct.
    pub fn render_all(&self, registries: &[&Registry]) -> String {
        let mut out = String::new();
        out.push_str(
            "# HELP standings_durable_ack_seconds Submission received to events durably committed.\n",
        );
        out.push_str("# TYPE standings_durable_ack_seconds histogram\n");
        self.durable_ack
            .render(&mut out, "standings_durable_ack_seconds", "");
        out.push_str("# HELP standings_event_visible_lag_seconds Commit to visible in the ranked index.\n");
        out.push_str("# TYPE standings_event_visible_lag_seconds histogram\n");
        self.visible_lag
            .render(&mut out, "standings_event_visible_lag_seconds", "");
        out.push_str(
            "# HELP standings_checkpoint_encode_seconds Encoding the boards for a checkpoint: changes become visible after it (a periodic one answers writes meanwhile).\n",
        );
        out.push_str("# TYPE standings_checkpoint_encode_seconds histogram\n");
        self.checkpoint_encode
            .render(&mut out, "standings_checkpoint_encode_seconds", "");
        out.push_str("# HELP standings_checkpoint_seconds A checkpoint begun to stored.\n");
        out.push_str("# TYPE standings_checkpoint_seconds histogram\n");
        self.checkpoint_stored
            .render(&mut out, "standings_checkpoint_seconds", "");
        out.push_str("# HELP standings_query_seconds Read latency by kind.\n");
        out.push_str("# TYPE standings_query_seconds histogram\n");
        for (kind, h) in QUERY_KINDS.iter().zip(&self.queries) {
            h.render(&mut out, "standings_query_seconds", &format!("kind=\"{kind}\""));
        }
        out.push_str("# HELP standings_events_accepted_total Events durably stored.\n");
        out.push_str("# TYPE standings_events_accepted_total counter\n");
        let _ = writeln!(
            out,
            "standings_events_accepted_total {}",
            self.events_accepted.get()
        );
        out.push_str("# HELP standings_duplicates_total Retried events answered DUPLICATE.\n");
        out.push_str("# TYPE standings_duplicates_total counter\n");
        let _ = writeln!(out, "standings_duplicates_total {}", self.duplicates.get());
        out.push_str(
            "# HELP standings_rests_total Times the writer released memory after a pause in writes.\n",
        );
        out.push_str("# TYPE standings_rests_total counter\n");
        let _ = writeln!(out, "standings_rests_total {}", self.rests.get());
        out.push_str(
            "# HELP standings_boards_repacked_total Board instances whose ranked structure was packed at a rest.\n",
        );
        out.push_str("# TYPE standings_boards_repacked_total counter\n");
        let _ = writeln!(
            out,
            "standings_boards_repacked_total {}",
            self.boards_repacked.get()
        );
        out.push_str("# HELP standings_connections_open HTTP connections open now.\n");
        out.push_str("# TYPE standings_connections_open gauge\n");
        let _ = writeln!(
            out,
            "standings_connections_open {}",
            self.connections_open.load(Ordering::Relaxed)
        );
        out.push_str(
            "# HELP standings_connections_refused_total Connections closed on arrival because max_connections were open.\n",
        );
        out.push_str("# TYPE standings_connections_refused_total counter\n");
        let _ = writeln!(
            out,
            "standings_connections_refused_total {}",
            self.connections_refused.get()
        );
        out.push_str(
            "# HELP standings_connections_timed_out_total Connections closed for a request header or a next request that did not come in time.\n",
        );
        out.push_str("# TYPE standings_connections_timed_out_total counter\n");
        let _ = writeln!(
            out,
            "standings_connections_timed_out_total {}",
            self.connections_timed_out.get()
        );
        out.push_str(
            "# HELP standings_closed_period_restores_total Closed periods that left memory restored from storage for reads.\n",
        );
        out.push_str("# TYPE standings_closed_period_restores_total counter\n");
        let _ = writeln!(
            out,
            "standings_closed_period_restores_total {}",
            self.closed_restores.get()
        );
        out.push_str(
            "# HELP standings_closed_periods_cached Closed periods that left memory, held restored for reads (closed_periods_cached at most).\n",
        );
        out.push_str("# TYPE standings_closed_periods_cached gauge\n");
        let cached: usize = registries.iter().map(|r| r.closed.len()).sum();
        let _ = writeln!(out, "standings_closed_periods_cached {cached}");
        out.push_str("# HELP standings_rejections_total Error answers by code.\n");
        out.push_str("# TYPE standings_rejections_total counter\n");
        for (code, n) in self.rejections.lock_unpoisoned().iter() {
            let _ = writeln!(out, "standings_rejections_total{{code=\"{code}\"}} {n}");
        }
        self.live.render(&mut out);
        self.snapshots.render(&mut out);
        let broken: Vec<_> = registries.iter().flat_map(|r| r.broken()).collect();
        out.push_str(
            "# HELP standings_broken_boards Boards not served because a log entry could not be carried out on them at start (see /readyz).\n",
        );
        out.push_str("# TYPE standings_broken_boards gauge\n");
        let _ = writeln!(out, "standings_broken_boards {}", broken.len());
        out.push_str(
            "# HELP standings_board_broken_seq The log seq of the entry that broke each broken board.\n",
        );
        out.push_str("# TYPE standings_board_broken_seq gauge\n");
        for (id, why) in &broken {
            let _ = writeln!(
                out,
                "standings_board_broken_seq{{game=\"{}\",mode=\"{}\",season=\"{}\",scope=\"{}\"}} {}",
                id.game, id.mode, id.season, id.scope, why.seq
            );
        }
        out.push_str("# HELP standings_board_members Ranked players per board.\n");
        out.push_str("# TYPE standings_board_members gauge\n");
        out.push_str("# HELP standings_board_version The current board_version per board.\n");
        out.push_str("# TYPE standings_board_version gauge\n");
        for slot in registries.iter().flat_map(|r| r.all_instances()) {
            let board = slot.read();
            let id = &slot.id;
            let labels = format!(
                "game=\"{}\",mode=\"{}\",season=\"{}\",scope=\"{}\",period=\"{}\"",
                id.game, id.mode, id.season, id.scope, slot.period.key
            );
            let _ = writeln!(
                out,
                "standings_board_members{{{labels}}} {}",
                board.total_players()
            );
            let _ = writeln!(out, "standings_board_version{{{labels}}} {}", board.version());
        }
        out
    }
}
