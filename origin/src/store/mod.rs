//! Storage: the only module that knows SQL or names an sqlx type. It maps rows to the domain's
//! records and back, and its errors (`StoreError`, in `error.rs`) keep sqlx's error as their
//! source.
//!
//! This file connects, migrates and hands out the writer's [`Transaction`]; each table family has a
//! file of its own (one `impl Store` block per file, its tests beside it): `statements` (the
//! multi-row statements and their sizes), `events` (the event log), `player_index`, `friends`,
//! `actions` (actions and results), `periods` (snapshots of closed periods), `checkpoints` and
//! `boards`; `owner` holds the proof that this process owns the log (a lock, see its doc).
//!
//! One dialect serves SQLite and PostgreSQL (`$N` placeholders work on both; where they differ, the
//! statement is built once per backend), so the origin's tests run unchanged on both. Numbered
//! migrations in `origin/migrations/` are never edited. The writer has a connection of its own (on
//! SQLite a 64 MiB page cache and a large WAL before a commit checkpoints; on PostgreSQL its
//! transactions plan with constants and no sequential scans, since every statement is an index
//! look-up or an append); everything else uses the pool. On SQLite every transaction that writes
//! begins `IMMEDIATE`, so that a checkpoint part written through the pool and the writer's
//! transactions wait for each other rather than one failing at its first write. The pool opens all
//! its connections at start: a thread inherits the CPU pin of the thread that starts it, and the
//! connection threads must start none.
//!
//! An error that says the database is gone (a broken or unobtainable connection, PostgreSQL
//! shutting down or starting, SQLite's lock past the busy timeout) is the store's unavailable case,
//! answered 503 `DATABASE_UNAVAILABLE`; anything else is internal.

mod actions;
mod boards;
mod checkpoints;
pub mod cluster;
mod erasure;
mod error;
mod events;
mod feed;
mod friends;
mod owner;
mod periods;
pub(crate) mod player_index;
mod statements;
mod webhooks;

use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, Executor, Row};

pub use self::boards::Defined;
pub use self::erasure::ErasedRows;
pub use self::error::StoreError;
use self::error::{db_err, db_error, outcome_unknown};
pub use self::events::AtOnce;
pub use self::owner::{ClaimError, LogOwner, Node};
pub use self::statements::AT_ONCE_ROWS;
pub use crate::domain::player_pages::RUN_SEQS;

/// The numbered migrations, applied in order and never edited after they land.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "events_boards_friends",
        include_str!("../../migrations/0001_events_boards_friends.sql"),
    ),
    (
        2,
        "seasons_moderation_periods",
        include_str!("../../migrations/0002_seasons_moderation_periods.sql"),
    ),
    (
        3,
        "period_snapshots",
        include_str!("../../migrations/0003_period_snapshots.sql"),
    ),
    (
        4,
        "checkpoints",
        include_str!("../../migrations/0004_checkpoints.sql"),
    ),
    (
        5,
        "player_runs",
        include_str!("../../migrations/0005_player_runs.sql"),
    ),
    (
        6,
        "event_seasons",
        include_str!("../../migrations/0006_event_seasons.sql"),
    ),
    (
        7,
        "player_pages",
        include_str!("../../migrations/0007_player_pages.sql"),
    ),
    (
        8,
        "friends_per_game",
        include_str!("../../migrations/0008_friends_per_game.sql"),
    ),
    (
        9,
        "log_owner",
        include_str!("../../migrations/0009_log_owner.sql"),
    ),
    (
        10,
        "profiles_metadata",
        include_str!("../../migrations/0010_profiles_metadata.sql"),
    ),
    (
        11,
        "board_shards",
        include_str!("../../migrations/0011_board_shards.sql"),
    ),
    (
        12,
        "board_segments",
        include_str!("../../migrations/0012_board_segments.sql"),
    ),
    (13, "feed", include_str!("../../migrations/0013_feed.sql")),
    (14, "webhooks", include_str!("../../migrations/0014_webhooks.sql")),
    (
        15,
        "event_segments",
        include_str!("../../migrations/0015_event_segments.sql"),
    ),
];

/// The migration whose SQL is followed by code, in the same transaction: it pages the runs
/// already sealed ([`Store::page_sealed_runs`]).
const PAGING_MIGRATION: i64 = 7;

/// Which database is behind the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Embedded SQLite (WAL, `synchronous=FULL`).
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// A transaction on the writer's connection. Only the store knows what is inside, so nothing
/// else names a database type.
pub struct Transaction(sqlx::Transaction<'static, sqlx::Any>);

/// Why a commit did not succeed.
#[derive(Debug)]
pub enum CommitFailed {
    /// The commit was sent and its answer lost: it may or may not have taken.
    Unknown(StoreError),
    /// It did not take.
    Failed(StoreError),
}

impl Transaction {
    /// Commits; `context` names what was being written.
    pub async fn commit(self, context: &str) -> Result<(), CommitFailed> {
        self.0.commit().await.map_err(|e| {
            let unknown = outcome_unknown(&e);
            let error = db_error(context, e);
            if unknown {
                CommitFailed::Unknown(error)
            } else {
                CommitFailed::Failed(error)
            }
        })
    }

    /// Rolls back; `context` names what was being written.
    pub async fn rollback(self, context: &str) -> Result<(), StoreError> {
        self.0.rollback().await.map_err(|e| db_error(context, e))
    }
}

/// The database.
#[derive(Clone)]
pub struct Store {
    /// Reads, board definitions, friends and the rare writes outside the event log.
    pool: AnyPool,
    /// The one connection the writer task appends through, so that its page cache stays warm
    /// with the pages every group touches (the pool would hand out its connections in turn,
    /// each with a cold cache of its own).
    writer: AnyPool,
    backend: Backend,
    /// In a cluster, the partition this store reads and writes: its schema, and the lease every
    /// one of its writes proves in its own transaction. `None` on a single node.
    scope: Option<Arc<Scope>>,
}

/// One partition of a clustered database, as a store sees it.
#[derive(Debug)]
pub struct Scope {
    /// The partition's number.
    pub partition: u32,
    /// Its schema (`standings_p0007`), holding the single-node tables.
    schema: String,
    /// This node's id, as the lease names it.
    node: String,
    /// The lease's epoch this node holds; 0 while it holds none (every write is refused).
    epoch: AtomicI64,
    /// The epoch the last write transaction begun proved: a commit whose answer was lost was
    /// written under it.
    proven: AtomicI64,
}

impl Scope {
    /// The lease epoch the writes of this partition now prove (0: none).
    pub fn set_epoch(&self, epoch: i64) {
        self.epoch.store(epoch, Ordering::Release);
    }

    /// The epoch the writes prove.
    pub fn epoch(&self) -> i64 {
        self.epoch.load(Ordering::Acquire)
    }
}

/// What a connection is for, which decides its SQLite settings.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Reader,
    Writer,
}

/// SQLite's page cache on the writer's connection, in KiB. The default (2 MB) holds a fraction
/// of the index pages a group of inserts touches, which would be read back at every group. It
/// is resident memory, filled only as the file grows past it.
const WRITER_CACHE_KIB: i64 = 64 * 1024;

/// WAL pages after which a commit checkpoints (SQLite's default is 1,000, 4 MB). A checkpoint
/// copies each page once however many commits changed it, so a larger WAL copies the hot pages
/// (the right edge of `seq`, the inner nodes of every index) fewer times per event; it costs
/// disk, not memory.
const WAL_AUTOCHECKPOINT_PAGES: i64 = 16_384;

/// Opens a pool of up to `connections` with the settings of its role.
async fn connect(
    options: &AnyConnectOptions,
    backend: Backend,
    connections: u32,
    role: Role,
    in_transaction_at_most: Option<Duration>,
) -> Result<AnyPool, StoreError> {
    AnyPoolOptions::new()
        .max_connections(connections)
        // Every connection is opened here, at start, on the main runtime, and kept: on SQLite
        // each has a worker thread, and a thread inherits the CPU pin of the thread that starts
        // it, which for a connection opened on demand would be a pinned connection thread
        // (`http::serve`). Only a connection that broke is reopened on demand, by whichever
        // thread asks next.
        // A cluster node (PostgreSQL only, whose connections are tasks, not threads) opens them
        // as its partitions need them and closes idle ones: a node that owns little holds few
        // of the database's connections.
        .min_connections(if in_transaction_at_most.is_some() {
            1
        } else {
            connections
        })
        .idle_timeout(in_transaction_at_most.map(|_| Duration::from_secs(60)))
        .max_lifetime(None)
        .acquire_timeout(Duration::from_secs(10))
        // The writer's connection is tested as it goes back to the pool, one round trip to it;
        // a second one on every transaction's way out is not worth its wait.
        .test_before_acquire(role == Role::Reader)
        .after_connect(move |conn, _| {
            Box::pin(async move {
                if let Some(limit) = in_transaction_at_most {
                    conn.execute(&*format!(
                        "SET idle_in_transaction_session_timeout = {}",
                        limit.as_millis()
                    ))
                    .await?;
                }
                if backend == Backend::Sqlite {
                    // Durability first: WAL (set on the file before the pools open, see
                    // `wal_before_the_pools`) with a full fsync at every commit.
                    conn.execute("PRAGMA busy_timeout = 10000").await?;
                    conn.execute("PRAGMA journal_mode = WAL").await?;
                    conn.execute("PRAGMA synchronous = FULL").await?;
                    // Freed space is overwritten, so that an erasure's rewritten rows leave no
                    // copy of what they held in the file.
                    conn.execute("PRAGMA secure_delete = ON").await?;
                    if role == Role::Writer {
                        conn.execute(&*format!("PRAGMA cache_size = -{WRITER_CACHE_KIB}"))
                            .await?;
                        conn.execute(&*format!(
                            "PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}"
                        ))
                        .await?;
                        conn.execute("PRAGMA temp_store = MEMORY").await?;
                    }
                }
                Ok(())
            })
        })
        .connect_with(options.clone())
        .await
        .map_err(|e| db_error("cannot connect to the database", e))
}

/// Switches a SQLite file to WAL on one connection of its own, before the pools open theirs all
/// at once: on a new file the switch takes a lock that SQLite does not wait for (its busy
/// handler is not called there), so connections switching together failed with "database is
/// locked". The mode is kept in the file; the pools' own switch then finds it done.
async fn wal_before_the_pools(options: &AnyConnectOptions) -> Result<(), StoreError> {
    use sqlx::{ConnectOptions, Connection};
    let mut conn = options
        .connect()
        .await
        .map_err(|e| db_error("cannot connect to the database", e))?;
    conn.execute("PRAGMA journal_mode = WAL")
        .await
        .map_err(db_err("cannot switch the database to WAL"))?;
    conn.close()
        .await
        .map_err(db_err("cannot close the connection that switched to WAL"))
}

impl Store {
    /// Connects and applies pending migrations. A SQLite file is created if missing.
    /// O(pending migrations); migration 7 reads the whole log once.
    pub async fn open(url: &str) -> Result<Store, StoreError> {
        Store::open_migrated_to(url, i64::MAX).await
    }

    /// Connects and applies the pending migrations numbered up to `last`.
    async fn open_migrated_to(url: &str, last: i64) -> Result<Store, StoreError> {
        let store = Store::connect(url, None).await?;
        store.migrate_to(last).await?;
        Ok(store)
    }

    /// Connects without migrating. `in_transaction_at_most` (a cluster's lease time) ends a
    /// PostgreSQL session that stays idle inside a transaction longer, so that a paused node
    /// cannot hold a lease row's lock past its lease.
    async fn connect(url: &str, in_transaction_at_most: Option<Duration>) -> Result<Store, StoreError> {
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
        let options = AnyConnectOptions::from_str(&url).map_err(|source| StoreError::Database {
            context: "the database URL is not valid".into(),
            source,
        })?;
        if backend == Backend::Sqlite {
            wal_before_the_pools(&options).await?;
        }
        let clustered = in_transaction_at_most.is_some();
        let pool = connect(
            &options,
            backend,
            if backend == Backend::Sqlite { 4 } else { 8 },
            Role::Reader,
            in_transaction_at_most,
        )
        .await?;
        // A cluster node's partitions share the writer's pool: one connection each would be
        // one per partition.
        let writers = if clustered { 4 } else { 1 };
        let writer = connect(&options, backend, writers, Role::Writer, in_transaction_at_most).await?;
        Ok(Store {
            pool,
            writer,
            backend,
            scope: None,
        })
    }

    /// The database behind the store.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Applies the pending migrations numbered up to `last`.
    ///
    /// On PostgreSQL each transaction first takes a transaction-level advisory lock, so that
    /// origins starting together migrate one at a time: the later ones wait, then find each
    /// migration recorded and skip it. (`CREATE TABLE IF NOT EXISTS` alone is not safe there
    /// when run concurrently.) SQLite needs none: its write lock serializes the transactions,
    /// and one process at a time owns the file (`owner`).
    pub(super) async fn migrate_to(&self, last: i64) -> Result<(), StoreError> {
        let mut tx = self.begin_migration().await?;
        tx.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT NOT NULL PRIMARY KEY, \
             name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
        )
        .await
        .map_err(db_err("cannot create the migrations table"))?;
        tx.commit()
            .await
            .map_err(db_err("cannot create the migrations table"))?;
        for &(version, name, sql) in MIGRATIONS.iter().filter(|m| m.0 <= last) {
            let mut tx = self.begin_migration().await?;
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
                    .map_err(|source| StoreError::Database {
                        context: format!("migration {version} ({name}) failed"),
                        source,
                    })?;
            }
            if version == PAGING_MIGRATION {
                self.page_sealed_runs(&mut tx).await?;
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

    /// Begins a migration's transaction, under the migration lock on PostgreSQL (held until it
    /// ends).
    pub(super) async fn begin_migration(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>, StoreError> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(db_err("cannot begin a migration"))?;
        if self.backend == Backend::Postgres {
            // Selected through a subquery: the lock function returns `void`, a type the Any
            // driver does not decode.
            sqlx::query("SELECT 1 AS locked FROM (SELECT pg_advisory_xact_lock($1)) AS l")
                .bind(owner::MIGRATION_LOCK)
                .execute(&mut *tx)
                .await
                .map_err(db_err("cannot take the migration lock"))?;
            // "Already exists, skipping" is what every node but the first hears: not news.
            tx.execute("SET LOCAL client_min_messages = warning")
                .await
                .map_err(db_err("cannot begin a migration"))?;
            if let Some(scope) = &self.scope {
                tx.execute(&*format!(
                    "CREATE SCHEMA IF NOT EXISTS {0}; SET LOCAL search_path TO {0}",
                    scope.schema
                ))
                .await
                .map_err(db_err("cannot create the partition's schema"))?;
            }
        }
        Ok(tx)
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> bool {
        sqlx::query("SELECT 1").fetch_one(&self.pool).await.is_ok()
    }

    /// The next free `seq` (one past the greatest stored).
    /// Two index look-ups.
    pub async fn next_seq(&self) -> Result<i64, StoreError> {
        // Two index look-ups: a MAX over a UNION would scan both tables (seconds at 10M events).
        self.one_past(sqlx::query(
            "SELECT COALESCE((SELECT MAX(seq) FROM score_events), 0) AS events, \
             COALESCE((SELECT MAX(seq) FROM actions), 0) AS actions",
        ))
        .await
    }

    /// One past the greater of the `events` and `actions` seqs `query` reads.
    async fn one_past<'q>(
        &self,
        query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    ) -> Result<i64, StoreError> {
        let row = query
            .fetch_one(&mut *self.reader().await.map_err(db_err("cannot read the event log"))?)
            .await
            .map_err(db_err("cannot read the event log"))?;
        let events: i64 = row.try_get("events").map_err(db_err("bad seq"))?;
        let actions: i64 = row.try_get("actions").map_err(db_err("bad seq"))?;
        Ok(events.max(actions) + 1)
    }

    /// What the log says of a commit whose answer was lost: one past the greatest `seq` this
    /// writer may have written. On a single node that is [`Store::next_seq`]; in a cluster, a
    /// node that took the partition over meanwhile appends after it, so only the rows of the
    /// epoch this store last proved count.
    pub async fn next_seq_landed(&self) -> Result<i64, StoreError> {
        let Some(scope) = &self.scope else {
            return self.next_seq().await;
        };
        self.one_past(
            sqlx::query(
                "SELECT COALESCE((SELECT MAX(seq) FROM score_events WHERE epoch = $1), 0) AS events, \
                 COALESCE((SELECT MAX(seq) FROM actions WHERE epoch = $1), 0) AS actions",
            )
            .bind(scope.proven.load(Ordering::Acquire)),
        )
        .await
    }

    /// Begins a write transaction on the writer's connection (only the writer task calls this).
    ///
    /// On SQLite it begins `IMMEDIATE`, taking the write lock at once (waiting for it up to the
    /// busy timeout): a deferred transaction that reads (a look-up) and then writes is refused
    /// at once, busy timeout or not, when another connection (a checkpoint's part, through the
    /// pool) committed in between.
    pub async fn begin(&self) -> Result<Transaction, StoreError> {
        let mut tx = self
            .begin_on(&self.writer)
            .await
            .map_err(db_err("cannot begin a write"))?;
        if self.backend == Backend::Postgres {
            // The writer looks events up by their unique (game, event_id), up to 1,000 ids in
            // one IN list. A prepared statement's generic plan sees the ids as parameters: it
            // cannot hash the list, and before autovacuum has analyzed a growing table it reads
            // every row of the game and compares each with all 1,000 ids. A custom plan sees the ids as constants, so the list
            // is hashed and, with statistics, found through the index. Every statement of the
            // writer's transactions is an index look-up or an append: a scan is never better.
            tx.execute("SET LOCAL plan_cache_mode = force_custom_plan; SET LOCAL enable_seqscan = off")
                .await
                .map_err(db_err("cannot begin a write"))?;
        }
        Ok(Transaction(tx))
    }

    /// Begins a transaction that writes, on `pool`: on SQLite `IMMEDIATE` (see [`Store::begin`]),
    /// so that one which reads before it writes waits for the write lock instead of failing.
    /// While this process cannot prove it owns the log (`owner::fenced`), it is refused as the
    /// database's absence, before any statement is sent.
    ///
    /// In a cluster it first chooses the partition's schema and proves, in the same
    /// transaction, that this node holds the partition's lease at its epoch (the lease row stays
    /// share-locked until the transaction ends, so a takeover waits for it, and a deposed owner's
    /// write fails here whatever its own clock says).
    async fn begin_on(&self, pool: &AnyPool) -> Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error> {
        if owner::fenced() {
            return Err(sqlx::Error::PoolTimedOut);
        }
        let mut tx = match self.backend {
            Backend::Sqlite => pool.begin_with("BEGIN IMMEDIATE").await?,
            Backend::Postgres => pool.begin().await?,
        };
        if let Some(scope) = &self.scope {
            let epoch = scope.epoch();
            tx.execute(&*cluster::fence_sql(
                &scope.schema,
                scope.partition,
                &scope.node,
                epoch,
            ))
            .await?;
            scope.proven.store(epoch, Ordering::Release);
        }
        Ok(tx)
    }

    /// A connection of the pool for reads, on the partition's schema in a cluster.
    async fn reader(&self) -> Result<sqlx::pool::PoolConnection<sqlx::Any>, sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        if let Some(scope) = &self.scope {
            conn.execute(&*format!("SET search_path TO {}", scope.schema))
                .await?;
        }
        Ok(conn)
    }

    /// Runs one statement that writes, through the pool: alone on a single node; in a cluster,
    /// in a transaction of its own that proves the lease first ([`Store::begin_on`]).
    async fn write_one<'q>(
        &self,
        query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    ) -> Result<sqlx::any::AnyQueryResult, sqlx::Error> {
        if self.scope.is_none() {
            return query.execute(&self.pool).await;
        }
        let mut tx = self.begin_on(&self.pool).await?;
        let done = query.execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(done)
    }

    /// Whether a few events may be appended as one statement committed alone: not in a cluster,
    /// where every write proves its lease in a transaction.
    pub(crate) fn appends_alone(&self) -> bool {
        self.scope.is_none()
    }

    /// The partition this store is scoped to, in a cluster.
    pub fn scope(&self) -> Option<&Arc<Scope>> {
        self.scope.as_ref()
    }

    /// Frees the writer connection's page cache (SQLite; PostgreSQL caches in its own
    /// process). The pages are read back as the next writes need them.
    /// O(the writer connection's page cache).
    pub async fn release_memory(&self) -> Result<(), StoreError> {
        if self.backend == Backend::Sqlite {
            sqlx::query("PRAGMA shrink_memory")
                .execute(&self.writer)
                .await
                .map_err(db_err("cannot shrink the page cache"))?;
        }
        Ok(())
    }

    /// Closes the pool.
    pub async fn close(&self) {
        self.writer.close().await;
        self.pool.close().await;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::domain::{EventStatus, LoggedEvent, NewEvent};

    pub(super) fn event(seq: i64, event_id: &str, player: &str) -> LoggedEvent {
        LoggedEvent {
            seq,
            status: EventStatus::Applied,
            received_at: 2_000 + seq,
            event: NewEvent {
                metadata: None,
                segments: None,
                game: "g".into(),
                event_id: event_id.into(),
                player_id: player.into(),
                mode: "m".into(),
                season: "s".into(),
                scopes: vec!["global".into()],
                value: seq * 10,
                achieved_at: 1_000 + seq,
                source: "test".into(),
            },
        }
    }

    /// On SQLite the writer's transaction holds the write lock from its begin: a write through
    /// the pool (a checkpoint's part) between its look-up and its insert is held off (refused
    /// here, where it may not wait), rather than committing in between and making the insert
    /// fail at once with BUSY_SNAPSHOT whatever the busy timeout.
    #[tokio::test]
    async fn the_writers_sqlite_transaction_holds_the_write_lock_from_its_begin() {
        let (dir, url) = temp_sqlite("immediate");
        let store = Store::open(&url).await.unwrap();
        let mut tx = store.begin().await.unwrap();
        assert!(store.find_events(&mut tx, "g", &["e1"]).await.unwrap().is_empty());
        let mut other = store.pool.acquire().await.unwrap();
        other.execute("PRAGMA busy_timeout = 0").await.unwrap();
        let part = other
            .execute("INSERT INTO checkpoint_parts (seq, part, body) VALUES (1, 1, x'00')")
            .await
            .expect_err("the pool wrote while the writer's transaction was open");
        let shown = part.to_string();
        assert!(db_error("part", part).is_unavailable(), "{shown}");
        assert_eq!(
            store
                .insert_events(&mut tx, &[event(1, "e1", "p")])
                .await
                .unwrap(),
            1
        );
        tx.commit("a test").await.unwrap();
        other
            .execute("INSERT INTO checkpoint_parts (seq, part, body) VALUES (1, 1, x'00')")
            .await
            .unwrap();
        drop(other);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A fresh folder for a test's SQLite database, and the database's URL in it.
    pub(crate) fn temp_sqlite(name: &str) -> (std::path::PathBuf, String) {
        let dir = std::env::temp_dir().join(format!(
            "standings-{name}-{}-{}",
            std::process::id(),
            crate::clock::now_ms()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("sqlite://{}/s.db", dir.display());
        (dir, url)
    }

    /// A SQLite database in a fresh folder, migrated up to `last` only, holding `log`: what
    /// an older version left behind. Returns the folder and the database's URL.
    pub(super) async fn written_before_migration(
        last: i64,
        log: &[LoggedEvent],
    ) -> (std::path::PathBuf, String) {
        let (dir, url) = temp_sqlite(&format!("migrate-{last}"));
        write_before_migration(&url, last, log).await;
        (dir, url)
    }

    /// Migrates the database at `url` up to `last` only (before the events' `segments`
    /// column) and stores `log` in it, as the builds of then stored events.
    pub(super) async fn write_before_migration(url: &str, last: i64, log: &[LoggedEvent]) {
        let old = Store::open_migrated_to(url, last).await.unwrap();
        let mut tx = old.begin().await.unwrap();
        insert_old_events(&old, &mut tx, log).await;
        tx.commit("a test").await.unwrap();
        old.close().await;
    }

    /// Stores `log` in a database migrated before the events' `segments` column, as the
    /// builds of then stored events.
    pub(super) async fn insert_old_events(old: &Store, tx: &mut Transaction, log: &[LoggedEvent]) {
        for e in log {
            let sql = old.positional(
                "INSERT INTO score_events (seq, game, event_id, player_id, mode, season, scopes, value, \
                 achieved_at, received_at, source, status) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            );
            crate::store::events::bind_columns_before_segments(sqlx::query(&sql), e)
                .execute(&mut *tx.0)
                .await
                .unwrap();
        }
    }

    /// Runs `sql` on the PostgreSQL the tests use (`STANDINGS_TEST_POSTGRES`, as in
    /// `tests/common`).
    pub(super) async fn postgres_admin(sql: &str) -> String {
        use sqlx::Connection;
        sqlx::any::install_default_drivers();
        let admin = std::env::var("STANDINGS_TEST_POSTGRES")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
        let mut conn = sqlx::AnyConnection::connect(&admin).await.unwrap();
        conn.execute(sql).await.unwrap();
        conn.close().await.unwrap();
        admin
    }
}
