//! Applying committed groups to the boards, on a thread of its own.
//!
//! Under batch load, applying a group (the core's tree inserts, mostly cache misses) is the largest
//! part of ingesting it. Here it runs on a thread of its own while the writer decides the next
//! group and the database commits it, so the three overlap. The writer hands each committed group
//! over in `seq` order and the applier applies them in that order, so the boards still change
//! exactly as a replay of the log changes them.
//!
//! A submitter is answered after its group is applied: a `202` still means the event is durable and
//! visible (except while a checkpoint encodes; see `Backlog`). What the writer must not read from
//! the boards while groups wait here is the cumulative totals, and it reads them through the
//! backlog's totals first; anything else that reads or changes boards in the writer (actions,
//! evictions, checkpoints, a rest) drains the applier before it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use standings_core::{BoardId, Threads};
use tokio::sync::{mpsc, oneshot};

use super::Outcome;
use super::commit::Events;
use super::error::WriterError;
use crate::boards::Registry;
use crate::domain::Moderation;
use crate::domain::{LoggedEvent, NewEvent};
use crate::log::{Grouped, LiveInstances, apply_event};
use crate::metrics::Metrics;
use crate::store::Store;
use crate::turns::{TakesTurns, Turn};

/// The threads that change a split board's shards: `configured`, or with 0 half the CPUs this
/// process may use, leaving the rest to connections, the writer and the database (measured in
/// BENCHMARKS.md, "Issue 39": on 2 CPUs a second settling thread cost more reads than it gave
/// writes).
pub(super) fn shard_threads(configured: usize) -> Threads {
    if configured > 0 {
        return Threads(configured);
    }
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    Threads((cores / 2).max(1))
}

/// One submission of events and whom to answer.
pub(super) struct Submission {
    pub(super) events: Vec<NewEvent>,
    pub(super) received: Instant,
    pub(super) reply: oneshot::Sender<Result<Vec<Outcome>, WriterError>>,
}

impl Events for Submission {
    fn events(&self) -> &[NewEvent] {
        &self.events
    }
    fn events_mut(&mut self) -> &mut Vec<NewEvent> {
        &mut self.events
    }
}

/// Groups handed over and not yet taken by the thread. A full queue makes the writer wait, so
/// the lag between commit and visibility stays a few groups long.
const QUEUE_GROUPS: usize = 8;

/// What applying needs: the boards and what decides where an event goes.
#[derive(Clone)]
pub(super) struct Boards {
    pub(super) store: Store,
    pub(super) registry: Arc<Registry>,
    pub(super) domain: Arc<Moderation>,
    pub(super) metrics: Arc<Metrics>,
    pub(super) live: Arc<crate::live::Hub>,
    /// The threads that change a split board's shards at a group's end.
    pub(super) shard_threads: Threads,
}

/// A committed group to apply, with the submitters to answer once it is (none when they were
/// answered already, while a checkpoint encoded).
pub(super) struct Group {
    pub(super) fresh: Vec<LoggedEvent>,
    pub(super) committed: Instant,
    /// The log's last committed seq with it: the boards show the log through it once it is
    /// applied.
    pub(super) through: i64,
    pub(super) answers: Option<(Vec<Submission>, Vec<Vec<Outcome>>)>,
}

impl Group {
    /// Applies the group in `seq` order (a split board's events of the group at once at its end,
    /// its shards on threads of their own), then answers its submitters. O(events x log
    /// members).
    fn apply(self, boards: &Boards) {
        let Boards {
            store,
            registry,
            domain,
            metrics,
            live: hub,
            shard_threads,
        } = boards;
        let mut grouped = Grouped::new(LiveInstances { registry, store }, shard_threads);
        for stored in &self.fresh {
            if let Err(e) = apply_event(registry, domain, &mut grouped, stored) {
                // Checked before the commit; reaching this is a bug. The log stays the truth
                // and a rebuild reports the event.
                tracing::error!("stored event {} could not be applied: {e}", stored.event_id);
            }
        }
        for e in grouped.finish() {
            tracing::error!("a stored event could not be applied: {e}");
        }
        metrics.visible_lag.observe(self.committed.elapsed());
        registry.positions.visible_through(self.through);
        if let Some((group, outcomes)) = self.answers {
            answer(metrics, self.fresh.len(), group, outcomes);
        }
        // After the answers, which wait for nothing of the live path; the next window reads
        // the boards anyway, this only dates the change for the lag histogram.
        if hub.is_watched() {
            hub.changed(&boards_of(&self.fresh), self.committed);
        }
    }
}

/// The boards a group's events name, each once. Events of a group share a few boards, so this
/// compares names before it copies any. O(events x scopes x distinct boards).
fn boards_of(events: &[LoggedEvent]) -> Vec<BoardId> {
    let mut boards: Vec<BoardId> = Vec::new();
    for e in events {
        for scope in &e.scopes {
            let known = boards
                .iter()
                .any(|b| b.scope == *scope && b.season == e.season && b.mode == e.mode && b.game == e.game);
            if !known {
                boards.push(BoardId {
                    game: e.game.clone(),
                    mode: e.mode.clone(),
                    season: e.season.clone(),
                    scope: scope.clone(),
                });
            }
        }
    }
    boards
}

/// Counts a committed group and answers its submitters.
pub(super) fn answer(metrics: &Metrics, fresh: usize, group: Vec<Submission>, outcomes: Vec<Vec<Outcome>>) {
    metrics.events_accepted.add(fresh as u64);
    let duplicates = outcomes
        .iter()
        .flatten()
        .filter(|o| matches!(o, Outcome::Duplicate))
        .count();
    metrics.duplicates.add(duplicates as u64);
    for (submission, outcomes) in group.into_iter().zip(outcomes) {
        let _ = submission.reply.send(Ok(outcomes));
    }
}

enum Job {
    Apply(Group),
    /// Answered once every group handed over before it is applied.
    Drain(oneshot::Sender<()>),
    /// Board work taking its turn between groups (`crate::turns`).
    Turn(Turn),
}

/// The applier's queue as the registry's turns see it. Weak, so that the thread still ends
/// when the writer drops its end.
struct Turns(mpsc::WeakSender<Job>);

impl TakesTurns for Turns {
    fn queue(&self, turn: Turn) -> Result<(), Turn> {
        let Some(queue) = self.0.upgrade() else {
            return Err(turn);
        };
        queue
            .blocking_send(Job::Turn(turn))
            .map_err(|refused| match refused.0 {
                Job::Turn(turn) => turn,
                _ => unreachable!("the job sent is the turn"),
            })
    }
}

/// How long a turn set aside for the groups waits at most before it runs anyway, so that views
/// keep moving while groups keep coming.
const TURN_WAITS_AT_MOST: Duration = Duration::from_millis(10);

/// The applying thread: groups in order, each answered once applied; a turn (`crate::turns`)
/// is set aside while groups wait behind it, and runs once none waits or it has waited
/// [`TURN_WAITS_AT_MOST`]. Writes come first, and views still get a share of the thread.
fn run(mut rx: mpsc::Receiver<Job>, boards: &Boards, applied: &AtomicU64) {
    let mut set_aside: Option<(Turn, Instant)> = None;
    loop {
        let job = match set_aside.take() {
            None => match rx.blocking_recv() {
                Some(job) => job,
                None => return,
            },
            Some((turn, since)) => {
                if since.elapsed() >= TURN_WAITS_AT_MOST {
                    turn();
                    continue;
                }
                match rx.try_recv() {
                    Ok(job) => {
                        set_aside = Some((turn, since));
                        job
                    }
                    Err(_) => {
                        turn();
                        continue;
                    }
                }
            }
        };
        match job {
            Job::Apply(group) => {
                group.apply(boards);
                applied.fetch_add(1, Ordering::Release);
            }
            Job::Drain(done) => {
                let _ = done.send(());
            }
            Job::Turn(turn) => {
                // The window queues one turn at a time; were there two, the older runs first.
                if let Some((older, _)) = set_aside.take() {
                    older();
                }
                set_aside = Some((turn, Instant::now()));
            }
        }
    }
}

/// The writer's end of the applying thread.
pub(super) struct Applier {
    boards: Boards,
    queue: Option<mpsc::Sender<Job>>,
    /// Groups handed over, and groups the thread has applied.
    sent: u64,
    applied: Arc<AtomicU64>,
}

impl Applier {
    /// Starts the thread. If it cannot start, groups are applied on the writer's task.
    pub(super) fn start(boards: Boards) -> Applier {
        let (tx, rx) = mpsc::channel::<Job>(QUEUE_GROUPS);
        let applied = Arc::new(AtomicU64::new(0));
        let (thread_boards, thread_applied) = (boards.clone(), applied.clone());
        let started = std::thread::Builder::new()
            .name("standings-apply".into())
            .spawn(move || run(rx, &thread_boards, &thread_applied));
        let queue = match started {
            Ok(_) => {
                boards.registry.turns.set(Arc::new(Turns(tx.downgrade())));
                Some(tx)
            }
            Err(e) => {
                tracing::error!("cannot start the applying thread ({e}); the writer applies groups itself");
                None
            }
        };
        Applier {
            boards,
            queue,
            sent: 0,
            applied,
        }
    }

    /// Hands a committed group over, to be applied after every group handed over before it.
    /// Waits while the queue is full.
    ///
    /// Panics if the thread stopped, which only a panic while applying does: the groups it held
    /// are durable but not on the boards, so the writer stops as it did when it applied groups
    /// itself and one panicked. Submissions are then refused and a restart rebuilds the boards
    /// from the log.
    pub(super) async fn apply(&mut self, group: Group) {
        let Some(queue) = &self.queue else {
            group.apply(&self.boards);
            return;
        };
        if queue.send(Job::Apply(group)).await.is_err() {
            panic!("the applying thread stopped; the boards miss committed groups");
        }
        self.sent += 1;
    }

    /// Whether every group handed over is applied. O(1).
    pub(super) fn is_idle(&self) -> bool {
        self.applied.load(Ordering::Acquire) == self.sent
    }

    /// Waits until every group handed over is applied: the boards then show the whole log.
    pub(super) async fn drain(&mut self) {
        if self.is_idle() {
            return;
        }
        let Some(queue) = &self.queue else { return };
        let (done, drained) = oneshot::channel();
        let sent = queue.send(Job::Drain(done)).await;
        if sent.is_err() || drained.await.is_err() {
            panic!("the applying thread stopped; the boards miss committed groups");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{EventStatus, NewEvent};

    fn logged(seq: i64, season: &str, scopes: &[&str]) -> LoggedEvent {
        LoggedEvent {
            seq,
            status: EventStatus::Applied,
            received_at: 0,
            event: NewEvent {
                metadata: None,
                segments: None,
                game: "g".into(),
                event_id: format!("e{seq}"),
                player_id: "p".into(),
                mode: "m".into(),
                season: season.into(),
                scopes: scopes.iter().map(|s| s.to_string()).collect(),
                value: 1,
                achieved_at: 0,
                source: "test".into(),
            },
        }
    }

    /// A group's boards are each of its events' boards, once, in the order first met.
    #[test]
    fn a_group_names_each_board_once() {
        let group = [
            logged(1, "s1", &["global", "eu"]),
            logged(2, "s1", &["eu"]),
            logged(3, "s2", &["global"]),
            logged(4, "s1", &["global"]),
        ];
        let names: Vec<String> = boards_of(&group).iter().map(|b| b.to_string()).collect();
        assert_eq!(names, ["g/m/s1/global", "g/m/s1/eu", "g/m/s2/global"]);
    }
}
