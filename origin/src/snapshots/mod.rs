//! Snapshots for the edge: each board instance whose head is asked for is published in the
//! core's chunked format (`standings_core::snapshot`), and its parts are served by hash.
//!
//! [`Snapshots`] follows the instances whose head was asked for, within caps (in all and per
//! board; `schedule::room`): a closed instance past them is refused, a current one takes the
//! place of the closed instance asked for least recently. An instance that holds no events (none
//! yet, or in the future) is never followed: its head names the empty snapshot of its board's
//! rules, published once and held for good, so any number of such days costs nothing. A
//! followed instance keeps only a weak reference to a board outside the registry (a closed day
//! in the registry's cache of restored instances): a closed day does not change, and its
//! memory goes with the cache. The first request for an instance's head publishes it before it
//! is answered. After that, rounds (four per
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

mod error;
pub(crate) mod metrics;
mod parts;
mod schedule;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use bytes::Bytes;
use standings_core::snapshot::PublishPath;
use standings_core::{Board, BoardId, BoardRules, ChunkHash, ChunkingOptions, Publisher};

pub use self::error::SnapshotsError;
pub use self::parts::PartKind;
use self::parts::PartStore;
use self::schedule::{Caps, Due, Published, Room, Timing};
use crate::boards::{BoardSlot, Registry, Resolved};
use crate::clock::Clock;
use crate::config::SnapshotsConfig;
use crate::fast_hash::FastHash;
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

impl Followed {
    /// Sets how many instances are followed, and the gauge that shows it. O(1).
    fn set_count(&mut self, count: usize, gauge: &AtomicU64) {
        self.count = count;
        gauge.store(count as u64, Ordering::Relaxed);
    }
}

/// One followed board instance.
struct Instance {
    key: InstanceKey,
    /// The board's game, shared by every part it publishes.
    game: Arc<str>,
    /// When its period closes (end plus grace), `None` for all time: past it, the instance is
    /// a closed one for the caps.
    closes_at: Option<i64>,
    /// The slot it was last published from. A round reads the registry's slot whenever there
    /// is one and keeps it here; a closed period outside the registry (restored into the
    /// registry's cache) is not kept alive by this, as it no longer changes.
    slot: Mutex<Weak<BoardSlot>>,
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
    /// When its last whole manifest, the base of the patches since, was published.
    base_at_ms: Option<i64>,
    /// Set once the instance left the map: it is not published again and names nothing.
    forgotten: bool,
}

/// The parts of the empty snapshot of one board's rules: what the head of every instance with no
/// events names.
struct Empty {
    manifest: ChunkHash,
    parts: Vec<(ChunkHash, PartKind, Bytes)>,
}

/// What a round finds of a followed instance's board.
enum Current {
    /// The board is archived or gone: forget the instance.
    Gone,
    /// A closed period outside the registry whose copy left the cache: unchanged since.
    Unchanged,
    /// Its slot, and whether it replaced the one read before.
    Slot(Arc<BoardSlot>, bool),
}

/// The publication of board instances for the edge, and the parts it holds (see the module
/// doc).
pub struct Snapshots {
    config: SnapshotsConfig,
    timing: Timing,
    caps: Caps,
    /// The empty snapshot of each board rules asked for, its parts held for good. A leaf but
    /// for the part store, which is taken inside it.
    empty: Mutex<HashMap<BoardRules, Arc<Empty>>>,
    registry: Arc<Registry>,
    clock: Clock,
    metrics: Arc<Metrics>,
    instances: Mutex<Followed>,
    parts: Mutex<PartStore>,
    /// The clock's reading at the start of the last round that finished, so a test that moved
    /// the clock knows when a round has seen it.
    rounds: tokio::sync::watch::Sender<i64>,
}

/// How long after an erasure the parts of its game go as soon as no head names them: longer
/// than any publication interval, so every head that named an erased name has been replaced.
pub(crate) const ERASED_RETENTION_MS: i64 = 10 * 60 * 1000;

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
            caps: Caps {
                total: config.max_instances,
                per_board: config.max_instances_per_board,
            },
            empty: Mutex::default(),
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
                // A round with nothing followed has nothing to publish: done here rather than
                // on the blocking pool (a cluster node runs one per partition).
                if snapshots.follows_nothing() {
                    snapshots.round(now);
                    continue;
                }
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

    /// The head of a resolved instance: for one that holds no events, the empty snapshot of its
    /// board's rules (followed never); otherwise its latest publication, published now on the
    /// blocking pool if it never was, the instance followed from now (within the caps: 503
    /// `SNAPSHOT_INSTANCES_FULL` past them) and noted as asked for. O(1) once published; the
    /// first time, one publication.
    pub async fn head(self: &Arc<Self>, resolved: Resolved) -> Result<Head, SnapshotsError> {
        let now = self.clock.now_ms();
        let slot = match resolved {
            Resolved::Empty(slot) => return Ok(self.empty_head(&slot, now)),
            Resolved::Held(slot) | Resolved::Restored(slot) => slot,
        };
        let closes_at = self
            .registry
            .entry(&slot.id)
            .and_then(|entry| entry.calendar.closes_at(&slot.period));
        loop {
            let instance = self.follow(&slot, closes_at, now)?;
            if let Some(head) = *instance.head.lock_unpoisoned() {
                return Ok(head);
            }
            let (snapshots, first) = (self.clone(), slot.clone());
            let published = tokio::task::spawn_blocking(move || {
                let mut publishing = instance.publishing.lock_unpoisoned();
                // Another request may have published it while this one waited for the lock.
                if publishing.published.is_none() && !publishing.forgotten {
                    snapshots.publish(&instance, &mut publishing, &first, now);
                }
                *instance.head.lock_unpoisoned()
            })
            .await
            .map_err(|source| SnapshotsError::Publish {
                board: Box::new(slot.id.clone()),
                period_key: slot.period.key.clone(),
                source,
            })?;
            match published {
                Some(head) => return Ok(head),
                // Forgotten between the two steps (idle, or displaced): follow it again.
                None => continue,
            }
        }
    }

    /// The head of an instance that holds no events: the empty snapshot of its board's rules,
    /// published the first time these rules are asked for and held for good, its parts then
    /// also fetchable by `slot`'s game. O(1) after the first time.
    fn empty_head(&self, slot: &BoardSlot, now_ms: i64) -> Head {
        let game: Arc<str> = Arc::from(slot.id.game.as_str());
        let mut empty = self.empty.lock_unpoisoned();
        let mut parts = self.parts.lock_unpoisoned();
        let held = match empty.get(&slot.rules) {
            Some(held) => held.clone(),
            None => {
                let publication = Publisher::new(ChunkingOptions::default()).publish(&Board::new(slot.rules));
                let named = named_by(&publication);
                let manifest = publication.manifest_hash;
                let mut held = vec![(
                    manifest,
                    PartKind::Manifest,
                    Bytes::from(publication.manifest_bytes),
                )];
                for (hash, bytes) in publication.new_parts {
                    held.push((hash, PartKind::Chunk, Bytes::from(bytes)));
                }
                for (hash, kind, bytes) in &held {
                    parts.insert(*hash, *kind, bytes.clone(), &game, now_ms);
                }
                // Named once and never unnamed: every instance with no events names them.
                parts.name(&named);
                self.note_held(&parts);
                let held = Arc::new(Empty {
                    manifest,
                    parts: held,
                });
                empty.insert(slot.rules, held.clone());
                held
            }
        };
        for (hash, kind, bytes) in &held.parts {
            parts.insert(*hash, *kind, bytes.clone(), &game, now_ms);
        }
        self.metrics.snapshots.empty_heads.add(1);
        Head {
            board_version: 0,
            manifest: held.manifest,
            published_at_ms: now_ms,
        }
    }

    /// Stops serving the parts of `game` (an erasure): every followed instance of the game is
    /// forgotten, so the next head of each publishes it anew from what the boards and the
    /// rewritten storage show now (a closed period never changes, so a round would never
    /// publish it again; a live one would name its old parts until the next round), and the
    /// parts no head names any more are dropped now. For [`ERASED_RETENTION_MS`] every part of
    /// the game that a new publication stops naming is dropped at once instead of being kept
    /// for its retention. O(instances + parts held).
    pub fn forget_parts_of(&self, game: &str) {
        let now = self.clock.now_ms();
        let of_game: Vec<Arc<Instance>> = {
            let mut followed = self.instances.lock_unpoisoned();
            let mut of_game: Vec<Arc<Instance>> = followed
                .by_board
                .iter()
                .filter(|(board, _)| board.game == game)
                .flat_map(|(_, periods)| periods.values().cloned())
                .collect();
            of_game.retain(|instance| self.unfollow(&mut followed, instance));
            of_game
        };
        for instance in &of_game {
            self.forget(instance, now);
        }
        self.parts
            .lock_unpoisoned()
            .forget_game(game, now, ERASED_RETENTION_MS);
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

    /// The followed instance of `slot` (followed from now if it was not, when the caps allow:
    /// `schedule::room`), marked as asked for at `now_ms`. O(1), copying nothing when it is
    /// followed already; O(instances) when the caps are reached.
    fn follow(
        &self,
        slot: &Arc<BoardSlot>,
        closes_at: Option<i64>,
        now_ms: i64,
    ) -> Result<Arc<Instance>, SnapshotsError> {
        let mut displaced = None;
        let instance = {
            let mut followed = self.instances.lock_unpoisoned();
            let held = followed
                .by_board
                .get(&slot.id)
                .and_then(|periods| periods.get(&slot.period.key))
                .cloned();
            match held {
                Some(instance) => instance,
                None => {
                    let closed =
                        |instance: &&Arc<Instance>| instance.closes_at.is_some_and(|at| now_ms >= at);
                    let idlest = |instances: &mut dyn Iterator<Item = &Arc<Instance>>| {
                        instances
                            .filter(closed)
                            .min_by_key(|instance| instance.asked_ms.load(Ordering::Relaxed))
                            .cloned()
                    };
                    let on_board = followed.by_board.get(&slot.id);
                    let current = closes_at.is_none_or(|at| now_ms < at);
                    let room = schedule::room(
                        self.caps,
                        followed.count,
                        on_board.map_or(0, HashMap::len),
                        current,
                        on_board.and_then(|periods| idlest(&mut periods.values())),
                        idlest(&mut followed.by_board.values().flat_map(HashMap::values)),
                    );
                    match room {
                        Room::Free => {}
                        Room::Displace(instance) => {
                            self.unfollow(&mut followed, &instance);
                            displaced = Some(instance);
                        }
                        Room::Full => {
                            self.metrics.snapshots.refused_heads.add(1);
                            return Err(SnapshotsError::InstancesFull {
                                total: self.caps.total,
                                per_board: self.caps.per_board,
                                board: Box::new(slot.id.clone()),
                                period_key: slot.period.key.clone(),
                            });
                        }
                    }
                    let instance = Arc::new(Instance {
                        key: (slot.id.clone(), slot.period.key.clone()),
                        game: Arc::from(slot.id.game.as_str()),
                        closes_at,
                        slot: Mutex::new(Arc::downgrade(slot)),
                        asked_ms: AtomicI64::new(now_ms),
                        publishing: Mutex::new(Publishing {
                            publisher: self.publisher(),
                            named: Vec::new(),
                            published: None,
                            base_at_ms: None,
                            forgotten: false,
                        }),
                        head: Mutex::new(None),
                    });
                    followed
                        .by_board
                        .entry(slot.id.clone())
                        .or_default()
                        .insert(slot.period.key.clone(), instance.clone());
                    let count = followed.count + 1;
                    followed.set_count(count, &self.metrics.snapshots.instances);
                    instance
                }
            }
        };
        if let Some(instance) = displaced {
            self.metrics.snapshots.displaced.add(1);
            self.forget(&instance, now_ms);
        }
        // A later time only: a request that read the clock before a round's `now` must not
        // move its idleness back.
        instance.asked_ms.fetch_max(now_ms, Ordering::Relaxed);
        Ok(instance)
    }

    /// Takes `instance` out of the map of followed instances (the caller then forgets it),
    /// if it is the one held there. Returns whether it was.
    fn unfollow(&self, followed: &mut Followed, instance: &Arc<Instance>) -> bool {
        let (board, period_key) = &instance.key;
        let removed = followed.by_board.get_mut(board).is_some_and(|periods| {
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
            let count = followed.count - 1;
            followed.set_count(count, &self.metrics.snapshots.instances);
        }
        removed
    }

    /// One round at `now_ms`: forgets the instances nobody asked for, publishes those due,
    /// drops the parts past their retention. O(instances + publications).
    /// Whether no instance is followed, so a round only sweeps the parts. O(1).
    fn follows_nothing(&self) -> bool {
        self.instances.lock_unpoisoned().count == 0
    }

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
            followed.set_count(kept.len(), &self.metrics.snapshots.instances);
            (kept, forgotten)
        };
        for instance in forgotten {
            self.forget(&instance, now_ms);
        }
        for instance in kept {
            let (slot, replaced) = match self.current_slot(&instance) {
                Current::Slot(slot, replaced) => (slot, replaced),
                Current::Unchanged => continue,
                Current::Gone => {
                    self.forget_archived(&instance, now_ms);
                    continue;
                }
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
                publishing.publisher = self.publisher();
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
    /// registry's when it holds the instance, else the one its head resolved while that is
    /// still held (a closed period that left memory has not changed since).
    fn current_slot(&self, instance: &Instance) -> Current {
        let Some(entry) = self.registry.entry(&instance.key.0) else {
            return Current::Gone;
        };
        if entry.is_archived() || entry.broken().is_some() {
            return Current::Gone;
        }
        let mut held = instance.slot.lock_unpoisoned();
        match entry.instance(&instance.key.1) {
            Some(live) => {
                let replaced = !std::ptr::eq(Arc::as_ptr(&live), held.as_ptr());
                if replaced {
                    *held = Arc::downgrade(&live);
                }
                Current::Slot(live, replaced)
            }
            None => held
                .upgrade()
                .map_or(Current::Unchanged, |slot| Current::Slot(slot, false)),
        }
    }

    /// Publishes `instance`'s current version from `slot` at `now_ms`, with its publisher's
    /// lock held (`publishing`): the board's read lock is held only while the publisher reads
    /// it. O(the publisher's cost) plus O(parts named) in the store.
    fn publish(&self, instance: &Instance, publishing: &mut Publishing, slot: &BoardSlot, now_ms: i64) {
        let game = &instance.game;
        let (mut took, mut new_bytes, mut fresh) = (std::time::Duration::ZERO, 0, false);
        // A base keeps serving what later versions changed: past its age bound the version is
        // published whole.
        let max_age_ms = ms(self.config.max_base_age_seconds).saturating_mul(1000);
        let whole = publishing
            .base_at_ms
            .is_none_or(|at| now_ms.saturating_sub(at) >= max_age_ms);
        let ((board_version, manifest_hash), named, added, removed, mut parts) = loop {
            let began = Instant::now();
            let publication = read_and_publish(&mut publishing.publisher, slot, whole);
            took += began.elapsed();
            let named = named_by(&publication);
            let (added, removed) = parts::changes(&publishing.named, &named);
            let manifest = (publication.board_version(), publication.manifest_hash);
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
            publishing.publisher = self.publisher();
            fresh = true;
        };
        // Only what changed is counted again: a part both versions share keeps its count.
        parts.name(&added);
        parts.unname(&removed, now_ms);
        self.note_held(&parts);
        drop(parts);
        publishing.named = named;
        if publishing.publisher.last_path() != Some(PublishPath::Patch) {
            publishing.base_at_ms = Some(now_ms);
        }
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
        let removed = self.unfollow(&mut self.instances.lock_unpoisoned(), instance);
        if removed {
            self.forget(instance, now_ms);
        }
    }

    /// A publisher for one instance: versions go out as patches over the last manifest while
    /// they fit `max_patch_bytes`, so a version costs the edge what changed.
    fn publisher(&self) -> Publisher {
        Publisher::patching(ChunkingOptions::default(), self.config.max_patch_bytes)
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
fn read_and_publish(publisher: &mut Publisher, slot: &BoardSlot, whole: bool) -> standings_core::Publication {
    let board = slot.read();
    let copy = schedule::builds_from_a_copy(
        publisher.manifest_version(),
        board.oldest_held_version(),
        board.version(),
        board.total_players(),
    );
    let publish = |publisher: &mut Publisher, board: &Board| match whole {
        true => publisher.publish_whole(board),
        false => publisher.publish(board),
    };
    if copy {
        let copy = board.clone();
        drop(board);
        publish(publisher, &copy)
    } else {
        publish(publisher, &board)
    }
}

/// Every part a publication's head names: its manifest, each chunk and the sketch, sorted, each
/// once (two empty lookup partitions are one chunk). O(chunks log chunks).
fn named_by(publication: &standings_core::Publication) -> Vec<ChunkHash> {
    let mut named: Vec<ChunkHash> = std::iter::once(publication.manifest_hash)
        .chain(publication.part_hashes())
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
        world_with(SnapshotsConfig::default())
    }

    /// [`world`] with the given settings.
    fn world_with(config: SnapshotsConfig) -> (Arc<Snapshots>, Arc<BoardEntry>, Clock) {
        let registry = Arc::new(Registry::default());
        let entry = registry
            .add(&BoardDef {
                metadata_max_bytes: 256,
                shards: 1,
                segments: Default::default(),
                feed: Default::default(),
                id: BoardId::new("g", "m", "s1", "global").unwrap(),
                rules: BoardRules::new(ScoreMode::Highest),
                periods: vec!["all_time".into(), "daily".into()],
                grace_seconds: 0,
                timezone: "UTC".into(),
            })
            .unwrap();
        let clock = Clock::manual(NOON);
        let snapshots = Snapshots::new(config, registry, clock.clone(), Arc::new(Metrics::default()));
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
                tokio::spawn(async move { snapshots.head(Resolved::Held(slot)).await.unwrap() })
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
        let head = snapshots.head(Resolved::Held(slot)).await.unwrap();
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

    /// The head of an instance with no events names the empty snapshot of the board's rules,
    /// and follows nothing, however many such days are asked for; once the writer creates the
    /// instance, its head follows it and names its own publication.
    #[tokio::test]
    async fn instances_without_events_are_not_followed() {
        let (snapshots, entry, clock) = world();
        let empty_day = |day: i64| {
            let period = entry
                .calendar
                .period_of(PeriodKind::Daily, NOON + day * 86_400_000)
                .unwrap();
            Resolved::Empty(Arc::new(BoardSlot::new(
                entry.def.id.clone(),
                period,
                standings_core::Board::new(entry.def.rules),
            )))
        };
        let first = snapshots.head(empty_day(0)).await.unwrap();
        assert_eq!(first.board_version, 0);
        for day in 1..500 {
            let head = snapshots.head(empty_day(day - 250)).await.unwrap();
            assert_eq!(head.manifest, first.manifest);
        }
        let metrics = &snapshots.metrics.snapshots;
        assert_eq!(metrics.instances.load(Ordering::Relaxed), 0);
        assert_eq!(metrics.empty_heads.get(), 500);
        assert_eq!(metrics.publications.get(), 0);
        let manifest = snapshots.part(&first.manifest, PartKind::Manifest).unwrap();
        assert_eq!(&*manifest.games, &[Arc::<str>::from("g")]);
        // Held for good: long past any retention.
        clock.set(NOON + 86_400_000);
        snapshots.round(NOON + 86_400_000);
        assert!(snapshots.part(&first.manifest, PartKind::Manifest).is_some());

        let period = entry.calendar.period_of(PeriodKind::Daily, NOON).unwrap();
        let live = entry.instance_or_create(&period);
        score(&live, 1, 10);
        score(&live, 2, 20);
        let again = snapshots.head(Resolved::Held(live)).await.unwrap();
        assert_eq!(again.board_version, 2);
        assert_ne!(again.manifest, first.manifest);
        assert_eq!(metrics.instances.load(Ordering::Relaxed), 1);
    }

    /// Past the per-board cap a closed instance is refused (counted), and a current one takes
    /// the place of the closed instance asked for least recently, whose parts go on their
    /// retention.
    #[tokio::test]
    async fn the_caps_refuse_closed_days_and_make_room_for_current_ones() {
        let (snapshots, entry, clock) = world_with(SnapshotsConfig {
            max_instances_per_board: 2,
            ..SnapshotsConfig::default()
        });
        let day = |n: i64| {
            let period = entry
                .calendar
                .period_of(PeriodKind::Daily, NOON + n * 86_400_000)
                .unwrap();
            let slot = entry.instance_or_create(&period);
            score(&slot, (n + 10) as usize, n);
            slot
        };
        // Three days ago and two days ago, then yesterday: all closed by now.
        let (d3, d2, d1) = (day(-3), day(-2), day(-1));
        snapshots.head(Resolved::Held(d3)).await.unwrap();
        clock.set(NOON + 1_000);
        let kept = snapshots.head(Resolved::Held(d2)).await.unwrap();
        let refused = snapshots.head(Resolved::Held(d1)).await.unwrap_err();
        assert!(
            matches!(refused, SnapshotsError::InstancesFull { .. }),
            "{refused:?}"
        );
        assert_eq!(snapshots.metrics.snapshots.refused_heads.get(), 1);
        // Today is current: it displaces the idlest closed day (three days ago).
        let today = snapshots.head(Resolved::Held(day(0))).await.unwrap();
        assert_eq!(today.board_version, 1);
        assert_eq!(snapshots.metrics.snapshots.displaced.get(), 1);
        let followed = snapshots.instances.lock_unpoisoned();
        let keys: Vec<&String> = followed.by_board[&entry.def.id].keys().collect();
        assert_eq!(followed.count, 2);
        assert!(keys.contains(&&"2025-10-11".to_string()) && keys.contains(&&"2025-10-13".to_string()));
        drop(followed);
        assert!(snapshots.part(&kept.manifest, PartKind::Manifest).is_some());
    }

    /// A closed instance published from the registry's cache is not kept alive by its
    /// publication: once the cache gives it up, rounds leave it be (it cannot change) and its
    /// head still answers.
    #[tokio::test]
    async fn a_restored_closed_day_is_not_held_by_its_publication() {
        let (snapshots, entry, clock) = world();
        let period = entry
            .calendar
            .period_of(PeriodKind::Daily, NOON - 86_400_000)
            .unwrap();
        let restored = Arc::new(
            entry
                .restored(
                    &period,
                    7,
                    &[crate::domain::RankedEntry {
                        anonymous: false,
                        country: None,
                        display_name: None,
                        metadata: None,
                        rank: 1,
                        player_id: "p1".into(),
                        segments: None,
                        value: 5,
                        achieved_at: NOON - 86_400_000,
                    }],
                )
                .unwrap(),
        );
        let weak = Arc::downgrade(&restored);
        let head = snapshots.head(Resolved::Restored(restored)).await.unwrap();
        assert_eq!(head.board_version, 7);
        assert!(weak.upgrade().is_none(), "the publication holds no copy");
        clock.set(NOON + 5_000);
        snapshots.round(NOON + 5_000);
        assert_eq!(snapshots.metrics.snapshots.publications.get(), 1);
        let again = snapshots
            .head(Resolved::Restored(Arc::new(BoardSlot::new(
                entry.def.id.clone(),
                period,
                standings_core::Board::new(entry.def.rules),
            ))))
            .await
            .unwrap();
        assert_eq!(again, head, "the followed instance's head, unchanged");
    }
}
