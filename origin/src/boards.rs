//! The live boards: one `standings_core::Board` per defined board, derived from the event log
//! and rebuilt from it at start-up.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use bytes::Bytes;
use standings_core::{Board, BoardId, BoardRules, Replay, ScoreEvent};

use crate::error::AppError;
use crate::store::{BoardDef, Store, StoredEvent};

/// How many distinct top-N pages one board keeps cached for its current version.
const PAGE_CACHE_ENTRIES: usize = 256;

/// The key of a cached top page: the limit and the cursor it was asked with.
type PageKey = (usize, Option<Vec<u8>>);

/// One live board.
pub struct BoardSlot {
    /// Which board.
    pub id: BoardId,
    /// Its fixed rules.
    pub rules: BoardRules,
    /// The ranked state. Locks are held only for in-memory work, never across an await.
    pub board: RwLock<Board>,
    /// Serialized top pages of the current version, so repeated reads cost a copy.
    pages: Mutex<(u64, HashMap<PageKey, Bytes>)>,
}

impl BoardSlot {
    fn new(id: BoardId, board: Board) -> BoardSlot {
        BoardSlot {
            id,
            rules: *board.rules(),
            board: RwLock::new(board),
            pages: Mutex::new((u64::MAX, HashMap::new())),
        }
    }

    /// A read lock on the board. A poisoned lock (a panic while applying) is a bug; the board is
    /// still readable, so reads carry on.
    pub fn read(&self) -> std::sync::RwLockReadGuard<'_, Board> {
        self.board.read().unwrap_or_else(|e| e.into_inner())
    }

    /// A write lock on the board.
    pub fn write(&self) -> std::sync::RwLockWriteGuard<'_, Board> {
        self.board.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The cached bytes of a top page at `version`, if any.
    pub fn cached_page(&self, version: u64, key: &PageKey) -> Option<Bytes> {
        let pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        if pages.0 != version {
            return None;
        }
        pages.1.get(key).cloned()
    }

    /// Caches the bytes of a top page at `version`; pages of older versions are dropped.
    pub fn cache_page(&self, version: u64, key: PageKey, bytes: Bytes) {
        let mut pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
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

/// Every live board, by id.
#[derive(Default)]
pub struct Registry {
    boards: RwLock<HashMap<BoardId, Arc<BoardSlot>>>,
}

impl Registry {
    /// The board, if defined.
    pub fn get(&self, id: &BoardId) -> Option<Arc<BoardSlot>> {
        self.boards
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
    }

    /// Adds a newly defined, empty board. A board that is already live is kept.
    pub fn add(&self, def: &BoardDef) {
        let mut boards = self.boards.write().unwrap_or_else(|e| e.into_inner());
        boards
            .entry(def.id.clone())
            .or_insert_with(|| Arc::new(BoardSlot::new(def.id.clone(), Board::new(def.rules))));
    }

    /// The boards of one game, sorted by mode, season and scope.
    pub fn of_game(&self, game: &str) -> Vec<Arc<BoardSlot>> {
        let boards = self.boards.read().unwrap_or_else(|e| e.into_inner());
        let mut found: Vec<_> = boards.values().filter(|b| b.id.game == game).cloned().collect();
        found.sort_by(|a, b| a.id.cmp(&b.id));
        found
    }

    /// Every board, sorted.
    pub fn all(&self) -> Vec<Arc<BoardSlot>> {
        let boards = self.boards.read().unwrap_or_else(|e| e.into_inner());
        let mut found: Vec<_> = boards.values().cloned().collect();
        found.sort_by(|a, b| a.id.cmp(&b.id));
        found
    }

    /// Rebuilds every board (or only `only`) from the event log: the definitions, then every
    /// event in commit order folded as the live boards applied it. Calls `progress` with the
    /// number of events read so far.
    pub async fn rebuild(
        store: &Store,
        only: Option<&BoardId>,
        mut progress: impl FnMut(u64),
    ) -> Result<Registry, AppError> {
        let defs = store.boards().await?;
        let mut replays: HashMap<BoardId, Replay> = defs
            .iter()
            .filter(|d| only.is_none_or(|o| *o == d.id))
            .map(|d| (d.id.clone(), Replay::new(d.rules)))
            .collect();
        let mut read = 0u64;
        store
            .scan_events(|page| {
                for stored in &page {
                    let event = core_event(stored)?;
                    for id in stored.boards() {
                        if let Some(replay) = replays.get_mut(&id) {
                            replay.push(&event).map_err(|e| {
                                AppError::Internal(format!(
                                    "event {} (seq {}) cannot be replayed on {id}: {e}",
                                    stored.event_id, stored.seq
                                ))
                            })?;
                        }
                    }
                }
                read += page.len() as u64;
                progress(read);
                Ok(())
            })
            .await?;
        let registry = Registry::default();
        {
            let mut boards = registry.boards.write().unwrap_or_else(|e| e.into_inner());
            for (id, replay) in replays {
                let board = replay.finish();
                boards.insert(id.clone(), Arc::new(BoardSlot::new(id, board)));
            }
        }
        Ok(registry)
    }
}

/// The core's view of a stored event (ids were validated before they were stored).
pub fn core_event(stored: &StoredEvent) -> Result<ScoreEvent, AppError> {
    ScoreEvent::new(
        &stored.event_id,
        &stored.player_id,
        stored.value,
        stored.achieved_at,
    )
    .map_err(|e| {
        AppError::Internal(format!(
            "stored event {} (seq {}) is invalid: {e}",
            stored.event_id, stored.seq
        ))
    })
}
