//! The feed: what players care about, per game, in `seq` order (`docs/feed.md`). A board whose
//! definition declares it records the players who entered or left its bands and the players a
//! mover passed who have the mover on their friend list.
//!
//! Records are the log's consequence. The applying thread makes them from each change with the
//! core's [`standings_core::Board::band_crossings`] and [`standings_core::Board::overtakes`]
//! and holds them here; [`Feed::flush`] stores them, each at a seq taken from its log entry
//! ([`record_seq`]), so a record made again by a restart's replay is the same row. A checkpoint
//! flushes first: every entry at or before a checkpoint has its records stored, and every entry
//! after one is replayed at the next start, so a crash loses no record.

pub(crate) mod delivery;

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use standings_core::{Board, Delta};

use crate::domain::feed as records;
pub(crate) use crate::domain::feed::Record;
use crate::domain::periods::Period;
use crate::domain::rewards::Award;
use crate::domain::{BoardDef, ResultRow};
use crate::store::{Store, StoreError};
use crate::sync::LockUnpoisoned;

/// How many records one log entry may make: a record's seq is its entry's times this plus its
/// place. A move passes at most 1,000 followers per instance (a friend list's cap), so an entry
/// reaching this on one board would be a bug; records past it are dropped with an error.
pub(crate) const RECORDS_PER_ENTRY: i64 = 1 << 20;

/// The seq of an entry's `index`-th record. O(1).
pub(crate) fn record_seq(entry_seq: i64, index: i64) -> i64 {
    entry_seq.saturating_mul(RECORDS_PER_ENTRY).saturating_add(index)
}

/// The records made and not yet stored, and who follows whom.
pub struct Feed {
    /// The log entry being applied and how many records it made so far.
    entry: Mutex<Entry>,
    /// Records made, oldest first, not yet stored.
    pending: Mutex<Vec<Record>>,
    /// For each game, who has each player on their friend list.
    followers: Mutex<HashMap<String, Follows>>,
    /// One store at a time (a flush, or a group's commit carrying records), so records are
    /// stored in the order they were made.
    flushing: std::sync::Arc<tokio::sync::Mutex<()>>,
    /// Records stored since the start.
    stored: std::sync::atomic::AtomicU64,
    /// Each webhook endpoint's deliveries, failures and whether it is parked, as its delivery
    /// task last saw them, for `/metrics`.
    endpoints: Mutex<std::collections::BTreeMap<(String, String), EndpointStats>>,
    /// Changes make records for the log entries after this seq only: none until a service
    /// starts making them (a registry rebuilt from the whole log makes none: its changes are
    /// not read one by one), and at a start none for the entries whose records are stored.
    making_after: AtomicI64,
}

impl Default for Feed {
    fn default() -> Self {
        Feed {
            entry: Mutex::default(),
            pending: Mutex::default(),
            followers: Mutex::default(),
            flushing: std::sync::Arc::default(),
            stored: std::sync::atomic::AtomicU64::new(0),
            endpoints: Mutex::default(),
            making_after: AtomicI64::new(i64::MAX),
        }
    }
}

/// The log entry being applied.
#[derive(Default)]
struct Entry {
    seq: i64,
    made: i64,
    at_ms: i64,
}

/// The last log entry whose feed records are all stored, given `stored`, the last record seq
/// stored (-1 for none): the entry before that record's. Records are stored in order, so every
/// earlier entry's are stored; but the entry's own may be stored in part, since the writer
/// takes the records made so far for its next group while the applier is still making the
/// rest of that entry's (one change per board). Its records are made again (the same seqs, so
/// those stored stay as they are). O(1).
pub(crate) fn remade_after(stored: i64) -> i64 {
    if stored < 0 {
        -1
    } else {
        stored / RECORDS_PER_ENTRY - 1
    }
}

/// A game's friend lists both ways: each player's list, and who lists each player.
#[derive(Default)]
struct Follows {
    lists: HashMap<String, Vec<String>>,
    followers: HashMap<String, Vec<String>>,
}

impl Feed {
    /// Changes make records from now on, for the log entries from the last one whose records
    /// `store` holds (see [`remade_after`]). One look-up.
    pub async fn start_making(&self, store: &Store) -> Result<(), StoreError> {
        let after = remade_after(store.feed_last().await?);
        self.making_after.store(after, Ordering::Release);
        Ok(())
    }

    /// The entry `seq` of the log, written at `at_ms`, is applied next: its records are
    /// numbered from its seq. O(1).
    pub fn entry(&self, seq: i64, at_ms: i64) {
        *self.entry.lock_unpoisoned() = Entry { seq, made: 0, at_ms };
    }

    /// Replaces `player`'s friend list in `game` in the followers map. O(old + new list).
    pub fn set_friends(&self, game: &str, player: &str, friends: &[String]) {
        let mut all = self.followers.lock_unpoisoned();
        let follows = all.entry(game.to_string()).or_default();
        if let Some(old) = follows.lists.remove(player) {
            for friend in old {
                if let Some(list) = follows.followers.get_mut(&friend) {
                    list.retain(|f| f != player);
                    if list.is_empty() {
                        follows.followers.remove(&friend);
                    }
                }
            }
        }
        for friend in friends {
            follows
                .followers
                .entry(friend.clone())
                .or_default()
                .push(player.to_string());
        }
        if !friends.is_empty() {
            follows.lists.insert(player.to_string(), friends.to_vec());
        }
    }

    /// Loads every friend list from the store, in place of those held. O(lists).
    pub async fn load_friends(&self, store: &Store) -> Result<(), StoreError> {
        let lists = store.all_friends().await?;
        self.followers.lock_unpoisoned().clear();
        for (game, player, friends) in lists {
            self.set_friends(&game, &player, &friends);
        }
        Ok(())
    }

    /// Makes the records of `delta`, the change that made `board`'s current version of
    /// `def`'s instance for `period`. O(bands x log n + followers x log n).
    pub fn observe(&self, def: &BoardDef, period: &Period, board: &Board, delta: &Delta) {
        if def.feed.is_empty() {
            return;
        }
        let making_after = self.making_after.load(Ordering::Acquire);
        if self.entry.lock_unpoisoned().seq <= making_after {
            return;
        }
        let mut made: Vec<records::Made> = board
            .band_crossings(delta, &def.feed.bands)
            .iter()
            .map(|c| records::crossing(&def.feed.bands, c))
            .collect();
        if def.feed.overtakes {
            // Read under the lock rather than copied out: a mover's followers are up to a
            // friend list's cap, and this runs for every change of the board.
            let followers = self.followers.lock_unpoisoned();
            if let Some(watching) = followers
                .get(&def.id.game)
                .and_then(|f| f.followers.get(delta.player.as_str()))
            {
                let watching: Vec<&str> = watching.iter().map(String::as_str).collect();
                made.extend(
                    board
                        .overtakes(delta, &watching)
                        .iter()
                        .map(|o| records::overtaken(delta.player.as_str(), o)),
                );
            }
        }
        if made.is_empty() {
            return;
        }
        let mut entry = self.entry.lock_unpoisoned();
        let shared = records::At {
            board: &def.id,
            period,
            board_version: board.version(),
            at_ms: entry.at_ms,
        }
        .shared();
        self.number(&mut entry, &def.id.game, &shared, made);
    }

    /// Makes the records of an action the log entry being applied performed: each result
    /// (`season_finalized` or `correction`) followed by the rewards it changed, and a
    /// period's close. O(records).
    pub(crate) fn performed(
        &self,
        results: &[ResultRow],
        awards: &[Vec<Award>],
        closed: Option<&records::Closed>,
    ) {
        if results.is_empty() && closed.is_none() {
            return;
        }
        let mut entry = self.entry.lock_unpoisoned();
        if entry.seq <= self.making_after.load(Ordering::Acquire) {
            return;
        }
        let all_time = Period::all_time();
        for (result, awards) in results.iter().zip(awards) {
            let shared = records::At {
                board: &result.board,
                period: &all_time,
                board_version: u64::try_from(result.board_version).unwrap_or(0),
                at_ms: entry.at_ms,
            }
            .shared();
            let mut made = vec![records::result(result, awards.len())];
            made.extend(
                awards
                    .iter()
                    .map(|a| records::reward(&result.board.season, result.correction, a)),
            );
            self.number(&mut entry, &result.board.game, &shared, made);
        }
        if let Some(closed) = closed {
            let shared = records::At {
                board: &closed.board,
                period: &closed.period,
                board_version: closed.board_version,
                at_ms: entry.at_ms,
            }
            .shared();
            self.number(
                &mut entry,
                &closed.board.game,
                &shared,
                vec![records::period_closed(closed.players)],
            );
        }
    }

    /// Numbers `made`, records of `game` from the entry being applied, and holds them to be
    /// stored. O(made).
    fn number(&self, entry: &mut Entry, game: &str, shared: &str, made: Vec<records::Made>) {
        let mut pending = self.pending.lock_unpoisoned();
        for made in &made {
            if entry.made >= RECORDS_PER_ENTRY {
                tracing::error!(
                    "log entry {} made more than {RECORDS_PER_ENTRY} feed records; the rest are dropped",
                    entry.seq
                );
                break;
            }
            let seq = record_seq(entry.seq, entry.made);
            entry.made += 1;
            pending.push(Record::new(game, seq, made, shared, entry.at_ms));
        }
    }

    /// Drops the records made here that the log's owner stored already (`stored`: the last
    /// seq it stored; it stores in order): a warm copy makes the same records as the owner and
    /// keeps only those the owner may not have stored, to store them if it takes over.
    /// O(records held).
    pub fn forget_stored(&self, stored: i64) {
        self.pending.lock_unpoisoned().retain(|r| r.seq > stored);
    }

    /// The records made so far, for the writer's next group to commit with its events (on
    /// SQLite a store of its own would take turns with the group commits at the one write lock,
    /// and a group waiting its turn waits milliseconds): `None` when there are none, or while a
    /// flush or another group holds them. Hand them back with [`Feed::committed`]. O(1).
    pub(crate) fn take_for_group(&self) -> Option<Carried> {
        let turn = self.flushing.clone().try_lock_owned().ok()?;
        let records = std::mem::take(&mut *self.pending.lock_unpoisoned());
        if records.is_empty() {
            return None;
        }
        Some(Carried { turn, records })
    }

    /// What became of the records a group carried: stored with it, or (its commit failed,
    /// or its outcome is unknown) pending again, before every newer one. O(records) when not
    /// stored.
    pub(crate) fn committed(&self, carried: Carried, stored: bool) {
        let Carried { turn, mut records } = carried;
        if stored {
            self.stored.fetch_add(records.len() as u64, Ordering::Relaxed);
        } else {
            let mut pending = self.pending.lock_unpoisoned();
            let newer = std::mem::take(&mut *pending);
            records.extend(newer);
            *pending = records;
        }
        drop(turn);
    }

    /// When the oldest record waiting was made (its log entry's time), if any. O(1).
    fn oldest_pending(&self) -> Option<i64> {
        self.pending.lock_unpoisoned().first().map(|r| r.created_at)
    }

    /// How many records wait to be stored. O(1).
    pub fn pending(&self) -> usize {
        self.pending.lock_unpoisoned().len()
    }

    /// Stores every record made so far, in order; a record already stored (made again by a
    /// replay) is kept as it was. On a failure the records stay pending for the next flush.
    /// O(records).
    pub async fn flush(&self, store: &Store) -> Result<usize, StoreError> {
        let _one = self.flushing.lock().await;
        let mut taken = std::mem::take(&mut *self.pending.lock_unpoisoned());
        let mut stored = 0;
        while stored < taken.len() {
            let chunk = &taken[stored..taken.len().min(stored + RECORDS_PER_TRANSACTION)];
            if let Err(e) = store.append_feed(chunk).await {
                let mut pending = self.pending.lock_unpoisoned();
                taken.drain(..stored);
                let newer = std::mem::replace(&mut *pending, taken);
                pending.extend(newer);
                return Err(e);
            }
            stored += chunk.len();
            self.stored.fetch_add(chunk.len() as u64, Ordering::Relaxed);
        }
        Ok(stored)
    }
}

/// Records a group's transaction carries, and the turn it holds until they are stored or
/// back in line.
pub(crate) struct Carried {
    turn: tokio::sync::OwnedMutexGuard<()>,
    pub(crate) records: Vec<Record>,
}

/// A webhook endpoint's figures for `/metrics`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct EndpointStats {
    pub(crate) delivered: u64,
    pub(crate) failed: u64,
    pub(crate) parked: bool,
    pub(crate) delivered_through: i64,
}

impl Feed {
    /// Notes an endpoint's attempt (`Some(true)` delivered, `Some(false)` failed, `None` only
    /// its state) and its state after it. O(log endpoints).
    pub(crate) fn note_endpoint(
        &self,
        game: &str,
        id: &str,
        attempt: Option<bool>,
        parked: bool,
        through: i64,
    ) {
        let mut all = self.endpoints.lock_unpoisoned();
        let stats = all.entry((game.to_string(), id.to_string())).or_default();
        match attempt {
            Some(true) => stats.delivered += 1,
            Some(false) => stats.failed += 1,
            None => {}
        }
        stats.parked = parked;
        stats.delivered_through = through;
    }

    /// Forgets a removed endpoint's figures. O(log endpoints).
    pub(crate) fn forget_endpoint(&self, game: &str, id: &str) {
        self.endpoints
            .lock_unpoisoned()
            .remove(&(game.to_string(), id.to_string()));
    }

    /// Records stored since the start. O(1).
    pub(crate) fn stored(&self) -> u64 {
        self.stored.load(Ordering::Relaxed)
    }

    /// Every endpoint's figures, by game and id. O(endpoints).
    pub(crate) fn endpoint_stats(&self) -> Vec<((String, String), EndpointStats)> {
        self.endpoints
            .lock_unpoisoned()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

/// How often the keep task looks for records to store.
const FLUSH_EVERY_MS: i64 = 20;

/// How long records wait for a group's commit to carry them before the keep task stores them
/// itself: while writes go on, groups carry them; when they stop, this is the delay.
const CARRY_WAIT_MS: i64 = 50;

/// The most records one transaction of a flush stores: short turns beside the group commits.
const RECORDS_PER_TRANSACTION: usize = 256;

/// How often retention removes old records.
const PRUNE_EVERY_MS: i64 = 60_000;

/// Stores `feed`'s records every [`FLUSH_EVERY_MS`] and removes those older than
/// `retention_seconds` every [`PRUNE_EVERY_MS`], on the injected clock, until the feed is
/// dropped with its registry (its service stopped or its partition given away).
pub(crate) async fn keep(
    feed: std::sync::Weak<Feed>,
    store: Store,
    clock: crate::clock::Clock,
    retention_seconds: i64,
) {
    let mut next_prune = clock.now_ms();
    loop {
        let tick = clock.now_ms().saturating_add(FLUSH_EVERY_MS);
        let Some(live) = feed.upgrade() else {
            return;
        };
        let waited = live
            .oldest_pending()
            .is_some_and(|made| clock.now_ms().saturating_sub(made) >= CARRY_WAIT_MS);
        if waited && let Err(e) = live.flush(&store).await {
            tracing::warn!(
                "storing feed records failed (kept for the next try): {}",
                crate::chain::Chain(&e)
            );
        }
        drop(live);
        let now = clock.now_ms();
        if now >= next_prune {
            next_prune = now.saturating_add(PRUNE_EVERY_MS);
            let before = now.saturating_sub(retention_seconds.saturating_mul(1000));
            if let Err(e) = store.prune_feed(before).await {
                tracing::warn!("removing old feed records failed: {}", crate::chain::Chain(&e));
            }
        }
        clock.sleep_until(tick).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A start makes again the records of the entry whose records were stored last, which
    /// may have been stored in part, and of every entry after it; none when none is stored.
    #[test]
    fn a_start_makes_again_the_last_stored_entrys_records() {
        assert_eq!(remade_after(-1), -1);
        assert_eq!(remade_after(record_seq(7, 0)), 6);
        assert_eq!(remade_after(record_seq(7, 3)), 6);
        assert_eq!(remade_after(record_seq(1, 0)), 0);
    }
}
