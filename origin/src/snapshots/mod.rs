//! Snapshots for the edge: each board instance whose head is asked for is published in the
//! core's chunked format (`standings_core::snapshot`), and its parts are served by hash.
//!
//! [`Snapshots`] follows the instances whose head was asked for. The first request for an
//! instance's head publishes it before it is answered. After that, rounds (four per
//! `interval_ms`, on the injected clock) publish each followed instance again when its version
//! moved and its last publication is an interval old, until nobody asked for its head for
//! `idle_seconds`. Each instance has its own `standings_core::Publisher`, which hands out only
//! the parts its version introduced, so a version that moved a few players adds a few chunks
//! and the rest are shared with the version before. Publishing holds the board's read lock
//! only while the publisher reads it (or, for a whole build of a large board, while a copy is
//! taken), and runs on the blocking pool, never on a runtime worker.
//!
//! The decisions are pure and live apart: `schedule` (when an instance is published again or
//! forgotten, when the next round is) and `parts` (what is held, and when an unnamed part is
//! gone). This module only feeds them the clock, the boards and the locks. The wire format of
//! the endpoints is `docs/snapshots.md`.
//!
//! Locks, in this order and never across an await: the map of instances, then one instance's
//! publisher, then a board's read lock (alone: it is released before anything else is taken),
//! then the part store, then an instance's head.

mod parts;
mod schedule;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use standings_core::{BoardId, ChunkHash, ChunkingOptions, Publisher};

pub use self::parts::PartKind;
use self::parts::PartStore;
use self::schedule::{Due, Published, Timing};
use crate::FastHash;
use crate::boards::{BoardSlot, Registry};
use crate::clock::Clock;
use crate::config::SnapshotsConfig;
use crate::http::error::AppError;
use crate::metrics::Metrics;
use crate::sync::LockUnpoisoned;

/// What a head answers: the latest publication of one board instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    /// The board version it holds.
    pub board_version: u64,
    /// The hash of its manifest.
    pub manifest: ChunkHash,
    /// When it was published (ms since the epoch, by the service's clock).
    pub published_at_ms: i64,
}

/// A fetched part: its bytes and the games that published it.
pub struct Part {
    /// The bytes (shared, not copied).
    pub bytes: Bytes,
    /// The games that published it; an edge of any of them may fetch it.
    pub games: Vec<Arc<str>>,
}

/// One instance's key: the board and the period key.
type InstanceKey = (BoardId, String);

/// The followed instances, by board then period key, so that a head request finds its
/// instance with the slot's own names, copying none.
#[derive(Default)]
struct Followed {
    by_board: HashMap<BoardId, HashMap<String, Arc<Instance>, FastHash>, FastHash>,
    count: usize,
}

/// One followed board instance.
struct Instance {
    key: InstanceKey,
    /// The board's game, shared by every part it publishes.
    game: Arc<str>,
    /// The slot its head request resolved, for an instance the registry does not hold (a
    /// closed period read from storage, a period with no events yet); a round reads the
    /// registry's slot whenever there is one, and keeps it here.
    slot: Mutex<Arc<BoardSlot>>,
    /// When its head was last asked for (ms); written under the map's lock.
    asked_ms: AtomicI64,
    publishing: Mutex<Publishing>,
    head: Mutex<Option<Head>>,
}

/// What publishing an instance needs, held while it publishes.
struct Publishing {
    publisher: Publisher,
    /// Every part its head names (the manifest and its chunks), sorted, each once.
    named: Vec<ChunkHash>,
    published: Option<Published>,
    /// Set once the instance left the map: it is not published again and names nothing.
    forgotten: bool,
}

/// The publication of board instances for the edge, and the parts it holds (see the module
/// doc).
pub struct Snapshots {
    config: SnapshotsConfig,
    timing: Timing,
    registry: Arc<Registry>,
    clock: Clock,
    metrics: Arc<Metrics>,
    instances: Mutex<Followed>,
    parts: Mutex<PartStore>,
    /// The clock's reading at the start of the last round that finished, so a test that moved
    /// the clock knows when a round has seen it.
    rounds: tokio::sync::watch::Sender<i64>,
}

fn ms(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Snapshots {
    /// The publication of snapshots with `config`, following nothing yet; [`Snapshots::start`]
    /// starts its rounds.
    pub fn new(
        config: SnapshotsConfig,
        registry: Arc<Registry>,
        clock: Clock,
        metrics: Arc<Metrics>,
    ) -> Arc<Snapshots> {
        Arc::new(Snapshots {
            timing: Timing {
                interval_ms: ms(config.interval_ms),
                idle_ms: ms(config.idle_seconds).saturating_mul(1000),
            },
            parts: Mutex::new(PartStore::new(ms(config.retention_seconds).saturating_mul(1000))),
            config,
            registry,
            clock,
            metrics,
            instances: Mutex::default(),
            rounds: tokio::sync::watch::Sender::new(i64::MIN),
        })
    }

    /// The settings.
    pub fn config(&self) -> &SnapshotsConfig {
        &self.config
    }

    /// Starts the task that runs a round four times per `interval_ms` on the clock (a manual
    /// clock in tests moves it), until the service's state is dropped. The first deadline is
    /// taken now, so a manual clock moved before the task first runs still fires it. Each round
    /// runs on the blocking pool.
    pub fn start(self: &Arc<Self>) {
        let snapshots = Arc::downgrade(self);
        let clock = self.clock.clone();
        let every = self.timing.round_ms();
        let mut due_at = clock.now_ms().saturating_add(every);
        tokio::spawn(async move {
            loop {
                clock.sleep_until(due_at).await;
                let Some(snapshots) = snapshots.upgrade() else {
                    return;
                };
                let now = clock.now_ms();
                due_at = schedule::next_round(due_at, every, now);
                let work = tokio::task::spawn_blocking(move || snapshots.round(now));
                if let Err(e) = work.await {
                    tracing::error!("a snapshot round failed: {e}");
                }
            }
        });
    }

    /// A watch of the clock's reading at the start of the last round that finished: a test
    /// that moved the clock to `t` waits until it reads `t` or later.
    pub fn rounds(&self) -> tokio::sync::watch::Receiver<i64> {
        self.rounds.subscribe()
    }

    /// The head of `slot`'s instance, published now on the blocking pool if it never was, and
    /// noted as asked for. O(1) once published; the first time, one publication.
    pub async fn head(self: &Arc<Self>, slot: Arc<BoardSlot>) -> Result<Head, AppError> {
        let now = self.clock.now_ms();
        loop {
            let instance = self.follow(&slot, now);
            if let Some(head) = *instance.head.lock_unpoisoned() {
                return Ok(head);
            }
            let snapshots = self.clone();
            let published = tokio::task::spawn_blocking(move || {
                let mut publishing = instance.publishing.lock_unpoisoned();
                // Another request may have published it while this one waited for the lock.
                if publishing.published.is_none() && !publishing.forgotten {
                    let slot = instance.slot.lock_unpoisoned().clone();
                    snapshots.publish(&instance, &mut publishing, &slot, now);
                }
                *instance.head.lock_unpoisoned()
            })
            .await
            .map_err(|e| {
                AppError::Internal(format!("publishing {} {} failed: {e}", slot.id, slot.period.key))
            })?;
            match published {
                Some(head) => return Ok(head),
                // Forgotten between the two steps, which takes idle_seconds without a request
                // for it: follow it again.
                None => continue,
            }
        }
    }

    /// The part `hash` of `kind`, if it is named by a current head or within its retention.
    /// O(1) plus a copy of the games.
    pub fn part(&self, hash: &ChunkHash, kind: PartKind) -> Option<Part> {
        let now = self.clock.now_ms();
        let parts = self.parts.lock_unpoisoned();
        parts.get(hash, kind, now).map(|found| Part {
            bytes: found.bytes.clone(),
            games: found.games.to_vec(),
        })
    }

    /// The followed instance of `slot` (followed from now if it was not), marked as asked for
    /// at `now_ms`. O(1), copying nothing when it is followed already.
    fn follow(&self, slot: &Arc<BoardSlot>, now_ms: i64) -> Arc<Instance> {
        let mut followed = self.instances.lock_unpoisoned();
        let held = followed
            .by_board
            .get(&slot.id)
            .and_then(|periods| periods.get(&slot.period.key))
            .cloned();
        let instance = match held {
            Some(instance) => instance,
            None => {
                let instance = Arc::new(Instance {
                    key: (slot.id.clone(), slot.period.key.clone()),
                    game: Arc::from(slot.id.game.as_str()),
                    slot: Mutex::new(slot.clone()),
                    asked_ms: AtomicI64::new(now_ms),
                    publishing: Mutex::new(Publishing {
                        publisher: Publisher::new(ChunkingOptions::default()),
                        named: Vec::new(),
                        published: None,
                        forgotten: false,
                    }),
                    head: Mutex::new(None),
                });
                followed
                    .by_board
                    .entry(slot.id.clone())
                    .or_default()
                    .insert(slot.period.key.clone(), instance.clone());
                followed.count += 1;
                self.metrics
                    .snapshots
                    .instances
                    .store(followed.count as u64, Ordering::Relaxed);
                instance
            }
        };
        // A later time only: a request that read the clock before a round's `now` must not
        // move its idleness back.
        instance.asked_ms.fetch_max(now_ms, Ordering::Relaxed);
        instance
    }

    /// One round at `now_ms`: forgets the instances nobody asked for, publishes those due,
    /// drops the parts past their retention. O(instances + publications).
    fn round(&self, now_ms: i64) {
        let (kept, forgotten) = {
            let mut followed = self.instances.lock_unpoisoned();
            let mut forgotten = Vec::new();
            let mut kept = Vec::with_capacity(followed.count);
            for periods in followed.by_board.values_mut() {
                periods.retain(|_, instance| {
                    let asked = instance.asked_ms.load(Ordering::Relaxed);
                    // Only the idleness decides here; whether to publish comes below.
                    let idle = schedule::due(self.timing, None, asked, 0, now_ms) == Due::Forget;
                    if idle {
                        forgotten.push(instance.clone());
                    } else {
                        kept.push(instance.clone());
                    }
                    !idle
                });
            }
            followed.by_board.retain(|_, periods| !periods.is_empty());
            followed.count = kept.len();
            self.metrics
                .snapshots
                .instances
                .store(kept.len() as u64, Ordering::Relaxed);
            (kept, forgotten)
        };
        for instance in forgotten {
            self.forget(&instance, now_ms);
        }
        for instance in kept {
            let Some((slot, replaced)) = self.current_slot(&instance) else {
                self.forget_archived(&instance, now_ms);
                continue;
            };
            // Decided under the publisher's lock, so a head request publishing the instance
            // for the first time meanwhile is seen, not repeated.
            let mut publishing = instance.publishing.lock_unpoisoned();
            if publishing.forgotten {
                continue;
            }
            if replaced {
                // Another board object now (a period installed or restored anew): a publisher
                // that follows one board's changes starts over, handing out every part again
                // (the store keeps one copy of each).
                publishing.publisher = Publisher::new(ChunkingOptions::default());
            }
            let version = slot.read().version();
            let asked = instance.asked_ms.load(Ordering::Relaxed);
            if schedule::due(self.timing, publishing.published, asked, version, now_ms) == Due::Publish {
                self.publish(&instance, &mut publishing, &slot, now_ms);
            }
        }
        let mut parts = self.parts.lock_unpoisoned();
        parts.sweep(now_ms);
        self.note_held(&parts);
        drop(parts);
        self.rounds.send_replace(now_ms);
    }

    /// The slot an instance reads now, and whether it replaced the one read before: the
    /// registry's when it holds the instance, else the one its head resolved (a closed period
    /// that left memory has not changed since). `None` when the board is gone or archived.
    fn current_slot(&self, instance: &Instance) -> Option<(Arc<BoardSlot>, bool)> {
        let entry = self.registry.entry(&instance.key.0)?;
        if entry.is_archived() || entry.broken().is_some() {
            return None;
        }
        let mut held = instance.slot.lock_unpoisoned();
        let mut replaced = false;
        if let Some(live) = entry.instance(&instance.key.1)
            && !Arc::ptr_eq(&live, &held)
        {
            *held = live;
            replaced = true;
        }
        Some((held.clone(), replaced))
    }

    /// Publishes `instance`'s current version from `slot` at `now_ms`, with its publisher's
    /// lock held (`publishing`): the board's read lock is held only while the publisher reads
    /// it. O(the publisher's cost) plus O(parts named) in the store.
    fn publish(&self, instance: &Instance, publishing: &mut Publishing, slot: &BoardSlot, now_ms: i64) {
        let game = &instance.game;
        let (mut took, mut new_bytes, mut fresh) = (std::time::Duration::ZERO, 0, false);
        let ((board_version, manifest_hash), named, added, removed, mut parts) = loop {
            let began = Instant::now();
            let publication = read_and_publish(&mut publishing.publisher, slot);
            took += began.elapsed();
            let named = named_by(&publication);
            let (added, removed) = parts::changes(&publishing.named, &named);
            let manifest = (publication.manifest.board_version, publication.manifest_hash);
            let mut parts = self.parts.lock_unpoisoned();
            new_bytes += store_parts(&mut parts, publication, game, now_ms);
            // What both versions name is held, as this instance names it; what only the new
            // one names, the publisher handed out now. A part missing is a bug in that
            // promise, and a fresh publisher, which hands out every part, repairs it (tried
            // once: a fresh one that still misses a part is published as it is, and logged).
            let held = parts.holds_all(&added);
            if held || fresh {
                if !held {
                    tracing::error!(
                        "the snapshot of {} {} names a part no publication handed out",
                        instance.key.0,
                        instance.key.1
                    );
                }
                break (manifest, named, added, removed, parts);
            }
            drop(parts);
            tracing::error!(
                "the snapshot of {} {} reused a part the store does not hold; publishing it whole",
                instance.key.0,
                instance.key.1
            );
            publishing.publisher = Publisher::new(ChunkingOptions::default());
            fresh = true;
        };
        // Only what changed is counted again: a part both versions share keeps its count.
        parts.name(&added);
        parts.unname(&removed, now_ms);
        self.note_held(&parts);
        drop(parts);
        publishing.named = named;
        publishing.published = Some(Published {
            board_version,
            at_ms: now_ms,
        });
        *instance.head.lock_unpoisoned() = Some(Head {
            board_version,
            manifest: manifest_hash,
            published_at_ms: now_ms,
        });
        let metrics = &self.metrics.snapshots;
        metrics.publications.add(1);
        metrics.publish.observe(took);
        metrics.new_bytes.add(new_bytes);
    }

    /// Stops following an instance nobody asked for: it names nothing any more, so its parts
    /// go on their retention.
    fn forget(&self, instance: &Instance, now_ms: i64) {
        let mut publishing = instance.publishing.lock_unpoisoned();
        publishing.forgotten = true;
        let named = std::mem::take(&mut publishing.named);
        let mut parts = self.parts.lock_unpoisoned();
        parts.unname(&named, now_ms);
        self.note_held(&parts);
    }

    /// Forgets an instance whose board was archived or is gone (its head answers 404 now).
    fn forget_archived(&self, instance: &Arc<Instance>, now_ms: i64) {
        let removed = {
            let mut followed = self.instances.lock_unpoisoned();
            let (board, period_key) = &instance.key;
            let periods = followed.by_board.get_mut(board);
            let removed = periods.is_some_and(|periods| {
                let held = periods
                    .get(period_key)
                    .is_some_and(|held| Arc::ptr_eq(held, instance));
                if held {
                    periods.remove(period_key);
                }
                held
            });
            if removed {
                followed.by_board.retain(|_, periods| !periods.is_empty());
                followed.count -= 1;
                self.metrics
                    .snapshots
                    .instances
                    .store(followed.count as u64, Ordering::Relaxed);
            }
            removed
        };
        if removed {
            self.forget(instance, now_ms);
        }
    }

    /// Sets the gauges of the parts held.
    fn note_held(&self, parts: &PartStore) {
        let metrics = &self.metrics.snapshots;
        metrics
            .parts_held
            .store(parts.parts_held() as u64, Ordering::Relaxed);
        metrics.bytes_held.store(parts.bytes_held(), Ordering::Relaxed);
    }
}

/// Publishes `slot`'s board with `publisher`, holding the board's read lock as briefly as the
/// publication allows. A publisher that follows the board cuts only what changed, and reads
/// under the lock. One that will build the whole snapshot of a large board (a first
/// publication, or the board no longer holds the changes since the last) reads a copy, taken
/// under the lock much faster than the build (which encodes and hashes every entry), so the
/// writer does not wait for the whole build; the copy costs the board's memory again until the
/// build ends. O(the publication), plus O(n) for a copy.
fn read_and_publish(publisher: &mut Publisher, slot: &BoardSlot) -> standings_core::Publication {
    let board = slot.read();
    let whole = schedule::builds_from_a_copy(
        publisher.published_version(),
        board.oldest_held_version(),
        board.version(),
        board.total_players(),
    );
    if whole {
        let copy = board.clone();
        drop(board);
        publisher.publish(&copy)
    } else {
        publisher.publish(&board)
    }
}

/// Every part a publication's head names: its manifest and each chunk, sorted, each once (two
/// empty lookup partitions are one chunk). O(chunks log chunks).
fn named_by(publication: &standings_core::Publication) -> Vec<ChunkHash> {
    let manifest = &publication.manifest;
    let mut named: Vec<ChunkHash> = std::iter::once(publication.manifest_hash)
        .chain(manifest.rank_chunks.iter().map(|c| c.hash))
        .chain(manifest.lookup_chunks.iter().map(|c| c.hash))
        .collect();
    named.sort_unstable();
    named.dedup();
    named
}

/// Adds a publication's manifest and new chunks to the store, as published by `game`; returns
/// their bytes. O(new parts).
fn store_parts(
    parts: &mut PartStore,
    publication: standings_core::Publication,
    game: &Arc<str>,
    now_ms: i64,
) -> u64 {
    let mut added = publication.manifest_bytes.len() as u64;
    parts.insert(
        publication.manifest_hash,
        PartKind::Manifest,
        Bytes::from(publication.manifest_bytes),
        game,
        now_ms,
    );
    for (hash, bytes) in publication.new_parts {
        added += bytes.len() as u64;
        parts.insert(hash, PartKind::Chunk, Bytes::from(bytes), game, now_ms);
    }
    added
}

#[cfg(test)]
mod tests {
    use standings_core::{BoardRules, ScoreEvent, ScoreMode};

    use super::*;
    use crate::boards::BoardEntry;
    use crate::domain::BoardDef;
    use crate::domain::periods::PeriodKind;

    /// 2025-10-13T12:00:00Z.
    const NOON: i64 = 1_760_356_800_000;

    /// Snapshots over an in-memory registry with one board (all time and daily) on a manual
    /// clock; no rounds run unless a test calls `round`.
    fn world() -> (Arc<Snapshots>, Arc<BoardEntry>, Clock) {
        let registry = Arc::new(Registry::default());
        let entry = registry
            .add(&BoardDef {
                id: BoardId::new("g", "m", "s1", "global").unwrap(),
                rules: BoardRules::new(ScoreMode::Highest),
                periods: vec!["all_time".into(), "daily".into()],
                grace_seconds: 0,
                timezone: "UTC".into(),
            })
            .unwrap();
        let clock = Clock::manual(NOON);
        let snapshots = Snapshots::new(
            SnapshotsConfig::default(),
            registry,
            clock.clone(),
            Arc::new(Metrics::default()),
        );
        (snapshots, entry, clock)
    }

    fn score(slot: &BoardSlot, n: usize, value: i64) {
        let event = ScoreEvent::new(&format!("e{n}"), &format!("p{n}"), value, NOON).unwrap();
        slot.write().apply(&event).unwrap();
    }

    /// Many first requests for one head at once publish it once, and all answer that
    /// publication.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_first_heads_publish_once() {
        let (snapshots, entry, _) = world();
        let slot = entry.all_time();
        for n in 0..50 {
            score(&slot, n, n as i64);
        }
        let asks: Vec<_> = (0..16)
            .map(|_| {
                let (snapshots, slot) = (snapshots.clone(), slot.clone());
                tokio::spawn(async move { snapshots.head(slot).await.unwrap() })
            })
            .collect();
        let mut heads = Vec::new();
        for ask in asks {
            heads.push(ask.await.unwrap());
        }
        assert!(heads.windows(2).all(|w| w[0] == w[1]), "{heads:?}");
        assert_eq!(heads[0].board_version, 50);
        assert_eq!(snapshots.metrics.snapshots.publications.get(), 1);
    }

    /// A round forgets an instance whose season was archived; its parts stay fetchable for
    /// the retention from that round, then are gone.
    #[tokio::test]
    async fn an_archived_board_is_forgotten_and_its_parts_expire() {
        let (snapshots, entry, _) = world();
        let slot = entry.all_time();
        score(&slot, 1, 10);
        let head = snapshots.head(slot).await.unwrap();
        entry.archive();
        snapshots.round(NOON + 1_000);
        assert_eq!(snapshots.metrics.snapshots.instances.load(Ordering::Relaxed), 0);
        let fetch = |at: i64| {
            let parts = snapshots.parts.lock_unpoisoned();
            parts.get(&head.manifest, PartKind::Manifest, at).is_some()
        };
        assert!(fetch(NOON + 1_000 + 59_999));
        assert!(!fetch(NOON + 61_000));
    }

    /// An instance first asked for before its period had events reads the registry's slot once
    /// the writer creates it, and is published from that board.
    #[tokio::test]
    async fn an_instance_follows_the_slot_the_registry_creates() {
        let (snapshots, entry, clock) = world();
        let period = entry.calendar.period_of(PeriodKind::Daily, NOON).unwrap();
        // What a read of a period with no events resolves: an empty slot outside the registry.
        let empty = Arc::new(BoardSlot::new(
            entry.def.id.clone(),
            period.clone(),
            standings_core::Board::new(entry.def.rules),
        ));
        let first = snapshots.head(empty).await.unwrap();
        assert_eq!(first.board_version, 0);
        let live = entry.instance_or_create(&period);
        score(&live, 1, 10);
        score(&live, 2, 20);
        clock.set(NOON + 1_000);
        snapshots.round(NOON + 1_000);
        let again = snapshots.head(live).await.unwrap();
        assert_eq!(again.board_version, 2);
        assert_eq!(again.published_at_ms, NOON + 1_000);
        assert_ne!(again.manifest, first.manifest);
        assert_eq!(snapshots.metrics.snapshots.publications.get(), 2);
    }
}
