//! Who used the CPU during a measurement: the service, Redis, the generator itself, and
//! everything else on the machine (which the figures must not hide: this machine is shared).

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
    let started = Instant::now();
    loop {
        let from = Snapshot::take(watched);
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let usage = from.until(&Snapshot::take(watched));
        let busy = usage.standings + usage.redis + usage.other;
        if busy < limit || started.elapsed() >= timeout {
            return (started.elapsed(), busy);
        }
    }
}
