//! Durable ingestion with group commit.
//!
//! One writer task owns every write to the event log and every change to the live boards, so the
//! log's `seq` order is exactly the order the boards applied: a rebuild replays it identically.
//! Submissions queue on a channel; the writer takes everything queued (up to
//! [`MAX_GROUP_EVENTS`]) into one transaction and one fsync, then applies the new events to the
//! boards, then answers. So an `ACCEPTED` answer always means durable, and durability does not
//! cost throughput: 64 concurrent clients share commits.
//!
//! Three moments are measured apart: the durable ack (submission to commit), the visible lag
//! (commit to applied in the index), and, by the live-update tier, the push.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use standings_core::{BoardId, ScoreMode};
use tokio::sync::{mpsc, oneshot};

use crate::boards::{Registry, core_event};
use crate::clock::now_ms;
use crate::error::AppError;
use crate::metrics::Metrics;
use crate::store::{Store, StoredEvent};

/// The most events one group commit takes.
pub const MAX_GROUP_EVENTS: usize = 8_192;

/// A validated event waiting to be stored (its `seq` is assigned by the writer).
pub type NewEvent = StoredEvent;

/// What became of one submitted event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Durably stored and applied.
    Accepted,
    /// The same event was already stored; nothing changed.
    Duplicate,
    /// The event id was already used with another payload; nothing changed.
    Conflict,
    /// Refused by a board (a cumulative total would overflow); nothing changed.
    Rejected(String),
}

struct Submission {
    events: Vec<NewEvent>,
    received: Instant,
    reply: oneshot::Sender<Result<Vec<Outcome>, AppError>>,
}

/// The handle that request handlers submit through.
#[derive(Clone)]
pub struct Ingest {
    tx: mpsc::Sender<Submission>,
}

impl Ingest {
    /// Starts the writer task.
    pub fn start(store: Store, registry: Arc<Registry>, metrics: Arc<Metrics>, next_seq: i64) -> Ingest {
        let (tx, rx) = mpsc::channel(4_096);
        tokio::spawn(writer(rx, store, registry, metrics, next_seq));
        Ingest { tx }
    }

    /// Submits events and waits until they are durably committed and applied (or refused).
    /// The outcomes come back in the order given.
    pub async fn submit(&self, events: Vec<NewEvent>) -> Result<Vec<Outcome>, AppError> {
        let (reply, answer) = oneshot::channel();
        let submission = Submission {
            events,
            received: Instant::now(),
            reply,
        };
        self.tx.send(submission).await.map_err(|_| {
            AppError::Unavailable("the writer has stopped; the service is shutting down".into())
        })?;
        answer
            .await
            .map_err(|_| AppError::Internal("the writer dropped a submission".into()))?
    }
}

async fn writer(
    mut rx: mpsc::Receiver<Submission>,
    store: Store,
    registry: Arc<Registry>,
    metrics: Arc<Metrics>,
    mut next_seq: i64,
) {
    while let Some(first) = rx.recv().await {
        let mut group = vec![first];
        let mut count = group[0].events.len();
        while count < MAX_GROUP_EVENTS {
            match rx.try_recv() {
                Ok(more) => {
                    count += more.events.len();
                    group.push(more);
                }
                Err(_) => break,
            }
        }
        match commit_group(&store, &registry, &metrics, &mut group, next_seq).await {
            Ok((outcomes, used)) => {
                next_seq += used;
                for (submission, outcomes) in group.into_iter().zip(outcomes) {
                    let _ = submission.reply.send(Ok(outcomes));
                }
            }
            Err(e) => {
                eprintln!("standings: a group commit failed, nothing of it was stored or applied: {e}");
                for submission in group {
                    let _ = submission
                        .reply
                        .send(Err(AppError::Internal(format!("group commit failed: {e}"))));
                }
            }
        }
    }
}

/// Decides, stores and applies one group. Returns the outcomes per submission and how many
/// sequence numbers it used.
async fn commit_group(
    store: &Store,
    registry: &Registry,
    metrics: &Metrics,
    group: &mut [Submission],
    first_seq: i64,
) -> Result<(Vec<Vec<Outcome>>, i64), AppError> {
    let mut tx = store.begin().await?;
    // Everything already stored under the ids of this group, by (game, event id).
    let mut known: HashMap<(String, String), StoredEvent> = HashMap::new();
    let mut ids_by_game: HashMap<&str, Vec<&str>> = HashMap::new();
    for submission in group.iter() {
        for e in &submission.events {
            ids_by_game
                .entry(e.game.as_str())
                .or_default()
                .push(e.event_id.as_str());
        }
    }
    for (game, ids) in &ids_by_game {
        for stored in Store::find_events(&mut tx, game, ids).await? {
            known.insert((stored.game.clone(), stored.event_id.clone()), stored);
        }
    }

    // Decide each event in order. Cumulative totals are checked against an overlay of this
    // group's pending sums so that an event that would overflow is refused before it is stored.
    let mut pending_totals: HashMap<(BoardId, String), i64> = HashMap::new();
    let mut fresh: Vec<StoredEvent> = Vec::new();
    let mut outcomes: Vec<Vec<Outcome>> = Vec::with_capacity(group.len());
    let received_at = now_ms();
    let mut seq = first_seq;
    for submission in group.iter() {
        let mut these = Vec::with_capacity(submission.events.len());
        for e in &submission.events {
            let key = (e.game.clone(), e.event_id.clone());
            if let Some(stored) = known.get(&key) {
                these.push(if stored.same_payload(e) {
                    Outcome::Duplicate
                } else {
                    Outcome::Conflict
                });
                continue;
            }
            if let Err(reason) = check_totals(registry, e, &mut pending_totals) {
                these.push(Outcome::Rejected(reason));
                continue;
            }
            let mut stored = e.clone();
            stored.seq = seq;
            stored.received_at = received_at;
            seq += 1;
            known.insert(key, stored.clone());
            fresh.push(stored);
            these.push(Outcome::Accepted);
        }
        outcomes.push(these);
    }

    if !fresh.is_empty() {
        Store::insert_events(&mut tx, &fresh).await?;
    }
    tx.commit()
        .await
        .map_err(|e| AppError::storage("cannot commit events", e))?;
    let committed = Instant::now();
    for submission in group.iter() {
        metrics
            .durable_ack
            .observe(committed.duration_since(submission.received));
    }

    // Visible: apply in commit order.
    for stored in &fresh {
        let event = core_event(stored)?;
        for id in stored.boards() {
            let Some(slot) = registry.get(&id) else {
                return Err(AppError::Internal(format!(
                    "event {} names a board that vanished: {id}",
                    stored.event_id
                )));
            };
            let mut board = slot.write();
            if let Err(e) = board.apply(&event) {
                // Checked before the commit; reaching this is a bug. The log stays the truth and a
                // rebuild reports the event.
                eprintln!(
                    "standings: stored event {} was refused by {id}: {e}",
                    stored.event_id
                );
            }
        }
    }
    metrics.visible_lag.observe(committed.elapsed());
    metrics.events_accepted.add(fresh.len() as u64);
    let duplicates = outcomes
        .iter()
        .flatten()
        .filter(|o| **o == Outcome::Duplicate)
        .count();
    metrics.duplicates.add(duplicates as u64);
    Ok((outcomes, seq - first_seq))
}

/// Refuses an event whose cumulative total would overflow on any board it feeds, counting the
/// group's pending events; records its contribution when it passes.
fn check_totals(
    registry: &Registry,
    e: &StoredEvent,
    pending: &mut HashMap<(BoardId, String), i64>,
) -> Result<(), String> {
    let mut updates = Vec::new();
    for id in e.boards() {
        let Some(slot) = registry.get(&id) else {
            return Err(format!("board {id} does not exist"));
        };
        if slot.rules.score_mode != ScoreMode::Cumulative {
            continue;
        }
        let key = (id, e.player_id.clone());
        let current = match pending.get(&key) {
            Some(total) => Some(*total),
            None => slot
                .read()
                .index()
                .standing_of_player(&e.player_id)
                .map(|s| s.value),
        };
        let total = match current {
            Some(c) => c
                .checked_add(e.value)
                .ok_or_else(|| format!("the total on {} would overflow a 64-bit integer", key.0))?,
            None => e.value,
        };
        updates.push((key, total));
    }
    pending.extend(updates);
    Ok(())
}
