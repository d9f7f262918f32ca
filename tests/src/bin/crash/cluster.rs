//! The crash harness's cluster mode (`--db cluster`): several origins over one fresh database,
//! each a node of one cluster, with the games spread over every partition.
//!
//! The clients send each request to a random node (every node answers every request, the
//! owner's answer carrying `x-standings-served-by`) and record every answer: when it was asked
//! and answered, its status, the partitions it was for and the node that served it. A watcher
//! reads `GET /v1/cluster` from a running node every [`OBSERVE_EVERY`], so the run keeps a
//! timeline of every partition's owner and lease epoch. The chaos controller, at seeded random
//! moments of the load:
//! - SIGKILLs an owner (a node that owns a partition per `GET /v1/cluster`) and restarts it,
//!   half the time at once and half the time once its partitions were taken over; the takeover
//!   time of each of its partitions is from the kill to the first 2xx answer for it;
//! - stops one (SIGSTOP) past its lease, until another node's table shows each of its partitions
//!   taken at a newer epoch, then resumes it (SIGCONT): a zombie (the first one owns the game
//!   the live subscribers follow, whose streams must then move to the new owner);
//! - restarts every node in turn with SIGTERM (each hands its partitions over before it exits),
//!   waiting for it to exit and, restarted, to take its share again: a rolling restart.
//!
//! After each it waits until the cluster settled (every partition owned by a running node, each
//! node at its fair share). The clients go at [`ACTION_RATE`] meanwhile, and the last
//! [`RESERVE`] submissions at [`TRICKLE_RATE`] until the chaos controller is done, so that every
//! action runs under load however fast the load is between them (an action during which fewer
//! than [`UNDER_LOAD`] requests were answered fails the run).
//!
//! What must hold, beside what the single-service mode checks (every acknowledged event in the
//! log once and nothing refused, resends answered DUPLICATE, both boards of every game equal to
//! the model, `standings rebuild` equal to the live digests, the live subscribers and the
//! snapshot reader):
//! - no node answers 2xx for a partition another node held at one epoch throughout the request
//!   (checked against the timeline), so a zombie acknowledges nothing once its partitions moved;
//! - in each partition's log, ordered by `seq`, the lease epoch each row was written under never
//!   decreases and is never below 1: no row of a deposed owner follows its successor's;
//! - every acknowledged event is in its game's partition;
//! - every board's digest is the same through every node;
//! - a read handed a write's position (`min_position`; a tenth of the single events stored are
//!   followed by one, through a random node, which may answer from its warm copy) is never
//!   older than the write: it shows the event's value on the `best` board, or is refused with a
//!   503 that has a code;
//! - no 5xx but 503s with a code, and those only while a node is killed or stopped: none during
//!   a rolling restart, none otherwise.
//!
//! With `CRASH_DUMP=PATH` in its environment the run also writes every answer (node asked, when
//! asked and answered, status, partitions, nodes that served it, a 5xx's code) and the chaos
//! controller's log to PATH, to look into a failure.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use standings_tests::cluster::{partition_of, schema_of};
use standings_tests::http::HttpConn;
use standings_tests::service::{ADMIN_TOKEN, Database, Service, free_local_addr, psql, psql_text};
use standings_tests::workload::Rng;

use super::{
    Args, Event, GAME, Ledger, Load, Progress, READY_TIMEOUT, SUBSCRIBERS, Subscriber, Tally, Watching,
    boards_of, check_boards, check_logged, check_subscribers, define_boards, digests, finish_clients,
    finish_snapshot_reader, follow, read_snapshots, resend_all, spawn_clients,
};

/// How often the watcher reads the cluster's table.
const OBSERVE_EVERY: Duration = Duration::from_millis(50);
/// Submissions per second the clients make while the chaos controller acts (and until the
/// cluster settled after it).
const ACTION_RATE: f64 = 100.0;
/// The last submissions of the load, at most, that go at [`TRICKLE_RATE`] until the chaos
/// controller is done, so that its last actions run under load too.
const RESERVE: u64 = 1_000;
/// Submissions per second in the reserve.
const TRICKLE_RATE: f64 = 20.0;
/// The fewest answers to requests asked during an action for it to count as under load.
const UNDER_LOAD: usize = 10;
/// How long the cluster may take to settle after an action, and a stopped or killed owner's
/// partitions to be taken over.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a node may take to exit after SIGTERM (it hands its partitions over first).
const EXIT_TIMEOUT: Duration = Duration::from_secs(60);
/// The secret the nodes show each other.
const CLUSTER_SECRET: &str = "crash-cluster-secret-000000";

/// A node's state, as the watcher needs it (it asks only running nodes).
const DOWN: u8 = 0;
const UP: u8 = 1;
const PAUSED: u8 = 2;

/// The origins: one [`Service`] per node over one database this run creates and drops.
struct Origins {
    admin_url: String,
    name: String,
    url: String,
    nodes: Vec<Service>,
    ids: Vec<String>,
}

impl Origins {
    /// Creates the database and writes each node's config (none started).
    fn prepare(args: &Args) -> Result<Origins, String> {
        let name = format!("standings_crash_cluster_{}", std::process::id());
        let base = args
            .postgres_url
            .rsplit_once('/')
            .map(|(base, _)| base)
            .ok_or("the PostgreSQL URL has no database part")?;
        psql(
            &args.postgres_url,
            &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        )?;
        psql(&args.postgres_url, &format!("CREATE DATABASE {name}"))?;
        let mut origins = Origins {
            admin_url: args.postgres_url.clone(),
            url: format!("{base}/{name}"),
            name,
            nodes: Vec::new(),
            ids: Vec::new(),
        };
        for i in 0..args.nodes {
            let id = format!("node-{i}");
            let addr = free_local_addr()?;
            let extra = format!(
                "checkpoint_every_events = {checkpoint}\npin_http_threads = false\nhttp_threads = 1\nshard_threads = 2\n{feed}\n\
                 [cluster]\nnode_id = \"{id}\"\nadvertise_url = \"http://{addr}\"\npartitions = {partitions}\n\
                 lease_ttl_ms = {ttl}\nstandby = {standby}\nsecret = \"{CLUSTER_SECRET}\"\n",
                checkpoint = args.checkpoint_every,
                feed = super::feed::CONFIG,
                partitions = args.partitions,
                ttl = args.lease_ttl_ms,
                standby = !args.no_standby,
            );
            origins.nodes.push(Service::prepare_listening(
                &args.standings_bin,
                Database::Shared(origins.url.clone()),
                args.keep,
                &format!("crash-{id}"),
                addr,
                &extra,
            )?);
            origins.ids.push(id);
        }
        Ok(origins)
    }

    fn addrs(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.addr.clone()).collect()
    }

    /// The end of every node's log, for error messages.
    fn log_tails(&self) -> String {
        self.nodes
            .iter()
            .zip(&self.ids)
            .map(|(n, id)| format!("{id}: {}", n.log_tail()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Origins {
    /// Never leaves a node running or the database behind.
    fn drop(&mut self) {
        self.nodes.clear();
        if let Err(e) = psql(
            &self.admin_url,
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        ) {
            eprintln!("crash: {e}");
        }
    }
}

/// `count` games, the first `partitions` of them one in each partition: `crash` (whose boards
/// the live subscribers follow), then `crash-N`; with their partitions.
///
/// The harness hashes the names itself only to choose them; where each game's boards were
/// stored is then read from the database ([`check_placement`]), so a copy that drifted from the
/// origin's hash fails the run rather than the choice.
fn choose_games(count: usize, partitions: u32) -> Vec<(String, u32)> {
    let mut covered = vec![false; partitions as usize];
    let mut games = vec![(GAME.to_string(), partition_of(GAME, partitions))];
    covered[games[0].1 as usize] = true;
    let mut n = 0u64;
    while games.len() < count {
        n += 1;
        let game = format!("crash-{n}");
        let p = partition_of(&game, partitions);
        if covered.iter().all(|c| *c) || !covered[p as usize] {
            covered[p as usize] = true;
            games.push((game, p));
        }
    }
    games
}

/// Each game's boards are stored in the partition the harness expects, and nowhere else.
fn check_placement(url: &str, games: &[(String, u32)], partitions: u32) -> Result<(), String> {
    for p in 0..partitions {
        let stored: HashSet<String> =
            psql_text(url, &format!("SELECT DISTINCT game FROM {}.boards", schema_of(p)))?
                .lines()
                .map(str::to_string)
                .collect();
        let expected: HashSet<String> = games
            .iter()
            .filter(|(_, q)| *q == p)
            .map(|(g, _)| g.clone())
            .collect();
        if stored != expected {
            return Err(format!(
                "partition {p} holds the boards of {stored:?}, but the harness placed {expected:?} there: its hash differs from the origin's"
            ));
        }
    }
    Ok(())
}

/// One answer a client got.
struct Answered {
    /// The node asked.
    node: usize,
    asked: Instant,
    answered: Instant,
    status: u16,
    /// A 5xx answer's code.
    code: Option<String>,
    /// The partitions of the request's events, a bit each.
    partitions: u64,
    /// The nodes `x-standings-served-by` names, a bit each (several for a batch split across
    /// partitions).
    served_by: u64,
}

/// What the clients share in cluster mode: the partition of each game, the answers they got,
/// and the pace the chaos controller sets them.
pub(super) struct Watch {
    games: HashMap<String, u32>,
    ids: Vec<String>,
    answers: Mutex<Vec<Answered>>,
    /// The paces the clients keep: [`ACTION_RATE`] while an action runs, [`TRICKLE_RATE`] in
    /// the reserve while the chaos controller is not done.
    paces: Mutex<Paces>,
    /// Submissions admitted so far.
    admitted: AtomicU64,
    /// Where the reserve begins: the last submissions, kept for the actions still to come.
    reserve_from: u64,
    /// Set when the chaos controller is done: the reserve goes at full speed.
    chaos_done: AtomicBool,
}

/// The clients' paces, each from when it began.
#[derive(Default)]
struct Paces {
    action: Option<Pace>,
    trickle: Option<Pace>,
}

/// A pace: since when, the submissions admitted then, and how many more per second.
#[derive(Clone, Copy)]
struct Pace {
    since: Instant,
    base: u64,
    rate: f64,
}

impl Pace {
    fn admits(&self, admitted: u64) -> bool {
        admitted <= self.base + (self.since.elapsed().as_secs_f64() * self.rate) as u64
    }
}

impl Watch {
    /// Waits until the paces admit `size` more submissions.
    pub(super) async fn pace(&self, size: u64) {
        loop {
            let after = self.admitted.load(Ordering::Relaxed) + size;
            let admitted = {
                let mut paces = self.paces.lock().unwrap_or_else(|e| e.into_inner());
                let done = self.chaos_done.load(Ordering::Relaxed);
                if !done && after > self.reserve_from && paces.trickle.is_none() {
                    paces.trickle = Some(Pace {
                        since: Instant::now(),
                        base: after - size,
                        rate: TRICKLE_RATE,
                    });
                }
                paces.action.is_none_or(|p| p.admits(after))
                    && (done || paces.trickle.is_none_or(|p| p.admits(after)))
            };
            if admitted {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.admitted.fetch_add(size, Ordering::Relaxed);
    }

    /// The clients go at [`ACTION_RATE`] (`true`) or as fast as they can.
    fn slow_down(&self, slow: bool) {
        self.paces.lock().unwrap_or_else(|e| e.into_inner()).action = slow.then(|| Pace {
            since: Instant::now(),
            base: self.admitted.load(Ordering::Relaxed),
            rate: ACTION_RATE,
        });
    }

    /// The partitions of events of these games, a bit each.
    pub(super) fn partitions_of<'g>(&self, games: impl Iterator<Item = &'g str>) -> u64 {
        games
            .filter_map(|g| self.games.get(g))
            .fold(0, |mask, p| mask | 1 << p)
    }

    /// Records an answer.
    pub(super) fn answered(
        &self,
        node: usize,
        asked: Instant,
        partitions: u64,
        status: u16,
        headers: Vec<(&str, &[u8])>,
        body: &[u8],
    ) {
        let served_by = headers
            .iter()
            .filter(|(name, _)| name.eq_ignore_ascii_case("x-standings-served-by"))
            .flat_map(|(_, value)| value.split(|b| *b == b','))
            .filter_map(|id| self.ids.iter().position(|known| known.as_bytes() == id))
            .fold(0u64, |mask, i| mask | 1 << i);
        let code = (status >= 500).then(|| {
            serde_json::from_slice::<serde_json::Value>(body)
                .ok()
                .and_then(|v| v["code"].as_str().map(str::to_string))
                .unwrap_or_else(|| "no code".into())
        });
        self.answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Answered {
                node,
                asked,
                answered: Instant::now(),
                status,
                code,
                partitions,
                served_by,
            });
    }
}

/// The cluster's table at one moment: each partition's owner (a node's index; `None` while its
/// lease is free or expired) and epoch, and each node's ownings and liveness.
#[derive(Clone, Debug)]
struct Table {
    leases: Vec<(Option<usize>, i64)>,
    /// Each node: live and not draining.
    ready: Vec<bool>,
}

impl Table {
    fn owned_by(&self, node: usize) -> Vec<(u32, i64)> {
        self.leases
            .iter()
            .enumerate()
            .filter(|(_, (owner, _))| *owner == Some(node))
            .map(|(p, (_, epoch))| (p as u32, *epoch))
            .collect()
    }
}

/// One reading of the table: asked and answered when.
struct Observed {
    asked: Instant,
    answered: Instant,
    table: Table,
}

/// The watcher of the cluster's table, and the timeline it keeps.
struct Leases {
    addrs: Vec<String>,
    ids: Vec<String>,
    states: Vec<AtomicU8>,
    next: AtomicUsize,
    timeline: Mutex<Vec<Observed>>,
    stop: AtomicBool,
    /// The nodes' lease time.
    ttl: Duration,
    /// When the run began, and what the chaos controller did when, for error messages.
    origin: Instant,
    log: Mutex<Vec<(Instant, String)>>,
}

impl Leases {
    fn state(&self, node: usize, state: u8) {
        self.states[node].store(state, Ordering::Relaxed);
        let what = match state {
            DOWN => "is down",
            UP => "is up (ready)",
            _ => "is stopped",
        };
        self.note(format!("{} {what}", self.ids[node]));
    }

    /// Notes what the chaos controller did.
    fn note(&self, what: String) {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((Instant::now(), what));
    }

    /// Seconds since the run began, for messages.
    fn at(&self, t: Instant) -> String {
        format!("+{:.3} s", t.saturating_duration_since(self.origin).as_secs_f64())
    }

    /// The chaos controller's log.
    fn log_lines(&self) -> String {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(t, what)| format!("{} {what}", self.at(*t)))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The table as a running node answers it now (each in turn), recorded in the timeline.
    async fn observe(&self) -> Result<Table, String> {
        let n = self.addrs.len();
        let first = self.next.fetch_add(1, Ordering::Relaxed);
        let mut why = String::from("no node is running");
        for k in 0..n {
            let i = (first + k) % n;
            if self.states[i].load(Ordering::Relaxed) != UP {
                continue;
            }
            let asked = Instant::now();
            match tokio::time::timeout(Duration::from_secs(2), self.read(i)).await {
                Ok(Ok(table)) => {
                    self.timeline
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(Observed {
                            asked,
                            answered: Instant::now(),
                            table: table.clone(),
                        });
                    return Ok(table);
                }
                Ok(Err(e)) => why = e,
                Err(_) => why = format!("{} did not answer within 2 s", self.ids[i]),
            }
        }
        Err(format!("no node answered GET /v1/cluster: {why}"))
    }

    async fn read(&self, node: usize) -> Result<Table, String> {
        let mut conn = HttpConn::connect(&self.addrs[node], ADMIN_TOKEN).await?;
        let answer = conn.get("/v1/cluster").await?;
        if answer.status != 200 {
            return Err(format!(
                "GET /v1/cluster on {} answered {}: {}",
                self.ids[node],
                answer.status,
                conn.body_text(&answer)
            ));
        }
        let value: serde_json::Value = serde_json::from_slice(conn.body(&answer))
            .map_err(|e| format!("GET /v1/cluster is not JSON: {e}"))?;
        let index = |id: &serde_json::Value| id.as_str().and_then(|id| self.ids.iter().position(|k| k == id));
        let leases = value["leases"]
            .as_array()
            .ok_or("GET /v1/cluster without leases")?
            .iter()
            .map(|l| (index(&l["owner"]), l["epoch"].as_i64().unwrap_or(-1)))
            .collect();
        let mut ready = vec![false; self.ids.len()];
        for n in value["nodes"].as_array().ok_or("GET /v1/cluster without nodes")? {
            if let Some(i) = index(&n["node_id"]) {
                ready[i] = n["live"] == true && n["draining"] == false;
            }
        }
        Ok(Table { leases, ready })
    }

    /// Waits until the cluster settled: every partition owned by a running node, each running
    /// node live, owning at least one and at most its fair share.
    async fn settled(&self, partitions: u32) -> Result<Table, String> {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        let mut last = None;
        while Instant::now() < deadline {
            if let Ok(table) = self.observe().await {
                let up: Vec<usize> = (0..self.addrs.len())
                    .filter(|i| self.states[*i].load(Ordering::Relaxed) == UP)
                    .collect();
                let share = (partitions as usize).div_ceil(up.len().max(1));
                let owned_by_up = table
                    .leases
                    .iter()
                    .all(|(o, _)| o.is_some_and(|o| up.contains(&o)));
                let fair = up.iter().all(|i| {
                    let owns = table.owned_by(*i).len();
                    table.ready[*i] && (1..=share).contains(&owns)
                });
                if owned_by_up && fair {
                    self.note(format!("settled: {:?}", table.leases));
                    // Each node learns the owners from the table at its next lease tick (a
                    // third of a lease time): until then one may still not know where a
                    // partition that just moved is.
                    tokio::time::sleep(self.ttl).await;
                    return Ok(table);
                }
                last = Some(table);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(format!(
            "the cluster did not settle within {SETTLE_TIMEOUT:?}: {last:?}"
        ))
    }

    /// Waits until each of `partitions` (with the epoch it had) was taken at a newer epoch by a
    /// running node.
    async fn taken_over(&self, partitions: &[(u32, i64)]) -> Result<(), String> {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        let mut last = None;
        while Instant::now() < deadline {
            if let Ok(table) = self.observe().await {
                let moved = partitions.iter().all(|(p, epoch)| {
                    let (owner, now) = table.leases[*p as usize];
                    now > *epoch && owner.is_some()
                });
                if moved {
                    self.note(format!("{partitions:?} taken over: {:?}", table.leases));
                    return Ok(());
                }
                last = Some(table);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Err(format!(
            "the partitions {partitions:?} (partition, epoch) were not taken over within {SETTLE_TIMEOUT:?}: {last:?}"
        ))
    }
}

/// Reads the table every [`OBSERVE_EVERY`] until told to stop.
async fn watch_leases(leases: Arc<Leases>) {
    while !leases.stop.load(Ordering::Relaxed) {
        let _ = leases.observe().await;
        tokio::time::sleep(OBSERVE_EVERY).await;
    }
}

/// What the chaos controller did.
#[derive(Default)]
struct Chaos {
    kills: Vec<Kill>,
    zombies: Vec<Zombie>,
    rolling_restarts: u64,
    /// When each action ran, to its cluster's settling.
    phases: Vec<Phase>,
}

/// A SIGKILL of an owner.
struct Kill {
    at: Instant,
    partitions: Vec<(u32, i64)>,
}

/// An owner stopped past its lease and resumed once its partitions were taken over.
struct Zombie {
    node: usize,
    partitions: Vec<(u32, i64)>,
    stopped: Instant,
    taken_over: Instant,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum PhaseKind {
    Kill,
    Zombie,
    Rolling,
}

struct Phase {
    kind: PhaseKind,
    from: Instant,
    to: Instant,
}

/// The kills, zombies and rolling restarts, at seeded random moments of the load (each at a
/// drawn share of the submissions answered): kills anywhere from 3% to 97%, zombies and
/// rolling restarts from 5% to 60%, so that the load outlasts them.
async fn chaos(
    args: &Args,
    origins: &mut Origins,
    leases: &Leases,
    watch: &Watch,
    tally: &Tally,
    deadline: Instant,
) -> Result<Chaos, String> {
    let mut rng = Rng::stream(args.seed, u64::MAX);
    let mut plan: Vec<(u64, PhaseKind)> = Vec::new();
    for _ in 0..args.kills {
        plan.push((args.events * (30 + rng.below(940)) / 1000, PhaseKind::Kill));
    }
    for _ in 0..args.zombies {
        plan.push((args.events * (50 + rng.below(550)) / 1000, PhaseKind::Zombie));
    }
    for _ in 0..args.rolling_restarts {
        plan.push((args.events * (50 + rng.below(550)) / 1000, PhaseKind::Rolling));
    }
    plan.sort_by_key(|(at, _)| *at);
    let ttl = Duration::from_millis(args.lease_ttl_ms);
    let mut done = Chaos::default();
    for (at, kind) in plan {
        let mut progress = Progress::new(tally);
        while tally.answered.load(Ordering::Relaxed) < at {
            if progress.stalled(tally) {
                return Err(format!(
                    "no submission was answered for {READY_TIMEOUT:?} ({} of {} answered)",
                    tally.answered.load(Ordering::Relaxed),
                    args.events
                ));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the deadline passed before every action was taken ({} of {} submissions answered, the next due at {at})",
                    tally.answered.load(Ordering::Relaxed),
                    args.events
                ));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_micros(rng.below(20_000))).await;
        watch.slow_down(true);
        // The snapshot reader trusts a round only between two actions, once settled.
        tally.moving.store(true, Ordering::Relaxed);
        tally.kills_begun.fetch_add(1, Ordering::Relaxed);
        let from = Instant::now();
        match kind {
            PhaseKind::Kill => {
                let round = done.kills.len();
                let kill = kill_an_owner(
                    origins,
                    leases,
                    &mut rng,
                    ttl,
                    true,
                    None,
                    Some((&watch.games, round)),
                )
                .await?;
                done.kills.push(kill);
            }
            PhaseKind::Zombie => {
                // The first zombie owns the live subscribers' game, so that their streams meet a
                // lease lost under them.
                let subscribed = done
                    .zombies
                    .is_empty()
                    .then(|| partition_of(GAME, args.partitions));
                let zombie = stop_an_owner(origins, leases, &mut rng, ttl, subscribed).await?;
                done.zombies.push(zombie);
            }
            PhaseKind::Rolling => {
                for node in 0..origins.nodes.len() {
                    origins.nodes[node].signal("TERM")?;
                    leases.note(format!("{} SIGTERM", origins.ids[node]));
                    let status = origins.nodes[node].exited(EXIT_TIMEOUT).await?;
                    leases.state(node, DOWN);
                    if !status.success() {
                        return Err(format!(
                            "{} exited with {status} after SIGTERM; {}",
                            origins.ids[node],
                            origins.nodes[node].log_tail()
                        ));
                    }
                    origins.nodes[node].start(READY_TIMEOUT).await?;
                    leases.state(node, UP);
                    leases.settled(args.partitions).await?;
                }
                done.rolling_restarts += 1;
            }
        }
        leases.settled(args.partitions).await?;
        tally.moving.store(false, Ordering::Relaxed);
        done.phases.push(Phase {
            kind,
            from,
            to: Instant::now(),
        });
        watch.slow_down(false);
    }
    Ok(done)
}

/// SIGKILLs a node that owns a partition and restarts it: with `sometimes_at_once`, half the
/// time at once (its partitions are taken over while it starts, by it or another node),
/// otherwise once they were taken over. With `acked` (the games and the kill's number), the
/// owner first acknowledges what it keeps outside the log (a board definition, a friend list)
/// for a game of each of its partitions, and every one is checked through another node once
/// the partitions moved.
async fn kill_an_owner(
    origins: &mut Origins,
    leases: &Leases,
    rng: &mut Rng,
    ttl: Duration,
    sometimes_at_once: bool,
    owning: Option<u32>,
    acked: Option<(&HashMap<String, u32>, usize)>,
) -> Result<Kill, String> {
    let table = leases.observe().await?;
    let (node, partitions) = an_owner(&table, leases, rng, owning)?;
    let outside_the_log: Vec<String> = match acked {
        None => Vec::new(),
        Some((games, round)) => {
            let mut of_victim: Vec<String> = partitions
                .iter()
                .filter_map(|(p, _)| games.iter().find(|(_, gp)| *gp == p).map(|(g, _)| g.clone()))
                .collect();
            of_victim.sort();
            for game in &of_victim {
                acknowledge_outside_the_log(&origins.addrs()[node], game, round).await?;
            }
            of_victim.into_iter().map(|g| format!("{g}#{round}")).collect()
        }
    };
    let at = Instant::now();
    origins.nodes[node].kill()?;
    leases.note(format!("{} SIGKILL, owning {partitions:?}", origins.ids[node]));
    leases.state(node, DOWN);
    let at_once = sometimes_at_once && rng.below(2) == 0;
    if at_once {
        tokio::time::sleep(Duration::from_millis(rng.below(ttl.as_millis() as u64 / 2))).await;
        origins.nodes[node].start(READY_TIMEOUT).await?;
        leases.state(node, UP);
    }
    leases.taken_over(&partitions).await?;
    if !at_once {
        tokio::time::sleep(Duration::from_millis(rng.below(500))).await;
        origins.nodes[node].start(READY_TIMEOUT).await?;
        leases.state(node, UP);
    }
    leases.settled(table.leases.len() as u32).await?;
    let other = &origins.addrs()[(node + 1) % origins.nodes.len()];
    for acked in &outside_the_log {
        let (game, round) = acked.split_once('#').unwrap_or((acked, "0"));
        check_acknowledged_outside_the_log(other, game, round).await?;
    }
    Ok(Kill { at, partitions })
}

/// The board and the friend list an owner acknowledges for `game` before it is killed in kill
/// number `round`: neither is a log entry.
async fn acknowledge_outside_the_log(addr: &str, game: &str, round: usize) -> Result<(), String> {
    let mut conn = HttpConn::connect(addr, ADMIN_TOKEN).await?;
    for (path, body, wanted) in [
        (
            format!("/v1/boards/{game}/acked/k{round}/global"),
            r#"{"score_mode":"highest"}"#,
            201,
        ),
        (
            format!("/v1/games/{game}/players/acked-{round}/friends"),
            r#"{"friends":["acked-friend"]}"#,
            200,
        ),
    ] {
        let answer = conn.put(&path, body.as_bytes()).await?;
        if answer.status != wanted {
            return Err(format!(
                "PUT {path} to the owner about to be killed answered {}: {}",
                answer.status,
                conn.body_text(&answer)
            ));
        }
    }
    Ok(())
}

/// What [`acknowledge_outside_the_log`] wrote, read through `addr` after the takeover: the
/// board is known (its top answers, the same definition is answered 200) and the friend list
/// is the one acknowledged.
async fn check_acknowledged_outside_the_log(addr: &str, game: &str, round: &str) -> Result<(), String> {
    let mut conn = HttpConn::connect(addr, ADMIN_TOKEN).await?;
    let board = format!("{game}/acked/k{round}/global");
    let top = conn.get(&format!("/v1/leaderboards/{board}/top")).await?;
    let again = conn
        .put(&format!("/v1/boards/{board}"), br#"{"score_mode":"highest"}"#)
        .await?;
    let again_text = conn.body_text(&again);
    let friends = conn
        .get(&format!("/v1/leaderboards/{board}/friends-of/acked-{round}"))
        .await?;
    let friends_text = conn.body_text(&friends);
    if top.status != 200
        || again.status != 200
        || friends.status != 200
        || !friends_text.contains("acked-friend")
    {
        return Err(format!(
            "after a takeover, what the killed owner acknowledged outside the log is not served: top of {board} {}, its definition again {} ({again_text}), friends-of {} ({friends_text})",
            top.status, again.status, friends.status
        ));
    }
    Ok(())
}

/// SIGSTOPs a node that owns a partition for at least two lease times and until each of its
/// partitions was taken at a newer epoch, then SIGCONTs it.
async fn stop_an_owner(
    origins: &mut Origins,
    leases: &Leases,
    rng: &mut Rng,
    ttl: Duration,
    owning: Option<u32>,
) -> Result<Zombie, String> {
    let table = leases.observe().await?;
    let (node, partitions) = an_owner(&table, leases, rng, owning)?;
    let stopped = Instant::now();
    origins.nodes[node].signal("STOP")?;
    leases.note(format!("{} SIGSTOP, owning {partitions:?}", origins.ids[node]));
    leases.state(node, PAUSED);
    tokio::time::sleep(ttl * 2).await;
    leases.taken_over(&partitions).await?;
    let taken_over = Instant::now();
    origins.nodes[node].signal("CONT")?;
    leases.state(node, UP);
    Ok(Zombie {
        node,
        partitions,
        stopped,
        taken_over,
    })
}

/// A running node that owns at least one partition (partition `owning`, if given), drawn, and
/// its partitions with their epochs.
fn an_owner(
    table: &Table,
    leases: &Leases,
    rng: &mut Rng,
    owning: Option<u32>,
) -> Result<(usize, Vec<(u32, i64)>), String> {
    let owners: Vec<usize> = (0..leases.addrs.len())
        .filter(|i| leases.states[*i].load(Ordering::Relaxed) == UP && !table.owned_by(*i).is_empty())
        .filter(|i| owning.is_none_or(|p| table.leases[p as usize].0 == Some(*i)))
        .collect();
    if owners.is_empty() {
        return Err(format!("no running node owns a partition: {table:?}"));
    }
    let node = owners[rng.below(owners.len() as u64) as usize];
    Ok((node, table.owned_by(node)))
}

/// The cluster mode's run: see the module doc.
pub(super) async fn run(args: &Args) -> Result<String, String> {
    let started = Instant::now();
    let deadline = started + args.timeout;
    let games = choose_games(args.games, args.partitions);
    let mut origins = Origins::prepare(args)?;
    let leases = Arc::new(Leases {
        addrs: origins.addrs(),
        ids: origins.ids.clone(),
        states: (0..args.nodes).map(|_| AtomicU8::new(DOWN)).collect(),
        next: AtomicUsize::new(0),
        timeline: Mutex::new(Vec::new()),
        stop: AtomicBool::new(false),
        ttl: Duration::from_millis(args.lease_ttl_ms),
        origin: started,
        log: Mutex::new(Vec::new()),
    });
    for node in 0..args.nodes {
        origins.nodes[node].start(READY_TIMEOUT).await?;
        leases.state(node, UP);
    }
    leases.settled(args.partitions).await?;
    let addrs = origins.addrs();
    let (hook_url, receiver) = standings_tests::receiver::Receiver::start(super::feed::FAIL_EVERY).await?;
    for (i, (game, _)) in games.iter().enumerate() {
        define_boards(&addrs[i % addrs.len()], game).await?;
        super::feed::register(&addrs[(i + 1) % addrs.len()], game, &hook_url).await?;
    }
    check_placement(&origins.url, &games, args.partitions)?;

    let watch = Arc::new(Watch {
        games: games.iter().cloned().collect(),
        ids: origins.ids.clone(),
        answers: Mutex::new(Vec::new()),
        paces: Mutex::new(Paces::default()),
        admitted: AtomicU64::new(0),
        reserve_from: args.events - (args.events / 10).min(RESERVE),
        chaos_done: AtomicBool::new(false),
    });
    let load = Arc::new(Load {
        addrs: addrs.clone(),
        games: games.iter().map(|(g, _)| Arc::from(g.as_str())).collect(),
        cluster: Some(watch.clone()),
    });
    let tally = Arc::new(Tally::default());
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let watching = Arc::new(Watching::default());
    // The live subscribers and the snapshot reader, each through a node of its own.
    let mut subscribers = Vec::new();
    for (i, (board, view, transport)) in SUBSCRIBERS.into_iter().enumerate() {
        let subscriber = Arc::new(Subscriber {
            board,
            view: view.parse().map_err(|e| format!("the view {view}: {e}"))?,
            transport,
            held: Mutex::new(None),
            seen: Mutex::new((None, None)),
        });
        let task = tokio::spawn(follow(
            addrs[i % addrs.len()].clone(),
            subscriber.clone(),
            watching.clone(),
            ledger.clone(),
        ));
        subscribers.push((subscriber, task));
    }
    let reader = tokio::spawn(read_snapshots(
        addrs[addrs.len() - 1].clone(),
        tally.clone(),
        watching.clone(),
        ledger.clone(),
    ));
    let watcher = tokio::spawn(watch_leases(leases.clone()));
    let load_started = Instant::now();
    let clients = spawn_clients(args, &load, deadline, &tally, &ledger);
    let chaos = chaos(args, &mut origins, &leases, &watch, &tally, deadline).await;
    watch.chaos_done.store(true, Ordering::Relaxed);
    let finished = finish_clients(clients, &tally, chaos.is_ok()).await;
    let chaos = chaos.map_err(|why| format!("{why}\n{}", origins.log_tails()))?;
    finished.map_err(|why| format!("{why}\n{}", origins.log_tails()))?;
    if Instant::now() >= deadline {
        return Err(format!("the run passed its deadline of {:?}", args.timeout));
    }
    let load_took = load_started.elapsed();

    // One more crash, of the owner of the live subscribers' game, so that the checks read what
    // a restart and a takeover restore, and every subscriber comes back once more, to quiet
    // boards (a view that did not change is sent nothing, so its version moves only then).
    tally.moving.store(true, Ordering::Relaxed);
    tally.kills_begun.fetch_add(1, Ordering::Relaxed);
    let mut rng = Rng::stream(args.seed, u64::MAX - 1);
    kill_an_owner(
        &mut origins,
        &leases,
        &mut rng,
        Duration::from_millis(args.lease_ttl_ms),
        false,
        Some(partition_of(GAME, args.partitions)),
        None,
    )
    .await?;
    leases.settled(args.partitions).await?;
    tally.moving.store(false, Ordering::Relaxed);
    let live = check_subscribers(&addrs[0], &subscribers).await;
    let snapshots = finish_snapshot_reader(&tally, &watching).await;
    watching.stop.store(true, Ordering::Relaxed);
    leases.stop.store(true, Ordering::Relaxed);
    for (_, task) in &subscribers {
        task.abort();
    }
    reader.abort();
    let _ = watcher.await;

    let (acknowledged, refused, failures) = {
        let ledger = ledger
            .lock()
            .map_err(|_| "a client panicked holding the ledger")?;
        (
            ledger.acknowledged.clone(),
            ledger.refused.clone(),
            ledger.failures.clone(),
        )
    };
    let mut problems = failures;
    if let Err(why) = &live {
        problems.push(why.clone());
    }
    if let Err(why) = &snapshots {
        problems.push(why.clone());
    }
    let mut order: HashMap<String, Vec<String>> = HashMap::new();
    let logged = match check_partitions(
        &origins.url,
        &games,
        args.partitions,
        &acknowledged,
        &refused,
        &mut order,
    ) {
        Ok(logged) => logged,
        Err(why) => {
            problems.push(why);
            String::from("NOT checked")
        }
    };
    let boards: Vec<String> = games
        .iter()
        .flat_map(|(game, _)| boards_of(game).map(|(board, _)| board))
        .collect();
    let before = digests(&addrs[0], &boards).await?;
    if let Err(why) = resend_all(&addrs[1 % addrs.len()], &acknowledged).await {
        problems.push(why);
    }
    for (i, addr) in addrs.iter().enumerate() {
        let seen = digests(addr, &boards).await?;
        if seen != before {
            let differ: Vec<String> = boards
                .iter()
                .zip(before.iter().zip(&seen))
                .filter(|(_, (a, b))| a != b)
                .map(|(board, (a, b))| {
                    format!(
                        "{board}: {a:?} before the resends through node-0, {b:?} after through {}",
                        origins.ids[i]
                    )
                })
                .collect();
            problems.push(format!(
                "the digests are not the same through every node (or the resends changed them): {}",
                differ.join("; ")
            ));
        }
    }
    for (i, (game, _)) in games.iter().enumerate() {
        if let Err(why) = check_boards(&addrs[i % addrs.len()], game, &acknowledged).await {
            problems.push(why);
        }
    }
    let mut feeds = std::collections::BTreeMap::new();
    for (i, (game, _)) in games.iter().enumerate() {
        match super::feed::settled(&addrs[i % addrs.len()], game).await {
            Ok(feed) => {
                feeds.insert(game.clone(), feed);
            }
            Err(why) => problems.push(why),
        }
    }
    let order: HashMap<String, Vec<&Event>> = order
        .into_iter()
        .map(|(game, ids)| (game, ids.iter().filter_map(|id| acknowledged.get(id)).collect()))
        .collect();
    let feed = super::feed::check(&feeds, &order, |game| boards_of(game).to_vec(), &receiver).unwrap_or_else(
        |why| {
            problems.push(why);
            "feed: FAILED".into()
        },
    );
    let rebuild = match origins.nodes[0].rebuild() {
        Ok(took) => format!("{:.2} s", took.as_secs_f64()),
        Err(why) => {
            problems.push(why);
            "FAILED".into()
        }
    };

    let answers = std::mem::take(&mut *watch.answers.lock().unwrap_or_else(|e| e.into_inner()));
    if let Ok(path) = std::env::var("CRASH_DUMP") {
        let mut text = String::new();
        for a in &answers {
            text.push_str(&format!(
                "{}\t{}\t{}\t{}\t{:b}\t{:b}\t{:?}\n",
                a.node,
                leases.at(a.asked),
                leases.at(a.answered),
                a.status,
                a.partitions,
                a.served_by,
                a.code
            ));
        }
        text.push_str(&leases.log_lines());
        let _ = std::fs::write(path, text);
    }
    let timeline = std::mem::take(&mut *leases.timeline.lock().unwrap_or_else(|e| e.into_inner()));
    let foreign = foreign_answers(&answers, &timeline, &origins.ids);
    problems.extend(foreign.violations.iter().cloned());
    let zombie_answers = zombie_answers(&answers, &chaos.zombies);
    let phases = classify_5xx(&answers, &chaos.phases, &|t| leases.at(t), &origins.ids);
    problems.extend(phases.problems.iter().cloned());
    let mut least_load = None;
    for phase in &chaos.phases {
        let load = answers
            .iter()
            .filter(|a| a.asked >= phase.from && a.asked <= phase.to)
            .count();
        least_load = Some(least_load.map_or(load, |l: usize| l.min(load)));
        if load < UNDER_LOAD {
            problems.push(format!(
                "the {:?} from {} to {} ran with {load} requests answered: not under load",
                phase.kind,
                leases.at(phase.from),
                leases.at(phase.to)
            ));
        }
    }
    let takeovers = takeover_times(&answers, &chaos.kills);
    if takeovers.unmeasured > 0 {
        // Every partition gets events all along, so one with no 2xx after a kill is stuck (the
        // clients would have stalled first).
        problems.push(format!(
            "{} partitions of the killed owners were never answered 2xx again",
            takeovers.unmeasured
        ));
    }
    let zombie_takeovers = takeover_times(
        &answers,
        &chaos
            .zombies
            .iter()
            .map(|z| Kill {
                at: z.stopped,
                partitions: z.partitions.clone(),
            })
            .collect::<Vec<_>>(),
    );

    let t = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let summary = format!(
        "cluster of {nodes} nodes, {partitions} partitions, lease_ttl_ms {ttl}, {standby}: \
         {events} submissions for {games} games by {clients} clients in {secs:.1} s ({requests} requests, \
         {answers} answers recorded): {acked} events acknowledged ({dups} duplicate resends answered \
         DUPLICATE, {late} LATE), {conflicts} conflicting resends and {invalid} invalid events refused; \
         {kills} kills of owners (and one more before the checks), takeover (kill to the partition's first 2xx) \
         p50 {p50} and max {max} over {measured} partitions; {zombies} zombies ({zombie_partitions} partitions, \
         stop to first 2xx p50 {zp50} max {zmax}; {zombie_answers}); {rolling} rolling restarts of every node \
         ({rolling_answers} answers meanwhile); at least {least_load} requests answered during each action; retries: {conn} after a connection error, {unavail} after a 503; \
         {position_reads} reads handed a write's position never older than it ({by_copies} answered by a warm copy, {unanswered} refused with a 503 or cut off); \
         503s by phase: {by_phase}; {errors} other 5xx; {foreign}; log checked ({logged}), resends changed \
         nothing, every board's digest the same through every node, every board equal to the model, \
         rebuild {rebuild}; {live}; {snapshots}; {feed}",
        nodes = args.nodes,
        partitions = args.partitions,
        ttl = args.lease_ttl_ms,
        standby = if args.no_standby {
            "no standbys"
        } else {
            "warm standbys"
        },
        events = args.events,
        games = games.len(),
        clients = args.clients,
        secs = load_took.as_secs_f64(),
        requests = t(&tally.requests),
        answers = answers.len(),
        acked = acknowledged.len(),
        dups = t(&tally.duplicates),
        late = t(&tally.late),
        conflicts = t(&tally.conflicts),
        invalid = t(&tally.invalid),
        kills = chaos.kills.len(),
        p50 = takeovers.p50(),
        max = takeovers.max(),
        measured = takeovers.times.len(),
        zombies = chaos.zombies.len(),
        zombie_partitions = chaos.zombies.iter().map(|z| z.partitions.len()).sum::<usize>(),
        zp50 = zombie_takeovers.p50(),
        zmax = zombie_takeovers.max(),
        rolling = chaos.rolling_restarts,
        rolling_answers = phases.rolling_answers,
        least_load = least_load.unwrap_or(0),
        conn = t(&tally.connection_retries),
        unavail = t(&tally.unavailable_retries),
        position_reads = t(&tally.position_reads),
        by_copies = t(&tally.position_reads_by_copies),
        unanswered = t(&tally.position_reads_unanswered),
        by_phase = phases.figures(),
        errors = t(&tally.server_errors),
        foreign = foreign.figures(),
        live = watching.live_figures(live.is_ok()),
        snapshots = watching.snapshot_figures(&tally, snapshots.is_ok()),
    );
    if problems.is_empty() {
        Ok(summary)
    } else {
        Err(format!(
            "{} problem(s):\n{}\n(the run: {summary})\nwhat the chaos controller did:\n{}\n{}",
            problems.len(),
            problems[..problems.len().min(20)].join("\n"),
            leases.log_lines(),
            origins.log_tails()
        ))
    }
}

/// The log of every partition, read with `psql`: every acknowledged event in it exactly once,
/// in its game's partition, nothing else ([`check_logged`]); and in each partition, ordered by
/// `seq`, the epochs of the events' and actions' rows never decrease and are at least 1.
/// Returns what it read.
fn check_partitions(
    url: &str,
    games: &[(String, u32)],
    partitions: u32,
    acknowledged: &HashMap<String, Event>,
    refused: &HashSet<String>,
    order: &mut HashMap<String, Vec<String>>,
) -> Result<String, String> {
    let placed: HashMap<&str, u32> = games.iter().map(|(g, p)| (g.as_str(), *p)).collect();
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    let mut epochs_seen = 0usize;
    let mut entries = 0usize;
    for p in 0..partitions {
        let schema = schema_of(p);
        let text = psql_text(
            url,
            &format!("SELECT game, event_id, player_id, value FROM {schema}.score_events ORDER BY seq"),
        )?;
        for line in text.lines() {
            let fields: Vec<&str> = line.splitn(4, '|').collect();
            let [game, id, player, value] = fields[..] else {
                return Err(format!("an unreadable log row in {schema}: {line:?}"));
            };
            let value = value
                .parse()
                .map_err(|_| format!("an unreadable value in {schema}: {line:?}"))?;
            if placed.get(game) != Some(&p) {
                problems.push(format!("{id} of {game} is in partition {p}"));
            }
            rows.push((id.to_string(), player.to_string(), value));
            order.entry(game.to_string()).or_default().push(id.to_string());
        }
        let text = psql_text(
            url,
            &format!(
                "SELECT seq, epoch FROM (SELECT seq, epoch FROM {schema}.score_events \
                 UNION ALL SELECT seq, epoch FROM {schema}.actions) AS log ORDER BY seq"
            ),
        )?;
        let mut last: Option<(i64, i64)> = None;
        let mut epochs = HashSet::new();
        for line in text.lines() {
            let (seq, epoch) = line
                .split_once('|')
                .and_then(|(s, e)| Some((s.parse::<i64>().ok()?, e.parse::<i64>().ok()?)))
                .ok_or_else(|| format!("an unreadable (seq, epoch) in {schema}: {line:?}"))?;
            entries += 1;
            epochs.insert(epoch);
            if epoch < 1 {
                problems.push(format!(
                    "partition {p}'s entry at seq {seq} was written under epoch {epoch}"
                ));
            }
            if let Some((before, at)) = last
                && epoch < at
            {
                problems.push(format!(
                    "partition {p}: the entry at seq {seq} was written under epoch {epoch}, after the entry at seq {before} under epoch {at}"
                ));
            }
            last = Some((seq, epoch));
        }
        epochs_seen += epochs.len();
    }
    if let Err(why) = check_logged(&rows, acknowledged, refused) {
        problems.push(why);
    }
    if problems.is_empty() {
        Ok(format!(
            "{} events in {partitions} partitions, {entries} entries written under {epochs_seen} leases, epochs never decreasing",
            rows.len()
        ))
    } else {
        Err(format!(
            "the partitions' logs are wrong in {} ways, e.g. {}",
            problems.len(),
            problems[..problems.len().min(5)].join("; ")
        ))
    }
}

/// Answers given by a node for a partition that another node held throughout.
struct Foreign {
    /// 2xx answers for one partition, served by one node, that the timeline brackets.
    checked: usize,
    violations: Vec<String>,
}

impl Foreign {
    fn figures(&self) -> String {
        format!(
            "{} answers checked against the lease timeline, {} from a node that did not hold the partition",
            self.checked,
            self.violations.len()
        )
    }
}

/// Every 2xx answer for a single partition served by one node: if the last reading of the table
/// before it was asked and the first after it was answered show the partition held by another
/// node at the same epoch, that node held it throughout (a takeover would have moved the
/// epoch), and the answer came from a node that had no right to give it.
fn foreign_answers(answers: &[Answered], timeline: &[Observed], ids: &[String]) -> Foreign {
    let mut by_answered: Vec<&Observed> = timeline.iter().collect();
    by_answered.sort_by_key(|o| o.answered);
    let mut by_asked: Vec<&Observed> = timeline.iter().collect();
    by_asked.sort_by_key(|o| o.asked);
    let origin = by_asked.first().map(|o| o.asked);
    let since = |t: Instant| origin.map_or(0.0, |o| t.saturating_duration_since(o).as_secs_f64());
    let mut foreign = Foreign {
        checked: 0,
        violations: Vec::new(),
    };
    for a in answers {
        if !(200..300).contains(&a.status) || a.partitions.count_ones() != 1 || a.served_by.count_ones() != 1
        {
            continue;
        }
        let p = a.partitions.trailing_zeros() as usize;
        let node = a.served_by.trailing_zeros() as usize;
        let before = by_answered.partition_point(|o| o.answered <= a.asked);
        let after = by_asked.partition_point(|o| o.asked < a.answered);
        let (Some(before), Some(after)) =
            (before.checked_sub(1).map(|i| by_answered[i]), by_asked.get(after))
        else {
            continue;
        };
        foreign.checked += 1;
        let (held_before, held_after) = (before.table.leases[p], after.table.leases[p]);
        if held_before == held_after
            && let (Some(owner), epoch) = held_before
            && owner != node
        {
            foreign.violations.push(format!(
                "{} answered {} for partition {p}, which {} held at epoch {epoch} from before the request to after its answer ({:.3} s to {:.3} s of the timeline)",
                ids[node],
                a.status,
                ids[owner],
                since(a.asked),
                since(a.answered),
            ));
        }
    }
    foreign
}

/// How many answers each zombie gave for the partitions it lost, asked after they were taken
/// over (each one counts as foreign unless the zombie took the partition back at a newer
/// epoch meanwhile, which [`foreign_answers`] tells).
fn zombie_answers(answers: &[Answered], zombies: &[Zombie]) -> String {
    let mut after = 0;
    for z in zombies {
        let lost: u64 = z.partitions.iter().fold(0, |m, (p, _)| m | 1 << p);
        after += answers
            .iter()
            .filter(|a| {
                (200..300).contains(&a.status)
                    && a.asked >= z.taken_over
                    && a.served_by == 1 << z.node
                    && a.partitions & lost != 0
            })
            .count();
    }
    format!(
        "{after} 2xx answers from a zombie for a partition it had lost, asked after the takeover, each checked against the timeline"
    )
}

/// The 5xx answers by the phase they overlap.
struct Phases {
    kills: HashMap<String, u64>,
    zombies: HashMap<String, u64>,
    rolling: HashMap<String, u64>,
    otherwise: HashMap<String, u64>,
    /// Answers of any status asked during a rolling restart.
    rolling_answers: u64,
    problems: Vec<String>,
}

impl Phases {
    fn figures(&self) -> String {
        let show = |counts: &HashMap<String, u64>| {
            let total: u64 = counts.values().sum();
            let mut codes: Vec<String> = counts.iter().map(|(code, n)| format!("{n} {code}")).collect();
            codes.sort();
            if codes.is_empty() {
                "0".to_string()
            } else {
                format!("{total} ({})", codes.join(", "))
            }
        };
        format!(
            "kills {}, zombies {}, rolling restarts {}, otherwise {}",
            show(&self.kills),
            show(&self.zombies),
            show(&self.rolling),
            show(&self.otherwise)
        )
    }
}

/// Sorts the 5xx answers by the phase they overlap (a kill or a zombie first, then a rolling
/// restart): any during a rolling restart, or outside every phase, is a failure.
fn classify_5xx(
    answers: &[Answered],
    phases: &[Phase],
    at: &dyn Fn(Instant) -> String,
    ids: &[String],
) -> Phases {
    let mut out = Phases {
        kills: HashMap::new(),
        zombies: HashMap::new(),
        rolling: HashMap::new(),
        otherwise: HashMap::new(),
        rolling_answers: 0,
        problems: Vec::new(),
    };
    let overlaps = |a: &Answered, kind: PhaseKind| {
        phases
            .iter()
            .any(|p| p.kind == kind && a.asked <= p.to && a.answered >= p.from)
    };
    for a in answers {
        let rolling = overlaps(a, PhaseKind::Rolling);
        if rolling {
            out.rolling_answers += 1;
        }
        let Some(code) = &a.code else {
            continue;
        };
        let counts = if overlaps(a, PhaseKind::Kill) {
            &mut out.kills
        } else if overlaps(a, PhaseKind::Zombie) {
            &mut out.zombies
        } else if rolling {
            out.problems.push(format!(
                "a request to {} answered {} {code} during a rolling restart (asked at {}, answered at {})",
                ids[a.node],
                a.status,
                at(a.asked),
                at(a.answered)
            ));
            &mut out.rolling
        } else {
            out.problems.push(format!(
                "a request to {} answered {} {code} while no node was killed, stopped or restarted (asked at {}, answered at {})",
                ids[a.node],
                a.status,
                at(a.asked),
                at(a.answered)
            ));
            &mut out.otherwise
        };
        *counts.entry(format!("{} {code}", a.status)).or_default() += 1;
    }
    out
}

/// Takeover times: from each kill to the first 2xx answer for each of its partitions, to a
/// request asked after the kill.
struct Takeovers {
    times: Vec<Duration>,
    unmeasured: usize,
}

impl Takeovers {
    fn p50(&self) -> String {
        let mut sorted = self.times.clone();
        sorted.sort();
        sorted
            .get(sorted.len().saturating_sub(1) / 2)
            .map_or("-".into(), |d| format!("{:.2} s", d.as_secs_f64()))
    }

    fn max(&self) -> String {
        self.times
            .iter()
            .max()
            .map_or("-".into(), |d| format!("{:.2} s", d.as_secs_f64()))
    }
}

fn takeover_times(answers: &[Answered], kills: &[Kill]) -> Takeovers {
    let mut takeovers = Takeovers {
        times: Vec::new(),
        unmeasured: 0,
    };
    for kill in kills {
        for (p, _) in &kill.partitions {
            let first = answers
                .iter()
                .filter(|a| {
                    (200..300).contains(&a.status) && a.asked >= kill.at && a.partitions & (1 << p) != 0
                })
                .map(|a| a.answered)
                .min();
            match first {
                Some(at) => takeovers.times.push(at - kill.at),
                None => takeovers.unmeasured += 1,
            }
        }
    }
    takeovers
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The games chosen cover every partition first, and the harness's hash is FNV-1a as the
    /// origin's (values the origin's own unit test pins: every partition of 64 is used by 1,000
    /// games, and a single partition takes everything).
    #[test]
    fn the_games_cover_every_partition_first() {
        let games = choose_games(10, 8);
        assert_eq!(games.len(), 10);
        assert_eq!(games[0].0, GAME);
        let first: HashSet<u32> = games[..8].iter().map(|(_, p)| *p).collect();
        assert_eq!(first.len(), 8);
        assert_eq!(partition_of("anything", 1), 0);
        let used: HashSet<u32> = (0..1_000).map(|i| partition_of(&format!("g-{i}"), 64)).collect();
        assert_eq!(used.len(), 64);
    }

    fn answer(
        at: Instant,
        asked_ms: u64,
        took_ms: u64,
        status: u16,
        partitions: u64,
        served_by: u64,
    ) -> Answered {
        Answered {
            node: 0,
            asked: at + Duration::from_millis(asked_ms),
            answered: at + Duration::from_millis(asked_ms + took_ms),
            status,
            code: (status >= 500).then(|| "PARTITION_MOVING".to_string()),
            partitions,
            served_by,
        }
    }

    /// An answer from a node other than the one that held the partition at one epoch from the
    /// reading before it to the reading after it is foreign; one across a move of the epoch, or
    /// from the holder, is not.
    #[test]
    fn an_answer_from_a_node_that_did_not_hold_the_partition_is_told() {
        let at = Instant::now();
        let table = |owner: usize, epoch: i64| Table {
            leases: vec![(Some(owner), epoch), (Some(0), 1)],
            ready: vec![true, true],
        };
        let observed = |ms: u64, table: Table| Observed {
            asked: at + Duration::from_millis(ms),
            answered: at + Duration::from_millis(ms + 5),
            table,
        };
        let timeline = vec![
            observed(0, table(0, 1)),
            observed(100, table(1, 2)),
            observed(200, table(1, 2)),
        ];
        let ids = vec!["node-0".to_string(), "node-1".to_string()];
        let answers = vec![
            // node-0 for partition 0 between 105 and 200: node-1 held it at epoch 2.
            answer(at, 110, 20, 202, 0b01, 0b01),
            // node-0 between 5 and 100: the epoch moved meanwhile, not told.
            answer(at, 10, 20, 202, 0b01, 0b01),
            // node-1, the holder.
            answer(at, 110, 20, 202, 0b01, 0b10),
            // A 503 and a split batch are not checked.
            answer(at, 110, 20, 503, 0b01, 0b01),
            answer(at, 110, 20, 200, 0b11, 0b11),
        ];
        let foreign = foreign_answers(&answers, &timeline, &ids);
        assert_eq!(foreign.checked, 3);
        assert_eq!(foreign.violations.len(), 1, "{:?}", foreign.violations);
        assert!(
            foreign.violations[0]
                .starts_with("node-0 answered 202 for partition 0, which node-1 held at epoch 2")
        );
    }

    /// A 503 overlapping a kill is counted there; one during a rolling restart, or outside every
    /// action, is a failure. Takeover times run from the kill to the first 2xx asked after it.
    #[test]
    fn the_5xx_are_sorted_by_phase_and_takeovers_measured() {
        let at = Instant::now();
        let phase = |kind, from: u64, to: u64| Phase {
            kind,
            from: at + Duration::from_millis(from),
            to: at + Duration::from_millis(to),
        };
        let phases = vec![
            phase(PhaseKind::Kill, 100, 200),
            phase(PhaseKind::Rolling, 300, 400),
        ];
        let answers = vec![
            answer(at, 90, 20, 503, 1, 0),
            answer(at, 310, 20, 503, 1, 0),
            answer(at, 250, 10, 503, 1, 0),
            answer(at, 320, 10, 202, 1, 1),
            answer(at, 95, 200, 202, 1, 1),
            answer(at, 150, 60, 202, 1, 1),
        ];
        let ids = vec!["node-0".to_string()];
        let phases = classify_5xx(&answers, &phases, &|t| format!("{t:?}"), &ids);
        assert_eq!(phases.kills.values().sum::<u64>(), 1);
        assert_eq!(phases.rolling.values().sum::<u64>(), 1);
        assert_eq!(phases.otherwise.values().sum::<u64>(), 1);
        assert_eq!(phases.problems.len(), 2);
        assert_eq!(phases.rolling_answers, 2);
        let kills = vec![Kill {
            at: at + Duration::from_millis(100),
            partitions: vec![(0, 1), (1, 1)],
        }];
        let takeovers = takeover_times(&answers, &kills);
        assert_eq!(takeovers.times, vec![Duration::from_millis(110)]);
        assert_eq!(takeovers.unmeasured, 1);
    }
}
