//! The published parts (manifests and chunks), content-addressed, and when each is dropped:
//! the decisions only, without locks, clocks or IO, so they are tested on their own.
//!
//! A part is held while some current head names it: every board instance that is published
//! names its latest manifest and every chunk of it, and a part's count is the number of
//! instances naming it (identical chunks of two boards are held once). When the count falls to
//! zero the part is *unnamed* at that time, and it stays fetchable for the retention, so that an
//! edge in the middle of a read of the older version can finish it; then it is gone, even if
//! it has not been swept out of memory yet. A part remembers every game that published it:
//! those games' edges may fetch it (the same bytes, whichever board they came from).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use standings_core::ChunkHash;

use crate::fast_hash::FastHash;

/// What a part is, which names the path it is fetched at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartKind {
    /// A manifest, at `/v1/snapshots/manifests/{hash}`.
    Manifest,
    /// A rank or lookup chunk, at `/v1/snapshots/chunks/{hash}`.
    Chunk,
}

/// One held part.
struct Part {
    kind: PartKind,
    bytes: Bytes,
    /// The games that published it, in the order they first did.
    games: Vec<Arc<str>>,
    /// How many current heads name it.
    named: u32,
    /// When `named` last fell to zero; `None` while it is named.
    unnamed_since: Option<i64>,
}

impl Part {
    /// Whether it is past its retention at `now_ms`: unnamed for `retention_ms` or more.
    fn expired(&self, now_ms: i64, retention_ms: i64) -> bool {
        self.unnamed_since
            .is_some_and(|since| now_ms >= since.saturating_add(retention_ms))
    }
}

/// A part as a fetch finds it.
pub(crate) struct Found<'a> {
    /// Its bytes (a reference-counted handle: cloning it copies nothing).
    pub(crate) bytes: &'a Bytes,
    /// The games that published it.
    pub(crate) games: &'a [Arc<str>],
}

/// What one head names that the one before did not (`added`), and the reverse (`removed`),
/// from the two sorted lists of hashes, each hash listed once. O(before + after), with no
/// lookups, so a large board's publication counts only the parts that changed.
pub(crate) fn changes(before: &[ChunkHash], after: &[ChunkHash]) -> (Vec<ChunkHash>, Vec<ChunkHash>) {
    let (mut added, mut removed) = (Vec::new(), Vec::new());
    let (mut b, mut a) = (before.iter().peekable(), after.iter().peekable());
    loop {
        match (b.peek(), a.peek()) {
            (None, None) => break,
            (Some(_), None) => removed.extend(b.by_ref()),
            (None, Some(_)) => added.extend(a.by_ref()),
            (Some(old), Some(new)) => match old.cmp(new) {
                std::cmp::Ordering::Less => removed.extend(b.next()),
                std::cmp::Ordering::Greater => added.extend(a.next()),
                std::cmp::Ordering::Equal => {
                    b.next();
                    a.next();
                }
            },
        }
    }
    (added, removed)
}

/// Every held part, by hash, with the retention after which unnamed parts are gone.
pub(crate) struct PartStore {
    retention_ms: i64,
    parts: HashMap<ChunkHash, Part, FastHash>,
    /// The sum of the held parts' lengths.
    bytes_held: u64,
    /// Games with a recent erasure, and until when their parts go as soon as they are unnamed.
    erased: HashMap<Arc<str>, i64>,
}

impl PartStore {
    /// An empty store whose unnamed parts stay fetchable `retention_ms`.
    pub(crate) fn new(retention_ms: i64) -> PartStore {
        PartStore {
            retention_ms,
            parts: HashMap::default(),
            bytes_held: 0,
            erased: HashMap::new(),
        }
    }

    /// Holds `bytes` as the part `hash`, published by `game`, unnamed until [`PartStore::name`]
    /// names it (as of `now_ms`). A part already held keeps its bytes (the same, by their hash)
    /// and learns the game. The game's name is shared, not copied: a large board publishes
    /// thousands of parts. O(games of the part).
    pub(crate) fn insert(
        &mut self,
        hash: ChunkHash,
        kind: PartKind,
        bytes: Bytes,
        game: &Arc<str>,
        now_ms: i64,
    ) {
        match self.parts.get_mut(&hash) {
            Some(part) => {
                if !part.games.iter().any(|g| g == game) {
                    part.games.push(game.clone());
                }
            }
            None => {
                self.bytes_held += bytes.len() as u64;
                self.parts.insert(
                    hash,
                    Part {
                        kind,
                        bytes,
                        games: vec![game.clone()],
                        named: 0,
                        unnamed_since: Some(now_ms),
                    },
                );
            }
        }
    }

    /// Whether every one of `hashes` is held (expired or not). O(hashes).
    pub(crate) fn holds_all(&self, hashes: &[ChunkHash]) -> bool {
        hashes.iter().all(|h| self.parts.contains_key(h))
    }

    /// One more head names each of `hashes` (each listed once); a part named again before it
    /// expired is fetchable for as long as it stays named. Hashes not held are skipped (see
    /// [`PartStore::holds_all`]). O(hashes).
    pub(crate) fn name(&mut self, hashes: &[ChunkHash]) {
        for hash in hashes {
            if let Some(part) = self.parts.get_mut(hash) {
                part.named += 1;
                part.unnamed_since = None;
            }
        }
    }

    /// One head fewer names each of `hashes` (each listed once), as of `now_ms`: a part no head
    /// names any more starts its retention, or goes at once when its game had an erasure
    /// lately. O(hashes).
    pub(crate) fn unname(&mut self, hashes: &[ChunkHash], now_ms: i64) {
        self.erased.retain(|_, until| *until > now_ms);
        for hash in hashes {
            if let Some(part) = self.parts.get_mut(hash) {
                part.named = part.named.saturating_sub(1);
                if part.named == 0 && part.unnamed_since.is_none() {
                    part.unnamed_since = Some(now_ms);
                }
                if part.named == 0 && part.games.iter().any(|g| self.erased.contains_key(g)) {
                    self.remove(hash);
                }
            }
        }
    }

    /// Drops every part of `game` no head names, and drops the ones unnamed later at once until
    /// `now_ms + window_ms` (an erasure: an old head's parts may hold what was erased).
    /// O(parts held).
    pub(crate) fn forget_game(&mut self, game: &str, now_ms: i64, window_ms: i64) {
        self.erased
            .insert(Arc::from(game), now_ms.saturating_add(window_ms));
        let doomed: Vec<ChunkHash> = self
            .parts
            .iter()
            .filter(|(_, part)| part.named == 0 && part.games.iter().any(|g| &**g == game))
            .map(|(hash, _)| *hash)
            .collect();
        for hash in doomed {
            self.remove(&hash);
        }
    }

    fn remove(&mut self, hash: &ChunkHash) {
        if let Some(part) = self.parts.remove(hash) {
            self.bytes_held -= part.bytes.len() as u64;
        }
    }

    /// The part `hash` of `kind` if it is fetchable at `now_ms`: held, and named or within its
    /// retention. O(1).
    pub(crate) fn get(&self, hash: &ChunkHash, kind: PartKind, now_ms: i64) -> Option<Found<'_>> {
        let part = self.parts.get(hash)?;
        if part.kind != kind || part.expired(now_ms, self.retention_ms) {
            return None;
        }
        Some(Found {
            bytes: &part.bytes,
            games: &part.games,
        })
    }

    /// Drops every part past its retention at `now_ms`; returns how many. O(parts held).
    pub(crate) fn sweep(&mut self, now_ms: i64) -> usize {
        let before = self.parts.len();
        let retention_ms = self.retention_ms;
        let mut freed = 0;
        self.parts.retain(|_, part| {
            let expired = part.expired(now_ms, retention_ms);
            if expired {
                freed += part.bytes.len() as u64;
            }
            !expired
        });
        self.bytes_held -= freed;
        before - self.parts.len()
    }

    /// How many parts are held (some may be expired and not yet swept). O(1).
    pub(crate) fn parts_held(&self) -> usize {
        self.parts.len()
    }

    /// The bytes of the parts held. O(1).
    pub(crate) fn bytes_held(&self) -> u64 {
        self.bytes_held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RETENTION: i64 = 60_000;

    fn hash(n: u8) -> ChunkHash {
        ChunkHash::of(&[n])
    }

    fn store_with(parts: &[(u8, &str)], now: i64) -> PartStore {
        let mut store = PartStore::new(RETENTION);
        for (n, game) in parts {
            store.insert(
                hash(*n),
                PartKind::Chunk,
                Bytes::from(vec![*n; 10]),
                &Arc::from(*game),
                now,
            );
        }
        store
    }

    fn fetchable(store: &PartStore, n: u8, now: i64) -> bool {
        store.get(&hash(n), PartKind::Chunk, now).is_some()
    }

    /// A part a head names stays fetchable however long; once no head names it, it is
    /// fetchable for exactly the retention, then gone before any sweep, and the sweep frees it.
    #[test]
    fn an_unnamed_part_lives_for_the_retention() {
        let mut store = store_with(&[(1, "g"), (2, "g")], 0);
        store.name(&[hash(1), hash(2)]);
        assert!(fetchable(&store, 1, 10 * RETENTION));
        // A new version names 2 and 3; 1 is unnamed at t=1000.
        store.insert(
            hash(3),
            PartKind::Chunk,
            Bytes::from_static(b"three"),
            &Arc::from("g"),
            1_000,
        );
        store.name(&[hash(2), hash(3)]);
        store.unname(&[hash(1), hash(2)], 1_000);
        assert!(fetchable(&store, 1, 1_000 + RETENTION - 1));
        assert!(!fetchable(&store, 1, 1_000 + RETENTION), "gone at the retention");
        assert!(fetchable(&store, 2, 1_000 + 2 * RETENTION), "still named");
        assert_eq!((store.parts_held(), store.bytes_held()), (3, 25));
        assert_eq!(store.sweep(1_000 + RETENTION - 1), 0);
        assert_eq!(store.sweep(1_000 + RETENTION), 1);
        assert_eq!((store.parts_held(), store.bytes_held()), (2, 15));
    }

    /// A part two heads name (identical chunks of two boards) is held once and stays named
    /// until the last of them stops naming it; it remembers both games that published it.
    #[test]
    fn a_shared_part_waits_for_its_last_head() {
        let mut store = store_with(&[(1, "arena")], 0);
        let other: Arc<str> = Arc::from("other");
        store.insert(hash(1), PartKind::Chunk, Bytes::from(vec![1; 10]), &other, 0);
        store.insert(
            hash(1),
            PartKind::Chunk,
            Bytes::from(vec![1; 10]),
            &Arc::from("other"),
            0,
        );
        store.name(&[hash(1)]);
        store.name(&[hash(1)]);
        let found = store.get(&hash(1), PartKind::Chunk, 0).unwrap();
        let games: Vec<&str> = found.games.iter().map(|g| &**g).collect();
        assert_eq!(games, ["arena", "other"]);
        assert_eq!(store.bytes_held(), 10, "held once");
        store.unname(&[hash(1)], 5);
        assert!(
            fetchable(&store, 1, 5 + 10 * RETENTION),
            "the other head names it"
        );
        store.unname(&[hash(1)], 7);
        assert!(fetchable(&store, 1, 7 + RETENTION - 1));
        assert!(!fetchable(&store, 1, 7 + RETENTION));
    }

    /// A part named again within its retention (a board moved back to an older state) is
    /// fetchable again for as long as it is named; a part never named is on its retention from
    /// its insertion.
    #[test]
    fn a_part_named_again_is_kept_and_an_unnamed_insert_expires() {
        let mut store = store_with(&[(1, "g"), (2, "g")], 0);
        store.name(&[hash(1)]);
        store.unname(&[hash(1)], 100);
        store.name(&[hash(1)]);
        assert!(fetchable(&store, 1, 100 + 5 * RETENTION));
        assert!(!fetchable(&store, 2, RETENTION), "inserted at 0, never named");
        assert_eq!(store.sweep(100 + 5 * RETENTION), 1);
        assert!(store.holds_all(&[hash(1)]) && !store.holds_all(&[hash(1), hash(2)]));
    }

    /// The changes between two heads are what each names alone, whatever their overlap.
    #[test]
    fn changes_are_what_each_head_names_alone() {
        let h: Vec<ChunkHash> = (0..6).map(hash).collect();
        let sorted = |mut v: Vec<ChunkHash>| {
            v.sort_unstable();
            v
        };
        let before = sorted(vec![h[0], h[1], h[2], h[3]]);
        let after = sorted(vec![h[2], h[3], h[4], h[5]]);
        assert_eq!(
            changes(&before, &after),
            (sorted(vec![h[4], h[5]]), sorted(vec![h[0], h[1]]))
        );
        assert_eq!(changes(&[], &after), (after.clone(), vec![]));
        assert_eq!(changes(&before, &[]), (vec![], before.clone()));
        assert_eq!(changes(&before, &before), (vec![], vec![]));
    }

    /// A manifest is not a chunk: each is found only as its own kind.
    #[test]
    fn a_part_is_found_only_as_its_kind() {
        let mut store = PartStore::new(RETENTION);
        store.insert(
            hash(9),
            PartKind::Manifest,
            Bytes::from_static(b"m"),
            &Arc::from("g"),
            0,
        );
        store.name(&[hash(9)]);
        assert!(store.get(&hash(9), PartKind::Manifest, 0).is_some());
        assert!(store.get(&hash(9), PartKind::Chunk, 0).is_none());
        assert!(store.get(&hash(8), PartKind::Manifest, 0).is_none());
    }
}
