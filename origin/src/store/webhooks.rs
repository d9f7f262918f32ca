//! Webhook endpoints: their definitions, rotation, and delivery state.

use sqlx::Row;
use sqlx::any::AnyRow;

use super::StoreError;
use super::{Store, db_err};
use crate::domain::webhooks::Endpoint;

const COLUMNS: &str = "game, endpoint_id, url, secret, previous_secret, previous_until, kinds, delivered_through, \
                       parked_reason, attempts, next_attempt_at, last_error, created_at";

impl Store {
    /// Stores an endpoint: a new one whole, or an existing one's definition (url, secrets,
    /// kinds), leaving its delivery state to its delivery task. One statement.
    pub(crate) async fn put_webhook(&self, e: &Endpoint) -> Result<(), StoreError> {
        let sql = format!(
            "INSERT INTO webhooks ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
             ON CONFLICT (game, endpoint_id) DO UPDATE SET url = excluded.url, secret = excluded.secret, \
             previous_secret = excluded.previous_secret, previous_until = excluded.previous_until, \
             kinds = excluded.kinds"
        );
        let sql = self.positional(&sql);
        let query = sqlx::query(&sql)
            .bind(e.game.clone())
            .bind(e.id.clone())
            .bind(e.url.clone())
            .bind(e.secret.clone())
            .bind(e.previous_secret.clone())
            .bind(e.previous_until)
            .bind(e.kinds.join(","))
            .bind(e.delivered_through)
            .bind(e.parked_reason.clone())
            .bind(e.attempts)
            .bind(e.next_attempt_at)
            .bind(e.last_error.clone())
            .bind(e.created_at);
        self.write_one(query)
            .await
            .map_err(db_err("cannot store a webhook endpoint"))?;
        Ok(())
    }

    /// Stores an endpoint's delivery state: how far it is, its attempts, and whether it is
    /// parked. One statement.
    pub(crate) async fn set_webhook_delivery(&self, e: &Endpoint) -> Result<(), StoreError> {
        let query = sqlx::query(
            "UPDATE webhooks SET delivered_through = $1, parked_reason = $2, attempts = $3, next_attempt_at = $4, \
             last_error = $5 WHERE game = $6 AND endpoint_id = $7",
        )
        .bind(e.delivered_through)
        .bind(e.parked_reason.clone())
        .bind(e.attempts)
        .bind(e.next_attempt_at)
        .bind(e.last_error.clone())
        .bind(e.game.clone())
        .bind(e.id.clone());
        self.write_one(query)
            .await
            .map_err(db_err("cannot store a webhook's delivery state"))?;
        Ok(())
    }

    /// One endpoint, if it exists. One look-up.
    pub(crate) async fn webhook(&self, game: &str, id: &str) -> Result<Option<Endpoint>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM webhooks WHERE game = $1 AND endpoint_id = $2"
        ))
        .bind(game)
        .bind(id)
        .fetch_optional(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
        .await
        .map_err(db_err("cannot read a webhook endpoint"))?;
        row.as_ref().map(endpoint_from_row).transpose()
    }

    /// Every endpoint, by game and id. O(endpoints).
    pub(crate) async fn webhooks(&self) -> Result<Vec<Endpoint>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM webhooks ORDER BY game, endpoint_id"
        ))
        .fetch_all(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
        .await
        .map_err(db_err("cannot list webhook endpoints"))?;
        rows.iter().map(endpoint_from_row).collect()
    }

    /// Removes an endpoint; whether it existed. One statement.
    pub(crate) async fn delete_webhook(&self, game: &str, id: &str) -> Result<bool, StoreError> {
        let query = sqlx::query("DELETE FROM webhooks WHERE game = $1 AND endpoint_id = $2")
            .bind(game)
            .bind(id);
        let done = self
            .write_one(query)
            .await
            .map_err(db_err("cannot remove a webhook endpoint"))?;
        Ok(done.rows_affected() > 0)
    }
}

fn endpoint_from_row(row: &AnyRow) -> Result<Endpoint, StoreError> {
    let bad = db_err("bad webhook row");
    let kinds: String = row.try_get("kinds").map_err(&bad)?;
    Ok(Endpoint {
        game: row.try_get("game").map_err(&bad)?,
        id: row.try_get("endpoint_id").map_err(&bad)?,
        url: row.try_get("url").map_err(&bad)?,
        secret: row.try_get("secret").map_err(&bad)?,
        previous_secret: row.try_get("previous_secret").map_err(&bad)?,
        previous_until: row.try_get("previous_until").map_err(&bad)?,
        kinds: kinds
            .split(',')
            .filter(|k| !k.is_empty())
            .map(str::to_string)
            .collect(),
        delivered_through: row.try_get("delivered_through").map_err(&bad)?,
        parked_reason: row.try_get("parked_reason").map_err(&bad)?,
        attempts: row.try_get("attempts").map_err(&bad)?,
        next_attempt_at: row.try_get("next_attempt_at").map_err(&bad)?,
        last_error: row.try_get("last_error").map_err(&bad)?,
        created_at: row.try_get("created_at").map_err(&bad)?,
    })
}
