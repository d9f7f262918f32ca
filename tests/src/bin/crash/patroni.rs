//! The crash harness's Patroni mode (`--db patroni`): the service's database is a fresh one
//! reached through HAProxy in front of a Patroni cluster of two PostgreSQL instances with
//! synchronous replication (`tests/patroni/run` starts the stack and runs this), and the chaos
//! is failovers of PostgreSQL's primary under the clients' load.
//!
//! A failover is two calls of `--failover-command`: `kill-primary` SIGKILLs the primary's
//! Patroni and PostgreSQL (its machine lost: the leader key expires, Patroni promotes the
//! synchronous standby, HAProxy's health check moves to it) and prints `killed NAME at MS`,
//! the kill's time in ms since the epoch; once the service writes again, `rejoin` starts the
//! old primary's Patroni again and returns when it is the new primary's synchronous standby,
//! so that the next failover loses nothing either.
//!
//! What must hold for each failover, beside what every mode checks at the end (every
//! acknowledged event in the log once, nothing refused stored, the boards equal to the model):
//! - while there is no primary the clients are answered 503 `DATABASE_UNAVAILABLE`, at least
//!   once, and with no other code (no 5xx at all is checked by the clients);
//! - the same service process writes again by itself once the replica is promoted: a write
//!   sent after the kill is stored within [`READY_TIMEOUT`], with no restart.
//!
//! Its time, from the kill to the answer of the first write sent after it that was stored, is
//! the failover's cost as a client sees it.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use standings_tests::service::Service;

use super::{READY_TIMEOUT, Tally, now_ms};

/// One failover as measured.
pub(super) struct Failover {
    /// The member that was the primary and was killed.
    killed: String,
    /// From the kill to the answer of the first write sent after it that was stored.
    recovery: Duration,
    /// 503 answers between the kill and that write.
    unavailable: u64,
    /// How long the old primary took to come back as the synchronous standby.
    rejoin: Duration,
}

/// Kills the primary, waits until the service writes again by itself, then has the old
/// primary rejoin. A service that does not recover alone ends the run (`Err`); a wrong answer
/// while there was no primary is pushed to `problems`.
pub(super) async fn fail_over(
    command: &Path,
    service: &Service,
    tally: &Tally,
    events: u64,
    problems: &mut Vec<String>,
) -> Result<Failover, String> {
    if tally.answered.load(Ordering::Relaxed) >= events {
        return Err("the load ended before a failover was due: give it more events".into());
    }
    let unavailable_before = tally.unavailable_retries.load(Ordering::Relaxed);
    let database_unavailable_before = tally.database_unavailable.load(Ordering::Relaxed);
    let said = run(command, "kill-primary").await?;
    let (killed, killed_ms) = said
        .lines()
        .find_map(|line| {
            let (member, at) = line.strip_prefix("killed ")?.split_once(" at ")?;
            Some((member.to_string(), at.trim().parse::<i64>().ok()?))
        })
        .ok_or_else(|| format!("{} kill-primary said {said:?}", command.display()))?;
    // The service must write again by itself: a write sent after the kill is stored. (Once
    // every submission is answered there is nothing left to write.)
    let waited = Instant::now();
    while tally.stored_sent_ms.load(Ordering::Relaxed) <= killed_ms {
        if tally.answered.load(Ordering::Relaxed) >= events {
            return Err(format!(
                "the load ended before a write after the failover of {killed}: give it more events"
            ));
        }
        if waited.elapsed() > READY_TIMEOUT {
            return Err(format!(
                "the service stored nothing within {READY_TIMEOUT:?} of the primary ({killed})'s kill: it did not recover by itself; {}",
                service.log_tail()
            ));
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let recovery = Duration::from_millis((now_ms() - killed_ms).max(0) as u64);
    let unavailable = tally.unavailable_retries.load(Ordering::Relaxed) - unavailable_before;
    let database_unavailable =
        tally.database_unavailable.load(Ordering::Relaxed) - database_unavailable_before;
    if unavailable == 0 {
        problems.push(format!(
            "no client was answered 503 while there was no primary ({killed} killed)"
        ));
    }
    if database_unavailable != unavailable {
        problems.push(format!(
            "{} of the {unavailable} 503s while there was no primary ({killed} killed) had another code than DATABASE_UNAVAILABLE",
            unavailable - database_unavailable
        ));
    }
    let rejoining = Instant::now();
    run(command, "rejoin").await?;
    Ok(Failover {
        killed,
        recovery,
        unavailable,
        rejoin: rejoining.elapsed(),
    })
}

/// The failovers' figures for the run's summary.
pub(super) fn figures(failovers: &[Failover]) -> String {
    if failovers.is_empty() {
        return String::new();
    }
    let mut recoveries: Vec<Duration> = failovers.iter().map(|f| f.recovery).collect();
    recoveries.sort();
    let seconds = |d: Duration| format!("{:.2} s", d.as_secs_f64());
    format!(
        ", {} failovers of PostgreSQL's primary ({}): from the kill to the first write stored \
         after it p50 {} and max {} ({}), {} 503 DATABASE_UNAVAILABLE meanwhile, the old primary \
         back as the synchronous standby in at most {}",
        failovers.len(),
        failovers
            .iter()
            .map(|f| f.killed.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        // The lower median, by nearest rank.
        seconds(recoveries[(recoveries.len() - 1) / 2]),
        seconds(recoveries[recoveries.len() - 1]),
        failovers
            .iter()
            .map(|f| seconds(f.recovery))
            .collect::<Vec<_>>()
            .join(", "),
        failovers.iter().map(|f| f.unavailable).sum::<u64>(),
        seconds(failovers.iter().map(|f| f.rejoin).max().unwrap_or_default()),
    )
}

/// Runs `command verb` on the blocking pool (the clients share this thread), and returns what
/// it printed.
async fn run(command: &Path, verb: &'static str) -> Result<String, String> {
    let program = command.to_path_buf();
    let output = tokio::task::spawn_blocking(move || Command::new(&program).arg(verb).output())
        .await
        .map_err(|e| format!("{} {verb} panicked: {e}", command.display()))?
        .map_err(|e| format!("cannot run {} {verb}: {e}", command.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if output.status.success() {
        Ok(stdout)
    } else {
        Err(format!(
            "{} {verb} failed ({}): {stdout}{}",
            command.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}
