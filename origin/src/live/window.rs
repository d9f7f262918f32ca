//! The window task: every `window_ms` it reads again the views whose board moved (or that have
//! subscribers joining) and sends each view's net change to its subscribers, ends the topics of
//! closed periods and archived seasons, and sends heartbeats; on the hub's clock.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use standings_core::{ViewDelta, ViewState};

use super::message::{self, CloseReason};
use super::outgoing::plain;
use super::queue::{Pushed, Queue};
use super::{Hub, Joining, Kind, Outgoing, Shared, Topic, TopicState, admission, topic};
use crate::boards::BoardSlot;
use crate::sync::LockUnpoisoned;

/// How long a window holds a board's read lock at most before letting the applier in (checked
/// after each view read, so one `top:100` read may pass it).
const HOLD: Duration = Duration::from_millis(2);

/// The most views a window reads under one hold, which bounds the states it keeps before
/// sending them.
pub(super) const VIEWS_PER_HOLD: usize = 256;

/// The next time a timer of period `every` fires after firing at `fired`: one period on, or a
/// period from `now` when the work overran, so a slow window is not followed by a burst.
fn next_deadline(fired: i64, every: i64, now: i64) -> i64 {
    let next = fired.saturating_add(every);
    if next <= now {
        now.saturating_add(every)
    } else {
        next
    }
}

/// Queues `message` for every queue that `keep` is asked about, keeping those still open (a
/// full queue is sent `resync` instead and leaves); counts the resyncs. O(queues).
fn push_retain<T>(queues: &mut Vec<T>, queue_of: impl Fn(&T) -> &Arc<Queue>, message: &Outgoing, hub: &Hub) {
    let mut overflowed = 0;
    queues.retain(|held| hub.push(queue_of(held), message, &mut overflowed));
    if overflowed > 0 {
        hub.shared.metrics.live.resyncs.add(overflowed);
    }
}

impl Hub {
    /// Starts the task that flushes a window of changes every `window_ms` and sends heartbeats,
    /// on the hub's clock (a manual clock in tests moves it).
    ///
    /// The first deadlines are taken now, so a manual clock moved before the task first runs
    /// still fires them. Each window's work runs on the blocking pool: reading thousands of
    /// views is CPU work that must not hold up a runtime's worker.
    pub(crate) fn start(self: &Arc<Self>) {
        let hub = Arc::downgrade(self);
        let clock = self.clock.clone();
        let window = i64::try_from(self.config.window_ms).unwrap_or(i64::MAX);
        let beat_every =
            i64::try_from(self.config.heartbeat_seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
        let started = clock.now_ms();
        let (mut flush_at, mut beat_at) =
            (started.saturating_add(window), started.saturating_add(beat_every));
        tokio::spawn(async move {
            loop {
                clock.sleep_until(flush_at.min(beat_at)).await;
                let Some(hub) = hub.upgrade() else { return };
                if hub.shared.stopping.load(Ordering::Acquire) {
                    return;
                }
                let now = clock.now_ms();
                let (flush, beat) = (now >= flush_at, now >= beat_at);
                if flush {
                    flush_at = next_deadline(flush_at, window, now);
                }
                if beat {
                    beat_at = next_deadline(beat_at, beat_every, now);
                }
                // Nothing watched: the window has nothing to read or send, so it only forgets
                // what was reported, here rather than on the blocking pool (a cluster node runs a
                // hub per partition, most of them watched by nobody). Never `flush` here: a
                // subscriber joining meanwhile would make it wait for an applier's turn on this
                // runtime thread.
                if !hub.is_watched() {
                    if flush {
                        hub.forget_reports();
                        hub.shared.windows.send_modify(|n| *n += 1);
                    }
                    continue;
                }
                let work = tokio::task::spawn_blocking(move || {
                    if flush {
                        let began = Instant::now();
                        let (read, work) = hub.flush(now);
                        hub.shared.metrics.live.window.observe(began.elapsed());
                        if read > 0 {
                            let cost = &hub.shared.view_cost_ns;
                            let average =
                                admission::average_view_cost_ns(cost.load(Ordering::Relaxed), work, read);
                            cost.store(average, Ordering::Relaxed);
                        }
                    }
                    if beat {
                        hub.beat();
                    }
                    if flush {
                        hub.shared.windows.send_modify(|n| *n += 1);
                    }
                });
                if let Err(e) = work.await {
                    tracing::error!("a live window failed: {e}");
                }
            }
        });
    }

    /// One window: every topic's view is read again where its board moved (or subscribers are
    /// joining it), and the net change since its last message goes to its subscribers; topics
    /// of archived boards and closed periods are ended. Every topic is looked at, not only
    /// those of boards marked changed, so a change that was not reported is still sent.
    /// Returns how many views were read and the work of reading and sending them (without the
    /// waits for the applier's turns). O(topics + moved views x their size + subscribers of
    /// changed views).
    fn flush(&self, now_ms: i64) -> (usize, Duration) {
        self.forget_reports();
        let topics: Arc<[Arc<Topic>]> = self.topics().into();
        let (mut start, mut read, mut work) = (0, 0, Duration::ZERO);
        for group in topics.chunk_by(|a, b| a.key.0 == b.key.0 && a.key.1 == b.key.1) {
            let range = start..start + group.len();
            start = range.end;
            let (id, period_key) = (&group[0].key.0, &group[0].key.1);
            let entry = match self.registry.entry(id) {
                Some(entry) if !entry.is_archived() => entry,
                _ => {
                    for topic in group {
                        self.end(topic, CloseReason::SeasonArchived);
                    }
                    continue;
                }
            };
            // An instance that left memory (evicted once closed) has not changed since.
            if let Some(slot) = entry.instance(period_key) {
                let mut from = range.start;
                while from < range.end {
                    let Some((reached, views, took)) = self.refresh(&slot, &topics, from..range.end) else {
                        break;
                    };
                    from += reached;
                    read += views;
                    work += took;
                }
            }
            if entry.calendar.is_closed(&group[0].period, now_ms) {
                for topic in group {
                    self.end(topic, CloseReason::PeriodClosed);
                }
            }
        }
        (read, work)
    }

    /// Forgets, at a window's start, the change reports every topic has read. O(reports dropped).
    fn forget_reports(&self) {
        for board in self.shared.reports.lock_unpoisoned().values_mut() {
            board.forget_read();
        }
    }

    /// Reads again, in one turn beside the applier (`crate::turns`), the views of the first
    /// topics of `topics[range]` whose board moved or that have subscribers joining, for up to
    /// [`HOLD`] or [`VIEWS_PER_HOLD`] views, then (off the applying thread) sends each view's net
    /// change since its last message to its subscribers. Returns how many topics it reached, how
    /// many views it read, and the time reading and sending took; `None` when the turn was not
    /// run (the writer stopped).
    ///
    /// The turn is short so that groups queued behind it wait little; the window's next turn
    /// queues behind the groups that came meanwhile, so views keep moving under any write load.
    /// O(views read x (log n + k)), plus the subscribers of the views that changed.
    fn refresh(
        &self,
        slot: &Arc<BoardSlot>,
        topics: &Arc<[Arc<Topic>]>,
        range: std::ops::Range<usize>,
    ) -> Option<(usize, usize, Duration)> {
        let (slot, topics, shared) = (slot.clone(), topics.clone(), self.shared.clone());
        let (moved, reached, reading) = self.registry.turns.run(move || {
            let began = Instant::now();
            let (moved, reached) = read_moved(&slot, &topics[range], &shared);
            (moved, reached, began.elapsed())
        })?;
        let (views, sending) = (moved.len(), Instant::now());
        for (topic, now, committed) in moved {
            let mut state = topic.state.lock_unpoisoned();
            if state.ended.is_some() {
                continue;
            }
            self.send_window(&topic, &mut state, now, committed);
        }
        Some((reached, views, reading + sending.elapsed()))
    }

    /// Sends a topic what its window read `now` brings: the net change since `last` to its
    /// settled subscribers, and to the groups joining at a version `now` has reached whatever
    /// brings them to it; those groups then settle (`topic::settle`).
    fn send_window(&self, topic: &Topic, state: &mut TopicState, now: ViewState, committed: Option<Instant>) {
        // Groups that joined after this read (at a later version) wait for the next window.
        let later = state.joining.split_off(&(now.board_version + 1));
        let reached = std::mem::replace(&mut state.joining, later);
        topic
            .has_joining
            .store(!state.joining.is_empty(), Ordering::Release);
        if reached.is_empty() {
            let Some(delta) = topic::window(&mut state.last, now) else {
                return;
            };
            state.snapshot = None;
            self.send(state, &topic.delta(&delta, committed));
            return;
        }
        let groups: Vec<Joining> = reached.into_values().collect();
        let held: Vec<&ViewState> = groups.iter().map(|g| &g.state).collect();
        let (to_last, to_groups) = topic::settle(&mut state.last, &held, now);
        state.snapshot = None;
        if let Some(delta) = to_last {
            self.send(state, &topic.delta(&delta, committed));
        }
        for (mut group, delta) in groups.into_iter().zip(to_groups) {
            if let Some(delta) = delta {
                push_retain(
                    &mut group.queues,
                    |(_, queue)| queue,
                    &topic.delta(&delta, None),
                    self,
                );
            }
            state.subscribers.extend(group.queues);
        }
    }

    /// Queues `message` for one subscriber: whether its stream is still open (a full queue is
    /// sent `resync` instead, counted in `overflowed`). O(1).
    fn push(&self, queue: &Queue, message: &Outgoing, overflowed: &mut u64) -> bool {
        match queue.push(message.clone(), self.config.queue_messages, &self.resync) {
            Pushed::Queued => true,
            Pushed::Overflowed => {
                *overflowed += 1;
                false
            }
            Pushed::Ended => false,
        }
    }

    /// Queues `message` for every settled subscriber of a topic; those whose queue was full are
    /// sent `resync` instead and leave the topic. O(subscribers).
    fn send(&self, state: &mut TopicState, message: &Outgoing) {
        let mut overflowed = 0;
        state
            .subscribers
            .retain(|_, queue| self.push(queue, message, &mut overflowed));
        if overflowed > 0 {
            self.shared.metrics.live.resyncs.add(overflowed);
        }
    }

    /// Ends a topic: its subscribers are sent `closed` with the version they hold, and it
    /// leaves the map (its subscriptions stay counted until they are dropped).
    fn end(&self, topic: &Arc<Topic>, reason: CloseReason) {
        {
            let mut state = topic.state.lock_unpoisoned();
            if state.ended.is_some() {
                return;
            }
            let closed_at = |version| plain(Kind::Closed, message::closed(reason, &topic.key.1, version));
            let closed = closed_at(state.last.board_version);
            for queue in state.subscribers.values() {
                queue.end_with(closed.clone());
            }
            for (version, group) in std::mem::take(&mut state.joining) {
                let closed = closed_at(version);
                for (_, queue) in &group.queues {
                    queue.end_with(closed.clone());
                }
            }
            topic.has_joining.store(false, Ordering::Release);
            state.subscribers = HashMap::default();
            state.ended = Some(closed);
        }
        let mut members = self.shared.members.lock_unpoisoned();
        if members
            .topics
            .get(&topic.key)
            .is_some_and(|(held, _)| Arc::ptr_eq(held, topic))
        {
            members.topics.remove(&topic.key);
        }
    }

    /// Sends every subscriber a heartbeat (one shared message). O(subscribers).
    fn beat(&self) {
        for topic in self.topics() {
            let mut state = topic.state.lock_unpoisoned();
            self.send(&mut state, &self.heartbeat);
            for group in state.joining.values_mut() {
                push_retain(&mut group.queues, |(_, queue)| queue, &self.heartbeat, self);
            }
        }
    }
}

/// A view read again in a window, and when the oldest change it carries was committed.
type Moved = (Arc<Topic>, ViewState, Option<Instant>);

/// Under one hold of `slot`'s read lock, reads the views of the first `topics` whose board moved
/// or that have subscribers joining, for up to [`HOLD`] or [`VIEWS_PER_HOLD`] views, and dates
/// each with the oldest reported change it carries. Returns them and how many topics it reached.
/// O(views read x (log n + k)).
fn read_moved(slot: &BoardSlot, topics: &[Arc<Topic>], shared: &Shared) -> (Vec<Moved>, usize) {
    let mut moved: Vec<Moved> = Vec::new();
    let mut reached = 0;
    let board = slot.read();
    let held = Instant::now();
    let version = board.version();
    for topic in topics {
        if moved.len() >= VIEWS_PER_HOLD || held.elapsed() >= HOLD {
            break;
        }
        reached += 1;
        let board_moved = topic.checked.swap(version, Ordering::Relaxed) != version;
        if board_moved || topic.has_joining.load(Ordering::Acquire) {
            moved.push((
                topic.clone(),
                ViewState::read(&board, topic.view(), &topic.key.1),
                None,
            ));
        }
    }
    // Still under the read lock: every change reported by now was applied before the lock was
    // taken, so the views just read hold it.
    let mut reports = shared.reports.lock_unpoisoned();
    if let Some(reported) = reports.get_mut(&slot.id) {
        for (topic, _, committed) in &mut moved {
            *committed = reported.earliest_from(topic.seen.load(Ordering::Relaxed));
        }
        for topic in &topics[..reached] {
            topic.seen.store(reported.next, Ordering::Relaxed);
        }
        reported.read_up_to(reported.next);
    }
    (moved, reached)
}

impl Topic {
    /// A window's net change of this topic's view, encoded as its delta message. O(entries).
    fn delta(&self, delta: &ViewDelta, committed: Option<Instant>) -> Outgoing {
        self.change(Kind::Delta, delta.board_version, message::delta(delta), committed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window that overran its deadline is followed by one a whole window later, not by a
    /// burst; one on time keeps the schedule.
    #[test]
    fn windows_keep_their_schedule_unless_one_overran() {
        assert_eq!(next_deadline(1_000, 250, 1_000), 1_250);
        assert_eq!(next_deadline(1_000, 250, 1_100), 1_250);
        assert_eq!(next_deadline(1_000, 250, 1_600), 1_850);
    }
}
