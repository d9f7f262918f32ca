//! Period snapshots: closed period instances that left memory, stored so that a read of an old day,
//! week or month is answered with the same entries and `board_version`. They are a cache of the
//! log, decoded into types here, never the truth.

use sqlx::Row;
use standings_core::BoardId;

use super::actions::{entries_from_text, entries_text};
use super::{Store, StoreError, db_err};
use crate::domain::RankedEntry;
use crate::domain::periods::PeriodSnapshot;

impl Store {
    /// Stores (or replaces) the snapshot of a closed period leaving memory.
    /// O(entries), in one transaction.
    pub async fn save_period_snapshot(
        &self,
        board: &BoardId,
        period_key: &str,
        board_version: i64,
        entries: &[RankedEntry],
    ) -> Result<(), StoreError> {
        let entries = entries_text(entries)?;
        let mut tx = self.begin_on(&self.pool).await.map_err(db_err("cannot begin"))?;
        sqlx::query(
            "DELETE FROM period_snapshots WHERE game = $1 AND mode = $2 AND season = $3 AND scope = $4 \
             AND period_key = $5",
        )
        .bind(&board.game)
        .bind(&board.mode)
        .bind(&board.season)
        .bind(&board.scope)
        .bind(period_key)
        .execute(&mut *tx)
        .await
        .map_err(db_err("cannot replace a period snapshot"))?;
        sqlx::query(
            "INSERT INTO period_snapshots (game, mode, season, scope, period_key, board_version, entries) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&board.game)
        .bind(&board.mode)
        .bind(&board.season)
        .bind(&board.scope)
        .bind(period_key)
        .bind(board_version)
        .bind(entries)
        .execute(&mut *tx)
        .await
        .map_err(db_err("cannot store a period snapshot"))?;
        tx.commit()
            .await
            .map_err(db_err("cannot commit a period snapshot"))
    }

    /// The snapshot of a closed period, if it left memory. O(entries).
    pub async fn period_snapshot(
        &self,
        board: &BoardId,
        period_key: &str,
    ) -> Result<Option<PeriodSnapshot>, StoreError> {
        let row = sqlx::query(
            "SELECT board_version, entries FROM period_snapshots WHERE game = $1 AND mode = $2 AND season = $3 \
             AND scope = $4 AND period_key = $5",
        )
        .bind(&board.game)
        .bind(&board.mode)
        .bind(&board.season)
        .bind(&board.scope)
        .bind(period_key)
        .fetch_optional(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
        .await
        .map_err(db_err("cannot read a period snapshot"))?;
        let bad = db_err("bad period snapshot row");
        row.map(|r| {
            Ok(PeriodSnapshot {
                board_version: r.try_get("board_version").map_err(&bad)?,
                entries: entries_from_text(&r.try_get::<String, _>("entries").map_err(&bad)?)?,
            })
        })
        .transpose()
    }
}
