//! Board definitions: defined once, never changed.

use sqlx::Row;
use sqlx::any::AnyRow;
use standings_core::{BoardId, BoardRules, ScoreMode};

use super::StoreError;
use super::{Store, db_err};
use crate::domain::{BoardDef, FeedSpec};

/// What defining a board did.
#[derive(Debug, PartialEq, Eq)]
pub enum Defined {
    /// The board is new.
    Created,
    /// It existed with the same rules.
    Identical,
    /// It exists with another definition, which is returned.
    Conflict(Box<BoardDef>),
}

impl Store {
    /// Defines a board, or reports that it exists (identically or not). Rules never change.
    /// Two index look-ups or one and an insert.
    pub async fn define_board(&self, def: &BoardDef) -> Result<Defined, StoreError> {
        let mut tx = self.begin_on(&self.pool).await.map_err(db_err("cannot begin"))?;
        let existing = sqlx::query(
            "SELECT game, mode, season, scope, score_mode, value_min, value_max, periods, grace_seconds, timezone, \
             metadata_max_bytes, shards, segments, feed FROM boards WHERE game = $1 AND mode = $2 AND season = $3 AND scope = $4",
        )
        .bind(&def.id.game)
        .bind(&def.id.mode)
        .bind(&def.id.season)
        .bind(&def.id.scope)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err("cannot read a board"))?;
        if let Some(row) = existing {
            let stored = board_from_row(&row)?;
            return Ok(if stored == *def {
                Defined::Identical
            } else {
                Defined::Conflict(Box::new(stored))
            });
        }
        sqlx::query(
            "INSERT INTO boards (game, mode, season, scope, score_mode, value_min, value_max, created_at, \
             periods, grace_seconds, timezone, metadata_max_bytes, shards, segments, feed) VALUES ($1, $2, $3, $4, \
             $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
        )
        .bind(&def.id.game)
        .bind(&def.id.mode)
        .bind(&def.id.season)
        .bind(&def.id.scope)
        .bind(def.rules.score_mode.as_str())
        .bind(def.rules.value_min)
        .bind(def.rules.value_max)
        .bind(crate::clock::now_ms())
        .bind(def.periods.join(","))
        .bind(def.grace_seconds)
        .bind(&def.timezone)
        .bind(def.metadata_max_bytes)
        .bind(def.shards)
        .bind(def.segments_column())
        .bind(if def.feed.is_empty() { String::new() } else { def.feed.view().to_string() })
        .execute(&mut *tx)
        .await
        .map_err(db_err("cannot insert a board"))?;
        tx.commit().await.map_err(db_err("cannot commit a board"))?;
        Ok(Defined::Created)
    }

    /// Every board definition, in a stable order.
    /// O(boards).
    pub async fn boards(&self) -> Result<Vec<BoardDef>, StoreError> {
        let rows = sqlx::query(
            "SELECT game, mode, season, scope, score_mode, value_min, value_max, periods, grace_seconds, timezone, \
             metadata_max_bytes, shards, segments, feed FROM boards ORDER BY game, mode, season, scope",
        )
        .fetch_all(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
        .await
        .map_err(db_err("cannot list boards"))?;
        rows.iter().map(board_from_row).collect()
    }
}

/// The scopes of a stored event from their comma-separated column.
fn board_from_row(row: &AnyRow) -> Result<BoardDef, StoreError> {
    let bad = db_err("bad board row");
    let periods: String = row.try_get("periods").map_err(&bad)?;
    let segments: String = row.try_get("segments").map_err(&bad)?;
    let feed: String = row.try_get("feed").map_err(&bad)?;
    Ok(BoardDef {
        id: BoardId {
            game: row.try_get("game").map_err(&bad)?,
            mode: row.try_get("mode").map_err(&bad)?,
            season: row.try_get("season").map_err(&bad)?,
            scope: row.try_get("scope").map_err(&bad)?,
        },
        rules: rules_from_row(row)?,
        periods: periods.split(',').map(str::to_string).collect(),
        grace_seconds: row.try_get("grace_seconds").map_err(&bad)?,
        timezone: row.try_get("timezone").map_err(&bad)?,
        metadata_max_bytes: row.try_get("metadata_max_bytes").map_err(&bad)?,
        shards: row.try_get("shards").map_err(&bad)?,
        segments: BoardDef::segments_from_column(&segments).map_err(StoreError::Corrupt)?,
        feed: if feed.is_empty() {
            FeedSpec::default()
        } else {
            serde_json::from_str(&feed)
                .map_err(|e| e.to_string())
                .and_then(|v| FeedSpec::checked(&v))
                .map_err(|e| StoreError::Corrupt(format!("stored board feed {feed:?}: {e}")))?
        },
    })
}

fn rules_from_row(row: &AnyRow) -> Result<BoardRules, StoreError> {
    let bad = db_err("bad board row");
    let mode: String = row.try_get("score_mode").map_err(&bad)?;
    let score_mode = ScoreMode::parse(&mode)
        .ok_or_else(|| StoreError::Corrupt(format!("stored board has unknown score mode {mode:?}")))?;
    let min: i64 = row.try_get("value_min").map_err(&bad)?;
    let max: i64 = row.try_get("value_max").map_err(&bad)?;
    BoardRules::with_range(score_mode, min, max)
        .ok_or_else(|| StoreError::Corrupt("stored board has value_min > value_max".into()))
}
