//! A clustered database: the games hashed to a fixed number of partitions, each partition a
//! schema of its own (`standings_p0007`) holding the single-node tables, so that a partition's log,
//! `seq`, checkpoints and player index are exactly a single node's, and the code that reads and
//! writes them is the same. Beside them the schema `standings_cluster` holds what the nodes
//! share: the partition count, the nodes, one lease row per partition and the standbys'
//! positions.
//!
//! A lease is a row `(partition, epoch, node_id, expires_ms)` on the database's clock. A node
//! takes a lease only when it is free or expired, which moves its epoch by one; its owner renews
//! it. Every write of a partition's store begins by proving, in its own transaction, that its node
//! holds the lease at its epoch and that the lease has not expired ([`fence_sql`]): the lease row
//! stays share-locked until the transaction ends, so a takeover waits for a write in flight and
//! a write after a takeover fails, whatever the deposed node's clock says. The decisions about
//! when to renew, serve, take or give back are pure (`crate::cluster::lease`); this module only
//! runs their statements.
//!
//! Every node also holds PostgreSQL's advisory lock of the log in shared mode for its whole
//! life, so that a single-node origin (which takes it exclusively) and a cluster never serve one
//! database together.

use std::time::Duration;

use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Connection, Executor, Row};

use super::error::{db_err, db_error};
use super::{Scope, Store, StoreError, owner};

/// The database's clock in milliseconds since the epoch; every lease time is on it.
const NOW_MS: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

/// The schema of a partition (`standings_p0007`), the core's name for it.
pub use standings_core::partition::schema_of;

/// The statements that begin every write of a partition: its schema, then the lease's proof.
/// Node ids are checked to `[A-Za-z0-9._-]` by the configuration, so quoting them is exact.
pub(super) fn fence_sql(schema: &str, partition: u32, node: &str, epoch: i64) -> String {
    format!(
        "SET LOCAL search_path TO {schema}; \
         SELECT standings_cluster.fence({partition}, '{node}', {epoch}) AS epoch"
    )
}

/// The shared schema, created once under the migration lock. The fence is a function so that a
/// write proves its lease in the round trip that chooses its schema.
const CLUSTER_DDL: &[&str] = &[
    "CREATE SCHEMA IF NOT EXISTS standings_cluster",
    "CREATE TABLE IF NOT EXISTS standings_cluster.meta (id BIGINT PRIMARY KEY, partitions BIGINT NOT NULL, created_ms BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS standings_cluster.nodes (node_id TEXT PRIMARY KEY, advertise_url TEXT NOT NULL, incarnation TEXT NOT NULL, started_ms BIGINT NOT NULL, heartbeat_ms BIGINT NOT NULL, draining BOOLEAN NOT NULL DEFAULT FALSE)",
    "CREATE TABLE IF NOT EXISTS standings_cluster.leases (partition BIGINT PRIMARY KEY, epoch BIGINT NOT NULL, node_id TEXT, expires_ms BIGINT NOT NULL, taken_ms BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS standings_cluster.followers (partition BIGINT NOT NULL, node_id TEXT NOT NULL, applied BIGINT NOT NULL, updated_ms BIGINT NOT NULL, PRIMARY KEY (partition, node_id))",
    "CREATE OR REPLACE FUNCTION standings_cluster.fence(p BIGINT, n TEXT, e BIGINT) RETURNS BIGINT AS $$ \
     BEGIN \
       PERFORM 1 FROM standings_cluster.leases WHERE partition = p AND node_id = n AND epoch = e \
         AND expires_ms > (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT FOR SHARE; \
       IF NOT FOUND THEN \
         RAISE EXCEPTION 'node % does not hold partition % at epoch %', n, p, e USING ERRCODE = 'SF001'; \
       END IF; \
       PERFORM set_config('standings.epoch', e::text, true); \
       RETURN e; \
     END $$ LANGUAGE plpgsql",
    // Every log row records the epoch it was written under (set by the fence in the same
    // transaction): an audit, and the crash harness's proof that no deposed owner's row follows
    // a takeover.
    "CREATE OR REPLACE FUNCTION standings_cluster.stamp_epoch() RETURNS trigger AS $$ \
     BEGIN \
       NEW.epoch := COALESCE(NULLIF(current_setting('standings.epoch', true), '')::BIGINT, -1); \
       RETURN NEW; \
     END $$ LANGUAGE plpgsql",
];

/// What a partition's schema has beyond a single node's: the epoch on every log row.
fn partition_ddl(schema: &str) -> [String; 4] {
    [
        format!("ALTER TABLE {schema}.score_events ADD COLUMN IF NOT EXISTS epoch BIGINT"),
        format!("ALTER TABLE {schema}.actions ADD COLUMN IF NOT EXISTS epoch BIGINT"),
        format!(
            "CREATE OR REPLACE TRIGGER stamp_epoch BEFORE INSERT ON {schema}.score_events \
             FOR EACH ROW EXECUTE FUNCTION standings_cluster.stamp_epoch()"
        ),
        format!(
            "CREATE OR REPLACE TRIGGER stamp_epoch BEFORE INSERT ON {schema}.actions \
             FOR EACH ROW EXECUTE FUNCTION standings_cluster.stamp_epoch()"
        ),
    ]
}

/// One partition's lease as the database holds it now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseRow {
    /// The partition.
    pub partition: u32,
    /// Its epoch: one more at every take.
    pub epoch: i64,
    /// Its holder, `None` once given back.
    pub node: Option<String>,
    /// How long until it expires, on the database's clock (negative: expired).
    pub expires_in_ms: i64,
}

/// A node as it registered itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRow {
    /// Its id.
    pub node_id: String,
    /// Where the others reach it.
    pub advertise_url: String,
    /// How long ago its last heartbeat was, on the database's clock.
    pub heartbeat_age_ms: i64,
    /// Whether it is giving its partitions back to stop.
    pub draining: bool,
}

/// Where a standby's copy of a partition is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FollowerRow {
    /// The partition.
    pub partition: u32,
    /// The following node.
    pub node_id: String,
    /// The last `seq` it applied.
    pub applied: i64,
    /// How long ago it said so.
    pub age_ms: i64,
}

/// Why a node may not join.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JoinError {
    /// The database was clustered with another partition count.
    #[error(
        "the database {database} was clustered with {stored} partitions and this node's [cluster] says {configured}; the count is fixed when a database is first clustered: set partitions = {stored}"
    )]
    Partitions {
        /// The database as shown.
        database: String,
        /// The count it was clustered with.
        stored: u32,
        /// This node's.
        configured: u32,
    },
    /// Another live process has this node id.
    #[error(
        "node_id {node:?} is in use by a running node (its heartbeat is {age_ms} ms old, at {url}); every node needs an id of its own"
    )]
    NodeIdInUse {
        /// The id.
        node: String,
        /// Its heartbeat's age.
        age_ms: i64,
        /// Where it is.
        url: String,
    },
    /// Another live node advertises the same address, so requests meant for one would reach
    /// the other.
    #[error(
        "cluster.advertise_url {url:?} is the address of the running node {node:?}; every node needs an address of its own, where it listens"
    )]
    AdvertiseUrlInUse {
        /// The address.
        url: String,
        /// The node that advertises it.
        node: String,
    },
    /// A single-node origin holds the database.
    #[error(
        "the database {database} is served by a single-node Standings origin ({holder}); stop it before starting cluster nodes on it"
    )]
    SingleNode {
        /// The database as shown.
        database: String,
        /// Who holds it.
        holder: String,
    },
    /// The database holds a single-node log.
    #[error(
        "the database {database} holds a single-node log ({events} events); a cluster starts on a database of its own: export the log (`standings export`) and import it into a single-node database, or point the cluster at a fresh database"
    )]
    HoldsSingleNodeLog {
        /// The database as shown.
        database: String,
        /// How many events it holds.
        events: i64,
    },
    /// The database is not a cluster's.
    #[error("the database {database} is not clustered: no node has ever joined it")]
    NotClustered {
        /// The database as shown.
        database: String,
    },
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The cluster's tables, and a store per partition over shared pools.
#[derive(Clone)]
pub struct ClusterStore {
    base: Store,
    partitions: u32,
    node: String,
}

impl ClusterStore {
    /// Connects, creates the shared schema and every partition's schema (under the migration
    /// lock: nodes starting together create them once) and checks the partition count.
    /// `lease_ttl` bounds how long a stopped node's open transaction can hold a lease row: the
    /// database ends a session idle inside a transaction after it.
    pub async fn open(
        url: &str,
        shown: &str,
        node: &str,
        partitions: u32,
        lease_ttl: Duration,
    ) -> Result<ClusterStore, JoinError> {
        // At least a second: a migration's statements on a busy machine must not count as a
        // pause (a longer bound only delays a takeover past a paused node's open write).
        let base = Store::connect(url, Some(lease_ttl.max(Duration::from_secs(1)))).await?;
        let this = ClusterStore {
            base,
            partitions,
            node: node.to_string(),
        };
        this.create_shared(shown).await?;
        // A first start creates every partition's schema, which takes seconds: say so.
        tracing::info!(
            partitions,
            "checking (on a first start, creating) every partition's schema"
        );
        let began = std::time::Instant::now();
        for p in 0..partitions {
            let store = this.partition(p);
            store.migrate_to(i64::MAX).await?;
            let mut tx = this.base.begin_migration().await?;
            for ddl in partition_ddl(&schema_of(p)) {
                tx.execute(&*ddl)
                    .await
                    .map_err(db_err("cannot add the epoch to a partition's log"))?;
            }
            tx.commit()
                .await
                .map_err(db_err("cannot add the epoch to a partition's log"))?;
        }
        tracing::info!(
            partitions,
            took_ms = began.elapsed().as_millis() as u64,
            "every partition's schema is ready"
        );
        Ok(this)
    }

    /// Connects to a database already clustered, without creating or migrating anything (for
    /// `standings cluster status`).
    pub async fn existing(url: &str, shown: &str) -> Result<ClusterStore, JoinError> {
        let base = Store::connect(url, None).await?;
        let row: AnyRow =
            sqlx::query("SELECT to_regclass('standings_cluster.meta') IS NOT NULL AS clustered")
                .fetch_one(&base.pool)
                .await
                .map_err(db_err("cannot read the database's schemas"))?;
        if !row.try_get::<bool, _>("clustered").unwrap_or(false) {
            return Err(JoinError::NotClustered {
                database: shown.to_string(),
            });
        }
        let row: AnyRow = sqlx::query("SELECT partitions FROM standings_cluster.meta WHERE id = 1")
            .fetch_one(&base.pool)
            .await
            .map_err(db_err("cannot read the partition count"))?;
        let partitions: i64 = row.try_get("partitions").map_err(db_err("bad partition count"))?;
        Ok(ClusterStore {
            base,
            partitions: u32::try_from(partitions).unwrap_or(0),
            node: String::new(),
        })
    }

    async fn create_shared(&self, shown: &str) -> Result<(), JoinError> {
        let mut tx = self.base.begin_migration().await?;
        let single: Option<AnyRow> = sqlx::query(
            "SELECT to_regclass('public.score_events') IS NOT NULL AS has_log, \
             to_regclass('standings_cluster.meta') IS NOT NULL AS clustered",
        )
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err("cannot read the database's schemas"))?;
        let (has_log, clustered) = match &single {
            Some(row) => (
                row.try_get::<bool, _>("has_log").unwrap_or(false),
                row.try_get::<bool, _>("clustered").unwrap_or(false),
            ),
            None => (false, false),
        };
        if has_log && !clustered {
            let row = sqlx::query("SELECT COUNT(*) AS n FROM public.score_events")
                .fetch_one(&mut *tx)
                .await
                .map_err(db_err("cannot count the single-node log"))?;
            let events: i64 = row.try_get("n").map_err(db_err("bad count"))?;
            if events > 0 {
                return Err(JoinError::HoldsSingleNodeLog {
                    database: shown.to_string(),
                    events,
                });
            }
        }
        for ddl in CLUSTER_DDL {
            tx.execute(*ddl)
                .await
                .map_err(db_err("cannot create the cluster's tables"))?;
        }
        let stored: Option<AnyRow> =
            sqlx::query("SELECT partitions FROM standings_cluster.meta WHERE id = 1")
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err("cannot read the partition count"))?;
        match stored {
            Some(row) => {
                let stored: i64 = row.try_get("partitions").map_err(db_err("bad partition count"))?;
                let stored = u32::try_from(stored).unwrap_or(0);
                if stored != self.partitions {
                    return Err(JoinError::Partitions {
                        database: shown.to_string(),
                        stored,
                        configured: self.partitions,
                    });
                }
            }
            None => {
                sqlx::query(&format!(
                    "INSERT INTO standings_cluster.meta (id, partitions, created_ms) VALUES (1, $1, {NOW_MS})"
                ))
                .bind(i64::from(self.partitions))
                .execute(&mut *tx)
                .await
                .map_err(db_err("cannot record the partition count"))?;
                for p in 0..self.partitions {
                    sqlx::query(
                        "INSERT INTO standings_cluster.leases (partition, epoch, node_id, expires_ms, taken_ms) \
                         VALUES ($1, 0, NULL, 0, 0)",
                    )
                    .bind(i64::from(p))
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err("cannot create the leases"))?;
                }
            }
        }
        tx.commit()
            .await
            .map_err(db_err("cannot create the cluster's tables"))?;
        Ok(())
    }

    /// How many partitions the games are hashed to.
    pub fn partitions(&self) -> u32 {
        self.partitions
    }

    /// The store of partition `p`: its schema, its writes fenced by this node's lease (none
    /// until [`Scope::set_epoch`]).
    pub fn partition(&self, p: u32) -> Store {
        Store {
            scope: Some(std::sync::Arc::new(Scope {
                partition: p,
                schema: schema_of(p),
                node: self.node.clone(),
                epoch: std::sync::atomic::AtomicI64::new(0),
                proven: std::sync::atomic::AtomicI64::new(0),
            })),
            ..self.base.clone()
        }
    }

    /// Registers this node (or its restart), refusing when another live process has its id.
    /// `incarnation` tells this process from an earlier one of the same node. A recent heartbeat
    /// of another incarnation may be a process that just died (a crash, restarted at once): it
    /// is watched for half of `live_within_ms`, and only one that moves is a live process.
    pub async fn register(
        &self,
        advertise_url: &str,
        incarnation: &str,
        live_within_ms: i64,
    ) -> Result<(), JoinError> {
        let beat = || async {
            let row: Option<AnyRow> = sqlx::query(&format!(
                "SELECT advertise_url, incarnation, heartbeat_ms, {NOW_MS} - heartbeat_ms AS age \
                 FROM standings_cluster.nodes WHERE node_id = $1"
            ))
            .bind(&self.node)
            .fetch_optional(&self.base.pool)
            .await
            .map_err(db_err("cannot read the nodes"))?;
            row.map(|r| -> Result<(String, String, i64, i64), StoreError> {
                Ok((
                    r.try_get("advertise_url").map_err(db_err("bad node"))?,
                    r.try_get("incarnation").map_err(db_err("bad node"))?,
                    r.try_get("heartbeat_ms").map_err(db_err("bad node"))?,
                    r.try_get("age").map_err(db_err("bad node"))?,
                ))
            })
            .transpose()
        };
        if let Some((_, other, first, age)) = beat().await?
            && other != incarnation
            && age < live_within_ms
        {
            tokio::time::sleep(Duration::from_millis(
                u64::try_from(live_within_ms / 2).unwrap_or(0),
            ))
            .await;
            if let Some((url, still, then, age)) = beat().await?
                && still == other
                && then != first
            {
                return Err(JoinError::NodeIdInUse {
                    node: self.node.clone(),
                    age_ms: age,
                    url,
                });
            }
        }
        let twin: Option<AnyRow> = sqlx::query(&format!(
            "SELECT node_id FROM standings_cluster.nodes \
             WHERE advertise_url = $1 AND node_id <> $2 AND {NOW_MS} - heartbeat_ms < $3"
        ))
        .bind(advertise_url)
        .bind(&self.node)
        .bind(live_within_ms)
        .fetch_optional(&self.base.pool)
        .await
        .map_err(db_err("cannot read the nodes"))?;
        if let Some(twin) = twin {
            return Err(JoinError::AdvertiseUrlInUse {
                url: advertise_url.to_string(),
                node: twin.try_get("node_id").map_err(db_err("bad node"))?,
            });
        }
        sqlx::query(&format!(
            "INSERT INTO standings_cluster.nodes (node_id, advertise_url, incarnation, started_ms, heartbeat_ms, draining) \
             VALUES ($1, $2, $3, {NOW_MS}, {NOW_MS}, FALSE) \
             ON CONFLICT (node_id) DO UPDATE SET advertise_url = $2, incarnation = $3, \
             started_ms = {NOW_MS}, heartbeat_ms = {NOW_MS}, draining = FALSE"
        ))
        .bind(&self.node)
        .bind(advertise_url)
        .bind(incarnation)
        .execute(&self.base.pool)
        .await
        .map_err(db_err("cannot register the node"))?;
        Ok(())
    }

    /// Says this process, `incarnation` of its node, is alive (and whether it is draining).
    /// Answers false when the node's row names another incarnation: a process started with this
    /// node's id while this one was paused took the id over.
    pub async fn heartbeat(&self, incarnation: &str, draining: bool) -> Result<bool, StoreError> {
        let beat = sqlx::query(&format!(
            "UPDATE standings_cluster.nodes SET heartbeat_ms = {NOW_MS}, draining = $2 WHERE node_id = $1 AND incarnation = $3"
        ))
        .bind(&self.node)
        .bind(draining)
        .bind(incarnation)
        .execute(&self.base.pool)
        .await
        .map_err(db_err("cannot record the node's heartbeat"))?;
        Ok(beat.rows_affected() == 1)
    }

    /// Every partition's lease, with its time left on the database's clock.
    pub async fn leases(&self) -> Result<Vec<LeaseRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT partition, epoch, node_id, expires_ms - {NOW_MS} AS left_ms FROM standings_cluster.leases ORDER BY partition"
        ))
        .fetch_all(&self.base.pool)
        .await
        .map_err(db_err("cannot read the leases"))?;
        rows.iter()
            .map(|r| {
                Ok(LeaseRow {
                    partition: u32::try_from(r.try_get::<i64, _>("partition")?).unwrap_or(u32::MAX),
                    epoch: r.try_get("epoch")?,
                    node: r.try_get("node_id")?,
                    expires_in_ms: r.try_get("left_ms")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(db_err("cannot read the leases"))
    }

    /// Every registered node, with its heartbeat's age.
    pub async fn nodes(&self) -> Result<Vec<NodeRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT node_id, advertise_url, {NOW_MS} - heartbeat_ms AS age, draining FROM standings_cluster.nodes ORDER BY node_id"
        ))
        .fetch_all(&self.base.pool)
        .await
        .map_err(db_err("cannot read the nodes"))?;
        rows.iter()
            .map(|r| {
                Ok(NodeRow {
                    node_id: r.try_get("node_id")?,
                    advertise_url: r.try_get("advertise_url")?,
                    heartbeat_age_ms: r.try_get("age")?,
                    draining: r.try_get("draining")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(db_err("cannot read the nodes"))
    }

    /// Takes partition `p`'s lease if it is free or expired: its new epoch, or `None` when
    /// another node holds it. Waits at most a second for a write in flight on the lease.
    pub async fn take(&self, p: u32, ttl_ms: i64) -> Result<Option<i64>, StoreError> {
        let mut tx = self
            .base
            .pool
            .begin()
            .await
            .map_err(db_err("cannot take a lease"))?;
        tx.execute("SET LOCAL lock_timeout = '1s'")
            .await
            .map_err(db_err("cannot take a lease"))?;
        let row = sqlx::query(&format!(
            "UPDATE standings_cluster.leases SET epoch = epoch + 1, node_id = $2, \
             expires_ms = {NOW_MS} + $3, taken_ms = {NOW_MS} \
             WHERE partition = $1 AND (node_id IS NULL OR expires_ms <= {NOW_MS}) RETURNING epoch"
        ))
        .bind(i64::from(p))
        .bind(&self.node)
        .bind(ttl_ms)
        .fetch_optional(&mut *tx)
        .await;
        let row = match row {
            Ok(row) => row,
            // A write of the holder is still in flight: the lease is not free yet.
            Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("55P03") => return Ok(None),
            Err(e) => return Err(db_error("cannot take a lease", e)),
        };
        tx.commit().await.map_err(db_err("cannot take a lease"))?;
        row.map(|r| r.try_get::<i64, _>("epoch"))
            .transpose()
            .map_err(db_err("cannot take a lease"))
    }

    /// Renews the leases this node holds at the given epochs, in one statement: the partitions
    /// still held (one missing is no longer this node's).
    pub async fn renew(&self, held: &[(u32, i64)], ttl_ms: i64) -> Result<Vec<u32>, StoreError> {
        if held.is_empty() {
            return Ok(Vec::new());
        }
        // Numbers only, so they are written into the statement rather than bound one by one.
        let pairs: Vec<String> = held.iter().map(|(p, e)| format!("({p}, {e})")).collect();
        let rows = sqlx::query(&format!(
            "UPDATE standings_cluster.leases SET expires_ms = {NOW_MS} + $2 \
             WHERE node_id = $1 AND expires_ms > {NOW_MS} AND (partition, epoch) IN ({}) \
             RETURNING partition",
            pairs.join(", ")
        ))
        .bind(&self.node)
        .bind(ttl_ms)
        .fetch_all(&self.base.pool)
        .await
        .map_err(db_err("cannot renew the leases"))?;
        rows.iter()
            .map(|r| {
                r.try_get::<i64, _>("partition")
                    .map(|p| u32::try_from(p).unwrap_or(u32::MAX))
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(db_err("cannot renew the leases"))
    }

    /// Gives partition `p`'s lease back, so that another node takes it at once.
    pub async fn release(&self, p: u32, epoch: i64) -> Result<bool, StoreError> {
        let done = sqlx::query(&format!(
            "UPDATE standings_cluster.leases SET node_id = NULL, expires_ms = {NOW_MS} \
             WHERE partition = $1 AND node_id = $2 AND epoch = $3"
        ))
        .bind(i64::from(p))
        .bind(&self.node)
        .bind(epoch)
        .execute(&self.base.pool)
        .await
        .map_err(db_err("cannot give a lease back"))?;
        Ok(done.rows_affected() == 1)
    }

    /// Records how far this node's copies of the partitions it follows are.
    pub async fn record_followed(&self, applied: &[(u32, i64)]) -> Result<(), StoreError> {
        let mut tx = self
            .base
            .pool
            .begin()
            .await
            .map_err(db_err("cannot record the standbys"))?;
        sqlx::query("DELETE FROM standings_cluster.followers WHERE node_id = $1")
            .bind(&self.node)
            .execute(&mut *tx)
            .await
            .map_err(db_err("cannot record the standbys"))?;
        for (p, seq) in applied {
            sqlx::query(&format!(
                "INSERT INTO standings_cluster.followers (partition, node_id, applied, updated_ms) VALUES ($1, $2, $3, {NOW_MS})"
            ))
            .bind(i64::from(*p))
            .bind(&self.node)
            .bind(*seq)
            .execute(&mut *tx)
            .await
            .map_err(db_err("cannot record the standbys"))?;
        }
        tx.commit().await.map_err(db_err("cannot record the standbys"))
    }

    /// Every standby's position.
    pub async fn followers(&self) -> Result<Vec<FollowerRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT partition, node_id, applied, {NOW_MS} - updated_ms AS age FROM standings_cluster.followers ORDER BY partition, node_id"
        ))
        .fetch_all(&self.base.pool)
        .await
        .map_err(db_err("cannot read the standbys"))?;
        rows.iter()
            .map(|r| {
                Ok(FollowerRow {
                    partition: u32::try_from(r.try_get::<i64, _>("partition")?).unwrap_or(u32::MAX),
                    node_id: r.try_get("node_id")?,
                    applied: r.try_get("applied")?,
                    age_ms: r.try_get("age")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(db_err("cannot read the standbys"))
    }

    /// The last `seq` of every partition's log, in one statement (two index look-ups each).
    pub async fn log_ends(&self) -> Result<Vec<i64>, StoreError> {
        let parts: Vec<String> = (0..self.partitions)
            .map(|p| {
                let s = schema_of(p);
                format!(
                    "SELECT {p} AS partition, GREATEST(COALESCE((SELECT MAX(seq) FROM {s}.score_events), 0), \
                     COALESCE((SELECT MAX(seq) FROM {s}.actions), 0)) AS end_seq"
                )
            })
            .collect();
        let rows = sqlx::query(&format!("{} ORDER BY partition", parts.join(" UNION ALL ")))
            .fetch_all(&self.base.pool)
            .await
            .map_err(db_err("cannot read the logs' ends"))?;
        rows.iter()
            .map(|r| r.try_get::<i64, _>("end_seq"))
            .collect::<Result<_, sqlx::Error>>()
            .map_err(db_err("cannot read the logs' ends"))
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> bool {
        self.base.ping().await
    }

    /// Closes the pools.
    pub async fn close(&self) {
        self.base.close().await;
    }
}

/// The shared hold of the log's advisory lock that every node keeps for its whole life: while a
/// node holds it, a single-node origin cannot take the lock exclusively, and the other way round.
pub struct Membership {
    conn: AnyConnection,
}

impl Membership {
    /// Takes the shared hold, or says which single-node origin holds the database.
    pub async fn join(url: &str, shown: &str) -> Result<Membership, JoinError> {
        sqlx::any::install_default_drivers();
        let mut conn = AnyConnection::connect(url)
            .await
            .map_err(|e| db_error("cannot connect to the database to join its cluster", e))?;
        let taken = owner::try_lock_in(&mut conn, owner::LockMode::Shared)
            .await
            .map_err(|e| db_error("cannot take the cluster's hold on the log", e))?;
        if !taken {
            let holder = owner::holder_on(&mut conn).await.map_or_else(
                || "which has not said who it is yet".to_string(),
                |n| n.to_string(),
            );
            return Err(JoinError::SingleNode {
                database: shown.to_string(),
                holder,
            });
        }
        Ok(Membership { conn })
    }

    /// Keeps the hold until the process ends, taking it back whenever its connection breaks
    /// (`store::owner`'s checks and waits, as a single-node origin keeps its lock).
    pub async fn hold(self, url: String) {
        owner::hold_shared(self.conn, &url).await
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{event, postgres_admin};
    use super::*;

    /// The fence, against the database: a write proves its lease; once another node took the
    /// partition, the deposed node's write is refused as fenced, every row records the epoch it
    /// was written under, and a commit whose answer was lost is judged by the rows of its own
    /// epoch, not by the new owner's.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_deposed_owner_is_fenced_and_judges_its_commits_by_its_own_rows() {
        let name = format!(
            "standings_fence_{}_{}",
            std::process::id(),
            crate::clock::now_ms()
        );
        let admin = postgres_admin(&format!("CREATE DATABASE {name}")).await;
        let url = format!("{}/{name}", admin.rsplit_once('/').unwrap().0);
        let ttl = Duration::from_millis(300);
        let a = ClusterStore::open(&url, &url, "a", 2, ttl).await.unwrap();
        let b = ClusterStore::open(&url, &url, "b", 2, ttl).await.unwrap();
        let epoch_a = a.take(0, 300).await.unwrap().expect("a free lease");
        assert_eq!(b.take(0, 300).await.unwrap(), None, "held by a");
        let store_a = a.partition(0);
        store_a.scope().unwrap().set_epoch(epoch_a);
        let mut tx = store_a.begin().await.unwrap();
        store_a
            .insert_events(&mut tx, &[event(1, "e1", "p")])
            .await
            .unwrap();
        tx.commit("a test").await.unwrap();

        tokio::time::sleep(Duration::from_millis(350)).await;
        let epoch_b = b.take(0, 10_000).await.unwrap().expect("an expired lease");
        assert_eq!(epoch_b, epoch_a + 1);
        let refused = store_a.begin().await.err().expect("a deposed owner's write");
        assert!(refused.is_fenced(), "{refused:?}");
        assert!(!a.renew(&[(0, epoch_a)], 300).await.unwrap().contains(&0));
        let store_b = b.partition(0);
        store_b.scope().unwrap().set_epoch(epoch_b);
        let mut tx = store_b.begin().await.unwrap();
        store_b
            .insert_events(&mut tx, &[event(2, "e2", "q")])
            .await
            .unwrap();
        tx.commit("a test").await.unwrap();

        // The log reaches seq 2, but a's rows end at 1: a group of a's from seq 2 did not land.
        assert_eq!(store_a.next_seq().await.unwrap(), 3);
        assert_eq!(store_a.next_seq_landed().await.unwrap(), 2);
        assert_eq!(store_b.next_seq_landed().await.unwrap(), 3);
        assert_eq!(a.log_ends().await.unwrap(), vec![2, 0]);
        a.close().await;
        b.close().await;
        postgres_admin(&format!("DROP DATABASE {name} WITH (FORCE)")).await;
    }

    /// A partition's store reads its own schema whatever schema a pooled connection read last:
    /// the unsealed tail a takeover starts its writer with (and the player index `rebuild`
    /// checks) are partition 1's after every connection read partition 0's.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_partitions_reads_are_of_its_own_schema() {
        let name = format!(
            "standings_schemas_{}_{}",
            std::process::id(),
            crate::clock::now_ms()
        );
        let admin = postgres_admin(&format!("CREATE DATABASE {name}")).await;
        let url = format!("{}/{name}", admin.rsplit_once('/').unwrap().0);
        let node = ClusterStore::open(&url, &url, "a", 2, Duration::from_secs(10))
            .await
            .unwrap();
        for (p, events) in [
            (0, vec![event(1, "e1", "p"), event(2, "e2", "q")]),
            (1, vec![event(1, "e3", "r")]),
        ] {
            let store = node.partition(p);
            let epoch = node.take(p, 10_000).await.unwrap().expect("a free lease");
            store.scope().unwrap().set_epoch(epoch);
            let mut tx = store.begin().await.unwrap();
            store.insert_events(&mut tx, &events).await.unwrap();
            tx.commit("a test").await.unwrap();
        }
        let (zero, one) = (node.partition(0), node.partition(1));
        // At once, so that every connection of the pool reads partition 0's schema.
        let reads = futures_util::future::join_all((0..16).map(|_| zero.next_seq())).await;
        assert!(reads.iter().all(|r| *r.as_ref().unwrap() == 3));
        assert_eq!(one.tail_keys(0).await.unwrap().len(), 1);
        assert_eq!(zero.tail_keys(0).await.unwrap().len(), 2);
        assert_eq!(one.check_player_index().await.unwrap().1, Vec::<i64>::new());
        node.close().await;
        postgres_admin(&format!("DROP DATABASE {name} WITH (FORCE)")).await;
    }
}
