//! Prometheus metrics, kept with atomics and rendered as text at `/metrics`. Each tier keeps
//! and renders its own (`live::metrics`, `snapshots::metrics`, the cluster's); this holds them
//! and the writer's and readers' own.

pub(crate) mod instruments;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub(crate) use self::instruments::{Counter, Histogram, SlowHistogram, family};
use crate::boards::Registry;
use crate::live::metrics::LiveMetrics;
use crate::snapshots::metrics::SnapshotMetrics;
use crate::sync::LockUnpoisoned;

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
    /// Connections open now (see `http::serve`).
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
        family(
            &mut out,
            "standings_durable_ack_seconds",
            "Submission received to events durably committed.",
            "histogram",
        );
        self.durable_ack
            .render(&mut out, "standings_durable_ack_seconds", "");
        family(
            &mut out,
            "standings_event_visible_lag_seconds",
            "Commit to visible in the ranked index.",
            "histogram",
        );
        self.visible_lag
            .render(&mut out, "standings_event_visible_lag_seconds", "");
        family(
            &mut out,
            "standings_checkpoint_encode_seconds",
            "Encoding the boards for a checkpoint: changes become visible after it (a periodic one answers writes meanwhile).",
            "histogram",
        );
        self.checkpoint_encode
            .render(&mut out, "standings_checkpoint_encode_seconds", "");
        family(
            &mut out,
            "standings_checkpoint_seconds",
            "A checkpoint begun to stored.",
            "histogram",
        );
        self.checkpoint_stored
            .render(&mut out, "standings_checkpoint_seconds", "");
        family(
            &mut out,
            "standings_query_seconds",
            "Read latency by kind.",
            "histogram",
        );
        for (kind, h) in QUERY_KINDS.iter().zip(&self.queries) {
            h.render(&mut out, "standings_query_seconds", &format!("kind=\"{kind}\""));
        }
        family(
            &mut out,
            "standings_events_accepted_total",
            "Events durably stored.",
            "counter",
        );
        let _ = writeln!(
            out,
            "standings_events_accepted_total {}",
            self.events_accepted.get()
        );
        family(
            &mut out,
            "standings_duplicates_total",
            "Retried events answered DUPLICATE.",
            "counter",
        );
        let _ = writeln!(out, "standings_duplicates_total {}", self.duplicates.get());
        family(
            &mut out,
            "standings_rests_total",
            "Times the writer released memory after a pause in writes.",
            "counter",
        );
        let _ = writeln!(out, "standings_rests_total {}", self.rests.get());
        family(
            &mut out,
            "standings_boards_repacked_total",
            "Board instances whose ranked structure was packed at a rest.",
            "counter",
        );
        let _ = writeln!(
            out,
            "standings_boards_repacked_total {}",
            self.boards_repacked.get()
        );
        family(
            &mut out,
            "standings_connections_open",
            "HTTP connections open now.",
            "gauge",
        );
        let _ = writeln!(
            out,
            "standings_connections_open {}",
            self.connections_open.load(Ordering::Relaxed)
        );
        family(
            &mut out,
            "standings_connections_refused_total",
            "Connections closed on arrival because max_connections were open.",
            "counter",
        );
        let _ = writeln!(
            out,
            "standings_connections_refused_total {}",
            self.connections_refused.get()
        );
        family(
            &mut out,
            "standings_connections_timed_out_total",
            "Connections closed for a request header or a next request that did not come in time.",
            "counter",
        );
        let _ = writeln!(
            out,
            "standings_connections_timed_out_total {}",
            self.connections_timed_out.get()
        );
        family(
            &mut out,
            "standings_closed_period_restores_total",
            "Closed periods that left memory restored from storage for reads.",
            "counter",
        );
        let _ = writeln!(
            out,
            "standings_closed_period_restores_total {}",
            self.closed_restores.get()
        );
        family(
            &mut out,
            "standings_closed_periods_cached",
            "Closed periods that left memory, held restored for reads (closed_periods_cached at most).",
            "gauge",
        );
        let cached: usize = registries.iter().map(|r| r.closed.len()).sum();
        let _ = writeln!(out, "standings_closed_periods_cached {cached}");
        family(
            &mut out,
            "standings_rejections_total",
            "Error answers by code.",
            "counter",
        );
        for (code, n) in self.rejections.lock_unpoisoned().iter() {
            let _ = writeln!(out, "standings_rejections_total{{code=\"{code}\"}} {n}");
        }
        self.live.render(&mut out);
        self.snapshots.render(&mut out);
        let broken: Vec<_> = registries.iter().flat_map(|r| r.broken()).collect();
        family(
            &mut out,
            "standings_broken_boards",
            "Boards not served because a log entry could not be carried out on them at start (see /readyz).",
            "gauge",
        );
        let _ = writeln!(out, "standings_broken_boards {}", broken.len());
        family(
            &mut out,
            "standings_board_broken_seq",
            "The log seq of the entry that broke each broken board.",
            "gauge",
        );
        for (id, why) in &broken {
            let _ = writeln!(
                out,
                "standings_board_broken_seq{{game=\"{}\",mode=\"{}\",season=\"{}\",scope=\"{}\"}} {}",
                id.game, id.mode, id.season, id.scope, why.seq
            );
        }
        family(
            &mut out,
            "standings_feed_records_stored_total",
            "Feed records stored since the start (docs/feed.md).",
            "counter",
        );
        let stored: u64 = registries.iter().map(|r| r.feed.stored()).sum();
        let _ = writeln!(out, "standings_feed_records_stored_total {stored}");
        family(
            &mut out,
            "standings_feed_records_pending",
            "Feed records made and not yet stored (every 100 ms, and before each checkpoint).",
            "gauge",
        );
        let pending: usize = registries.iter().map(|r| r.feed.pending()).sum();
        let _ = writeln!(out, "standings_feed_records_pending {pending}");
        let (mut delivered, mut failed, mut parked, mut through) =
            (String::new(), String::new(), String::new(), String::new());
        for ((game, id), stats) in registries.iter().flat_map(|r| r.feed.endpoint_stats()) {
            let labels = format!("game=\"{game}\",endpoint=\"{id}\"");
            let _ = writeln!(
                delivered,
                "standings_webhook_deliveries_total{{{labels}}} {}",
                stats.delivered
            );
            let _ = writeln!(
                failed,
                "standings_webhook_failures_total{{{labels}}} {}",
                stats.failed
            );
            let _ = writeln!(
                parked,
                "standings_webhook_parked{{{labels}}} {}",
                u8::from(stats.parked)
            );
            let _ = writeln!(
                through,
                "standings_webhook_delivered_through{{{labels}}} {}",
                stats.delivered_through
            );
        }
        for (name, help, kind, samples) in [
            (
                "standings_webhook_deliveries_total",
                "Records a webhook endpoint's receiver acknowledged, since the start.",
                "counter",
                delivered,
            ),
            (
                "standings_webhook_failures_total",
                "Failed delivery attempts per webhook endpoint, since the start.",
                "counter",
                failed,
            ),
            (
                "standings_webhook_parked",
                "1 while a webhook endpoint is parked (GET its state for the reason).",
                "gauge",
                parked,
            ),
            (
                "standings_webhook_delivered_through",
                "The last feed seq a webhook endpoint's receiver acknowledged.",
                "gauge",
                through,
            ),
        ] {
            family(&mut out, name, help, kind);
            out.push_str(&samples);
        }
        // Each family's samples stay together, as the exposition format asks.
        let (mut members, mut versions, mut shards) = (String::new(), String::new(), String::new());
        for slot in registries.iter().flat_map(|r| r.all_instances()) {
            let board = slot.read();
            let id = &slot.id;
            let labels = format!(
                "game=\"{}\",mode=\"{}\",season=\"{}\",scope=\"{}\",period=\"{}\"",
                id.game, id.mode, id.season, id.scope, slot.period.key
            );
            let _ = writeln!(
                members,
                "standings_board_members{{{labels}}} {}",
                board.total_players()
            );
            let _ = writeln!(
                versions,
                "standings_board_version{{{labels}}} {}",
                board.version()
            );
            let layout = board.index().shards();
            if layout.len() > 1 {
                for (i, shard) in layout.iter().enumerate() {
                    let _ = writeln!(
                        shards,
                        "standings_board_shard_members{{{labels},shard=\"{i}\"}} {}",
                        shard.entries
                    );
                }
            }
        }
        for (name, help, samples) in [
            ("standings_board_members", "Ranked players per board.", members),
            (
                "standings_board_version",
                "The current board_version per board.",
                versions,
            ),
            (
                "standings_board_shard_members",
                "Ranked players per score-range shard of a split board (shard 0 holds the best range).",
                shards,
            ),
        ] {
            family(&mut out, name, help, "gauge");
            out.push_str(&samples);
        }
        out
    }
}
