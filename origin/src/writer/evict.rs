//! Eviction: closed periods past their retention leave memory for storage, between groups.
//!
//! A period board is read rarely after it closes, and a service that kept every day of every board
//! would grow without bound. The writer moves a closed instance past
//! `closed_period_retention_seconds` to storage (a period snapshot) and drops it from the registry
//! into the registry's bounded cache of closed instances; a read of it is then answered from that
//! cache, or once it left the cache from storage, with the same answers and `board_version`. Retention
//! reads the injected clock, so tests move time instead of sleeping. Eviction changes boards, so it
//! waits for the applying thread first.

use super::driver::Writer;
use super::{ActionRequest, WriterError};
use crate::domain::Action;

/// Moves closed periods past their retention out of memory, into storage.
impl Writer {
    /// Logs the close of every period instance of a board with a feed whose close time
    /// passed (on the injected clock) and is not logged yet, oldest first: its
    /// `period_closed` record then has a place in the log's order, and a replay makes it
    /// again. Before [`Writer::evict`], which could take the instance away. O(instances),
    /// plus an action per close.
    pub(super) async fn close_periods(&mut self) -> Result<usize, WriterError> {
        let now = self.clock.now_ms();
        let mut due = Vec::new();
        for entry in self.registry.all() {
            if entry.def.feed.is_empty() {
                continue;
            }
            for slot in entry.instances() {
                let Some(closes_at) = entry.calendar.closes_at(&slot.period) else {
                    continue;
                };
                let kind = slot.period.kind.as_str();
                if now >= closes_at && !self.domain.close_logged(&slot.id, kind, &slot.period.key) {
                    due.push((closes_at, slot.id.clone(), kind, slot.period.key.clone()));
                }
            }
        }
        due.sort();
        let closed = due.len();
        for (closes_at, board, period, period_key) in due {
            let request = serde_json::json!({
                "kind": "PERIOD_CLOSE",
                "board": crate::domain::feed::board_name(&board),
                "period": period,
                "period_key": period_key,
            });
            self.act(ActionRequest {
                game: board.game.clone(),
                reason: format!(
                    "the {period} period {period_key} closed at {}",
                    crate::clock::format_rfc3339(closes_at)
                ),
                action: Action::PeriodClose {
                    board,
                    period: period.to_string(),
                    period_key,
                },
                action_id: None,
                request,
                actor: "standings".into(),
                profile_patch: None,
            })
            .await?;
        }
        Ok(closed)
    }

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
