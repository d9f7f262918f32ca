//! The feed's records and horizon, and every friend list at once for the followers map.

use sqlx::Row;

use super::StoreError;
use super::{Store, db_err};
use crate::domain::feed::Record;

/// Rows per insert statement: 5 parameters each, under SQLite's 999.
const ROWS_PER_INSERT: usize = 150;

impl Store {
    /// Stores records; one already stored at the same (game, seq) stays as it was. One
    /// transaction. O(records).
    pub(crate) async fn append_feed(&self, records: &[Record]) -> Result<(), StoreError> {
        let mut tx = self.begin_on(&self.pool).await.map_err(db_err("cannot begin"))?;
        self.insert_feed(&mut tx, records).await?;
        tx.commit().await.map_err(db_err("cannot commit feed records"))
    }

    /// Stores records in the writer's transaction (a group's, which then commits them with its
    /// events), as [`Store::append_feed`] does. O(records).
    pub(crate) async fn append_feed_in(
        &self,
        tx: &mut super::Transaction,
        records: &[Record],
    ) -> Result<(), StoreError> {
        self.insert_feed(&mut tx.0, records).await
    }

    async fn insert_feed(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        records: &[Record],
    ) -> Result<(), StoreError> {
        for chunk in records.chunks(ROWS_PER_INSERT) {
            let mut sql = String::from("INSERT INTO feed (game, seq, kind, record, created_at) VALUES ");
            for i in 0..chunk.len() {
                if i > 0 {
                    sql.push_str(", ");
                }
                let b = i * 5;
                sql.push_str(&format!(
                    "(${}, ${}, ${}, ${}, ${})",
                    b + 1,
                    b + 2,
                    b + 3,
                    b + 4,
                    b + 5
                ));
            }
            sql.push_str(" ON CONFLICT (game, seq) DO NOTHING");
            let sql = self.positional(&sql);
            let mut query = sqlx::query(&sql);
            for r in chunk {
                query = query
                    .bind(r.game.clone())
                    .bind(r.seq)
                    .bind(r.kind)
                    .bind(r.json.clone())
                    .bind(r.created_at);
            }
            query
                .execute(&mut **tx)
                .await
                .map_err(db_err("cannot store feed records"))?;
        }
        Ok(())
    }

    /// Up to `limit` of a game's records after `since_seq`, in seq order: seq, kind, and the
    /// record as stored JSON.
    /// O(log records + limit).
    pub async fn feed_after(
        &self,
        game: &str,
        since_seq: i64,
        limit: usize,
    ) -> Result<Vec<(i64, String, String)>, StoreError> {
        let rows = sqlx::query(
            "SELECT seq, kind, record FROM feed WHERE game = $1 AND seq > $2 ORDER BY seq LIMIT $3",
        )
        .bind(game)
        .bind(since_seq)
        .bind(limit as i64)
        .fetch_all(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
        .await
        .map_err(db_err("cannot read the feed"))?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get("seq").map_err(db_err("bad feed row"))?,
                    r.try_get("kind").map_err(db_err("bad feed row"))?,
                    r.try_get("record").map_err(db_err("bad feed row"))?,
                ))
            })
            .collect()
    }

    /// The greatest seq stored in any game's feed, or -1 when none is. One look-up.
    pub async fn feed_last(&self) -> Result<i64, StoreError> {
        let row = sqlx::query("SELECT MAX(seq) AS last FROM feed")
            .fetch_one(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
            .await
            .map_err(db_err("cannot read the feed"))?;
        let last: Option<i64> = row.try_get("last").map_err(db_err("bad feed row"))?;
        Ok(last.unwrap_or(-1))
    }

    /// The greatest seq in a game's feed, or 0 when it holds none. One look-up.
    pub async fn feed_end(&self, game: &str) -> Result<i64, StoreError> {
        let row = sqlx::query("SELECT MAX(seq) AS last FROM feed WHERE game = $1")
            .bind(game)
            .fetch_one(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
            .await
            .map_err(db_err("cannot read the feed"))?;
        let last: Option<i64> = row.try_get("last").map_err(db_err("bad feed row"))?;
        Ok(last.unwrap_or(0))
    }

    /// The last seq retention removed from a game's feed (0 when none). One look-up.
    pub async fn feed_horizon(&self, game: &str) -> Result<i64, StoreError> {
        let row = sqlx::query("SELECT pruned_through FROM feed_horizon WHERE game = $1")
            .bind(game)
            .fetch_optional(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
            .await
            .map_err(db_err("cannot read the feed's horizon"))?;
        row.map_or(Ok(0), |r| {
            r.try_get("pruned_through")
                .map_err(db_err("bad feed horizon row"))
        })
    }

    /// Removes every game's records made before `before_ms`, moving each game's horizon to the
    /// last seq removed. One transaction. O(records removed).
    pub async fn prune_feed(&self, before_ms: i64) -> Result<u64, StoreError> {
        let mut tx = self.begin_on(&self.pool).await.map_err(db_err("cannot begin"))?;
        let rows =
            sqlx::query("SELECT game, MAX(seq) AS through FROM feed WHERE created_at < $1 GROUP BY game")
                .bind(before_ms)
                .fetch_all(&mut *tx)
                .await
                .map_err(db_err("cannot find old feed records"))?;
        let mut removed = 0;
        for row in rows {
            let game: String = row.try_get("game").map_err(db_err("bad feed row"))?;
            let through: i64 = row.try_get("through").map_err(db_err("bad feed row"))?;
            removed += sqlx::query("DELETE FROM feed WHERE game = $1 AND seq <= $2")
                .bind(&game)
                .bind(through)
                .execute(&mut *tx)
                .await
                .map_err(db_err("cannot remove old feed records"))?
                .rows_affected();
            sqlx::query(
                "INSERT INTO feed_horizon (game, pruned_through) VALUES ($1, $2) \
                 ON CONFLICT (game) DO UPDATE SET pruned_through = excluded.pruned_through",
            )
            .bind(&game)
            .bind(through)
            .execute(&mut *tx)
            .await
            .map_err(db_err("cannot move the feed's horizon"))?;
        }
        tx.commit()
            .await
            .map_err(db_err("cannot commit the feed's retention"))?;
        Ok(removed)
    }

    /// Every friend list, by game and player, each in its stored order. O(friends).
    pub async fn all_friends(&self) -> Result<Vec<(String, String, Vec<String>)>, StoreError> {
        let rows =
            sqlx::query("SELECT game, player_id, friend_id FROM friends ORDER BY game, player_id, position")
                .fetch_all(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
                .await
                .map_err(db_err("cannot read friend lists"))?;
        let mut lists: Vec<(String, String, Vec<String>)> = Vec::new();
        for row in rows {
            let game: String = row.try_get("game").map_err(db_err("bad friend row"))?;
            let player: String = row.try_get("player_id").map_err(db_err("bad friend row"))?;
            let friend: String = row.try_get("friend_id").map_err(db_err("bad friend row"))?;
            match lists.last_mut() {
                Some((g, p, friends)) if *g == game && *p == player => friends.push(friend),
                _ => lists.push((game, player, vec![friend])),
            }
        }
        Ok(lists)
    }
}
