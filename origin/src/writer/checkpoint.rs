//! Restart checkpoints: the live boards and the season and moderation state as of one log `seq`,
//! stored in the database so that a start loads them and replays only the log after it.
//!
//! A checkpoint is derived state, never the truth, and nothing in it is needed: without one, a
//! start replays the whole log. The writer takes one at a clean shutdown and, when configured,
//! every so many log entries. It must be exactly the state of the log up to its `seq`, so it is
//! encoded from boards that apply nothing meanwhile: a periodic checkpoint is encoded on a blocking
//! thread under the boards' read locks (reads go on) while the writer commits and answers groups
//! into a backlog, applied in `seq` order once the encoding is done. A task then stores it in parts
//! (`PART_BYTES`, a statement each), then its manifest as part 0, which makes it the checkpoint in
//! use, then deletes the old one's parts. So a checkpoint is in use only once all its parts are.
//!
//! Beside writes (`Pace::BesideWrites`) the store pauses after each statement as long as it took,
//! so that group commits get the write lock in between; at a stop, or one asked for
//! (`Pace::Alone`), the writes wait anyway, so it does not pause.
//!
//! A start with a usable checkpoint runs the log after it through `log::rebuild::replay_log` on the
//! live instances, the loop a rebuild runs too, so it reaches the same boards, versions and digests
//! as a full replay; `standings rebuild` checks that against the running service. One that cannot
//! be used (another format, damaged bytes, an unknown board, a log shorter than it) is logged with
//! the reason and ignored. Instances that had left memory are not in it; they stay in storage.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use standings_core::{Board, BoardId, CHECKPOINT_FORMAT_VERSION, reads_checkpoint_format};

use super::WriterError;
use super::applier::Group;
use super::driver::Writer;
pub use super::error::CheckpointError;
use crate::boards::{BoardSlot, Registry};
use crate::chain::Chain;
use crate::clock::Clock;
use crate::domain::periods::PeriodKind;
use crate::domain::{Moderation, ModerationState};
use crate::log::{self, LiveInstances, LogError};
use crate::store::Store;

/// The manifest's format version.
const MANIFEST_FORMAT: u32 = 1;

/// The most bytes one stored part holds (a row each, well within both databases' limits).
/// Above glibc's largest mmap threshold (32 MiB), so every buffer of a part is mapped and
/// unmapped on its own instead of staying in the heap after a start.
const PART_BYTES: usize = 48 << 20;

/// Checkpoint parts a start reads at once (each 48 MiB at most, held until its turn).
const PARTS_READ_AT_ONCE: usize = 3;

/// What part 0 holds: where each instance's bytes are, and the derived state beside them.
#[derive(Serialize, Deserialize)]
struct Manifest {
    format: u32,
    core_format: u16,
    seq: i64,
    domain: ModerationState,
    archived: Vec<BoardId>,
    instances: Vec<InstanceEntry>,
}

/// One instance in the checkpoint: its board and period, and the length of its bytes (they
/// follow each other through parts 1.., in manifest order).
#[derive(Serialize, Deserialize)]
struct InstanceEntry {
    board: BoardId,
    period_kind: String,
    period_key: String,
    bytes: u64,
}

/// What writing a checkpoint did.
#[derive(Clone, Debug)]
pub struct Written {
    /// The last log `seq` it includes.
    pub seq: i64,
    /// Instances written.
    pub instances: usize,
    /// Bytes of board state written.
    pub bytes: usize,
    /// How long encoding the boards took: the time writes waited.
    pub encoded_in: Duration,
    /// How long it took from the start of the encoding until it was stored.
    pub took: Duration,
}

/// A checkpoint encoded as of one `seq` and not stored yet: what [`store`] takes, anywhere,
/// while writes go on.
pub(crate) struct Encoded {
    seq: i64,
    manifest: Vec<u8>,
    bytes: Vec<u8>,
    instances: usize,
    started: Instant,
    encoded_in: Duration,
}

impl Encoded {
    /// How long the encoding took.
    pub(crate) fn encoded_in(&self) -> Duration {
        self.encoded_in
    }
}

/// Writes a checkpoint of every in-memory instance and of `domain` as of `seq`, replacing the
/// previous one: [`encode`], then [`store`] at full speed ([`Pace::Alone`]): the writer calls
/// it at a stop or when asked, and writes wait for it.
pub(crate) async fn write(
    store: &Store,
    registry: &Registry,
    domain: &Moderation,
    seq: i64,
) -> Result<Written, CheckpointError> {
    self::store(store, &registry.feed, encode(registry, domain, seq)?, Pace::Alone).await
}

/// How [`store`] shares the database with the writer.
#[derive(Clone, Debug)]
pub(crate) enum Pace {
    /// Group commits go on meanwhile (a periodic checkpoint): after each statement the task
    /// pauses as long as the statement took on this clock, so commits get at least half of the
    /// time (on a manual clock that does not move, no pause).
    BesideWrites(Clock),
    /// The writer waits for the checkpoint (a stop, or one asked for): no pauses, which would
    /// only make the writes wait longer.
    Alone,
}

/// Encodes every in-memory instance and `domain` as of `seq`. The caller guarantees nothing
/// changes meanwhile (the writer calls it, and writes wait): O(n) in the members held, with
/// sequential memory access (the core's format 2). Each board is encoded under its read lock,
/// so reads go on.
pub(crate) fn encode(registry: &Registry, domain: &Moderation, seq: i64) -> Result<Encoded, CheckpointError> {
    let started = Instant::now();
    let mut bytes = Vec::new();
    let mut instances = Vec::new();
    let mut archived = Vec::new();
    for entry in registry.all() {
        if entry.is_archived() {
            archived.push(entry.def.id.clone());
            continue;
        }
        for slot in entry.instances() {
            let before = bytes.len();
            slot.read().write_checkpoint(&mut bytes);
            instances.push(InstanceEntry {
                board: slot.id.clone(),
                period_kind: slot.period.kind.as_str().to_string(),
                period_key: slot.period.key.clone(),
                bytes: (bytes.len() - before) as u64,
            });
        }
    }
    let manifest = Manifest {
        format: MANIFEST_FORMAT,
        core_format: CHECKPOINT_FORMAT_VERSION,
        seq,
        domain: domain.state(),
        archived,
        instances,
    };
    let manifest_bytes = serde_json::to_vec(&manifest).map_err(CheckpointError::Manifest)?;
    Ok(Encoded {
        seq,
        manifest: manifest_bytes,
        bytes,
        instances: manifest.instances.len(),
        started,
        encoded_in: started.elapsed(),
    })
}

/// Stores an encoded checkpoint beside the newest one, which it then replaces (see
/// [`Store::finish_checkpoint`]) once `feed`'s records are stored, while writes go on (`pace`). Each part, and then each part
/// of the checkpoints it replaces, is a statement of its own, and beside writes the task
/// pauses after each one as long as the statement took. On SQLite a statement holds the one
/// write lock, and a writer that finds it taken sleeps in growing steps before it tries
/// again: without the pause this task would take the lock again first, part after part, and
/// hold group commits off for the whole checkpoint. So storing takes about twice as long and
/// commits get at least half of the time. The parts go from the last to the first, each split
/// off the encoded bytes, which shrink as they are stored.
pub(crate) async fn store(
    store: &Store,
    feed: &crate::feed::Feed,
    encoded: Encoded,
    pace: Pace,
) -> Result<Written, CheckpointError> {
    let Encoded {
        seq,
        manifest,
        mut bytes,
        instances,
        started,
        encoded_in,
    } = encoded;
    let total = bytes.len();
    store.discard_checkpoint(seq).await?;
    for part in (1..=total.div_ceil(PART_BYTES)).rev() {
        let body = bytes.split_off((part - 1) * PART_BYTES);
        bytes.shrink_to_fit();
        let put = pace.begin();
        store.put_checkpoint_part(seq, part as i64, body).await?;
        pace.pause(put).await;
    }
    // Every feed record of the entries through `seq` is stored before the checkpoint is: a
    // start replays only the entries after it, so it could not make them again.
    feed.flush(store).await?;
    store.finish_checkpoint(seq, manifest).await?;
    let took = started.elapsed();
    for (old, part) in store.other_checkpoint_parts(seq).await? {
        let delete = pace.begin();
        store.delete_checkpoint_part(old, part).await?;
        pace.pause(delete).await;
    }
    Ok(Written {
        seq,
        instances,
        bytes: total,
        encoded_in,
        took,
    })
}

impl Pace {
    /// When a statement begins: in real time to the nanosecond on the system clock, in ms on
    /// a manual one.
    fn begin(&self) -> (Instant, i64) {
        match self {
            Pace::BesideWrites(clock) => (Instant::now(), clock.now_ms()),
            Pace::Alone => (Instant::now(), 0),
        }
    }

    /// Beside writes, waits as long as the statement begun at `began` took, on the pacing
    /// clock: a manual clock that did not move gives no pause.
    async fn pause(&self, began: (Instant, i64)) {
        match self {
            Pace::BesideWrites(Clock::System) => tokio::time::sleep(began.0.elapsed()).await,
            Pace::BesideWrites(clock) => {
                let now = clock.now_ms();
                let took = now.saturating_sub(began.1).max(0);
                clock.sleep_until(now.saturating_add(took)).await;
            }
            Pace::Alone => {}
        }
    }
}

/// A checkpoint's encoding, on a blocking thread of its own.
pub(super) type Encoding = tokio::task::JoinHandle<Result<Encoded, CheckpointError>>;

/// A checkpoint being stored by a task of its own.
pub(super) type Storing = tokio::task::JoinHandle<Result<Written, CheckpointError>>;

/// When the writer takes checkpoints: at a stop or when asked ([`Writer::write_checkpoint`]),
/// and every so many log entries beside the writes ([`Writer::begin_checkpoint`]).
impl Writer {
    /// Writes a checkpoint as of the last committed `seq` and waits until it is stored, unless the
    /// newest stored one is as of that `seq` already.
    pub(super) async fn write_checkpoint(&mut self) -> Result<Option<Written>, WriterError> {
        let parts = self;
        let seq = parts.machine.next_seq() - 1;
        if seq == parts.checkpoint_seq || parts.holds_broken_boards() {
            return Ok(None);
        }
        let written = write(&parts.store, &parts.registry, &parts.domain, seq).await?;
        parts.metrics.checkpoint_encode.observe(written.encoded_in);
        parts.metrics.checkpoint_stored.observe(written.took);
        parts.checkpoint_seq = seq;
        parts.checkpoint_bytes = written.bytes;
        Ok(Some(written))
    }

    /// Whether a stop stores a checkpoint ([`super::rhythm::worth_storing`]); says why when it does not.
    pub(super) fn worth_storing_at_stop(&self) -> bool {
        let tail = (self.machine.next_seq() - 1 - self.checkpoint_seq).max(0) as u64;
        // Nothing since the newest one: the checkpoint is skipped anyway, and says nothing.
        let worth = tail == 0 || super::rhythm::worth_storing(tail, self.checkpoint_bytes);
        if !worth {
            tracing::info!(
                tail,
                checkpoint_seq = self.checkpoint_seq,
                "no checkpoint at this stop: the next start replays the {tail} log entries after the newest one ({:.1} MiB), which costs less than storing a new one",
                self.checkpoint_bytes as f64 / (1 << 20) as f64
            );
        }
        worth
    }

    /// Whether a board is broken, which rules out a checkpoint: it would hold the broken board's
    /// state as if the log had given it, and a start from it would never meet the failing entry
    /// again. Without one, the next start replays the whole log and reports it again.
    fn holds_broken_boards(&self) -> bool {
        let parts = self;
        let broken = parts.registry.broken();
        if !broken.is_empty() {
            tracing::warn!(
                "no checkpoint is written while {} board(s) are broken; the next start replays the whole log",
                broken.len()
            );
        }
        !broken.is_empty()
    }

    /// Starts a periodic checkpoint as of the last committed `seq`, with every committed group
    /// applied: a blocking thread encodes the boards under their read locks, so reads go on, and so do writes: groups are committed and answered
    /// meanwhile and wait in the backlog to be applied (`finish`), which keeps the boards at that
    /// `seq` until the encoding is done (`catch_up`). Then a task stores it.
    pub(super) fn begin_checkpoint(&mut self) {
        let parts = self;
        if parts.holds_broken_boards() {
            return;
        }
        let seq = parts.machine.next_seq() - 1;
        let (registry, domain) = (parts.registry.clone(), parts.domain.clone());
        parts.backlog.encoding = Some(tokio::task::spawn_blocking(move || {
            encode(&registry, &domain, seq)
        }));
    }

    /// Waits for a checkpoint being encoded, if any, then hands the backlog over to be applied and
    /// sets the checkpoint storing (see `catch_up`).
    pub(super) async fn end_encoding(&mut self, storing: &mut Option<Storing>) {
        if let Some(encoding) = self.backlog.encoding.take() {
            *storing = self.catch_up(encoding.await).await;
        }
    }

    /// Ends a checkpoint's encoding: hands the backlog over in order, then sets a task storing the
    /// checkpoint (`None` if the encoding failed, which is reported; the log is intact).
    pub(super) async fn catch_up(
        &mut self,
        encoded: Result<Result<Encoded, CheckpointError>, tokio::task::JoinError>,
    ) -> Option<Storing> {
        let parts = self;
        // Their submitters were answered; their totals stay pending until they are applied.
        for (fresh, committed, through) in std::mem::take(&mut parts.backlog.groups) {
            let group = Group {
                fresh,
                committed,
                through,
                answers: None,
            };
            parts.applier().apply(group).await;
        }
        let encoded = match encoded {
            Ok(Ok(encoded)) => encoded,
            Ok(Err(e)) => {
                tracing::warn!("a periodic checkpoint failed (the log is intact): {}", Chain(&e));
                return None;
            }
            Err(e) => {
                tracing::warn!("a periodic checkpoint's encoding failed (the log is intact): {e}");
                return None;
            }
        };
        parts.metrics.checkpoint_encode.observe(encoded.encoded_in());
        let (store, clock, registry) = (parts.store.clone(), parts.clock.clone(), parts.registry.clone());
        Some(tokio::spawn(async move {
            let written = self::store(&store, &registry.feed, encoded, Pace::BesideWrites(clock)).await?;
            println!(
                "standings: stored a checkpoint as of seq {} ({} instances, {:.1} MiB; encoded in {} ms, {:.2} s in all)",
                written.seq,
                written.instances,
                written.bytes as f64 / (1 << 20) as f64,
                written.encoded_in.as_millis(),
                written.took.as_secs_f64()
            );
            Ok(written)
        }))
    }

    /// Waits for a periodic checkpoint being stored, if any, and takes note of it.
    pub(super) async fn reap(&mut self, storing: Option<Storing>) {
        let parts = self;
        let Some(task) = storing else { return };
        match task.await {
            Ok(Ok(written)) => {
                parts.metrics.checkpoint_stored.observe(written.took);
                if written.seq > parts.checkpoint_seq {
                    parts.checkpoint_bytes = written.bytes;
                }
                parts.checkpoint_seq = parts.checkpoint_seq.max(written.seq);
            }
            Ok(Err(e)) => tracing::warn!("a periodic checkpoint failed (the log is intact): {}", Chain(&e)),
            Err(e) => tracing::warn!("a periodic checkpoint's task failed (the log is intact): {e}"),
        }
    }
}

/// How the live state was restored at start-up.
#[derive(Clone, Debug)]
pub enum Restored {
    /// From a checkpoint, then the log after it.
    Checkpoint {
        /// The checkpoint's `seq`.
        seq: i64,
        /// Log entries (events and actions) replayed after it.
        tail: u64,
        /// Its bytes of boards: what storing the next one will cost, about.
        bytes: u64,
        /// How long reading its parts from the database took: with the next two, what an
        /// operator looks at when a start is slow.
        read_in: Duration,
        /// How long decoding the parts into boards took.
        decoded_in: Duration,
        /// How long replaying the tail took.
        replayed_in: Duration,
    },
    /// By replaying the whole log: there was no checkpoint, or it could not be used (why).
    FullReplay {
        /// Why a checkpoint was not used, when there was one.
        unusable: Option<String>,
    },
}

/// Restores the live boards and the season and moderation state: from the checkpoint and the
/// log after it when there is a usable one, else by replaying the whole log. O(members held +
/// log entries replayed).
pub async fn restore(store: &Store, now: i64) -> Result<(Registry, Moderation, Restored), LogError> {
    restore_until(store, now, i64::MAX).await
}

/// [`restore`] up to the log's entry `until` only (see [`log::rebuild_until`]).
pub async fn restore_until(
    store: &Store,
    now: i64,
    until: i64,
) -> Result<(Registry, Moderation, Restored), LogError> {
    let unusable = match load(store).await {
        Ok(None) => None,
        Ok(Some(Loaded {
            registry,
            domain,
            seq,
            bytes,
            read_in,
            decoded_in,
        })) => {
            // The log after it runs through the live code, as the writer ran it the first time,
            // and makes its feed records again: the checkpoint stored every record before it.
            registry.feed.load_friends(store).await?;
            registry.feed.start_making(store).await?;
            let mut live = LiveInstances {
                registry: &registry,
                store,
            };
            let replaying = Instant::now();
            let (_, tail) =
                log::replay_log(store, &registry, &domain, &mut live, seq, until, &mut |_| {}).await?;
            let restored = Restored::Checkpoint {
                seq,
                tail,
                bytes,
                read_in,
                decoded_in,
                replayed_in: replaying.elapsed(),
            };
            return Ok((registry, domain, restored));
        }
        Err(why) => Some(why),
    };
    // A bulk rebuild reads no change one by one, so it makes no feed records: the entries
    // after the last one whose records are all stored (all of the log when none is) run
    // through the live code instead, as a checkpoint's tail does.
    let feeds = store.boards().await?.iter().any(|def| !def.feed.is_empty());
    let bulk_until = if feeds {
        crate::feed::remade_after(store.feed_last().await?).clamp(0, until)
    } else {
        until
    };
    let (registry, domain, _) = log::rebuild_until(store, None, now, bulk_until, |_| {}).await?;
    if bulk_until < until {
        registry.feed.load_friends(store).await?;
        registry.feed.start_making(store).await?;
        let mut live = LiveInstances {
            registry: &registry,
            store,
        };
        log::replay_log(
            store,
            &registry,
            &domain,
            &mut live,
            bulk_until,
            until,
            &mut |_| {},
        )
        .await?;
    }
    Ok((registry, domain, Restored::FullReplay { unusable }))
}

/// A checkpoint read back, and how long its two halves took.
struct Loaded {
    registry: Registry,
    domain: Moderation,
    seq: i64,
    bytes: u64,
    read_in: Duration,
    decoded_in: Duration,
}

/// The checkpoint's boards (installed into a fresh registry of every defined board), domain
/// and `seq`; `Ok(None)` without one, `Err(why)` when it cannot be used. Storage errors are
/// reasons too: the log is still there to replay.
async fn load(store: &Store) -> Result<Option<Loaded>, String> {
    let reading = Instant::now();
    let Some((seq, count)) = store.checkpoint_head().await.map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let manifest_bytes = store.checkpoint_part(seq, 0).await.map_err(|e| e.to_string())?;
    let manifest: Manifest =
        serde_json::from_slice(&manifest_bytes).map_err(|e| format!("its manifest cannot be read: {e}"))?;
    if manifest.format != MANIFEST_FORMAT || !reads_checkpoint_format(manifest.core_format) {
        return Err(format!(
            "it has format {}/{}, this build reads {MANIFEST_FORMAT}/1 to {CHECKPOINT_FORMAT_VERSION}",
            manifest.format, manifest.core_format
        ));
    }
    if manifest.seq != seq {
        return Err(format!(
            "its manifest names seq {} but it is stored as {seq}",
            manifest.seq
        ));
    }
    let next_seq = store.next_seq().await.map_err(|e| e.to_string())?;
    if seq >= next_seq {
        return Err(format!(
            "it is as of seq {seq} but the log ends at {}: the log is older than the checkpoint",
            next_seq - 1
        ));
    }
    let total = manifest
        .instances
        .iter()
        .try_fold(0u64, |sum, i| sum.checked_add(i.bytes))
        .ok_or("its manifest's sizes overflow")?;
    let mut bytes: Vec<u8> = Vec::new();
    // Parts are read a few at once, each on a connection of its own, and taken in order: one
    // SQLite connection reads a big blob page by page, and that is most of a start.
    let mut parts = futures_util::stream::iter(1..count)
        .map(|index| store.checkpoint_part(seq, index))
        .buffered(PARTS_READ_AT_ONCE);
    for index in 1..count {
        let part = parts
            .next()
            .await
            .ok_or("a checkpoint part went missing while it was read")?
            .map_err(|e| e.to_string())?;
        if (bytes.len() + part.len()) as u64 > total {
            return Err(format!(
                "it holds more bytes of boards than its manifest's {total}"
            ));
        }
        if index == 1 {
            // Every part but the last is full, so this bounds the size by what is stored,
            // whatever a damaged manifest claims.
            let stored = part.len().saturating_mul((count - 1) as usize);
            bytes.reserve_exact(stored.min(usize::try_from(total).unwrap_or(usize::MAX)));
        }
        bytes.extend_from_slice(&part);
    }
    if bytes.len() as u64 != total {
        return Err(format!(
            "it holds {} bytes of boards, its manifest {total}",
            bytes.len()
        ));
    }
    let read_in = reading.elapsed();
    let decoding = Instant::now();

    let registry = Registry::default();
    for def in store.boards().await.map_err(|e| e.to_string())? {
        registry
            .add(&def)
            .map_err(|e| format!("stored board {} is invalid: {e}", def.id))?;
    }
    let mut at = 0usize;
    for instance in &manifest.instances {
        let end = at + instance.bytes as usize;
        let slice = &bytes[at..end];
        at = end;
        let what = format!("{} [{}]", instance.board, instance.period_key);
        let entry = registry
            .entry(&instance.board)
            .ok_or_else(|| format!("it holds {what}, a board that is not defined"))?;
        let kind = PeriodKind::parse(&instance.period_kind)
            .ok_or_else(|| format!("{what} has an unknown period kind {:?}", instance.period_kind))?;
        let period = entry
            .calendar
            .parse_key(kind, &instance.period_key)
            .map_err(|e| format!("{what}: {e}"))?;
        let board = Board::read_checkpoint_with(slice, &standings_core::Threads(2), entry.def.shard_count())
            .map_err(|e| format!("{what} cannot be read: {e}"))?;
        if *board.rules() != entry.def.rules {
            return Err(format!("{what} has other rules than the board's definition"));
        }
        entry.install(BoardSlot::new(instance.board.clone(), period, board));
    }
    for board in &manifest.archived {
        registry
            .entry(board)
            .ok_or_else(|| format!("it names {board}, a board that is not defined"))?
            .archive();
    }
    let domain = Moderation::from_state(manifest.domain);
    // Profiles are not in the checkpoint's domain: they are read from the log up to its seq.
    for row in store
        .profile_actions_until(seq)
        .await
        .map_err(|e| e.to_string())?
    {
        if let Ok(action) = &row.action {
            log::note_profile(&domain, &row.game, action);
        }
    }
    // The boards' profiles were read back as copies; they share the book's, as live boards do.
    for entry in registry.all() {
        let game = &entry.def.id.game;
        for slot in entry.instances() {
            slot.write()
                .share_profiles(|player| domain.profiles.shown(game, player));
        }
    }
    Ok(Some(Loaded {
        registry,
        domain,
        seq,
        bytes: total,
        read_in,
        decoded_in: decoding.elapsed(),
    }))
}
