//! The snapshots of closed periods that left memory.

use sqlx::Row;
use standings_core::BoardId;

use super::StoreError;
use super::{Store, db_err};

impl Store {
    /// Stores (or replaces) the snapshot of a closed period leaving memory.
    pub async fn save_period_snapshot(
        &self,
        board: &BoardId,
        period_key: &str,
        board_version: i64,
        entries: &str,
    ) -> Result<(), StoreError> {
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

    /// The snapshot of a closed period, if it left memory: its version and entries.
    pub async fn period_snapshot(
        &self,
        board: &BoardId,
        period_key: &str,
    ) -> Result<Option<(i64, String)>, StoreError> {
        let row = sqlx::query(
            "SELECT board_version, entries FROM period_snapshots WHERE game = $1 AND mode = $2 AND season = $3 \
             AND scope = $4 AND period_key = $5",
        )
        .bind(&board.game)
        .bind(&board.mode)
        .bind(&board.season)
        .bind(&board.scope)
        .bind(period_key)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err("cannot read a period snapshot"))?;
        let bad = db_err("bad period snapshot row");
        row.map(|r| {
            Ok((
                r.try_get("board_version").map_err(&bad)?,
                r.try_get("entries").map_err(&bad)?,
            ))
        })
        .transpose()
    }
}
