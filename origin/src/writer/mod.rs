//! The single writer: durable ingestion with group commit, and the action log.
//!
//! One writer task owns every write to the log and every change to the live boards, so the
//! log's `seq` order is exactly the order the boards applied: a rebuild replays it identically.
//! Event submissions queue on a channel; the writer takes everything queued (up to
//! [`MAX_GROUP_EVENTS`]) into one transaction and one fsync, then applies the new events to the
//! boards (on a thread of its own, see `ingest/applier.rs`), then answers. So an `ACCEPTED`
//! answer always means durable, and durability does not cost throughput: concurrent clients
//! share commits. Actions (season transitions, moderation, late decisions) are rare and take a
//! transaction each, in line with the events around them.
//!
//! Three moments are measured apart: the durable ack (submission to commit), the visible lag
//! (commit to applied in the index), and, by the live-update tier, the push.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use standings_core::ScoreMode;
use tokio::sync::{mpsc, oneshot};

use crate::FastHash;
use crate::boards::Registry;
use crate::clock::Clock;
use crate::domain::{ActionResult, ActionRow, Correction, EventStatus, LoggedEvent, NewEvent};
use crate::http::error::AppError;
use crate::log::{self, Action, Domain, LiveInstances, perform, targets};
use crate::metrics::Metrics;
use crate::store::player_index;
use crate::store::{AT_ONCE_ROWS, AtOnce, CommitFailed, RUN_SEQS, Store, Transaction};

mod applier;
pub mod checkpoint;
pub mod rest;

use applier::{Applier, Boards, Group, answer};

/// The most events one group commit takes.
pub const MAX_GROUP_EVENTS: usize = 8_192;

/// A group smaller than this waits for the group in flight to land before it is decided, and
/// takes in what arrived meanwhile; a larger one is decided while the one in flight commits.
const PIPELINE_MIN_EVENTS: usize = 1_000;

/// What became of one submitted event.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// Durably stored and applied.
    Accepted,
    /// Durably stored and queued as late for some or all of its boards (applied to the rest).
    Late,
    /// The same event was already stored; nothing changed.
    Duplicate,
    /// Refused; nothing changed.
    Refused(AppError),
}

/// An action to perform, validated by the writer against the current state.
pub struct ActionRequest {
    /// The game.
    pub game: String,
    /// What to do.
    pub action: Action,
    /// The client's moderation id, for idempotent retries.
    pub action_id: Option<String>,
    /// The request as the client sent it, kept in the audit log.
    pub request: Value,
    /// Who asks.
    pub actor: String,
    /// Why.
    pub reason: String,
}

/// What an action answered.
#[derive(Debug)]
pub struct ActionAnswer {
    /// Whether it was a retry of an action already performed.
    pub replayed: bool,
    /// The log's `seq` of the action.
    pub seq: i64,
    /// What it changed (as recorded in the audit log); `None` for a retry of an action whose
    /// result was never recorded.
    pub result: Option<ActionResult>,
}

enum Command {
    Events {
        events: Vec<NewEvent>,
        received: Instant,
        reply: oneshot::Sender<Result<Vec<Outcome>, AppError>>,
    },
    Action {
        request: Box<ActionRequest>,
        reply: oneshot::Sender<Result<ActionAnswer, AppError>>,
    },
    Evict {
        reply: oneshot::Sender<Result<usize, AppError>>,
    },
    Checkpoint {
        reply: oneshot::Sender<Result<Option<checkpoint::Written>, AppError>>,
    },
}

/// The handle that request handlers submit through.
#[derive(Clone)]
pub struct Ingest {
    tx: mpsc::Sender<Command>,
}

/// What the writer needs.
pub struct WriterParts {
    /// The database.
    pub store: Store,
    /// The live boards.
    pub registry: Arc<Registry>,
    /// Seasons and moderation state.
    pub domain: Arc<Domain>,
    /// The metrics.
    pub metrics: Arc<Metrics>,
    /// The clock that stamps `received_at` and actions.
    pub clock: Clock,
    /// The next free `seq`.
    pub next_seq: i64,
    /// How long a closed period stays in memory (ms).
    pub retention_ms: i64,
    /// Start a checkpoint each time the log grows by this many entries (0: only on request).
    pub checkpoint_every: u64,
    /// The `seq` of the newest stored checkpoint (0 without one).
    pub checkpoint_seq: i64,
    /// Where the log's unsealed tail starts ([`Store::sealed_below`]): once it holds
    /// [`RUN_SEQS`] seqs, the group that completes it seals it as a run.
    pub sealed_below: i64,
    /// The `(player key, seq)` of the committed events from `sealed_below` on
    /// ([`Store::tail_keys`]): the run's entries in the player index once a group completes it.
    pub unsealed: Vec<(i64, i64)>,
    /// The seasons with committed events, by game ([`Store::event_seasons`]): a group with the
    /// first events of a season records it in the same transaction.
    pub event_seasons: HashMap<String, HashSet<String>>,
    /// What was committed and answered while a checkpoint encodes the boards (empty at start).
    pub backlog: Backlog,
    /// A group whose commit has an unknown outcome (see [`resolve`]); `None` at start.
    pub unresolved: Option<Unresolved>,
}

/// A group whose commit was sent but whose answer was lost (the connection broke): it may be
/// in the log or not. Nothing is decided after it until the log says which (`resolve`); its
/// `seq`s stay taken and its submitters wait meanwhile.
pub struct Unresolved {
    held: Held,
    fresh: Vec<LoggedEvent>,
    new_seasons: Vec<(String, String)>,
}

/// How long the idle writer waits between two attempts to resolve an unknown commit.
const RESOLVE_RETRY: std::time::Duration = std::time::Duration::from_millis(200);

/// Committed groups the boards do not show yet: those handed to the applying thread, and while a
/// periodic checkpoint is encoded, those committed and answered meanwhile, to be handed over once
/// it is done (see `begin_checkpoint`).
#[derive(Default)]
pub struct Backlog {
    encoding: Option<Encoding>,
    /// Each group's new events held during an encoding, with the moment they were committed.
    groups: Vec<(Vec<LoggedEvent>, Instant)>,
    /// The cumulative totals the groups not known to be applied reach, which the boards may not
    /// show yet. Cleared when nothing waits to be applied.
    totals: PendingTotals,
    /// The applying thread, started with the first group.
    applier: Option<Applier>,
}

/// Past this many pending totals the writer waits for the applier to catch up and clears them,
/// so that a long cumulative load, with the applier never found idle, does not grow them.
const MAX_PENDING_TOTALS: usize = 1 << 20;

/// A checkpoint's encoding, on a blocking thread of its own.
type Encoding = tokio::task::JoinHandle<Result<checkpoint::Encoded, AppError>>;

impl Ingest {
    /// Starts the writer task.
    pub fn start(parts: WriterParts) -> Ingest {
        let (tx, rx) = mpsc::channel(4_096);
        tokio::spawn(writer(rx, parts));
        Ingest { tx }
    }

    /// Submits events and waits until they are durably committed and applied (or refused).
    /// The outcomes come back in the order given.
    pub async fn submit(&self, events: Vec<NewEvent>) -> Result<Vec<Outcome>, AppError> {
        let (reply, answer) = oneshot::channel();
        let command = Command::Events {
            events,
            received: Instant::now(),
            reply,
        };
        self.send(command).await?;
        answer
            .await
            .map_err(|_| AppError::Internal("the writer dropped a submission".into()))?
    }

    /// Submits an action and waits until it is durably logged and performed.
    pub async fn act(&self, request: ActionRequest) -> Result<ActionAnswer, AppError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Action {
            request: Box::new(request),
            reply,
        })
        .await?;
        answer
            .await
            .map_err(|_| AppError::Internal("the writer dropped an action".into()))?
    }

    /// Saves closed periods past their retention to storage and drops them from memory;
    /// returns how many left. Runs in the writer, so it never races a change.
    pub async fn evict_closed(&self) -> Result<usize, AppError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Evict { reply }).await?;
        answer
            .await
            .map_err(|_| AppError::Internal("the writer dropped an eviction".into()))?
    }

    /// Writes a checkpoint of the live state as of the last committed `seq` (see
    /// [`checkpoint`]) and waits until it is stored. Runs in the writer, between groups, so it
    /// is exactly the log's state; a periodic one still being stored is finished first. `None`
    /// when the newest stored checkpoint is already as of that `seq` (nothing was written since,
    /// as when a service stops right after a start).
    pub async fn checkpoint(&self) -> Result<Option<checkpoint::Written>, AppError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Checkpoint { reply }).await?;
        answer
            .await
            .map_err(|_| AppError::Internal("the writer dropped a checkpoint".into()))?
    }

    async fn send(&self, command: Command) -> Result<(), AppError> {
        self.tx
            .send(command)
            .await
            .map_err(|_| AppError::Unavailable("the writer has stopped; the service is shutting down".into()))
    }
}

struct Submission {
    events: Vec<NewEvent>,
    received: Instant,
    reply: oneshot::Sender<Result<Vec<Outcome>, AppError>>,
}

/// Cumulative totals a group's accepted events leave, by (board, period key, player), before
/// the boards show them.
type PendingTotals = HashMap<(standings_core::BoardId, String, String), i64, FastHash>;

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
    totals: PendingTotals,
}

/// A decided group whose insert and commit run on the database's thread. The writer holds at
/// most one: while it runs, the writer applies and answers the group before it and decides the
/// group after it, so the boards' work and the database's overlap. `parts.next_seq` and
/// `parts.sealed_below` already count it; they are put back if it is not committed.
struct InFlight {
    held: Held,
    /// The insert and commit, which hand the group's events back whatever became of them.
    task: tokio::task::JoinHandle<(Result<Stored, AppError>, Vec<LoggedEvent>, Seasons)>,
}

/// A run sealed by a group: its first and end `seq`, and its `(player key, seq)` entries.
type Seal = (i64, i64, Vec<(i64, i64)>);

/// `(game, season)` pairs.
type Seasons = Vec<(String, String)>;

/// A group that left the writer for the database: what it needs to answer it once the database
/// has.
struct Held {
    group: Vec<Submission>,
    outcomes: Vec<Vec<Outcome>>,
    totals: PendingTotals,
    /// Events per submission, to hand them back if the insert meets a stored id.
    lengths: Vec<usize>,
    first_seq: i64,
    sealed_before: i64,
    /// Whether its ids were looked up before it was decided.
    lookup: bool,
    found_stored: bool,
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
    Unknown(AppError),
}

/// What became of a group in flight.
enum Landed {
    Committed(Committed),
    /// It met stored ids; here it is again, untouched, to be looked up and decided anew.
    Resubmitted(Vec<Submission>),
    /// It failed and its submitters have their answer.
    Failed,
}

/// What deciding a group gives.
struct Decided {
    /// The transaction its ids were looked up in, if they were.
    tx: Option<Transaction>,
    /// The outcome of every event.
    outcomes: Vec<Vec<Outcome>>,
    /// Per event, `Some(late)` when it is to be stored.
    flags: Vec<Vec<Option<bool>>>,
    /// The cumulative totals it leaves.
    totals: PendingTotals,
    /// Whether any of its ids was found stored.
    found_stored: bool,
}

async fn writer(mut rx: mpsc::Receiver<Command>, mut parts: WriterParts) {
    let mut pending: Option<Command> = None;
    let mut in_flight: Option<InFlight> = None;
    // Whether the last group met stored events (see `take_group`).
    let mut lookup_first = false;
    // Whether anything ran since memory was last released (see `rest`). The start itself
    // (restoring a checkpoint, replaying the log) leaves freed buffers in the heap.
    let mut wrote_since_rest = true;
    // A periodic checkpoint being stored while writes go on, and the `seq` of the newest one
    // begun (see `begin_checkpoint`).
    let mut storing: Option<Storing> = None;
    let mut checkpoint_begun = parts.checkpoint_seq;
    loop {
        if parts.backlog.encoding.as_ref().is_some_and(|e| e.is_finished()) {
            end_encoding(&mut parts, &mut storing).await;
        }
        let first = match pending.take() {
            Some(command) => command,
            None => match rx.try_recv() {
                Ok(command) => command,
                Err(_) => {
                    // Nothing else is queued: make the group in flight visible and answer it
                    // now rather than behind whatever arrives next.
                    settle(&mut parts, in_flight.take(), &mut lookup_first).await;
                    let next = if parts.unresolved.is_some() {
                        // A group waits to hear whether its commit took: ask the log again
                        // unless a command comes first (which asks it anyway).
                        match tokio::time::timeout(RESOLVE_RETRY, rx.recv()).await {
                            Ok(next) => next,
                            Err(_) => {
                                let _ = resolve(&mut parts).await;
                                continue;
                            }
                        }
                    } else if let Some(mut encoding) = parts.backlog.encoding.take() {
                        // Wake for the next command or for the end of the encoding, which
                        // makes the backlog visible.
                        tokio::select! {
                            next = rx.recv() => {
                                parts.backlog.encoding = Some(encoding);
                                next
                            }
                            encoded = &mut encoding => {
                                storing = catch_up(&mut parts, encoded).await;
                                continue;
                            }
                        }
                    } else if wrote_since_rest {
                        match tokio::time::timeout(rest::IDLE_BEFORE_RELEASE, rx.recv()).await {
                            Ok(next) => next,
                            Err(_) => {
                                drain(&mut parts).await;
                                rest::release(&parts.store, &parts.registry, &parts.metrics).await;
                                wrote_since_rest = false;
                                rx.recv().await
                            }
                        }
                    } else {
                        rx.recv().await
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
                wrote_since_rest = true;
                settle(&mut parts, in_flight.take(), &mut lookup_first).await;
                end_encoding(&mut parts, &mut storing).await;
                drain(&mut parts).await;
                let answer = match resolve(&mut parts).await {
                    Ok(()) => act(&mut parts, *request).await,
                    Err(e) => Err(e),
                };
                let _ = reply.send(answer);
            }
            Command::Evict { reply } => {
                settle(&mut parts, in_flight.take(), &mut lookup_first).await;
                end_encoding(&mut parts, &mut storing).await;
                drain(&mut parts).await;
                let evicted = match resolve(&mut parts).await {
                    Ok(()) => evict(&parts).await,
                    Err(e) => Err(e),
                };
                let _ = reply.send(evicted);
            }
            Command::Checkpoint { reply } => {
                settle(&mut parts, in_flight.take(), &mut lookup_first).await;
                end_encoding(&mut parts, &mut storing).await;
                drain(&mut parts).await;
                reap(&mut parts, storing.take()).await;
                // A checkpoint is as of the last committed seq, which an unknown commit
                // leaves unknown.
                let written = match resolve(&mut parts).await {
                    Ok(()) => write_checkpoint(&mut parts).await,
                    Err(e) => Err(e),
                };
                checkpoint_begun = checkpoint_begun.max(parts.checkpoint_seq);
                let _ = reply.send(written);
            }
            Command::Events {
                events,
                received,
                reply,
            } => {
                wrote_since_rest = true;
                let mut group = vec![Submission {
                    events,
                    received,
                    reply,
                }];
                let count = gather(&mut rx, &mut group, &mut pending);
                if in_flight.is_some() && pending.is_none() && count < PIPELINE_MIN_EVENTS {
                    // A small group gains more from what arrives while the group in flight
                    // commits than from being decided meanwhile: single submissions share a
                    // commit only this way.
                    settle(&mut parts, in_flight.take(), &mut lookup_first).await;
                    gather(&mut rx, &mut group, &mut pending);
                }
                take_group(&mut parts, group, &mut in_flight, &mut lookup_first).await;
                if parts.checkpoint_every > 0
                    && (parts.next_seq - 1 - checkpoint_begun) as u64 >= parts.checkpoint_every
                    && parts.backlog.encoding.is_none()
                    && parts.unresolved.is_none()
                    && storing.as_ref().is_none_or(|task| task.is_finished())
                {
                    reap(&mut parts, storing.take()).await;
                    // A checkpoint is the state of the log up to its seq: everything committed
                    // is applied first.
                    settle(&mut parts, in_flight.take(), &mut lookup_first).await;
                    drain(&mut parts).await;
                    if parts.unresolved.is_none() {
                        checkpoint_begun = parts.next_seq - 1;
                        begin_checkpoint(&mut parts);
                    }
                }
            }
        }
    }
}

/// Adds the event submissions queued behind a group, up to [`MAX_GROUP_EVENTS`]; an action stops
/// it and waits in `pending`, keeping its place after the group. Returns the group's events.
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

/// Decides a group and sets its insert and commit going, as the new group in flight; meanwhile
/// the group that was in flight lands and is applied and answered. On a failure the group's
/// submitters are answered with the error and nothing of it was stored or applied.
///
/// A group is first decided without looking its ids up in the log, as if every event were new,
/// which under load they are: the insert skips any id already stored and counts the rows it
/// stored, so a short count proves a resubmission, and then the transaction is rolled back and
/// the group decided again with the stored events in view, exactly as if they had been looked
/// up first. The first decision is kept only when it stores every event (no refusal, no repeat
/// within the group), which is when looking up would have found nothing and decided the same.
/// `lookup_first` says whether the last group met stored events: under a wave of retries every
/// group looks up first rather than trying twice. A group that looks up waits for the one in
/// flight to land: its transaction needs the writer's one connection.
///
/// A group decided while another is in flight counts on that one's totals and `seq`s; if that
/// one is not committed after all, this one is decided again.
async fn take_group(
    parts: &mut WriterParts,
    mut group: Vec<Submission>,
    in_flight: &mut Option<InFlight>,
    lookup_first: &mut bool,
) {
    let received_at = parts.clock.now_ms();
    for submission in group.iter_mut() {
        for e in &mut submission.events {
            e.received_at = received_at;
        }
    }
    let no_totals = PendingTotals::default();
    let mut look_up = false;
    loop {
        let lookup = *lookup_first || look_up;
        if lookup {
            settle(parts, in_flight.take(), lookup_first).await;
        }
        if let Err(e) = resolve(parts).await {
            fail(group, &e);
            return;
        }
        let prior = in_flight.as_ref().map_or(&no_totals, |f| &f.held.totals);
        let decided = match decide_group(parts, &group, prior, lookup).await {
            Ok(decided) => decided,
            Err(e) => {
                settle(parts, in_flight.take(), lookup_first).await;
                fail(group, &e);
                return;
            }
        };
        if !lookup && decided.flags.iter().flatten().any(Option::is_none) {
            look_up = true;
            continue;
        }
        let Some(flight) = in_flight.take() else {
            *in_flight = Some(launch(parts, group, decided, lookup));
            tokio::task::yield_now().await;
            return;
        };
        // Only a group decided without a look-up gets here (one that looks up lands the group
        // in flight first), so it holds no transaction, which would keep the writer's one
        // connection from the earlier group should that one be redone.
        debug_assert!(decided.tx.is_none());
        match land(parts, flight, lookup_first).await {
            Landed::Committed(done) => {
                *in_flight = Some(launch(parts, group, decided, lookup));
                // A task spawned from a worker waits in that worker's LIFO slot, which no other
                // worker steals, until the spawner yields: without this the insert would start
                // only once `finish` is done, and the two would never overlap. Polled once, the
                // task hands its first statement to the database thread; later wake-ups come
                // from that thread and go to the shared queue.
                tokio::task::yield_now().await;
                finish(parts, done).await;
                return;
            }
            Landed::Resubmitted(earlier) => {
                // The earlier group goes again, looked up; this one is decided after it.
                redo(parts, earlier, lookup_first).await;
            }
            Landed::Failed => {}
        }
    }
}

/// Numbers a decided group's accepted events (they leave their submissions, no copy) and
/// starts their insert and commit on the database's thread.
fn launch(parts: &mut WriterParts, mut group: Vec<Submission>, decided: Decided, lookup: bool) -> InFlight {
    let Decided {
        tx,
        outcomes,
        flags,
        totals,
        found_stored,
    } = decided;
    let lengths: Vec<usize> = group.iter().map(|s| s.events.len()).collect();
    let first_seq = parts.next_seq;
    let mut seq = first_seq;
    let mut fresh = Vec::with_capacity(flags.iter().map(Vec::len).sum());
    for (submission, flags) in group.iter_mut().zip(flags) {
        for (event, late) in submission.events.drain(..).zip(flags) {
            let Some(late) = late else { continue };
            let status = if late {
                EventStatus::Late
            } else {
                EventStatus::Applied
            };
            fresh.push(LoggedEvent { seq, status, event });
            seq += 1;
        }
    }
    let sealed_before = parts.sealed_below;
    let seal = (seq - sealed_before >= RUN_SEQS).then_some((sealed_before, seq));
    parts.next_seq = seq;
    if let Some((_, end)) = seal {
        parts.sealed_below = end;
    }
    let mut new_seasons: Vec<(String, String)> = Vec::new();
    let mut last: Option<&LoggedEvent> = None;
    for e in &fresh {
        // Events of one season come in runs: most of them are the one before them.
        if last.is_some_and(|last| last.game == e.game && last.season == e.season) {
            continue;
        }
        last = Some(e);
        let recorded = parts
            .event_seasons
            .get(e.game.as_str())
            .is_some_and(|seasons| seasons.contains(e.season.as_str()));
        if !recorded && !new_seasons.iter().any(|(g, s)| *g == e.game && *s == e.season) {
            new_seasons.push((e.game.clone(), e.season.clone()));
        }
    }
    // The sealed run's index entries: those of the committed tail, then this group's.
    let seal = seal.map(|(start, end)| {
        let mut entries = Vec::with_capacity(parts.unsealed.len() + fresh.len());
        entries.extend_from_slice(&parts.unsealed);
        entries.extend(fresh.iter().map(|e| (index_key(e), e.seq)));
        (start, end, entries)
    });
    let store = parts.store.clone();
    let task = tokio::spawn(async move {
        let stored = store_group(&store, tx, &fresh, &new_seasons, seal, lookup).await;
        (stored, fresh, new_seasons)
    });
    InFlight {
        held: Held {
            group,
            outcomes,
            totals,
            lengths,
            first_seq,
            sealed_before,
            lookup,
            found_stored,
        },
        task,
    }
}

/// Inserts and commits a decided group, in the transaction its ids were looked up in if they
/// were. A failure before the commit leaves nothing stored; a commit whose answer is lost is
/// [`Stored::Unknown`].
async fn store_group(
    store: &Store,
    tx: Option<Transaction>,
    fresh: &[LoggedEvent],
    new_seasons: &[(String, String)],
    seal: Option<Seal>,
    lookup: bool,
) -> Result<Stored, AppError> {
    let mut tx = match tx {
        Some(tx) => tx,
        // Decided without a look-up, a few events go as one statement, committed alone,
        // unless they are the first of a season, which is recorded in the same transaction.
        None if seal.is_none() && new_seasons.is_empty() && (1..=AT_ONCE_ROWS).contains(&fresh.len()) => {
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
            return Err(AppError::Internal(format!(
                "{} of a group's events were stored already, though not found",
                fresh.len() as u64 - count
            )));
        }
        return Ok(Stored::Resubmitted);
    }
    store.add_event_seasons(&mut tx, new_seasons).await?;
    if let Some((start, end, entries)) = seal {
        store.seal_run(&mut tx, start, end, entries).await?;
    }
    match tx.commit("cannot commit events").await {
        Ok(()) => Ok(Stored::Committed(Instant::now())),
        Err(CommitFailed::Unknown(e)) => Ok(Stored::Unknown(e.into())),
        Err(CommitFailed::Failed(e)) => Err(e.into()),
    }
}

/// An event's key in the player index.
fn index_key(e: &LoggedEvent) -> i64 {
    player_index::player_key(&e.game, &e.player_id, &e.mode, &e.season)
}

/// Waits for a group in flight. Unless it committed, the `seq`s it took are free again; when
/// its commit's outcome is unknown they stay taken, and it waits in `parts.unresolved`.
async fn land(parts: &mut WriterParts, flight: InFlight, lookup_first: &mut bool) -> Landed {
    let InFlight { mut held, task } = flight;
    let (stored, mut fresh, new_seasons) = match task.await {
        Ok(landed) => landed,
        Err(e) => {
            let error = AppError::Internal(format!("the commit task failed: {e}"));
            return rolled_back(parts, held, &error);
        }
    };
    match stored {
        Ok(Stored::Committed(committed)) => {
            if held.lookup {
                *lookup_first = held.found_stored;
            }
            Landed::Committed(take_committed(parts, held, fresh, new_seasons, committed))
        }
        Ok(Stored::Resubmitted) => {
            parts.next_seq = held.first_seq;
            parts.sealed_below = held.sealed_before;
            *lookup_first = true;
            // Every event was to be stored: they go back to their submissions in order.
            let mut events = fresh.drain(..);
            for (submission, length) in held.group.iter_mut().zip(&held.lengths) {
                submission
                    .events
                    .extend(events.by_ref().take(*length).map(|e| e.event));
            }
            Landed::Resubmitted(held.group)
        }
        Ok(Stored::Unknown(e)) => {
            tracing::warn!(
                "a group's commit has an unknown outcome; nothing is decided until the log says whether seq {} is in it: {e}",
                held.first_seq
            );
            parts.unresolved = Some(Unresolved {
                held,
                fresh,
                new_seasons,
            });
            Landed::Failed
        }
        Err(e) => rolled_back(parts, held, &e),
    }
}

/// A group known committed: what it changes in the writer's state, and the group ready to be
/// applied and answered.
fn take_committed(
    parts: &mut WriterParts,
    held: Held,
    fresh: Vec<LoggedEvent>,
    new_seasons: Vec<(String, String)>,
    committed: Instant,
) -> Committed {
    for (game, season) in new_seasons {
        parts.event_seasons.entry(game).or_default().insert(season);
    }
    if parts.sealed_below == held.sealed_before {
        parts.unsealed.extend(fresh.iter().map(|e| (index_key(e), e.seq)));
    } else {
        // This group sealed the run, its own events included.
        parts.unsealed.clear();
    }
    for submission in &held.group {
        parts
            .metrics
            .durable_ack
            .observe(committed.duration_since(submission.received));
    }
    Committed {
        group: held.group,
        outcomes: held.outcomes,
        fresh,
        committed,
        totals: held.totals,
    }
}

/// A group known not committed: its `seq`s are free again and its submitters hear the error.
fn rolled_back(parts: &mut WriterParts, held: Held, error: &AppError) -> Landed {
    parts.next_seq = held.first_seq;
    parts.sealed_below = held.sealed_before;
    fail(held.group, error);
    Landed::Failed
}

/// Whether a group whose commit's outcome was unknown is in the log, given the log's next free
/// `seq` once the database answers again. The writer is the log's only writer and decided
/// nothing after the group, so the group is in the log exactly when its first `seq` is below
/// that; a group that stored no event has nothing to find, and its answers stand either way.
fn unknown_commit_landed(first_seq: Option<i64>, log_next_seq: i64) -> bool {
    first_seq.is_none_or(|first| first < log_next_seq)
}

/// Finds out what became of a group whose commit's outcome was unknown, if there is one: in the
/// log, it is applied and answered as committed; not, its `seq`s are free again and its
/// submitters are answered 503 (a retry is safe). While the database does not answer, the
/// group stays unresolved and the error is returned: nothing may be decided meanwhile.
async fn resolve(parts: &mut WriterParts) -> Result<(), AppError> {
    let Some(unresolved) = parts.unresolved.take() else {
        return Ok(());
    };
    let log_next_seq = match parts.store.next_seq().await {
        Ok(next) => next,
        Err(e) => {
            parts.unresolved = Some(unresolved);
            return Err(e.into());
        }
    };
    let Unresolved {
        held,
        fresh,
        new_seasons,
    } = unresolved;
    let first_seq = fresh.first().map(|e| e.seq);
    if unknown_commit_landed(first_seq, log_next_seq) {
        tracing::info!("the group whose commit's outcome was unknown is in the log; it is applied");
        let done = take_committed(parts, held, fresh, new_seasons, Instant::now());
        finish(parts, done).await;
    } else {
        tracing::warn!(
            "the group whose commit's outcome was unknown is not in the log; its submitters retry"
        );
        let error = AppError::DatabaseUnavailable(
            "the database went away during the commit, which did not take; nothing was stored".into(),
        );
        rolled_back(parts, held, &error);
    }
    Ok(())
}

/// Lands the group in flight, if any, and hands it over to be applied and answered.
async fn settle(parts: &mut WriterParts, flight: Option<InFlight>, lookup_first: &mut bool) {
    let Some(flight) = flight else { return };
    match land(parts, flight, lookup_first).await {
        Landed::Committed(done) => finish(parts, done).await,
        Landed::Resubmitted(group) => redo(parts, group, lookup_first).await,
        Landed::Failed => {}
    }
}

/// Decides a group again with its ids looked up, with nothing in flight, then stores, applies
/// and answers it.
async fn redo(parts: &mut WriterParts, group: Vec<Submission>, lookup_first: &mut bool) {
    match decide_group(parts, &group, &PendingTotals::default(), true).await {
        Ok(decided) => {
            let flight = launch(parts, group, decided, true);
            // Looked up, it cannot come back resubmitted.
            if let Landed::Committed(done) = land(parts, flight, lookup_first).await {
                finish(parts, done).await;
            }
        }
        Err(e) => fail(group, &e),
    }
}

/// Decides each event of a group in order, with its ids looked up among stored events when
/// `lookup` (otherwise as if none were stored). Cumulative totals are checked against an
/// overlay of this group's pending sums, then the `prior` group's (committed, perhaps not yet
/// applied), then the backlog's (answered while a checkpoint encodes), then the boards, so that
/// an event that would overflow is refused before it is stored.
async fn decide_group(
    parts: &WriterParts,
    group: &[Submission],
    prior: &PendingTotals,
    lookup: bool,
) -> Result<Decided, AppError> {
    let WriterParts {
        store,
        registry,
        domain,
        backlog,
        ..
    } = parts;
    let mut found = Vec::new();
    let mut tx = None;
    if lookup {
        let mut ids_by_game: HashMap<&str, Vec<&str>> = HashMap::new();
        for submission in group {
            for e in &submission.events {
                ids_by_game
                    .entry(e.game.as_str())
                    .or_default()
                    .push(e.event_id.as_str());
            }
        }
        let tx = tx.insert(store.begin().await?);
        for (game, ids) in &ids_by_game {
            found.extend(store.find_events(tx, game, ids).await?);
        }
    }
    // Everything already stored, or accepted earlier in this group, by (game, event id).
    let events = group.iter().map(|s| s.events.len()).sum::<usize>() + found.len();
    let mut known: HashMap<(&str, &str), &NewEvent, FastHash> =
        HashMap::with_capacity_and_hasher(events, FastHash::default());
    known.extend(
        found
            .iter()
            .map(|stored| ((stored.game.as_str(), stored.event_id.as_str()), &stored.event)),
    );
    let mut totals = PendingTotals::default();
    let mut outcomes: Vec<Vec<Outcome>> = Vec::with_capacity(group.len());
    let mut flags: Vec<Vec<Option<bool>>> = Vec::with_capacity(group.len());
    for submission in group {
        let mut these = Vec::with_capacity(submission.events.len());
        let mut keep = Vec::with_capacity(submission.events.len());
        for e in &submission.events {
            let key = (e.game.as_str(), e.event_id.as_str());
            if let Some(stored) = known.get(&key) {
                these.push(if !stored.same_payload(e) {
                    Outcome::Refused(AppError::EventIdConflict(format!(
                        "event {:?} was already submitted with a different payload",
                        e.event_id
                    )))
                } else if domain.is_invalidated(&e.game, &e.event_id) {
                    Outcome::Refused(AppError::EventInvalidated(format!(
                        "event {:?} was invalidated by a moderator; resubmitting it changes nothing",
                        e.event_id
                    )))
                } else {
                    Outcome::Duplicate
                });
                keep.push(None);
                continue;
            }
            match decide(registry, domain, e, &mut totals, [prior, &backlog.totals]) {
                Ok(late) => {
                    known.insert(key, e);
                    these.push(if late { Outcome::Late } else { Outcome::Accepted });
                    keep.push(Some(late));
                }
                Err(refusal) => {
                    these.push(Outcome::Refused(refusal));
                    keep.push(None);
                }
            }
        }
        outcomes.push(these);
        flags.push(keep);
    }
    Ok(Decided {
        tx,
        outcomes,
        flags,
        totals,
        found_stored: !found.is_empty(),
    })
}

/// Makes a committed group visible (applied in `seq` order, on the applying thread), then
/// answers its submitters. While a checkpoint encodes the boards it answers them at once and
/// leaves the group in the backlog, handed over when the encoding is done (`catch_up`): their
/// events are durable, only not visible yet.
async fn finish(parts: &mut WriterParts, done: Committed) {
    let Committed {
        group,
        outcomes,
        fresh,
        committed,
        totals,
    } = done;
    if parts.backlog.encoding.is_some() {
        // Later groups' totals build on earlier ones, so they replace them.
        parts.backlog.totals.extend(totals);
        answer(&parts.metrics, fresh.len(), group, outcomes);
        parts.backlog.groups.push((fresh, committed));
        return;
    }
    if parts.backlog.totals.len() >= MAX_PENDING_TOTALS {
        drain(parts).await;
    } else if parts.backlog.groups.is_empty() && applier(parts).is_idle() {
        // The boards show every group handed over: their totals are read there again.
        parts.backlog.totals.clear();
    }
    parts.backlog.totals.extend(totals);
    let group = Group {
        fresh,
        committed,
        answers: Some((group, outcomes)),
    };
    applier(parts).apply(group).await;
}

/// The applying thread, started on first use.
fn applier(parts: &mut WriterParts) -> &mut Applier {
    parts.backlog.applier.get_or_insert_with(|| {
        Applier::start(Boards {
            store: parts.store.clone(),
            registry: parts.registry.clone(),
            domain: parts.domain.clone(),
            metrics: parts.metrics.clone(),
        })
    })
}

/// Waits until every group handed over is applied, so the boards show the whole log but what
/// an encoding holds back; then the pending totals are the boards' own again.
async fn drain(parts: &mut WriterParts) {
    if let Some(applier) = parts.backlog.applier.as_mut() {
        applier.drain().await;
    }
    if parts.backlog.groups.is_empty() {
        parts.backlog.totals.clear();
    }
}

/// Answers every submission of a group that was neither stored nor applied.
fn fail(group: Vec<Submission>, e: &AppError) {
    tracing::warn!("a group commit failed, nothing of it was stored or applied: {e}");
    for submission in group {
        // The database's absence stays a 503 for every submitter: a retry is safe.
        let answer = match e {
            AppError::DatabaseUnavailable(detail) => {
                AppError::DatabaseUnavailable(format!("group commit failed: {detail}"))
            }
            AppError::Store(store) => AppError::Store(store.clone()),
            e => AppError::Internal(format!("group commit failed: {e}")),
        };
        let _ = submission.reply.send(Err(answer));
    }
}

/// Decides a new event against the season, disqualifications and cumulative totals. Returns
/// whether it is late anywhere; records its contribution to pending totals when it passes.
/// A total not in `pending` is looked up in `earlier` (the group in flight, then the backlog),
/// then on the board.
fn decide(
    registry: &Registry,
    domain: &Domain,
    e: &NewEvent,
    pending: &mut PendingTotals,
    earlier: [&PendingTotals; 2],
) -> Result<bool, AppError> {
    let season_late = domain.season_late_on_arrival(e)?;
    for board in e.boards().filter(|_| domain.disqualifies_anyone()) {
        if domain.is_disqualified(&board, &e.player_id) {
            return Err(AppError::PlayerDisqualified(format!(
                "player {:?} is disqualified from {board}",
                e.player_id
            )));
        }
    }
    let targets = targets(registry, e, season_late)?;
    let mut updates = Vec::new();
    for target in &targets {
        if target.late {
            continue;
        }
        let Some(entry) = registry.entry(&target.board) else {
            continue;
        };
        if entry.def.rules.score_mode != ScoreMode::Cumulative {
            continue;
        }
        let key = (
            target.board.clone(),
            target.period.key.clone(),
            e.player_id.clone(),
        );
        let earlier_total = earlier.iter().find_map(|totals| totals.get(&key));
        let current = match pending.get(&key).or(earlier_total) {
            Some(total) => Some(*total),
            None => entry
                .instance(&target.period.key)
                .and_then(|slot| slot.read().index().standing_of_player(&e.player_id))
                .map(|s| s.value),
        };
        let total = match current {
            Some(c) => c.checked_add(e.value).ok_or_else(|| {
                AppError::ValueOutOfRange(format!(
                    "the total on {} ({}) would overflow a 64-bit integer",
                    target.board, target.period.key
                ))
            })?,
            None => e.value,
        };
        updates.push((key, total));
    }
    pending.extend(updates);
    Ok(targets.iter().any(|t| t.late))
}

/// Validates, logs and performs one action.
async fn act(parts: &mut WriterParts, request: ActionRequest) -> Result<ActionAnswer, AppError> {
    let WriterParts {
        store,
        registry,
        domain,
        clock,
        next_seq,
        ..
    } = parts;
    if let Some(id) = &request.action_id
        && let Some(existing) = store.find_action(&request.game, id).await?
    {
        if existing.request != request.request {
            return Err(AppError::ModerationIdConflict(format!(
                "moderation_id {id:?} was already used for another action"
            )));
        }
        return Ok(ActionAnswer {
            replayed: true,
            seq: existing.seq,
            result: existing.result,
        });
    }
    validate(store, registry, domain, &request).await?;
    // The log keeps the typed action (what a rebuild performs) beside the request as sent.
    let logged = ActionRow {
        seq: *next_seq,
        game: request.game.clone(),
        action: Ok(request.action.clone()),
        action_id: request.action_id.clone(),
        request: request.request.clone(),
        result: None,
        actor: request.actor.clone(),
        reason: request.reason.clone(),
        created_at: clock.now_ms(),
    };
    // Decided on the current state before it is written: a logged action is performed again
    // by every restart and rebuild, so one that cannot be carried out must never reach the log.
    log::try_perform(store, registry, domain, &logged, &request.action).await?;
    let mut tx = store.begin().await?;
    Store::insert_action(&mut tx, &logged).await?;
    if let Action::LateDecision { event_id, apply } = &request.action {
        let status = if *apply {
            EventStatus::LateApplied
        } else {
            EventStatus::LateRejected
        };
        Store::set_event_status(&mut tx, &request.game, event_id, status).await?;
    }
    if let Err(failed) = tx.commit("cannot commit an action").await {
        let error = match failed {
            CommitFailed::Failed(error) => return Err(error.into()),
            CommitFailed::Unknown(error) => AppError::from(error),
        };
        // The commit's answer was lost: the log says whether it took, as for a group.
        match store.next_seq().await {
            Ok(log_next_seq) if unknown_commit_landed(Some(logged.seq), log_next_seq) => {}
            Ok(_) => return Err(error),
            Err(_) => {
                // Nobody can tell yet. The seq is never reused, and the game's boards, which
                // may or may not owe the action, are marked broken rather than served wrong;
                // the next start reads what the log holds.
                *next_seq += 1;
                let mut instances = LiveInstances { registry, store };
                let mut live = log::Tolerant::new(&mut instances, registry, logged.seq);
                for entry in registry.of_game(&request.game) {
                    live.break_board(&entry.def.id, &error);
                }
                return Err(error);
            }
        }
    }
    *next_seq += 1;

    // Decided above, it can fail now only on a failing database; then the boards it failed on
    // no longer show the log and are marked broken rather than served wrong (all of the game's
    // when it failed as a whole), and the next start carries it out again.
    let mut instances = LiveInstances { registry, store };
    let mut live = log::Tolerant::new(&mut instances, registry, logged.seq);
    let performed = match perform(store, registry, domain, &mut live, &logged, &request.action).await {
        Ok(performed) => performed,
        Err(e) => {
            for entry in registry.of_game(&request.game) {
                live.break_board(&entry.def.id, &e);
            }
            return Err(e);
        }
    };
    let result = ActionResult {
        results: performed.results.iter().map(Correction::of).collect(),
        boards: performed.changes,
    };
    let mut tx = store.begin().await?;
    for r in &performed.results {
        Store::insert_result(&mut tx, r).await?;
    }
    tx.commit("cannot store results")
        .await
        .map_err(|failed| match failed {
            CommitFailed::Unknown(e) | CommitFailed::Failed(e) => AppError::from(e),
        })?;
    store.set_action_result(logged.seq, &result).await?;
    Ok(ActionAnswer {
        replayed: false,
        seq: logged.seq,
        result: Some(result),
    })
}

/// Refuses an action that cannot be performed now, with a precise error.
async fn validate(
    store: &Store,
    registry: &Registry,
    domain: &Domain,
    request: &ActionRequest,
) -> Result<(), AppError> {
    match &request.action {
        Action::SeasonState { season, to } => {
            let record = domain.seasons.get(&request.game, season);
            if record.state == *to && record.explicit {
                return Err(AppError::InvalidTransition(format!(
                    "season {}/{season} is already {to}",
                    request.game
                )));
            }
            let has_events = store.season_has_events(&request.game, season).await?;
            record.check_transition(*to, has_events).map_err(|why| {
                AppError::InvalidTransition(format!("season {}/{season}: {why}", request.game))
            })
        }
        Action::Invalidate { target_event_id } | Action::Restore { target_event_id } => {
            let Some(event) = store.find_event(&request.game, target_event_id).await? else {
                return Err(AppError::UnknownEvent(format!(
                    "no event {target_event_id:?} in game {:?}",
                    request.game
                )));
            };
            not_archived(domain, &request.game, &event.season)
        }
        Action::Disqualify { board, .. } | Action::Reinstate { board, .. } => {
            if registry.entry(board).is_none() {
                return Err(AppError::UnknownBoard(format!("no board {board}")));
            }
            not_archived(domain, &board.game, &board.season)
        }
        Action::LateDecision { event_id, .. } => {
            let Some(event) = store.find_event(&request.game, event_id).await? else {
                return Err(AppError::UnknownEvent(format!(
                    "no event {event_id:?} in game {:?}",
                    request.game
                )));
            };
            not_archived(domain, &request.game, &event.season)?;
            if event.status != EventStatus::Late || domain.decision(&request.game, event_id).is_some() {
                return Err(AppError::NotLate(format!(
                    "event {event_id:?} is not waiting for a late decision (status {})",
                    event.status
                )));
            }
            Ok(())
        }
    }
}

/// Writes a checkpoint as of the last committed `seq` and waits until it is stored, unless the
/// newest stored one is as of that `seq` already.
async fn write_checkpoint(parts: &mut WriterParts) -> Result<Option<checkpoint::Written>, AppError> {
    let seq = parts.next_seq - 1;
    if seq == parts.checkpoint_seq || holds_broken_boards(parts) {
        return Ok(None);
    }
    let written = checkpoint::write(&parts.store, &parts.registry, &parts.domain, seq).await?;
    parts.metrics.checkpoint_encode.observe(written.encoded_in);
    parts.metrics.checkpoint_stored.observe(written.took);
    parts.checkpoint_seq = seq;
    Ok(Some(written))
}

/// Whether a board is broken, which rules out a checkpoint: it would hold the broken board's
/// state as if the log had given it, and a start from it would never meet the failing entry
/// again. Without one, the next start replays the whole log and reports it again.
fn holds_broken_boards(parts: &WriterParts) -> bool {
    let broken = parts.registry.broken();
    if !broken.is_empty() {
        tracing::warn!(
            "no checkpoint is written while {} board(s) are broken; the next start replays the whole log",
            broken.len()
        );
    }
    !broken.is_empty()
}

/// A checkpoint being stored by a task of its own.
type Storing = tokio::task::JoinHandle<Result<checkpoint::Written, AppError>>;

/// Starts a periodic checkpoint as of the last committed `seq`, with every committed group
/// applied: a blocking thread encodes the boards (about 0.4 s at 10M members, 1 s under load)
/// under their read locks, so reads go on, and so do writes: groups are committed and answered
/// meanwhile and wait in the backlog to be applied (`finish`), which keeps the boards at that
/// `seq` until the encoding is done (`catch_up`). Then a task stores it.
fn begin_checkpoint(parts: &mut WriterParts) {
    if holds_broken_boards(parts) {
        return;
    }
    let seq = parts.next_seq - 1;
    let (registry, domain) = (parts.registry.clone(), parts.domain.clone());
    parts.backlog.encoding = Some(tokio::task::spawn_blocking(move || {
        checkpoint::encode(&registry, &domain, seq)
    }));
}

/// Waits for a checkpoint being encoded, if any, then hands the backlog over to be applied and
/// sets the checkpoint storing (see `catch_up`).
async fn end_encoding(parts: &mut WriterParts, storing: &mut Option<Storing>) {
    if let Some(encoding) = parts.backlog.encoding.take() {
        *storing = catch_up(parts, encoding.await).await;
    }
}

/// Ends a checkpoint's encoding: hands the backlog over in order, then sets a task storing the
/// checkpoint (`None` if the encoding failed, which is reported; the log is intact).
async fn catch_up(
    parts: &mut WriterParts,
    encoded: Result<Result<checkpoint::Encoded, AppError>, tokio::task::JoinError>,
) -> Option<Storing> {
    // Their submitters were answered; their totals stay pending until they are applied.
    for (fresh, committed) in std::mem::take(&mut parts.backlog.groups) {
        let group = Group {
            fresh,
            committed,
            answers: None,
        };
        applier(parts).apply(group).await;
    }
    let encoded = match encoded {
        Ok(Ok(encoded)) => encoded,
        Ok(Err(e)) => {
            tracing::warn!("a periodic checkpoint failed (the log is intact): {e}");
            return None;
        }
        Err(e) => {
            tracing::warn!("a periodic checkpoint's encoding failed (the log is intact): {e}");
            return None;
        }
    };
    parts.metrics.checkpoint_encode.observe(encoded.encoded_in());
    let store = parts.store.clone();
    Some(tokio::spawn(async move {
        let written = checkpoint::store(&store, encoded, checkpoint::Pace::BesideWrites).await?;
        println!(
            "standings: stored a checkpoint as of seq {} ({} instances, {:.1} MiB; encoded in {} ms, {:.2} s in all)",
            written.seq,
            written.instances,
            written.bytes as f64 / (1 << 20) as f64,
            written.encoded_in.as_millis(),
            written.took.as_secs_f64()
        );
        Ok(written)
    }))
}

/// Waits for a periodic checkpoint being stored, if any, and takes note of it.
async fn reap(parts: &mut WriterParts, storing: Option<Storing>) {
    let Some(task) = storing else { return };
    match task.await {
        Ok(Ok(written)) => {
            parts.metrics.checkpoint_stored.observe(written.took);
            parts.checkpoint_seq = parts.checkpoint_seq.max(written.seq);
        }
        Ok(Err(e)) => tracing::warn!("a periodic checkpoint failed (the log is intact): {e}"),
        Err(e) => tracing::warn!("a periodic checkpoint's task failed (the log is intact): {e}"),
    }
}

/// Moves closed periods past their retention out of memory, into storage.
async fn evict(parts: &WriterParts) -> Result<usize, AppError> {
    let now = parts.clock.now_ms();
    let mut evicted = 0;
    for entry in parts.registry.all() {
        for slot in entry.instances() {
            let Some(closes_at) = entry.calendar.closes_at(&slot.period) else {
                continue;
            };
            if now < closes_at.saturating_add(parts.retention_ms) {
                continue;
            }
            let (entries, version) = {
                let board = slot.read();
                (crate::log::result_entries(&board), board.version())
            };
            parts
                .store
                .save_period_snapshot(&slot.id, &slot.period.key, version as i64, &entries)
                .await?;
            entry.evict(&slot.period.key);
            evicted += 1;
        }
    }
    Ok(evicted)
}

/// An archived season's live boards are freed, so nothing may change them: a correction would
/// be computed from an empty board.
fn not_archived(domain: &Domain, game: &str, season: &str) -> Result<(), AppError> {
    if domain.seasons.get(game, season).state == crate::domain::seasons::SeasonState::Archived {
        return Err(AppError::SeasonArchived(format!(
            "season {game}/{season} is archived; its results and events are final"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A group whose commit's answer was lost is taken as committed exactly when the log, read
    /// once the database answers, holds its first `seq`; a group that stored nothing has its
    /// answers stand.
    #[test]
    fn an_unknown_commit_is_resolved_by_whether_the_log_holds_its_first_seq() {
        // The group took seqs 41 to 48: the log's next free seq is 49 if it took, 41 if not.
        assert!(unknown_commit_landed(Some(41), 49));
        assert!(!unknown_commit_landed(Some(41), 41));
        assert!(unknown_commit_landed(None, 41));
    }
}
