//! Friend lists, per game and player, in the order they were set.
//!
//! A list is private to its player (a player token reads only its own, and `public_reads` does not
//! open it), so it is stored and read per `(game, player)`. `friends_without_game` keeps the lists
//! migration 8 found no game for; nothing reads it.

use sqlx::Row;

use super::StoreError;
use super::{Store, db_err};

impl Store {
    /// Replaces a player's friend list in `game`.
    /// O(friends), in statements of 300.
    pub async fn set_friends(&self, game: &str, player: &str, friends: &[String]) -> Result<(), StoreError> {
        let mut tx = self.begin_on(&self.pool).await.map_err(db_err("cannot begin"))?;
        sqlx::query("DELETE FROM friends WHERE game = $1 AND player_id = $2")
            .bind(game)
            .bind(player)
            .execute(&mut *tx)
            .await
            .map_err(db_err("cannot replace friends"))?;
        for (position, chunk) in friends.chunks(300).enumerate() {
            let mut sql = String::from("INSERT INTO friends (game, player_id, friend_id, position) VALUES ");
            for i in 0..chunk.len() {
                if i > 0 {
                    sql.push_str(", ");
                }
                let b = i * 4;
                sql.push_str(&format!("(${}, ${}, ${}, ${})", b + 1, b + 2, b + 3, b + 4));
            }
            let sql = self.positional(&sql);
            let mut query = sqlx::query(&sql);
            for (i, friend) in chunk.iter().enumerate() {
                query = query
                    .bind(game)
                    .bind(player)
                    .bind(friend.clone())
                    .bind((position * 300 + i) as i64);
            }
            query
                .execute(&mut *tx)
                .await
                .map_err(db_err("cannot store friends"))?;
        }
        tx.commit().await.map_err(db_err("cannot commit friends"))
    }

    /// A player's friend list in `game`, in the order it was set.
    /// O(friends).
    pub async fn friends(&self, game: &str, player: &str) -> Result<Vec<String>, StoreError> {
        let rows =
            sqlx::query("SELECT friend_id FROM friends WHERE game = $1 AND player_id = $2 ORDER BY position")
                .bind(game)
                .bind(player)
                .fetch_all(&mut *self.reader().await.map_err(db_err("cannot reach the database"))?)
                .await
                .map_err(db_err("cannot read friends"))?;
        rows.iter()
            .map(|r| r.try_get("friend_id").map_err(db_err("bad friend row")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::{event, postgres_admin};

    /// Friend lists from before they belonged to a game are copied to each game their player
    /// has events in, in their order; a list whose player has none is kept aside; lists are
    /// then set and read per game. On SQLite here, on PostgreSQL below.
    #[tokio::test]
    async fn the_friends_migration_copies_each_list_to_the_games_of_its_player() {
        let dir = std::env::temp_dir().join(format!(
            "standings-migrate-friends-{}-{}",
            std::process::id(),
            crate::clock::now_ms()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("sqlite://{}/s.db", dir.display());
        friends_migration_copies_each_list_to_the_games_of_its_player(&url).await;
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn the_friends_migration_copies_each_list_to_the_games_of_its_player_on_postgres() {
        let name = format!(
            "standings_migrate_friends_{}_{}",
            std::process::id(),
            crate::clock::now_ms()
        );
        let admin = postgres_admin(&format!("CREATE DATABASE {name}")).await;
        let base = admin.rsplit_once('/').map(|(base, _)| base.to_string()).unwrap();
        friends_migration_copies_each_list_to_the_games_of_its_player(&format!("{base}/{name}")).await;
        postgres_admin(&format!("DROP DATABASE {name} WITH (FORCE)")).await;
    }

    /// Writes friend lists in the shape migration 1 made (no game), with p-a playing games g and
    /// h, p-b playing g, and p-c playing nothing, then migrates and reads them back.
    async fn friends_migration_copies_each_list_to_the_games_of_its_player(url: &str) {
        let mut log = vec![
            event(1, "e1", "p-a"),
            event(2, "e2", "p-b"),
            event(3, "e3", "p-a"),
            event(4, "e4", "p-a"),
        ];
        log[2].event.game = "h".into();
        let old = Store::open_migrated_to(url, 7).await.unwrap();
        let mut tx = old.begin().await.unwrap();
        crate::store::tests::insert_old_events(&old, &mut tx, &log).await;
        tx.commit("a test").await.unwrap();
        for (player, friend, position) in [
            ("p-a", "p-z", 0),
            ("p-a", "p-b", 1),
            ("p-a", "p-y", 2),
            ("p-b", "p-a", 0),
            ("p-c", "p-a", 0),
        ] {
            sqlx::query("INSERT INTO friends (player_id, friend_id, position) VALUES ($1, $2, $3)")
                .bind(player)
                .bind(friend)
                .bind(position)
                .execute(&old.pool)
                .await
                .unwrap();
        }
        old.close().await;

        let store = Store::open(url).await.unwrap();
        let friends = |game: &'static str, player: &'static str| {
            let store = &store;
            async move { store.friends(game, player).await.unwrap() }
        };
        assert_eq!(friends("g", "p-a").await, ["p-z", "p-b", "p-y"]);
        assert_eq!(friends("h", "p-a").await, ["p-z", "p-b", "p-y"]);
        assert_eq!(friends("g", "p-b").await, ["p-a"]);
        assert_eq!(friends("h", "p-b").await, Vec::<String>::new());
        assert_eq!(friends("g", "p-c").await, Vec::<String>::new());
        let aside = sqlx::query("SELECT player_id, friend_id FROM friends_without_game")
            .fetch_all(&store.pool)
            .await
            .unwrap();
        let aside: Vec<(String, String)> = aside
            .iter()
            .map(|r| (r.try_get("player_id").unwrap(), r.try_get("friend_id").unwrap()))
            .collect();
        assert_eq!(aside, [("p-c".to_string(), "p-a".to_string())]);

        // From now on a game's list is its own.
        store.set_friends("h", "p-a", &["p-x".into()]).await.unwrap();
        assert_eq!(friends("h", "p-a").await, ["p-x"]);
        assert_eq!(friends("g", "p-a").await, ["p-z", "p-b", "p-y"]);
        store.close().await;
    }
}
