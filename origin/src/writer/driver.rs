//! The writer task: the async driver around the group commit's state machine ([`GroupCommit`]). It
//! takes commands off the channel, does the IO the machine asks for (the look-ups, the insert and
//! commit on a task of its own, the applying thread, checkpoints, evictions, rests) and feeds what
//! became of it back to the machine.
//!
//! It takes everything queued (up to `MAX_GROUP_EVENTS`) as one group. The insert and commit of the
//! group in flight run on a spawned task while the driver hands the group before it to the applying
//! thread and decides the group after it, so the database, the deciding and the applying overlap;
//! at most one group is in flight, and committed groups reach the applying thread in `seq` order.
//! The driver yields once after spawning, so that the task starts at once (tokio's LIFO slot would
//! otherwise hold it behind the driver).
//!
//! A small group (`rhythm.rs`) waits for the one in flight and takes in what arrived meanwhile, so
//! single submissions share commits instead of paying one each. The group in flight lands before an
//! action, an eviction, a checkpoint or an idle wait, and each of those first waits until the
//! applying thread has applied everything handed to it. While a commit's outcome is unknown, other
//! groups and actions are answered 503 `DATABASE_UNAVAILABLE`; once the database answers, the group
//! is applied and answered, or answered 503 with its `seq`s freed.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;

use super::applier::Submission;
use super::applier::{Applier, Boards, Group, answer};
use super::commit::{Decided, GroupCommit, Outcome, Seal, Seasons, Totals, Write, ids_to_look_up};
use super::error::WriterError;
use super::rhythm::{Idle, Rhythm, gathers_more};
use super::{Command, MAX_GROUP_EVENTS, WriterParts, checkpoint, rest};
use crate::boards::{BoardEntry, Registry};
use crate::chain::Chain;
use crate::clock::Clock;
use crate::domain::LoggedEvent;
use crate::domain::Moderation;
use crate::metrics::Metrics;
use crate::store::{AT_ONCE_ROWS, AtOnce, CommitFailed, RUN_SEQS, Store, Transaction};

/// Past this many pending totals the writer waits for the applier to catch up and clears them,
/// so that a long cumulative load, with the applier never found idle, does not grow them.
const MAX_PENDING_TOTALS: usize = 1 << 20;

/// The live boards' totals, read under each instance's read lock.
struct LiveTotals;

impl Totals for LiveTotals {
    fn current(&self, entry: &BoardEntry, period_key: &str, player: &str) -> Option<i64> {
        entry
            .instance(period_key)
            .and_then(|slot| slot.read().index().standing_of_player(player))
            .map(|s| s.value)
    }
}

/// Committed groups the boards do not show yet: those handed to the applying thread, and while a
/// periodic checkpoint is encoded, those committed and answered meanwhile, to be handed over once
/// it is done (see `begin_checkpoint`).
#[derive(Default)]
pub(super) struct Backlog {
    pub(super) encoding: Option<checkpoint::Encoding>,
    /// Each group's new events held during an encoding, with the moment they were committed.
    pub(super) groups: Vec<(Vec<LoggedEvent>, Instant, i64)>,
    /// The applying thread, started with the first group.
    applier: Option<Applier>,
}

/// A group whose events are durably committed but not yet applied to the boards nor answered.
/// It is applied before anything else changes a board (the next group, an action, an
/// eviction), so `seq` order stays the apply order; its submitters hear nothing before it is
/// applied.
struct Committed {
    group: Vec<Submission>,
    outcomes: Vec<Vec<Outcome>>,
    fresh: Vec<LoggedEvent>,
    committed: Instant,
    /// The cumulative totals it reaches.
    totals: super::commit::PendingTotals,
    /// The log's last committed seq with it.
    through: i64,
}

/// A written group whose insert and commit run on the database's thread, and whom to answer
/// once the database has.
struct InFlight {
    group: Vec<Submission>,
    outcomes: Vec<Vec<Outcome>>,
    /// The insert and commit, which hand the group's events back whatever became of them.
    task: tokio::task::JoinHandle<(Result<Stored, WriterError>, Vec<LoggedEvent>, Seasons)>,
}

/// A group whose commit was sent but whose answer was lost (the connection broke): it may be
/// in the log or not. Nothing is decided after it until the log says which (`resolve`); its
/// `seq`s stay taken and its submitters wait meanwhile.
struct Unresolved {
    group: Vec<Submission>,
    outcomes: Vec<Vec<Outcome>>,
    fresh: Vec<LoggedEvent>,
    new_seasons: Seasons,
}

/// What became of a group's insert.
enum Stored {
    /// Every event is durably committed, at that instant (the durable ack is measured to it,
    /// not to when the writer next looks: that may be after it decided the next group), and
    /// with them the seasons whose first events they are.
    Committed(Instant),
    /// Some were stored before; nothing was stored now.
    Resubmitted,
    /// The commit was sent and its answer lost: stored or not, the log will say.
    Unknown(WriterError),
}

/// What became of a group in flight.
enum Landed {
    Committed(Committed),
    /// It met stored ids; here it is again, untouched, to be looked up and decided anew.
    Resubmitted(Vec<Submission>, i64),
    /// It failed and its submitters have their answer.
    Failed,
}

/// The writer task's state: what it drives and the machine it drives.
pub(super) struct Writer {
    pub(super) store: Store,
    pub(super) registry: Arc<Registry>,
    pub(super) domain: Arc<Moderation>,
    pub(super) metrics: Arc<Metrics>,
    pub(super) live: Arc<crate::live::Hub>,
    pub(super) clock: Clock,
    /// How long a closed period stays in memory (ms).
    pub(super) retention_ms: i64,
    /// The threads that change a split board's shards, handed to the applying thread.
    shard_threads: standings_core::Threads,
    /// What the loop waits for between commands, and when a periodic checkpoint is due.
    rhythm: Rhythm,
    /// The `seq` of the newest stored checkpoint (0 without one).
    pub(super) checkpoint_seq: i64,
    /// The size of the newest checkpoint, stored or restored (0 when unknown).
    pub(super) checkpoint_bytes: usize,
    pub(super) machine: GroupCommit,
    flight: Option<InFlight>,
    unresolved: Option<Unresolved>,
    pub(super) backlog: Backlog,
}

impl Writer {
    pub(super) fn new(parts: WriterParts) -> Writer {
        let WriterParts {
            store,
            registry,
            domain,
            metrics,
            live,
            clock,
            next_seq,
            retention_ms,
            checkpoint_every,
            checkpoint_seq,
            checkpoint_bytes,
            sealed_below,
            unsealed,
            event_seasons,
            shard_threads,
        } = parts;
        // The boards were rebuilt through the log's end before the writer starts.
        registry.positions.visible_through(next_seq - 1);
        Writer {
            store,
            registry,
            domain,
            metrics,
            live,
            clock,
            retention_ms,
            shard_threads: super::applier::shard_threads(shard_threads),
            rhythm: Rhythm::new(checkpoint_seq, checkpoint_every, rest::IDLE_BEFORE_RELEASE_MS),
            checkpoint_seq,
            checkpoint_bytes,
            machine: GroupCommit::new(next_seq, sealed_below, RUN_SEQS, unsealed, event_seasons),
            flight: None,
            unresolved: None,
            backlog: Backlog::default(),
        }
    }

    /// Takes commands until every handle is dropped. What to wait for between commands, and
    /// until when, is decided by the [`Rhythm`]; the loop does the IO it names.
    pub(super) async fn run(mut self, mut rx: mpsc::Receiver<Command>) {
        let mut pending: Option<Command> = None;
        // A periodic checkpoint being stored while writes go on (see `begin_checkpoint`).
        let mut storing: Option<checkpoint::Storing> = None;
        loop {
            if self.backlog.encoding.as_ref().is_some_and(|e| e.is_finished()) {
                self.end_encoding(&mut storing).await;
            }
            let first = match pending.take() {
                Some(command) => command,
                None => match rx.try_recv() {
                    Ok(command) => command,
                    Err(_) => {
                        // Nothing else is queued: make the group in flight visible and answer it
                        // now rather than behind whatever arrives next.
                        self.settle().await;
                        let idle = self.rhythm.idle(
                            self.unresolved.is_some(),
                            self.backlog.encoding.is_some(),
                            self.clock.now_ms(),
                        );
                        let next = match idle {
                            Idle::Resolve { at } => match recv_until(&mut rx, &self.clock, at).await {
                                Some(next) => next,
                                None => {
                                    let _ = self.resolve().await;
                                    continue;
                                }
                            },
                            Idle::Encoding => {
                                let Some(mut encoding) = self.backlog.encoding.take() else {
                                    continue;
                                };
                                tokio::select! {
                                    next = rx.recv() => {
                                        self.backlog.encoding = Some(encoding);
                                        next
                                    }
                                    encoded = &mut encoding => {
                                        storing = self.catch_up(encoded).await;
                                        continue;
                                    }
                                }
                            }
                            Idle::Rest { at } => match recv_until(&mut rx, &self.clock, at).await {
                                Some(next) => next,
                                None => {
                                    self.drain().await;
                                    rest::release(&self.store, &self.registry, &self.metrics).await;
                                    self.rhythm.rested();
                                    continue;
                                }
                            },
                            Idle::Command => rx.recv().await,
                        };
                        match next {
                            Some(command) => command,
                            None => return,
                        }
                    }
                },
            };
            match first {
                Command::Action { request, reply } => {
                    self.rhythm.wrote();
                    self.quiesce(&mut storing).await;
                    let answer = match self.resolve().await {
                        Ok(()) => self.act(*request).await,
                        Err(e) => Err(e),
                    };
                    let _ = reply.send(answer);
                }
                Command::Evict { reply } => {
                    self.quiesce(&mut storing).await;
                    let evicted = match self.resolve().await {
                        Ok(()) => match self.close_periods().await {
                            Ok(_) => self.evict().await,
                            Err(e) => Err(e),
                        },
                        Err(e) => Err(e),
                    };
                    let _ = reply.send(evicted);
                }
                Command::Checkpoint { reply, at_stop } => {
                    self.quiesce(&mut storing).await;
                    self.reap(storing.take()).await;
                    // A checkpoint is as of the last committed seq, which an unknown commit
                    // leaves unknown.
                    let written = match self.resolve().await {
                        Ok(()) if at_stop && !self.worth_storing_at_stop() => Ok(None),
                        Ok(()) => self.write_checkpoint().await,
                        Err(e) => Err(e),
                    };
                    self.rhythm.checkpoint_begun(self.checkpoint_seq);
                    let _ = reply.send(written);
                }
                Command::Events {
                    events,
                    received,
                    reply,
                } => {
                    self.rhythm.wrote();
                    let mut group = vec![Submission {
                        events,
                        received,
                        reply,
                    }];
                    let count = gather(&mut rx, &mut group, &mut pending);
                    if gathers_more(self.flight.is_some(), pending.is_some(), count) {
                        self.settle().await;
                        gather(&mut rx, &mut group, &mut pending);
                    }
                    self.take_group(group).await;
                    // A stored checkpoint's size is known once reaped, and weighs the next.
                    if storing.as_ref().is_some_and(|task| task.is_finished()) {
                        self.reap(storing.take()).await;
                    }
                    let busy =
                        self.backlog.encoding.is_some() || self.unresolved.is_some() || storing.is_some();
                    if self
                        .rhythm
                        .checkpoint_due(self.machine.next_seq() - 1, busy, self.checkpoint_bytes)
                    {
                        // A checkpoint is the state of the log up to its seq: everything
                        // committed is applied first.
                        self.settle().await;
                        self.drain().await;
                        if self.unresolved.is_none() {
                            self.rhythm.checkpoint_begun(self.machine.next_seq() - 1);
                            self.begin_checkpoint();
                        }
                    }
                }
            }
        }
    }

    /// Lands the group in flight, ends an encoding and drains the applier: the boards then
    /// show the whole committed log, for a command that reads or changes them.
    async fn quiesce(&mut self, storing: &mut Option<checkpoint::Storing>) {
        self.settle().await;
        self.end_encoding(storing).await;
        self.drain().await;
    }

    /// Decides a group and sets its insert and commit going, as the new group in flight;
    /// meanwhile the group that was in flight lands and is applied and answered. On a failure
    /// the group's submitters are answered with the error and nothing of it was stored or
    /// applied. The machine says when to look up first, and whether an optimistic decision
    /// stands (see `commit.rs`). A group that looks up waits for the one in flight to land: its
    /// transaction needs the writer's one connection.
    async fn take_group(&mut self, group: Vec<Submission>) {
        // The one moment every event of the group was received at, read once.
        let received_at = self.clock.now_ms();
        let mut look_up = false;
        loop {
            let lookup = self.machine.should_look_up() || look_up;
            if lookup {
                self.settle().await;
            }
            if let Err(e) = self.resolve().await {
                fail(group, e);
                return;
            }
            let (decided, tx) = match self.decide(&group, received_at, lookup).await {
                Ok(decided) => decided,
                Err(e) => {
                    self.settle().await;
                    fail(group, e);
                    return;
                }
            };
            if !lookup && !decided.stores_all() {
                look_up = true;
                continue;
            }
            let Some(flight) = self.flight.take() else {
                self.launch(group, decided, tx);
                tokio::task::yield_now().await;
                return;
            };
            // Only a group decided without a look-up gets here (one that looks up lands the
            // group in flight first), so it holds no transaction, which would keep the
            // writer's one connection from the earlier group should that one be redone.
            debug_assert!(tx.is_none());
            match self.land(flight).await {
                Landed::Committed(done) => {
                    self.launch(group, decided, tx);
                    // A task spawned from a worker waits in that worker's LIFO slot, which no
                    // other worker steals, until the spawner yields: without this the insert
                    // would start only once `finish` is done, and the two would never overlap.
                    // Polled once, the task hands its first statement to the database thread;
                    // later wake-ups come from that thread and go to the shared queue.
                    tokio::task::yield_now().await;
                    self.finish(done).await;
                    return;
                }
                Landed::Resubmitted(earlier, earlier_received_at) => {
                    // The earlier group goes again, looked up; this one is decided after it.
                    self.redo(earlier, earlier_received_at).await;
                }
                Landed::Failed => {}
            }
        }
    }

    /// Decides a group, with its ids looked up in a new transaction when `lookup` (which is
    /// handed back, for the insert to run in).
    async fn decide(
        &self,
        group: &[Submission],
        received_at: i64,
        lookup: bool,
    ) -> Result<(Decided, Option<Transaction>), WriterError> {
        if !lookup {
            let decided = self.machine.decide(
                group,
                received_at,
                None,
                &self.registry,
                &self.domain,
                &LiveTotals,
            );
            return Ok((decided, None));
        }
        let mut tx = self.store.begin().await?;
        let mut found = Vec::new();
        for (game, ids) in &ids_to_look_up(group) {
            found.extend(self.store.find_events(&mut tx, game, ids).await?);
        }
        let decided = self.machine.decide(
            group,
            received_at,
            Some(&found),
            &self.registry,
            &self.domain,
            &LiveTotals,
        );
        Ok((decided, Some(tx)))
    }

    /// Numbers a decided group's accepted events and starts their insert and commit on the
    /// database's thread.
    fn launch(&mut self, mut group: Vec<Submission>, decided: Decided, tx: Option<Transaction>) {
        let Write {
            fresh,
            seal,
            new_seasons,
            lookup,
            outcomes,
        } = self.machine.write(&mut group, decided);
        let store = self.store.clone();
        let feed = self.registry.feed.clone();
        let carried = feed.take_for_group();
        let task = tokio::spawn(async move {
            let records = carried.as_ref().map_or(&[][..], |c| &c.records[..]);
            let stored = store_group(&store, tx, &fresh, &new_seasons, seal, lookup, records).await;
            if let Some(carried) = carried {
                feed.committed(carried, matches!(stored, Ok(Stored::Committed(_))));
            }
            (stored, fresh, new_seasons)
        });
        self.flight = Some(InFlight {
            group,
            outcomes,
            task,
        });
    }

    /// Waits for a group in flight and tells the machine what became of it.
    async fn land(&mut self, flight: InFlight) -> Landed {
        let InFlight {
            mut group,
            outcomes,
            task,
        } = flight;
        let (stored, fresh, new_seasons) = match task.await {
            Ok(landed) => landed,
            Err(e) => {
                self.machine.rolled_back();
                fail(group, WriterError::CommitTask(e));
                return Landed::Failed;
            }
        };
        match stored {
            Ok(Stored::Committed(committed)) => {
                let totals = self.machine.committed(&fresh, new_seasons);
                Landed::Committed(self.take_committed(group, outcomes, fresh, committed, totals))
            }
            Ok(Stored::Resubmitted) => {
                let received_at = self.machine.resubmitted(&mut group, fresh);
                Landed::Resubmitted(group, received_at)
            }
            Ok(Stored::Unknown(e)) => {
                self.machine.unknown();
                tracing::warn!(
                    "a group's commit has an unknown outcome; nothing is decided until the log says whether seq {} is in it: {}",
                    self.machine.unresolved_seq().unwrap_or_default(),
                    Chain(&e)
                );
                self.unresolved = Some(Unresolved {
                    group,
                    outcomes,
                    fresh,
                    new_seasons,
                });
                Landed::Failed
            }
            Err(e) => {
                self.machine.rolled_back();
                fail(group, e);
                Landed::Failed
            }
        }
    }

    /// A group known committed, ready to be applied and answered.
    fn take_committed(
        &self,
        group: Vec<Submission>,
        outcomes: Vec<Vec<Outcome>>,
        fresh: Vec<LoggedEvent>,
        committed: Instant,
        totals: super::commit::PendingTotals,
    ) -> Committed {
        for submission in &group {
            self.metrics
                .durable_ack
                .observe(committed.duration_since(submission.received));
        }
        let through = self.machine.next_seq() - 1;
        self.registry.positions.committed_through(through);
        Committed {
            group,
            outcomes,
            fresh,
            committed,
            totals,
            through,
        }
    }

    /// Finds out what became of a group whose commit's outcome was unknown, if there is one: in
    /// the log, it is applied and answered as committed; not, its `seq`s are free again and its
    /// submitters are answered 503 (a retry is safe). While the database does not answer, the
    /// group stays unresolved and the error is returned: nothing may be decided meanwhile.
    pub(super) async fn resolve(&mut self) -> Result<(), WriterError> {
        let Some(unresolved) = self.unresolved.take() else {
            return Ok(());
        };
        let log_next_seq = match self.store.next_seq_landed().await {
            Ok(next) => next,
            Err(e) => {
                self.unresolved = Some(unresolved);
                return Err(e.into());
            }
        };
        let Unresolved {
            group,
            outcomes,
            fresh,
            new_seasons,
        } = unresolved;
        if self.machine.resolve(log_next_seq) {
            tracing::info!("the group whose commit's outcome was unknown is in the log; it is applied");
            let totals = self.machine.committed(&fresh, new_seasons);
            let done = self.take_committed(group, outcomes, fresh, Instant::now(), totals);
            self.finish(done).await;
        } else {
            tracing::warn!(
                "the group whose commit's outcome was unknown is not in the log; its submitters retry"
            );
            self.machine.rolled_back();
            fail(group, WriterError::CommitDidNotTake);
        }
        Ok(())
    }

    /// Lands the group in flight, if any, and hands it over to be applied and answered.
    pub(super) async fn settle(&mut self) {
        let Some(flight) = self.flight.take() else {
            return;
        };
        match self.land(flight).await {
            Landed::Committed(done) => self.finish(done).await,
            Landed::Resubmitted(group, received_at) => self.redo(group, received_at).await,
            Landed::Failed => {}
        }
    }

    /// Decides a group again with its ids looked up, with nothing in flight, then stores,
    /// applies and answers it.
    async fn redo(&mut self, group: Vec<Submission>, received_at: i64) {
        match self.decide(&group, received_at, true).await {
            Ok((decided, tx)) => {
                self.launch(group, decided, tx);
                let flight = self.flight.take().expect("launched");
                // Looked up, it cannot come back resubmitted.
                if let Landed::Committed(done) = self.land(flight).await {
                    self.finish(done).await;
                }
            }
            Err(e) => fail(group, e),
        }
    }

    /// Makes a committed group visible (applied in `seq` order, on the applying thread), then
    /// answers its submitters. While a checkpoint encodes the boards it answers them at once
    /// and leaves the group in the backlog, handed over when the encoding is done
    /// (`catch_up`): their events are durable, only not visible yet.
    async fn finish(&mut self, done: Committed) {
        let Committed {
            group,
            outcomes,
            fresh,
            committed,
            totals,
            through,
        } = done;
        if self.backlog.encoding.is_some() {
            self.machine.pend(totals);
            answer(&self.metrics, fresh.len(), group, outcomes);
            self.backlog.groups.push((fresh, committed, through));
            return;
        }
        if self.machine.pending_totals() >= MAX_PENDING_TOTALS {
            self.drain().await;
        } else if self.backlog.groups.is_empty() && self.applier().is_idle() {
            // The boards show every group handed over: their totals are read there again.
            self.machine.boards_caught_up();
        }
        self.machine.pend(totals);
        let group = Group {
            fresh,
            committed,
            through,
            answers: Some((group, outcomes)),
        };
        self.applier().apply(group).await;
    }

    /// The applying thread, started on first use.
    pub(super) fn applier(&mut self) -> &mut Applier {
        self.backlog.applier.get_or_insert_with(|| {
            Applier::start(Boards {
                store: self.store.clone(),
                registry: self.registry.clone(),
                domain: self.domain.clone(),
                metrics: self.metrics.clone(),
                live: self.live.clone(),
                shard_threads: self.shard_threads,
            })
        })
    }

    /// Waits until every group handed over is applied, so the boards show the whole log but
    /// what an encoding holds back; then the pending totals are the boards' own again.
    pub(super) async fn drain(&mut self) {
        if let Some(applier) = self.backlog.applier.as_mut() {
            applier.drain().await;
        }
        if self.backlog.groups.is_empty() {
            self.machine.boards_caught_up();
        }
    }
}

/// The next command, or `None` once the clock reaches `deadline_ms` with none; `Some(None)`
/// when every handle is dropped.
async fn recv_until(
    rx: &mut mpsc::Receiver<Command>,
    clock: &Clock,
    deadline_ms: i64,
) -> Option<Option<Command>> {
    tokio::select! {
        next = rx.recv() => Some(next),
        () = clock.sleep_until(deadline_ms) => None,
    }
}

/// Adds the event submissions queued behind a group, up to [`MAX_GROUP_EVENTS`]; an action
/// stops it and waits in `pending`, keeping its place after the group. Returns the group's
/// events.
fn gather(
    rx: &mut mpsc::Receiver<Command>,
    group: &mut Vec<Submission>,
    pending: &mut Option<Command>,
) -> usize {
    let mut count: usize = group.iter().map(|s| s.events.len()).sum();
    while count < MAX_GROUP_EVENTS {
        match rx.try_recv() {
            Ok(Command::Events {
                events,
                received,
                reply,
            }) => {
                count += events.len();
                group.push(Submission {
                    events,
                    received,
                    reply,
                });
            }
            Ok(action) => {
                *pending = Some(action);
                break;
            }
            Err(_) => break,
        }
    }
    count
}

/// Inserts and commits a decided group, in the transaction its ids were looked up in if they
/// were, with the feed's `records` made since the last store. A failure before the commit
/// leaves nothing stored; a commit whose answer is lost is [`Stored::Unknown`].
async fn store_group(
    store: &Store,
    tx: Option<Transaction>,
    fresh: &[LoggedEvent],
    new_seasons: &[(String, String)],
    seal: Option<Seal>,
    lookup: bool,
    records: &[crate::feed::Record],
) -> Result<Stored, WriterError> {
    let mut tx = match tx {
        Some(tx) => tx,
        // Decided without a look-up, a few events go as one statement, committed alone,
        // unless they are the first of a season, which is recorded in the same transaction.
        None if store.appends_alone()
            && seal.is_none()
            && new_seasons.is_empty()
            && records.is_empty()
            && fresh.iter().all(|e| e.metadata.is_none())
            && (1..=AT_ONCE_ROWS).contains(&fresh.len()) =>
        {
            return Ok(match store.insert_events_at_once(fresh).await? {
                AtOnce::Stored => Stored::Committed(Instant::now()),
                AtOnce::Resubmitted => Stored::Resubmitted,
                AtOnce::Unknown(e) => Stored::Unknown(e.into()),
            });
        }
        None => store.begin().await?,
    };
    let count = store.insert_events(&mut tx, fresh).await?;
    if count < fresh.len() as u64 {
        tx.rollback("cannot roll back a group").await?;
        if lookup {
            // Its ids were looked up in this very transaction, by the only writer.
            return Err(WriterError::StoredThoughNotFound(fresh.len() as u64 - count));
        }
        return Ok(Stored::Resubmitted);
    }
    store.insert_event_metadata(&mut tx, fresh).await?;
    store.add_event_seasons(&mut tx, new_seasons).await?;
    store.append_feed_in(&mut tx, records).await?;
    if let Some((start, end, entries)) = seal {
        store.seal_run(&mut tx, start, end, entries).await?;
    }
    match tx.commit("cannot commit events").await {
        Ok(()) => Ok(Stored::Committed(Instant::now())),
        Err(CommitFailed::Unknown(e)) => Ok(Stored::Unknown(e.into())),
        Err(CommitFailed::Failed(e)) => Err(e.into()),
    }
}

/// Answers every submission of a group that was neither stored nor applied, each with the same
/// error.
fn fail(group: Vec<Submission>, e: WriterError) {
    tracing::warn!(
        "a group commit failed, nothing of it was stored or applied: {}",
        Chain(&e)
    );
    let shared = Arc::new(e);
    for submission in group {
        let _ = submission.reply.send(Err(WriterError::Group(shared.clone())));
    }
}
