//! Who used the CPU during a measurement: the service and Redis (or the cluster's nodes and
//! PostgreSQL's processes), the generator itself, and everything else on the machine (which the
//! figures must not hide: this machine is shared).

use std::collections::HashMap;
use std::time::Instant;

/// The processes to account for by name.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Watched {
    /// The service's pid.
    pub(crate) standings: u32,
    /// Redis's pid (from `INFO server`).
    pub(crate) redis: u32,
}

/// CPU time so far, in clock ticks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Snapshot {
    at: Instant,
    machine: u64,
    standings: u64,
    redis: u64,
    generator: u64,
}

/// CPU use over an interval, in cores (1.0 = one core busy the whole time).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Usage {
    /// The service.
    pub(crate) standings: f64,
    /// Redis.
    pub(crate) redis: f64,
    /// This load generator.
    pub(crate) generator: f64,
    /// Every other process and the kernel's unattributed work.
    pub(crate) other: f64,
}

/// Clock ticks per second of `/proc` (USER_HZ, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

impl Snapshot {
    /// Reads the counters now. A process that cannot be read counts as zero.
    pub(crate) fn take(watched: Watched) -> Snapshot {
        Snapshot {
            at: Instant::now(),
            machine: machine_busy().unwrap_or(0),
            standings: process_ticks(&watched.standings.to_string()).unwrap_or(0),
            redis: process_ticks(&watched.redis.to_string()).unwrap_or(0),
            generator: process_ticks("self").unwrap_or(0),
        }
    }

    /// The use between `self` and `later`.
    pub(crate) fn until(&self, later: &Snapshot) -> Usage {
        let seconds = later.at.duration_since(self.at).as_secs_f64().max(1e-9);
        let cores = |ticks: u64| ticks as f64 / TICKS_PER_SECOND / seconds;
        let standings = later.standings.saturating_sub(self.standings);
        let redis = later.redis.saturating_sub(self.redis);
        let generator = later.generator.saturating_sub(self.generator);
        let machine = later.machine.saturating_sub(self.machine);
        Usage {
            standings: cores(standings),
            redis: cores(redis),
            generator: cores(generator),
            other: cores(machine.saturating_sub(standings + redis + generator)),
        }
    }
}

/// What a measurement accounts the CPU of: counters read at the window's two ends, and the use
/// between them.
pub(crate) trait Account {
    /// The counters at one moment.
    type Reading;
    /// The use between two readings.
    type Usage;
    /// Reads the counters now.
    fn read(&self) -> Self::Reading;
    /// The use between `from` and `to`.
    fn between(&self, from: &Self::Reading, to: &Self::Reading) -> Self::Usage;
}

impl Account for Watched {
    type Reading = Snapshot;
    type Usage = Usage;

    fn read(&self) -> Snapshot {
        Snapshot::take(*self)
    }

    fn between(&self, from: &Snapshot, to: &Snapshot) -> Usage {
        from.until(to)
    }
}

/// A process, or a set of them, whose CPU is reported apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Process {
    /// One process: an origin.
    Pid(u32),
    /// PostgreSQL's backends connected to the database of this name.
    PostgresBackends(String),
    /// PostgreSQL's processes of no one connection (the postmaster, the WAL writer, the
    /// checkpointer, the background writer, autovacuum): they serve every database, and while
    /// the others are idle, ours.
    PostgresShared,
}

/// Several processes accounted apart, beside the generator and everything else.
pub(crate) struct Processes(pub(crate) Vec<Process>);

/// The CPU ticks so far of each of [`Processes`], by pid (a set's processes come and go).
pub(crate) struct Tally {
    at: Instant,
    machine: u64,
    generator: u64,
    each: Vec<HashMap<u32, u64>>,
}

/// CPU use over an interval, in cores, of each of [`Processes`] in order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Shares {
    /// Each process (or set), in the order watched.
    pub(crate) each: Vec<f64>,
    /// This load generator.
    pub(crate) generator: f64,
    /// Every other process and the kernel's unattributed work.
    pub(crate) other: f64,
}

impl Account for Processes {
    type Reading = Tally;
    type Usage = Shares;

    /// Reads every process's counters; PostgreSQL's are found by their titles in `/proc`.
    /// O(processes on the machine).
    fn read(&self) -> Tally {
        let postgres = if self.0.iter().any(|p| !matches!(p, Process::Pid(_))) {
            postgres_processes()
        } else {
            Vec::new()
        };
        let each = self
            .0
            .iter()
            .map(|process| match process {
                Process::Pid(pid) => process_ticks(&pid.to_string())
                    .map(|ticks| (*pid, ticks))
                    .into_iter()
                    .collect(),
                Process::PostgresBackends(name) => postgres
                    .iter()
                    .filter(|(_, database, _)| database.as_deref() == Some(name.as_str()))
                    .map(|(pid, _, ticks)| (*pid, *ticks))
                    .collect(),
                Process::PostgresShared => postgres
                    .iter()
                    .filter(|(_, database, _)| database.is_none())
                    .map(|(pid, _, ticks)| (*pid, *ticks))
                    .collect(),
            })
            .collect();
        Tally {
            at: Instant::now(),
            machine: machine_busy().unwrap_or(0),
            generator: process_ticks("self").unwrap_or(0),
            each,
        }
    }

    /// A process that ended between the readings loses its ticks; one that began counts whole.
    fn between(&self, from: &Tally, to: &Tally) -> Shares {
        let seconds = to.at.duration_since(from.at).as_secs_f64().max(1e-9);
        let cores = |ticks: u64| ticks as f64 / TICKS_PER_SECOND / seconds;
        let each: Vec<u64> = from
            .each
            .iter()
            .zip(&to.each)
            .map(|(before, after)| {
                after
                    .iter()
                    .map(|(pid, ticks)| ticks.saturating_sub(before.get(pid).copied().unwrap_or(0)))
                    .sum()
            })
            .collect();
        let generator = to.generator.saturating_sub(from.generator);
        let watched: u64 = each.iter().sum::<u64>() + generator;
        Shares {
            each: each.into_iter().map(cores).collect(),
            generator: cores(generator),
            other: cores(to.machine.saturating_sub(from.machine).saturating_sub(watched)),
        }
    }
}

/// Every PostgreSQL process: its pid, the database its backend serves (`None` for the
/// processes of no one connection) and its ticks. A backend's title is `postgres: 15/main: USER
/// DATABASE HOST(PORT) STATE`; a background process's is `postgres: 15/main: walwriter` and the
/// like; the postmaster's is its command line.
fn postgres_processes() -> Vec<(u32, Option<String>, u64)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| {
            let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
            if comm.trim_end() != "postgres" {
                return None;
            }
            let title = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let title = String::from_utf8_lossy(&title).replace('\0', " ");
            let words: Vec<&str> = title.split_whitespace().collect();
            let client = words.get(4).is_some_and(|w| w.contains('(') || *w == "[local]");
            let database = (words.first() == Some(&"postgres:") && client).then(|| words[3].to_string());
            Some((pid, database, process_ticks(&pid.to_string())?))
        })
        .collect()
}

/// Busy ticks of the whole machine: the `cpu` line of `/proc/stat` without idle and iowait.
fn machine_busy() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal
    let busy = fields
        .iter()
        .take(8)
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4);
    Some(busy.map(|(_, v)| v).sum())
}

/// User plus system ticks of a process, all threads (`/proc/PID/stat`).
fn process_ticks(pid: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; the fields after it are plain.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3, utime 14, stime 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Waits, up to `timeout`, until the machine is quiet: less than `limit` cores busy outside
/// this generator over a one-second sample. Both sides of a comparison get the same chance of
/// a quiet machine; whatever load remains is reported with the figures. Returns how long it
/// waited and the last sample's load.
pub(crate) async fn wait_quiet(
    watched: Watched,
    limit: f64,
    timeout: std::time::Duration,
) -> (std::time::Duration, f64) {
    wait_quiet_for(
        &watched,
        |u: &Usage| u.standings + u.redis + u.other,
        limit,
        timeout,
    )
    .await
}

/// [`wait_quiet`] with the load that counts read by `busy` from `account`'s one-second samples
/// (the cluster's nodes and database, idle but never silent, are left out of it).
pub(crate) async fn wait_quiet_for<A: Account>(
    account: &A,
    busy: impl Fn(&A::Usage) -> f64,
    limit: f64,
    timeout: std::time::Duration,
) -> (std::time::Duration, f64) {
    let started = Instant::now();
    loop {
        let from = account.read();
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let load = busy(&account.between(&from, &account.read()));
        if load < limit || started.elapsed() >= timeout {
            return (started.elapsed(), load);
        }
    }
}
