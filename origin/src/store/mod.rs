//! Storage: the event log, board definitions and friend lists, in SQLite or PostgreSQL through
//! one set of SQL statements. Only this module knows SQL.

pub mod player_index;

use std::collections::{HashMap, HashSet};
use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, Executor, Row};
use standings_core::{BoardId, BoardRules, ScoreMode};

use crate::domain::{ActionRow, BoardDef, EventStatus, LoggedEvent, NewEvent, ResultRow};
use crate::http::error::AppError;

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
];

/// The migration whose SQL is followed by code, in the same transaction: it pages the runs
/// already sealed ([`Store::page_sealed_runs`]).
const PAGING_MIGRATION: i64 = 7;

/// Consecutive seqs per sealed run of the player index ([`player_index`]). A recompute scans
/// at most this many log rows past the last run and reads one page per run: 153 runs at 10M
/// events.
pub const RUN_SEQS: i64 = 65_536;

/// Rows per multi-row statement: within SQLite's 32,766 and PostgreSQL's 65,535 bound
/// parameters at 12 columns.
const ROWS_PER_STATEMENT: usize = 1_000;

/// The row counts of the multi-row statements: full ones, then powers of two for the rest.
const STATEMENT_SIZES: [usize; 11] = [ROWS_PER_STATEMENT, 512, 256, 128, 64, 32, 16, 8, 4, 2, 1];

/// Splits `rows` into chunks of [`STATEMENT_SIZES`], largest first: 1,000 rows as one
/// statement, 37 as three (32, 4 and 1).
fn statement_sizes<T>(mut rows: &[T]) -> impl Iterator<Item = &[T]> {
    std::iter::from_fn(move || {
        let size = *STATEMENT_SIZES.iter().find(|&&size| size <= rows.len())?;
        let (chunk, rest) = rows.split_at(size);
        rows = rest;
        Some(chunk)
    })
}

/// The most rows [`Store::insert_events_at_once`] takes, in one statement of exactly that many
/// rows: a prepared statement for each size, 97 on the writer's connection with the 33 sizes of
/// the look-up and the two inserts, within sqlx's cache of 100 statements per connection.
pub const AT_ONCE_ROWS: usize = 64;

/// The multi-row statements the writer runs for every group.
#[derive(Clone, Copy)]
enum Statement {
    FindEvents = 0,
    InsertEvents = 1,
    /// SQLite: an insert of rows that share their game, mode, season, scopes, `received_at`,
    /// source and status, bound once (see [`push_shared_rows`]).
    InsertShared = 2,
    InsertAtOnce = 3,
}

/// The columns of an event row that each row binds in a statement of shared rows; the other
/// seven are bound once for the whole statement.
const OWN_COLUMNS: usize = 5;

/// `WITH r(...) AS (VALUES ...) INSERT OR FAIL INTO score_events (...) SELECT ... FROM r WHERE
/// true` for `rows` rows of which only the seq, event id, player, value and `achieved_at` are
/// bound per row; the other seven columns are the parameters numbered after them,
/// `?{5 x rows + 1}` to `?{5 x rows + 7}`, bound once. (`WHERE true` is how SQLite tells an
/// upsert's `ON CONFLICT` from a join's `ON` after a `SELECT`.)
///
/// Each text value sqlx binds is copied by SQLite (and by sqlx before it) and freed after the
/// statement: with the seven shared columns bound per row, binding was about a quarter of the
/// database thread's time under batch load. The per-row parameters are anonymous and come
/// first in the text, so SQLite numbers them 1 to `5 x rows` in order, and sqlx binds them in
/// order without looking their names up; only the seven shared ones are named.
fn push_shared_rows(sql: &mut String, rows: usize) {
    sql.push_str("WITH r(seq, event_id, player_id, value, achieved_at) AS (VALUES ");
    for i in 0..rows {
        sql.push_str(if i == 0 {
            "(?, ?, ?, ?, ?)"
        } else {
            ", (?, ?, ?, ?, ?)"
        });
    }
    let shared = OWN_COLUMNS * rows;
    sql.push_str(
        ") INSERT OR FAIL INTO score_events (seq, game, event_id, player_id, mode, season, scopes, \
         value, achieved_at, received_at, source, status) SELECT seq, ",
    );
    let named = |n: usize| format!("?{}", shared + n);
    sql.push_str(&format!(
        "{}, event_id, player_id, {}, {}, {}, value, achieved_at, {}, {}, {} FROM r WHERE true",
        named(1),
        named(2),
        named(3),
        named(4),
        named(5),
        named(6),
        named(7)
    ));
}

/// ` score_events (columns) VALUES ($1, ..., $12), ...` for `rows` rows.
fn push_event_rows(sql: &mut String, rows: usize) {
    sql.push_str(
        " score_events (seq, game, event_id, player_id, mode, season, scopes, \
         value, achieved_at, received_at, source, status) VALUES ",
    );
    for i in 0..rows {
        if i > 0 {
            sql.push_str(", ");
        }
        let b = i * 12;
        sql.push('(');
        for c in 1..=12 {
            if c > 1 {
                sql.push_str(", ");
            }
            sql.push('$');
            sql.push_str(&(b + c).to_string());
        }
        sql.push(')');
    }
}

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
    Unknown(AppError),
    /// It did not take.
    Failed(AppError),
}

impl Transaction {
    /// Commits; `context` names what was being written.
    pub async fn commit(self, context: &str) -> Result<(), CommitFailed> {
        self.0.commit().await.map_err(|e| {
            let error = db_error(context, &e);
            if outcome_unknown(&e) {
                CommitFailed::Unknown(error)
            } else {
                CommitFailed::Failed(error)
            }
        })
    }

    /// Rolls back; `context` names what was being written.
    pub async fn rollback(self, context: &str) -> Result<(), AppError> {
        self.0.rollback().await.map_err(|e| db_error(context, &e))
    }
}

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
}

/// What a connection is for, which decides its SQLite settings.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Reader,
    Writer,
}

/// SQLite's page cache on the writer's connection, in KiB. The default (2 MB) holds a fraction
/// of the index pages a group of inserts touches, so most of them were read back through
/// `pread` at every group. It is resident memory: 64 MiB is 6.7 bytes per member at 10M
/// members, and it is filled only as the file grows past it.
const WRITER_CACHE_KIB: i64 = 64 * 1024;

/// WAL pages after which a commit checkpoints (SQLite's default is 1,000, 4 MB). A checkpoint
/// copies each page once however many commits changed it, so a larger WAL copies the hot pages
/// (the right edge of `seq`, the inner nodes of every index) fewer times per event; it costs
/// disk, not memory.
const WAL_AUTOCHECKPOINT_PAGES: i64 = 16_384;

/// Maps a database error to the API's: one that says the database cannot be reached or cannot
/// serve now is [`AppError::DatabaseUnavailable`] (503, retried by clients), anything else is
/// internal. Both keep the driver's message, for the log.
pub(crate) fn db_err(context: &'static str) -> impl Fn(sqlx::Error) -> AppError {
    move |e| db_error(context, &e)
}

/// [`db_err`] for one error.
pub(crate) fn db_error(context: &str, e: &sqlx::Error) -> AppError {
    if unavailable(e) {
        AppError::DatabaseUnavailable(format!("{context}: {e}"))
    } else {
        AppError::storage(context, e)
    }
}

/// Whether a statement (a commit) that met this error may have been carried out all the same:
/// the database went away after it may have received it. An error getting a connection from
/// the pool means it was never sent.
pub(crate) fn outcome_unknown(e: &sqlx::Error) -> bool {
    unavailable(e) && !matches!(e, sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed)
}

/// What became of [`Store::insert_events_at_once`].
pub enum AtOnce {
    /// Every event is stored and committed.
    Stored,
    /// Some `(game, event_id)` was stored before; nothing was stored.
    Resubmitted,
    /// The database went away after the statement was sent: stored or not, the log will say.
    Unknown(AppError),
}

/// Whether an error is the database's absence rather than its answer to the statement: the
/// connection broke or could not be had, PostgreSQL is shutting down, starting or full, or
/// SQLite's lock stayed taken past the busy timeout. A statement that met such an error may or
/// may not have been carried out (a commit whose answer was lost); the writer finds out.
fn unavailable(e: &sqlx::Error) -> bool {
    use sqlx::Error::*;
    match e {
        Io(_) | Tls(_) | Protocol(_) | PoolTimedOut | PoolClosed | WorkerCrashed => true,
        Database(db) => db.code().is_some_and(|code| unavailable_code(&code)),
        _ => false,
    }
}

/// Whether a database error code is one of unavailability. PostgreSQL's SQLSTATEs have five
/// characters; SQLite's codes are numbers of at most four digits, their low byte the primary
/// code.
fn unavailable_code(code: &str) -> bool {
    if code.len() == 5 {
        // Connection exceptions, admin or crash shutdown, cannot connect now, too many
        // connections.
        return code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300");
    }
    // SQLITE_BUSY and SQLITE_LOCKED, with their extended codes (BUSY_SNAPSHOT and the rest).
    code.parse::<u32>().is_ok_and(|code| matches!(code & 0xff, 5 | 6))
}

/// Opens a pool of up to `connections` with the settings of its role.
async fn connect(
    options: &AnyConnectOptions,
    backend: Backend,
    connections: u32,
    role: Role,
) -> Result<AnyPool, AppError> {
    AnyPoolOptions::new()
        .max_connections(connections)
        // Every connection is opened here, at start, on the main runtime, and kept: on SQLite
        // each has a worker thread, and a thread inherits the CPU pin of the thread that starts
        // it, which for a connection opened on demand would be a pinned connection thread
        // (`http.rs`). Only a connection that broke is reopened on demand, by whichever
        // thread asks next.
        .min_connections(connections)
        .idle_timeout(None)
        .max_lifetime(None)
        .acquire_timeout(Duration::from_secs(10))
        // The writer's connection is tested as it goes back to the pool, one round trip to it;
        // a second one on every transaction's way out is not worth its wait.
        .test_before_acquire(role == Role::Reader)
        .after_connect(move |conn, _| {
            Box::pin(async move {
                if backend == Backend::Sqlite {
                    // Durability first: WAL with a full fsync at every commit.
                    conn.execute("PRAGMA journal_mode = WAL").await?;
                    conn.execute("PRAGMA synchronous = FULL").await?;
                    conn.execute("PRAGMA busy_timeout = 10000").await?;
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
        .map_err(|e| db_error("cannot connect to the database", &e))
}

impl Store {
    /// Connects and applies pending migrations. A SQLite file is created if missing.
    pub async fn open(url: &str) -> Result<Store, AppError> {
        Store::open_migrated_to(url, i64::MAX).await
    }

    /// Connects and applies the pending migrations numbered up to `last`.
    async fn open_migrated_to(url: &str, last: i64) -> Result<Store, AppError> {
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
        let pool = connect(
            &options,
            backend,
            if backend == Backend::Sqlite { 4 } else { 8 },
            Role::Reader,
        )
        .await?;
        let writer = connect(&options, backend, 1, Role::Writer).await?;
        let store = Store {
            pool,
            writer,
            backend,
        };
        store.migrate_to(last).await?;
        Ok(store)
    }

    /// The database behind the store.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Applies the pending migrations numbered up to `last`.
    async fn migrate_to(&self, last: i64) -> Result<(), AppError> {
        self.pool
            .execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT NOT NULL PRIMARY KEY, \
                 name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
            )
            .await
            .map_err(db_err("cannot create the migrations table"))?;
        for &(version, name, sql) in MIGRATIONS.iter().filter(|m| m.0 <= last) {
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

    /// Whether the database answers.
    pub async fn ping(&self) -> bool {
        sqlx::query("SELECT 1").fetch_one(&self.pool).await.is_ok()
    }

    /// Defines a board, or reports that it exists (identically or not). Rules never change.
    pub async fn define_board(&self, def: &BoardDef) -> Result<Defined, AppError> {
        let mut tx = self.begin_on(&self.pool).await.map_err(db_err("cannot begin"))?;
        let existing = sqlx::query(
            "SELECT game, mode, season, scope, score_mode, value_min, value_max, periods, grace_seconds, timezone \
             FROM boards WHERE game = $1 AND mode = $2 AND season = $3 AND scope = $4",
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
             periods, grace_seconds, timezone) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
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
        .execute(&mut *tx)
        .await
        .map_err(db_err("cannot insert a board"))?;
        tx.commit().await.map_err(db_err("cannot commit a board"))?;
        Ok(Defined::Created)
    }

    /// Every board definition, in a stable order.
    pub async fn boards(&self) -> Result<Vec<BoardDef>, AppError> {
        let rows = sqlx::query(
            "SELECT game, mode, season, scope, score_mode, value_min, value_max, periods, grace_seconds, timezone \
             FROM boards ORDER BY game, mode, season, scope",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(db_err("cannot list boards"))?;
        rows.iter().map(board_from_row).collect()
    }

    /// The next free `seq` (one past the greatest stored).
    pub async fn next_seq(&self) -> Result<i64, AppError> {
        // Two index look-ups: a MAX over a UNION would scan both tables (seconds at 10M events).
        let row = sqlx::query(
            "SELECT COALESCE((SELECT MAX(seq) FROM score_events), 0) AS events, \
             COALESCE((SELECT MAX(seq) FROM actions), 0) AS actions",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(db_err("cannot read the event log"))?;
        let events: i64 = row.try_get("events").map_err(db_err("bad seq"))?;
        let actions: i64 = row.try_get("actions").map_err(db_err("bad seq"))?;
        Ok(events.max(actions) + 1)
    }

    /// Begins a write transaction on the writer's connection (only the writer task calls this).
    ///
    /// On SQLite it begins `IMMEDIATE`, taking the write lock at once (waiting for it up to the
    /// busy timeout): a deferred transaction that reads (a look-up) and then writes is refused
    /// at once, busy timeout or not, when another connection (a checkpoint's part, through the
    /// pool) committed in between.
    pub async fn begin(&self) -> Result<Transaction, AppError> {
        let mut tx = self
            .begin_on(&self.writer)
            .await
            .map_err(db_err("cannot begin a write"))?;
        if self.backend == Backend::Postgres {
            // The writer looks events up by their unique (game, event_id), up to 1,000 ids in
            // one IN list. A prepared statement's generic plan sees the ids as parameters: it
            // cannot hash the list, and before autovacuum has analyzed a growing table it reads
            // every row of the game and compares each with all 1,000 ids (1 to 3 s per group
            // at 67k rows, in the tests). A custom plan sees the ids as constants, so the list
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
    async fn begin_on(&self, pool: &AnyPool) -> Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error> {
        match self.backend {
            Backend::Sqlite => pool.begin_with("BEGIN IMMEDIATE").await,
            Backend::Postgres => pool.begin().await,
        }
    }

    /// The statement as this backend binds it fastest. SQLite looks a `$N` parameter's name up
    /// with a linear scan for every bound value, which makes a 12,000-parameter insert
    /// quadratic; anonymous `?` parameters, bound in order, skip the lookup. Every statement here
    /// names its `$N` once each, in increasing order, so the translation is exact.
    fn positional<'q>(&self, sql: &'q str) -> std::borrow::Cow<'q, str> {
        if self.backend != Backend::Sqlite {
            return std::borrow::Cow::Borrowed(sql);
        }
        let mut out = String::with_capacity(sql.len());
        let mut chars = sql.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
                while chars.peek().is_some_and(char::is_ascii_digit) {
                    chars.next();
                }
                out.push('?');
            } else {
                out.push(c);
            }
        }
        std::borrow::Cow::Owned(out)
    }

    /// The text of a multi-row statement for `rows` rows, as this backend runs it best. Only
    /// the sizes [`statement_sizes`] gives are ever asked for, so each is built once per process
    /// and prepared once per connection: a statement of any other size would be parsed and
    /// planned anew (12,000 parameters take longer to prepare than to run) and would push the
    /// sizes that recur out of the connection's statement cache.
    fn statement(&self, which: Statement, rows: usize) -> &'static str {
        const SIZES: usize = STATEMENT_SIZES.len();
        const FIXED: usize = 6 * SIZES;
        static BUILT: [std::sync::OnceLock<String>; FIXED + 2 * AT_ONCE_ROWS] =
            [const { std::sync::OnceLock::new() }; FIXED + 2 * AT_ONCE_ROWS];
        let backend = usize::from(self.backend == Backend::Postgres);
        let slot = match which {
            Statement::InsertAtOnce => {
                assert!(
                    (1..=AT_ONCE_ROWS).contains(&rows),
                    "a statement of its own holds 1 to {AT_ONCE_ROWS} rows"
                );
                FIXED + backend * AT_ONCE_ROWS + rows - 1
            }
            Statement::FindEvents | Statement::InsertEvents | Statement::InsertShared => {
                let class = STATEMENT_SIZES
                    .iter()
                    .position(|&size| size == rows)
                    .expect("statements are built only for the sizes statement_sizes gives");
                (which as usize * 2 + backend) * SIZES + class
            }
        };
        BUILT[slot].get_or_init(|| {
            let sql = match which {
                Statement::FindEvents => {
                    let ids: Vec<String> = (0..rows).map(|i| format!("${}", i + 2)).collect();
                    format!(
                        "SELECT {EVENT_COLUMNS} FROM score_events WHERE game = $1 AND event_id IN ({})",
                        ids.join(", ")
                    )
                }
                Statement::InsertEvents => {
                    // On SQLite, OR FAIL: the default (ABORT) keeps a statement journal, a copy
                    // of every page the statement changes, to undo the statement alone; a
                    // failure here rolls the whole transaction back anyway. An id already
                    // stored is skipped, not an error: the writer inserts without looking ids
                    // up first and counts the rows stored (see `insert_events`).
                    let mut sql = String::from(match self.backend {
                        Backend::Sqlite => "INSERT OR FAIL INTO",
                        Backend::Postgres => "INSERT INTO",
                    });
                    push_event_rows(&mut sql, rows);
                    sql.push_str(" ON CONFLICT (game, event_id) DO NOTHING");
                    sql
                }
                Statement::InsertShared => {
                    // Named `?NNN` parameters: `positional` below leaves them as they are.
                    let mut sql = String::new();
                    push_shared_rows(&mut sql, rows);
                    sql.push_str(" ON CONFLICT (game, event_id) DO NOTHING");
                    sql
                }
                Statement::InsertAtOnce => {
                    // Its own transaction: a stored id aborts it whole (no statement journal
                    // outside a transaction), and the error says which constraint.
                    let mut sql = String::from("INSERT INTO");
                    push_event_rows(&mut sql, rows);
                    sql
                }
            };
            self.positional(&sql).into_owned()
        })
    }

    /// The stored events of `game` among `event_ids`, inside a transaction.
    pub async fn find_events(
        &self,
        tx: &mut Transaction,
        game: &str,
        event_ids: &[&str],
    ) -> Result<Vec<LoggedEvent>, AppError> {
        let tx = &mut tx.0;
        let mut found = Vec::new();
        for chunk in statement_sizes(event_ids) {
            let sql = self.statement(Statement::FindEvents, chunk.len());
            let mut query = sqlx::query(sql).bind(game);
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

    /// Appends events inside a transaction, many rows per statement, and returns how many were
    /// stored: an event whose `(game, event_id)` is already stored is skipped. So fewer than
    /// `events.len()` means some were stored before, and the caller rolls back.
    pub async fn insert_events(&self, tx: &mut Transaction, events: &[LoggedEvent]) -> Result<u64, AppError> {
        let tx = &mut tx.0;
        let mut chunks = statement_sizes(events);
        let mut next = chunks.next().map(|chunk| self.insert_chunk(chunk));
        let mut stored = 0;
        while let Some(query) = next {
            // The next statement's 12,000 values are bound here while this one runs on the
            // database's side (its first poll hands it over), not after.
            let (done, following) = tokio::join!(query.execute(&mut **tx), async {
                chunks.next().map(|chunk| self.insert_chunk(chunk))
            });
            stored += done.map_err(db_err("cannot append events"))?.rows_affected();
            next = following;
        }
        Ok(stored)
    }

    /// Appends up to [`AT_ONCE_ROWS`] events as one statement in a transaction of its own: one
    /// round trip to the database instead of three (begin, insert, commit). The statement is
    /// its own commit, so an error after it was sent leaves its outcome unknown.
    pub async fn insert_events_at_once(&self, events: &[LoggedEvent]) -> Result<AtOnce, AppError> {
        match self
            .insert_query(Statement::InsertAtOnce, events)
            .execute(&self.writer)
            .await
        {
            Ok(_) => Ok(AtOnce::Stored),
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Ok(AtOnce::Resubmitted),
            Err(e) if outcome_unknown(&e) => Ok(AtOnce::Unknown(db_error("cannot append events", &e))),
            Err(e) => Err(db_error("cannot append events", &e)),
        }
    }

    /// An insert of `chunk` inside a transaction, its values bound: on SQLite, when its rows
    /// share the columns [`push_shared_rows`] binds once, those are bound once. O(rows).
    fn insert_chunk<'q>(
        &self,
        chunk: &'q [LoggedEvent],
    ) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
        let [first, rest @ ..] = chunk else {
            return self.insert_query(Statement::InsertEvents, chunk);
        };
        let shared = |e: &LoggedEvent| {
            e.game == first.game
                && e.mode == first.mode
                && e.season == first.season
                && e.scopes == first.scopes
                && e.received_at == first.received_at
                && e.source == first.source
                && e.status == first.status
        };
        if self.backend != Backend::Sqlite || !rest.iter().all(shared) {
            return self.insert_query(Statement::InsertEvents, chunk);
        }
        let mut query = sqlx::query(self.statement(Statement::InsertShared, chunk.len()));
        for e in chunk {
            query = query
                .bind(e.seq)
                .bind(e.event_id.as_str())
                .bind(e.player_id.as_str())
                .bind(e.value)
                .bind(e.achieved_at);
        }
        query
            .bind(first.game.as_str())
            .bind(first.mode.as_str())
            .bind(first.season.as_str())
            .bind(first.scopes.join(","))
            .bind(first.received_at)
            .bind(first.source.as_str())
            .bind(first.status.as_str())
    }

    /// An insert of `chunk`, its values bound.
    fn insert_query<'q>(
        &self,
        which: Statement,
        chunk: &'q [LoggedEvent],
    ) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
        let mut query = sqlx::query(self.statement(which, chunk.len()));
        for e in chunk {
            query = query
                .bind(e.seq)
                .bind(e.game.as_str())
                .bind(e.event_id.as_str())
                .bind(e.player_id.as_str())
                .bind(e.mode.as_str())
                .bind(e.season.as_str())
                .bind(e.scopes.join(","))
                .bind(e.value)
                .bind(e.achieved_at)
                .bind(e.received_at)
                .bind(e.source.as_str())
                .bind(e.status.as_str());
        }
        query
    }

    /// Up to `limit` events with `seq > after`, in `seq` order: the event log, page by page.
    ///
    /// The database packs the page into one row, a JSON array of one array per event, read
    /// here in one parse. Row by row, the driver's cost per row (a hand-off between threads, a
    /// copy of every value, a row and its columns built anew) was most of a replay's time:
    /// 68k events/s, 44 s to start on 3M events without a checkpoint.
    pub async fn events_after(&self, after: i64, limit: i64) -> Result<Vec<LoggedEvent>, AppError> {
        let sql = self.packed(
            EVENT_COLUMNS,
            "seq",
            &format!("SELECT {EVENT_COLUMNS} FROM score_events WHERE seq > $1 ORDER BY seq LIMIT $2"),
        );
        let row = sqlx::query(&sql)
            .bind(after)
            .bind(limit)
            .fetch_one(&self.pool)
            .await
            .map_err(db_err("cannot read the event log"))?;
        let page: String = row.try_get("page").map_err(db_err("bad page of the event log"))?;
        events_from_json(&page)
    }

    /// A statement of one row, `page`: the rows `select` gives, packed as a JSON array with
    /// an array of `columns` per row, in `order`. A driver reads one row, not thousands.
    fn packed(&self, columns: &str, order: &str, select: &str) -> String {
        match self.backend {
            Backend::Sqlite => format!(
                "SELECT json_group_array(json_array({columns}) ORDER BY {order}) AS page FROM ({select})"
            ),
            Backend::Postgres => format!(
                "SELECT COALESCE(json_agg(json_build_array({columns}) ORDER BY {order}), \
                 '[]'::json)::text AS page FROM ({select}) AS page"
            ),
        }
    }

    /// Replaces a player's friend list in `game`.
    pub async fn set_friends(&self, game: &str, player: &str, friends: &[String]) -> Result<(), AppError> {
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
    pub async fn friends(&self, game: &str, player: &str) -> Result<Vec<String>, AppError> {
        let rows =
            sqlx::query("SELECT friend_id FROM friends WHERE game = $1 AND player_id = $2 ORDER BY position")
                .bind(game)
                .bind(player)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err("cannot read friends"))?;
        rows.iter()
            .map(|r| r.try_get("friend_id").map_err(db_err("bad friend row")))
            .collect()
    }

    /// One stored event.
    pub async fn find_event(&self, game: &str, event_id: &str) -> Result<Option<LoggedEvent>, AppError> {
        let row = sqlx::query(&format!(
            "SELECT {EVENT_COLUMNS} FROM score_events WHERE game = $1 AND event_id = $2"
        ))
        .bind(game)
        .bind(event_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err("cannot read an event"))?;
        row.as_ref().map(event_from_row).transpose()
    }

    /// A player's events in one (game, mode, season), committed before `before_seq`, in order:
    /// looked up on one page of the player index per sealed run ([`player_index`]), plus a scan
    /// of the unsealed tail of the log. The runs and their pages are read first, in one
    /// statement; a run sealed after that covers seqs the tail scan still finds, so nothing is
    /// missed or counted twice. The log rows the pages point to are read with the player's
    /// fields in the condition, which drops any other player's whose key is the same.
    pub async fn player_events(
        &self,
        board: &BoardId,
        player: &str,
        before_seq: i64,
    ) -> Result<Vec<LoggedEvent>, AppError> {
        let key = player_index::player_key(&board.game, player, &board.mode, &board.season);
        // Per run, the page whose first key is the greatest not above the player's: the only
        // one that can hold it (a key's entries never straddle pages).
        let runs = sqlx::query(
            "SELECT r.start_seq AS start_seq, r.end_seq AS end_seq, (SELECT p.entries FROM \
             player_pages p WHERE p.run = r.start_seq AND p.first_key <= $1 ORDER BY p.first_key \
             DESC LIMIT 1) AS entries FROM log_runs r ORDER BY r.start_seq",
        )
        .bind(key)
        .fetch_all(&self.pool)
        .await
        .map_err(db_err("cannot read the player index"))?;
        let mut sealed_below = 0i64;
        let mut seqs = Vec::new();
        for row in &runs {
            let start: i64 = row.try_get("start_seq").map_err(db_err("bad run"))?;
            let end: i64 = row.try_get("end_seq").map_err(db_err("bad run"))?;
            sealed_below = sealed_below.max(end);
            let page: Option<Vec<u8>> = row.try_get("entries").map_err(db_err("bad page"))?;
            if let Some(page) = page.filter(|_| start < before_seq) {
                let found = player_index::seqs_on_page(start, &page, key).map_err(AppError::Internal)?;
                seqs.extend(found.into_iter().filter(|&seq| seq < before_seq));
            }
        }
        let mut events = self
            .fetch_events(
                &format!(
                    "SELECT {EVENT_COLUMNS} FROM score_events WHERE seq >= $1 AND seq < $2 AND \
                     game = $3 AND player_id = $4 AND mode = $5 AND season = $6"
                ),
                [sealed_below, before_seq],
                board,
                player,
            )
            .await?;
        // Seqs read from the index are integers, so writing them into the SQL is safe; a
        // statement of its own size is not kept in the connection's statement cache.
        for chunk in seqs.chunks(500) {
            let list: Vec<String> = chunk.iter().map(i64::to_string).collect();
            let sql = format!(
                "SELECT {EVENT_COLUMNS} FROM score_events WHERE seq IN ({}) AND seq >= $1 AND \
                 seq < $2 AND game = $3 AND player_id = $4 AND mode = $5 AND season = $6",
                list.join(", ")
            );
            events.extend(self.fetch_events(&sql, [0, before_seq], board, player).await?);
        }
        events.sort_unstable_by_key(|e| e.seq);
        Ok(events)
    }

    /// The events `sql` selects, its parameters being a seq range, then the board's game, the
    /// player and the board's mode and season.
    async fn fetch_events(
        &self,
        sql: &str,
        [from, before]: [i64; 2],
        board: &BoardId,
        player: &str,
    ) -> Result<Vec<LoggedEvent>, AppError> {
        let rows = sqlx::query(sql)
            .persistent(false)
            .bind(from)
            .bind(before)
            .bind(&board.game)
            .bind(player)
            .bind(&board.mode)
            .bind(&board.season)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err("cannot read a player's events"))?;
        rows.iter().map(event_from_row).collect()
    }

    /// Frees the writer connection's page cache (SQLite; PostgreSQL caches in its own
    /// process). The pages are read back as the next writes need them.
    pub async fn release_memory(&self) -> Result<(), AppError> {
        if self.backend == Backend::Sqlite {
            sqlx::query("PRAGMA shrink_memory")
                .execute(&self.writer)
                .await
                .map_err(db_err("cannot shrink the page cache"))?;
        }
        Ok(())
    }

    /// Where the unsealed tail of the log starts: one past the last sealed run.
    pub async fn sealed_below(&self) -> Result<i64, AppError> {
        let row = sqlx::query("SELECT COALESCE(MAX(end_seq), 0) AS sealed FROM log_runs")
            .fetch_one(&self.pool)
            .await
            .map_err(db_err("cannot read the log's runs"))?;
        row.try_get("sealed").map_err(db_err("bad run"))
    }

    /// Seals the run `start <= seq < end` inside the writer's transaction: `entries`, the
    /// `(player key, seq)` of every event in it, go into `player_pages` sorted and cut into
    /// pages ([`player_index::pages`]): about 128 rows for 65,536 events.
    pub async fn seal_run(
        &self,
        tx: &mut Transaction,
        start: i64,
        end: i64,
        entries: Vec<(i64, i64)>,
    ) -> Result<(), AppError> {
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
    ) -> Result<(), AppError> {
        for (first_key, bytes) in player_index::pages(run, entries) {
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
    pub async fn check_player_index(&self) -> Result<(usize, Vec<i64>), AppError> {
        let mut conn = self
            .pool
            .acquire()
            .await
            .map_err(db_err("cannot check the player index"))?;
        let runs = Store::sealed_runs(&mut conn).await?;
        let mut differ = Vec::new();
        for &(start, end) in &runs {
            let expected = player_index::pages(start, self.run_keys(&mut conn, start, end).await?);
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
    pub async fn tail_keys(&self, sealed_below: i64) -> Result<Vec<(i64, i64)>, AppError> {
        let mut conn = self
            .pool
            .acquire()
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
    ) -> Result<Vec<(i64, i64)>, AppError> {
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
            let rows: Vec<(i64, String, String, String, String)> = serde_json::from_str(&page)
                .map_err(|e| AppError::Internal(format!("a page of the event log cannot be read: {e}")))?;
            let Some(last) = rows.last().map(|r| r.0) else {
                break;
            };
            let full = rows.len() as i64 == PAGE;
            keys.extend(rows.into_iter().map(|(seq, game, player, mode, season)| {
                (player_index::player_key(&game, &player, &mode, &season), seq)
            }));
            if !full {
                break;
            }
            from = last + 1;
        }
        Ok(keys)
    }

    /// The sealed runs of the log, `(start_seq, end_seq)` in order.
    async fn sealed_runs(conn: &mut sqlx::AnyConnection) -> Result<Vec<(i64, i64)>, AppError> {
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
    async fn page_sealed_runs(&self, tx: &mut sqlx::Transaction<'static, sqlx::Any>) -> Result<(), AppError> {
        let runs = Store::sealed_runs(tx).await?;
        let started = std::time::Instant::now();
        let mut paged = 0;
        for &(start, end) in &runs {
            if paged == 0 && end - start > 1 {
                // Reading the log is the slow part (8.0 s for 2.95M events), so the operator
                // hears why this start waits.
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

    /// The events of a game waiting for a late decision, in order.
    pub async fn late_events(&self, game: &str) -> Result<Vec<LoggedEvent>, AppError> {
        let rows = sqlx::query(&format!(
            "SELECT {EVENT_COLUMNS} FROM score_events WHERE game = $1 AND status = 'LATE' ORDER BY seq"
        ))
        .bind(game)
        .fetch_all(&self.pool)
        .await
        .map_err(db_err("cannot list late events"))?;
        rows.iter().map(event_from_row).collect()
    }

    /// Whether a season has any stored event.
    pub async fn season_has_events(&self, game: &str, season: &str) -> Result<bool, AppError> {
        let row = sqlx::query("SELECT 1 AS n FROM event_seasons WHERE game = $1 AND season = $2")
            .bind(game)
            .bind(season)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err("cannot look for events"))?;
        Ok(row.is_some())
    }

    /// The seasons with stored events, by game.
    pub async fn event_seasons(&self) -> Result<HashMap<String, HashSet<String>>, AppError> {
        let rows = sqlx::query("SELECT game, season FROM event_seasons")
            .fetch_all(&self.pool)
            .await
            .map_err(db_err("cannot read the seasons with events"))?;
        let mut seasons: HashMap<String, HashSet<String>> = HashMap::new();
        for row in &rows {
            let game: String = row.try_get("game").map_err(db_err("bad season row"))?;
            let season: String = row.try_get("season").map_err(db_err("bad season row"))?;
            seasons.entry(game).or_default().insert(season);
        }
        Ok(seasons)
    }

    /// Records, inside the transaction that stores their first events, seasons that have
    /// events now. A season recorded already is left as it is.
    pub async fn add_event_seasons(
        &self,
        tx: &mut Transaction,
        seasons: &[(String, String)],
    ) -> Result<(), AppError> {
        let tx = &mut tx.0;
        for (game, season) in seasons {
            sqlx::query(
                "INSERT INTO event_seasons (game, season) VALUES ($1, $2) \
                 ON CONFLICT (game, season) DO NOTHING",
            )
            .bind(game.as_str())
            .bind(season.as_str())
            .execute(&mut **tx)
            .await
            .map_err(db_err("cannot record a season's events"))?;
        }
        Ok(())
    }

    /// Sets an event's status inside a transaction.
    pub async fn set_event_status(
        tx: &mut Transaction,
        game: &str,
        event_id: &str,
        status: EventStatus,
    ) -> Result<(), AppError> {
        let tx = &mut tx.0;
        sqlx::query("UPDATE score_events SET status = $1 WHERE game = $2 AND event_id = $3")
            .bind(status.as_str())
            .bind(game)
            .bind(event_id)
            .execute(&mut **tx)
            .await
            .map_err(db_err("cannot update an event's status"))?;
        Ok(())
    }

    /// Appends an action inside a transaction.
    pub async fn insert_action(tx: &mut Transaction, a: &ActionRow) -> Result<(), AppError> {
        let tx = &mut tx.0;
        sqlx::query(
            "INSERT INTO actions (seq, game, kind, action_id, body, result, actor, reason, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(a.seq)
        .bind(a.game.as_str())
        .bind(a.kind.as_str())
        .bind(a.action_id.as_deref())
        .bind(a.body.as_str())
        .bind(a.result.as_str())
        .bind(a.actor.as_str())
        .bind(a.reason.as_str())
        .bind(a.created_at)
        .execute(&mut **tx)
        .await
        .map_err(db_err("cannot append an action"))?;
        Ok(())
    }

    /// Records what an action changed, once it was applied.
    pub async fn set_action_result(&self, seq: i64, result: &str) -> Result<(), AppError> {
        sqlx::query("UPDATE actions SET result = $1 WHERE seq = $2")
            .bind(result)
            .bind(seq)
            .execute(&self.pool)
            .await
            .map_err(db_err("cannot record an action's result"))?;
        Ok(())
    }

    /// The action a game's client id names, if any.
    pub async fn find_action(&self, game: &str, action_id: &str) -> Result<Option<ActionRow>, AppError> {
        let row = sqlx::query(&format!(
            "SELECT {ACTION_COLUMNS} FROM actions WHERE game = $1 AND action_id = $2"
        ))
        .bind(game)
        .bind(action_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err("cannot read an action"))?;
        row.as_ref().map(action_from_row).transpose()
    }

    /// Every action of one game, in commit order.
    pub async fn actions(&self, game: &str) -> Result<Vec<ActionRow>, AppError> {
        let rows = sqlx::query(&format!(
            "SELECT {ACTION_COLUMNS} FROM actions WHERE game = $1 ORDER BY seq"
        ))
        .bind(game)
        .fetch_all(&self.pool)
        .await
        .map_err(db_err("cannot read the action log"))?;
        rows.iter().map(action_from_row).collect()
    }

    /// Stores a result snapshot inside a transaction.
    pub async fn insert_result(tx: &mut Transaction, r: &ResultRow) -> Result<(), AppError> {
        let tx = &mut tx.0;
        sqlx::query(
            "INSERT INTO season_results (game, mode, season, scope, correction, board_version, digest, \
             finalized_at, action_seq, entries) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(r.board.game.as_str())
        .bind(r.board.mode.as_str())
        .bind(r.board.season.as_str())
        .bind(r.board.scope.as_str())
        .bind(r.correction)
        .bind(r.board_version)
        .bind(r.digest.as_str())
        .bind(r.finalized_at)
        .bind(r.action_seq)
        .bind(r.entries.as_str())
        .execute(&mut **tx)
        .await
        .map_err(db_err("cannot store a result"))?;
        Ok(())
    }

    /// The results of a board: every correction, in order.
    pub async fn results(&self, board: &BoardId) -> Result<Vec<ResultRow>, AppError> {
        let rows = sqlx::query(
            "SELECT correction, board_version, digest, finalized_at, action_seq, entries FROM season_results \
             WHERE game = $1 AND mode = $2 AND season = $3 AND scope = $4 ORDER BY correction",
        )
        .bind(&board.game)
        .bind(&board.mode)
        .bind(&board.season)
        .bind(&board.scope)
        .fetch_all(&self.pool)
        .await
        .map_err(db_err("cannot read results"))?;
        let bad = db_err("bad result row");
        rows.iter()
            .map(|row| {
                Ok(ResultRow {
                    board: board.clone(),
                    correction: row.try_get("correction").map_err(&bad)?,
                    board_version: row.try_get("board_version").map_err(&bad)?,
                    digest: row.try_get("digest").map_err(&bad)?,
                    finalized_at: row.try_get("finalized_at").map_err(&bad)?,
                    action_seq: row.try_get("action_seq").map_err(&bad)?,
                    entries: row.try_get("entries").map_err(&bad)?,
                })
            })
            .collect()
    }

    /// Stores (or replaces) the snapshot of a closed period leaving memory.
    pub async fn save_period_snapshot(
        &self,
        board: &BoardId,
        period_key: &str,
        board_version: i64,
        entries: &str,
    ) -> Result<(), AppError> {
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
    ) -> Result<Option<(i64, String)>, AppError> {
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

    /// Deletes whatever is stored of a checkpoint at `seq`: the parts a stop left behind
    /// while storing one, before a new one at that `seq` is stored.
    pub async fn discard_checkpoint(&self, seq: i64) -> Result<(), AppError> {
        sqlx::query("DELETE FROM checkpoint_parts WHERE seq = $1")
            .bind(seq)
            .execute(&self.pool)
            .await
            .map_err(db_err("cannot clear a checkpoint"))?;
        Ok(())
    }

    /// Stores part `part` (1..) of a checkpoint at `seq`, in a transaction of its own. Until
    /// [`Store::finish_checkpoint`] stores its manifest, no start reads it: the newest checkpoint
    /// with a manifest is the one in use.
    pub async fn put_checkpoint_part(&self, seq: i64, part: i64, body: Vec<u8>) -> Result<(), AppError> {
        let sql = self.positional("INSERT INTO checkpoint_parts (seq, part, body) VALUES ($1, $2, $3)");
        sqlx::query(&sql)
            .bind(seq)
            .bind(part)
            .bind(body)
            .execute(&self.pool)
            .await
            .map_err(db_err("cannot store a checkpoint part"))?;
        Ok(())
    }

    /// Completes the checkpoint at `seq`, whose parts are stored: in one transaction its
    /// manifest becomes part 0 and every other checkpoint loses its own, which makes this one
    /// the one in use. The other checkpoints' parts are left for
    /// [`Store::delete_checkpoint_part`], a part at a time.
    pub async fn finish_checkpoint(&self, seq: i64, manifest: Vec<u8>) -> Result<(), AppError> {
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
    pub async fn other_checkpoint_parts(&self, seq: i64) -> Result<Vec<(i64, i64)>, AppError> {
        let rows = sqlx::query("SELECT seq, part FROM checkpoint_parts WHERE seq <> $1 ORDER BY seq, part")
            .bind(seq)
            .fetch_all(&self.pool)
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
    pub async fn delete_checkpoint_part(&self, seq: i64, part: i64) -> Result<(), AppError> {
        sqlx::query("DELETE FROM checkpoint_parts WHERE seq = $1 AND part = $2")
            .bind(seq)
            .bind(part)
            .execute(&self.pool)
            .await
            .map_err(db_err("cannot delete an old checkpoint part"))?;
        Ok(())
    }

    /// The checkpoint's `seq` and number of parts (the manifest included), if there is one.
    pub async fn checkpoint_head(&self) -> Result<Option<(i64, i64)>, AppError> {
        // Parts without a manifest are a checkpoint a stop interrupted: not one.
        let rows = sqlx::query(
            "SELECT seq, COUNT(*) AS parts, MAX(part) AS last FROM checkpoint_parts \
             WHERE seq = (SELECT MAX(seq) FROM checkpoint_parts WHERE part = 0) GROUP BY seq",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(db_err("cannot read the checkpoint"))?;
        let bad = db_err("bad checkpoint row");
        let [row] = &rows[..] else {
            return match rows.len() {
                0 => Ok(None),
                n => Err(AppError::Internal(format!("{n} checkpoints are stored, not one"))),
            };
        };
        let seq: i64 = row.try_get("seq").map_err(&bad)?;
        let parts: i64 = row.try_get("parts").map_err(&bad)?;
        let last: i64 = row.try_get("last").map_err(&bad)?;
        if last != parts - 1 {
            return Err(AppError::Internal(format!(
                "the checkpoint at seq {seq} has {parts} parts numbered up to {last}"
            )));
        }
        Ok(Some((seq, parts)))
    }

    /// One part of the checkpoint at `seq` (part 0 is the manifest). One row at a time, so
    /// reading a large checkpoint holds one part beside what it is copied into.
    pub async fn checkpoint_part(&self, seq: i64, part: i64) -> Result<Vec<u8>, AppError> {
        let row = sqlx::query("SELECT body FROM checkpoint_parts WHERE seq = $1 AND part = $2")
            .bind(seq)
            .bind(part)
            .fetch_one(&self.pool)
            .await
            .map_err(db_err("cannot read a checkpoint part"))?;
        row.try_get("body").map_err(db_err("bad checkpoint part"))
    }

    /// The checkpoint's `seq` and all of its parts (the manifest first), if there is one.
    pub async fn checkpoint(&self) -> Result<Option<(i64, Vec<Vec<u8>>)>, AppError> {
        let Some((seq, count)) = self.checkpoint_head().await? else {
            return Ok(None);
        };
        let mut parts = Vec::with_capacity(count as usize);
        for part in 0..count {
            parts.push(self.checkpoint_part(seq, part).await?);
        }
        Ok(Some((seq, parts)))
    }

    /// Every action with `seq > after`, in `seq` order.
    pub async fn actions_after(&self, after: i64) -> Result<Vec<ActionRow>, AppError> {
        let rows = sqlx::query(&format!(
            "SELECT {ACTION_COLUMNS} FROM actions WHERE seq > $1 ORDER BY seq"
        ))
        .bind(after)
        .fetch_all(&self.pool)
        .await
        .map_err(db_err("cannot read the action log"))?;
        rows.iter().map(action_from_row).collect()
    }

    /// Closes the pool.
    pub async fn close(&self) {
        self.writer.close().await;
        self.pool.close().await;
    }
}

const EVENT_COLUMNS: &str =
    "seq, game, event_id, player_id, mode, season, scopes, value, achieved_at, received_at, source, status";

const ACTION_COLUMNS: &str = "seq, game, kind, action_id, body, result, actor, reason, created_at";

fn action_from_row(row: &AnyRow) -> Result<ActionRow, AppError> {
    let bad = db_err("bad action row");
    Ok(ActionRow {
        seq: row.try_get("seq").map_err(&bad)?,
        game: row.try_get("game").map_err(&bad)?,
        kind: row.try_get("kind").map_err(&bad)?,
        action_id: row.try_get("action_id").map_err(&bad)?,
        body: row.try_get("body").map_err(&bad)?,
        result: row.try_get("result").map_err(&bad)?,
        actor: row.try_get("actor").map_err(&bad)?,
        reason: row.try_get("reason").map_err(&bad)?,
        created_at: row.try_get("created_at").map_err(&bad)?,
    })
}

fn event_from_row(row: &AnyRow) -> Result<LoggedEvent, AppError> {
    let bad = db_err("bad event row");
    let seq = row.try_get("seq").map_err(&bad)?;
    let scopes: String = row.try_get("scopes").map_err(&bad)?;
    let status: String = row.try_get("status").map_err(&bad)?;
    Ok(LoggedEvent {
        seq,
        status: status_from_text(seq, &status)?,
        event: NewEvent {
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
        },
    })
}

/// The status of the event at `seq` from its stored text.
fn status_from_text(seq: i64, text: &str) -> Result<EventStatus, AppError> {
    EventStatus::parse(text)
        .ok_or_else(|| AppError::Internal(format!("the event at seq {seq} has an unknown status {text:?}")))
}

/// The events of a page packed by [`Store::events_after`].
fn events_from_json(page: &str) -> Result<Vec<LoggedEvent>, AppError> {
    let events: Vec<PackedEvent> = serde_json::from_str(page)
        .map_err(|e| AppError::Internal(format!("a page of the event log cannot be read: {e}")))?;
    Ok(events.into_iter().map(|e| e.0).collect())
}

/// One event of a packed page: an array of [`EVENT_COLUMNS`], read in their order with no map
/// of names in between (a replay reads every event of the log this way).
struct PackedEvent(LoggedEvent);

impl<'de> serde::Deserialize<'de> for PackedEvent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Columns;

        impl<'de> serde::de::Visitor<'de> for Columns {
            type Value = PackedEvent;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array of the event log's columns")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut columns: A,
            ) -> Result<PackedEvent, A::Error> {
                use serde::de::Error;
                let seq: i64 = column(&mut columns, 0)?;
                let game = column(&mut columns, 1)?;
                let event_id = column(&mut columns, 2)?;
                let player_id = column(&mut columns, 3)?;
                let mode = column(&mut columns, 4)?;
                let season = column(&mut columns, 5)?;
                let scopes: std::borrow::Cow<'de, str> = column(&mut columns, 6)?;
                let value = column(&mut columns, 7)?;
                let achieved_at = column(&mut columns, 8)?;
                let received_at = column(&mut columns, 9)?;
                let source = column(&mut columns, 10)?;
                let status: std::borrow::Cow<'de, str> = column(&mut columns, 11)?;
                let status = EventStatus::parse(&status).ok_or_else(|| {
                    A::Error::custom(format!("the event at seq {seq} has an unknown status {status:?}"))
                })?;
                Ok(PackedEvent(LoggedEvent {
                    seq,
                    status,
                    event: NewEvent {
                        game,
                        event_id,
                        player_id,
                        mode,
                        season,
                        scopes: scopes.split(',').map(str::to_string).collect(),
                        value,
                        achieved_at,
                        received_at,
                        source,
                    },
                }))
            }
        }

        deserializer.deserialize_seq(Columns)
    }
}

/// The `index`th column of a packed event.
fn column<'de, T: serde::Deserialize<'de>, A: serde::de::SeqAccess<'de>>(
    columns: &mut A,
    index: usize,
) -> Result<T, A::Error> {
    columns
        .next_element()?
        .ok_or_else(|| serde::de::Error::invalid_length(index, &"the event log's 12 columns"))
}

/// The scopes of a stored event from their comma-separated column.
fn board_from_row(row: &AnyRow) -> Result<BoardDef, AppError> {
    let bad = db_err("bad board row");
    let periods: String = row.try_get("periods").map_err(&bad)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: i64, event_id: &str, player: &str) -> LoggedEvent {
        LoggedEvent {
            seq,
            status: EventStatus::Applied,
            event: NewEvent {
                game: "g".into(),
                event_id: event_id.into(),
                player_id: player.into(),
                mode: "m".into(),
                season: "s".into(),
                scopes: vec!["global".into()],
                value: seq * 10,
                achieved_at: 1_000 + seq,
                received_at: 2_000 + seq,
                source: "test".into(),
            },
        }
    }

    /// A packed page reads into logged events column by column, and a status the log does not
    /// know is an error that names the event's seq.
    #[test]
    fn a_packed_page_is_read_by_column_and_an_unknown_status_names_its_seq() {
        let page = r#"[[7,"g","e7","p","m","s","global,region:eu",70,1007,2007,"test","LATE"]]"#;
        let mut expected = event(7, "e7", "p");
        expected.status = EventStatus::Late;
        expected.event.scopes = vec!["global".into(), "region:eu".into()];
        assert_eq!(events_from_json(page).unwrap(), [expected]);
        let unknown = r#"[[8,"g","e8","p","m","s","global",80,1008,2008,"test","SOON"]]"#;
        let error = events_from_json(unknown).unwrap_err().to_string();
        assert!(error.contains("seq 8") && error.contains("SOON"), "{error}");
        let short = r#"[[9,"g","e9","p","m","s","global",90,1009,2009,"test"]]"#;
        assert!(events_from_json(short).is_err());
    }

    #[test]
    fn statements_come_only_in_the_sizes_prepared_once() {
        let rows: Vec<u32> = (0..2_037).collect();
        let sizes: Vec<usize> = statement_sizes(&rows).map(<[u32]>::len).collect();
        assert_eq!(sizes, [1_000, 1_000, 32, 4, 1]);
        assert!(sizes.iter().all(|size| STATEMENT_SIZES.contains(size)));
        assert_eq!(
            statement_sizes(&rows).flatten().copied().collect::<Vec<_>>(),
            rows
        );
        assert_eq!(statement_sizes::<u32>(&[]).count(), 0);
    }

    /// The database's absence is told apart from its answers: broken or unobtainable
    /// connections, PostgreSQL's connection and shutdown states and SQLite's lock are
    /// unavailability (503, and of unknown outcome for a commit); a constraint is not.
    #[test]
    fn unavailability_is_told_apart_from_the_databases_answers() {
        let io = std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "expected to read 5 bytes, got 0 bytes at EOF",
        );
        for e in [
            sqlx::Error::Io(io),
            sqlx::Error::PoolTimedOut,
            sqlx::Error::PoolClosed,
            sqlx::Error::Protocol("unexpected message".into()),
            sqlx::Error::WorkerCrashed,
        ] {
            assert!(
                matches!(db_error("x", &e), AppError::DatabaseUnavailable(_)),
                "{e}"
            );
        }
        // A statement that never got a connection was never sent.
        assert!(!outcome_unknown(&sqlx::Error::PoolTimedOut));
        assert!(outcome_unknown(&sqlx::Error::Protocol(
            "unexpected message".into()
        )));
        assert!(matches!(
            db_error("x", &sqlx::Error::RowNotFound),
            AppError::Internal(_)
        ));
        // PostgreSQL: connection failure, admin shutdown, starting up, too many connections;
        // SQLite: BUSY, BUSY_SNAPSHOT, LOCKED, LOCKED_SHAREDCACHE.
        for code in [
            "08006", "08001", "57P01", "57P03", "53300", "5", "517", "6", "262",
        ] {
            assert!(unavailable_code(code), "{code}");
        }
        // Unique violations (PostgreSQL, SQLite's UNIQUE and PRIMARY KEY), SQLite's CONSTRAINT
        // and IOERR, a serialization failure.
        for code in ["23505", "2067", "1555", "19", "10", "40001"] {
            assert!(!unavailable_code(code), "{code}");
        }
    }

    /// On SQLite the writer's transaction holds the write lock from its begin: a write through
    /// the pool (a checkpoint's part) between its look-up and its insert is held off (refused
    /// here, where it may not wait), rather than committing in between and making the insert
    /// fail at once with BUSY_SNAPSHOT whatever the busy timeout.
    #[tokio::test]
    async fn the_writers_sqlite_transaction_holds_the_write_lock_from_its_begin() {
        let dir = std::env::temp_dir().join(format!(
            "standings-immediate-{}-{}",
            std::process::id(),
            crate::clock::now_ms()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let store = Store::open(&format!("sqlite://{}/s.db", dir.display()))
            .await
            .unwrap();
        let mut tx = store.begin().await.unwrap();
        assert!(store.find_events(&mut tx, "g", &["e1"]).await.unwrap().is_empty());
        let mut other = store.pool.acquire().await.unwrap();
        other.execute("PRAGMA busy_timeout = 0").await.unwrap();
        let part = other
            .execute("INSERT INTO checkpoint_parts (seq, part, body) VALUES (1, 1, x'00')")
            .await
            .expect_err("the pool wrote while the writer's transaction was open");
        assert!(
            matches!(db_error("part", &part), AppError::DatabaseUnavailable(_)),
            "{part}"
        );
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

    /// A SQLite database in a fresh folder, migrated up to `last` only, holding `log`: what
    /// an older version left behind. Returns the folder and the database's URL.
    async fn written_before_migration(last: i64, log: &[LoggedEvent]) -> (std::path::PathBuf, String) {
        let dir = std::env::temp_dir().join(format!(
            "standings-migrate-{last}-{}-{}",
            std::process::id(),
            crate::clock::now_ms()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("sqlite://{}/s.db", dir.display());
        write_before_migration(&url, last, log).await;
        (dir, url)
    }

    /// Rows are stored as given whether a statement binds their shared columns once (a chunk
    /// whose rows agree on them) or per row (a chunk whose rows differ in any one of them), and
    /// a stored id is skipped either way.
    #[tokio::test]
    async fn rows_are_stored_as_given_with_their_shared_columns_bound_once_or_per_row() {
        let (dir, url) = written_before_migration(PAGING_MIGRATION, &[]).await;
        let store = Store::open(&url).await.unwrap();
        let shared = |seq: i64| {
            let mut e = event(seq, &format!("e{seq}"), &format!("p-{}", seq % 7));
            e.event.received_at = 5_000;
            e
        };
        // 1,000 rows that agree (one statement of shared rows), then 64 in which each shared
        // column differs once from the rest, so each of those chunks binds per row.
        let mut log: Vec<LoggedEvent> = (1..=1_000).map(shared).collect();
        for (i, seq) in (1_001..=1_064).enumerate() {
            let mut e = shared(seq);
            match i % 8 {
                0 => e.event.game = "g2".into(),
                1 => e.event.mode = "m2".into(),
                2 => e.event.season = "s2".into(),
                3 => e.event.scopes = vec!["global".into(), "region:eu".into()],
                4 => e.event.received_at += 1,
                5 => e.event.source = "other".into(),
                6 => e.status = EventStatus::Late,
                _ => {}
            }
            log.push(e);
        }
        let mut tx = store.begin().await.unwrap();
        assert_eq!(store.insert_events(&mut tx, &log).await.unwrap(), 1_064);
        tx.commit("a test").await.unwrap();
        assert_eq!(store.events_after(0, 10_000).await.unwrap(), log);
        // Again, with one new row among them: only it is stored.
        let mut again: Vec<LoggedEvent> = log[..999].to_vec();
        again.push(shared(2_000));
        let mut tx = store.begin().await.unwrap();
        assert_eq!(store.insert_events(&mut tx, &again).await.unwrap(), 1);
        tx.rollback("a test").await.unwrap();
        store.close().await;
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Migrates the database at `url` up to `last` only and stores `log` in it.
    async fn write_before_migration(url: &str, last: i64, log: &[LoggedEvent]) {
        let old = Store::open_migrated_to(url, last).await.unwrap();
        let mut tx = old.begin().await.unwrap();
        old.insert_events(&mut tx, log).await.unwrap();
        tx.commit("a test").await.unwrap();
        old.close().await;
    }

    /// Runs `sql` on the PostgreSQL the tests use (`STANDINGS_TEST_POSTGRES`, as in
    /// `tests/common`).
    async fn postgres_admin(sql: &str) -> String {
        use sqlx::Connection;
        sqlx::any::install_default_drivers();
        let admin = std::env::var("STANDINGS_TEST_POSTGRES")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
        let mut conn = sqlx::AnyConnection::connect(&admin).await.unwrap();
        conn.execute(sql).await.unwrap();
        conn.close().await.unwrap();
        admin
    }

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
        let key = |player| player_index::player_key("g", player, "m", "s");
        assert_eq!(player_index::seqs_on_page(0, &page, key("p-a")).unwrap(), [1, 4]);
        assert_eq!(player_index::seqs_on_page(0, &page, key("p-b")).unwrap(), [2]);
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
        let a = player_index::player_key("g", "p-a", "m", "s");
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
        old.insert_events(&mut tx, &log).await.unwrap();
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

    /// A log written before migration 6 has its seasons recorded by it: each season with
    /// events once, and no other.
    #[tokio::test]
    async fn the_event_seasons_migration_records_the_seasons_of_an_existing_log() {
        let mut log = vec![
            event(1, "e1", "p-a"),
            event(2, "e2", "p-b"),
            event(3, "e3", "p-a"),
        ];
        log[1].event.season = "t".into();
        log[2].event.game = "h".into();
        let (dir, url) = written_before_migration(5, &log).await;
        let store = Store::open(&url).await.unwrap();
        let seasons = store.event_seasons().await.unwrap();
        let mut pairs: Vec<(&str, &str)> = seasons
            .iter()
            .flat_map(|(game, seasons)| seasons.iter().map(move |s| (game.as_str(), s.as_str())))
            .collect();
        pairs.sort();
        assert_eq!(pairs, [("g", "s"), ("g", "t"), ("h", "s")]);
        assert!(store.season_has_events("g", "t").await.unwrap());
        assert!(!store.season_has_events("g", "u").await.unwrap());
        assert!(!store.season_has_events("i", "s").await.unwrap());
        store.close().await;
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
