//! Who owns the log: the one process that may append to a database's event log, and the proof
//! it keeps of that for its whole life (issue 30, single-node modes). A process that cannot
//! prove it still owns a log never appends to it.
//!
//! On SQLite the proof is an OS lock (`flock`, std's `File::try_lock`) on a file beside the
//! database, `<db>.lock`, which also says who holds it. It is a file of its own rather than the
//! database: SQLite takes POSIX record locks on the database and its WAL, and where `flock` is
//! emulated with those, SQLite closing any descriptor of the file would drop ours. The lock dies
//! with its process, so a crashed holder never blocks a restart; the file is never deleted (a
//! deletion between an unlock and a lock would let two processes lock two different files).
//!
//! On PostgreSQL the proof is a session-level advisory lock ([`LOG_LOCK`]) held on a connection
//! of its own, and the row of `log_owner` names the holder. The server frees the lock when the
//! session ends, so a holder that died frees it too. If that connection is lost, the process
//! can no longer prove it owns the log: every transaction that writes is refused as the
//! database's absence (503 `DATABASE_UNAVAILABLE`, as in any outage; see [`fenced`]) until the
//! lock is taken back and the row shows that nobody held it in between. If somebody did, or
//! holds it now, [`LogOwner::hold`] returns and the process must stop at once without writing
//! again. What remains is the time between the session's loss and its detection (at most
//! [`CHECK_EVERY`] plus a ping): fencing inside every commit is the cluster mode's (issue 30).
//!
//! Call order: [`LogOwner::claim`] before the store is opened (so that a refused process does
//! not even migrate), [`LogOwner::announce`] once the store is migrated and the address known,
//! then [`LogOwner::hold`] for the rest of the process's life.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Connection, Executor, Row};

use super::error::db_error;
use super::{Backend, StoreError};

/// The advisory lock key of the log ("STANDLOG"); advisory locks are per database.
pub(super) const LOG_LOCK: i64 = 0x5354_414e_444c_4f47;

/// The advisory lock key under which migrations run ("STANDMIG"), taken per transaction.
pub(super) const MIGRATION_LOCK: i64 = 0x5354_414e_444d_4947;

/// How often the connection holding the lock is checked.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// How long a check may take before the connection counts as lost.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a lost lock is tried again.
const RETAKE_EVERY: Duration = Duration::from_millis(250);

/// Set while this process cannot prove it owns the log: writes are refused.
static FENCED: AtomicBool = AtomicBool::new(false);

/// Whether writes must be refused now, because the lock's connection was lost and the lock is
/// not yet taken back. Cost: one atomic load.
pub(super) fn fenced() -> bool {
    FENCED.load(Ordering::Acquire)
}

/// A process that holds (or held) a log, as it describes itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    /// What it is doing (`standings serve`, `standings import`).
    pub role: String,
    /// Its host's name.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// The address it listens on, once it does.
    pub listen: Option<String>,
    /// When it took the lock (ms since the epoch).
    pub since_ms: i64,
}

impl std::fmt::Display for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}, pid {} on host {}", self.role, self.pid, self.host)?;
        if let Some(listen) = &self.listen {
            write!(f, ", listening on {listen}")?;
        }
        write!(f, ", since {}", crate::clock::format_rfc3339(self.since_ms))
    }
}

/// Why a process may not, or may no longer, write a log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClaimError {
    /// Another process holds it; `holder` is `None` when it has not said who it is (it is
    /// starting, or predates the record).
    #[error("{}", refusal(*backend, database, holder.as_ref()))]
    Held {
        /// The database.
        backend: Backend,
        /// The database as it may be shown (a path, or a URL without its password).
        database: String,
        /// Who holds it.
        holder: Option<Node>,
    },
    /// The database is a cluster's: a single-node origin would serve none of its partitions.
    #[error(
        "the database {database} is clustered ({nodes}); a single-node origin cannot serve it: add the [cluster] section to this origin's config to join the cluster (docs/cluster.md), or use another database"
    )]
    Clustered {
        /// The database as it may be shown.
        database: String,
        /// The cluster's nodes as registered, or what is known of them.
        nodes: String,
    },
    /// The lock was lost and somebody else held it since: this process must stop.
    #[error(
        "this process lost the lock on the database {database} and {}; it stops without writing again (its state may be stale)",
        match holder { Some(n) => format!("another origin took it ({n})"), None => "another origin held it meanwhile".to_string() }
    )]
    Deposed {
        /// The database as it may be shown.
        database: String,
        /// Who holds it now, if known.
        holder: Option<Node>,
    },
    /// The lock file cannot be opened or written.
    #[error("{context}")]
    Io {
        /// What was being done.
        context: String,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// The database failed while the lock was being taken or recorded.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The words of a refusal to start: the database, who holds it, and what to do.
fn refusal(backend: Backend, database: &str, holder: Option<&Node>) -> String {
    let who = match holder {
        Some(node) => format!("({node})"),
        None => "(which has not said who it is yet: it may be starting)".to_string(),
    };
    match backend {
        Backend::Sqlite => format!(
            "the database {database} is held by another Standings process {who}; one database is served by one process at a time: stop that one first, or use another database"
        ),
        Backend::Postgres => format!(
            "the database {database} is already served by another Standings origin {who}; several origins over one database run as a cluster (a [cluster] section on each, see docs/cluster.md): stop that origin first, or use another database"
        ),
    }
}

/// The database file of a SQLite URL and its lock file beside it (`<db>.lock`); `None` for an
/// in-memory database, which no other process can open.
fn lock_path(url: &str) -> Option<(PathBuf, PathBuf)> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split_once('?').map_or(rest, |(path, _)| path);
    if path.is_empty() || path == ":memory:" || url.contains("mode=memory") {
        return None;
    }
    let lock = PathBuf::from(format!("{path}.lock"));
    Some((PathBuf::from(path), lock))
}

/// The proof that this process owns a log, held until it is dropped (or the process ends).
pub struct LogOwner {
    proof: Proof,
    node: Node,
    database: String,
}

enum Proof {
    /// An in-memory SQLite database: nothing to share.
    Alone,
    /// The locked lock file.
    File(File),
    /// The connection holding the advisory lock, and the URL to take it back with.
    Session { conn: AnyConnection, url: String },
}

impl LogOwner {
    /// Takes the log of the database at `url` for `node`, or says who holds it. `shown` is the
    /// URL as it may be shown (no password). Cost: one lock (and a connection on PostgreSQL).
    pub async fn claim(url: &str, shown: &str, node: Node) -> Result<LogOwner, ClaimError> {
        if !url.starts_with("sqlite:") {
            return claim_postgres(url, shown, node).await;
        }
        let Some((db, lock)) = lock_path(url) else {
            return Ok(LogOwner {
                proof: Proof::Alone,
                node,
                database: shown.to_string(),
            });
        };
        let database = db.display().to_string();
        let io = |what: &str| {
            let context = format!("cannot {what} the lock file {}", lock.display());
            move |source| ClaimError::Io { context, source }
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock)
            .map_err(io("open"))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(ClaimError::Held {
                    backend: Backend::Sqlite,
                    database,
                    holder: read_holder(&mut file),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io("lock")(e)),
        }
        write_holder(&mut file, &node).map_err(io("write"))?;
        Ok(LogOwner {
            proof: Proof::File(file),
            node,
            database,
        })
    }

    /// Records the address this process listens on, once it does (and, on PostgreSQL, the
    /// row naming the holder, which needs the migrated schema).
    pub async fn announce(&mut self, listen: Option<String>) -> Result<(), ClaimError> {
        self.node.listen = listen;
        match &mut self.proof {
            Proof::Alone => Ok(()),
            Proof::File(file) => write_holder(file, &self.node).map_err(|source| ClaimError::Io {
                context: format!("cannot write the lock file of {}", self.database),
                source,
            }),
            Proof::Session { conn, .. } => Ok(record(conn, &self.node).await?),
        }
    }

    /// Holds the log for the rest of the process's life. Returns only when the process must
    /// stop: it lost the lock and somebody else held it since (PostgreSQL). While the lock's
    /// connection is lost, writes are refused ([`fenced`]). Never returns on SQLite, whose lock
    /// cannot be lost while the process lives.
    pub async fn hold(mut self) -> ClaimError {
        loop {
            let Proof::Session { conn, url } = &mut self.proof else {
                return std::future::pending().await;
            };
            tokio::time::sleep(CHECK_EVERY).await;
            if alive(conn).await {
                continue;
            }
            FENCED.store(true, Ordering::Release);
            tracing::warn!(
                "the connection holding the lock on {} is lost; writes are refused (503) until the lock is taken back",
                self.database
            );
            let url = url.clone();
            let conn = loop {
                tokio::time::sleep(RETAKE_EVERY).await;
                match retake(&url, &self.node, &self.database).await {
                    Ok(Some(conn)) => break conn,
                    Ok(None) => continue,
                    Err(deposed) => return deposed,
                }
            };
            self.proof = Proof::Session { conn, url };
            FENCED.store(false, Ordering::Release);
            tracing::info!("the lock on {} is taken back; writes resume", self.database);
        }
    }
}

/// Takes the advisory lock back on a new connection. `Ok(None)`: the database cannot be
/// reached yet; an error: somebody else holds it or held it since (the row is not ours).
async fn retake(url: &str, node: &Node, database: &str) -> Result<Option<AnyConnection>, ClaimError> {
    let deposed = |holder| ClaimError::Deposed {
        database: database.to_string(),
        holder,
    };
    let mut conn = match reconnect_and_lock(url, LockMode::Exclusive).await {
        None => return Ok(None),
        Some((mut conn, false)) => return Err(deposed(current_holder(&mut conn).await)),
        Some((conn, true)) => conn,
    };
    let Ok(recorded) = recorded(&mut conn).await else {
        return Ok(None);
    };
    let ours = recorded
        .as_ref()
        .is_some_and(|r| (&r.host, r.pid, r.since_ms) == (&node.host, node.pid, node.since_ms));
    if !ours {
        return Err(deposed(recorded));
    }
    if record(&mut conn, node).await.is_err() {
        return Ok(None);
    }
    Ok(Some(conn))
}

/// How long a start tries again for a PostgreSQL lock held by another session, which may be a
/// killed holder's that has not ended yet.
const LINGERING_HOLDER: std::time::Duration = std::time::Duration::from_secs(5);

/// Takes the log's advisory lock on PostgreSQL, or says who holds it.
async fn claim_postgres(url: &str, shown: &str, node: Node) -> Result<LogOwner, ClaimError> {
    sqlx::any::install_default_drivers();
    let mut conn = AnyConnection::connect(url)
        .await
        .map_err(|e| db_error("cannot connect to the database to take its lock", e))?;
    let mut taken = try_lock(&mut conn)
        .await
        .map_err(|e| db_error("cannot take the database's lock", e))?;
    // A holder killed a moment ago keeps the lock until its server session notices the closed
    // socket and ends, which a busy server can take a while to do: the lock is tried again for
    // a few seconds before the holder is named. Nothing is done without it meanwhile.
    let deadline = std::time::Instant::now() + LINGERING_HOLDER;
    let clustered = cluster_nodes(&mut conn).await.is_some();
    while !taken && !clustered && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        taken = try_lock(&mut conn)
            .await
            .map_err(|e| db_error("cannot take the database's lock", e))?;
    }
    if let Some(nodes) = cluster_nodes(&mut conn).await {
        return Err(ClaimError::Clustered {
            database: shown.to_string(),
            nodes,
        });
    }
    if !taken {
        return Err(ClaimError::Held {
            backend: Backend::Postgres,
            database: shown.to_string(),
            holder: current_holder(&mut conn).await,
        });
    }
    Ok(LogOwner {
        proof: Proof::Session {
            conn,
            url: url.to_string(),
        },
        node,
        database: shown.to_string(),
    })
}

/// The nodes of the cluster the database belongs to, as a list to show; `None` when it is not
/// clustered.
async fn cluster_nodes(conn: &mut AnyConnection) -> Option<String> {
    let clustered = sqlx::query("SELECT to_regclass('standings_cluster.nodes') IS NOT NULL AS c")
        .fetch_one(&mut *conn)
        .await
        .ok()
        .and_then(|r| r.try_get::<bool, _>("c").ok())?;
    if !clustered {
        return None;
    }
    let nodes: Vec<String> =
        sqlx::query("SELECT node_id, advertise_url FROM standings_cluster.nodes ORDER BY node_id")
            .fetch_all(&mut *conn)
            .await
            .ok()?
            .iter()
            .filter_map(|r| {
                Some(format!(
                    "{} at {}",
                    r.try_get::<String, _>("node_id").ok()?,
                    r.try_get::<String, _>("advertise_url").ok()?
                ))
            })
            .collect();
    Some(if nodes.is_empty() {
        "no node has joined yet".to_string()
    } else {
        format!("nodes: {}", nodes.join(", "))
    })
}

/// How a process holds the log's advisory lock: a single-node origin alone, cluster nodes
/// together (so that neither kind starts beside the other).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LockMode {
    /// `pg_try_advisory_lock`: the single-node origin's.
    Exclusive,
    /// `pg_try_advisory_lock_shared`: every cluster node's.
    Shared,
}

/// `pg_try_advisory_lock` on the log: whether this session holds it now.
async fn try_lock(conn: &mut AnyConnection) -> Result<bool, sqlx::Error> {
    try_lock_in(conn, LockMode::Exclusive).await
}

/// Tries the log's advisory lock in `mode` on `conn`: whether this session holds it now.
pub(super) async fn try_lock_in(conn: &mut AnyConnection, mode: LockMode) -> Result<bool, sqlx::Error> {
    let sql = match mode {
        LockMode::Exclusive => "SELECT pg_try_advisory_lock($1) AS taken",
        LockMode::Shared => "SELECT pg_try_advisory_lock_shared($1) AS taken",
    };
    let row: AnyRow = sqlx::query(sql).bind(LOG_LOCK).fetch_one(&mut *conn).await?;
    row.try_get("taken")
}

/// Whether the connection holding the lock still answers, within [`CHECK_TIMEOUT`].
pub(super) async fn alive(conn: &mut AnyConnection) -> bool {
    matches!(
        tokio::time::timeout(CHECK_TIMEOUT, conn.execute("SELECT 1")).await,
        Ok(Ok(_))
    )
}

/// After the lock's connection was lost: a new connection (within [`CHECK_TIMEOUT`]) and whether
/// it took the lock in `mode`; `None` while the database cannot be reached or does not answer.
pub(super) async fn reconnect_and_lock(url: &str, mode: LockMode) -> Option<(AnyConnection, bool)> {
    let Ok(Ok(mut conn)) = tokio::time::timeout(CHECK_TIMEOUT, AnyConnection::connect(url)).await else {
        return None;
    };
    let taken = try_lock_in(&mut conn, mode).await.ok()?;
    Some((conn, taken))
}

/// Keeps a cluster node's shared hold of the lock for the rest of the process, taking it back
/// on a new connection whenever its connection is lost: the same checks and waits as
/// [`LogOwner::hold`]'s, without the fence (a node's writes are fenced by its leases).
pub(super) async fn hold_shared(mut conn: AnyConnection, url: &str) -> ! {
    loop {
        tokio::time::sleep(CHECK_EVERY).await;
        if alive(&mut conn).await {
            continue;
        }
        conn = loop {
            tokio::time::sleep(RETAKE_EVERY).await;
            if let Some((conn, true)) = reconnect_and_lock(url, LockMode::Shared).await {
                break conn;
            }
        };
    }
}

/// The recorded holder, if the session that recorded it holds the lock now (a row left by a
/// holder that died is not shown). `None` when unknown, or the table does not exist yet.
async fn current_holder(conn: &mut AnyConnection) -> Option<Node> {
    // A bigint key is stored in pg_locks as its high and low halves, with objsubid 1.
    let row = sqlx::query(
        "SELECT role, host, pid, listen, since FROM log_owner WHERE slot = 1 AND session IN \
         (SELECT l.pid FROM pg_locks l JOIN pg_database d ON d.oid = l.database \
          WHERE d.datname = current_database() AND l.locktype = 'advisory' AND l.granted \
          AND l.objsubid = 1 AND l.classid::bigint = $1 AND l.objid::bigint = $2)",
    )
    .bind(LOG_LOCK >> 32)
    .bind(LOG_LOCK & 0xffff_ffff)
    .fetch_optional(&mut *conn)
    .await
    .ok()??;
    node_of(&row).ok()
}

/// The single-node origin holding the log now, if it said who it is.
pub(super) async fn holder_on(conn: &mut AnyConnection) -> Option<Node> {
    current_holder(conn).await
}

/// The recorded holder, whoever it was.
async fn recorded(conn: &mut AnyConnection) -> Result<Option<Node>, sqlx::Error> {
    let row = sqlx::query("SELECT role, host, pid, listen, since FROM log_owner WHERE slot = 1")
        .fetch_optional(&mut *conn)
        .await?;
    row.map(|r| node_of(&r)).transpose()
}

fn node_of(row: &AnyRow) -> Result<Node, sqlx::Error> {
    Ok(Node {
        role: row.try_get("role")?,
        host: row.try_get("host")?,
        pid: u32::try_from(row.try_get::<i64, _>("pid")?).unwrap_or(0),
        listen: row.try_get("listen")?,
        since_ms: row.try_get("since")?,
    })
}

/// Records `node` as the holder, with this session's backend pid.
async fn record(conn: &mut AnyConnection, node: &Node) -> Result<(), StoreError> {
    let mut tx = conn
        .begin()
        .await
        .map_err(|e| db_error("cannot record who holds the log", e))?;
    tx.execute("DELETE FROM log_owner")
        .await
        .map_err(|e| db_error("cannot record who holds the log", e))?;
    sqlx::query(
        "INSERT INTO log_owner (slot, role, host, pid, listen, since, session) \
         VALUES (1, $1, $2, $3, $4, $5, pg_backend_pid())",
    )
    .bind(&node.role)
    .bind(&node.host)
    .bind(i64::from(node.pid))
    .bind(node.listen.clone())
    .bind(node.since_ms)
    .execute(&mut *tx)
    .await
    .map_err(|e| db_error("cannot record who holds the log", e))?;
    tx.commit()
        .await
        .map_err(|e| db_error("cannot record who holds the log", e))
}

/// Replaces the lock file's record of its holder (one JSON line).
fn write_holder(file: &mut File, node: &Node) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(node).map_err(std::io::Error::other)?;
    line.push(b'\n');
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(&line)?;
    file.sync_data()
}

/// The holder recorded in a lock file, if it has written itself there.
fn read_holder(file: &mut File) -> Option<Node> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.read_to_string(&mut text).ok()?;
    serde_json::from_str(text.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node() -> Node {
        Node {
            role: "standings serve".into(),
            host: "h1".into(),
            pid: 4242,
            listen: Some("127.0.0.1:7400".into()),
            since_ms: 1_791_800_700_000,
        }
    }

    /// The lock file sits beside the database, whatever the URL's form; a memory database has
    /// none.
    #[test]
    fn the_lock_file_sits_beside_the_database() {
        let beside = |db: &str| Some((PathBuf::from(db), PathBuf::from(format!("{db}.lock"))));
        assert_eq!(
            lock_path("sqlite:///var/lib/s/standings.db"),
            beside("/var/lib/s/standings.db")
        );
        assert_eq!(lock_path("sqlite://./data/s.db?mode=rwc"), beside("./data/s.db"));
        assert_eq!(lock_path("sqlite:s.db"), beside("s.db"));
        assert_eq!(lock_path("sqlite::memory:"), None);
        assert_eq!(lock_path("sqlite://x.db?mode=memory"), None);
        assert_eq!(lock_path("postgres://db/x"), None);
    }

    /// A refusal names the database and its holder, and on PostgreSQL says how several origins
    /// run over one database.
    #[test]
    fn a_refusal_names_the_database_and_who_holds_it() {
        let sqlite = refusal(Backend::Sqlite, "/d/s.db", Some(&node()));
        assert_eq!(
            sqlite,
            "the database /d/s.db is held by another Standings process (standings serve, pid 4242 on host h1, listening on 127.0.0.1:7400, since 2026-10-12T10:25:00Z); one database is served by one process at a time: stop that one first, or use another database"
        );
        let pg = refusal(Backend::Postgres, "postgres://db/x", None);
        assert!(pg.contains("postgres://db/x"), "{pg}");
        assert!(pg.contains("has not said who it is yet"), "{pg}");
        assert!(pg.contains("a [cluster] section on each"), "{pg}");
    }

    /// Two claims on one SQLite file in one process: the second is refused with the first's
    /// record (flock locks belong to the open file, so this holds within a process too), and a
    /// dropped holder frees the file at once.
    #[tokio::test]
    async fn a_second_claim_on_a_sqlite_file_is_refused_until_the_first_ends() {
        let dir = std::env::temp_dir().join(format!(
            "standings-owner-{}-{}",
            std::process::id(),
            crate::clock::now_ms()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("sqlite://{}/s.db", dir.display());
        let mut first = LogOwner::claim(
            &url,
            &url,
            Node {
                listen: None,
                ..node()
            },
        )
        .await
        .unwrap();
        first.announce(Some("127.0.0.1:7400".into())).await.unwrap();
        let refused = LogOwner::claim(&url, &url, node()).await.err().unwrap();
        match &refused {
            ClaimError::Held { holder, database, .. } => {
                assert_eq!(holder.as_ref(), Some(&node()));
                assert_eq!(database, &format!("{}/s.db", dir.display()));
            }
            other => panic!("{other}"),
        }
        drop(first);
        LogOwner::claim(&url, &url, node()).await.unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
