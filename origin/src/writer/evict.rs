//! Eviction: closed periods past their retention leave memory for storage, between groups.
//!
//! A period board is read rarely after it closes, and a service that kept every day of every board
//! would grow without bound. The writer moves a closed instance past
//! `closed_period_retention_seconds` to storage (a period snapshot) and drops it from the registry
//! into the registry's bounded cache of closed instances; a read of it is then answered from that
//! cache, or once it left the cache from storage, with the same answers and `board_version`. Retention
//! reads the injected clock, so tests move time instead of sleeping. Eviction changes boards, so it
//! waits for the applying thread first.

use super::WriterError;
use super::driver::Writer;

/// Moves closed periods past their retention out of memory, into storage.
impl Writer {
    /// Saves every closed period past its retention (on the injected clock) as a snapshot and
    /// drops it from memory; returns how many left. O(instances), plus a snapshot per evicted
    /// one.
    pub(super) async fn evict(&self) -> Result<usize, WriterError> {
        let parts = self;
        let now = parts.clock.now_ms();
        let mut evicted = 0;
        for entry in parts.registry.all() {
            for slot in entry.instances() {
                let Some(closes_at) = entry.calendar.closes_at(&slot.period) else {
                    continue;
                };
                if now < closes_at.saturating_add(parts.retention_ms) {
                    continue;
                }
                let (entries, version) = {
                    let board = slot.read();
                    (crate::log::result_entries(&board), board.version())
                };
                parts
                    .store
                    .save_period_snapshot(&slot.id, &slot.period.key, version as i64, &entries)
                    .await?;
                // The instance a read of it would restore from that snapshot, as it is: the
                // reads that follow need no restore.
                if let Some(left) = entry.evict(&slot.period.key) {
                    parts.registry.closed.put(left);
                }
                evicted += 1;
            }
        }
        Ok(evicted)
    }
}
