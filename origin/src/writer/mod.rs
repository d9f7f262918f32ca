//! The single writer: durable ingestion with group commit, and the action log.
//!
//! One writer task owns every write to the log and every change to the live boards, so the log's
//! `seq` order is exactly the order the boards applied, and a rebuild or a restart replays it to
//! the same boards and `board_version`s. Handlers reach it only through its channel (the [`Ingest`]
//! handle): event submissions, actions, evictions and checkpoints asked for. The writer takes
//! everything queued (up to `MAX_GROUP_EVENTS`) into one transaction and one fsync, then applies
//! the new events to the boards (on a thread of its own, see `applier.rs`), then answers. So an
//! `ACCEPTED` answer always means durable and visible, and durability does not cost throughput:
//! concurrent clients share commits. Actions (season transitions, moderation, late decisions) are
//! rare and take a transaction each, in line with the events around them.
//!
//! The writer is cut by job:
//! - this module: the handle ([`Ingest`]) and the commands it sends;
//! - `commit.rs`: the group commit's decisions as a state machine with no IO (what each event
//!   becomes, how the accepted ones are numbered, what to write), tested against a model;
//! - `driver.rs`: the writer task, which does the machine's IO and feeds the results back;
//! - `applier.rs`: the thread that applies committed groups to the boards;
//! - `checkpoint.rs`: restart checkpoints, and when the writer takes them;
//! - `actions.rs`, `evict.rs`, `rest.rs`: actions, eviction of closed periods, and what the
//!   writer does when ingestion pauses;
//! - `error.rs`: the writer's errors.
//!
//! Every timer of the writer (the rest after idle, the retries of an unknown commit, the
//! checkpoint's pacing, the retention and the eviction ticker) reads the injected
//! [`Clock`], so a test moves a manual clock instead of sleeping.
//!
//! Three moments are measured apart: the durable ack (submission to commit), the visible lag
//! (commit to applied in the index), and, by the live-update tier, the push.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::boards::Registry;
use crate::clock::Clock;
use crate::domain::{Action, Moderation};
use crate::domain::{ActionResult, NewEvent};
use crate::metrics::Metrics;
use crate::store::Store;

mod actions;
mod applier;
pub mod checkpoint;
mod commit;
mod driver;
mod error;
mod evict;
pub(crate) mod rest;
mod rhythm;

pub(crate) use commit::Outcome;
pub use error::WriterError;

/// The most events one group commit takes.
pub(crate) const MAX_GROUP_EVENTS: usize = 8_192;

/// An action to perform, validated by the writer against the current state.
pub(crate) struct ActionRequest {
    /// The game.
    pub(crate) game: String,
    /// What to do.
    pub(crate) action: Action,
    /// The client's moderation id, for idempotent retries.
    pub(crate) action_id: Option<String>,
    /// The request as the client sent it, kept in the audit log.
    pub(crate) request: Value,
    /// Who asks.
    pub(crate) actor: String,
    /// Why.
    pub(crate) reason: String,
    /// A profile change to decide on the profile the log holds when the writer takes it; it
    /// becomes `action` (a `PROFILE`), or nothing when the profile stays the same.
    pub(crate) profile_patch: Option<crate::domain::profile_book::ProfilePatch>,
}

/// What an action answered.
#[derive(Debug)]
pub(crate) struct ActionAnswer {
    /// Whether it was a retry of an action already performed.
    pub(crate) replayed: bool,
    /// The log's `seq` of the action.
    pub(crate) seq: i64,
    /// What it changed (as recorded in the audit log); `None` for a retry of an action whose
    /// result was never recorded.
    pub(crate) result: Option<ActionResult>,
}

enum Command {
    Events {
        events: Vec<NewEvent>,
        received: Instant,
        reply: oneshot::Sender<Result<Vec<Outcome>, WriterError>>,
    },
    Action {
        request: Box<ActionRequest>,
        reply: oneshot::Sender<Result<ActionAnswer, WriterError>>,
    },
    Evict {
        reply: oneshot::Sender<Result<usize, WriterError>>,
    },
    Checkpoint {
        reply: oneshot::Sender<Result<Option<checkpoint::Written>, WriterError>>,
        /// Only if storing it costs less than replaying the log after the newest one would
        /// ([`rhythm::worth_storing`]).
        at_stop: bool,
    },
}

/// The handle that request handlers submit through.
#[derive(Clone)]
pub struct Ingest {
    tx: mpsc::Sender<Command>,
}

/// What the writer needs.
pub(crate) struct WriterParts {
    /// The database.
    pub(crate) store: Store,
    /// The live boards.
    pub(crate) registry: Arc<Registry>,
    /// Seasons and moderation state.
    pub(crate) domain: Arc<Moderation>,
    /// The metrics.
    pub(crate) metrics: Arc<Metrics>,
    /// The live subscriptions, told which boards each applied change touched.
    pub(crate) live: Arc<crate::live::Hub>,
    /// The clock that stamps `received_at` and actions.
    pub(crate) clock: Clock,
    /// The next free `seq`.
    pub(crate) next_seq: i64,
    /// How long a closed period stays in memory (ms).
    pub(crate) retention_ms: i64,
    /// Start a checkpoint each time the log grows by this many entries (0: only on request).
    pub(crate) checkpoint_every: u64,
    /// The threads that change a split board's shards (0: half the CPUs).
    pub(crate) shard_threads: usize,
    /// The `seq` of the newest stored checkpoint (0 without one).
    pub(crate) checkpoint_seq: i64,
    /// Its bytes of boards (0 without one).
    pub(crate) checkpoint_bytes: usize,
    /// Where the log's unsealed tail starts ([`Store::sealed_below`]): once it holds
    /// [`crate::store::RUN_SEQS`] seqs, the group that completes it seals it as a run.
    pub(crate) sealed_below: i64,
    /// The `(player key, seq)` of the committed events from `sealed_below` on
    /// ([`Store::tail_keys`]): the run's entries in the player index once a group completes it.
    pub(crate) unsealed: Vec<(i64, i64)>,
    /// The seasons with committed events, by game ([`Store::event_seasons`]): a group with the
    /// first events of a season records it in the same transaction.
    pub(crate) event_seasons: HashMap<String, HashSet<String>>,
}

impl Ingest {
    /// Starts the writer task.
    pub(crate) fn start(parts: WriterParts) -> Ingest {
        let (tx, rx) = mpsc::channel(4_096);
        tokio::spawn(driver::Writer::new(parts).run(rx));
        Ingest { tx }
    }

    /// A handle no writer answers: every submission is refused with [`WriterError::Stopped`].
    /// For a service that only reads, such as a standby's copy (`cluster/standby.rs`).
    pub(crate) fn closed() -> Ingest {
        let (tx, _) = mpsc::channel(1);
        Ingest { tx }
    }

    /// Submits events and waits until they are durably committed and applied (or refused).
    /// The outcomes come back in the order given. O(events) in the writer, shared with the
    /// group it joins, plus one commit.
    pub(crate) async fn submit(&self, events: Vec<NewEvent>) -> Result<Vec<Outcome>, WriterError> {
        let (reply, answer) = oneshot::channel();
        let command = Command::Events {
            events,
            received: Instant::now(),
            reply,
        };
        self.send(command).await?;
        answer.await.map_err(|_| WriterError::Dropped("a submission"))?
    }

    /// Submits an action and waits until it is durably logged and performed. O(what it
    /// changes): a moderation recomputes the players it touches from their events.
    pub(crate) async fn act(&self, request: ActionRequest) -> Result<ActionAnswer, WriterError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Action {
            request: Box::new(request),
            reply,
        })
        .await?;
        answer.await.map_err(|_| WriterError::Dropped("an action"))?
    }

    /// Saves closed periods past their retention to storage and drops them from memory;
    /// returns how many left. Runs in the writer, so it never races a change. O(instances),
    /// plus a snapshot written per instance that leaves.
    pub async fn evict_closed(&self) -> Result<usize, WriterError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Evict { reply }).await?;
        answer.await.map_err(|_| WriterError::Dropped("an eviction"))?
    }

    /// Writes a checkpoint of the live state as of the last committed `seq` (see
    /// [`checkpoint`]) and waits until it is stored. Runs in the writer, between groups, so it
    /// is exactly the log's state; a periodic one still being stored is finished first. `None`
    /// when the newest stored checkpoint is already as of that `seq` (nothing was written since,
    /// as when a service stops right after a start). O(members held).
    pub async fn checkpoint(&self) -> Result<Option<checkpoint::Written>, WriterError> {
        self.checkpoint_unless(false).await
    }

    /// [`Ingest::checkpoint`] at a stop: `None` also when replaying the log after the newest
    /// checkpoint at the next start costs less than storing a new one now, which on a board of
    /// tens of millions is most of the stop ([`rhythm::worth_storing`]).
    pub async fn checkpoint_at_stop(&self) -> Result<Option<checkpoint::Written>, WriterError> {
        self.checkpoint_unless(true).await
    }

    async fn checkpoint_unless(&self, at_stop: bool) -> Result<Option<checkpoint::Written>, WriterError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Checkpoint { reply, at_stop }).await?;
        answer.await.map_err(|_| WriterError::Dropped("a checkpoint"))?
    }

    async fn send(&self, command: Command) -> Result<(), WriterError> {
        self.tx.send(command).await.map_err(|_| WriterError::Stopped)
    }
}
