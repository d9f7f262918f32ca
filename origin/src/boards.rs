//! The live boards. A board definition (`game/mode/season/scope`) has one ranked instance per
//! period it keeps (`all_time`, and a daily, weekly or monthly instance per period that has
//! events), each a `standings_core::Board` derived from the log and rebuilt from it at start-up.
//!
//! The [`Registry`] maps each definition to its `BoardEntry` (the definition and its calendar),
//! which holds one [`BoardSlot`] per period instance. Only the writer, through its applying
//! thread, changes a board, so the registry needs no ordering of its own: `seq` order is apply
//! order. Readers take a slot's read lock for in-memory work only, never across an `.await`,
//! and a top page is kept serialized for the current version, so repeated reads of one page
//! cost a copy. A board that could not be rebuilt from the log is marked broken here and
//! answers 503 `BOARD_BROKEN` until a restart rebuilds it.
//!
//! A closed period that left memory (`writer::evict`) is read from its stored snapshot. The
//! [`ClosedCache`] keeps one restored copy of each such instance, the most recently used up to
//! a count, shared by reads, live subscriptions and snapshot publication; a copy is restored
//! once however many ask at once, and an evicted instance enters it as it leaves the registry.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use bytes::Bytes;
use standings_core::{Board, BoardDigest, BoardId, BoardRules, CursorBinding};

use standings_core::CapacityError;

use crate::domain::periods::{Calendar, Period, PeriodKind};
use crate::domain::{BoardDef, RankedEntry};
use crate::fast_hash::FastHash;
use crate::sync::{LockUnpoisoned, RwLockUnpoisoned};

/// How many distinct top-N pages one instance keeps cached for its current version.
const PAGE_CACHE_ENTRIES: usize = 256;

/// The key of a cached top page: the limit and the cursor it was asked with.
/// A cached top page: its limit, its cursor, and whether it was written for a trusted reader
/// (who sees anonymous players' names).
type PageKey = (usize, Option<Vec<u8>>, bool);

/// One live ranked instance: a board in one period.
pub struct BoardSlot {
    /// Which board.
    pub id: BoardId,
    /// Which period of it.
    pub period: Period,
    /// Its fixed rules.
    pub rules: BoardRules,
    /// What its cursors carry, so that a cursor pages only this board in this period.
    pub cursor_binding: CursorBinding,
    /// The ranked state. Locks are held only for in-memory work, never across an await.
    pub board: RwLock<Board>,
    /// Serialized top pages of the current version, so repeated reads cost a copy.
    pages: Mutex<(u64, HashMap<PageKey, Bytes>)>,
    /// The digest of the last version one was asked for: O(n) to compute, so computed once
    /// per version however many ask.
    digest: Mutex<Option<(u64, BoardDigest)>>,
}

impl BoardSlot {
    /// A slot holding `board`.
    pub fn new(id: BoardId, period: Period, board: Board) -> BoardSlot {
        BoardSlot {
            cursor_binding: CursorBinding::of(&id, &period.key),
            id,
            period,
            rules: *board.rules(),
            board: RwLock::new(board),
            pages: Mutex::new((u64::MAX, HashMap::new())),
            digest: Mutex::new(None),
        }
    }

    /// The board's digest, its version and its player count: the one computed for this version
    /// if there is one, else computed now under the read lock (O(n)) and kept. Blocking: call
    /// it from the blocking pool.
    pub fn digest(&self) -> (BoardDigest, u64, u64) {
        let board = self.read();
        let version = board.version();
        let mut kept = self.digest.lock_unpoisoned();
        if let Some((at, digest)) = *kept
            && at == version
        {
            return (digest, version, board.total_players());
        }
        let digest = board.digest();
        *kept = Some((version, digest));
        (digest, version, board.total_players())
    }

    /// A read lock on the board. A poisoned lock (a panic while applying) is a bug; the board is
    /// still readable, so reads carry on.
    pub fn read(&self) -> std::sync::RwLockReadGuard<'_, Board> {
        self.board.read_unpoisoned()
    }

    /// A write lock on the board.
    pub fn write(&self) -> std::sync::RwLockWriteGuard<'_, Board> {
        self.board.write_unpoisoned()
    }

    /// The cached bytes of a top page at `version`, if any.
    pub fn cached_page(&self, version: u64, key: &PageKey) -> Option<Bytes> {
        let pages = self.pages.lock_unpoisoned();
        if pages.0 != version {
            return None;
        }
        pages.1.get(key).cloned()
    }

    /// Caches the bytes of a top page at `version`; pages of older versions are dropped.
    pub fn cache_page(&self, version: u64, key: PageKey, bytes: Bytes) {
        let mut pages = self.pages.lock_unpoisoned();
        if pages.0 != version {
            if version < pages.0 && pages.0 != u64::MAX {
                return;
            }
            *pages = (version, HashMap::new());
        }
        if pages.1.len() < PAGE_CACHE_ENTRIES {
            pages.1.insert(key, bytes);
        }
    }
}

/// One board definition and its live instances.
pub struct BoardEntry {
    /// The definition.
    pub def: BoardDef,
    /// Its period calendar.
    pub calendar: Calendar,
    instances: RwLock<HashMap<String, Arc<BoardSlot>, FastHash>>,
    archived: AtomicBool,
    broken: RwLock<Option<Broken>>,
}

/// Why a board could not be rebuilt from the log: the first entry that failed on it. A broken
/// board is not served (its reads and writes answer 503 `BOARD_BROKEN`) until a start replays
/// the log without the failure; every other board is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Broken {
    /// The log `seq` of the entry that failed.
    pub seq: i64,
    /// Why it failed.
    pub why: String,
}

impl BoardEntry {
    /// A new entry with no instances.
    pub fn new(def: BoardDef) -> Result<BoardEntry, String> {
        let calendar = def.calendar().map_err(|e| e.to_string())?;
        Ok(BoardEntry {
            def,
            calendar,
            instances: RwLock::new(HashMap::default()),
            archived: AtomicBool::new(false),
            broken: RwLock::new(None),
        })
    }

    /// The instance of a period, if it has one.
    pub fn instance(&self, period_key: &str) -> Option<Arc<BoardSlot>> {
        self.instances.read_unpoisoned().get(period_key).cloned()
    }

    /// The instance of a period, created empty if it has none.
    pub fn instance_or_create(&self, period: &Period) -> Arc<BoardSlot> {
        if let Some(slot) = self.instance(&period.key) {
            return slot;
        }
        let mut instances = self.instances.write_unpoisoned();
        instances
            .entry(period.key.clone())
            .or_insert_with(|| {
                let mut board = Board::new(self.def.rules);
                board.split(self.def.shard_count());
                board.declare_segments(self.def.segments.clone());
                Arc::new(BoardSlot::new(self.def.id.clone(), period.clone(), board))
            })
            .clone()
    }

    /// Installs a rebuilt instance, split and segmented as the definition says (a rebuild, a
    /// checkpoint and a restored snapshot build their boards whole, without segments).
    pub fn install(&self, slot: BoardSlot) {
        {
            let mut board = slot.write();
            board.split(self.def.shard_count());
            // A closed period restored for reads declares them already.
            if board.segment_spec() != self.def.segments {
                board.declare_segments(self.def.segments.clone());
            }
        }
        let mut instances = self.instances.write_unpoisoned();
        instances.insert(slot.period.key.clone(), Arc::new(slot));
    }

    /// The all-time instance (created empty when missing), the board's "results" board.
    pub fn all_time(&self) -> Arc<BoardSlot> {
        self.instance_or_create(&Period::all_time())
    }

    /// Every instance, sorted by period key.
    /// O(the board's instances).
    pub fn instances(&self) -> Vec<Arc<BoardSlot>> {
        let instances = self.instances.read_unpoisoned();
        let mut all: Vec<_> = instances.values().cloned().collect();
        all.sort_by(|a, b| a.period.key.cmp(&b.period.key));
        all
    }

    /// Drops an instance from memory (a closed period past its retention, saved to storage).
    pub fn evict(&self, period_key: &str) -> Option<Arc<BoardSlot>> {
        self.instances.write_unpoisoned().remove(period_key)
    }

    /// An instance restored from a stored snapshot: the same entries at the same version.
    /// O(entries).
    pub fn restored(
        &self,
        period: &Period,
        board_version: i64,
        entries: &[RankedEntry],
    ) -> Result<BoardSlot, SnapshotUnreadable> {
        let aggregates = entries.iter().map(|e| {
            let standing = standings_core::Standing {
                value: e.value,
                achieved_at: e.achieved_at,
            };
            (e.player_id.as_str(), standing, "")
        });
        let mut board =
            Board::from_aggregates(self.def.rules, board_version as u64, aggregates).map_err(|source| {
                SnapshotUnreadable {
                    board: Box::new(self.def.id.clone()),
                    period_key: period.key.clone(),
                    source,
                }
            })?;
        for e in entries {
            if let Some(extras) = e.extras() {
                board.restore_extras(&e.player_id, extras);
            }
        }
        board.declare_segments(self.def.segments.clone());
        Ok(BoardSlot::new(self.def.id.clone(), period.clone(), board))
    }

    /// Whether the season was archived (its instances freed).
    pub fn is_archived(&self) -> bool {
        self.archived.load(Ordering::Acquire)
    }

    /// Frees the instances of an archived season.
    pub fn archive(&self) {
        self.archived.store(true, Ordering::Release);
        self.instances.write_unpoisoned().clear();
    }

    /// Why the board could not be rebuilt from the log, if it could not.
    pub fn broken(&self) -> Option<Broken> {
        self.broken.read_unpoisoned().clone()
    }

    /// Marks the board broken by the entry at `seq`; the first failure is the one kept, as the
    /// entries after it met a board that was already wrong.
    pub fn mark_broken(&self, seq: i64, why: String) {
        let mut broken = self.broken.write_unpoisoned();
        if broken.is_none() {
            *broken = Some(Broken { seq, why });
        }
    }

    /// The answer to a read or a write of a broken board, `Ok` when it is not broken.
    pub fn check_not_broken(&self) -> Result<(), BoardBroken> {
        match self.broken() {
            None => Ok(()),
            Some(broken) => Err(BoardBroken {
                board: Box::new(self.def.id.clone()),
                seq: broken.seq,
            }),
        }
    }

    /// Whether the board keeps periods of `kind`.
    pub fn keeps(&self, kind: PeriodKind) -> bool {
        self.calendar.kinds().contains(&kind)
    }
}

/// A read, a write or an action met a broken board (see [`Broken`]): it is not served until a
/// start replays the log without the failure (503 `BOARD_BROKEN`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("board {board} is not served: the log entry at seq {seq} cannot be carried out on it (see /readyz)")]
pub struct BoardBroken {
    /// The board.
    pub board: Box<BoardId>,
    /// The log `seq` of the entry that failed on it.
    pub seq: i64,
}

/// A stored period snapshot that cannot be made a board again (the core refuses its entries).
#[derive(Debug, thiserror::Error)]
#[error("stored snapshot of {board} {period_key} cannot be restored")]
pub struct SnapshotUnreadable {
    /// The board.
    pub board: Box<BoardId>,
    /// The period instance.
    pub period_key: String,
    /// What the core refused.
    #[source]
    pub source: CapacityError,
}

/// A board instance as a read resolved it (`http::resolve`), and where it was found: what the
/// snapshots publish and the read API answers from.
pub enum Resolved {
    /// An instance in the registry: live, or closed but still in memory.
    Held(Arc<BoardSlot>),
    /// A closed instance that left memory, restored from storage (one copy, shared; see
    /// [`ClosedCache`]).
    Restored(Arc<BoardSlot>),
    /// An instance that holds no events (none yet, or in the future): an empty board at
    /// version 0, made for this request.
    Empty(Arc<BoardSlot>),
}

impl Resolved {
    /// The instance's slot.
    pub fn slot(&self) -> &Arc<BoardSlot> {
        match self {
            Resolved::Held(slot) | Resolved::Restored(slot) | Resolved::Empty(slot) => slot,
        }
    }

    /// The instance's slot, owned.
    pub fn into_slot(self) -> Arc<BoardSlot> {
        match self {
            Resolved::Held(slot) | Resolved::Restored(slot) | Resolved::Empty(slot) => slot,
        }
    }
}

/// A closed instance's place in the [`ClosedCache`]: filled once by whoever asks first (`None`
/// when storage holds no snapshot of it, as for a period that never had events).
pub type ClosedCell = Arc<tokio::sync::OnceCell<Option<Arc<BoardSlot>>>>;

/// The restored closed instances that left memory (see the module doc): a board and a period
/// key to its cell, the least recently used given up past `capacity`.
pub struct ClosedCache {
    capacity: std::sync::atomic::AtomicUsize,
    held: Mutex<ClosedHeld>,
}

#[derive(Default)]
struct ClosedHeld {
    /// Each instance's cell and the tick it was last used at.
    cells: HashMap<(BoardId, String), (ClosedCell, u64), FastHash>,
    tick: u64,
}

impl ClosedCache {
    /// A cache of at most `capacity` instances (at least one).
    pub fn new(capacity: usize) -> ClosedCache {
        ClosedCache {
            capacity: std::sync::atomic::AtomicUsize::new(capacity.max(1)),
            held: Mutex::default(),
        }
    }

    /// Keeps at most `capacity` instances (at least one) from now on; the setting, applied to
    /// a registry restored before the configuration was at hand.
    pub fn set_capacity(&self, capacity: usize) {
        self.capacity.store(capacity.max(1), Ordering::Relaxed);
        let mut held = self.held.lock_unpoisoned();
        self.make_room(&mut held, 0);
    }

    /// The cell of `board`'s instance `period_key`, new and empty if it was not held (the
    /// least recently used one then leaves, if the cache is full). The caller fills an empty
    /// cell from storage with `get_or_try_init`, once however many wait on it. O(1), or
    /// O(capacity) when one leaves.
    pub fn cell(&self, board: &BoardId, period_key: &str) -> ClosedCell {
        let mut held = self.held.lock_unpoisoned();
        held.tick += 1;
        let tick = held.tick;
        let key = (board.clone(), period_key.to_owned());
        if let Some((cell, used)) = held.cells.get_mut(&key) {
            *used = tick;
            return cell.clone();
        }
        let cell = ClosedCell::default();
        self.make_room(&mut held, 1);
        held.cells.insert(key, (cell.clone(), tick));
        cell
    }

    /// Holds `slot`, an instance leaving the registry with the same entries and version its
    /// stored snapshot has, in place of whatever was held for it. O(1), or O(capacity).
    pub fn put(&self, slot: Arc<BoardSlot>) {
        let mut held = self.held.lock_unpoisoned();
        held.tick += 1;
        let tick = held.tick;
        let key = (slot.id.clone(), slot.period.key.clone());
        if !held.cells.contains_key(&key) {
            self.make_room(&mut held, 1);
        }
        held.cells.insert(
            key,
            (Arc::new(tokio::sync::OnceCell::new_with(Some(Some(slot)))), tick),
        );
    }

    /// Forgets `board`'s instance `period_key`: it is back in the registry (a late change
    /// reopened it), so the copy held would be stale once it leaves again. O(1).
    pub fn forget(&self, board: &BoardId, period_key: &str) {
        let mut held = self.held.lock_unpoisoned();
        held.cells.remove(&(board.clone(), period_key.to_owned()));
    }

    /// Forgets every instance of `game`: an erasure rewrote their stored snapshots, so the
    /// copies held would still show what it erased; the next read restores the rewritten one.
    /// O(capacity).
    pub fn forget_game(&self, game: &str) {
        let mut held = self.held.lock_unpoisoned();
        held.cells.retain(|(board, _), _| board.game != game);
    }

    /// How many instances are held (restored or being restored).
    pub fn len(&self) -> usize {
        self.held.lock_unpoisoned().cells.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Gives up the least recently used instances until `room` more fit. O(capacity) each.
    fn make_room(&self, held: &mut ClosedHeld, room: usize) {
        let capacity = self.capacity.load(Ordering::Relaxed);
        while held.cells.len() + room > capacity {
            let Some(oldest) = held
                .cells
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(key, _)| key.clone())
            else {
                return;
            };
            held.cells.remove(&oldest);
        }
    }
}

impl Default for ClosedCache {
    fn default() -> ClosedCache {
        ClosedCache::new(DEFAULT_CLOSED_CACHE)
    }
}

/// How many restored closed instances a registry made with `Registry::default` keeps.
pub const DEFAULT_CLOSED_CACHE: usize = 16;

/// Every board definition and its instances, by id, and the closed instances restored from
/// storage.
#[derive(Default)]
pub struct Registry {
    boards: RwLock<HashMap<BoardId, Arc<BoardEntry>, FastHash>>,
    /// Closed instances that left memory, restored (see the module doc).
    pub closed: ClosedCache,
    /// How far the log is committed and how far the boards show it, for read-your-writes.
    pub positions: Positions,
    /// Where work over many of its boards takes its turn beside the applier (`turns.rs`).
    pub(crate) turns: crate::turns::Turns,
    /// The feed records its boards' changes made, and who follows whom (`feed/`).
    pub feed: Arc<crate::feed::Feed>,
}

/// How far this log is committed, and how far the boards show it: a write's acknowledgement
/// names the first (`x-standings-position`), and a read that hands it back waits for the second
/// to reach it. Both only grow.
#[derive(Default)]
pub struct Positions {
    committed: std::sync::atomic::AtomicI64,
    visible: std::sync::atomic::AtomicI64,
}

impl Positions {
    /// Everything through `seq` is durably committed. O(1).
    pub fn committed_through(&self, seq: i64) {
        self.committed.fetch_max(seq, Ordering::AcqRel);
    }

    /// Everything through `seq` is carried out on the boards (or was refused, or skipped). O(1).
    pub fn visible_through(&self, seq: i64) {
        self.visible.fetch_max(seq, Ordering::AcqRel);
        self.committed_through(seq);
    }

    /// The last committed seq. O(1).
    pub fn committed(&self) -> i64 {
        self.committed.load(Ordering::Acquire)
    }

    /// The last seq the boards show. O(1).
    pub fn visible(&self) -> i64 {
        self.visible.load(Ordering::Acquire)
    }
}

impl Registry {
    /// The board's entry, if defined.
    pub fn entry(&self, id: &BoardId) -> Option<Arc<BoardEntry>> {
        self.boards.read_unpoisoned().get(id).cloned()
    }

    /// Adds a board definition. A board that is already known is kept as it is.
    pub fn add(&self, def: &BoardDef) -> Result<Arc<BoardEntry>, String> {
        if let Some(entry) = self.entry(&def.id) {
            return Ok(entry);
        }
        let entry = Arc::new(BoardEntry::new(def.clone())?);
        let mut boards = self.boards.write_unpoisoned();
        Ok(boards.entry(def.id.clone()).or_insert(entry).clone())
    }

    /// The boards of one game, sorted by mode, season and scope.
    /// O(boards).
    pub fn of_game(&self, game: &str) -> Vec<Arc<BoardEntry>> {
        let boards = self.boards.read_unpoisoned();
        let mut found: Vec<_> = boards
            .values()
            .filter(|b| b.def.id.game == game)
            .cloned()
            .collect();
        found.sort_by(|a, b| a.def.id.cmp(&b.def.id));
        found
    }

    /// The boards of one season of a game, sorted.
    /// O(boards).
    pub fn of_season(&self, game: &str, season: &str) -> Vec<Arc<BoardEntry>> {
        let mut found = self.of_game(game);
        found.retain(|b| b.def.id.season == season);
        found
    }

    /// Every board, sorted.
    /// O(boards).
    pub fn all(&self) -> Vec<Arc<BoardEntry>> {
        let boards = self.boards.read_unpoisoned();
        let mut found: Vec<_> = boards.values().cloned().collect();
        found.sort_by(|a, b| a.def.id.cmp(&b.def.id));
        found
    }

    /// The broken boards and why, sorted.
    /// O(boards).
    pub fn broken(&self) -> Vec<(BoardId, Broken)> {
        self.all()
            .iter()
            .filter_map(|entry| entry.broken().map(|b| (entry.def.id.clone(), b)))
            .collect()
    }

    /// Every live instance of every board, sorted.
    /// O(instances).
    pub fn all_instances(&self) -> Vec<Arc<BoardSlot>> {
        self.all().iter().flat_map(|entry| entry.instances()).collect()
    }
}

#[cfg(test)]
mod tests {
    use standings_core::{ScoreEvent, ScoreMode};

    use super::*;

    /// A slot's digest is the board's at its version: kept for that version, and computed again
    /// once the board moved (never a digest of an older version).
    #[test]
    fn a_digest_is_kept_for_its_version_only() {
        let id = BoardId {
            game: "g".into(),
            mode: "m".into(),
            season: "s".into(),
            scope: "global".into(),
        };
        let slot = BoardSlot::new(
            id,
            Period::all_time(),
            Board::new(BoardRules::new(ScoreMode::Highest)),
        );
        let score = |id: &str, player: &str, value: i64| {
            slot.write()
                .apply(&ScoreEvent::new(id, player, value, 1).unwrap())
                .unwrap();
        };
        score("e1", "p-ava", 10);
        let (first, version, players) = slot.digest();
        assert_eq!((first, version, players), (slot.read().digest(), 1, 1));
        assert_eq!(slot.digest().0, first);
        score("e2", "p-ben", 20);
        let (second, version, players) = slot.digest();
        assert_eq!((version, players), (2, 2));
        assert_ne!(second, first);
        assert_eq!(second, slot.read().digest());
    }
}
