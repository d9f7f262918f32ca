//! Storage: the event log, board definitions and friend lists, in SQLite or PostgreSQL through
//! one set of SQL statements. Only this module knows SQL.

use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, Executor, Row};
use standings_core::{BoardId, BoardRules, ScoreMode};

use crate::error::AppError;

/// The numbered migrations, applied in order and never edited after they land.
const MIGRATIONS: &[(i64, &str, &str)] = &[(
    1,
    "events_boards_friends",
    include_str!("../migrations/0001_events_boards_friends.sql"),
)];

/// Rows per multi-row statement: within SQLite's 32,766 and PostgreSQL's 65,535 bound
/// parameters at 11 columns.
const ROWS_PER_STATEMENT: usize = 1_000;

/// Which database is behind the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Embedded SQLite (WAL, `synchronous=FULL`).
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// A board as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardDef {
    /// The board.
    pub id: BoardId,
    /// Its fixed rules.
    pub rules: BoardRules,
}

/// One event as stored in the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEvent {
    /// Commit order.
    pub seq: i64,
    /// The game.
    pub game: String,
    /// Unique per game.
    pub event_id: String,
    /// The player.
    pub player_id: String,
    /// The game mode.
    pub mode: String,
    /// The season.
    pub season: String,
    /// The scopes it feeds, in the order given.
    pub scopes: Vec<String>,
    /// The value.
    pub value: i64,
    /// When it was achieved (ms).
    pub achieved_at: i64,
    /// When it was received (ms).
    pub received_at: i64,
    /// The name of the token that submitted it.
    pub source: String,
}

impl StoredEvent {
    /// Whether two events carry the same payload (everything but `seq`, `received_at` and
    /// `source`, which differ between a first submission and its retry).
    pub fn same_payload(&self, other: &StoredEvent) -> bool {
        self.game == other.game
            && self.event_id == other.event_id
            && self.player_id == other.player_id
            && self.mode == other.mode
            && self.season == other.season
            && self.scopes == other.scopes
            && self.value == other.value
            && self.achieved_at == other.achieved_at
    }

    /// The boards this event feeds.
    pub fn boards(&self) -> impl Iterator<Item = BoardId> + '_ {
        self.scopes.iter().map(|scope| BoardId {
            game: self.game.clone(),
            mode: self.mode.clone(),
            season: self.season.clone(),
            scope: scope.clone(),
        })
    }
}

/// What defining a board did.
#[derive(Debug, PartialEq, Eq)]
pub enum Defined {
    /// The board is new.
    Created,
    /// It existed with the same rules.
    Identical,
    /// It exists with other rules, which are returned.
    Conflict(BoardRules),
}

/// The database.
#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
}

fn db_err(context: &'static str) -> impl Fn(sqlx::Error) -> AppError {
    move |e| AppError::storage(context, e)
}

impl Store {
    /// Connects and applies pending migrations. A SQLite file is created if missing.
    pub async fn open(url: &str) -> Result<Store, AppError> {
        sqlx::any::install_default_drivers();
        let backend = if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else {
            Backend::Postgres
        };
        let url = match backend {
            Backend::Sqlite if !url.contains('?') => format!("{url}?mode=rwc"),
            _ => url.to_string(),
        };
        let options = AnyConnectOptions::from_str(&url)
            .map_err(|e| AppError::storage("the database URL is not valid", e))?;
        let pool = AnyPoolOptions::new()
            .max_connections(if backend == Backend::Sqlite { 4 } else { 8 })
            .acquire_timeout(Duration::from_secs(10))
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if backend == Backend::Sqlite {
                        // Durability first: WAL with a full fsync at every commit.
                        conn.execute("PRAGMA journal_mode = WAL").await?;
                        conn.execute("PRAGMA synchronous = FULL").await?;
                        conn.execute("PRAGMA busy_timeout = 10000").await?;
                    }
                    Ok(())
                })
            })
            .connect_with(options)
            .await
            .map_err(|e| AppError::storage("cannot connect to the database", e))?;
        let store = Store { pool, backend };
        store.migrate().await?;
        Ok(store)
    }

    /// The database behind the store.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    async fn migrate(&self) -> Result<(), AppError> {
        self.pool
            .execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT NOT NULL PRIMARY KEY, \
                 name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
            )
            .await
            .map_err(db_err("cannot create the migrations table"))?;
        for &(version, name, sql) in MIGRATIONS {
            let mut tx = self
                .pool
                .begin()
                .await
                .map_err(db_err("cannot begin a migration"))?;
            let applied: Option<AnyRow> =
                sqlx::query("SELECT version FROM schema_migrations WHERE version = $1")
                    .bind(version)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_err("cannot read the migrations table"))?;
            if applied.is_some() {
                continue;
            }
            // Comments go first; statements hold no semicolons inside, so splitting is exact.
            let code: String = sql
                .lines()
                .filter(|l| !l.trim_start().starts_with("--"))
                .collect::<Vec<_>>()
                .join("\n");
            for statement in code.split(';').map(str::trim).filter(|s| !s.is_empty()) {
                tx.execute(statement)
                    .await
                    .map_err(|e| AppError::storage(&format!("migration {version} ({name}) failed"), e))?;
            }
            sqlx::query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)")
                .bind(version)
                .bind(name)
                .bind(crate::clock::now_ms())
                .execute(&mut *tx)
                .await
                .map_err(db_err("cannot record a migration"))?;
            tx.commit().await.map_err(db_err("cannot commit a migration"))?;
        }
        Ok(())
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> bool {
        sqlx::query("SELECT 1").fetch_one(&self.pool).await.is_ok()
    }

    /// Defines a board, or reports that it exists (identically or not). Rules never change.
    pub async fn define_board(&self, def: &BoardDef) -> Result<Defined, AppError> {
        let mut tx = self.pool.begin().await.map_err(db_err("cannot begin"))?;
        let existing = sqlx::query(
            "SELECT score_mode, value_min, value_max FROM boards \
             WHERE game = $1 AND mode = $2 AND season = $3 AND scope = $4",
        )
        .bind(&def.id.game)
        .bind(&def.id.mode)
        .bind(&def.id.season)
        .bind(&def.id.scope)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err("cannot read a board"))?;
        if let Some(row) = existing {
            let rules = rules_from_row(&row)?;
            return Ok(if rules == def.rules {
                Defined::Identical
            } else {
                Defined::Conflict(rules)
            });
        }
        sqlx::query(
            "INSERT INTO boards (game, mode, season, scope, score_mode, value_min, value_max, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(&def.id.game)
        .bind(&def.id.mode)
        .bind(&def.id.season)
        .bind(&def.id.scope)
        .bind(def.rules.score_mode.as_str())
        .bind(def.rules.value_min)
        .bind(def.rules.value_max)
        .bind(crate::clock::now_ms())
        .execute(&mut *tx)
        .await
        .map_err(db_err("cannot insert a board"))?;
        tx.commit().await.map_err(db_err("cannot commit a board"))?;
        Ok(Defined::Created)
    }

    /// Every board definition, in a stable order.
    pub async fn boards(&self) -> Result<Vec<BoardDef>, AppError> {
        let rows = sqlx::query(
            "SELECT game, mode, season, scope, score_mode, value_min, value_max FROM boards \
             ORDER BY game, mode, season, scope",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(db_err("cannot list boards"))?;
        rows.iter()
            .map(|row| {
                let id = BoardId {
                    game: row.try_get("game").map_err(db_err("bad board row"))?,
                    mode: row.try_get("mode").map_err(db_err("bad board row"))?,
                    season: row.try_get("season").map_err(db_err("bad board row"))?,
                    scope: row.try_get("scope").map_err(db_err("bad board row"))?,
                };
                Ok(BoardDef {
                    id,
                    rules: rules_from_row(row)?,
                })
            })
            .collect()
    }

    /// The next free `seq` (one past the greatest stored).
    pub async fn next_seq(&self) -> Result<i64, AppError> {
        let row = sqlx::query("SELECT COALESCE(MAX(seq), 0) AS top FROM score_events")
            .fetch_one(&self.pool)
            .await
            .map_err(db_err("cannot read the event log"))?;
        let top: i64 = row.try_get("top").map_err(db_err("bad seq"))?;
        Ok(top + 1)
    }

    /// Begins a write transaction.
    pub async fn begin(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>, AppError> {
        self.pool.begin().await.map_err(db_err("cannot begin a write"))
    }

    /// The stored events of `game` among `event_ids`, inside a transaction.
    pub async fn find_events(
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        game: &str,
        event_ids: &[&str],
    ) -> Result<Vec<StoredEvent>, AppError> {
        let mut found = Vec::new();
        for chunk in event_ids.chunks(ROWS_PER_STATEMENT) {
            let placeholders: Vec<String> = (0..chunk.len()).map(|i| format!("${}", i + 2)).collect();
            let sql = format!(
                "SELECT {EVENT_COLUMNS} FROM score_events WHERE game = $1 AND event_id IN ({})",
                placeholders.join(", ")
            );
            let mut query = sqlx::query(&sql).bind(game);
            for id in chunk {
                query = query.bind(*id);
            }
            let rows = query
                .fetch_all(&mut **tx)
                .await
                .map_err(db_err("cannot look up events"))?;
            for row in &rows {
                found.push(event_from_row(row)?);
            }
        }
        Ok(found)
    }

    /// Appends events inside a transaction, many rows per statement.
    pub async fn insert_events(
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        events: &[StoredEvent],
    ) -> Result<(), AppError> {
        for chunk in events.chunks(ROWS_PER_STATEMENT) {
            let mut sql = String::with_capacity(64 + chunk.len() * 64);
            sql.push_str(
                "INSERT INTO score_events (seq, game, event_id, player_id, mode, season, scopes, value, \
                 achieved_at, received_at, source) VALUES ",
            );
            for i in 0..chunk.len() {
                if i > 0 {
                    sql.push_str(", ");
                }
                let b = i * 11;
                sql.push('(');
                for c in 1..=11 {
                    if c > 1 {
                        sql.push_str(", ");
                    }
                    sql.push('$');
                    sql.push_str(&(b + c).to_string());
                }
                sql.push(')');
            }
            let mut query = sqlx::query(&sql);
            for e in chunk {
                query = query
                    .bind(e.seq)
                    .bind(e.game.clone())
                    .bind(e.event_id.clone())
                    .bind(e.player_id.clone())
                    .bind(e.mode.clone())
                    .bind(e.season.clone())
                    .bind(e.scopes.join(","))
                    .bind(e.value)
                    .bind(e.achieved_at)
                    .bind(e.received_at)
                    .bind(e.source.clone());
            }
            query
                .execute(&mut **tx)
                .await
                .map_err(db_err("cannot append events"))?;
        }
        Ok(())
    }

    /// Reads the event log in `seq` order, in pages, handing each page to `visit`.
    pub async fn scan_events(
        &self,
        mut visit: impl FnMut(Vec<StoredEvent>) -> Result<(), AppError>,
    ) -> Result<(), AppError> {
        let mut after = 0i64;
        loop {
            let rows = sqlx::query(&format!(
                "SELECT {EVENT_COLUMNS} FROM score_events WHERE seq > $1 ORDER BY seq LIMIT 20000"
            ))
            .bind(after)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err("cannot read the event log"))?;
            let Some(last) = rows.last() else {
                return Ok(());
            };
            after = last.try_get("seq").map_err(db_err("bad seq"))?;
            let page = rows.iter().map(event_from_row).collect::<Result<Vec<_>, _>>()?;
            visit(page)?;
        }
    }

    /// Replaces a player's friend list.
    pub async fn set_friends(&self, player: &str, friends: &[String]) -> Result<(), AppError> {
        let mut tx = self.pool.begin().await.map_err(db_err("cannot begin"))?;
        sqlx::query("DELETE FROM friends WHERE player_id = $1")
            .bind(player)
            .execute(&mut *tx)
            .await
            .map_err(db_err("cannot replace friends"))?;
        for (position, chunk) in friends.chunks(300).enumerate() {
            let mut sql = String::from("INSERT INTO friends (player_id, friend_id, position) VALUES ");
            for i in 0..chunk.len() {
                if i > 0 {
                    sql.push_str(", ");
                }
                sql.push_str(&format!("(${}, ${}, ${})", i * 3 + 1, i * 3 + 2, i * 3 + 3));
            }
            let mut query = sqlx::query(&sql);
            for (i, friend) in chunk.iter().enumerate() {
                query = query
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

    /// A player's friend list, in the order it was set.
    pub async fn friends(&self, player: &str) -> Result<Vec<String>, AppError> {
        let rows = sqlx::query("SELECT friend_id FROM friends WHERE player_id = $1 ORDER BY position")
            .bind(player)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err("cannot read friends"))?;
        rows.iter()
            .map(|r| r.try_get("friend_id").map_err(db_err("bad friend row")))
            .collect()
    }

    /// Closes the pool.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

const EVENT_COLUMNS: &str =
    "seq, game, event_id, player_id, mode, season, scopes, value, achieved_at, received_at, source";

fn event_from_row(row: &AnyRow) -> Result<StoredEvent, AppError> {
    let bad = db_err("bad event row");
    let scopes: String = row.try_get("scopes").map_err(&bad)?;
    Ok(StoredEvent {
        seq: row.try_get("seq").map_err(&bad)?,
        game: row.try_get("game").map_err(&bad)?,
        event_id: row.try_get("event_id").map_err(&bad)?,
        player_id: row.try_get("player_id").map_err(&bad)?,
        mode: row.try_get("mode").map_err(&bad)?,
        season: row.try_get("season").map_err(&bad)?,
        scopes: scopes.split(',').map(str::to_string).collect(),
        value: row.try_get("value").map_err(&bad)?,
        achieved_at: row.try_get("achieved_at").map_err(&bad)?,
        received_at: row.try_get("received_at").map_err(&bad)?,
        source: row.try_get("source").map_err(&bad)?,
    })
}

fn rules_from_row(row: &AnyRow) -> Result<BoardRules, AppError> {
    let bad = db_err("bad board row");
    let mode: String = row.try_get("score_mode").map_err(&bad)?;
    let score_mode = ScoreMode::parse(&mode)
        .ok_or_else(|| AppError::Internal(format!("stored board has unknown score mode {mode:?}")))?;
    let min: i64 = row.try_get("value_min").map_err(&bad)?;
    let max: i64 = row.try_get("value_max").map_err(&bad)?;
    BoardRules::with_range(score_mode, min, max)
        .ok_or_else(|| AppError::Internal("stored board has value_min > value_max".into()))
}
