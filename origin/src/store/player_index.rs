//! The player index of the sealed log, as stored: for each run of consecutive seqs (`RUN_SEQS`),
//! the `(player key, seq)` of every event in it, sorted by key and cut into pages of a few hundred
//! entries, one row each (`player_pages`). A recompute reads one page per run.
//!
//! Nothing indexes the log by player as it is appended, because that would write a random page per
//! event. Instead the writer holds the keys of the unsealed tail in memory (read back from the log
//! at start), and the group that completes a run also stores the run's pages, in the same
//! transaction, so the index never disagrees with the log. The writer sorts 64-bit keys it already
//! holds and stores 12 bytes per event, so sealing a run costs the database no sorting of text
//! columns and no per-event B-tree inserts.
//!
//! The key is a 64-bit FNV-1a of game, player, mode and season; a key's entries never straddle two
//! pages. Keys are hashes, so a page may name a few seqs of other players: the rows they point to
//! are read with the player's fields in the condition, so a collision costs a row read, never a
//! wrong answer. `standings rebuild` rebuilds every sealed run's pages from the log and compares
//! them.

use sqlx::{Executor, Row};

use super::StoreError;
use super::{Store, Transaction, db_err};
use crate::domain::player_pages::{pages, player_key};

impl Store {
    /// Where the unsealed tail of the log starts: one past the last sealed run.
    pub async fn sealed_below(&self) -> Result<i64, StoreError> {
        let row = sqlx::query("SELECT COALESCE(MAX(end_seq), 0) AS sealed FROM log_runs")
            .fetch_one(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
            .await
            .map_err(db_err("cannot read the log's runs"))?;
        row.try_get("sealed").map_err(db_err("bad run"))
    }

    /// Seals the run `start <= seq < end` inside the writer's transaction: `entries`, the
    /// `(player key, seq)` of every event in it, go into `player_pages` sorted and cut into
    /// pages (`pages`): about 128 rows for 65,536 events.
    /// O(entries), sorted in memory; about 128 page inserts.
    pub async fn seal_run(
        &self,
        tx: &mut Transaction,
        start: i64,
        end: i64,
        entries: Vec<(i64, i64)>,
    ) -> Result<(), StoreError> {
        let tx = &mut tx.0;
        Store::put_pages(tx, start, entries).await?;
        let sql = self.positional("INSERT INTO log_runs (start_seq, end_seq) VALUES ($1, $2)");
        sqlx::query(&sql)
            .bind(start)
            .bind(end)
            .execute(&mut **tx)
            .await
            .map_err(db_err("cannot seal a run of the log"))?;
        Ok(())
    }

    /// Stores the pages of the run starting at `run`.
    async fn put_pages(
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        run: i64,
        entries: Vec<(i64, i64)>,
    ) -> Result<(), StoreError> {
        for (first_key, bytes) in pages(run, entries) {
            sqlx::query("INSERT INTO player_pages (run, first_key, entries) VALUES ($1, $2, $3)")
                .bind(run)
                .bind(first_key)
                .bind(bytes)
                .execute(&mut **tx)
                .await
                .map_err(db_err("cannot store a page of the player index"))?;
        }
        Ok(())
    }

    /// Checks the player index against the log: every sealed run's pages are rebuilt from the
    /// log's player columns and compared with the stored ones. Returns how many runs were
    /// checked and the first seqs of those whose pages differ. One read of the log (about 3 s
    /// per million events), for `standings rebuild`.
    pub async fn check_player_index(&self) -> Result<(usize, Vec<i64>), StoreError> {
        let mut conn = self
            .reader()
            .await
            .map_err(db_err("cannot check the player index"))?;
        let runs = Store::sealed_runs(&mut conn).await?;
        let mut differ = Vec::new();
        for &(start, end) in &runs {
            let expected = pages(start, self.run_keys(&mut conn, start, end).await?);
            let stored =
                sqlx::query("SELECT first_key, entries FROM player_pages WHERE run = $1 ORDER BY first_key")
                    .bind(start)
                    .fetch_all(&mut *conn)
                    .await
                    .map_err(db_err("cannot read the player index"))?
                    .iter()
                    .map(|page| Ok((page.try_get("first_key")?, page.try_get("entries")?)))
                    .collect::<Result<Vec<(i64, Vec<u8>)>, sqlx::Error>>()
                    .map_err(db_err("bad page"))?;
            if stored != expected {
                differ.push(start);
            }
        }
        Ok((runs.len(), differ))
    }

    /// The `(player key, seq)` of the events from `sealed_below` on: the unsealed tail of the
    /// log, fewer than [`RUN_SEQS`] events, which the writer starts with.
    /// O(events from `sealed_below` on).
    pub async fn tail_keys(&self, sealed_below: i64) -> Result<Vec<(i64, i64)>, StoreError> {
        // On the partition's schema in a cluster: a connection straight from the pool reads
        // whichever schema it last read.
        let mut conn = self
            .reader()
            .await
            .map_err(db_err("cannot read the log's player keys"))?;
        self.run_keys(&mut conn, sealed_below, i64::MAX).await
    }

    /// The `(player key, seq)` of the events with `start <= seq < end`, read in packed pages
    /// of 65,536: for the unsealed tail, and for the runs the migration pages.
    async fn run_keys(
        &self,
        conn: &mut sqlx::AnyConnection,
        start: i64,
        end: i64,
    ) -> Result<Vec<(i64, i64)>, StoreError> {
        const PAGE: i64 = 65_536;
        let sql = self.packed(
            "seq, game, player_id, mode, season",
            "seq",
            "SELECT seq, game, player_id, mode, season FROM score_events WHERE seq >= $1 AND seq < $2 \
             ORDER BY seq LIMIT $3",
        );
        let mut keys = Vec::new();
        let mut from = start;
        loop {
            let row = sqlx::query(&sql)
                .bind(from)
                .bind(end)
                .bind(PAGE)
                .fetch_one(&mut *conn)
                .await
                .map_err(db_err("cannot read the log's player keys"))?;
            let page: String = row.try_get("page").map_err(db_err("bad page of the event log"))?;
            let rows: Vec<(i64, String, String, String, String)> =
                serde_json::from_str(&page).map_err(|source| StoreError::Undecodable {
                    context: "a page of the event log cannot be read",
                    source,
                })?;
            let Some(last) = rows.last().map(|r| r.0) else {
                break;
            };
            let full = rows.len() as i64 == PAGE;
            keys.extend(
                rows.into_iter().map(|(seq, game, player, mode, season)| {
                    (player_key(&game, &player, &mode, &season), seq)
                }),
            );
            if !full {
                break;
            }
            from = last + 1;
        }
        Ok(keys)
    }

    /// The sealed runs of the log, `(start_seq, end_seq)` in order.
    async fn sealed_runs(conn: &mut sqlx::AnyConnection) -> Result<Vec<(i64, i64)>, StoreError> {
        let rows = sqlx::query("SELECT start_seq, end_seq FROM log_runs ORDER BY start_seq")
            .fetch_all(&mut *conn)
            .await
            .map_err(db_err("cannot read the log's runs"))?;
        rows.iter()
            .map(|row| Ok((row.try_get("start_seq")?, row.try_get("end_seq")?)))
            .collect::<Result<_, sqlx::Error>>()
            .map_err(db_err("bad run"))
    }

    /// Migration 7's code: pages every run sealed into `player_runs` from the log, then drops
    /// `player_runs`. One read of the log (about 3 s per million events), once.
    pub(super) async fn page_sealed_runs(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    ) -> Result<(), StoreError> {
        let runs = Store::sealed_runs(tx).await?;
        let started = std::time::Instant::now();
        let mut paged = 0;
        for &(start, end) in &runs {
            if paged == 0 && end - start > 1 {
                // Reading the log is the slow part, so the operator hears why this start waits.
                tracing::info!("migration 7 is indexing the event log by player, once");
            }
            let entries = self.run_keys(tx, start, end).await?;
            paged += entries.len();
            Store::put_pages(tx, start, entries).await?;
        }
        if paged > 0 {
            tracing::info!(
                "indexed {paged} events in {} runs in {:.1} s",
                runs.len(),
                started.elapsed().as_secs_f64()
            );
        }
        tx.execute("DROP TABLE player_runs")
            .await
            .map_err(db_err("cannot drop the old player index"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use sqlx::Row;
    use standings_core::BoardId;

    use super::*;
    use crate::domain::LoggedEvent;
    use crate::store::PAGING_MIGRATION;
    use crate::store::tests::{event, postgres_admin, write_before_migration, written_before_migration};

    use crate::domain::player_pages::seqs_on_page;

    /// A log written before migration 5 (when an index on the player served recomputes)
    /// becomes the first sealed run, which migration 7 pages: a player's events are found on
    /// the run's pages, not by the tail scan, and the old index is gone. On SQLite here, on
    /// PostgreSQL below.
    #[tokio::test]
    async fn the_migrations_index_an_existing_log_by_player() {
        let (dir, url) = written_before_migration(4, &log_of_two_players()).await;
        migrations_index_an_existing_log_by_player(&url).await;
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn the_migrations_index_an_existing_log_by_player_on_postgres() {
        let name = format!(
            "standings_migrate_{}_{}",
            std::process::id(),
            crate::clock::now_ms()
        );
        let admin = postgres_admin(&format!("CREATE DATABASE {name}")).await;
        let base = admin.rsplit_once('/').map(|(base, _)| base.to_string()).unwrap();
        let url = format!("{base}/{name}");
        write_before_migration(&url, 4, &log_of_two_players()).await;
        migrations_index_an_existing_log_by_player(&url).await;
        postgres_admin(&format!("DROP DATABASE {name} WITH (FORCE)")).await;
    }

    fn log_of_two_players() -> [LoggedEvent; 3] {
        [
            event(1, "e1", "p-a"),
            event(2, "e2", "p-b"),
            event(4, "e4", "p-a"),
        ]
    }

    /// Opens the database at `url`, which holds [`log_of_two_players`] at migration 4, and
    /// checks what migrations 5 and 7 made of it.
    async fn migrations_index_an_existing_log_by_player(url: &str) {
        let log = log_of_two_players();
        let store = Store::open(url).await.unwrap();
        assert_eq!(store.sealed_below().await.unwrap(), 5);
        let board = BoardId::new("g", "m", "s", "global").unwrap();
        let found = store.player_events(&board, "p-a", i64::MAX).await.unwrap();
        assert_eq!(found, vec![log[0].clone(), log[2].clone()]);
        assert_eq!(
            store.player_events(&board, "p-a", 4).await.unwrap(),
            vec![log[0].clone()]
        );
        let pages = sqlx::query("SELECT entries FROM player_pages WHERE run = 0")
            .fetch_all(&store.pool)
            .await
            .unwrap();
        let page: Vec<u8> = pages[0].try_get("entries").unwrap();
        assert_eq!(pages.len(), 1);
        let key = |player| player_key("g", player, "m", "s");
        assert_eq!(seqs_on_page(0, &page, key("p-a")).unwrap(), [1, 4]);
        assert_eq!(seqs_on_page(0, &page, key("p-b")).unwrap(), [2]);
        assert!(
            sqlx::query("SELECT 1 FROM player_runs")
                .fetch_all(&store.pool)
                .await
                .is_err(),
            "player_runs is dropped"
        );
        assert_eq!(store.check_player_index().await.unwrap(), (1, vec![]));
        store.close().await;
    }

    /// A page may list another player's seq under a player's key (two keys that hash alike):
    /// the look-up reads that row and drops it, since the row's own fields do not match. Here
    /// the sealed run's page says so of p-b's event outright.
    #[tokio::test]
    async fn a_key_collision_in_the_player_index_costs_a_read_not_a_wrong_answer() {
        let log = log_of_two_players();
        let (dir, url) = written_before_migration(PAGING_MIGRATION, &log).await;
        let store = Store::open(&url).await.unwrap();
        let first = store.sealed_below().await.unwrap();
        assert_eq!(first, 1, "the events are in the unsealed tail");
        let a = player_key("g", "p-a", "m", "s");
        let mut tx = store.begin().await.unwrap();
        store
            .seal_run(&mut tx, first, 5, vec![(a, 1), (a, 2), (a, 4)])
            .await
            .unwrap();
        tx.commit("a test").await.unwrap();
        assert_eq!(store.sealed_below().await.unwrap(), 5);
        let board = BoardId::new("g", "m", "s", "global").unwrap();
        assert_eq!(
            store.player_events(&board, "p-a", i64::MAX).await.unwrap(),
            vec![log[0].clone(), log[2].clone()]
        );
        // The rebuild's check finds the forged run; the run migration 5 left (0 to 1) is fine.
        assert_eq!(store.check_player_index().await.unwrap(), (2, vec![first]));
        store.close().await;
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
