//! Checkpoint parts. A checkpoint is stored as numbered parts, a statement each, then its manifest
//! as part 0, which makes it the one in use; then the old one's parts are deleted, a part at a
//! time. A crash at any point leaves one whole checkpoint in use, or none, never half of one.

use sqlx::Row;

use super::StoreError;
use super::{Store, db_err};

impl Store {
    /// Deletes whatever is stored of a checkpoint at `seq`: the parts a stop left behind
    /// while storing one, before a new one at that `seq` is stored.
    /// O(the checkpoint's parts).
    pub async fn discard_checkpoint(&self, seq: i64) -> Result<(), StoreError> {
        self.write_one(sqlx::query("DELETE FROM checkpoint_parts WHERE seq = $1").bind(seq))
            .await
            .map_err(db_err("cannot clear a checkpoint"))?;
        Ok(())
    }

    /// Stores part `part` (1..) of a checkpoint at `seq`, in a transaction of its own. Until
    /// [`Store::finish_checkpoint`] stores its manifest, no start reads it: the newest checkpoint
    /// with a manifest is the one in use.
    /// One insert, O(size of the part).
    pub async fn put_checkpoint_part(&self, seq: i64, part: i64, body: Vec<u8>) -> Result<(), StoreError> {
        let sql = self.positional("INSERT INTO checkpoint_parts (seq, part, body) VALUES ($1, $2, $3)");
        self.write_one(sqlx::query(&sql).bind(seq).bind(part).bind(body))
            .await
            .map_err(db_err("cannot store a checkpoint part"))?;
        Ok(())
    }

    /// Completes the checkpoint at `seq`, whose parts are stored: in one transaction its
    /// manifest becomes part 0 and every other checkpoint loses its own, which makes this one
    /// the one in use. The other checkpoints' parts are left for
    /// [`Store::delete_checkpoint_part`], a part at a time.
    /// O(checkpoints stored), in one transaction.
    pub async fn finish_checkpoint(&self, seq: i64, manifest: Vec<u8>) -> Result<(), StoreError> {
        let mut tx = self.begin_on(&self.pool).await.map_err(db_err("cannot begin"))?;
        let sql = self.positional("INSERT INTO checkpoint_parts (seq, part, body) VALUES ($1, 0, $2)");
        sqlx::query(&sql)
            .bind(seq)
            .bind(manifest)
            .execute(&mut *tx)
            .await
            .map_err(db_err("cannot store a checkpoint manifest"))?;
        sqlx::query("DELETE FROM checkpoint_parts WHERE seq <> $1 AND part = 0")
            .bind(seq)
            .execute(&mut *tx)
            .await
            .map_err(db_err("cannot replace the checkpoint"))?;
        tx.commit().await.map_err(db_err("cannot commit the checkpoint"))
    }

    /// The `(seq, part)` of every stored part not of the checkpoint at `seq`.
    /// O(parts stored).
    pub async fn other_checkpoint_parts(&self, seq: i64) -> Result<Vec<(i64, i64)>, StoreError> {
        let rows = sqlx::query("SELECT seq, part FROM checkpoint_parts WHERE seq <> $1 ORDER BY seq, part")
            .bind(seq)
            .fetch_all(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
            .await
            .map_err(db_err("cannot list old checkpoint parts"))?;
        let bad = db_err("bad checkpoint row");
        rows.iter()
            .map(|row| {
                Ok((
                    row.try_get("seq").map_err(&bad)?,
                    row.try_get("part").map_err(&bad)?,
                ))
            })
            .collect()
    }

    /// Deletes one part of a checkpoint, in a transaction of its own.
    /// One delete by primary key.
    pub async fn delete_checkpoint_part(&self, seq: i64, part: i64) -> Result<(), StoreError> {
        self.write_one(
            sqlx::query("DELETE FROM checkpoint_parts WHERE seq = $1 AND part = $2")
                .bind(seq)
                .bind(part),
        )
        .await
        .map_err(db_err("cannot delete an old checkpoint part"))?;
        Ok(())
    }

    /// The checkpoint's `seq` and number of parts (the manifest included), if there is one.
    /// O(parts of the newest checkpoint).
    pub async fn checkpoint_head(&self) -> Result<Option<(i64, i64)>, StoreError> {
        // Parts without a manifest are a checkpoint a stop interrupted: not one.
        let rows = sqlx::query(
            "SELECT seq, COUNT(*) AS parts, MAX(part) AS last FROM checkpoint_parts \
             WHERE seq = (SELECT MAX(seq) FROM checkpoint_parts WHERE part = 0) GROUP BY seq",
        )
        .fetch_all(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
        .await
        .map_err(db_err("cannot read the checkpoint"))?;
        let bad = db_err("bad checkpoint row");
        let [row] = &rows[..] else {
            return match rows.len() {
                0 => Ok(None),
                n => Err(StoreError::Corrupt(format!(
                    "{n} checkpoints are stored, not one"
                ))),
            };
        };
        let seq: i64 = row.try_get("seq").map_err(&bad)?;
        let parts: i64 = row.try_get("parts").map_err(&bad)?;
        let last: i64 = row.try_get("last").map_err(&bad)?;
        if last != parts - 1 {
            return Err(StoreError::Corrupt(format!(
                "the checkpoint at seq {seq} has {parts} parts numbered up to {last}"
            )));
        }
        Ok(Some((seq, parts)))
    }

    /// One part of the checkpoint at `seq` (part 0 is the manifest). One row at a time, so
    /// reading a large checkpoint holds one part beside what it is copied into.
    /// One read by primary key, O(size of the part).
    pub async fn checkpoint_part(&self, seq: i64, part: i64) -> Result<Vec<u8>, StoreError> {
        let row = sqlx::query("SELECT body FROM checkpoint_parts WHERE seq = $1 AND part = $2")
            .bind(seq)
            .bind(part)
            .fetch_one(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
            .await
            .map_err(db_err("cannot read a checkpoint part"))?;
        row.try_get("body").map_err(db_err("bad checkpoint part"))
    }

    /// The checkpoint's `seq` and all of its parts (the manifest first), if there is one.
    /// O(size of the checkpoint), one part at a time.
    pub async fn checkpoint(&self) -> Result<Option<(i64, Vec<Vec<u8>>)>, StoreError> {
        let Some((seq, count)) = self.checkpoint_head().await? else {
            return Ok(None);
        };
        let mut parts = Vec::with_capacity(count as usize);
        for part in 0..count {
            parts.push(self.checkpoint_part(seq, part).await?);
        }
        Ok(Some((seq, parts)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::{event, written_before_migration};

    /// A checkpoint is in use only once its manifest is stored: parts a stop left without one
    /// are not a checkpoint, and once the next one is finished the parts of every other one
    /// are listed for deletion.
    #[tokio::test]
    async fn a_checkpoint_is_in_use_only_once_its_manifest_is_stored() {
        let (dir, url) = written_before_migration(6, &[event(1, "e1", "p-a")]).await;
        let store = Store::open(&url).await.unwrap();
        let stored = |seq| {
            let store = &store;
            async move {
                let rows = sqlx::query("SELECT part FROM checkpoint_parts WHERE seq = $1 ORDER BY part")
                    .bind(seq)
                    .fetch_all(&store.pool)
                    .await
                    .unwrap();
                rows.iter()
                    .map(|r| r.try_get::<i64, _>("part").unwrap())
                    .collect::<Vec<_>>()
            }
        };
        store.put_checkpoint_part(3, 2, vec![2; 10]).await.unwrap();
        store.put_checkpoint_part(3, 1, vec![1; 10]).await.unwrap();
        assert_eq!(store.checkpoint_head().await.unwrap(), None, "no manifest yet");
        store.finish_checkpoint(3, b"m3".to_vec()).await.unwrap();
        assert_eq!(store.checkpoint_head().await.unwrap(), Some((3, 3)));

        // A newer one interrupted after one part: the one at seq 3 stays in use.
        store.put_checkpoint_part(7, 1, vec![7; 10]).await.unwrap();
        assert_eq!(store.checkpoint_head().await.unwrap(), Some((3, 3)));
        let (seq, parts) = store.checkpoint().await.unwrap().unwrap();
        assert_eq!((seq, parts), (3, vec![b"m3".to_vec(), vec![1; 10], vec![2; 10]]));

        // The next one at the same seq starts afresh, and once finished it is the only one.
        store.discard_checkpoint(7).await.unwrap();
        store.put_checkpoint_part(7, 1, vec![8; 10]).await.unwrap();
        store.finish_checkpoint(7, b"m7".to_vec()).await.unwrap();
        assert_eq!(store.checkpoint_head().await.unwrap(), Some((7, 2)));
        assert_eq!(stored(3).await, [1, 2], "the old one's parts are left");
        assert_eq!(store.other_checkpoint_parts(7).await.unwrap(), [(3, 1), (3, 2)]);
        for (seq, part) in store.other_checkpoint_parts(7).await.unwrap() {
            store.delete_checkpoint_part(seq, part).await.unwrap();
        }
        assert_eq!(stored(3).await, Vec::<i64>::new());
        assert_eq!(stored(7).await, [0, 1]);
        assert_eq!(store.checkpoint_part(7, 1).await.unwrap(), vec![8; 10]);
        store.close().await;
        std::fs::remove_dir_all(dir).unwrap();
    }
}
