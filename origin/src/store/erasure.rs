//! Erasing a player's name, country and entry metadata from what is stored before the erasure:
//! the metadata beside the log, the profile actions that held a name, season results and closed
//! periods' snapshots. The rows stay (the log keeps its `seq`s and the actions their place, so a
//! rebuild counts the same versions); only the erased fields are emptied. Checkpoints are the
//! writer's to replace, and on SQLite [`Store::scrub`] then pushes the rewritten pages out of the
//! WAL, `secure_delete` having overwritten the freed space.

use sqlx::Row;

use super::{Backend, Store, StoreError, db_err};
use crate::domain::RankedEntry;

/// How many rows an erasure rewrote, by table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ErasedRows {
    /// Metadata of the player's events.
    pub event_metadata: u64,
    /// Profile actions that held a name or country.
    pub actions: u64,
    /// Season results that showed the player's name or metadata.
    pub season_results: u64,
    /// Closed periods' snapshots that did.
    pub period_snapshots: u64,
}

impl Store {
    /// Empties, in one transaction, every stored name, country and metadata of `player` in
    /// `game` logged before `seq` (the erasure's own). O(the player's metadata rows + the game's
    /// profile actions for the player + the game's results and period snapshots).
    pub async fn erase_player(&self, game: &str, player: &str, seq: i64) -> Result<ErasedRows, StoreError> {
        let mut tx = self.begin().await?;
        let conn = &mut tx.0;
        let event_metadata = sqlx::query(
            "UPDATE event_metadata SET metadata = '' WHERE game = $1 AND player_id = $2 AND seq < $3 \
             AND metadata <> ''",
        )
        .bind(game)
        .bind(player)
        .bind(seq)
        .execute(&mut **conn)
        .await
        .map_err(db_err("cannot erase events' metadata"))?
        .rows_affected();
        let mut erased = ErasedRows {
            event_metadata,
            ..ErasedRows::default()
        };

        let rows = sqlx::query(
            "SELECT seq, kind, body FROM actions WHERE game = $1 AND target_player_id = $2 AND seq < $3 \
             AND kind IN ('PROFILE', 'RENAME')",
        )
        .bind(game)
        .bind(player)
        .bind(seq)
        .fetch_all(&mut **conn)
        .await
        .map_err(db_err("cannot read a player's profile actions"))?;
        for row in &rows {
            let action_seq: i64 = row.try_get("seq").map_err(db_err("bad action row"))?;
            let kind: String = row.try_get("kind").map_err(db_err("bad action row"))?;
            let body: String = row.try_get("body").map_err(db_err("bad action row"))?;
            let body = super::actions::erased_body(action_seq, kind, &body, player)?;
            sqlx::query("UPDATE actions SET body = $1 WHERE seq = $2")
                .bind(body)
                .bind(action_seq)
                .execute(&mut **conn)
                .await
                .map_err(db_err("cannot erase a profile action"))?;
            erased.actions += 1;
        }

        for (table, keys) in [
            ("season_results", "mode, season, scope, correction"),
            ("period_snapshots", "mode, season, scope, period_key"),
        ] {
            let rows = sqlx::query(&format!("SELECT {keys}, entries FROM {table} WHERE game = $1"))
                .bind(game)
                .fetch_all(&mut **conn)
                .await
                .map_err(db_err("cannot read stored entries to erase"))?;
            for row in &rows {
                let text: String = row.try_get("entries").map_err(db_err("bad stored entries"))?;
                let mut entries: Vec<RankedEntry> =
                    serde_json::from_str(&text).map_err(|source| StoreError::Undecodable {
                        context: "stored entries cannot be read to erase a player",
                        source,
                    })?;
                let mut touched = false;
                for entry in entries.iter_mut().filter(|e| e.player_id == player) {
                    touched |= entry.has_extras();
                    entry.erase();
                }
                if !touched {
                    continue;
                }
                let text = serde_json::to_string(&entries).map_err(|source| StoreError::Undecodable {
                    context: "erased entries cannot be written",
                    source,
                })?;
                let mode: String = row.try_get("mode").map_err(db_err("bad stored entries"))?;
                let season: String = row.try_get("season").map_err(db_err("bad stored entries"))?;
                let scope: String = row.try_get("scope").map_err(db_err("bad stored entries"))?;
                let (last_key, value): (&str, KeyValue) = if table == "season_results" {
                    (
                        "correction",
                        KeyValue::Int(row.try_get("correction").map_err(db_err("bad result row"))?),
                    )
                } else {
                    (
                        "period_key",
                        KeyValue::Text(row.try_get("period_key").map_err(db_err("bad snapshot row"))?),
                    )
                };
                let sql = format!(
                    "UPDATE {table} SET entries = $1 WHERE game = $2 AND mode = $3 AND season = $4 AND \
                     scope = $5 AND {last_key} = $6"
                );
                let query = sqlx::query(&sql)
                    .bind(text)
                    .bind(game)
                    .bind(mode)
                    .bind(season)
                    .bind(scope);
                let query = match value {
                    KeyValue::Int(n) => query.bind(n),
                    KeyValue::Text(t) => query.bind(t),
                };
                query
                    .execute(&mut **conn)
                    .await
                    .map_err(db_err("cannot erase stored entries"))?;
                if table == "season_results" {
                    erased.season_results += 1;
                } else {
                    erased.period_snapshots += 1;
                }
            }
        }
        tx.commit("cannot commit an erasure")
            .await
            .map_err(|failed| match failed {
                super::CommitFailed::Failed(e) | super::CommitFailed::Unknown(e) => e,
            })?;
        Ok(erased)
    }

    /// After an erasure, on SQLite: moves every page the WAL holds into the database file and
    /// truncates the WAL, so that the rewritten rows' old images are gone from both files
    /// (`secure_delete` overwrote what the rewrites freed). Readers can keep it from finishing:
    /// it is tried a few times, and answers whether it did. PostgreSQL keeps dead row versions
    /// until a vacuum reuses their space (see `docs/players.md`); nothing is done there.
    pub async fn scrub(&self) -> Result<bool, StoreError> {
        if self.backend != Backend::Sqlite {
            return Ok(true);
        }
        for _ in 0..20 {
            let row = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                .fetch_one(&self.writer)
                .await
                .map_err(db_err("cannot checkpoint the WAL"))?;
            let busy: i64 = row.try_get(0).map_err(db_err("bad WAL checkpoint answer"))?;
            if busy == 0 {
                return Ok(true);
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        Ok(false)
    }
}

enum KeyValue {
    Int(i64),
    Text(String),
}
